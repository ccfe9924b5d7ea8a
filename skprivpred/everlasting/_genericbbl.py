"""GenericBBL (Naor, Nissim, Stemmer & Yan): the private everlasting predictor of the
paper, :class:`GenericBBLClassifier`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from sklearn.utils.validation import validate_data

from .._warnings import warn_user
from ..accounting._accountant import PrivacyAccountant
from ..accounting._guarantee import GuaranteeUnit, PrivacyGuarantee
from ..exceptions import (
    InsufficientSampleError,
    InvalidParameterError,
    PhaseDataError,
    PrivacyParameterError,
    PrivacyWarning,
)
from ..mechanisms._sparse_vector import BT_BELOW, LOG_BASE
from ..utils._deprecation import (
    DEPRECATED,
    deprecated_constraints,
    renamed_param,
)
from ..utils._param_validation import (
    Data,
    validate_parameter_constraints,
)
from ..utils._typing import MatrixLike, RandomStateLike, Self, VectorLike
from ._hypothesis_class import _HYPOTHESIS_CLASS_CONSTRAINTS, _resolve_hypothesis_class
from ._plan import (
    _CONSTANTS,
    _LOG_BASE_RANGE,
    _OPEN_UNIT,
    _POSITIVE,
    _POSITIVE_INT,
    OVERRIDE_KEYS,
    SIMULATION_ONLY_KEYS,
    GenericBBLPhase,
    _check_paper_ranges,
    _GenericBBLSchedule,
)
from ._relabel import label_boost
from ._stream import _OVERRIDE_CONSTRAINTS, STATUS_ACTIVE, _as_column_if_1d, _EverlastingStream

__all__ = ["GenericBBLClassifier"]


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
        :mod:`skprivpred.finite`): a ``ThresholdClass`` or a
        ``FiniteHypothesisClass``; ``"thresholds"`` is
        ``ThresholdClass(direction="increasing")``. A class of your own is
        accepted in the row-wise protocol only (the Notes of
        :class:`~skprivpred.finite.HypothesisClass`: ``n_hypotheses``,
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
