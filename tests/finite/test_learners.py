"""Finite classes: the exponential-mechanism learner and private multiplicative weights.

Exact laws against brute force, privacy ratios between neighbours, black-box audits
that pass the estimators and flag variants at twice the rate, accuracy and regret
bounds of the lecture notes, accounting, and bad input.
"""

import copy
import math
import pickle
import threading
import warnings
from itertools import product

import numpy as np
import pytest
from _audit_power import chi_square_power, law_power
from scipy.special import expit, gammaln
from scipy.stats import chisquare
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import Binarizer
from sklearn.tree import DecisionTreeClassifier

from skprivpred import (
    BudgetExhaustedError,
    HorizonExhaustedError,
    InvalidParameterError,
    PrivacyAccountant,
    PrivacyGuarantee,
    PrivacyWarning,
)
from skprivpred.accounting import advanced_composition_epsilon, eps_of_rho, rho_cap
from skprivpred.audit import audit_epsilon, clopper_pearson
from skprivpred.finite import (
    ExponentialMechanismClassifier,
    HypothesisList,
    PrivateExpertsClassifier,
    binary_patterns,
    conjunction_mistakes,
    mw_learning_rate,
    mw_round_proba,
    superset_sums,
    threshold_mistakes,
)
from skprivpred.mechanisms import exponential_mechanism_proba, sample_fewest_mistakes

# A false-alarm rate this small per statistical assertion keeps the suite
# reliable while each assertion still fails on any real deviation.
P_FALSE_ALARM = 1e-6
EM = ExponentialMechanismClassifier
MW = PrivateExpertsClassifier


# -- brute force -------------------------------------------------------------------------------
def brute_conjunction_mistakes(X, y):
    """Evaluate every conjunction on every row."""
    d = X.shape[1]
    masks = np.arange(2**d)
    member = (masks[:, None] >> np.arange(d)) & 1  # (2^d, d): features of each conjunction
    predicts_one = np.all((X[None, :, :] == 1) | (member[:, None, :] == 0), axis=2)
    return (predicts_one != (y == 1)[None, :]).sum(axis=1)


def brute_threshold_mistakes(x, y, grid):
    return np.array([np.sum((x >= a) != (y == 1)) for a in grid])


def brute_mw_laws(rewards, rate):
    """The notes' algorithm verbatim: uniform start, multiply by exp(a r), renormalise."""
    weights = np.full(rewards.shape[1], 1.0 / rewards.shape[1])
    laws = []
    for row in rewards:
        laws.append(weights.copy())
        weights = weights * np.exp(rate * row)
        weights /= weights.sum()
    return np.array(laws)


def chi_square_pvalue(counts, law):
    counts = np.asarray(counts, dtype=float)
    keep = law > 0
    assert counts[~keep].sum() == 0
    return chisquare(counts[keep], law[keep] * counts.sum()).pvalue


def release_epsilon_lower_bound(make, data, neighbour, release, n_trials, seed_offset=0):
    """Black-box audit of a release made at fit: refit with fresh seeds, compare outcomes.

    Fits ``make(seed)`` ``n_trials`` times on each data set (distinct seeds), records
    ``release(fitted)`` and returns a lower confidence bound on the largest
    ``|ln P(o) / P'(o)|``, simultaneous over outcomes at level ``1 - P_FALSE_ALARM``
    (Clopper–Pearson, Bonferroni).
    """
    runs = []
    for k, (X, y) in enumerate((data, neighbour)):
        first = seed_offset + k * n_trials
        runs.append([release(make(seed).fit(X, y)) for seed in range(first, first + n_trials)])
    outcomes = sorted(set(runs[0]) | set(runs[1]))
    counts = [np.array([run.count(o) for o in outcomes]) for run in runs]
    alpha = P_FALSE_ALARM / (2 * len(outcomes))
    (lo1, hi1), (lo2, hi2) = (
        clopper_pearson(c, n_trials, confidence_level=1 - alpha) for c in counts
    )
    with np.errstate(divide="ignore"):
        bound = np.maximum(np.log(lo1) - np.log(hi2), np.log(lo2) - np.log(hi1))
    return float(np.max(bound))


def _rng_state(clf, stream="_query_stream"):
    return copy.deepcopy(getattr(clf, stream).rng.bit_generator.state)


# ============================================================================================
# Exponential-mechanism learner
# ============================================================================================
class _DoubledEM(ExponentialMechanismClassifier):
    """Broken on purpose: weight exp(epsilon * u) (the rate doubled), so 2 epsilon-DP."""

    def _draw(self, mistakes, epsilon, rng):
        return sample_fewest_mistakes(mistakes, 2 * epsilon, rng)

    def _selection_law(self, mistakes, epsilon):
        return exponential_mechanism_proba(-np.asarray(mistakes, dtype=float), 2 * epsilon)


@pytest.fixture(scope="module")
def tiny_binary():
    rng = np.random.default_rng(3)
    X = rng.integers(0, 2, size=(7, 3))
    y = np.array([1, 0, 1, 1, 0, 0, 1])
    return X, y


# -- the transforms equal brute force ----------------------------------------------------------
@pytest.mark.parametrize("d", range(0, 11))
def test_superset_sums_equal_brute_force(d):
    values = np.random.default_rng(d).integers(-50, 50, size=2**d)
    masks = np.arange(2**d)
    contains = (masks[None, :] & masks[:, None]) == masks[:, None]  # row T, column P: T ⊆ P
    np.testing.assert_array_equal(superset_sums(values), contains @ values)


@pytest.mark.parametrize("d", [1, 2, 3, 5, 8, 10])
def test_conjunction_mistakes_equal_brute_force(d):
    rng = np.random.default_rng(d)
    X = (rng.random((150, d)) < 0.7).astype(int)
    y = rng.integers(0, 2, size=150)
    fast = conjunction_mistakes(binary_patterns(X), y == 1, d)
    np.testing.assert_array_equal(fast, brute_conjunction_mistakes(X, y))
    assert fast[0] == np.sum(y == 0)  # the empty conjunction is the constant 1


def test_superset_sums_rejects_bad_length():
    with pytest.raises(ValueError, match="2\\*\\*d"):
        superset_sums(np.zeros(6))


def test_threshold_mistakes_equal_brute_force_with_ties_and_outside_points():
    rng = np.random.default_rng(0)
    grid = np.linspace(-1.0, 1.0, 21)
    x = np.concatenate([rng.choice(grid, 40), rng.normal(size=60) * 2])  # ties and outliers
    y = rng.integers(0, 2, size=100)
    np.testing.assert_array_equal(
        threshold_mistakes(x, y == 1, grid), brute_threshold_mistakes(x, y, grid)
    )


# -- exact selection law -----------------------------------------------------------------------
def test_conjunction_law_equals_brute_force_softmax(tiny_binary):
    X, y = tiny_binary
    clf = EM(epsilon=0.8, classes=[0, 1])
    law = clf._selection_proba(X, y)
    weights = np.exp(-0.8 * brute_conjunction_mistakes(X, y) / 2)
    np.testing.assert_allclose(law, weights / weights.sum(), rtol=1e-12)
    assert not hasattr(clf, "n_features_in_")  # the diagnostic changed nothing


def test_threshold_law_equals_brute_force_softmax():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(30, 2))
    y = (X[:, 1] > 0.2).astype(int)
    grid = [np.linspace(-1, 1, 5), np.array([-0.5, 0.0, 0.5])]
    law = EM("thresholds", epsilon=1.3, grid=grid, classes=[0, 1])._selection_proba(X, y)
    mistakes = []
    for j in range(2):
        up = brute_threshold_mistakes(X[:, j], y, grid[j])
        mistakes += [up, 30 - up]
    weights = np.exp(-1.3 * np.concatenate(mistakes) / 2)
    np.testing.assert_allclose(law, weights / weights.sum(), rtol=1e-12)


def test_list_law_equals_brute_force_softmax():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(40, 2))
    y = np.digitize(X[:, 0], [-0.5, 0.5])  # three labels: lists allow multi-class
    hypotheses = [
        DecisionTreeClassifier(max_depth=1, random_state=0).fit(X[:10], y[:10]),
        lambda Z: np.digitize(Z[:, 0], [-0.4, 0.6]),
        lambda Z: np.zeros(len(Z), dtype=int),
    ]
    law = EM(hypotheses, epsilon=0.5, classes=[0, 1, 2])._selection_proba(X, y)
    mistakes = np.array(
        [np.sum(h.predict(X) != y) for h in hypotheses[:1]]
        + [np.sum(h(X) != y) for h in hypotheses[1:]]
    )
    weights = np.exp(-0.5 * mistakes / 2)
    np.testing.assert_allclose(law, weights / weights.sum(), rtol=1e-12)


def test_selection_frequencies_match_the_exact_law(tiny_binary):
    """Sample size from the bound: the law of ``_DoubledEM`` (twice the epsilon) is
    rejected by the chi-square test of 750 fits with probability >= 0.99 (noncentral
    chi-square, ``_audit_power.chi_square_power``, asserted below; 0.9994 in a simulation
    of multinomial counts); the smallest expected count is 31."""
    X, y = tiny_binary
    law = EM(epsilon=1.0, classes=[0, 1])._selection_proba(X, y)
    n = 750
    doubled = _DoubledEM(epsilon=1.0, classes=[0, 1])._selection_proba(X, y)
    assert chi_square_power(n, law, doubled, P_FALSE_ALARM) >= 0.99
    masks = []
    for seed in range(n):
        clf = EM(epsilon=1.0, classes=[0, 1], random_state=seed).fit(X, y)
        masks.append(int(np.sum(1 << clf.selected_features_)))
    assert chi_square_pvalue(np.bincount(masks, minlength=8), law) > P_FALSE_ALARM


def test_two_stage_sampler_has_the_exponential_mechanism_law():
    mistakes = np.array([3, 0, 5, 3, 1, 0, 9, 3, 40])  # ties within levels, a far level
    law = exponential_mechanism_proba(-mistakes.astype(float), 1.5)
    rng = np.random.default_rng(0)
    draws = [sample_fewest_mistakes(mistakes, 1.5, rng) for _ in range(30_000)]
    assert chi_square_pvalue(np.bincount(draws, minlength=9), law) > P_FALSE_ALARM


def test_sampler_handles_huge_scores_without_overflow():
    mistakes = np.array([100_000, 0, 100_001])
    rng = np.random.default_rng(0)
    assert {sample_fewest_mistakes(mistakes, 50.0, rng) for _ in range(50)} == {1}


# -- privacy: every neighbour, every hypothesis ------------------------------------------------
def _all_binary_neighbours(X, y):
    d = X.shape[1]
    for row in range(X.shape[0]):
        for bits in product([0, 1], repeat=d + 1):
            X2, y2 = X.copy(), y.copy()
            X2[row], y2[row] = bits[:d], bits[d]
            yield X2, y2


def _max_log_ratio(estimator, X, y, neighbours):
    law = estimator._selection_proba(X, y)
    return max(
        np.max(np.abs(np.log(law) - np.log(estimator._selection_proba(X2, y2))))
        for X2, y2 in neighbours
    )


@pytest.mark.parametrize("epsilon", [0.3, 1.0, 4.0])
def test_conjunction_log_ratio_between_neighbours_at_most_epsilon(tiny_binary, epsilon):
    X, y = tiny_binary
    worst = _max_log_ratio(EM(epsilon=epsilon, classes=[0, 1]), X, y, _all_binary_neighbours(X, y))
    assert worst <= epsilon * (1 + 1e-12)
    assert worst > 0.6 * epsilon  # some neighbour moves the law substantially
    broken = _max_log_ratio(
        _DoubledEM(epsilon=epsilon, classes=[0, 1]), X, y, _all_binary_neighbours(X, y)
    )
    assert broken > epsilon * 1.2


def test_threshold_log_ratio_between_neighbours_at_most_epsilon():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(12, 1))
    y = (X[:, 0] > 0).astype(int)
    grid = np.linspace(-2, 2, 9)
    neighbours = []
    for row in range(12):
        for value, label in product([-3.0, -0.1, 0.1, 3.0], [0, 1]):
            X2, y2 = X.copy(), y.copy()
            X2[row, 0], y2[row] = value, label
            neighbours.append((X2, y2))
    clf = EM("thresholds", epsilon=1.0, grid=grid, classes=[0, 1])
    worst = _max_log_ratio(clf, X, y, neighbours)
    assert 0.5 < worst <= 1.0 + 1e-12


# -- privacy: black-box audit over refits ------------------------------------------------------
def _audit_pair():
    """One feature, always 0: the constant 1 makes 3 mistakes here and 2 in the neighbour,
    the conjunction x_0 (always 0) 1 and 2: a tie in the neighbour, where the selection
    law is (1/2, 1/2) for every rate, the most visible place for a rate that is too large.
    """
    X = np.zeros((4, 1), dtype=int)
    y = np.array([0, 0, 0, 1])
    X2, y2 = X.copy(), y.copy()
    y2[0] = 1  # replace row 0: (0, 0) -> (0, 1)
    return (X, y), (X2, y2)


def test_refit_audit_passes_estimator_and_flags_doubled_rate():
    """Sample size from the bound (exact laws, ``_audit_power.law_power``).

    ``_DoubledEM`` spends twice its epsilon. Its outcome 0 (the constant hypothesis) has
    probability 0.0180 here and 0.5 in the neighbour (log-ratio 3.33; the estimator's:
    0.1192 and 0.5, log-ratio 1.43 <= 2). With 1,350 fits per data set the two binomial
    counts put the Clopper-Pearson bound above epsilon with probability at least 0.99
    (1,300: below 0.99), computed exactly and asserted below; the same holds for the
    estimator's own run, should it ever spend twice its epsilon. The estimator passes
    with probability at least 1 - P_FALSE_ALARM whatever the number of fits.
    """
    data, neighbour = _audit_pair()
    epsilon, n_fits = 2.0, 1350

    def release(clf):
        return len(clf.selected_features_)

    broken_laws = [
        dict(enumerate(_DoubledEM(epsilon=epsilon, classes=[0, 1])._selection_proba(*d)))
        for d in (data, neighbour)
    ]
    assert law_power(n_fits, *broken_laws, epsilon, P_FALSE_ALARM / 4) >= 0.99
    bound = release_epsilon_lower_bound(
        lambda s: EM(epsilon=epsilon, classes=[0, 1], random_state=s),
        data,
        neighbour,
        release,
        n_fits,
    )
    assert bound <= epsilon
    broken = release_epsilon_lower_bound(
        lambda s: _DoubledEM(epsilon=epsilon, classes=[0, 1], random_state=s),
        data,
        neighbour,
        release,
        n_fits,
        seed_offset=10_000,
    )
    assert broken > epsilon


# -- accuracy in the realizable case -----------------------------------------------------------
def _notes_sample_size(n_hypotheses, alpha, epsilon):
    return math.ceil(8 * math.log(n_hypotheses) / (alpha * min(alpha, epsilon)))


@pytest.mark.parametrize("epsilon", [0.05, 0.5])
def test_conjunctions_are_accurate_past_the_notes_sample_size(epsilon):
    d, alpha, p = 8, 0.1, 0.8
    target = np.array([1, 3, 6])
    n = _notes_sample_size(2**d, alpha, epsilon)
    for seed in range(10):
        rng = np.random.default_rng(seed)
        X = (rng.random((n, d)) < p).astype(int)
        y = np.all(X[:, target] == 1, axis=1).astype(int)
        chosen = EM(epsilon=epsilon, classes=[0, 1], random_state=seed).fit(X, y).selected_features_
        # exact population error under the product law: P(h_S != h_T)
        union = np.union1d(chosen, target)
        error = p ** len(chosen) + p ** len(target) - 2 * p ** len(union)
        assert error <= alpha


def test_thresholds_are_accurate_past_the_notes_sample_size():
    grid = np.linspace(0, 1, 101)
    alpha, epsilon, target = 0.05, 1.0, grid[37]
    n = _notes_sample_size(2 * grid.size, alpha, epsilon)
    for seed in range(10):
        rng = np.random.default_rng(seed)
        X = rng.random((n, 1))
        y = (X[:, 0] < target).astype(int)  # direction "decreasing"
        clf = EM("thresholds", epsilon=epsilon, grid=grid, classes=[0, 1], random_state=seed)
        clf.fit(X, y)
        gap = abs(clf.threshold_ - target)
        error = gap if clf.direction_ == "decreasing" else 1 - gap
        assert error <= alpha


# -- released model, fitted attributes, accounting ---------------------------------------------
def test_released_conjunction_predicts_deterministically_and_for_free(tiny_binary):
    rng = np.random.default_rng(0)
    X = rng.integers(0, 2, size=(3000, 6))
    y = (X[:, 1] & X[:, 4]).astype(int)
    acc = PrivacyAccountant(epsilon=1.0)
    clf = EM(epsilon=1.0, classes=[0, 1], accountant=acc, random_state=0).fit(X, y)
    np.testing.assert_array_equal(clf.selected_features_, [1, 4])
    assert acc.epsilon_spent == pytest.approx(1.0) and acc.queries_answered == 1
    first = clf.predict(X)
    np.testing.assert_array_equal(first, y)
    np.testing.assert_array_equal(clf.predict(X), first)
    assert clf.score(X, y) == 1.0
    assert acc.queries_answered == 1  # predictions and score are free
    with pytest.raises(BudgetExhaustedError):
        clf.fit(X, y)  # a refit is a new release
    np.testing.assert_array_equal(clf.selected_features_, [1, 4])
    assert acc.queries_answered == 1


def test_public_attributes_never_hold_the_scores(tiny_binary):
    X, y = tiny_binary
    clf = EM(epsilon=1.0, classes=[0, 1], random_state=0).fit(X, y)
    public = {k for k in vars(clf) if k.endswith("_") and not k.startswith("_")}
    assert public == {
        "classes_",
        "n_features_in_",
        "n_hypotheses_",
        "selected_features_",
        "privacy_guarantee_",
    }
    sizes = [np.size(v) for v in vars(clf).values() if isinstance(v, np.ndarray)]
    assert clf.n_hypotheses_ == 8 and 8 not in sizes
    assert isinstance(clf.privacy_guarantee_, PrivacyGuarantee)
    assert clf.privacy_guarantee_.epsilon == 1.0 and clf.privacy_guarantee_.delta == 0.0
    assert "McSherry & Talwar (2007)" in clf.privacy_guarantee_.theorem


def test_threshold_attributes_and_prediction():
    X = np.array([[0.1, 5.0], [0.2, 6.0], [0.8, 5.5], [0.9, 6.5]])
    y = np.array(["no", "no", "yes", "yes"])
    clf = EM(
        "thresholds",
        epsilon=30.0,
        grid=[[0.5], [0.0, 100.0]],
        classes=["no", "yes"],
        random_state=0,
    ).fit(X, y)
    assert (clf.threshold_feature_, clf.threshold_, clf.direction_) == (0, 0.5, "increasing")
    np.testing.assert_array_equal(clf.predict([[0.49, 0.0], [0.5, 0.0]]), ["no", "yes"])
    assert clf.n_hypotheses_ == 6


def test_refit_with_another_family_drops_stale_attributes(tiny_binary):
    X, y = tiny_binary
    clf = EM(epsilon=1.0, classes=[0, 1], random_state=0).fit(X, y)
    clf.set_params(hypotheses="thresholds", grid=[0.5]).fit(X, y)
    assert not hasattr(clf, "selected_features_") and hasattr(clf, "threshold_")


def test_same_seed_same_hypothesis_and_copies_agree(tiny_binary):
    X, y = tiny_binary
    draws = {
        tuple(EM(epsilon=0.1, classes=[0, 1], random_state=7).fit(X, y).selected_features_)
        for _ in range(5)
    }
    assert len(draws) == 1
    clf = EM(epsilon=0.1, classes=[0, 1], random_state=7).fit(X, y)
    twin = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(twin.predict(X), clf.predict(X))  # the model is released


def test_list_of_frozen_estimators_survives_clone_and_cross_validation():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    public = rng.normal(size=(100, 3))
    candidates = [
        LogisticRegression().fit(public, (public[:, 0] + public[:, 1] > 0).astype(int)),
        LogisticRegression().fit(public, (public[:, 2] > 0).astype(int)),
    ]
    frozen = EM(
        [FrozenEstimator(c) for c in candidates], epsilon=1.0, classes=[0, 1], random_state=0
    )
    assert clone(frozen).fit(X, y).selected_index_ == 0
    assert cross_val_score(frozen, X, y, cv=3).min() > 0.9
    plain = EM(candidates, classes=[0, 1], random_state=0)
    assert plain.fit(X, y).hypothesis_ is candidates[plain.selected_index_]
    with pytest.raises(ValueError, match="FrozenEstimator"):
        clone(plain).fit(X, y)


def test_conjunctions_after_a_public_binarizer_in_pipeline_cv_and_grid_search():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 5))
    y = ((X[:, 0] > 0) & (X[:, 3] > 0)).astype(int)
    acc = PrivacyAccountant()
    pipe = make_pipeline(
        Binarizer(threshold=0.0),  # fixed threshold: data-independent
        EM(epsilon=2.0, classes=[0, 1], accountant=acc, random_state=0),
    )
    assert cross_val_score(pipe, X, y, cv=3).min() == 1.0
    assert acc.queries_answered == 3  # one release per fit, scoring is free
    search = GridSearchCV(pipe, {"exponentialmechanismclassifier__epsilon": [1.0, 2.0]}, cv=2)
    search.fit(X, y)
    assert acc.queries_answered == 3 + 2 * 2 + 1  # every fit, and the refit, is a release
    np.testing.assert_array_equal(search.best_estimator_[-1].selected_features_, [0, 3])


def test_pandas_bool_frame_and_feature_names():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.random((500, 3)) < 0.6, columns=["a", "b", "c"])
    y = (frame["a"] & frame["c"]).astype(int).to_numpy()
    clf = EM(epsilon=2.0, classes=[0, 1], random_state=0).fit(frame, y)
    assert list(clf.feature_names_in_) == ["a", "b", "c"]
    assert list(clf.feature_names_in_[clf.selected_features_]) == ["a", "c"]
    with pytest.raises(ValueError, match="feature names"):
        clf.predict(frame[["c", "b", "a"]])


def test_classes_none_warns(tiny_binary):
    X, y = tiny_binary
    with pytest.warns(PrivacyWarning, match="classes"):
        EM(random_state=0).fit(X, y)


# -- bad input: clear errors, nothing changed --------------------------------------------------
EM_BAD_PARAMS = [
    ({"epsilon": 0}, InvalidParameterError, "'epsilon' parameter"),
    ({"epsilon": float("nan")}, InvalidParameterError, "'epsilon' parameter"),
    ({"epsilon": float("inf")}, InvalidParameterError, "'epsilon' parameter"),
    ({"epsilon": "1"}, InvalidParameterError, "'epsilon' parameter"),
    ({"hypotheses": "stumps"}, InvalidParameterError, "'hypotheses' parameter"),
    ({"hypotheses": 3}, InvalidParameterError, "'hypotheses' parameter"),
    ({"hypotheses": []}, InvalidParameterError, "at least one"),
    ({"hypotheses": [object()]}, InvalidParameterError, r"hypotheses\[0\]"),
    ({"hypotheses": [LogisticRegression()]}, InvalidParameterError, r"hypotheses\[0\].*not fitted"),
    ({"hypotheses": "thresholds"}, InvalidParameterError, "grid=None"),
    ({"hypotheses": "thresholds", "grid": [0.5, 0.5]}, ValueError, "duplicate"),
    ({"hypotheses": "thresholds", "grid": [[0.5]]}, ValueError, "per-feature grids"),
    ({"hypotheses": "thresholds", "grid": np.zeros((2, 2))}, ValueError, "per-feature grids"),
    ({"hypotheses": "thresholds", "grid": np.zeros((1, 2, 2))}, ValueError, "3 dimensions"),
    ({"hypotheses": "thresholds", "grid": [np.nan]}, ValueError, "finite"),
    ({"hypotheses": "thresholds", "grid": 0.5}, InvalidParameterError, "'grid' parameter"),
    (
        {"hypotheses": "thresholds", "grid": [0.5], "direction": "greater"},
        InvalidParameterError,
        "'direction' parameter",
    ),
    ({"max_hypotheses": 4}, ValueError, "max_hypotheses=4"),
    ({"max_hypotheses": 0}, InvalidParameterError, "'max_hypotheses' parameter"),
    ({"accountant": 3}, InvalidParameterError, "'accountant' parameter"),
    ({"random_state": "seed"}, InvalidParameterError, "'random_state' parameter"),
    ({"classes": [0, 1, 2]}, ValueError, "Only binary classification is supported"),
    ({"classes": [0, 2]}, ValueError, "outside `classes`"),
]


@pytest.mark.parametrize("params, error, match", EM_BAD_PARAMS)
def test_em_bad_parameters_leave_fitted_estimator_and_accountant_unchanged(
    tiny_binary, params, error, match
):
    X, y = tiny_binary
    acc = PrivacyAccountant(epsilon=10.0)
    clf = EM(epsilon=1.0, classes=[0, 1], accountant=acc, random_state=0).fit(X, y)
    state = dict(vars(clf))
    with pytest.raises(error, match=match):
        clf.set_params(**params).fit(X, y)
    assert {k: v for k, v in vars(clf).items() if k.endswith("_") or k.startswith("_")} == {
        k: v for k, v in state.items() if k.endswith("_") or k.startswith("_")
    }
    assert acc.queries_answered == 1


@pytest.mark.parametrize(
    "bad",
    [
        np.array([[0, 1, 2]] * 7),
        np.array([[0.0, 0.5, 1.0]] * 7),
        np.array([[-1, 0, 1]] * 7),
        np.array([["0", "1", "1"]] * 7),
    ],
    ids=["two", "half", "minus-one", "strings"],
)
def test_non_binary_X_for_conjunctions_is_a_clear_error(tiny_binary, bad):
    _, y = tiny_binary
    with pytest.raises(ValueError, match="needs binary X.*Binarizer"):
        EM(classes=[0, 1]).fit(bad, y)
    X, y = tiny_binary
    clf = EM(classes=[0, 1], random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="needs binary X"):
        clf.predict(bad)


def test_em_sample_weight_empty_nan_and_wrong_width(tiny_binary):
    X, y = tiny_binary
    with pytest.raises(TypeError, match="sample_weight"):
        EM(classes=[0, 1]).fit(X, y, sample_weight=np.ones(7))
    with pytest.raises(ValueError, match="0 sample"):
        EM(classes=[0, 1]).fit(np.zeros((0, 3)), np.zeros(0))
    with pytest.raises(ValueError, match="NaN"):
        EM("thresholds", grid=[0.0], classes=[0, 1]).fit(np.full((7, 3), np.nan), y)
    with pytest.raises(NotFittedError):
        EM().predict(X)
    clf = EM(classes=[0, 1], random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        clf.predict(X[:, :2])


def test_max_hypotheses_refuses_before_any_work():
    X = np.zeros((3, 30), dtype=int)  # 2**30 conjunctions: refused, not enumerated
    with pytest.raises(ValueError, match="1073741824 hypotheses.*never truncated"):
        EM(classes=[0, 1]).fit(X, [0, 1, 0])


# ============================================================================================
# Private multiplicative weights
# ============================================================================================
def always_one(X):
    return np.ones(len(X), dtype=int)


def always_zero(X):
    return np.zeros(len(X), dtype=int)


def first_positive(X):
    return (np.asarray(X)[:, 0] > 0).astype(int)


def second_positive(X):
    return (np.asarray(X)[:, 1] > 0).astype(int)


class _DoubledMW(PrivateExpertsClassifier):
    """Broken on purpose: the weights use twice the announced rate."""

    def _round_law(self, rewards, cumulative, rate):
        return mw_round_proba(rewards, 2 * rate, initial=cumulative)


class _FixedRateMW(PrivateExpertsClassifier):
    """A given rate, whatever the budget (to probe how tight the library's rate is)."""

    fixed_rate = 0.0

    def _rate(self, epsilon, n_rounds, delta):
        return self.fixed_rate


class _NotesMW(PrivateExpertsClassifier):
    """The notes' Theorem 3 rate a = sqrt(epsilon / (12 T)) (claims delta = e^{-T a})."""

    def _rate(self, epsilon, n_rounds, delta):
        return math.sqrt(epsilon / (12 * n_rounds))


@pytest.fixture(scope="module")
def stream():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 2))
    y = (X[:, 0] + 0.3 * rng.normal(size=400) > 0).astype(int)
    return X, y


EXPERTS = [first_positive, second_positive, always_zero]


# -- rates -------------------------------------------------------------------------------------
def test_pure_rate_is_epsilon_over_two_t():
    assert mw_learning_rate(1.0, 100) == 0.005
    assert mw_learning_rate(0.3, 7) == pytest.approx(0.3 / 14, rel=1e-15)


@pytest.mark.parametrize(
    "epsilon, n_rounds, delta", [(1.0, 10_000, 1e-6), (0.5, 500, 1e-5), (2.0, 100_000, 1e-9)]
)
def test_advanced_rate_solves_the_composition_theorem(epsilon, n_rounds, delta):
    rate = mw_learning_rate(epsilon, n_rounds, delta, composition="advanced")
    achieved = advanced_composition_epsilon(2 * rate, n_rounds, delta)
    assert achieved <= epsilon and achieved == pytest.approx(epsilon, rel=1e-9)
    assert rate > epsilon / (2 * n_rounds)  # better than basic composition here


def test_advanced_setting_falls_back_to_pure_when_pure_is_larger():
    assert mw_learning_rate(1.0, 2, 0.01, composition="advanced") == 0.25
    assert mw_learning_rate(1.0, 2, 0.01) > 0.25  # zCDP beats the pure rate even here
    # 2 T ln(1/delta) < 1: the per-round epsilon exceeds epsilon itself, and the rate
    # still solves the composition theorem exactly
    rate = mw_learning_rate(0.01, 1, 0.9, composition="advanced")
    assert rate > 0.005
    achieved = advanced_composition_epsilon(2 * rate, 1, 0.9)
    assert achieved <= 0.01 and achieved == pytest.approx(0.01, rel=1e-9)
    rate = mw_learning_rate(1.0, 10_000, 1e-6, composition="advanced")
    assert advanced_composition_epsilon(2 * rate, 10_000, 1e-6) == pytest.approx(1.0, rel=1e-9)
    clf = MW(
        EXPERTS, epsilon=1.0, delta=0.01, classes=[0, 1], random_state=0, composition="advanced"
    )
    clf.fit(np.ones((2, 2)), [0, 1])
    assert clf.privacy_guarantee_.details["release"].delta == 0.0


@pytest.mark.parametrize(
    "epsilon, n_rounds, delta", [(1.0, 10_000, 1e-6), (0.5, 500, 1e-5), (2.0, 100_000, 1e-9)]
)
def test_zcdp_rate_spends_exactly_the_zcdp_cap(epsilon, n_rounds, delta):
    rate = mw_learning_rate(epsilon, n_rounds, delta)
    rho = n_rounds * rate**2 / 2  # each round is 2a-bounded-range: (2a)^2 / 8 = a^2 / 2
    assert rho == pytest.approx(rho_cap(epsilon, delta), rel=1e-12)
    assert eps_of_rho(rho, delta) <= epsilon * (1 + 1e-9)
    assert rate > mw_learning_rate(epsilon, n_rounds, delta, composition="advanced")
    with pytest.raises(InvalidParameterError, match="composition"):
        mw_learning_rate(epsilon, n_rounds, delta, composition="renyi")


def test_notes_theorem_3_is_false_and_the_library_rate_holds():
    """Two experts, equal except on row 0, swapped in the neighbour: each later round is
    randomized response with parameter a, so the exact delta of the sequence follows from
    a binomial law. The notes' rate misses its claimed delta by orders of magnitude."""
    n_rounds, epsilon = 10_000, 1.0
    experts = [first_positive, always_zero]
    X = np.full((n_rounds, 2), -1.0)  # later rows: both experts say 0 and are right
    X[0, 0] = 1.0  # row 0: first_positive says 1, always_zero says 0
    y = np.zeros(n_rounds, dtype=int)
    y[0] = 1  # first_positive right on row 0 ...
    y2 = np.zeros(n_rounds, dtype=int)  # ... always_zero right in the neighbour

    def exact_delta(clf):
        laws = [clf._round_proba(X, y), clf._round_proba(X, y2)]
        loss = np.log(laws[0]) - np.log(laws[1])
        assert np.allclose(loss[0], 0) and np.allclose(loss[1:], loss[1])  # iid rounds
        step, k = abs(loss[1, 0]), n_rounds - 1
        p = laws[0][1, np.argmax(loss[1])]  # probability of the +step outcome
        plus = np.arange(k + 1)
        log_pmf = (
            gammaln(k + 1)
            - gammaln(plus + 1)
            - gammaln(k - plus + 1)
            + plus * np.log(p)
            + (k - plus) * np.log1p(-p)
        )
        total = (2 * plus - k) * step
        over = total > epsilon
        return float(np.sum(np.exp(log_pmf[over]) * -np.expm1(epsilon - total[over])))

    notes = _NotesMW(experts, epsilon=epsilon, delta=0.5, n_rounds=n_rounds, classes=[0, 1])
    notes_rate = math.sqrt(epsilon / (12 * n_rounds))
    claimed = math.exp(-n_rounds * notes_rate)
    assert claimed < 1e-12 and exact_delta(notes) > 1e-5
    for composition in ("advanced", "zcdp"):
        ours = MW(
            experts,
            epsilon=epsilon,
            delta=1e-6,
            n_rounds=n_rounds,
            classes=[0, 1],
            composition=composition,
        )
        assert exact_delta(ours) <= 1e-6, composition
    # The zCDP rate is the larger one, and is not far from the exact limit: a rate 25%
    # larger than the zCDP rate breaks delta = 1e-6 in this example.
    zcdp_rate = mw_learning_rate(epsilon, n_rounds, 1e-6)
    too_fast = _FixedRateMW(experts, epsilon=epsilon, delta=1e-6, n_rounds=n_rounds, classes=[0, 1])
    too_fast.fixed_rate = 1.25 * zcdp_rate
    assert exact_delta(too_fast) > 1e-6


# -- exact law of every round ------------------------------------------------------------------
def test_round_law_is_softmax_of_cumulative_rewards():
    rewards = np.random.default_rng(0).random((60, 4))
    for rate in (0.01, 0.3, 1.79):
        np.testing.assert_allclose(
            mw_round_proba(rewards, rate), brute_mw_laws(rewards, rate), rtol=1e-10
        )


def test_chosen_experts_follow_the_round_laws(stream):
    """Sample size from the bound: ``_DoubledMW`` (twice the rate, so twice the epsilon)
    has third-round law (0.212, 0.576, 0.212) where the estimator's is (0.274, 0.452,
    0.274); with 1,000 fits the chi-square test of that round rejects it with probability
    0.991 (noncentral chi-square, ``_audit_power.chi_square_power``, asserted below; the
    second round's laws, (0.155, 0.422, 0.422) against (0.233, 0.384, 0.384), give only
    0.61, also asserted). The estimator passes with probability at least
    1 - P_FALSE_ALARM (expected counts >= 155)."""
    X, y = stream[0][:6], stream[1][:6]
    clf = MW(EXPERTS, epsilon=6.0, classes=[0, 1])
    laws = clf._round_proba(X, y)
    np.testing.assert_allclose(laws[0], 1 / 3)
    n = 1000
    doubled = _DoubledMW(EXPERTS, epsilon=6.0, classes=[0, 1])._round_proba(X, y)
    power = [chi_square_power(n, laws[t], doubled[t], P_FALSE_ALARM / 6) for t in range(6)]
    assert power[2] >= 0.99
    assert power[1] == pytest.approx(0.61, abs=0.01)
    chosen = np.array(
        [
            MW(EXPERTS, epsilon=6.0, classes=[0, 1], random_state=s).fit(X, y).chosen_experts_
            for s in range(n)
        ]
    )
    for t in range(6):
        counts = np.bincount(chosen[:, t], minlength=3)
        assert chi_square_pvalue(counts, laws[t]) > P_FALSE_ALARM / 6


def test_partial_fit_in_chunks_equals_fit(stream):
    X, y = stream
    whole = MW(EXPERTS, epsilon=40.0, n_rounds=400, classes=[0, 1], random_state=3).fit(X, y)
    parts = MW(EXPERTS, epsilon=40.0, n_rounds=400, random_state=3)
    for start in range(0, 400, 150):
        parts.partial_fit(X[start : start + 150], y[start : start + 150], classes=[0, 1])
    np.testing.assert_array_equal(parts.chosen_experts_, whole.chosen_experts_)
    np.testing.assert_allclose(parts._selection_proba(), whole._selection_proba())
    with pytest.raises(ValueError, match="n_rounds=400 rounds were announced and 400 have run"):
        parts.partial_fit(X[:1], y[:1])


# -- privacy of one round ----------------------------------------------------------------------
@pytest.mark.parametrize("epsilon", [2.0, 20.0])
def test_one_round_log_ratio_between_neighbouring_streams_at_most_2a(stream, epsilon):
    X, y = stream[0][:25], stream[1][:25]
    clf = MW(EXPERTS, epsilon=epsilon, classes=[0, 1])
    broken = _DoubledMW(EXPERTS, epsilon=epsilon, classes=[0, 1])
    rate = epsilon / (2 * 25)
    worst = worst_broken = 0.0
    for row in range(25):
        for x_new in ([2.0, 2.0], [-2.0, 2.0], [2.0, -2.0], [-2.0, -2.0]):
            X2, y2 = X.copy(), y.copy()
            X2[row], y2[row] = x_new, 1 - y[row]
            for model, name in ((clf, "ok"), (broken, "broken")):
                laws = [model._round_proba(X, y), model._round_proba(X2, y2)]
                ratio = np.max(np.abs(np.log(laws[0]) - np.log(laws[1])))
                if name == "ok":
                    worst = max(worst, ratio)
                else:
                    worst_broken = max(worst_broken, ratio)
    assert worst <= 2 * rate * (1 + 1e-12)
    assert worst > rate  # the bound is nearly reached
    assert worst_broken > 2 * rate * 1.2


def test_one_round_ratio_for_real_valued_rewards():
    rng = np.random.default_rng(5)
    rate = 0.4
    for _ in range(200):
        rewards = rng.random((8, 5))
        neighbour = rewards.copy()
        neighbour[rng.integers(8)] = rng.random(5).round()  # an extreme replacement row
        laws = mw_round_proba(rewards, rate), mw_round_proba(neighbour, rate)
        ratio = np.abs(np.log(laws[0]) - np.log(laws[1]))
        assert ratio.max() <= 2 * rate * (1 + 1e-12)


# -- black-box audit of the answers ------------------------------------------------------------
def test_audit_passes_predictions_and_flags_twice_the_rate():
    X = np.zeros((4, 1))
    y = np.ones(4, dtype=int)  # always_one has 4 more rewards than always_zero
    y2 = y.copy()
    y2[0] = 0  # neighbour: 2 more
    est = MW([always_one, always_zero], epsilon=4.0, classes=[0, 1])  # a = 0.5, 2a = 1
    report = audit_epsilon(est, X, y, X, y2, X[:1], n_trials=20_000, random_state=0)
    assert report.claimed_epsilon == pytest.approx(1.0)
    assert report.passed, str(report)
    broken = _DoubledMW([always_one, always_zero], epsilon=4.0, classes=[0, 1])
    report_broken = audit_epsilon(broken, X, y, X, y2, X[:1], n_trials=20_000, random_state=0)
    assert not report_broken.passed, str(report_broken)


# -- regret (notes, Theorem 2) -----------------------------------------------------------------
def _synthetic_rewards_stream(seed, n_rounds=1500):
    """Experts with accuracies 0.55-0.8, the best one changing halfway through."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_rounds, 5))
    truth = (rng.random(n_rounds) < 0.5).astype(int)
    accuracy = np.array([0.55, 0.6, 0.8, 0.65, 0.7])
    half = n_rounds // 2
    correct = np.empty((n_rounds, 5), dtype=bool)
    correct[:half] = rng.random((half, 5)) < accuracy
    correct[half:] = rng.random((n_rounds - half, 5)) < accuracy[::-1]
    # Columns of X encode each expert's answer; expert j reads column j.
    X[:] = np.where(correct, truth[:, None], 1 - truth[:, None])
    return X, truth


def column_expert(j):
    def expert(X):
        return np.asarray(X)[:, j].astype(int)

    return expert


COLUMN_EXPERTS = [column_expert(j) for j in range(5)]


class _AntiMW(PrivateExpertsClassifier):
    """Broken on purpose: favours the experts with the fewest rewards."""

    def _round_law(self, rewards, cumulative, rate):
        return mw_round_proba(1 - rewards, rate, initial=-np.asarray(cumulative))


@pytest.mark.parametrize("model", [PrivateExpertsClassifier, _AntiMW], ids=["mw", "anti-mw"])
def test_regret_bound_of_the_notes_holds_on_average_over_seeds(model):
    n_rounds, n_experts, n_seeds = 1500, 5, 20
    rate = math.sqrt(math.log(n_experts) / n_rounds)
    epsilon = 2 * rate * n_rounds  # pure setting giving that rate
    margins = []
    for seed in range(n_seeds):
        X, y = _synthetic_rewards_stream(seed, n_rounds)
        clf = model(COLUMN_EXPERTS, epsilon=epsilon, classes=[0, 1], random_state=seed).fit(X, y)
        assert clf.learning_rate_ == pytest.approx(rate)
        rewards = clf._rewards(HypothesisList(COLUMN_EXPERTS, "experts"), X, y, np.array([0, 1]))
        collected = rewards[np.arange(n_rounds), clf.chosen_experts_].sum()
        bound = rewards.sum(axis=0).max() - rate * n_rounds - math.log(n_experts) / rate
        margins.append(collected - bound)
    # Hoeffding on the mean of n_seeds * n_rounds independent [0, 1] draws.
    tolerance = n_rounds * math.sqrt(math.log(1 / P_FALSE_ALARM) / (2 * n_seeds * n_rounds))
    holds = np.mean(margins) >= -tolerance
    assert holds == (model is PrivateExpertsClassifier)


# -- accounting, streams, copies ---------------------------------------------------------------
def test_run_is_charged_once_and_each_query_at_2a(stream):
    X, y = stream
    acc = PrivacyAccountant(epsilon=12.0)
    clf = MW(EXPERTS, epsilon=10.0, n_rounds=500, classes=[0, 1], accountant=acc, random_state=0)
    clf.fit(X, y)
    assert acc.epsilon_spent == pytest.approx(10.0) and acc.queries_answered == 1
    assert clf.privacy_guarantee_.epsilon == pytest.approx(2 * 10.0 / 1000)
    clf.predict(X[:50])
    assert acc.epsilon_spent == pytest.approx(11.0) and clf.queries_answered_ == 50
    state = _rng_state(clf)
    with pytest.raises(BudgetExhaustedError):
        clf.predict(X[:51])
    assert _rng_state(clf) == state and acc.queries_answered == 51
    clf.partial_fit(X[:100], y[:100])  # continuing the run costs nothing more
    assert acc.queries_answered == 51 and clf.chosen_experts_.shape == (500,)
    with pytest.raises(BudgetExhaustedError):
        clf.fit(X, y)  # a new run is a new release
    assert clf.chosen_experts_.shape == (500,)


def test_advanced_setting_charges_epsilon_and_delta(stream):
    X, y = stream
    acc = PrivacyAccountant(epsilon=5.0, delta=1e-3)
    clf = MW(EXPERTS, epsilon=1.0, delta=1e-6, classes=[0, 1], accountant=acc, random_state=0)
    clf.fit(X, y)
    assert acc.spent() == pytest.approx((1.0, 1e-6))
    assert clf.learning_rate_ == pytest.approx(mw_learning_rate(1.0, 400, 1e-6))
    release = clf.privacy_guarantee_.details["release"]
    assert "zCDP" in release.theorem and "Bun & Steinke (2016)" in release.theorem
    assert release.delta == 1e-6


@pytest.mark.parametrize("delta, composition", [(0.0, "zcdp"), (1e-6, "zcdp"), (1e-6, "advanced")])
def test_zcdp_accountant_is_charged_a_squared_over_two_per_round_and_per_query(
    stream, delta, composition
):
    """Rounds and queries are 2a-bounded-range: rho = a^2 / 2 each (Cesar & Rogers 2021).

    Before, the run was booked by basic composition (delta > 0) or at
    (epsilon^2 / 2) (delta = 0), and each query at (2a)^2 / 2 = 2 a^2.
    """
    X, y = stream
    budget_delta = 1e-3
    acc = PrivacyAccountant(epsilon=50.0, delta=budget_delta, composition="zcdp", ledger=":memory:")
    clf = MW(
        EXPERTS,
        epsilon=1.0,
        delta=delta,
        composition=composition,
        classes=[0, 1],
        accountant=acc,
        random_state=0,
    ).fit(X, y)
    a, n_rounds = clf.learning_rate_, clf.n_rounds_
    run_rho = n_rounds * a**2 / 2
    assert acc.epsilon_spent == pytest.approx(eps_of_rho(run_rho, budget_delta))
    clf.predict(X[:100])
    total = run_rho + 100 * a**2 / 2
    assert acc.epsilon_spent == pytest.approx(eps_of_rho(total, budget_delta))
    assert acc.history()["rho"].iloc[-1] == pytest.approx(a**2 / 2)  # one query row
    guarantee = clf.privacy_guarantee_
    assert guarantee.rho == pytest.approx(a**2 / 2)
    assert guarantee.details["release"].rho == pytest.approx(run_rho)
    assert "bounded-range" in guarantee.theorem and "spec" not in str(guarantee)


def test_predict_draws_fresh_experts_from_current_weights(stream):
    X, y = stream
    clf = MW([always_one, always_zero], epsilon=4.0, classes=[0, 1], random_state=0)
    clf.fit(X[:4], np.array([1, 1, 1, 0]))  # U = (3, 1), a = 0.5
    assert clf._selection_proba()[0] == pytest.approx(expit(1.0))
    n = 40_000
    answers = clf.predict(np.zeros((n, 2)))
    from scipy.stats import binomtest

    assert binomtest(int(answers.sum()), n, expit(1.0)).pvalue > P_FALSE_ALARM
    one_by_one = [clf.predict(np.zeros((1, 2)))[0] for _ in range(200)]
    assert 0 < sum(one_by_one) < 200


def test_copies_never_replay_noise(stream):
    X, y = stream
    clf = MW(EXPERTS, epsilon=4.0, n_rounds=400, classes=[0, 1], random_state=0)
    clf.fit(X[:200], y[:200])
    twin = pickle.loads(pickle.dumps(clf))
    queries = np.ones((300, 2))  # two experts say 1, one says 0
    assert not np.array_equal(clf.predict(queries), twin.predict(queries))
    # The copies share the run's 400 rounds (counted in the ledger): 100 each here.
    clf.partial_fit(X[200:300], y[200:300])
    twin.partial_fit(X[200:300], y[200:300])
    assert not np.array_equal(clf.chosen_experts_, twin.chosen_experts_)
    with pytest.raises(HorizonExhaustedError, match="n_rounds=400"):
        twin.partial_fit(X[300:301], y[300:301])


def test_frozen_experts_survive_clone_plain_ones_fail_clearly(stream):
    X, y = stream
    lr = LogisticRegression().fit(X[:50], y[:50])
    clf = MW([FrozenEstimator(lr), always_zero], epsilon=2.0, classes=[0, 1], random_state=0)
    assert clone(clf).fit(X, y).n_experts_ == 2
    with pytest.raises(ValueError, match=r"hypotheses\[0\].*FrozenEstimator"):
        clone(MW([lr, always_zero], classes=[0, 1])).fit(X, y)


# -- bad input ---------------------------------------------------------------------------------
class _LockedExpert:
    """An expert holding a lock: it cannot be pickled, so it cannot be copied per row."""

    def __init__(self):
        self.lock = threading.Lock()

    def __call__(self, X):
        return np.zeros(len(X), dtype=int)


MW_BAD_PARAMS = [
    ({"epsilon": 0}, InvalidParameterError, "'epsilon' parameter"),
    ({"epsilon": "1"}, InvalidParameterError, "'epsilon' parameter"),
    ({"delta": -0.1}, InvalidParameterError, "'delta' parameter"),
    ({"delta": 1.0}, InvalidParameterError, "'delta' parameter"),
    ({"delta": None}, InvalidParameterError, "'delta' parameter"),
    ({"delta": "x"}, InvalidParameterError, "'delta' parameter"),
    ({"n_rounds": 0}, InvalidParameterError, "'n_rounds' parameter"),
    ({"n_rounds": 2.5}, InvalidParameterError, "'n_rounds' parameter"),
    ({"n_rounds": 399}, InvalidParameterError, "n_rounds=399 rounds were announced"),
    ({"composition": "renyi"}, InvalidParameterError, "'composition' parameter"),
    ({"hypotheses": first_positive}, InvalidParameterError, "'hypotheses' parameter"),
    ({"hypotheses": []}, InvalidParameterError, "at least one"),
    ({"hypotheses": [first_positive, 3]}, InvalidParameterError, r"hypotheses\[1\]"),
    ({"hypotheses": [LogisticRegression()]}, InvalidParameterError, r"hypotheses\[0\].*not fitted"),
    # an expert that cannot be copied for each row is refused before any charge
    ({"hypotheses": [_LockedExpert()]}, InvalidParameterError, r"hypotheses\[0\].*cannot be used"),
    ({"hypotheses": None}, InvalidParameterError, "needs its public hypotheses"),
    # the deprecated name: its values are checked as before; beside hypotheses it is refused
    ({"experts": first_positive}, InvalidParameterError, "'experts' parameter"),
    ({"experts": [first_positive]}, InvalidParameterError, "Both 'hypotheses' and .*'experts'"),
    ({"hypotheses": None, "experts": [first_positive, 3]}, InvalidParameterError, r"experts\[1\]"),
    ({"accountant": 3}, InvalidParameterError, "'accountant' parameter"),
    ({"classes": [0]}, ValueError, "classes"),
    ({"classes": [0, 2]}, ValueError, "outside `classes`"),
]


@pytest.mark.parametrize("params, error, match", MW_BAD_PARAMS)
def test_mw_bad_parameters_leave_fitted_estimator_and_accountant_unchanged(
    stream, params, error, match
):
    X, y = stream
    acc = PrivacyAccountant(epsilon=100.0)
    clf = MW(EXPERTS, epsilon=1.0, classes=[0, 1], accountant=acc, random_state=0).fit(X, y)
    state = {k: v for k, v in vars(clf).items() if k.endswith("_") or k.startswith("_")}
    with pytest.raises(error, match=match):
        clf.set_params(**params).fit(X, y)
    after = {k: v for k, v in vars(clf).items() if k.endswith("_") or k.startswith("_")}
    assert after.keys() == state.keys() and all(after[k] is state[k] for k in state)
    assert acc.queries_answered == 1


def test_mw_more_rows_than_announced_and_partial_fit_without_n_rounds(stream):
    X, y = stream
    acc = PrivacyAccountant()
    clf = MW(EXPERTS, n_rounds=300, classes=[0, 1], accountant=acc)
    with pytest.raises(ValueError, match="exceed it by 100"):
        clf.fit(X, y)
    clf.partial_fit(X[:200], y[:200])
    with pytest.raises(ValueError, match="200 have run"):
        clf.partial_fit(X[200:], y[200:])
    assert clf.chosen_experts_.shape == (200,) and acc.queries_answered == 1
    with pytest.raises(ValueError, match="partial_fit needs .* n_rounds"):
        MW(EXPERTS, classes=[0, 1]).partial_fit(X, y)
    with pytest.raises(ValueError, match="classes passed to partial_fit differ"):
        clf.partial_fit(X[:5], y[:5], classes=[0, 1, 2])


@pytest.mark.parametrize(
    "queries, error, match",
    [
        (np.zeros((3, 4)), ValueError, "features"),
        (np.zeros((0, 2)), ValueError, "0 sample"),
        (np.full((2, 2), np.nan), ValueError, "NaN"),
    ],
    ids=["wrong-width", "empty", "nan"],
)
def test_mw_bad_queries_charge_nothing_and_draw_nothing(stream, queries, error, match):
    X, y = stream
    acc = PrivacyAccountant()
    clf = MW(EXPERTS, classes=[0, 1], accountant=acc, random_state=0).fit(X, y)
    state = _rng_state(clf)
    with pytest.raises(error, match=match):
        clf.predict(queries)
    assert acc.queries_answered == 1 and clf.queries_answered_ == 0 and _rng_state(clf) == state


def test_an_expert_that_raises_on_a_query_raises_before_the_charge(stream):
    """The experts are public: whether one raises depends on the query alone."""
    X, y = stream

    def fussy(X):
        if np.any(np.asarray(X)[:, 0] > 100):
            raise ValueError("fussy expert")
        return np.zeros(len(X), dtype=int)

    acc = PrivacyAccountant()
    clf = MW([fussy, always_one], classes=[0, 1], accountant=acc, random_state=0).fit(X, y)
    state = _rng_state(clf)
    with pytest.raises(ValueError, match="fussy expert"):
        clf.predict(np.array([[0.0, 0.0], [101.0, 0.0]]))
    assert acc.queries_answered == 1 and clf.queries_answered_ == 0 and _rng_state(clf) == state


def test_mw_sample_weight_and_predict_before_fit(stream):
    X, y = stream
    with pytest.raises(TypeError, match="sample_weight"):
        MW(EXPERTS, classes=[0, 1]).fit(X, y, sample_weight=np.ones(400))
    with pytest.raises(NotFittedError):
        MW(EXPERTS).predict(X)


# -- renamed parameter: ``experts`` is now ``hypotheses`` (deprecated in 0.4) ----------------------
def test_old_experts_name_warns_and_gives_the_same_run(stream):
    X, y = stream
    common = dict(epsilon=5.0, classes=[0, 1], random_state=2)
    with pytest.warns(FutureWarning, match="`experts` was renamed `hypotheses` in 0.4"):
        old = MW(experts=EXPERTS, **common).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        new = MW(hypotheses=EXPERTS, **common).fit(X, y)
        positional = MW(EXPERTS, **common).fit(X, y)
    assert np.array_equal(old.chosen_experts_, new.chosen_experts_)
    assert np.array_equal(new.chosen_experts_, positional.chosen_experts_)
    assert old.learning_rate_ == new.learning_rate_
    assert np.array_equal(old.predict(X[:50]), new.predict(X[:50]))
    assert old.get_params()["experts"] is EXPERTS and old.get_params()["hypotheses"] is None
    assert clone(old).get_params()["experts"] == EXPERTS


def test_old_experts_name_warns_once_per_run_in_partial_fit(stream):
    X, y = stream
    common = dict(epsilon=5.0, n_rounds=len(y), classes=[0, 1], random_state=2)
    old = MW(experts=EXPERTS, **common)
    with pytest.warns(FutureWarning, match="`experts` was renamed `hypotheses`") as caught:
        old.partial_fit(X[:100], y[:100])
        old.partial_fit(X[100:], y[100:])
    assert sum(w.category is FutureWarning for w in caught) == 1
    new = (
        MW(hypotheses=EXPERTS, **common).partial_fit(X[:100], y[:100]).partial_fit(X[100:], y[100:])
    )
    assert np.array_equal(old.chosen_experts_, new.chosen_experts_)
