"""Private model selection: a private grid search and privately validated estimators.

- :class:`PrivateGridSearchCV`: a grid search over a subsample-and-aggregate
  classifier whose selection is itself differentially private.
- :class:`DPValidatedLogisticRegression` and
  :class:`DPValidatedHistogramDensity`: estimators that choose their own
  hyper-parameter privately by stability (Chaudhuri & Vinterbo, NeurIPS 2013)
  and release the retrained model.
"""

from .._stability import validation_score
from ..density import DPValidatedHistogramDensity
from ..density._histogram import histogram_stability_constants
from ..linear_model import DPValidatedLogisticRegression
from ..linear_model._validated_logistic import (
    PAPER_LAM_GRID,
    auto_lam_grid,
    coefficient_noise_scale,
    logistic_stability_constants,
    objective_perturbation_budget,
)
from ._search import PrivateGridSearchCV

__all__ = [
    "PAPER_LAM_GRID",
    "DPValidatedHistogramDensity",
    "DPValidatedLogisticRegression",
    "PrivateGridSearchCV",
    "auto_lam_grid",
    "coefficient_noise_scale",
    "histogram_stability_constants",
    "logistic_stability_constants",
    "objective_perturbation_budget",
    "validation_score",
]
