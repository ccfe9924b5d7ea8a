"""The practical everlasting predictor, :class:`PrivateEverlastingClassifier`."""

from __future__ import annotations

from dataclasses import replace
from numbers import Integral, Real
from typing import Any

import numpy as np
from scipy import sparse
from scipy.stats import norm
from sklearn.base import BaseEstimator, clone
from sklearn.utils import get_tags
from sklearn.utils.validation import validate_data

from .._base import (
    keep_frame,
)
from .._teachers._dry_run import check_teachers_can_read
from .._teachers._fit import fit_teachers
from .._teachers._isolation import handed_rows
from .._teachers._partition import random_partition
from .._teachers._rows import concat_rows
from .._teachers._votes import TeacherEnsemble
from .._warnings import warn_user
from ..accounting._accountant import PrivacyAccountant
from ..accounting._composition import eps_of_rho, zcdp_rho
from ..accounting._guarantee import GuaranteeUnit, PrivacyGuarantee
from ..exceptions import (
    InvalidParameterError,
    PrivacyParameterError,
)
from ..finite._hypotheses import ThresholdClass
from ..mechanisms._closed_forms import sample_categorical
from ..mechanisms._sparse_vector import BT_BELOW, between_thresholds_gap
from ..mechanisms._teacher_count import ceil_int
from ..utils._deprecation import (
    DEPRECATED,
    deprecated_constraints,
    renamed_param,
)
from ..utils._param_validation import (
    HasMethods,
    Interval,
    UserCodeParam,
)
from ..utils._typing import MatrixLike, RandomStateLike, Self, VectorLike
from ._hypothesis_class import _HYPOTHESIS_CLASS_CONSTRAINTS, _resolve_hypothesis_class
from ._plan import (
    _OPEN_UNIT,
    _POSITIVE,
    _POSITIVE_INT,
    _VOTE_RELEASE,
    PRACTICAL_GROWTH,
    RELABEL_RHO_SHARE,
    PracticalPhase,
    _practical_phases,
    largest_top_budget,
    practical_bt_privacy,
    relabel_epsilon,
)
from ._relabel import relabel_through_class
from ._stream import STATUS_ACTIVE, _dense, _EverlastingStream, _pool_form, _QueryBatch

__all__ = ["PrivateEverlastingClassifier"]


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
        :class:`~skprivpred.finite.HypothesisClass`: ``n_hypotheses``,
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
        (:meth:`~skprivpred._teachers._votes.TeacherEnsemble.vote_counts` with
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
