"""Exact, vectorised privacy mechanisms and the closed forms they rest on.

Every function here is a pure function of its arguments (samplers take the
``numpy.random.Generator`` to draw from), but for :class:`BetweenThresholds`,
the one stateful mechanism: it keeps the state of one sparse-vector
instance. Estimators call them; tests pin their
values against the formulas of Dwork & Feldman (2018).

Sampling rules: label releases are drawn from their closed-form
probability with one uniform variate per row (inverse CDF on log-sum-exp
normalised scores), so no raw noisy float ever leaves an estimator; nothing is
sampled by MCMC or by exponentiating raw scores.
"""

from ._closed_forms import (
    exponential_mechanism_proba,
    exponential_mechanism_sample,
    fewest_mistakes_log_proba,
    gaussian_clip_bernoulli_proba,
    gaussian_sigma,
    laplace_clip_bernoulli_proba,
    laplace_positive_proba,
    laplace_scale,
    noisy_max_proba,
    noisy_max_sample,
    sample_categorical,
    sample_fewest_mistakes,
    sample_unit_laplace_vector,
    soft_majority_proba,
)
from ._exact import DEFAULT_GRID_STEPS as DEFAULT_GRID_STEPS
from ._exact import (
    discrete_gaussian_delta,
    discrete_gaussian_noise,
    discrete_gaussian_sigma,
    discrete_gaussian_sigma2,
    discrete_laplace_noise,
    discrete_laplace_scale,
    grid_gaussian_release,
    grid_laplace_release,
    snap_coefficients,
)
from ._sparse_vector import BT_ABOVE as BT_ABOVE
from ._sparse_vector import BT_BELOW as BT_BELOW
from ._sparse_vector import BT_TOP as BT_TOP
from ._sparse_vector import LOG_BASE as LOG_BASE
from ._sparse_vector import (
    BetweenThresholds,
    between_thresholds_composition,
    between_thresholds_conditional_proba,
    between_thresholds_gap,
    between_thresholds_proba,
    between_thresholds_scales,
    log_base,
)
from ._teacher_count import agnostic_n_partitions, ceil_int, pac_n_partitions

__all__ = [
    "BetweenThresholds",
    "agnostic_n_partitions",
    "between_thresholds_composition",
    "between_thresholds_conditional_proba",
    "between_thresholds_gap",
    "between_thresholds_proba",
    "between_thresholds_scales",
    "ceil_int",
    "discrete_gaussian_delta",
    "discrete_gaussian_noise",
    "discrete_gaussian_sigma",
    "discrete_gaussian_sigma2",
    "discrete_laplace_noise",
    "discrete_laplace_scale",
    "exponential_mechanism_proba",
    "exponential_mechanism_sample",
    "fewest_mistakes_log_proba",
    "gaussian_clip_bernoulli_proba",
    "gaussian_sigma",
    "grid_gaussian_release",
    "grid_laplace_release",
    "laplace_clip_bernoulli_proba",
    "laplace_positive_proba",
    "laplace_scale",
    "log_base",
    "noisy_max_proba",
    "noisy_max_sample",
    "pac_n_partitions",
    "sample_categorical",
    "sample_fewest_mistakes",
    "sample_unit_laplace_vector",
    "snap_coefficients",
    "soft_majority_proba",
]
