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
loss in the prediction (the paper's ``L_l``; the paper's ``L_f`` is ``X``). The
formula helpers here are pure functions of public quantities, pinned by the
tests; the losses and solvers live in :mod:`skprivpred.linear_model._optim`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from numbers import Integral, Real
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from scipy.special import expit
from scipy.stats import norm
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, column_or_1d, validate_data

from .._base import (
    PrivatePredictorMixin,
    QueryPlan,
    answer,
    check_noise_delta,
    resolve_binary_classes,
)
from .._hopeless import BEST_CASE_THRESHOLD, BestCase, warn_if_hopeless, warn_if_noise_dominates
from .._warnings import warn_user
from ..accounting._accountant import PrivacyAccountant
from ..accounting._guarantee import GuaranteeUnit, PrivacyGuarantee
from ..exceptions import ConvergenceError, InvalidParameterError
from ..mechanisms._closed_forms import gaussian_sigma, laplace_positive_proba, sample_categorical
from ..mechanisms._exact import (
    DEFAULT_GRID_STEPS,
    discrete_gaussian_sigma,
    grid_gaussian_release,
    grid_laplace_release,
)
from ..utils._param_validation import (
    Bounds,
    Interval,
    StrOptions,
    validate_parameter_constraints,
)
from ..utils._typing import MatrixLike, RandomStateLike, Self, VectorLike
from ._optim import (
    _augmented_rows,
    _averaged_psgd,
    _certified_erm,
    _huber,
    _huberized_hinge,
    _logistic,
    _Loss,
    _squared,
)

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

# Default radius of the classifiers' coefficient ball, as a multiple of
# s = sqrt(n epsilon / (1 + epsilon)) (the effective sample size of Corollary 4.11),
# for features scaled to [-1, 1] (the scaling the documentation recommends, which
# public_preprocessor produces). Chosen on a held-out third of Adult's training
# split (never its test split), at epsilon 0.1 to 2: with the "auto" bound and with sqrt(14),
# two seeds, each multiple is within 0.003 of the best validation accuracy of the sweep
# (0.03 to 0.2 for ERM, 0.02 to 0.12 for PSGD); docs/user_guide/stable_linear.rst.
_ERM_RADIUS_PER_S = 0.08
_PSGD_RADIUS_PER_S = 0.05

_POSITIVE = Interval(Real, 0, None, closed="neither")
_NON_NEGATIVE = Interval(Real, 0, None, closed="left")
_COUNT = Interval(Integral, 1, None, closed="left")


def _check_args(caller: str, constraints: dict, **values: Any) -> None:
    """Check a formula's arguments against declared constraints (names the argument)."""
    validate_parameter_constraints(constraints, values, caller_name=caller)


# -- formulas (public quantities only) -------------------------------------------------
def _query_norm(query_norm, norm_bound: float):
    if query_norm is None:
        return norm_bound
    query_norm = np.asarray(query_norm, dtype=float)
    if not np.all(np.isfinite(query_norm) & (query_norm >= 0)):
        raise InvalidParameterError(
            f"query_norm must hold finite numbers >= 0, got {query_norm!r}."
        )
    return query_norm if query_norm.ndim else float(query_norm)


def erm_sensitivity(
    n_samples: int,
    lam: float,
    loss_lipschitz: float,
    norm_bound: float,
    query_norm: float | np.ndarray | None = None,
    solver_tol: float = 0.0,
) -> Any:  # a float for a float query_norm, else an array
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
    >>> from skprivpred.linear_model import erm_sensitivity
    >>> round(erm_sensitivity(1000, 0.01, 1.0, 1.0), 12)
    0.4
    """
    _check_args(
        "erm_sensitivity",
        {
            "n_samples": [_COUNT],
            "lam": [_POSITIVE],
            "loss_lipschitz": [_POSITIVE],
            "norm_bound": [_POSITIVE],
            "solver_tol": [_NON_NEGATIVE],
        },
        n_samples=n_samples,
        lam=lam,
        loss_lipschitz=loss_lipschitz,
        norm_bound=norm_bound,
        solver_tol=solver_tol,
    )
    per_norm = 4.0 * loss_lipschitz * norm_bound / (lam * n_samples) + 2.0 * float(solver_tol)
    return per_norm * _query_norm(query_norm, norm_bound)


def erm_auto_lam(
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
    >>> from skprivpred.linear_model import erm_auto_lam
    >>> round(erm_auto_lam(1000, 1.0, 1.0, 1.0, 1.0), 7)
    0.0894427
    """
    _check_args(
        "erm_auto_lam",
        {
            "n_samples": [_COUNT],
            "epsilon": [_POSITIVE],
            "radius": [_POSITIVE],
            "loss_lipschitz": [_POSITIVE],
            "norm_bound": [_POSITIVE],
        },
        n_samples=n_samples,
        epsilon=epsilon,
        radius=radius,
        loss_lipschitz=loss_lipschitz,
        norm_bound=norm_bound,
    )
    effective_n = n_samples * epsilon / (1.0 + epsilon)
    return 2.0 * norm_bound * loss_lipschitz / (radius * math.sqrt(effective_n))


def default_feature_norm_bound(n_features: int) -> float:
    """``feature_norm_bound="auto"``: ``sqrt(n_features)``, the largest norm of a row in [-1, 1]^d.

    A public quantity (the number of columns), never a statistic of the rows.
    It is a true bound for the scaling the documentation recommends (every
    feature in ``[-1, 1]``, as :func:`~skprivpred.preprocessing.public_preprocessor`
    produces); a tighter public bound, such as
    :func:`~skprivpred.preprocessing.row_norm_bound` of the preprocessing,
    means less noise.

    Parameters
    ----------
    n_features : int
        Number of feature columns, >= 1.

    Returns
    -------
    float
        The bound ``X0``.

    Examples
    --------
    >>> from skprivpred.linear_model import default_feature_norm_bound
    >>> default_feature_norm_bound(16)
    4.0
    """
    _check_args("default_feature_norm_bound", {"n_features": [_COUNT]}, n_features=n_features)
    return math.sqrt(n_features)


def default_classifier_radius(n_samples: int, epsilon: float, method: str) -> float:
    """Default coefficient radius of the linear classifiers, from ``n`` and ``epsilon`` only.

    ``R = c sqrt(n epsilon / (1 + epsilon))`` with ``c = 0.08`` for regularized
    ERM (``lam`` then follows from Corollary 4.11) and ``c = 0.05`` for averaged
    projected SGD (``eta`` from Theorem 4.12). The radius is in units of
    features scaled to ``[-1, 1]``: a model in the ball moves its logit by at
    most ``2 R`` when one feature crosses its range. It grows like the
    square root of the effective sample size, as the noise per unit of query
    norm then stays fixed (``2 c / (1 + epsilon)`` for ERM). The constants were
    chosen on a held-out third of Adult's training split, at epsilon from 0.1
    to 2, with and without a tight ``feature_norm_bound``.

    Parameters
    ----------
    n_samples : int
        Number of training rows ``n`` (public under replace-one neighbours).
    epsilon : float
        Per-query privacy parameter, > 0.
    method : {"erm", "psgd"}
        The estimator family.

    Returns
    -------
    float
        The radius ``R``.

    Examples
    --------
    >>> from skprivpred.linear_model import default_classifier_radius
    >>> round(default_classifier_radius(20_000, 1.0, "erm"), 6)
    8.0
    >>> round(default_classifier_radius(20_000, 1.0, "psgd"), 6)
    5.0
    """
    _check_args(
        "default_classifier_radius",
        {
            "n_samples": [_COUNT],
            "epsilon": [_POSITIVE],
            "method": [StrOptions({"erm", "psgd"})],
        },
        n_samples=n_samples,
        epsilon=epsilon,
        method=method,
    )
    per_s = _ERM_RADIUS_PER_S if method == "erm" else _PSGD_RADIUS_PER_S
    return per_s * math.sqrt(n_samples * epsilon / (1.0 + epsilon))


def erm_radius(lam: float, zero_loss: float) -> float:
    """Radius ``sqrt(2 loss(0) / lam)`` that holds every regularised minimiser.

    For a non-negative loss, the minimiser ``w*`` of ``F(w) = mean loss +
    (lam / 2) ||w||^2`` satisfies ``(lam / 2) ||w*||^2 <= F(w*) <= F(0) <=
    sup_y loss(0, y)``, on every data set: a data-independent radius, so the
    ball constraint ``||w|| <= R`` with this ``R`` is never active and the
    Lipschitz constants on the ball hold for every model ERM returns.

    Parameters
    ----------
    lam : float
        Regularization strength, > 0.
    zero_loss : float
        ``sup_y loss(0, y)``: ``ln 2`` for the logistic loss, ``B^2 / 2`` for
        the squared loss with targets in ``[-B, B]``; > 0.

    Returns
    -------
    float
        The radius ``R``.

    Examples
    --------
    >>> import math
    >>> from skprivpred.linear_model import erm_radius
    >>> round(erm_radius(0.01, math.log(2)), 4)
    11.7741
    """
    _check_args(
        "erm_radius",
        {"lam": [_POSITIVE], "zero_loss": [_POSITIVE]},
        lam=lam,
        zero_loss=zero_loss,
    )
    return math.sqrt(2.0 * zero_loss / lam)


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
    >>> from skprivpred.linear_model import psgd_step_size
    >>> psgd_step_size(10_000, 1.0, 1.0, 1.0)
    0.01
    """
    _check_args(
        "psgd_step_size",
        {
            "n_samples": [_COUNT],
            "radius": [_POSITIVE],
            "loss_lipschitz": [_POSITIVE],
            "norm_bound": [_POSITIVE],
        },
        n_samples=n_samples,
        radius=radius,
        loss_lipschitz=loss_lipschitz,
        norm_bound=norm_bound,
    )
    return radius / (norm_bound * loss_lipschitz * math.sqrt(n_samples))


def psgd_sensitivity(
    eta: float,
    loss_lipschitz: float,
    norm_bound: float,
    query_norm: float | np.ndarray | None = None,
    n_epochs: int = 1,
) -> Any:  # a float for a float query_norm, else an array
    """Prediction stability of averaged projected SGD (Theorem 4.12, corrected).

    ``gamma(x) = 2 eta L X ||x~|| n_epochs``. Runs on neighbouring data sets
    (same data-independent order) coincide until the differing row is used;
    that step moves them apart by at most ``2 eta L X`` and the later steps,
    1-expansive for smooth convex losses with ``eta <= 2 / sigma``, never
    increase the gap; each epoch visits the differing row once. The paper
    prints ``R X / sqrt(n)``, half of ``2 eta L X`` at its step size; a
    two-point data set attains ``2 eta L X`` (the paper's constant is corrected
    here), so noise calibrated to the printed rate gives only about
    ``2 epsilon``.

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
    >>> from skprivpred.linear_model import psgd_sensitivity
    >>> psgd_sensitivity(0.01, 1.0, 1.0)
    0.02
    """
    _check_args(
        "psgd_sensitivity",
        {
            "eta": [_POSITIVE],
            "loss_lipschitz": [_POSITIVE],
            "norm_bound": [_POSITIVE],
            "n_epochs": [_COUNT],
        },
        eta=eta,
        loss_lipschitz=loss_lipschitz,
        norm_bound=norm_bound,
        n_epochs=n_epochs,
    )
    return 2.0 * eta * loss_lipschitz * norm_bound * n_epochs * _query_norm(query_norm, norm_bound)


# -- noise: how a fitted model's scores are released -------------------------------------------
@dataclass(frozen=True)
class _ScoreRelease:
    """The public recipe for releasing scores, fixed at fit (the noisy predictor of Lemma 4.5).

    Not a mechanism of its own: it binds the per-query sensitivity
    ``gamma(x) = per_unit_norm * ||x~||`` of a fitted model to the mechanisms
    of :mod:`skprivpred.mechanisms`. Labels are drawn from the closed form of
    ``P(score + noise >= 0)`` with one uniform per row; real values get
    integer noise on a public grid.
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
    """Resolved public parameters shared by the four estimators."""

    epsilon: float
    delta: float
    noise: str
    feature_norm_bound: float
    intercept_scaling: float | None
    huber_delta: float
    y_bounds: tuple[float, float] | None = None

    @property
    def norm_bound(self) -> float:
        """``X``: the norm bound of the augmented rows."""
        if self.intercept_scaling is None:
            return self.feature_norm_bound
        return math.hypot(self.feature_norm_bound, self.intercept_scaling)

    @property
    def y_centre(self) -> float:
        """Public centre ``(lo + hi) / 2`` of the target interval (0 without one)."""
        return 0.0 if self.y_bounds is None else 0.5 * (self.y_bounds[0] + self.y_bounds[1])

    @property
    def y_half_width(self) -> float | None:
        """``B = (hi - lo) / 2``: centred targets lie in ``[-B, B]`` (``None`` without bounds)."""
        return None if self.y_bounds is None else 0.5 * (self.y_bounds[1] - self.y_bounds[0])


class _FitPlan(NamedTuple):
    """Everything public about a fit, resolved before any row is read beyond its shape."""

    per_unit_norm: float  # gamma(x) / ||x~||
    model_radius: float | None  # bound on ||w|| of every model the solver can return
    public: dict  # resolved public attributes (lam_, radius_, tol_ or eta_)
    details: dict  # extra public entries of privacy_guarantee_.details
    solve: Callable[[np.ndarray, np.ndarray, np.random.Generator], np.ndarray]


_SHARED_CONSTRAINTS: dict = {
    "epsilon": [_POSITIVE],
    "feature_norm_bound": [_POSITIVE, StrOptions({"auto"})],
    "fit_intercept": ["boolean"],
    "intercept_scaling": [_POSITIVE],
    "huber_delta": [_POSITIVE],
    "noise": [StrOptions({"laplace", "gaussian"})],
    "delta": [Interval(Real, 0, 1, closed="left")],
    "accountant": [PrivacyAccountant, None],
    "random_state": ["random_state"],
}
_ERM_CONSTRAINTS: dict = {
    "lam": [_POSITIVE, StrOptions({"auto"})],
    "radius": [_POSITIVE, None],
    "tol": [_POSITIVE, None],
    "max_iter": [_COUNT],
}
_PSGD_CONSTRAINTS: dict = {
    "eta": [_POSITIVE, StrOptions({"auto"})],
    "n_epochs": [_COUNT],
    "shuffle": ["boolean"],
    "radius": [_POSITIVE],
}
_CLASSIFIER_CONSTRAINTS: dict = {
    "loss": [StrOptions({"logistic", "huberized_hinge"})],
    "classes": ["array-like", None],
}
_REGRESSOR_CONSTRAINTS: dict = {
    "loss": [StrOptions({"squared", "huber"})],
    "y_bounds": [Bounds(), None],
    "clip_output": ["boolean"],
}


class _PrivateLinearModel(PrivatePredictorMixin):
    """Fit and query plumbing shared by the four estimators.

    Subclasses provide ``_encode_targets(y, bounds)`` (targets for the loss;
    the classifier also sets ``classes_``), ``_make_loss(bounds, radius)`` and
    ``_plan_fit(bounds, n_samples)`` (the public constants of the fit and its
    solver).
    """

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
    tol: Any
    max_iter: Any
    n_epochs: Any
    shuffle: Any
    eta: Any
    y_bounds: Any
    clip_output: Any
    classes: Any
    # Set in fit.
    classes_: np.ndarray
    _coef: np.ndarray
    _score_release: _ScoreRelease
    _output_bounds: Any
    _y_centre: float

    # Provided by the subclasses (see the class docstring).
    _make_loss: Callable[[_Bounds, float], _Loss]
    _encode_targets: Callable[[np.ndarray, _Bounds], np.ndarray]
    _plan_fit: Callable[[_Bounds, int], _FitPlan]

    def _check_params(self) -> None:
        """Cross-parameter rules (after ``_validate_params``)."""
        check_noise_delta(self.noise, self.delta)
        if self.loss == "squared" and getattr(self, "y_bounds", None) is None:
            raise InvalidParameterError(
                "y_bounds is required with loss='squared' (its Lipschitz constant is R X + B, "
                "B = (hi - lo) / 2): pass the public range (lo, hi) of the target, for example "
                "its documented range, chosen without looking at the training data."
            )

    def _bounds(self, n_features: int) -> _Bounds:
        """The resolved public bounds (``feature_norm_bound="auto"`` from the number of columns)."""
        y_bounds = getattr(self, "y_bounds", None)
        if isinstance(self.feature_norm_bound, str):  # "auto"
            feature_norm_bound = default_feature_norm_bound(n_features)
        else:
            feature_norm_bound = float(self.feature_norm_bound)
        return _Bounds(
            epsilon=float(self.epsilon),
            delta=float(self.delta),
            noise=self.noise,
            feature_norm_bound=feature_norm_bound,
            intercept_scaling=float(self.intercept_scaling) if self.fit_intercept else None,
            huber_delta=float(self.huber_delta),
            y_bounds=None if y_bounds is None else (float(y_bounds[0]), float(y_bounds[1])),
        )

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

        Warns
        -----
        UserWarning
            When the parameters make learning hopeless: the noise scale at
            every query is at least the largest score any model within the
            radius can reach there. Decided from public quantities only
            (``epsilon``, ``n``, the bounds, ``lam`` or ``eta``), before any row
            is used, so it is the same on every data set of the same size.
        """
        self._check_fit_arguments(fit_params)
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
            bounds = self._bounds(X.shape[1])
            targets = self._encode_targets(y, bounds)
            # Every constant of the fit, and the noise, from public quantities only (n, the
            # number of columns, the parameters), before any row is used.
            plan = self._plan_fit(bounds, targets.shape[0])
            release = _score_release(bounds, plan.per_unit_norm)
            if isinstance(self, ClassifierMixin):
                record = _linear_best_case(bounds, plan, release)
                warn_if_hopeless(type(self).__name__, record)
            else:
                record = None
                _warn_if_noise_dominates(type(self).__name__, bounds, plan, release)
            features, _ = _augmented_rows(X, bounds.feature_norm_bound, bounds.intercept_scaling)
            fit_rng = self._start_streams()
            coef = plan.solve(features, targets, fit_rng)
            self._set_fitted(bounds, plan, release, coef)
            self._best_case = record
        return self

    def _set_fitted(
        self, bounds: _Bounds, plan: _FitPlan, release: _ScoreRelease, coef: np.ndarray
    ) -> None:
        self._coef = coef
        self._rows = (bounds.feature_norm_bound, bounds.intercept_scaling)
        self._score_release = release
        self.feature_norm_bound_ = bounds.feature_norm_bound
        for name, value in plan.public.items():
            setattr(self, name, value)
        self.sensitivity_ = release.reference_sensitivity
        self.noise_scale_ = release.noise_scale(release.reference_sensitivity)
        self.privacy_guarantee_ = PrivacyGuarantee(
            epsilon=bounds.epsilon,
            delta=bounds.delta,
            unit=GuaranteeUnit.QUERY_ROW,
            theorem=self._theorem,
            details={
                "noise": bounds.noise,
                "sensitivity": self.sensitivity_,
                "noise_scale": self.noise_scale_,
                **plan.details,
            },
        )

    # -- queries ------------------------------------------------------------------
    def _score_plan(self, draw, finish=None) -> QueryPlan:
        """The plan of a query method: one release per row of the score ``<w, x~>``.

        The public checks validate the rows; the computation gives each row's
        score and its (public) sensitivity; ``draw`` is the mechanism (a label
        from the closed-form law, or a real value on the public grid) and
        ``finish`` its post-processing. Charged per row at the fitted guarantee.
        """
        check_is_fitted(self, "privacy_guarantee_")
        release = self._score_release
        return QueryPlan(
            check=self._validate_queries,
            values=self._score_values,
            draw=draw,
            finish=finish if finish is not None else np.asarray,
            epsilon=release.epsilon,
            delta=release.delta,
        )

    def _validate_queries(self, X) -> np.ndarray:
        """The public checks of a query call: fitted width, finite numbers."""
        return validate_data(self, X, reset=False, dtype=np.float64, ensure_all_finite=True)

    def _score_values(self, rows: np.ndarray, n_jobs: int | None = None) -> np.ndarray:
        """Per checked row: the score ``<w, x~>`` (secret) and its sensitivity (public)."""
        features, norms = _augmented_rows(rows, *self._rows)
        return np.column_stack([features @ self._coef, self._score_release.sensitivity(norms)])

    def _draw_real_values(self, values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """The mechanism of a real-valued answer: the score plus noise, on the public grid."""
        return self._score_release.real_values(values[:, 0], values[:, 1], rng)

    def _draw_labels(self, values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """The mechanism of a label: one draw from ``P(score + noise >= 0)`` per row."""
        return sample_categorical(self._score_release.label_law(values[:, 0], values[:, 1]), rng)

    def _scores_and_sensitivity(self, X) -> tuple[np.ndarray, np.ndarray]:
        check_is_fitted(self, "privacy_guarantee_")
        values = self._score_values(self._validate_queries(X))
        return values[:, 0], values[:, 1]

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


def _score_release(bounds: _Bounds, per_unit_norm: float) -> _ScoreRelease:
    """The public release recipe of a fit whose sensitivity is ``per_unit_norm * ||x~||``."""
    unit_sigma = None
    if bounds.noise == "gaussian":
        unit_sigma = gaussian_sigma(1.0, bounds.epsilon, bounds.delta, method="analytic")
        # Calibrate (and cache) the grid's discrete Gaussian now, not at the first query.
        discrete_gaussian_sigma(GRID_STEPS + 1, bounds.epsilon, bounds.delta)
    return _ScoreRelease(
        epsilon=bounds.epsilon,
        delta=bounds.delta,
        noise=bounds.noise,
        per_unit_norm=per_unit_norm,
        reference_sensitivity=per_unit_norm * bounds.norm_bound,
        gaussian_unit_sigma=unit_sigma,
    )


def _linear_best_case(bounds: _Bounds, plan: _FitPlan, release: _ScoreRelease) -> BestCase | None:
    """A linear classifier's best case: the law of the label at the largest reachable score.

    At a query of norm ``q`` no model with ``||w|| <= R`` scores above ``R q``
    and the noise scale is ``noise_scale_ * q / X``: the probability that the
    answer keeps the sign of a score ``R q`` is the same at every ``q``, and
    reads no row. ``None`` when no radius bounds the model.
    """
    if plan.model_radius is None:
        return None
    X = bounds.norm_bound
    reach = plan.model_radius * X
    sensitivity = release.reference_sensitivity
    noise = release.noise_scale(sensitivity)
    value = float(release.label_law(np.array([reach]), np.array([sensitivity]))[0, 1])
    if release.noise == "laplace":  # 1 - exp(-reach / b) / 2 >= T
        allowed = reach / math.log(1.0 / (2.0 * (1.0 - BEST_CASE_THRESHOLD)))
    else:  # Phi(reach / sigma) >= T
        allowed = reach / float(norm.ppf(BEST_CASE_THRESHOLD))
    return BestCase(
        value=value,
        meaning="the probability that an answer is the noiseless model's label on a row at "
        "the largest score any model within the radius reaches",
        public=f"epsilon = {bounds.epsilon:.4g} per answered row, the number of training rows, "
        f"feature_norm_bound, radius {plan.model_radius:.4g}, lam or eta: at a query of norm "
        f"{X:.4g} the noise scale is {noise:.4g} and no model scores above {reach:.4g}",
        remedy=f"the noise scale must fall to {allowed:.4g} (by a factor "
        f"{noise / allowed:.3g}): raise epsilon, train on more rows, or change radius, lam "
        "or eta",
    )


def _warn_if_noise_dominates(
    name: str, bounds: _Bounds, plan: _FitPlan, release: _ScoreRelease
) -> None:
    """Warn when the noise is at least the largest score any fitted model can reach.

    Both sides are public and scale with the query's norm: at a query of norm
    ``q`` the noise scale is ``noise_scale_ * q / X`` and no model with
    ``||w|| <= R`` scores above ``R q``. Their ratio ``noise_scale_ / (R X)``
    is the same for every query, and it reads no training row (the warning
    fires, or not, identically on every data set of the same size).
    """
    if plan.model_radius is None:
        return
    noise = release.noise_scale(release.reference_sensitivity)
    reach = plan.model_radius * bounds.norm_bound
    warn_if_noise_dominates(
        name,
        noise=noise,
        reach=reach,
        what="answer",
        detail=f"at a query of norm X = {bounds.norm_bound:.4g} the noise scale is {noise:.4g}, "
        f"while no model with ||w|| <= {plan.model_radius:.4g} scores above {reach:.4g} there "
        "(the ratio is the same at every query).",
        public="epsilon, the number of training rows, feature_norm_bound, radius, lam or eta",
        remedy="raise epsilon, train on more rows, or change radius, lam or eta",
    )


def _auto_radius(loss_at: Callable[[float], _Loss], bounds: _Bounds, n_samples: int) -> float:
    """The radius at which ``erm_radius(erm_auto_lam(R), loss(0))`` is ``R`` again.

    With ``lam(R) = 2 X L(R) / (R s)`` (Corollary 4.11, ``s = sqrt(n epsilon /
    (1 + epsilon))``) and ``R = sqrt(2 l0 / lam)``, ``R L(R) = l0 s / X``. The
    Lipschitz constant is ``L(R) = a R + b`` (``a = X``, ``b = B`` for the
    squared loss; ``a = 0`` otherwise), so ``R`` is the positive root of
    ``a R^2 + b R - l0 s / X``.
    """
    X = bounds.norm_bound
    s = math.sqrt(n_samples * bounds.epsilon / (1.0 + bounds.epsilon))
    at_zero, at_one = loss_at(0.0), loss_at(1.0)
    a, b = at_one.lipschitz - at_zero.lipschitz, at_zero.lipschitz
    c = at_zero.zero_loss * s / X
    if a == 0.0:
        return c / b
    return (-b + math.sqrt(b * b + 4.0 * a * c)) / (2.0 * a)


class _StableERM(_PrivateLinearModel):
    """Regularized ERM on all rows with a certified solver (Theorem 4.9)."""

    _theorem = (
        "Dwork & Feldman (2018), Lemma 4.5 with the stability of Theorem 4.9 "
        "(gamma = (4 L X / (lam n) + 2 tol) ||x~||, Laplace scale gamma / epsilon)"
    )

    def _default_radius(
        self, loss_at: Callable[[float], _Loss], bounds: _Bounds, n_samples: int
    ) -> float:
        """``radius=None`` with ``lam="auto"``: the fixed point of :func:`_auto_radius`."""
        return _auto_radius(loss_at, bounds, n_samples)

    def _resolve_radius_and_lam(self, bounds: _Bounds, n_samples: int):
        """``(radius, lam, loss)``: the given values, else their data-independent defaults."""

        def loss_at(radius: float) -> _Loss:
            return self._make_loss(bounds, radius)

        zero_loss = loss_at(1.0).zero_loss  # does not depend on the radius
        radius = None if self.radius is None else float(self.radius)
        if isinstance(self.lam, str):  # "auto": Corollary 4.11
            if radius is None:
                if not math.isfinite(zero_loss):
                    raise InvalidParameterError(
                        "radius is required with lam='auto' and an unbounded loss at the zero "
                        "model (loss='huber' without y_bounds): pass a public bound R on the "
                        "norm of the coefficients, pass y_bounds, or pass a numeric lam."
                    )
                radius = self._default_radius(loss_at, bounds, n_samples)
            loss = loss_at(radius)
            lam = erm_auto_lam(n_samples, bounds.epsilon, radius, loss.lipschitz, bounds.norm_bound)
            return radius, lam, loss
        lam = float(self.lam)
        if radius is None and math.isfinite(zero_loss):
            radius = erm_radius(lam, zero_loss)
        # Only the squared loss's constant depends on the radius, and it always has one here.
        return radius, lam, loss_at(radius if radius is not None else math.inf)

    def _plan_fit(self, bounds: _Bounds, n_samples: int) -> _FitPlan:
        norm_bound = bounds.norm_bound
        radius, lam, loss = self._resolve_radius_and_lam(bounds, n_samples)
        exact_stability = erm_sensitivity(
            n_samples, lam, loss.lipschitz, norm_bound, query_norm=1.0
        )
        tol = _DEFAULT_RELATIVE_TOL * exact_stability if self.tol is None else float(self.tol)
        per_unit_norm = erm_sensitivity(
            n_samples, lam, loss.lipschitz, norm_bound, query_norm=1.0, solver_tol=tol
        )
        # Every regularised minimiser has ||w||^2 <= 2 loss(0) / lam (erm_radius).
        reach = [] if radius is None else [radius]
        if math.isfinite(loss.zero_loss):
            reach.append(erm_radius(lam, loss.zero_loss))
        max_iter = self.max_iter

        def solve(features, targets, fit_rng) -> np.ndarray:
            return _certified_erm(features, targets, loss, lam, radius, tol, max_iter)

        return _FitPlan(
            per_unit_norm=per_unit_norm,
            model_radius=min(reach) if reach else None,
            public={"lam_": lam, "radius_": radius, "tol_": tol},
            details={"lam": lam, "solver_accuracy": tol},
            solve=solve,
        )


class _AveragedPSGD(_PrivateLinearModel):
    """Averaged projected SGD in a data-independent order (Theorem 4.12)."""

    _theorem = (
        "Dwork & Feldman (2018), Lemma 4.5 with the stability of Theorem 4.12, corrected "
        "(gamma = 2 eta L X ||x~|| n_epochs, twice the printed rate)"
    )

    def _plan_fit(self, bounds: _Bounds, n_samples: int) -> _FitPlan:
        norm_bound = bounds.norm_bound
        if isinstance(self.radius, str):  # "auto" (the classifier's default)
            radius = default_classifier_radius(n_samples, bounds.epsilon, "psgd")
        else:
            radius = float(self.radius)
        loss = self._make_loss(bounds, radius)
        if isinstance(self.eta, str):  # "auto": Theorem 4.12
            eta = psgd_step_size(n_samples, radius, loss.lipschitz, norm_bound)
        else:
            eta = float(self.eta)
        largest_stable_step = 2.0 / (loss.smoothness * norm_bound**2)
        if eta > largest_stable_step:
            warn_user(
                f"eta={eta:.4g} is above 2 / sigma = {largest_stable_step:.4g} for the {loss.name} "
                "loss and the feature bound, where the stability argument fails; using "
                f"eta={largest_stable_step:.4g}.",
                UserWarning,
            )
            eta = largest_stable_step
        n_epochs, shuffle = self.n_epochs, self.shuffle

        def solve(features, targets, fit_rng) -> np.ndarray:
            orders = [
                fit_rng.permutation(n_samples) if shuffle else np.arange(n_samples)
                for _ in range(n_epochs)
            ]
            return _averaged_psgd(features, targets, loss, eta, radius, orders).average

        per_unit_norm = psgd_sensitivity(
            eta, loss.lipschitz, norm_bound, query_norm=1.0, n_epochs=n_epochs
        )
        # No iterate leaves the ball, nor moves further than its steps: T eta L X after T steps.
        steps_reach = n_epochs * n_samples * eta * loss.lipschitz * norm_bound
        return _FitPlan(
            per_unit_norm=per_unit_norm,
            model_radius=min(radius, steps_reach),
            public={"eta_": eta, "radius_": radius},
            details={"eta": eta},
            solve=solve,
        )


def _as_proba(noisy: np.ndarray) -> np.ndarray:
    """``[1 - p, p]`` with ``p = expit(noisy score)`` (post-processing)."""
    return np.column_stack([expit(-noisy), expit(noisy)])


if TYPE_CHECKING:  # the query mixins are always combined with a _PrivateLinearModel
    _QueriesBase = _PrivateLinearModel
else:
    _QueriesBase = object


class _LinearClassifierQueries(_QueriesBase):
    """Binary labels: the sign of the noisy score, its value, and its logistic transform."""

    _parameter_constraints: dict = {**_SHARED_CONSTRAINTS, **_CLASSIFIER_CONSTRAINTS}

    def _make_loss(self, bounds: _Bounds, radius: float) -> _Loss:
        return _logistic() if self.loss == "logistic" else _huberized_hinge(bounds.huber_delta)

    def _encode_targets(self, y: np.ndarray, bounds: _Bounds) -> np.ndarray:
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
        return answer(self, X, self._score_plan(self._draw_labels, self._label_of))

    def _label_of(self, index: np.ndarray) -> np.ndarray:
        """The released labels, from the drawn indices (post-processing)."""
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
        return answer(self, X, self._score_plan(self._draw_real_values))

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
        return answer(self, X, self._score_plan(self._draw_real_values, _as_proba))

    def _output_distribution(self, X) -> np.ndarray:
        """Exact law of ``predict`` per row. NOT PRIVATE: leaks the scores; never charges."""
        return self._label_law(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags


class _LinearRegressorQueries(_QueriesBase):
    """Real values: the noisy score, on a public grid, optionally clipped to ``y_bounds``.

    With ``y_bounds = (lo, hi)`` the targets are clipped to ``[lo, hi]`` and
    centred on the public ``c = (lo + hi) / 2``: the model fits ``y - c``, whose
    range ``[-B, B]`` has ``B = (hi - lo) / 2`` (the width ``hi - lo`` plays the
    role of ``2 B``), and every answer is ``c`` plus the noisy score. Adding a
    public constant is post-processing, so the guarantee is that of the
    centred problem; for ``(-B, B)`` nothing changes.
    """

    _parameter_constraints: dict = {**_SHARED_CONSTRAINTS, **_REGRESSOR_CONSTRAINTS}

    def _make_loss(self, bounds: _Bounds, radius: float) -> _Loss:
        if self.loss == "huber":
            return _huber(bounds.huber_delta, bounds.y_half_width)
        assert bounds.y_half_width is not None  # _check_params requires y_bounds
        return _squared(radius, bounds.norm_bound, bounds.y_half_width)

    def _encode_targets(self, y: np.ndarray, bounds: _Bounds) -> np.ndarray:
        """Targets clipped to ``y_bounds`` and centred; fixes the answers' offset and clipping."""
        y = y.astype(np.float64)
        self._y_centre = bounds.y_centre
        self._output_bounds = bounds.y_bounds if self.clip_output else None
        if bounds.y_bounds is None:
            return y
        return np.clip(y, *bounds.y_bounds) - bounds.y_centre

    def predict(self, X: MatrixLike) -> np.ndarray:
        """One private value per row: ``<w, x~>`` plus noise on a public grid.

        Each row is one query, answered with fresh noise and charged before any
        noise is drawn; the public centre of ``y_bounds`` is added and, with
        ``clip_output=True``, the value is clipped to ``y_bounds``
        (post-processing).

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
            Query rows (finite). Rows above ``feature_norm_bound`` are clipped.

        Returns
        -------
        ndarray of shape (n_queries,)
            The private predictions.
        """
        return answer(self, X, self._score_plan(self._draw_real_values, self._value_of))

    def _value_of(self, noisy: np.ndarray) -> np.ndarray:
        """The released value: the public centre added, clipped to ``y_bounds`` if asked."""
        noisy = noisy + self._y_centre
        bounds = self._output_bounds
        return noisy if bounds is None else np.clip(noisy, *bounds)


# -- the estimators ---------------------------------------------------------------------
class StableERMClassifier(_LinearClassifierQueries, _StableERM, ClassifierMixin, BaseEstimator):
    """Private binary classification by regularized ERM plus noise on each answer.

    Fits one linear model on all training rows, minimising the mean loss plus
    ``(lam / 2) ||w||^2`` over ``||w|| <= radius`` with a certified solver (rows
    clipped to ``feature_norm_bound``). Strong convexity bounds how far one row
    moves a prediction, ``gamma(x) = (4 L X / (lam n) + 2 tol) ||x~||``, and
    each answer adds noise calibrated to it: ``predict`` draws the label from
    its closed form, ``decision_function`` releases the score with exact
    integer noise on a public grid, ``predict_proba`` its ``expit``.

    **Guarantee** (Dwork & Feldman 2018, Lemma 4.5 and Theorem 4.9, constants
    corrected). Under replace-one neighbours each row passed to a query method
    is one query, answered with fresh noise and ``(epsilon, delta)``-DP
    (``delta = 0`` with Laplace noise), charged before the noise is drawn.
    ``fit`` releases nothing, but whether it raises
    :class:`~skprivpred.ConvergenceError` depends on the data.

    See the user guide: :ref:`stable_linear`.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy parameter of each answered row and method call, > 0.
    loss : {"logistic", "huberized_hinge"}, default="logistic"
        ``ln(1 + exp(-y a))``, or the hinge smoothed over a width
        ``huber_delta`` (``classes_[1]`` is +1). Both are 1-Lipschitz.
    lam : float or "auto", default="auto"
        Regularization strength (``LogisticRegression(C)`` is ``lam = 1 / (C n)``).
        ``"auto"``: Corollary 4.11, ``lam = 2 X L / (R sqrt(n epsilon / (1 + epsilon)))``.
    feature_norm_bound : float or "auto", default="auto"
        Public bound ``X0`` on a feature row's Euclidean norm; larger rows are
        scaled down to it. ``"auto"``: ``sqrt(n_features)``
        (:func:`default_feature_norm_bound`), a true bound for features in
        ``[-1, 1]``. A tighter public bound, such as
        :func:`~skprivpred.preprocessing.row_norm_bound` of a public
        preprocessing, means less noise. Never choose it from the training rows.
    radius : float, default=None
        Public bound ``R`` on ``||w||``. ``None`` with ``lam="auto"``:
        :func:`default_classifier_radius`, ``0.08 sqrt(n epsilon / (1 + epsilon))``;
        with a numeric ``lam``: :func:`erm_radius`, which never binds.
    fit_intercept : bool, default=True
        Append the constant feature ``intercept_scaling`` (penalized and
        constrained like the others).
    intercept_scaling : float, default=1.0
        Value ``c`` of the intercept feature, > 0.
    huber_delta : float, default=1.0
        Smoothing width of ``loss="huberized_hinge"``, > 0.
    tol : float, default=None
        Certified bound ``tau`` on the distance to the exact minimiser;
        ``None``: ``1e-4 * 4 L X / (lam n)``.
    max_iter : int, default=10000
        Iteration cap of each solver phase.
    noise : {"laplace", "gaussian"}, default="laplace"
        Laplace: ``(epsilon, 0)``-DP. Gaussian: ``(epsilon, delta)``-DP
        (Balle & Wang 2018 for labels, exact discrete Gaussian for scores).
    delta : float, default=0.0
        0 with Laplace noise; in (0, 1) with Gaussian noise.
    classes : array-like of shape (2,), default=None
        The public label set. ``None`` reads it from ``y`` and emits a
        :class:`~skprivpred.PrivacyWarning`.
    accountant : PrivacyAccountant, default=None
        Charged ``(epsilon, delta)`` per row of every query call before any
        noise is drawn; shared, not copied, by ``clone``.
    random_state : int, RandomState instance, Generator or None, default=None
        Seeds the answers' noise. Use ``None`` (OS entropy) in deployment: a
        known seed voids the guarantee.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        The public label set.
    feature_norm_bound_ : float
        The feature norm bound ``X0`` used (``"auto"`` resolved).
    lam_ : float
        The regularization strength used.
    radius_ : float or None
        The coefficient radius used (``None``: unconstrained).
    tol_ : float
        The certified solver accuracy ``tau`` used.
    sensitivity_ : float
        ``gamma`` at a query of the largest norm ``X``.
    noise_scale_ : float
        Laplace scale or Gaussian standard deviation at that query norm.
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during ``fit`` (string column names only).
    privacy_guarantee_ : PrivacyGuarantee
        The per-row guarantee, with the noise family, sensitivity, noise scale,
        ``lam`` and solver accuracy in ``details``.
    queries_answered_ : int
        Query rows answered since ``fit``.

    See Also
    --------
    AveragedPSGDClassifier : One pass of SGD; cheaper, needs a smooth loss.
    DPValidatedLogisticRegression : A privately validated regulariser.

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
    >>> round(clf.lam_, 5), clf.predict(X[:3]).shape
    (0.03225, (3,))
    """

    _parameter_constraints: dict = {
        **_SHARED_CONSTRAINTS,
        **_ERM_CONSTRAINTS,
        **_CLASSIFIER_CONSTRAINTS,
    }

    def _default_radius(
        self, loss_at: Callable[[float], _Loss], bounds: _Bounds, n_samples: int
    ) -> float:
        """``radius=None`` with ``lam="auto"``: :func:`default_classifier_radius`."""
        return default_classifier_radius(n_samples, bounds.epsilon, "erm")

    def __init__(
        self,
        *,
        epsilon: float = 1.0,
        loss: str = "logistic",
        lam: float | str = "auto",
        feature_norm_bound: float | str = "auto",
        radius: float | None = None,
        fit_intercept: bool = True,
        intercept_scaling: float = 1.0,
        huber_delta: float = 1.0,
        tol: float | None = None,
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
        self.tol = tol
        self.max_iter = max_iter
        self.noise = noise
        self.delta = delta
        self.classes = classes
        self.accountant = accountant
        self.random_state = random_state


class StableERMRegressor(_LinearRegressorQueries, _StableERM, RegressorMixin, BaseEstimator):
    """Private regression by regularized ERM plus noise on each answer.

    Fits one linear model on all training rows, minimising the mean loss plus
    ``(lam / 2) ||w||^2`` over ``||w|| <= radius`` with a certified solver
    (rows clipped to ``feature_norm_bound``, targets clipped to the public
    ``y_bounds`` and centred). One row moves a prediction by at most
    ``gamma(x) = (4 L X / (lam n) + 2 tol) ||x~||``; ``predict`` releases the
    prediction with exact integer noise on a public grid calibrated to it.

    **Guarantee** (Dwork & Feldman 2018, Lemma 4.5 and Theorem 4.9, constants
    corrected). Under replace-one neighbours each row passed to ``predict`` or
    ``score`` is one query, answered with fresh noise and
    ``(epsilon, delta)``-DP (``delta = 0`` with Laplace noise), charged before
    the noise is drawn. ``fit`` releases nothing, but whether it raises
    :class:`~skprivpred.ConvergenceError` depends on the data.

    See the user guide: :ref:`stable_linear`.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy parameter of each answered row, > 0.
    loss : {"squared", "huber"}, default="squared"
        ``(a - y)^2 / 2`` (needs ``y_bounds``) or the Huber loss with
        threshold ``huber_delta``.
    lam : float or "auto", default="auto"
        Regularization strength (``Ridge(alpha)`` is about ``lam = alpha / n``).
        ``"auto"``: Corollary 4.11.
    feature_norm_bound : float or "auto", default="auto"
        Public bound ``X0`` on a feature row's Euclidean norm; larger rows are
        scaled down to it. ``"auto"``: ``sqrt(n_features)``
        (:func:`default_feature_norm_bound`). Never choose it from the
        training rows.
    radius : float, default=None
        Public bound ``R`` on ``||w||``. ``None``: :func:`erm_radius` (with
        ``lam="auto"``, the radius at which it and Corollary 4.11's ``lam``
        agree); unconstrained for the Huber loss without ``y_bounds``.
    y_bounds : tuple of (float, float), default=None
        Public range ``(lo, hi)`` of the target, from its documented range,
        never from the training targets; required for the squared loss. Set
        it before running scikit-learn's ``check_estimator`` (see
        :func:`~skprivpred.utils.expected_failed_checks`).
    clip_output : bool, default=True
        Clip the answers to ``y_bounds`` (when set).
    fit_intercept : bool, default=True
        Append the constant feature ``intercept_scaling`` (penalized).
    intercept_scaling : float, default=1.0
        Value ``c`` of the intercept feature, > 0.
    huber_delta : float, default=1.0
        Threshold of the Huber loss, > 0.
    tol : float, default=None
        Certified solver accuracy ``tau``; ``None``: ``1e-4 * 4 L X / (lam n)``.
    max_iter : int, default=10000
        Iteration cap of each solver phase.
    noise : {"laplace", "gaussian"}, default="laplace"
        Laplace: ``(epsilon, 0)``-DP. Gaussian: ``(epsilon, delta)``-DP.
    delta : float, default=0.0
        0 with Laplace noise; in (0, 1) with Gaussian noise.
    accountant : PrivacyAccountant, default=None
        Charged per query row before any noise is drawn; shared by ``clone``.
    random_state : int, RandomState instance, Generator or None, default=None
        Seeds the answers' noise. Use ``None`` in deployment.

    Attributes
    ----------
    feature_norm_bound_ : float
        The feature norm bound ``X0`` used (``"auto"`` resolved).
    lam_ : float
        The regularization strength used.
    radius_ : float or None
        The coefficient radius used (``None``: unconstrained).
    tol_ : float
        The certified solver accuracy ``tau`` used.
    sensitivity_ : float
        ``gamma`` at a query of norm ``X``.
    noise_scale_ : float
        Laplace scale or Gaussian standard deviation at that query norm.
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during ``fit`` (string column names only).
    privacy_guarantee_ : PrivacyGuarantee
        The per-row guarantee; ``details`` holds the solver accuracy ``tau``.
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
    >>> reg = StableERMRegressor(feature_norm_bound=5.0, radius=200.0, y_bounds=(-400.0, 400.0),
    ...                          lam=1.0, random_state=0).fit(X, y)
    >>> reg.predict(X[:3]).shape
    (3,)
    """

    _parameter_constraints: dict = {
        **_SHARED_CONSTRAINTS,
        **_ERM_CONSTRAINTS,
        **_REGRESSOR_CONSTRAINTS,
    }

    def __init__(
        self,
        *,
        epsilon: float = 1.0,
        loss: str = "squared",
        lam: float | str = "auto",
        feature_norm_bound: float | str = "auto",
        radius: float | None = None,
        y_bounds: tuple[float, float] | None = None,
        clip_output: bool = True,
        fit_intercept: bool = True,
        intercept_scaling: float = 1.0,
        huber_delta: float = 1.0,
        tol: float | None = None,
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
        self.y_bounds = y_bounds
        self.clip_output = clip_output
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.huber_delta = huber_delta
        self.tol = tol
        self.max_iter = max_iter
        self.noise = noise
        self.delta = delta
        self.accountant = accountant
        self.random_state = random_state


class AveragedPSGDClassifier(
    _LinearClassifierQueries, _AveragedPSGD, ClassifierMixin, BaseEstimator
):
    """Private binary classification by averaged projected SGD plus noise on each answer.

    Makes ``n_epochs`` passes of projected SGD with a constant step ``eta``
    over the training rows (clipped to ``feature_norm_bound``), in an order
    drawn independently of the data, inside ``||w|| <= radius``, and averages
    the iterates. With a smooth loss one row moves a prediction by at most
    ``gamma(x) = 2 eta L X ||x~|| n_epochs``; the answers carry noise
    calibrated to it, released as by :class:`StableERMClassifier`.

    **Guarantee** (Dwork & Feldman 2018, Lemma 4.5 and Theorem 4.12, with the
    stability constant corrected). Under replace-one neighbours each row passed
    to a query method is one query, answered with fresh noise and
    ``(epsilon, delta)``-DP (``delta = 0`` with Laplace noise), charged before
    the noise is drawn. ``fit`` releases nothing.

    See the user guide: :ref:`stable_linear`.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy parameter of each answered row and method call, > 0.
    loss : {"logistic", "huberized_hinge"}, default="logistic"
        Smooth losses only (smoothness ``1/4``, resp. ``1 / huber_delta``).
    eta : float or "auto", default="auto"
        Step size; ``"auto"``: ``R / (X L sqrt(n))`` (Theorem 4.12). A step
        above ``2 / (sigma X^2)`` is capped with a warning.
    n_epochs : int, default=1
        Passes over the data; ``gamma`` grows linearly with it.
    shuffle : bool, default=True
        Draw a fresh random order per epoch from the fit stream (never from the
        data); ``False`` keeps the row order.
    feature_norm_bound : float or "auto", default="auto"
        Public bound ``X0`` on a feature row's Euclidean norm; larger rows are
        scaled down to it. ``"auto"``: ``sqrt(n_features)``
        (:func:`default_feature_norm_bound`), a true bound for features in
        ``[-1, 1]``. A tighter public bound, such as
        :func:`~skprivpred.preprocessing.row_norm_bound` of a public
        preprocessing, means less noise. Never choose it from the training rows.
    radius : float or "auto", default="auto"
        Public radius ``R`` of the coefficient ball. ``"auto"``:
        :func:`default_classifier_radius`, ``0.05 sqrt(n epsilon / (1 + epsilon))``.
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
        Use ``None`` in deployment.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        The public label set.
    feature_norm_bound_ : float
        The feature norm bound ``X0`` used (``"auto"`` resolved).
    radius_ : float
        The coefficient radius used (``"auto"`` resolved).
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
    privacy_guarantee_ : PrivacyGuarantee
        The per-row guarantee, with the noise family, sensitivity, noise scale
        and ``eta`` in ``details``.
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

    _parameter_constraints: dict = {
        **_SHARED_CONSTRAINTS,
        **_PSGD_CONSTRAINTS,
        **_CLASSIFIER_CONSTRAINTS,
        "radius": [_POSITIVE, StrOptions({"auto"})],
    }

    def __init__(
        self,
        *,
        epsilon: float = 1.0,
        loss: str = "logistic",
        eta: float | str = "auto",
        n_epochs: int = 1,
        shuffle: bool = True,
        feature_norm_bound: float | str = "auto",
        radius: float | str = "auto",
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

    Makes ``n_epochs`` passes of projected SGD with a constant step ``eta``
    over the training rows (clipped to ``feature_norm_bound``, targets clipped
    to the public ``y_bounds`` and centred), in a data-independent order,
    inside ``||w|| <= radius``, and averages the iterates. One row moves a
    prediction by at most ``gamma(x) = 2 eta L X ||x~|| n_epochs``;
    ``predict`` releases the prediction with exact integer noise on a public
    grid calibrated to it.

    **Guarantee** (Dwork & Feldman 2018, Lemma 4.5 and Theorem 4.12, with the
    stability constant corrected). Under replace-one neighbours each row passed
    to ``predict`` or ``score`` is one query, answered with fresh noise and
    ``(epsilon, delta)``-DP (``delta = 0`` with Laplace noise), charged before
    the noise is drawn. ``fit`` releases nothing.

    See the user guide: :ref:`stable_linear`.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy parameter of each answered row, > 0.
    loss : {"squared", "huber"}, default="squared"
        ``(a - y)^2 / 2`` (needs ``y_bounds``) or the Huber loss with threshold
        ``huber_delta``.
    eta : float or "auto", default="auto"
        Step size; ``"auto"``: ``R / (X L sqrt(n))``. Capped at ``2 / X^2`` with
        a warning.
    n_epochs : int, default=1
        Passes over the data; ``gamma`` grows linearly with it.
    shuffle : bool, default=True
        Draw a fresh random order per epoch from the fit stream.
    feature_norm_bound : float or "auto", default="auto"
        Public bound ``X0`` on a feature row's Euclidean norm; larger rows are
        scaled down to it. ``"auto"``: ``sqrt(n_features)``
        (:func:`default_feature_norm_bound`). Never choose it from the
        training rows.
    radius : float, default=1.0
        Public radius ``R`` of the coefficient ball: a public prior bound on a
        good model's coefficients (e.g. from a model fitted on public data).
    y_bounds : tuple of (float, float), default=None
        Public range ``(lo, hi)`` of the target, from its documented range,
        never from the training targets; required for the squared loss. Set
        it before running scikit-learn's ``check_estimator`` (see
        :func:`~skprivpred.utils.expected_failed_checks`).
    clip_output : bool, default=True
        Clip the answers to ``y_bounds`` (when set).
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
    feature_norm_bound_ : float
        The feature norm bound ``X0`` used (``"auto"`` resolved).
    radius_ : float
        The coefficient radius used.
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
    privacy_guarantee_ : PrivacyGuarantee
        The per-row guarantee, with the noise family, sensitivity, noise scale
        and ``eta`` in ``details``.
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
    >>> reg = AveragedPSGDRegressor(feature_norm_bound=5.0, radius=50.0,
    ...                             y_bounds=(-300.0, 300.0), random_state=0).fit(X / 50, y / 50)
    >>> reg.predict(X[:3] / 50).shape
    (3,)
    """

    _parameter_constraints: dict = {
        **_SHARED_CONSTRAINTS,
        **_PSGD_CONSTRAINTS,
        **_REGRESSOR_CONSTRAINTS,
    }

    def __init__(
        self,
        *,
        epsilon: float = 1.0,
        loss: str = "squared",
        eta: float | str = "auto",
        n_epochs: int = 1,
        shuffle: bool = True,
        feature_norm_bound: float | str = "auto",
        radius: float = 1.0,
        y_bounds: tuple[float, float] | None = None,
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
        self.y_bounds = y_bounds
        self.clip_output = clip_output
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.huber_delta = huber_delta
        self.noise = noise
        self.delta = delta
        self.accountant = accountant
        self.random_state = random_state
