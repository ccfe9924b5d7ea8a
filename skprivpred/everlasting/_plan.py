"""Private everlasting prediction (Naor, Nissim, Stemmer & Yan, NeurIPS 2023).

An everlasting predictor answers an unbounded stream of queries, one label per
query, and keeps learning *from the queries*: every phase's teachers are
trained on the previous phase's queries, labelled by the predictor itself. The
guarantee covers every training row and every query, once, for the whole
stream: no budget runs out with time.

Two public estimators share one stream engine (:class:`_EverlastingStream`):

- :class:`GenericBBLClassifier`, the paper's Algorithm GenericBBL (Section 5)
  as written (subsample-and-aggregate teachers, BetweenThresholds with its
  halting budget, LabelBoost relabelling, privacy-amplifying sub-samples). At
  the paper's constants it needs about 1e25 labelled rows, so ``constants="paper"``
  mostly computes the schedule and says how much data is missing;
  ``constants="simulation"`` runs the same code with scaled-down sizes and no
  guarantee.
- :class:`PrivateEverlastingClassifier`, a practical variant (not in the
  paper): any scikit-learn teacher, an independent Gaussian noisy vote per
  query, and the next phase trained on the released answers (relabelled
  through the task's class when one is given), in phases that grow as the
  paper's do, private in the paper's sense (Definition 3.4, the game of
  Figure 1); :func:`practical_schedule` gives its public sizes.

Every parameter formula of Algorithm GenericBBL lives in this module's
"formulas" section, once; the estimators, :func:`genericbbl_plan` and the tests
all call it. BetweenThresholds itself is in :mod:`skprivpred.mechanisms`; every
conversion and composition between ``(epsilon, delta)`` and zCDP's ``rho`` is
in :mod:`skprivpred.accounting`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from numbers import Integral, Real
from typing import Any

import numpy as np
from scipy import sparse
from scipy.special import log_softmax
from scipy.stats import norm
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.utils import get_tags
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import check_is_fitted, validate_data

from skprivpred._base import (
    PrivatePredictorMixin,
    QueryPlan,
    answer,
    binary_only_message,
    finite_target_column,
    keep_frame,
    process_identity,
    resolve_binary_classes,
)
from skprivpred._dry_run import check_teachers_can_read
from skprivpred._isolation import (
    call_user_code,
    call_user_code_by_row,
    freeze_rows,
    handed_rows,
    user_code,
)
from skprivpred._teachers import TeacherEnsemble, concat_rows, fit_teachers, random_partition, take_rows
from skprivpred._typing import MatrixLike, RandomStateLike, Self, VectorLike
from skprivpred._warnings import warn_user
from skprivpred.accounting import (
    GuaranteeUnit,
    PrivacyAccountant,
    PrivacyGuarantee,
    advanced_composition_inverse,
    eps_of_rho,
    zcdp_rho,
)
from skprivpred.exceptions import (
    ForkedStateError,
    InsufficientSampleError,
    InvalidParameterError,
    PhaseDataError,
    PredictorHaltedError,
    PrivacyParameterError,
    PrivacyWarning,
)
from skprivpred.hypotheses import (
    FiniteHypothesisClass,
    LabelBoostCandidates,
    ThresholdClass,
    _positive_labels,
)
from skprivpred.mechanisms import (
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
from skprivpred.utils._deprecation import (
    DEPRECATED,
    deprecated_constraints,
    renamed_kwargs,
    renamed_param,
)
from skprivpred.utils._param_validation import (
    Data,
    HasMethods,
    Interval,
    StrOptions,
    UserCodeParam,
    validate_parameter_constraints,
)

__all__ = [
    "GenericBBLClassifier",
    "PrivateEverlastingClassifier",
    "genericbbl_plan",
    "practical_plan",
    "practical_schedule",
]

_POSITIVE = Interval(Real, 0, None, closed="neither")
_OPEN_UNIT = Interval(Real, 0, 1, closed="neither")
_POSITIVE_INT = Interval(Integral, 1, None, closed="left")
_LOG_BASE_RANGE = Interval(Real, 1, None, closed="neither")

# -- constants of Algorithm GenericBBL (Naor, Nissim, Stemmer & Yan 2023, Section 5) -----------
#: The paper's tau ("tau > 1.1 * 10^10"): the smallest value for which the BT gap
#: condition (Lemma C.3) holds in the first phases is 5e9-8.5e9 (worked out from
#: Claim D.9 at alpha = beta = 0.05, delta = 1e-6, base-2 logs).
TAU = 1.1e10
#: Queries per phase: R_i = 25600 |S_i| / epsilon (Claim D.6 needs the factor).
PHASE_QUERY_FACTOR = 25600
#: TOP budget per phase: c_i = 64 alpha_i R_i (Claim D.5).
TOP_BUDGET_FACTOR = 64
#: Epsilon of LabelBoost's exponential mechanism (score sensitivity 1).
LABELBOOST_EPSILON = 1.0
#: Theorem 5.1 needs alpha, beta, delta < 1/16 and (Claim 2.7) epsilon <= 1.
PAPER_PARAMETER_BOUND = 1.0 / 16.0

#: Scaled-down sizes of ``constants="simulation"`` for every key the caller does not
#: override: small enough that a run takes seconds, with no privacy guarantee.
#: ``phase_length`` defaults to 4 teacher pools.
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

#: Default sizing of the practical predictor: the vote margin, as a fraction of
#: the teachers, that the noise may not cross, and how many standard deviations
#: of noise that margin must cover.
PRACTICAL_MARGIN = 0.4
PRACTICAL_Z = 3.0
#: Default growth of the practical predictor's phases: ``R_{i+1} = ceil(g R_i)``
#: (the paper's phases grow about 11-fold, Section 5; see :func:`practical_schedule`).
PRACTICAL_GROWTH = 2.0
#: Share of a later phase's zCDP budget that pays for relabelling its pool through
#: the hypothesis class (bounded-range exponential mechanism, ``epsilon_r^2 / 8``).
RELABEL_RHO_SHARE = 0.1


# -- formulas of Algorithm GenericBBL (Section 5): the one place they are computed --------------
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
    return 3.0 + math.exp(epsilon + 4.0)


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
    """Public, data-independent sizes of one GenericBBL phase (Algorithm GenericBBL, step 3).

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
    """Public, data-independent sizes of one phase of the practical predictor.

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
    rho : float or None
        zCDP budget of the phase's answers (Gaussian aggregator).
    relabel_epsilon : float or None
        Epsilon of the exponential mechanism that relabelled this phase's
        pool through the hypothesis class (``None``: not relabelled).
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
    rho: float | None = None
    relabel_epsilon: float | None = None
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


def _check_paper_ranges(
    epsilon: float, delta: float, target_error: float, failure_probability: float
) -> None:
    """Theorem 5.1's ranges (its ``alpha, beta, delta < 1/16``) and Claim 2.7's ``epsilon <= 1``."""
    if epsilon > 1.0:
        raise PrivacyParameterError(
            f"epsilon must be <= 1 with constants='paper' (Claim 2.7, the sub-sampling step, "
            f"needs it), got epsilon={epsilon!r}."
        )
    checked = (
        ("target_error", target_error),
        ("failure_probability", failure_probability),
        ("delta", delta),
    )
    for name, value in checked:
        if value >= PAPER_PARAMETER_BOUND:
            raise PrivacyParameterError(
                f"{name} must be < 1/16 with constants='paper' (Theorem 5.1), got {name}={value!r}."
            )


class _GenericBBLSchedule:
    """The phase schedule of GenericBBL: a deterministic function of public parameters.

    ``constants="paper"`` follows Algorithm GenericBBL's formulas verbatim; overrides
    of sizes that the privacy proof does not use (``n_teachers``,
    ``teacher_size``, ``phase_length``, ``top_budget``, ``threshold_gap``) are
    allowed and keep the privacy proof (Claims E.5 and E.6 use only the BT gap
    condition of Lemma C.3, the per-instance ``(eps', delta')`` of Claim D.1 and
    the sub-sampling ratio ``epsilon / m``) provided the gap condition holds.
    ``constants="simulation"`` takes every size from the overrides, with the toy
    defaults of :data:`SIMULATION_DEFAULTS`, and skips the privacy checks.
    """

    def __init__(
        self, epsilon, delta, alpha, beta, vc_dim, *, constants, overrides, base=LOG_BASE, tau=TAU
    ):
        self.epsilon, self.delta, self.alpha, self.beta = epsilon, delta, alpha, beta
        self.vc_dim, self.constants, self.base, self.tau = vc_dim, constants, base, tau
        self.overrides = dict(overrides)
        simulated = constants == "simulation"
        self.m = (
            float(self.overrides.get("m", SIMULATION_DEFAULTS["m"]))
            if simulated
            else (amplification_denominator(epsilon))
        )

    def _sizes(self, alpha_i: float, beta_i: float) -> tuple[int, int]:
        """``(lambda_i, T_i)`` from the overrides or the paper's formulas (rounded up)."""
        if self.constants == "simulation":
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
        simulated = self.constants == "simulation"
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
        if self.constants == "paper" and not self.overrides:
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
        if self.constants == "paper" and params.threshold_gap < self.required_gap(params):
            raise PrivacyParameterError(
                f"the BetweenThresholds gap condition fails in phase {params.phase}: the threshold "
                f"gap is {params.threshold_gap!r} but Lemma C.3 needs at least "
                f"{self.required_gap(params)!r} with n_teachers={params.n_teachers}, "
                f"top_budget={params.top_budget}; use more teachers, a smaller top_budget or a "
                "wider threshold_gap (or constants='simulation', which has no guarantee)."
            )
        if params.unlabelled_size < next_params.pool_size:
            raise PhaseDataError(
                f"phase {params.phase} keeps {params.unlabelled_size} query slots for LabelBoost "
                f"(floor(epsilon * phase_length / m)) but phase {next_params.phase} needs "
                f"{next_params.pool_size} = teacher_size * n_teachers examples (Claim D.6); "
                "increase phase_length."
            )


@renamed_kwargs({"alpha": "target_error", "beta": "failure_probability"})
def genericbbl_plan(
    epsilon: float,
    delta: float,
    target_error: float,
    failure_probability: float,
    vc_dim: int,
    log_base: float = LOG_BASE,
    tau: float = TAU,
    phases: int = 3,
) -> dict:
    """The public schedule of GenericBBL and the data it needs (Algorithm GenericBBL, Section 5).

    Parameters
    ----------
    epsilon : float
        Privacy parameter, in (0, 1].
    delta : float
        Privacy parameter, in (0, 1/16).
    target_error : float
        Accuracy parameter (the paper's ``alpha``), in (0, 1/16). The
        guarantee is error ``6 target_error`` (Theorem 5.1).
    failure_probability : float
        Confidence parameter (the paper's ``beta``), in (0, 1/16). The
        guarantee fails with probability at most ``4 failure_probability``.
    vc_dim : int
        VC dimension of the class.
    log_base : float, default=2
        Base of the paper's ``log`` where it writes no base, > 1 (2 gives the
        larger, conservative value in every privacy condition).
    tau : float, default=1.1e10
        The paper's constant.
    phases : int, default=3
        Number of phases to list.

    Returns
    -------
    dict
        ``n`` (the paper's required ``|S|``, rounded up), ``required_samples``
        (the rows ``fit`` needs: ``n`` or ``ceil(m |S_1| / eps)`` if larger after
        rounding), ``m``, ``guarantee`` (``{"error": 6 target_error, "failure":
        4 failure_probability,
        "epsilon", "delta"}``), and ``phases``: one dict per phase with the
        fields of :class:`GenericBBLPhase` plus ``required_gap`` (Lemma C.3),
        ``gap_condition_holds``, ``next_pool_size`` and ``bt_composed`` (the
        Observation 2 composition of the phase's ``c_i`` instances, within
        ``(1, delta)`` by Claim D.1).

    Notes
    -----
    .. deprecated:: 0.4
        The keywords ``alpha`` and ``beta`` were renamed ``target_error`` and
        ``failure_probability`` in 0.4 and will be removed in 0.6.

    Examples
    --------
    >>> plan = genericbbl_plan(1.0, 1e-6, 0.05, 0.05, 1)
    >>> f"{plan['n']:.2e}", plan["phases"][0]["teacher_size"]
    ('3.65e+25', 3899)
    """
    validate_parameter_constraints(
        {
            "epsilon": [_POSITIVE],
            "delta": [_OPEN_UNIT],
            "target_error": [_OPEN_UNIT],
            "failure_probability": [_OPEN_UNIT],
            "vc_dim": [_POSITIVE_INT],
            "log_base": [_LOG_BASE_RANGE],
            "tau": [_POSITIVE],
            "phases": [_POSITIVE_INT],
        },
        locals(),
        caller_name="genericbbl_plan",
    )
    _check_paper_ranges(epsilon, delta, target_error, failure_probability)
    base = log_base
    schedule = _GenericBBLSchedule(
        epsilon,
        delta,
        target_error,
        failure_probability,
        vc_dim,
        constants="paper",
        overrides={},
        base=base,
        tau=tau,
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
        "n": ceil_int(
            paper_required_samples(
                epsilon, delta, target_error, failure_probability, vc_dim, base, tau
            )
        ),
        "required_samples": schedule.required_samples(),
        "m": schedule.m,
        "guarantee": {
            "error": 6 * target_error,
            "failure": 4 * failure_probability,
            "epsilon": epsilon,
            "delta": delta,
        },
        "phases": listed,
    }


# -- formulas of the practical predictor -------------------------------------------------------
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
    """Teachers and training rows that the practical everlasting predictor needs.

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
    validate_parameter_constraints(
        {
            "epsilon": [_POSITIVE],
            "delta": [_OPEN_UNIT],
            "teacher_size": [_POSITIVE_INT],
            "margin": [Interval(Real, 0, 1, closed="right")],
            "z": [_POSITIVE],
        },
        locals(),
        caller_name="practical_plan",
    )
    rho = zcdp_rho(epsilon, delta)
    n_teachers = ceil_int(z**2 * teacher_size / (2.0 * rho * margin**2))
    n_samples = teacher_size * n_teachers
    return {
        "rho": rho,
        "n_teachers": n_teachers,
        "n_samples": n_samples,
        "sigma": gaussian_vote_sigma(n_samples, rho),
        "teachers_per_row": n_teachers / teacher_size,
    }


def relabel_epsilon(epsilon: float, delta: float) -> float:
    """Epsilon of the relabelling exponential mechanism: ``sqrt(8 * share * rho)``.

    The mechanism is ``epsilon_r``-DP with bounded range ``epsilon_r``, hence
    ``epsilon_r^2 / 8``-zCDP (Cesar & Rogers 2021); with ``share =``
    :data:`RELABEL_RHO_SHARE` of ``rho = zcdp_rho(epsilon, delta)`` it leaves
    ``(1 - share) rho`` to the Gaussian votes of the phase trained on the pool.
    """
    return math.sqrt(8.0 * RELABEL_RHO_SHARE * zcdp_rho(epsilon, delta))


def practical_schedule(
    epsilon: float,
    delta: float,
    n_samples: int,
    *,
    n_teachers: int | None = None,
    phase_length: int | None = None,
    phase_growth: float = PRACTICAL_GROWTH,
    relabel: bool = False,
    phases: int = 4,
) -> list[dict]:
    """The public phase schedule of :class:`PrivateEverlastingClassifier`.

    A deterministic function of public facts only (the privacy parameters,
    the number of training rows, which is public under substitution, and the
    constructor parameters); the data never enter it. Phase ``i`` trains
    ``T_i`` teachers on a pool of ``N_i`` rows (``N_1 = n``, the training set;
    ``N_{i+1} = R_i``, the phase's queries with their released answers) and
    answers ``R_i`` queries with Gaussian vote noise ``sigma_i = sqrt(R_i / (2
    rho_i))``:

    - ``R_1 = phase_length``, default ``ceil(g n)``, and ``R_{i+1} = ceil(g
      R_i)`` with ``g = phase_growth``: every phase answers ``g`` times as many
      queries as its pool holds rows, so phases grow geometrically, as the
      paper's do (Naor, Nissim, Stemmer & Yan 2023, Section 5: ``|S_{i+1}| =
      lambda_{i+1} T_{i+1}`` with ``lambda_{i+1} = 2 lambda_i`` roughly);
    - ``T_1 = n_teachers``, default ``ceil(z sigma_1 / margin)`` (the noise is
      ``margin / z`` of the teachers, the rule of :func:`practical_plan`), at
      most ``n``; ``T_i = min(N_i, ceil(T_1 sigma_i / sigma_1))`` keeps that
      ratio in every phase;
    - ``rho_1 = rho = zcdp_rho(epsilon, delta)``; with relabelling, later
      phases have ``rho_i = (1 - RELABEL_RHO_SHARE) rho``.

    Because ``sigma_i`` grows like ``sqrt(R_i)`` while the pool grows like
    ``R_i`` itself, rows per teacher grow by ``sqrt(g rho_{i+1} / rho_i)`` from
    phase to phase (``sqrt(g)`` from phase 2 on): ``lambda_1 = (margin / z)
    sqrt(2 rho n / g)``, then more rows for every later teacher, which is
    what keeps a teacher's bias from compounding over the phases. The price
    is phase 1: at ``g = 1`` (constant phases, the rule of version 0.1) its
    teachers get ``sqrt(g)`` times more rows, and the later ones no more.

    Parameters
    ----------
    epsilon, delta : float
        The guarantee of every training row and every query.
    n_samples : int
        Training rows ``n``.
    n_teachers, phase_length : int, default=None
        ``T_1`` and ``R_1`` (``None``: the rule above).
    phase_growth : float, default=PRACTICAL_GROWTH
        ``g >= 1``.
    relabel : bool, default=False
        Whether later pools are relabelled through a hypothesis class.
    phases : int, default=4
        Number of phases to list.

    Returns
    -------
    list of dict
        One dict per phase: ``phase``, ``pool_size`` (``N_i``), ``n_teachers``,
        ``teacher_size`` (``floor(N_i / T_i)``), ``phase_length``, ``rho``,
        ``noise_sigma`` and ``relabel_epsilon`` (``None`` for phase 1 or
        without relabelling).

    Examples
    --------
    >>> [p["teacher_size"] for p in practical_schedule(4.0, 1e-6, 32561, phases=4)]
    [12, 17, 24, 34]
    >>> [p["teacher_size"] for p in practical_schedule(4.0, 1e-6, 32561, phase_growth=1.0)]
    [17, 17, 17, 17]
    """
    validate_parameter_constraints(
        {
            "epsilon": [_POSITIVE],
            "delta": [_OPEN_UNIT],
            "n_samples": [_POSITIVE_INT],
            "n_teachers": [_POSITIVE_INT, None],
            "phase_length": [_POSITIVE_INT, None],
            "phase_growth": [Interval(Real, 1, None, closed="left")],
            "relabel": ["boolean"],
            "phases": [_POSITIVE_INT],
        },
        locals(),
        caller_name="practical_schedule",
    )
    return [
        asdict(params)
        for params in _practical_phases(
            float(epsilon),
            float(delta),
            int(n_samples),
            n_teachers,
            phase_length,
            float(phase_growth),
            bool(relabel),
            int(phases),
        )
    ]


def _practical_phases(
    epsilon: float,
    delta: float,
    n_samples: int,
    n_teachers: int | None,
    phase_length: int | None,
    growth: float,
    relabel: bool,
    phases: int,
) -> list[PracticalPhase]:
    """The first ``phases`` phases of the practical schedule (see :func:`practical_schedule`)."""
    rho = zcdp_rho(epsilon, delta)
    later_rho = (1.0 - RELABEL_RHO_SHARE) * rho if relabel else rho
    r_eps = relabel_epsilon(epsilon, delta) if relabel else None
    length = phase_length if phase_length is not None else ceil_int(growth * n_samples)
    sigma_1 = gaussian_vote_sigma(length, rho)
    first_teachers = n_teachers
    if first_teachers is None:
        first_teachers = ceil_int(PRACTICAL_Z * sigma_1 / PRACTICAL_MARGIN)
    first_teachers = max(1, min(int(first_teachers), n_samples))
    listed: list[PracticalPhase] = []
    pool = n_samples
    for i in range(1, phases + 1):
        if i > 1:
            pool, length = length, ceil_int(growth * length)
        phase_rho = rho if i == 1 else later_rho
        sigma = gaussian_vote_sigma(length, phase_rho)
        teachers = first_teachers if i == 1 else ceil_int(first_teachers * sigma / sigma_1)
        teachers = max(1, min(teachers, pool))
        listed.append(
            PracticalPhase(
                phase=i,
                teacher_size=pool // teachers,
                n_teachers=teachers,
                pool_size=pool,
                phase_length=int(length),
                noise_sigma=sigma,
                rho=phase_rho,
                relabel_epsilon=None if i == 1 else r_eps,
            )
        )
    return listed


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
    # Observation 2: c instances at (eps', delta / (2c)) compose, with slack c delta' = delta / 2,
    # to (advanced_composition_epsilon(eps', c, delta / 2), delta).
    delta_advanced = delta / (2.0 * top_budget)
    advanced_eps = advanced_composition_inverse(epsilon, top_budget, top_budget * delta_advanced)
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


#: The library's classes that the everlasting predictors take as they are (exact types: a
#: subclass may compute anything from the pools its methods are handed).
LIBRARY_CLASSES = (ThresholdClass, FiniteHypothesisClass)

#: The methods of a user hypothesis class in the row-wise protocol (see the Notes of
#: :class:`~skprivpred.hypotheses.HypothesisClass`): one teacher's block per ERM call,
#: one point per label call.
ROWWISE_CLASS_METHODS = ("erm_block", "labels_at")

#: The declared constraint of ``hypotheses`` (both everlasting predictors).
_VOTE_RELEASE = [StrOptions({"gaussian", "between_thresholds"})]
_CONSTANTS = [StrOptions({"paper", "simulation"})]
_HYPOTHESIS_CLASS_CONSTRAINTS: list = [
    StrOptions({"thresholds"}),
    *(UserCodeParam(cls, kind="hypothesis_class") for cls in LIBRARY_CLASSES),
    UserCodeParam(HasMethods(ROWWISE_CLASS_METHODS), kind="hypothesis_class"),
]


def _refuse_hypothesis_class(hypothesis_class: Any, owner: str, why: str) -> InvalidParameterError:
    return InvalidParameterError(
        f"The 'hypotheses' parameter of {owner} must be 'thresholds', a ThresholdClass or "
        "a FiniteHypothesisClass (exactly those classes, not subclasses), or a class of your own "
        "in the row-wise protocol: an int n_hypotheses and the methods erm_block(points, labels) "
        "(one teacher's block per call) and labels_at(point) (one point per call); see "
        f"skprivpred.hypotheses.HypothesisClass. Got {hypothesis_class!r} (of type "
        f"{type(hypothesis_class).__name__}) instead: {why}"
    )


def _resolve_hypothesis_class(hypothesis_class: Any, owner: str = "the predictor") -> Any:
    """The class the predictor uses: ``"thresholds"`` is ``ThresholdClass()``.

    The library's classes (exact types) are used as given; a class of the
    row-wise protocol is wrapped in :class:`_RowwiseClass` (pickled once
    here, before anything is read or charged); anything else is refused with
    :class:`~skprivpred.exceptions.InvalidParameterError`.
    """
    if isinstance(hypothesis_class, str):
        return ThresholdClass()
    if isinstance(hypothesis_class, _RowwiseClass) or type(hypothesis_class) in LIBRARY_CLASSES:
        return hypothesis_class
    if all(callable(getattr(hypothesis_class, m, None)) for m in ROWWISE_CLASS_METHODS):
        return _RowwiseClass(hypothesis_class, owner)
    why = (
        "a subclass of a library class may compute anything from the whole pools its methods "
        "are handed"
        if isinstance(hypothesis_class, LIBRARY_CLASSES)
        else "its methods would be handed whole pools of protected rows"
    )
    raise _refuse_hypothesis_class(
        hypothesis_class, owner, why + ", which a query or training row must not reach."
    )


class _CheckedIndex:
    """The check of ``erm_block``'s output: an integer index in ``[0, n_hypotheses)``."""

    def __init__(self, n_hypotheses: int) -> None:
        self.n_hypotheses = n_hypotheses

    def __call__(self, output: Any) -> int:
        value = np.asarray(output)
        if value.shape != () or value.dtype.kind not in "iu":
            raise ValueError("erm_block returns one integer index.")
        index = int(value)
        if not 0 <= index < self.n_hypotheses:
            raise ValueError("erm_block returned an index outside [0, n_hypotheses).")
        return index


class _CheckedLabels:
    """The check of ``labels_at``'s output: ``n_hypotheses`` entries, 1 where an entry is 1."""

    def __init__(self, n_hypotheses: int) -> None:
        self.n_hypotheses = n_hypotheses

    def __call__(self, output: Any) -> np.ndarray:
        values = np.asarray(output)
        if values.shape != (self.n_hypotheses,):
            raise ValueError("labels_at returns one label per hypothesis.")
        return _positive_labels(values).astype(np.int8)


def _erm_block(hclass: Any, points: np.ndarray, labels: np.ndarray) -> Any:
    return hclass.erm_block(points, labels)


def _labels_at(hclass: Any, row: np.ndarray) -> Any:
    return hclass.labels_at(row[0])


class _RowwiseClass:
    """A user hypothesis class in the row-wise protocol, asked only through the boundary.

    Every call of the user's class meets one protected unit
    (:func:`~skprivpred._isolation.call_user_code`): ``erm_block`` one
    teacher's block, ``labels_at`` one point (identical points share one
    call), each on a copy of the class of its own (one ``cloudpickle``
    payload, made here), with a fixed public result whatever it does
    (hypothesis 0; label 0 under every hypothesis). The votes, LabelBoost's
    dichotomies and the relabelling's candidates are computed by the library
    from the labels, through :class:`~skprivpred.hypotheses.FiniteHypothesisClass`
    on a prediction matrix over the distinct points. The points are the
    validated rows (float, finite, 2-D): the user's ``prepare`` is not called.

    Raises
    ------
    InvalidParameterError
        If ``n_hypotheses`` is not an integer >= 1, ``default_vc_dim()`` (when
        present) not an integer >= 1, or the class cannot be pickled.
    """

    def __init__(self, hclass: Any, owner: str) -> None:
        n_hypotheses = getattr(hclass, "n_hypotheses", None)
        if isinstance(n_hypotheses, bool) or not isinstance(n_hypotheses, Integral | np.integer):
            raise _refuse_hypothesis_class(hclass, owner, "n_hypotheses is not an integer.")
        if n_hypotheses < 1:
            raise _refuse_hypothesis_class(hclass, owner, "n_hypotheses is below 1.")
        self.user_class = hclass
        self.n_hypotheses = int(n_hypotheses)
        bound = max(1, int(math.floor(math.log2(self.n_hypotheses))))
        if callable(getattr(hclass, "default_vc_dim", None)):
            bound = hclass.default_vc_dim()
            if isinstance(bound, bool) or not isinstance(bound, Integral) or bound < 1:
                raise _refuse_hypothesis_class(
                    hclass, owner, "default_vc_dim() is not an integer >= 1."
                )
        self._vc_dim = int(bound)
        self._code = user_code(hclass, "hypotheses")

    def __repr__(self) -> str:
        return repr(self.user_class)

    def default_vc_dim(self) -> int:
        """The class's public bound on its VC dimension (``max(1, floor(log2 K))`` by default)."""
        return self._vc_dim

    @staticmethod
    def prepare(X: MatrixLike) -> np.ndarray:
        """The validated rows: 2-D, float, finite (library code; no user code is called)."""
        from sklearn.utils.validation import check_array

        return check_array(X, dtype=np.float64, ensure_all_finite=True)

    def labels_on(self, points: np.ndarray) -> np.ndarray:
        """Labels of every hypothesis on the points, shape (K, n_points), int8; one point a call."""
        zeros = np.zeros(self.n_hypotheses, dtype=np.int8)
        labels = call_user_code_by_row(
            [self._code],
            np.asarray(points, dtype=np.float64).reshape(len(points), -1),
            _labels_at,
            _CheckedLabels(self.n_hypotheses),
            zeros,
            names=["hypotheses"],
            dtype=np.int8,
        )[0]
        return labels.T

    def _on_distinct(self, points: np.ndarray) -> tuple[FiniteHypothesisClass, np.ndarray]:
        """A prediction-matrix class over the distinct points, and each point's index in it."""
        distinct, index = np.unique(
            np.asarray(points, dtype=np.float64).reshape(len(points), -1),
            axis=0,
            return_inverse=True,
        )
        return FiniteHypothesisClass(predictions=self.labels_on(distinct)), index.ravel()

    def erm(self, points: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """How many blocks chose each hypothesis: one ``erm_block`` call per teacher block."""
        units = [
            (
                freeze_rows(np.ascontiguousarray(block, dtype=np.float64).reshape(len(block), -1)),
                freeze_rows(np.asarray(block_labels, dtype=np.intp)),
            )
            for block, block_labels in zip(points, labels)
        ]
        chosen = call_user_code(
            self._code,
            units,
            _erm_block,
            _CheckedIndex(self.n_hypotheses),
            0,
            name="hypotheses",
        )
        return np.bincount(np.asarray(chosen, dtype=np.intp), minlength=self.n_hypotheses)

    def vote_fraction(self, teachers: np.ndarray, points: np.ndarray) -> np.ndarray:
        """Fraction of teachers voting 1 (weighted by multiplicity)."""
        chosen = np.flatnonzero(teachers)
        return (teachers[chosen] @ self.labels_on(points)[chosen]) / teachers.sum()

    def candidates(
        self, labelled: np.ndarray, labels: np.ndarray, unlabelled: np.ndarray
    ) -> LabelBoostCandidates:
        """LabelBoost's distinct dichotomies on the distinct points, scored on the labelled ones."""
        n_labelled = len(labelled)
        finite, index = self._on_distinct(np.concatenate([labelled, unlabelled]))
        return finite.candidates(index[:n_labelled], labels, index[n_labelled:])

    def prior_candidates(self, points: np.ndarray, labels: np.ndarray) -> LabelBoostCandidates:
        """Every hypothesis, equally weighted, with its labels on the points."""
        finite, index = self._on_distinct(points)
        return finite.prior_candidates(index, labels)


def labelboost_law(
    hypothesis_class: Any,
    labelled: np.ndarray,
    labels: VectorLike,
    unlabelled: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact law of LabelBoost's choice. NOT PRIVATE: a diagnostic for tests.

    Parameters
    ----------
    hypothesis_class : ThresholdClass, FiniteHypothesisClass or a row-wise class
        The class (a class of your own in the row-wise protocol of
        :class:`~skprivpred.hypotheses.HypothesisClass`).
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
    hypothesis_class = _resolve_hypothesis_class(hypothesis_class, "labelboost_law")
    found = hypothesis_class.candidates(labelled, np.asarray(labels, dtype=float), unlabelled)
    return found.errors, exponential_mechanism_proba(-found.errors, LABELBOOST_EPSILON)


def relabel_law(
    hypothesis_class: Any, points: np.ndarray, labels: VectorLike, epsilon: float
) -> tuple[np.ndarray, np.ndarray]:
    """Exact law of :func:`relabel_through_class`'s choice. NOT PRIVATE: a diagnostic for tests.

    Returns
    -------
    errors : ndarray of shape (n_candidates,)
        Mistakes of each candidate on the pool.
    proba : ndarray of shape (n_candidates,)
        ``prior * exp(-epsilon * errors / 2) / Z``.
    """
    hypothesis_class = _resolve_hypothesis_class(hypothesis_class, "relabel_law")
    found = hypothesis_class.prior_candidates(points, np.asarray(labels, dtype=float))
    return found.errors, _relabel_proba(found, epsilon)


def _relabel_proba(found: Any, epsilon: float) -> np.ndarray:
    """``prior * exp(-epsilon * errors / 2)``, normalised in log space."""
    return np.exp(log_softmax(found.log_prior - 0.5 * epsilon * found.errors))


def relabel_through_class(
    hypothesis_class: Any,
    points: np.ndarray,
    labels: VectorLike,
    epsilon: float,
    rng: np.random.Generator,
) -> np.ndarray:
    """Relabel a pool by one hypothesis of the class, drawn by the exponential mechanism.

    The relabelling step of the practical predictor: LabelBoost's idea
    (Beimel, Nissim & Stemmer 2021; Naor, Nissim, Stemmer & Yan 2023,
    Appendix C.1: one hypothesis of ``C``, chosen by the exponential mechanism
    scored on the labelled points, relabels every point) with the candidate
    set fixed in advance: the whole class weighted by a public prior
    (``prior_candidates``), rather than the pool's dichotomies, whose set
    changes with the pool's points (Lemma C.1 pays ``+3`` in epsilon for
    that). Hypothesis ``h`` is drawn with probability proportional to
    ``prior(h) exp(-epsilon * mistakes(h) / 2)`` (McSherry & Talwar 2007;
    mistakes have sensitivity 1 under substitution of one pool row), exactly,
    by inverse CDF on log-softmax-normalised weights.

    Returns
    -------
    ndarray of int
        The drawn hypothesis's labels (0/1) on the points.
    """
    found = hypothesis_class.prior_candidates(points, np.asarray(labels, dtype=float))
    choice = int(sample_categorical(_relabel_proba(found, epsilon)[None, :], rng)[0])
    return found.labels_of(choice)[0].astype(np.intp)


def label_boost(
    hypothesis_class: Any,
    labelled: np.ndarray,
    labels: VectorLike,
    unlabelled: np.ndarray,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """LabelBoost (Beimel, Nissim & Stemmer 2021; Lemma C.1): relabel Shat and Dhat by one draw.

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


def _dense(X_checked):
    """Validated rows as a dense array (a sparse matrix is densified)."""
    return X_checked.toarray() if sparse.issparse(X_checked) else X_checked


def _pool_form(X, X_checked) -> Any:
    """The public form of a training set: ``("frame", columns)``, ``"sparse"`` or ``"array"``."""
    if hasattr(X, "iloc"):
        return ("frame", X.columns)
    return "sparse" if sparse.issparse(X_checked) else "array"


@dataclass(frozen=True)
class _QueryBatch:
    """Query rows as the teachers take them, and as the hypothesis class takes them (or None).

    Sliced like an array (``take_rows``), so that the stream engine cuts it at
    phase boundaries as one block.
    """

    rows: Any
    points: np.ndarray | None
    shape: tuple[int, ...] = field(init=False)  # the rows' (read by the answering path)

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", self.rows.shape)

    def __getitem__(self, index: Any) -> _QueryBatch:
        points = None if self.points is None else self.points[index]
        return _QueryBatch(take_rows(self.rows, index), points)


class _EverlastingStream(PrivatePredictorMixin, ClassifierMixin, BaseEstimator):
    """Phases, stream order, halting and the public stream attributes.

    A subclass provides, for the current phase: ``_prepare_queries(X)``
    (validation, before anything is charged: whatever the phase boundary will
    need of a query is checked here, so that nothing raises after the charge),
    optionally ``_dry_run(rows)`` (the refusal of rows no teacher can read),
    ``_answer_block(block, rng)`` (answers, as indices into ``classes_``, for
    a prefix of the block; shorter only when the mechanism halted),
    ``_record(block, answers, first_slot)`` (keep what the next phase needs)
    and ``_next_phase()`` (train the next phase's teachers). ``predict`` answers
    through the answering path (:func:`skprivpred._base.answer`, one charge for
    the call); the engine cuts every call at phase boundaries, in row order,
    under the query lock.

    The fitted state has one owner: the object ``fit`` returned, in the
    process that ran ``fit`` (:meth:`_own_stream`). A copy (pickle, joblib,
    ``copy.deepcopy``) or the same object in a forked child refuses to answer
    with :class:`~skprivpred.exceptions.ForkedStateError`.
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

        NOT PRIVATE for queries, hence not a public attribute: it depends on
        the data and reveals whether a query hidden from the adversary hit TOP,
        even when the predictor does not halt, which the released answers do
        not. For tests and diagnostics only.
        """
        mechanism = self._stream()["bt"]
        return 0 if mechanism is None else mechanism.tops_used

    @property
    def status_(self) -> str:
        """``"active"`` or ``"halted"`` (a halt is observable anyway).

        A predictor that went on with a default label after its halt would
        give a constant answer stream, just as observable as the halt.
        """
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

    def _row_guarantee(self, n_rows: int) -> tuple[float, float, float | None]:
        """Per-row ``(epsilon, delta, rho)`` charged for the next ``n_rows`` queries."""
        raise NotImplementedError

    def predict(self, X: MatrixLike) -> np.ndarray:
        """Answer each row as one query, in row order, consuming the stream.

        Rows after a phase boundary are answered by the next phase's teachers,
        which are trained (inside this call) on the finished phase's queries.
        Calling ``predict`` twice on the same rows asks new queries: the
        answers are new draws. ``score`` calls ``predict`` and consumes queries
        too. An attached ``accountant`` is charged for every row of the call
        at the per-query guarantee (``privacy_guarantee_.details``) before
        any noise is drawn; if it refuses, nothing changes.

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
            The rows after the halting one were charged but not answered.
        BudgetExhaustedError
            If the accountant refuses the charge; nothing is answered then.
        ForkedStateError
            If this object is a copy of the fitted predictor (pickle, joblib,
            ``copy.deepcopy``) or is used in a process forked from the one
            that fitted it; nothing is charged or answered then.
        """
        return answer(self, X, self._query_plan())

    def _query_plan(self) -> QueryPlan:
        """How ``predict`` answers: one charge for the call, then the phases in row order.

        The public checks are the stream's (its owner, whether it halted) and
        the queries' (:meth:`_prepare_queries`); the dry run is the
        subclass's (:attr:`_dry_run`); the per-row charge is the largest
        guarantee among the phases the call reaches (:meth:`_row_guarantee`,
        public: a function of the number of queries). The phases interleave
        their computation (the teachers' votes) and their mechanism
        (BetweenThresholds or the Gaussian vote, then the next phase's
        training at a boundary), so the plan's computation passes the checked
        rows on and its mechanism is :meth:`_answer_stream`, under the query
        lock; its post-processing raises the halt, if the call halted.
        """
        self._stream()  # NotFittedError before fit
        return QueryPlan(
            check=self._check_queries,
            dry_run=self._dry_run,
            charge_rows=self._row_guarantee,
            values=self._phase_rows,
            draw=self._answer_stream,
            finish=_answers_or_halt,
        )

    def _phase_rows(self, rows: Any, n_jobs: int | None) -> Any:
        """The plan's computation: the checked rows, as the phases take them."""
        return rows

    #: The dry run of a query call on its checked rows (``None``: the subclass has none).
    _dry_run: Callable[[Any], None] | None = None

    def _check_queries(self, X: MatrixLike) -> Any:
        """The public checks of a query call, before anything is charged or drawn."""
        self._check_stream_owner()
        self._raise_if_halted()
        return self._prepare_queries(X)

    def _raise_if_halted(self) -> None:
        if self._stream()["status"] == STATUS_HALTED:
            raise PredictorHaltedError(
                f"{type(self).__name__} has halted; it answers no more queries."
            )

    def _answer_stream(
        self, X: MatrixLike, rng: np.random.Generator
    ) -> tuple[np.ndarray, PredictorHaltedError | None]:
        """Answer the rows in order, phase by phase; runs under the query lock.

        Returns the answers and, if the predictor halted during the call, the
        error to raise (outside the lock). The release path counts every
        charged row as answered; rows after a halt are uncounted here.
        """
        n_rows = X.shape[0]
        answered: list[np.ndarray] = []
        start = 0
        state = self._state
        halt: PredictorHaltedError | None = None
        if state["status"] == STATUS_HALTED:  # another thread halted the stream meanwhile
            halt = PredictorHaltedError(
                f"{type(self).__name__} has halted; it answers no more queries."
            )
        while start < n_rows and halt is None:
            params = state["params"]
            stop = min(n_rows, start + params.phase_length - state["queries_in_phase"])
            block = take_rows(X, np.arange(start, stop))
            answers = self._answer_block(block, rng)
            if answers.size < stop - start:
                block = take_rows(block, np.arange(answers.size))
            self._record(block, answers, state["queries_in_phase"])
            state["queries_in_phase"] += answers.size
            answered.append(answers)
            start += answers.size
            if state["bt"] is not None and state["bt"].halted:
                state["status"] = STATUS_HALTED
                halt = PredictorHaltedError(
                    f"{type(self).__name__} halted: the BetweenThresholds TOP budget of phase "
                    f"{params.phase} ran out after {state['queries_in_phase']} queries of the "
                    "phase. "
                    "The error's .predictions hold this call's answers, the halting row included.",
                    predictions=self.classes_[np.concatenate(answered)],
                )
            elif state["queries_in_phase"] == params.phase_length:
                halt = self._start_next_phase_or_halt(answered)
        # The release path adds n_rows to the answered count: rows after a halt were not.
        self._query_stream.answered -= n_rows - start
        labels = self.classes_[np.concatenate(answered) if answered else np.empty(0, dtype=np.intp)]
        return labels, halt

    def _start_next_phase_or_halt(self, answered: list) -> PredictorHaltedError | None:
        """Start the next phase; if its public sizes break a privacy or size condition, halt.

        The schedule is public, so such a halt reveals nothing about the data;
        running on would void the guarantee. Returns the error to raise, if any.
        """
        try:
            self._next_phase()
        except (PrivacyParameterError, PhaseDataError) as error:
            self._state["status"] = STATUS_HALTED
            halt = PredictorHaltedError(
                f"{type(self).__name__} halted at the end of phase {self._state['params'].phase}: "
                f"the next phase cannot run with a guarantee ({error}) The error's .predictions "
                "hold this call's answers.",
                predictions=self.classes_[np.concatenate(answered)],
            )
            halt.__cause__ = error
            return halt
        return None

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

    # -- one owner of the fitted state ------------------------------------------------------
    def _own_stream(self) -> None:
        """Make this object, in this process, the one that answers from the fitted state."""
        self._stream_owner: tuple[int, str] | None = process_identity()

    def _check_stream_owner(self) -> None:
        """Refuse a copy, or a forked child, before anything is validated, charged or drawn."""
        owner = self.__dict__.get("_stream_owner")
        here = process_identity()
        if owner == here:
            return
        name = type(self).__name__
        if owner is None:
            where = (
                f"this {name} is a copy of a fitted predictor (made by pickle, joblib or "
                "copy.deepcopy)"
            )
        else:
            where = (
                f"this {name} was fitted in process {owner[0]} and is used in process "
                f"{here[0]}, a fork of it (os.fork, a fork-based multiprocessing pool or a "
                "pre-forking server)"
            )
        raise ForkedStateError(
            f"{where}. Its phase state (teachers, secret sub-samples, the count of the phase's "
            "answers) belongs to the object that fit returned, in the process that ran fit: "
            "answering from a copy would answer more queries in a phase than the guarantee "
            "allows. Nothing was charged. Query the original in its own process, or refit "
            "this copy to start a new predictor (which spends its privacy again)."
        )

    def __setstate__(self, state: dict) -> None:
        state = dict(state)
        if "_stream_owner" in state:
            state["_stream_owner"] = None  # a copy never owns the fitted state
        super().__setstate__(state)

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
        if self.classes is None and type_of_target(y) == "multiclass":
            # Checked before the label set is read from y (which warns), with the words
            # scikit-learn's estimator checks expect of a binary-only classifier.
            raise ValueError(
                binary_only_message(
                    type(self).__name__,
                    "but y holds more than two classes",
                    "Pass two public labels as `classes`.",
                )
            )
        classes = resolve_binary_classes(self.classes, y, type(self).__name__)
        return classes, np.searchsorted(classes, y)


#: Constraints of the values in GenericBBLClassifier's ``overrides``.
_OVERRIDE_CONSTRAINTS = {
    "n_teachers": [_POSITIVE_INT],
    "teacher_size": [_POSITIVE_INT],
    "phase_length": [_POSITIVE_INT],
    "top_budget": [_POSITIVE_INT],
    "threshold_gap": [_OPEN_UNIT],
    "m": [_POSITIVE],
    "bt_epsilon": [_POSITIVE],
}


def _answers_or_halt(drawn: tuple[np.ndarray, PredictorHaltedError | None]) -> np.ndarray:
    """The answers of a stream call, or the halt it met (which carries them)."""
    answers, halt = drawn
    if halt is not None:
        raise halt
    return answers


def _as_column_if_1d(X):
    """A 1-D array-like becomes one column; DataFrames, sparse and 2-D inputs are left as they are.

    (A sparse matrix is refused by the input check that follows, with a message that says
    sparse input is not supported; ``np.asarray`` would hide it in a 0-d object array.)
    """
    if hasattr(X, "iloc") or sparse.issparse(X):
        return X
    X = np.asarray(X)
    return X.reshape(-1, 1) if X.ndim == 1 else X


class GenericBBLClassifier(_EverlastingStream):
    """GenericBBL, the private everlasting predictor of Naor, Nissim, Stemmer & Yan (2023).

    A faithful reference implementation of the paper's Algorithm GenericBBL
    (Section 5): teachers trained by ERM on a privacy-amplifying sub-sample,
    queries answered by BetweenThresholds on the teachers' vote, and each
    phase's queries relabelled by LabelBoost to train the next phase. The
    predictor halts (:class:`PredictorHaltedError`) at a phase's last TOP.

    **Guarantee** (``constants="paper"``; Theorem 5.1). Every training row and
    every query, in the privacy game of the paper's Figure 1, is
    ``(epsilon, delta)``-protected for the whole unbounded stream, halting
    included, **except** a query's effect on its own phase's BetweenThresholds
    state (a known gap in the proof of Claim E.6): use
    :class:`PrivateEverlastingClassifier` when that matters. Accuracy: error at
    most ``6 target_error`` with probability ``1 - 4 failure_probability``, at
    about ``3.6e25`` rows for thresholds (:func:`genericbbl_plan`), so paper
    mode in practice computes the schedule and raises
    :class:`InsufficientSampleError`. ``constants="simulation"`` runs the same
    code at scaled-down sizes with **no guarantee**. An attached
    ``accountant`` is charged each answered row's per-query guarantee before
    it is answered. The fitted state has one owner: a copy or a forked child
    refuses to answer (:class:`~skprivpred.ForkedStateError`).

    See the user guide: :ref:`everlasting` (the algorithm and its proof:
    :ref:`genericbbl-step-by-step`).

    Parameters
    ----------
    hypotheses : "thresholds", library class or row-wise class, default="thresholds"
        The concept class ``C``, with exact ERM and LabelBoost (see
        :mod:`skprivpred.hypotheses`): a ``ThresholdClass`` or a
        ``FiniteHypothesisClass``; ``"thresholds"`` is
        ``ThresholdClass(direction="increasing")``. A class of your own is
        accepted in the row-wise protocol only (the Notes of
        :class:`~skprivpred.hypotheses.HypothesisClass`: ``n_hypotheses``,
        ``erm_block`` called on one teacher's block, ``labels_at`` on one
        point, each on a copy of its own through the library's boundary);
        anything else, a subclass of a library class included, is refused
        with :class:`~skprivpred.exceptions.InvalidParameterError`.
    epsilon : float, default=1.0
        Privacy parameter for every training row and query, in (0, 1] in paper mode.
    delta : float, default=1e-6
        Privacy parameter, below 1/16 in paper mode. The library's default
        wherever a mechanism needs ``delta > 0``, as BetweenThresholds does.
    target_error : float, default=0.01
        Accuracy parameter (the paper's ``alpha``; error guarantee
        ``6 target_error``), below 1/16 in paper mode.
    failure_probability : float, default=0.01
        Confidence parameter (the paper's ``beta``; failure probability
        ``4 failure_probability``), below 1/16 in paper mode.
    vc_dim : int, default=None
        VC dimension ``d`` of the class, a public bound; ``None`` takes 1 for
        thresholds and ``max(1, floor(log2 K))`` for ``K`` finite hypotheses
        (an upper bound).
    constants : {"paper", "simulation"}, default="paper"
        ``"paper"``: Algorithm GenericBBL's schedule and the guarantee of
        Theorem 5.1. ``"simulation"``: scaled-down sizes, no guarantee.
    overrides : dict, default=None
        Sizes replacing the paper's formulas, the same in every phase:
        ``n_teachers`` (T), ``teacher_size`` (lambda), ``phase_length`` (R),
        ``top_budget`` (c), ``threshold_gap`` (t_u - t_l), and, in simulation
        mode only, ``m`` and ``bt_epsilon`` (eps'). Quantities not given follow
        Algorithm GenericBBL's formulas from the given ones (``c = ceil(64
        alpha_i R)``, gap ``2 alpha_i`` with ``alpha_i = target_error / 2^i``,
        ``delta' = delta / (2c)``); in
        simulation mode the defaults are ``n_teachers=200, teacher_size=20,
        phase_length=4 * 200 * 20, m=2, bt_epsilon=1``. In paper mode,
        overrides of the sizes keep the privacy proof (not the accuracy proof)
        when the BT gap condition holds; otherwise
        :class:`~skprivpred.exceptions.PrivacyParameterError` is raised.
    log_base : float, default=2
        Base of the paper's ``log`` where it writes no base, > 1 (2 gives the
        larger, conservative value in every privacy condition; where the paper
        writes ``ln``, the code uses ``ln``).
    random_state : int, Generator or None, default=None
        Seeds the fit stream (the partitions into teacher blocks) and the
        release stream (the privacy-amplifying sub-samples, BT and LabelBoost
        noise); a ``Generator`` seeds the fit stream only. ``None`` (OS
        entropy) is the only safe choice on private data: a known integer
        seed voids the guarantee.
    classes : array-like of two labels, default=None
        The public label set; ``classes[1]`` (after sorting) is the label of
        ``1[x >= t]``. ``None`` reads it from ``y`` and emits a
        :class:`~skprivpred.PrivacyWarning` (which labels occur is
        information about the training data).
    accountant : PrivacyAccountant, default=None
        Charged for every answered row at its per-query guarantee (that of
        one BetweenThresholds instance of its phase, Lemma C.3; a call that
        crosses phases at the largest); paper mode only.
    hypothesis_class : default="deprecated"
        Old name of ``hypotheses``.

        .. deprecated:: 0.4
            ``hypothesis_class`` was renamed ``hypotheses`` in 0.4 and will be
            removed in 0.6.
    alpha : float, default="deprecated"
        Old name of ``target_error``.

        .. deprecated:: 0.4
            ``alpha`` was renamed ``target_error`` in 0.4 and will be removed
            in 0.6.
    beta : float, default="deprecated"
        Old name of ``failure_probability``.

        .. deprecated:: 0.4
            ``beta`` was renamed ``failure_probability`` in 0.4 and will be
            removed in 0.6.
    mode : {"paper", "simulation"}, default="deprecated"
        Old name of ``constants``.

        .. deprecated:: 0.4
            ``mode`` was renamed ``constants`` in 0.4 and will be removed in
            0.6.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        The public label set.
    n_features_in_ : int
        Number of features of ``X`` (1 for thresholds and prediction matrices).
    privacy_guarantee_ : PrivacyGuarantee
        ``(epsilon, delta)`` for each training row and each query over the
        whole unbounded stream (Theorem 5.1; inside a query's own phase, see
        the known gap, also in ``details["caveat"]``); ``details`` holds the
        per-query ``(eps'_1, delta'_1)`` charged to an accountant. In
        simulation mode ``epsilon = inf`` and ``delta = 1``: no guarantee.
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
    >>> clf = GenericBBLClassifier(
    ...     target_error=0.05, failure_probability=0.05, constants="simulation",
    ...     classes=[0, 1], random_state=0,
    ... )
    >>> import warnings
    >>> with warnings.catch_warnings():  # the simulation-mode PrivacyWarning
    ...     warnings.simplefilter("ignore")
    ...     clf = clf.fit(x, y)
    >>> clf.predict(rng.random(5)).shape
    (5,)
    """

    _parameter_constraints: dict = {
        "hypotheses": _HYPOTHESIS_CLASS_CONSTRAINTS,
        "epsilon": [_POSITIVE],
        "delta": [_OPEN_UNIT],
        "target_error": [_OPEN_UNIT],
        "failure_probability": [_OPEN_UNIT],
        "vc_dim": [_POSITIVE_INT, None],
        "constants": _CONSTANTS,
        "overrides": [Data(dict), None],
        "log_base": [_LOG_BASE_RANGE],
        "random_state": ["random_state"],
        "classes": ["array-like", None],
        "accountant": [PrivacyAccountant, None],
        "hypothesis_class": deprecated_constraints(_HYPOTHESIS_CLASS_CONSTRAINTS, "hypotheses"),
        "alpha": deprecated_constraints([_OPEN_UNIT], "target_error"),
        "beta": deprecated_constraints([_OPEN_UNIT], "failure_probability"),
        "mode": deprecated_constraints(_CONSTANTS, "constants"),
    }

    def __init__(
        self,
        hypotheses: Any = "thresholds",
        *,
        epsilon: float = 1.0,
        delta: float = 1e-6,
        target_error: float = 0.01,
        failure_probability: float = 0.01,
        vc_dim: int | None = None,
        constants: str = "paper",
        overrides: dict | None = None,
        log_base: float = LOG_BASE,
        random_state: RandomStateLike = None,
        classes: VectorLike | None = None,
        accountant: PrivacyAccountant | None = None,
        hypothesis_class: Any = DEPRECATED,
        alpha: float | str = DEPRECATED,
        beta: float | str = DEPRECATED,
        mode: str = DEPRECATED,
    ) -> None:
        self.hypotheses = hypotheses
        self.epsilon = epsilon
        self.delta = delta
        self.target_error = target_error
        self.failure_probability = failure_probability
        self.vc_dim = vc_dim
        self.constants = constants
        self.overrides = overrides
        self.log_base = log_base
        self.random_state = random_state
        self.classes = classes
        self.accountant = accountant
        self.hypothesis_class = hypothesis_class
        self.alpha = alpha
        self.beta = beta
        self.mode = mode

    def _check_params(self) -> tuple[Any, _GenericBBLSchedule]:
        """Cross-parameter rules; returns the class and the public schedule (no data involved)."""
        # Renamed in 0.4 (the old names warn, pointing at the caller of fit).
        hypotheses = renamed_param(self, "hypothesis_class", "hypotheses")
        target_error = renamed_param(self, "alpha", "target_error")
        failure_probability = renamed_param(self, "beta", "failure_probability")
        constants = renamed_param(self, "mode", "constants")
        paper = constants == "paper"
        if paper:
            _check_paper_ranges(self.epsilon, self.delta, target_error, failure_probability)
        elif self.accountant is not None:
            raise InvalidParameterError(
                "accountant must be None with constants='simulation': simulation mode has no "
                "privacy guarantee to charge; use constants='paper'."
            )
        overrides = dict(self.overrides or {})
        unknown = sorted(set(overrides) - set(OVERRIDE_KEYS))
        if unknown:
            raise InvalidParameterError(
                f"unknown overrides {unknown}; allowed keys are {list(OVERRIDE_KEYS)}."
            )
        validate_parameter_constraints(
            _OVERRIDE_CONSTRAINTS, overrides, caller_name="GenericBBLClassifier overrides"
        )
        voiding = sorted(set(overrides) & set(SIMULATION_ONLY_KEYS))
        if paper and voiding:
            raise PrivacyParameterError(
                f"overrides {voiding} change the privacy proof's own constants (the sub-sampling "
                "denominator m, the BT epsilon'); they are allowed only with "
                "constants='simulation'."
            )
        hclass = _resolve_hypothesis_class(hypotheses, type(self).__name__)
        schedule = _GenericBBLSchedule(
            float(self.epsilon),
            float(self.delta),
            float(target_error),
            float(failure_probability),
            int(self.vc_dim or hclass.default_vc_dim()),
            constants=constants,
            overrides=overrides,
            base=float(self.log_base),
        )
        first = schedule.phase(1)
        if first.labelled_size > first.pool_size or first.unlabelled_size > first.phase_length:
            raise InvalidParameterError(
                f"the sub-sampling ratio epsilon / m = {schedule.epsilon / schedule.m!r} exceeds "
                "1; pass overrides['m'] >= epsilon."
            )
        if first.labelled_size < 1:
            raise PhaseDataError(
                "LabelBoost would get no labelled example (floor(epsilon * |S_i| / m) = 0); "
                "increase n_teachers or teacher_size."
            )
        schedule.check_phase(first, schedule.phase(2))
        return hclass, schedule

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
        InvalidParameterError
            For a parameter of the wrong type or range.
        InsufficientSampleError
            If ``n_samples`` is below the schedule's requirement (carried as
            ``required_samples``).
        PrivacyParameterError
            For parameters outside Theorem 5.1's range in paper mode, or a
            failing gap condition.
        PhaseDataError
            If a phase's query sub-sample cannot fill the next pool (Claim D.6).
        """
        hclass, schedule = self._check_fit_arguments(fit_params)
        with self._unchanged_on_error():
            X_checked, y = validate_data(
                self, _as_column_if_1d(X), y, reset=True, dtype=None, ensure_all_finite=True
            )
            classes, labels = self._validate_labels(y)  # before X: label errors name labels
            points = hclass.prepare(X_checked)
            required = schedule.required_samples()
            if labels.size < required:
                raise InsufficientSampleError(
                    f"{type(self).__name__} with constants={schedule.constants!r} needs at least "
                    f"{required} training rows (the first pool lambda_1 * T_1 = "
                    f"{schedule.phase(1).pool_size} is a fraction epsilon / m of them), got "
                    f"n_samples={labels.size}. See "
                    "genericbbl_plan, or use constants='simulation' (no guarantee).",
                    required_samples=required,
                    n_samples=labels.size,
                )
            if schedule.constants == "simulation":
                warn_user(
                    "GenericBBLClassifier(constants='simulation') uses scaled-down sizes: NO "
                    "privacy guarantee holds. Do not use it on private data.",
                    PrivacyWarning,
                )
            fit_rng = self._start_streams()
            release_rng = self._query_stream.rng
            first = schedule.phase(1)
            # S_1, the privacy-amplifying sub-sample of S, is secret: drawn from the release
            # stream, which a random_state object cannot replay and a copy never shares.
            kept = release_rng.choice(labels.size, size=first.pool_size, replace=False)
            self._hclass, self._schedule, self._fit_rng = hclass, schedule, fit_rng
            self._state: dict[str, Any] = {"history": [], "status": STATUS_ACTIVE}
            self._start_phase(first, points[kept], labels[kept], release_rng)
            self._own_stream()
            self.classes_ = classes
            self.required_samples_ = required
            self.privacy_guarantee_ = self._guarantee(schedule, first)
        return self

    @staticmethod
    def _guarantee(schedule: _GenericBBLSchedule, first: GenericBBLPhase) -> PrivacyGuarantee:
        """The whole stream's guarantee (Theorem 5.1), or none in simulation mode."""
        # "mode": the key of the details since 0.2 (the parameter is `constants` since 0.4).
        details: dict[str, Any] = {"mode": schedule.constants, "m": schedule.m}
        if schedule.constants == "simulation":
            return PrivacyGuarantee(
                math.inf,
                1.0,
                unit=GuaranteeUnit.ALL_ANSWERS,
                scope="the whole stream of answers",
                theorem=(
                    "none: constants='simulation' runs scaled-down sizes outside Theorem 5.1 of "
                    "Naor, Nissim, Stemmer & Yan (2023)"
                ),
                protects="no one (simulation mode has no guarantee)",
                details=details,
            )
        details.update(
            per_query_epsilon=first.bt_epsilon,
            per_query_delta=first.bt_delta,
            per_query_theorem="Naor, Nissim, Stemmer & Yan (2023), Lemma C.3 and Claim D.1",
        )
        details["caveat"] = (
            "inside a query's own phase, whether that query hit TOP changes when the predictor "
            "halts: the proof of Claim E.6 treats the phase's other answers as identically "
            "distributed, which they are not, so a query is protected across phases but not "
            "against an adversary who drives its own phase to the halt"
        )
        return PrivacyGuarantee(
            schedule.epsilon,
            schedule.delta,
            unit=GuaranteeUnit.ALL_ANSWERS,
            scope="the whole unbounded stream of answers",
            theorem=(
                "Naor, Nissim, Stemmer & Yan (2023), Theorem 5.1 (privacy: Claim 5.3, "
                "Claims E.5 and E.6)"
            ),
            neighbouring="replace-one",
            protects="each training row and each query",
            details=details,
        )

    def _row_guarantee(self, n_rows: int) -> tuple[float, float, float | None]:
        """``(eps'_i, delta'_i)`` of the phases the next ``n_rows`` queries reach (the largest)."""
        state, schedule = self._state, self._schedule
        params = state["params"]
        epsilon, delta = params.bt_epsilon, params.bt_delta
        left = n_rows - (params.phase_length - state["queries_in_phase"])
        phase = params.phase
        while left > 0 and self.accountant is not None:
            phase += 1
            later = schedule.phase(phase)
            epsilon, delta = max(epsilon, later.bt_epsilon), max(delta, later.bt_delta)
            left -= later.phase_length
        return epsilon, delta, None

    # -- phases ------------------------------------------------------------------------------
    def _start_phase(
        self,
        params: GenericBBLPhase,
        points: np.ndarray,
        labels: np.ndarray,
        release_rng: np.random.Generator,
    ) -> None:
        """Partition the pool, train teachers by ERM, start MultiBT, pre-draw the sub-samples.

        The partition into teacher blocks is structure (fit stream); the
        privacy-amplifying sub-samples (Shat_i, the kept query slots of Dhat_i)
        are secret and come from the release stream.
        """
        order = self._fit_rng.permutation(params.pool_size)
        blocks = (params.n_teachers, params.teacher_size)
        teachers = self._hclass.erm(
            points[order].reshape(blocks + points.shape[1:]), labels[order].reshape(blocks)
        )
        bt = params.between_thresholds()
        labelled = release_rng.choice(params.pool_size, size=params.labelled_size, replace=False)
        slots = np.sort(
            release_rng.choice(params.phase_length, size=params.unlabelled_size, replace=False)
        )
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
        release_rng = self._query_stream.rng
        _, new_labels = label_boost(
            self._hclass,
            state["labelled_points"],
            state["labelled_labels"],
            unlabelled,
            release_rng,
        )
        kept = release_rng.choice(len(unlabelled), size=following.pool_size, replace=False)
        self._start_phase(
            following, unlabelled[kept], new_labels[kept].astype(np.intp), release_rng
        )

    # -- queries ----------------------------------------------------------------------------
    def _prepare_queries(self, X: MatrixLike) -> np.ndarray:
        X_checked = validate_data(
            self, _as_column_if_1d(X), reset=False, dtype=None, ensure_all_finite=True
        )
        return self._hclass.prepare(X_checked)

    def _answer_block(self, points: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        fraction = self._hclass.vote_fraction(self._state["teachers"], points)
        outcomes = self._state["bt"].answer(fraction, rng)
        return (outcomes != BT_BELOW).astype(np.intp)  # TOP answers 1, as R does (step 3d)

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
    """Practical private everlasting prediction with any scikit-learn classifier.

    Phase 1 trains clones of ``estimator`` on disjoint random blocks of the
    training set; each query row is answered on its own by a noisy teacher
    vote (Gaussian, or BetweenThresholds with ``vote_release``). After a public
    number of queries the next phase's teachers are trained on the phase's
    queries, labelled with the released answers (relabelled through
    ``hypotheses`` if given). The schedule is public and fixed at ``fit``
    (:func:`practical_schedule`); phases grow by ``phase_growth``.

    **Guarantee.** For every training row and every query (the game of
    Definition 3.4 of Naor, Nissim, Stemmer & Yan 2023), the whole unbounded
    stream of answers is ``(epsilon, delta)``-DP: each phase's Gaussian answers
    compose to ``rho``-zCDP (Bun & Steinke 2016), a training row reaches
    phase 1 only and a query the next phase only. With
    ``vote_release="between_thresholds"`` a query's effect on its own phase's
    BT state is not covered, and the predictor can halt. An attached
    ``accountant`` is charged each answered row's per-query guarantee before
    any noise is drawn. Unlike GenericBBL there is no accuracy theorem, and
    under-provisioned teachers drift. The votes, teachers and buffered queries
    are secret; the fitted state has one owner (a copy or a forked child
    refuses to answer, :class:`~skprivpred.ForkedStateError`).

    See the user guide: :ref:`everlasting`.

    Parameters
    ----------
    estimator : classifier
        The teacher, cloned once per block (data-fitted preprocessing belongs
        inside it, e.g. a :class:`~sklearn.pipeline.Pipeline`). A block with
        one label gets a constant teacher. A teacher whose ``fit`` raises (for
        example :class:`~sklearn.discriminant_analysis.QuadraticDiscriminantAnalysis`
        on a block where a class has one row) becomes a constant teacher that
        votes ``classes_[0]``, silently: whether a fit fails depends on the
        block's rows, so the failure itself must not reach the caller (in later
        phases the blocks hold released answers to queries). Check that the
        teacher fits at all on data of the expected size before deploying.
    epsilon : float, default=1.0
        Privacy parameter for every training row and query, > 0.
    delta : float, default=1e-6
        Privacy parameter, in (0, 1): the library's default wherever a
        mechanism needs ``delta > 0``, as the Gaussian vote does.
    n_teachers : int, default=None
        ``T_1``, phase 1's teachers; later phases have ``T_i = min(N_i,
        ceil(T_1 sigma_i / sigma_1))`` (the same noise-to-teachers ratio).
        ``None``: ``ceil(3 sigma_1 / 0.4)``, the noise is 0.4/3 of the
        teachers (the sizing rule of :func:`practical_plan`; ``n`` is public
        under substitution), at most ``n``. See :func:`practical_schedule`.
    phase_length : int, default=None
        ``R_1``, queries of phase 1, >= ``n_teachers``; later phases have
        ``R_{i+1} = ceil(phase_growth * R_i)``. ``None``: ``ceil(phase_growth *
        n)``.
    phase_growth : float, default=2.0
        ``g >= 1``: each phase answers ``g`` times as many queries as the one
        before (and as its pool holds rows), so rows per teacher grow by about
        ``sqrt(g)`` per phase. ``1.0`` is the constant schedule of version 0.1
        (more rows per teacher in phase 1, never more later).
    hypotheses : "thresholds", ThresholdClass, FiniteHypothesisClass or None, default=None
        The task's concept class, public, for relabelling each finished
        phase's pool through it before the next phase is trained (the
        LabelBoost step of the paper, with a fixed public prior;
        ``"thresholds"`` is ``ThresholdClass()``: one feature, increasing,
        Cauchy prior at 0 with scale 1; pass a ``ThresholdClass`` with the
        feature's public scale otherwise). ``None``: the next phase trains on
        the released answers as they are, the only choice when the class
        cannot be enumerated (most scikit-learn learners). Needs
        ``vote_release="gaussian"``. Every query must be a point of the class
        (its ``prepare``, called before the query is charged). A class of
        your own is accepted in the row-wise protocol only (the Notes of
        :class:`~skprivpred.hypotheses.HypothesisClass`: ``n_hypotheses``,
        ``labels_at`` called on one point at a time, on a copy of its own
        through the library's boundary, a failing point labelled 0 under
        every hypothesis; its points are the validated float rows);
        anything else, a subclass of a library class included, is refused
        with :class:`~skprivpred.exceptions.InvalidParameterError`.
    vote_release : {"gaussian", "between_thresholds"}, default="gaussian"
        How the teachers' vote is released for each query: a Gaussian noisy
        vote, or BetweenThresholds (MultiBT per phase, which can halt).
    top_budget : int, default=None
        TOPs per phase for ``"between_thresholds"``; ``None`` takes the largest
        budget for which the gap condition holds.
    threshold_gap : float, default=0.25
        ``t_u - t_l`` for ``"between_thresholds"``, in (0, 1).
    random_state : int, Generator or None, default=None
        Seeds the fit stream (partitions, teacher seeds) and the query stream
        (the answers' noise). ``None`` (OS entropy) is the only safe choice on
        private data.
    classes : array-like of two labels, default=None
        The public label set. ``None`` reads it from ``y`` and emits a
        :class:`~skprivpred.PrivacyWarning` (which labels occur is
        information about the training data).
    accountant : PrivacyAccountant, default=None
        Charged for every answered row, before it is answered, at the
        per-query guarantee of its phase (``privacy_guarantee_.details``; a
        call that crosses phases at the largest).
    n_jobs : int, default=None
        joblib jobs for the teacher fits (any joblib backend).
    hypothesis_class : default="deprecated"
        Old name of ``hypotheses``.

        .. deprecated:: 0.4
            ``hypothesis_class`` was renamed ``hypotheses`` in 0.4 and will be
            removed in 0.6.
    aggregator : {"gaussian", "between_thresholds"}, default="deprecated"
        Old name of ``vote_release``.

        .. deprecated:: 0.4
            ``aggregator`` was renamed ``vote_release`` in 0.4 and will be
            removed in 0.6.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        The public label set.
    n_features_in_ : int
        Number of features seen during ``fit``.
    n_teachers_ : int
        ``T_1`` (every phase's sizes: ``phase_schedule_``).
    noise_sigma_ : float or None
        Standard deviation of phase 1's vote noise (Gaussian vote release).
    relabel_epsilon_ : float or None
        ``epsilon_r`` of the relabelling draw (``None`` without
        ``hypotheses``).
    privacy_guarantee_ : PrivacyGuarantee
        ``(epsilon, delta)`` (and, for the Gaussian vote, ``rho``) for each
        training row and each query over the whole unbounded stream;
        ``details`` holds ``phase_growth``, phase 1's per-query guarantee
        charged to an accountant, with relabelling ``relabel_epsilon``,
        ``relabel_rho`` and ``later_phase_rho`` (the two add up to ``rho``),
        and, for ``"between_thresholds"``, the within-phase caveat.
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
    ...     DecisionTreeClassifier(max_depth=1), epsilon=4.0, hypotheses="thresholds",
    ...     classes=[0, 1], random_state=0,
    ... ).fit(X, y)
    >>> [(p["n_teachers"], p["phase_length"]) for p in clf.phase_schedule_]
    [(942, 8000)]
    >>> clf.predict(rng.random((9000, 1))).shape  # crosses a phase boundary
    (9000,)
    >>> [(p["n_teachers"], p["pool_size"], p["phase_length"]) for p in clf.phase_schedule_]
    [(942, 4000, 8000), (1405, 8000, 16000)]
    """

    _parameter_constraints: dict = {
        "estimator": [UserCodeParam(HasMethods(["fit", "predict"]), kind="estimator")],
        "epsilon": [_POSITIVE],
        "delta": [_OPEN_UNIT],
        "n_teachers": [_POSITIVE_INT, None],
        "phase_length": [_POSITIVE_INT, None],
        "phase_growth": [Interval(Real, 1, None, closed="left")],
        "hypotheses": [*_HYPOTHESIS_CLASS_CONSTRAINTS, None],
        "vote_release": _VOTE_RELEASE,
        "top_budget": [_POSITIVE_INT, None],
        "threshold_gap": [_OPEN_UNIT],
        "random_state": ["random_state"],
        "classes": ["array-like", None],
        "accountant": [PrivacyAccountant, None],
        "n_jobs": [Integral, None],
        "hypothesis_class": deprecated_constraints(
            [*_HYPOTHESIS_CLASS_CONSTRAINTS, None], "hypotheses"
        ),
        "aggregator": deprecated_constraints(_VOTE_RELEASE, "vote_release"),
    }

    #: Index in the public label set of the vote of a teacher whose fit raised.
    _teacher_fallback: int | None = 0

    def __init__(
        self,
        estimator: BaseEstimator,
        *,
        epsilon: float = 1.0,
        delta: float = 1e-6,
        n_teachers: int | None = None,
        phase_length: int | None = None,
        phase_growth: float = PRACTICAL_GROWTH,
        hypotheses: Any = None,
        vote_release: str = "gaussian",
        top_budget: int | None = None,
        threshold_gap: float = 0.25,
        random_state: RandomStateLike = None,
        classes: VectorLike | None = None,
        accountant: PrivacyAccountant | None = None,
        n_jobs: int | None = None,
        hypothesis_class: Any = DEPRECATED,
        aggregator: str = DEPRECATED,
    ) -> None:
        self.estimator = estimator
        self.epsilon = epsilon
        self.delta = delta
        self.n_teachers = n_teachers
        self.phase_length = phase_length
        self.phase_growth = phase_growth
        self.hypotheses = hypotheses
        self.vote_release = vote_release
        self.top_budget = top_budget
        self.threshold_gap = threshold_gap
        self.random_state = random_state
        self.classes = classes
        self.accountant = accountant
        self.n_jobs = n_jobs
        self.hypothesis_class = hypothesis_class
        self.aggregator = aggregator

    def _check_params(self) -> None:
        """Cross-parameter rules (no data involved)."""
        if (
            self.n_teachers is not None
            and self.phase_length is not None
            and self.phase_length < self.n_teachers
        ):
            raise InvalidParameterError(
                f"phase_length={self.phase_length} must be at least n_teachers="
                f"{self.n_teachers}: each next teacher trains on at least one of the phase's "
                "queries."
            )
        # Renamed in 0.4: read once per fit (the old names warn); the phases use these.
        self._hypotheses = renamed_param(self, "hypothesis_class", "hypotheses")
        self._vote_release = renamed_param(self, "aggregator", "vote_release")
        if self._hypotheses is not None and self._vote_release != "gaussian":
            raise InvalidParameterError(
                "hypotheses (relabelling through the class) needs vote_release='gaussian': "
                f"its accounting composes with the Gaussian votes' zCDP; got "
                f"vote_release={self._vote_release!r}."
            )

    def _phase_params(self, phase: int) -> PracticalPhase:
        """Sizes of ``phase`` in the public schedule (BetweenThresholds filled in if used)."""
        sizing = self._sizing
        params = _practical_phases(
            sizing["epsilon"],
            sizing["delta"],
            sizing["n_samples"],
            sizing["n_teachers"],
            sizing["phase_length"],
            sizing["phase_growth"],
            sizing["relabel"],
            phase,
        )[-1]
        if self._vote_release == "gaussian":
            return params
        top_budget, eps_prime, delta_prime = self._bt_parameters(params.n_teachers)
        return replace(
            params,
            noise_sigma=None,
            rho=None,
            top_budget=top_budget,
            threshold_gap=float(self.threshold_gap),
            bt_epsilon=eps_prime,
            bt_delta=delta_prime,
        )

    def _sizing_for(self, n_samples: int) -> dict:
        """The public inputs of the schedule, checked against ``n_samples``."""
        if self.n_teachers is not None and self.n_teachers > n_samples:
            raise ValueError(
                f"n_teachers={self.n_teachers} is larger than the number of training rows "
                f"n_samples={n_samples}; each teacher needs at least one row."
            )
        return {
            "epsilon": float(self.epsilon),
            "delta": float(self.delta),
            "n_samples": int(n_samples),
            "n_teachers": self.n_teachers,
            "phase_length": self.phase_length,
            "phase_growth": float(self.phase_growth),
            "relabel": self._hypotheses is not None,
        }

    def _bt_parameters(self, n_teachers: int) -> tuple[int, float, float]:
        """``(c, eps', delta')`` of the BT aggregator; raises if the gap condition fails."""
        epsilon, delta, gap = float(self.epsilon), float(self.delta), float(self.threshold_gap)
        top_budget = self.top_budget
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
                "teachers, a smaller top_budget, a wider threshold_gap, or vote_release='gaussian'."
            )
        return int(top_budget), eps_prime, delta_prime

    def _resolved_class(self) -> Any:
        """The relabelling class (``"thresholds"`` is ``ThresholdClass()``), or None."""
        if self._hypotheses is None:
            return None
        return _resolve_hypothesis_class(self._hypotheses, type(self).__name__)

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
        self._check_fit_arguments(fit_params)
        with self._unchanged_on_error():
            X_checked, y = validate_data(
                self,
                X,
                y,
                reset=True,
                accept_sparse=self._accept_sparse(),
                dtype=None,
                ensure_all_finite=True,
            )
            X = keep_frame(X, X_checked)
            classes, labels = self._validate_labels(y)
            n_samples = labels.size
            hclass = self._resolved_class()
            if hclass is not None:
                hclass.prepare(_dense(X_checked[:1]))  # the class must take these rows
                if isinstance(hclass, ThresholdClass):
                    hclass._prior()
            self._sizing = self._sizing_for(n_samples)
            first = self._phase_params(1)
            if first.teacher_size < 2:
                warn_user(
                    f"{first.n_teachers} teachers leave fewer than 2 rows per teacher "
                    f"(n_samples={n_samples}); "
                    "the answers will be close to uniform. See practical_schedule for the sizes.",
                    UserWarning,
                )
            self._fit_rng = self._start_streams()
            self._hclass = hclass
            self._pool_form = _pool_form(X, X_checked)
            self.classes_ = classes
            self._state: dict[str, Any] = {"history": [], "status": STATUS_ACTIVE}
            self._start_phase(first, X, labels)
            self._own_stream()
            self.n_teachers_ = first.n_teachers
            self.noise_sigma_ = first.noise_sigma
            self.relabel_epsilon_ = (
                relabel_epsilon(float(self.epsilon), float(self.delta))
                if hclass is not None
                else None
            )
            self.privacy_guarantee_ = self._guarantee(first)
        return self

    def _per_query(self, params: PracticalPhase) -> tuple[float, float, float | None]:
        """The per-row guarantee of a phase (see **Accountant**): ``(epsilon, delta, rho)``."""
        if params.noise_sigma is None:  # BetweenThresholds: one instance's (eps', delta')
            assert params.bt_epsilon is not None and params.bt_delta is not None
            return params.bt_epsilon, params.bt_delta, None
        rho = zcdp_rho(float(self.epsilon), float(self.delta)) / params.phase_length
        delta = float(self.delta) / params.phase_length
        return eps_of_rho(rho, delta), delta, rho

    def _guarantee(self, first: PracticalPhase) -> PrivacyGuarantee:
        """The whole stream's guarantee, with phase 1's per-query one in ``details``."""
        epsilon, delta = float(self.epsilon), float(self.delta)
        per_epsilon, per_delta, per_rho = self._per_query(first)
        details: dict[str, Any] = {
            # "aggregator": the key of the details since 0.3 (the parameter is `vote_release`).
            "aggregator": self._vote_release,
            "n_teachers": first.n_teachers,
            "phase_length": first.phase_length,
            "phase_growth": float(self.phase_growth),
            "per_query_epsilon": per_epsilon,
            "per_query_delta": per_delta,
        }
        game = "Naor, Nissim, Stemmer & Yan (2023), Definition 3.4 (the game of Figure 1)"
        if self._vote_release == "gaussian":
            rho = zcdp_rho(epsilon, delta)
            details.update(noise_sigma=first.noise_sigma, per_query_rho=per_rho)
            theorem = (
                f"{game}; Gaussian vote: Bun & Steinke (2016), Proposition 1.6, Lemma 1.7 "
                "and Proposition 1.3"
            )
            if self._hclass is not None:
                r_eps = relabel_epsilon(epsilon, delta)
                details.update(
                    relabel_epsilon=r_eps,
                    relabel_rho=r_eps**2 / 8.0,
                    later_phase_rho=(1.0 - RELABEL_RHO_SHARE) * rho,
                )
                theorem += (
                    "; relabelling: exponential mechanism with a public prior (McSherry & "
                    "Talwar 2007), bounded range (Cesar & Rogers 2021)"
                )
            return PrivacyGuarantee(
                epsilon,
                delta,
                unit=GuaranteeUnit.ALL_ANSWERS,
                scope="the whole unbounded stream of answers",
                theorem=theorem,
                neighbouring="replace-one",
                protects="each training row and each query",
                rho=rho,
                details=details,
            )
        details.update(
            top_budget=first.top_budget,
            threshold_gap=first.threshold_gap,
            caveat=(
                "a query's effect on its own phase's BetweenThresholds state (the TOP count, "
                "hence when the predictor halts) is not covered: it is protected through later "
                "phases only, as in GenericBBL's proof of Claim E.6"
            ),
        )
        return PrivacyGuarantee(
            epsilon,
            delta,
            unit=GuaranteeUnit.ALL_ANSWERS,
            scope="the whole unbounded stream of answers",
            theorem=f"{game}; BetweenThresholds: Lemma C.3 and Observation 2",
            neighbouring="replace-one",
            protects="each training row and each query",
            details=details,
        )

    def _row_guarantee(self, n_rows: int) -> tuple[float, float, float | None]:
        """The largest per-row guarantee among the phases the next ``n_rows`` queries reach."""
        state = self._state
        params = state["params"]
        left = n_rows - (params.phase_length - state["queries_in_phase"])
        reached = [params]
        while left > 0 and self.accountant is not None:
            try:
                later = self._phase_params(reached[-1].phase + 1)
            except PrivacyParameterError:  # that phase cannot start: the stream halts before it
                break
            reached.append(later)
            left -= later.phase_length
        guarantees = [self._per_query(p) for p in reached]
        epsilon = max(g[0] for g in guarantees)
        delta = max(g[1] for g in guarantees)
        rhos = [g[2] for g in guarantees]
        rho = None if any(r is None for r in rhos) else max(r for r in rhos if r is not None)
        return epsilon, delta, rho

    def _accept_sparse(self) -> list[str] | bool:
        """Sparse rows are passed on when the teacher takes them (its ``input_tags.sparse``)."""
        return ["csr", "csc"] if get_tags(self.estimator).input_tags.sparse else False

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = get_tags(self.estimator).input_tags.sparse
        return tags

    # -- phases ------------------------------------------------------------------------------
    def _start_phase(self, params: PracticalPhase, X, labels: np.ndarray) -> None:
        """Fit one teacher per disjoint random block of the pool (joblib), and reset the phase."""
        parts = random_partition(params.pool_size, params.n_teachers, self._fit_rng)
        if params.phase == 1:
            self._teacher_template = clone(self.estimator)  # what a query's dry run clones
        teachers = fit_teachers(
            clone(self._teacher_template),
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
            ensemble=TeacherEnsemble(teachers, self.classes_), queries=[], points=[], answers=[]
        )

    def _next_phase(self) -> None:
        """Train the next phase on this phase's queries with their released answers.

        With ``hypotheses`` set, the released answers are first relabelled
        through the class (:func:`relabel_through_class`, one exponential-mechanism
        draw from the query stream).
        """
        state = self._state
        # Every block is in the training set's form (_pool_rows), so they concatenate.
        X_pool = concat_rows(state["queries"])
        labels = np.concatenate(state["answers"])
        params = self._phase_params(state["params"].phase + 1)
        if params.pool_size != labels.size:  # the schedule is public: a mismatch is a bug
            raise RuntimeError("the phase pool does not match the public schedule.")
        if self._hclass is not None:
            assert params.relabel_epsilon is not None
            # The class's points were checked when each query was asked, before its charge.
            points = np.concatenate(state["points"])
            labels = self._relabel(points, labels, params.relabel_epsilon)
        self._start_phase(params, X_pool, labels)

    def _relabel(self, points: np.ndarray, labels: np.ndarray, epsilon: float) -> np.ndarray:
        """Relabel the pool through the class: one exponential-mechanism draw (query stream)."""
        return relabel_through_class(self._hclass, points, labels, epsilon, self._query_stream.rng)

    # -- queries ----------------------------------------------------------------------------
    def _prepare_queries(self, X: MatrixLike) -> _QueryBatch:
        """Validate the queries and put them in the form the phase boundary needs (no charge).

        Everything the next phase will do with these rows is checked here,
        where a refusal depends only on this call's own rows and public
        facts: the rows take the training set's form (:meth:`_pool_rows`),
        and the hypothesis class's ``prepare`` accepts them (a query outside
        the class's domain is refused now, not at the phase boundary, where
        the call that crosses it would raise for someone else's query).
        """
        X_checked = validate_data(
            self,
            X,
            reset=False,
            accept_sparse=self._accept_sparse(),
            dtype=None,
            ensure_all_finite=True,
        )
        rows = self._pool_rows(X, X_checked)
        if self._hclass is None:
            return _QueryBatch(rows, None)
        return _QueryBatch(rows, np.asarray(self._hclass.prepare(_dense(X_checked))))

    def _phase_rows(self, batch: _QueryBatch, n_jobs: int | None) -> _QueryBatch:
        """The rows the phase keeps and its teachers answer: the pool's own copy of the
        caller's rows, taken (after the charge, under the lock) before any teacher sees them."""
        return _QueryBatch(handed_rows(batch.rows), batch.points)

    def _dry_run(self, batch: _QueryBatch) -> None:
        """Rows of a kind the base estimator cannot read at all: refused, from public facts."""
        template = self.__dict__.get("_teacher_template", self.estimator)
        check_teachers_can_read(self, template, batch.rows, classes=self.classes_)

    def _pool_rows(self, X, X_checked):
        """The query rows in the training set's form, so that a phase's queries concatenate.

        The form is public (how the data holder passed the training set, and
        the names of its columns, never its values or dtypes). A DataFrame
        query stays one, with the training column labels (by position, which
        ``validate_data`` checked); an array query to a predictor fitted on a
        DataFrame becomes one with the training columns (dtypes inferred from
        the query itself); rows for a predictor fitted on an array become an
        array (numeric, else ``object``); for one fitted on a sparse matrix, a
        sparse matrix (a dense query must then be numeric, else ``ValueError``
        before the charge). Blocks of one form always concatenate.
        """
        form = self._pool_form
        if form == "sparse":
            if sparse.issparse(X_checked):
                return X_checked
            dense = np.asarray(X_checked)
            if dense.dtype.kind not in "biuf":
                try:
                    dense = dense.astype(np.float64)
                except (TypeError, ValueError):
                    raise ValueError(
                        f"{type(self).__name__} was fitted on a sparse matrix, and its next "
                        "phase trains on the queries in that form: dense query rows must be "
                        f"numeric, got dtype {dense.dtype}. Nothing was charged."
                    ) from None
            return sparse.csr_matrix(dense)
        dense = np.asarray(_dense(X_checked))
        if form == "array":
            return dense if dense.dtype.kind in "biuf" else dense.astype(object)
        if hasattr(X, "iloc"):  # columns by position, as validated (names, if strings)
            return X.set_axis(form[1], axis=1)
        import pandas as pd

        return pd.DataFrame(dense, columns=form[1]).infer_objects()

    def _answer_block(self, X: _QueryBatch, rng: np.random.Generator) -> np.ndarray:
        votes = self._query_votes(X.rows)
        params = self._state["params"]
        if self._state["bt"] is not None:
            outcomes = self._state["bt"].answer(votes / params.n_teachers, rng)
            return (outcomes != BT_BELOW).astype(np.intp)
        return sample_categorical(self._gaussian_law(votes, params), rng)

    @staticmethod
    def _gaussian_law(votes: np.ndarray, params: PracticalPhase) -> np.ndarray:
        """``P(v + N(0, sigma^2) >= T/2)`` and its complement, each tail computed directly."""
        if params.noise_sigma is None:
            raise ValueError(
                "the exact law in closed form exists for vote_release='gaussian' only."
            )
        z = (votes - 0.5 * params.n_teachers) / params.noise_sigma
        return np.stack([norm.sf(z), norm.cdf(z)], axis=1)

    def _record(self, X: _QueryBatch, answers: np.ndarray, first_slot: int) -> None:
        self._state["queries"].append(X.rows)
        if X.points is not None:
            self._state["points"].append(X.points)
        self._state["answers"].append(answers)

    def _query_votes(self, rows) -> np.ndarray:
        """Teachers voting ``classes_[1]`` on each query row, each row alone (protected rows).

        The queries are protected rows: a teacher that votes through its own
        ``predict`` answers each row alone, through the library's boundary
        (:meth:`~skprivpred._teachers.TeacherEnsemble.vote_counts` with
        ``protected=True``); stacked linear and tree teachers keep their
        batched votes, which are row-wise by construction.
        """
        return self._state["ensemble"].vote_counts(rows, protected=True)[:, 1]

    # -- non-private diagnostics (tests only) -------------------------------------------------
    def _vote_counts(self, X) -> np.ndarray:
        """Teachers voting ``classes_[1]`` per row. NOT PRIVATE: leaks the teachers."""
        return self._query_votes(self._prepare_queries(X).rows)

    def _output_distribution(self, X) -> np.ndarray:
        """Exact answer law per row (Gaussian aggregator). NOT PRIVATE: leaks the votes."""
        return self._gaussian_law(self._vote_counts(X), self._state["params"])
