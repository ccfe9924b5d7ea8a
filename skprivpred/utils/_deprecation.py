"""Renamed parameters: the old name keeps working, with a ``FutureWarning``.

The deprecation policy (``CONTRIBUTING.md``): a renamed parameter keeps working
exactly as before for two minor releases, and every use of the old name emits a
``FutureWarning`` saying what replaces it and when it goes.

Estimator parameters
    The old parameter stays in ``__init__`` with the default :data:`DEPRECATED`
    (the string ``"deprecated"``), so ``get_params``, ``set_params``, ``clone``,
    the ``repr`` and scikit-learn's estimator checks see an ordinary parameter.
    Its constraints are the new parameter's plus the sentinel
    (:func:`deprecated_constraints`). Wherever the estimator reads the value it
    calls :func:`renamed_param`, which returns the new parameter's value, or the
    old one with a ``FutureWarning`` when the old one was set; setting both is an
    :class:`~skprivpred.InvalidParameterError` naming both.

Keyword arguments of public functions
    :func:`renamed_kwargs` decorates the function (whose signature already uses
    the new names): a call with an old keyword warns and is passed on under the
    new name; a call that gives both is a ``TypeError`` naming both.

This module imports nothing from skprivpred but its exceptions and the
constraint base class.
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
import warnings
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from ..exceptions import InvalidParameterError
from ._param_validation import Constraint

__all__ = [
    "DEPRECATED",
    "REMOVED_IN",
    "RENAMED_IN",
    "deprecated_constraints",
    "deprecated_parameters",
    "renamed_message",
    "renamed_param",
    "renamed_kwargs",
]

#: The default of a renamed (old) estimator parameter: "not set".
DEPRECATED = "deprecated"
#: The release that renamed the parameters of issue 52, and the one that removes the old names.
RENAMED_IN = "0.4"
REMOVED_IN = "0.6"

F = TypeVar("F", bound=Callable[..., Any])


class _NotSet(Constraint):
    """The sentinel default of a renamed parameter (the old name, not set)."""

    def __init__(self, new: str | None = None) -> None:
        self.new = new

    def is_satisfied_by(self, value: Any) -> bool:
        return isinstance(value, str) and value == DEPRECATED

    def __str__(self) -> str:
        if self.new is None:
            return f"{DEPRECATED!r} (not set)"
        return f"{DEPRECATED!r} (not set: use {self.new!r})"


def deprecated_constraints(constraints: list[Any], new: str | None = None) -> list[Any]:
    """The constraints of a renamed parameter's old name.

    Parameters
    ----------
    constraints : list
        The new parameter's constraints (the same list object may be shared).
    new : str, optional
        The new name, shown in the message of a value that is refused.

    Returns
    -------
    list
        ``constraints`` and the sentinel :data:`DEPRECATED` (the default).

    Examples
    --------
    >>> from numbers import Real
    >>> from skprivpred.utils import Interval
    >>> target = [Interval(Real, 0, 1, closed="neither")]
    >>> constraints = {"target_error": target,
    ...                "alpha": deprecated_constraints(target, "target_error")}
    >>> len(constraints["alpha"])
    2
    """
    return [*constraints, _NotSet(new)]


def deprecated_parameters(estimator_class: type) -> dict[str, str]:
    """The deprecated old parameter names of a class, each with its new name.

    Read from ``_parameter_constraints``: an old name is one declared with
    :func:`deprecated_constraints`. Tests that enumerate parameters (the
    user-code audit, the vocabulary checks) skip these: an old name's value
    goes to the same place as the new name's, through :func:`renamed_param`.

    Parameters
    ----------
    estimator_class : type
        A class with a ``_parameter_constraints`` dict.

    Returns
    -------
    dict
        Old name to new name, in declaration order.
    """
    found: dict[str, str] = {}
    declared = getattr(estimator_class, "_parameter_constraints", {}) or {}
    for name, constraints in declared.items():
        if isinstance(constraints, str):
            continue
        for constraint in constraints:
            if isinstance(constraint, _NotSet):
                found[name] = constraint.new or ""
    return found


def renamed_message(old: str, new: str, owner: str | None = None, *, note: str = "") -> str:
    """The ``FutureWarning`` text for the old name ``old`` of ``new``.

    Examples
    --------
    >>> print(renamed_message("alpha", "target_error", "SubsampleAggregateClassifier"))
    `alpha` was renamed `target_error` in 0.4 and will be removed in 0.6; use
    SubsampleAggregateClassifier(target_error=...) instead.
    """
    where = f"{owner}({new}=...)" if owner else f"`{new}`"
    text = (
        f"`{old}` was renamed `{new}` in {RENAMED_IN} and will be removed in {REMOVED_IN}; "
        f"use {where} instead."
    )
    return f"{text} {note}" if note else text


def _is_default(value: Any, default: Any) -> bool:
    if value is default:
        return True
    if isinstance(default, bool | int | float | str | type(None)) and type(value) is type(default):
        return bool(value == default)
    return False


def _default_of(cls: type, name: str) -> Any:
    parameter = inspect.signature(cls.__init__).parameters[name]  # type: ignore[misc]
    return parameter.default


def renamed_param(estimator: Any, old: str, new: str, *, stacklevel: int | None = None) -> Any:
    """The value of a renamed estimator parameter, read through either name.

    Call it wherever the estimator reads the parameter (``fit`` and any public
    method that reads it), after ``_validate_params``.

    Parameters
    ----------
    estimator : estimator
        Its ``__init__`` has both ``old`` (default :data:`DEPRECATED`) and
        ``new``.
    old, new : str
        The two names.
    stacklevel : int, default=None
        Passed to :func:`warnings.warn` (2: the caller of the caller).
        ``None`` points the warning at the first caller outside skprivpred
        (the user's ``fit(...)`` line), however deep inside the library the
        value is read.

    Returns
    -------
    object
        ``getattr(estimator, new)`` when ``old`` is not set; otherwise
        ``getattr(estimator, old)``, after a ``FutureWarning``.

    Raises
    ------
    InvalidParameterError
        When both are set (``new`` differs from its default), naming both.

    Examples
    --------
    >>> import warnings
    >>> class Est:
    ...     def __init__(self, target_error=0.1, alpha=DEPRECATED):
    ...         self.target_error = target_error
    ...         self.alpha = alpha
    >>> renamed_param(Est(target_error=0.2), "alpha", "target_error")
    0.2
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     renamed_param(Est(alpha=0.3), "alpha", "target_error")
    0.3
    >>> caught[0].category.__name__
    'FutureWarning'
    """
    old_value = getattr(estimator, old)
    new_value = getattr(estimator, new)
    if isinstance(old_value, str) and old_value == DEPRECATED:
        return new_value
    owner = type(estimator).__name__
    if not _is_default(new_value, _default_of(type(estimator), new)):
        raise InvalidParameterError(
            f"Both {new!r} and its deprecated old name {old!r} of {owner} were set "
            f"(got {new}={_shown(new_value)} and {old}={_shown(old_value)}); set only {new!r}."
        )
    level = _outside_stacklevel() if stacklevel is None else stacklevel + 1
    warnings.warn(renamed_message(old, new, owner), FutureWarning, stacklevel=level)
    return old_value


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _outside_stacklevel() -> int:
    """The ``stacklevel`` (for a ``warn`` in the caller) of the first frame outside skprivpred."""
    frame = sys._getframe(2)  # the caller of the function that calls this one
    level = 2
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    return level


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def renamed_kwargs(renames: Mapping[str, str]) -> Callable[[F], F]:
    """Decorate a public function whose keyword arguments were renamed.

    The function's signature uses the new names. A call that uses an old
    keyword emits a ``FutureWarning`` and is passed on under the new name, so
    it gives exactly the result it gave before; a call that gives a value
    under both names (by keyword, or the new one by position) raises a
    ``TypeError`` naming both. The signature shown by :func:`inspect.signature`
    (and in the docs) is the function's own.

    Parameters
    ----------
    renames : dict
        Old keyword to new keyword, for example ``{"alpha": "target_error"}``.

    Examples
    --------
    >>> import warnings
    >>> @renamed_kwargs({"alpha": "target_error"})
    ... def rule(target_error, epsilon=1.0):
    ...     return target_error / epsilon
    >>> rule(0.5)
    0.5
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     rule(alpha=0.5)
    0.5
    >>> print(caught[0].message)
    `alpha` was renamed `target_error` in 0.4 and will be removed in 0.6; use
    rule(target_error=...) instead.
    """
    renames = dict(renames)

    def decorate(function: F) -> F:
        signature = inspect.signature(function)
        names = list(signature.parameters)
        positional = [
            name
            for name, parameter in signature.parameters.items()
            if parameter.kind
            in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        ]
        for old, new in renames.items():
            if new not in names:
                raise ValueError(
                    f"{function.__qualname__} has no parameter {new!r} (renamed from {old!r})."
                )
            if old in names:
                raise ValueError(f"{function.__qualname__} still has the old parameter {old!r}.")
        owner = function.__name__

        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            for old, new in renames.items():
                if old not in kwargs:
                    continue
                by_position = new in positional and positional.index(new) < len(args)
                if new in kwargs or by_position:
                    raise TypeError(
                        f"{owner}() got both {new!r} and its deprecated old name {old!r}; "
                        f"pass only {new!r}."
                    )
                warnings.warn(renamed_message(old, new, owner), FutureWarning, stacklevel=2)
                kwargs[new] = kwargs.pop(old)
            return function(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate
