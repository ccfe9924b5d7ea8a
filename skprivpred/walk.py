"""Deprecated: the names of ``skprivpred.walk`` now live in :mod:`skprivpred.finite`.

.. deprecated:: 0.4
   ``skprivpred.walk`` will be removed in 0.6; import its names from
   :mod:`skprivpred.finite`.
"""

# ruff: noqa: F822 (the names of __all__ come from __getattr__)

from __future__ import annotations

import warnings
from typing import Any

__all__ = [
    "ExpProjectedWalkClassifier",
    "exppw_clamp_bound",
    "exppw_min_samples",
    "exppw_walk",
]

#: Where each name now lives (a name not in ``__all__`` may live in a private module).
_HOMES = {
    "ExpProjectedWalkClassifier": "skprivpred.finite",
    "TIE_HANDLING_OPTIONS": "skprivpred.finite",
    "exppw_clamp_bound": "skprivpred.finite",
    "exppw_min_samples": "skprivpred.finite",
    "exppw_walk": "skprivpred.finite",
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"skprivpred.walk is deprecated since 0.4 and will be removed in 0.6; "
        f"import {name} from {_HOMES[name]}",
        FutureWarning,
        stacklevel=2,
    )
    from .finite import (
        TIE_HANDLING_OPTIONS,
        ExpProjectedWalkClassifier,
        exppw_clamp_bound,
        exppw_min_samples,
        exppw_walk,
    )

    return {
        "ExpProjectedWalkClassifier": ExpProjectedWalkClassifier,
        "TIE_HANDLING_OPTIONS": TIE_HANDLING_OPTIONS,
        "exppw_clamp_bound": exppw_clamp_bound,
        "exppw_min_samples": exppw_min_samples,
        "exppw_walk": exppw_walk,
    }[name]


def __dir__() -> list[str]:
    return sorted(_HOMES)
