"""The exact integer samplers of ``mechanisms`` (Canonne, Kamath & Steinke 2020; issue 38, item 10).

* The laws of ``discrete_gaussian_noise`` and ``discrete_laplace_noise`` against their closed
  forms: chi-square goodness of fit over the bulk at a fixed seed, with the test's power
  asserted (analytically, and by the same test rejecting a sampler whose sigma is 5 % off).
* The tail by construction: a random source held at an extreme (every ``Bernoulli(exp(-1))``
  trial of the run succeeds for a while) makes the sampler return values far beyond
  ``8 sigma``, which the float inverse CDF it replaces could never return.
* ``Bernoulli(exp(-gamma))`` exact for rational ``gamma`` by enumerating every outcome of the
  random source (each with its exact rational probability).
* Shapes, determinism under a seed, randomness only through ``rng.integers``, the Python
  integer paths beyond int64, bad input.
"""

from __future__ import annotations

import decimal
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from skprivpred.mechanisms import _exact as mechanisms
from skprivpred.mechanisms import (
    discrete_gaussian_noise,
    discrete_gaussian_sigma2,
    discrete_laplace_noise,
    discrete_laplace_scale,
)

SEED = 20260
#: False-alarm rate of every goodness-of-fit test here (a fixed seed: the draw is fixed).
ALPHA = 1e-3
FACT20 = math.factorial(20)


# -- helpers ------------------------------------------------------------------------------------
def _gaussian_pmf(support: np.ndarray, sigma2: float) -> np.ndarray:
    """Closed-form discrete Gaussian law on ``support`` (normalised over +-60 sigma)."""
    half = int(60 * math.sqrt(sigma2)) + 2
    full = np.arange(-half, half + 1)
    log_w = -(full.astype(float) ** 2) / (2 * sigma2)
    log_z = np.logaddexp.reduce(log_w)
    return np.exp(-(support.astype(float) ** 2) / (2 * sigma2) - log_z)


def _laplace_pmf(z: np.ndarray, scale: float) -> np.ndarray:
    return np.tanh(1 / (2 * scale)) * np.exp(-np.abs(z) / scale)


def _chi_square(counts: np.ndarray, expected_p: np.ndarray) -> float:
    """p-value of Pearson's test of ``counts`` against probabilities (summing to one)."""
    n = counts.sum()
    return float(stats.chisquare(counts, n * expected_p).pvalue)


def _binned(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Counts in the integer bins ``[edges[i], edges[i+1])``, the two tails pooled at the ends."""
    return np.bincount(np.searchsorted(edges, values, side="right"), minlength=edges.size + 1)


def _gaussian_bin_law(edges: np.ndarray, sigma2: float) -> np.ndarray:
    if sigma2 > 100:
        # Poisson summation: P(Z < e) = Phi((e - 1/2) / sigma) up to exp(-2 pi^2 sigma^2).
        cdf = stats.norm.cdf((edges - 0.5) / math.sqrt(sigma2))
        return np.concatenate(
            [[cdf[0]], np.diff(cdf), [stats.norm.sf((edges[-1] - 0.5) / math.sqrt(sigma2))]]
        )
    half = int(60 * math.sqrt(sigma2)) + 2
    full = np.arange(-half, half + 1)
    p = _gaussian_pmf(full, sigma2)
    cdf = np.concatenate([[0.0], np.cumsum(p)])
    at = np.searchsorted(full, edges)  # P(Z < edge) = cdf[at]
    inner = np.diff(cdf[at])
    return np.concatenate([[cdf[at[0]]], inner, [1.0 - cdf[at[-1]]]])


def _gof_gaussian(values: np.ndarray, sigma: float) -> float:
    sigma2 = float(discrete_gaussian_sigma2(sigma))
    width = max(1, int(round(sigma / 4)))
    edges = np.arange(-int(3 * sigma) // width, int(3 * sigma) // width + 2) * width
    return _chi_square(_binned(values, edges), _gaussian_bin_law(edges, sigma2))


def _power(expected_p: np.ndarray, alternative_p: np.ndarray, n: int) -> float:
    """Power of Pearson's test at level ALPHA against ``alternative_p`` (noncentral chi-square)."""
    df = expected_p.size - 1
    noncentrality = n * np.sum((alternative_p - expected_p) ** 2 / expected_p)
    critical = stats.chi2.ppf(1 - ALPHA, df)
    return float(stats.ncx2.sf(critical, df, noncentrality))


class IntegersOnly:
    """A random source offering only ``integers`` (proves nothing else is drawn)."""

    def __init__(self, seed: int) -> None:
        self._rng = np.random.default_rng(seed)
        self.calls = 0

    def integers(self, low, high=None, size=None, dtype=np.int64):
        self.calls += 1
        return self._rng.integers(low, high, size=size, dtype=dtype)


#: A uniform digit of the geometric's inversion, and the 64-bit words that carry them.
DIGIT = 2**31
WORD = 2**64


class ExtremeBits:
    """A random source held at an extreme: the bits that make each value as large as it can be.

    ``integers(0, high, size)`` answers elementwise:

    * ``high == 2**64`` (the discrete Laplace's 64-bit words: a sign bit and 31-bit digits of
      uniform reals) and ``high == 2**31`` (a further digit): 0 for the first ``extreme``
      such calls, which puts every uniform real below every threshold of the inversion (the
      largest count at every level, a positive sign, and the last level continued past its
      table), then digits of one half (``V = 1/2``);
    * ``high == 20!`` (one ``Bernoulli(exp(-1))``: its series' trials ``A_2 .. A_20``): ``20!/2 -
      1``, which stops the series at ``K = 3``, a success;
    * any other bound: ``high - 1``, which makes every ``Bernoulli(f)`` trial with ``f < 1``
      fail, so every ``Bernoulli(exp(-f))`` of a fractional ``f`` succeeds at ``K = 1``: every
      discrete Gaussian candidate is accepted.

    ``random()`` answers the largest double below one: the extreme of a float inverse CDF (the
    sampler this one replaced drew one such uniform per value).
    """

    def __init__(self, extreme: int) -> None:
        self.extreme = extreme
        self.digit_calls = 0

    def integers(self, low, high=None, size=None, dtype=np.int64):
        if high in (WORD, DIGIT):
            self.digit_calls += 1
            half = DIGIT // 2
            value = 0 if self.digit_calls <= self.extreme else half
            if high == WORD:
                value = value * DIGIT + value  # the two 31-bit digits of a word, sign bit 0
            return np.full(() if size is None else size, value, dtype=dtype)
        high = np.broadcast_to(np.asarray(high, dtype=np.int64), () if size is None else size)
        if np.all(high == FACT20):
            return np.full(high.shape, FACT20 // 2 - 1, dtype=np.int64)
        return (high - 1).astype(np.int64)

    def random(self, size=None):
        return np.full(() if size is None else size, 1.0 - 2.0**-53)


def _extreme_value(scale) -> int:
    """What :class:`ExtremeBits` with ``extreme=2`` makes of the discrete Laplace at ``scale``.

    The first call (the words) puts every level's digit at 0: each truncated level counts
    ``M - 1``, the last level ties with its final threshold (0); the second call (a further
    digit, 0) resolves the tie below it, so the last level passes its whole table of ``L``
    thresholds and continues; the continuation's digit is one half, which counts the
    thresholds above ``2**30``. The value is ``sum (M_i - 1) prod_{j<i} M_j + prod M_j (L +
    that count)``.
    """
    s, t = mechanisms._laplace_params(mechanisms._exact_fraction(scale, "scale"))
    levels = mechanisms._levels(Fraction(s, t))
    value, weight = 0, 1
    for level in levels[:-1]:
        value += weight * (level.radix - 1)
        weight *= level.radix
    last = levels[-1].thresholds
    return value + weight * (last.size + int(np.sum(last > DIGIT // 2)))


# -- the law ------------------------------------------------------------------------------------
@pytest.mark.parametrize("sigma", [0.8, 2.5, 40.3, 1000.0, 3.3e6])
def test_discrete_gaussian_matches_its_pmf_and_the_test_has_power(sigma):
    n = 200_000
    values = discrete_gaussian_noise(sigma, np.random.default_rng(SEED), size=n)
    assert values.dtype == np.int64 and values.shape == (n,)
    assert _gof_gaussian(values, sigma) > ALPHA
    # Power: the same test rejects a sampler whose sigma is 5 % too large ...
    off = discrete_gaussian_noise(1.05 * sigma, np.random.default_rng(SEED + 1), size=n)
    assert _gof_gaussian(off, sigma) < ALPHA
    # ... and its power against that alternative, computed, is essentially one.
    sigma2 = float(discrete_gaussian_sigma2(sigma))
    width = max(1, int(round(sigma / 4)))
    edges = np.arange(-int(3 * sigma) // width, int(3 * sigma) // width + 2) * width
    p0 = _gaussian_bin_law(edges, sigma2)
    p1 = _gaussian_bin_law(edges, sigma2 * 1.05**2)
    assert _power(p0, p1, n) > 0.999


def test_discrete_gaussian_beyond_the_int64_path_is_still_its_law():
    sigma = 3.0e8  # t > 2**28: every value is drawn in Python integers
    assert math.floor(sigma) + 1 > mechanisms._MAX_VECTOR_SCALE
    values = discrete_gaussian_noise(sigma, np.random.default_rng(SEED), size=1500)
    edges = np.arange(-3, 4) * (sigma / 2)
    counts = _binned(values, edges)
    law = np.diff(stats.norm.cdf(np.concatenate([[-np.inf], edges, [np.inf]]) / sigma))
    assert _chi_square(counts, law) > ALPHA


@pytest.mark.parametrize("scale", [0.5, 2.0, 7.3, Fraction(1001, 1), 1001 / 0.3])
def test_discrete_laplace_matches_its_pmf_and_the_test_has_power(scale):
    n = 200_000
    values = discrete_laplace_noise(scale, np.random.default_rng(SEED), size=n)
    assert values.dtype == np.int64 and values.shape == (n,)
    drawn = float(discrete_laplace_scale(scale))
    assert float(scale) <= drawn < float(scale) * (1 + 2**-20)
    half = max(4, int(3 * drawn))
    width = max(1, half // 12)
    edges = np.arange(-half // width, half // width + 2) * width
    full = np.arange(-40 * half, 40 * half + 1)

    def bin_law(b):
        cdf = np.concatenate([[0.0], np.cumsum(_laplace_pmf(full, b))])
        at = np.searchsorted(full, edges)
        return np.concatenate([[cdf[at[0]]], np.diff(cdf[at]), [1.0 - cdf[at[-1]]]])

    p0 = bin_law(drawn)
    assert _chi_square(_binned(values, edges), p0) > ALPHA
    off = discrete_laplace_noise(1.05 * float(scale), np.random.default_rng(SEED + 1), size=n)
    assert _chi_square(_binned(off, edges), p0) < ALPHA
    assert _power(p0, bin_law(1.05 * drawn), n) > 0.999


def test_discrete_laplace_per_value_scales():
    rng = np.random.default_rng(SEED)
    scales = np.array([[0.7, 3.0]] * 100_000)
    values = discrete_laplace_noise(scales, rng)
    assert values.shape == scales.shape
    for k, scale in enumerate((0.7, 3.0)):
        for z in (-1, 0, 2):
            p = _laplace_pmf(np.array(z), float(discrete_laplace_scale(scale)))
            assert stats.binomtest(int((values[:, k] == z).sum()), 100_000, float(p)).pvalue > ALPHA


# -- the tail, by construction --------------------------------------------------------------------
@pytest.mark.parametrize("sigma", [1000.0, 37.5])
def test_a_source_held_at_the_extreme_gives_values_far_beyond_eight_sigma(sigma):
    # The candidate is the discrete Laplace at scale t = floor(sigma) + 1 held at its extreme
    # (about 23 sigma), and the source makes every Bernoulli(exp(-gamma)) accept it.
    values = discrete_gaussian_noise(sigma, ExtremeBits(extreme=2), size=5)
    t = math.floor(sigma) + 1
    assert np.all(values == _extreme_value(t))
    assert values.min() > 17 * sigma  # the float inverse CDF never went past about 8 sigma


def test_the_laplace_tail_by_construction():
    scale = Fraction(1001)
    values = discrete_laplace_noise(scale, ExtremeBits(extreme=2), size=3)
    s = 2 ** (22 - 10)  # the power of two of discrete_laplace_scale for 1001
    assert discrete_laplace_scale(scale) == Fraction(1001 * s, s)
    assert np.all(values == _extreme_value(scale))
    assert values.min() > 20 * 1001


def test_the_extreme_has_positive_probability_under_the_exact_law():
    # The value the scripted source produced is an integer of positive probability, about
    # e^-260 at 23 sigma: the old sampler gave it (and all beyond about 7.7 sigma) none.
    sigma2 = float(discrete_gaussian_sigma2(1000.0))
    z = _extreme_value(1001)
    log_p = -(z**2) / (2 * sigma2) - math.log(math.sqrt(2 * math.pi * sigma2))
    assert -400 < log_p < -100


# -- the geometric's inversion: its thresholds, its ties, its float guess ----------------------
def _oracle_threshold(gamma: Fraction, radix, r: int, bits: int = 31) -> int:
    """``floor(c_r 2**bits)`` from the decimal module at 90 digits (an independent computation)."""
    context = decimal.Context(prec=90)
    g = context.divide(decimal.Decimal(gamma.numerator), decimal.Decimal(gamma.denominator))
    c = context.exp(-g * r)
    if radix is not None:
        p_m = context.exp(-g * radix)
        c = context.divide(c - p_m, 1 - p_m)
    return int(
        context.multiply(c, decimal.Decimal(2) ** bits).to_integral_value(decimal.ROUND_FLOOR)
    )


@pytest.mark.parametrize("scale", [0.3, 2.0, 7.3, 1001.0, 1001 / 0.3, 3.3e6, 1e9])
def test_every_threshold_is_the_exact_floor(scale):
    s, t = mechanisms._laplace_params(mechanisms._exact_fraction(scale, "scale"))
    levels = mechanisms._levels(Fraction(s, t))
    assert levels[-1].radix is None and all(level.radix for level in levels[:-1])
    for level in levels:
        want = [
            _oracle_threshold(level.gamma, level.radix, r)
            for r in range(1, level.thresholds.size + 1)
        ]
        assert level.thresholds.tolist() == want
    # the last table ends at the first threshold below one digit's resolution
    assert levels[-1].thresholds[-1] == 0 and np.all(levels[-1].thresholds[:-1] > 0)


def test_a_tie_with_a_threshold_is_decided_by_the_next_digit():
    level = mechanisms._levels(Fraction(1, 1001))[0]  # M = 512
    for r in (1, 17, 300, 511):
        digit = int(level.thresholds[r - 1])
        following = _oracle_threshold(level.gamma, level.radix, r, bits=62) - digit * DIGIT
        assert 0 < following < DIGIT - 1
        below = level.counts(np.array([digit]), _Replay([(following - 1, DIGIT)]))
        above = level.counts(np.array([digit]), _Replay([(following + 1, DIGIT)]))
        assert below[0] == r and above[0] == r - 1  # V < c_r, then V > c_r


def test_repeated_thresholds_at_the_end_of_the_last_table_are_each_decided():
    level = mechanisms._levels(Fraction(127, 250))[-1]  # ratio exp(-0.508): ... 3, 1, 1, 0
    ones = np.flatnonzero(level.thresholds == 1)
    assert ones.size >= 2
    # A first digit 1 ties with every threshold equal to 1; a next digit of 0 is below them
    # all when each c_r 2**62 lies above 2**31 (the first digit's cell begins there).
    counts = level.counts(np.array([1]), _Replay([(0, DIGIT)]))
    assert counts[0] == ones[-1] + 1
    last = _oracle_threshold(level.gamma, None, int(ones[0]) + 1, bits=62) - DIGIT
    counts = level.counts(np.array([1]), _Replay([(last + 1, DIGIT)]))
    assert counts[0] == ones[0]


@pytest.mark.parametrize("gamma", [Fraction(1, 1001), Fraction(512, 1001), Fraction(3, 2)])
def test_the_float_guess_never_decides(gamma, monkeypatch):
    drawn = np.random.default_rng(SEED).integers(0, DIGIT, size=20_000)
    for level in mechanisms._levels(gamma):
        # digits that tie with no threshold (a tie draws further digits), the extremes among them
        extremes = [2**k + 1 for k in range(31)] + [DIGIT - 1]
        digits = np.concatenate([drawn, extremes])
        digits = digits[~np.isin(digits, level.thresholds)]
        ascending = level.thresholds[::-1]
        # the count from its definition, #{r : threshold_r > digit}
        want = ascending.size - np.searchsorted(ascending, digits, side="right")
        np.testing.assert_array_equal(level.counts(digits, None), want)
        monkeypatch.setattr(level, "_gamma", level._gamma * 1.7)  # a float guess far off
        np.testing.assert_array_equal(level.counts(digits, None), want)
        monkeypatch.undo()


# -- Bernoulli(exp(-gamma)) by exact enumeration -----------------------------------------------
class _NeedChoice(Exception):
    pass


class _Replay:
    """Answers ``integers`` from a script; asks for a branch when the script runs out."""

    def __init__(self, script):
        self.script = script
        self.position = 0

    def integers(self, low, high=None, size=None):
        high = np.broadcast_to(np.asarray(high, dtype=np.int64), () if size is None else size)
        out = np.empty(high.shape, dtype=np.int64)
        for index in np.ndindex(high.shape):
            if self.position == len(self.script):
                raise _NeedChoice(int(high[index]))
            value, bound = self.script[self.position]
            assert bound == int(high[index])
            out[index] = value
            self.position += 1
        return out


def _classes(high: int, small: int):
    """Outcomes of ``integers(0, high)`` with their exact probabilities.

    Bounds up to ``small``: every value. Larger bounds are the series' chains (a product of
    consecutive integers, or 20!): the code compares the uniform with the chain's thresholds
    ``P / (k (k + 1) ... K)``, recomputed here from their definition; between two thresholds
    every value is the same outcome, so one value per interval stands for it.
    """
    if high <= small:
        return [(v, Fraction(1, high)) for v in range(high)]
    for first in range(1, 60):
        for count in range(1, 20):
            if math.prod(range(first, first + count)) == high:
                cuts, running = [0], high
                for k in range(first, first + count):
                    running //= k
                    cuts.append(running)
                bounds = sorted(set(cuts + [high]))
                return [(a, Fraction(b - a, high)) for a, b in zip(bounds, bounds[1:])]
    raise AssertionError(f"unexpected bound {high}")


def _enumerate(func, small: int, floor: Fraction):
    """Exact probability that ``func(rng)`` is true, and the mass left unexplored (< floor)."""
    true_mass, unexplored = Fraction(0), Fraction(0)
    stack = [([], Fraction(1))]
    while stack:
        script, mass = stack.pop()
        try:
            result = func(_Replay(script))
        except _NeedChoice as need:
            if mass < floor:
                unexplored += mass
                continue
            for value, p in _classes(need.args[0], small):
                stack.append((script + [(value, need.args[0])], mass * p))
            continue
        true_mass += mass * bool(result)
    return true_mass, unexplored


def test_bernoulli_exp_minus_one_is_exact():
    floor = Fraction(1, 10**13)
    p, unexplored = _enumerate(
        lambda rng: mechanisms._bernoulli_exp_minus_one(1, rng)[0], 30, floor
    )
    # exact series: sum over odd stops K of 1/(K-1)! - 1/K!
    series = sum(
        Fraction(1, math.factorial(k - 1)) - Fraction(1, math.factorial(k)) for k in range(3, 40, 2)
    )
    assert abs(p - series) <= unexplored
    assert abs(float(p) - math.exp(-1)) <= float(unexplored) + 1e-16
    assert unexplored < Fraction(1, 10**12)


@pytest.mark.parametrize("num, lookahead", [(0, 4), (1, 4), (2, 4), (3, 4), (4, 1), (5, 1), (7, 1)])
def test_bernoulli_exp_neg_of_a_rational_is_exact(num, lookahead, monkeypatch):
    # gamma = num / 3 in [0, 7/3]. With an integer part, the enumeration runs the same code
    # drawing one Bernoulli(exp(-1)) per round (lookahead 1; four per round, every surplus
    # draw enumerated, is too many branches to explore to 1e-5 in a test's time).
    monkeypatch.setattr(mechanisms, "_LOOKAHEAD", lookahead)
    den = 3
    floor = Fraction(1, 10**8)

    def draw(rng):
        return mechanisms._bernoulli_exp_neg(np.array([num], dtype=np.int64), den, rng)[0]

    p, unexplored = _enumerate(draw, 100, floor)
    assert abs(float(p) - math.exp(-num / den)) <= float(unexplored) + 1e-15
    assert unexplored < Fraction(1, 10**5)


def test_bernoulli_fraction_beyond_int64_is_exact():
    den = 3 * 2**70 + 1
    for num in (den // 5, den // 3, den // 2, den - 2**20):
        # scripted: the uniform's first base-2**62 digit decides unless it equals num / den's
        digit = (num * 2**62) // den
        assert 0 < digit < 2**62 - 1
        assert mechanisms._bernoulli_fraction(num, den, _Replay([(digit - 1, 2**62)]))
        assert not mechanisms._bernoulli_fraction(num, den, _Replay([(digit + 1, 2**62)]))
        # equal first digits: the next digit decides
        nxt = ((num * 2**62) % den * 2**62) // den
        tie = [(digit, 2**62), (max(nxt - 1, 0), 2**62)]
        assert mechanisms._bernoulli_fraction(num, den, _Replay(tie)) == (nxt > 0)
    rng = np.random.default_rng(SEED)
    hits = sum(mechanisms._bernoulli_fraction(den // 3, den, rng) for _ in range(20_000))
    assert stats.binomtest(hits, 20_000, 1 / 3).pvalue > ALPHA


# -- shapes, seeds, sources --------------------------------------------------------------------
@pytest.mark.parametrize("size, shape", [(None, ()), (5, (5,)), ((3, 4), (3, 4)), ((0,), (0,))])
def test_shapes(size, shape):
    rng = np.random.default_rng(SEED)
    g = discrete_gaussian_noise(12.5, rng, size=size)
    lap = discrete_laplace_noise(12.5, rng, size=size)
    assert np.shape(g) == shape and np.shape(lap) == shape
    assert np.asarray(g).dtype == np.int64 and np.asarray(lap).dtype == np.int64
    assert discrete_laplace_noise(np.full((2, 3), 4.0), rng).shape == (2, 3)


def test_determinism_under_a_seed_and_fresh_noise_otherwise():
    for sampler in (discrete_gaussian_noise, discrete_laplace_noise):
        a = sampler(321.0, np.random.default_rng(7), size=1000)
        b = sampler(321.0, np.random.default_rng(7), size=1000)
        c = sampler(321.0, np.random.default_rng(8), size=1000)
        np.testing.assert_array_equal(a, b)
        assert not np.array_equal(a, c)


def test_randomness_comes_only_from_integers():
    source = IntegersOnly(SEED)
    assert discrete_gaussian_noise(55.0, source, size=100).shape == (100,)
    assert discrete_laplace_noise(55.0, source, size=100).shape == (100,)
    assert source.calls > 0


def test_sigma2_is_rounded_up_by_little_and_is_idempotent():
    for sigma in (0.3, 1.0, 2.5, 1000.0, 12345.678, 2.0**21 + 0.5, 3.0e8):
        sigma2 = discrete_gaussian_sigma2(sigma)
        assert Fraction(sigma) ** 2 <= sigma2
        if sigma >= 1:
            assert sigma2 < Fraction(sigma) ** 2 * (1 + Fraction(1, 2**19))
        t, m, q = mechanisms._discrete_gaussian_params(sigma)
        assert sigma2 == Fraction(t * m, q) and q & (q - 1) == 0


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf"), "1", True])
def test_bad_scales_are_refused_by_name(bad):
    rng = np.random.default_rng(0)
    with pytest.raises((ValueError, TypeError), match="sigma"):
        discrete_gaussian_noise(bad, rng, size=3)
    with pytest.raises((ValueError, TypeError), match="scale"):
        discrete_laplace_scale(bad)


def test_grid_gaussian_release_uses_the_exact_sampler():
    # Driven by the extreme source, the grid release itself leaves the float sampler's range.
    out = mechanisms.grid_gaussian_release(
        np.zeros(3), 1.0, 1.0, 1e-6, ExtremeBits(extreme=2), steps=10
    )
    sigma = mechanisms.discrete_gaussian_sigma(11, 1.0, 1e-6)
    assert np.all(out / 0.1 > 17 * sigma)
