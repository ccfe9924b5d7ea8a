"""PrivateHalfspacePPMClassifier (Bassily, Moran & Nandi 2020).

Exact law, privacy ratios, audit, accuracy, API, routing.

The released object is the model, so privacy is tested on the fit: (a) the exact
selection law of neighbouring data sets (one private row replaced; public rows
and status bits fixed) differs by at most epsilon in log space, and (b) a
black-box audit over repeated fits with distinct seeds finds no violation, while
the same audit flags a variant with weight ``exp(-epsilon * mistakes)``.
"""

from __future__ import annotations

import math
import pickle
import warnings

import numpy as np
import pytest
import sklearn
from _audit_power import detection_power, law_power
from scipy import sparse
from scipy.stats import chisquare
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import cross_validate
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer
from sklearn.utils.estimator_checks import parametrize_with_checks

from skprivpred import (
    BudgetExhaustedError,
    InvalidParameterError,
    PrivacyAccountant,
    PrivacyGuarantee,
    PrivacyWarning,
    PrivateHalfspacePPMClassifier,
)
from skprivpred._base import spawn_streams
from skprivpred.audit import clopper_pearson
from skprivpred.finite import (
    CandidateFamily,
    HypothesisClass,
    build_candidates,
    em_excess_bound,
    mistake_counts,
)
from skprivpred.mechanisms import fewest_mistakes_log_proba, sample_fewest_mistakes

PPM = PrivateHalfspacePPMClassifier
# Most tests use the paper's labels 0/1 with classes=None; the warning has its own test.
pytestmark = pytest.mark.filterwarnings("ignore:.*classes=None:skprivpred.PrivacyWarning")
P_FALSE_ALARM = 1e-3

ALLOWED_PUBLIC_ATTRIBUTES = {
    "classes_",
    "n_features_in_",
    "feature_names_in_",
    "candidates_used_",
    "n_candidates_",
    "affine_origin_",
    "affine_basis_",
    "halfspaces_",
    "region_is_empty_",
    "public_class_",
    "privacy_guarantee_",
}


class _DoubledPPM(PrivateHalfspacePPMClassifier):
    """Broken on purpose: weight exp(-epsilon * mistakes) (epsilon per mistake), so 2 epsilon-DP."""

    def _draw(self, mistakes, epsilon, rng):
        return sample_fewest_mistakes(mistakes, 2 * epsilon, rng)

    def _log_selection_law(self, mistakes, epsilon):
        return fewest_mistakes_log_proba(mistakes, 2 * epsilon)


class _PoolFromAllRowsPPM(PrivateHalfspacePPMClassifier):
    """Broken on purpose: the candidate pool is drawn from all rows, private ones included."""

    def _family(self, X, status, public_rng):
        return super()._family(X, np.ones_like(status), public_rng)


# -- data -----------------------------------------------------------------------------------------
def mixture(n, d, seed, margin=0.1):
    """Label-determined mixture in the uniform cube: y = 1[w.x > 0], public iff y = 0."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(d)
    w /= np.linalg.norm(w)
    X = np.empty((0, d))
    while X.shape[0] < n:
        cand = rng.uniform(-1, 1, size=(4 * n, d))
        X = np.vstack([X, cand[np.abs(cand @ w) > margin / 2]])
    X = X[:n]
    y = (X @ w > 0).astype(int)
    return X, y, y == 0


def small_mixture(n_pub, n_priv, d, seed):
    """Public rows (label 0) and private rows (label 1, and some label 0) in general position."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_pub + n_priv, d))
    is_public = np.arange(n_pub + n_priv) < n_pub
    y = np.where(is_public, 0, 1)
    y[n_pub] = 0  # a private row with the public label: allowed, never checked
    return X, y, is_public


def neighbours(X, y, is_public, rng, n_pairs):
    """Replace one private row by far-away points, public points, random points; flip labels."""
    private = np.flatnonzero(~is_public)
    public = np.flatnonzero(is_public)
    d = X.shape[1]
    for t in range(n_pairs):
        i = private[t % private.size]
        kind = t % 3
        if kind == 0:
            x_new = rng.normal(size=d) * 100.0
        elif kind == 1:
            x_new = X[public[t % public.size]].copy()
        else:
            x_new = rng.normal(size=d)
        X2, y2 = X.copy(), y.copy()
        X2[i] = x_new
        y2[i] = rng.integers(2)
        yield X2, y2


def brute_force_mistakes(family, X, y, public_label=0):
    """Mistakes of every hypothesis, each evaluated on its own from its member halfspaces."""
    Z, dist = family.to_affine(X)
    on_aff = dist <= family.slack
    out = []
    for index in range(family.size):
        members = family.members(index)
        if members is None:
            inside = np.zeros(X.shape[0], dtype=bool)
        else:
            inside = on_aff.copy()
            for h in members:
                inside &= Z @ family.normals[h] >= family.offsets[h] - family.slack
        pred = np.where(inside, public_label, 1 - public_label)
        out.append(int(np.sum(pred != y)))
    return np.array(out)


# -- exact law -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "d, strategy, n_pub, n_priv",
    [
        (1, "exact", 7, 6),
        (2, "exact", 6, 6),
        (2, "hull", 12, 10),
        (3, "hull", 12, 6),
        (2, "sample", 10, 10),
        (4, "sample", 12, 12),
    ],
)
def test_mistake_counts_equal_brute_force(d, strategy, n_pub, n_priv):
    X, y, is_public = small_mixture(n_pub, n_priv, d, seed=d)
    family = build_candidates(X[is_public], strategy, pool_size=50, rng=np.random.default_rng(0))
    assert family.strategy == strategy
    for public_label in (0, 1):
        np.testing.assert_array_equal(
            mistake_counts(family, X, y, public_label),
            brute_force_mistakes(family, X, y, public_label),
        )


def test_released_hypothesis_predicts_as_its_members():
    X, y, is_public = small_mixture(6, 6, 2, seed=3)
    clf = PPM(epsilon=1.0, candidate_strategy="exact", random_state=0)
    log_p, family = clf._selection_log_proba(X, y, is_public)
    brute = brute_force_mistakes(family, X, y)
    for seed in range(30):
        clf.set_params(random_state=seed).fit(X, y, is_public=is_public)
        assert int(np.sum(clf.predict(X) != y)) in set(brute.tolist())
    np.testing.assert_allclose(np.exp(log_p).sum(), 1.0)
    np.testing.assert_allclose(log_p, fewest_mistakes_log_proba(brute, 1.0))


def test_class_size_of_the_exact_family_in_one_dimension():
    # d = 1: each public point gives "x >= p" and "x <= p"; |G| = 2 n_pub + 2.
    X = np.arange(10, dtype=float)[:, None]
    is_public = np.arange(10) < 5
    clf = PPM(random_state=0).fit(X, np.where(is_public, 0, 1), is_public=is_public)
    assert clf.candidates_used_ == "exact"
    assert clf.n_candidates_ == 2 * 5 + 2


# -- privacy: exact ratio between neighbours (Bassily, Moran & Nandi 2020, Lemma 4.1) -------------
def _max_log_ratio(estimator, X, y, is_public, n_pairs, seed):
    rng = np.random.default_rng(seed)
    log_p, family = estimator._selection_log_proba(X, y, is_public)
    worst = 0.0
    for X2, y2 in neighbours(X, y, is_public, rng, n_pairs):
        log_q, family2 = estimator._selection_log_proba(X2, y2, is_public)
        np.testing.assert_array_equal(family.normals, family2.normals)
        np.testing.assert_array_equal(family.offsets, family2.offsets)
        worst = max(worst, float(np.max(np.abs(log_p - log_q))))
    return worst


@pytest.mark.parametrize("epsilon", [0.1, 0.7, 2.0])
@pytest.mark.parametrize(
    "d, strategy, n_pub, n_priv",
    [
        (1, "exact", 12, 12),
        (2, "exact", 8, 14),
        (2, "hull", 14, 14),
        (2, "sample", 14, 14),
        (4, "sample", 14, 14),
    ],
)
def test_log_ratio_between_neighbours_at_most_epsilon(epsilon, d, strategy, n_pub, n_priv):
    X, y, is_public = small_mixture(n_pub, n_priv, d, seed=11)
    clf = PPM(epsilon=epsilon, candidate_strategy=strategy, pool_size=200, random_state=5)
    worst = _max_log_ratio(clf, X, y, is_public, n_pairs=30, seed=1)
    assert worst <= epsilon + 1e-9
    assert worst >= 0.5 * epsilon  # near-tight: the test data exercise the bound
    broken = _max_log_ratio(
        _DoubledPPM(epsilon=epsilon, candidate_strategy=strategy, pool_size=200, random_state=5),
        X,
        y,
        is_public,
        n_pairs=30,
        seed=1,
    )
    assert broken > epsilon + 1e-6


def test_neighbours_get_identical_public_attributes():
    X, y, is_public = small_mixture(12, 12, 2, seed=4)
    rng = np.random.default_rng(0)
    for strategy in ("exact", "hull", "sample"):
        ref = PPM(candidate_strategy=strategy, pool_size=100, max_candidates=10**7, random_state=3)
        ref.fit(X, y, is_public=is_public)
        for X2, y2 in neighbours(X, y, is_public, rng, 6):
            other = clone(ref).fit(X2, y2, is_public=is_public)
            assert other.candidates_used_ == ref.candidates_used_ == strategy
            assert other.n_candidates_ == ref.n_candidates_
            np.testing.assert_array_equal(other.affine_origin_, ref.affine_origin_)
            np.testing.assert_array_equal(other.affine_basis_, ref.affine_basis_)
        public = {k for k in vars(ref) if k.endswith("_") and not k.startswith("_")}
        assert public <= ALLOWED_PUBLIC_ATTRIBUTES


# -- privacy: black-box audit over refits (black box) --------------------------------------
def _released(clf):
    return (bool(clf.region_is_empty_), tuple(np.round(clf.halfspaces_, 9).ravel().tolist()))


def _refit_counts(make, data, n_fits, first_seed):
    X, y, is_public = data
    runs = [
        _released(make(s).fit(X, y, is_public=is_public))
        for s in range(first_seed, first_seed + n_fits)
    ]
    return runs


def _audit_lower_bound(runs1, runs2, n_fits):
    outcomes = sorted(set(runs1) | set(runs2))
    c1 = np.array([runs1.count(o) for o in outcomes])
    c2 = np.array([runs2.count(o) for o in outcomes])
    alpha = P_FALSE_ALARM / (2 * len(outcomes))
    (lo1, hi1), (lo2, hi2) = (
        clopper_pearson(c, n_fits, confidence_level=1 - alpha) for c in (c1, c2)
    )
    with np.errstate(divide="ignore"):
        bound = np.maximum(np.log(lo1) - np.log(hi2), np.log(lo2) - np.log(hi1))
    return float(bound.max()), outcomes, c1


def _audit_pair():
    """d = 1, 5 public and 5 private rows (|G| = 12); one private row replaced.

    Chosen (by a search over random pairs with the exact law) so that the broken
    variant's log-ratio exceeds epsilon on outcomes with enough mass to be seen.
    """
    x = np.array([0.0, 1.0, 2.0, 3.0, 4.0, -0.1, -1.3, -1.7, -1.5, 1.1])
    is_public = np.arange(10) < 5
    y = np.where(is_public, 0, 1)
    X = x[:, None]
    X2, y2 = X.copy(), y.copy()
    X2[9], y2[9] = 1.3, 0  # features and label of one private row replaced
    return (X, y, is_public), (X2, y2, is_public)


def _exact_released_law(cls, data, epsilon):
    """The exact law of ``_released(fit)`` for the "exact" class (NOT PRIVATE: a diagnostic)."""
    X, y, is_public = data
    clf = cls(epsilon=epsilon, candidate_strategy="exact", random_state=0)
    log_p, family = clf._selection_log_proba(X, y, is_public)
    law = {}
    for index, lp in enumerate(log_p):
        clf._set_released(family, index, np.array([0, 1]), 0)
        law[_released(clf)] = law.get(_released(clf), 0.0) + math.exp(lp)
    return law


def test_refit_audit_passes_and_flags_epsilon_per_mistake():
    """Black-box refit audit: the estimator passes, the 2 epsilon variant is flagged.

    Sample size from the bound. ``_DoubledPPM`` is the variant that spends twice its
    epsilon (weight ``exp(-epsilon * mistakes)``). From the exact laws of both estimators
    on D and D' (12 released outcomes, so each Clopper–Pearson interval is at level
    ``P_FALSE_ALARM / 24``), the probability that ``n_fits`` refits flag the doubled
    variant is at least 0.9917 for ``n_fits = 2500`` (best single outcome: 0.147 on D
    against 0.0089 on D', log-ratio 2.80 > 1.5; computed exactly by
    ``_audit_power.law_power`` and asserted below), and under 0.99 for 2450. The
    honest estimator passes with probability at least ``1 - P_FALSE_ALARM`` whatever
    ``n_fits``; if it regressed to the doubled weight, this same power applies to its
    run. The chi-square check of the honest fits has expected counts of at least 5.3.
    """
    data, neighbour = _audit_pair()
    epsilon, n_fits = 1.5, 2500
    laws = {
        cls: [_exact_released_law(cls, d, epsilon) for d in (data, neighbour)]
        for cls in (PPM, _DoubledPPM)
    }
    support = set().union(*laws[PPM], *laws[_DoubledPPM])
    alpha = P_FALSE_ALARM / (2 * len(support))  # the smallest level _audit_lower_bound uses
    assert law_power(n_fits, *laws[_DoubledPPM], epsilon, alpha) >= 0.99

    def run(cls, offset):
        make = lambda s: cls(epsilon=epsilon, candidate_strategy="exact", random_state=s)  # noqa: E731
        return (
            _refit_counts(make, data, n_fits, offset),
            _refit_counts(make, neighbour, n_fits, offset + n_fits),
        )

    runs = run(PPM, 0)
    bound, _, _ = _audit_lower_bound(*runs, n_fits)
    assert bound <= epsilon
    # The same fits follow the exact law (chi-square against the diagnostic).
    law = laws[PPM][0]
    counts = np.array([runs[0].count(o) for o in law])
    assert counts.sum() == n_fits  # every released outcome is in the law's support
    expected = np.array(list(law.values())) * n_fits
    assert chisquare(counts, expected).pvalue > P_FALSE_ALARM

    broken_bound, _, _ = _audit_lower_bound(*run(_DoubledPPM, 100_000), n_fits)
    assert broken_bound > epsilon


# -- the "sample" pool: public rows and the fit stream only, exact law, audit ----------------------
def _pool(family):
    return (
        family.strategy,
        family.origin,
        family.basis,
        family.scale,
        family.normals,
        family.offsets,
        family.window_sizes,
    )


def _same_pool(a, b):
    return all(
        x == y if isinstance(x, str | float) else np.array_equal(x, y)
        for x, y in zip(_pool(a), _pool(b), strict=True)
    )


def test_sampled_pool_is_a_function_of_the_public_rows_and_the_fit_stream_only():
    X, y, is_public = mixture(400, 4, seed=12)
    rng = np.random.default_rng(0)
    clf = PPM(epsilon=1.0, candidate_strategy="sample", pool_size=300, random_state=7)
    _, family = clf._selection_log_proba(X, y, is_public)
    # The same pool from the public rows and the fit stream alone, with no private row at all.
    fit_stream, _ = spawn_streams(7)
    alone = build_candidates(X[is_public], "sample", pool_size=300, rng=fit_stream)
    assert _same_pool(family, alone)
    # Every private row replaced (features and labels): identical pool.
    private = ~is_public
    X2, y2 = X.copy(), y.copy()
    X2[private] = rng.normal(scale=5.0, size=(private.sum(), 4))
    y2[private] = rng.integers(0, 2, size=private.sum())
    for X_other, y_other in [(X2, y2), *neighbours(X, y, is_public, rng, 6)]:
        _, other = clf._selection_log_proba(X_other, y_other, is_public)
        assert _same_pool(family, other)
    # The released boundaries are pool halfspaces, through public points.
    fitted = clone(clf).fit(X2, y2, is_public=is_public)
    pool_w = family.normals @ family.basis.T
    for w in fitted.halfspaces_:
        assert np.min(np.abs(pool_w - w[1:]).sum(axis=1)) < 1e-12
    # The same check catches a pool that looks at private rows.
    broken = _PoolFromAllRowsPPM(
        epsilon=1.0, candidate_strategy="sample", pool_size=300, random_state=7
    )
    _, leaky = broken._selection_log_proba(X, y, is_public)
    _, leaky2 = broken._selection_log_proba(X2, y2, is_public)
    assert not _same_pool(leaky, leaky2)


@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_sampled_selection_follows_the_exact_law(epsilon):
    X, y, is_public = small_mixture(15, 15, 3, seed=5)
    clf = PPM(epsilon=epsilon, candidate_strategy="sample", pool_size=400, random_state=2)
    log_p, family = clf._selection_log_proba(X, y, is_public)
    assert family.strategy == "sample" and family.size == 402
    brute = brute_force_mistakes(family, X, y)
    np.testing.assert_allclose(log_p, fewest_mistakes_log_proba(brute, epsilon), atol=1e-12)
    np.testing.assert_allclose(np.exp(log_p).sum(), 1.0)
    # Released hypotheses are members of their seed's pool: their mistakes are its counts.
    for seed in range(10):
        clf.set_params(random_state=seed)
        _, pool = clf._selection_log_proba(X, y, is_public)
        clf.fit(X, y, is_public=is_public)
        assert clf.candidates_used_ == "sample"
        assert int(np.sum(clf.predict(X) != y)) in set(mistake_counts(pool, X, y).tolist())
    # Neighbours: same pool, log-ratio at most epsilon and near-tight.
    clf.set_params(random_state=2)
    worst = _max_log_ratio(clf, X, y, is_public, n_pairs=30, seed=3)
    assert 0.5 * epsilon <= worst <= epsilon + 1e-9


def _sampled_audit_pair():
    """d = 2, 5 public and 5 private rows; one private row replaced (features and label).

    Chosen (by a search over random pairs with the exact law averaged over
    pools) so that the broken variant's log-ratio exceeds epsilon on an outcome
    with enough mass to be seen. The outcome of a fit is its prediction at the
    replaced row's two positions (post-processing of the released model).
    """
    X = np.array(
        [
            [-0.17, -1.41],
            [-1.33, 0.41],
            [0.39, -0.24],
            [-1.17, -1.44],
            [-0.33, -1.46],
            [0.9, 1.15],
            [2.83, 0.88],
            [-0.59, -0.87],
            [-3.45, -0.59],
            [-0.18, 0.97],
        ]
    )
    is_public = np.arange(10) < 5
    y = np.where(is_public, 0, 1)
    X2, y2 = X.copy(), y.copy()
    X2[9], y2[9] = [0.61, 0.59], 0
    queries = np.vstack([X[9], X2[9]])
    return (X, y, is_public), (X2, y2, is_public), queries


def test_refit_audit_of_the_sampled_pool_passes_and_flags_epsilon_per_mistake():
    """Sample size from the bound. The laws average over pools, so they were estimated
    once (20,000 fits per estimator and data set, seeds apart from these): the doubled
    variant predicts (0, 0) with probability 0.040 on D and 0.400 on D' (log-ratio 2.30;
    the estimator's: 0.133 and 0.385). With those laws (4 outcomes) 1,550 fits per data
    set flag the doubled variant with probability >= 0.99 (1,500: 0.988); 2,100 keep it
    >= 0.99 with the estimated probabilities moved by three standard errors against the
    test (0.0442 and 0.390), and give 0.9998 at the estimates (the power of that one
    outcome, ``_audit_power.detection_power``, a lower bound on the audit's; all asserted
    below). These figures are exact for the estimated laws, not for the true ones.
    """
    data, neighbour, queries = _sampled_audit_pair()
    epsilon, n_fits = 1.5, 2100
    alpha = P_FALSE_ALARM / (2 * 4)  # the level _audit_lower_bound uses with 4 outcomes
    assert detection_power(1550, 0.400, None, epsilon, alpha, q=0.040) >= 0.99
    assert detection_power(1500, 0.400, None, epsilon, alpha, q=0.040) < 0.99
    on_neighbour, on_data = (
        p + sign * 3 * math.sqrt(p * (1 - p) / 20_000) for p, sign in ((0.4, -1), (0.04, 1))
    )
    assert detection_power(n_fits, on_neighbour, None, epsilon, alpha, q=on_data) >= 0.99
    assert detection_power(n_fits, 0.400, None, epsilon, alpha, q=0.040) > 0.9998

    def counts(cls, dataset, first_seed):
        X, y, is_public = dataset
        return [
            tuple(
                cls(epsilon=epsilon, candidate_strategy="sample", pool_size=200, random_state=s)
                .fit(X, y, is_public=is_public)
                .predict(queries)
                .tolist()
            )
            for s in range(first_seed, first_seed + n_fits)
        ]

    def run(cls, offset):
        return counts(cls, data, offset), counts(cls, neighbour, offset + n_fits)

    bound, _, _ = _audit_lower_bound(*run(PPM, 0), n_fits)
    assert bound <= epsilon
    broken_bound, _, _ = _audit_lower_bound(*run(_DoubledPPM, 100_000), n_fits)
    assert broken_bound > epsilon


# -- public rows are not protected (documented behaviour) -----------------------------------------
@pytest.mark.parametrize("strategy", ["exact", "hull", "sample"])
def test_every_chosen_boundary_passes_through_public_points(strategy):
    X, y, is_public = mixture(60 if strategy == "exact" else 400, 2, seed=2)
    if strategy == "exact":
        X, y, is_public = X[:50], y[:50], is_public[:50]
    X_pub = X[is_public]
    for seed in range(5):
        clf = PPM(
            epsilon=5.0,
            candidate_strategy=strategy,
            pool_size=500,
            max_candidates=10**7,
            random_state=seed,
        ).fit(X, y, is_public=is_public)
        for w in clf.halfspaces_:
            residual = np.abs(X_pub @ w[1:] - w[0])
            needed = 2 if strategy == "hull" else 1
            assert np.sum(residual < 1e-7) >= needed


def test_one_dimensional_threshold_is_a_public_value_and_public_rows_move_it():
    X, y, is_public = mixture(300, 1, seed=0)
    clf = PPM(epsilon=1.0, random_state=0).fit(X, y, is_public=is_public)
    for w in clf.halfspaces_:
        threshold = w[0] / w[1]
        assert np.min(np.abs(X[is_public, 0] - threshold)) < 1e-9
    # Moving one public row changes the candidate set: no ratio bound is claimed for it.
    X2 = X.copy()
    X2[np.flatnonzero(is_public)[0]] = 0.123456
    _, fam1 = clf._selection_log_proba(X, y, is_public)
    _, fam2 = clf._selection_log_proba(X2, y, is_public)
    assert not np.array_equal(np.sort(fam1.offsets), np.sort(fam2.offsets))


# -- accuracy (Bassily, Moran & Nandi 2020, Theorems 4.9 and 4.10) -------------------------------
@pytest.mark.parametrize(
    "d, n, strategy", [(1, 1000, "exact"), (2, 2000, "hull"), (3, 2000, "hull")]
)
def test_accuracy_on_a_label_determined_mixture(d, n, strategy):
    X, y, is_public = mixture(n, d, seed=10 + d)
    rng = np.random.default_rng(99)  # fresh test points, same hyperplane as mixture(seed=10 + d)
    w = np.random.default_rng(10 + d).standard_normal(d)
    w /= np.linalg.norm(w)
    X_test = rng.uniform(-1, 1, size=(20000, d))
    X_test = X_test[np.abs(X_test @ w) > 0.05]
    y_test = (X_test @ w > 0).astype(int)
    clf = PPM(epsilon=1.0, candidate_strategy="auto", random_state=0).fit(X, y, is_public=is_public)
    assert clf.candidates_used_ == strategy
    assert clf.score(X_test, y_test) >= 0.97


def test_realizable_data_have_a_perfect_hypothesis_in_exact_and_hull():
    for d, strategy, n in ((1, "exact", 40), (2, "exact", 24), (2, "hull", 300), (3, "hull", 300)):
        X, y, is_public = mixture(n, d, seed=d)
        family = build_candidates(
            X[is_public], strategy, max_candidates=10**7, rng=np.random.default_rng(0)
        )
        assert mistake_counts(family, X, y).min() == 0


def test_lemma_4_5_in_one_dimension_against_threshold_erm():
    rng = np.random.default_rng(0)
    for _ in range(20):
        x = rng.normal(size=16)
        y = rng.integers(0, 2, size=16)
        is_public = (y == 0) | (rng.random(16) < 0.3)  # every label-0 row public
        family = build_candidates(x[is_public, None], "exact", rng=rng)
        best = mistake_counts(family, x[:, None], y).min()
        cuts = np.concatenate([[-np.inf], np.sort(x), [np.inf]])
        erm = min(
            min(
                np.sum((x >= c).astype(int) != y),
                np.sum((x <= c).astype(int) != y),
                np.sum((x > c).astype(int) != y),
                np.sum((x < c).astype(int) != y),
            )
            for c in cuts
        )
        assert best <= erm


def test_huge_epsilon_attains_the_minimum_and_tiny_epsilon_is_uniform():
    X, y, is_public = mixture(200, 2, seed=1)
    y = y.copy()
    y[:10] = 1 - y[:10]  # some noise
    clf = PPM(epsilon=200.0, random_state=0)
    _, family = clf._selection_log_proba(X, y, is_public)
    best = mistake_counts(family, X, y).min()
    for seed in range(5):
        clf.set_params(random_state=seed).fit(X, y, is_public=is_public)
        assert np.sum(clf.predict(X) != y) == best
    x1, y1, p1 = small_mixture(4, 4, 1, seed=0)
    log_p, _ = PPM(epsilon=1e-6, random_state=0)._selection_log_proba(x1, y1, p1)
    np.testing.assert_allclose(np.exp(log_p), 1.0 / log_p.size, rtol=1e-5)


def test_em_excess_bound_holds_on_repeated_fits():
    X, y, is_public = mixture(60, 1, seed=3)
    y = y.copy()
    y[::7] = 1 - y[::7]
    epsilon, beta = 0.5, 0.1
    clf = PPM(epsilon=epsilon, random_state=0)
    _, family = clf._selection_log_proba(X, y, is_public)
    best = mistake_counts(family, X, y).min()
    slack = em_excess_bound(family.size, len(y), epsilon, beta) * len(y)
    excess = [
        np.sum(clf.set_params(random_state=s).fit(X, y, is_public=is_public).predict(X) != y) - best
        for s in range(400)
    ]
    assert np.mean(np.array(excess) > slack) <= beta + 0.05


# -- affine hull, structure, invariances ----------------------------------------------------------
def test_points_off_the_public_affine_hull_get_the_private_label():
    X, y, is_public = mixture(400, 2, seed=5)
    X = np.column_stack([X, np.where(is_public, 0.0, 1.0)])  # constant 0 on public rows
    clf = PPM(epsilon=1.0, random_state=0).fit(X, y, is_public=is_public)
    assert clf.affine_basis_.shape == (3, 2)
    assert clf.halfspaces_.shape[0] <= 2
    inside = X[is_public][:20]
    assert np.all(clf.predict(inside) == 0)
    shifted = inside.copy()
    shifted[:, 2] = 1e-3
    assert np.all(clf.predict(shifted) == 1)
    assert np.all(clf.decision_function(shifted) > 0)


def test_all_public_points_identical():
    X = np.array([[1.0, 2.0]] * 5 + [[3.0, 3.0]] * 5)
    y = np.array([0] * 5 + [1] * 5)
    clf = PPM(epsilon=5.0, random_state=0).fit(X, y, is_public=y == 0)
    assert clf.n_candidates_ == 2 and clf.affine_basis_.shape == (2, 0)
    assert set(clf.predict(X).tolist()) <= {0, 1}


def test_boundary_points_are_inside_and_decision_function_is_consistent():
    X, y, is_public = mixture(500, 2, seed=6)
    clf = PPM(epsilon=2.0, random_state=0).fit(X, y, is_public=is_public)
    pred = clf.predict(X)
    assert np.all(pred[is_public] == 0)  # hull regions hold every public point, boundaries too
    score = clf.decision_function(X)
    np.testing.assert_array_equal(pred == 1, score > 0)


def test_public_class_one_mirrors_predictions():
    X, y, is_public = mixture(400, 2, seed=7)
    a = PPM(epsilon=1.0, classes=[0, 1], random_state=3).fit(X, y, is_public=is_public)
    b = PPM(epsilon=1.0, classes=[0, 1], public_class=1, random_state=3)
    b.fit(X, 1 - y, is_public=is_public)
    assert a.public_class_ == 0 and b.public_class_ == 1
    grid = np.random.default_rng(0).uniform(-1, 1, size=(1000, 2))
    np.testing.assert_array_equal(a.predict(grid), 1 - b.predict(grid))
    np.testing.assert_allclose(a.decision_function(grid), -b.decision_function(grid))


def test_string_labels_and_public_class():
    X, y, is_public = mixture(300, 2, seed=7)
    names = np.where(y == 1, "private", "public")
    a = PPM(epsilon=1.0, classes=[0, 1], random_state=3).fit(X, y, is_public=is_public)
    b = PPM(epsilon=1.0, classes=["private", "public"], public_class="public", random_state=3)
    b.fit(X, names, is_public=is_public)
    np.testing.assert_array_equal(b.classes_, ["private", "public"])
    grid = np.random.default_rng(0).uniform(-1, 1, size=(500, 2))
    np.testing.assert_array_equal(
        np.where(a.predict(grid) == 1, "private", "public"), b.predict(grid)
    )
    # decision_function: larger means classes_[1] ("public", inside the region)
    np.testing.assert_allclose(a.decision_function(grid), -b.decision_function(grid))


def test_privacy_guarantee_cites_the_paper():
    X, y, is_public = mixture(100, 2, seed=1)
    clf = PPM(epsilon=0.5, classes=[0, 1], random_state=0).fit(X, y, is_public=is_public)
    guarantee = clf.privacy_guarantee_
    assert isinstance(guarantee, PrivacyGuarantee)
    assert (guarantee.epsilon, guarantee.delta) == (0.5, 0.0)
    assert "Bassily, Moran & Nandi (2020), Lemma 4.1" in guarantee.theorem
    assert guarantee.details["n_candidates"] == clf.n_candidates_
    assert "private" in guarantee.protects


def test_candidate_family_follows_the_hypothesis_class_protocol():
    X, y, is_public = small_mixture(6, 6, 2, seed=3)
    family = build_candidates(X[is_public], "exact", rng=np.random.default_rng(0))
    assert isinstance(family, CandidateFamily) and isinstance(family, HypothesisClass)
    assert family.n_hypotheses == family.size
    assert 1 <= family.default_vc_dim() <= np.log2(family.size)
    assert family.prepare(X).dtype == np.float64


def test_row_permutation_and_affine_map_keep_the_law():
    X, y, is_public = mixture(150, 2, seed=8)
    perm = np.random.default_rng(0).permutation(len(y))
    clf = PPM(epsilon=1.0, candidate_strategy="hull", random_state=0)
    log_p, _ = clf._selection_log_proba(X, y, is_public)
    log_q, _ = clf._selection_log_proba(X[perm], y[perm], is_public[perm])
    np.testing.assert_allclose(np.sort(log_p), np.sort(log_q), atol=1e-9)
    M = np.array([[2.0, 0.5], [-0.3, 1.5]])
    log_r, _ = clf._selection_log_proba(X @ M + 3.0, y, is_public)
    np.testing.assert_allclose(np.sort(log_p), np.sort(log_r), atol=1e-9)


def test_same_seed_same_model_and_pickle_keeps_it():
    X, y, is_public = mixture(300, 2, seed=9)
    a = PPM(random_state=4).fit(X, y, is_public=is_public)
    b = PPM(random_state=4).fit(X, y, is_public=is_public)
    np.testing.assert_array_equal(a.halfspaces_, b.halfspaces_)
    c = pickle.loads(pickle.dumps(a))
    np.testing.assert_array_equal(a.predict(X), c.predict(X))


def test_given_classes_no_warning_and_single_class_allowed():
    X, y, is_public = mixture(100, 2, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", "an integer random_state seeds the noise", PrivacyWarning)
        clf = PPM(classes=[0, 1], random_state=0).fit(X, np.zeros_like(y), is_public=is_public)
        np.testing.assert_array_equal(clf.classes_, [0, 1])
        clf.fit(X, y, is_public=np.ones_like(y, dtype=bool))  # no private row
        clf.fit(X, y.astype(float), is_public=is_public.astype(float))
        clf.set_params(classes=[False, True]).fit(X, y.astype(bool), is_public=is_public)


def test_classes_none_reads_the_labels_with_a_privacy_warning():
    X, y, is_public = mixture(100, 2, seed=1)
    with pytest.warns(PrivacyWarning, match="classes=None"):
        clf = PPM(random_state=0).fit(X, y, is_public=is_public)
    np.testing.assert_array_equal(clf.classes_, [0, 1])
    with pytest.raises(ValueError, match="only one class"):
        PPM(random_state=0).fit(X, np.zeros_like(y), is_public=is_public)


def test_sample_strategy_and_auto_choice_in_higher_dimension():
    X, y, is_public = mixture(3000, 5, seed=2)
    clf = PPM(epsilon=1.0, pool_size=2000, random_state=0).fit(X, y, is_public=is_public)
    assert clf.candidates_used_ == "sample"
    assert clf.n_candidates_ == 2002
    assert clf.halfspaces_.shape[0] <= 5
    assert clf.score(X, y) > 0.8


def test_sample_strategy_learns_an_agnostic_mixture():
    """Label noise puts public points on the private side (the paper's agnostic setting).

    Every region that contains all public points then misclassifies the private
    side: halfspaces supporting the public points alone (an earlier pool) scored
    about 0.52 here. The pool's hyperplanes through public points, in both
    orientations, cut the public points and find the private side.
    """
    d, n = 6, 3000
    X, y, _ = mixture(n, d, seed=30)
    flip = np.random.default_rng(31).random(n) < 0.1
    y = np.where(flip, 1 - y, y)
    X_test, y_test, _ = mixture(20000, d, seed=30)  # same hyperplane, clean labels
    for seed in range(3):
        clf = PPM(epsilon=1.0, classes=[0, 1], pool_size=2000, random_state=seed)
        clf.fit(X, y, is_public=y == 0)
        assert clf.candidates_used_ == "sample"
        assert clf.score(X_test, y_test) > 0.8


def test_accountant_is_charged_once_before_the_draw():
    X, y, is_public = mixture(100, 1, seed=0)
    acc = PrivacyAccountant(1.5)
    clf = PPM(epsilon=1.0, accountant=acc, random_state=0).fit(X, y, is_public=is_public)
    before = clf.halfspaces_.copy()
    with pytest.raises(BudgetExhaustedError):
        clf.fit(X[::-1], y[::-1], is_public=is_public[::-1])
    np.testing.assert_array_equal(clf.halfspaces_, before)
    clf.predict(X)  # free


# -- errors -------------------------------------------------------------------------
def _good():
    X, y, is_public = mixture(40, 2, seed=0)
    return X, y, is_public


@pytest.mark.parametrize(
    "change, match",
    [
        (lambda X, y, p: (X, y, None), "is_public is required"),
        (lambda X, y, p: (X, y, p[:-1]), "one entry per row"),
        (lambda X, y, p: (X, y, np.where(p, 2, 0)), "True/False or 0/1"),
        (lambda X, y, p: (X, y, np.where(p, 0.5, 0.0)), "True/False or 0/1"),
        (lambda X, y, p: (X, y, np.where(p, np.nan, 0.0)), "True/False or 0/1"),
        (lambda X, y, p: (X, y, np.where(p, "yes", "no")), "True/False or 0/1"),
        (lambda X, y, p: (X, y, p[:, None]), "1-D"),
        (lambda X, y, p: (X, y, np.zeros_like(p)), "no public row"),
        (lambda X, y, p: (X, np.where(y == 1, 2, 0), p), "outside `classes`"),
        (lambda X, y, p: (X, np.where(y == 1, -1, 0), p), "outside `classes`"),
        (lambda X, y, p: (X, np.where(y == 1, "a", "b"), p), "not of the same kind"),
        (lambda X, y, p: (X, np.where(y == 1, 0.5, 0.0), p), "Unknown label type"),
        (lambda X, y, p: (X, y[:-1], p), "inconsistent numbers"),
        (lambda X, y, p: (np.where(X > 0.9, np.nan, X), y, p), "NaN"),
        (lambda X, y, p: (np.where(X > 0.9, np.inf, X), y, p), "infinity"),
        (lambda X, y, p: (X[:, 0], y, p), "2D array"),
        (lambda X, y, p: (X[:0], y[:0], p[:0]), "0 sample"),
        (lambda X, y, p: (X[:, :0], y, p), "0 feature"),
    ],
)
def test_bad_data_raise_value_error(change, match):
    X, y, p = change(*_good())
    with pytest.raises(ValueError, match=match):
        PPM(classes=[0, 1], random_state=0).fit(X, y, is_public=p)


def test_three_labels_are_refused():
    X, y, p = _good()
    y = np.where(y == 1, 2, y)
    y[0] = 1
    with pytest.raises(ValueError, match="Only binary classification"):
        PPM(random_state=0).fit(X, y, is_public=p)


@pytest.mark.parametrize(
    "params",
    [
        {"epsilon": 0},
        {"epsilon": -1.0},
        {"epsilon": np.inf},
        {"epsilon": np.nan},
        {"epsilon": "1"},
        {"epsilon": True},
        {"candidate_strategy": "all"},
        {"candidates": "all"},
        {"public_class": 2},
        {"public_class": "0"},
        {"classes": 3},
        {"accountant": 3},
        {"random_state": -1},
        {"max_candidates": 0},
        {"pool_size": 0},
        {"max_halfspaces": 0},
        {"max_halfspaces": 1.5},
        {"tol": -1e-9},
        {"tol": np.nan},
    ],
)
def test_bad_parameters_raise_value_error_and_change_nothing(params):
    X, y, is_public = _good()
    acc = PrivacyAccountant(10.0)
    clf = PPM(classes=[0, 1], accountant=acc, random_state=0).fit(X, y, is_public=is_public)
    spent, before = acc.epsilon_spent, clf.halfspaces_.copy()
    with pytest.raises(InvalidParameterError):
        clf.set_params(**params).fit(X, y, is_public=is_public)
    np.testing.assert_array_equal(clf.halfspaces_, before)
    assert acc.epsilon_spent == spent


def test_sparse_x_is_a_type_error_and_sample_weight_refused():
    X, y, is_public = _good()
    with pytest.raises(TypeError):
        PPM().fit(sparse.csr_matrix(X), y, is_public=is_public)
    with pytest.raises(TypeError, match="sample_weight"):
        PPM().fit(X, y, is_public=is_public, sample_weight=np.ones(len(y)))


def test_exact_and_hull_refuse_large_classes_with_the_count():
    X, y, is_public = mixture(400, 2, seed=0)
    with pytest.raises(ValueError, match=r"class of \d+ hypotheses.*max_candidates=1000000"):
        PPM(candidate_strategy="exact").fit(X, y, is_public=is_public)
    with pytest.raises(ValueError, match=r"candidate_strategy='hull' needs a class of \d+"):
        PPM(candidate_strategy="hull", max_candidates=10).fit(X, y, is_public=is_public)
    X5, y5, p5 = mixture(300, 5, seed=0)
    with pytest.raises(ValueError, match="more than max_candidates"):
        PPM(candidate_strategy="exact").fit(X5, y5, is_public=p5)


def test_predict_errors():
    X, y, is_public = _good()
    with pytest.raises(NotFittedError):
        PPM().predict(X)
    clf = PPM(random_state=0).fit(X, y, is_public=is_public)
    with pytest.raises(ValueError, match="features"):
        clf.predict(X[:, :1])


# -- scikit-learn integration ----------------------------------------------------------------------
def test_metadata_routing_in_pipeline_and_cross_validate():
    X, y, is_public = mixture(600, 2, seed=3)
    with sklearn.config_context(enable_metadata_routing=True):
        pipe = make_pipeline(
            FunctionTransformer(lambda Z: 2.0 * Z),  # data-independent preprocessing
            PPM(epsilon=1.0, random_state=0).set_fit_request(is_public=True),
        )
        pipe.fit(X, y, is_public=is_public)
        assert pipe.score(X, y) > 0.95
        result = cross_validate(pipe, X, y, params={"is_public": is_public}, cv=3)
        assert np.all(result["test_score"] > 0.9)
        unrequested = make_pipeline(FunctionTransformer(), PPM(random_state=0))
        with pytest.raises(Exception, match="is_public"):
            unrequested.fit(X, y, is_public=is_public)


def test_pandas_input_keeps_feature_names():
    pd = pytest.importorskip("pandas")
    X, y, is_public = mixture(200, 2, seed=0)
    frame = pd.DataFrame(X, columns=["a", "b"])
    clf = PPM(random_state=0).fit(frame, pd.Series(y), is_public=pd.Series(is_public))
    np.testing.assert_array_equal(clf.feature_names_in_, ["a", "b"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # ndarray after a frame: sklearn's warning
        np.testing.assert_array_equal(clf.predict(frame), clf.predict(X))


class _EveryOtherRowPublic(PrivateHalfspacePPMClassifier):
    """TEST-ONLY adapter for scikit-learn's generic checks, which call ``fit(X, y)``.

    ``is_public`` is required by the real estimator and is never given a default
    there (the status cannot be inferred). The generic checks do not know about
    it, so this adapter supplies a data-independent status vector (even rows
    public) when none is passed. Its ``__init__`` is the parent's, so every
    parameter check runs on the real signature.
    """

    def fit(self, X, y, *, is_public=None, **fit_params):
        if is_public is None:
            n_rows = X.shape[0] if hasattr(X, "shape") else np.asarray(X).shape[0]
            is_public = np.arange(n_rows) % 2 == 0
        return super().fit(X, y, is_public=is_public, **fit_params)


EXPECTED_FAILURES: dict[str, str] = {}


@parametrize_with_checks(
    [_EveryOtherRowPublic(epsilon=20.0, max_candidates=2 * 10**5, pool_size=500, random_state=0)],
    expected_failed_checks=lambda est: EXPECTED_FAILURES,
)
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_unlabelled_rows_marked_minus_one_are_the_public_rows():
    """y == -1 says which rows are public (the semi-supervised convention of the library)."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(400, 2))
    X = X[np.abs(X.sum(axis=1)) > 0.1]
    y = (X.sum(axis=1) > 0).astype(int)
    marked = np.where(y == 0, -1, y)
    ref = PPM(classes=[0, 1], random_state=0).fit(X, y, is_public=(y == 0))
    fitted = PPM(classes=[0, 1], random_state=0).fit(X, marked)
    np.testing.assert_array_equal(fitted.predict(X), ref.predict(X))
    assert fitted.privacy_guarantee_ == ref.privacy_guarantee_
    # With is_public, -1 stays an ordinary label (the previous behaviour, unchanged).
    with pytest.raises(ValueError, match="outside `classes`"):
        PPM(classes=[0, 1]).fit(X, marked, is_public=(y == 0))
    minus = PPM(classes=[-1, 1], random_state=0).fit(X, np.where(y == 0, -1, 1), is_public=y == 0)
    np.testing.assert_array_equal(minus.predict(X) == 1, ref.predict(X) == 1)
    with pytest.raises(ValueError, match="contains -1"):
        PPM(classes=[-1, 1]).fit(X, np.where(y == 0, -1, 1))
    with pytest.raises(ValueError, match="is_public is required when y marks no row"):
        PPM(classes=[0, 1]).fit(X, y)


# -- renamed parameter: ``candidates`` is now ``candidate_strategy`` (deprecated in 0.4) --------
@pytest.mark.parametrize("strategy", ["auto", "hull", "sample"])
def test_old_candidates_name_warns_and_gives_the_same_hypothesis(strategy):
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(300, 2))
    X = X[np.abs(X.sum(axis=1)) > 0.1]
    y = (X.sum(axis=1) > 0).astype(int)
    common = dict(epsilon=1.0, classes=[0, 1], pool_size=200, random_state=4)
    with pytest.warns(FutureWarning, match="`candidates` was renamed `candidate_strategy` in 0.4"):
        old = PPM(candidates=strategy, **common).fit(X, y, is_public=y == 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        new = PPM(candidate_strategy=strategy, **common).fit(X, y, is_public=y == 0)
    assert old.candidates_used_ == new.candidates_used_
    assert np.array_equal(old.halfspaces_, new.halfspaces_)
    assert old.region_is_empty_ == new.region_is_empty_
    assert np.array_equal(old.predict(X), new.predict(X))
    assert old.get_params()["candidates"] == strategy
    assert new.get_params()["candidates"] == "deprecated"


def test_setting_both_candidate_strategy_names_is_refused():
    X = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    y = np.array([0, 0, 1, 1])
    with pytest.raises(InvalidParameterError, match="candidate_strategy.*candidates"):
        PPM(candidate_strategy="hull", candidates="sample").fit(X, y, is_public=y == 0)
