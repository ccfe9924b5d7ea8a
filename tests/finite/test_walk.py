"""ExpProjectedWalkClassifier (ExpPW, Dwork & Feldman (2018), Figure 1): walk, law, privacy, API.

Every statistical assertion uses a false-alarm rate of at most 1e-6; every
privacy and accuracy assertion is paired with a broken variant that fails it.
"""

import copy
import math
import pickle
import warnings
from itertools import combinations_with_replacement

import numpy as np
import pytest
from scipy.sparse import csr_matrix
from scipy.special import expit
from scipy.stats import binomtest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.utils.estimator_checks import parametrize_with_checks

from skprivpred import (
    BudgetExhaustedError,
    InvalidParameterError,
    PrivacyAccountant,
    PrivacyGuarantee,
    PrivacyWarning,
)
from skprivpred.audit import audit_epsilon
from skprivpred.finite import (
    ExpProjectedWalkClassifier,
    exppw_clamp_bound,
    exppw_min_samples,
    exppw_walk,
)
from skprivpred.finite._walk import _clamped_walk
from skprivpred.mechanisms import exponential_mechanism_proba

P_FALSE_ALARM = 1e-6
MODES = ["aggregate", "sequential"]


def _column(values):
    return np.asarray(values, dtype=float).reshape(-1, 1)


def _walk(x, y, **params):
    params.setdefault("classes", [0, 1])
    params.setdefault("random_state", 0)
    return ExpProjectedWalkClassifier(**params).fit(_column(x), np.asarray(y))


def _rng_state(clf):
    return copy.deepcopy(clf._query_stream.rng.bit_generator.state)


# -- Figure 1 written plainly, one query at a time (the reference for the fast path) --------
def naive_walk_value(x_train, y_train, T, query, tie_handling):
    """The walk value V(S, query) of Figure 1 (with the corrected loop), by brute force."""
    if tie_handling == "sequential":
        records = sorted(zip(x_train, y_train))  # canonical order: x, then y, ascending
        v, i = 0, 0
        while i < len(records) and records[i][0] <= query:
            v = min(T, max(-T, v + 2 * records[i][1] - 1))
            i += 1
        return v
    v = 0
    for u in sorted(set(x_train)):
        if u > query:
            break
        step = sum(2 * label - 1 for value, label in zip(x_train, y_train) if value == u)
        v = min(T, max(-T, v + step))
    return v


# -- constants (Dwork & Feldman (2018), Theorem 5.3) ---------------------------------------
@pytest.mark.parametrize(
    "alpha, epsilon, expected",
    [
        (0.1, 1.0, 6),
        (0.05, 0.5, 15),
        (0.01, 0.1, 106),
        (0.1, 0.5, 12),
        (0.2, 2.0, 3),
        (0.5, 100.0, 1),
    ],
)
def test_exppw_T_pinned_values(alpha, epsilon, expected):
    assert exppw_clamp_bound(alpha, epsilon) == expected
    T = exppw_clamp_bound(alpha, epsilon)
    assert math.exp(-epsilon * T / 2) <= alpha / 2 + 1e-12  # the reason for the formula
    assert T == 1 or math.exp(-epsilon * (T - 1) / 2) > alpha / 2  # and it is the smallest


def test_exppw_min_samples_pinned_value_and_erratum():
    paper = 4 * 3 * math.log(2 / 0.1) / (0.1 * 1.0)
    assert paper == pytest.approx(359.49, abs=0.005)
    assert exppw_min_samples(0.1, 1.0) == exppw_min_samples(0.1, 1.0, k=1) == 360
    for alpha in (0.01, 0.05, 0.1, 0.3):
        for epsilon in (0.1, 0.5, 1.0, 3.0):
            for k in (1, 2, 5):
                n = exppw_min_samples(alpha, epsilon, k)
                T = exppw_clamp_bound(alpha, epsilon)
                assert (k + 2) * T / n <= alpha / 2 + 1e-12
                assert n >= 4 * (k + 2) * math.log(2 / alpha) / (alpha * epsilon) - 1e-9


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: exppw_clamp_bound(0.0, 1.0), "'target_error' parameter of exppw_clamp_bound"),
        (lambda: exppw_clamp_bound(0.1, 0.0), "'epsilon'"),
        (lambda: exppw_clamp_bound(0.1, float("nan")), "'epsilon'"),
        (lambda: exppw_min_samples(0.1, 1.0, k=0), "'k' parameter of exppw_min_samples"),
        (lambda: exppw_walk([1.0], [1], clamp_bound=0), "'clamp_bound' parameter of exppw_walk"),
        (lambda: exppw_walk([1.0], [2], clamp_bound=1), "y"),
        (lambda: exppw_walk([np.nan], [1], clamp_bound=1), "NaN"),
        (lambda: exppw_walk([1.0, 2.0], [1], clamp_bound=1), "same length"),
        (lambda: exppw_walk([1.0], [1], clamp_bound=1, tie_handling="first"), "tie_handling"),
    ],
)
def test_helpers_reject_bad_arguments(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


def test_worked_example():
    x, y = [1, 2, 3, 4, 5], [0, 0, 1, 1, 1]
    u, V = exppw_walk(x, y, clamp_bound=2)
    np.testing.assert_array_equal(u, [1, 2, 3, 4, 5])
    np.testing.assert_array_equal(V, [-1, -2, -1, 0, 1])
    clf = _walk(x, y, clamp_bound=2, epsilon=1.0)
    queries = _column([5, 7, 2.5, 0.5])
    np.testing.assert_array_equal(clf._walk_value(queries), [1, 1, -2, 0])
    p1 = clf._output_distribution(queries)[:, 1]
    np.testing.assert_allclose(p1, [0.6224593, 0.6224593, 0.2689414, 0.5], atol=1e-7)
    n = 100_000
    answers = clf.predict(np.full((n, 1), 2.5))
    assert binomtest(int((answers == 1).sum()), n, expit(-1.0)).pvalue > P_FALSE_ALARM


def test_realizable_walk_goes_down_then_up():
    n0, n1, T = 4, 12, 6
    _, V = exppw_walk(np.arange(n0 + n1), [0] * n0 + [1] * n1, clamp_bound=T)
    expected = [-k for k in range(1, n0 + 1)] + [min(T, -n0 + k) for k in range(1, n1 + 1)]
    np.testing.assert_array_equal(V, expected)


def test_tie_modes_on_a_small_example():
    # clamp_bound=1, three tied points with labels (1, 1, 0): order 0, 1, 1 ends at +1,
    # and its label-flipped twin (0, 0, 1), order 0, 0, 1, ends at 0, not -1.
    _, sequential = exppw_walk([3, 3, 3], [1, 1, 0], clamp_bound=1, tie_handling="sequential")
    _, sequential_flipped = exppw_walk(
        [3, 3, 3], [0, 0, 1], clamp_bound=1, tie_handling="sequential"
    )
    assert sequential.tolist() == [1] and sequential_flipped.tolist() == [0]
    _, aggregate = exppw_walk([3, 3, 3], [1, 1, 0], clamp_bound=1)
    _, aggregate_flipped = exppw_walk([3, 3, 3], [0, 0, 1], clamp_bound=1)
    assert aggregate.tolist() == [1] and aggregate_flipped.tolist() == [-1]


def test_default_clamp_bound_and_public_attributes():
    clf = _walk(np.arange(20), np.arange(20) % 2)
    assert (
        clf.clamp_bound_ == 6
        and _walk(np.arange(20), np.arange(20) % 2, clamp_bound=3, target_error=0.5).clamp_bound_
        == 3
    )
    assert not hasattr(clf, "predict_proba") and not hasattr(clf, "decision_function")
    public = {k for k in vars(clf) if not k.startswith("_")}
    assert public - set(clf.get_params()) == {
        "classes_",
        "clamp_bound_",
        "n_features_in_",
        "privacy_guarantee_",
    }
    guarantee = clf.privacy_guarantee_
    assert isinstance(guarantee, PrivacyGuarantee)
    assert guarantee.epsilon == 1.0 and guarantee.details["epsilon_add_remove"] == 0.5
    assert guarantee.delta == 0.0 and guarantee.neighbouring == "replace-one"
    assert guarantee.theorem == "Dwork & Feldman (2018), Lemma 5.1 (ExpPW, Figure 1)"
    assert guarantee.details["clamp_bound"] == 6


# -- the fast path equals Figure 1 ------------------------------------------------------
@pytest.mark.parametrize("length", [0, 1, 2, 3, 7, 64, 65, 1000])
def test_clamped_scan_equals_the_loop(length):
    rng = np.random.default_rng(length)
    steps = rng.integers(-9, 10, size=length) * rng.integers(0, 2, size=length)
    for T in (1, 2, 5, 50):
        v, expected = 0, []
        for step in steps:
            v = min(T, max(-T, v + int(step)))
            expected.append(v)
        np.testing.assert_array_equal(_clamped_walk(steps, T), expected)


@pytest.mark.parametrize("tie_handling", MODES)
@pytest.mark.parametrize("ties", [False, True], ids=["distinct", "tied"])
def test_fast_walk_equals_naive_figure_1(tie_handling, ties):
    rng = np.random.default_rng(1 + ties)
    for _ in range(40):
        n = int(rng.integers(1, 60))
        x = (
            rng.integers(0, 8, size=n).astype(float)
            if ties
            else rng.permutation(n) + rng.uniform(size=n)
        )
        y = rng.integers(0, 2, size=n)
        T = int(rng.integers(1, 6))
        clf = _walk(x, y, clamp_bound=T, tie_handling=tie_handling)
        queries = np.concatenate([x, rng.uniform(-1, x.max() + 1, size=20), [-np.inf, np.inf]])
        expected = [naive_walk_value(x.tolist(), y.tolist(), T, q, tie_handling) for q in queries]
        np.testing.assert_array_equal(clf._walk_value(_column(queries)), expected)
        np.testing.assert_allclose(
            clf._output_distribution(_column(queries))[:, 1],
            expit(np.array(expected) / 2),
            rtol=1e-12,
        )


# -- privacy: exhaustive on small data sets (Lemma 5.1) -----------------------------------
class _DoubledWeight(ExpProjectedWalkClassifier):
    """Broken on purpose: weight epsilon instead of epsilon / 2 (a 2 epsilon-DP answer)."""

    def _answer_law(self, walk_value):
        scores = np.zeros((walk_value.shape[0], 2))
        scores[:, 1] = walk_value
        return exponential_mechanism_proba(scores, 2 * self.privacy_guarantee_.epsilon)


class _Unclamped(ExpProjectedWalkClassifier):
    """Broken on purpose: no clamp (larger than any walk). Still private, but inaccurate."""

    def _compute_walk(self, x, y_index, clamp_bound):
        return exppw_walk(x, y_index, x.size + 1, self.tie_handling)


RECORDS = [(x, label) for x in (1.0, 2.0, 3.0) for label in (0, 1)]
SMALL_QUERIES = _column([0, 1, 2, 3, 4])


def _small_law(estimator, records):
    if not records:
        return np.full((SMALL_QUERIES.shape[0], 2), 0.5)  # the empty walk is 0 everywhere
    X = _column([RECORDS[r][0] for r in records])
    y = np.array([RECORDS[r][1] for r in records])
    return clone(estimator).fit(X, y)._output_distribution(SMALL_QUERIES)


def _max_log_ratio(law, other):
    return float(np.max(np.abs(np.log(law) - np.log(other))))


def _exhaustive_log_ratios(estimator, max_n=4):
    """Largest log-ratio of output probabilities over all replace-one and add/remove pairs."""
    laws = {
        data: _small_law(estimator, data)
        for n in range(max_n + 1)
        for data in combinations_with_replacement(range(len(RECORDS)), n)
    }
    replace = add_remove = 0.0
    for data, law in laws.items():
        for new in range(len(RECORDS)):
            if len(data) < max_n:
                grown = tuple(sorted(data + (new,)))
                add_remove = max(add_remove, _max_log_ratio(law, laws[grown]))
            for position in range(len(data)):
                swapped = tuple(sorted(data[:position] + data[position + 1 :] + (new,)))
                replace = max(replace, _max_log_ratio(law, laws[swapped]))
    return replace, add_remove


# Largest log-ratios found, as fractions of epsilon (0.667 and 0.353 at clamp bound 3).
EXHAUSTIVE_WORST = {1: (0.5, 0.272), 2: (0.586, 0.314), 3: (0.667, 0.353)}


@pytest.mark.parametrize("tie_handling", MODES)
@pytest.mark.parametrize("T", [1, 2, 3])
def test_exhaustive_privacy_on_small_data_sets(tie_handling, T):
    epsilon = 0.7
    estimator = ExpProjectedWalkClassifier(
        epsilon=epsilon, clamp_bound=T, tie_handling=tie_handling, classes=[0, 1]
    )
    replace, add_remove = _exhaustive_log_ratios(estimator)
    assert replace <= epsilon + 1e-12
    assert add_remove <= epsilon / 2 + 1e-12
    assert (replace / epsilon, add_remove / epsilon) == pytest.approx(EXHAUSTIVE_WORST[T], abs=1e-3)
    broken = _DoubledWeight(**estimator.get_params())
    broken_replace, broken_add_remove = _exhaustive_log_ratios(broken)
    assert broken_add_remove > epsilon / 2
    assert T == 1 or broken_replace > epsilon  # at clamp_bound=1 doubling reaches exactly epsilon


def test_unclamped_walk_is_still_private_on_small_data_sets():
    # The clamp serves accuracy, not privacy: an unclamped walk is a prefix sum,
    # which one row still moves by at most 1 (add/remove) or 2 (replace).
    estimator = _Unclamped(epsilon=0.7, clamp_bound=1, classes=[0, 1])
    replace, add_remove = _exhaustive_log_ratios(estimator)
    assert replace <= 0.7 + 1e-12 and add_remove <= 0.35 + 1e-12


def _audit_case():
    """Worst case: a long run of label 0, no clamp before the query; flip or drop the first row."""
    X = _column([1, 2, 3, 4])
    y = np.zeros(4, dtype=int)
    y_flipped = y.copy()
    y_flipped[0] = 1
    return X, y, y_flipped, _column([4])


@pytest.mark.parametrize("broken", [False, True], ids=["estimator", "weight-epsilon"])
def test_audit_replace_one(broken):
    X, y, y_flipped, query = _audit_case()
    cls = _DoubledWeight if broken else ExpProjectedWalkClassifier
    report = audit_epsilon(
        cls(epsilon=1.0, classes=[0, 1]),
        X,
        y,
        X,
        y_flipped,
        query,
        n_trials=100_000,
        random_state=0,
    )
    if broken:
        assert not report.passed and report.epsilon_lower_bound > 1.5, str(report)
    else:
        assert report.passed and report.max_observed_log_ratio > 0.7, str(report)


@pytest.mark.parametrize("broken", [False, True], ids=["estimator", "weight-epsilon"])
def test_audit_add_remove_at_half_epsilon(broken):
    X, y, _, query = _audit_case()
    cls = _DoubledWeight if broken else ExpProjectedWalkClassifier
    report = audit_epsilon(
        cls(epsilon=1.0, classes=[0, 1]),
        X,
        y,
        X[1:],
        y[1:],
        query,
        n_trials=100_000,
        claimed_epsilon=0.5,
        random_state=0,
    )
    if broken:
        assert not report.passed and report.epsilon_lower_bound > 0.7, str(report)
    else:
        assert report.passed and report.max_observed_log_ratio > 0.35, str(report)


# -- accuracy: Lemma 5.2 (empirical) and Theorem 5.3 (population) ---------------------------
def best_k_switch_errors(x, y, k):
    """Fewest training errors of a function of x with at most k switch points, either start.

    Dynamic programming over the distinct sorted values (points sharing x get one
    label): cost[j, b] = fewest errors so far with j switches and current label b.
    """
    values, inverse = np.unique(x, return_inverse=True)
    ones = np.bincount(inverse, weights=y, minlength=values.size)
    zeros = np.bincount(inverse, minlength=values.size) - ones
    cost = np.full((k + 1, 2), np.inf)
    cost[0] = 0.0
    for n0, n1 in zip(zeros, ones):
        switched = np.full((k + 1, 2), np.inf)
        switched[1:] = cost[:-1, ::-1]
        cost = np.minimum(cost, switched) + np.array([n1, n0])  # label 0 errs on ones, 1 on zeros
    return float(cost.min())


def _empirical_error(clf, x, y):
    law = clf._output_distribution(_column(x))
    return float(np.mean(law[np.arange(y.size), 1 - y]))


def _noisy_interval_labels(x, endpoints, noise, rng):
    target = np.searchsorted(np.sort(endpoints), x, side="right") % 2
    return np.where(rng.uniform(size=x.size) < noise, 1 - target, target)


@pytest.mark.parametrize(
    "tie_handling, ties", [("aggregate", False), ("sequential", False), ("aggregate", True)]
)
def test_lemma_5_2_empirical_error_bound(tie_handling, ties):
    rng = np.random.default_rng(3)
    for _ in range(150):
        n = int(rng.integers(20, 300))
        x = rng.integers(0, n // 3, size=n).astype(float) if ties else rng.uniform(size=n)
        x_scale = x.max() + 1 if ties else 1.0
        endpoints = rng.uniform(0, x_scale, size=int(rng.integers(1, 5)))
        y = _noisy_interval_labels(x, endpoints, rng.uniform(0, 0.4), rng)
        T = int(rng.integers(1, 11))
        epsilon = float(rng.choice([0.2, 0.5, 1.0, 2.0]))
        clf = _walk(x, y, clamp_bound=T, epsilon=epsilon, tie_handling=tie_handling)
        error = _empirical_error(clf, x, y)
        for k in range(1, 6):
            bound = best_k_switch_errors(x, y, k) / n + (k + 2) * T / n + math.exp(-epsilon * T / 2)
            assert error <= bound + 1e-12


def test_best_k_switch_errors_by_brute_force():
    rng = np.random.default_rng(4)
    for _ in range(30):
        x = rng.integers(0, 6, size=9).astype(float)
        y = rng.integers(0, 2, size=9)
        values = np.unique(x)
        for k in (1, 2):
            best = min(
                int(np.sum(labels[np.searchsorted(values, x)] != y))
                for labels in np.array(np.meshgrid(*[[0, 1]] * values.size)).T.reshape(
                    -1, values.size
                )
                if np.count_nonzero(np.diff(labels)) <= k
            )
            assert best_k_switch_errors(x, y, k) == best


def test_lemma_5_2_fails_without_the_clamp():
    x = np.arange(200.0)
    y = np.array([1] * 100 + [0] * 100)  # one switch: the best threshold is perfect
    bound = 0.0 + 3 * 6 / 200 + math.exp(-3.0)
    assert _empirical_error(_walk(x, y, clamp_bound=6), x, y) <= bound
    unclamped = _Unclamped(clamp_bound=6, classes=[0, 1]).fit(_column(x), y)
    assert _empirical_error(unclamped, x, y) > bound + 0.2


def population_error(clf, endpoints, noise):
    """Exact error on x ~ U[0, 1] with noisy k-interval labels (integrating piecewise constants)."""
    cuts = np.unique(np.concatenate([[0.0, 1.0], np.clip(clf._walk_x, 0, 1), endpoints]))
    left, width = cuts[:-1], np.diff(cuts)
    p_one = clf._output_distribution(_column(left))[:, 1]
    target = np.searchsorted(np.sort(endpoints), left, side="right") % 2
    p_label_one = np.where(target == 1, 1 - noise, noise)
    return float(np.sum(width * (p_label_one * (1 - p_one) + (1 - p_label_one) * p_one)))


THEOREM_CASES = {"threshold": ([0.3], 1), "interval": ([0.4, 0.8], 2)}


def _mean_population_error(cls, endpoints, k, noise, epsilon, alpha, repeats, rng):
    n = exppw_min_samples(alpha, epsilon, k)
    errors = []
    for _ in range(repeats):
        x = rng.uniform(size=n)
        y = _noisy_interval_labels(x, np.array(endpoints), noise, rng)
        clf = cls(epsilon=epsilon, target_error=alpha, classes=[0, 1], random_state=0).fit(
            _column(x), y
        )
        errors.append(population_error(clf, np.array(endpoints), noise))
    return float(np.mean(errors)), clf


@pytest.mark.parametrize("case", list(THEOREM_CASES))
def test_theorem_5_3_population_error(case):
    endpoints, k = THEOREM_CASES[case]
    noise, epsilon, alpha, repeats = 0.05, 0.5, 0.1, 400
    rng = np.random.default_rng(5)
    mean_error, clf = _mean_population_error(
        ExpProjectedWalkClassifier, endpoints, k, noise, epsilon, alpha, repeats, rng
    )
    # Hoeffding: every error lies in [noise, 1 - noise].
    slack = (1 - 2 * noise) * math.sqrt(math.log(1 / P_FALSE_ALARM) / (2 * repeats))
    bound = math.exp(epsilon) * (noise + alpha)  # Opt_P = noise for the target itself
    assert mean_error <= bound + slack
    # The answers of predict on fresh samples have the last fit's exact error.
    m = 50_000
    x_fresh = rng.uniform(size=m)
    y_fresh = _noisy_interval_labels(x_fresh, np.array(endpoints), noise, rng)
    wrong = int(np.sum(clf.predict(_column(x_fresh)) != y_fresh))
    assert (
        binomtest(wrong, m, population_error(clf, np.array(endpoints), noise)).pvalue
        > P_FALSE_ALARM
    )


def test_theorem_5_3_check_fails_without_the_clamp():
    endpoints, k = THEOREM_CASES["interval"]
    noise, epsilon, alpha, repeats = 0.05, 0.5, 0.1, 400
    rng = np.random.default_rng(6)
    mean_error, _ = _mean_population_error(
        _Unclamped, endpoints, k, noise, epsilon, alpha, repeats, rng
    )
    slack = (1 - 2 * noise) * math.sqrt(math.log(1 / P_FALSE_ALARM) / (2 * repeats))
    assert mean_error > math.exp(epsilon) * (noise + alpha) + slack


# -- invariances ------------------------------------------------------------------------
@pytest.fixture
def tied_data():
    rng = np.random.default_rng(7)
    x = np.round(rng.normal(size=300), 1)
    y = (x + rng.normal(scale=0.7, size=300) > 0).astype(int)
    return x, y


@pytest.mark.parametrize("tie_handling", MODES)
def test_row_order_does_not_matter(tied_data, tie_handling):
    x, y = tied_data
    order = np.random.default_rng(0).permutation(x.size)
    a = _walk(x, y, tie_handling=tie_handling)
    b = _walk(x[order], y[order], tie_handling=tie_handling)
    np.testing.assert_array_equal(a._walk_x, b._walk_x)
    np.testing.assert_array_equal(a._walk_v, b._walk_v)


@pytest.mark.parametrize("tie_handling", MODES)
def test_strictly_increasing_transform_gives_the_same_law(tied_data, tie_handling):
    x, y = tied_data
    queries = np.concatenate([np.linspace(-4, 4, 81), x, [-np.inf, np.inf]])
    a = _walk(x, y, tie_handling=tie_handling)
    b = _walk(np.arctan(x), y, tie_handling=tie_handling)
    np.testing.assert_array_equal(
        a._output_distribution(_column(queries)),
        b._output_distribution(_column(np.arctan(queries))),
    )


def test_label_flip_mirrors_the_law(tied_data):
    x, y = tied_data
    queries = _column(np.linspace(-4, 4, 161))
    law = _walk(x, y)._output_distribution(queries)
    flipped = _walk(x, 1 - y)._output_distribution(queries)
    np.testing.assert_allclose(flipped[:, 1], 1 - law[:, 1], atol=1e-15)
    distinct = np.unique(x)
    labels = np.random.default_rng(1).integers(0, 2, size=distinct.size)
    seq = _walk(distinct, labels, tie_handling="sequential")._output_distribution(queries)
    seq_flipped = _walk(distinct, 1 - labels, tie_handling="sequential")._output_distribution(
        queries
    )
    np.testing.assert_allclose(seq_flipped[:, 1], 1 - seq[:, 1], atol=1e-15)


def test_modes_agree_on_distinct_values():
    rng = np.random.default_rng(8)
    x = rng.uniform(size=500)
    y = rng.integers(0, 2, size=500)
    queries = _column(rng.uniform(-0.1, 1.1, size=300))
    aggregate = _walk(x, y, clamp_bound=3)._walk_value(queries)
    np.testing.assert_array_equal(
        aggregate, _walk(x, y, clamp_bound=3, tie_handling="sequential")._walk_value(queries)
    )


def test_law_is_constant_between_training_values_and_bounded(tied_data):
    x, y = tied_data
    clf = _walk(x, y, epsilon=0.8, clamp_bound=4)
    u = np.unique(x)
    inside = u[:-1] + np.diff(u) * 0.999
    np.testing.assert_array_equal(
        clf._walk_value(_column(inside)), clf._walk_value(_column(u[:-1]))
    )
    p1 = clf._output_distribution(_column(np.linspace(-5, 5, 1001)))[:, 1]
    assert np.all(p1 >= expit(-0.8 * 4 / 2) - 1e-15) and np.all(p1 <= expit(0.8 * 4 / 2) + 1e-15)
    assert clf._output_distribution(_column([u[0] - 1e-9]))[0, 1] == 0.5


def test_infinite_queries_are_before_and_after_every_point(tied_data):
    x, y = tied_data
    clf = _walk(x, y)
    values = clf._walk_value(_column([-np.inf, np.inf, x.max()]))
    assert values[0] == 0 and values[1] == values[2]
    answers = clf.predict(np.full((2000, 1), -np.inf))
    assert binomtest(int(answers.sum()), 2000, 0.5).pvalue > P_FALSE_ALARM


def test_string_labels_and_classes_order():
    x = np.arange(10.0)
    y = np.array([0] * 5 + [1] * 5)
    numeric = _walk(x, y, clamp_bound=2)
    strings = _walk(x, np.array(["no", "yes"])[y], clamp_bound=2, classes=["yes", "no"])
    np.testing.assert_array_equal(strings.classes_, ["no", "yes"])
    np.testing.assert_array_equal(
        numeric._output_distribution(_column(x)), strings._output_distribution(_column(x))
    )
    assert set(strings.predict(_column(x))) <= {"no", "yes"}


# -- input handling: the feature column, NaN, inf, bad parameters -----------------------------
def test_feature_selects_a_column_and_other_columns_are_ignored():
    rng = np.random.default_rng(9)
    X = rng.normal(size=(200, 3))
    y = (X[:, 1] > 0).astype(int)
    by_index = ExpProjectedWalkClassifier(feature=1, classes=[0, 1]).fit(X, y)
    by_negative = ExpProjectedWalkClassifier(feature=-2, classes=[0, 1]).fit(X, y)
    alone = ExpProjectedWalkClassifier(classes=[0, 1]).fit(X[:, [1]], y)
    Q = rng.normal(size=(50, 3))
    Q[:, 0] = np.nan  # an ignored column is not validated
    for clf in (by_index, by_negative):
        assert clf.n_features_in_ == 3
        np.testing.assert_array_equal(clf._walk_value(Q), alone._walk_value(Q[:, [1]]))
    with pytest.raises(ValueError, match="3 features"):
        alone.predict(Q)


def test_feature_by_name_with_pandas():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(10)
    frame = pd.DataFrame({"job": rng.choice(["a", "b"], 300), "age": rng.integers(18, 80, 300)})
    y = (frame["age"] > 45).astype(int).to_numpy()
    clf = ExpProjectedWalkClassifier(feature="age", classes=[0, 1], random_state=0).fit(frame, y)
    assert list(clf.feature_names_in_) == ["job", "age"]
    alone = ExpProjectedWalkClassifier(classes=[0, 1]).fit(frame[["age"]], y)
    np.testing.assert_array_equal(clf._walk_value(frame), alone._walk_value(frame[["age"]]))
    assert clf.predict(frame).shape == (300,)
    assert cross_val_score(clf, frame, y, cv=3).shape == (3,)
    with pytest.raises(ValueError, match="feature names"):
        clf.predict(frame[["age", "job"]])
    with pytest.raises(ValueError, match="not a column"):
        ExpProjectedWalkClassifier(feature="income", classes=[0, 1]).fit(frame, y)
    with pytest.raises(ValueError, match="float|convert"):
        ExpProjectedWalkClassifier(feature="job", classes=[0, 1]).fit(frame, y)


def test_multi_column_X_without_feature_is_a_clear_error():
    with pytest.raises(ValueError, match=r"uses one input feature.*2 columns.*`feature`"):
        ExpProjectedWalkClassifier(classes=[0, 1]).fit(np.zeros((10, 2)), np.arange(10) % 2)


@pytest.fixture
def fitted():
    x = np.random.default_rng(11).normal(size=100)
    y = (x > 0).astype(int)
    return x, y, _walk(x, y, clamp_bound=4)


BAD_PARAMS = [
    ({"epsilon": 0}, InvalidParameterError, "'epsilon' parameter of ExpProjectedWalkClassifier"),
    ({"epsilon": -1.0}, InvalidParameterError, "'epsilon'"),
    ({"epsilon": float("nan")}, InvalidParameterError, "'epsilon'"),
    ({"epsilon": float("inf")}, InvalidParameterError, "'epsilon'"),
    ({"epsilon": "1"}, InvalidParameterError, "'epsilon'"),
    ({"target_error": 0.0}, InvalidParameterError, "'target_error'"),
    ({"target_error": 1.0}, InvalidParameterError, "'target_error'"),
    ({"target_error": float("nan")}, InvalidParameterError, "'target_error'"),
    ({"clamp_bound": 0}, InvalidParameterError, "'clamp_bound'.*an int in the range"),
    ({"clamp_bound": -3}, InvalidParameterError, "'clamp_bound'"),
    ({"clamp_bound": 2.5}, InvalidParameterError, "'clamp_bound'"),
    ({"clamp_bound": 2.0}, InvalidParameterError, "'clamp_bound'"),
    ({"clamp_bound": True}, InvalidParameterError, "'clamp_bound'"),
    ({"tie_handling": "first"}, InvalidParameterError, "'tie_handling'"),
    ({"feature": 1}, ValueError, "feature=1"),
    ({"feature": "age"}, ValueError, "feature='age'"),
    ({"feature": 0.0}, InvalidParameterError, "'feature'"),
    ({"accountant": 3}, InvalidParameterError, "'accountant'"),
    ({"random_state": "seed"}, InvalidParameterError, "'random_state'"),
    ({"classes": [0]}, ValueError, "classes must hold at least two"),
    ({"classes": [0, 1, 2]}, InvalidParameterError, "Only binary.*`classes` holds 3"),
    ({"classes": [0, 2]}, ValueError, "outside `classes`"),
]


@pytest.mark.parametrize("params, error, match", BAD_PARAMS)
def test_bad_parameters_leave_fitted_estimator_unchanged(fitted, params, error, match):
    x, y, clf = fitted
    before_law = clf._output_distribution(_column(x))
    state = dict(vars(clf))
    with pytest.raises(error, match=match):
        clf.set_params(**params).fit(_column(x), y)
    assert vars(clf).keys() == state.keys()  # nothing added or removed
    assert all(vars(clf)[k] is v for k, v in state.items() if k not in params)
    np.testing.assert_array_equal(clf._output_distribution(_column(x)), before_law)


@pytest.mark.parametrize(
    "make_input, error, match",
    [
        (
            lambda x, y: (_column(x), y + 2 * (np.arange(y.size) % 3 == 0)),
            ValueError,
            "Only binary",
        ),
        (lambda x, y: (_column(np.where(np.arange(x.size) == 3, np.nan, x)), y), ValueError, "NaN"),
        (
            lambda x, y: (_column(np.where(np.arange(x.size) == 3, np.inf, x)), y),
            ValueError,
            "infinity",
        ),
        (lambda x, y: (x, y), ValueError, "reshape"),
        (lambda x, y: (np.zeros((0, 1)), y[:0]), ValueError, "0 sample"),
        (lambda x, y: (csr_matrix(_column(x)), y), TypeError, "[Ss]parse"),
        (lambda x, y: (_column(x), y.astype(float) + 0.5), ValueError, "Unknown label type"),
    ],
    ids=["three-classes", "nan", "inf", "one-d", "empty", "sparse", "continuous-y"],
)
def test_bad_training_data_is_rejected_and_changes_nothing(fitted, make_input, error, match):
    x, y, clf = fitted
    state = dict(vars(clf))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        with pytest.raises(error, match=match):
            clf.set_params(classes=None).fit(*make_input(x, y))
    assert all(vars(clf)[k] is v for k, v in state.items() if k != "classes")


def test_sample_weight_is_refused(fitted):
    x, y, clf = fitted
    with pytest.raises(TypeError, match="sample_weight"):
        clf.fit(_column(x), y, sample_weight=np.ones(y.size))


def test_predict_before_fit():
    with pytest.raises(NotFittedError):
        ExpProjectedWalkClassifier().predict(np.zeros((2, 1)))


def test_classes_none_warns_and_single_class_needs_classes():
    with pytest.warns(PrivacyWarning, match="classes"):
        ExpProjectedWalkClassifier().fit(np.zeros((4, 1)), [0, 1, 0, 1])
    with pytest.raises(ValueError, match="one class"):
        ExpProjectedWalkClassifier().fit(np.zeros((4, 1)), [1, 1, 1, 1])
    assert (
        ExpProjectedWalkClassifier(classes=[0, 1]).fit(np.zeros((4, 1)), [1, 1, 1, 1]).clamp_bound_
        == 6
    )


@pytest.mark.parametrize(
    "queries, match",
    [
        (np.array([[0.0], [np.nan]]), "NaN"),
        (np.zeros((3, 2)), "features"),
        (np.zeros((0, 1)), "0 sample"),
        (np.zeros(3), "reshape"),
    ],
    ids=["nan", "wrong-width", "empty", "one-d"],
)
def test_bad_queries_charge_nothing_and_draw_nothing(fitted, queries, match):
    x, y, _ = fitted
    acc = PrivacyAccountant(epsilon=5.0)
    clf = _walk(x, y, accountant=acc)
    state = _rng_state(clf)
    with pytest.raises(ValueError, match=match):
        clf.predict(queries)
    assert acc.queries_answered == 0 and clf.queries_answered_ == 0
    assert _rng_state(clf) == state


# -- budget, randomness, copies ---------------------------------------------------------
def test_budget_refusal_changes_nothing(fitted):
    x, y, _ = fitted
    acc = PrivacyAccountant(epsilon=10.0)
    clf = _walk(x, y, accountant=acc)
    clf.predict(_column(x[:8]))
    state = _rng_state(clf)
    with pytest.raises(BudgetExhaustedError, match="budget"):
        clf.predict(_column(x[:3]))
    assert _rng_state(clf) == state
    assert acc.queries_answered == 8 and acc.epsilon_spent == pytest.approx(8.0)
    assert clf.queries_answered_ == 8
    assert clf.predict(_column(x[:2])).shape == (2,)
    assert acc.epsilon_spent == pytest.approx(10.0)
    with pytest.raises(BudgetExhaustedError):
        clf.score(_column(x[:1]), y[:1])


def test_calls_advance_one_stream_and_refit_reproduces():
    x, y = np.arange(4.0), np.array([1, 1, 0, 0])
    clf = _walk(x, y, random_state=7)  # the walk ends at 0: P(1) = 1/2 at the last point
    one_by_one = np.array([clf.predict([[3.0]])[0] for _ in range(400)])
    assert 0 < one_by_one.sum() < 400  # an integer seed is not re-applied per call
    batch = _walk(x, y, random_state=7).predict(np.full((400, 1), 3.0))
    np.testing.assert_array_equal(one_by_one, batch)
    np.testing.assert_array_equal(clf.fit(_column(x), y).predict(np.full((400, 1), 3.0)), batch)


def test_copies_never_replay_noise():
    clf = _walk(np.arange(4.0), [1, 1, 0, 0], random_state=7)
    twin, deep = pickle.loads(pickle.dumps(clf)), copy.deepcopy(clf)
    a, b, c = (m.predict(np.full((200, 1), 3.0)) for m in (clf, twin, deep))
    assert not np.array_equal(a, b) and not np.array_equal(a, c)


def test_pickle_round_trip_keeps_spending(fitted):
    x, y, _ = fitted
    clf = _walk(x, y, accountant=PrivacyAccountant(epsilon=100.0))
    clf.predict(_column(x[:30]))
    restored = pickle.loads(pickle.dumps(clf))
    assert restored.accountant.epsilon_spent == pytest.approx(30.0)
    assert restored.queries_answered_ == 30
    np.testing.assert_array_equal(
        restored._output_distribution(_column(x)), clf._output_distribution(_column(x))
    )
    restored.predict(_column(x[:5]))
    assert restored.accountant.queries_answered == 35


def test_clone_deepcopy_and_grid_search_share_the_accountant(fitted):
    x, y, _ = fitted
    acc = PrivacyAccountant()
    clf = ExpProjectedWalkClassifier(classes=[0, 1], accountant=acc, random_state=0)
    assert clone(clf).accountant is acc
    twin = copy.deepcopy(clf.fit(_column(x), y))
    assert twin.accountant is acc
    twin.predict(_column(x[:4]))
    clf.predict(_column(x[:4]))
    assert acc.queries_answered == 8
    search = GridSearchCV(clf, {"clamp_bound": [2, 4]}, cv=2).fit(_column(x), y)
    assert acc.queries_answered == 8 + 2 * 100  # every validation row was a query
    assert search.best_estimator_.accountant is acc


# -- scikit-learn's estimator checks -----------------------------------------------------------
# The checks train on several columns, so they run with ``feature=0`` (the default
# ``feature=None`` refuses multi-column X on purpose). Expected failures, one by one:
EXPECTED_FAILED_CHECKS = {
    "check_estimators_pickle": (
        "a pickled copy gets a fresh query stream from OS entropy, so that two copies never "
        "replay the same noise; its answers are new draws, not the original's answers"
    ),
    "check_estimators_pickle(readonly_memmap=True)": (
        "a pickled copy gets a fresh query stream (see check_estimators_pickle)"
    ),
    "check_estimators_nan_inf": (
        "-inf and +inf are valid queries by design (before every and after every training "
        "point, Figure 1 of Dwork & Feldman (2018)); NaN queries and NaN/inf training values "
        "are still rejected"
    ),
}


@parametrize_with_checks(
    [
        ExpProjectedWalkClassifier(feature=0, random_state=0),
        ExpProjectedWalkClassifier(
            feature=0, clamp_bound=2, tie_handling="sequential", random_state=0
        ),
    ],
    expected_failed_checks=lambda estimator: EXPECTED_FAILED_CHECKS,
)
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        # Most checks omit `classes`: the PrivacyWarning is expected there.
        warnings.simplefilter("ignore", UserWarning)
        check(estimator)


# -- renamed parameters (0.4): `alpha` -> `target_error` ----------------------------------------
def test_alpha_was_renamed_target_error_in_the_walk():
    rng = np.random.default_rng(3)
    x = rng.uniform(size=(300, 1))
    y = (x[:, 0] > 0.4).astype(int)
    queries = rng.uniform(size=(200, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        new = ExpProjectedWalkClassifier(target_error=0.3, classes=[0, 1], random_state=0)
        new_answers = new.fit(x, y).predict(queries)
        assert exppw_clamp_bound(target_error=0.3, epsilon=1.0) == new.clamp_bound_ == 4
        assert exppw_min_samples(target_error=0.3, epsilon=1.0) == 80
    old = ExpProjectedWalkClassifier(alpha=0.3, classes=[0, 1], random_state=0)
    with pytest.warns(FutureWarning, match="`alpha` was renamed `target_error` in 0.4"):
        old.fit(x, y)
    assert old.clamp_bound_ == 4
    np.testing.assert_array_equal(old.predict(queries), new_answers)
    with pytest.warns(FutureWarning, match="`alpha` was renamed `target_error`"):
        assert exppw_clamp_bound(alpha=0.3, epsilon=1.0) == 4
    with pytest.warns(FutureWarning, match="`alpha` was renamed `target_error`"):
        assert exppw_min_samples(alpha=0.3, epsilon=1.0) == 80
    both = ExpProjectedWalkClassifier(target_error=0.2, alpha=0.3, classes=[0, 1])
    with pytest.raises(InvalidParameterError, match="'target_error' and .* 'alpha'"):
        both.fit(x, y)
    with pytest.raises(TypeError, match="both 'target_error' and .* 'alpha'"):
        exppw_clamp_bound(0.2, 1.0, alpha=0.3)
