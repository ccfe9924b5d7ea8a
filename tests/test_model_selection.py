"""Tests of ``PrivateGridSearchCV``: a grid search whose selection is differentially private.

What is checked:

* Sensitivity: with the randomness fixed, replace-one neighbours in the training part
  and in the validation part never move a candidate's score by more than ``beta``; an
  adversarial teacher (it predicts 0 as soon as its block holds a 0) meets the bound
  with equality, in both parts.
* Exact law of the selected index between neighbours: the log-ratio stays within
  ``selection_epsilon`` for both mechanisms, and a variant with ``beta = 1/m`` breaks it.
* A black-box Clopper–Pearson audit of ``best_index_`` on an adversarial pair passes
  at the claimed epsilon and flags the ``beta = 1/m`` variant.
* The accountant: charged once, before any candidate is fitted; a refusal changes
  nothing; the refitted estimator's answers are charged per row.
* No attribute, warning or log line holds a score; bad input is refused clearly with
  nothing charged; clone, get_params and a Pipeline work.
"""

from __future__ import annotations

import logging
import math
import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from skprivpred import (
    BudgetExhaustedError,
    InvalidParameterError,
    PrivacyAccountant,
    PrivacyGuarantee,
    PrivacyWarning,
    PrivateGridSearchCV,
    SubsampleAggregateClassifier,
    SubsampleAverageClassifier,
)
from skprivpred.audit import clopper_pearson

P_FALSE_ALARM = 1e-6
FITS = {"count": 0}


class ZeroIfAnyZero(ClassifierMixin, BaseEstimator):
    """Adversarial teacher: predicts 0 everywhere if its block holds a 0 label, else 1.

    ``fragile=False`` makes it ignore its block (always 1): a candidate immune to the data.
    """

    def __init__(self, fragile=True):
        self.fragile = fragile

    def fit(self, X, y):
        FITS["count"] += 1
        self.classes_ = np.array([0, 1])
        self.label_ = int(not (self.fragile and np.any(np.asarray(y) == 0)))
        return self

    def predict(self, X):
        return np.full(np.asarray(X).shape[0], self.label_)


def all_ones(n=60):
    X = np.arange(n, dtype=float).reshape(-1, 1)
    return X, np.ones(n, dtype=int)


def search_of(grid, **params):
    template = SubsampleAggregateClassifier(ZeroIfAnyZero(), classes=[0, 1])
    return PrivateGridSearchCV(template, grid, **params)


def scores_and_split(search, X, y, seed=0):
    """The candidates' scores for fixed randomness (NOT PRIVATE: a test diagnostic)."""
    candidates = search._check_params()
    rng = np.random.default_rng(seed)
    split = search._split(y.shape[0], search.validation_size, rng)
    r = search._public_teachers(candidates, split[0].size)
    beta = max(1 / min(r), 1 / split[1].size)
    return search._scores(X, y, candidates, split, r, rng), split, beta


# -- sensitivity ----------------------------------------------------------------------------------
def test_neighbours_move_no_score_by_more_than_beta_and_the_bound_is_tight():
    X, y = all_ones(60)
    search = search_of({"n_teachers": [4, 6], "estimator__fragile": [True, False]})
    base, (train, valid), beta = scores_and_split(search, X, y)
    assert beta == pytest.approx(max(1 / 4, 1 / valid.size))
    moves = []
    for row in list(train) + list(valid):
        y2 = y.copy()
        y2[row] = 0  # replace one row (its label) by another
        other, split2, _ = scores_and_split(search, X, y2)
        assert np.array_equal(split2[0], train)  # the randomness is the same
        moves.append(np.max(np.abs(other - base)))
    moves = np.array(moves)
    assert np.all(moves <= beta + 1e-12)
    # Equality: a 0 in a training block flips that teacher on every validation row
    # (1/r for the fragile candidate with r = 4); a 0 in V costs that row (1/m).
    assert np.max(moves[: train.size]) == pytest.approx(1 / 4)
    assert np.max(moves[train.size :]) == pytest.approx(1 / valid.size)


def test_random_neighbours_on_real_teachers_stay_within_beta():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 3))
    y = (X[:, 0] + rng.normal(scale=0.5, size=200) > 0).astype(int)
    search = PrivateGridSearchCV(
        SubsampleAggregateClassifier(LogisticRegression(), classes=[0, 1]),
        {"n_teachers": [5, 10]},
    )
    base, _, beta = scores_and_split(search, X, y, seed=3)
    for _ in range(30):
        row = rng.integers(200)
        X2, y2 = X.copy(), y.copy()
        X2[row], y2[row] = rng.normal(scale=3.0, size=3), 1 - y2[row]
        other, _, _ = scores_and_split(search, X2, y2, seed=3)
        assert np.max(np.abs(other - base)) <= beta + 1e-12


@pytest.mark.parametrize("base_output", ["label", "proba"])
def test_averaging_teachers_move_no_score_by_more_than_beta(base_output):
    # SubsampleAverageClassifier: a teacher's share of the true label is its vote or
    # its probability, in [0, 1] either way, so the bound of the votes holds.
    rng = np.random.default_rng(4)
    X = rng.normal(size=(200, 3))
    y = (X[:, 0] + rng.normal(scale=0.5, size=200) > 0).astype(int)
    template = SubsampleAverageClassifier(
        LogisticRegression(), base_output=base_output, classes=[0, 1]
    )
    search = PrivateGridSearchCV(template, {"n_teachers": [4, 8], "estimator__C": [0.1, 10.0]})
    base, (train, valid), beta = scores_and_split(search, X, y, seed=5)
    assert beta == pytest.approx(1 / 4)
    for row in rng.choice(200, size=25, replace=False):
        X2, y2 = X.copy(), y.copy()
        X2[row], y2[row] = rng.normal(scale=3.0, size=3), 1 - y2[row]
        other, _, _ = scores_and_split(search, X2, y2, seed=5)
        assert np.max(np.abs(other - base)) <= beta + 1e-12


def test_averaging_template_is_searched_charged_and_refitted():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(600, 3))
    y = (X[:, 0] > 0).astype(int)
    acc = PrivacyAccountant(epsilon=20.0)
    template = SubsampleAverageClassifier(
        LogisticRegression(), base_output="proba", classes=[0, 1], random_state=0
    )
    search = PrivateGridSearchCV(
        template, {"n_teachers": [5, 20]}, selection_epsilon=2.0, accountant=acc, random_state=1
    ).fit(X, y)
    assert isinstance(search.best_estimator_, SubsampleAverageClassifier)
    assert search.best_estimator_.n_teachers_ == search.best_params_["n_teachers"]
    assert search.n_teachers_ == [5, 20] and search.selection_sensitivity_ == pytest.approx(1 / 5)
    assert search.best_estimator_.accountant is acc
    search.predict(X[:7])
    assert acc.queries_answered == 8  # the selection, then seven answered rows
    assert acc.epsilon_spent == pytest.approx(2.0 + 7 * 1.0)


# -- exact law ------------------------------------------------------------------------------------
@pytest.mark.parametrize("selection", ["exponential", "noisy_max"])
def test_exact_law_of_the_index_is_within_epsilon_and_beta_1_over_m_breaks_it(selection):
    X, y = all_ones(60)
    search = search_of(
        {"n_teachers": [4], "estimator__fragile": [True, False]}, selection=selection
    )
    base, (train, valid), beta = scores_and_split(search, X, y)
    y2 = y.copy()
    y2[train[0]] = 0  # moves the fragile candidate's score by exactly 1/4 = beta
    other, _, _ = scores_and_split(search, X, y2)
    epsilon = 1.0
    for sensitivity, within in ((beta, True), (1 / valid.size, False)):
        p = search._selection_law(base, epsilon, sensitivity)
        q = search._selection_law(other, epsilon, sensitivity)
        worst = np.max(np.abs(np.log(p) - np.log(q)))
        assert bool(worst <= epsilon + 1e-12) == within, (sensitivity, worst)


def test_per_candidate_sensitivities_keep_the_exact_law_within_epsilon():
    # r = 3 and r = 12 fragile teachers: a 0 in a training block moves the first score
    # by 1/3 and the second by 1/12; the law uses both bounds (sum of the two largest).
    X, y = all_ones(60)
    search = search_of({"n_teachers": [3, 12], "estimator__fragile": [True]})
    candidates = search._check_params()
    rng = np.random.default_rng(0)
    split = search._split(y.shape[0], search.validation_size, rng)
    r = search._public_teachers(candidates, split[0].size)
    sensitivities = search._sensitivities(r, split[1].size)
    assert np.allclose(sensitivities, [1 / 3, 1 / 12])
    base, _, _ = scores_and_split(search, X, y)
    epsilon, worst, worst_too_sharp = 1.0, 0.0, 0.0
    for row in split[0]:
        y2 = y.copy()
        y2[row] = 0
        other, _, _ = scores_and_split(search, X, y2)
        p, q = (search._selection_law(s, epsilon, sensitivities) for s in (base, other))
        worst = max(worst, float(np.max(np.abs(np.log(p) - np.log(q)))))
        # BROKEN ON PURPOSE: the smaller bound for both candidates.
        p, q = (search._selection_law(s, epsilon, 1 / 12) for s in (base, other))
        worst_too_sharp = max(worst_too_sharp, float(np.max(np.abs(np.log(p) - np.log(q)))))
    assert worst <= epsilon + 1e-12
    assert worst_too_sharp > epsilon


# -- black-box audit -------------------------------------------------------------------------------
class _BetaOneOverM(PrivateGridSearchCV):
    """BROKEN ON PURPOSE: the sensitivity of a validation row only (beta = 1/m)."""

    def _selection_law(self, scores, epsilon, beta):
        m = math.ceil(self.validation_size * AUDIT_ROWS)
        return super()._selection_law(scores, epsilon, 1.0 / m)


AUDIT_ROWS, AUDIT_VALIDATION = 600, 0.05  # m = 30 validation rows, 570 training rows


def audit_index(cls, n_trials: int, epsilon: float = 1.0, grid=None) -> float:
    """Lower confidence bound on the privacy loss of ``best_index_`` (two neighbours)."""
    X, y = all_ones(AUDIT_ROWS)
    y2 = y.copy()
    y2[0] = 0
    template = SubsampleAggregateClassifier(ZeroIfAnyZero(), classes=[0, 1])
    grid = grid or {"n_teachers": [2], "estimator__fragile": [True, False]}
    counts = []
    for labels in (y, y2):
        picks = np.zeros(2, dtype=int)
        for _ in range(n_trials):
            search = cls(
                template,
                grid,
                selection_epsilon=epsilon,
                validation_size=AUDIT_VALIDATION,
                refit=False,
            )
            picks[search.fit(X, labels).best_index_] += 1
        counts.append(picks)
    lo0, hi0 = clopper_pearson(counts[0], n_trials, P_FALSE_ALARM / 4)
    lo1, hi1 = clopper_pearson(counts[1], n_trials, P_FALSE_ALARM / 4)
    with np.errstate(divide="ignore"):
        bound = np.maximum(np.log(lo0) - np.log(hi1), np.log(lo1) - np.log(hi0))
    return float(np.max(bound))


def test_black_box_audit_passes_and_flags_beta_one_over_m():
    # The differing row lies in the training part with probability 0.95; there, the
    # fragile candidate (r = 2) scores 1/2 instead of 1 (in V both candidates lose it).
    # At epsilon = 1 (beta = 1/2) its selection probability moves from 1/2 to 0.384
    # (log-ratio 0.26); with beta = 1/m = 1/30 it drops to 0.0255 (log-ratio 2.97), and
    # 600 searches per data set put the Clopper-Pearson bound near 1.9.
    # Sample sizes from the bound (``_audit_power.detection_power``, exact binomial sums
    # at this level, P_FALSE_ALARM / 4 per interval): 860 searches flag a selection that
    # spends twice epsilon here (1/2 against exp(-2) / 2) with probability >= 0.99, so
    # the estimator's run would catch that regression (600 did with 0.76); 370 flag the
    # 1/m variant (1/2 against 0.0255) with probability >= 0.99.
    assert audit_index(PrivateGridSearchCV, 860) <= 1.0
    assert audit_index(_BetaOneOverM, 370) > 1.0


def test_black_box_audit_with_per_candidate_sensitivities():
    # r = 2 and r = 6 fragile teachers: a 0 in the training part lowers the scores by
    # 1/2 and 1/6; the law (divisor 1/2 + 1/6) moves P(r = 2) from 1/2 to about 0.384
    # (log-ratio 0.26), the 1/m variant (divisor 2/30) to about 0.031 (log-ratio 2.8).
    # Sample sizes as above: 860 against a selection spending twice epsilon, 410 against
    # the 1/m variant (1/2 against 0.031: power >= 0.99).
    grid = {"n_teachers": [2, 6], "estimator__fragile": [True]}
    assert audit_index(PrivateGridSearchCV, 860, grid=grid) <= 1.0
    assert audit_index(_BetaOneOverM, 410, grid=grid) > 1.0


# -- the accountant -------------------------------------------------------------------------------
def test_the_selection_is_charged_once_before_any_fit_and_refusal_changes_nothing():
    X, y = all_ones(60)
    small = PrivacyAccountant(epsilon=0.5)
    search = search_of({"n_teachers": [2, 3]}, selection_epsilon=1.0, accountant=small)
    FITS["count"] = 0
    with pytest.raises(BudgetExhaustedError):
        search.fit(X, y)
    assert FITS["count"] == 0  # no candidate saw the data
    assert small.queries_answered == 0 and not hasattr(search, "best_index_")
    acc = PrivacyAccountant(epsilon=10.0, delta=1e-6, composition="zcdp")
    search = search_of({"n_teachers": [2, 3]}, selection_epsilon=1.0, accountant=acc)
    search.fit(X, y)
    history = acc.history()
    assert list(history["estimator"]) == ["PrivateGridSearchCV"]
    assert history["rho"].iloc[0] == pytest.approx(1.0 / 8)  # bounded range: eps^2 / 8
    guarantee = search.privacy_guarantee_
    assert isinstance(guarantee, PrivacyGuarantee)
    assert (guarantee.epsilon, guarantee.delta, guarantee.rho) == (1.0, 0.0, 1.0 / 8)
    assert "Chaudhuri & Vinterbo (2013), Theorem 1" in guarantee.theorem
    assert search.best_estimator_.accountant is acc
    search.predict(X[:5])
    assert acc.queries_answered == 6  # the selection, then five answered rows


def test_the_template_accountant_is_used_when_none_is_given():
    X, y = all_ones(60)
    acc = PrivacyAccountant(epsilon=10.0)
    template = SubsampleAggregateClassifier(ZeroIfAnyZero(), classes=[0, 1], accountant=acc)
    search = PrivateGridSearchCV(template, {"n_teachers": [2, 3]}, selection_epsilon=0.5)
    search.fit(X, y).predict(X[:2])
    assert acc.epsilon_spent == pytest.approx(0.5 + 2 * 1.0)


# -- nothing about the scores leaks -------------------------------------------------------------
def test_no_attribute_warning_or_log_holds_a_score(caplog):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(300, 2))
    y = (X[:, 0] > 0).astype(int)
    search = PrivateGridSearchCV(
        SubsampleAggregateClassifier(LogisticRegression(max_iter=1), classes=[0, 1]),
        {"n_teachers": [5, 10, 20]},
        refit=False,  # (a refit warns like any fit of the estimator itself)
        random_state=np.random.SeedSequence(7),
    )
    scores, _, _ = scores_and_split(search, X, y)
    with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.DEBUG):
        warnings.simplefilter("always")
        search.fit(X, y)
    assert not caught  # max_iter=1 makes every teacher warn: the warnings are silenced
    assert not caplog.records
    public = {
        k: v for k, v in vars(search).items() if k != "best_estimator_" and not k.startswith("_")
    }
    text = repr(public)
    for score in scores:
        assert repr(float(score)) not in text and f"{score:.4f}" not in text
    assert set(public) - set(search.get_params()) == {
        "best_index_",
        "best_params_",
        "n_candidates_",
        "n_teachers_",
        "selection_sensitivity_",
        "privacy_guarantee_",
        "n_features_in_",
    }
    assert not hasattr(search, "cv_results_")


@pytest.mark.parametrize("verbose", [0, 1, 2])
def test_verbose_prints_counts_and_times_never_a_score(verbose, capsys):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(300, 2))
    y = (X[:, 0] > 0).astype(int)
    search = PrivateGridSearchCV(
        SubsampleAggregateClassifier(LogisticRegression(), classes=[0, 1]),
        {"n_teachers": [5, 10, 20]},
        random_state=np.random.SeedSequence(7),
        verbose=verbose,
    )
    scores, _, _ = scores_and_split(search, X, y)
    search.fit(X, y)
    out = capsys.readouterr()
    text = out.out + out.err
    if verbose == 0:
        assert text == ""
        return
    assert "scoring 3 candidate(s) (5, 10, 20 teachers) fitted on 240 rows" in out.out
    assert f"selected candidate {search.best_index_ + 1} of 3 in " in out.out
    assert "refitted the selected candidate on all 300 rows in " in out.out
    assert ("Done" in out.err) == (verbose >= 2)  # joblib's count of candidate fits
    for score in scores:  # counts and times only
        assert f"{score:.2f}" not in text and f"{100 * score:.1f}" not in text


# -- bad input ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "key",
    [
        "epsilon",
        "total_epsilon",
        "total_delta",
        "n_queries",
        "accountant",
        "random_state",
        "classes",
        "noise",
        "delta",
    ],
)
def test_grid_keys_that_set_the_privacy_contract_are_refused(key):
    X, y = all_ones(60)
    acc = PrivacyAccountant(epsilon=5.0)
    search = search_of({key: [None]}, accountant=acc)
    with pytest.raises(InvalidParameterError, match=f"may not search {key}"):
        search.fit(X, y)
    assert acc.queries_answered == 0


@pytest.mark.parametrize(
    "params, error, match",
    [
        ({"selection_epsilon": 0.0}, InvalidParameterError, "'selection_epsilon' parameter"),
        ({"selection_epsilon": "1"}, InvalidParameterError, "selection_epsilon"),
        ({"validation_size": 1.0}, InvalidParameterError, "validation_size"),
        ({"selection": "argmax"}, InvalidParameterError, "'selection' parameter"),
        ({"refit": "yes"}, InvalidParameterError, "refit"),
        ({"accountant": object()}, InvalidParameterError, "accountant"),
        ({"n_jobs": 1.5}, InvalidParameterError, "n_jobs"),
        ({"verbose": -1}, InvalidParameterError, "'verbose' parameter"),
        ({"param_grid": {"n_teachers": 3}}, InvalidParameterError, "param_grid"),
        ({"param_grid": "n_teachers"}, InvalidParameterError, "param_grid"),
        ({"param_grid": {"no_such_parameter": [1]}}, InvalidParameterError, "no_such_parameter"),
        ({"param_grid": {"n_teachers": [100]}}, ValueError, "more than the 48 rows"),
    ],
)
def test_bad_parameters_are_refused_with_nothing_charged(params, error, match):
    X, y = all_ones(60)
    acc = PrivacyAccountant(epsilon=5.0)
    grid = params.pop("param_grid", {"n_teachers": [2, 3]})
    search = search_of(grid, **{"accountant": acc, **params})
    with pytest.raises(error, match=match):
        search.fit(X, y)
    assert acc.queries_answered == 0


def test_other_estimators_sample_weight_and_private_label_sets_are_refused():
    X, y = all_ones(60)
    with pytest.raises(InvalidParameterError, match="'estimator' parameter"):
        PrivateGridSearchCV(LogisticRegression(), {"C": [1.0]}).fit(X, y)
    with pytest.raises(ValueError, match="only one class"):  # classes=None and one label in y
        PrivateGridSearchCV(SubsampleAggregateClassifier(), {"n_teachers": [2]}).fit(X, y)
    with pytest.raises(TypeError, match="sample_weight"):
        search_of({"n_teachers": [2]}).fit(X, y, sample_weight=np.ones(60))


# -- scikit-learn integration ----------------------------------------------------------------------
def test_clone_get_params_pickle_and_a_pipeline_step():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(400, 3))
    y = (X[:, 0] > 0).astype(int)
    search = PrivateGridSearchCV(
        SubsampleAggregateClassifier(SVC(), classes=[0, 1]),
        {"n_teachers": [4, 8], "estimator__C": [0.1, 1.0]},
        selection_epsilon=3.0,
        n_jobs=2,
    )
    twin = clone(search)
    assert twin.get_params()["param_grid"] == search.get_params()["param_grid"]
    pipe = make_pipeline(StandardScaler(), search).fit(X, y)  # scaling is not private: a demo
    assert pipe.predict(X[:4]).shape == (4,)
    fitted = pipe[-1]
    assert fitted.n_candidates_ == 4 and fitted.best_params_ in [
        {"n_teachers": r, "estimator__C": c} for r in (4, 8) for c in (0.1, 1.0)
    ]
    restored = pickle.loads(pickle.dumps(fitted))
    assert restored.predict(X[:3]).shape == (3,)
    assert not hasattr(PrivateGridSearchCV(search.estimator, {"n_teachers": [2]}), "predict")


def test_classes_none_reads_the_label_set_with_a_privacy_warning():
    X, y = all_ones(60)
    y[::2] = 0
    search = PrivateGridSearchCV(
        SubsampleAggregateClassifier(ZeroIfAnyZero()), {"n_teachers": [2, 3]}, random_state=0
    )
    with pytest.warns(PrivacyWarning, match="classes=None"):
        search.fit(X, y)
    assert search.estimator.classes is None  # the template is left unchanged
    np.testing.assert_array_equal(search.classes_, [0, 1])
    np.testing.assert_array_equal(search.best_estimator_.classes, [0, 1])
