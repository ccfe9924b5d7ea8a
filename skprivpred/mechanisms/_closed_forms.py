"""Exact, vectorised privacy mechanisms and the closed forms they rest on.

Every function here is a pure function of its arguments (samplers take the
``numpy.random.Generator`` to draw from). Estimators call them; tests pin their
values against the formulas of Dwork & Feldman (2018).

Sampling rules: label releases are drawn from their closed-form
probability with one uniform variate per row (inverse CDF on log-sum-exp
normalised scores), so no raw noisy float ever leaves an estimator; nothing is
sampled by MCMC or by exponentiating raw scores.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache
from numbers import Integral, Real
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import brentq
from scipy.special import expit, log_softmax, logsumexp
from scipy.stats import norm

from skprivpred.exceptions import InvalidParameterError
from skprivpred.utils._deprecation import renamed_kwargs
from skprivpred.utils._param_validation import Interval, check_param, validate_parameter_constraints

__all__ = [
    "BetweenThresholds",
    "agnostic_n_partitions",
    "between_thresholds_composition",
    "between_thresholds_conditional_proba",
    "between_thresholds_gap",
    "between_thresholds_proba",
    "between_thresholds_scales",
    "ceil_int",
    "discrete_gaussian_delta",
    "discrete_gaussian_noise",
    "discrete_gaussian_sigma",
    "discrete_gaussian_sigma2",
    "discrete_laplace_noise",
    "discrete_laplace_scale",
    "exponential_mechanism_proba",
    "exponential_mechanism_sample",
    "fewest_mistakes_log_proba",
    "gaussian_clip_bernoulli_proba",
    "gaussian_sigma",
    "grid_gaussian_release",
    "grid_laplace_release",
    "laplace_clip_bernoulli_proba",
    "laplace_positive_proba",
    "laplace_scale",
    "log_base",
    "noisy_max_proba",
    "noisy_max_sample",
    "pac_n_partitions",
    "sample_categorical",
    "sample_fewest_mistakes",
    "sample_unit_laplace_vector",
    "snap_coefficients",
    "soft_majority_proba",
]

_POSITIVE = Interval(Real, 0, None, closed="neither")
_OPEN_UNIT = Interval(Real, 0, 1, closed="neither")
_POSITIVE_INT = Interval(Integral, 1, None, closed="left")


def _positive(value: Any, name: str) -> float:
    return float(check_param(value, name, _POSITIVE))


def _in_open_unit(value: Any, name: str) -> float:
    return float(check_param(value, name, _OPEN_UNIT))


def _positive_int(value: Any, name: str) -> int:
    return int(check_param(value, name, _POSITIVE_INT))


# Tolerance used when a real-valued formula is turned into an integer
# parameter: 39.99999999999999 and 40.00000000000001 both give 40. Changing such
# an integer by one affects accuracy, never privacy.
_CEIL_TOL = 1e-9

# Grid steps per unit of sensitivity of the grid releases: the noise is 0.1% wider
# than without rounding.
DEFAULT_GRID_STEPS = 1000
_MAX_GRID_INDEX = 2.0**50


def ceil_int(value: float) -> int:
    """Round a real-valued parameter formula up to an integer, forgiving float noise.

    Computes ``ceil(value - 1e-9)`` so that a formula whose exact value is an
    integer gives that integer whichever way rounding error falls.

    Parameters
    ----------
    value : float
        The real value of the formula.

    Returns
    -------
    int
        The smallest integer not below ``value - 1e-9``.
    """
    return int(math.ceil(value - _CEIL_TOL))


@renamed_kwargs({"alpha": "target_error"})
def pac_n_partitions(target_error: float, epsilon: float, n_classes: int = 2) -> int:
    """Number of teachers for soft-majority subsample-and-aggregate (Thm 4.1).

    ``r = ceil(6 ln(4 (K - 1) / target_error) / epsilon)``; for ``K = 2`` this
    is the paper's ``ceil(6 ln(4 / alpha) / epsilon)``, its ``alpha`` being the
    target error. The multi-class form is the library's extension by the same
    Markov argument as the paper's proof of Dwork & Feldman (2018), Theorem 4.1.

    .. deprecated:: 0.4
        The keyword ``alpha`` was renamed ``target_error`` in 0.4 and will be
        removed in 0.6.

    Parameters
    ----------
    target_error : float
        Target error, in (0, 1).
    epsilon : float
        Per-query privacy parameter, > 0.
    n_classes : int, default=2
        Number of public labels ``K >= 2``.

    Returns
    -------
    int
        The number of disjoint partitions ``r``.

    Examples
    --------
    >>> pac_n_partitions(0.1, 1.0)
    23
    """
    target_error = _in_open_unit(target_error, "target_error")
    epsilon = _positive(epsilon, "epsilon")
    if isinstance(n_classes, bool) or not isinstance(n_classes, Integral) or n_classes < 2:
        raise ValueError(f"n_classes must be an integer >= 2, got {n_classes!r}.")
    return max(1, ceil_int(6.0 * math.log(4.0 * (n_classes - 1) / target_error) / epsilon))


@renamed_kwargs({"alpha": "target_error"})
def agnostic_n_partitions(target_error: float, epsilon: float) -> int:
    """Number of teachers for subsample averaging (Cor 4.7, corrected).

    ``r = ceil(2 / (target_error * epsilon))`` (the corollary's value; the text
    before it says ``1 / (alpha epsilon)``, which spends all of the target
    error ``alpha`` on noise).

    .. deprecated:: 0.4
        The keyword ``alpha`` was renamed ``target_error`` in 0.4 and will be
        removed in 0.6.

    Parameters
    ----------
    target_error : float
        Target excess error, in (0, 1).
    epsilon : float
        Per-query privacy parameter, > 0.

    Returns
    -------
    int
        The number of disjoint partitions ``r``.

    Examples
    --------
    >>> agnostic_n_partitions(0.1, 1.0)
    20
    """
    target_error = _in_open_unit(target_error, "target_error")
    epsilon = _positive(epsilon, "epsilon")
    return max(1, ceil_int(2.0 / (target_error * epsilon)))


def soft_majority_proba(n_ones: ArrayLike, n_voters: ArrayLike, epsilon: float) -> np.ndarray:
    """Probability that the binary soft majority answers 1 (Thm 4.1).

    ``P(1) = expit(epsilon * (2 * n_ones - n_voters) / 2)``, i.e. weight
    ``exp(epsilon * count / 2)`` per label. One changed training row moves one
    vote, so the logit moves by at most ``epsilon``: the release is
    ``epsilon``-DP. (The paper's prose weight ``exp(epsilon * count)`` is only
    ``2 epsilon``-DP, so the weight is halved here.)

    Parameters
    ----------
    n_ones : array-like of int
        Number of teachers voting for label 1.
    n_voters : int or array-like of int
        Number of teachers ``r``.
    epsilon : float
        Per-query privacy parameter, > 0.

    Returns
    -------
    ndarray of float
        ``P(answer = 1)``, computed without overflow.

    Examples
    --------
    >>> float(soft_majority_proba(3, 5, 1.0))  # doctest: +ELLIPSIS
    0.6224593...
    """
    epsilon = _positive(epsilon, "epsilon")
    votes = 2.0 * np.asarray(n_ones, dtype=float) - np.asarray(n_voters, dtype=float)
    return expit(epsilon * votes / 2.0)


def exponential_mechanism_proba(
    scores: ArrayLike, epsilon: float, sensitivity: float | ArrayLike = 1.0
) -> np.ndarray:
    """Output law of the exponential mechanism, one distribution per row.

    ``P(k) = softmax(epsilon * scores / (2 * sensitivity))`` along the last
    axis, normalised in log space (no overflow at ``epsilon = 50`` and scores of
    1000).

    With one sensitivity per candidate, ``Delta_k``, the divisor ``2 *
    sensitivity`` becomes ``Delta_(1) + Delta_(2)``, the sum of the two largest
    (``2 Delta`` when they are equal, the classical case): the law is still
    ``epsilon``-DP and ``epsilon``-bounded-range. Proof: between neighbours
    every score moves by ``d_k`` with ``|d_k| <= Delta_k``; with ``c`` the
    weight, the log-ratio of the probabilities of ``k`` is ``-c d_k + log sum_j
    P(j) exp(c d_j)``, at most ``-c d_k + c max_j d_j``, which is 0 when the
    maximum is at ``j = k`` and at most ``c (Delta_k + Delta_j)`` otherwise;
    ``-c d_k`` varies over ``k`` within ``c (Delta_(1) + Delta_(2))`` too. A
    candidate whose score can move less than the others' is thus told apart
    more sharply than by the exponential mechanism at the largest sensitivity
    (McSherry & Talwar 2007).

    Parameters
    ----------
    scores : array-like of shape (n_candidates,) or (n_rows, n_candidates)
        Utility of each candidate; each may change by at most ``sensitivity``
        between neighbouring data sets.
    epsilon : float
        Privacy parameter, > 0.
    sensitivity : float or array-like of shape (n_candidates,), default=1.0
        Bound on the change of any score between neighbours, > 0; or one bound
        per candidate.

    Returns
    -------
    ndarray of the same shape as ``scores``
        Probabilities summing to one along the last axis.

    Examples
    --------
    >>> from skprivpred.mechanisms import exponential_mechanism_proba
    >>> exponential_mechanism_proba([1.0, 0.0], epsilon=1.0, sensitivity=0.5).round(3)
    array([0.731, 0.269])
    >>> exponential_mechanism_proba([1.0, 0.0], 1.0, sensitivity=[0.5, 0.1]).round(3)
    array([0.841, 0.159])
    """
    epsilon = _positive(epsilon, "epsilon")
    scores = np.asarray(scores, dtype=float)
    if not np.all(np.isfinite(scores)):
        raise ValueError("scores must be finite.")
    weight = epsilon / _two_largest_sensitivities(sensitivity, scores.shape[-1])
    if scores.shape[-1] == 2:
        # Two candidates: the logistic closed form, each side computed directly
        # so that a probability near 0 keeps its relative precision.
        logit = weight * (scores[..., 1] - scores[..., 0])
        return np.stack([expit(-logit), expit(logit)], axis=-1)
    return np.exp(log_softmax(scores * weight, axis=-1))


def _two_largest_sensitivities(sensitivity: float | ArrayLike, n_candidates: int) -> float:
    """``2 * sensitivity``, or the sum of the two largest of one per candidate."""
    if np.ndim(sensitivity) == 0:
        return 2.0 * _positive(sensitivity, "sensitivity")
    values = np.asarray(sensitivity, dtype=float)
    if values.shape != (n_candidates,) or not np.all(np.isfinite(values) & (values > 0)):
        raise ValueError(
            f"sensitivity must be a positive number or {n_candidates} finite positive "
            f"numbers, one per candidate; got {sensitivity!r}."
        )
    if n_candidates == 1:
        return 2.0 * float(values[0])
    top = np.sort(values)[-2:]
    return float(top[0] + top[1])


def sample_categorical(proba: ArrayLike, rng: np.random.Generator) -> np.ndarray:
    """Draw one index per row from row-wise categorical laws, by inverse CDF.

    Uses exactly one uniform variate per row: the answer is the first index
    whose cumulative probability exceeds the uniform.

    Parameters
    ----------
    proba : array-like of shape (n_rows, n_candidates)
        Probabilities, each row summing to one.
    rng : numpy.random.Generator
        The stream to draw from (an estimator's query stream).

    Returns
    -------
    ndarray of shape (n_rows,) of int
        The drawn indices.
    """
    proba = np.atleast_2d(np.asarray(proba, dtype=float))
    cdf = np.cumsum(proba, axis=1)
    u = rng.random(proba.shape[0])
    # u * total guards against a last cumulative value slightly below 1.
    index = (cdf <= (u * cdf[:, -1])[:, None]).sum(axis=1)
    return np.minimum(index, proba.shape[1] - 1)


def exponential_mechanism_sample(
    scores: ArrayLike, epsilon: float, rng: np.random.Generator, sensitivity: float = 1.0
) -> np.ndarray:
    """Sample the exponential mechanism once per row, exactly.

    Parameters
    ----------
    scores : array-like of shape (n_rows, n_candidates)
        Utility of each candidate for each row.
    epsilon : float
        Privacy parameter, > 0.
    rng : numpy.random.Generator
        The stream to draw from.
    sensitivity : float, default=1.0
        Bound on the change of any score between neighbours.

    Returns
    -------
    ndarray of shape (n_rows,) of int
        Index of the chosen candidate for each row.
    """
    scores = np.atleast_2d(scores)
    return sample_categorical(exponential_mechanism_proba(scores, epsilon, sensitivity), rng)


def sample_fewest_mistakes(mistakes: ArrayLike, epsilon: float, rng: np.random.Generator) -> int:
    """Draw index ``i`` with probability proportional to ``exp(-epsilon * mistakes[i] / 2)``.

    The exponential mechanism (McSherry & Talwar 2007) with utility
    ``-mistakes`` of sensitivity 1, as in the private PAC learner of
    Kasiviswanathan et al. (2011), sampled exactly in two stages that multiply
    to that law: a mistake level ``m`` is drawn by inverse CDF (one uniform
    variate) from the law proportional to ``c_m exp(-epsilon m / 2)``,
    normalised in log space, where ``c_m`` is the number of hypotheses with
    ``m`` mistakes; then one of those ``c_m`` hypotheses is drawn uniformly
    (one exact integer draw). Memory beyond ``mistakes`` is ``O(n)``, so
    classes of ``2**24`` hypotheses stay cheap; nothing is exponentiated
    unnormalised.

    Parameters
    ----------
    mistakes : array-like of non-negative int of shape (n_hypotheses,)
        Mistake count of each hypothesis.
    epsilon : float
        Privacy parameter, > 0.
    rng : numpy.random.Generator
        The stream to draw from (a release stream).

    Returns
    -------
    int
        Index of the drawn hypothesis.

    See Also
    --------
    fewest_mistakes_log_proba : The exact log-law of this sampler.

    Examples
    --------
    >>> import numpy as np
    >>> sample_fewest_mistakes([0, 50, 50], 10.0, np.random.default_rng(0))
    0
    """
    epsilon = _positive(epsilon, "epsilon")
    mistakes = np.asarray(mistakes)
    counts = np.bincount(mistakes)
    levels = np.flatnonzero(counts)
    log_weight = np.log(counts[levels]) - 0.5 * epsilon * levels
    level_law = np.exp(log_softmax(log_weight))
    level = levels[sample_categorical(level_law[np.newaxis, :], rng)[0]]
    members = np.flatnonzero(mistakes == level)
    return int(members[rng.integers(members.shape[0])])


def fewest_mistakes_log_proba(mistakes: ArrayLike, epsilon: float) -> np.ndarray:
    """Exact log-law of :func:`sample_fewest_mistakes`: ``log_softmax(-epsilon * mistakes / 2)``.

    Parameters
    ----------
    mistakes : array-like of shape (n_hypotheses,)
        Mistake count of each hypothesis.
    epsilon : float
        Privacy parameter, > 0.

    Returns
    -------
    ndarray of shape (n_hypotheses,)
        The log-probability of drawing each hypothesis.

    Examples
    --------
    >>> import numpy as np
    >>> np.exp(fewest_mistakes_log_proba([0, 0], 1.0)).tolist()
    [0.5, 0.5]
    """
    epsilon = _positive(epsilon, "epsilon")
    return log_softmax(-0.5 * epsilon * np.asarray(mistakes, dtype=float))


def laplace_scale(sensitivity: float, epsilon: float) -> float:
    """Scale ``b = sensitivity / epsilon`` of the Laplace mechanism (Lemma 4.5, corrected).

    Parameters
    ----------
    sensitivity : float
        Uniform replace-one stability ``gamma`` of the released value, > 0.
    epsilon : float
        Privacy parameter, > 0.

    Returns
    -------
    float
        The Laplace scale (the paper's proof writes ``epsilon / gamma``: erratum 3).
    """
    return _positive(sensitivity, "sensitivity") / _positive(epsilon, "epsilon")


def gaussian_sigma(
    sensitivity: float, epsilon: float, delta: float, method: str = "classic"
) -> float:
    """Standard deviation of the Gaussian mechanism for ``(epsilon, delta)``-DP.

    Parameters
    ----------
    sensitivity : float
        L2 sensitivity of the released value, > 0.
    epsilon : float
        Privacy parameter, > 0; the classic calibration needs ``epsilon < 1``.
    delta : float
        Privacy parameter, in (0, 1).
    method : {"classic", "analytic"}, default="classic"
        ``"classic"``: ``sensitivity * sqrt(2 ln(1.25 / delta)) / epsilon``
        (Dwork & Roth Thm A.1, valid for ``epsilon < 1``). ``"analytic"``: the
        smallest sigma satisfying the exact condition of Balle & Wang (2018),
        ``Phi(D/(2s) - e s/D) - exp(e) Phi(-D/(2s) - e s/D) <= delta``, valid for
        every ``epsilon > 0``.

    Returns
    -------
    float
        The noise standard deviation.
    """
    sensitivity = _positive(sensitivity, "sensitivity")
    epsilon = _positive(epsilon, "epsilon")
    delta = _in_open_unit(delta, "delta")
    if method == "classic":
        if epsilon >= 1.0:
            raise ValueError(
                f"the classic Gaussian calibration needs epsilon < 1, got epsilon={epsilon!r}; "
                "use method='analytic'."
            )
        return sensitivity * math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon
    if method == "analytic":
        return sensitivity * _analytic_gaussian_unit_sigma(epsilon, delta)
    raise ValueError(f"method must be 'classic' or 'analytic', got {method!r}.")


def _gaussian_delta(sigma: float, epsilon: float) -> float:
    """Exact delta of the Gaussian mechanism with sensitivity 1 and std ``sigma``."""
    a = 1.0 / (2.0 * sigma)
    b = epsilon * sigma
    # Phi(a - b) - e^eps Phi(-a - b), the second term in log space.
    return norm.cdf(a - b) - math.exp(epsilon + norm.logcdf(-a - b))


def _analytic_gaussian_unit_sigma(epsilon: float, delta: float) -> float:
    lo, hi = 1e-6, 1.0
    while _gaussian_delta(hi, epsilon) > delta:
        hi *= 2.0
    sigma = brentq(lambda s: _gaussian_delta(s, epsilon) - delta, lo, hi, xtol=1e-14)
    # Step up until the condition holds exactly (root finding may stop just below).
    while _gaussian_delta(sigma, epsilon) > delta:
        sigma = math.nextafter(sigma, math.inf) * (1 + 1e-12)
    return sigma


# -- exact integer samplers (the discrete Gaussian of Canonne, Kamath & Steinke 2020) -----------
# Every bit of randomness below comes from ``rng.integers`` (a test can script it), and every
# outcome is decided by comparisons between integers: a float may guess where to compare
# (the geometric's inversion), never what the comparison finds.

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


def noisy_max_proba(scores: ArrayLike, epsilon: float, sensitivity: float) -> np.ndarray:
    """Exact output law of report-noisy-max with one-sided exponential noise.

    The mechanism releases ``argmax_i scores_i + 2 sensitivity Z_i`` with
    ``Z_i ~ Exp(mean 1 / epsilon)`` (Chaudhuri & Vinterbo 2013, Algorithm 1):
    ``(epsilon, 0)``-DP when every score moves by at most ``sensitivity``
    between neighbouring data sets, in any directions (hence the factor 2).
    With ``s = 2 sensitivity / epsilon`` (the mean of the noise), ``a_j =
    exp((q_j - q_max) / s)`` and the substitution ``v = exp(-(t - q_max) / s)``,

    ``P(i) = a_i * integral_0^1 prod_{j != i} (1 - a_j v) dv``,

    the integral of a polynomial of degree ``k - 1``, computed exactly by
    Gauss-Legendre quadrature with ``k`` nodes. Every factor lies in [0, 1], so
    the evaluation is stable for any score gap.

    Parameters
    ----------
    scores : array-like of shape (n_candidates,)
        Finite score of each candidate.
    epsilon : float
        Privacy parameter, > 0.
    sensitivity : float
        Bound on the change of any score between neighbours, > 0.

    Returns
    -------
    ndarray of shape (n_candidates,)
        The probability that each index is reported.

    Examples
    --------
    >>> from skprivpred.mechanisms import noisy_max_proba
    >>> noisy_max_proba([0.0, 0.0], epsilon=1.0, sensitivity=1.0).round(3)
    array([0.5, 0.5])
    """
    epsilon = _positive(epsilon, "epsilon")
    sensitivity = _positive(sensitivity, "sensitivity")
    scores = np.asarray(scores, dtype=float)
    if scores.ndim != 1 or scores.size < 1 or not np.all(np.isfinite(scores)):
        raise ValueError("scores must be a non-empty 1-D array of finite numbers.")
    scale = 2.0 * sensitivity / epsilon
    a = np.exp((scores - scores.max()) / scale)
    k = scores.size
    nodes, weights = np.polynomial.legendre.leggauss(k)
    v = 0.5 * (nodes + 1.0)
    weights = 0.5 * weights
    factors = 1.0 - np.outer(v, a)  # (nodes, k)
    proba = np.empty(k)
    for i in range(k):
        proba[i] = a[i] * np.sum(weights * np.prod(np.delete(factors, i, axis=1), axis=1))
    return proba / proba.sum()


def noisy_max_sample(
    scores: ArrayLike, epsilon: float, sensitivity: float, rng: np.random.Generator
) -> int:
    """Report-noisy-max: the index of ``max_i scores_i + 2 sensitivity Z_i``, drawn exactly.

    ``Z_i ~ Exp(mean 1 / epsilon)`` (Chaudhuri & Vinterbo 2013, Algorithm 1;
    ``(epsilon, 0)``-DP for scores of the given sensitivity). Only the index is
    released, and it is drawn from its exact law (:func:`noisy_max_proba`) by
    inverse CDF with one uniform: no noisy float is ever formed, so the sampler
    is not open to floating-point attacks.

    Parameters
    ----------
    scores : array-like of shape (n_candidates,)
        Finite score of each candidate.
    epsilon : float
        Privacy parameter, > 0.
    sensitivity : float
        Bound on the change of any score between neighbours, > 0.
    rng : numpy.random.Generator
        The stream to draw from.

    Returns
    -------
    int
        The reported index.

    Examples
    --------
    >>> import numpy as np
    >>> from skprivpred.mechanisms import noisy_max_sample
    >>> noisy_max_sample([0.0, 100.0], 1.0, 1.0, np.random.default_rng(0))
    1
    """
    law = noisy_max_proba(scores, epsilon, sensitivity)
    return int(sample_categorical(law[None, :], rng)[0])


def sample_unit_laplace_vector(n_features: int, rng: np.random.Generator) -> np.ndarray:
    """A draw ``R`` of density proportional to ``exp(-||r||)`` on ``R^d``.

    Its norm is ``Gamma(d, 1)`` and its direction uniform. Scaled by ``s``, it
    is the noise of output perturbation (scale ``2 / (lam epsilon n)``) and of
    objective perturbation (scale ``2 / epsilon_p``) in Chaudhuri, Monteleoni
    & Sarwate (2011), Algorithms 1 and 2.

    Parameters
    ----------
    n_features : int
        Dimension ``d``, >= 1.
    rng : numpy.random.Generator
        The stream to draw from.

    Returns
    -------
    ndarray of shape (n_features,)

    Examples
    --------
    >>> import numpy as np
    >>> from skprivpred.mechanisms import sample_unit_laplace_vector
    >>> sample_unit_laplace_vector(3, np.random.default_rng(0)).shape
    (3,)
    """
    n_features = _positive_int(n_features, "n_features")
    direction = rng.standard_normal(n_features)
    direction /= np.linalg.norm(direction)
    return rng.gamma(shape=n_features, scale=1.0) * direction


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


def laplace_clip_bernoulli_proba(v: ArrayLike, b: float) -> np.ndarray:
    """Closed form ``q(v) = E[clip(v + Lap(b), 0, 1)]`` (Dwork & Feldman 2018, Section 4.3).

    Answering 1 with probability ``q(v)`` is the same release as clipping
    ``v + Lap(b)`` to [0, 1] and flipping a coin with that bias, without ever
    drawing a continuous Laplace variate.

    Parameters
    ----------
    v : array-like of float
        The averaged score.
    b : float
        Laplace scale, > 0.

    Returns
    -------
    ndarray of float
        ``q(v)`` in [0, 1].
    """
    b = _positive(b, "b")
    v = np.asarray(v, dtype=float)
    tail = -0.5 * b * np.expm1(-1.0 / b)  # (b/2)(1 - e^{-1/b})
    with np.errstate(over="ignore"):
        low = tail * np.exp(np.minimum(v, 0.0) / b)
        high = 1.0 - tail * np.exp(np.minimum(1.0 - v, 0.0) / b)
        mid_v = np.clip(v, 0.0, 1.0)
        mid = mid_v + 0.5 * b * (np.exp(-mid_v / b) - np.exp(-(1.0 - mid_v) / b))
    return np.where(v <= 0.0, low, np.where(v >= 1.0, high, mid))


def laplace_positive_proba(a: ArrayLike, b: ArrayLike) -> np.ndarray:
    """Closed form ``P(a + Lap(b) > 0)``: the law of thresholding a Laplace release at 0.

    ``1 - exp(-a / b) / 2`` for ``a >= 0`` and ``exp(a / b) / 2`` otherwise. A
    label drawn with this probability is the thresholded Laplace release itself,
    without ever drawing a continuous variate.

    Parameters
    ----------
    a : array-like of float
        The exact score (the noise-free value minus the threshold).
    b : float or array-like of float
        Laplace scale, > 0.

    Returns
    -------
    ndarray of float
        The probability, in (0, 1).
    """
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if not np.all(np.isfinite(b) & (b > 0)):
        raise ValueError("b must be finite and > 0.")
    half_tail = 0.5 * np.exp(-np.abs(a) / b)
    return np.where(a >= 0, 1.0 - half_tail, half_tail)


def gaussian_clip_bernoulli_proba(v: ArrayLike, s: float) -> np.ndarray:
    """Closed form ``E[clip(v + N(0, s^2), 0, 1)]``.

    With ``G(u) = u Phi(u) + phi(u)`` the value is ``s * (G(v/s) - G((v-1)/s))``.

    Parameters
    ----------
    v : array-like of float
        The averaged score.
    s : float
        Noise standard deviation, > 0.

    Returns
    -------
    ndarray of float
        The expected clipped value, in [0, 1].
    """
    s = _positive(s, "s")
    v = np.asarray(v, dtype=float)

    def antiderivative(u):
        return u * norm.cdf(u) + norm.pdf(u)

    return np.clip(s * (antiderivative(v / s) - antiderivative((v - 1.0) / s)), 0.0, 1.0)


# -- BetweenThresholds (Bun, Steinke & Ullman 2016; Naor et al. 2023, Appendix C.2) --------------
#: Base of the logarithm wherever the everlasting-prediction paper writes ``log``
#: without a base (the BT lemmas, the VC bound, lambda_i, T_i, n). Base 2 gives
#: the larger, conservative value in every privacy condition (the paper leaves
#: the base unwritten). Where the paper writes ``ln``, the code uses ``ln``.
LOG_BASE = 2

#: Outcome codes of :class:`BetweenThresholds`, in the order of the columns of
#: its output laws: below the lower noisy threshold (L), above the upper one
#: (R), between them (TOP, which ends the current instance).
BT_BELOW, BT_ABOVE, BT_TOP = 0, 1, 2

# Rows drawn per vectorised step of BetweenThresholds: the draws after the first
# TOP of a step are discarded (they were independent of everything kept).
_BT_CHUNK = 4096


def log_base(value: ArrayLike, base: float = LOG_BASE) -> Any:
    """Logarithm to ``base`` (default :data:`LOG_BASE`), elementwise.

    Parameters
    ----------
    value : float or array-like of float
        Positive argument.
    base : float, default=LOG_BASE
        Base of the logarithm, > 1 (``math.e`` gives the natural logarithm).

    Returns
    -------
    float or ndarray
        ``ln(value) / ln(base)``.
    """
    return np.log(value) / math.log(base)


def _bt_validate(caller: str, **values: Any) -> None:
    """Check BetweenThresholds arguments against their declared constraints.

    Raises :class:`~skprivpred.InvalidParameterError` (a ``ValueError`` and a
    ``TypeError``) naming the argument, the value and what is allowed.
    """
    constraints = {
        "epsilon": [_POSITIVE],
        "sensitivity": [_POSITIVE],
        "delta": [_OPEN_UNIT],
        "n_instances": [_POSITIVE_INT],
        "top_budget": [_POSITIVE_INT],
    }
    validate_parameter_constraints(constraints, values, caller_name=caller)


def between_thresholds_scales(epsilon: float, sensitivity: float) -> tuple[float, float]:
    """Laplace scales ``(b_mu, b_nu) = (2 s / epsilon, 6 s / epsilon)`` of BetweenThresholds.

    ``mu ~ Lap(b_mu)`` shifts both thresholds once per instance (in opposite
    directions); ``nu ~ Lap(b_nu)`` is fresh noise per query. For a fraction of
    ``T`` voters, ``s = 1 / T`` and these are the paper's ``2/(eps' T)`` and
    ``6/(eps' T)``.

    Parameters
    ----------
    epsilon : float
        Privacy parameter ``eps'`` of one instance, > 0.
    sensitivity : float
        How far one changed database entry can move a query value, > 0.

    Returns
    -------
    tuple of float
        ``(b_mu, b_nu)``.
    """
    _bt_validate("between_thresholds_scales", epsilon=epsilon, sensitivity=sensitivity)
    return 2.0 * sensitivity / epsilon, 6.0 * sensitivity / epsilon


def _laplace_cdf(z, b: float) -> np.ndarray:
    """CDF of ``Lap(b)`` at ``z``, each tail computed directly (no cancellation)."""
    z = np.asarray(z, dtype=float)
    half_tail = 0.5 * np.exp(-np.abs(z) / b)
    return np.where(z < 0, half_tail, 1.0 - half_tail)


def between_thresholds_conditional_proba(
    value: ArrayLike, lower_noisy: float, upper_noisy: float, epsilon: float, sensitivity: float
) -> np.ndarray:
    """Exact output law of one BT query given the current noisy thresholds.

    With ``c = value + nu``, ``nu ~ Lap(b_nu)``, and L tested first, as in the
    paper (the noisy thresholds can cross at small sizes):
    ``P(L) = F(lower_noisy - value)``, ``P(R) = 1 - F(max(lower_noisy,
    upper_noisy) - value)``, ``P(TOP) = 1 - P(L) - P(R)``, where ``F`` is the
    ``Lap(b_nu)`` CDF. When the noisy thresholds cross, TOP is impossible.

    Parameters
    ----------
    value : array-like of float
        The exact query values (secret).
    lower_noisy, upper_noisy : float
        ``t_l + mu`` and ``t_u - mu`` of the current instance (secret).
    epsilon : float
        Privacy parameter of the instance, > 0.
    sensitivity : float
        Sensitivity of a query value, > 0.

    Returns
    -------
    ndarray of shape (n_values, 3)
        Probabilities of (L, R, TOP), columns :data:`BT_BELOW`,
        :data:`BT_ABOVE`, :data:`BT_TOP`.
    """
    _, b_nu = between_thresholds_scales(epsilon, sensitivity)
    value = np.atleast_1d(np.asarray(value, dtype=float))
    below = _laplace_cdf(lower_noisy - value, b_nu)
    above = 1.0 - _laplace_cdf(max(lower_noisy, upper_noisy) - value, b_nu)
    top = np.clip(1.0 - below - above, 0.0, 1.0)
    return np.stack([below, above, top], axis=1)


def _laplace_sum_cdf(z: float, b1: float, b2: float) -> float:
    """CDF at ``z`` of ``Lap(b1) + Lap(b2)`` for ``b1 != b2`` (closed form)."""
    denominator = 2.0 * (b1 * b1 - b2 * b2)
    lower_tail = (b1 * b1 * math.exp(-abs(z) / b1) - b2 * b2 * math.exp(-abs(z) / b2)) / denominator
    return lower_tail if z <= 0 else 1.0 - lower_tail


def between_thresholds_proba(
    value: ArrayLike, lower: float, upper: float, epsilon: float, sensitivity: float
) -> np.ndarray:
    """Exact output law of the first query of a fresh BT instance (Bun, Steinke & Ullman 2016).

    ``P(L | q) = E_mu[F_nu(t_l + mu - q)]``, the CDF of ``nu - mu`` at ``t_l - q``
    (closed form for a sum of two Laplace variables), and ``P(R | q) =
    E_mu[1 - F_nu(max(t_l + mu, t_u - mu) - q)]``, integrated over ``mu`` by
    adaptive quadrature on the pieces where the integrand is smooth. A test
    oracle: the sampler uses the conditional law
    (:func:`between_thresholds_conditional_proba`).

    Parameters
    ----------
    value : array-like of float
        Query values.
    lower, upper : float
        The thresholds ``t_l < t_u``.
    epsilon : float
        Privacy parameter of the instance, > 0.
    sensitivity : float
        Sensitivity of a query value, > 0.

    Returns
    -------
    ndarray of shape (n_values, 3)
        Probabilities of (L, R, TOP).

    Examples
    --------
    >>> np.round(between_thresholds_proba(0.5, 0.4, 0.6, 0.5, 1 / 60), 3)
    array([[0.327, 0.299, 0.373]])
    """
    from scipy.integrate import quad

    b_mu, b_nu = between_thresholds_scales(epsilon, sensitivity)
    crossing = 0.5 * (upper - lower)  # mu above this: the noisy thresholds cross
    rows = []
    for q in np.atleast_1d(np.asarray(value, dtype=float)):
        below = _laplace_sum_cdf(lower - q, b_nu, b_mu)

        def above_given(mu, q=q):
            noisy_upper = max(lower + mu, upper - mu)
            density = math.exp(-abs(mu) / b_mu) / (2.0 * b_mu)
            return density * (1.0 - float(_laplace_cdf(noisy_upper - q, b_nu)))

        cuts = sorted({0.0, crossing, q - upper, lower - q})
        pieces = [(-math.inf, cuts[0])] + list(zip(cuts[:-1], cuts[1:])) + [(cuts[-1], math.inf)]
        above = sum(
            quad(above_given, a, b, epsabs=1e-13, epsrel=1e-12, limit=200)[0] for a, b in pieces
        )
        rows.append([below, above, max(0.0, 1.0 - below - above)])
    return np.array(rows)


def between_thresholds_gap(
    epsilon: float, delta: float, sensitivity: float, base: float = LOG_BASE
) -> float:
    """Smallest threshold gap for which one BT instance is ``(epsilon, delta)``-DP (Lemma C.3).

    ``t_u - t_l >= 12 s / epsilon * (log(10 / epsilon) + log(1 / delta) + 1)``
    (the *gap condition*), with ``s`` the sensitivity (``1 / T``). The number of
    L and R answers is then unlimited; the instance ends at its first TOP.

    Parameters
    ----------
    epsilon : float
        Privacy parameter ``eps'`` of one instance, > 0.
    delta : float
        ``delta'`` of one instance, in (0, 1).
    sensitivity : float
        Sensitivity of a query value, > 0.
    base : float, default=LOG_BASE
        Base of the lemma's logarithms, which the paper leaves unwritten; base 2
        gives the larger, conservative gap.

    Returns
    -------
    float
        The required gap ``t_u - t_l``.
    """
    _bt_validate("between_thresholds_gap", epsilon=epsilon, delta=delta, sensitivity=sensitivity)
    logs = float(log_base(10.0 / epsilon, base) + log_base(1.0 / delta, base))
    return 12.0 * sensitivity / epsilon * (logs + 1.0)


def between_thresholds_composition(
    epsilon: float, delta: float, n_instances: int
) -> tuple[float, float]:
    """Privacy of ``c`` BT instances run one after another (Naor et al. 2023, Observation 2).

    ``(sqrt(2 c ln(1 / (c delta'))) eps' + c eps' (e^{eps'} - 1), 2 c delta')``:
    :func:`skprivpred.accounting.advanced_composition` with slack ``c delta'``
    (``expm1`` keeps the second term exact for ``eps'`` down to 1e-16). Plain
    composition gives ``(c eps', c delta')``; callers may use whichever is
    smaller.

    Parameters
    ----------
    epsilon : float
        ``eps'`` of one instance, > 0.
    delta : float
        ``delta'`` of one instance, in (0, 1), with ``c delta' < 1``.
    n_instances : int
        The number ``c`` of instances (the TOP budget), >= 1.

    Returns
    -------
    tuple of float
        The composed ``(epsilon, delta)``.
    """
    from skprivpred.accounting import advanced_composition

    _bt_validate(
        "between_thresholds_composition", epsilon=epsilon, delta=delta, n_instances=n_instances
    )
    return advanced_composition(epsilon, delta, n_instances, n_instances * delta)


class BetweenThresholds:
    """MultiBT: BetweenThresholds instances run one after another, up to a TOP budget.

    Each instance draws ``mu ~ Lap(b_mu)`` once and sets the noisy thresholds
    ``t_l + mu`` and ``t_u - mu`` (the same ``mu``, opposite signs). A query
    value ``q`` gets fresh ``nu ~ Lap(b_nu)``; ``c = q + nu`` answers L if
    ``c < t_l + mu`` (tested first), else R if ``c > t_u - mu``, else TOP. A TOP
    ends the instance (the next query starts a new one with a fresh ``mu``);
    the ``top_budget``-th TOP halts the mechanism for good.

    Outcomes are drawn exactly from :func:`between_thresholds_conditional_proba`
    with one uniform per query, so no noisy value is ever formed or released.
    ``mu`` is a floating-point Laplace draw held as secret state (a known
    limitation: floating-point Laplace samplers are open to precision attacks,
    Mironov 2012).

    **Guarantee.** Each instance is ``(eps', delta')``-DP when the gap
    condition ``t_u - t_l >=`` :func:`between_thresholds_gap` holds (Bun,
    Steinke & Ullman 2017; Lemma C.3 of Naor et al. 2023); ``c`` instances
    compose by :func:`between_thresholds_composition`.

    See the user guide: :ref:`everlasting` (the everlasting predictors answer
    with it).

    Parameters
    ----------
    lower, upper : float
        Thresholds ``t_l < t_u``.
    epsilon : float
        Privacy parameter ``eps'`` of each instance, > 0.
    sensitivity : float
        Sensitivity of a query value (``1 / T`` for a fraction of ``T`` votes).
    top_budget : int
        Number ``c`` of TOP outcomes after which the mechanism halts.

    Attributes
    ----------
    tops_used : int
        TOP outcomes so far.
    halted : bool
        Whether the ``top_budget``-th TOP occurred.

    References
    ----------
    M. Bun, T. Steinke and J. Ullman. Make Up Your Mind: The Price of Online
    Queries in Differential Privacy. SODA 2017.
    M. Naor, K. Nissim, U. Stemmer and C. Yan. Private Everlasting Prediction.
    NeurIPS 2023, Appendix C.
    """

    def __init__(
        self, lower: float, upper: float, epsilon: float, sensitivity: float, top_budget: int
    ) -> None:
        if not (math.isfinite(lower) and math.isfinite(upper) and lower < upper):
            raise ValueError(
                f"need finite thresholds lower < upper, got lower={lower!r}, upper={upper!r}."
            )
        _bt_validate(
            "BetweenThresholds", epsilon=epsilon, sensitivity=sensitivity, top_budget=top_budget
        )
        self.lower: float = float(lower)
        self.upper: float = float(upper)
        self.epsilon: float = float(epsilon)
        self.sensitivity: float = float(sensitivity)
        self.scales: tuple[float, float] = between_thresholds_scales(self.epsilon, self.sensitivity)
        self.top_budget: int = int(top_budget)
        self.tops_used: int = 0
        self.halted: bool = False
        self._mu: float | None = None  # drawn at the first query of each instance

    def _current_law(self, values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        if self._mu is None:
            self._mu = float(rng.laplace(0.0, self.scales[0]))
        return between_thresholds_conditional_proba(
            values, self.lower + self._mu, self.upper - self._mu, self.epsilon, self.sensitivity
        )

    def answer(self, values: ArrayLike, rng: np.random.Generator) -> np.ndarray:
        """Answer query values in order, until they run out or the mechanism halts.

        Parameters
        ----------
        values : array-like of float
            Query values, each with the declared sensitivity.
        rng : numpy.random.Generator
            The stream to draw from.

        Returns
        -------
        ndarray of int8
            One outcome code per answered value (:data:`BT_BELOW`,
            :data:`BT_ABOVE`, :data:`BT_TOP`); shorter than ``values`` when the
            mechanism halted (its last entry is then the halting TOP). Empty if
            it had already halted.
        """
        values = np.asarray(values, dtype=float).ravel()
        answered = []
        position = 0
        while position < values.size and not self.halted:
            chunk = values[position : position + _BT_CHUNK]
            outcomes = sample_categorical(self._current_law(chunk, rng), rng).astype(np.int8)
            tops = np.flatnonzero(outcomes == BT_TOP)
            if tops.size:
                outcomes = outcomes[: tops[0] + 1]  # later draws were under the old mu: discard
                self.tops_used += 1
                self._mu = None
                self.halted = self.tops_used >= self.top_budget
            answered.append(outcomes)
            position += outcomes.size
        return np.concatenate(answered) if answered else np.empty(0, dtype=np.int8)
