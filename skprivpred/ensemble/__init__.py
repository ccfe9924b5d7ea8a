"""Subsample and aggregate: private predictions from an ensemble of disjoint teachers.

- :class:`SubsampleAggregateClassifier`: a private vote among the teachers (Dwork &
  Feldman 2018).
- :class:`SubsampleAverageClassifier` and :class:`SubsampleAverageRegressor`: a noisy
  average of the teachers' probabilities or values.

The private grid search over them stays in :mod:`skprivpred.model_selection`.
"""

from ._aggregate import ROWS_PER_CLASS as ROWS_PER_CLASS
from ._aggregate import SubsampleAggregateClassifier
from ._averaging import GRID_STEPS as GRID_STEPS
from ._averaging import (
    SubsampleAverageClassifier,
    SubsampleAverageRegressor,
    default_tree_depth,
    project_to_simplex,
)

__all__ = [
    "SubsampleAggregateClassifier",
    "SubsampleAverageClassifier",
    "SubsampleAverageRegressor",
    "default_tree_depth",
    "project_to_simplex",
]
