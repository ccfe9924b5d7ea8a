"""Composition of privacy losses: advanced composition, zCDP and their conversions.

Pure functions; the accountant (:mod:`._accountant`) composes with them.
"""

from __future__ import annotations

import functools
import math
from numbers import Integral, Real

import numpy as np
from scipy.optimize import minimize_scalar

from ..exceptions import (
    InvalidParameterError,
)
from ..utils._param_validation import (
    Interval,
    check_param,
)

__all__ = [
    "advanced_composition",
    "advanced_composition_epsilon",
    "advanced_composition_inverse",
    "eps_of_rho",
    "max_queries",
    "per_query_epsilon",
    "rho_cap",
    "zcdp_rho",
]


# Floating-point allowance when comparing spending with the cap: ten charges of
# 0.1 add up to 0.9999999999999999 or 1.0000000000000002 depending on order, and
# both must fit a budget of 1.0. The allowance is 1e-12 relative: a privacy
# loss factor of at most exp(1e-12 * epsilon).
_REL_TOL = 1e-12


def zcdp_rho(epsilon: float, delta: float) -> float:
    """The zCDP ``rho`` whose closed-form conversion gives exactly ``(epsilon, delta)``-DP.

    ``rho = (sqrt(ln(1/delta) + epsilon) - sqrt(ln(1/delta)))^2``, the inverse of
    ``epsilon = rho + 2 sqrt(rho ln(1/delta))`` (Bun & Steinke 2016, Proposition
    1.3). It is smaller than :func:`rho_cap` (the tight conversion), so a
    ``zcdp_rho(epsilon, delta)``-zCDP mechanism is ``(epsilon, delta)``-DP by
    either conversion.

    Parameters
    ----------
    epsilon : float
        Target epsilon, > 0.
    delta : float
        Target delta, in (0, 1).

    Returns
    -------
    float
        ``rho`` (0.0175 at ``epsilon = 1, delta = 1e-6``).

    Examples
    --------
    >>> round(zcdp_rho(1.0, 1e-6), 4)
    0.0175
    """
    epsilon = _checked("zcdp_rho", epsilon, "epsilon", _POSITIVE)
    delta = _checked("zcdp_rho", delta, "delta", _OPEN_UNIT)
    log_inv_delta = math.log(1.0 / delta)
    return (math.sqrt(log_inv_delta + epsilon) - math.sqrt(log_inv_delta)) ** 2


def advanced_composition(
    epsilon_0: float, delta_0: float, k: int, delta_prime: float
) -> tuple[float, float]:
    """``(epsilon, delta)`` of ``k`` adaptively chosen ``(epsilon_0, delta_0)``-DP releases.

    ``(advanced_composition_epsilon(epsilon_0, k, delta'), k delta_0 + delta')``
    (Dwork, Rothblum & Vadhan 2010). With ``delta' = k delta_0`` this is the
    composition of ``c`` BetweenThresholds instances in Naor, Nissim, Stemmer &
    Yan (2023), Observation 2: ``(sqrt(2 c ln(1/(c delta_0))) epsilon_0 + c
    epsilon_0 (e^{epsilon_0} - 1), 2 c delta_0)``.

    Parameters
    ----------
    epsilon_0 : float
        Epsilon of each release, > 0.
    delta_0 : float
        Delta of each release, in [0, 1).
    k : int
        Number of releases, >= 1.
    delta_prime : float
        The slack ``delta'``, in (0, 1), with ``k delta_0 + delta' < 1``.

    Returns
    -------
    tuple of float
        The composed ``(epsilon, delta)``.
    """
    caller = "advanced_composition"
    epsilon_0 = _checked(caller, epsilon_0, "epsilon_0", _POSITIVE)
    delta_0 = _checked(caller, delta_0, "delta_0", _HALF_OPEN_UNIT)
    k = int(_checked(caller, k, "k", _POSITIVE_COUNT))
    delta_prime = _checked(caller, delta_prime, "delta_prime", _OPEN_UNIT)
    delta = k * delta_0 + delta_prime
    if not delta < 1.0:
        raise InvalidParameterError(
            f"k * delta_0 + delta_prime must be < 1 in advanced_composition, got {delta!r}."
        )
    return advanced_composition_epsilon(epsilon_0, k, delta_prime), delta


def advanced_composition_inverse(epsilon: float, k: int, delta_prime: float) -> float:
    """Largest per-release ``epsilon_0`` whose ``k``-fold advanced composition is ``<= epsilon``.

    The inverse of :func:`advanced_composition_epsilon` in ``epsilon_0`` (which
    it increases), found by root finding and then stepped down until the
    composed epsilon is within ``epsilon``.

    Parameters
    ----------
    epsilon : float
        The composed epsilon, > 0.
    k : int
        Number of releases, >= 1.
    delta_prime : float
        The slack ``delta'``, in (0, 1).

    Returns
    -------
    float
        ``epsilon_0``.

    Examples
    --------
    >>> eps0 = advanced_composition_inverse(1.0, 10, 1e-7)
    >>> advanced_composition_epsilon(eps0, 10, 1e-7) <= 1.0
    True
    """
    from scipy.optimize import brentq

    caller = "advanced_composition_inverse"
    epsilon = _checked(caller, epsilon, "epsilon", _POSITIVE)
    k = int(_checked(caller, k, "k", _POSITIVE_COUNT))
    delta_prime = _checked(caller, delta_prime, "delta_prime", _OPEN_UNIT)

    def excess(epsilon_0: float) -> float:
        return advanced_composition_epsilon(epsilon_0, k, delta_prime) - epsilon

    high = epsilon
    while excess(high) <= 0:  # sqrt(2 k ln(1/delta')) < 1: the root lies above epsilon
        high *= 2.0
    epsilon_0 = brentq(excess, 1e-300, high, xtol=1e-300, rtol=1e-14)
    while excess(epsilon_0) > 0:  # root finding may stop just above the target
        epsilon_0 = math.nextafter(epsilon_0, 0.0)
    return float(epsilon_0)


def advanced_composition_epsilon(epsilon_0: float, k: int, delta_prime: float) -> float:
    """Epsilon of ``k`` adaptively chosen ``epsilon_0``-DP releases by advanced composition.

    ``epsilon_0 sqrt(2 k ln(1 / delta')) + k epsilon_0 (e^{epsilon_0} - 1)``, at
    the cost of an extra ``delta'`` (Dwork, Rothblum & Vadhan 2010; Dwork & Roth
    Thm 3.20).

    Parameters
    ----------
    epsilon_0 : float
        Epsilon of each release, > 0.
    k : int
        Number of releases, >= 0.
    delta_prime : float
        The slack ``delta'``, in (0, 1).

    Returns
    -------
    float
        The composed epsilon.
    """
    return epsilon_0 * math.sqrt(
        2.0 * k * math.log(1.0 / delta_prime)
    ) + k * epsilon_0 * math.expm1(epsilon_0)


# Renyi orders of the zCDP -> (epsilon, delta) conversion: every order gives a valid
# bound (Canonne, Kamath & Steinke 2020), so a fixed grid loses tightness only.
_RDP_ORDERS = np.unique(
    np.concatenate(
        [
            1.0 + 10.0 ** np.linspace(-2, 0, 40),
            np.linspace(2.05, 20, 200),
            np.linspace(20.5, 400, 400),
        ]
    )
)


def eps_of_rho(rho: float, delta: float) -> float:
    """Epsilon of a ``rho``-zCDP transcript at ``delta``, by the tight Renyi conversion.

    ``min over alpha > 1 of rho alpha + ln((alpha - 1)/alpha) - (ln delta + ln alpha)/(alpha - 1)``
    (Balle et al. 2020; Canonne, Kamath & Steinke 2020): a grid of orders, then a
    bounded 1-D refinement around the best one. Every order gives a valid bound.

    Parameters
    ----------
    rho : float
        zCDP parameter, >= 0.
    delta : float
        In (0, 1).

    Returns
    -------
    float
        The epsilon (0 when ``rho`` is 0).
    """
    rho = _checked("eps_of_rho", rho, "rho", _NON_NEGATIVE)
    delta = _checked("eps_of_rho", delta, "delta", _OPEN_UNIT)
    if rho == 0.0:
        return 0.0
    log_delta = math.log(delta)

    def bound(a):
        return rho * a + np.log((a - 1.0) / a) - (log_delta + np.log(a)) / (a - 1.0)

    values = bound(_RDP_ORDERS)
    best = int(np.argmin(values))
    # Refine between the neighbouring grid orders (any order is valid: this only tightens).
    lo = _RDP_ORDERS[max(best - 1, 0)]
    hi = _RDP_ORDERS[min(best + 1, len(_RDP_ORDERS) - 1)]
    refined = minimize_scalar(bound, bounds=(lo, hi), method="bounded", options={"xatol": 1e-10})
    return max(min(float(values[best]), float(refined.fun)), 0.0)


def rho_cap(epsilon: float, delta: float) -> float:
    """Largest zCDP ``rho`` whose tight conversion stays within ``(epsilon, delta)``.

    Found by bisection on :func:`eps_of_rho` and rounded down, so that the cap is
    never above the exact one:
    ``rho_cap(1, 1e-6) = 0.0243560``.

    Parameters
    ----------
    epsilon : float
        Total epsilon, > 0.
    delta : float
        Total delta, in (0, 1).

    Returns
    -------
    float
        The cap on the summed ``rho``.
    """
    epsilon = _checked("rho_cap", epsilon, "epsilon", _POSITIVE)
    return _rho_cap(epsilon, _checked("rho_cap", delta, "delta", _OPEN_UNIT))


@functools.lru_cache(maxsize=256)
def _rho_cap(epsilon: float, delta: float) -> float:
    """The bisection of :func:`rho_cap` (about 20 ms), remembered per budget."""
    lo, hi = 0.0, epsilon
    while eps_of_rho(hi, delta) <= epsilon:
        lo, hi = hi, 2.0 * hi
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if eps_of_rho(mid, delta) <= epsilon else (lo, mid)
    return lo  # eps_of_rho(lo, delta) <= epsilon holds at lo


def per_query_epsilon(epsilon: float, delta: float, n_queries: int) -> float:
    """Per-row epsilon of the soft majority for a horizon of ``n_queries`` rows.

    ``max(epsilon / q, sqrt(8 rho_cap(epsilon, delta) / q))``: the better of basic
    composition and zCDP accounting of the bounded-range vote (``rho = eps0^2 / 8``
    per row: Cesar & Rogers 2021). With ``delta = 0`` only basic
    composition applies.

    Parameters
    ----------
    epsilon : float
        Total epsilon, > 0.
    delta : float
        Total delta, in [0, 1).
    n_queries : int
        The horizon ``q``, >= 1.

    Returns
    -------
    float
        ``eps0``.
    """
    epsilon = _checked("per_query_epsilon", epsilon, "epsilon", _POSITIVE)
    _checked(
        "per_query_epsilon", n_queries, "n_queries", Interval(Integral, 1, None, closed="left")
    )
    basic = epsilon / n_queries
    if delta == 0:
        return basic
    return max(basic, math.sqrt(8.0 * rho_cap(epsilon, delta) / n_queries))


def max_queries(epsilon: float, delta: float, epsilon_per_query: float) -> int:
    """How many soft-majority rows at ``epsilon_per_query`` fit a total ``(epsilon, delta)``.

    ``max(floor(epsilon / eps0), floor(8 rho_cap(epsilon, delta) / eps0^2))``.

    Parameters
    ----------
    epsilon : float
        Total epsilon, > 0.
    delta : float
        Total delta, in [0, 1).
    epsilon_per_query : float
        ``eps0`` of each row, > 0.

    Returns
    -------
    int
        The number of rows.
    """
    eps0 = _checked("max_queries", epsilon_per_query, "epsilon_per_query", _POSITIVE)
    basic = math.floor(epsilon / eps0 * (1 + _REL_TOL))
    if delta == 0:
        return basic
    return max(basic, math.floor(8.0 * rho_cap(epsilon, delta) / eps0**2 * (1 + _REL_TOL)))


def _count(n: int, noun: str) -> str:
    """``"1 row"``, ``"2 rows"``: a count and its noun, singular or plural."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


_POSITIVE = Interval(Real, 0, None, closed="neither")
_NON_NEGATIVE = Interval(Real, 0, None, closed="left")
_OPEN_UNIT = Interval(Real, 0, 1, closed="neither")
_HALF_OPEN_UNIT = Interval(Real, 0, 1, closed="left")
_COUNT = Interval(Integral, 0, None, closed="left")
_POSITIVE_COUNT = Interval(Integral, 1, None, closed="left")


def _checked(caller: str, value, name: str, constraint) -> float:
    """``value`` as a float once it satisfies ``constraint`` (else InvalidParameterError)."""
    return float(check_param(value, name, constraint, caller_name=caller))
