"""Deprecated: the names of ``skprivpred.linear`` now live in :mod:`skprivpred.linear_model`.

.. deprecated:: 0.4
   ``skprivpred.linear`` will be removed in 0.6; import its names from
   :mod:`skprivpred.linear_model`.
"""

# ruff: noqa: F822 (the names of __all__ come from __getattr__)

from __future__ import annotations

import warnings
from typing import Any

__all__ = [
    "AveragedPSGDClassifier",
    "AveragedPSGDRegressor",
    "ConvergenceError",
    "StableERMClassifier",
    "StableERMRegressor",
    "default_classifier_radius",
    "default_feature_norm_bound",
    "erm_auto_lam",
    "erm_radius",
    "erm_sensitivity",
    "psgd_sensitivity",
    "psgd_step_size",
]

#: Where each name now lives (a name not in ``__all__`` may live in a private module).
_HOMES = {
    "AveragedPSGDClassifier": "skprivpred.linear_model",
    "AveragedPSGDRegressor": "skprivpred.linear_model",
    "ConvergenceError": "skprivpred.linear_model",
    "GRID_STEPS": "skprivpred.linear_model._linear",
    "StableERMClassifier": "skprivpred.linear_model",
    "StableERMRegressor": "skprivpred.linear_model",
    "default_classifier_radius": "skprivpred.linear_model",
    "default_feature_norm_bound": "skprivpred.linear_model",
    "erm_auto_lam": "skprivpred.linear_model",
    "erm_radius": "skprivpred.linear_model",
    "erm_sensitivity": "skprivpred.linear_model",
    "psgd_sensitivity": "skprivpred.linear_model",
    "psgd_step_size": "skprivpred.linear_model",
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"skprivpred.linear is deprecated since 0.4 and will be removed in 0.6; "
        f"import {name} from {_HOMES[name]}",
        FutureWarning,
        stacklevel=2,
    )
    from .linear_model import (
        AveragedPSGDClassifier,
        AveragedPSGDRegressor,
        ConvergenceError,
        StableERMClassifier,
        StableERMRegressor,
        default_classifier_radius,
        default_feature_norm_bound,
        erm_auto_lam,
        erm_radius,
        erm_sensitivity,
        psgd_sensitivity,
        psgd_step_size,
    )
    from .linear_model._linear import GRID_STEPS

    return {
        "AveragedPSGDClassifier": AveragedPSGDClassifier,
        "AveragedPSGDRegressor": AveragedPSGDRegressor,
        "ConvergenceError": ConvergenceError,
        "GRID_STEPS": GRID_STEPS,
        "StableERMClassifier": StableERMClassifier,
        "StableERMRegressor": StableERMRegressor,
        "default_classifier_radius": default_classifier_radius,
        "default_feature_norm_bound": default_feature_norm_bound,
        "erm_auto_lam": erm_auto_lam,
        "erm_radius": erm_radius,
        "erm_sensitivity": erm_sensitivity,
        "psgd_sensitivity": psgd_sensitivity,
        "psgd_step_size": psgd_step_size,
    }[name]


def __dir__() -> list[str]:
    return sorted(_HOMES)
