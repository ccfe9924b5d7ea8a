"""Private everlasting prediction (Naor, Nissim, Stemmer & Yan 2023; spec-001).

An everlasting predictor answers an unbounded stream of queries, one label per
query, and keeps learning *from the queries*: every phase's teachers are
trained on the previous phase's queries, labelled by the predictor itself. The
guarantee covers every training row and every query, once, for the whole
stream: no budget runs out with time.

Two public estimators share one stream engine (:class:`_EverlastingStream`):

- :class:`GenericBBLClassifier`, the paper's algorithm GenericBBL as written
  (subsample-and-aggregate teachers, BetweenThresholds with its halting budget,
  LabelBoost relabelling, privacy-amplifying sub-samples). At the paper's
  constants it needs about 1e25 labelled rows (spec-001 §4.2), so ``mode="paper"``
  mostly computes the schedule and says how much data is missing;
  ``mode="simulation"`` runs the same code with scaled-down sizes and no
  guarantee.
- :class:`PrivateEverlastingClassifier`, the practical variant of spec-001 §3.3:
  any scikit-learn teacher, an independent Gaussian noisy vote per query, and
  the next phase trained on the released answers.

Every parameter formula of spec-001 §2.1 lives in this module's "formulas"
section, once; the estimators, :func:`genericbbl_plan` and the tests all call
it. BetweenThresholds itself is in :mod:`skprivpred.mechanisms`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np
from scipy.optimize import brentq
from scipy.stats import norm
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_array, check_is_fitted, validate_data

from ._base import (
    PrivatePredictorMixin,
    QueryStream,
    check_epsilon,
    check_open_unit_interval,
    check_positive_finite,
    check_positive_int,
    finite_target_column,
    keep_frame,
    reject_fit_params,
    resolve_binary_classes,
)
from ._teachers import TeacherEnsemble, concat_rows, fit_teachers, random_partition, take_rows
from ._typing import MatrixLike, RandomStateLike, Self, VectorLike
from .exceptions import (
    InsufficientSampleError,
    PhaseDataError,
    PredictorHaltedError,
    PrivacyParameterError,
    PrivacyWarning,
)
from .mechanisms import (
    BT_BELOW,
    LOG_BASE,
    BetweenThresholds,
    between_thresholds_composition,
    between_thresholds_gap,
    ceil_int,
    exponential_mechanism_proba,
    exponential_mechanism_sample,
    log_base,
    sample_categorical,
)

__all__ = [
    "FiniteHypothesisClass",
    "GenericBBLClassifier",
    "InsufficientSampleError",
    "PhaseDataError",
    "PredictorHaltedError",
    "PrivacyParameterError",
    "PrivateEverlastingClassifier",
    "ThresholdClass",
    "genericbbl_plan",
    "practical_plan",
]

# -- constants of the paper (spec-001 §2.1) ------------------------------------------------------
#: The paper's tau ("tau > 1.1 * 10^10"): the smallest value for which the BT gap
#: condition holds in the first phases is 5e9-8.5e9 (spec-001 §4.2).
TAU = 1.1e10
#: Queries per phase: R_i = 25600 |S_i| / epsilon (Claim D.6 needs the factor).
PHASE_QUERY_FACTOR = 25600
#: TOP budget per phase: c_i = 64 alpha_i R_i (Claim D.5).
TOP_BUDGET_FACTOR = 64
#: Epsilon of LabelBoost's exponential mechanism (score sensitivity 1).
LABELBOOST_EPSILON = 1.0
#: Theorem 5.1 needs alpha, beta, delta < 1/16 and (Claim 2.7) epsilon <= 1.
PAPER_PARAMETER_BOUND = 1.0 / 16.0

#: Scaled-down sizes of ``mode="simulation"`` (spec-001 §4.3(5)) for every key the
#: caller does not override. ``phase_length`` defaults to 4 teacher pools.
SIMULATION_DEFAULTS = {"n_teachers": 200, "teacher_size": 20, "m": 2.0, "bt_epsilon": 1.0}
SIMULATION_PHASE_LENGTH_POOLS = 4
#: Override keys, and those that void the privacy proof (simulation mode only).
OVERRIDE_KEYS = (
    "n_teachers",
    "teacher_size",
    "phase_length",
    "top_budget",
    "threshold_gap",
    "m",
    "bt_epsilon",
)
SIMULATION_ONLY_KEYS = ("m", "bt_epsilon")

#: Default sizing of the practical predictor (spec-001 §4.3(4)): the vote margin,
#: as a fraction of the teachers, that the noise may not cross, in standard deviations.
PRACTICAL_MARGIN = 0.4
PRACTICAL_Z = 3.0


# -- formulas of spec-001 §2.1: the one place they are computed ---------------------------------
def amplification_denominator(epsilon: float) -> float:
    """``m = 3 + exp(epsilon + 4)``: sub-samples are drawn at ratio ``epsilon / m``.

    Parameters
    ----------
    epsilon : float
        The privacy parameter, > 0.

    Returns
    -------
    float
        ``m`` (151.41 at ``epsilon = 1``).
    """
    return 3.0 + math.exp(check_epsilon(epsilon) + 4.0)


def vc_teacher_size(vc_dim: int, alpha: float, beta: float, base: float = LOG_BASE) -> float:
    """``lambda = (8 d log(13 / alpha) + 4 log(2 / beta)) / alpha`` (VC bound), unrounded.

    Parameters
    ----------
    vc_dim : int
        VC dimension ``d``.
    alpha, beta : float
        Accuracy and confidence of one teacher (``alpha_i``, ``beta_i``).
    base : float, default=LOG_BASE
        Base of ``log``.

    Returns
    -------
    float
        The number of examples that PAC-learn the class to ``(alpha, beta)``.
    """
    return float(8 * vc_dim * log_base(13.0 / alpha, base) + 4 * log_base(2.0 / beta, base)) / alpha


def paper_n_teachers(
    teacher_size: int,
    epsilon: float,
    delta: float,
    alpha: float,
    beta: float,
    base: float = LOG_BASE,
    tau: float = TAU,
) -> float:
    """Teachers of a phase, unrounded.

    ``T = tau lambda log(1/delta) log^2(lambda / (eps alpha beta delta)) / (alpha eps)``.

    Parameters
    ----------
    teacher_size : int
        ``lambda_i`` (rounded up).
    epsilon, delta : float
        Privacy parameters.
    alpha, beta : float
        ``alpha_i`` and ``beta_i`` of the phase.
    base : float, default=LOG_BASE
        Base of ``log``.
    tau : float, default=TAU
        The paper's constant.

    Returns
    -------
    float
        The number of teachers of the phase.
    """
    log_ratio = float(log_base(teacher_size / (epsilon * alpha * beta * delta), base))
    return (
        tau * teacher_size * float(log_base(1.0 / delta, base)) * log_ratio**2 / (alpha * epsilon)
    )


def paper_required_samples(
    epsilon: float,
    delta: float,
    alpha: float,
    beta: float,
    vc_dim: int,
    base: float = LOG_BASE,
    tau: float = TAU,
) -> float:
    """The paper's ``n`` (required ``|S|``), unrounded.

    ``n = 8 tau / (alpha^3 eps^2) A^2 log(1/delta) log^2(B / (eps alpha^2 beta delta)) m``
    with ``A = 8 d log(26/alpha) + 4 log(4/beta)`` and ``B = 8 A``; it equals
    ``m lambda_1 T_1 / eps`` before rounding.

    Returns
    -------
    float
        ``n``.
    """
    big_a = float(8 * vc_dim * log_base(26.0 / alpha, base) + 4 * log_base(4.0 / beta, base))
    big_b = 8.0 * big_a
    log_ratio = float(log_base(big_b / (epsilon * alpha**2 * beta * delta), base))
    return (
        8.0
        * tau
        / (alpha**3 * epsilon**2)
        * big_a**2
        * float(log_base(1.0 / delta, base))
        * log_ratio**2
        * amplification_denominator(epsilon)
    )


def bt_instance_privacy(top_budget: int, delta: float) -> tuple[float, float]:
    """Per-instance BT privacy ``eps' = 1 / (3 sqrt(c ln(2/delta)))``, ``delta' = delta / (2c)``.

    With these, ``c`` instances compose (Observation 2) to at most
    ``(sqrt(2)/3 + 2/(9 ln(2/delta)), delta)``, within ``(1, delta)`` (Claim D.1).

    Parameters
    ----------
    top_budget : int
        The TOP budget ``c_i``.
    delta : float
        The target delta.

    Returns
    -------
    tuple of float
        ``(eps', delta')``.
    """
    return 1.0 / (3.0 * math.sqrt(top_budget * math.log(2.0 / delta))), delta / (2.0 * top_budget)


def _start_between_thresholds(
    threshold_gap: float, bt_epsilon: float, n_teachers: int, top_budget: int
) -> BetweenThresholds:
    """MultiBT on the vote fraction of ``T`` teachers (sensitivity 1/T), thresholds 1/2 -+ gap/2."""
    lower, upper = 0.5 - 0.5 * threshold_gap, 0.5 + 0.5 * threshold_gap
    return BetweenThresholds(lower, upper, bt_epsilon, 1.0 / n_teachers, top_budget)


@dataclass(frozen=True)
class GenericBBLPhase:
    """Public, data-independent sizes of one GenericBBL phase (spec-001 §2.1).

    Attributes
    ----------
    phase : int
        Phase index ``i`` (from 1).
    alpha, beta : float
        ``alpha_i = alpha / 2^i`` and ``beta_i = beta / 2^i``.
    teacher_size : int
        ``lambda_i``, examples per teacher.
    n_teachers : int
        ``T_i``.
    pool_size : int
        ``|S_i| = lambda_i T_i``.
    phase_length : int
        ``R_i``, queries answered in the phase.
    top_budget : int
        ``c_i``, TOPs before the halt.
    threshold_gap : float
        ``t_u - t_l`` of BetweenThresholds.
    bt_epsilon, bt_delta : float
        ``eps'_i`` and ``delta'_i`` of one BT instance.
    labelled_size : int
        ``|Shat_i| = floor(eps |S_i| / m)``, the labelled part given to LabelBoost.
    unlabelled_size : int
        ``|Dhat_i| = floor(eps R_i / m)``, the query slots kept for LabelBoost.
    """

    phase: int
    alpha: float
    beta: float
    teacher_size: int
    n_teachers: int
    pool_size: int
    phase_length: int
    top_budget: int
    threshold_gap: float
    bt_epsilon: float
    bt_delta: float
    labelled_size: int
    unlabelled_size: int

    def between_thresholds(self) -> BetweenThresholds:
        """A fresh MultiBT for the phase."""
        return _start_between_thresholds(
            self.threshold_gap, self.bt_epsilon, self.n_teachers, self.top_budget
        )


@dataclass(frozen=True)
class PracticalPhase:
    """Public, data-independent sizes of one phase of the practical predictor (spec-001 §3.3).

    Attributes
    ----------
    phase : int
        Phase index (from 1).
    teacher_size : int
        Rows per teacher (``floor(pool_size / n_teachers)``; blocks differ by at most one row).
    n_teachers : int
        ``T``.
    pool_size : int
        Rows the phase's teachers are trained on (the training set, then ``phase_length``).
    phase_length : int
        ``R``, queries answered in the phase.
    noise_sigma : float or None
        Standard deviation of the Gaussian vote noise (Gaussian aggregator).
    top_budget : int or None
        TOPs per phase (BetweenThresholds aggregator).
    threshold_gap, bt_epsilon, bt_delta : float or None
        BetweenThresholds' gap and per-instance ``(eps', delta')``.
    """

    phase: int
    teacher_size: int
    n_teachers: int
    pool_size: int
    phase_length: int
    noise_sigma: float | None = None
    top_budget: int | None = None
    threshold_gap: float | None = None
    bt_epsilon: float | None = None
    bt_delta: float | None = None

    def between_thresholds(self) -> BetweenThresholds | None:
        """A fresh MultiBT for the phase, or None for the Gaussian vote."""
        if self.top_budget is None or self.threshold_gap is None or self.bt_epsilon is None:
            return None
        return _start_between_thresholds(
            self.threshold_gap, self.bt_epsilon, self.n_teachers, self.top_budget
        )


def _check_paper_parameters(
    epsilon, delta, alpha, beta, *, paper: bool
) -> tuple[float, float, float, float]:
    """Validate (epsilon, delta, alpha, beta); in paper mode enforce Theorem 5.1's ranges."""
    epsilon = check_epsilon(epsilon)
    delta = check_open_unit_interval(delta, "delta")
    alpha = check_open_unit_interval(alpha, "alpha")
    beta = check_open_unit_interval(beta, "beta")
    if paper:
        if epsilon > 1.0:
            raise PrivacyParameterError(
                f"epsilon must be <= 1 in mode='paper' (Claim 2.7, the sub-sampling step, needs "
                f"it), got epsilon={epsilon!r}."
            )
        for name, value in (("alpha", alpha), ("beta", beta), ("delta", delta)):
            if value >= PAPER_PARAMETER_BOUND:
                raise PrivacyParameterError(
                    f"{name} must be < 1/16 in mode='paper' (Theorem 5.1), got {name}={value!r}."
                )
    return epsilon, delta, alpha, beta


class _GenericBBLSchedule:
    """The phase schedule of GenericBBL: a deterministic function of public parameters.

    ``mode="paper"`` follows spec-001 §2.1 verbatim; overrides of sizes that the
    privacy proof does not use (``n_teachers``, ``teacher_size``,
    ``phase_length``, ``top_budget``, ``threshold_gap``) are allowed and keep the
    privacy proof (spec-001 §4.3(2)) provided the BT gap condition holds.
    ``mode="simulation"`` takes every size from the overrides, with the toy
    defaults of :data:`SIMULATION_DEFAULTS`, and skips the privacy checks.
    """

    def __init__(
        self, epsilon, delta, alpha, beta, vc_dim, *, mode, overrides, base=LOG_BASE, tau=TAU
    ):
        self.epsilon, self.delta, self.alpha, self.beta = epsilon, delta, alpha, beta
        self.vc_dim, self.mode, self.base, self.tau = vc_dim, mode, base, tau
        self.overrides = dict(overrides)
        simulated = mode == "simulation"
        self.m = (
            float(self.overrides.get("m", SIMULATION_DEFAULTS["m"]))
            if simulated
            else (amplification_denominator(epsilon))
        )

    def _sizes(self, alpha_i: float, beta_i: float) -> tuple[int, int]:
        """``(lambda_i, T_i)`` from the overrides or the paper's formulas (rounded up)."""
        if self.mode == "simulation":
            defaults = SIMULATION_DEFAULTS
            return (
                int(self.overrides.get("teacher_size", defaults["teacher_size"])),
                int(self.overrides.get("n_teachers", defaults["n_teachers"])),
            )
        teacher_size = self.overrides.get("teacher_size")
        if teacher_size is None:
            teacher_size = ceil_int(vc_teacher_size(self.vc_dim, alpha_i, beta_i, self.base))
        n_teachers = self.overrides.get("n_teachers")
        if n_teachers is None:
            n_teachers = ceil_int(
                paper_n_teachers(
                    teacher_size, self.epsilon, self.delta, alpha_i, beta_i, self.base, self.tau
                )
            )
        return int(teacher_size), int(n_teachers)

    def phase(self, i: int) -> GenericBBLPhase:
        """Sizes of phase ``i`` (from 1)."""
        alpha_i, beta_i = self.alpha / 2**i, self.beta / 2**i
        teacher_size, n_teachers = self._sizes(alpha_i, beta_i)
        pool_size = teacher_size * n_teachers
        simulated = self.mode == "simulation"
        phase_length = self.overrides.get("phase_length")
        if phase_length is None:
            phase_length = (
                SIMULATION_PHASE_LENGTH_POOLS * pool_size
                if simulated
                else ceil_int(PHASE_QUERY_FACTOR * pool_size / self.epsilon)
            )
        top_budget = self.overrides.get("top_budget")
        if top_budget is None:
            top_budget = max(1, ceil_int(TOP_BUDGET_FACTOR * alpha_i * phase_length))
        bt_epsilon, bt_delta = bt_instance_privacy(top_budget, self.delta)
        if simulated:
            bt_epsilon = float(self.overrides.get("bt_epsilon", SIMULATION_DEFAULTS["bt_epsilon"]))
        return GenericBBLPhase(
            phase=i,
            alpha=alpha_i,
            beta=beta_i,
            teacher_size=teacher_size,
            n_teachers=n_teachers,
            pool_size=pool_size,
            phase_length=int(phase_length),
            top_budget=int(top_budget),
            threshold_gap=float(self.overrides.get("threshold_gap", 2.0 * alpha_i)),
            bt_epsilon=bt_epsilon,
            bt_delta=bt_delta,
            labelled_size=math.floor(self.epsilon * pool_size / self.m),
            unlabelled_size=math.floor(self.epsilon * phase_length / self.m),
        )

    def required_samples(self) -> int:
        """Rows ``fit`` needs: ``|S_1| = lambda_1 T_1`` is at most a fraction ``eps/m`` of S."""
        needed = ceil_int(self.m * self.phase(1).pool_size / self.epsilon)
        if self.mode == "paper" and not self.overrides:
            formula = paper_required_samples(
                self.epsilon, self.delta, self.alpha, self.beta, self.vc_dim, self.base, self.tau
            )
            needed = max(needed, ceil_int(formula))
        return needed

    def required_gap(self, params: GenericBBLPhase) -> float:
        """The BT gap condition's right-hand side for the phase (Lemma C.3, Claim D.9)."""
        return between_thresholds_gap(
            params.bt_epsilon, params.bt_delta, 1.0 / params.n_teachers, self.base
        )

    def check_phase(self, params: GenericBBLPhase, next_params: GenericBBLPhase) -> None:
        """Raise if the phase breaks the gap condition (paper mode) or Claim D.6."""
        if self.mode == "paper" and params.threshold_gap < self.required_gap(params):
            raise PrivacyParameterError(
                f"the BetweenThresholds gap condition fails in phase {params.phase}: the threshold "
                f"gap is {params.threshold_gap!r} but Lemma C.3 needs at least "
                f"{self.required_gap(params)!r} with n_teachers={params.n_teachers}, "
                f"top_budget={params.top_budget}; use more teachers, a smaller top_budget or a "
                "wider threshold_gap (or mode='simulation', which has no guarantee)."
            )
        if params.unlabelled_size < next_params.pool_size:
            raise PhaseDataError(
                f"phase {params.phase} keeps {params.unlabelled_size} query slots for LabelBoost "
                f"(floor(epsilon * phase_length / m)) but phase {next_params.phase} needs "
                f"{next_params.pool_size} = teacher_size * n_teachers examples (Claim D.6); "
                "increase phase_length."
            )


def genericbbl_plan(
    epsilon: float,
    delta: float,
    alpha: float,
    beta: float,
    vc_dim: int,
    log_base: float = LOG_BASE,
    tau: float = TAU,
    phases: int = 3,
) -> dict:
    """The public schedule of GenericBBL and the data it needs (spec-001 §2.1, §4).

    Parameters
    ----------
    epsilon : float
        Privacy parameter, in (0, 1].
    delta : float
        Privacy parameter, in (0, 1/16).
    alpha, beta : float
        Accuracy parameters, in (0, 1/16). The guarantee is error ``6 alpha``
        with probability ``1 - 4 beta`` (Theorem 5.1).
    vc_dim : int
        VC dimension of the class.
    log_base : float, default=2
        Base of the paper's ``log`` (spec-001 P2).
    tau : float, default=1.1e10
        The paper's constant.
    phases : int, default=3
        Number of phases to list.

    Returns
    -------
    dict
        ``n`` (the paper's required ``|S|``, rounded up), ``required_samples``
        (the rows ``fit`` needs: ``n`` or ``ceil(m |S_1| / eps)`` if larger after
        rounding), ``m``, ``guarantee`` (``{"error": 6 alpha, "failure": 4 beta,
        "epsilon", "delta"}``), and ``phases``: one dict per phase with the
        fields of :class:`GenericBBLPhase` plus ``required_gap`` (Lemma C.3),
        ``gap_condition_holds``, ``next_pool_size`` and ``bt_composed`` (the
        Observation 2 composition of the phase's ``c_i`` instances, within
        ``(1, delta)`` by Claim D.1).

    Examples
    --------
    >>> plan = genericbbl_plan(1.0, 1e-6, 0.05, 0.05, 1)
    >>> f"{plan['n']:.2e}", plan["phases"][0]["teacher_size"]
    ('3.65e+25', 3899)
    """
    epsilon, delta, alpha, beta = _check_paper_parameters(epsilon, delta, alpha, beta, paper=True)
    vc_dim = check_positive_int(vc_dim, "vc_dim")
    phases = check_positive_int(phases, "phases")
    base = check_positive_finite(log_base, "log_base")
    tau = check_positive_finite(tau, "tau")
    schedule = _GenericBBLSchedule(
        epsilon, delta, alpha, beta, vc_dim, mode="paper", overrides={}, base=base, tau=tau
    )
    listed = []
    for i in range(1, phases + 1):
        params, next_params = schedule.phase(i), schedule.phase(i + 1)
        required_gap = schedule.required_gap(params)
        row = asdict(params)
        row.update(
            required_gap=required_gap,
            gap_condition_holds=params.threshold_gap >= required_gap,
            next_pool_size=next_params.pool_size,
            bt_composed=between_thresholds_composition(
                params.bt_epsilon, params.bt_delta, params.top_budget
            ),
        )
        listed.append(row)
    return {
        "n": ceil_int(paper_required_samples(epsilon, delta, alpha, beta, vc_dim, base, tau)),
        "required_samples": schedule.required_samples(),
        "m": schedule.m,
        "guarantee": {"error": 6 * alpha, "failure": 4 * beta, "epsilon": epsilon, "delta": delta},
        "phases": listed,
    }


# -- formulas of the practical predictor (spec-001 §3.3, §4.3(4)) --------------------------------
def zcdp_rho(epsilon: float, delta: float) -> float:
    """``rho = (sqrt(ln(1/delta) + eps) - sqrt(ln(1/delta)))^2``: rho-zCDP implies (eps, delta)-DP.

    The inverse of ``eps = rho + 2 sqrt(rho ln(1/delta))`` (Bun & Steinke 2016,
    Prop. 1.3).

    Parameters
    ----------
    epsilon : float
        Target epsilon, > 0.
    delta : float
        Target delta, in (0, 1).

    Returns
    -------
    float
        The zCDP budget of one phase (0.0175 at ``eps = 1, delta = 1e-6``).
    """
    epsilon = check_epsilon(epsilon)
    log_inv_delta = math.log(1.0 / check_open_unit_interval(delta, "delta"))
    return (math.sqrt(log_inv_delta + epsilon) - math.sqrt(log_inv_delta)) ** 2


def gaussian_vote_sigma(phase_length: int, rho: float) -> float:
    """``sigma = sqrt(R / (2 rho))``: R Gaussian votes of sensitivity 1 compose to rho-zCDP.

    Parameters
    ----------
    phase_length : int
        ``R``, the queries of one phase.
    rho : float
        zCDP budget of the phase.

    Returns
    -------
    float
        Noise standard deviation, in votes.
    """
    return math.sqrt(phase_length / (2.0 * rho))


def practical_plan(
    epsilon: float,
    delta: float,
    teacher_size: int,
    margin: float = PRACTICAL_MARGIN,
    z: float = PRACTICAL_Z,
) -> dict:
    """Teachers and training rows that the practical everlasting predictor needs (spec-001 §4.3(4)).

    The sizing rule ``T >= z^2 lambda / (2 rho margin^2)`` makes the Gaussian
    vote noise ``sigma = sqrt(lambda T / (2 rho))`` (phase length ``R = lambda
    T``) at most ``margin T / z``: a query whose vote fraction is ``margin``
    away is answered wrongly with probability about ``Phi(-z)``.

    Parameters
    ----------
    epsilon, delta : float
        The guarantee for every training row and every query.
    teacher_size : int
        ``lambda``, rows per teacher (the capacity of the base learner).
    margin : float, default=0.4
        Vote margin, as a fraction of the teachers, in (0, 1].
    z : float, default=3.0
        Number of noise standard deviations the margin must cover, > 0.

    Returns
    -------
    dict
        ``rho``, ``n_teachers`` (``T``), ``n_samples`` (``|S| = lambda T``, also
        the phase length), ``sigma`` and ``teachers_per_row`` (``T / lambda``).

    Examples
    --------
    >>> plan = practical_plan(1.0, 1e-6, 20)
    >>> plan["n_teachers"], plan["n_samples"]
    (32201, 644020)
    """
    rho = zcdp_rho(epsilon, delta)
    teacher_size = check_positive_int(teacher_size, "teacher_size")
    margin = check_positive_finite(margin, "margin")
    if margin > 1.0:
        raise ValueError(f"margin must lie in (0, 1], got {margin!r}.")
    z = check_positive_finite(z, "z")
    n_teachers = ceil_int(z**2 * teacher_size / (2.0 * rho * margin**2))
    n_samples = teacher_size * n_teachers
    return {
        "rho": rho,
        "n_teachers": n_teachers,
        "n_samples": n_samples,
        "sigma": gaussian_vote_sigma(n_samples, rho),
        "teachers_per_row": n_teachers / teacher_size,
    }


def default_n_teachers(n_samples: int, epsilon: float, delta: float) -> int:
    """Teachers for ``n_samples`` rows by the sizing rule of :func:`practical_plan`.

    Solves ``T >= z^2 (n / T) / (2 rho margin^2)`` for ``T``:
    ``T = ceil(z sqrt(n / (2 rho)) / margin)`` with the default margin and z,
    capped at ``n`` (one row per teacher).
    """
    rho = zcdp_rho(epsilon, delta)
    wanted = ceil_int(PRACTICAL_Z * math.sqrt(n_samples / (2.0 * rho)) / PRACTICAL_MARGIN)
    return max(1, min(wanted, n_samples))


def practical_bt_privacy(epsilon: float, delta: float, top_budget: int) -> tuple[float, float]:
    """Per-instance ``(eps', delta')`` for ``c`` BT instances to compose to ``(eps, delta)``.

    Takes the better of plain composition (``eps' = eps / c``, ``delta' =
    delta / c``) and Observation 2 (``delta' = delta / (2c)`` and the largest
    ``eps'`` whose advanced composition is ``eps``): the one that needs the
    smaller threshold gap.

    Returns
    -------
    tuple of float
        ``(eps', delta')``.
    """
    plain = (epsilon / top_budget, delta / top_budget)
    delta_advanced = delta / (2.0 * top_budget)

    def excess(eps_prime: float) -> float:
        return between_thresholds_composition(eps_prime, delta_advanced, top_budget)[0] - epsilon

    advanced_eps = brentq(excess, 1e-300, epsilon, xtol=1e-300, rtol=1e-14)
    while excess(advanced_eps) > 0:  # root finding may stop just above the budget
        advanced_eps = math.nextafter(advanced_eps, 0.0)
    advanced = (advanced_eps, delta_advanced)
    return min(plain, advanced, key=lambda pair: between_thresholds_gap(pair[0], pair[1], 1.0))


def largest_top_budget(epsilon: float, delta: float, n_teachers: int, threshold_gap: float) -> int:
    """Largest TOP budget ``c`` whose BT instances satisfy the gap condition (0 if none).

    The required gap grows with ``c``, so a doubling search and a bisection find it.
    """

    def fits(c: int) -> bool:
        eps_prime, delta_prime = practical_bt_privacy(epsilon, delta, c)
        return between_thresholds_gap(eps_prime, delta_prime, 1.0 / n_teachers) <= threshold_gap

    if not fits(1):
        return 0
    low, high = 1, 2
    while fits(high):
        low, high = high, 2 * high
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if fits(middle) else (low, middle)
    return low


# -- hypothesis classes with exact ERM and exact LabelBoost (spec-001 §3.1, §3.2) ---------------
THRESHOLD_DIRECTIONS = ("increasing", "decreasing")


@dataclass(frozen=True)
class _LabelBoostCandidates:
    """The distinct dichotomies of a class on the points P of Shat and Dhat, and their scores.

    ``errors[k]`` is the number of labelled points dichotomy ``k`` gets wrong;
    ``labels_of(k)`` gives its labels (0/1) on the labelled and unlabelled points.
    """

    errors: np.ndarray
    labels_of: Callable[[int], tuple[np.ndarray, np.ndarray]]


class ThresholdClass:
    """1-D thresholds ``c_t(x) = 1[x >= t]`` (or ``1[x <= t]``), VC dimension 1.

    ERM takes the midpoint of the optimal range (spec-001 §3.1, P10); votes are
    a binary search in the sorted teacher thresholds; LabelBoost enumerates the
    ``l + 1`` dichotomies of ``l`` distinct values with prefix sums.

    Parameters
    ----------
    direction : {"increasing", "decreasing"}, default="increasing"
        ``"increasing"``: label 1 (``classes[1]``) for ``x >= t``;
        ``"decreasing"``: label 1 for ``x <= t``. A public choice: picking it
        from the data would be an unaccounted private decision (P18).
    """

    def __init__(self, direction: str = "increasing") -> None:
        self.direction = direction

    def __repr__(self) -> str:
        return f"ThresholdClass(direction={self.direction!r})"

    def _check(self) -> None:
        if self.direction not in THRESHOLD_DIRECTIONS:
            raise ValueError(
                f"direction must be one of {THRESHOLD_DIRECTIONS}, got {self.direction!r}."
            )

    def default_vc_dim(self) -> int:
        """VC dimension of thresholds on the line: 1."""
        return 1

    def prepare(self, X: MatrixLike) -> np.ndarray:
        """Validated points: one finite value per row, sign-flipped if decreasing.

        ``X`` has shape (n,) or (n, 1).
        """
        self._check()
        X = np.asarray(X)
        if X.ndim == 2 and X.shape[1] != 1:
            raise ValueError(
                f"thresholds need one feature: X must have shape (n,) or (n, 1), got {X.shape}."
            )
        x = check_array(X.reshape(-1, 1), dtype=np.float64, ensure_all_finite=True).ravel()
        return x if self.direction == "increasing" else -x

    @staticmethod
    def erm(points: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """ERM threshold of each block, midpoint of the optimal range.

        Parameters
        ----------
        points : ndarray of shape (n_teachers, teacher_size)
            Prepared values, one block per row.
        labels : ndarray of shape (n_teachers, teacher_size)
            0/1 labels.

        Returns
        -------
        ndarray of shape (n_teachers,)
            Sorted thresholds (the teachers' compact form).
        """
        order = np.argsort(points, axis=1, kind="stable")
        xs = np.take_along_axis(points, order, axis=1)
        ys = np.take_along_axis(labels, order, axis=1).astype(np.int64)
        n_blocks, size = xs.shape
        zeros = np.zeros((n_blocks, 1), dtype=np.int64)
        ones_before = np.hstack([zeros, np.cumsum(ys, axis=1)])
        zeros_before = np.hstack([zeros, np.cumsum(1 - ys, axis=1)])
        errors = ones_before + (zeros_before[:, -1:] - zeros_before)  # cut k: first k labelled 0
        # A cut between two equal values is not realisable by a threshold.
        valid = np.ones((n_blocks, size + 1), dtype=bool)
        valid[:, 1:-1] = xs[:, :-1] < xs[:, 1:]
        errors = np.where(valid, errors, np.iinfo(np.int64).max)
        optimal = errors == errors.min(axis=1, keepdims=True)
        cut = np.arange(size + 1)
        first = np.argmax(optimal, axis=1)
        # The optimal range runs on while the valid cuts stay optimal.
        breaks = valid & ~optimal & (cut > first[:, None])
        stop = np.where(breaks.any(axis=1), np.argmax(breaks, axis=1), size + 1)
        in_run = optimal & (cut < stop[:, None])
        last = size - np.argmax(in_run[:, ::-1], axis=1)
        padded = np.hstack([np.full((n_blocks, 1), -np.inf), xs, np.full((n_blocks, 1), np.inf)])
        left = padded[np.arange(n_blocks), first]  # x just below the range (or -inf)
        right = padded[np.arange(n_blocks), last + 1]  # x at its top (or +inf)
        with np.errstate(invalid="ignore", over="ignore"):
            middle = 0.5 * left + 0.5 * right
        middle = np.where((middle > left) & (middle <= right), middle, right)
        thresholds = np.where(
            np.isneginf(left),
            right,
            np.where(np.isposinf(right), np.nextafter(left, np.inf), middle),
        )
        return np.sort(thresholds)

    @staticmethod
    def vote_fraction(teachers: np.ndarray, points: np.ndarray) -> np.ndarray:
        """Fraction of teachers voting 1: ``#{t <= x} / T`` by binary search."""
        return np.searchsorted(teachers, points, side="right") / teachers.size

    @staticmethod
    def candidates(
        labelled: np.ndarray, labels: np.ndarray, unlabelled: np.ndarray
    ) -> _LabelBoostCandidates:
        """The ``l + 1`` dichotomies on the ``l`` distinct values and their errors on Shat."""
        values, rank = np.unique(np.concatenate([labelled, unlabelled]), return_inverse=True)
        rank_labelled, rank_unlabelled = rank[: labelled.size], rank[labelled.size :]
        ones = np.bincount(rank_labelled, weights=labels, minlength=values.size)
        zeros = np.bincount(rank_labelled, weights=1 - labels, minlength=values.size)
        ones_before = np.concatenate([[0.0], np.cumsum(ones)])
        zeros_before = np.concatenate([[0.0], np.cumsum(zeros)])
        errors = ones_before + (zeros_before[-1] - zeros_before)  # k: first k values labelled 0

        def labels_of(k: int) -> tuple[np.ndarray, np.ndarray]:
            return (rank_labelled >= k).astype(np.int8), (rank_unlabelled >= k).astype(np.int8)

        return _LabelBoostCandidates(errors=np.rint(errors), labels_of=labels_of)


class FiniteHypothesisClass:
    """A finite class of binary hypotheses, as a prediction matrix or as callables.

    Parameters
    ----------
    predictions : array-like of shape (n_hypotheses, n_domain), default=None
        ``predictions[k, x]`` in {0, 1} is hypothesis ``k``'s label on domain
        point ``x``; queries and training rows are then integer indices in
        ``[0, n_domain)`` (shape (n,) or (n, 1)).
    hypotheses : list of callable, default=None
        ``h(X)`` returns one label in {0, 1} per row of ``X`` (2-D). Exactly one
        of ``predictions`` and ``hypotheses`` must be given.

    Notes
    -----
    Label 1 means ``classes[1]``. ERM takes the lowest-index minimiser; LabelBoost
    de-duplicates the hypotheses' label vectors on the points (duplicate
    hypotheses add no weight).
    """

    def __init__(
        self,
        predictions: MatrixLike | None = None,
        hypotheses: list[Callable[[np.ndarray], Any]] | None = None,
    ) -> None:
        self.predictions = predictions
        self.hypotheses = hypotheses

    def __repr__(self) -> str:
        if self.predictions is not None:
            return f"FiniteHypothesisClass(predictions=<{np.shape(self.predictions)} matrix>)"
        count = len(self.hypotheses) if self.hypotheses is not None else 0
        return f"FiniteHypothesisClass(hypotheses=<{count} callables>)"

    def _matrix(self) -> np.ndarray | None:
        if (self.predictions is None) == (self.hypotheses is None):
            raise ValueError(
                "FiniteHypothesisClass needs exactly one of predictions and hypotheses."
            )
        if self.predictions is None:
            if not self.hypotheses or not all(callable(h) for h in self.hypotheses):
                raise TypeError(
                    "hypotheses must be a non-empty list of callables h(X) -> labels in {0, 1}."
                )
            return None
        matrix = np.asarray(self.predictions)
        if matrix.ndim != 2 or matrix.size == 0 or not np.isin(matrix, (0, 1)).all():
            raise ValueError(
                "predictions must be a non-empty 2-D matrix of 0/1 labels (hypotheses x domain)."
            )
        return matrix.astype(np.int8)

    def _callables(self) -> list[Callable[[np.ndarray], Any]]:
        if self.hypotheses is None:
            raise ValueError("FiniteHypothesisClass was given a prediction matrix, not callables.")
        return list(self.hypotheses)

    @property
    def n_hypotheses(self) -> int:
        """Number ``K`` of hypotheses."""
        matrix = self._matrix()
        return len(self._callables()) if matrix is None else matrix.shape[0]

    def default_vc_dim(self) -> int:
        """``max(1, floor(log2 K))``: a valid upper bound on the VC dimension of K hypotheses."""
        return max(1, int(math.floor(math.log2(self.n_hypotheses))))

    def prepare(self, X: MatrixLike) -> np.ndarray:
        """Validated points: domain indices (matrix form) or finite 2-D rows (callables)."""
        matrix = self._matrix()
        if matrix is None:
            return check_array(X, dtype=np.float64, ensure_all_finite=True)
        X = np.asarray(X)
        if X.ndim == 2 and X.shape[1] != 1:
            raise ValueError(
                f"a prediction-matrix class takes one domain index per row, got shape {X.shape}."
            )
        x = check_array(X.reshape(-1, 1), dtype=np.float64, ensure_all_finite=True).ravel()
        if not (np.all(x == np.round(x)) and np.all((x >= 0) & (x < matrix.shape[1]))):
            raise ValueError(f"X must hold integer domain indices in [0, {matrix.shape[1]}).")
        return x.astype(np.intp)

    def labels_on(self, points: np.ndarray) -> np.ndarray:
        """Labels of every hypothesis on the points, shape (K, n_points), int8."""
        matrix = self._matrix()
        if matrix is not None:
            return matrix[:, points]
        rows = [np.asarray(h(points)).ravel() for h in self._callables()]
        labels = np.vstack(rows)
        if labels.shape[1] != len(points) or not np.isin(labels, (0, 1)).all():
            raise ValueError("every hypothesis must return one label in {0, 1} per row.")
        return labels.astype(np.int8)

    def erm(self, points: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """Multiplicity of each hypothesis among the blocks' ERM choices (lowest index on ties).

        Parameters
        ----------
        points : ndarray of shape (n_teachers, teacher_size[, n_features])
            Prepared points, one block per row.
        labels : ndarray of shape (n_teachers, teacher_size)
            0/1 labels.

        Returns
        -------
        ndarray of shape (n_hypotheses,) of int
            How many teachers chose each hypothesis (the compact form).
        """
        n_blocks, size = labels.shape
        flat = points.reshape((n_blocks * size,) + points.shape[2:])
        predicted = self.labels_on(flat).reshape(-1, n_blocks, size)
        errors = (predicted != labels[None].astype(np.int8)).sum(axis=2)
        return np.bincount(np.argmin(errors, axis=0), minlength=predicted.shape[0])

    def vote_fraction(self, teachers: np.ndarray, points: np.ndarray) -> np.ndarray:
        """Fraction of teachers voting 1 (weighted by multiplicity)."""
        chosen = np.flatnonzero(teachers)
        matrix = self._matrix()
        if matrix is not None:
            return (teachers[chosen] @ matrix[chosen][:, points]) / teachers.sum()
        return (teachers[chosen] @ self.labels_on(points)[chosen]) / teachers.sum()

    def candidates(
        self, labelled: np.ndarray, labels: np.ndarray, unlabelled: np.ndarray
    ) -> _LabelBoostCandidates:
        """The distinct dichotomies on the distinct points of Shat and Dhat, scored on Shat."""
        every = np.concatenate([labelled, unlabelled])
        points, rank = np.unique(every, axis=0, return_inverse=True)
        rank = rank.ravel()
        rank_labelled, rank_unlabelled = rank[: len(labelled)], rank[len(labelled) :]
        on_points = self.labels_on(points)
        packed = np.packbits(on_points.astype(np.uint8), axis=1)
        _, first = np.unique(packed, axis=0, return_index=True)
        dichotomies = on_points[np.sort(first)].astype(np.int64)
        ones = np.bincount(rank_labelled, weights=labels, minlength=len(points))
        zeros = np.bincount(rank_labelled, weights=1 - labels, minlength=len(points))
        errors = ones.sum() - dichotomies @ ones + dichotomies @ zeros

        def labels_of(k: int) -> tuple[np.ndarray, np.ndarray]:
            row = dichotomies[k].astype(np.int8)
            return row[rank_labelled], row[rank_unlabelled]

        return _LabelBoostCandidates(errors=np.rint(errors), labels_of=labels_of)


def _resolve_hypothesis_class(
    hypothesis_class: str | ThresholdClass | FiniteHypothesisClass,
) -> ThresholdClass | FiniteHypothesisClass:
    """``"thresholds"`` means ``ThresholdClass()``; class objects are used as given."""
    if isinstance(hypothesis_class, str):
        if hypothesis_class != "thresholds":
            raise ValueError(
                "hypothesis_class must be 'thresholds', a ThresholdClass or a "
                "FiniteHypothesisClass, "
                f"got {hypothesis_class!r}."
            )
        return ThresholdClass()
    if not isinstance(hypothesis_class, (ThresholdClass, FiniteHypothesisClass)):
        raise TypeError(
            "hypothesis_class must be 'thresholds', a ThresholdClass or a FiniteHypothesisClass, "
            f"got {type(hypothesis_class).__name__}."
        )
    return hypothesis_class


def labelboost_law(
    hypothesis_class: ThresholdClass | FiniteHypothesisClass,
    labelled: np.ndarray,
    labels: VectorLike,
    unlabelled: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact law of LabelBoost's choice. NOT PRIVATE: a diagnostic for tests.

    Parameters
    ----------
    hypothesis_class : ThresholdClass or FiniteHypothesisClass
        The class.
    labelled, unlabelled : ndarray
        Prepared points of Shat and Dhat.
    labels : ndarray of 0/1
        Labels of Shat.

    Returns
    -------
    errors : ndarray of shape (n_dichotomies,)
        Mistakes of each distinct dichotomy on Shat.
    proba : ndarray of shape (n_dichotomies,)
        ``exp(-errors / 2) / Z`` (exponential mechanism, epsilon 1, sensitivity 1).
    """
    found = hypothesis_class.candidates(labelled, np.asarray(labels, dtype=float), unlabelled)
    return found.errors, exponential_mechanism_proba(-found.errors, LABELBOOST_EPSILON)


def label_boost(
    hypothesis_class: ThresholdClass | FiniteHypothesisClass,
    labelled: np.ndarray,
    labels: VectorLike,
    unlabelled: np.ndarray,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """LabelBoost (Beimel, Nissim & Stemmer 2021; spec-001 §2.4): relabel Shat and Dhat by one draw.

    One dichotomy of the class on the distinct points is drawn with probability
    proportional to ``exp(-mistakes on Shat / 2)`` (score sensitivity 1,
    epsilon 1), exactly, by inverse CDF on log-softmax-normalised scores.

    Returns
    -------
    labelled_labels, unlabelled_labels : ndarray of int8
        The drawn dichotomy's labels on Shat and on Dhat.
    """
    found = hypothesis_class.candidates(labelled, np.asarray(labels, dtype=float), unlabelled)
    choice = int(exponential_mechanism_sample(-found.errors, LABELBOOST_EPSILON, rng)[0])
    return found.labels_of(choice)


# -- the stream engine shared by both estimators ------------------------------------------------
STATUS_ACTIVE, STATUS_HALTED = "active", "halted"


class _EverlastingStream(PrivatePredictorMixin, ClassifierMixin, BaseEstimator):
    """Phases, stream order, halting and the public stream attributes.

    A subclass provides, for the current phase: ``_prepare_queries(X)``
    (validation), ``_answer_block(block, rng)`` (answers, as indices into
    ``classes_``, for a prefix of the block; shorter only when the mechanism
    halted), ``_record(block, answers, first_slot)`` (keep what the next phase
    needs) and ``_next_phase()`` (train the next phase's teachers). The engine
    cuts every call at phase boundaries, in row order, under the query lock.
    """

    # -- public, read-only stream attributes --------------------------------------------------
    def _stream(self) -> dict:
        check_is_fitted(self, "classes_")
        return self._state

    @property
    def phase_(self) -> int:
        """Index of the current phase (from 1). Public: a function of the number of queries."""
        return self._stream()["params"].phase

    @property
    def queries_in_phase_(self) -> int:
        """Queries answered in the current phase."""
        return self._stream()["queries_in_phase"]

    @property
    def phase_schedule_(self) -> tuple:
        """Sizes of every phase started so far, one dict per phase (data-independent)."""
        return tuple(asdict(params) for params in self._stream()["history"])

    def _tops_used(self) -> int:
        """TOP outcomes of BetweenThresholds in the current phase (0 for the Gaussian vote).

        NOT PRIVATE for queries, hence not a public attribute (spec-001 §5
        lists ``tops_used_``; DESIGN §1.4 wins): it depends on the data and
        reveals whether a query hidden from the adversary hit TOP, even when
        the predictor does not halt, which the released answers do not. For
        tests and diagnostics only.
        """
        mechanism = self._stream()["bt"]
        return 0 if mechanism is None else mechanism.tops_used

    @property
    def status_(self) -> str:
        """``"active"`` or ``"halted"`` (a halt is observable anyway: P15)."""
        return self._stream()["status"]

    # -- stream mechanics --------------------------------------------------------------------
    def _start_phase_state(
        self, params: GenericBBLPhase | PracticalPhase, bt: BetweenThresholds | None
    ) -> None:
        state = self._state
        state["params"] = params
        state["history"].append(params)
        state["queries_in_phase"] = 0
        state["bt"] = bt

    def predict(self, X: MatrixLike) -> np.ndarray:
        """Answer each row as one query, in row order, consuming the stream.

        Rows after a phase boundary are answered by the next phase's teachers,
        which are trained (inside this call) on the finished phase's queries.
        Calling ``predict`` twice on the same rows asks new queries: the
        answers are new draws. ``score`` calls ``predict`` and consumes queries
        too.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
            Query rows (no NaN or infinity).

        Returns
        -------
        ndarray of shape (n_queries,)
            One label per row, from ``classes_``.

        Raises
        ------
        PredictorHaltedError
            When the TOP budget runs out (the error carries the answers of this
            call, the halting row included), and at once on every later call.
        """
        self._raise_if_halted()
        X = self._prepare_queries(X)
        stream = self._query_stream
        with stream.lock:
            self._raise_if_halted()  # another thread may have halted the stream meanwhile
            return self._answer_stream(X, stream)

    def _raise_if_halted(self) -> None:
        if self._stream()["status"] == STATUS_HALTED:
            raise PredictorHaltedError(
                f"{type(self).__name__} has halted; it answers no more queries."
            )

    def _answer_stream(self, X: MatrixLike, stream: QueryStream) -> np.ndarray:
        n_rows = X.shape[0]
        answered: list[np.ndarray] = []
        start = 0
        state = self._state
        while start < n_rows:
            params = state["params"]
            stop = min(n_rows, start + params.phase_length - state["queries_in_phase"])
            block = take_rows(X, np.arange(start, stop))
            answers = self._answer_block(block, stream.rng)
            if answers.size < stop - start:
                block = take_rows(block, np.arange(answers.size))
            self._record(block, answers, state["queries_in_phase"])
            state["queries_in_phase"] += answers.size
            stream.answered += answers.size
            answered.append(answers)
            start += answers.size
            if state["bt"] is not None and state["bt"].halted:
                state["status"] = STATUS_HALTED
                raise PredictorHaltedError(
                    f"{type(self).__name__} halted: the BetweenThresholds TOP budget of phase "
                    f"{params.phase} ran out after {state['queries_in_phase']} queries of the "
                    "phase. "
                    "The error's .predictions hold this call's answers, the halting row included.",
                    predictions=self.classes_[np.concatenate(answered)],
                )
            if state["queries_in_phase"] == params.phase_length:
                self._start_next_phase_or_halt(answered)
        return self.classes_[np.concatenate(answered) if answered else np.empty(0, dtype=np.intp)]

    def _start_next_phase_or_halt(self, answered: list) -> None:
        """Start the next phase; if its public sizes break a privacy or size condition, halt.

        The schedule is public, so such a halt reveals nothing about the data;
        running on would void the guarantee.
        """
        try:
            self._next_phase()
        except (PrivacyParameterError, PhaseDataError) as error:
            self._state["status"] = STATUS_HALTED
            raise PredictorHaltedError(
                f"{type(self).__name__} halted at the end of phase {self._state['params'].phase}: "
                f"the next phase cannot run with a guarantee ({error}) The error's .predictions "
                "hold this call's answers.",
                predictions=self.classes_[np.concatenate(answered)],
            ) from error

    def query(self, x: Any) -> Any:
        """Answer one query row (a 1-D row, or a scalar for 1-D inputs).

        Parameters
        ----------
        x : array-like of shape (n_features,), pandas Series or scalar
            The query.

        Returns
        -------
        object
            Its label, from ``classes_``.
        """
        if hasattr(x, "to_frame"):  # a pandas Series: one row that keeps its column names
            return self.predict(x.to_frame().T.infer_objects())[0]
        row = np.asarray(x)
        return self.predict(row.reshape(1, -1))[0]

    def __getstate__(self) -> dict:
        if "_state" in self.__dict__:
            warnings.warn(
                f"copying or pickling a fitted {type(self).__name__} forks its stream state: "
                "querying "
                "two copies re-uses the phase's secret sub-samples and doubles its query capacity, "
                "which voids the privacy guarantee (spec-001 P13). Keep one live copy.",
                PrivacyWarning,
                stacklevel=2,
            )
        return super().__getstate__()

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        tags.target_tags.single_output = True
        return tags

    # -- shared validation -----------------------------------------------------------------
    def _validate_labels(self, y) -> tuple[np.ndarray, np.ndarray]:
        """Binary public label set and each row's index in it."""
        y = finite_target_column(y)
        check_classification_targets(y)
        classes = resolve_binary_classes(self.classes, y, type(self).__name__)
        return classes, np.searchsorted(classes, y)


def _check_mode(mode) -> str:
    if mode not in ("paper", "simulation"):
        raise ValueError(f"mode must be 'paper' or 'simulation', got {mode!r}.")
    return mode


def _check_overrides(overrides, mode: str) -> dict:
    """Validate the override keys and values; keys that void the proof need simulation mode."""
    if overrides is None:
        return {}
    if not isinstance(overrides, dict):
        raise TypeError(f"overrides must be a dict or None, got {type(overrides).__name__}.")
    unknown = sorted(set(overrides) - set(OVERRIDE_KEYS))
    if unknown:
        raise ValueError(f"unknown overrides {unknown}; allowed keys are {list(OVERRIDE_KEYS)}.")
    checked: dict[str, float] = {}
    for key, value in overrides.items():
        if key in ("n_teachers", "teacher_size", "phase_length", "top_budget"):
            checked[key] = check_positive_int(value, f"overrides['{key}']")
        elif key == "threshold_gap":
            checked[key] = check_open_unit_interval(value, "overrides['threshold_gap']")
        else:
            checked[key] = check_positive_finite(value, f"overrides['{key}']")
    if mode == "paper":
        voiding = sorted(set(checked) & set(SIMULATION_ONLY_KEYS))
        if voiding:
            raise PrivacyParameterError(
                f"overrides {voiding} change the privacy proof's own constants (the sub-sampling "
                "denominator m, the BT epsilon'); they are allowed only with mode='simulation'."
            )
    return checked


def _as_column_if_1d(X):
    """A 1-D array-like becomes one column; DataFrames and 2-D inputs are left as they are."""
    if hasattr(X, "iloc"):
        return X
    X = np.asarray(X)
    return X.reshape(-1, 1) if X.ndim == 1 else X


class GenericBBLClassifier(_EverlastingStream):
    """GenericBBL, the private everlasting predictor of Naor, Nissim, Stemmer & Yan (2023).

    A faithful reference implementation of the paper's Algorithm GenericBBL
    (spec-001 §2). ``fit`` keeps a random sub-sample ``S_1`` of the training set
    (ratio ``epsilon / m``, ``m = 3 + e^(epsilon + 4)``) and trains ``T_1``
    teachers by ERM on disjoint blocks of ``lambda_1`` rows. Each query row is
    answered by BetweenThresholds (BT) on the fraction of teachers voting 1,
    with thresholds ``1/2 -+ alpha_i``: below answers ``classes[0]``, above or
    between (TOP) answers ``classes[1]``. A phase lasts ``R_i`` queries; at its
    end LabelBoost relabels a secret sub-sample of the phase's queries (ratio
    ``epsilon / m``) with one exponential-mechanism draw of a dichotomy of the
    class, scored on a secret sub-sample of the phase's labelled pool, and the
    next phase's teachers are trained on the relabelled queries, with
    ``alpha_{i+1} = alpha_i / 2`` and ``beta_{i+1} = beta_i / 2``. The
    ``c_i``-th TOP of a phase halts the predictor for good
    (:class:`PredictorHaltedError`); halting is the algorithm's only failure.

    **Privacy guarantee** (``mode="paper"``; Theorem 5.1, Claims E.5 and E.6).
    Neighbouring inputs differ by *substitution* of one training row, or of one
    query, in the privacy game of the paper's Figure 1 (the adversary chooses
    the queries adaptively and sees every answer except the one to the
    differing query). The whole unbounded transcript of answers, halting
    included, is ``(epsilon, delta)``-DP for every training row: phase 1's
    MultiBT is ``(1, delta)``-DP in the teachers (Observation 2, Claim D.1:
    ``c_1`` instances at ``eps'_1 = 1/(3 sqrt(c_1 ln(2/delta)))``,
    ``delta'_1 = delta / (2 c_1)``, each private by Lemma C.3 because the gap
    condition holds), LabelBoost's exponential mechanism on the sub-sampled
    ``Shat_1`` adds ``epsilon`` (Claim 2.7, Lemma C.1), and sub-sampling
    ``S_1`` from ``S`` at ratio ``epsilon / m`` brings the total ``(epsilon + 1,
    delta)`` down to ``(epsilon, delta)``; later phases are post-processing.
    A query of phase ``i`` can reach the LabelBoost of phase ``i`` (if its slot
    is kept), one teacher of phase ``i + 1`` and ``Shat_{i+1}``: Lemma C.1 on an
    ``(epsilon + 1, delta)`` mechanism gives ``(epsilon + 4, 4 e delta)``, and
    the ``epsilon / m`` sub-sample of the phase's queries brings it to
    ``(epsilon, delta)``. **Known gap** (spec-001 §2.9): whether the differing
    query itself hit TOP changes the TOP count (hence *when* the predictor
    halts) and whether BT's threshold noise was redrawn; Claim E.6 treats the
    other answers of its phase as identically distributed, which they are not.
    Query privacy is therefore proven across phases but not inside a phase: an
    adversary who can drive the predictor to its halt can detect a TOP on the
    hidden query. At the paper's constants (``c_i`` about 1e27) the attack is
    theoretical; with scaled-down sizes it is cheap. Use
    :class:`PrivateEverlastingClassifier` when within-phase query privacy
    matters. ``epsilon = 1`` is the boundary of Theorem 5.1 (which asks
    ``epsilon < 1``); ``epsilon > 1`` is refused (Claim 2.7 needs
    ``epsilon <= 1``).

    **Accuracy** (paper mode, i.i.d. queries, realizable labels): every
    hypothesis of the unbounded run has error at most ``6 alpha`` with
    probability ``1 - 4 beta``. The price is data: about ``3.6e25`` labelled
    rows for thresholds at ``alpha = beta = 0.05, delta = 1e-6``
    (:func:`genericbbl_plan`), so ``mode="paper"`` in practice computes the
    schedule and raises :class:`InsufficientSampleError`. Only a fraction
    ``epsilon / m`` (0.66% at ``epsilon = 1``) of the training set, and of each
    phase's queries, is used: that is the privacy amplification.

    **Simulation mode** (``mode="simulation"``) runs the same algorithm with
    the scaled-down sizes in ``overrides`` and **no privacy guarantee**
    (``privacy_guarantee_`` is None and a :class:`~skprivpred.PrivacyWarning`
    says so): for studying the algorithm, never for private data.

    The teachers, the BT noise, the sub-samples, the buffered queries and the
    vote fractions are secret; ``predict_proba`` and ``decision_function`` are
    not offered. Copying or pickling a fitted predictor forks its stream and
    voids the guarantee (P13); refitting on the same data composes privacy loss.
    The BT threshold noise is a floating-point Laplace draw (held secret; only
    labels are released, drawn exactly from their closed-form law), a known
    limitation (Mironov 2012).

    Parameters
    ----------
    hypothesis_class : "thresholds", ThresholdClass or FiniteHypothesisClass, default="thresholds"
        The concept class ``C``, with exact ERM and LabelBoost. ``"thresholds"``
        is ``ThresholdClass(direction="increasing")``.
    epsilon : float, default=1.0
        Privacy parameter for every training row and query, in (0, 1] in paper mode.
    delta : float, default=1e-6
        Privacy parameter, below 1/16 in paper mode.
    alpha : float, default=0.01
        Accuracy parameter (error guarantee ``6 alpha``), below 1/16 in paper mode.
    beta : float, default=0.01
        Confidence parameter (failure probability ``4 beta``), below 1/16 in paper mode.
    vc_dim : int, default=None
        VC dimension ``d`` of the class; ``None`` takes 1 for thresholds and
        ``max(1, floor(log2 K))`` for ``K`` finite hypotheses (an upper bound).
    mode : {"paper", "simulation"}, default="paper"
        ``"paper"``: the schedule of spec-001 §2.1 and the stated guarantee.
        ``"simulation"``: scaled-down sizes, no guarantee.
    overrides : dict, default=None
        Sizes replacing the paper's formulas, the same in every phase:
        ``n_teachers`` (T), ``teacher_size`` (lambda), ``phase_length`` (R),
        ``top_budget`` (c), ``threshold_gap`` (t_u - t_l), and, in simulation
        mode only, ``m`` and ``bt_epsilon`` (eps'). Quantities not given follow
        the formulas of spec-001 §2.1 from the given ones (``c = ceil(64
        alpha_i R)``, gap ``2 alpha_i``, ``delta' = delta / (2c)``); in
        simulation mode the defaults are ``n_teachers=200, teacher_size=20,
        phase_length=4 * 200 * 20, m=2, bt_epsilon=1`` (spec-001 §4.3(5)). In paper
        mode, overrides of the sizes keep the privacy proof (not the accuracy
        proof) when the BT gap condition holds; otherwise
        :class:`PrivacyParameterError` is raised.
    log_base : float, default=2
        Base of the paper's ``log`` (spec-001 P2; 2 is conservative).
    random_state : int, Generator or None, default=None
        Seeds the fit stream (sub-samples, partitions) and the query stream
        (BT and LabelBoost noise). ``None`` (OS entropy) is the only safe
        choice on private data: a known seed voids the guarantee.
    classes : array-like of two labels, default=(0, 1)
        The public label set; ``classes[1]`` is the label of ``1[x >= t]``.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        The public label set.
    n_features_in_ : int
        Number of features of ``X`` (1 for thresholds and prediction matrices).
    privacy_guarantee_ : tuple of float or None
        ``(epsilon, delta)`` for every training row and every query over the
        unbounded stream (within a phase, see the known gap), or ``None`` in
        simulation mode.
    privacy_scope_ : str
        What ``privacy_guarantee_`` covers.
    required_samples_ : int
        Training rows the schedule needs.
    phase_, queries_in_phase_, phase_schedule_, status_
        The stream's position, the sizes of each phase started so far and
        ``"active"``/``"halted"`` (read-only, data-independent but for the
        halt, which is observable anyway).

    References
    ----------
    M. Naor, K. Nissim, U. Stemmer and C. Yan. Private Everlasting Prediction.
    NeurIPS 2023 (arXiv:2305.09579v1).

    Examples
    --------
    >>> import numpy as np
    >>> from skprivpred.everlasting import GenericBBLClassifier, genericbbl_plan
    >>> f"{genericbbl_plan(1.0, 1e-6, 0.05, 0.05, 1)['n']:.1e}"
    '3.6e+25'
    >>> rng = np.random.default_rng(0)
    >>> x = rng.random(8000); y = (x >= 0.3).astype(int)
    >>> clf = GenericBBLClassifier(alpha=0.05, beta=0.05, mode="simulation", random_state=0)
    >>> import warnings
    >>> with warnings.catch_warnings():  # the simulation-mode PrivacyWarning
    ...     warnings.simplefilter("ignore")
    ...     clf = clf.fit(x, y)
    >>> clf.predict(rng.random(5)).shape
    (5,)
    """

    def __init__(
        self,
        hypothesis_class: str | ThresholdClass | FiniteHypothesisClass = "thresholds",
        epsilon: float = 1.0,
        delta: float = 1e-6,
        alpha: float = 0.01,
        beta: float = 0.01,
        vc_dim: int | None = None,
        mode: str = "paper",
        overrides: dict | None = None,
        log_base: float = LOG_BASE,
        random_state: RandomStateLike = None,
        classes: VectorLike = (0, 1),
    ) -> None:
        self.hypothesis_class = hypothesis_class
        self.epsilon = epsilon
        self.delta = delta
        self.alpha = alpha
        self.beta = beta
        self.vc_dim = vc_dim
        self.mode = mode
        self.overrides = overrides
        self.log_base = log_base
        self.random_state = random_state
        self.classes = classes

    def _make_schedule(self, hclass) -> _GenericBBLSchedule:
        """Validate the parameters and build the public schedule (no data involved)."""
        mode = _check_mode(self.mode)
        epsilon, delta, alpha, beta = _check_paper_parameters(
            self.epsilon, self.delta, self.alpha, self.beta, paper=mode == "paper"
        )
        overrides = _check_overrides(self.overrides, mode)
        base = check_positive_finite(self.log_base, "log_base")
        if base <= 1.0:
            raise ValueError(f"log_base must be > 1, got {self.log_base!r}.")
        vc_dim = (
            check_positive_int(self.vc_dim, "vc_dim", allow_none=True) or hclass.default_vc_dim()
        )
        schedule = _GenericBBLSchedule(
            epsilon, delta, alpha, beta, vc_dim, mode=mode, overrides=overrides, base=base
        )
        first = schedule.phase(1)
        if first.labelled_size > first.pool_size or first.unlabelled_size > first.phase_length:
            raise ValueError(
                f"the sub-sampling ratio epsilon / m = {epsilon / schedule.m!r} exceeds 1; pass "
                "overrides['m'] >= epsilon."
            )
        if first.labelled_size < 1:
            raise PhaseDataError(
                "LabelBoost would get no labelled example (floor(epsilon * |S_i| / m) = 0); "
                "increase n_teachers or teacher_size."
            )
        schedule.check_phase(first, schedule.phase(2))
        return schedule

    def fit(self, X: MatrixLike, y: VectorLike, **fit_params: Any) -> Self:
        """Keep the ``epsilon / m`` sub-sample ``S_1`` and train phase 1's teachers.

        Every call starts a new predictor (refitting on the same data composes
        privacy loss). Nothing is released.

        Parameters
        ----------
        X : array-like of shape (n_samples,) or (n_samples, n_features)
            Training points: one value per row for thresholds, one domain index
            per row for a prediction matrix, rows for callables. No NaN or infinity.
        y : array-like of shape (n_samples,)
            Labels in ``classes``.
        **fit_params : dict
            Not supported (``sample_weight`` is refused).

        Returns
        -------
        self : GenericBBLClassifier
            The fitted predictor.

        Raises
        ------
        InsufficientSampleError
            If ``n_samples`` is below the schedule's requirement (carried as
            ``required_samples``).
        PrivacyParameterError
            For parameters outside Theorem 5.1's range in paper mode, or a
            failing gap condition.
        PhaseDataError
            If a phase's query sub-sample cannot fill the next pool (Claim D.6).
        """
        reject_fit_params(self, fit_params)
        hclass = _resolve_hypothesis_class(self.hypothesis_class)
        schedule = self._make_schedule(hclass)
        with self._unchanged_on_error():
            X_checked, y = validate_data(
                self, _as_column_if_1d(X), y, reset=True, dtype=None, ensure_all_finite=True
            )
            points = hclass.prepare(X_checked)
            classes, labels = self._validate_labels(y)
            required = schedule.required_samples()
            if labels.size < required:
                raise InsufficientSampleError(
                    f"{type(self).__name__} in mode={schedule.mode!r} needs at least {required} "
                    f"training rows (the first pool lambda_1 * T_1 = {schedule.phase(1).pool_size} "
                    f"is a fraction epsilon / m of them), got n_samples={labels.size}. See "
                    "genericbbl_plan, or use mode='simulation' (no guarantee).",
                    required_samples=required,
                    n_samples=labels.size,
                )
            if schedule.mode == "simulation":
                warnings.warn(
                    "GenericBBLClassifier(mode='simulation') uses scaled-down sizes: NO privacy "
                    "guarantee holds. Do not use it on private data.",
                    PrivacyWarning,
                    stacklevel=2,
                )
            fit_rng = self._start_streams()
            first = schedule.phase(1)
            kept = fit_rng.choice(labels.size, size=first.pool_size, replace=False)
            self._hclass, self._schedule, self._fit_rng = hclass, schedule, fit_rng
            self._state: dict[str, Any] = {"history": [], "status": STATUS_ACTIVE}
            self._start_phase(first, points[kept], labels[kept])
            self.classes_ = classes
            self.required_samples_ = required
            paper = schedule.mode == "paper"
            self.privacy_guarantee_ = (schedule.epsilon, schedule.delta) if paper else None
            self.privacy_scope_ = (
                "every training row and every query, for the whole unbounded stream; inside a "
                "query's own phase the BetweenThresholds state is not covered (spec-001 §2.9)"
                if paper
                else "none: simulation mode"
            )
        return self

    # -- phases ------------------------------------------------------------------------------
    def _start_phase(self, params: GenericBBLPhase, points: np.ndarray, labels: np.ndarray) -> None:
        """Partition the pool, train teachers by ERM, start MultiBT, pre-draw the sub-samples."""
        rng = self._fit_rng
        order = rng.permutation(params.pool_size)
        blocks = (params.n_teachers, params.teacher_size)
        teachers = self._hclass.erm(
            points[order].reshape(blocks + points.shape[1:]), labels[order].reshape(blocks)
        )
        bt = params.between_thresholds()
        labelled = rng.choice(params.pool_size, size=params.labelled_size, replace=False)
        slots = np.sort(rng.choice(params.phase_length, size=params.unlabelled_size, replace=False))
        self._start_phase_state(params, bt)
        self._state.update(
            teachers=teachers,
            labelled_points=points[labelled],
            labelled_labels=labels[labelled],
            kept_slots=slots,
            kept_queries=[],
        )

    def _next_phase(self) -> None:
        """LabelBoost on (Shat_i, Dhat_i), then phase i+1 on a sub-sample of relabelled Dhat_i."""
        state, schedule = self._state, self._schedule
        following = schedule.phase(state["params"].phase + 1)
        schedule.check_phase(following, schedule.phase(following.phase + 1))
        unlabelled = np.concatenate(state["kept_queries"])
        _, new_labels = label_boost(
            self._hclass,
            state["labelled_points"],
            state["labelled_labels"],
            unlabelled,
            self._query_stream.rng,
        )
        kept = self._fit_rng.choice(len(unlabelled), size=following.pool_size, replace=False)
        self._start_phase(following, unlabelled[kept], new_labels[kept].astype(np.intp))

    # -- queries ----------------------------------------------------------------------------
    def _prepare_queries(self, X: MatrixLike) -> np.ndarray:
        X_checked = validate_data(
            self, _as_column_if_1d(X), reset=False, dtype=None, ensure_all_finite=True
        )
        return self._hclass.prepare(X_checked)

    def _answer_block(self, points: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        fraction = self._hclass.vote_fraction(self._state["teachers"], points)
        outcomes = self._state["bt"].answer(fraction, rng)
        return (outcomes != BT_BELOW).astype(np.intp)  # TOP answers 1, like R (P7)

    def _record(self, points: np.ndarray, answers: np.ndarray, first_slot: int) -> None:
        slots = self._state["kept_slots"]
        lo, hi = np.searchsorted(slots, [first_slot, first_slot + answers.size])
        if hi > lo:
            self._state["kept_queries"].append(points[slots[lo:hi] - first_slot])

    # -- non-private diagnostics (tests only) -------------------------------------------------
    def _vote_fraction(self, X) -> np.ndarray:
        """Teachers' vote fractions. NOT PRIVATE: leaks the teachers; consumes nothing."""
        return self._hclass.vote_fraction(self._state["teachers"], self._prepare_queries(X))


class PrivateEverlastingClassifier(_EverlastingStream):
    """Practical private everlasting prediction with any scikit-learn classifier (spec-001 §3.3).

    Phase 1 trains ``n_teachers`` clones of ``base_estimator`` on disjoint random
    blocks of the training set. Each query row is answered on its own by a
    noisy teacher vote: with ``v`` the number of teachers voting ``classes[1]``,
    the answer is ``classes[1]`` iff ``v + N(0, sigma^2) >= T / 2``, drawn
    exactly with probability ``Phi((v - T/2) / sigma)`` (one uniform per row; the
    vote never leaves the estimator). A phase lasts ``phase_length`` queries,
    a public constant; then the next phase's teachers are trained, on disjoint
    random blocks of that phase's queries, labelled with the answers that were
    released. This is not the paper's algorithm (no LabelBoost, no
    BetweenThresholds by default): it keeps the paper's privacy notion at a
    practical size and gives up its accuracy theorem.

    **Privacy guarantee.** Neighbouring inputs differ by substitution of one
    training row or of one query, in the privacy game of the paper's Figure 1
    (adaptive queries; every answer is seen except the one to the differing
    query). For every training row and every query, the whole unbounded stream
    of answers is ``(epsilon, delta)``-DP. Proof: with ``rho = (sqrt(ln(1/delta)
    + epsilon) - sqrt(ln(1/delta)))^2`` and ``sigma = sqrt(R / (2 rho))``, each
    answer is the Gaussian mechanism on a vote count of sensitivity 1 (the
    partition is data-independent, so one changed row changes one teacher and
    moves ``v`` by at most 1), hence ``rho / R``-zCDP; the ``R`` answers of a
    phase, to adaptively chosen queries, compose to ``rho``-zCDP, which implies
    ``(epsilon, delta)``-DP (Bun & Steinke 2016). A *training row* reaches only
    phase 1's teachers; everything after phase 1 is computed from phase 1's
    released answers and the adversary's own queries, so it is post-processing.
    A *query* of phase ``i`` reaches its own answer (hidden from the adversary
    in the game), and, through the pool of phase ``i + 1`` where it appears
    with that answer as its label, one teacher of phase ``i + 1``: the ``R``
    answers of phase ``i + 1`` are ``(epsilon, delta)``-DP in it, and all later
    phases are post-processing of those answers and the adversary's queries.
    The noise of each answer is independent and no state depends on the answer
    values, so the other answers of its own phase have the same law in both
    worlds (the within-phase gap of :class:`GenericBBLClassifier`, spec-001
    §2.9, does not arise); the phase length is public, so nothing leaks through
    timing of the schedule. Every individual pays ``(epsilon, delta)`` once,
    for an unbounded run: phases never compose for one individual because each
    phase is fed fresh queries.

    With ``aggregator="between_thresholds"`` each phase instead runs MultiBT
    (thresholds ``1/2 -+ threshold_gap/2``, ``top_budget`` TOPs, instances at
    the ``(eps', delta')`` whose composition is ``(epsilon, delta)``, and the gap
    condition checked): the guarantee holds for training rows and for queries
    across phases, but, as in GenericBBL, not for a query's effect on its own
    phase's BT state (the TOP count and the halt; spec-001 §2.9). The
    predictor halts at the ``top_budget``-th TOP of a phase.

    **Lost:** the everlasting PAC guarantee and the VC-based sizing. Nothing
    projects the pools back onto a concept class, so errors can compound from
    phase to phase when the teachers are under-provisioned (spec-001 §3.3:
    with ``lambda = 20`` rows per teacher, ``T = 32000`` keeps 0.7% error per
    phase on 1-D thresholds, ``T = 8000`` drifts from 4.5% to 11.9%). Size ``T``
    with :func:`practical_plan`. Utility assumes i.i.d. queries: queries become
    training data, so an adversary can poison accuracy (never privacy).

    Votes, teachers and buffered queries are secret; ``predict_proba`` and
    ``decision_function`` are not offered. Copying or pickling a fitted
    predictor forks its stream and voids the guarantee; refitting on the same
    data composes privacy loss.

    Parameters
    ----------
    base_estimator : classifier
        The teacher, cloned once per block (data-fitted preprocessing belongs
        inside it, e.g. a :class:`~sklearn.pipeline.Pipeline`). A block with
        one label gets a constant teacher. A teacher whose ``fit`` raises (for
        example :class:`~sklearn.discriminant_analysis.QuadraticDiscriminantAnalysis`
        on a block where a class has one row) becomes a constant teacher that
        votes ``classes[0]``, silently: whether a fit fails depends on the
        block's rows, so the failure itself must not reach the caller (in later
        phases the blocks hold released answers to queries). Check that the
        teacher fits at all on data of the expected size before deploying.
    epsilon : float, default=1.0
        Privacy parameter for every training row and query, > 0.
    delta : float, default=1e-6
        Privacy parameter, in (0, 1).
    n_teachers : int, default=None
        ``T``, the same in every phase. ``None``: ``ceil(3 sqrt(n / (2 rho)) / 0.4)``
        for ``n`` training rows, the sizing rule of :func:`practical_plan`
        (``n`` is public under substitution), at most ``n``.
    phase_length : int, default=None
        ``R``, queries per phase, >= ``n_teachers``. ``None``:
        ``floor(n / T) * T``, exactly enough examples for the next phase.
    aggregator : {"gaussian", "between_thresholds"}, default="gaussian"
        The per-query mechanism.
    top_budget : int, default=None
        TOPs per phase for ``"between_thresholds"``; ``None`` takes the largest
        budget for which the gap condition holds.
    threshold_gap : float, default=0.25
        ``t_u - t_l`` for ``"between_thresholds"``, in (0, 1).
    random_state : int, Generator or None, default=None
        Seeds the fit stream (partitions, teacher seeds) and the query stream
        (the answers' noise). ``None`` (OS entropy) is the only safe choice on
        private data.
    classes : array-like of two labels, default=(0, 1)
        The public label set.
    n_jobs : int, default=None
        joblib jobs for the teacher fits (any joblib backend).

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        The public label set.
    n_features_in_ : int
        Number of features seen during ``fit``.
    n_teachers_ : int
        ``T``.
    noise_sigma_ : float or None
        Standard deviation of the vote noise (Gaussian aggregator).
    privacy_guarantee_ : tuple of float
        ``(epsilon, delta)``.
    privacy_scope_ : str
        What ``privacy_guarantee_`` covers.
    phase_, queries_in_phase_, phase_schedule_, status_
        The stream's position, the sizes of each phase started so far and
        ``"active"``/``"halted"`` (read-only).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.tree import DecisionTreeClassifier
    >>> from skprivpred.everlasting import PrivateEverlastingClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.random((4000, 1)); y = (X[:, 0] >= 0.3).astype(int)
    >>> clf = PrivateEverlastingClassifier(
    ...     DecisionTreeClassifier(max_depth=1), epsilon=4.0, n_teachers=200, random_state=0
    ... ).fit(X, y)
    >>> clf.predict(rng.random((6000, 1))).shape  # crosses a phase boundary
    (6000,)
    >>> clf.phase_
    2
    """

    #: Index in the public label set of the vote of a teacher whose fit raised.
    _teacher_fallback: int | None = 0

    def __init__(
        self,
        base_estimator: BaseEstimator,
        epsilon: float = 1.0,
        delta: float = 1e-6,
        n_teachers: int | None = None,
        phase_length: int | None = None,
        aggregator: str = "gaussian",
        top_budget: int | None = None,
        threshold_gap: float = 0.25,
        random_state: RandomStateLike = None,
        classes: VectorLike = (0, 1),
        n_jobs: int | None = None,
    ) -> None:
        self.base_estimator = base_estimator
        self.epsilon = epsilon
        self.delta = delta
        self.n_teachers = n_teachers
        self.phase_length = phase_length
        self.aggregator = aggregator
        self.top_budget = top_budget
        self.threshold_gap = threshold_gap
        self.random_state = random_state
        self.classes = classes
        self.n_jobs = n_jobs

    def _check_parameters(self) -> dict:
        """Validate the constructor parameters (no data involved)."""
        if not (hasattr(self.base_estimator, "fit") and hasattr(self.base_estimator, "predict")):
            raise TypeError(
                "base_estimator must be a scikit-learn classifier with fit and predict, got "
                f"{type(self.base_estimator).__name__}."
            )
        if self.aggregator not in ("gaussian", "between_thresholds"):
            raise ValueError(
                f"aggregator must be 'gaussian' or 'between_thresholds', got {self.aggregator!r}."
            )
        return {
            "epsilon": check_epsilon(self.epsilon),
            "delta": check_open_unit_interval(self.delta, "delta"),
            "n_teachers": check_positive_int(self.n_teachers, "n_teachers", allow_none=True),
            "phase_length": check_positive_int(self.phase_length, "phase_length", allow_none=True),
            "top_budget": check_positive_int(self.top_budget, "top_budget", allow_none=True),
            "threshold_gap": check_open_unit_interval(self.threshold_gap, "threshold_gap"),
        }

    def _phase_sizes(self, checked: dict, n_samples: int) -> tuple[int, int]:
        """``(T, R)`` from the parameters and the public number of training rows."""
        n_teachers = checked["n_teachers"]
        if n_teachers is None:
            n_teachers = default_n_teachers(n_samples, checked["epsilon"], checked["delta"])
        if n_teachers > n_samples:
            raise ValueError(
                f"n_teachers={n_teachers} is larger than the number of training rows "
                f"n_samples={n_samples}; each teacher needs at least one row."
            )
        if n_samples // n_teachers < 2:
            warnings.warn(
                f"{n_teachers} teachers leave fewer than 2 rows per teacher "
                f"(n_samples={n_samples}); "
                "the answers will be close to uniform. See practical_plan for the rows needed.",
                UserWarning,
                stacklevel=3,
            )
        phase_length = checked["phase_length"]
        if phase_length is None:
            phase_length = (n_samples // n_teachers) * n_teachers
        if phase_length < n_teachers:
            raise ValueError(
                f"phase_length={phase_length} must be at least n_teachers={n_teachers}: each next "
                "teacher trains on at least one of the phase's queries."
            )
        return n_teachers, phase_length

    def _bt_parameters(self, checked: dict, n_teachers: int) -> tuple[int, float, float]:
        """``(c, eps', delta')`` of the BT aggregator; raises if the gap condition fails."""
        epsilon, delta, gap = checked["epsilon"], checked["delta"], checked["threshold_gap"]
        top_budget = checked["top_budget"]
        if top_budget is None:
            top_budget = largest_top_budget(epsilon, delta, n_teachers, gap)
        eps_prime, delta_prime = practical_bt_privacy(epsilon, delta, max(top_budget, 1))
        required = between_thresholds_gap(eps_prime, delta_prime, 1.0 / n_teachers)
        if top_budget == 0 or required > gap:
            needed = ceil_int(n_teachers * required / gap)
            raise PrivacyParameterError(
                f"the BetweenThresholds gap condition fails: threshold_gap={gap!r} but "
                f"{max(top_budget, 1)} TOP(s) at epsilon={epsilon!r}, delta={delta!r} with "
                f"n_teachers={n_teachers} need a gap of {required!r}; use at least {needed} "
                "teachers, a smaller top_budget, a wider threshold_gap, or aggregator='gaussian'."
            )
        return top_budget, eps_prime, delta_prime

    def _params_for(self, phase: int, pool_size: int) -> PracticalPhase:
        base = self._phase_template
        return replace(
            base, phase=phase, pool_size=pool_size, teacher_size=pool_size // base.n_teachers
        )

    def fit(self, X: MatrixLike, y: VectorLike, **fit_params: Any) -> Self:
        """Train phase 1's teachers on disjoint random blocks of the training set.

        Every call starts a new predictor (refitting on the same data composes
        privacy loss). Nothing is released.

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame} of shape (n_samples, n_features)
            Training rows, passed to the teachers unchanged (no NaN or infinity).
        y : array-like of shape (n_samples,)
            Labels in ``classes``.
        **fit_params : dict
            Not supported (``sample_weight`` is refused).

        Returns
        -------
        self : PrivateEverlastingClassifier
            The fitted predictor.
        """
        reject_fit_params(self, fit_params)
        checked = self._check_parameters()
        with self._unchanged_on_error():
            X_checked, y = validate_data(
                self,
                X,
                y,
                reset=True,
                accept_sparse=["csr", "csc"],
                dtype=None,
                ensure_all_finite=True,
            )
            X = keep_frame(X, X_checked)
            classes, labels = self._validate_labels(y)
            n_samples = labels.size
            n_teachers, phase_length = self._phase_sizes(checked, n_samples)
            rho = zcdp_rho(checked["epsilon"], checked["delta"])
            if self.aggregator == "gaussian":
                template = PracticalPhase(
                    phase=1,
                    teacher_size=n_samples // n_teachers,
                    n_teachers=n_teachers,
                    pool_size=n_samples,
                    phase_length=phase_length,
                    noise_sigma=gaussian_vote_sigma(phase_length, rho),
                )
            else:
                top_budget, eps_prime, delta_prime = self._bt_parameters(checked, n_teachers)
                template = PracticalPhase(
                    phase=1,
                    teacher_size=n_samples // n_teachers,
                    n_teachers=n_teachers,
                    pool_size=n_samples,
                    phase_length=phase_length,
                    top_budget=top_budget,
                    threshold_gap=checked["threshold_gap"],
                    bt_epsilon=eps_prime,
                    bt_delta=delta_prime,
                )
            self._fit_rng = self._start_streams()
            self._phase_template = template
            self.classes_ = classes
            self._state: dict[str, Any] = {"history": [], "status": STATUS_ACTIVE}
            self._start_phase(template, X, labels)
            self.n_teachers_ = n_teachers
            self.noise_sigma_ = template.noise_sigma
            self.privacy_guarantee_ = (checked["epsilon"], checked["delta"])
            self.privacy_scope_ = (
                "every training row and every query, for the whole unbounded stream"
                if self.aggregator == "gaussian"
                else "every training row; every query through later phases, but not its effect on "
                "its "
                "own phase's BetweenThresholds state (spec-001 §2.9)"
            )
        return self

    # -- phases ------------------------------------------------------------------------------
    def _start_phase(self, params: PracticalPhase, X, labels: np.ndarray) -> None:
        """Fit one teacher per disjoint random block of the pool (joblib), and reset the phase."""
        parts = random_partition(params.pool_size, params.n_teachers, self._fit_rng)
        teachers = fit_teachers(
            clone(self.base_estimator),
            X,
            self.classes_[labels],
            labels,
            parts,
            self._fit_rng,
            self.n_jobs,
            fallback=self._teacher_fallback,
        )
        self._start_phase_state(params, params.between_thresholds())
        self._state.update(
            ensemble=TeacherEnsemble(teachers, self.classes_), queries=[], answers=[]
        )

    def _next_phase(self) -> None:
        """Train the next phase on this phase's queries labelled with their released answers."""
        state = self._state
        X_pool = concat_rows(state["queries"])
        labels = np.concatenate(state["answers"])
        params = self._params_for(state["params"].phase + 1, labels.size)
        self._start_phase(params, X_pool, labels)

    # -- queries ----------------------------------------------------------------------------
    def _prepare_queries(self, X: MatrixLike) -> MatrixLike:
        X_checked = validate_data(
            self, X, reset=False, accept_sparse=["csr", "csc"], dtype=None, ensure_all_finite=True
        )
        return keep_frame(X, X_checked)

    def _answer_block(self, X, rng: np.random.Generator) -> np.ndarray:
        votes = self._state["ensemble"].vote_counts(X)[:, 1]
        params = self._state["params"]
        if self._state["bt"] is not None:
            outcomes = self._state["bt"].answer(votes / params.n_teachers, rng)
            return (outcomes != BT_BELOW).astype(np.intp)
        return sample_categorical(self._gaussian_law(votes, params), rng)

    @staticmethod
    def _gaussian_law(votes: np.ndarray, params: PracticalPhase) -> np.ndarray:
        """``P(v + N(0, sigma^2) >= T/2)`` and its complement, each tail computed directly."""
        if params.noise_sigma is None:
            raise ValueError("the exact law in closed form exists for aggregator='gaussian' only.")
        z = (votes - 0.5 * params.n_teachers) / params.noise_sigma
        return np.stack([norm.sf(z), norm.cdf(z)], axis=1)

    def _record(self, X, answers: np.ndarray, first_slot: int) -> None:
        self._state["queries"].append(X)
        self._state["answers"].append(answers)

    # -- non-private diagnostics (tests only) -------------------------------------------------
    def _vote_counts(self, X) -> np.ndarray:
        """Teachers voting ``classes_[1]`` per row. NOT PRIVATE: leaks the teachers."""
        return self._state["ensemble"].vote_counts(self._prepare_queries(X))[:, 1]

    def _output_distribution(self, X) -> np.ndarray:
        """Exact answer law per row (Gaussian aggregator). NOT PRIVATE: leaks the votes."""
        return self._gaussian_law(self._vote_counts(X), self._state["params"])
