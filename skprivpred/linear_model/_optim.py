"""Losses, row clipping and certified solvers shared by the linear estimators.

:mod:`skprivpred.linear_model` (stable ERM and averaged projected SGD, Dwork &
Feldman 2018, Section 4.4) and :mod:`skprivpred.model_selection`
(objective/output-perturbed logistic regression, Chaudhuri & Vinterbo 2013
with Chaudhuri, Monteleoni & Sarwate 2011) fit linear models with the same
pieces:

- the losses of a prediction ``a`` and a target ``y`` with their public
  constants (Lipschitz constant ``L`` in the prediction, smoothness, the loss
  at the zero model);
- rows clipped to a public Euclidean norm bound, with a constant intercept
  feature appended;
- the regularised objective ``mean loss + (lam / 2) ||w||^2`` and solvers that
  *certify* their distance to the exact minimiser (the privacy proofs assume
  the exact minimiser; the certified distance is added to the sensitivity);
- one pass (or several) of projected SGD with the average of the iterates.

Nothing here draws noise or touches private state: these are deterministic
functions of their arguments.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit

from ..exceptions import ConvergenceError

# The certificate of the ball-constrained solver needs an upper bound on the
# curvature of the objective; the numerical top eigenvalue gets this margin.
_CURVATURE_MARGIN = 1e-6
_MAX_FEATURES_FOR_EIGENVALUE = 2000


# -- losses (Dwork & Feldman 2018, Section 4.4: L is the Lipschitz constant in the prediction) --
@dataclass(frozen=True)
class _Loss:
    """A loss of the prediction ``a`` and target ``y``, with its public constants.

    ``lipschitz`` bounds ``|d loss / da|`` over every prediction a model in the
    ball can make; ``smoothness`` bounds ``d^2 loss / da^2``; ``zero_loss``
    bounds ``loss(0, y)`` over every admissible target (``inf`` when targets
    are unbounded), which bounds the norm of the regularised minimiser by
    ``sqrt(2 zero_loss / lam)``. ``slope`` is vectorised, ``scalar_slope`` is
    the same derivative on Python floats (for the sequential SGD pass).
    """

    name: str
    lipschitz: float
    smoothness: float
    value: Callable[[np.ndarray, np.ndarray], np.ndarray]
    slope: Callable[[np.ndarray, np.ndarray], np.ndarray]
    scalar_slope: Callable[[float, float], float]
    zero_loss: float = math.inf


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
        zero_loss=math.log(2.0),
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
        zero_loss=1.0 / (2.0 * h) if h > 1.0 else 1.0 - h / 2.0,
    )


def _squared(radius: float, norm_bound: float, y_half_width: float) -> _Loss:
    """``(a - y)^2 / 2``: ``L = R X + B`` on the ball (``|a| <= R X``, ``|y| <= B``); ``sigma = 1``.

    ``B`` is the half-width of the (centred) target interval. The slope
    ``a - y`` is not bounded off the ball; every model the estimators use
    lies in it.
    """
    return _Loss(
        "squared",
        lipschitz=radius * norm_bound + y_half_width,
        smoothness=1.0,
        value=lambda a, y: 0.5 * (a - y) ** 2,
        slope=lambda a, y: a - y,
        scalar_slope=lambda a, y: a - y,
        zero_loss=0.5 * y_half_width**2,
    )


def _huber(h: float, y_half_width: float | None = None) -> _Loss:
    """Huber loss of the residual ``u = a - y`` with threshold ``h``: ``L = h``, ``sigma = 1``.

    ``y_half_width`` (``B``, targets in ``[-B, B]``) only sets ``zero_loss``.
    """
    if y_half_width is None:
        zero_loss = math.inf
    elif y_half_width <= h:
        zero_loss = 0.5 * y_half_width**2
    else:
        zero_loss = h * y_half_width - 0.5 * h**2

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
        zero_loss=zero_loss,
    )


# -- rows: clipping to the public bound and the intercept feature -------------------------
def _augmented_rows(X: np.ndarray, feature_norm_bound: float, intercept_scaling: float | None):
    """Rows clipped to ``feature_norm_bound``, with the constant ``intercept_scaling`` appended.

    Returns the augmented rows and their norms ``||x~||`` (a public function
    of the query for query rows).
    """
    norms = np.sqrt(np.add.reduce(X * X, axis=1))  # what np.linalg.norm(X, axis=1) computes
    factor = (feature_norm_bound / np.maximum(norms, feature_norm_bound))[:, None]
    clipped_norms = np.minimum(norms, feature_norm_bound)
    if intercept_scaling is None:
        return X * factor, clipped_norms
    rows = np.empty((X.shape[0], X.shape[1] + 1))
    np.multiply(X, factor, out=rows[:, :-1])
    rows[:, -1] = intercept_scaling
    return rows, np.hypot(clipped_norms, intercept_scaling)


def _project_to_ball(w: np.ndarray, radius: float | None) -> np.ndarray:
    if radius is None:
        return w
    norm_w = np.linalg.norm(w)
    return w if norm_w <= radius else w * (radius / norm_w)


# -- certified regularized ERM (Dwork & Feldman 2018, Theorem 4.9) ------------------------
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
        f"the solver could not certify that the coefficients are within tol={tol:.3g} of "
        f"the exact minimiser in max_iter={max_iter} iterations; no model was fitted. "
        "Increase max_iter, or tol (it adds 2 * tol * ||x~|| to the sensitivity)."
    )


# -- averaged projected SGD (Dwork & Feldman 2018, Theorem 4.12) ----------------------------
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
    the paper's ``(1/n) sum_{i in [n]} w_i`` read with ``w_0`` as the first of
    the ``n`` iterates, so that the last update is not averaged without its
    gradient) and the largest iterate norm (a test diagnostic).
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


# -- objective perturbation (Chaudhuri, Monteleoni & Sarwate 2011, Algorithm 2) ---------
class _PerturbedObjective(_RegularizedObjective):
    """``mean loss + (lam / 2) ||w||^2 + <b, w> / n`` (objective perturbation)."""

    def __init__(self, features, targets, loss, lam, linear) -> None:
        super().__init__(features, targets, loss, lam)
        self.linear = linear / targets.shape[0]

    def value_and_gradient(self, w):
        value, gradient = super().value_and_gradient(w)
        return value + float(self.linear @ w), gradient + self.linear

    def gradient(self, w):
        return super().gradient(w) + self.linear


def reachable_logistic_tol(n_samples: int, n_features: int, lam: float) -> float:
    """The smallest ``tol`` :func:`_certified_logistic` is asked to certify, from public n, d, lam.

    The certificate is ``||grad F(w)|| / lam <= tol``. For rows in the unit ball the
    loss's mean gradient has norm at most 1 and, at the unperturbed minimiser,
    ``lam ||w|| <= 1``; the gradient is a sum of ``n`` terms of ``d`` products, so
    double precision evaluates it to about ``u (d + log2 n + 2)`` times those norms
    (``u = 2**-52``; pairwise summation). A smaller ``tol`` cannot be certified
    whatever the rows: it is refused before any charge.
    """
    u = float(np.finfo(np.float64).eps)
    return u * (n_features + math.log2(max(n_samples, 2)) + 2.0) * 2.0 / lam


def _certified_logistic(X, y, lam, linear, tol, max_iter, *, strict: bool = True) -> np.ndarray:
    """Minimiser of the (perturbed) logistic objective, certified within ``tol``.

    L-BFGS, then Newton steps until strong convexity certifies
    ``||w - w*|| <= ||grad|| / lam <= tol``. With ``strict=False`` (inside a
    release, after the charge) it never raises: if rounding keeps the certificate
    out of reach, it returns the Newton iterate of smallest gradient (the problem
    is ``lam``-strongly convex with curvature at most ``1/4 + lam``, so Newton's
    iterates reach the rounding floor of the gradient; see
    :func:`reachable_logistic_tol`, checked before the charge).
    """
    objective = _PerturbedObjective(X, y, _logistic(), lam, linear)
    w = _lbfgs(objective, np.zeros(X.shape[1]), tol, max_iter)
    best, best_norm = w, math.inf
    for _ in range(50):
        gradient = objective.gradient(w)
        norm = float(np.linalg.norm(gradient))
        if norm / lam <= tol:
            return w
        if norm < best_norm:
            best, best_norm = w, norm
        p = expit(y * (X @ w))
        curvature = p * (1.0 - p)
        hessian = (X.T * curvature) @ X / X.shape[0] + lam * np.eye(X.shape[1])
        step = np.linalg.solve(hessian, gradient)
        if not np.all(np.isfinite(step)):
            break
        w = w - step
    if np.all(np.isfinite(w)) and np.linalg.norm(objective.gradient(w)) / lam <= tol:
        return w
    if not strict:
        return best
    raise ConvergenceError(
        f"the logistic solver could not certify that the coefficients are within tol={tol:.3g} "
        "of the exact minimiser; no model was fitted. Increase tol or max_iter."
    )
