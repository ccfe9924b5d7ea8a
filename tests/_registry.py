"""The test suite's estimator registry: one enumeration and one instance factory.

Every test that runs over "every estimator" takes its classes from :func:`all_estimators`
(the public estimator classes of ``skprivpred.__all__``, as scikit-learn's
``all_estimators``), so a new public estimator joins each of them at once: the scikit-learn
checks (``test_common.py``), the side-channel audit, the mutant audit's completeness
check, the dask refusal and the user-code audit (which adds the other public classes that
declare their parameters, :func:`constrained_classes`). Every instance is built by
:func:`make_estimator`: the class with its defaults, or with the smallest main object it
cannot be built without (:data:`MAIN_OBJECTS`), then the test's own parameters.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.linear_model import LogisticRegression

import skprivpred
import skprivpred.model_selection


class FeaturePositive:
    """A public expert: label 1 when one feature is positive (picklable, stable repr for ids)."""

    def __init__(self, column: int) -> None:
        self.column = column

    def __call__(self, X):
        return (np.asarray(X, dtype=float)[:, self.column] > 0).astype(int)

    def __repr__(self) -> str:
        return f"FeaturePositive({self.column})"


PUBLIC_RULES = [FeaturePositive(0), FeaturePositive(-1)]

# The main object of the estimators that cannot be built without one: the smallest sensible
# instance, every other parameter left at its default.
MAIN_OBJECTS: dict[str, Callable[[type], Any]] = {
    # A grid of two candidates over the teacher count of the default subsample-and-aggregate
    # classifier, with teacher counts that the checks' data sets (10 to 30 rows) can hold.
    "PrivateGridSearchCV": lambda cls: cls(
        skprivpred.SubsampleAggregateClassifier(), {"n_teachers": [2, 3]}
    ),
    # Two public rules fixed in advance (an expert is a function of X alone).
    "PrivateExpertsClassifier": lambda cls: cls(PUBLIC_RULES),
    # The base learner the user guide uses.
    "PrivateEverlastingClassifier": lambda cls: cls(LogisticRegression()),
    # The same two public rules (used only if the constructor has no default hypothesis
    # class: today its default, monotone conjunctions, is checked).
    "ExponentialMechanismClassifier": lambda cls: cls(PUBLIC_RULES),
}


def _public_classes(modules) -> list[type]:
    found: list[type] = []
    for module in modules:
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isclass(obj) and obj not in found:
                found.append(obj)
    return found


def all_estimators() -> list[type]:
    """The public estimator classes (``skprivpred.__all__``), sorted by name."""
    return sorted(
        (cls for cls in _public_classes([skprivpred]) if issubclass(cls, BaseEstimator)),
        key=lambda cls: cls.__name__,
    )


def constrained_classes() -> list[type]:
    """Every public class of ``skprivpred`` and ``skprivpred.model_selection`` that declares
    its parameters (``_parameter_constraints``): the estimators and the accountant."""
    return [
        cls
        for cls in _public_classes([skprivpred, skprivpred.model_selection])
        if isinstance(getattr(cls, "_parameter_constraints", None), dict)
    ]


def _main_parameter(cls: type) -> inspect.Parameter | None:
    """The main object's parameter of ``cls``, if it cannot be built without one.

    A main object listed in :data:`MAIN_OBJECTS` with the default ``None`` is required all the
    same (PrivateExpertsClassifier's ``hypotheses`` keeps a default only so that its
    deprecated old name ``experts`` can stand in for it).
    """
    first = next(iter(inspect.signature(cls).parameters.values()), None)
    if first is None:
        return None
    if first.default is inspect.Parameter.empty or (
        first.default is None and cls.__name__ in MAIN_OBJECTS
    ):
        return first
    return None


def default_instance(cls: type) -> Any:
    """``cls`` with its defaults, or with its smallest main object if it needs one."""
    if _main_parameter(cls) is None:
        return cls()
    return MAIN_OBJECTS[cls.__name__](cls)


def make_estimator(cls: type, **params: Any) -> Any:
    """An instance of ``cls`` with ``params``: ``cls(**params)``, or, for a class that needs a
    main object that ``params`` does not give, its :data:`MAIN_OBJECTS` instance with ``params``
    set."""
    main = _main_parameter(cls)
    if main is not None and main.name not in params:
        return default_instance(cls).set_params(**params)
    return cls(**params)
