"""skprivpred: scikit-learn estimators whose predictions are differentially private."""

from ._base import PrivacyWarning
from .accounting import BudgetExhaustedError, PrivacyAccountant
from .aggregate import SubsampleAggregateClassifier
from .averaging import SubsampleAverageClassifier, SubsampleAverageRegressor
from .finite import ExponentialMechanismClassifier, PrivateExpertsClassifier
from .walk import ExpProjectedWalk

__version__ = "0.1.0.dev0"

__all__ = [
    "BudgetExhaustedError",
    "ExpProjectedWalk",
    "ExponentialMechanismClassifier",
    "PrivacyAccountant",
    "PrivacyWarning",
    "PrivateExpertsClassifier",
    "SubsampleAggregateClassifier",
    "SubsampleAverageClassifier",
    "SubsampleAverageRegressor",
    "__version__",
]
