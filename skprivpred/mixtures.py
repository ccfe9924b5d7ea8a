"""Deprecated: the names of ``skprivpred.mixtures`` now live in :mod:`skprivpred.finite`.

.. deprecated:: 0.4
   ``skprivpred.mixtures`` will be removed in 0.6; import its names from
   :mod:`skprivpred.finite`.
"""

# ruff: noqa: F822 (the names of __all__ come from __getattr__)

from __future__ import annotations

import warnings
from typing import Any

__all__ = [
    "PrivateHalfspacePPMClassifier",
    "em_excess_bound",
]

#: Where each name now lives (a name not in ``__all__`` may live in a private module).
_HOMES = {
    "PrivateHalfspacePPMClassifier": "skprivpred.finite",
    "em_excess_bound": "skprivpred.finite",
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"skprivpred.mixtures is deprecated since 0.4 and will be removed in 0.6; "
        f"import {name} from {_HOMES[name]}",
        FutureWarning,
        stacklevel=2,
    )
    from .finite import PrivateHalfspacePPMClassifier, em_excess_bound

    return {
        "PrivateHalfspacePPMClassifier": PrivateHalfspacePPMClassifier,
        "em_excess_bound": em_excess_bound,
    }[name]


def __dir__() -> list[str]:
    return sorted(_HOMES)
