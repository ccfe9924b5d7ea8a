"""Exact discrete samplers: no floating-point noise ever leaves them.

The discrete Laplace and discrete Gaussian samplers (exact Bernoulli draws on
rationals), their calibrations, the grid releases built on them and the snapping of
released coefficients to a public grid.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache
from numbers import Integral
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import logsumexp

from ..exceptions import InvalidParameterError
from ._closed_forms import _analytic_gaussian_unit_sigma
from ._teacher_count import _in_open_unit, _positive

__all__ = [
    "discrete_gaussian_delta",
    "discrete_gaussian_noise",
    "discrete_gaussian_sigma",
    "discrete_gaussian_sigma2",
    "discrete_laplace_noise",
    "discrete_laplace_scale",
    "grid_gaussian_release",
    "grid_laplace_release",
    "snap_coefficients",
]


# Grid steps per unit of sensitivity of the grid releases: the noise is 0.1% wider
# than without rounding.
DEFAULT_GRID_STEPS = 1000
_MAX_GRID_INDEX = 2.0**50


#: Bound kept by every int64 intermediate of the vectorised samplers.
_INT64_LIMIT = 2**63 - 1
#: Largest integer scale ``t`` the vectorised discrete Gaussian takes; above it, Python integers.
_MAX_VECTOR_SCALE = 2**28
#: ``sigma^2`` is rounded up to a multiple of ``t / q``, ``q`` the power of two putting
#: ``q t`` in ``[2**21, 2**22)`` (``q = 1`` once ``t >= 2**21``): see ``_discrete_gaussian_params``.
_ROUNDING_BITS = 22
#: About the share of discrete Gaussian candidates kept (it only sizes the batches).
_GAUSSIAN_ACCEPTANCE = 0.6


def _exact_fraction(value: Any, name: str) -> Fraction:
    """``value`` as an exact positive finite rational (a float is the dyadic it holds)."""
    if isinstance(value, Fraction):
        exact = value
    elif isinstance(value, Integral) and not isinstance(value, bool):
        exact = Fraction(int(value))
    else:
        exact = Fraction(_positive(value, name))
    if exact <= 0:
        raise InvalidParameterError(f"{name} must be > 0, got {value!r}.")
    return exact


def _bernoulli_fraction(num: int, den: int, rng: np.random.Generator) -> bool:
    """Exact ``Bernoulli(num / den)`` for Python integers ``0 <= num <= den``, any size.

    Below ``2**63`` one draw ``U`` in ``[0, den)`` and ``U < num``; above, the
    uniform's base-``2**62`` digits are drawn one at a time and compared with
    those of ``num / den`` until they differ (exact; two digits on average).
    """
    if den <= _INT64_LIMIT:
        return int(rng.integers(0, den)) < num
    base = 2**62
    while True:
        digit, num = divmod(num * base, den)
        u = int(rng.integers(0, base))
        if u != digit:
            return u < digit


#: Trials drawn per round of the vectorised loops (the surplus after a stop is discarded).
_LOOKAHEAD = 4


def _series_thresholds(first: int, count: int) -> tuple[int, np.ndarray]:
    """``P = first (first + 1) ... (first + count - 1)`` and ``P / (first ... K)`` for each ``K``.

    A uniform ``W`` in ``[0, P)`` gives the chain of trials ``A_K ~ Bernoulli(1 / K)``,
    ``K = first, ..., first + count - 1``, through nested events: ``A_first = ... = A_K
    = 1`` exactly when ``W < P / (first ... K)``, which has probability ``1 / (first
    ... K)``, so that given the earlier successes ``A_K = 1`` with probability ``1 / K``,
    as the series needs. The thresholds are returned in increasing order.
    """
    total = math.prod(range(first, first + count))
    thresholds, running = [], total
    for k in range(first, first + count):
        running //= k
        thresholds.append(running)
    return total, np.array(thresholds[::-1], dtype=np.int64)


#: ``Bernoulli(exp(-1))``: trials ``A_2 .. A_20`` from one uniform below ``20!`` (< 2**63).
_E1_DRAW, _E1_THRESHOLDS = _series_thresholds(2, 19)


def _chain_length(w: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """How many trials of the chain of :func:`_series_thresholds` succeed, given ``W``."""
    return thresholds.size - np.searchsorted(thresholds, w, side="right")


def _bernoulli_exp_minus_one(shape: int | tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Exact ``Bernoulli(exp(-1))`` draws: CKS Algorithm 1 with ``gamma = 1``.

    The series ``A_K ~ Bernoulli(1 / K)``, ``K = 1, 2, ...``, stops at the first
    ``A_K = 0`` and answers 1 when that ``K`` is odd: ``P = sum_{K odd} (1/(K-1)! -
    1/K!) = e^{-1}``. ``A_1 = 1`` surely; ``A_2, ..., A_20`` come from one uniform
    ``U = rng.integers(0, 20!)`` (:func:`_series_thresholds`: ``A_2 = ... = A_K = 1``
    exactly when ``U < 20! / K!``), an integer comparison per trial. If all twenty
    succeed (``U = 0``, probability ``1 / 20!``), the series goes on with ``A_K =
    [rng.integers(0, K) = 0]``, ``K = 21, 22, ...``.
    """
    u = rng.integers(0, _E1_DRAW, size=shape)
    flat = u.reshape(-1)
    # Most draws stop at K = 2 (U >= 20!/2, failure) or K = 3 (success): two comparisons.
    result = (flat < _E1_THRESHOLDS[-1]) & (flat >= _E1_THRESHOLDS[-2])
    deep = np.flatnonzero(flat < _E1_THRESHOLDS[-2])
    if deep.size:
        succeeded = _chain_length(flat[deep], _E1_THRESHOLDS)  # A_2 .. A_{1 + succeeded} = 1
        for j in np.flatnonzero(succeeded == _E1_THRESHOLDS.size):
            k = 21  # never in practice (U = 0): continue the series one trial at a time
            while int(rng.integers(0, k)) == 0:
                k += 1
            succeeded[j] = k - 2
        result[deep] = (succeeded & 1).astype(bool)  # stop at K = 2 + succeeded: odd K wins
    return result.reshape(u.shape)


def _bernoulli_exp_neg(num: np.ndarray, den: int, rng: np.random.Generator) -> np.ndarray:
    """Exact ``Bernoulli(exp(-num / den))`` per entry of ``num`` (int64 ``>= 0``, ``den < 2**63``).

    CKS Algorithm 1: ``floor(gamma)`` draws of ``Bernoulli(exp(-1))``, all of
    which must succeed, then the series for the remainder ``f = gamma -
    floor(gamma) in [0, 1)``: ``A_K ~ Bernoulli(f / K)`` until the first ``A_K =
    0``; success when that ``K`` is odd. ``Bernoulli(f / K)`` is one draw,
    ``rng.integers(0, den K) < num % den``, while ``den K`` fits in int64
    (else ``Bernoulli(f)`` and ``Bernoulli(1 / K)``, ``rng.integers(0, K) ==
    0``). Vectorised: each round draws for the entries still undecided
    (``_LOOKAHEAD`` trials at a time for the integer part; the surplus after
    an entry's stop is discarded, which leaves the law unchanged).
    """
    whole, frac = np.divmod(num, den)
    ok = np.ones(num.shape[0], dtype=bool)
    active = np.flatnonzero(whole > 0)
    left = whole[active]
    while active.size:
        success = _bernoulli_exp_minus_one((active.size, _LOOKAHEAD), rng)
        needed = np.arange(_LOOKAHEAD) < left[:, None]
        failed = (needed & ~success).any(axis=1)
        ok[active[failed]] = False
        left = left - _LOOKAHEAD
        keep = ~failed & (left > 0)
        active, left = active[keep], left[keep]
    active = np.flatnonzero(ok & (frac > 0))  # f = 0: A_1 = 0 surely, K = 1, success
    if active.size:  # A_1 ~ Bernoulli(f) alone first: most entries stop there (K = 1, success)
        going = rng.integers(0, den, size=active.size) < frac[active]
        active = active[going]
    k = 2
    while active.size:
        if den * k <= _INT64_LIMIT:  # Bernoulli(f / K) as one draw below den K
            trial = rng.integers(0, den * k, size=active.size) < frac[active]
        else:  # Bernoulli(f) and Bernoulli(1 / K)
            trial = rng.integers(0, den, size=active.size) < frac[active]
            trial &= rng.integers(0, k, size=active.size) == 0
        ok[active[~trial]] = bool(k & 1)
        active = active[trial]
        k += 1
    return ok


def _py_bernoulli_exp_neg(num: int, den: int, rng: np.random.Generator) -> bool:
    """:func:`_bernoulli_exp_neg` for one value in Python integers (any size)."""
    whole, frac = divmod(num, den)
    for _ in range(whole):
        if not _bernoulli_exp_minus_one(1, rng)[0]:
            return False
    k = 1
    while frac:
        trial = _bernoulli_fraction(frac, den, rng)
        if trial and k > 1:
            trial = int(rng.integers(0, k)) == 0
        if not trial:
            return bool(k & 1)
        k += 1
    return True


# -- the geometric law by inversion, its thresholds computed exactly -----------------------------
#: One digit of a uniform real in ``[0, 1)``: 31 bits (two per 64-bit word of
#: ``rng.integers(0, 2**64)``; a further digit, when a tie needs it, ``rng.integers(0, 2**31)``).
_DIGIT_BITS = 31
_DIGIT = 2**_DIGIT_BITS
#: Largest radix of one digit level of the geometric sampler (its table's length).
_MAX_RADIX = 2**12
#: Fixed-point bits of the interval arithmetic that builds the tables.
_TABLE_BITS = 128


def _exp_neg_bounds(x: Fraction, bits: int) -> tuple[int, int]:
    """Integers ``lo <= exp(-x) 2**bits <= hi`` for a rational ``x >= 0``, ``hi - lo`` small.

    ``exp(-x) = exp(-y)**n`` with ``y = x / n <= 1``: the alternating series of
    ``exp(-y)``, whose terms decrease, lies between consecutive partial sums; the
    bounds are raised to the ``n``-th power by squaring, rounding the lower one down
    and the upper one up at ``bits + 2 bit_length(n) + 8`` bits, then shifted to ``bits``.
    """
    n = max(1, math.ceil(x))
    y = x / n
    work = bits + 2 * n.bit_length() + 8
    partial, term, k = Fraction(1), Fraction(1), 0
    while True:
        k += 1
        term = term * y / k
        following = partial - term if k % 2 else partial + term
        if term * 2 ** (work + 2) < 1:
            break
        partial = following
    low_sum, high_sum = sorted((partial, following))
    lo = math.floor(low_sum * 2**work)
    hi = math.ceil(high_sum * 2**work)
    lo_pow, hi_pow, base_lo, base_hi, e = 2**work, 2**work, lo, hi, n
    while e:
        if e & 1:
            lo_pow = (lo_pow * base_lo) >> work
            hi_pow = -((-hi_pow * base_hi) >> work)
        e >>= 1
        if e:
            base_lo = (base_lo * base_lo) >> work
            base_hi = -((-base_hi * base_hi) >> work)
    shift = work - bits
    return lo_pow >> shift, -((-hi_pow) >> shift)


def _threshold_bounds(gamma: Fraction, radix: int | None, r: int, bits: int) -> tuple[int, int]:
    """Floors of ``2**bits`` times bounds on ``c_r``, a level's ``P(count >= r)``.

    A truncated level (``radix`` ``M``): ``c_r = (p^r - p^M) / (1 - p^M)`` with ``p =
    exp(-gamma)``; the last level (``radix`` None): ``c_r = p^r``.
    """
    work = bits + 16
    power = None if radix is None else _exp_neg_bounds(gamma * radix, work)
    return _threshold_floors(*_exp_neg_bounds(gamma * r, work), power, work, bits)


def _threshold_floors(lo_r: int, hi_r: int, power, work: int, bits: int) -> tuple[int, int]:
    """Floors of ``2**bits`` times a lower and an upper bound on ``c_r``.

    From integer bounds ``lo_r <= p^r 2**work <= hi_r`` and, for a truncated level,
    ``power = (lo_M, hi_M)`` bounding ``p^M 2**work`` (``None`` for the last level).
    """
    if power is None:
        return lo_r >> (work - bits), hi_r >> (work - bits)
    lo_m, hi_m = power
    one = 2**work
    return ((lo_r - hi_m) << bits) // (one - lo_m), ((hi_r - lo_m) << bits) // (one - hi_m)


def _threshold_floor(gamma: Fraction, radix: int | None, r: int, bits: int) -> int:
    """``floor(c_r 2**bits)`` exactly: bounds at more and more bits until their floors agree.

    ``c_r`` is irrational (``exp(-gamma)`` is transcendental for a rational ``gamma > 0``,
    Lindemann), so ``c_r 2**bits`` is never an integer and the loop ends.
    """
    extra = 16
    while True:
        lo, hi = _threshold_bounds(gamma, radix, r, bits + extra)
        if lo >> extra == hi >> extra:
            return lo >> extra
        extra *= 2


class _Level:
    """One digit of the geometric: a count by inversion of a uniform real against thresholds.

    ``thresholds[r - 1] = floor(c_r 2**31)`` for ``r = 1 .. size``, decreasing, with
    ``c_r = P(count >= r)`` (:func:`_threshold_bounds`).
    """

    def __init__(self, gamma: Fraction, radix: int | None) -> None:
        self.gamma, self.radix = gamma, radix
        p_lo, p_hi = _exp_neg_bounds(gamma, _TABLE_BITS)
        power = None if radix is None else _exp_neg_bounds(gamma * radix, _TABLE_BITS)
        floors, lo, hi, r = [], 2**_TABLE_BITS, 2**_TABLE_BITS, 0
        while radix is None or r < radix - 1:
            r += 1  # p^r's bounds from p^(r-1)'s, rounded outwards
            lo, hi = (lo * p_lo) >> _TABLE_BITS, -((-hi * p_hi) >> _TABLE_BITS)
            low, high = _threshold_floors(lo, hi, power, _TABLE_BITS, _DIGIT_BITS)
            floors.append(low if low == high else _threshold_floor(gamma, radix, r, _DIGIT_BITS))
            if radix is None and floors[-1] == 0:  # c_r < 2**-31: the table's last entry
                break
        self.thresholds = np.array(floors, dtype=np.int64)
        # The thresholds framed by r = 0 (c_0 = 1: above every digit) and one below every digit.
        self._framed = np.concatenate([[_DIGIT], self.thresholds, [-1]]).astype(np.int64)
        self._framed_next = self._framed[1:]
        self._gamma = float(gamma)
        self._floor_mass = 0.0 if radix is None else math.exp(-float(gamma * radix))

    def counts(self, digits: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """``#{r : V < c_r}`` for uniform reals ``V`` whose first base-``2**31`` digit is given.

        A digit below ``floor(c_r 2**31)`` decides ``V < c_r``, one above decides the
        contrary; one equal to it (probability ``2**-31`` per threshold) is decided by
        drawing ``V``'s further digits one at a time (:meth:`_refine`). The count is the
        ``g`` with ``thresholds[g - 1] > digit >= thresholds[g]``: a float inversion of
        the law guesses it, and integer comparisons with the thresholds move the guess
        until it holds (one step at most, in practice), so the float only chooses where
        to look and never decides.
        """
        size = self.thresholds.size
        guess = digits * (2.0**-_DIGIT_BITS * (1.0 - self._floor_mass))
        if self._floor_mass:
            guess += self._floor_mass
        with np.errstate(divide="ignore"):
            np.log(guess, out=guess)
        guess *= -1.0 / self._gamma
        np.ceil(guess, out=guess)
        np.clip(guess, 1, size + 1, out=guess)
        count = guess.astype(np.int64)
        count -= 1
        framed = self._framed
        # Off (or tied) where thresholds[count - 1] <= digit or thresholds[count] >= digit.
        off = np.flatnonzero((framed[count] <= digits) | (self._framed_next[count] >= digits))
        for i in off:  # a float guess one off, or a tie: rare
            digit, g = int(digits[i]), int(count[i])
            while framed[g] <= digit:
                g -= 1
            while framed[g + 1] > digit:
                g += 1
            count[i] = self._refine(digit, g, rng) if framed[g + 1] == digit else g
        return count

    def _refine(self, digit: int, above: int, rng: np.random.Generator) -> int:
        """The count of one uniform ``V`` whose first digit equals ``thresholds[above]``."""
        prefix, bits = digit, _DIGIT_BITS
        count = above
        while count < self.thresholds.size and self.thresholds[count] == digit:
            while True:  # is V < c_{count + 1}? compare ever longer prefixes
                target = _threshold_floor(self.gamma, self.radix, count + 1, bits)
                if prefix != target:
                    break
                prefix = (prefix << _DIGIT_BITS) | int(rng.integers(0, _DIGIT))
                bits += _DIGIT_BITS
            if prefix > target:
                return count
            count += 1
        return count


@lru_cache(maxsize=64)
def _levels(gamma: Fraction) -> tuple[_Level, ...]:
    """The digit levels of ``Geometric(exp(-gamma))``: ``G = R_0 + M_0 (R_1 + M_1 (... W))``.

    Each ``R_i`` is truncated geometric on ``[0, M_i)`` with ratio ``exp(-gamma_i)``,
    ``gamma_{i+1} = M_i gamma_i``, and ``W`` geometric with ratio ``exp(-gamma_k)``,
    ``gamma_k >= 1/2`` (so its table holds at most 44 thresholds): the digits of a
    geometric in a mixed radix are independent with exactly these laws. ``M_i`` is the
    smallest power of two with ``M_i gamma_i >= 1/2``, at most ``2**12``. Cached per
    ``gamma`` (a ``Fraction``: equal values hash alike).
    """
    levels = []
    while gamma < Fraction(1, 2):
        radix = 2
        while radix * gamma < Fraction(1, 2) and radix < _MAX_RADIX:
            radix *= 2
        levels.append(_Level(gamma, radix))
        gamma *= radix
    levels.append(_Level(gamma, None))
    return tuple(levels)


def _geometric(levels: tuple[_Level, ...], digits: list[np.ndarray], rng: np.random.Generator):
    """``Geometric(exp(-gamma))`` values (``P(G >= g) = exp(-gamma g)``) by exact inversion.

    ``levels`` are :func:`_levels` of ``gamma``; ``digits`` holds one array of uniform
    first digits per level (drawn by the caller, so that it can take other bits from
    the same words). The last level's count reaches its table's end with probability
    below ``2**-31``; there ``W`` continues with a fresh geometric of the same ratio
    (memorylessness), drawn exactly.
    """
    span = math.prod(level.radix or level.thresholds.size for level in levels)
    # Past int64 only for scales beyond about 2**55: there, exact Python integers.
    total = np.zeros(digits[0].size, dtype=np.int64 if span < 2**56 else object)
    weight = 1
    for level, digit in zip(levels, digits):
        count = level.counts(digit, rng)
        if level.radix is None:
            full = np.flatnonzero(count == level.thresholds.size)
            if full.size:  # rare (below 2**-31 per value): finished in Python integers
                total = total.astype(object)
                count = count.astype(object)
                for i in full:
                    while True:
                        more = int(level.counts(rng.integers(0, _DIGIT, size=1), rng)[0])
                        count[i] += more
                        if more < level.thresholds.size:
                            break
        total = total + weight * count
        weight *= level.radix or 1
    return total


def _laplace_candidates(levels: tuple[_Level, ...], n: int, rng: np.random.Generator):
    """``n`` candidates of the discrete Laplace whose magnitude has ``levels``: the accepted ones.

    ``G`` geometric with ratio ``exp(-s / t)`` (:func:`_geometric`, ``levels`` of
    :func:`_levels`), a fair sign ``B``, ``B = 1, G = 0`` rejected: ``Z = (1 - 2B) G`` has
    ``P(Z = z)`` proportional to ``exp(-|z| s / t)``. The bits come from 64-bit words
    ``rng.integers(0, 2**64, dtype=uint64)``: the first word's top bit is ``B``, and each
    word's bits 31 to 61 and 0 to 30 are two levels' digits.
    """
    words = rng.integers(0, 2**64, size=((len(levels) + 1) // 2, n), dtype=np.uint64)
    words = words.view(np.int64)
    negative = words[0] < 0  # the top bit
    mask = _DIGIT - 1
    digits = [half for row in words for half in ((row >> _DIGIT_BITS) & mask, row & mask)]
    g = _geometric(levels, digits, rng)
    np.negative(g, out=g, where=negative)
    return g[(g != 0) | ~negative]


@lru_cache(maxsize=64)
def _laplace_plan(s: int, t: int) -> tuple[tuple[_Level, ...], float]:
    """The magnitude's levels at scale ``t / s``, and the share of candidates kept.

    The share, ``(1 + exp(-s / t)) / 2``, only sizes the batches.
    """
    return _levels(Fraction(s, t)), (1.0 + math.exp(-s / t)) / 2.0


def _laplace_values(scale: Fraction, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` values of the discrete Laplace at ``scale`` rounded up (:func:`_laplace_params`)."""
    levels, acceptance = _laplace_plan(*_laplace_params(scale))
    return _fill(n, lambda k: _laplace_candidates(levels, k, rng), acceptance)


def _fill(n: int, draw, acceptance: float) -> np.ndarray:
    """Collect ``n`` i.i.d. values from a rejection sampler, drawing batches for the rest.

    ``acceptance`` (about the share of candidates kept) only sizes the batches.
    """
    if n == 0:
        return np.empty(0, dtype=np.int64)
    pieces, have = [], 0
    while have < n:
        # Ask for a little more than is missing, about four standard deviations: usually one
        # round; the surplus is discarded (accepted values are i.i.d., so keeping the first
        # ones keeps the law).
        expected = (n - have) / acceptance
        batch = draw(int(expected + 4 * math.sqrt(expected * (1 - acceptance) / acceptance)) + 16)
        pieces.append(batch)
        have += batch.size
    values = np.concatenate(pieces)[:n] if len(pieces) > 1 else pieces[0][:n]
    if values.dtype == object:
        try:
            values = values.astype(np.int64)
        except OverflowError:  # a value beyond 2**63 (probability below e^-60): kept exact
            pass
    return values


def _laplace_params(scale: Fraction) -> tuple[int, int]:
    """``(s, t)`` with ``t / s >= scale`` the discrete Laplace scale actually drawn.

    ``s`` is the power of two that puts ``t = ceil(scale * s)`` in
    ``[2**21, 2**22)`` (``s = 1`` for scales of ``2**21`` and more): the scale
    is rounded up by a relative ``2**-21`` at most.
    """
    s = 2 ** max(0, 22 - math.floor(scale).bit_length())
    t = math.ceil(scale * s)
    return s, t


def discrete_laplace_scale(scale: float | Fraction) -> Fraction:
    """The scale :func:`discrete_laplace_noise` draws at: ``scale`` rounded up, exactly.

    Parameters
    ----------
    scale : float or fractions.Fraction
        The requested scale, > 0.

    Returns
    -------
    fractions.Fraction
        ``t / s >= scale``, with ``s`` a power of two and ``t`` an integer
        (``t / s - scale < 2**-21 scale``). A larger scale only adds privacy:
        integer noise at scale ``t / s`` on a statistic of integer sensitivity
        ``D`` is ``D s / t``-DP, at most the ``D / scale`` asked for.

    Examples
    --------
    >>> discrete_laplace_scale(2.0)
    Fraction(2, 1)
    """
    s, t = _laplace_params(_exact_fraction(scale, "scale"))
    return Fraction(t, s)


def discrete_laplace_noise(
    scale: ArrayLike | Fraction, rng: np.random.Generator, size: int | tuple[int, ...] | None = None
) -> np.ndarray:
    """Integer noise with ``P(Z = z)`` proportional to ``exp(-|z| / scale)``, drawn exactly.

    The two-sided geometric (discrete Laplace) law at scale ``t / s``
    (:func:`discrete_laplace_scale`: the scale rounded up by a relative ``2**-21``
    at most, which only adds privacy): a geometric magnitude ``G`` with ratio
    ``exp(-s / t)``, a fair sign, ``-0`` rejected. ``G`` is drawn by inversion in a
    mixed radix, ``G = R_0 + M_0 (R_1 + ... + M_{k-1} W)``: its digits are
    independent, each ``R_i`` truncated geometric on ``[0, M_i)`` and ``W``
    geometric, and each is the count of thresholds ``c_r = P(count >= r)`` above a
    uniform real ``V``. The thresholds' first 31 bits are computed exactly once per
    scale (rational interval arithmetic on the series of ``exp``, widened until
    the floor is certain; ``c_r`` is irrational, so it always is), and ``V`` is
    compared digit by digit: a 31-bit digit of ``V`` from ``rng.integers`` decides
    against every threshold but one it equals, where ``V``'s next digits are drawn
    until they differ from those of ``c_r``. A float inversion guesses each count
    and integer comparisons correct the guess, so no floating-point number decides
    an outcome: the law is exactly the discrete Laplace, however far in the tail
    (``W`` continues past its table by memorylessness). All randomness comes from
    ``rng.integers``; vectorised in int64 over all values, at about one and a half
    times the cost of numpy's float ``geometric``. Adding it to an integer
    statistic of sensitivity ``D`` with ``scale = D / epsilon`` is
    ``epsilon``-DP, and the result is an integer (the attack of Mironov 2012 does
    not apply).

    Parameters
    ----------
    scale : float, fractions.Fraction or array-like of float
        ``D / epsilon``, > 0 (broadcast against ``size``). A float is taken as
        the exact rational it holds; pass a ``Fraction`` to state the scale
        exactly.
    rng : numpy.random.Generator
        The stream to draw from (only its ``integers`` method is called).
    size : int or tuple of int, default=None
        Output shape; ``None`` uses the shape of ``scale``.

    Returns
    -------
    ndarray of int64
        The noise.
    """
    if isinstance(scale, Fraction):  # one exact scale (the grid releases): no grouping
        shape = () if size is None else tuple(int(k) for k in np.atleast_1d(size))
        values = _laplace_values(_exact_fraction(scale, "scale"), math.prod(shape), rng)
        result = values.reshape(shape)
        return result[()] if result.ndim == 0 else result
    scales = np.asarray(scale, dtype=float)
    if not np.all(np.isfinite(scales) & (scales > 0)):
        raise ValueError("scale must be finite and > 0.")
    shape = scales.shape if size is None else tuple(int(k) for k in np.atleast_1d(size))
    flat_scales = np.broadcast_to(scales, shape).ravel()
    out: np.ndarray = np.empty(flat_scales.size, dtype=np.int64)
    if scales.ndim == 0:
        groups = [(scales[()], np.arange(flat_scales.size))]  # the common case: one scale
    elif flat_scales.size and np.all(flat_scales == flat_scales[0]):
        groups = [(flat_scales[0], np.arange(flat_scales.size))]
    else:
        groups = [(v, np.flatnonzero(flat_scales == v)) for v in np.unique(flat_scales)]
    for value, where in groups:
        values = _laplace_values(_exact_fraction(value, "scale"), where.size, rng)
        if values.dtype == object and out.dtype != object:
            out = out.astype(object)
        out[where] = values
    result = out.reshape(shape)
    return result[()] if result.ndim == 0 else result


def _discrete_gaussian_params(sigma: Any) -> tuple[int, int, int]:
    """``(t, m, q)``: the exact sampler's Laplace scale ``t`` and ``sigma'^2 = t m / q >= sigma^2``.

    ``t = floor(sigma) + 1`` (CKS Algorithm 3); ``q`` is the power of two that
    puts ``q t`` in ``[2**21, 2**22)`` (``q = 1`` for ``t >= 2**21``) and ``m =
    ceil(sigma^2 q / t)``: ``sigma^2`` is rounded *up* to the next multiple of
    ``t / q``, by less than ``t / q`` (a relative ``2**-19`` at most for
    ``sigma >= 1``, ``2**-21`` for ``sigma >= 2**21``).
    """
    exact = _exact_fraction(sigma, "sigma")
    t = math.floor(exact) + 1
    q = 2 ** max(0, _ROUNDING_BITS - t.bit_length())
    m = math.ceil(exact * exact * q / t)
    return t, m, q


def discrete_gaussian_sigma2(sigma: float | Fraction) -> Fraction:
    """The variance parameter :func:`discrete_gaussian_noise` draws at: ``sigma^2`` rounded up.

    Parameters
    ----------
    sigma : float or fractions.Fraction
        The requested scale, > 0.

    Returns
    -------
    fractions.Fraction
        ``sigma'^2 = t m / q >= sigma^2`` (``t = floor(sigma) + 1``, ``q`` a
        power of two, ``m`` an integer), less than ``t / q`` above ``sigma^2``
        (a relative ``2**-19`` at most for ``sigma >= 1``). Rounding up only
        adds privacy: the discrete Gaussian at ``sigma'^2`` on a statistic of
        L2 sensitivity ``D`` is ``D^2 / (2 sigma'^2)``-zCDP, at most the ``D^2 /
        (2 sigma^2)`` asked for; :func:`discrete_gaussian_delta` and
        :func:`discrete_gaussian_sigma` compute ``delta`` at ``sigma'^2``.

    Examples
    --------
    >>> discrete_gaussian_sigma2(2.0) - 4  # rounded up, by less than 2**-19 * 4
    Fraction(1, 524288)
    """
    t, m, q = _discrete_gaussian_params(sigma)
    return Fraction(t * m, q)


def _discrete_gaussian_candidates(t: int, m: int, q: int, n: int, rng: np.random.Generator):
    """One round of CKS Algorithm 3 for ``n`` candidates: the accepted ones.

    ``Y`` discrete Laplace at scale ``t``, kept with probability
    ``exp(-(|Y| - sigma'^2 / t)^2 / (2 sigma'^2)) = exp(-(q |Y| - m)^2 / (2 t m
    q))``, an exact ``Bernoulli(exp(-a / D))`` with integers ``a = (q |Y| -
    m)^2`` and ``D = 2 t m q``. A candidate with ``q |Y| + m >= 3.04e9`` (where
    ``a`` would leave int64; probability below ``exp(-3e9 / (q t))`` each, about
    ``e^-700`` for ``t < 2**21``) is decided in Python integers.
    """
    y = _laplace_values(Fraction(t), n, rng)
    magnitude = np.abs(y)
    den = 2 * t * m * q
    safe = magnitude <= (math.isqrt(_INT64_LIMIT) - m) // q
    accept = np.empty(y.size, dtype=bool)
    if safe.all():
        gap = q * magnitude.astype(np.int64) - m
        accept[:] = _bernoulli_exp_neg(gap * gap, den, rng)
    else:
        where = np.flatnonzero(safe)
        gap = q * magnitude[where].astype(np.int64) - m
        accept[where] = _bernoulli_exp_neg(gap * gap, den, rng)
        for i in np.flatnonzero(~safe):
            gap_i = q * int(magnitude[i]) - m
            accept[i] = _py_bernoulli_exp_neg(gap_i * gap_i, den, rng)
    return y[accept]


def _py_discrete_gaussian(t: int, m: int, q: int, rng: np.random.Generator) -> int:
    """CKS Algorithm 3 for one value in Python integers (scales beyond the int64 path)."""
    den = 2 * t * m * q
    while True:
        y = int(_laplace_values(Fraction(t), 1, rng)[0])
        gap = q * abs(y) - m
        if _py_bernoulli_exp_neg(gap * gap, den, rng):
            return y


def discrete_gaussian_noise(
    sigma: float | Fraction, rng: np.random.Generator, size: int | tuple[int, ...] | None = None
) -> Any:
    """Integer noise with ``P(Z = z)`` proportional to ``exp(-z^2 / (2 sigma'^2))``, drawn exactly.

    The discrete Gaussian, sampled by Canonne, Kamath & Steinke (2020),
    Algorithm 3 (Section 5), in integer and rational arithmetic only: a
    discrete Laplace candidate ``Y`` at scale ``t = floor(sigma) + 1`` (drawn
    exactly as :func:`discrete_laplace_noise`), accepted with probability
    ``exp(-(|Y| - sigma'^2 / t)^2 / (2 sigma'^2))`` by their Algorithm 1
    (``Bernoulli(exp(-gamma))`` as ``floor(gamma)`` successes of
    ``Bernoulli(exp(-1))`` and the series of ``Bernoulli(f / K)`` trials for the
    remainder). All randomness comes from ``rng.integers``; every outcome is
    decided by comparisons between integers, so every integer keeps its exact
    probability, however far in the tail (there is no cut-off).

    ``sigma'^2`` is ``sigma^2`` rounded up to a rational with a small
    denominator (:func:`discrete_gaussian_sigma2`; a relative ``2**-19`` at
    most for ``sigma >= 1``), which only adds privacy, so that the whole
    sampler runs vectorised in int64: one batch of candidates per rejection
    round, no Python loop per value. The int64 path covers ``sigma < 2**28``
    (about ``2.7e8``): a candidate beyond ``3e9 / q`` in absolute value (``q``
    the power of two of :func:`discrete_gaussian_sigma2`) is decided in Python
    integers, which below ``sigma = 2**21`` has probability about ``e^-700``
    and at ``sigma = 2**28`` about ``e^-10``; a larger ``sigma`` is drawn
    wholly in Python integers, exactly and slowly (a loop per value).

    Parameters
    ----------
    sigma : float or fractions.Fraction
        Scale parameter, > 0 (a float is the exact rational it holds).
    rng : numpy.random.Generator
        The stream to draw from (only its ``integers`` method is called).
    size : int or tuple of int, default=None
        Output shape; ``None`` gives one value.

    Returns
    -------
    ndarray of int64, or numpy.int64 when ``size`` is None
        The noise.
    """
    t, m, q = _discrete_gaussian_params(sigma)
    shape = () if size is None else tuple(int(k) for k in np.atleast_1d(size))
    n = math.prod(shape)
    if t <= _MAX_VECTOR_SCALE:
        values = _fill(
            n, lambda k: _discrete_gaussian_candidates(t, m, q, k, rng), _GAUSSIAN_ACCEPTANCE
        )
    else:
        values = np.array([_py_discrete_gaussian(t, m, q, rng) for _ in range(n)])
    values = values.reshape(shape)
    return values[()] if size is None else values


def _grid_indices(values, sensitivity, steps):
    """Grid step ``sensitivity / steps`` and each value's nearest grid index."""
    if isinstance(steps, bool) or not isinstance(steps, Integral) or steps < 1:
        raise ValueError(f"steps must be an integer >= 1, got {steps!r}.")
    values = np.asarray(values, dtype=float)
    sensitivity = np.broadcast_to(np.asarray(sensitivity, dtype=float), values.shape)
    if not np.all(np.isfinite(sensitivity) & (sensitivity > 0)):
        raise ValueError("sensitivity must be finite and > 0.")
    grid = sensitivity / steps
    with np.errstate(over="ignore", invalid="ignore"):
        index = np.rint(values / grid)
    # Below 2**50 the index is computed with an absolute error far below 1/2,
    # which the rounding argument of the callers needs.
    if not np.all(np.abs(index) < _MAX_GRID_INDEX):
        raise ValueError(
            "values are too large relative to their sensitivity for the grid release "
            f"(more than 2**50 grid steps of sensitivity / {steps})."
        )
    return grid, index


def grid_laplace_release(
    values: ArrayLike,
    sensitivity: ArrayLike,
    epsilon: float,
    rng: np.random.Generator,
    steps: int = DEFAULT_GRID_STEPS,
    l1_axis: int | None = None,
) -> np.ndarray:
    """Release real values with Laplace-type noise on a public grid (snapped, not raw floats).

    The grid step of a value is ``sensitivity / steps`` (public: it depends only
    on the public sensitivity). A value that moves by at most ``sensitivity``
    between neighbouring data sets has a nearest grid index that moves by at
    most ``steps + 1`` (``steps`` for the move, one for the two roundings); the
    index gets :func:`discrete_laplace_noise` at scale ``(steps + 1) /
    epsilon`` and the release is ``step * (index + noise)``: exactly
    ``epsilon``-DP, and a deterministic function of an integer, so its
    low-order bits carry nothing (the floating-point attack of Mironov 2012
    does not apply). The noise is ``1 / steps`` wider than continuous Laplace.

    With ``l1_axis``, ``sensitivity`` bounds the L1 norm of the change of each
    vector along that axis (for example a vector of class averages); the
    indices of a vector of ``K`` values then move by at most ``steps + K`` in
    total, and every coordinate gets noise of scale ``(steps + K) / epsilon``.

    Parameters
    ----------
    values : array-like of float
        The exact values (secret).
    sensitivity : float or array-like of float
        Public bound on the change of each value (or, with ``l1_axis``, on the
        L1 change of each vector), > 0; broadcast against ``values``.
    epsilon : float
        Privacy parameter of each release (each value, or each vector), > 0.
    rng : numpy.random.Generator
        The stream to draw from.
    steps : int, default=1000
        Grid steps per unit of sensitivity.
    l1_axis : int, default=None
        Axis of the vectors whose L1 change ``sensitivity`` bounds.

    Returns
    -------
    ndarray of float
        The released values, multiples of their grid step.
    """
    epsilon = _positive(epsilon, "epsilon")
    grid, index = _grid_indices(values, sensitivity, steps)
    moved = 1 if l1_axis is None else index.shape[l1_axis]
    # The exact rational scale (steps + moved) / epsilon, which the sampler rounds up.
    scale = Fraction(int(steps) + int(moved)) / Fraction(epsilon)
    noise = discrete_laplace_noise(scale, rng, size=index.shape)
    return grid * (index + noise)


# The discrete Gaussian's law is tabulated, for accounting only, on [-TAIL * sigma,
# TAIL * sigma]: the mass outside is below exp(-TAIL**2 / 2) = exp(-800), far below any delta.
_DISCRETE_GAUSSIAN_TAIL = 40


@lru_cache(maxsize=32)
def _discrete_gaussian_table(sigma: float) -> tuple[np.ndarray, np.ndarray]:
    """Support and log-law of the discrete Gaussian :func:`discrete_gaussian_noise` draws.

    For accounting only (``delta``, tests): at the rounded ``sigma'^2`` of
    :func:`discrete_gaussian_sigma2`, on ``[-40 sigma, 40 sigma]`` (the mass
    outside is below ``exp(-800)``). The sampler itself uses no table.
    """
    sigma2 = float(discrete_gaussian_sigma2(sigma))
    half = int(math.ceil(_DISCRETE_GAUSSIAN_TAIL * math.sqrt(sigma2))) + 1
    support = np.arange(-half, half + 1)
    log_weight = -(support.astype(float) ** 2) / (2.0 * sigma2)
    log_proba = log_weight - logsumexp(log_weight)
    return support, log_proba


def discrete_gaussian_delta(sigma: float, shift: int, epsilon: float) -> float:
    """Exact ``delta`` of the discrete Gaussian for an integer sensitivity ``shift``.

    The hockey-stick divergence ``sum_z max(0, P(z) - e^epsilon P(z - shift))``
    between the noise and its shifted copy (symmetric in the direction of the
    shift), for the law :func:`discrete_gaussian_noise` draws at ``sigma``
    (variance parameter rounded up to :func:`discrete_gaussian_sigma2`), summed
    over its table on ``[-40 sigma, 40 sigma]`` (the mass outside is below
    ``exp(-800)``).

    Parameters
    ----------
    sigma : float
        Scale parameter, > 0.
    shift : int
        Integer sensitivity of the noised statistic, >= 1.
    epsilon : float
        Privacy parameter, > 0.

    Returns
    -------
    float
        The smallest ``delta`` for which the mechanism is ``(epsilon, delta)``-DP.
    """
    sigma = _positive(sigma, "sigma")
    epsilon = _positive(epsilon, "epsilon")
    support, log_proba = _discrete_gaussian_table(sigma)
    shifted = np.full_like(log_proba, -np.inf)
    shifted[shift:] = log_proba[:-shift]  # log P(z - shift)
    gap = np.exp(log_proba) - np.exp(epsilon + shifted)
    return float(np.sum(gap[gap > 0]))


@lru_cache(maxsize=64)
def discrete_gaussian_sigma(shift: int, epsilon: float, delta: float) -> float:
    """Smallest discrete-Gaussian scale that is ``(epsilon, delta)``-DP for an integer shift.

    Found by bisection on :func:`discrete_gaussian_delta` (which decreases in
    ``sigma``), then stepped up until the condition holds exactly.

    Parameters
    ----------
    shift : int
        Integer sensitivity, >= 1.
    epsilon : float
        Privacy parameter, > 0.
    delta : float
        Privacy parameter, in (0, 1).

    Returns
    -------
    float
        The scale ``sigma`` in integer units.
    """
    epsilon = _positive(epsilon, "epsilon")
    delta = _in_open_unit(delta, "delta")
    if isinstance(shift, bool) or not isinstance(shift, Integral) or shift < 1:
        raise ValueError(f"shift must be an integer >= 1, got {shift!r}.")
    # Start from the continuous Gaussian's exact calibration, which is very close.
    guess = _analytic_gaussian_unit_sigma(epsilon, delta) * shift
    lo, hi = 0.5 * guess, 1.01 * guess
    while discrete_gaussian_delta(hi, shift, epsilon) > delta:
        lo, hi = hi, 2.0 * hi
    for _ in range(50):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if discrete_gaussian_delta(mid, shift, epsilon) > delta else (lo, mid)
    return hi


def grid_gaussian_release(
    values: ArrayLike,
    sensitivity: ArrayLike,
    epsilon: float,
    delta: float,
    rng: np.random.Generator,
    steps: int = DEFAULT_GRID_STEPS,
) -> np.ndarray:
    """Release real values with discrete Gaussian noise on a public grid.

    As :func:`grid_laplace_release` (grid step ``sensitivity / steps``, index
    sensitivity ``steps + 1``), with discrete Gaussian noise of scale
    :func:`discrete_gaussian_sigma` ``(steps + 1, epsilon, delta)``, calibrated
    exactly. Released values are multiples of their grid step.

    Parameters
    ----------
    values : array-like of float
        The exact values (secret).
    sensitivity : float or array-like of float
        Public bound on how far each value moves between neighbours, > 0.
    epsilon : float
        Privacy parameter, > 0.
    delta : float
        Privacy parameter, in (0, 1).
    rng : numpy.random.Generator
        The stream to draw from.
    steps : int, default=1000
        Grid steps per unit of sensitivity.

    Returns
    -------
    ndarray of float
        The released values.
    """
    grid, index = _grid_indices(values, sensitivity, steps)
    sigma = discrete_gaussian_sigma(int(steps) + 1, float(epsilon), float(delta))
    return grid * (index + discrete_gaussian_noise(sigma, rng, size=index.shape))


def snap_coefficients(w: ArrayLike, noise_scale: float) -> tuple[np.ndarray, float]:
    """Round ``w`` to the public grid ``Lambda Z^d``, ``Lambda`` the least power of 2 >= the scale.

    The resolution of Mironov's snapping mechanism (CCS 2012): the released
    coefficients carry no low-order floating-point bits, where attacks on
    continuous noise samplers live. Rounding is post-processing, so the
    real-arithmetic guarantee is unchanged; it costs at most ``Lambda / 2 <=
    noise_scale`` per coordinate, below the noise already there.

    Parameters
    ----------
    w : array-like of shape (n_features,)
        Noisy coefficients.
    noise_scale : float
        Public scale of the noise they carry, > 0.

    Returns
    -------
    snapped : ndarray of shape (n_features,)
        ``w`` rounded to the grid.
    grid : float
        ``Lambda``.

    Examples
    --------
    >>> from skprivpred.mechanisms import snap_coefficients
    >>> snap_coefficients([0.3, -1.1], 0.4)
    (array([ 0.5, -1. ]), 0.5)
    """
    noise_scale = _positive(noise_scale, "noise_scale")
    grid = 2.0 ** math.ceil(math.log2(noise_scale))
    return np.round(np.asarray(w, dtype=float) / grid) * grid, grid
