"""Private learning over finite hypothesis classes.

- Hypothesis classes: :class:`FiniteHypothesisClass`, :class:`ThresholdClass`,
  :class:`ConjunctionClass`, :class:`GridThresholdClass`, :class:`HypothesisList`.
- Learners: :class:`ExponentialMechanismClassifier`, :class:`PrivateExpertsClassifier`.
- The exponential projected walk: :class:`ExpProjectedWalkClassifier`.
- Private prediction by mixtures of halfspaces: :class:`PrivateHalfspacePPMClassifier`
  and its candidate halfspaces (:func:`build_candidates`).
"""

from ._halfspaces import CANDIDATE_STRATEGIES, CandidateFamily, build_candidates, mistake_counts
from ._hypotheses import (
    THRESHOLD_DIRECTIONS,
    ConjunctionClass,
    FiniteHypothesisClass,
    GridThresholdClass,
    HypothesisClass,
    HypothesisList,
    LabelBoostCandidates,
    ThresholdClass,
    binary_patterns,
    conjunction_mistakes,
    superset_sums,
    threshold_mistakes,
)
from ._learners import (
    ExponentialMechanismClassifier,
    PrivateExpertsClassifier,
    mw_learning_rate,
    mw_round_proba,
    mw_round_rho,
)
from ._ppm import PrivateHalfspacePPMClassifier, em_excess_bound
from ._walk import TIE_HANDLING_OPTIONS as TIE_HANDLING_OPTIONS
from ._walk import ExpProjectedWalkClassifier, exppw_clamp_bound, exppw_min_samples, exppw_walk

__all__ = [
    "ExponentialMechanismClassifier",
    "PrivateExpertsClassifier",
    "mw_learning_rate",
    "mw_round_proba",
    "mw_round_rho",
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
    "ExpProjectedWalkClassifier",
    "exppw_clamp_bound",
    "exppw_min_samples",
    "exppw_walk",
    "PrivateHalfspacePPMClassifier",
    "em_excess_bound",
]
