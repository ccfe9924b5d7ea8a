"""Privacy budgets shared across queries and estimators.

A :class:`PrivacyAccountant` is the one place where the privacy loss of every
released answer is added up. Estimators charge it for all the rows of a query
call *before* they draw any noise; a charge that would exceed the budget raises
:class:`BudgetExhaustedError` and changes nothing.

The accountant is shared by identity: ``copy.copy``, ``copy.deepcopy`` and
``sklearn.base.clone`` of an estimator hand the clone the *same* accountant, so a
budget can never be duplicated by copying. Pickling keeps what was spent; an
unpickled accountant is a *separate* object from then on (it may live in
another process), so do not unpickle two copies of one budget and spend from
both: their spending would not add up anywhere.
"""

from __future__ import annotations

import math
import sys
import threading
from numbers import Integral, Real
from typing import NamedTuple, cast

import numpy as np
from scipy.optimize import minimize_scalar

__all__ = [
    "BudgetExhaustedError",
    "PrivacyAccountant",
    "advanced_composition_epsilon",
    "eps_of_rho",
    "max_queries",
    "per_query_epsilon",
    "rho_cap",
]

# Floating-point allowance when comparing spending with the cap: ten charges of
# 0.1 add up to 0.9999999999999999 or 1.0000000000000002 depending on order, and
# both must fit a budget of 1.0. The allowance is 1e-12 relative: a privacy
# loss factor of at most exp(1e-12 * epsilon).
_REL_TOL = 1e-12


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
# bound, so a fixed grid loses tightness only (spec-005 §3.2).
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
    rho = _check_real(rho, "rho", low=0.0, high=math.inf, low_open=False, high_open=True)
    delta = _check_real(delta, "delta", low=0.0, high=1.0, low_open=True, high_open=True)
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

    Found by bisection on :func:`eps_of_rho` and rounded down (spec-005 §3.2):
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
    epsilon = _check_real(epsilon, "epsilon", low=0.0, high=math.inf, low_open=True, high_open=True)
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
    per row; spec-005 §3). With ``delta = 0`` only basic composition applies.

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
    epsilon = _check_real(epsilon, "epsilon", low=0.0, high=math.inf, low_open=True, high_open=True)
    if isinstance(n_queries, bool) or not isinstance(n_queries, Integral) or n_queries < 1:
        raise ValueError(f"n_queries must be an integer >= 1, got {n_queries!r}.")
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
    eps0 = _check_real(
        epsilon_per_query,
        "epsilon_per_query",
        low=0.0,
        high=math.inf,
        low_open=True,
        high_open=True,
    )
    basic = math.floor(epsilon / eps0 * (1 + _REL_TOL))
    if delta == 0:
        return basic
    return max(basic, math.floor(8.0 * rho_cap(epsilon, delta) / eps0**2 * (1 + _REL_TOL)))


class _Totals(NamedTuple):
    """Running sums of a transcript's charges."""

    rows: int
    epsilon: float  # sum of per-row epsilons (basic composition)
    delta: float  # sum of per-row deltas (basic composition)
    rho: float  # zCDP of the pure charges
    ledger_epsilon: (
        float  # charges with delta > 0, composed with the zCDP part by basic composition
    )
    ledger_delta: float


class BudgetExhaustedError(RuntimeError):
    """Raised when answering a query would exceed the privacy budget.

    When it is raised nothing has been charged and no noise has been drawn:
    the estimator and its accountant are exactly as before the call, and a
    smaller call may still succeed.
    """


def _check_real(value, name: str, *, low: float, high: float, low_open: bool, high_open: bool):
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}.")
    value = float(value)
    ok_low = value > low if low_open else value >= low
    ok_high = value < high if high_open else value <= high
    if math.isnan(value) or not (ok_low and ok_high):
        left = "(" if low_open else "["
        right = ")" if high_open else "]"
        raise ValueError(f"{name} must lie in {left}{low}, {high}{right}, got {value!r}.")
    return value


class PrivacyAccountant:
    """A privacy budget that query calls charge before they answer.

    Parameters
    ----------
    epsilon : float, default=inf
        Total epsilon the accountant allows, > 0 (``inf``: no cap on epsilon,
        spending is still recorded).
    delta : float, default=0.0
        Total delta the accountant allows, in [0, 1).
    composition : {"basic", "advanced"}, default="basic"
        How per-row guarantees add up.

        - ``"basic"``: ``k`` releases that are ``(eps_i, delta_i)``-DP are
          ``(sum eps_i, sum delta_i)``-DP (Dwork & Roth, Thm 3.16).
        - ``"advanced"``: the advanced composition theorem (Dwork, Rothblum &
          Vadhan 2010; Dwork & Roth Thm 3.20; spec-000 §12.2): ``k`` adaptively
          chosen releases, each ``(eps0, delta0)``-DP, are also
          ``(eps0 sqrt(2 k ln(1/delta_prime)) + k eps0 (e^{eps0} - 1),
          k delta0 + delta_prime)``-DP. The theorem is stated for one per-row
          ``(eps0, delta0)``, so an advanced accountant takes every charge at the
          per-row guarantee of its first charge and refuses others with a
          ``ValueError`` (mixing per-row epsilons with an adaptive stopping rule
          needs privacy-filter theory; use ``"basic"``, which is valid for
          any mix). With one per-row guarantee the largest admissible ``k`` is
          fixed in advance, so stopping early is covered. The accountant
          reports whichever of the basic and the advanced pairs has the smaller
          epsilon while fitting the delta cap; both are valid.
        - ``"zcdp"``: zero-concentrated DP (Bun & Steinke 2016) with the tight
          conversion of :func:`eps_of_rho`. A pure ``epsilon``-DP charge carries
          ``rho = epsilon^2 / 2`` unless the mechanism states a smaller one (the
          soft-majority vote is bounded-range: ``rho = epsilon^2 / 8``); zCDP
          composes adaptively and a cap checked before each charge is a valid
          privacy filter (Feldman & Zrnic 2021). Charges with ``delta > 0`` go
          to an ``(epsilon, delta)`` ledger composed by basic composition; the
          transcript is ``(eps_of_rho(sum rho, delta - sum delta_ledger) + sum
          eps_ledger, delta)``-DP, and also basic-composition DP: the accountant
          reports the smaller epsilon. Needs ``delta > 0``.
    delta_prime : float, default=None
        The slack ``delta_prime`` of advanced composition, in (0, 1). Required
        for ``composition="advanced"``, ignored otherwise; it must be below
        ``delta``.
    max_queries : int, default=None
        Optional cap on the number of query rows answered.

    Attributes
    ----------
    queries_answered : int
        Number of query rows charged so far.
    epsilon_spent : float
        Epsilon of the whole transcript so far.
    delta_spent : float
        Delta of the whole transcript so far.

    Notes
    -----
    The accountant is thread-safe: a charge is checked and recorded under a
    lock, so concurrent calls can never overspend. Spending comparisons allow
    a relative floating-point slack of ``1e-12``.

    Examples
    --------
    >>> acc = PrivacyAccountant(epsilon=1.0)
    >>> acc.charge(n_rows=4, epsilon=0.25)
    >>> acc.epsilon_spent, acc.queries_answered
    (1.0, 4)
    """

    def __init__(
        self,
        epsilon: float = math.inf,
        delta: float = 0.0,
        composition: str = "basic",
        delta_prime: float | None = None,
        max_queries: int | None = None,
    ) -> None:
        self.epsilon = _check_real(
            epsilon, "epsilon", low=0.0, high=math.inf, low_open=True, high_open=False
        )
        self.delta = _check_real(delta, "delta", low=0.0, high=1.0, low_open=False, high_open=True)
        if composition not in ("basic", "advanced", "zcdp"):
            raise ValueError(
                f"composition must be 'basic', 'advanced' or 'zcdp', got {composition!r}."
            )
        if composition == "zcdp" and self.delta == 0:
            raise ValueError("composition='zcdp' needs a delta budget in (0, 1), got delta=0.0.")
        self.composition = composition
        if composition == "advanced":
            if delta_prime is None:
                raise ValueError("composition='advanced' needs delta_prime in (0, 1), got None.")
            delta_prime = _check_real(
                delta_prime, "delta_prime", low=0.0, high=1.0, low_open=True, high_open=True
            )
            if delta_prime >= self.delta:
                raise ValueError(
                    f"delta_prime must be smaller than the delta budget, got "
                    f"delta_prime={delta_prime!r} and delta={self.delta!r}."
                )
        elif delta_prime is not None:
            delta_prime = _check_real(
                delta_prime, "delta_prime", low=0.0, high=1.0, low_open=True, high_open=True
            )
        self.delta_prime = delta_prime
        if max_queries is not None and (
            isinstance(max_queries, bool)
            or not isinstance(max_queries, Integral)
            or max_queries < 0
        ):
            raise ValueError(
                f"max_queries must be a non-negative integer or None, got {max_queries!r}."
            )
        self.max_queries = None if max_queries is None else int(max_queries)
        self._lock = threading.Lock()
        # All the composition theorems need (with the one per-row guarantee for
        # advanced composition), updated as one tuple under the lock.
        self._totals = _Totals(0, 0.0, 0.0, 0.0, 0.0, 0.0)
        # Advanced composition: the one per-row (eps, delta).
        self._row_guarantee: tuple[float, float] | None = None

    # -- sharing and persistence -------------------------------------------------
    def __copy__(self) -> PrivacyAccountant:
        return self

    def __deepcopy__(self, memo) -> PrivacyAccountant:
        return self

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        del state["_lock"]
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    # -- spending ----------------------------------------------------------------
    def _guarantees(self, totals, row_epsilon: float | None) -> list[tuple[float, float]]:
        """Every valid (epsilon, delta) pair for a transcript with these totals."""
        pairs = [(totals.epsilon, totals.delta)]
        if self.composition == "advanced" and totals.rows > 0:
            # Both are set under advanced composition once a row is charged.
            row_eps, delta_prime = cast(float, row_epsilon), cast(float, self.delta_prime)
            adv = advanced_composition_epsilon(row_eps, totals.rows, delta_prime)
            pairs.append((adv, totals.delta + delta_prime))
        if self.composition == "zcdp" and totals.rho > 0:
            delta_z = self.delta - totals.ledger_delta
            if delta_z > 0:
                eps = eps_of_rho(totals.rho, delta_z) + totals.ledger_epsilon
                pairs.append((eps, self.delta))
        return pairs

    def _within_budget(self, totals, row_epsilon) -> bool:
        return any(self._fits(p) for p in self._guarantees(totals, row_epsilon))

    def _best(self, totals, row_epsilon):
        """The valid pair to report: the smallest epsilon among those within the cap."""
        pairs = self._guarantees(totals, row_epsilon)
        return min([p for p in pairs if self._fits(p)] or pairs)

    def _fits(self, pair) -> bool:
        eps, delta = pair
        return eps <= self.epsilon * (1 + _REL_TOL) and delta <= self.delta * (1 + _REL_TOL)

    def _totals_after(self, n_rows: int, epsilon: float, delta: float, rho: float | None):
        t = self._totals
        pure = delta == 0
        if rho is None:
            rho = epsilon**2 / 2.0  # pure epsilon-DP implies epsilon^2/2-zCDP
        return _Totals(
            t.rows + n_rows,
            t.epsilon + n_rows * epsilon,
            t.delta + n_rows * delta,
            t.rho + (n_rows * rho if pure else 0.0),
            t.ledger_epsilon + (0.0 if pure else n_rows * epsilon),
            t.ledger_delta + (0.0 if pure else n_rows * delta),
        )

    def _validate_charge(self, n_rows, epsilon, delta, rho=None):
        if isinstance(n_rows, bool) or not isinstance(n_rows, Integral) or n_rows < 0:
            raise ValueError(f"n_rows must be a non-negative integer, got {n_rows!r}.")
        epsilon = _check_real(
            epsilon, "epsilon", low=0.0, high=math.inf, low_open=True, high_open=True
        )
        delta = _check_real(delta, "delta", low=0.0, high=1.0, low_open=False, high_open=True)
        if rho is not None:
            rho = _check_real(rho, "rho", low=0.0, high=math.inf, low_open=True, high_open=True)
            rho = min(rho, epsilon**2 / 2.0)  # pure epsilon-DP is epsilon^2/2-zCDP anyway
        return int(n_rows), epsilon, delta, rho

    def _check_row_guarantee(self, epsilon: float, delta: float) -> None:
        """Advanced composition takes one per-row guarantee; call under the lock."""
        if self.composition == "advanced" and self._row_guarantee not in (None, (epsilon, delta)):
            eps0, delta0 = self._row_guarantee
            raise ValueError(
                f"this accountant uses advanced composition, which accounts for one per-row "
                f"guarantee: it was first charged at epsilon={eps0!r}, delta={delta0!r} per row "
                f"and cannot take epsilon={epsilon!r}, delta={delta!r}; use "
                "composition='basic' to mix per-row guarantees."
            )

    def _refusal(self, n_rows, epsilon, delta, rho, totals) -> str | None:
        if self.max_queries is not None and totals[0] > self.max_queries:
            return (
                f"answering {n_rows} more query rows would exceed max_queries="
                f"{self.max_queries} ({self._totals[0]} answered so far)."
            )
        if not self._within_budget(totals, epsilon):
            eps_after, delta_after = min(self._guarantees(totals, epsilon))
            return (
                f"answering {n_rows} more query rows at epsilon={epsilon!r}, delta={delta!r} "
                f"per row would spend (epsilon={eps_after:.6g}, delta={delta_after:.3g}), over "
                f"the budget (epsilon={self.epsilon!r}, delta={self.delta!r}); "
                f"{self.remaining_queries(epsilon, delta, rho)} rows at that cost still fit."
            )
        return None

    def can_charge(
        self, n_rows: int, epsilon: float, delta: float = 0.0, rho: float | None = None
    ) -> bool:
        """Whether a charge of ``n_rows`` rows at ``(epsilon, delta)`` each would fit.

        Parameters
        ----------
        n_rows : int
            Number of query rows.
        epsilon : float
            Per-row epsilon, > 0.
        delta : float, default=0.0
            Per-row delta, in [0, 1).
        rho : float, default=None
            Per-row zCDP parameter of a pure charge, if smaller than the generic
            ``epsilon^2 / 2`` (used by ``composition="zcdp"`` only).

        Returns
        -------
        bool
            True when :meth:`charge` with these arguments would succeed now.
        """
        n_rows, epsilon, delta, rho = self._validate_charge(n_rows, epsilon, delta, rho)
        with self._lock:
            self._check_row_guarantee(epsilon, delta)
            totals = self._totals_after(n_rows, epsilon, delta, rho)
            return self._refusal(n_rows, epsilon, delta, rho, totals) is None

    def charge(
        self, n_rows: int, epsilon: float, delta: float = 0.0, rho: float | None = None
    ) -> None:
        """Record ``n_rows`` releases, each ``(epsilon, delta)``-DP, or refuse.

        The check and the update happen atomically under the accountant's lock.

        Parameters
        ----------
        n_rows : int
            Number of query rows about to be answered.
        epsilon : float
            Per-row epsilon, > 0.
        delta : float, default=0.0
            Per-row delta, in [0, 1).
        rho : float, default=None
            Per-row zCDP parameter of a pure charge, if smaller than the generic
            ``epsilon^2 / 2`` (used by ``composition="zcdp"`` only).

        Raises
        ------
        BudgetExhaustedError
            If the charge would exceed the budget; nothing is recorded then.
        ValueError
            If an argument is invalid, or an advanced-composition accountant is
            charged at a second per-row guarantee; nothing is recorded then.
        """
        n_rows, epsilon, delta, rho = self._validate_charge(n_rows, epsilon, delta, rho)
        with self._lock:
            self._check_row_guarantee(epsilon, delta)
            totals = self._totals_after(n_rows, epsilon, delta, rho)
            reason = self._refusal(n_rows, epsilon, delta, rho, totals)
            if reason is not None:
                raise BudgetExhaustedError(reason)
            self._totals = totals
            if self.composition == "advanced" and n_rows > 0:
                self._row_guarantee = (epsilon, delta)

    def remaining_queries(
        self, epsilon: float, delta: float = 0.0, rho: float | None = None
    ) -> int:
        """Largest number of further rows at ``(epsilon, delta)`` each that fit the budget.

        Parameters
        ----------
        epsilon : float
            Per-row epsilon, > 0.
        delta : float, default=0.0
            Per-row delta, in [0, 1).
        rho : float, default=None
            Per-row zCDP parameter of a pure charge, if smaller than the generic
            ``epsilon^2 / 2`` (used by ``composition="zcdp"`` only).

        Returns
        -------
        int
            The number of rows (``sys.maxsize`` caps an unlimited budget).
        """
        _, epsilon, delta, rho = self._validate_charge(0, epsilon, delta, rho)
        self._check_row_guarantee(epsilon, delta)
        limit = sys.maxsize if self.max_queries is None else self.max_queries - self._totals[0]

        def fits(k: int) -> bool:
            return self._within_budget(self._totals_after(k, epsilon, delta, rho), epsilon)

        if fits(limit):
            return max(limit, 0)
        lo, hi = 0, 1
        while fits(hi):
            lo, hi = hi, hi * 2
        while hi - lo > 1:  # invariant: fits(lo), not fits(hi)
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if fits(mid) else (lo, mid)
        return lo

    @property
    def queries_answered(self) -> int:
        """Number of query rows charged so far."""
        return self._totals[0]

    @property
    def epsilon_spent(self) -> float:
        """Epsilon of everything released so far (under the chosen composition)."""
        return self.spent()[0]

    @property
    def delta_spent(self) -> float:
        """Delta of everything released so far (under the chosen composition)."""
        return self.spent()[1]

    def spent(self) -> tuple[float, float]:
        """The ``(epsilon, delta)`` guarantee of everything released so far.

        Returns
        -------
        tuple of float
            ``(epsilon, delta)``; with advanced composition, the valid pair with
            the smaller epsilon among those within the delta budget.
        """
        with self._lock:
            totals, row = self._totals, self._row_guarantee
        return self._best(totals, None if row is None else row[0])

    def __repr__(self) -> str:
        eps, delta = self.spent()
        return (
            f"PrivacyAccountant(epsilon={self.epsilon!r}, delta={self.delta!r}, "
            f"composition={self.composition!r}; spent epsilon={eps:.6g}, delta={delta:.3g} "
            f"over {self._totals[0]} query rows)"
        )
