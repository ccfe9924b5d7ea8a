"""The sparse-vector mechanism between two thresholds (Bun, Steinke & Ullman 2017).

The closed forms of its answers and its composition, and :class:`BetweenThresholds`,
the one stateful mechanism: an instance answers until its budget of ``top`` answers
is spent.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..utils._param_validation import validate_parameter_constraints
from ._closed_forms import sample_categorical
from ._teacher_count import _OPEN_UNIT, _POSITIVE, _POSITIVE_INT

__all__ = [
    "BetweenThresholds",
    "between_thresholds_composition",
    "between_thresholds_conditional_proba",
    "between_thresholds_gap",
    "between_thresholds_proba",
    "between_thresholds_scales",
    "log_base",
]


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
    from ..accounting._composition import advanced_composition

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
