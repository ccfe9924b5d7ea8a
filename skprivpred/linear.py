"""Private prediction with stable linear models (Dwork & Feldman 2018, Section 4.4).

Two ways of fitting a linear model ``w`` on all the training rows make its
predictions ``<w, x>`` *uniformly stable*: replacing one training row moves the
prediction at any query ``x`` by at most a public ``gamma(x)``, which depends on
``n``, on public bounds and on the norm of the query only. Each answer then adds
noise calibrated to ``gamma(x)`` (the noisy stable predictor of Lemma 4.5).

- **Regularized ERM** (Theorem 4.9, Corollaries 4.10 and 4.11): minimise the
  mean loss plus ``(lam / 2) ||w||^2`` over the ball ``||w|| <= R``;
  ``gamma(x) = (4 L X / (lam n) + 2 tau) ||x~||``, where ``tau`` is the
  solver's certified accuracy (:class:`StableERMClassifier`,
  :class:`StableERMRegressor`).
- **Averaged projected SGD** (Theorem 4.12, Corollary 4.13): one pass of
  projected SGD with a constant step ``eta`` and the average of the iterates;
  ``gamma(x) = 2 eta L X ||x~||`` per epoch, twice the paper's printed rate
  (:class:`AveragedPSGDClassifier`, :class:`AveragedPSGDRegressor`).

Notation: ``X`` (as a number) is the norm bound of the *augmented* rows
``x~ = (clip(x, X0), c)``: raw features clipped to the public
``feature_norm_bound`` ``X0``, then the constant intercept feature ``c``
appended, so ``X = sqrt(X0^2 + c^2)``; ``L`` is the Lipschitz constant of the
loss in the prediction (spec-000 §5.0). The formula helpers here are pure
functions of public quantities, pinned by the tests.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from numbers import Real
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit
from scipy.stats import norm
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, column_or_1d, validate_data

from ._base import (
    PrivatePredictorMixin,
    check_accountant,
    check_epsilon,
    check_noise,
    check_positive_finite,
    check_positive_int,
    reject_fit_params,
    resolve_binary_classes,
)
from ._typing import MatrixLike, RandomStateLike, Self, VectorLike
from .accounting import PrivacyAccountant
from .exceptions import ConvergenceError
from .mechanisms import (
    DEFAULT_GRID_STEPS,
    discrete_gaussian_sigma,
    gaussian_sigma,
    grid_gaussian_release,
    grid_laplace_release,
    laplace_positive_proba,
    sample_categorical,
)

__all__ = [
    "AveragedPSGDClassifier",
    "AveragedPSGDRegressor",
    "ConvergenceError",
    "StableERMClassifier",
    "StableERMRegressor",
    "erm_auto_lambda",
    "erm_sensitivity",
    "psgd_sensitivity",
    "psgd_step_size",
]

# Real-valued answers are released on a public grid of step gamma(x) / GRID_STEPS
# (mechanisms.grid_laplace_release / grid_gaussian_release): the noise grows by a
# factor 1 + 1/GRID_STEPS.
GRID_STEPS = DEFAULT_GRID_STEPS

# Default certified solver accuracy, relative to the exact-minimiser stability
# 4 L X / (lam n): the sensitivity grows by a factor 1 + 2e-4.
_DEFAULT_RELATIVE_TOL = 1e-4

# A query whose augmented norm is 0 (no intercept, x = 0) has the score 0 on
# every data set; any positive sensitivity is then valid. This keeps the noise
# samplers away from a zero scale.
_SMALLEST_SENSITIVITY = np.finfo(float).tiny

# The certificate of the ball-constrained solver needs an upper bound on the
# curvature of the objective; the numerical top eigenvalue gets this margin.
_CURVATURE_MARGIN = 1e-6
_MAX_FEATURES_FOR_EIGENVALUE = 2000


# -- formulas (public quantities only) -------------------------------------------------
def _query_norm(query_norm, norm_bound: float):
    if query_norm is None:
        return norm_bound
    query_norm = np.asarray(query_norm, dtype=float)
    if not np.all(np.isfinite(query_norm) & (query_norm >= 0)):
        raise ValueError("query_norm must be finite and >= 0.")
    return query_norm if query_norm.ndim else float(query_norm)


def erm_sensitivity(
    n_samples: int,
    lam: float,
    loss_lipschitz: float,
    norm_bound: float,
    query_norm=None,
    solver_tol: float = 0.0,
):
    """Prediction stability of regularized ERM (Theorem 4.9, plus the solver's accuracy).

    ``gamma(x) = (4 L X / (lam n) + 2 tau) ||x~||``. The exact minimisers of
    ``mean loss + (lam/2) ||w||^2`` on neighbouring data sets are at most
    ``4 L X / (lam n)`` apart (the data terms are ``L X``-Lipschitz in ``w``);
    each fitted model is within ``tau`` of its exact minimiser.

    Parameters
    ----------
    n_samples : int
        Number of training rows ``n`` (public under replace-one neighbours).
    lam : float
        Regularization strength, > 0.
    loss_lipschitz : float
        Lipschitz constant ``L`` of the loss in the prediction, > 0.
    norm_bound : float
        Norm bound ``X`` of the (augmented) training rows, > 0.
    query_norm : float or array-like, default=None
        Norm ``||x~||`` of the (augmented) query; ``None`` means ``X``.
    solver_tol : float, default=0.0
        Certified distance ``tau`` between the fitted and the exact minimiser.

    Returns
    -------
    float or ndarray
        ``gamma`` at the given query norm(s).

    Examples
    --------
    >>> round(erm_sensitivity(1000, 0.01, 1.0, 1.0), 12)
    0.4
    """
    n_samples = check_positive_int(n_samples, "n_samples")
    lam = check_positive_finite(lam, "lam")
    loss_lipschitz = check_positive_finite(loss_lipschitz, "loss_lipschitz")
    norm_bound = check_positive_finite(norm_bound, "norm_bound")
    if isinstance(solver_tol, bool) or not isinstance(solver_tol, Real) or not solver_tol >= 0:
        raise ValueError(f"solver_tol must be a real number >= 0, got {solver_tol!r}.")
    per_norm = 4.0 * loss_lipschitz * norm_bound / (lam * n_samples) + 2.0 * float(solver_tol)
    return per_norm * _query_norm(query_norm, norm_bound)


def erm_auto_lambda(
    n_samples: int, epsilon: float, radius: float, loss_lipschitz: float, norm_bound: float
) -> float:
    """Regularization that balances ridge bias and noise (Corollary 4.11).

    ``lam = 2 X L / (R sqrt(n epsilon / (1 + epsilon)))``; with it, the expected
    excess loss of the noisy predictions is at most
    ``4 R X L / sqrt(n epsilon / (1 + epsilon))``, whatever the dimension.

    Parameters
    ----------
    n_samples : int
        Number of training rows ``n``.
    epsilon : float
        Per-query privacy parameter, > 0.
    radius : float
        Radius ``R`` of the coefficient ball, > 0.
    loss_lipschitz : float
        Lipschitz constant ``L`` of the loss in the prediction, > 0.
    norm_bound : float
        Norm bound ``X`` of the (augmented) rows, > 0.

    Returns
    -------
    float
        The regularization strength ``lam``.

    Examples
    --------
    >>> round(erm_auto_lambda(1000, 1.0, 1.0, 1.0, 1.0), 7)
    0.0894427
    """
    n_samples = check_positive_int(n_samples, "n_samples")
    epsilon = check_positive_finite(epsilon, "epsilon")
    radius = check_positive_finite(radius, "radius")
    loss_lipschitz = check_positive_finite(loss_lipschitz, "loss_lipschitz")
    norm_bound = check_positive_finite(norm_bound, "norm_bound")
    effective_n = n_samples * epsilon / (1.0 + epsilon)
    return 2.0 * norm_bound * loss_lipschitz / (radius * math.sqrt(effective_n))


def psgd_step_size(
    n_samples: int, radius: float, loss_lipschitz: float, norm_bound: float
) -> float:
    """Step size of single-pass averaged projected SGD (Theorem 4.12).

    ``eta = R / (X L sqrt(n))``, which gives the non-private excess loss
    ``2 R X L / sqrt(n)``.

    Parameters
    ----------
    n_samples : int
        Number of training rows ``n``.
    radius : float
        Radius ``R`` of the coefficient ball, > 0.
    loss_lipschitz : float
        Lipschitz constant ``L`` of the loss in the prediction, > 0.
    norm_bound : float
        Norm bound ``X`` of the (augmented) rows, > 0.

    Returns
    -------
    float
        The step size ``eta``.

    Examples
    --------
    >>> psgd_step_size(10_000, 1.0, 1.0, 1.0)
    0.01
    """
    n_samples = check_positive_int(n_samples, "n_samples")
    radius = check_positive_finite(radius, "radius")
    loss_lipschitz = check_positive_finite(loss_lipschitz, "loss_lipschitz")
    norm_bound = check_positive_finite(norm_bound, "norm_bound")
    return radius / (norm_bound * loss_lipschitz * math.sqrt(n_samples))


def psgd_sensitivity(
    eta: float, loss_lipschitz: float, norm_bound: float, query_norm=None, n_epochs: int = 1
):
    """Prediction stability of averaged projected SGD (Theorem 4.12, corrected).

    ``gamma(x) = 2 eta L X ||x~|| n_epochs``. Runs on neighbouring data sets
    (same data-independent order) coincide until the differing row is used;
    that step moves them apart by at most ``2 eta L X`` and the later steps,
    1-expansive for smooth convex losses with ``eta <= 2 / sigma``, never
    increase the gap; each epoch visits the differing row once. The paper
    prints ``R X / sqrt(n)``, half of ``2 eta L X`` at its step size; a
    two-point data set attains ``2 eta L X`` (spec-000 §5.6), so noise
    calibrated to the printed rate gives only about ``2 epsilon``.

    Parameters
    ----------
    eta : float
        Step size, > 0.
    loss_lipschitz : float
        Lipschitz constant ``L`` of the loss in the prediction, > 0.
    norm_bound : float
        Norm bound ``X`` of the (augmented) rows, > 0.
    query_norm : float or array-like, default=None
        Norm ``||x~||`` of the (augmented) query; ``None`` means ``X``.
    n_epochs : int, default=1
        Number of passes over the data.

    Returns
    -------
    float or ndarray
        ``gamma`` at the given query norm(s).

    Examples
    --------
    >>> psgd_sensitivity(0.01, 1.0, 1.0)
    0.02
    """
    eta = check_positive_finite(eta, "eta")
    loss_lipschitz = check_positive_finite(loss_lipschitz, "loss_lipschitz")
    norm_bound = check_positive_finite(norm_bound, "norm_bound")
    n_epochs = check_positive_int(n_epochs, "n_epochs")
    return 2.0 * eta * loss_lipschitz * norm_bound * n_epochs * _query_norm(query_norm, norm_bound)


# -- losses (spec-000 §5.0) ------------------------------------------------------------
@dataclass(frozen=True)
class _Loss:
    """A loss of the prediction ``a`` and target ``y``, with its public constants.

    ``lipschitz`` bounds ``|d loss / da|`` over every prediction a model in the
    ball can make; ``smoothness`` bounds ``d^2 loss / da^2``. ``slope`` is
    vectorised, ``scalar_slope`` is the same derivative on Python floats (for
    the sequential SGD pass).
    """

    name: str
    lipschitz: float
    smoothness: float
    value: Callable[[np.ndarray, np.ndarray], np.ndarray]
    slope: Callable[[np.ndarray, np.ndarray], np.ndarray]
    scalar_slope: Callable[[float, float], float]


def _logistic_scalar_slope(a: float, y: float) -> float:
    margin = y * a
    if margin >= 0:
        tail = math.exp(-margin)
        return -y * tail / (1.0 + tail)
    return -y / (1.0 + math.exp(margin))


def _logistic() -> _Loss:
    """``ln(1 + exp(-y a))`` with ``y`` in {-1, +1}: ``L = 1``, ``sigma = 1/4``."""
    return _Loss(
        "logistic",
        lipschitz=1.0,
        smoothness=0.25,
        value=lambda a, y: np.logaddexp(0.0, -y * a),
        slope=lambda a, y: -y * expit(-y * a),
        scalar_slope=_logistic_scalar_slope,
    )


def _huberized_hinge(h: float) -> _Loss:
    """Hinge smoothed over a width ``h``: ``L = 1``, ``sigma = 1/h``.

    With the margin ``z = y a``: 0 for ``z >= 1``, ``(1 - z)^2 / (2h)`` for
    ``1 - h < z < 1`` and ``1 - z - h/2`` below.
    """

    def value(a, y):
        z = y * a
        quadratic = (1.0 - z) ** 2 / (2.0 * h)
        return np.where(z >= 1.0, 0.0, np.where(z > 1.0 - h, quadratic, 1.0 - z - h / 2.0))

    return _Loss(
        "huberized_hinge",
        lipschitz=1.0,
        smoothness=1.0 / h,
        value=value,
        slope=lambda a, y: -y * np.clip((1.0 - y * a) / h, 0.0, 1.0),
        scalar_slope=lambda a, y: -y * min(max((1.0 - y * a) / h, 0.0), 1.0),
    )


def _squared(radius: float, norm_bound: float, y_bound: float) -> _Loss:
    """``(a - y)^2 / 2``: ``L = R X + Y`` on the ball (``|a| <= R X``, ``|y| <= Y``); ``sigma = 1``.

    The slope ``a - y`` is not bounded off the ball; every model this module
    uses lies in it.
    """
    return _Loss(
        "squared",
        lipschitz=radius * norm_bound + y_bound,
        smoothness=1.0,
        value=lambda a, y: 0.5 * (a - y) ** 2,
        slope=lambda a, y: a - y,
        scalar_slope=lambda a, y: a - y,
    )


def _huber(h: float) -> _Loss:
    """Huber loss of the residual ``u = a - y`` with threshold ``h``: ``L = h``, ``sigma = 1``."""

    def value(a, y):
        u = np.abs(a - y)
        return np.where(u <= h, 0.5 * u**2, h * u - 0.5 * h**2)

    return _Loss(
        "huber",
        lipschitz=h,
        smoothness=1.0,
        value=value,
        slope=lambda a, y: np.clip(a - y, -h, h),
        scalar_slope=lambda a, y: min(max(a - y, -h), h),
    )


# -- rows: clipping to the public bound and the intercept feature -------------------------
def _augmented_rows(X: np.ndarray, feature_norm_bound: float, intercept_scaling: float | None):
    """Rows clipped to ``feature_norm_bound``, with the constant ``intercept_scaling`` appended.

    Returns the augmented rows and their norms ``||x~||`` (a public function
    of the query for query rows).
    """
    norms = np.linalg.norm(X, axis=1)
    clipped = X * (feature_norm_bound / np.maximum(norms, feature_norm_bound))[:, None]
    clipped_norms = np.minimum(norms, feature_norm_bound)
    if intercept_scaling is None:
        return clipped, clipped_norms
    column = np.full((X.shape[0], 1), intercept_scaling)
    return np.hstack([clipped, column]), np.hypot(clipped_norms, intercept_scaling)


def _project_to_ball(w: np.ndarray, radius: float | None) -> np.ndarray:
    if radius is None:
        return w
    norm_w = np.linalg.norm(w)
    return w if norm_w <= radius else w * (radius / norm_w)


# -- Algorithm D: certified regularized ERM ----------------------------------------------
class _RegularizedObjective:
    """``F(w) = mean loss(<w, x~_i>, y_i) + (lam / 2) ||w||^2`` and its gradient."""

    def __init__(self, features: np.ndarray, targets: np.ndarray, loss: _Loss, lam: float) -> None:
        self.features = features
        self.targets = targets
        self.loss = loss
        self.lam = lam

    def value_and_gradient(self, w: np.ndarray) -> tuple[float, np.ndarray]:
        scores = self.features @ w
        n_samples = self.targets.shape[0]
        mean_loss = float(np.mean(self.loss.value(scores, self.targets)))
        value = mean_loss + 0.5 * self.lam * float(w @ w)
        slopes = self.loss.slope(scores, self.targets)
        gradient = self.features.T @ slopes / n_samples + self.lam * w
        return value, gradient

    def gradient(self, w: np.ndarray) -> np.ndarray:
        scores = self.features @ w
        return (
            self.features.T @ self.loss.slope(scores, self.targets) / self.targets.shape[0]
            + self.lam * w
        )

    def smoothness(self) -> float:
        """An upper bound on the largest eigenvalue of the Hessian of ``F``."""
        n_samples, n_features = self.features.shape
        trace = float(np.einsum("ij,ij->", self.features, self.features)) / n_samples
        top = trace
        if n_features <= _MAX_FEATURES_FOR_EIGENVALUE:
            gram = self.features.T @ self.features / n_samples
            largest = float(np.linalg.eigvalsh(gram)[-1])
            top = min(trace, largest * (1.0 + _CURVATURE_MARGIN))
        return self.loss.smoothness * top + self.lam


def _lbfgs(
    objective: _RegularizedObjective, start: np.ndarray, tol: float, max_iter: int
) -> np.ndarray:
    """Unconstrained L-BFGS, run until the gradient certifies ``||w - w*|| <= tol / 2``."""
    n_features = start.shape[0]
    result = minimize(
        objective.value_and_gradient,
        start,
        jac=True,
        method="L-BFGS-B",
        options={
            "maxiter": max_iter,
            "maxfun": 2 * max_iter + 20,
            "ftol": 0.0,
            # sup-norm target such that ||grad||_2 / lam <= tol / 2
            "gtol": 0.5 * objective.lam * tol / math.sqrt(n_features),
        },
    )
    return np.asarray(result.x, dtype=float)


def _accelerated_projected_gradient(
    objective: _RegularizedObjective, start: np.ndarray, radius: float, tol: float, max_iter: int
) -> np.ndarray | None:
    """Accelerated projected gradient on the ball with a certificate, or None.

    With ``M`` at least the curvature of ``F`` and ``w+ = P(y - grad F(y) / M)``,
    the gradient mapping ``G = M (y - w+)`` bounds the distance of ``y`` to the
    constrained minimiser: ``||y - w*|| <= 2 ||G|| / lam`` (Nesterov 2004,
    Theorem 2.2.7 with ``x = w*``). Projecting ``y`` onto the ball only brings
    it closer to ``w*``.
    """
    lam = objective.lam
    curvature = objective.smoothness()
    ratio = math.sqrt(lam / curvature)
    momentum = (1.0 - ratio) / (1.0 + ratio)
    previous = current = _project_to_ball(start, radius)
    for _ in range(max_iter):
        gradient = objective.gradient(current)
        stepped = _project_to_ball(current - gradient / curvature, radius)
        if 2.0 * curvature * np.linalg.norm(current - stepped) / lam <= tol:
            return _project_to_ball(current, radius)
        current, previous = stepped + momentum * (stepped - previous), stepped
    return None


def _certified_erm(
    features: np.ndarray,
    targets: np.ndarray,
    loss: _Loss,
    lam: float,
    radius: float | None,
    tol: float,
    max_iter: int,
) -> np.ndarray:
    """Coefficients within ``tol`` of the exact minimiser of ``F`` over ``||w|| <= radius``.

    1. L-BFGS without the constraint. Strong convexity bounds the distance to
       the unconstrained minimiser by ``||grad F(w)|| / lam``; when that ball
       lies inside ``||w|| <= radius`` the two minimisers coincide.
    2. Otherwise accelerated projected gradient on the ball, with the
       gradient-mapping certificate.

    Raises
    ------
    ConvergenceError
        When neither certificate holds within ``max_iter`` iterations.
    """
    objective = _RegularizedObjective(features, targets, loss, lam)
    w = _lbfgs(objective, np.zeros(features.shape[1]), tol, max_iter)
    distance = float(np.linalg.norm(objective.gradient(w))) / lam
    if distance <= tol and (radius is None or np.linalg.norm(w) + distance <= radius):
        return w
    if radius is not None:
        projected = _accelerated_projected_gradient(objective, w, radius, tol, max_iter)
        if projected is not None:
            return projected
    raise ConvergenceError(
        f"the solver could not certify that the coefficients are within opt_tol={tol:.3g} of "
        f"the exact minimiser in max_iter={max_iter} iterations; no model was fitted. "
        "Increase max_iter, or opt_tol (it adds 2 * opt_tol * ||x~|| to the sensitivity)."
    )


# -- Algorithm E: averaged projected SGD ------------------------------------------------------
class _PSGDResult(NamedTuple):
    average: np.ndarray
    largest_iterate_norm: float


def _averaged_psgd(
    features: np.ndarray,
    targets: np.ndarray,
    loss: _Loss,
    eta: float,
    radius: float,
    orders: list[np.ndarray],
) -> _PSGDResult:
    """Projected SGD from ``w_0 = 0`` over ``orders`` (one index array per epoch).

    ``w_t = P_R(w_{t-1} - eta * loss'(<w_{t-1}, x~>, y) x~)``; returns the
    average of ``w_0 .. w_{T-1}`` (the iterates at which gradients were taken;
    spec-000 erratum 7) and the largest iterate norm (a test diagnostic).
    """
    w = np.zeros(features.shape[1])
    total = np.zeros_like(w)
    squared_radius = radius * radius
    slope = loss.scalar_slope
    target_list = targets.tolist()
    largest = 0.0
    n_steps = 0
    for order in orders:
        for i in order.tolist():
            row = features[i]
            total += w
            step = eta * slope(float(row @ w), target_list[i])
            if step:
                w -= step * row
                squared_norm = float(w @ w)
                if squared_norm > squared_radius:
                    w *= radius / math.sqrt(squared_norm)
                    squared_norm = float(w @ w)
                largest = max(largest, squared_norm)
        n_steps += len(order)
    return _PSGDResult(total / n_steps, math.sqrt(largest))


# -- noise: how a fitted model's scores are released -------------------------------------------
@dataclass(frozen=True)
class _ScoreRelease:
    """The public recipe for releasing scores, fixed at fit.

    ``gamma(x) = per_unit_norm * ||x~||``. Labels are drawn from the closed
    form of ``P(score + noise >= 0)`` with one uniform per row; real values
    get integer noise on a public grid.
    """

    epsilon: float
    delta: float
    noise: str
    per_unit_norm: float
    reference_sensitivity: float
    gaussian_unit_sigma: float | None = None  # analytic Gaussian sigma per unit of sensitivity

    def noise_scale(self, sensitivity):
        """Laplace scale or Gaussian standard deviation of the continuous mechanism."""
        if self.noise == "laplace":
            return sensitivity / self.epsilon
        return sensitivity * self.gaussian_unit_sigma

    def sensitivity(self, query_norms: np.ndarray) -> np.ndarray:
        return np.maximum(self.per_unit_norm * query_norms, _SMALLEST_SENSITIVITY)

    def label_law(self, scores: np.ndarray, sensitivity: np.ndarray) -> np.ndarray:
        """``[P(score + noise < 0), P(score + noise >= 0)]`` per row, each from its closed form."""
        scale = self.noise_scale(sensitivity)
        if self.noise == "laplace":
            return np.column_stack(
                [laplace_positive_proba(-scores, scale), laplace_positive_proba(scores, scale)]
            )
        return np.column_stack([norm.sf(scores / scale), norm.cdf(scores / scale)])

    def real_values(self, scores: np.ndarray, sensitivity: np.ndarray, rng) -> np.ndarray:
        """One real-valued release per score: multiples of a public grid, integer noise."""
        if self.noise == "laplace":
            return grid_laplace_release(scores, sensitivity, self.epsilon, rng, steps=GRID_STEPS)
        return grid_gaussian_release(
            scores, sensitivity, self.epsilon, self.delta, rng, steps=GRID_STEPS
        )


# -- the shared estimator machinery ------------------------------------------------------------
@dataclass(frozen=True)
class _Bounds:
    """Validated public parameters shared by the four estimators."""

    epsilon: float
    delta: float
    noise: str
    feature_norm_bound: float
    radius: float | None
    intercept_scaling: float | None
    huber_delta: float

    @property
    def norm_bound(self) -> float:
        """``X``: the norm bound of the augmented rows."""
        if self.intercept_scaling is None:
            return self.feature_norm_bound
        return math.hypot(self.feature_norm_bound, self.intercept_scaling)


class _FittedCoef(NamedTuple):
    coef: np.ndarray
    per_unit_norm: float  # gamma(x) / ||x~||
    public: dict  # resolved public attributes (lambda_ or eta_)
    guarantee: dict  # extra entries of privacy_guarantee_


def _optional_positive(value, name: str) -> float | None:
    return None if value is None else check_positive_finite(value, name)


def _required_positive(value, name: str, meaning: str) -> float:
    if value is None:
        raise ValueError(
            f"{name} is required: pass {meaning}, chosen without looking at the training data."
        )
    return check_positive_finite(value, name)


def _check_bool(value, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r}.")
    return bool(value)


class _PrivateLinearModel(PrivatePredictorMixin):
    """Fit and query plumbing shared by the four estimators.

    Subclasses provide ``_allowed_losses``, ``_encode_targets(y)`` (targets for
    the loss; the classifier also sets ``classes_``), ``_make_loss(bounds)`` and
    ``_fit_coef(features, targets, loss, bounds, fit_rng)``.
    """

    _allowed_losses: tuple[str, ...] = ()
    _theorem = ""

    # Constructor parameters of the subclasses, stored unchanged (declared for
    # type checking only; they are validated in fit).
    epsilon: Any
    delta: Any
    noise: Any
    loss: Any
    fit_intercept: Any
    intercept_scaling: Any
    feature_norm_bound: Any
    radius: Any
    huber_delta: Any
    lam: Any
    opt_tol: Any
    max_iter: Any
    n_epochs: Any
    shuffle: Any
    eta: Any
    y_bound: Any
    clip_output: Any
    classes: Any
    # Set in fit.
    classes_: np.ndarray
    _coef: np.ndarray
    _score_release: _ScoreRelease
    _output_bound: Any

    # Provided by the subclasses (see the class docstring).
    _make_loss: Callable[[_Bounds], _Loss]
    _encode_targets: Callable[[np.ndarray], np.ndarray]
    _fit_coef: Callable[..., _FittedCoef]

    def _check_bounds(self) -> _Bounds:
        epsilon = check_epsilon(self.epsilon)
        delta = check_noise(self.noise, self.delta)
        check_accountant(self.accountant)
        if self.loss not in self._allowed_losses:
            allowed = ", ".join(repr(name) for name in self._allowed_losses)
            raise ValueError(f"loss must be one of {allowed}, got {self.loss!r}.")
        fit_intercept = _check_bool(self.fit_intercept, "fit_intercept")
        intercept_scaling = check_positive_finite(self.intercept_scaling, "intercept_scaling")
        return _Bounds(
            epsilon=epsilon,
            delta=delta,
            noise=self.noise,
            feature_norm_bound=_required_positive(
                self.feature_norm_bound,
                "feature_norm_bound",
                "a public bound on the Euclidean norm of the feature rows (rows above it are "
                "clipped to it)",
            ),
            radius=_optional_positive(self.radius, "radius"),
            intercept_scaling=intercept_scaling if fit_intercept else None,
            huber_delta=check_positive_finite(self.huber_delta, "huber_delta"),
        )

    @staticmethod
    def _require_radius(bounds: _Bounds, reason: str) -> float:
        if bounds.radius is None:
            raise ValueError(
                f"radius is required {reason}: pass a public bound R on the norm of the "
                "coefficient vector, chosen without looking at the training data."
            )
        return bounds.radius

    def fit(self, X: MatrixLike, y: VectorLike, **fit_params: Any) -> Self:
        """Fit the linear model on all training rows; releases nothing.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows, finite. Rows whose Euclidean norm exceeds
            ``feature_norm_bound`` are scaled down to it.
        y : array-like of shape (n_samples,)
            Targets (one output).
        **fit_params : dict
            Not supported; ``sample_weight`` in particular is refused because a
            weighted row can move an answer by more than one row.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        reject_fit_params(self, fit_params)
        bounds = self._check_bounds()
        loss = self._make_loss(bounds)
        with self._unchanged_on_error():
            X, y = validate_data(
                self,
                X,
                y,
                reset=True,
                dtype=np.float64,
                ensure_all_finite=True,
                y_numeric=not isinstance(self, ClassifierMixin),
            )
            y = column_or_1d(y, warn=True)  # validate_data refused NaN and infinity in y
            targets = self._encode_targets(y)
            features, _ = _augmented_rows(X, bounds.feature_norm_bound, bounds.intercept_scaling)
            fit_rng = self._start_streams()
            fitted = self._fit_coef(features, targets, loss, bounds, fit_rng)
            self._set_fitted(bounds, fitted)
        return self

    def _set_fitted(self, bounds: _Bounds, fitted: _FittedCoef) -> None:
        self._coef = fitted.coef
        self._rows = (bounds.feature_norm_bound, bounds.intercept_scaling)
        unit_sigma = None
        if bounds.noise == "gaussian":
            unit_sigma = gaussian_sigma(1.0, bounds.epsilon, bounds.delta, method="analytic")
            # Calibrate (and cache) the grid's discrete Gaussian now, not at the first query.
            discrete_gaussian_sigma(GRID_STEPS + 1, bounds.epsilon, bounds.delta)
        release = _ScoreRelease(
            epsilon=bounds.epsilon,
            delta=bounds.delta,
            noise=bounds.noise,
            per_unit_norm=fitted.per_unit_norm,
            reference_sensitivity=fitted.per_unit_norm * bounds.norm_bound,
            gaussian_unit_sigma=unit_sigma,
        )
        self._score_release = release
        for name, value in fitted.public.items():
            setattr(self, name, value)
        self.sensitivity_ = release.reference_sensitivity
        self.noise_scale_ = release.noise_scale(release.reference_sensitivity)
        self.privacy_guarantee_ = {
            "epsilon": bounds.epsilon,
            "delta": bounds.delta,
            "neighbouring": "replace-one",
            "unit": "per query row and query method call",
            "theorem": self._theorem,
            "noise": bounds.noise,
            **fitted.guarantee,
        }

    # -- queries ------------------------------------------------------------------
    def _query_rows(self, X) -> tuple[np.ndarray, np.ndarray]:
        """Validated, clipped, augmented query rows and their norms."""
        check_is_fitted(self, "privacy_guarantee_")
        X = validate_data(self, X, reset=False, dtype=np.float64, ensure_all_finite=True)
        return _augmented_rows(X, *self._rows)

    def _scores_and_sensitivity(self, X) -> tuple[np.ndarray, np.ndarray]:
        features, norms = self._query_rows(X)
        return features @ self._coef, self._score_release.sensitivity(norms)

    def _noisy_scores(self, X) -> np.ndarray:
        """One real-valued release per row: fresh noise, charged before it is drawn."""
        scores, sensitivity = self._scores_and_sensitivity(X)
        release = self._score_release
        return self._release(
            scores.shape[0],
            release.epsilon,
            lambda rng: release.real_values(scores, sensitivity, rng),
            delta=release.delta,
        )

    # -- non-private diagnostics (tests and audits only) ----------------------------
    def _raw_score(self, X) -> np.ndarray:
        """Exact score ``<w, x~>``. NOT PRIVATE: leaks the training data; never charges."""
        scores, _ = self._scores_and_sensitivity(X)
        return scores

    def _query_sensitivity(self, X) -> np.ndarray:
        """``gamma(x)`` per row: public (depends on the query and public bounds only)."""
        _, sensitivity = self._scores_and_sensitivity(X)
        return sensitivity

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        return tags


class _StableERM(_PrivateLinearModel):
    """Algorithm D: regularized ERM on all rows with a certified solver."""

    _theorem = (
        "Dwork & Feldman 2018, Lemma 4.5 with the stability of Theorem 4.9 "
        "(gamma = (4 L X / (lam n) + 2 tau) ||x~||, Laplace scale gamma / epsilon)"
    )

    def _fit_coef(self, features, targets, loss, bounds: _Bounds, fit_rng) -> _FittedCoef:
        n_samples = targets.shape[0]
        norm_bound = bounds.norm_bound
        if isinstance(self.lam, str) and self.lam == "auto":
            radius = self._require_radius(bounds, "with lam='auto' (Corollary 4.11)")
            lam = erm_auto_lambda(n_samples, bounds.epsilon, radius, loss.lipschitz, norm_bound)
        elif isinstance(self.lam, str):
            raise ValueError(f"lam must be 'auto' or a number > 0, got {self.lam!r}.")
        else:
            lam = check_positive_finite(self.lam, "lam")
        exact_stability = erm_sensitivity(
            n_samples, lam, loss.lipschitz, norm_bound, query_norm=1.0
        )
        tol = (
            _DEFAULT_RELATIVE_TOL * exact_stability
            if self.opt_tol is None
            else check_positive_finite(self.opt_tol, "opt_tol")
        )
        max_iter = check_positive_int(self.max_iter, "max_iter")
        coef = _certified_erm(features, targets, loss, lam, bounds.radius, tol, max_iter)
        per_unit_norm = erm_sensitivity(
            n_samples, lam, loss.lipschitz, norm_bound, query_norm=1.0, solver_tol=tol
        )
        return _FittedCoef(coef, per_unit_norm, {"lambda_": lam}, {"solver_accuracy": tol})


class _AveragedPSGD(_PrivateLinearModel):
    """Algorithm E: averaged projected SGD in a data-independent order."""

    _theorem = (
        "Dwork & Feldman 2018, Lemma 4.5 with the stability of Theorem 4.12, corrected "
        "(gamma = 2 eta L X ||x~|| n_epochs, twice the printed rate)"
    )

    def _fit_coef(self, features, targets, loss, bounds: _Bounds, fit_rng) -> _FittedCoef:
        n_samples = targets.shape[0]
        norm_bound = bounds.norm_bound
        radius = self._require_radius(bounds, "for projected SGD")
        n_epochs = check_positive_int(self.n_epochs, "n_epochs")
        shuffle = _check_bool(self.shuffle, "shuffle")
        if isinstance(self.eta, str) and self.eta == "auto":
            eta = psgd_step_size(n_samples, radius, loss.lipschitz, norm_bound)
        elif isinstance(self.eta, str):
            raise ValueError(f"eta must be 'auto' or a number > 0, got {self.eta!r}.")
        else:
            eta = check_positive_finite(self.eta, "eta")
        largest_stable_step = 2.0 / (loss.smoothness * norm_bound**2)
        if eta > largest_stable_step:
            warnings.warn(
                f"eta={eta:.4g} is above 2 / sigma = {largest_stable_step:.4g} for the {loss.name} "
                "loss and the feature bound, where the stability argument fails; using "
                f"eta={largest_stable_step:.4g}.",
                UserWarning,
                stacklevel=3,
            )
            eta = largest_stable_step
        orders = [
            fit_rng.permutation(n_samples) if shuffle else np.arange(n_samples)
            for _ in range(n_epochs)
        ]
        result = _averaged_psgd(features, targets, loss, eta, radius, orders)
        per_unit_norm = psgd_sensitivity(
            eta, loss.lipschitz, norm_bound, query_norm=1.0, n_epochs=n_epochs
        )
        return _FittedCoef(result.average, per_unit_norm, {"eta_": eta}, {})


if TYPE_CHECKING:  # the query mixins are always combined with a _PrivateLinearModel
    _QueriesBase = _PrivateLinearModel
else:
    _QueriesBase = object


class _LinearClassifierQueries(_QueriesBase):
    """Binary labels: the sign of the noisy score, its value, and its logistic transform."""

    _allowed_losses: tuple[str, ...] = ("logistic", "huberized_hinge")

    def _make_loss(self, bounds: _Bounds) -> _Loss:
        return _logistic() if self.loss == "logistic" else _huberized_hinge(bounds.huber_delta)

    def _encode_targets(self, y: np.ndarray) -> np.ndarray:
        check_classification_targets(y)
        classes = resolve_binary_classes(
            self.classes,
            y,
            type(self).__name__,
            hint="One-vs-rest would use every training row once per class and cost "
            "n_classes * epsilon per query; it is not offered implicitly.",
        )
        self.classes_ = classes
        return np.where(y == classes[1], 1.0, -1.0)

    def _label_law(self, X) -> np.ndarray:
        scores, sensitivity = self._scores_and_sensitivity(X)
        return self._score_release.label_law(scores, sensitivity)

    def predict(self, X: MatrixLike) -> np.ndarray:
        """One private label per row: the sign of the noisy score.

        Each row is one query, answered with fresh noise and charged before any
        noise is drawn. The label is drawn from the closed form of
        ``P(score + noise >= 0)`` with one uniform per row; no noisy score is
        computed.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
            Query rows (finite). Rows above ``feature_norm_bound`` are clipped.

        Returns
        -------
        ndarray of shape (n_queries,)
            Labels from ``classes_``.
        """
        law = self._label_law(X)
        release = self._score_release
        index = self._release(
            law.shape[0],
            release.epsilon,
            lambda rng: sample_categorical(law, rng),
            delta=release.delta,
        )
        return self.classes_[index]

    def decision_function(self, X: MatrixLike) -> np.ndarray:
        """One private score per row: ``<w, x~>`` plus noise, on a public grid.

        Positive means ``classes_[1]``. Each call is a fresh release, charged
        per row.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
            Query rows (finite). Rows above ``feature_norm_bound`` are clipped.

        Returns
        -------
        ndarray of shape (n_queries,)
            The noisy scores.
        """
        return self._noisy_scores(X)

    def predict_proba(self, X: MatrixLike) -> np.ndarray:
        """Private probabilities: ``expit`` of a fresh noisy score per row.

        Post-processing of one real-valued release per row (charged per row,
        like :meth:`decision_function`).

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
            Query rows (finite). Rows above ``feature_norm_bound`` are clipped.

        Returns
        -------
        ndarray of shape (n_queries, 2)
            ``[1 - p, p]`` with ``p = expit(noisy score)``.
        """
        noisy = self._noisy_scores(X)
        return np.column_stack([expit(-noisy), expit(noisy)])

    def _output_distribution(self, X) -> np.ndarray:
        """Exact law of ``predict`` per row. NOT PRIVATE: leaks the scores; never charges."""
        return self._label_law(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags


class _LinearRegressorQueries(_QueriesBase):
    """Real values: the noisy score, on a public grid, optionally clipped to ``y_bound``."""

    _allowed_losses: tuple[str, ...] = ("squared", "huber")

    def _make_loss(self, bounds: _Bounds) -> _Loss:
        y_bound = _optional_positive(self.y_bound, "y_bound")
        _check_bool(self.clip_output, "clip_output")
        if self.loss == "huber":
            return _huber(bounds.huber_delta)
        radius = self._require_radius(
            bounds, "with loss='squared' (its Lipschitz constant is R X + Y)"
        )
        if y_bound is None:
            raise ValueError(
                "y_bound is required with loss='squared' (its Lipschitz constant is R X + Y): "
                "pass a public bound Y on |y|, chosen without looking at the training data."
            )
        return _squared(radius, bounds.norm_bound, y_bound)

    def _encode_targets(self, y: np.ndarray) -> np.ndarray:
        """Targets clipped to ``[-y_bound, y_bound]``; fixes the answers' clipping at fit."""
        y = y.astype(np.float64)
        self._output_bound = (
            None if self.y_bound is None or not self.clip_output else float(self.y_bound)
        )
        return y if self.y_bound is None else np.clip(y, -self.y_bound, self.y_bound)

    def predict(self, X: MatrixLike) -> np.ndarray:
        """One private value per row: ``<w, x~>`` plus noise on a public grid.

        Each row is one query, answered with fresh noise and charged before any
        noise is drawn; with ``clip_output=True`` and ``y_bound`` set, the value
        is clipped to ``[-y_bound, y_bound]`` (post-processing).

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
            Query rows (finite). Rows above ``feature_norm_bound`` are clipped.

        Returns
        -------
        ndarray of shape (n_queries,)
            The private predictions.
        """
        noisy = self._noisy_scores(X)
        bound = self._output_bound
        return noisy if bound is None else np.clip(noisy, -bound, bound)


# -- the estimators ---------------------------------------------------------------------
class StableERMClassifier(_LinearClassifierQueries, _StableERM, ClassifierMixin, BaseEstimator):
    """Private binary classification by regularized ERM plus noise on each answer.

    Fits one linear model on all training rows by minimising
    ``mean loss(<w, x~_i>, y_i) + (lam / 2) ||w||^2`` over ``||w|| <= radius``,
    where ``x~`` is the row clipped to ``feature_norm_bound`` with the
    intercept feature appended. The solver *certifies* that its coefficients
    are within ``opt_tol`` of the exact minimiser (else :class:`ConvergenceError`).
    Strong convexity makes every prediction uniformly stable: replacing one
    training row moves ``<w, x~>`` by at most

    ``gamma(x) = (4 L X / (lam n) + 2 opt_tol) ||x~||``

    (``L``: Lipschitz constant of the loss, 1 for both losses; ``X``: norm bound
    of the augmented rows, ``sqrt(feature_norm_bound^2 + intercept_scaling^2)``).
    Each answer adds noise calibrated to ``gamma(x)``:

    - ``predict``: the label ``1[<w, x~> + noise >= 0]``, drawn from its closed
      form (``1 - exp(-a/b)/2`` for ``a >= 0``, ``exp(a/b)/2`` otherwise, with
      Laplace scale ``b = gamma(x)/epsilon``; ``Phi(a/s)`` with Gaussian noise)
      with one uniform per row, so no noisy float leaves the estimator;
    - ``decision_function``: the noisy score itself, as integer noise on a
      public grid (step ``gamma(x) / 1000``; discrete Laplace, or discrete
      Gaussian calibrated exactly): exact, immune to the floating-point attack on
      naive Laplace sampling, and 0.1% wider than continuous noise;
    - ``predict_proba``: ``expit`` of such a noisy score.

    **Privacy guarantee.** Replace-one neighbours (same ``n``, one row
    replaced). Each row passed to ``predict``, ``predict_proba``,
    ``decision_function`` or ``score`` is one query; every call draws fresh noise
    and is ``(epsilon, delta)``-DP per row (``delta = 0`` with Laplace noise):
    Lemma 4.5 of Dwork & Feldman (2018) with the stability of Theorem 4.9.
    Asking two methods about one row costs twice. ``fit`` releases nothing, but
    whether it raises :class:`ConvergenceError` depends on the data: keep that
    event with the data owner. **Corrected constants:** the Laplace scale is
    ``gamma / epsilon`` (the proof of Lemma 4.5 writes ``epsilon / gamma``); the
    objective uses ``(lam / 2) ||w||^2`` with the same ``lam`` in ``gamma`` (the
    paper mixes ``lam``-strong convexity and a ``lam ||w||^2`` penalty); the
    solver's accuracy is added to ``gamma`` (the paper assumes an exact
    minimiser).

    **Accuracy.** With ``lam="auto"`` (Corollary 4.11,
    ``lam = 2 X L / (R sqrt(n epsilon / (1 + epsilon)))``) the expected excess
    loss of the noisy predictions over the best ``w`` in the ball is at most
    ``4 R X L / sqrt(n epsilon / (1 + epsilon))``, independent of the number of
    features.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy parameter of each answered row and method call, > 0.
    loss : {"logistic", "huberized_hinge"}, default="logistic"
        ``ln(1 + exp(-y a))``, or the hinge smoothed over a width
        ``huber_delta`` (``y`` in {-1, +1}, ``classes_[1]`` is +1). Both are
        1-Lipschitz.
    lam : float or "auto", default="auto"
        Regularization strength (``LogisticRegression(C)`` corresponds to
        ``lam = 1 / (C n)``). ``"auto"``: Corollary 4.11, needs ``radius``.
    feature_norm_bound : float
        Public bound ``X0`` on the Euclidean norm of a feature row; required.
        Training and query rows above it are scaled down to it. Choose it from
        the data's documented ranges or a fixed preprocessing, never from the
        training rows.
    radius : float, default=None
        Public bound ``R`` on ``||w||`` (the ball the minimiser is sought in).
        ``None``: no constraint (only with a numeric ``lam``).
    fit_intercept : bool, default=True
        Append the constant feature ``intercept_scaling``; its coefficient is
        penalized and constrained like the others.
    intercept_scaling : float, default=1.0
        Value ``c`` of the intercept feature, > 0.
    huber_delta : float, default=1.0
        Smoothing width of ``loss="huberized_hinge"``, > 0.
    opt_tol : float, default=None
        Certified bound ``tau`` on the distance between the fitted and the exact
        coefficients; ``None``: ``1e-4 * 4 L X / (lam n)``.
    max_iter : int, default=10000
        Iteration cap of each solver phase (L-BFGS, then accelerated projected
        gradient when the ball constraint is active).
    noise : {"laplace", "gaussian"}, default="laplace"
        Laplace: ``(epsilon, 0)``-DP. Gaussian: ``(epsilon, delta)``-DP, with the
        analytic calibration of Balle & Wang (2018) for labels and exact
        discrete Gaussian noise on the grid for real values.
    delta : float, default=0.0
        0 with Laplace noise; in (0, 1) with Gaussian noise.
    classes : array-like of shape (2,), default=None
        The public label set. ``None`` reads it from ``y`` and emits a
        :class:`~skprivpred.PrivacyWarning`.
    accountant : PrivacyAccountant, default=None
        Charged ``(epsilon, delta)`` per row of every query call before any noise
        is drawn; shared, not copied, by ``clone`` and ``copy.deepcopy``.
    random_state : int, RandomState instance, Generator or None, default=None
        Seeds the query stream (the answers' noise). ``None`` (OS entropy) in
        deployment: anyone who knows an integer seed can regenerate the noise.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        The public label set.
    lambda_ : float
        The regularization strength used.
    sensitivity_ : float
        ``gamma`` at a query of norm ``X`` (the largest after clipping).
    noise_scale_ : float
        Laplace scale ``sensitivity_ / epsilon``, or the Gaussian standard
        deviation, at that query norm.
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during ``fit`` (string column names only).
    privacy_guarantee_ : dict
        ``epsilon``, ``delta``, ``neighbouring``, ``unit``, ``theorem``,
        ``noise`` and ``solver_accuracy`` (``tau``).
    queries_answered_ : int
        Query rows answered since ``fit``.

    See Also
    --------
    AveragedPSGDClassifier : One pass of SGD; cheaper, needs a smooth loss.
    SubsampleAggregateClassifier : Any base learner, soft-majority vote.

    Notes
    -----
    The coefficients are secret (``_coef``): a pickled estimator must be
    protected like the training data. Model selection on the private data
    (``GridSearchCV``) is not private; use ``lam="auto"`` and public bounds.

    References
    ----------
    C. Dwork and V. Feldman. Privacy-preserving Prediction. COLT 2018,
    Lemma 4.5, Theorem 4.9, Corollaries 4.10 and 4.11.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from skprivpred import StableERMClassifier
    >>> X, y = make_classification(n_samples=2000, random_state=0)
    >>> clf = StableERMClassifier(feature_norm_bound=5.0, radius=10.0, classes=[0, 1],
    ...                           random_state=0).fit(X, y)
    >>> round(clf.lambda_, 5), clf.predict(X[:3]).shape
    (0.03225, (3,))
    """

    def __init__(
        self,
        *,
        epsilon: float = 1.0,
        loss: str = "logistic",
        lam: float | str = "auto",
        feature_norm_bound: float | None = None,
        radius: float | None = None,
        fit_intercept: bool = True,
        intercept_scaling: float = 1.0,
        huber_delta: float = 1.0,
        opt_tol: float | None = None,
        max_iter: int = 10_000,
        noise: str = "laplace",
        delta: float = 0.0,
        classes: VectorLike | None = None,
        accountant: PrivacyAccountant | None = None,
        random_state: RandomStateLike = None,
    ) -> None:
        self.epsilon = epsilon
        self.loss = loss
        self.lam = lam
        self.feature_norm_bound = feature_norm_bound
        self.radius = radius
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.huber_delta = huber_delta
        self.opt_tol = opt_tol
        self.max_iter = max_iter
        self.noise = noise
        self.delta = delta
        self.classes = classes
        self.accountant = accountant
        self.random_state = random_state


class StableERMRegressor(_LinearRegressorQueries, _StableERM, RegressorMixin, BaseEstimator):
    """Private regression by regularized ERM plus noise on each answer.

    Fits one linear model on all training rows by minimising
    ``mean loss(<w, x~_i>, y_i) + (lam / 2) ||w||^2`` over ``||w|| <= radius``
    (rows clipped to ``feature_norm_bound``, intercept feature appended,
    targets clipped to ``[-y_bound, y_bound]``) with a solver that certifies it
    is within ``opt_tol`` of the exact minimiser (else
    :class:`ConvergenceError`). Replacing one training row moves the prediction
    by at most

    ``gamma(x) = (4 L X / (lam n) + 2 opt_tol) ||x~||``,

    with ``L = radius * X + y_bound`` for the squared loss (the largest residual
    a model in the ball can make) and ``L = huber_delta`` for the Huber loss.
    ``predict`` releases ``<w, x~>`` plus integer noise on a public grid (step
    ``gamma(x) / 1000``; discrete Laplace of scale about
    ``gamma(x)/epsilon``, or exactly calibrated discrete Gaussian): exact,
    immune to the floating-point attack on naive Laplace sampling, and 0.1%
    wider than continuous noise. With ``clip_output=True`` the answer is then
    clipped to ``[-y_bound, y_bound]`` (post-processing).

    **Privacy guarantee.** Replace-one neighbours (same ``n``, one row
    replaced). Each row passed to ``predict`` or ``score`` is one query,
    answered with fresh noise, ``(epsilon, delta)``-DP (``delta = 0`` with
    Laplace noise): Lemma 4.5 of Dwork & Feldman (2018) with the stability of
    Theorem 4.9. ``fit`` releases nothing (a :class:`ConvergenceError` is a
    data-dependent event: keep it with the data owner). **Corrected
    constants:** Laplace scale ``gamma / epsilon`` (the proof writes ``epsilon /
    gamma``); penalty ``(lam / 2) ||w||^2`` with the same ``lam`` in ``gamma``;
    the solver's accuracy is added to ``gamma``.

    **Accuracy.** With ``lam="auto"`` (Corollary 4.11) the expected excess loss
    is at most ``4 R X L / sqrt(n epsilon / (1 + epsilon))``, independent of the
    number of features; the squared loss's ``L`` grows with ``R`` and ``Y``, so
    centre and scale ``y`` with public constants (for example a
    ``TransformedTargetRegressor`` with fixed functions).

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy parameter of each answered row, > 0.
    loss : {"squared", "huber"}, default="squared"
        ``(a - y)^2 / 2`` (needs ``radius`` and ``y_bound``) or the Huber loss
        with threshold ``huber_delta``.
    lam : float or "auto", default="auto"
        Regularization strength (``Ridge(alpha)`` corresponds to
        ``lam = alpha / n`` up to the intercept). ``"auto"``: Corollary 4.11,
        needs ``radius``.
    feature_norm_bound : float
        Public bound ``X0`` on the Euclidean norm of a feature row; required.
        Rows above it are scaled down to it.
    radius : float, default=None
        Public bound ``R`` on ``||w||``. ``None``: no constraint (Huber loss
        with a numeric ``lam`` only).
    y_bound : float, default=None
        Public bound ``Y`` on ``|y|``: training targets are clipped to
        ``[-Y, Y]``; required for the squared loss.
    clip_output : bool, default=True
        Clip the answers to ``[-y_bound, y_bound]`` (when ``y_bound`` is set).
    fit_intercept : bool, default=True
        Append the constant feature ``intercept_scaling`` (penalized).
    intercept_scaling : float, default=1.0
        Value ``c`` of the intercept feature, > 0.
    huber_delta : float, default=1.0
        Threshold of the Huber loss, > 0.
    opt_tol : float, default=None
        Certified solver accuracy ``tau``; ``None``: ``1e-4 * 4 L X / (lam n)``.
    max_iter : int, default=10000
        Iteration cap of each solver phase.
    noise : {"laplace", "gaussian"}, default="laplace"
        Laplace: ``(epsilon, 0)``-DP. Gaussian: ``(epsilon, delta)``-DP with exact
        discrete Gaussian noise on the grid.
    delta : float, default=0.0
        0 with Laplace noise; in (0, 1) with Gaussian noise.
    accountant : PrivacyAccountant, default=None
        Charged per query row before any noise is drawn; shared by ``clone``.
    random_state : int, RandomState instance, Generator or None, default=None
        Seeds the query stream. ``None`` in deployment.

    Attributes
    ----------
    lambda_ : float
        The regularization strength used.
    sensitivity_ : float
        ``gamma`` at a query of norm ``X``.
    noise_scale_ : float
        Laplace scale or Gaussian standard deviation at that query norm.
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during ``fit`` (string column names only).
    privacy_guarantee_ : dict
        The per-row guarantee, with the solver accuracy ``tau``.
    queries_answered_ : int
        Query rows answered since ``fit``.

    See Also
    --------
    AveragedPSGDRegressor : One pass of SGD.
    SubsampleAverageRegressor : Any base learner, averaged teachers.

    References
    ----------
    C. Dwork and V. Feldman. Privacy-preserving Prediction. COLT 2018,
    Lemma 4.5, Theorem 4.9, Corollary 4.11.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import make_regression
    >>> from skprivpred import StableERMRegressor
    >>> X, y = make_regression(n_samples=2000, n_features=5, noise=1.0, random_state=0)
    >>> reg = StableERMRegressor(feature_norm_bound=5.0, radius=200.0, y_bound=400.0,
    ...                          lam=1.0, random_state=0).fit(X, y)
    >>> reg.predict(X[:3]).shape
    (3,)
    """

    def __init__(
        self,
        *,
        epsilon: float = 1.0,
        loss: str = "squared",
        lam: float | str = "auto",
        feature_norm_bound: float | None = None,
        radius: float | None = None,
        y_bound: float | None = None,
        clip_output: bool = True,
        fit_intercept: bool = True,
        intercept_scaling: float = 1.0,
        huber_delta: float = 1.0,
        opt_tol: float | None = None,
        max_iter: int = 10_000,
        noise: str = "laplace",
        delta: float = 0.0,
        accountant: PrivacyAccountant | None = None,
        random_state: RandomStateLike = None,
    ) -> None:
        self.epsilon = epsilon
        self.loss = loss
        self.lam = lam
        self.feature_norm_bound = feature_norm_bound
        self.radius = radius
        self.y_bound = y_bound
        self.clip_output = clip_output
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.huber_delta = huber_delta
        self.opt_tol = opt_tol
        self.max_iter = max_iter
        self.noise = noise
        self.delta = delta
        self.accountant = accountant
        self.random_state = random_state


class AveragedPSGDClassifier(
    _LinearClassifierQueries, _AveragedPSGD, ClassifierMixin, BaseEstimator
):
    """Private binary classification by averaged projected SGD plus noise on each answer.

    Makes ``n_epochs`` passes of projected SGD over the training rows (rows
    clipped to ``feature_norm_bound``, intercept feature appended), in an order
    drawn from the fit stream independently of the data, with the constant step
    ``eta``, starting at 0 and projecting onto ``||w|| <= radius`` after each
    step; the model is the average of the iterates ``w_0 .. w_{T-1}``. For a
    smooth convex loss and ``eta <= 2 / sigma`` a step never moves two runs
    apart, so replacing one training row moves the prediction by at most

    ``gamma(x) = 2 eta L X ||x~|| n_epochs``

    (``L = 1`` for both losses; ``X = sqrt(feature_norm_bound^2 +
    intercept_scaling^2)``). The answers are released as in
    :class:`StableERMClassifier`: labels from the closed form of
    ``P(<w, x~> + noise >= 0)``, scores as integer noise on a public grid of
    step ``gamma(x) / 1000``, probabilities as ``expit`` of such scores.

    **Privacy guarantee.** Replace-one neighbours. Each row passed to
    ``predict``, ``predict_proba``, ``decision_function`` or ``score`` is one
    query, answered with fresh noise, ``(epsilon, delta)``-DP per row and call
    (``delta = 0`` with Laplace noise): Lemma 4.5 of Dwork & Feldman (2018) with
    the stability of Theorem 4.12. **Corrected constants:** Theorem 4.12 prints
    the stability ``R X / sqrt(n)``; the proof's argument gives ``2 eta L X``
    (``2 R X / sqrt(n)`` at the theorem's step size) and a two-point data set
    attains it (spec-000 §5.6), so noise calibrated to the printed rate would
    give only about ``2 epsilon``. The Laplace scale is ``gamma / epsilon``; the
    update is a descent step ``w - eta grad`` (printed with ``+``).

    **Accuracy.** With ``eta="auto"`` (``R / (X L sqrt(n))``) the expected excess
    loss is at most ``2 R X L / sqrt(n) + 4 sigma R^2 X^2 / (n epsilon^2)``
    (Corollary 4.13 with the corrected ``gamma``).

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy parameter of each answered row and method call, > 0.
    loss : {"logistic", "huberized_hinge"}, default="logistic"
        Smooth losses only (``sigma = 1/4``, resp. ``1 / huber_delta``).
    eta : float or "auto", default="auto"
        Step size; ``"auto"``: ``R / (X L sqrt(n))`` (Theorem 4.12). Capped at
        ``2 / (sigma X^2)`` with a warning.
    n_epochs : int, default=1
        Passes over the data (the paper: 1); ``gamma`` grows linearly with it.
    shuffle : bool, default=True
        Draw a fresh random order per epoch from the fit stream (never from the
        data); ``False`` keeps the row order.
    feature_norm_bound : float
        Public bound ``X0`` on the Euclidean norm of a feature row; required.
    radius : float
        Public radius ``R`` of the coefficient ball; required.
    fit_intercept : bool, default=True
        Append the constant feature ``intercept_scaling``.
    intercept_scaling : float, default=1.0
        Value ``c`` of the intercept feature, > 0.
    huber_delta : float, default=1.0
        Smoothing width of ``loss="huberized_hinge"``, > 0.
    noise : {"laplace", "gaussian"}, default="laplace"
        Laplace: ``(epsilon, 0)``-DP. Gaussian: ``(epsilon, delta)``-DP.
    delta : float, default=0.0
        0 with Laplace noise; in (0, 1) with Gaussian noise.
    classes : array-like of shape (2,), default=None
        The public label set (``None``: read from ``y``, with a
        :class:`~skprivpred.PrivacyWarning`).
    accountant : PrivacyAccountant, default=None
        Charged per query row before any noise is drawn; shared by ``clone``.
    random_state : int, RandomState instance, Generator or None, default=None
        Seeds the fit stream (the order) and the query stream (the noise).
        ``None`` in deployment.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        The public label set.
    eta_ : float
        The step size used.
    sensitivity_ : float
        ``gamma`` at a query of norm ``X``.
    noise_scale_ : float
        Laplace scale or Gaussian standard deviation at that query norm.
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during ``fit`` (string column names only).
    privacy_guarantee_ : dict
        The per-row guarantee.
    queries_answered_ : int
        Query rows answered since ``fit``.

    See Also
    --------
    StableERMClassifier : Exact regularized ERM; non-smooth-friendly, costlier.

    References
    ----------
    C. Dwork and V. Feldman. Privacy-preserving Prediction. COLT 2018,
    Theorem 4.12 and Corollary 4.13.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from skprivpred import AveragedPSGDClassifier
    >>> X, y = make_classification(n_samples=2000, random_state=0)
    >>> clf = AveragedPSGDClassifier(feature_norm_bound=5.0, radius=5.0, classes=[0, 1],
    ...                              random_state=0).fit(X, y)
    >>> round(clf.eta_, 5), round(clf.sensitivity_, 5)
    (0.02193, 1.14018)
    """

    def __init__(
        self,
        *,
        epsilon: float = 1.0,
        loss: str = "logistic",
        eta: float | str = "auto",
        n_epochs: int = 1,
        shuffle: bool = True,
        feature_norm_bound: float | None = None,
        radius: float | None = None,
        fit_intercept: bool = True,
        intercept_scaling: float = 1.0,
        huber_delta: float = 1.0,
        noise: str = "laplace",
        delta: float = 0.0,
        classes: VectorLike | None = None,
        accountant: PrivacyAccountant | None = None,
        random_state: RandomStateLike = None,
    ) -> None:
        self.epsilon = epsilon
        self.loss = loss
        self.eta = eta
        self.n_epochs = n_epochs
        self.shuffle = shuffle
        self.feature_norm_bound = feature_norm_bound
        self.radius = radius
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.huber_delta = huber_delta
        self.noise = noise
        self.delta = delta
        self.classes = classes
        self.accountant = accountant
        self.random_state = random_state


class AveragedPSGDRegressor(_LinearRegressorQueries, _AveragedPSGD, RegressorMixin, BaseEstimator):
    """Private regression by averaged projected SGD plus noise on each answer.

    ``n_epochs`` passes of projected SGD (rows clipped to
    ``feature_norm_bound``, intercept feature appended, targets clipped to
    ``[-y_bound, y_bound]``) in a data-independent order with the constant step
    ``eta``, projecting onto ``||w|| <= radius``; the model is the average of
    the iterates. Replacing one training row moves the prediction by at most

    ``gamma(x) = 2 eta L X ||x~|| n_epochs``,

    with ``L = radius * X + y_bound`` for the squared loss and
    ``L = huber_delta`` for the Huber loss. ``predict`` releases ``<w, x~>``
    plus integer noise on a public grid (step ``gamma(x) / 1000``), clipped
    to ``[-y_bound, y_bound]`` when ``clip_output=True``.

    **Privacy guarantee.** Replace-one neighbours. Each row passed to
    ``predict`` or ``score`` is one query, answered with fresh noise,
    ``(epsilon, delta)``-DP (``delta = 0`` with Laplace noise): Lemma 4.5 with
    the stability of Theorem 4.12 (Dwork & Feldman 2018). **Corrected
    constants:** the stability is ``2 eta L X ||x~||`` per epoch, twice the
    printed ``R X / sqrt(n)`` (attained by a two-point data set, spec-000
    §5.6); Laplace scale ``gamma / epsilon``; descent update ``w - eta grad``.

    **Accuracy.** With ``eta="auto"`` the expected excess loss is at most
    ``2 R X L / sqrt(n) + 4 R^2 X^2 / (n epsilon^2)`` (Corollary 4.13, corrected;
    ``sigma = 1`` for both losses).

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy parameter of each answered row, > 0.
    loss : {"squared", "huber"}, default="squared"
        ``(a - y)^2 / 2`` (needs ``y_bound``) or the Huber loss with threshold
        ``huber_delta``.
    eta : float or "auto", default="auto"
        Step size; ``"auto"``: ``R / (X L sqrt(n))``. Capped at ``2 / X^2`` with a
        warning.
    n_epochs : int, default=1
        Passes over the data; ``gamma`` grows linearly with it.
    shuffle : bool, default=True
        Draw a fresh random order per epoch from the fit stream.
    feature_norm_bound : float
        Public bound ``X0`` on the Euclidean norm of a feature row; required.
    radius : float
        Public radius ``R`` of the coefficient ball; required.
    y_bound : float, default=None
        Public bound ``Y`` on ``|y|`` (targets clipped); required for the squared
        loss.
    clip_output : bool, default=True
        Clip the answers to ``[-y_bound, y_bound]`` (when ``y_bound`` is set).
    fit_intercept : bool, default=True
        Append the constant feature ``intercept_scaling``.
    intercept_scaling : float, default=1.0
        Value ``c`` of the intercept feature, > 0.
    huber_delta : float, default=1.0
        Threshold of the Huber loss, > 0.
    noise : {"laplace", "gaussian"}, default="laplace"
        Laplace: ``(epsilon, 0)``-DP. Gaussian: ``(epsilon, delta)``-DP.
    delta : float, default=0.0
        0 with Laplace noise; in (0, 1) with Gaussian noise.
    accountant : PrivacyAccountant, default=None
        Charged per query row before any noise is drawn; shared by ``clone``.
    random_state : int, RandomState instance, Generator or None, default=None
        Seeds the fit stream (the order) and the query stream (the noise).

    Attributes
    ----------
    eta_ : float
        The step size used.
    sensitivity_ : float
        ``gamma`` at a query of norm ``X``.
    noise_scale_ : float
        Laplace scale or Gaussian standard deviation at that query norm.
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during ``fit`` (string column names only).
    privacy_guarantee_ : dict
        The per-row guarantee.
    queries_answered_ : int
        Query rows answered since ``fit``.

    See Also
    --------
    StableERMRegressor : Exact regularized ERM.

    References
    ----------
    C. Dwork and V. Feldman. Privacy-preserving Prediction. COLT 2018,
    Theorem 4.12 and Corollary 4.13.

    Examples
    --------
    >>> from sklearn.datasets import make_regression
    >>> from skprivpred import AveragedPSGDRegressor
    >>> X, y = make_regression(n_samples=2000, n_features=5, random_state=0)
    >>> reg = AveragedPSGDRegressor(feature_norm_bound=5.0, radius=50.0, y_bound=300.0,
    ...                             random_state=0).fit(X / 50, y / 50)
    >>> reg.predict(X[:3] / 50).shape
    (3,)
    """

    def __init__(
        self,
        *,
        epsilon: float = 1.0,
        loss: str = "squared",
        eta: float | str = "auto",
        n_epochs: int = 1,
        shuffle: bool = True,
        feature_norm_bound: float | None = None,
        radius: float | None = None,
        y_bound: float | None = None,
        clip_output: bool = True,
        fit_intercept: bool = True,
        intercept_scaling: float = 1.0,
        huber_delta: float = 1.0,
        noise: str = "laplace",
        delta: float = 0.0,
        accountant: PrivacyAccountant | None = None,
        random_state: RandomStateLike = None,
    ) -> None:
        self.epsilon = epsilon
        self.loss = loss
        self.eta = eta
        self.n_epochs = n_epochs
        self.shuffle = shuffle
        self.feature_norm_bound = feature_norm_bound
        self.radius = radius
        self.y_bound = y_bound
        self.clip_output = clip_output
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.huber_delta = huber_delta
        self.noise = noise
        self.delta = delta
        self.accountant = accountant
        self.random_state = random_state
