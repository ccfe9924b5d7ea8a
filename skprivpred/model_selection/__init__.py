"""Private model selection: a private grid search and privately validated estimators.

- :class:`PrivateGridSearchCV`: a grid search over a subsample-and-aggregate
  classifier whose selection is itself differentially private.
- :class:`DPValidatedLogisticRegression` and
  :class:`DPValidatedHistogramDensity`: estimators that choose their own
  hyper-parameter privately by stability (Chaudhuri & Vinterbo, NeurIPS 2013)
  and release the retrained model.
"""

from skprivpred.model_selection._search import PrivateGridSearchCV
from skprivpred.model_selection._validated import (
    PAPER_LAM_GRID,
    DPValidatedHistogramDensity,
    DPValidatedLogisticRegression,
    auto_lam_grid,
    coefficient_noise_scale,
    histogram_stability_constants,
    logistic_stability_constants,
    objective_perturbation_budget,
    validation_score,
)

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
