"""Subsample averaging with calibrated noise (Dwork & Feldman (2018), Lemmas 4.5, 4.6, Cor. 4.7)."""

from __future__ import annotations

import math
from contextlib import ExitStack
from numbers import Integral, Real
from typing import Any

import numpy as np
from scipy.stats import norm
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.linear_model import LogisticRegression
from sklearn.tree import DecisionTreeRegressor
from sklearn.utils.validation import check_is_fitted

from .._base import QueryPlan, answer, check_noise_delta
from .._hopeless import BEST_CASE_THRESHOLD, BestCase, smallest_epsilon, warn_if_hopeless
from .._teachers._dask_teachers import is_dask_input
from .._teachers._fit import ConstantTeacher
from .._teachers._isolation import freeze_rows, library_numerics, teacher_run
from .._teachers._rows import FALLBACK_LABEL_INDEX
from .._teachers._trees import StackedPredictions
from .._teachers._votes import (
    TeacherEnsemble,
    fallback_value,
    protected_proba_sum,
    teacher_proba,
    teacher_values,
)
from ..accounting._accountant import PrivacyAccountant
from ..accounting._guarantee import GuaranteeUnit, PrivacyGuarantee
from ..exceptions import InvalidParameterError
from ..mechanisms._closed_forms import (
    gaussian_clip_bernoulli_proba,
    gaussian_sigma,
    laplace_clip_bernoulli_proba,
    laplace_positive_proba,
    laplace_scale,
    sample_categorical,
)
from ..mechanisms._exact import (
    DEFAULT_GRID_STEPS,
    discrete_gaussian_sigma,
    grid_gaussian_release,
    grid_laplace_release,
)
from ..mechanisms._teacher_count import agnostic_n_partitions
from ..utils._deprecation import DEPRECATED, deprecated_constraints, renamed_param
from ..utils._param_validation import Bounds, HasMethods, Interval, StrOptions, UserCodeParam
from ..utils._typing import MatrixLike, RandomStateLike, Self, VectorLike
from ._subsample import SubsampleMixin

__all__ = [
    "SubsampleAverageClassifier",
    "SubsampleAverageRegressor",
    "default_tree_depth",
    "project_to_simplex",
]

# Real-valued releases are noised on a public grid of step sensitivity / GRID_STEPS
# (see mechanisms.grid_laplace_release): the noise scale grows by 1/GRID_STEPS.
GRID_STEPS = DEFAULT_GRID_STEPS

_TARGET_ERROR = [Interval(Real, 0, 1, closed="neither")]
_LABEL_RULE = [StrOptions({"sample", "threshold"})]


def project_to_simplex(V: MatrixLike) -> np.ndarray:
    """Euclidean projection of each row onto the probability simplex.

    Parameters
    ----------
    V : array-like of shape (n_rows, n_classes)
        Rows to project.

    Returns
    -------
    ndarray of shape (n_rows, n_classes)
        The closest probability vectors (non-negative, summing to one).
    """
    V = np.atleast_2d(np.asarray(V, dtype=float))
    n_rows, n_classes = V.shape
    descending = -np.sort(-V, axis=1)
    excess = np.cumsum(descending, axis=1) - 1.0
    ranks = np.arange(1, n_classes + 1)
    support = descending - excess / ranks > 0  # true on a prefix of the sorted row
    last = n_classes - 1 - np.argmax(support[:, ::-1], axis=1)
    theta = excess[np.arange(n_rows), last] / (last + 1)
    return np.maximum(V - theta[:, None], 0.0)


# Constraints shared by both estimators (each adds its own).
_NOISY_AVERAGE_CONSTRAINTS: dict = {
    "estimator": [UserCodeParam(HasMethods(["fit", "predict"]), kind="estimator"), None],
    "epsilon": [Interval(Real, 0, None, closed="neither")],
    "n_teachers": [Interval(Integral, 1, None, closed="left"), None],
    "noise": [StrOptions({"laplace", "gaussian"})],
    "delta": [Interval(Real, 0, 1, closed="left")],
    "accountant": [PrivacyAccountant, None],
    "n_jobs": [Integral, None],
    "random_state": ["random_state"],
}


class _NoisyAverageMixin(SubsampleMixin):
    """Release of teacher averages: noise scales, grid releases, charging."""

    # Constructor parameters of the subclasses.
    noise: Any
    delta: Any

    # The result of Dwork & Feldman (2018) each estimator's guarantee rests on.
    _theorem: str

    def _set_noise(self, epsilon: float, delta: float, sensitivity: float):
        self._noise = self.noise  # queries use what was fitted, whatever set_params does later
        self.sensitivity_ = sensitivity
        if self.noise == "laplace":
            self.noise_scale_ = laplace_scale(sensitivity, epsilon)
        else:
            self.noise_scale_ = gaussian_sigma(sensitivity, epsilon, delta, method="analytic")
            discrete_gaussian_sigma(GRID_STEPS + 1, epsilon, delta)  # calibrate (cached) at fit
        self.privacy_guarantee_ = PrivacyGuarantee(
            epsilon,
            delta,
            unit=GuaranteeUnit.QUERY_ROW,
            theorem=self._theorem,
            details={
                "n_teachers": self.n_teachers_,
                "noise": self.noise,
                "sensitivity": sensitivity,
                "noise_scale": self.noise_scale_,
            },
        )

    def _noisy_values(self, values: np.ndarray, rng, l1_axis: int | None = None) -> np.ndarray:
        """One real-valued release of ``values`` on the public grid of step ``sensitivity_ / 1000``.

        Laplace: integer discrete-Laplace noise (per value, or for the L1
        sensitivity of each vector along ``l1_axis``). Gaussian: discrete
        Gaussian noise, exactly calibrated (one value per release).
        """
        epsilon, delta = self.privacy_guarantee_.epsilon, self.privacy_guarantee_.delta
        if self._noise == "laplace":
            return grid_laplace_release(
                values, self.sensitivity_, epsilon, rng, GRID_STEPS, l1_axis
            )
        return grid_gaussian_release(values, self.sensitivity_, epsilon, delta, rng, GRID_STEPS)


class SubsampleAverageClassifier(_NoisyAverageMixin, ClassifierMixin, BaseEstimator):
    """Private prediction by averaging disjoint teachers and adding calibrated noise.

    One clone of ``estimator`` (a teacher) is fitted on each of ``n_teachers``
    disjoint random parts; a query row is answered from the noisy average of
    the teachers' votes (or probability vectors): ``predict`` turns it into a
    label by ``label_rule``, ``predict_proba`` and ``decision_function``
    release the noisy average itself.

    **Guarantee.** Replace-one neighbours: one row moves the average by at most
    ``1/r`` (``2/r`` in L1 norm with more than two labels), so every row of
    every query call is ``(epsilon, delta)``-DP (``delta = 0`` with Laplace
    noise; Dwork & Feldman 2018, Lemma 4.5 with the stability of Lemma 4.6 and
    the Laplace scale ``gamma / epsilon``), charged before any noise is drawn.
    Real values are released on a public grid with exact integer noise. The
    teachers and the averages are secret.

    See the user guide: :ref:`subsample` (and :ref:`teachers-that-fail`).

    Parameters
    ----------
    estimator : classifier, default=None
        Base learner cloned per part (``None``: ``LogisticRegression()``).
        Fitted preprocessing must live inside it (a Pipeline).
    epsilon : float, default=1.0
        Privacy parameter of each answered row and method call, > 0.
    n_teachers : int, default=None
        Number of parts ``r`` (public). ``None``:
        ``ceil(2 / (target_error epsilon))`` (20 at ``target_error=0.1``,
        ``epsilon=1``).
    target_error : float, default=0.1
        Target excess error in (0, 1) (not a regularisation strength); only
        used to derive ``n_teachers``.
    base_output : {"label", "proba"}, default="label"
        What each teacher contributes: its predicted label (the paper) or its
        ``predict_proba`` (same sensitivity).
    label_rule : {"sample", "threshold"}, default="sample"
        How ``predict`` turns the noisy average into a label.
    classes : array-like, default=None
        The public label set (``None`` reads it from ``y`` with a
        :class:`~skprivpred.PrivacyWarning`).
    noise : {"laplace", "gaussian"}, default="laplace"
        Laplace gives ``(epsilon, 0)``-DP. Gaussian (two labels only) gives
        ``(epsilon, delta)``-DP: labels are drawn from the closed forms of the
        continuous Gaussian mechanism (analytic calibration of Balle & Wang
        2018), real-valued releases add discrete Gaussian noise on the public
        grid, calibrated exactly (``mechanisms.grid_gaussian_release``).
    delta : float, default=0.0
        Must be 0 with Laplace noise (the default, pure DP); in (0, 1) with
        Gaussian noise (``1e-6`` is a usual choice).
    accountant : PrivacyAccountant, default=None
        Charged ``(epsilon, delta)`` per row of every query call before any noise
        is drawn; shared, not copied, by ``clone`` and ``copy.deepcopy``.
    n_jobs : int, default=None
        joblib jobs for fitting the teachers, and for the votes of non-linear
        teachers on query batches (any joblib backend).
    random_state : int, RandomState instance, Generator or None, default=None
        Seeds the fit stream (partition) and the query stream (noise). ``None``
        (OS entropy) in deployment; a known seed voids the guarantee.
    alpha : float, default="deprecated"
        Old name of ``target_error``.

        .. deprecated:: 0.4
            ``alpha`` was renamed ``target_error`` in 0.4 and will be removed
            in 0.6.
    prediction_rule : {"sample", "threshold"}, default="deprecated"
        Old name of ``label_rule``.

        .. deprecated:: 0.4
            ``prediction_rule`` was renamed ``label_rule`` in 0.4 and will be
            removed in 0.6.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The public label set.
    n_teachers_ : int
        Number of teachers.
    sensitivity_ : float
        Bound on the change of one averaged coordinate (``1/r``; ``2/r`` in L1
        norm with more than two labels).
    noise_scale_ : float
        Laplace scale ``sensitivity_ / epsilon``, or the Gaussian standard
        deviation.
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during ``fit`` (string column names only).
    privacy_guarantee_ : PrivacyGuarantee
        The guarantee of each answered row, per query method call (noise,
        sensitivity, noise scale and number of teachers in ``details``).
    queries_answered_ : int
        Query rows answered since ``fit``.

    See Also
    --------
    SubsampleAggregateClassifier : Soft-majority vote; better when teachers agree.

    References
    ----------
    C. Dwork and V. Feldman. Privacy-preserving Prediction. COLT 2018,
    Section 4 (Lemmas 4.5 and 4.6, Corollary 4.7).

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from skprivpred import SubsampleAverageClassifier
    >>> X, y = make_classification(n_samples=2000, random_state=0)
    >>> clf = SubsampleAverageClassifier(classes=[0, 1], random_state=0).fit(X, y)
    >>> clf.n_teachers_, clf.predict_proba(X[:2]).shape
    (20, (2, 2))
    """

    _default_estimator = LogisticRegression
    _theorem = (
        "Dwork & Feldman (2018), Lemma 4.5 with the stability 1/r of Lemma 4.6 "
        "(Laplace scale gamma/epsilon) and the partition count of Corollary 4.7"
    )

    _parameter_constraints: dict = {
        **_NOISY_AVERAGE_CONSTRAINTS,
        "target_error": _TARGET_ERROR,
        "base_output": [StrOptions({"label", "proba"})],
        "label_rule": _LABEL_RULE,
        "classes": ["array-like", None],
        "alpha": deprecated_constraints(_TARGET_ERROR, "target_error"),
        "prediction_rule": deprecated_constraints(_LABEL_RULE, "label_rule"),
    }

    def __init__(
        self,
        estimator: BaseEstimator | None = None,
        *,
        epsilon: float = 1.0,
        n_teachers: int | None = None,
        target_error: float = 0.1,
        base_output: str = "label",
        label_rule: str = "sample",
        classes: VectorLike | None = None,
        noise: str = "laplace",
        delta: float = 0.0,
        accountant: PrivacyAccountant | None = None,
        n_jobs: int | None = None,
        random_state: RandomStateLike = None,
        alpha: float | str = DEPRECATED,
        prediction_rule: str = DEPRECATED,
    ) -> None:
        self.estimator = estimator
        self.epsilon = epsilon
        self.n_teachers = n_teachers
        self.target_error = target_error
        self.base_output = base_output
        self.label_rule = label_rule
        self.classes = classes
        self.noise = noise
        self.delta = delta
        self.accountant = accountant
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.alpha = alpha
        self.prediction_rule = prediction_rule

    def fit(self, X: MatrixLike, y: VectorLike, **fit_params: Any) -> Self:
        """Fit one teacher per disjoint random part of the training set.

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame, dask Array, dask DataFrame} \
                of shape (n_samples, n_features)
            Training rows (no NaN or infinity), passed to the teachers unchanged.
            A dask collection (with ``y`` one too, partitioned like it) is never
            computed into this process: each teacher is fitted on a worker, on
            the block the same keyed partition gives it in memory, and only the
            fitted teachers come back (see "Teachers on a cluster" in the
            scaling guide; ``n_jobs`` does not apply there).
        y : array-like of shape (n_samples,)
            Labels, all in ``classes``; a dask array or Series when ``X`` is a
            dask collection.
        **fit_params : dict
            Not supported (``sample_weight`` is refused).

        Returns
        -------
        self : SubsampleAverageClassifier
            The fitted estimator.
        """
        self._check_fit_arguments(fit_params)
        target_error = renamed_param(self, "alpha", "target_error")
        label_rule = renamed_param(self, "prediction_rule", "label_rule")
        epsilon, delta = float(self.epsilon), float(self.delta)
        estimator = self._base_estimator()
        with self._unchanged_on_error():
            X, y, classes, n_samples = self._classifier_training_data(X, y)
            n_teachers = self._n_teachers_rule(target_error)
            teachers = self._fit_teachers(
                estimator,
                X,
                y,
                None if y is None else np.searchsorted(classes, y),
                n_teachers,
                fallback=ConstantTeacher(FALLBACK_LABEL_INDEX),
            )
            self._teachers = teachers
            self._ensemble = TeacherEnsemble(teachers, classes)
            # (_prediction_rule: the fitted label rule, read by the query methods)
            self._base_output, self._prediction_rule = self.base_output, label_rule
            self.classes_ = classes
            if len(classes) > 2 and self.noise == "gaussian":
                raise InvalidParameterError(
                    "noise='gaussian' is offered for two labels; with "
                    f"{len(classes)} labels use noise='laplace'."
                )
            self._set_noise(
                epsilon, delta, sensitivity=(1.0 if len(classes) == 2 else 2.0) / n_teachers
            )
            self._best_case = _average_best_case(
                self.noise, label_rule, epsilon, delta, n_teachers, len(classes)
            )
            warn_if_hopeless(type(self).__name__, self._best_case)
        return self

    def n_teachers_for(self, n_samples: int, n_classes: int) -> int:
        """The number of teachers ``fit`` uses for ``n_samples`` rows and ``n_classes`` labels.

        A public rule: it reads the parameters only, never the data.

        Parameters
        ----------
        n_samples : int
            Number of training rows (unused: the rule does not depend on it).
        n_classes : int
            Size of the public label set (unused likewise).

        Returns
        -------
        int
            ``n_teachers`` if set; else Dwork & Feldman's
            ``ceil(2 / (target_error epsilon))`` (Corollary 4.7).
        """
        self._validate_params()
        return self._n_teachers_rule(renamed_param(self, "alpha", "target_error"))

    def _n_teachers_rule(self, target_error: float) -> int:
        if self.n_teachers is not None:
            return int(self.n_teachers)
        return agnostic_n_partitions(target_error, float(self.epsilon))

    def _check_params(self) -> None:
        """Cross-parameter rules: ``noise`` and ``delta``; ``base_output`` and ``estimator``."""
        check_noise_delta(self.noise, self.delta)
        estimator = self._base_estimator()
        if self.base_output == "proba" and not hasattr(estimator, "predict_proba"):
            raise InvalidParameterError(
                f"base_output='proba' needs an estimator with predict_proba; "
                f"{type(estimator).__name__} has none (use base_output='label')."
            )

    # -- the secret averages --------------------------------------------------------
    def _averages(self, X) -> np.ndarray:
        """Teacher average per class, shape (n_rows, n_classes). Secret."""
        return self._averages_of()(X, self.n_jobs)

    def _averages_of(self):
        """:func:`_teacher_averages` bound to the teachers only (what a cluster is sent)."""
        import functools

        label = self._base_output == "label"
        return functools.partial(
            _teacher_averages,
            ensemble=self._ensemble if label else None,
            teachers=None if label else self._teachers,
            classes=self.classes_,
            n_teachers=self.n_teachers_,
        )

    def _teacher_means(self, X) -> np.ndarray:
        """Teacher average per label at ``X``, shape (n_rows, n_classes).

        NOT PRIVATE: leaks the teachers' outputs; never charges. Each teacher
        adds at most ``1 / n_teachers_`` to an entry, what private model
        selection needs.
        """
        return self._averages(self._validate_queries(X))

    def _protected_teacher_means(self, X) -> np.ndarray:
        """:meth:`_teacher_means` on PROTECTED rows (a private search's validation part).

        NOT PRIVATE; never charges. No dry run; with ``base_output="label"``
        stacked linear and tree teachers vote batched (row-wise by
        construction) and every other teacher answers each row alone through
        the one boundary; with ``"proba"`` every teacher answers each row alone
        (:func:`~skprivpred._teachers._votes.protected_proba_sum`).
        """
        rows = self._validate_protected_rows(X)
        if self._base_output == "label":
            return self._ensemble.vote_counts(rows, protected=True) / self.n_teachers_
        return protected_proba_sum(self._teachers, rows, self.classes_) / self.n_teachers_

    def _release_averages(self, v: np.ndarray, rng) -> np.ndarray:
        """Noisy averages: column 1 for two labels, every column otherwise."""
        if v.shape[1] == 2:
            return self._noisy_values(v[:, 1], rng)
        return self._noisy_values(v, rng, l1_axis=1)  # L1 sensitivity 2/r per row

    def _label_law(self, v: np.ndarray) -> np.ndarray:
        """Exact law of ``predict`` for two labels, shape (n_rows, 2).

        Each column is computed from its own closed form (by the symmetry
        ``P(0 | v) = P(1 | 1 - v)``), so a small probability keeps its relative
        precision instead of being ``1 - p`` for ``p`` close to 1.
        """
        v1 = v[:, 1]
        b = self.noise_scale_
        if self._prediction_rule == "sample":
            proba = (
                laplace_clip_bernoulli_proba
                if self._noise == "laplace"
                else gaussian_clip_bernoulli_proba
            )
            return np.column_stack([proba(1.0 - v1, b), proba(v1, b)])
        if self._noise == "laplace":
            return np.column_stack(
                [laplace_positive_proba(0.5 - v1, b), laplace_positive_proba(v1 - 0.5, b)]
            )
        return np.column_stack([norm.sf(v1 - 0.5, scale=b), norm.sf(0.5 - v1, scale=b)])

    # -- queries ------------------------------------------------------------------
    def _query_plan(self, method: str) -> QueryPlan:
        """How ``method`` answers: the teacher averages, then its draw and post-processing."""
        check_is_fitted(self, "n_teachers_")
        classes, two = self.classes_, len(self.classes_) == 2
        if method == "predict" and two:
            draw = lambda v, rng: sample_categorical(self._label_law(v), rng)  # noqa: E731
            finish = lambda index: classes[index]  # noqa: E731
        elif method == "predict":

            def draw(v, rng):
                noisy = self._release_averages(v, rng)
                if self._prediction_rule == "threshold":
                    return np.argmax(noisy, axis=1)
                return sample_categorical(project_to_simplex(noisy), rng)

            finish = lambda index: classes[index]  # noqa: E731
        else:
            draw = self._release_averages
            finish = _as_proba if method == "predict_proba" else _as_decision
        guarantee = self.privacy_guarantee_
        return self._teacher_plan(
            self._averages_of(),
            draw=draw,
            finish=finish,
            epsilon=guarantee.epsilon,
            delta=guarantee.delta,
            # One uniform per row from a closed-form law (two labels); grid noise is not.
            row_wise=method == "predict" and two,
        )

    def predict(self, X: MatrixLike) -> np.ndarray:
        """One private label per row (fresh noise; charged per row before any draw).

        ``X`` may be a ``dask.array.Array`` or ``dask.dataframe.DataFrame``
        (every row charged before any vote is counted; the averages computed
        where the rows live, the noise drawn here; a ``dask.array.Array`` of
        answers, drawn once, with the queries' row chunks). See "Queries on a
        cluster" in the scaling guide.

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame, dask collection} of shape (n_queries, n_features)
            Query rows.

        Returns
        -------
        ndarray of shape (n_queries,)
            Labels from ``classes_`` (a ``dask.array.Array`` for dask queries).
        """
        return answer(self, X, self._query_plan("predict"))

    def predict_proba(self, X: MatrixLike) -> np.ndarray:
        """Private class probabilities: the noisy teacher average, one release per row.

        ``X`` may be a dask collection, as for :meth:`predict`.

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame, dask collection} of shape (n_queries, n_features)
            Query rows.

        Returns
        -------
        ndarray of shape (n_queries, n_classes)
            Clipped (two labels) or simplex-projected noisy averages (a
            ``dask.array.Array`` for dask queries).
        """
        return answer(self, X, self._query_plan("predict_proba"))

    def decision_function(self, X: MatrixLike) -> np.ndarray:
        """Private scores: ``v + noise - 1/2`` (two labels) or the noisy averages.

        ``X`` may be a dask collection, as for :meth:`predict`.

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame, dask collection} of shape (n_queries, n_features)
            Query rows.

        Returns
        -------
        ndarray of shape (n_queries,) or (n_queries, n_classes)
            Positive means ``classes_[1]`` for two labels (a
            ``dask.array.Array`` for dask queries).
        """
        return answer(self, X, self._query_plan("decision_function"))

    # -- non-private diagnostics ---------------------------------------------------
    def _raw_score(self, X) -> np.ndarray:
        """Teacher averages. NOT PRIVATE: leaks the training data; never charges."""
        return self._averages(self._validate_queries(X))

    def _output_distribution(self, X) -> np.ndarray:
        """Exact law of ``predict`` (two labels). NOT PRIVATE; never charges."""
        check_is_fitted(self, "n_teachers_")
        if len(self.classes_) != 2:
            raise ValueError("the exact predict law is available for two labels only.")
        return self._label_law(self._raw_score(X))


def _unanimous_proba(noise: str, rule: str, epsilon: float, delta: float, r: int, k: int) -> float:
    """``P(answer = the teachers' label)`` when all ``r`` teachers vote for it (public).

    Two labels: the closed form of :meth:`SubsampleAverageClassifier._label_law`
    at the average ``(0, 1)``. ``K > 2`` labels (Laplace noise of scale
    ``2 / (r epsilon)`` on each average): the ``"threshold"`` rule by quadrature,
    ``P = E[F(1 + L)^(K - 1)]`` with ``L`` the winner's noise and ``F`` the
    Laplace CDF (the release's public grid ignored); the ``"sample"`` rule by
    4,000 draws of a fixed seed (public: no row is read), ``E[project(e + L)]``.
    """
    if k == 2:
        sensitivity = 1.0 / r
        if noise == "laplace":
            b = laplace_scale(sensitivity, epsilon)
            if rule == "sample":
                return float(laplace_clip_bernoulli_proba(1.0, b))
            return float(laplace_positive_proba(0.5, b))
        b = gaussian_sigma(sensitivity, epsilon, delta, method="analytic")
        if rule == "sample":
            return float(gaussian_clip_bernoulli_proba(1.0, b))
        return float(norm.sf(-0.5, scale=b))
    b = laplace_scale(2.0 / r, epsilon)
    if rule == "threshold":  # E[F(1 + L)^(K - 1)] on a fine grid of the winner's noise L
        t = np.linspace(-40.0 * b - 1.0, 40.0 * b, 40001)
        pdf = np.exp(-np.abs(t) / b) / (2.0 * b)
        u = 1.0 + t
        cdf = np.where(
            u < 0.0,
            0.5 * np.exp(np.minimum(u, 0.0) / b),
            1.0 - 0.5 * np.exp(-np.maximum(u, 0.0) / b),
        )
        value = float(np.sum(pdf * cdf ** (k - 1)) * (t[1] - t[0]))
        return min(max(value, 0.0), 1.0)
    draws = np.random.default_rng(0).laplace(scale=b, size=(4000, k))
    draws[:, 0] += 1.0
    return float(project_to_simplex(draws)[:, 0].mean())


def _average_best_case(
    noise: str, rule: str, epsilon: float, delta: float, r: int, k: int
) -> BestCase:
    """The best case of noisy teacher averages: unanimous teachers (public quantities only)."""
    value = _unanimous_proba(noise, rule, epsilon, delta, r, k)
    need = None
    if value < BEST_CASE_THRESHOLD:  # the remedy is only stated (and searched) when it warns
        need = smallest_epsilon(
            lambda e: _unanimous_proba(noise, rule, e, delta, r, k) >= BEST_CASE_THRESHOLD,
            epsilon,
        )
    if value >= BEST_CASE_THRESHOLD:
        remedy = "nothing: the best case is above the threshold"
    elif need is None:
        remedy = "a much larger epsilon, or many more teachers"
    else:  # the noise scale falls like 1 / (r epsilon)
        remedy = (
            f"epsilon of at least {need:.3g} with {r} teachers, or at least "
            f"{math.ceil(r * need / epsilon)} teachers at epsilon = {epsilon:.4g}"
        )
    return BestCase(
        value=value,
        meaning="the probability that an answer is the teachers' label when they are unanimous",
        public=f"epsilon = {epsilon:.4g} per answered row, {r} teachers, {k} classes, "
        f"noise={noise!r}, label_rule={rule!r}",
        remedy=remedy,
    )


def default_tree_depth(n_samples: int, n_teachers: int) -> int:
    """Depth cap of :class:`SubsampleAverageRegressor`'s default tree teacher.

    ``max(1, ceil(log2(n_samples // n_teachers) / 2))``: half the depth at
    which a tree on the ``m = n_samples // n_teachers`` rows of one teacher
    isolates single rows, so that a leaf holds about ``sqrt(m)`` rows. It is
    computed from public quantities only (the number of training rows, which
    replace-one neighbours share, and the number of teachers), never from the
    rows: an uncapped tree's depth depends on its rows, and so does the time
    its prediction takes.

    Parameters
    ----------
    n_samples : int
        Number of training rows.
    n_teachers : int
        Number of teachers.

    Returns
    -------
    int
        The ``max_depth`` of the default ``DecisionTreeRegressor``.

    Examples
    --------
    >>> from skprivpred.ensemble import default_tree_depth
    >>> default_tree_depth(294, 10)
    3
    >>> default_tree_depth(20_000, 200)
    4
    """
    rows_per_teacher = max(1, int(n_samples) // int(n_teachers))
    return max(1, math.ceil(math.log2(rows_per_teacher) / 2))


class SubsampleAverageRegressor(_NoisyAverageMixin, RegressorMixin, BaseEstimator):
    """Private regression by averaging disjoint teachers' clipped outputs plus noise.

    One clone of ``estimator`` (a teacher) is fitted on each of ``n_teachers``
    disjoint random parts; a query row is answered with the average of the
    teachers' predictions, each clipped to the public range ``y_bounds``, plus
    exact integer noise on a public grid (clipped to ``y_bounds`` again when
    ``clip_output=True``, as post-processing).

    **Guarantee.** Replace-one neighbours: one row moves the average by at most
    ``(hi - lo) / r``, so every answered row is ``(epsilon, delta)``-DP
    (``delta = 0`` with Laplace noise; Dwork & Feldman 2018, Lemma 4.5 with
    the stability of Lemma 4.6 and the Laplace scale ``gamma / epsilon``),
    charged before any noise is drawn. ``y_bounds`` is public and required.

    See the user guide: :ref:`subsample` (and :ref:`teachers-that-fail`).

    Parameters
    ----------
    estimator : regressor, default=None
        Base learner cloned per part (``None``: a ``DecisionTreeRegressor``
        whose depth is capped by the public formula
        ``max_depth = max(1, ceil(log2(n_samples // n_teachers) / 2))``, see
        :func:`~skprivpred.ensemble.default_tree_depth`). The cap makes the
        stacked descent of the default trees, hence the time an answer
        takes, depend on public quantities only; a tree of your own without
        ``max_depth`` (or ``max_leaf_nodes``) answers in a time that depends
        on the depth it reached on its rows.
    epsilon : float, default=1.0
        Privacy parameter of each answered row, > 0.
    n_teachers : int, default=10
        Number of parts ``r`` (public). Unlike the classifiers' ``None`` (a
        rule from Corollary 4.7), the default is a fixed 10: the paper gives no
        data-independent rule for regression, where the best ``r`` trades the
        accuracy of teachers fitted on ``n / r`` rows against the noise scale
        ``(hi - lo) / (r epsilon)`` and so depends on the base learner's
        learning curve; choose it on public or surrogate data.
    y_bounds : tuple of two floats, default=None
        Public output range ``(lo, hi)`` with ``lo < hi``; required (``None``
        raises at ``fit``: unclipped outputs have unbounded sensitivity and no
        data-independent default exists). Choose it from what the target can
        be (a physical or business range, for example a price between 0 and
        the largest price listed), never from the training targets; a range
        too wide costs noise, one too narrow clips good predictions. Set it
        before running scikit-learn's ``check_estimator``: at the default
        ``None`` fit refuses, and most checks fail for that one reason (see
        :func:`~skprivpred.utils.expected_failed_checks`).
    clip_output : bool, default=True
        Clip the released value to ``y_bounds``.
    noise : {"laplace", "gaussian"}, default="laplace"
        Laplace gives ``(epsilon, 0)``-DP; Gaussian gives ``(epsilon, delta)``-DP
        with discrete Gaussian noise on the public grid, calibrated exactly.
    delta : float, default=0.0
        0 with Laplace noise (the default, pure DP); in (0, 1) with Gaussian
        noise (``1e-6`` is a usual choice).
    accountant : PrivacyAccountant, default=None
        Charged per query row before any noise is drawn.
    n_jobs : int, default=None
        joblib jobs for fitting the teachers.
    random_state : int, RandomState instance, Generator or None, default=None
        Seeds the partition and the noise; ``None`` in deployment.

    Attributes
    ----------
    n_teachers_ : int
        Number of teachers.
    sensitivity_ : float
        ``(hi - lo) / r``.
    noise_scale_ : float
        Laplace scale ``sensitivity_ / epsilon`` or Gaussian standard deviation.
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during ``fit`` (string column names only).
    privacy_guarantee_ : PrivacyGuarantee
        The guarantee of each answered row (noise, sensitivity, noise scale and
        number of teachers in ``details``).
    queries_answered_ : int
        Query rows answered since ``fit``.

    References
    ----------
    C. Dwork and V. Feldman. Privacy-preserving Prediction. COLT 2018,
    Section 4 (Lemmas 4.5 and 4.6).

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from skprivpred import SubsampleAverageRegressor
    >>> X, y = load_diabetes(return_X_y=True)
    >>> reg = SubsampleAverageRegressor(y_bounds=(25, 346), random_state=0).fit(X, y)
    >>> reg.sensitivity_
    32.1
    """

    _default_estimator = DecisionTreeRegressor
    _theorem = (
        "Dwork & Feldman (2018), Lemma 4.5 with the stability (hi - lo)/r of Lemma 4.6 "
        "(Laplace scale gamma/epsilon)"
    )

    _parameter_constraints: dict = {
        **_NOISY_AVERAGE_CONSTRAINTS,
        "n_teachers": [Interval(Integral, 1, None, closed="left")],
        "y_bounds": [Bounds(), None],
        "clip_output": ["boolean"],
    }

    def __init__(
        self,
        estimator: BaseEstimator | None = None,
        *,
        epsilon: float = 1.0,
        n_teachers: int = 10,
        y_bounds: tuple[float, float] | None = None,
        clip_output: bool = True,
        noise: str = "laplace",
        delta: float = 0.0,
        accountant: PrivacyAccountant | None = None,
        n_jobs: int | None = None,
        random_state: RandomStateLike = None,
    ) -> None:
        self.estimator = estimator
        self.epsilon = epsilon
        self.n_teachers = n_teachers
        self.y_bounds = y_bounds
        self.clip_output = clip_output
        self.noise = noise
        self.delta = delta
        self.accountant = accountant
        self.n_jobs = n_jobs
        self.random_state = random_state

    def _check_params(self) -> tuple[float, float]:
        """Cross-parameter rules (``noise`` and ``delta``), and the required ``y_bounds``."""
        check_noise_delta(self.noise, self.delta)
        if self.y_bounds is None:
            raise InvalidParameterError(
                "y_bounds=None: SubsampleAverageRegressor needs the public output range as "
                "y_bounds=(lo, hi); it must not be read from the training data."
            )
        lo, hi = (float(v) for v in self.y_bounds)
        return lo, hi

    def fit(self, X: MatrixLike, y: VectorLike, **fit_params: Any) -> Self:
        """Fit one teacher per disjoint random part of the training set.

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame, dask Array, dask DataFrame} \
                of shape (n_samples, n_features)
            Training rows (no NaN or infinity). A dask collection (with ``y``
            one too, partitioned like it) is never computed into this process:
            each teacher is fitted on a worker, on the block the same keyed
            partition gives it in memory, and only the fitted teachers come
            back (see "Teachers on a cluster" in the scaling guide; ``n_jobs``
            does not apply there).
        y : array-like of shape (n_samples,)
            Targets (one output); a dask array or Series when ``X`` is a dask
            collection.
        **fit_params : dict
            Not supported (``sample_weight`` is refused).

        Returns
        -------
        self : SubsampleAverageRegressor
            The fitted estimator.
        """
        lo, hi = self._check_fit_arguments(fit_params)
        epsilon, delta, n_teachers = float(self.epsilon), float(self.delta), int(self.n_teachers)
        estimator = self._base_estimator()
        with self._unchanged_on_error():
            if is_dask_input(X, y):  # rows on a cluster: checked and fitted where they live
                X = self._validate_dask_training_data(X, y, classify=False, y_numeric=True)
                y, n_samples = None, X.n_samples
            else:
                X, y = self._validate_training_data(X, y, y_numeric=True)
                n_samples = y.shape[0]
            if self.estimator is None:  # the default tree, capped at a public depth
                estimator = DecisionTreeRegressor(
                    max_depth=default_tree_depth(n_samples, n_teachers)
                )
            self._teachers = self._fit_teachers(
                estimator,
                X,
                y,
                None,
                n_teachers,
                fallback=ConstantTeacher(value=fallback_value((lo, hi))),
            )
            self._outputs = StackedPredictions(self._teachers)  # tree teachers stacked
            self._y_bounds, self._clip_output = (lo, hi), bool(self.clip_output)
            self._set_noise(epsilon, delta, sensitivity=(hi - lo) / n_teachers)
        return self

    def _average(self, X) -> np.ndarray:
        return self._average_of()(X, self.n_jobs)

    def _average_of(self):
        """:func:`_clipped_average` bound to the teachers only (what a cluster is sent)."""
        import functools

        return functools.partial(
            _clipped_average,
            outputs=self._outputs,
            y_bounds=self._y_bounds,
            n_teachers=self.n_teachers_,
        )

    def _query_plan(self) -> QueryPlan:
        """How ``predict`` answers: the clipped average, grid noise, the clip (not row-wise)."""
        check_is_fitted(self, "n_teachers_")
        bounds, clip = self._y_bounds, self._clip_output
        guarantee = self.privacy_guarantee_
        return self._teacher_plan(
            self._average_of(),
            draw=self._noisy_values,
            finish=lambda noisy: np.clip(noisy, *bounds) if clip else noisy,
            epsilon=guarantee.epsilon,
            delta=guarantee.delta,
        )

    def predict(self, X: MatrixLike) -> np.ndarray:
        """One private value per row (fresh noise; charged per row before any draw).

        ``X`` may be a ``dask.array.Array`` or ``dask.dataframe.DataFrame``
        (every row charged before any teacher answers; the clipped averages
        computed where the rows live, the noise drawn here; a
        ``dask.array.Array`` of answers, drawn once, with the queries' row
        chunks). See "Queries on a cluster" in the scaling guide.

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame, dask collection} of shape (n_queries, n_features)
            Query rows.

        Returns
        -------
        ndarray of shape (n_queries,)
            The noisy teacher average, on the public grid, clipped to ``y_bounds``
            when ``clip_output=True`` (a ``dask.array.Array`` for dask queries).
        """
        return answer(self, X, self._query_plan())

    def _raw_score(self, X) -> np.ndarray:
        """Average of the clipped teacher outputs. NOT PRIVATE; never charges."""
        return self._average(self._validate_queries(X))


def _teacher_averages(X, n_jobs, *, ensemble, teachers, classes, n_teachers) -> np.ndarray:
    """Teacher average per class at ``X``, shape (n_rows, n_classes). Secret.

    From the vote counts of ``ensemble`` (``base_output="label"``) or the
    probabilities of ``teachers`` (``"proba"``).
    """
    if ensemble is not None:
        return ensemble.vote_counts(X, n_jobs=n_jobs) / n_teachers
    X = freeze_rows(X)  # one read-only copy; each teacher is handed a view of its own
    total = np.zeros((X.shape[0], len(classes)))
    # The teachers' lock held for the run; the state every teacher answers from.
    with library_numerics(), teacher_run() as state:
        for teacher in teachers:
            total += teacher_proba(teacher, X, classes, state)
        return total / n_teachers


def _as_proba(noisy: np.ndarray) -> np.ndarray:
    """Released averages as probabilities: clipped (two labels) or on the simplex."""
    if noisy.ndim == 1:
        p1 = np.clip(noisy, 0.0, 1.0)
        return np.column_stack([1.0 - p1, p1])
    return project_to_simplex(noisy)


def _as_decision(noisy: np.ndarray) -> np.ndarray:
    """Released averages as scores: ``v - 1/2`` for two labels, the averages otherwise."""
    return noisy - 0.5 if noisy.ndim == 1 else noisy


def _clipped_average(X, n_jobs, *, outputs, y_bounds, n_teachers) -> np.ndarray:
    """Average of the teachers' outputs at ``X``, each clipped to ``y_bounds``. Secret."""
    lo, hi = y_bounds
    midpoint = fallback_value(y_bounds)
    X = freeze_rows(X)  # one read-only copy; each teacher is handed a view of its own
    total = np.zeros(X.shape[0])
    with library_numerics(), ExitStack() as run:
        state: list = []  # taken at the first teacher that answers on its own

        def predict(model, rows):
            if not state:  # the teachers' lock, held from here on; the state of the run
                state.append(run.enter_context(teacher_run()))
            return teacher_values(model, rows, midpoint, state[0])

        for output in outputs.each(X, predict):
            total += np.clip(np.asarray(output, dtype=float).reshape(-1), lo, hi)
        return total / n_teachers
