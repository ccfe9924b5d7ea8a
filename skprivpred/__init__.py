"""skprivpred: scikit-learn estimators whose predictions are differentially private."""

from ._base import PrivacyWarning
from .accounting import BudgetExhaustedError, PrivacyAccountant
from .aggregate import SubsampleAggregateClassifier
from .averaging import SubsampleAverageClassifier, SubsampleAverageRegressor

__version__ = "0.1.0.dev0"

__all__ = [
    "BudgetExhaustedError",
    "PrivacyAccountant",
    "PrivacyWarning",
    "SubsampleAggregateClassifier",
    "SubsampleAverageClassifier",
    "SubsampleAverageRegressor",
    "__version__",
]
