"""Deprecated: the names of ``skprivpred.aggregate`` now live in :mod:`skprivpred.ensemble`.

.. deprecated:: 0.4
   ``skprivpred.aggregate`` will be removed in 0.6; import its names from
   :mod:`skprivpred.ensemble`.
"""

# ruff: noqa: F822 (the names of __all__ come from __getattr__)

from __future__ import annotations

import warnings
from typing import Any

__all__ = [
    "SubsampleAggregateClassifier",
]

#: Where each name now lives (a name not in ``__all__`` may live in a private module).
_HOMES = {
    "ROWS_PER_CLASS": "skprivpred.ensemble",
    "SubsampleAggregateClassifier": "skprivpred.ensemble",
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"skprivpred.aggregate is deprecated since 0.4 and will be removed in 0.6; "
        f"import {name} from {_HOMES[name]}",
        FutureWarning,
        stacklevel=2,
    )
    from .ensemble import ROWS_PER_CLASS, SubsampleAggregateClassifier

    return {
        "ROWS_PER_CLASS": ROWS_PER_CLASS,
        "SubsampleAggregateClassifier": SubsampleAggregateClassifier,
    }[name]


def __dir__() -> list[str]:
    return sorted(_HOMES)
