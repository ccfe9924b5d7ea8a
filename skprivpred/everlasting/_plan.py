"""Planning the everlasting predictors: the paper's constants, phase plans and budgets.

The formulas of GenericBBL (Naor, Nissim, Stemmer & Yan) and of the practical
predictor: teacher counts, sample sizes, phases, and the between-thresholds budgets.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from numbers import Integral, Real

import numpy as np

from ..accounting._composition import advanced_composition_inverse, zcdp_rho
from ..exceptions import (
    PhaseDataError,
    PredictorHaltedError,
    PrivacyParameterError,
)
from ..mechanisms._sparse_vector import (
    LOG_BASE,
    BetweenThresholds,
    between_thresholds_composition,
    between_thresholds_gap,
    log_base,
)
from ..mechanisms._teacher_count import ceil_int
from ..utils._deprecation import (
    renamed_kwargs,
)
from ..utils._param_validation import (
    Interval,
    StrOptions,
    validate_parameter_constraints,
)

__all__ = ["genericbbl_plan", "practical_plan", "practical_schedule"]


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


#: The declared constraint of ``hypotheses`` (both everlasting predictors).
_VOTE_RELEASE = [StrOptions({"gaussian", "between_thresholds"})]
_CONSTANTS = [StrOptions({"paper", "simulation"})]


def _answers_or_halt(drawn: tuple[np.ndarray, PredictorHaltedError | None]) -> np.ndarray:
    """The answers of a stream call, or the halt it met (which carries them)."""
    answers, halt = drawn
    if halt is not None:
        raise halt
    return answers
