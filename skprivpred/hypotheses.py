"""Deprecated: the names of ``skprivpred.hypotheses`` now live in :mod:`skprivpred.finite`.

.. deprecated:: 0.4
   ``skprivpred.hypotheses`` will be removed in 0.6; import its names from
   :mod:`skprivpred.finite`.
"""

# ruff: noqa: F822 (the names of __all__ come from __getattr__)

from __future__ import annotations

import warnings
from typing import Any

__all__ = [
    "CANDIDATE_STRATEGIES",
    "THRESHOLD_DIRECTIONS",
    "ThresholdClass",
    "CandidateFamily",
    "ConjunctionClass",
    "FiniteHypothesisClass",
    "GridThresholdClass",
    "HypothesisClass",
    "HypothesisList",
    "LabelBoostCandidates",
    "binary_patterns",
    "build_candidates",
    "conjunction_mistakes",
    "mistake_counts",
    "superset_sums",
    "threshold_mistakes",
]

#: Where each name now lives (a name not in ``__all__`` may live in a private module).
_HOMES = {
    "CANDIDATE_STRATEGIES": "skprivpred.finite",
    "CandidateFamily": "skprivpred.finite",
    "ConjunctionClass": "skprivpred.finite",
    "FiniteHypothesisClass": "skprivpred.finite",
    "GridThresholdClass": "skprivpred.finite",
    "HypothesisClass": "skprivpred.finite",
    "HypothesisList": "skprivpred.finite",
    "LabelBoostCandidates": "skprivpred.finite",
    "THRESHOLD_DIRECTIONS": "skprivpred.finite",
    "ThresholdClass": "skprivpred.finite",
    "binary_patterns": "skprivpred.finite",
    "build_candidates": "skprivpred.finite",
    "conjunction_mistakes": "skprivpred.finite",
    "mistake_counts": "skprivpred.finite",
    "superset_sums": "skprivpred.finite",
    "threshold_mistakes": "skprivpred.finite",
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"skprivpred.hypotheses is deprecated since 0.4 and will be removed in 0.6; "
        f"import {name} from {_HOMES[name]}",
        FutureWarning,
        stacklevel=2,
    )
    from .finite import (
        CANDIDATE_STRATEGIES,
        THRESHOLD_DIRECTIONS,
        CandidateFamily,
        ConjunctionClass,
        FiniteHypothesisClass,
        GridThresholdClass,
        HypothesisClass,
        HypothesisList,
        LabelBoostCandidates,
        ThresholdClass,
        binary_patterns,
        build_candidates,
        conjunction_mistakes,
        mistake_counts,
        superset_sums,
        threshold_mistakes,
    )

    return {
        "CANDIDATE_STRATEGIES": CANDIDATE_STRATEGIES,
        "CandidateFamily": CandidateFamily,
        "ConjunctionClass": ConjunctionClass,
        "FiniteHypothesisClass": FiniteHypothesisClass,
        "GridThresholdClass": GridThresholdClass,
        "HypothesisClass": HypothesisClass,
        "HypothesisList": HypothesisList,
        "LabelBoostCandidates": LabelBoostCandidates,
        "THRESHOLD_DIRECTIONS": THRESHOLD_DIRECTIONS,
        "ThresholdClass": ThresholdClass,
        "binary_patterns": binary_patterns,
        "build_candidates": build_candidates,
        "conjunction_mistakes": conjunction_mistakes,
        "mistake_counts": mistake_counts,
        "superset_sums": superset_sums,
        "threshold_mistakes": threshold_mistakes,
    }[name]


def __dir__() -> list[str]:
    return sorted(_HOMES)
