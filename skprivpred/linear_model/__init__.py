"""Private linear models.

- Stable ERM and averaged projected SGD (Dwork & Feldman 2018):
  :class:`StableERMClassifier`, :class:`StableERMRegressor`,
  :class:`AveragedPSGDClassifier`, :class:`AveragedPSGDRegressor`.
- The privately validated logistic regression (Chaudhuri & Vinterbo 2013):
  :class:`DPValidatedLogisticRegression`.
- One release, unlimited answers: :class:`SufficientStatisticClassifier` and
  :class:`SufficientStatisticRegressor`.
"""

from ..exceptions import ConvergenceError
from ._basis import GRID_STEPS, MAX_PUBLIC_ROWS
from ._basis import detect_groups as detect_groups
from ._basis import labelled_statistic as labelled_statistic
from ._basis import public_sample_ranks as public_sample_ranks
from ._basis import spline_block as spline_block
from ._linear import (
    AveragedPSGDClassifier,
    AveragedPSGDRegressor,
    StableERMClassifier,
    StableERMRegressor,
    default_classifier_radius,
    default_feature_norm_bound,
    erm_auto_lam,
    erm_radius,
    erm_sensitivity,
    psgd_sensitivity,
    psgd_step_size,
)
from ._sufficient import SufficientStatisticClassifier, SufficientStatisticRegressor
from ._validated_logistic import DPValidatedLogisticRegression

__all__ = [
    "AveragedPSGDClassifier",
    "AveragedPSGDRegressor",
    "ConvergenceError",
    "StableERMClassifier",
    "StableERMRegressor",
    "default_classifier_radius",
    "default_feature_norm_bound",
    "erm_auto_lam",
    "erm_radius",
    "erm_sensitivity",
    "psgd_sensitivity",
    "psgd_step_size",
    "GRID_STEPS",
    "MAX_PUBLIC_ROWS",
    "SufficientStatisticClassifier",
    "SufficientStatisticRegressor",
    "DPValidatedLogisticRegression",
]
