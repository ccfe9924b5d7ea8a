"""Deprecated: the names of ``skprivpred.sufficient`` now live in :mod:`skprivpred.linear_model`.

.. deprecated:: 0.4
   ``skprivpred.sufficient`` will be removed in 0.6; import its names from
   :mod:`skprivpred.linear_model`.
"""

# ruff: noqa: F822 (the names of __all__ come from __getattr__)

from __future__ import annotations

import warnings
from typing import Any

__all__ = [
    "GRID_STEPS",
    "MAX_PUBLIC_ROWS",
    "SufficientStatisticClassifier",
    "SufficientStatisticRegressor",
]

#: Where each name now lives (a name not in ``__all__`` may live in a private module).
_HOMES = {
    "GRID_STEPS": "skprivpred.linear_model",
    "MAX_PUBLIC_ROWS": "skprivpred.linear_model",
    "SufficientStatisticClassifier": "skprivpred.linear_model",
    "SufficientStatisticRegressor": "skprivpred.linear_model",
    "detect_groups": "skprivpred.linear_model",
    "labelled_statistic": "skprivpred.linear_model",
    "public_sample_ranks": "skprivpred.linear_model",
    "spline_block": "skprivpred.linear_model",
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"skprivpred.sufficient is deprecated since 0.4 and will be removed in 0.6; "
        f"import {name} from {_HOMES[name]}",
        FutureWarning,
        stacklevel=2,
    )
    from .linear_model import (
        GRID_STEPS,
        MAX_PUBLIC_ROWS,
        SufficientStatisticClassifier,
        SufficientStatisticRegressor,
        detect_groups,
        labelled_statistic,
        public_sample_ranks,
        spline_block,
    )

    return {
        "GRID_STEPS": GRID_STEPS,
        "MAX_PUBLIC_ROWS": MAX_PUBLIC_ROWS,
        "SufficientStatisticClassifier": SufficientStatisticClassifier,
        "SufficientStatisticRegressor": SufficientStatisticRegressor,
        "detect_groups": detect_groups,
        "labelled_statistic": labelled_statistic,
        "public_sample_ranks": public_sample_ranks,
        "spline_block": spline_block,
    }[name]


def __dir__() -> list[str]:
    return sorted(_HOMES)
