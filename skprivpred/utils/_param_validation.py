"""Declarative constraints for constructor parameters, checked at the top of ``fit``.

Each estimator declares a class attribute ``_parameter_constraints``: a dict
mapping every constructor parameter to a list of constraints, any one of which
the value must satisfy (or to the string ``"no_validation"``). A constraint is

- a :class:`Constraint` instance (:class:`Interval`, :class:`StrOptions`,
  :class:`Options`, :class:`HasMethods`, :class:`Bounds`);
- ``None``: the value may be ``None``;
- a type: any instance of it (``bool`` counts as a boolean only);
- one of the strings ``"boolean"``, ``"array-like"``, ``"random_state"``,
  ``"callable"``, ``"any"``.

A constraint that admits objects (a :class:`HasMethods`, ``"callable"``, a
class such as ``list``, ``tuple`` or ``dict``, ``"any"``) is wrapped in one of
two markers, which change nothing in what is accepted or in the message:
:class:`UserCodeParam` when the value is, or holds, code the library runs (an
estimator, a callable, a list of hypotheses, a basis), and :class:`Data` when it
is plain data (a label, a dict of sizes, a pair of bounds). The privacy audit
(``tests/audits/test_user_code_audit.py``) and the privacy-model page derive the list of
user-code parameters from these markers, and a test refuses an object
constraint that carries neither.

:func:`validate_parameter_constraints` raises :class:`InvalidParameterError`
(a ``ValueError`` and a ``TypeError``) whose message names the parameter, the
estimator, what is allowed and the value given. Cross-parameter rules (for
example "``delta`` must be 0 when ``noise='laplace'``") are not constraints:
each estimator checks them in one small hook after these.

This module imports nothing from skprivpred but its exceptions, and only public
scikit-learn API is used.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from numbers import Integral, Real
from typing import Any

import numpy as np

from ..exceptions import InvalidParameterError

__all__ = [
    "Bounds",
    "Constraint",
    "Data",
    "HasMethods",
    "Interval",
    "InvalidParameterError",
    "Options",
    "RealNotInt",
    "StrOptions",
    "UserCodeParam",
    "check_param",
    "user_code_parameters",
    "validate_parameter_constraints",
]


class RealNotInt(Real):
    """A real number that is not an integer type: ``Interval(RealNotInt, ...)``.

    Use it for a parameter that is a fraction (``0.2``) where an integer would
    mean something else (a count).
    """


RealNotInt.register(float)
RealNotInt.register(np.floating)


def _is_number(value: Any, kind: type) -> bool:
    if isinstance(value, bool | np.bool_):
        return False
    if kind is Integral:
        return isinstance(value, Integral)
    if kind is RealNotInt:
        return isinstance(value, Real) and not isinstance(value, Integral)
    return isinstance(value, Real)


class Constraint:
    """A condition a parameter value may satisfy; ``str`` says it in words."""

    def is_satisfied_by(self, value: Any) -> bool:
        raise NotImplementedError

    def __str__(self) -> str:
        raise NotImplementedError


class Interval(Constraint):
    """A number of a given type in an interval.

    Parameters
    ----------
    type : {numbers.Integral, numbers.Real, RealNotInt}
        The kind of number (``bool`` is never a number here).
    left, right : float or None
        The ends; ``None`` for an unbounded end. NaN is never inside, and an
        infinite value is inside only at a closed unbounded end, which cannot
        be written: so an interval with ``right=None`` admits finite values only.
    closed : {"left", "right", "both", "neither"}
        Which ends belong to the interval.
    """

    def __init__(self, type: type, left: float | None, right: float | None, *, closed: str) -> None:
        if type not in (Integral, Real, RealNotInt):
            raise ValueError(f"type must be Integral, Real or RealNotInt, got {type!r}.")
        if closed not in ("left", "right", "both", "neither"):
            raise ValueError(
                f"closed must be 'left', 'right', 'both' or 'neither', got {closed!r}."
            )
        self.type = type
        self.left = left
        self.right = right
        self.closed = closed

    def is_satisfied_by(self, value: Any) -> bool:
        if not _is_number(value, self.type):
            return False
        number = float(value)
        if not math.isfinite(number):
            return False
        if self.left is not None:
            if number < self.left or (number == self.left and self.closed in ("right", "neither")):
                return False
        if self.right is not None:
            if number > self.right or (number == self.right and self.closed in ("left", "neither")):
                return False
        return True

    def __str__(self) -> str:
        kind = {Integral: "an int", Real: "a float", RealNotInt: "a float"}[self.type]
        left_bracket = "[" if self.closed in ("left", "both") else "("
        right_bracket = "]" if self.closed in ("right", "both") else ")"
        left = "-inf" if self.left is None else f"{self.left:g}"
        right = "inf" if self.right is None else f"{self.right:g}"
        if self.left is None:
            left_bracket = "("
        if self.right is None:
            right_bracket = ")"
        return f"{kind} in the range {left_bracket}{left}, {right}{right_bracket}"


class Options(Constraint):
    """One of a fixed set of values of a given type."""

    def __init__(self, type: type | tuple[type, ...], options: Iterable[Any]) -> None:
        self.type = type
        self.options = tuple(options)

    def is_satisfied_by(self, value: Any) -> bool:
        if not isinstance(value, self.type) or isinstance(value, bool) and self.type is not bool:
            return False
        return any(value == option for option in self.options)

    def __str__(self) -> str:
        return "one of " + ", ".join(repr(option) for option in self.options)


class StrOptions(Options):
    """One of a fixed set of strings."""

    def __init__(self, options: Iterable[str]) -> None:
        super().__init__(str, sorted(options))


class HasMethods(Constraint):
    """An object with the named methods (for example an estimator with ``fit``)."""

    def __init__(self, methods: str | Iterable[str]) -> None:
        self.methods = (methods,) if isinstance(methods, str) else tuple(methods)

    def is_satisfied_by(self, value: Any) -> bool:
        return not isinstance(value, type) and all(
            callable(getattr(value, method, None)) for method in self.methods
        )

    def __str__(self) -> str:
        names = ", ".join(repr(method) for method in self.methods)
        return f"an object implementing {names}"


class Bounds(Constraint):
    """A pair ``(low, high)`` of finite real numbers with ``low < high``."""

    def is_satisfied_by(self, value: Any) -> bool:
        if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
            return False
        pair = list(value)
        return (
            len(pair) == 2
            and all(_is_number(end, Real) and math.isfinite(float(end)) for end in pair)
            and float(pair[0]) < float(pair[1])
        )

    def __str__(self) -> str:
        return "a pair (low, high) of finite numbers with low < high"


class _TypeConstraint(Constraint):
    def __init__(self, type: type) -> None:
        self.type = type

    def is_satisfied_by(self, value: Any) -> bool:
        if self.type is not bool and isinstance(value, bool):
            return False
        return isinstance(value, self.type)

    def __str__(self) -> str:
        return f"an instance of {self.type.__module__}.{self.type.__qualname__}".replace(
            "builtins.", ""
        )


class _NoneConstraint(Constraint):
    def is_satisfied_by(self, value: Any) -> bool:
        return value is None

    def __str__(self) -> str:
        return "None"


class _BooleanConstraint(Constraint):
    def is_satisfied_by(self, value: Any) -> bool:
        return isinstance(value, bool | np.bool_)

    def __str__(self) -> str:
        return "a bool"


class _ArrayLikeConstraint(Constraint):
    def is_satisfied_by(self, value: Any) -> bool:
        return (
            hasattr(value, "__len__") or hasattr(value, "shape") or hasattr(value, "__array__")
        ) and not isinstance(value, str | bytes | Mapping)

    def __str__(self) -> str:
        return "an array-like"


class _RandomStateConstraint(Constraint):
    def is_satisfied_by(self, value: Any) -> bool:
        if value is None:
            return True
        if isinstance(value, Integral) and not isinstance(value, bool):
            return int(value) >= 0
        return isinstance(
            value, np.random.Generator | np.random.RandomState | np.random.SeedSequence
        )

    def __str__(self) -> str:
        return "None, a non-negative int, or a numpy Generator, RandomState or SeedSequence"


class _CallableConstraint(Constraint):
    def is_satisfied_by(self, value: Any) -> bool:
        return callable(value)

    def __str__(self) -> str:
        return "a callable"


class _AnyConstraint(Constraint):
    def is_satisfied_by(self, value: Any) -> bool:
        return True

    def __str__(self) -> str:
        return "any value"


_NAMED = {
    "boolean": _BooleanConstraint,
    "array-like": _ArrayLikeConstraint,
    "random_state": _RandomStateConstraint,
    "callable": _CallableConstraint,
    "any": _AnyConstraint,
}

#: What user code a :class:`UserCodeParam` parameter takes (its ``kind``), and whether
#: the library runs it on protected rows. ``"student"`` is the one kind that sees
#: released answers only.
USER_CODE_KINDS: dict[str, str] = {
    "estimator": "a base estimator, cloned and fitted per teacher on its block; it answers queries",
    "student": "a student estimator, fitted on released (query, answer) pairs only",
    "hypothesis": "a hypothesis (a callable X -> labels, or a fitted classifier's predict)",
    "expert": "an expert (a callable X -> labels, or a fitted classifier's predict)",
    "hypothesis_class": "a hypothesis class object (labels, ERM on a block, candidates)",
    "basis": "a transformer mapping labelled values to features",
    "private_estimator": "a skprivpred estimator whose own user code is audited with it",
    "param_grid": "a parameter grid whose values may be estimators",
}


class _Marker(Constraint):
    """A constraint wrapped with what its values are; validation is the wrapped one's."""

    def __init__(self, constraint: Any) -> None:
        if isinstance(constraint, _Marker):
            raise ValueError("a marker wraps a plain constraint, not another marker.")
        self.constraint = constraint
        self._inner = make_constraint(constraint)

    def is_satisfied_by(self, value: Any) -> bool:
        return self._inner.is_satisfied_by(value)

    def __str__(self) -> str:
        return str(self._inner)


class UserCodeParam(_Marker):
    """Marks a parameter whose values are, or hold, user code the library runs.

    Validation (and its message) is the wrapped constraint's, unchanged. The
    marker declares what the value is, so that the user-code audit and the
    privacy-model page find every such parameter from ``_parameter_constraints``
    instead of a list kept by hand.

    Parameters
    ----------
    constraint : constraint declaration
        What is accepted, as in ``_parameter_constraints`` (a
        :class:`HasMethods`, ``list``, ``"callable"``, a class, ...).
    kind : str
        What code it is: a key of :data:`USER_CODE_KINDS` (``"estimator"``,
        ``"student"``, ``"hypothesis"``, ``"expert"``, ``"hypothesis_class"``,
        ``"basis"``, ``"private_estimator"``, ``"param_grid"``).
    each : bool, default=False
        ``True`` when the value is a container (a list or tuple, a grid) whose
        *items* are user code, as opposed to a list of numbers or labels.

    Examples
    --------
    >>> from skprivpred.utils import HasMethods, UserCodeParam
    >>> marked = UserCodeParam(HasMethods(["fit", "predict"]), kind="estimator")
    >>> str(marked), marked.kind, marked.protected_rows
    ("an object implementing 'fit', 'predict'", 'estimator', True)
    >>> UserCodeParam(list, kind="hypothesis", each=True).each
    True
    """

    def __init__(self, constraint: Any, *, kind: str, each: bool = False) -> None:
        if kind not in USER_CODE_KINDS:
            raise ValueError(f"kind must be one of {sorted(USER_CODE_KINDS)}, got {kind!r}.")
        super().__init__(constraint)
        self.kind = kind
        self.each = bool(each)

    @property
    def protected_rows(self) -> bool:
        """Whether the library runs this code on protected rows (all kinds but a student)."""
        return self.kind != "student"

    def __repr__(self) -> str:
        each = ", each=True" if self.each else ""
        return f"UserCodeParam({self.constraint!r}, kind={self.kind!r}{each})"


class Data(_Marker):
    """Marks an object, list, tuple or dict constraint whose values are plain data.

    A label, a dict of sizes or of column ranges, a pair of bounds: nothing the
    library calls. Validation (and its message) is the wrapped constraint's,
    unchanged.

    Examples
    --------
    >>> from skprivpred.utils import Data
    >>> Data(dict).is_satisfied_by({"n_teachers": 10})
    True
    """

    def __repr__(self) -> str:
        return f"Data({self.constraint!r})"


def user_code_parameters(estimator_class: type) -> dict[str, UserCodeParam]:
    """The parameters of a class marked :class:`UserCodeParam`, each with its marker.

    Parameters
    ----------
    estimator_class : type
        A class with a ``_parameter_constraints`` dict.

    Returns
    -------
    dict
        Parameter name to its :class:`UserCodeParam` marker, in declaration order.
    """
    found: dict[str, UserCodeParam] = {}
    declared = getattr(estimator_class, "_parameter_constraints", {}) or {}
    for name, constraints in declared.items():
        if isinstance(constraints, str):
            continue
        for constraint in constraints:
            if isinstance(constraint, UserCodeParam):
                found.setdefault(name, constraint)
    return found


def make_constraint(constraint: Any) -> Constraint:
    """The :class:`Constraint` that a declaration stands for."""
    if isinstance(constraint, Constraint):
        return constraint
    if constraint is None:
        return _NoneConstraint()
    if isinstance(constraint, str) and constraint in _NAMED:
        return _NAMED[constraint]()
    if isinstance(constraint, type):
        return _TypeConstraint(constraint)
    raise ValueError(f"Unknown constraint {constraint!r}.")


def _describe(constraints: list[Constraint]) -> str:
    words = [str(constraint) for constraint in constraints]
    # None last, as in "a float in the range (0, inf) or None".
    words.sort(key=lambda word: word == "None")
    if len(words) == 1:
        return words[0]
    return ", ".join(words[:-1]) + " or " + words[-1]


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def validate_parameter_constraints(
    parameter_constraints: Mapping[str, Any], params: Mapping[str, Any], caller_name: str
) -> None:
    """Check every parameter against its declared constraints.

    Parameters
    ----------
    parameter_constraints : dict
        Parameter name to a list of constraints (any one must hold) or
        ``"no_validation"``. Parameters without an entry are not checked.
    params : dict
        Parameter name to value (``estimator.get_params(deep=False)``).
    caller_name : str
        The estimator's class name, used in the message.

    Raises
    ------
    InvalidParameterError
        For the first parameter that satisfies none of its constraints, with
        the message ``"The 'name' parameter of Caller must be <allowed>. Got
        <value> instead."``.
    """
    for name, value in params.items():
        declared = parameter_constraints.get(name)
        if declared is None or declared == "no_validation":
            continue
        constraints = [make_constraint(constraint) for constraint in declared]
        if any(constraint.is_satisfied_by(value) for constraint in constraints):
            continue
        raise InvalidParameterError(
            f"The {name!r} parameter of {caller_name} must be {_describe(constraints)}. "
            f"Got {_shown(value)} instead."
        )


def check_param(value: Any, name: str, constraint: Any, *, caller_name: str | None = None) -> Any:
    """Check one argument against one constraint; return it unchanged.

    For the public functions of skprivpred (mechanisms, conversions), which
    have no ``_parameter_constraints`` of their own.

    Parameters
    ----------
    value : object
        The argument.
    name : str
        Its name, used in the message.
    constraint : constraint declaration
        As in ``_parameter_constraints`` (an :class:`Interval`, ``None``, a
        type, ...).
    caller_name : str, default=None
        The function's name, used in the message.

    Returns
    -------
    object
        ``value``.

    Raises
    ------
    InvalidParameterError
        If ``value`` does not satisfy ``constraint``.

    Examples
    --------
    >>> from numbers import Real
    >>> from skprivpred.utils import Interval, check_param
    >>> check_param(0.5, "epsilon", Interval(Real, 0, None, closed="neither"))
    0.5
    >>> check_param(-1, "epsilon", Interval(Real, 0, None, closed="neither"))
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    skprivpred.exceptions.InvalidParameterError: The 'epsilon' parameter must be ... Got -1 instead.
    """
    constraint = make_constraint(constraint)
    if not constraint.is_satisfied_by(value):
        of = f" of {caller_name}" if caller_name else ""
        raise InvalidParameterError(
            f"The {name!r} parameter{of} must be {constraint}. Got {_shown(value)} instead."
        )
    return value
