"""skprivpred: scikit-learn estimators whose predictions are differentially private."""

from skprivpred.accounting import PrivacyAccountant, PrivacyGuarantee
from skprivpred.aggregate import SubsampleAggregateClassifier
from skprivpred.averaging import SubsampleAverageClassifier, SubsampleAverageRegressor
from skprivpred.everlasting import (
    GenericBBLClassifier,
    PrivateEverlastingClassifier,
    genericbbl_plan,
    practical_plan,
    practical_schedule,
)
from skprivpred.exceptions import (
    BudgetExhaustedError,
    ConvergenceError,
    ForkedStateError,
    HopelessSettingWarning,
    HorizonExhaustedError,
    InsufficientSampleError,
    InvalidParameterError,
    LedgerError,
    PhaseDataError,
    PredictorHaltedError,
    PrivacyParameterError,
    PrivacyWarning,
    UnlabelledRowsWarning,
)
from skprivpred.finite import ExponentialMechanismClassifier, PrivateExpertsClassifier
from skprivpred.hypotheses import FiniteHypothesisClass, ThresholdClass
from skprivpred.linear import (
    AveragedPSGDClassifier,
    AveragedPSGDRegressor,
    StableERMClassifier,
    StableERMRegressor,
)
from skprivpred.mixtures import PrivateHalfspacePPMClassifier
from skprivpred.model_selection import (
    DPValidatedHistogramDensity,
    DPValidatedLogisticRegression,
    PrivateGridSearchCV,
)
from skprivpred.sufficient import SufficientStatisticClassifier, SufficientStatisticRegressor
from skprivpred.walk import ExpProjectedWalkClassifier

__version__ = "0.3.0"


def show_versions() -> None:
    """Print the versions of skprivpred, Python and the main dependencies (for bug reports)."""
    import platform
    from importlib.metadata import PackageNotFoundError, version

    print(f"skprivpred: {__version__}")
    print(f"python: {platform.python_version()} ({platform.platform()})")
    optional = ("pandas", "matplotlib", "dask", "distributed")
    for package in ("numpy", "scipy", "scikit-learn", "joblib", "skops", *optional):
        try:
            print(f"{package}: {version(package)}")
        except PackageNotFoundError:
            print(f"{package}: not installed")


__all__ = [
    "AveragedPSGDClassifier",
    "AveragedPSGDRegressor",
    "BudgetExhaustedError",
    "ConvergenceError",
    "DPValidatedHistogramDensity",
    "DPValidatedLogisticRegression",
    "ExpProjectedWalkClassifier",
    "ExponentialMechanismClassifier",
    "FiniteHypothesisClass",
    "ForkedStateError",
    "GenericBBLClassifier",
    "HopelessSettingWarning",
    "HorizonExhaustedError",
    "InsufficientSampleError",
    "InvalidParameterError",
    "LedgerError",
    "PhaseDataError",
    "PredictorHaltedError",
    "PrivacyAccountant",
    "PrivacyGuarantee",
    "PrivacyParameterError",
    "PrivacyWarning",
    "PrivateEverlastingClassifier",
    "PrivateExpertsClassifier",
    "PrivateGridSearchCV",
    "PrivateHalfspacePPMClassifier",
    "StableERMClassifier",
    "StableERMRegressor",
    "SubsampleAggregateClassifier",
    "SubsampleAverageClassifier",
    "SubsampleAverageRegressor",
    "SufficientStatisticClassifier",
    "SufficientStatisticRegressor",
    "ThresholdClass",
    "UnlabelledRowsWarning",
    "genericbbl_plan",
    "practical_plan",
    "practical_schedule",
    "show_versions",
    "__version__",
]
