"""skprivpred: scikit-learn estimators whose predictions are differentially private."""

from ._base import PrivacyWarning
from .accounting import BudgetExhaustedError, PrivacyAccountant
from .aggregate import SubsampleAggregateClassifier
from .averaging import SubsampleAverageClassifier, SubsampleAverageRegressor
from .finite import ExponentialMechanismClassifier, PrivateExpertsClassifier
from .linear import (
    AveragedPSGDClassifier,
    AveragedPSGDRegressor,
    ConvergenceError,
    StableERMClassifier,
    StableERMRegressor,
)
from .mixtures import PrivateHalfspacePPM
from .walk import ExpProjectedWalk

__version__ = "0.1.0.dev0"

__all__ = [
    "AveragedPSGDClassifier",
    "AveragedPSGDRegressor",
    "BudgetExhaustedError",
    "ConvergenceError",
    "ExpProjectedWalk",
    "ExponentialMechanismClassifier",
    "PrivacyAccountant",
    "PrivacyWarning",
    "PrivateExpertsClassifier",
    "PrivateHalfspacePPM",
    "StableERMClassifier",
    "StableERMRegressor",
    "SubsampleAggregateClassifier",
    "SubsampleAverageClassifier",
    "SubsampleAverageRegressor",
    "__version__",
]
