"""Tests of the pure privacy mechanisms in ``skprivpred.mechanisms``.

What is checked (spec-000 §1, §2.5, §4.5, §9):

* ``soft_majority_proba``: the pinned r=5, eps=1 table, the eps-DP ratio bound between
  neighbouring vote counts (and its pinned maximum 0.87748), unanimity, ties, numerics.
* ``exponential_mechanism_proba``: agreement with a naive softmax, normalisation, no
  overflow at eps=50 with 1000 teachers, the binary case, and the eps-DP ratio when one
  vote moves between two classes (plus a check that the doubled weight is caught).
* ``sample_categorical`` / ``exponential_mechanism_sample``: the exact law (chi-square
  and per-category binomial tests), one uniform per row, inverse-CDF boundaries, zero
  probability categories, 1-D input, reproducibility.
* ``laplace_clip_bernoulli_proba`` and ``gaussian_clip_bernoulli_proba``: pinned values,
  symmetry, monotonicity, the tight e^eps ratio, Monte Carlo agreement.
* ``laplace_scale``, ``gaussian_sigma`` (classic and analytic Balle-Wang calibration).
* ``pac_n_partitions``, ``agnostic_n_partitions``, ``ceil_int``: pinned values.
* Input validation: bad epsilon / target_error / scores raise errors that name the parameter.

Statistical tests use fixed seeds; their tolerances come from exact binomial tests or a
CLT bound, each at a false-alarm rate of 1e-6 per test (Bonferroni-split when a test
makes several comparisons).
"""

from __future__ import annotations

import copy
import itertools
import math
import warnings

import numpy as np
import pytest
from scipy import stats
from scipy.special import expit

from skprivpred.mechanisms import (
    agnostic_n_partitions,
    ceil_int,
    discrete_laplace_noise,
    exponential_mechanism_proba,
    exponential_mechanism_sample,
    gaussian_clip_bernoulli_proba,
    gaussian_sigma,
    grid_laplace_release,
    laplace_clip_bernoulli_proba,
    laplace_scale,
    pac_n_partitions,
    sample_categorical,
    soft_majority_proba,
)

FALSE_ALARM = 1e-6  # per statistical test
SEED = 12345


# --------------------------------------------------------------------------- helpers
def naive_softmax(scores, epsilon, sensitivity=1.0):
    """The exponential mechanism written the textbook way (fine for small scores)."""
    weights = np.exp(epsilon * np.asarray(scores, dtype=float) / (2.0 * sensitivity))
    return weights / weights.sum(axis=-1, keepdims=True)


def vote_vectors(n_classes, n_voters):
    """All vectors of ``n_classes`` non-negative vote counts summing to ``n_voters``."""
    for bars in itertools.combinations(range(n_voters + n_classes - 1), n_classes - 1):
        edges = (-1, *bars, n_voters + n_classes - 1)
        yield [edges[i + 1] - edges[i] - 1 for i in range(n_classes)]


def max_log_ratio_one_vote_moved(n_classes, n_voters, epsilon):
    """Largest |ln P(k|c) - ln P(k|c')| over all c and c' = c with one vote moved i -> j."""
    worst = 0.0
    for counts in vote_vectors(n_classes, n_voters):
        log_p = np.log(exponential_mechanism_proba(counts, epsilon))
        for i, j in itertools.permutations(range(n_classes), 2):
            if counts[i] == 0:
                continue
            moved = list(counts)
            moved[i] -= 1
            moved[j] += 1
            log_q = np.log(exponential_mechanism_proba(moved, epsilon))
            worst = max(worst, float(np.max(np.abs(log_p - log_q))))
    return worst


def clt_tolerance(n_samples, n_comparisons=1, variance_bound=0.25):
    """Half-width of a two-sided CLT interval for a mean, at FALSE_ALARM overall."""
    z = stats.norm.isf(FALSE_ALARM / (2.0 * n_comparisons))
    return z * math.sqrt(variance_bound / n_samples)


def assert_categorical_law(draws, proba):
    """Chi-square and per-category exact binomial tests of ``draws`` against ``proba``."""
    proba = np.asarray(proba, dtype=float)
    n = draws.size
    counts = np.bincount(draws, minlength=proba.size)
    assert counts.size == proba.size, "an index outside the candidates was drawn"
    assert np.all(counts[proba == 0] == 0), "a zero-probability category was drawn"
    support = proba > 0
    chi2 = stats.chisquare(counts[support], n * proba[support])
    assert chi2.pvalue > FALSE_ALARM, (counts, n * proba)
    for k in np.flatnonzero(support):
        pvalue = stats.binomtest(int(counts[k]), n, proba[k]).pvalue
        assert pvalue > FALSE_ALARM / support.sum(), (k, counts[k], n * proba[k])


def balle_wang_delta(sigma, epsilon, sensitivity=1.0):
    """Exact delta of the Gaussian mechanism (Balle & Wang 2018), written plainly."""
    a = sensitivity / (2.0 * sigma)
    b = epsilon * sigma / sensitivity
    return stats.norm.cdf(a - b) - math.exp(epsilon) * stats.norm.cdf(-a - b)


class ScriptedUniforms:
    """Stand-in for a Generator whose ``random`` returns chosen uniforms (boundary tests)."""

    def __init__(self, values):
        self.values = np.asarray(values, dtype=float)
        self.calls = []

    def random(self, size):
        self.calls.append(size)
        assert size == self.values.size
        return self.values.copy()


# ------------------------------------------------------------------ soft_majority_proba
SOFT_MAJORITY_TABLE_R5_EPS1 = [0.075858, 0.182426, 0.377541, 0.622459, 0.817574, 0.924142]


def test_soft_majority_reference_table():
    proba = soft_majority_proba(np.arange(6), 5, 1.0)
    np.testing.assert_allclose(proba, SOFT_MAJORITY_TABLE_R5_EPS1, rtol=0, atol=1e-6)


def test_soft_majority_matches_formula_with_array_voters():
    n_ones = np.array([0, 3, 7, 10])
    n_voters = np.array([4, 5, 10, 10])
    expected = expit(0.7 * (2 * n_ones - n_voters) / 2)
    np.testing.assert_allclose(soft_majority_proba(n_ones, n_voters, 0.7), expected, rtol=1e-14)


def soft_majority_max_log_ratio(n_voters, epsilon):
    """max over c of |ln P(1|c+1) - ln P(1|c)| and |ln P(0|c+1) - ln P(0|c)|.

    ``P(0|c)`` is taken as ``P(1|r-c)`` (the same number as ``1 - P(1|c)`` in exact
    arithmetic, checked separately) so that the test does not lose precision to
    ``1 - p`` when ``p`` is close to 1.
    """
    c = np.arange(n_voters + 1)
    log_p1 = np.log(soft_majority_proba(c, n_voters, epsilon))
    log_p0 = np.log(soft_majority_proba(n_voters - c, n_voters, epsilon))
    return max(np.max(np.abs(np.diff(log_p1))), np.max(np.abs(np.diff(log_p0))))


@pytest.mark.parametrize(
    ("n_voters", "epsilon"),
    # eps * r / 2 stays below ~700 so that every P(1|c) is a normal double.
    [(r, eps) for r in (1, 2, 5, 10, 23, 101, 1000) for eps in (0.1, 1.0)]
    + [(r, 5.0) for r in (1, 2, 5, 10, 23, 101)],
)
def test_soft_majority_ratio_bound(n_voters, epsilon):
    assert soft_majority_max_log_ratio(n_voters, epsilon) <= epsilon + 1e-12


def test_soft_majority_ratio_pinned_and_tight_for_large_r():
    assert soft_majority_max_log_ratio(5, 1.0) == pytest.approx(0.87748, abs=1e-5)
    # The bound is approached as eps * r grows (worst pair at the extremes).
    assert soft_majority_max_log_ratio(200, 1.0) >= 1.0 - 1e-9


def test_soft_majority_paper_prose_weight_would_violate_bound():
    # exp(eps * count) per label (the paper's prose, erratum 1) = our formula at 2 eps.
    assert soft_majority_max_log_ratio(50, 2 * 1.0) > 1.0 + 0.5


def test_soft_majority_complement_symmetry():
    c = np.arange(11)
    p1 = soft_majority_proba(c, 10, 0.8)
    np.testing.assert_allclose(p1 + soft_majority_proba(10 - c, 10, 0.8), 1.0, rtol=0, atol=1e-15)


@pytest.mark.parametrize("n_voters", [1, 5, 23, 100])
@pytest.mark.parametrize("epsilon", [0.1, 1.0, 3.0])
def test_soft_majority_unanimous_votes(n_voters, epsilon):
    assert soft_majority_proba(n_voters, n_voters, epsilon) == pytest.approx(
        expit(epsilon * n_voters / 2), rel=1e-14
    )
    assert soft_majority_proba(0, n_voters, epsilon) == pytest.approx(
        expit(-epsilon * n_voters / 2), rel=1e-14
    )


@pytest.mark.parametrize("n_voters", [2, 4, 10, 1000])
def test_soft_majority_tie_is_one_half(n_voters):
    assert soft_majority_proba(n_voters // 2, n_voters, 1.3) == 0.5


def test_soft_majority_large_epsilon_and_voters_is_finite():
    with np.errstate(all="raise", under="ignore"):
        proba = soft_majority_proba(np.arange(1001), 1000, 50.0)
    assert np.all(np.isfinite(proba))
    assert np.all((proba >= 0.0) & (proba <= 1.0))
    assert np.all(np.diff(proba) >= 0.0)
    assert proba[500] == 0.5


# ---------------------------------------------------------- exponential_mechanism_proba
@pytest.mark.parametrize("sensitivity", [1.0, 2.5])
@pytest.mark.parametrize("epsilon", [0.3, 1.0, 4.0])
def test_exponential_mechanism_matches_naive_softmax(epsilon, sensitivity):
    scores = np.random.default_rng(SEED).integers(0, 11, size=(7, 4))
    np.testing.assert_allclose(
        exponential_mechanism_proba(scores, epsilon, sensitivity),
        naive_softmax(scores, epsilon, sensitivity),
        rtol=1e-12,
    )


def test_exponential_mechanism_rows_sum_to_one_and_shapes():
    scores = np.random.default_rng(SEED).normal(size=(20, 6))
    proba = exponential_mechanism_proba(scores, 2.0)
    assert proba.shape == (20, 6)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    one_row = exponential_mechanism_proba([1.0, 2.0, 3.0], 1.0)
    assert one_row.shape == (3,)
    np.testing.assert_allclose(one_row, naive_softmax([1.0, 2.0, 3.0], 1.0), rtol=1e-12)


@pytest.mark.parametrize("n_classes", [2, 3, 5, 10])
def test_exponential_mechanism_no_overflow_at_eps50_r1000(n_classes):
    rng = np.random.default_rng(SEED)
    counts = rng.multinomial(1000, np.full(n_classes, 1.0 / n_classes), size=50)
    counts = np.vstack([counts, np.eye(n_classes, dtype=int) * 1000])  # unanimous rows
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        proba = exponential_mechanism_proba(counts, 50.0)
    assert proba.shape == counts.shape
    assert np.all(np.isfinite(proba))
    assert np.all((proba >= 0.0) & (proba <= 1.0))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    # Same law as the textbook formula applied to the row-max-shifted counts.
    shifted = counts - counts.max(axis=1, keepdims=True)
    np.testing.assert_allclose(proba, naive_softmax(shifted, 50.0), rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("n_voters", [1, 5, 24])
@pytest.mark.parametrize("epsilon", [0.2, 1.0, 3.0])
def test_exponential_mechanism_binary_equals_soft_majority(n_voters, epsilon):
    n_ones = np.arange(n_voters + 1)
    counts = np.column_stack([n_voters - n_ones, n_ones])
    np.testing.assert_allclose(
        exponential_mechanism_proba(counts, epsilon)[:, 1],
        soft_majority_proba(n_ones, n_voters, epsilon),
        rtol=1e-12,
    )


@pytest.mark.parametrize(("n_classes", "n_voters"), [(3, 6), (5, 4)])
@pytest.mark.parametrize("epsilon", [0.5, 1.0, 3.0])
def test_exponential_mechanism_one_vote_moved_is_eps_dp(n_classes, n_voters, epsilon):
    assert max_log_ratio_one_vote_moved(n_classes, n_voters, epsilon) <= epsilon + 1e-12


@pytest.mark.parametrize(("n_classes", "n_voters"), [(3, 6), (5, 4)])
def test_exponential_mechanism_doubled_weight_is_caught(n_classes, n_voters):
    # Weight 2*eps per unit score (epsilon doubled) is not eps-DP: the check above fails.
    epsilon = 1.0
    assert max_log_ratio_one_vote_moved(n_classes, n_voters, 2 * epsilon) > epsilon + 0.1


def worst_log_ratio_per_candidate_sensitivity(scores, sensitivities, law_of):
    """Largest |log P(k) - log P'(k)| over every score move at a vertex of the box.

    For a fixed output ``k`` the log-ratio is convex in the move ``d`` (a linear
    term plus a log-sum-exp), so its maximum over the box ``|d_j| <= Delta_j`` lies
    at one of the ``2^n`` vertices: checking them all is exhaustive.
    """
    base = np.log(law_of(scores))
    worst = 0.0
    for signs in itertools.product((-1.0, 1.0), repeat=len(scores)):
        moved = np.log(law_of(scores + np.asarray(signs) * sensitivities))
        worst = max(worst, float(np.max(np.abs(moved - base))))
    return worst


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_per_candidate_sensitivities_keep_epsilon_and_the_bound_is_tight(seed, epsilon):
    rng = np.random.default_rng(seed)
    n = 2 + seed % 4
    scores = rng.uniform(0, 1, size=n)
    sensitivities = rng.choice([1 / 23, 1 / 100, 1 / 400, 0.2], size=n)

    def law(s):
        return exponential_mechanism_proba(s, epsilon, sensitivities)

    worst = worst_log_ratio_per_candidate_sensitivity(scores, sensitivities, law)
    assert worst <= epsilon + 1e-9
    # Tight: when the most sensitive candidate holds almost all the mass, it rising
    # and the next most sensitive one falling move the latter by epsilon.
    leading = np.zeros(n)
    top_two = np.sort(sensitivities)[-2:].sum()
    leading[np.argmax(sensitivities)] = 40 * top_two / epsilon  # a lead of e^40
    tight = worst_log_ratio_per_candidate_sensitivity(leading, sensitivities, law)
    assert tight == pytest.approx(epsilon, rel=1e-6)


def test_per_candidate_law_with_one_sensitivity_is_the_classical_law():
    scores = np.array([0.3, 0.1, 0.7])
    np.testing.assert_allclose(
        exponential_mechanism_proba(scores, 1.5, [0.25, 0.25, 0.25]),
        exponential_mechanism_proba(scores, 1.5, 0.25),
        rtol=1e-14,
    )


def test_per_candidate_law_with_the_largest_sensitivity_once_is_caught():
    # BROKEN ON PURPOSE: dividing by Delta_(1) + Delta_(3) (a smaller, wrong sum)
    # instead of the two largest: the exhaustive check exceeds epsilon.
    epsilon, sensitivities = 1.0, np.array([1 / 23, 1 / 100, 1 / 400])
    broken_divisor = sensitivities[0] + sensitivities[2]

    def broken(s):
        return np.exp(
            epsilon * s / broken_divisor - np.logaddexp.reduce(epsilon * s / broken_divisor)
        )

    leading = np.array([40 * broken_divisor / epsilon, 0.0, 0.0])
    worst = worst_log_ratio_per_candidate_sensitivity(leading, sensitivities, broken)
    assert worst > epsilon * 1.1
    correct = worst_log_ratio_per_candidate_sensitivity(
        leading, sensitivities, lambda s: exponential_mechanism_proba(s, epsilon, sensitivities)
    )
    assert correct <= epsilon + 1e-9


@pytest.mark.parametrize("bad", [[0.1, 0.0, 0.1], [0.1, np.inf, 0.1], [0.1, 0.1], [-1, 1, 1]])
def test_per_candidate_sensitivities_are_checked(bad):
    with pytest.raises(ValueError, match="one per candidate"):
        exponential_mechanism_proba([0.0, 1.0, 2.0], 1.0, bad)


# --------------------------------------------- sample_categorical / exponential sampling
def test_sample_categorical_exact_law():
    proba = np.array([0.1, 0.0, 0.25, 0.6, 0.05])
    draws = sample_categorical(np.tile(proba, (100_000, 1)), np.random.default_rng(SEED))
    assert draws.shape == (100_000,)
    assert np.issubdtype(draws.dtype, np.integer)
    assert_categorical_law(draws, proba)


def test_sample_categorical_row_wise_laws():
    laws = np.array([[0.7, 0.2, 0.1], [0.05, 0.05, 0.9]])
    rows = np.repeat([0, 1], 50_000)
    draws = sample_categorical(laws[rows], np.random.default_rng(SEED))
    for r in (0, 1):
        assert_categorical_law(draws[rows == r], laws[r])


@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_exponential_mechanism_sample_exact_law(epsilon):
    scores = np.array([0.0, 1.0, 2.0, 3.0])
    draws = exponential_mechanism_sample(
        np.tile(scores, (100_000, 1)), epsilon, np.random.default_rng(SEED)
    )
    assert_categorical_law(draws, naive_softmax(scores, epsilon))


def test_sample_categorical_uses_one_uniform_per_row_by_inverse_cdf():
    proba = np.random.default_rng(1).dirichlet(np.ones(4), size=1000)
    rng = np.random.default_rng(SEED)
    twin = copy.deepcopy(rng)
    draws = sample_categorical(proba, rng)
    uniforms = twin.random(1000)
    assert rng.bit_generator.state == twin.bit_generator.state
    np.testing.assert_array_equal(rng.random(5), twin.random(5))
    # Inverse CDF: the first index whose cumulative probability exceeds the uniform.
    cdf = np.cumsum(proba, axis=1)
    expected = (cdf <= uniforms[:, None]).sum(axis=1)
    np.testing.assert_array_equal(draws, expected)


def test_exponential_mechanism_sample_uses_one_uniform_per_row():
    rng = np.random.default_rng(SEED)
    twin = copy.deepcopy(rng)
    exponential_mechanism_sample(np.ones((37, 3)), 1.0, rng)
    twin.random(37)
    assert rng.bit_generator.state == twin.bit_generator.state


def test_sample_categorical_never_draws_zero_probability_categories():
    proba = np.array([0.0, 0.3, 0.0, 0.7, 0.0])
    draws = sample_categorical(np.tile(proba, (100_000, 1)), np.random.default_rng(SEED))
    assert set(np.unique(draws)) <= {1, 3}
    # Boundary uniforms, including 0 and the largest double below 1.
    uniforms = [0.0, 0.3, np.nextafter(0.3, 0.0), np.nextafter(1.0, 0.0), 0.5]
    scripted = ScriptedUniforms(uniforms)
    draws = sample_categorical(np.tile(proba, (len(uniforms), 1)), scripted)
    np.testing.assert_array_equal(draws, [1, 3, 1, 3, 3])
    assert scripted.calls == [len(uniforms)]


def test_sample_categorical_one_dimensional_input():
    draws = sample_categorical([0.0, 1.0], np.random.default_rng(SEED))
    assert draws.shape == (1,)
    assert draws[0] == 1
    draws = exponential_mechanism_sample([0.0, 0.0, 1000.0], 50.0, np.random.default_rng(SEED))
    assert draws.shape == (1,)
    assert draws[0] == 2


def test_sampling_is_reproducible_with_the_same_seed():
    proba = np.random.default_rng(2).dirichlet(np.ones(5), size=500)
    a = sample_categorical(proba, np.random.default_rng(SEED))
    b = sample_categorical(proba, np.random.default_rng(SEED))
    np.testing.assert_array_equal(a, b)
    scores = np.random.default_rng(3).integers(0, 10, size=(500, 3))
    a = exponential_mechanism_sample(scores, 1.0, np.random.default_rng(SEED))
    b = exponential_mechanism_sample(scores, 1.0, np.random.default_rng(SEED))
    np.testing.assert_array_equal(a, b)
    c = exponential_mechanism_sample(scores, 1.0, np.random.default_rng(SEED + 1))
    assert not np.array_equal(a, c)


# ------------------------------------------------------- laplace_clip_bernoulli_proba
@pytest.mark.parametrize(
    ("v", "b", "expected", "tol"),
    [
        (0.0, 0.05, 0.0249999999485, 1e-13),
        (0.5, 0.05, 0.5, 1e-15),
        (0.0, 0.5, 0.2161661792, 1e-9),
    ],
)
def test_laplace_q_pinned_values(v, b, expected, tol):
    assert float(laplace_clip_bernoulli_proba(v, b)) == pytest.approx(expected, rel=0, abs=tol)


@pytest.mark.parametrize("b", [0.01, 0.05, 0.3, 1.0, 5.0])
def test_laplace_q_symmetry_range_and_monotonicity(b):
    v = np.linspace(-0.5, 1.5, 4001)
    q = laplace_clip_bernoulli_proba(v, b)
    np.testing.assert_allclose(
        laplace_clip_bernoulli_proba(1.0 - v, b), 1.0 - q, rtol=0, atol=1e-14
    )
    assert np.all((q >= 0.0) & (q <= 1.0))
    assert np.all(np.diff(q) >= 0.0)
    if b >= 0.05:  # not saturated at float precision on this grid: strictly increasing
        assert np.all(np.diff(q) > 0.0)


@pytest.mark.parametrize(("n_voters", "epsilon"), [(5, 1.0), (10, 1.0), (20, 0.5), (50, 0.1)])
def test_laplace_q_tight_ratio_below_zero(n_voters, epsilon):
    b = 1.0 / (n_voters * epsilon)
    v = np.linspace(-2.0, -1.0 / n_voters, 200)
    ratio = laplace_clip_bernoulli_proba(v + 1.0 / n_voters, b) / laplace_clip_bernoulli_proba(v, b)
    np.testing.assert_allclose(ratio, math.exp(epsilon), rtol=1e-12)


@pytest.mark.parametrize(
    ("n_voters", "epsilon"), [(5, 1.0), (10, 1.0), (10, 2.0), (20, 0.5), (50, 0.1), (100, 0.1)]
)
def test_laplace_q_max_log_ratio_equals_epsilon(n_voters, epsilon):
    b = 1.0 / (n_voters * epsilon)
    v = np.linspace(-0.5, 1.5 - 1.0 / n_voters, 20001)
    q0 = laplace_clip_bernoulli_proba(v, b)
    q1 = laplace_clip_bernoulli_proba(v + 1.0 / n_voters, b)
    log_ratio_one = np.max(np.abs(np.log(q1) - np.log(q0)))
    log_ratio_zero = np.max(np.abs(np.log1p(-q1) - np.log1p(-q0)))
    for worst in (log_ratio_one, log_ratio_zero):
        assert worst <= epsilon * (1 + 1e-9)
        assert worst >= epsilon * (1 - 1e-6)


def test_laplace_q_half_the_noise_is_caught():
    # With b = 1/(2 r eps) (half the required scale) the ratio check above fails.
    n_voters, epsilon = 10, 1.0
    b = 1.0 / (2 * n_voters * epsilon)
    v = np.linspace(-0.5, 1.5 - 1.0 / n_voters, 2001)
    log_ratio = np.log(laplace_clip_bernoulli_proba(v + 1.0 / n_voters, b)) - np.log(
        laplace_clip_bernoulli_proba(v, b)
    )
    assert np.max(log_ratio) > epsilon * 1.5


LAPLACE_MC_V = np.array([-0.3, -0.05, 0.0, 0.2, 0.5, 0.9, 1.0, 1.1])
MC_SAMPLES = 1_000_000


@pytest.mark.parametrize("b", [0.05, 0.3, 1.0])
def test_laplace_q_agrees_with_monte_carlo(b):
    noise = np.random.default_rng(SEED).laplace(0.0, b, size=MC_SAMPLES)
    estimate = np.array([np.clip(v + noise, 0.0, 1.0).mean() for v in LAPLACE_MC_V])
    tol = clt_tolerance(MC_SAMPLES, n_comparisons=LAPLACE_MC_V.size)
    np.testing.assert_allclose(
        estimate, laplace_clip_bernoulli_proba(LAPLACE_MC_V, b), rtol=0, atol=tol
    )


# ------------------------------------------------------ gaussian_clip_bernoulli_proba
@pytest.mark.parametrize("s", [0.05, 0.3, 1.0])
def test_gaussian_q_agrees_with_monte_carlo(s):
    noise = np.random.default_rng(SEED).normal(0.0, s, size=MC_SAMPLES)
    estimate = np.array([np.clip(v + noise, 0.0, 1.0).mean() for v in LAPLACE_MC_V])
    tol = clt_tolerance(MC_SAMPLES, n_comparisons=LAPLACE_MC_V.size)
    np.testing.assert_allclose(
        estimate, gaussian_clip_bernoulli_proba(LAPLACE_MC_V, s), rtol=0, atol=tol
    )


@pytest.mark.parametrize("s", [0.001, 0.01, 0.1, 0.5, 2.0, 20.0])
def test_gaussian_q_symmetry_and_range(s):
    v = np.linspace(-1.0, 2.0, 3001)
    q = gaussian_clip_bernoulli_proba(v, s)
    assert np.all((q >= 0.0) & (q <= 1.0))
    np.testing.assert_allclose(
        gaussian_clip_bernoulli_proba(1.0 - v, s), 1.0 - q, rtol=0, atol=1e-12
    )
    assert float(gaussian_clip_bernoulli_proba(0.5, s)) == pytest.approx(0.5, abs=1e-12)


def test_gaussian_q_value_at_zero():
    # E[clip(Z, 0, 1)] = s * (phi(0) - G(-1/s)) with G(u) = u Phi(u) + phi(u).
    s = 0.2
    u = -1.0 / s
    expected = s * (stats.norm.pdf(0.0) - (u * stats.norm.cdf(u) + stats.norm.pdf(u)))
    assert float(gaussian_clip_bernoulli_proba(0.0, s)) == pytest.approx(expected, rel=1e-12)


# ----------------------------------------------------------- laplace_scale, gaussian_sigma
@pytest.mark.parametrize(
    ("sensitivity", "epsilon", "expected"), [(1.0, 0.5, 2.0), (0.1, 2.0, 0.05), (3.0, 1.0, 3.0)]
)
def test_laplace_scale(sensitivity, epsilon, expected):
    assert laplace_scale(sensitivity, epsilon) == pytest.approx(expected, rel=1e-15)


def test_gaussian_sigma_classic_pinned():
    assert gaussian_sigma(1.0, 0.5, 1e-5) == pytest.approx(9.689610525210778, rel=1e-12)
    assert gaussian_sigma(2.0, 0.1, 1e-3) == pytest.approx(
        2.0 * math.sqrt(2.0 * math.log(1.25e3)) / 0.1, rel=1e-14
    )


@pytest.mark.parametrize("epsilon", [1.0, 1.5, 10.0])
def test_gaussian_sigma_classic_refuses_epsilon_at_least_one(epsilon):
    with pytest.raises(ValueError, match=r"epsilon < 1"):
        gaussian_sigma(1.0, epsilon, 1e-5)


def test_gaussian_sigma_unknown_method():
    with pytest.raises(ValueError, match="method"):
        gaussian_sigma(1.0, 0.5, 1e-5, method="renyi")


@pytest.mark.parametrize("epsilon", [0.05, 0.5, 0.99, 1.0, 2.0, 8.0])
@pytest.mark.parametrize("delta", [1e-9, 1e-5, 1e-2])
@pytest.mark.parametrize("sensitivity", [1.0, 0.3])
def test_gaussian_sigma_analytic_is_the_smallest_valid_sigma(epsilon, delta, sensitivity):
    sigma = gaussian_sigma(sensitivity, epsilon, delta, method="analytic")
    assert math.isfinite(sigma) and sigma > 0
    # Valid at sigma (a relative 1e-9 allows for this test's own rounding) ...
    assert balle_wang_delta(sigma, epsilon, sensitivity) <= delta * (1 + 1e-9)
    # ... and not valid a little below: the calibration is tight.
    assert balle_wang_delta(0.999 * sigma, epsilon, sensitivity) > delta


@pytest.mark.parametrize("epsilon", [0.05, 0.3, 0.7, 0.99])
@pytest.mark.parametrize("delta", [1e-9, 1e-5, 1e-2])
def test_gaussian_sigma_analytic_not_above_classic(epsilon, delta):
    assert gaussian_sigma(1.0, epsilon, delta, method="analytic") <= gaussian_sigma(
        1.0, epsilon, delta
    )


# -------------------------------------------------- partition counts and integer rounding
@pytest.mark.parametrize(
    ("alpha", "epsilon", "expected"),
    [(0.1, 1, 23), (0.05, 0.5, 53), (0.01, 0.1, 360), (0.1, 0.5, 45), (0.2, 2, 9)],
)
def test_pac_n_partitions(alpha, epsilon, expected):
    assert pac_n_partitions(alpha, epsilon) == expected
    assert pac_n_partitions(alpha, epsilon, n_classes=2) == expected


def test_pac_n_partitions_multiclass():
    # ceil(6 ln(4 (K-1) / alpha) / eps): K=3, alpha=0.1, eps=1 -> ceil(26.29...) = 27.
    assert pac_n_partitions(0.1, 1.0, n_classes=3) == math.ceil(6 * math.log(80.0))
    assert pac_n_partitions(0.1, 1.0, n_classes=3) == 27


@pytest.mark.parametrize(
    ("alpha", "epsilon", "expected"),
    [(0.1, 1, 20), (0.05, 0.5, 80), (0.01, 0.1, 2000), (0.1, 0.5, 40), (0.2, 2, 5)],
)
def test_agnostic_n_partitions(alpha, epsilon, expected):
    assert agnostic_n_partitions(alpha, epsilon) == expected


@pytest.mark.parametrize("epsilon", [1e8, 1e12, 1e300])
def test_partition_counts_are_at_least_one(epsilon):
    # The formulas are ceilings of positive numbers, so r >= 1 for every epsilon (spec
    # §0.2 rule 9: privacy holds for every r >= 1; r = 0 teachers is meaningless).
    assert pac_n_partitions(0.1, epsilon) == 1
    assert pac_n_partitions(0.1, epsilon, n_classes=5) == 1
    assert agnostic_n_partitions(0.5, epsilon) == 1


def test_ceil_int_forgives_float_noise():
    assert ceil_int(39.99999999999999) == 40
    assert ceil_int(40.00000000000001) == 40
    assert ceil_int(40.0) == 40
    assert ceil_int(40.001) == 41
    assert ceil_int(39.5) == 40


# ------------------------------------------------------------------------ bad input
EPSILON_CALLS = {
    "soft_majority_proba": lambda eps: soft_majority_proba(1, 3, eps),
    "exponential_mechanism_proba": lambda eps: exponential_mechanism_proba([[1.0, 2.0]], eps),
    "exponential_mechanism_sample": lambda eps: exponential_mechanism_sample(
        [[1.0, 2.0]], eps, np.random.default_rng(0)
    ),
    "pac_n_partitions": lambda eps: pac_n_partitions(0.1, eps),
    "agnostic_n_partitions": lambda eps: agnostic_n_partitions(0.1, eps),
    "laplace_scale": lambda eps: laplace_scale(1.0, eps),
    "gaussian_sigma": lambda eps: gaussian_sigma(1.0, eps, 1e-5),
    "gaussian_sigma_analytic": lambda eps: gaussian_sigma(1.0, eps, 1e-5, method="analytic"),
}
BAD_EPSILONS = [
    (0.0, ValueError),
    (-1.0, ValueError),
    (float("nan"), ValueError),
    (float("inf"), ValueError),
    (True, TypeError),
    ("1.0", TypeError),
    (None, TypeError),
]


@pytest.mark.parametrize(("bad", "error"), BAD_EPSILONS, ids=repr)
@pytest.mark.parametrize("call", list(EPSILON_CALLS.values()), ids=list(EPSILON_CALLS))
def test_bad_epsilon_is_rejected_by_name(call, bad, error):
    with pytest.raises(error, match="epsilon"):
        call(bad)


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.1, 1.5, float("nan"), float("inf")], ids=repr)
@pytest.mark.parametrize("func", [pac_n_partitions, agnostic_n_partitions])
def test_bad_target_error_is_rejected_by_name(func, bad):
    with pytest.raises(ValueError, match="target_error"):
        func(bad, 1.0)


@pytest.mark.parametrize("func", [pac_n_partitions, agnostic_n_partitions])
def test_alpha_was_renamed_target_error_in_the_teacher_counts(func):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        new = func(target_error=0.07, epsilon=0.5)
    with pytest.warns(FutureWarning, match="`alpha` was renamed `target_error` in 0.4"):
        assert func(alpha=0.07, epsilon=0.5) == new
    with pytest.raises(TypeError, match="both 'target_error' and .* 'alpha'"):
        func(0.07, 0.5, alpha=0.07)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")], ids=repr)
def test_non_finite_scores_are_rejected(bad):
    scores = np.array([[1.0, bad, 0.0]])
    with pytest.raises(ValueError, match="scores"):
        exponential_mechanism_proba(scores, 1.0)
    rng = np.random.default_rng(SEED)
    state = copy.deepcopy(rng.bit_generator.state)
    with pytest.raises(ValueError, match="scores"):
        exponential_mechanism_sample(scores, 1.0, rng)
    assert rng.bit_generator.state == state  # no noise drawn on refusal


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")], ids=repr)
def test_bad_sensitivity_and_noise_scale_are_rejected_by_name(bad):
    with pytest.raises(ValueError, match="sensitivity"):
        exponential_mechanism_proba([1.0, 2.0], 1.0, sensitivity=bad)
    with pytest.raises(ValueError, match="sensitivity"):
        laplace_scale(bad, 1.0)
    with pytest.raises(ValueError, match="sensitivity"):
        gaussian_sigma(bad, 0.5, 1e-5)
    with pytest.raises(ValueError, match="'b' parameter must"):
        laplace_clip_bernoulli_proba(0.5, bad)
    with pytest.raises(ValueError, match="'s' parameter must"):
        gaussian_clip_bernoulli_proba(0.5, bad)


@pytest.mark.parametrize("bad", [0.0, 1.0, -1e-3, float("nan")], ids=repr)
def test_bad_delta_in_gaussian_sigma_is_rejected_by_name(bad):
    with pytest.raises(ValueError, match="delta"):
        gaussian_sigma(1.0, 0.5, bad)


# -- discrete Laplace noise and the public-grid release ---------------------------------
@pytest.mark.parametrize("scale", [0.5, 2.0, 7.3])
def test_discrete_laplace_exact_law(scale):
    rng = np.random.default_rng(2024)
    n = 200_000
    noise = discrete_laplace_noise(scale, rng, size=n)
    assert noise.dtype.kind == "i"
    for z in range(-4, 5):
        p = np.tanh(1 / (2 * scale)) * np.exp(-abs(z) / scale)
        assert stats.binomtest(int((noise == z).sum()), n, p).pvalue > 1e-6


def test_discrete_laplace_ratio_is_tight():
    # P(z) / P(z + 1) = e^{1/scale} exactly for z >= 0: the DP ratio at sensitivity 1.
    scale = 1 / 0.7
    p = lambda z: np.tanh(1 / (2 * scale)) * np.exp(-abs(z) / scale)  # noqa: E731
    assert p(3) / p(4) == pytest.approx(np.exp(0.7), rel=1e-12)


def test_grid_release_is_on_the_grid_and_has_the_stated_scale():
    rng = np.random.default_rng(7)
    sensitivity, epsilon, steps = 0.05, 0.5, 5
    released = grid_laplace_release(np.full(100_000, 0.123), sensitivity, epsilon, rng, steps=steps)
    grid = sensitivity / steps
    index = released / grid
    np.testing.assert_allclose(index, np.rint(index), atol=1e-6)
    # index noise is discrete Laplace with scale (steps + 1) / epsilon = 12
    noise = np.rint(index) - np.rint(0.123 / grid)
    for z in (-2, 0, 3):
        p = np.tanh(1 / (2 * 12.0)) * np.exp(-abs(z) / 12.0)
        assert stats.binomtest(int((noise == z).sum()), 100_000, p).pvalue > 1e-6


def test_grid_release_l1_vectors_get_steps_plus_k():
    rng = np.random.default_rng(8)
    values = np.tile([0.2, 0.3, 0.5], (100_000, 1))
    released = grid_laplace_release(values, 0.1, 1.0, rng, steps=10, l1_axis=1)
    noise = np.rint(released / 0.01) - np.rint(values / 0.01)
    scale = (10 + 3) / 1.0
    for k in range(3):
        p = np.tanh(1 / (2 * scale))
        assert stats.binomtest(int((noise[:, k] == 0).sum()), 100_000, p).pvalue > 1e-6


def test_grid_rounding_argument_holds_for_worst_case_neighbours():
    # Values moving by exactly the sensitivity, at every offset against the grid:
    # the indices never move by more than steps + 1, whatever the float rounding.
    rng = np.random.default_rng(9)
    for sensitivity in (1 / 3, 0.05, 7.3, 1e-7):
        steps = 1000
        grid = sensitivity / steps
        a = rng.uniform(-5, 5, size=20_000) * sensitivity
        b = a + sensitivity * rng.choice([-1.0, 1.0], size=a.size)
        moved = np.abs(np.rint(a / grid) - np.rint(b / grid))
        assert moved.max() <= steps + 1


def test_grid_release_neighbour_ratio_bounded_by_epsilon():
    # Index laws of neighbours (indices at most steps + 1 apart): ratio <= e^eps.
    steps, epsilon = 4, 1.0
    scale = (steps + 1) / epsilon
    outs = np.arange(-80, 81)
    for ka, kb in [(0, 5), (3, -2), (10, 10)]:
        la = -np.abs(outs - ka) / scale
        lb = -np.abs(outs - kb) / scale
        assert np.max(np.abs(la - lb)) <= epsilon + 1e-12


@pytest.mark.parametrize("bad", [0.0, -1.0, np.nan, np.inf])
def test_grid_release_rejects_bad_scales(bad):
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="sensitivity"):
        grid_laplace_release([0.0], bad, 1.0, rng)
    with pytest.raises(ValueError, match="too large"):
        grid_laplace_release([1e300], 1e-10, 1.0, rng)
    with pytest.raises(ValueError, match="scale"):
        discrete_laplace_noise(bad, rng, size=3)


def test_laplace_positive_proba_closed_form_and_monte_carlo():
    from skprivpred.mechanisms import laplace_positive_proba

    b = 0.3
    assert laplace_positive_proba(0.0, b) == pytest.approx(0.5)
    assert laplace_positive_proba(0.6, b) == pytest.approx(1 - 0.5 * np.exp(-2.0), rel=1e-15)
    assert laplace_positive_proba(-0.6, b) == pytest.approx(0.5 * np.exp(-2.0), rel=1e-15)
    # the DP ratio when a moves by the sensitivity b * eps is at most e^eps (tight in the tails)
    a = np.linspace(-3, 3, 601)
    eps = 0.7
    p, q = laplace_positive_proba(a, b), laplace_positive_proba(a + b * eps, b)
    assert np.max(np.abs(np.log(p) - np.log(q))) <= eps + 1e-12
    p0, q0 = (
        laplace_positive_proba(-a, b),
        laplace_positive_proba(-a - b * eps, b),
    )  # exact complements
    np.testing.assert_allclose(p + p0, 1.0, rtol=1e-15)
    assert np.max(np.abs(np.log(p0) - np.log(q0))) <= eps + 1e-12
    rng = np.random.default_rng(SEED)
    n = 200_000
    for shift in (-0.4, 0.1):
        hits = int((shift + rng.laplace(scale=b, size=n) > 0).sum())
        assert (
            stats.binomtest(hits, n, float(laplace_positive_proba(shift, b))).pvalue > FALSE_ALARM
        )


# -- discrete Gaussian ----------------------------------------------------------------
def test_discrete_gaussian_exact_law():
    from skprivpred.mechanisms import discrete_gaussian_noise

    sigma, n = 1.7, 200_000
    noise = discrete_gaussian_noise(sigma, np.random.default_rng(SEED), size=n)
    support = np.arange(-80, 81)
    weights = np.exp(-(support**2) / (2 * sigma**2))
    weights /= weights.sum()
    for z in (-3, 0, 1, 4):
        assert (
            stats.binomtest(int((noise == z).sum()), n, weights[support == z][0]).pvalue
            > FALSE_ALARM
        )


def test_discrete_gaussian_delta_is_the_hockey_stick_divergence():
    from skprivpred.mechanisms import discrete_gaussian_delta, discrete_gaussian_sigma2

    sigma, eps = 2.5, 0.8
    # the law the sampler draws: sigma^2 rounded up (by less than 2**-19 relative)
    sigma2 = float(discrete_gaussian_sigma2(sigma))
    assert sigma**2 <= sigma2 < sigma**2 * (1 + 2**-19)
    support = np.arange(-200, 201)
    p = np.exp(-(support**2) / (2 * sigma2))
    p /= p.sum()
    for shift in (1, 2, 5):
        q = np.exp(-((support - shift) ** 2) / (2 * sigma2))
        q /= q.sum()
        brute = np.sum(np.maximum(0, q - np.exp(eps) * p))  # the other direction, by symmetry
        assert discrete_gaussian_delta(sigma, shift, eps) == pytest.approx(
            brute, rel=1e-9, abs=1e-300
        )
    deltas = [discrete_gaussian_delta(sigma, k, eps) for k in range(1, 8)]
    assert all(a < b for a, b in zip(deltas, deltas[1:]))  # a larger shift costs more


@pytest.mark.parametrize("shift, eps, delta", [(1, 1.0, 1e-5), (11, 0.5, 1e-6), (1001, 2.0, 1e-8)])
def test_discrete_gaussian_sigma_is_the_smallest_valid_scale(shift, eps, delta):
    from skprivpred.mechanisms import discrete_gaussian_delta, discrete_gaussian_sigma

    sigma = discrete_gaussian_sigma(shift, eps, delta)
    assert discrete_gaussian_delta(sigma, shift, eps) <= delta
    assert discrete_gaussian_delta(0.999 * sigma, shift, eps) > delta
    # close to the continuous Gaussian's exact calibration for large shifts
    if shift > 100:
        assert sigma == pytest.approx(
            gaussian_sigma(shift, eps, delta, method="analytic"), rel=1e-3
        )


def test_grid_gaussian_release_is_on_the_grid():
    from skprivpred.mechanisms import discrete_gaussian_sigma, grid_gaussian_release

    rng = np.random.default_rng(SEED)
    out = grid_gaussian_release(np.full(50_000, 0.3), 0.02, 1.0, 1e-5, rng, steps=100)
    steps = out / 0.0002
    np.testing.assert_allclose(steps, np.rint(steps), atol=1e-6)
    sigma = discrete_gaussian_sigma(101, 1.0, 1e-5) * 0.0002
    assert np.std(out) == pytest.approx(sigma, rel=0.02)
