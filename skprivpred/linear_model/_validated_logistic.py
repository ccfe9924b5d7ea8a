"""The privately validated logistic regression (Chaudhuri & Vinterbo 2013):
:class:`DPValidatedLogisticRegression`, its perturbations and stability constants.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from numbers import Real
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import expit
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, column_or_1d, validate_data

from .._base import PrivatePredictorMixin, QueryPlan, answer, resolve_binary_classes
from .._hopeless import BestCase, warn_if_hopeless
from .._stability import (
    _COUNT,
    _PERTURBATIONS,
    _POSITIVE,
    _SCORES,
    _VALIDATED_CONSTRAINTS,
    _positive_grid,
    _select,
    _split,
    validation_score,
)
from ..accounting._accountant import PrivacyAccountant
from ..accounting._guarantee import GuaranteeUnit, PrivacyGuarantee
from ..exceptions import InvalidParameterError
from ..mechanisms._closed_forms import sample_unit_laplace_vector
from ..mechanisms._exact import snap_coefficients
from ..utils._deprecation import (
    DEPRECATED,
    deprecated_constraints,
    renamed_kwargs,
    renamed_param,
)
from ..utils._param_validation import (
    Interval,
    StrOptions,
    validate_parameter_constraints,
)
from ..utils._typing import MatrixLike, RandomStateLike, Self, VectorLike
from ._optim import _augmented_rows, _certified_logistic, reachable_logistic_tol

__all__ = [
    "PAPER_LAM_GRID",
    "DPValidatedLogisticRegression",
    "auto_lam_grid",
    "coefficient_noise_scale",
    "logistic_stability_constants",
    "objective_perturbation_budget",
]


#: The paper's grid of regularisation strengths (Section 5): 0.001 + 0.111 j, j = 0..9.
PAPER_LAM_GRID = (0.001, 0.112, 0.223, 0.334, 0.445, 0.556, 0.667, 0.778, 0.889, 1.0)

# lam_grid="auto": the centre lam_c of the grid is where the expected norm of the training
# noise on the coefficients, 2 d / (epsilon_train n lam), equals this reference norm (rows in
# the unit ball); the grid is lam_c times _AUTO_LAM_FACTORS. Chosen on a held-out third of
# Adult's training split (never its test split); docs/user_guide/tuning.rst, "Choosing the grid".
_AUTO_LAM_REFERENCE_NORM = 16.0
_AUTO_LAM_FACTORS = (0.5, 1.0, 2.0)

#: Curvature bound c of the logistic loss (|l''| <= 1/4), used by objective perturbation.
LOGISTIC_SMOOTHNESS = 0.25


# -- regularized logistic regression: CMS objective / output perturbation --------------------
def objective_perturbation_budget(
    epsilon: float, n_samples: int, lam: float, smoothness: float = LOGISTIC_SMOOTHNESS
) -> tuple[float, float]:
    """Effective budget and extra regulariser of corrected objective perturbation.

    Chaudhuri, Monteleoni & Sarwate (2011), Algorithm 2:
    ``epsilon_p = epsilon - 2 log(1 + c / (n lam))``; if that is not positive,
    ``Delta = c / (n (exp(epsilon / 4) - 1)) - lam`` and ``epsilon_p = epsilon / 2``.
    The noise ``b`` then has density proportional to ``exp(-(epsilon_p / 2) ||b||)``
    and the objective gains ``(Delta / 2) ||w||^2``.

    Parameters
    ----------
    epsilon : float
        Training budget, > 0.
    n_samples : int
        Number of training rows ``n``.
    lam : float
        Regularization strength, > 0.
    smoothness : float, default=0.25
        Curvature bound ``c`` of the loss (1/4 for the logistic loss).

    Returns
    -------
    epsilon_p, delta_reg : float
        The effective budget of the noise and the extra regulariser ``Delta``.

    Examples
    --------
    >>> from skprivpred.model_selection import objective_perturbation_budget
    >>> eps_p, extra = objective_perturbation_budget(1.0, 1000, 0.01)
    >>> round(eps_p, 4), extra
    (0.9506, 0.0)
    """
    validate_parameter_constraints(
        {"epsilon": [_POSITIVE], "n_samples": [_COUNT], "lam": [_POSITIVE]},
        {"epsilon": epsilon, "n_samples": n_samples, "lam": lam},
        caller_name="objective_perturbation_budget",
    )
    correction = 2.0 * math.log1p(smoothness / (n_samples * lam))
    epsilon_p = epsilon - correction
    if epsilon_p > 0:
        return epsilon_p, 0.0
    extra = smoothness / (n_samples * math.expm1(epsilon / 4.0)) - lam
    return epsilon / 2.0, max(extra, 0.0)


def output_perturbation_sensitivity(n_samples: int, lam: float, tol: float) -> float:
    """L2 sensitivity ``2 / (n lam) + 2 tol`` of the solved (noiseless) minimiser.

    Two neighbouring training sets move the exact minimiser by at most ``2 / (n
    lam)`` (Chaudhuri, Monteleoni & Sarwate 2011, Corollary 8); the solver returns
    a point within ``tol`` of it on each side, hence ``+ 2 tol`` (as the stable ERM
    adds ``2 tol`` in :func:`~skprivpred.linear_model.erm_sensitivity`).
    """
    return 2.0 / (lam * n_samples) + 2.0 * tol


def _fit_with_noise(
    X, y, lam, epsilon, perturbation, R, tol=1e-9, max_iter=1000, *, solved=None, strict=True
):
    """The deterministic trainer ``F(T, lam, epsilon, R)`` (Chaudhuri & Vinterbo 2013, Sec. 3).

    ``X`` has rows in the unit ball, ``y`` in {-1, +1}, ``R`` a draw of
    :func:`~skprivpred.mechanisms.sample_unit_laplace_vector`. Returns
    ``(w, epsilon_p, extra_reg)``. ``solved``: for output perturbation, the
    noiseless minimiser already certified (solved before the charge, so that
    nothing inside the release depends on whether the rows let it converge);
    ``strict=False``: the objective-perturbation solve never raises (see
    :func:`~skprivpred.linear_model._optim._certified_logistic`).
    """
    n = X.shape[0]
    if perturbation == "output":
        w = (
            _certified_logistic(X, y, lam, np.zeros(X.shape[1]), tol, max_iter)
            if solved is None
            else solved
        )
        scale = output_perturbation_sensitivity(n, lam, tol) / epsilon
        return w + scale * R, epsilon, 0.0
    epsilon_p, extra = objective_perturbation_budget(epsilon, n, lam)
    w = _certified_logistic(X, y, lam + extra, (2.0 / epsilon_p) * R, tol, max_iter, strict=strict)
    return w, epsilon_p, extra


def check_reachable_tol(tol: float, n_samples: int, n_features: int, lam_grid) -> None:
    """Refuse, before any charge, a ``tol`` the solver cannot certify for public n, d, lam.

    See :func:`~skprivpred.linear_model._optim.reachable_logistic_tol` (the smallest ``lam`` of
    the grid is the hardest). The refusal depends on public quantities only.
    """
    floor = reachable_logistic_tol(n_samples, n_features, float(np.min(lam_grid)))
    if tol < floor:
        raise InvalidParameterError(
            f"tol={tol!r} is below what double precision can certify for n_train={n_samples}, "
            f"n_features={n_features} (intercept column included) and the smallest lam="
            f"{float(np.min(lam_grid))!r}: the solver's certificate ||grad|| / lam <= tol needs "
            f"tol >= {floor:.3g}. Pass a larger tol (it adds 2 tol to the sensitivities) or a "
            "larger lam. Nothing was charged."
        )


def coefficient_noise_scale(
    n_samples: int, lam: float, epsilon_p: float, extra_reg: float
) -> float:
    """Scale ``2 / (epsilon_p n (lam + Delta))`` of the noise a private fit puts on ``w``.

    For output perturbation (``epsilon_p = epsilon``, ``Delta = 0``) it is the
    scale of the added vector; for objective perturbation, that of ``b / (n (lam
    + Delta))``, the perturbation of the minimiser to first order. A public
    quantity: it depends only on ``n``, ``lam`` and the budget.
    """
    return 2.0 / (epsilon_p * n_samples * (lam + extra_reg))


@renamed_kwargs({"mechanism": "perturbation"})
def auto_lam_grid(
    n_samples: int, n_features: int, epsilon: float, perturbation: str = "objective"
) -> np.ndarray:
    """``lam_grid="auto"``: a public grid of ``lam`` from ``n``, ``d`` and ``epsilon`` only.

    A private fit of ``(lam / 2) ||w||^2 + mean loss`` on ``n`` rows in the
    unit ball perturbs the coefficients by a vector of expected norm ``2 d /
    (epsilon n lam)`` (``d`` coordinates; objective perturbation to first order,
    output perturbation exactly; Chaudhuri, Monteleoni & Sarwate 2011). The
    grid is centred where that norm equals a fixed reference norm, ``lam_c =
    2 d / (16 epsilon n)``, and holds ``lam_c / 2``, ``lam_c`` and ``2 lam_c``:
    a smaller ``lam`` drowns the model in noise, a larger one shrinks it to the
    majority class. For objective perturbation ``lam_c`` is at least ``2
    lam_0``, ``lam_0 = c / (n (exp(epsilon / 4) - 1))`` (``c = 1/4``): below
    ``lam_0`` the Chaudhuri-Monteleoni-Sarwate correction takes more than half
    of the budget (see :func:`objective_perturbation_budget`), so the smallest
    value of the grid keeps at least ``epsilon / 2`` for the noise. The grid
    depends on public quantities only (the number of training rows, the
    number of columns and the training budget), never on the rows; the
    reference norm was chosen on a held-out part of Adult's training split.

    Parameters
    ----------
    n_samples : int
        Number of training rows ``n`` (the training part ``T``), >= 1.
    n_features : int
        Number of coefficients ``d`` (the intercept's column included), >= 1.
    epsilon : float
        Training budget ``epsilon_train``, > 0.
    perturbation : {"objective", "output"}, default="objective"
        The perturbation the grid is for (only objective perturbation has the
        floor ``2 lam_0``).

        .. deprecated:: 0.4
           Its former name ``mechanism`` still works, with a ``FutureWarning``,
           until 0.6.

    Returns
    -------
    ndarray of shape (3,)
        The grid, increasing.

    Examples
    --------
    >>> from skprivpred.model_selection import auto_lam_grid
    >>> auto_lam_grid(12_000, 30, 0.5).tolist()
    [0.0003125, 0.000625, 0.00125]
    """
    validate_parameter_constraints(
        {
            "n_samples": [_COUNT],
            "n_features": [_COUNT],
            "epsilon": [_POSITIVE],
            "perturbation": [StrOptions({"objective", "output"})],
        },
        {
            "n_samples": n_samples,
            "n_features": n_features,
            "epsilon": epsilon,
            "perturbation": perturbation,
        },
        caller_name="auto_lam_grid",
    )
    centre = 2.0 * n_features / (_AUTO_LAM_REFERENCE_NORM * epsilon * n_samples)
    if perturbation == "objective":
        # lam_0: where the correction leaves exactly epsilon / 2 (both branches agree there).
        lam_0 = LOGISTIC_SMOOTHNESS / (n_samples * math.expm1(epsilon / 4.0))
        centre = max(centre, 2.0 * lam_0)
    return centre * np.asarray(_AUTO_LAM_FACTORS)


@renamed_kwargs({"mechanism": "perturbation"})
def logistic_stability_constants(
    lam_grid: ArrayLike,
    n_train: int,
    n_validation: int,
    n_features: int,
    epsilon_train: float,
    score: str = "ramp",
    perturbation: str = "objective",
    delta: float = 0.0,
) -> tuple[float, float, float]:
    """``(beta1, beta2, beta)`` of Chaudhuri & Vinterbo (2013), Theorem 4, ``beta2`` corrected.

    - ``beta1 = 2 L / lam_min`` (``L = 1``) for every noise draw;
    - ``beta2 = min(g*, g0 + L W)``, ``W = max_lam (1 / lam)(1 + 2 d log(d k / delta) /
      (epsilon_p(lam) n))``: the noise norm bound ``d log(d k / delta)`` holds with
      probability ``1 - delta / k`` per candidate (Chaudhuri, Monteleoni & Sarwate 2011,
      Lemma 4); the factor 2 and the offset ``g0 = sup g(0; x, y)`` correct the paper's
      derivation. For the ramp score ``g* = 1`` and ``beta2 = 1`` for every draw
      (``delta`` unused);
    - ``beta = max(beta1 / n, beta2 / m)``.

    ``perturbation`` (``"objective"`` or ``"output"``) is the training's
    perturbation; its former name ``mechanism`` still works, with a
    ``FutureWarning``, until 0.6 (deprecated in 0.4).
    """
    lambdas = np.asarray(lam_grid, dtype=float)
    g_star, g_zero = _SCORES[score]
    beta1 = 2.0 / float(lambdas.min())
    if math.isfinite(g_star):
        beta2 = g_star  # g0 + W >= 1 = g* for the ramp
    else:
        if not delta > 0:
            raise InvalidParameterError(
                f"validation_score={score!r} is unbounded: a delta in (0, 1) is required."
            )
        k, d = lambdas.size, n_features
        tail = d * math.log(d * k / delta)
        radius = 0.0
        for lam in lambdas:
            if perturbation == "output":
                eps_p = epsilon_train
            else:
                eps_p = objective_perturbation_budget(epsilon_train, n_train, lam)[0]
            radius = max(radius, (1.0 + 2.0 * tail / (eps_p * n_train)) / lam)
        beta2 = min(g_star, g_zero + radius)
    return beta1, beta2, max(beta1 / n_train, beta2 / n_validation)


def _sign_kept_proba(reach: float, scale: float, d: int) -> float:
    """``P(w . u + z . u > 0)`` at ``w . u = reach``; ``z``: uniform direction, Gamma(d, s) norm.

    ``z . u = G U_1`` with ``U_1`` a coordinate of a uniform unit vector; ``|U_1|``
    has density ``2 (1 - t^2)^((d - 3) / 2) / B(1/2, (d - 1) / 2)`` on ``(0, 1)``.
    A public quantity (no row).
    """
    from scipy.integrate import quad
    from scipy.special import beta as beta_function
    from scipy.stats import gamma

    if d == 1:
        return 1.0 - 0.5 * float(gamma.sf(reach, 1, scale=scale))
    constant = 2.0 / beta_function(0.5, 0.5 * (d - 1))

    def integrand(t: float) -> float:
        if t <= 0.0:
            return 0.0
        return (
            constant * (1.0 - t * t) ** (0.5 * (d - 3)) * float(gamma.sf(reach / t, d, scale=scale))
        )

    tail, _ = quad(integrand, 0.0, 1.0, limit=200)
    return float(min(max(1.0 - 0.5 * tail, 0.0), 1.0))


def _validated_best_case(lam_grid, n_train, n_features, params, perturbation) -> BestCase:
    """The best case of the released coefficients, at the best ``lam`` of the grid.

    For rows in the unit ball, a fit with regulariser ``lam`` has ``||w|| <= sqrt(2 log 2 /
    lam)`` (its objective at ``w`` is at most its value ``log 2`` at 0), so no score
    ``w . x`` exceeds that reach. Its coefficients carry a noise vector of uniform direction
    and norm ``Gamma(d, s)``, ``s = 2 / (epsilon_p n (lam + Delta))``. The figure is the
    probability that a row of norm 1 at the reach keeps its sign under that noise, for the
    ``lam`` that makes it largest. Public quantities only.
    """
    best = None
    for lam in np.asarray(lam_grid, dtype=float):
        if perturbation == "output":
            epsilon_p, extra = params["epsilon_train"], 0.0
        else:
            epsilon_p, extra = objective_perturbation_budget(params["epsilon_train"], n_train, lam)
        scale = coefficient_noise_scale(n_train, lam, epsilon_p, extra)
        reach = math.sqrt(2.0 * math.log(2.0) / (lam + extra))
        value = _sign_kept_proba(reach, scale, n_features)
        if best is None or value > best[0]:
            best = (value, lam, math.sqrt(n_features) * scale, reach)
    assert best is not None  # the grid is not empty
    value, lam, noise, reach = best
    return BestCase(
        value=value,
        meaning="the probability that the released coefficients keep the sign of a row of "
        "norm 1 at the largest score a model can reach",
        public=f"epsilon_train = {params['epsilon_train']:.4g} (epsilon, epsilon_split), "
        f"n = {n_train} training rows, d = {n_features} coefficients, lam_grid; at the best "
        f"lam, {lam:.4g}, the noise moves such a row's score by about {noise:.4g} and no "
        f"model scores above {reach:.4g}",
        remedy="raise epsilon or epsilon_split, train on more rows or fewer columns, or use "
        'larger values in lam_grid (lam_grid="auto" adapts to n, d and epsilon)',
    )


class DPValidatedLogisticRegression(PrivatePredictorMixin, ClassifierMixin, BaseEstimator):
    """Differentially private logistic regression with a privately validated ``lam``.

    Chaudhuri & Vinterbo's stability-based validation: ``fit`` splits the rows
    into a training and a validation part by a random permutation, trains one
    private L2-regularised logistic regression per ``lam`` of a public grid
    (objective or output perturbation), selects one privately from its
    validation score, and retrains it with fresh noise. That model is **the
    released object**: ``predict``, ``predict_proba``, ``decision_function``
    and ``score`` are free post-processing.

    **Guarantee** (Theorems 1, 2 and 4). Under replace-one neighbours the
    released model and every fitted attribute are ``(epsilon,
    delta_spent_)``-DP, whatever the number of candidates (they and their
    scores never leave ``fit``); ``delta_spent_ = 0`` with the ramp score. One
    ``fit`` is charged once, before any noise is drawn.

    See the user guide: :ref:`tuning`.

    Parameters
    ----------
    epsilon : float, default=1.0
        Total privacy parameter of ``fit`` (training plus selection), > 0.
    epsilon_split : float, default=0.5
        Fraction of ``epsilon`` for training, in (0, 1); the paper uses 0.5.
    lam_grid : "auto" or sequence of float, default="auto"
        Public grid of regularisation strengths, each > 0, fixed without
        looking at the data. ``"auto"``: :func:`auto_lam_grid`, three values
        from public quantities only; ``PAPER_LAM_GRID`` is the paper's ten
        values. A very small ``lam`` makes the selection noisy.
    perturbation : {"objective", "output"}, default="objective"
        Objective perturbation (the paper's experiments) or output perturbation
        of each candidate's training.
    validation_score : {"ramp", "hinge", "logistic"}, default="ramp"
        Minus the mean validation loss. ``"hinge"`` and ``"logistic"`` are
        unbounded and need ``delta > 0``.
    validation_size : float, default=1/9
        Fraction of rows in the validation part, in (0, 1).
    delta : float, default=0.0
        Total ``delta`` of the selection, in [0, 1); ignored by the ramp score.
    selection : {"noisy_max", "exponential"}, default="noisy_max"
        The paper's report-noisy-max, or the exponential mechanism.
    feature_norm_bound : float, default=1.0
        Public bound on a row's Euclidean norm, the intercept's constant
        included; a larger row is rescaled to it (a per-row map, it costs no
        privacy). Never choose it from the training rows.
    fit_intercept : bool, default=True
        Append the public constant ``intercept_scaling`` to every row.
    intercept_scaling : float, default=None
        The constant, in ``(0, feature_norm_bound)``; ``None`` means
        ``feature_norm_bound / 2``.
    classes : array-like of shape (2,), default=None
        The public label set, positive label second. ``None`` reads it from
        ``y`` and emits a :class:`~skprivpred.PrivacyWarning`.
    tol : float, default=1e-9
        Certified distance of each solution to the exact minimiser; one that
        double precision cannot certify is refused before any charge.
    max_iter : int, default=1000
        L-BFGS iterations per fit (Newton steps polish the result).
    accountant : PrivacyAccountant, default=None
        Charged ``(epsilon, delta_spent_)`` once per ``fit``.
    random_state : int, Generator or None, default=None
        Seeds the split and every noise draw. Use ``None`` in deployment: a
        known seed voids the guarantee.
    mechanism : {"objective", "output"}, default="deprecated"
        Former name of ``perturbation``.

        .. deprecated:: 0.4
           ``mechanism`` was renamed ``perturbation`` in 0.4 and will be
           removed in 0.6.

    Attributes
    ----------
    coef_ : ndarray of shape (1, n_features)
        The released coefficients, on the original feature scale, a multiple
        of ``coef_grid_``.
    coef_grid_ : float
        Spacing of the public grid the coefficients are rounded to.
    intercept_ : ndarray of shape (1,)
        The released intercept (zero with ``fit_intercept=False``).
    classes_ : ndarray of shape (2,)
        The public label set.
    n_features_in_ : int
        Number of features seen during ``fit``.
    lam_grid_ : ndarray of shape (k,)
        The validated grid (``"auto"`` resolved).
    best_index_ : int
        Index of the selected ``lam``.
    best_lam_ : float
        The selected regularisation strength.
    n_train_, n_validation_ : int
        Sizes of the training and validation parts.
    epsilon_train_, epsilon_select_, epsilon_spent_ : float
        The training and selection budgets and their sum (= ``epsilon``).
    delta_spent_ : float
        The ``delta`` of the release.
    beta1_, beta2_ : float
        Stability constants (Theorem 4, with the corrected ``beta2``).
    selection_sensitivity_ : float
        ``beta = max(beta1_ / n_train_ + 2 tol, beta2_ / n_validation_)``.
    epsilon_effective_ : float
        ``epsilon_p`` of the final fit (``epsilon_train_`` for output perturbation).
    extra_reg_ : float
        ``Delta`` of the final fit (0 unless the correction branch fired).
    privacy_guarantee_ : PrivacyGuarantee
        ``(epsilon, delta_spent_)`` for the released model.

    Warns
    -----
    UserWarning
        When even the best ``lam`` of the grid leaves the answers mostly
        noise; decided from public quantities only, before any row is used.

    References
    ----------
    K. Chaudhuri and S. Vinterbo. A Stability-based Validation Procedure for
    Differentially Private Machine Learning. NeurIPS 2013. K. Chaudhuri, C.
    Monteleoni and A. Sarwate. Differentially Private Empirical Risk
    Minimization. JMLR 2011.

    Examples
    --------
    >>> import numpy as np
    >>> from skprivpred.model_selection import DPValidatedLogisticRegression
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(5000, 3)) / 3
    >>> y = (X[:, 0] + 0.2 * rng.normal(size=5000) > 0).astype(int)
    >>> clf = DPValidatedLogisticRegression(epsilon=2.0, classes=[0, 1], random_state=0)
    >>> clf.fit(X, y).epsilon_spent_
    2.0
    """

    _parameter_constraints: dict = {
        **_VALIDATED_CONSTRAINTS,
        "lam_grid": [StrOptions({"auto"}), "array-like"],
        "perturbation": _PERTURBATIONS,
        "validation_score": [StrOptions(set(_SCORES))],
        "delta": [Interval(Real, 0, 1, closed="left")],
        "selection": [StrOptions({"noisy_max", "exponential"})],
        "feature_norm_bound": [_POSITIVE],
        "fit_intercept": ["boolean"],
        "intercept_scaling": [_POSITIVE, None],
        "classes": ["array-like", None],
        "tol": [_POSITIVE],
        "max_iter": [_COUNT],
        "mechanism": deprecated_constraints(_PERTURBATIONS, "perturbation"),
    }

    def __init__(
        self,
        *,
        epsilon: float = 1.0,
        epsilon_split: float = 0.5,
        lam_grid: Sequence[float] | str = "auto",
        perturbation: str = "objective",
        validation_score: str = "ramp",
        validation_size: float = 1 / 9,
        delta: float = 0.0,
        selection: str = "noisy_max",
        feature_norm_bound: float = 1.0,
        fit_intercept: bool = True,
        intercept_scaling: float | None = None,
        classes: VectorLike | None = None,
        tol: float = 1e-9,
        max_iter: int = 1000,
        accountant: PrivacyAccountant | None = None,
        random_state: RandomStateLike = None,
        mechanism: str = DEPRECATED,
    ) -> None:
        self.epsilon = epsilon
        self.epsilon_split = epsilon_split
        self.lam_grid = lam_grid
        self.perturbation = perturbation
        self.validation_score = validation_score
        self.validation_size = validation_size
        self.delta = delta
        self.selection = selection
        self.feature_norm_bound = feature_norm_bound
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.classes = classes
        self.tol = tol
        self.max_iter = max_iter
        self.accountant = accountant
        self.random_state = random_state
        self.mechanism = mechanism

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags

    # -- validation ------------------------------------------------------------------------
    def _check_params(self) -> dict:
        """Cross-parameter rules (after ``_validate_params``); the resolved values."""
        epsilon, split = float(self.epsilon), float(self.epsilon_split)
        auto = isinstance(self.lam_grid, str)  # "auto": resolved in fit, from n and d
        lam_grid = None if auto else _positive_grid(self.lam_grid, "lam_grid")
        score = self.validation_score
        if math.isfinite(_SCORES[score][0]):
            delta = 0.0  # the ramp score is stable for every noise draw: pure DP
        elif self.delta == 0:
            raise InvalidParameterError(
                f"validation_score={score!r} is unbounded, so its stability holds only with "
                "probability 1 - delta: pass delta in (0, 1), for example 1e-6."
            )
        else:
            delta = float(self.delta)
        norm_bound = float(self.feature_norm_bound)
        if self.fit_intercept and self.intercept_scaling is not None:
            if self.intercept_scaling >= norm_bound:
                raise InvalidParameterError(
                    f"intercept_scaling must be below feature_norm_bound={norm_bound!r} (the "
                    f"constant counts towards the norm of every row), got "
                    f"{self.intercept_scaling!r}."
                )
        return dict(
            perturbation=renamed_param(self, "mechanism", "perturbation"),
            epsilon=epsilon,
            epsilon_train=split * epsilon,
            epsilon_select=(1.0 - split) * epsilon,
            lam_grid=lam_grid,
            score=score,
            validation_size=float(self.validation_size),
            delta=delta,
            norm_bound=norm_bound,
            tol=float(self.tol),
        )

    def _rows(self, X, *, reset: bool, y=None):
        """Rows clipped so that the augmented row ``[x, c]`` meets the bound (not scaled)."""
        if y is None:
            X = validate_data(self, X, reset=reset, dtype=np.float64, ensure_all_finite=True)
        else:
            X, y = validate_data(self, X, y, reset=reset, dtype=np.float64, ensure_all_finite=True)
        bound, constant = float(self.feature_norm_bound), self._constant()
        feature_bound = bound if constant is None else math.sqrt(bound**2 - constant**2)
        augmented, _ = _augmented_rows(X, feature_bound, constant)
        return augmented, y

    def _constant(self) -> float | None:
        """The public constant column (``None`` without an intercept)."""
        if not self.fit_intercept:
            return None
        bound = float(self.feature_norm_bound)
        return bound / 2.0 if self.intercept_scaling is None else float(self.intercept_scaling)

    # -- fit ----------------------------------------------------------------------------------
    def fit(self, X: MatrixLike, y: VectorLike, **fit_params: Any) -> Self:
        """Validate ``lam`` privately, then release a freshly trained model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows, finite.
        y : array-like of shape (n_samples,)
            Binary labels, in ``classes``.
        **fit_params : dict
            Not supported (``sample_weight`` is refused).

        Returns
        -------
        self : DPValidatedLogisticRegression
        """
        params = self._check_fit_arguments(fit_params)
        with self._unchanged_on_error():
            X, y = self._rows(X, reset=True, y=y)
            X = X / params["norm_bound"]  # into the unit ball: the augmented rows, divided
            y = column_or_1d(y, warn=True)
            check_classification_targets(y)
            classes = resolve_binary_classes(self.classes, y, type(self).__name__)
            signs = np.where(y == classes[1], 1.0, -1.0)
            fit_rng = self._start_streams()
            train, valid = _split(X.shape[0], params["validation_size"], fit_rng)
            n, m, d = train.size, valid.size, X.shape[1]
            lam_grid = params["lam_grid"]
            if lam_grid is None:  # "auto": from public n, d and epsilon_train only
                lam_grid = auto_lam_grid(n, d, params["epsilon_train"], params["perturbation"])
            record = _validated_best_case(lam_grid, n, d, params, params["perturbation"])
            warn_if_hopeless(type(self).__name__, record)
            beta1, beta2, _ = logistic_stability_constants(
                lam_grid,
                n,
                m,
                d,
                params["epsilon_train"],
                params["score"],
                params["perturbation"],
                params["delta"],
            )
            beta = max(beta1 / n + 2.0 * params["tol"], beta2 / m)
            XT, yT, XV, yV = X[train], signs[train], X[valid], signs[valid]
            # Whether a solve can fail is settled before the charge: a tol that public n, d
            # and lam cannot reach is refused; output perturbation's noiseless minimisers are
            # solved (and certified, or ConvergenceError) now; inside the release nothing
            # raises because of the rows (objective perturbation's solve is not strict).
            check_reachable_tol(params["tol"], n, d, lam_grid)
            solved = None
            if params["perturbation"] == "output":
                zero = np.zeros(d)
                solved = [
                    _certified_logistic(XT, yT, lam, zero, params["tol"], self.max_iter)
                    for lam in lam_grid
                ]

            def release(release_rng):
                """Train every candidate, select one, retrain it: the one release of fit."""
                select_rng, final_rng, *candidate_rngs = release_rng.spawn(lam_grid.size + 2)
                scores = np.empty(lam_grid.size)
                for i, lam in enumerate(lam_grid):
                    w = self._train(XT, yT, lam, params, candidate_rngs[i], solved, i)[0]
                    scores[i] = validation_score(w, XV, yV, params["score"])
                index = self._select(scores, params["epsilon_select"], beta, select_rng)
                del scores  # never stored
                return index, self._train(XT, yT, lam_grid[index], params, final_rng, solved, index)

            index, (w, epsilon_p, extra) = self._release_model(
                params["epsilon"], release, delta=params["delta"]
            )
            w, grid = snap_coefficients(
                w, coefficient_noise_scale(n, lam_grid[index], epsilon_p, extra)
            )
            w = w / params["norm_bound"]  # on the scale of the (augmented) raw rows
            constant = self._constant()
            if constant is None:
                self.coef_, self.intercept_ = w[None, :], np.zeros(1)
            else:
                self.coef_, self.intercept_ = w[None, :-1], np.array([w[-1] * constant])
            self.coef_grid_ = grid / params["norm_bound"]
            self.classes_ = classes
            self.lam_grid_ = lam_grid
            self.best_index_ = int(index)
            self.best_lam_ = float(lam_grid[index])
            self.n_train_, self.n_validation_ = int(n), int(m)
            self.epsilon_train_ = params["epsilon_train"]
            self.epsilon_select_ = params["epsilon_select"]
            self.epsilon_spent_ = params["epsilon"]
            self.delta_spent_ = params["delta"]
            self.beta1_, self.beta2_ = beta1, beta2
            self.selection_sensitivity_ = beta
            self.epsilon_effective_ = epsilon_p
            self.extra_reg_ = extra
            algorithm = "Algorithm 2" if params["perturbation"] == "objective" else "Algorithm 1"
            self.privacy_guarantee_ = PrivacyGuarantee(
                epsilon=params["epsilon"],
                delta=params["delta"],
                unit=GuaranteeUnit.RELEASE,
                scope="the released model (the selected lam and the retrained coefficients); "
                "predictions are free post-processing",
                theorem="Chaudhuri & Vinterbo (2013), Theorems 1, 2 and 4, with Chaudhuri, "
                f"Monteleoni & Sarwate (2011), {algorithm} ({params['perturbation']} perturbation)",
                details={
                    "epsilon_train": params["epsilon_train"],
                    "epsilon_select": params["epsilon_select"],
                    "selection": self.selection,
                    "selection_sensitivity": beta,
                    "beta1": beta1,
                    "beta2": beta2,
                    "solver_accuracy": params["tol"],
                    **(
                        {
                            "coefficient_sensitivity": output_perturbation_sensitivity(
                                n, float(lam_grid[index]), params["tol"]
                            )
                        }
                        if params["perturbation"] == "output"
                        else {}
                    ),
                },
            )
            self._best_case = record
        return self

    def _train(self, X, y, lam, params, rng, solved=None, index=None):
        """One private training run ``F(T, lam, epsilon_train, R)``, ``R`` drawn from ``rng``.

        Inside the release: never raises because of the rows (output perturbation
        takes ``solved[index]``, solved before the charge).
        """
        R = sample_unit_laplace_vector(X.shape[1], rng)
        return _fit_with_noise(
            X,
            y,
            lam,
            params["epsilon_train"],
            params["perturbation"],
            R,
            params["tol"],
            self.max_iter,
            solved=None if solved is None else solved[index],
            strict=False,
        )

    def _select(self, scores, epsilon_select, sensitivity, rng) -> int:
        """The selection step (only its index leaves ``fit``)."""
        return _select(scores, epsilon_select, sensitivity, self.selection, rng)

    # -- post-processing of the released model --------------------------------------------
    def _query_plan(self, method: str) -> QueryPlan:
        """How ``method`` answers: free post-processing of the released model.

        No charge and no noise (``draw=None``); the public checks are the
        validation of the rows and their clipping by the public norm bound.
        """
        check_is_fitted(self, "privacy_guarantee_")
        return QueryPlan(
            check=self._query_rows,
            values=lambda rows, n_jobs: self._answers(rows, method),
            draw=None,
        )

    def _query_rows(self, X) -> np.ndarray:
        """Query rows validated and clipped by the public norm bound (no constant column)."""
        X, _ = self._rows(X, reset=False)
        return X[:, :-1] if self._constant() is not None else X

    def _answers(self, rows: np.ndarray, method: str) -> np.ndarray:
        """The released model's answers of ``method`` to checked rows."""
        scores = rows @ self.coef_[0] + self.intercept_[0]
        if method == "decision_function":
            return scores
        if method == "predict_proba":
            p = expit(scores)
            return np.column_stack([1.0 - p, p])
        return self.classes_[(scores > 0).astype(int)]

    def decision_function(self, X: MatrixLike) -> np.ndarray:
        """``coef_ . x + intercept_`` for rows clipped by the public norm bound.

        Free post-processing of the released model.
        """
        return answer(self, X, self._query_plan("decision_function"))

    def predict_proba(self, X: MatrixLike) -> np.ndarray:
        """``sigma(w . x)`` for the positive class (free post-processing)."""
        return answer(self, X, self._query_plan("predict_proba"))

    def predict(self, X: MatrixLike) -> np.ndarray:
        """Labels of the released model (free, deterministic post-processing)."""
        return answer(self, X, self._query_plan("predict"))
