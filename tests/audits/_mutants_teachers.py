"""Mutants of the teacher-based and sequential estimators: their audits catch twice epsilon.

Each case patches the library, for that test only, where the estimator module uses a
calibration (estimator modules import the mechanisms by name, so the name is patched in
the estimator's module): the REAL estimator then draws its noise for twice its epsilon
(same delta) while it still charges and reports epsilon. The case checks that

1. the patch took effect: the patched estimator's exact law (its non-private diagnostic)
   equals the law of the unpatched mechanism at ``2 epsilon``, for every query method
   the audit uses;
2. ``privacy_guarantee_`` and the accountant's charge are still those of ``epsilon``;
3. the estimator's own black-box audit rejects it. The audit's size is chosen from its
   exact power against the doubled estimator's exact law on the audited pair
   (``tests/_audit_power.py``); the case asserts that power is at least 0.99.


Not covered here: the Gaussian votes and the BetweenThresholds aggregator of
``PrivateEverlastingClassifier`` (calibrated for ``(epsilon, delta)`` with a small
``delta``, their violations at twice epsilon live in tails no practical game count
reaches; ``tests/everlasting/test_everlasting_privacy.py`` asserts the smallest noise reduction its
training-row audit does catch). ``GenericBBLClassifier``'s mutant (its LabelBoost step) is
in ``_mutants_bbl.py``. Each ``_*_mutant`` is one row (or, with its
keyword, several) of the mutant table of ``test_mutants.py``.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable

import numpy as np
import pytest
from _audit_power import law_power
from sklearn.base import clone
from sklearn.neighbors import KNeighborsClassifier
from test_everlasting_privacy import (
    AUDIT_ALPHA,
    NEAR_WORST_RELABEL_EPSILON,
    NEAR_WORST_RELABEL_LABELS,
    NEAR_WORST_RELABEL_POINTS,
    RELABEL_DRAWS,
    TWO_HYPOTHESES,
    _SignTeacher,
    audit_game,
)
from test_search import NEAR_WORST, NEAR_WORST_SEARCHES, ZeroIfAnyZero

from skprivpred import (
    ExpProjectedWalkClassifier,
    PrivacyAccountant,
    PrivateEverlastingClassifier,
    PrivateGridSearchCV,
    SubsampleAggregateClassifier,
    SubsampleAverageClassifier,
    SubsampleAverageRegressor,
)
from skprivpred.audit import audit_epsilon, flip_teacher_neighbour
from skprivpred.ensemble import _aggregate as aggregate
from skprivpred.ensemble import _averaging as averaging
from skprivpred.everlasting import _relabel as everlasting
from skprivpred.everlasting import relabel_epsilon, relabel_law
from skprivpred.finite import _walk as walk
from skprivpred.mechanisms import (
    exponential_mechanism_proba,
    grid_laplace_release,
    laplace_clip_bernoulli_proba,
    noisy_max_proba,
    sample_categorical,
)
from skprivpred.model_selection import _search

#: ``audit_epsilon``'s default confidence, which every audit below uses.
CONFIDENCE = 0.95
#: Required probability that the audit rejects the doubled estimator.
TARGET_POWER = 0.99


# -- the patch --------------------------------------------------------------------------------
def _doubled(function: Callable) -> Callable:
    """``function`` with its ``epsilon`` argument doubled (everything else unchanged)."""
    signature = inspect.signature(function)

    @functools.wraps(function)
    def doubled(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        bound.arguments["epsilon"] = 2.0 * bound.arguments["epsilon"]
        return function(*bound.args, **bound.kwargs)

    return doubled


def _double_epsilon(monkeypatch, module, *names: str) -> None:
    """Calibrate ``module``'s own references to the mechanisms ``names`` for twice epsilon."""
    for name in names:
        monkeypatch.setattr(module, name, _doubled(getattr(module, name)))


# -- shared checks ----------------------------------------------------------------------------
def _assert_reports_and_charges_epsilon(
    estimator, X, y, queries, method, epsilon, guarantee_epsilon=None
):
    """The patched estimator still states its epsilon and charges ``epsilon`` per row.

    ``guarantee_epsilon``: the epsilon of ``privacy_guarantee_`` when it is not the
    per-row one (a total budget); ``None``: ``epsilon``.
    """
    accountant = PrivacyAccountant(epsilon=1000.0, ledger=":memory:")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # few rows per teacher, by design
        fitted = clone(estimator).set_params(accountant=accountant, random_state=0).fit(X, y)
    assert fitted.privacy_guarantee_.epsilon == (
        epsilon if guarantee_epsilon is None else guarantee_epsilon
    )
    getattr(fitted, method)(queries)
    assert accountant.epsilon_spent == pytest.approx(queries.shape[0] * epsilon, rel=1e-12)


def _audit_alpha(n_outcomes: int, n_queries: int = 1) -> float:
    """Each Clopper-Pearson interval's level in ``audit_epsilon`` (Bonferroni)."""
    return (1.0 - CONFIDENCE) / (2 * n_queries * n_outcomes)


def _assert_audit_rejects(estimator, pair, query, laws, claimed, n_trials, **audit_kwargs):
    """The audit's exact power against ``laws`` is >= 0.99, and the audit rejects the mutant.

    ``laws``: the doubled estimator's exact law of the audited outcome (one dict per data
    set, outcome -> probability; binned outcomes for a real-valued release).
    """
    law, law_neighbour = laws
    power = law_power(n_trials, law, law_neighbour, claimed, _audit_alpha(len(law)))
    assert power >= TARGET_POWER, power
    X, y, X2, y2 = pair
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # few rows per teacher, by design
        report = audit_epsilon(estimator, X, y, X2, y2, query, n_trials=n_trials, **audit_kwargs)
    assert report.claimed_epsilon == claimed
    assert not report.passed, str(report)


def _as_law(probabilities) -> dict:
    return {k: float(p) for k, p in enumerate(np.asarray(probabilities).ravel()) if p > 0}


def _binned_grid_laplace_law(value, sensitivity, epsilon, edges, transform=None):
    """Exact law of the bin of ``transform(grid_laplace_release(value, ...))``.

    The release is ``step * (index + Z)``, ``step = sensitivity / 1000``, ``index``
    the nearest grid index of ``value`` and ``Z`` discrete Laplace of scale
    ``1001 / epsilon`` (``P(Z = z)`` proportional to ``exp(-|z| / scale)``), summed
    exactly over ``|z| <= 60 scale`` (the mass beyond is below ``e^-60``); the bins are
    ``audit_epsilon``'s (values outside the edges count in the outer bins).
    """
    steps = averaging.GRID_STEPS
    step = sensitivity / steps
    scale = (steps + 1) / epsilon
    reach = int(60 * scale)
    z = np.arange(-reach, reach + 1)
    p = np.exp(-1.0 / scale)
    pmf = (1 - p) / (1 + p) * p ** np.abs(z)
    released = step * (np.rint(value / step) + z)
    if transform is not None:
        released = transform(released)
    bins = np.clip(np.searchsorted(edges, released, side="right") - 1, 0, len(edges) - 2)
    return np.bincount(bins, weights=pmf, minlength=len(edges) - 1)


# -- SubsampleAggregateClassifier -------------------------------------------------------------
def _aggregate_mutant(monkeypatch, many_queries=False):
    """Weight ``2 epsilon / 2`` per vote. Per-row mode, or many-query mode, whose per-row
    ``epsilon_per_query_`` (here 1: a total of 4,000 over a horizon of 4,000 rows, basic
    composition) calibrates the same law. Audit: 3 teachers agree at the query, one vote
    flipped."""
    _double_epsilon(monkeypatch, aggregate, "exponential_mechanism_proba")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(90, 2))
    y = (X[:, 0] > 0).astype(int)
    query = np.array([[2.5, 0.0]])
    budget = (
        {"n_queries": 4_000, "total_epsilon": 4_000.0, "total_delta": 0.0}
        if many_queries
        else {"epsilon": 1.0}
    )
    estimator = SubsampleAggregateClassifier(
        KNeighborsClassifier(n_neighbors=1), n_teachers=3, classes=[0, 1], **budget
    )
    X2, y2, _ = flip_teacher_neighbour(estimator, X, y, query, random_state=1)
    fitted = [clone(estimator).set_params(random_state=1).fit(*d) for d in ((X, y), (X2, y2))]
    assert [f.epsilon_per_query_ for f in fitted] == [1.0, 1.0]
    laws = [f._output_distribution(query)[0] for f in fitted]
    for f, law in zip(fitted, laws):
        expected = exponential_mechanism_proba(f._vote_counts(query), 2.0)[0]
        np.testing.assert_allclose(law, expected, rtol=1e-12)
    _assert_reports_and_charges_epsilon(
        estimator,
        X,
        y,
        np.zeros((3, 2)),
        "predict",
        1.0,
        guarantee_epsilon=4_000.0 if many_queries else 1.0,
    )
    _assert_audit_rejects(
        estimator,
        (X, y, X2, y2),
        query,
        [_as_law(law) for law in laws],
        claimed=1.0,
        n_trials=4_000,
        random_state=1,
    )


# -- SubsampleAverageClassifier ----------------------------------------------------------------
_AVERAGE_RELEASES = ("laplace_scale", "grid_laplace_release", "gaussian_sigma")


def _averaging_pair(r=5):
    """One teacher per row; replacing row 0's label moves the average by exactly 1/r."""
    X = np.arange(r, dtype=float).reshape(-1, 1)
    y = np.zeros(r, dtype=int)
    y2 = y.copy()
    y2[0] = 1
    return X, y, X, y2


def _average_classifier_mutant(monkeypatch, method):
    """``predict`` draws from the closed form at the scale set in ``fit``; ``predict_proba``
    releases grid-Laplace noise calibrated per call: both are doubled."""
    _double_epsilon(monkeypatch, averaging, *_AVERAGE_RELEASES, "grid_gaussian_release")
    pair = _averaging_pair()
    X, y, X2, y2 = pair
    estimator = SubsampleAverageClassifier(n_teachers=5, classes=[0, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        fitted = [clone(estimator).set_params(random_state=0).fit(*d) for d in ((X, y), (X2, y2))]
    query = X[:1]
    averages = [float(f._raw_score(query)[0, 1]) for f in fitted]
    assert averages == [0.0, 0.2]
    assert fitted[0].noise_scale_ == pytest.approx(0.2 / 2.0)
    if method == "predict":
        laws = [f._output_distribution(query)[0] for f in fitted]
        for v, law in zip(averages, laws):
            expected = laplace_clip_bernoulli_proba(np.array([1 - v, v]), 0.2 / 2.0)
            np.testing.assert_allclose(law, expected, rtol=1e-12)
        laws = [_as_law(law) for law in laws]
        bins, n_trials = None, 10_000
    else:
        # The release itself: the same stream gives the unpatched release at 2 epsilon.
        model = fitted[1]
        model._query_stream.rng = np.random.default_rng(7)
        released = model.predict_proba(np.repeat(query, 50, axis=0))[:, 1]
        reference = np.clip(
            grid_laplace_release(np.full(50, 0.2), 0.2, 2.0, np.random.default_rng(7)), 0, 1
        )
        np.testing.assert_array_equal(released, reference)
        # The audited outcome is column 0, 1 - clip(release, 0, 1), in audit_epsilon's bins.
        bins = np.linspace(-0.05, 0.65, 15)
        laws = [
            _as_law(_binned_grid_laplace_law(v, 0.2, 2.0, bins, lambda r: 1 - np.clip(r, 0.0, 1.0)))
            for v in averages
        ]
        n_trials = 12_000
    _assert_reports_and_charges_epsilon(estimator, X, y, X[:3], method, 1.0)
    _assert_audit_rejects(
        estimator, pair, query, laws, 1.0, n_trials, method=method, bins=bins, random_state=0
    )


# -- SubsampleAverageRegressor ----------------------------------------------------------------
def _average_regressor_mutant(monkeypatch):
    """Grid-Laplace noise calibrated per call for ``2 epsilon``; audit on binned answers."""
    _double_epsilon(monkeypatch, averaging, *_AVERAGE_RELEASES, "grid_gaussian_release")
    X = np.arange(4, dtype=float).reshape(-1, 1)
    y = np.zeros(4)
    y2 = y.copy()
    y2[0] = 1.0
    estimator = SubsampleAverageRegressor(n_teachers=4, y_bounds=(0.0, 1.0), clip_output=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        model = clone(estimator).set_params(random_state=0).fit(X, y2)
    assert model.noise_scale_ == pytest.approx(0.25 / 2.0)
    model._query_stream.rng = np.random.default_rng(7)
    released = model.predict(np.repeat(X[:1], 50, axis=0))
    reference = grid_laplace_release(np.full(50, 0.25), 0.25, 2.0, np.random.default_rng(7))
    np.testing.assert_array_equal(released, reference)
    bins = np.linspace(-1.0, 1.25, 19)
    laws = [_as_law(_binned_grid_laplace_law(v, 0.25, 2.0, bins)) for v in (0.0, 0.25)]
    _assert_reports_and_charges_epsilon(estimator, X, y, X[:3], "predict", 1.0)
    _assert_audit_rejects(
        estimator, (X, y, X, y2), X[:1], laws, 1.0, n_trials=3_000, bins=bins, random_state=0
    )


# -- ExpProjectedWalkClassifier ---------------------------------------------------------------
def _walk_mutant(monkeypatch):
    """Weight ``2 epsilon / 2`` on the walk value (the clamp bound, a public
    hyper-parameter, is left as fitted). Audit: a run of label 0, the first row flipped."""
    _double_epsilon(monkeypatch, walk, "exponential_mechanism_proba")
    X = np.arange(1.0, 5.0).reshape(-1, 1)
    y = np.zeros(4, dtype=int)
    y2 = y.copy()
    y2[0] = 1
    query = np.array([[4.0]])
    estimator = ExpProjectedWalkClassifier(epsilon=1.0, classes=[0, 1])
    fitted = [clone(estimator).set_params(random_state=0).fit(X, t) for t in (y, y2)]
    laws = [f._output_distribution(query)[0] for f in fitted]
    for f, law in zip(fitted, laws):
        walk_value = float(f._walk_value(query)[0])
        expected = exponential_mechanism_proba([0.0, walk_value], 2.0)
        np.testing.assert_allclose(law, expected, rtol=1e-12)
    _assert_reports_and_charges_epsilon(estimator, X, y, X[:3], "predict", 1.0)
    _assert_audit_rejects(
        estimator,
        (X, y, X, y2),
        query,
        [_as_law(law) for law in laws],
        1.0,
        n_trials=3_000,
        random_state=0,
    )


# -- PrivateGridSearchCV ------------------------------------------------------------------------
def _grid_search_selection_mutant(monkeypatch):
    """The selection (``best_index_``) drawn for ``2 selection_epsilon``: both rules
    (exponential mechanism and report-noisy-max) are doubled; the audit sees the default,
    the exponential mechanism, on the near-worst-case pair of
    ``tests/model_selection/test_search``."""
    doubled_laws = NEAR_WORST.exact_laws(epsilon=2 * NEAR_WORST.epsilon)  # before the patch
    _double_epsilon(monkeypatch, _search, "exponential_mechanism_proba", "noisy_max_proba")
    laws = NEAR_WORST.exact_laws()
    for law, expected in zip(laws, doubled_laws):
        np.testing.assert_allclose(list(law.values()), list(expected.values()), rtol=1e-12)
    scores = np.array([0.2, 0.7, 0.5])
    np.testing.assert_allclose(
        NEAR_WORST.search(selection="noisy_max")._selection_law(scores, 1.0, 0.5),
        noisy_max_proba(scores, 2.0, 0.5),
        rtol=1e-12,
    )
    accountant = PrivacyAccountant(epsilon=100.0, delta=1e-6, composition="zcdp")
    X, y, _, _ = NEAR_WORST.data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        search = NEAR_WORST.search(accountant=accountant, random_state=0).fit(X, y)
    epsilon = NEAR_WORST.epsilon
    guarantee = search.privacy_guarantee_
    assert (guarantee.epsilon, guarantee.rho) == (epsilon, epsilon**2 / 8)
    assert accountant.history()["rho"].tolist() == [epsilon**2 / 8]
    assert NEAR_WORST.power(NEAR_WORST_SEARCHES, laws) >= TARGET_POWER
    assert NEAR_WORST.lower_bound(PrivateGridSearchCV, NEAR_WORST_SEARCHES) > epsilon


def _grid_search_answers_mutant(monkeypatch):
    """The answers of ``best_estimator_`` (a ``SubsampleAggregateClassifier``) drawn at
    ``2 epsilon``; the selection is left alone (one candidate). Audit: all-ones labels and
    three teachers, one of which a 0 label turns, whatever the partition."""
    _double_epsilon(monkeypatch, aggregate, "exponential_mechanism_proba")
    X = np.arange(60, dtype=float).reshape(-1, 1)
    y = np.ones(60, dtype=int)
    y2 = y.copy()
    y2[0] = 0
    template = SubsampleAggregateClassifier(
        ZeroIfAnyZero(), epsilon=1.0, n_teachers=3, classes=[0, 1]
    )
    search = PrivateGridSearchCV(template, {"n_teachers": [3]}, selection_epsilon=0.5)
    query = X[:1]
    laws = []
    for labels in (y, y2):
        fitted = clone(search).set_params(random_state=0).fit(X, labels).best_estimator_
        law = fitted._output_distribution(query)[0]
        np.testing.assert_allclose(
            law, exponential_mechanism_proba(fitted._vote_counts(query), 2.0)[0], rtol=1e-12
        )
        laws.append(_as_law(law))
    accountant = PrivacyAccountant(epsilon=100.0, ledger=":memory:")
    charged = clone(search).set_params(accountant=accountant, random_state=0).fit(X, y)
    assert charged.best_estimator_.privacy_guarantee_.epsilon == 1.0
    charged.predict(X[:3])
    assert accountant.epsilon_spent == pytest.approx(0.5 + 3 * 1.0, rel=1e-12)
    _assert_audit_rejects(
        search, (X, y, X, y2), query, laws, 1.0, 4_000, claimed_epsilon=1.0, random_state=0
    )


# -- PrivateEverlastingClassifier ---------------------------------------------------------------
def _everlasting_relabelling_mutant(monkeypatch):
    """The relabelling draw (the exponential mechanism over the class, ``epsilon_r``) made
    at ``2 epsilon_r``; the Gaussian votes are left alone. Audit: the relabelling audit
    of ``tests/everlasting/test_everlasting_privacy`` (``audit_game``, one event, 2,000
    draws per pool) on its near-worst-case pools (true loss 0.70 of ``epsilon_r``, at
    ``epsilon = 8``), run through the real estimator's relabelling step."""
    epsilon, delta = 8.0, 1e-6
    epsilon_r = relabel_epsilon(epsilon, delta)
    assert epsilon_r == NEAR_WORST_RELABEL_EPSILON
    points = NEAR_WORST_RELABEL_POINTS
    pools = NEAR_WORST_RELABEL_LABELS
    doubled = [relabel_law(TWO_HYPOTHESES, points, y, 2 * epsilon_r)[1] for y in pools]
    _double_epsilon(monkeypatch, everlasting, "_relabel_proba")
    laws = [relabel_law(TWO_HYPOTHESES, points, y, epsilon_r)[1] for y in pools]
    np.testing.assert_allclose(laws, doubled, rtol=1e-12)
    X = np.array([[0.0], [1.0], [2.0]] * 10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        estimator = PrivateEverlastingClassifier(
            _SignTeacher(),
            epsilon=epsilon,
            delta=delta,
            hypotheses=TWO_HYPOTHESES,
            classes=(0, 1),
            n_teachers=3,
            phase_length=10,
            random_state=0,
        ).fit(X, (X[:, 0] == 0).astype(int))
    guarantee = estimator.privacy_guarantee_
    assert (guarantee.epsilon, guarantee.delta) == (epsilon, delta)
    assert estimator.relabel_epsilon_ == guarantee.details["relabel_epsilon"] == epsilon_r

    def relabel(pool, seed):
        """The real estimator's relabelling step, on the query stream seeded for the game."""
        estimator._query_stream.rng = np.random.default_rng(seed)
        return estimator._relabel(points, pool, estimator._phase_params(2).relabel_epsilon)

    for seed in range(20):  # the draws are those of the doubled law, seed for seed
        choice = int(sample_categorical(doubled[1][None, :], np.random.default_rng(seed))[0])
        expected = TWO_HYPOTHESES.prior_candidates(points, pools[1])
        np.testing.assert_array_equal(relabel(pools[1], seed), expected.labels_of(choice)[0])
    n_draws = RELABEL_DRAWS
    alpha = AUDIT_ALPHA / 2  # one event and its complement, Bonferroni in audit_game
    assert law_power(n_draws, *map(_as_law, laws), epsilon_r, alpha) >= TARGET_POWER
    audit = audit_game(
        lambda b, seed: tuple(relabel(pools[b], seed)),
        [lambda view: view[0] == 1],
        ["h0 chosen"],
        n_games=n_draws,
        delta=0.0,
    )
    assert audit.refutes(epsilon_r), audit
