"""Deprecated: the names of ``skprivpred.averaging`` now live in :mod:`skprivpred.ensemble`.

.. deprecated:: 0.4
   ``skprivpred.averaging`` will be removed in 0.6; import its names from
   :mod:`skprivpred.ensemble`.
"""

# ruff: noqa: F822 (the names of __all__ come from __getattr__)

from __future__ import annotations

import warnings
from typing import Any

__all__ = [
    "SubsampleAverageClassifier",
    "SubsampleAverageRegressor",
    "default_tree_depth",
    "project_to_simplex",
]

#: Where each name now lives (a name not in ``__all__`` may live in a private module).
_HOMES = {
    "GRID_STEPS": "skprivpred.ensemble",
    "SubsampleAverageClassifier": "skprivpred.ensemble",
    "SubsampleAverageRegressor": "skprivpred.ensemble",
    "default_tree_depth": "skprivpred.ensemble",
    "project_to_simplex": "skprivpred.ensemble",
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"skprivpred.averaging is deprecated since 0.4 and will be removed in 0.6; "
        f"import {name} from {_HOMES[name]}",
        FutureWarning,
        stacklevel=2,
    )
    from .ensemble import (
        GRID_STEPS,
        SubsampleAverageClassifier,
        SubsampleAverageRegressor,
        default_tree_depth,
        project_to_simplex,
    )

    return {
        "GRID_STEPS": GRID_STEPS,
        "SubsampleAverageClassifier": SubsampleAverageClassifier,
        "SubsampleAverageRegressor": SubsampleAverageRegressor,
        "default_tree_depth": default_tree_depth,
        "project_to_simplex": project_to_simplex,
    }[name]


def __dir__() -> list[str]:
    return sorted(_HOMES)
