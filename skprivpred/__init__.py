"""skprivpred: scikit-learn estimators whose predictions are differentially private."""

from .accounting import PrivacyAccountant, PrivacyGuarantee
from .ensemble import (
    SubsampleAggregateClassifier,
    SubsampleAverageClassifier,
    SubsampleAverageRegressor,
)
from .everlasting import (
    GenericBBLClassifier,
    PrivateEverlastingClassifier,
    genericbbl_plan,
    practical_plan,
    practical_schedule,
)
from .exceptions import (
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
from .finite import (
    ExponentialMechanismClassifier,
    ExpProjectedWalkClassifier,
    FiniteHypothesisClass,
    PrivateExpertsClassifier,
    PrivateHalfspacePPMClassifier,
    ThresholdClass,
)
from .linear_model import (
    AveragedPSGDClassifier,
    AveragedPSGDRegressor,
    StableERMClassifier,
    StableERMRegressor,
    SufficientStatisticClassifier,
    SufficientStatisticRegressor,
)
from .model_selection import (
    DPValidatedHistogramDensity,
    DPValidatedLogisticRegression,
    PrivateGridSearchCV,
)

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
