"""A method that may be missing, and says why: ``hasattr()`` is False, the error explains.

scikit-learn's :func:`~sklearn.utils.metaestimators.available_if` hides a method
when its check fails, but replaces any message with a generic one ("This 'X'
has no attribute 'predict_proba'"). A user who calls the missing method should
learn why it is missing and what to use instead; :func:`available_if_explained`
keeps ``hasattr()`` False (so scikit-learn's meta-estimators, ``Pipeline`` and
the estimator checks see no method) and raises an :class:`AttributeError` that
says both.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import update_wrapper
from types import MethodType
from typing import Any

__all__ = ["available_if_explained"]


class _ExplainedDescriptor:
    """The descriptor :func:`available_if_explained` returns (one per method)."""

    def __init__(
        self,
        fn: Callable,
        check: Callable[[Any], bool],
        reason: Callable[[Any], str],
    ) -> None:
        self.fn = fn
        self.check = check
        self.reason = reason
        self.attribute_name = fn.__name__
        update_wrapper(self, fn)  # type: ignore[arg-type]  # the docstring, for help() and docs

    def __set_name__(self, owner: type, name: str) -> None:
        self.attribute_name = name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self.fn  # the class documents the method (and says when it is missing)
        if not self.check(obj):
            raise AttributeError(
                f"This {type(obj).__name__!r} has no attribute {self.attribute_name!r}: "
                f"{self.reason(obj)}"
            )
        return MethodType(self.fn, obj)


def available_if_explained(
    check: Callable[[Any], bool], reason: Callable[[Any], str]
) -> Callable[[Callable], _ExplainedDescriptor]:
    """Decorate a method that exists only when ``check(self)`` is true.

    Parameters
    ----------
    check : callable
        ``check(self) -> bool``: whether the method is available on this object.
    reason : callable
        ``reason(self) -> str``: why it is not, and what to use instead (appended to
        the :class:`AttributeError`).

    The class itself keeps the function (for the API reference and ``help``);
    instances have it only when ``check`` is true.
    """

    def decorate(fn: Callable) -> _ExplainedDescriptor:
        return _ExplainedDescriptor(fn, check, reason)

    return decorate
