"""How many teachers: the teacher-count rules of subsample and aggregate.

``pac_n_partitions`` and ``agnostic_n_partitions`` (Dwork & Feldman 2018), the exact
``ceil_int`` they rest on, and the small parameter validators the mechanisms share.
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any

from ..utils._deprecation import renamed_kwargs
from ..utils._param_validation import Interval, check_param

__all__ = ["agnostic_n_partitions", "ceil_int", "pac_n_partitions"]


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
