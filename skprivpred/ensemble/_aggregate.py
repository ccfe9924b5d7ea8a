"""Subsample-and-aggregate with a soft majority vote (Dwork & Feldman (2018), Theorem 4.1)."""

from __future__ import annotations

import dataclasses
import functools
from numbers import Integral, Real
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.dummy import DummyClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.utils.validation import check_is_fitted

from .._available import available_if_explained
from .._base import QueryPlan, answer
from .._hopeless import soft_majority_best_case, warn_if_hopeless
from .._teachers._fit import ConstantTeacher
from .._teachers._isolation import handed_rows
from .._teachers._rows import FALLBACK_LABEL_INDEX, concat_rows
from .._teachers._votes import TeacherEnsemble
from .._warnings import warn_user
from ..accounting._accountant import PrivacyAccountant
from ..accounting._composition import per_query_epsilon
from ..accounting._guarantee import GuaranteeUnit, PrivacyGuarantee
from ..exceptions import HorizonExhaustedError, InvalidParameterError, PrivacyWarning
from ..mechanisms._closed_forms import exponential_mechanism_proba, sample_categorical
from ..mechanisms._teacher_count import pac_n_partitions
from ..utils._deprecation import DEPRECATED, deprecated_constraints, renamed_param
from ..utils._param_validation import HasMethods, Interval, StrOptions, UserCodeParam
from ..utils._typing import MatrixLike, RandomStateLike, Self, VectorLike
from ._subsample import SubsampleMixin

__all__ = ["SubsampleAggregateClassifier"]

_TARGET_ERROR = [Interval(Real, 0, 1, closed="neither")]

#: Many-query mode's default rule gives every teacher at least this many rows per class.
ROWS_PER_CLASS = 10


class SubsampleAggregateClassifier(SubsampleMixin, ClassifierMixin, BaseEstimator):
    """Private prediction by subsample-and-aggregate with a soft majority vote.

    One clone of ``estimator`` (a teacher) is fitted on each of ``n_teachers``
    disjoint random parts of the training set. A query row is answered by
    drawing label ``k`` with probability proportional to
    ``exp(epsilon * c_k / 2)``, ``c_k`` being the number of teachers voting
    ``k`` (the exponential mechanism).

    **Guarantee.** Replace-one neighbours: every answered row (``predict``,
    ``score``) is ``(epsilon, 0)``-DP (Dwork & Feldman 2018, Theorem 4.1, with
    the proof's ``epsilon / 2`` weight), charged to ``accountant`` before any
    noise is drawn; ``fit`` releases nothing. With ``n_queries`` set, all
    answers together are ``(total_epsilon, total_delta)``-DP (zCDP composition
    of the ``eps0^2 / 8``-zCDP votes), and a call crossing the horizon raises
    or goes to the student. The teachers, votes and exact probabilities are
    secret (no ``predict_proba``); a pickled model holds the teachers.

    See the user guide: :ref:`subsample` (and :ref:`many-queries`,
    :ref:`teachers-that-fail`).

    Parameters
    ----------
    estimator : classifier, default=None
        The base learner, cloned once per part. ``None`` means
        ``LogisticRegression()``. Preprocessing that is fitted to data (scaling,
        encoding) must live *inside* it (for example a
        :class:`~sklearn.pipeline.Pipeline`), so that each teacher sees only its
        own part; preprocessing fitted on the whole training set would couple
        every teacher to every row and void the guarantee. **Fast teachers:**
        linear classifiers (``LogisticRegression``, ``RidgeClassifier``,
        ``SGDClassifier``, ``LinearSVC``, ...) and pipelines of affine steps
        (``StandardScaler``, ``MinMaxScaler``, ``MaxAbsScaler``, ``"passthrough"``,
        a ``ColumnTransformer`` of those over disjoint columns) ending in one
        vote through one stacked matrix product; other teachers (trees,
        encoders) through their own ``predict``.
    epsilon : float, default=None
        Privacy parameter of each answered query row, > 0; ``None`` means 1.0.
        The default is ``None`` rather than 1.0 because it must stay ``None``
        in many-query mode (with ``n_queries`` set the budget is
        ``total_epsilon`` and the per-row epsilon is derived from it).
    n_teachers : int, default=None
        Number of disjoint parts ``r`` (public; between 1 and the number of
        training rows). ``None``: Theorem 4.1's
        ``ceil(6 ln(4 (K - 1) / target_error) / epsilon)`` for ``K`` classes
        (23 for ``target_error=0.1, epsilon=1``, two classes), capped in
        many-query mode at ``n_samples // (10 K)``.
    target_error : float, default=0.1
        Target error in (0, 1) (not a regularisation strength); only used to
        derive ``n_teachers``.
    classes : array-like, default=None
        The public label set. ``None`` reads it from ``y`` and emits a
        :class:`~skprivpred.PrivacyWarning` (the labels present are information
        about the data).
    accountant : PrivacyAccountant, default=None
        Charged ``epsilon`` per query row before any noise is drawn; a call that
        would exceed its budget raises
        :class:`~skprivpred.BudgetExhaustedError` and changes nothing. Every copy
        of the estimator (``clone``, ``copy.deepcopy``, pickle, joblib workers,
        other processes) charges the accountant's one ledger. In many-query
        mode the horizon is counted in its ledger too; without an accountant
        the estimator creates one of its own (default ledger) at ``fit`` for
        that.
    n_jobs : int, default=None
        Number of joblib jobs for fitting the teachers, and for the votes of
        non-linear teachers on query batches (any joblib backend, set with
        ``joblib.parallel_config``; ``None`` means one job unless the active
        backend has its own default, as dask's: all the cluster's workers).
        The answers' noise is always drawn in the calling process.
    random_state : int, RandomState instance, Generator or None, default=None
        Seeds two independent streams: the fit stream (partition, teacher seeds)
        and the query stream (the answers' noise), which every query advances.
        ``None`` uses OS entropy and is the right choice in deployment: anyone
        who knows an integer seed can regenerate the noise, which voids the
        guarantee. Integer seeds are for tests and reproducible experiments.
    n_queries : int, default=None
        The horizon: the most query rows this fitted estimator will ever answer
        with its teachers, under one total budget, in all its copies together
        (deep copies, pickled copies, workers, restarted processes: the count
        lives in the accountant's ledger). ``None``: per-row mode
        (``epsilon`` per row; an accountant composes).
    total_epsilon : float, default=None
        Total epsilon of the whole transcript (many-query mode only), > 0.
    total_delta : float, default=None
        Total delta of the transcript (many-query mode only), in [0, 1); 0
        means basic composition only. ``None`` means ``1e-6`` in many-query
        mode (the default is ``None`` rather than ``1e-6`` because per-row mode
        has no total budget and refuses one). A
        :class:`~skprivpred.PrivacyWarning` is emitted if it is not below
        ``1 / n_samples``.
    min_samples_per_teacher : int, default=None
        Public rule for the number of teachers: ``n_samples //
        min_samples_per_teacher`` (``n`` is public under replace-one). The
        number of answers a budget sustains grows like the square of the
        number of teachers (each answer's zCDP cost ``eps0^2 / 8`` falls like
        ``1 / r^2`` at a fixed accuracy of the vote); 40 to 80 rows per
        logistic teacher suited Adult. Excludes ``n_teachers``.
    student : classifier, default=None
        Estimator cloned and fitted on the released answers by
        :meth:`fit_student`.
    on_exhausted : {"raise", "student"}, default="raise"
        What a call crossing the horizon does: raise (nothing answered), or
        answer the rows beyond it with the student (needs ``student``).
    alpha : float, default="deprecated"
        Old name of ``target_error``.

        .. deprecated:: 0.4
            ``alpha`` was renamed ``target_error`` in 0.4 and will be removed
            in 0.6.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The public label set.
    n_teachers_ : int
        The number of teachers used.
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during ``fit`` (only for inputs with string
        column names).
    privacy_guarantee_ : PrivacyGuarantee
        The guarantee of each answered row (per-row mode), or of all answers
        under one total budget (many-query mode, with the per-row epsilon and
        rho, the horizon and the accounting in ``details``).
    epsilon_per_query_ : float
        Epsilon of each answered row.
    rho_per_query_ : float
        zCDP parameter of each answered row, ``epsilon_per_query_ ** 2 / 8``.
    n_queries_ : int or None
        The horizon.
    queries_answered_ : int
        Number of query rows answered by the teachers since ``fit`` (with a
        horizon: by every copy of this fitted estimator, read from the ledger).
    queries_remaining_ : int or None
        Rows the horizon still allows.
    mode_ : {"aggregate", "student"}
        Who answers: the teachers, or the student after the hand-off.

    See Also
    --------
    skprivpred.audit.audit_epsilon : Black-box audit of the per-query epsilon.

    References
    ----------
    C. Dwork and V. Feldman. Privacy-preserving Prediction. COLT 2018,
    Theorem 4.1.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from skprivpred import SubsampleAggregateClassifier
    >>> X, y = make_classification(n_samples=2000, random_state=0)
    >>> clf = SubsampleAggregateClassifier(epsilon=1.0, classes=[0, 1], random_state=0)
    >>> clf.fit(X, y).n_teachers_
    23
    >>> clf.predict(X[:5]).shape
    (5,)
    """

    _default_estimator = LogisticRegression

    _parameter_constraints: dict = {
        "estimator": [UserCodeParam(HasMethods(["fit", "predict"]), kind="estimator"), None],
        "epsilon": [Interval(Real, 0, None, closed="neither"), None],
        "n_teachers": [Interval(Integral, 1, None, closed="left"), None],
        "target_error": _TARGET_ERROR,
        "alpha": deprecated_constraints(_TARGET_ERROR, "target_error"),
        "classes": ["array-like", None],
        "accountant": [PrivacyAccountant, None],
        "n_jobs": [Integral, None],
        "random_state": ["random_state"],
        "n_queries": [Interval(Integral, 1, None, closed="left"), None],
        "total_epsilon": [Interval(Real, 0, None, closed="neither"), None],
        "total_delta": [Interval(Real, 0, 1, closed="left"), None],
        "min_samples_per_teacher": [Interval(Integral, 1, None, closed="left"), None],
        "student": [UserCodeParam(HasMethods(["fit", "predict"]), kind="student"), None],
        "on_exhausted": [StrOptions({"raise", "student"})],
    }

    def __init__(
        self,
        estimator: BaseEstimator | None = None,
        *,
        epsilon: float | None = None,
        n_teachers: int | None = None,
        target_error: float = 0.1,
        classes: VectorLike | None = None,
        accountant: PrivacyAccountant | None = None,
        n_jobs: int | None = None,
        random_state: RandomStateLike = None,
        n_queries: int | None = None,
        total_epsilon: float | None = None,
        total_delta: float | None = None,
        min_samples_per_teacher: int | None = None,
        student: BaseEstimator | None = None,
        on_exhausted: str = "raise",
        alpha: float | str = DEPRECATED,
    ) -> None:
        self.estimator = estimator
        self.epsilon = epsilon
        self.n_teachers = n_teachers
        self.target_error = target_error
        self.classes = classes
        self.accountant = accountant
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.n_queries = n_queries
        self.total_epsilon = total_epsilon
        self.total_delta = total_delta
        self.min_samples_per_teacher = min_samples_per_teacher
        self.student = student
        self.on_exhausted = on_exhausted
        self.alpha = alpha

    def fit(self, X: MatrixLike, y: VectorLike, **fit_params: Any) -> Self:
        """Fit one teacher per disjoint random part of the training set.

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame, dask Array, dask DataFrame} \
                of shape (n_samples, n_features)
            Training rows, passed to the teachers unchanged. Must not contain
            NaN or infinity. A dask collection (with ``y`` one too, partitioned
            like it) is never computed into this process: each teacher is
            fitted on a worker, on the block the same keyed partition gives it
            in memory, and only the fitted teachers come back (see "Teachers on
            a cluster" in the scaling guide; ``n_jobs`` does not apply there).
        y : array-like of shape (n_samples,)
            Labels, of any type, all in ``classes``; a dask array or Series
            when ``X`` is a dask collection.
        **fit_params : dict
            Not supported; ``sample_weight`` in particular is refused because a
            weighted row can move an answer by more than one row.

        Returns
        -------
        self : SubsampleAggregateClassifier
            The fitted estimator.
        """
        budget = self._check_fit_arguments(fit_params)
        estimator = self._base_estimator()
        with self._unchanged_on_error():
            X, y, classes, n_samples = self._classifier_training_data(X, y)
            n_teachers = self._n_teachers_rule(budget, n_samples, len(classes))
            record = soft_majority_best_case(
                budget["epsilon_per_query"], n_teachers, len(classes), n_samples=n_samples
            )
            warn_if_hopeless(type(self).__name__, record)
            teachers = self._fit_teachers(
                estimator,
                X,
                y,
                None if y is None else np.searchsorted(classes, y),
                n_teachers,
                budget["horizon"],
                fallback=ConstantTeacher(FALLBACK_LABEL_INDEX),
            )
            self._ensemble = TeacherEnsemble(teachers, classes)
            self.classes_ = classes
            self._set_budget(budget, n_samples)
            self._best_case = record
        return self

    def n_teachers_for(self, n_samples: int, n_classes: int) -> int:
        """The number of teachers ``fit`` uses for ``n_samples`` rows and ``n_classes`` labels.

        A public rule: it reads the parameters and these two public sizes only
        (``n_samples`` is public under replace-one neighbours), never the data.

        Parameters
        ----------
        n_samples : int
            Number of training rows.
        n_classes : int
            Size of the public label set.

        Returns
        -------
        int
            ``n_teachers`` if set; else ``n_samples // min_samples_per_teacher``
            (at least 1) if that is set; else Dwork & Feldman's
            ``ceil(6 ln(4 (K - 1) / target_error) / epsilon)`` at the per-row epsilon,
            capped in many-query mode at ``n_samples // (10 K)`` (ten rows per
            class and teacher: past that, more teachers of fewer rows learn
            nothing more, and no accounting recovers it).
        """
        self._validate_params()
        return self._n_teachers_rule(self._check_params(), n_samples, n_classes)

    def _n_teachers_rule(self, budget: dict, n_samples: int, n_classes: int) -> int:
        if self.n_teachers is not None:
            return int(self.n_teachers)
        if self.min_samples_per_teacher is not None:
            return max(1, int(n_samples) // int(self.min_samples_per_teacher))
        theory = pac_n_partitions(budget["target_error"], budget["epsilon_per_query"], n_classes)
        if budget["horizon"] is None:
            return theory
        # Many-query mode: a long horizon asks for thousands of teachers, past the point
        # where a teacher still learns from its rows; stop at ROWS_PER_CLASS rows per class.
        return min(theory, max(1, int(n_samples) // (ROWS_PER_CLASS * n_classes)))

    # -- the budget: per query row, or one total for a horizon of rows ---------------
    def _check_params(self) -> dict:
        """Cross-parameter rules; returns the budget (per-row epsilon, horizon, totals).

        Per-row mode (``n_queries=None``) takes ``epsilon`` and refuses
        ``total_epsilon``/``total_delta``; many-query mode takes
        ``total_epsilon`` (and ``total_delta``) and refuses ``epsilon``. The
        target error is read here, through its deprecated old name ``alpha`` too.
        """
        target_error = renamed_param(self, "alpha", "target_error")
        if self.n_teachers is not None and self.min_samples_per_teacher is not None:
            raise InvalidParameterError(
                f"n_teachers={self.n_teachers!r} and min_samples_per_teacher="
                f"{self.min_samples_per_teacher!r} both set the number of teachers; pass only "
                "one of them."
            )
        if self.on_exhausted == "student" and self.student is None:
            raise InvalidParameterError(
                "on_exhausted='student' needs a student estimator, got student=None."
            )
        if self.n_queries is None:
            if self.total_epsilon is not None or self.total_delta is not None:
                raise InvalidParameterError(
                    f"total_epsilon={self.total_epsilon!r} and total_delta={self.total_delta!r} "
                    "are the budget of a many-query session; set its horizon n_queries too, or "
                    "use epsilon (the budget of each query row) and leave both None."
                )
            epsilon = 1.0 if self.epsilon is None else float(self.epsilon)
            return {"epsilon_per_query": epsilon, "horizon": None, "target_error": target_error}
        if self.epsilon is not None:
            raise InvalidParameterError(
                f"epsilon={self.epsilon!r} is the budget of each query row, but n_queries is set: "
                "a many-query session takes its total budget as total_epsilon (and "
                "total_delta) and derives the per-row epsilon; pass epsilon=None."
            )
        if self.total_epsilon is None:
            raise InvalidParameterError(
                f"n_queries={self.n_queries!r} needs the session's total budget: pass "
                "total_epsilon (a float > 0)."
            )
        total_epsilon = float(self.total_epsilon)
        total_delta = 1e-6 if self.total_delta is None else float(self.total_delta)
        eps0 = per_query_epsilon(total_epsilon, total_delta, int(self.n_queries))
        return {
            "epsilon_per_query": eps0,
            "horizon": int(self.n_queries),
            "total_epsilon": total_epsilon,
            "total_delta": total_delta,
            "target_error": target_error,
        }

    def _set_budget(self, budget: dict, n_samples: int) -> None:
        eps0 = budget["epsilon_per_query"]
        self.epsilon_per_query_ = eps0
        # The vote is eps0-bounded-range, hence eps0^2/8-zCDP (Cesar & Rogers 2021).
        self.rho_per_query_ = eps0**2 / 8.0
        self.n_queries_ = budget["horizon"]
        self.mode_ = "aggregate"
        self._buffer: list[tuple[Any, np.ndarray]] = []  # (query rows, released labels)
        self._student: Any = None
        if self.n_queries_ is None:
            self.privacy_guarantee_ = PrivacyGuarantee(
                eps0,
                0.0,
                unit=GuaranteeUnit.QUERY_ROW,
                theorem=(
                    "Dwork & Feldman (2018), Theorem 4.1 (weight epsilon/2 per vote); "
                    "zCDP of the bounded-range vote: Cesar & Rogers (2021)"
                ),
                rho=self.rho_per_query_,
                details={"n_teachers": self.n_teachers_},
            )
            return
        if 0 < budget["total_delta"] and budget["total_delta"] >= 1.0 / n_samples:
            warn_user(
                f"total_delta={budget['total_delta']!r} is not below 1/n_samples = "
                f"{1.0 / n_samples:.3g}: a delta that large allows releasing a training row.",
                PrivacyWarning,
            )
        self.privacy_guarantee_ = PrivacyGuarantee(
            budget["total_epsilon"],
            budget["total_delta"],
            unit=GuaranteeUnit.ALL_ANSWERS,
            theorem=(
                "Dwork & Feldman (2018), Theorem 4.1 (each answer); each answer is "
                "eps0-bounded-range, hence eps0^2/8-zCDP (Cesar & Rogers 2021); zCDP "
                "composition over the horizon (Bun & Steinke 2016); tight Renyi conversion "
                "(Balle et al. 2020)"
            ),
            details={
                "n_queries": self.n_queries_,
                "epsilon_per_query": eps0,
                "rho_per_query": self.rho_per_query_,
                "n_teachers": self.n_teachers_,
                "accounting": (
                    "the larger per-row epsilon of basic composition and of zCDP composition "
                    "(rho = eps0^2/8 per row)"
                ),
            },
        )

    @property
    def queries_remaining_(self) -> int | None:
        """Rows the horizon still allows (``None`` without a horizon)."""
        check_is_fitted(self, "n_teachers_")
        if self.n_queries_ is None:
            return None
        return max(self.n_queries_ - self.queries_answered_, 0)

    # -- queries ------------------------------------------------------------------
    def _answer_law(self, counts: np.ndarray) -> np.ndarray:
        """Exact output law for given vote counts (exponential mechanism, weight eps0/2)."""
        return exponential_mechanism_proba(counts, self.epsilon_per_query_)

    def _query_plan(self, method: str = "predict") -> QueryPlan:
        """How ``predict`` (or the student's ``predict_proba``) answers (the answering path).

        In teacher mode: the vote counts, then the soft-majority draw (one
        uniform per row), charged at ``epsilon_per_query_`` within the
        horizon; the rows beyond the horizon go to the student when
        ``on_exhausted="student"``. In student mode: the student's answers,
        free post-processing.
        """
        check_is_fitted(self, "n_teachers_")
        if self.mode_ == "student":
            return self._student_plan(method)
        classes = self.classes_
        return self._teacher_plan(
            self._ensemble.vote_counts,  # (on a cluster: the ensemble alone is shipped)
            draw=lambda counts, rng: sample_categorical(self._answer_law(counts), rng),
            finish=lambda index: classes[index],
            epsilon=self.epsilon_per_query_,
            rho=self.rho_per_query_,
            row_wise=True,  # sample_categorical draws exactly one uniform per row
            released=None if self.student is None else self._keep_for_student,
            handoff=self._hand_off if self.on_exhausted == "student" else None,
            dask_refusal=None if self.student is None else _STUDENT_KEEPS_ROWS,
        )

    def _student_plan(self, method: str) -> QueryPlan:
        """The student's answers: post-processing of released answers, free."""
        if method == "predict":
            values = functools.partial(_student_labels, self._student)
            return self._teacher_plan(values, answer_meta=(self.classes_.dtype, ()))
        values = functools.partial(_student_proba, self._student, self.classes_)
        return self._teacher_plan(values, answer_meta=(float, (len(self.classes_),)))

    def _keep_for_student(self, rows, labels: np.ndarray) -> None:
        """Keep exactly what was released (the rows, copied, and their labels) for the student."""
        self._buffer.append((handed_rows(rows), labels))

    def _hand_off(self) -> QueryPlan:
        """At the horizon: fit the student on the released answers; its plan answers the rest."""
        if not self._buffer:
            raise HorizonExhaustedError(
                "the horizon was used up by other copies of this fitted estimator, and this copy "
                "released no answers its student could learn from; nothing was answered."
            )
        self.fit_student()
        return self._student_plan("predict")

    def predict(self, X: MatrixLike) -> np.ndarray:
        """Answer each row with a label drawn from the soft-majority law.

        Each row is one query, answered with fresh noise at ``epsilon_per_query_``;
        the accountant is charged for all rows before any noise is drawn. With a
        horizon (``n_queries``), a call that would cross it raises
        :class:`~skprivpred.BudgetExhaustedError` and changes nothing, unless
        ``on_exhausted="student"``: then the rows up to the horizon are answered
        by the teachers and the rest by the student, fitted at that moment on
        the released answers. After the hand-off every answer comes from the
        student, free and deterministic.

        **Dask queries.** ``X`` may be a ``dask.array.Array`` or a
        ``dask.dataframe.DataFrame``: its rows are counted and every one is
        charged before any vote is counted (a spent budget refuses before any
        task over them runs); the votes are counted where the rows live, only
        the counts come to this process, the noise is drawn here, and the
        answers come back as a ``dask.array.Array`` with the queries' row
        chunks (a DataFrame's partitions), drawn once: computing it again
        replays them. See "Queries on a cluster" in the scaling guide.

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame, dask collection} of shape (n_queries, n_features)
            Query rows (no NaN or infinity).

        Returns
        -------
        ndarray of shape (n_queries,)
            One label per row, from ``classes_`` (a ``dask.array.Array`` for
            dask queries).
        """
        return answer(self, X, self._query_plan())

    def fit_student(self, X: MatrixLike | None = None) -> Self:
        """Hand off to the student: fit it on every released (query, answer) pair.

        From then on ``predict`` (and ``predict_proba``, if the student has it)
        answer from the student: post-processing of released answers, at no
        further privacy cost to the training set. The student embeds the
        queries it was trained on: those queries are not protected. To avoid
        that, call ``fit_student(X_public)`` with public unlabelled rows before
        answering anyone else's queries: they are answered (and charged) like
        any query, and the student learns from them.

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame} of shape (n_rows, n_features), default=None
            Rows to label through the private mechanism first (charged, within
            the horizon).

        Returns
        -------
        self : SubsampleAggregateClassifier
            The estimator, now in student mode.
        """
        check_is_fitted(self, "n_teachers_")
        if self.student is None:
            raise InvalidParameterError(
                "fit_student needs a student estimator: set student=... before fit."
            )
        if self.mode_ == "student":
            raise ValueError("the student is already fitted; this estimator answers from it.")
        if X is not None:  # charged within the horizon, never handed off
            answer(self, X, dataclasses.replace(self._query_plan(), handoff=None))
        if not self._buffer:
            raise ValueError("no answers were released yet: the student has nothing to learn from.")
        X_seen = concat_rows([rows for rows, _ in self._buffer])
        y_seen = np.concatenate([labels for _, labels in self._buffer])
        if np.unique(y_seen).size < 2:
            student = DummyClassifier(strategy="most_frequent")
        else:
            student = clone(self.student)
        self._student = student.fit(X_seen, y_seen)
        self.mode_ = "student"
        return self

    def _student_has_proba(self):
        return getattr(self, "mode_", None) == "student" and hasattr(self._student, "predict_proba")

    def _why_no_proba(self) -> str:
        if getattr(self, "mode_", None) == "student":
            return (
                f"the student ({type(self._student).__name__}) answers now, and it has no "
                "predict_proba; give a student that has one."
            )
        return (
            "the teachers' answer is one noisy label per row, and the exact probability of "
            "that label would disclose the teachers' vote count (a secret). "
            "SubsampleAverageClassifier releases private probabilities (predict_proba, "
            "decision_function: noisy teacher averages, charged per row); a student "
            "(student=..., fit_student) gives free probabilities here once it answers."
        )

    @available_if_explained(_student_has_proba, _why_no_proba)
    def predict_proba(self, X: MatrixLike) -> np.ndarray:
        """Class probabilities of the student (student mode only; free).

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame, dask collection} of shape (n_queries, n_features)
            Query rows (for dask queries the student answers where they live,
            lazily: a ``dask.array.Array``).

        Returns
        -------
        ndarray of shape (n_queries, n_classes)
            The student's probabilities, in the order of ``classes_``.
        """
        return answer(self, X, self._query_plan("predict_proba"))

    @available_if_explained(
        lambda self: False,
        lambda self: (
            "its only release is one noisy label per row; a real-valued score would disclose "
            "the teachers' vote count (a secret). SubsampleAverageClassifier releases private "
            "scores (decision_function) and probabilities (predict_proba)."
        ),
    )
    def decision_function(self, X: MatrixLike) -> np.ndarray:
        """Not offered: no instance has it (``hasattr`` is False).

        Calling it raises an ``AttributeError`` that says why: the only release is
        one noisy label per row, and a real-valued score would disclose the
        teachers' vote count. :class:`~skprivpred.SubsampleAverageClassifier`
        releases private scores and probabilities.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
            Query rows (never read).

        Returns
        -------
        ndarray
            Never returns.
        """
        raise AssertionError(
            "unreachable: the descriptor refuses every instance"
        )  # pragma: no cover

    # -- non-private diagnostics (tests and audits only) ------------------------------
    def _vote_counts(self, X) -> np.ndarray:
        """Teacher votes per class. NOT PRIVATE: leaks the training data; never charges."""
        return self._ensemble.vote_counts(self._validate_queries(X), n_jobs=self.n_jobs)

    def _teacher_means(self, X) -> np.ndarray:
        """Share of the teachers voting for each label, shape (n_rows, n_classes).

        NOT PRIVATE: leaks the votes; never charges. Each teacher adds at most
        ``1 / n_teachers_`` to an entry, what private model selection needs.
        """
        return self._vote_counts(X) / self.n_teachers_

    def _protected_teacher_means(self, X) -> np.ndarray:
        """:meth:`_teacher_means` on PROTECTED rows (a private search's validation part).

        NOT PRIVATE; never charges. No dry run; stacked linear and tree teachers
        vote batched (row-wise by construction), every other teacher answers
        each row alone through the one boundary
        (:meth:`~skprivpred._teachers._votes.TeacherEnsemble.vote_counts` with
        ``protected=True``).
        """
        rows = self._validate_protected_rows(X)
        return self._ensemble.vote_counts(rows, protected=True) / self.n_teachers_

    def _output_distribution(self, X) -> np.ndarray:
        """Exact answer law per row. NOT PRIVATE: leaks the vote counts; never charges."""
        return self._answer_law(self._vote_counts(X))


_STUDENT_KEEPS_ROWS = (
    "SubsampleAggregateClassifier with a student keeps every answered query row in this "
    "process for fit_student, so it does not answer a dask collection of queries: compute the "
    "queries first (X.compute()) if they fit in memory, or answer them with student=None. "
    "Nothing was answered or charged."
)


def _student_labels(student, X, n_jobs=None) -> np.ndarray:
    """The student's labels at ``X`` (free)."""
    return np.asarray(student.predict(X))


def _student_proba(student, classes: np.ndarray, X, n_jobs=None) -> np.ndarray:
    """The student's probabilities at ``X`` in the columns of ``classes`` (free)."""
    proba = np.zeros((X.shape[0], len(classes)))
    proba[:, np.searchsorted(classes, student.classes_)] = student.predict_proba(X)
    return proba
