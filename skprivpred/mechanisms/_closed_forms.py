"""Continuous mechanisms in closed form, and their samplers.

The soft majority, the exponential mechanism, report-noisy-max, the Laplace and
Gaussian calibrations (``laplace_scale``, ``gaussian_sigma``), the fewest-mistakes
release and the clipped-probability releases. Label releases are drawn from their
closed-form probability with one uniform variate per row.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import brentq
from scipy.special import expit, log_softmax
from scipy.stats import norm

from ._teacher_count import _in_open_unit, _positive, _positive_int

__all__ = [
    "exponential_mechanism_proba",
    "exponential_mechanism_sample",
    "fewest_mistakes_log_proba",
    "gaussian_clip_bernoulli_proba",
    "gaussian_sigma",
    "laplace_clip_bernoulli_proba",
    "laplace_positive_proba",
    "laplace_scale",
    "noisy_max_proba",
    "noisy_max_sample",
    "sample_categorical",
    "sample_fewest_mistakes",
    "sample_unit_laplace_vector",
    "soft_majority_proba",
]


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
