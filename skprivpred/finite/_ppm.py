"""Learning halfspaces from a mixture of private and public populations.

:class:`PrivateHalfspacePPMClassifier` implements Algorithm 2 (``A_LearnHalf``)
of Bassily, Moran and Nandi, "Learning from Mixtures of Private and Public
Populations" (NeurIPS 2020), with its sub-routine Algorithm 1
(``A_ConstrHalf``):

1. a finite family of candidate halfspaces is built from the **public** rows only
   (their feature vectors; labels and private rows are never looked at);
2. the finite class ``G`` holds every hypothesis "the public population's label
   inside the intersection of at most ``j_max`` candidate halfspaces and the
   affine hull of the public points, the other label outside", plus the
   constant hypothesis (empty region) and the region "whole affine hull";
3. one hypothesis is drawn by the exponential mechanism with weight
   ``exp(-epsilon * mistakes / 2)`` over integer mistake counts on **all** rows,
   sampled exactly; the drawn hypothesis is the released model.

The class ``G`` and its mistake counts are in :mod:`skprivpred.finite`
(:func:`~skprivpred.finite.build_candidates`, public rows only, and
:func:`~skprivpred.finite.mistake_counts`, which reads private rows and is
**not private**), the exact sampler and its law in :mod:`skprivpred.mechanisms`.
"""

from __future__ import annotations

import copy
import math
from numbers import Integral, Real
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from .._base import (
    PrivatePredictorMixin,
    QueryPlan,
    answer,
    finite_target_column,
    resolve_binary_classes,
    spawn_streams,
)
from .._semisupervised import check_classes_exclude_marker, unlabelled_mask
from ..accounting._accountant import PrivacyAccountant
from ..accounting._guarantee import GuaranteeUnit, PrivacyGuarantee
from ..exceptions import InvalidParameterError
from ..mechanisms._closed_forms import fewest_mistakes_log_proba, sample_fewest_mistakes
from ..utils._deprecation import DEPRECATED, deprecated_constraints, renamed_param
from ..utils._param_validation import Data, Interval, StrOptions
from ..utils._typing import MatrixLike, RandomStateLike, Self, VectorLike
from ._halfspaces import CANDIDATE_STRATEGIES, CandidateFamily, build_candidates, mistake_counts

__all__ = [
    "PrivateHalfspacePPMClassifier",
    "em_excess_bound",
]

_COUNT = Interval(Integral, 1, None, closed="left")
_STRATEGIES = [StrOptions(set(CANDIDATE_STRATEGIES))]


def em_excess_bound(n_candidates: int, n: int, epsilon: float, beta: float) -> float:
    """Exponential-mechanism excess empirical error: ``2 (ln N + ln(1/beta)) / (epsilon n)``.

    With probability at least ``1 - beta`` the drawn hypothesis's empirical
    error exceeds the best one in ``G`` by at most this much (the utility of the
    exponential mechanism, McSherry & Talwar 2007; Dwork & Roth 2014, Corollary
    3.12, with a mistake count of sensitivity 1 over ``n`` rows).

    Parameters
    ----------
    n_candidates : int
        ``|G|``.
    n : int
        Number of training rows.
    epsilon : float
        Privacy parameter, > 0.
    beta : float
        Failure probability, in (0, 1).

    Returns
    -------
    float
        The bound on the excess empirical error.

    Examples
    --------
    >>> round(em_excess_bound(100, 10_000, 1.0, 0.05), 4)
    0.0015
    """
    return 2.0 * (math.log(n_candidates) + math.log(1.0 / beta)) / (epsilon * n)


# -- validation ----------------------------------------------------------------------------------
def _check_is_public(is_public, n_rows: int) -> np.ndarray:
    if is_public is None:
        raise ValueError(
            "is_public is required: pass fit(X, y, is_public=...) with one bool (or 0/1) per "
            "row, True for public rows. The privacy status cannot be inferred from the data. "
            "In a Pipeline or cross_validate, enable metadata routing and call "
            "set_fit_request(is_public=True)."
        )
    status = np.asarray(is_public)
    if status.ndim != 1 or status.shape[0] != n_rows:
        raise ValueError(
            f"is_public must be a 1-D array with one entry per row ({n_rows}), got shape "
            f"{status.shape}."
        )
    if status.dtype == bool:
        return status
    if status.dtype.kind in "iuf" or status.dtype == object:
        try:
            values = status.astype(float)
        except (TypeError, ValueError):
            values = None
        if values is not None and np.all((values == 0) | (values == 1)):
            return values == 1
    raise ValueError(
        "is_public must hold only True/False or 0/1 (no NaN, strings or other numbers)."
    )


# -- the estimator -------------------------------------------------------------------------------
class PrivateHalfspacePPMClassifier(PrivatePredictorMixin, ClassifierMixin, BaseEstimator):
    """Halfspace learner for a mixture of private and public rows (PPM learning).

    Bassily, Moran and Nandi's ``A_LearnHalf``: candidate halfspaces are built
    from the **public** rows only, and the exponential mechanism draws one
    hypothesis of the finite class they span with probability proportional to
    ``exp(-epsilon * mistakes / 2)``, mistakes counted on all rows, exactly. A
    hypothesis predicts ``public_class`` inside an intersection of candidate
    halfspaces and the other label outside (an improper output). The drawn
    hypothesis is the released model; ``predict``, ``decision_function`` and
    ``score`` apply it at no cost.

    **Guarantee** (Lemma 4.1). ``(epsilon, 0)``-DP with respect to the private
    rows: neighbours share the status bits and the public rows and differ in
    one private row (features and label). The public rows, the status bits and
    hence the row counts are not protected. One ``fit`` is one release,
    charged ``epsilon`` once before the draw.

    See the user guide: :ref:`ppm`.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy parameter, finite and > 0 (pure DP).
    classes : array-like of two labels, default=None
        The public label set (binary). ``None`` reads it from ``y`` and emits
        a :class:`~skprivpred.PrivacyWarning`.
    public_class : label, default=None
        Which of ``classes`` is the public population's label, predicted
        inside the released region. ``None`` means ``classes_[0]`` (the
        paper's convention). It is part of the problem, not estimated.
    candidate_strategy : {"auto", "exact", "hull", "sample"}, default="auto"
        How the class is built from the public rows: the paper's class
        (``"exact"``), the facets of the public convex hull (``"hull"``), a
        random pool of ``pool_size`` hypotheses of the paper's class
        (``"sample"``), or the first of these that fits (``"auto"``). Each
        keeps exact ``epsilon``-DP; they differ in accuracy guarantees and cost.
    max_candidates : int, default=10**6
        Largest class that ``"exact"`` or ``"hull"`` agree to enumerate; a
        larger one is refused, never truncated.
    pool_size : int, default=10_000
        Number of sampled hypotheses ``M`` for ``"sample"`` (public; the class
        has ``M + 2`` members).
    max_halfspaces : int or None, default=None
        ``j_max``, the most halfspaces a region intersects; ``None`` means the
        dimension ``k`` of the public points' affine hull. A smaller cap is
        faster and weakens Lemma 4.5.
    tol : float, default=1e-9
        Relative tolerance (times the size of the public point cloud) for the
        rank of the affine hull, membership of it and halfspace boundaries.
    accountant : PrivacyAccountant, default=None
        Charged ``epsilon`` once per ``fit``, before the draw.
    random_state : int, RandomState instance, Generator or None, default=None
        Seeds a public stream (random normals, the pool) and the mechanism's.
        Use ``None`` (OS entropy) in deployment.
    candidates : {"auto", "exact", "hull", "sample"}, default="deprecated"
        Former name of ``candidate_strategy``.

        .. deprecated:: 0.4
           ``candidates`` was renamed ``candidate_strategy`` in 0.4 and will
           be removed in 0.6.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        The public label set.
    public_class_ : label
        The public population's label, one of ``classes_``.
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of str
        Only for inputs with string column names.
    candidates_used_ : {"exact", "hull", "sample"}
        The strategy that built the class.
    n_candidates_ : int
        The class size (``pool_size + 2`` for ``"sample"``).
    affine_origin_ : ndarray of shape (d,)
        Mean of the distinct public points.
    affine_basis_ : ndarray of shape (d, k)
        Orthonormal basis of the directions of their affine hull.
    halfspaces_ : ndarray of shape (j, d + 1)
        Rows ``(w_0, w_1, ..., w_d)``: a point is inside when ``sum_i w_i x_i >=
        w_0 - tol * scale`` for every row (``j`` may be 0) and it lies on the
        affine hull.
    region_is_empty_ : bool
        True when the drawn hypothesis is the constant label other than
        ``public_class_``.
    privacy_guarantee_ : PrivacyGuarantee
        ``(epsilon, 0)`` for the released hypothesis, per private row.

    Notes
    -----
    ``is_public`` is sample-aligned fit metadata (or mark the public rows with
    ``y == -1``); in a :class:`~sklearn.pipeline.Pipeline` enable metadata
    routing and call ``set_fit_request(is_public=True)``.

    References
    ----------
    R. Bassily, S. Moran and A. Nandi. Learning from Mixtures of Private and
    Public Populations. NeurIPS 2020.

    Examples
    --------
    >>> import numpy as np
    >>> from skprivpred import PrivateHalfspacePPMClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(400, 2))
    >>> X = X[np.abs(X.sum(axis=1)) > 0.1]
    >>> y = (X.sum(axis=1) > 0).astype(int)
    >>> clf = PrivateHalfspacePPMClassifier(epsilon=1.0, classes=[0, 1], random_state=0)
    >>> clf.fit(X, y, is_public=(y == 0)).candidates_used_
    'hull'
    >>> float(clf.score(X, y)) > 0.95
    True
    """

    _parameter_constraints: dict = {
        "epsilon": [Interval(Real, 0, None, closed="neither")],
        "classes": ["array-like", None],
        "public_class": [Data("any")],  # a label; checked against classes in _check_params
        "candidate_strategy": _STRATEGIES,
        "max_candidates": [_COUNT],
        "pool_size": [_COUNT],
        "max_halfspaces": [_COUNT, None],
        "tol": [Interval(Real, 0, None, closed="left")],
        "accountant": [PrivacyAccountant, None],
        "random_state": ["random_state"],
        "candidates": deprecated_constraints(_STRATEGIES, "candidate_strategy"),
    }

    def __init__(
        self,
        *,
        epsilon: float = 1.0,
        classes: VectorLike | None = None,
        public_class: Any = None,
        candidate_strategy: str = "auto",
        max_candidates: int = 10**6,
        pool_size: int = 10_000,
        max_halfspaces: int | None = None,
        tol: float = 1e-9,
        accountant: PrivacyAccountant | None = None,
        random_state: RandomStateLike = None,
        candidates: str = DEPRECATED,
    ) -> None:
        self.epsilon = epsilon
        self.classes = classes
        self.public_class = public_class
        self.candidate_strategy = candidate_strategy
        self.max_candidates = max_candidates
        self.pool_size = pool_size
        self.max_halfspaces = max_halfspaces
        self.tol = tol
        self.accountant = accountant
        self.random_state = random_state
        self.candidates = candidates

    # -- validation ---------------------------------------------------------------------------
    def _check_params(self) -> None:
        """Cross-parameter rules: ``public_class`` is one of ``classes`` (when both are
        given); the deprecated ``candidates`` warns, and is refused beside ``candidate_strategy``.
        """
        renamed_param(self, "candidates", "candidate_strategy")
        if self.classes is not None and self.public_class is not None:
            self._public_position(np.unique(np.asarray(self.classes)))

    def _public_position(self, classes: np.ndarray) -> int:
        """Position (0 or 1) of the public population's label in ``classes``."""
        if self.public_class is None:
            return 0
        found = np.flatnonzero(classes == self.public_class)
        if found.size != 1:
            raise InvalidParameterError(
                f"public_class={self.public_class!r} must be one of the two labels of classes "
                f"({classes.tolist()!r}), or None for the first of them."
            )
        return int(found[0])

    def _validated(self, X, y, is_public):
        """X, 0/1 labels, status, classes, public index (atomic block: sets n_features_in_).

        Without ``is_public``, rows with ``y == -1`` (scikit-learn's semi-supervised
        convention) are the public rows, of the public population: their label is
        ``public_class``. With ``is_public``, ``-1`` is an ordinary label, as before.
        """
        X, y = validate_data(
            self, X, y, reset=True, dtype=np.float64, ensure_all_finite=True, y_numeric=False
        )
        y = finite_target_column(y)
        by_marker = is_public is None
        marked = unlabelled_mask(y) if by_marker else np.zeros(y.shape[0], dtype=bool)
        if by_marker:
            is_public = marked
        known = y[~marked]
        if known.dtype == object:
            known = np.asarray(known.tolist())
        check_classification_targets(known)
        classes = resolve_binary_classes(
            self.classes,
            known,
            type(self).__name__,
            hint="The public population's label is public_class; pass the two labels as classes.",
        )
        if by_marker:
            check_classes_exclude_marker(classes)
        public_index = self._public_position(classes)
        status = _check_is_public(is_public, X.shape[0])
        if by_marker and not status.any():
            raise ValueError(
                "is_public is required when y marks no row with -1: pass fit(X, y, "
                "is_public=...) with one bool (or 0/1) per row, or mark the public rows with "
                "y == -1. The privacy status cannot be inferred from the data. In a Pipeline "
                "or cross_validate with is_public, enable metadata routing and call "
                "set_fit_request(is_public=True)."
            )
        if not status.any():
            raise ValueError(
                "is_public has no public row: the candidate halfspaces are built from public "
                "rows only, so at least one is needed (the paper would return the constant "
                "private label)."
            )
        labels = np.zeros(y.shape[0], dtype=np.int64)
        labels[~marked] = known == classes[1]
        labels[marked] = public_index  # the public population's label
        return X, labels, status, classes, public_index

    def _candidate_strategy(self) -> str:
        """``candidate_strategy``, or its deprecated old name ``candidates`` when that is set
        (``_check_params`` has warned already)."""
        if isinstance(self.candidates, str) and self.candidates == DEPRECATED:
            return self.candidate_strategy
        return self.candidates

    def _family(self, X, status, public_rng) -> CandidateFamily:
        return build_candidates(
            X[status],
            self._candidate_strategy(),
            max_candidates=self.max_candidates,
            pool_size=self.pool_size,
            max_halfspaces=self.max_halfspaces,
            tol=float(self.tol),
            rng=public_rng,
        )

    # -- fit ------------------------------------------------------------------------------------
    def fit(
        self,
        X: MatrixLike,
        y: VectorLike,
        *,
        is_public: VectorLike | None = None,
        **fit_params: Any,
    ) -> Self:
        """Build candidates from the public rows and draw the released hypothesis.

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_samples, n_features)
            Real-valued, finite, dense.
        y : array-like of shape (n_samples,)
            Labels, two values (those of ``classes``); ``-1`` marks an unlabelled
            public row (scikit-learn's semi-supervised convention, as for
            :class:`~skprivpred.SufficientStatisticClassifier`) when
            ``is_public`` is not given; such a row's label is ``public_class``,
            and ``-1`` cannot be a class then.
        is_public : array-like of shape (n_samples,), default=None
            True (or 1) for public rows, False (or 0) for private ones. Required
            unless ``y`` marks the public rows with ``-1``; when it is given,
            ``-1`` in ``y`` is an ordinary label.
        **fit_params : dict
            Not supported; ``sample_weight`` in particular is refused (a weighted
            row could move a mistake count by more than one).

        Returns
        -------
        self : PrivateHalfspacePPMClassifier
            The fitted estimator (the released hypothesis).
        """
        self._check_fit_arguments(fit_params)
        epsilon = float(self.epsilon)
        with self._unchanged_on_error():
            X, labels, status, classes, public_index = self._validated(X, y, is_public)
            public_rng = self._start_streams()
            family = self._family(X, status, public_rng)
            mistakes = mistake_counts(family, X, labels, public_index)
            index = self._release_model(epsilon, lambda rng: self._draw(mistakes, epsilon, rng))
            self._set_released(family, index, classes, public_index)
            self.privacy_guarantee_ = PrivacyGuarantee(
                epsilon=epsilon,
                delta=0.0,
                unit=GuaranteeUnit.RELEASE,
                scope="the released hypothesis; predictions are free post-processing",
                theorem="Bassily, Moran & Nandi (2020), Lemma 4.1: the exponential mechanism "
                "with weight exp(-epsilon * mistakes / 2) over candidates built from public "
                "rows only",
                neighbouring="replace one private row (features and label); public rows and "
                "status bits fixed",
                protects="each private training row (not the public rows, the status bits or "
                "the numbers of public and private rows)",
                details={"n_candidates": int(family.size), "candidates": family.strategy},
            )
        return self

    def _draw(self, mistakes: np.ndarray, epsilon: float, rng: np.random.Generator) -> int:
        """Index of the released hypothesis, from the exact exponential-mechanism law."""
        return sample_fewest_mistakes(mistakes, epsilon, rng)

    def _log_selection_law(self, mistakes: np.ndarray, epsilon: float) -> np.ndarray:
        """Exact log-law of :meth:`_draw`."""
        return fewest_mistakes_log_proba(mistakes, epsilon)

    def _set_released(
        self, family: CandidateFamily, index: int, classes: np.ndarray, public_index: int
    ) -> None:
        members = family.members(index)
        chosen = np.zeros(0, dtype=int) if members is None else members
        normals, offsets = family.normals[chosen], family.offsets[chosen]
        w = normals @ family.basis.T  # (j, d): a . z = (V a) . x - (V a) . c
        self.classes_ = classes
        self.public_class_ = classes[public_index]
        self.candidates_used_ = family.strategy
        self.n_candidates_ = int(family.size)
        self.affine_origin_ = family.origin
        self.affine_basis_ = family.basis
        self.halfspaces_ = np.column_stack([offsets + w @ family.origin, w]).reshape(
            -1, w.shape[1] + 1
        )
        self.region_is_empty_ = members is None
        self._public_index = public_index
        self._normals, self._offsets = normals, offsets
        self._slack = family.slack

    # -- predictions ----------------------------------------------------------------------------
    def _query_plan(self, method: str) -> QueryPlan:
        """How ``method`` answers: the inside score, then free post-processing."""
        check_is_fitted(self, "privacy_guarantee_")
        classes, public = self.classes_, self._public_index
        if method == "predict":
            finish = lambda score: classes[np.where(score >= 0, public, 1 - public)]  # noqa: E731
        else:
            sign = -1.0 if public == 0 else 1.0
            finish = lambda score: sign * score  # noqa: E731
        return QueryPlan(
            check=self._query_rows,
            values=lambda X, n_jobs: self._inside_score(X),
            finish=finish,
        )

    def _query_rows(self, X) -> np.ndarray:
        """The query rows checked (public checks), as floats."""
        return validate_data(self, X, reset=False, dtype=np.float64, ensure_all_finite=True)

    def _inside_score(self, X) -> np.ndarray:
        """``s(x)`` at checked rows: >= 0 exactly inside the released region (boundary included)."""
        if self.region_is_empty_:
            return np.full(X.shape[0], -1.0)
        centred = X - self.affine_origin_
        Z = centred @ self.affine_basis_
        slack = self._slack
        score = slack - np.linalg.norm(centred - Z @ self.affine_basis_.T, axis=1)
        if self._normals.shape[0]:
            margins = Z @ self._normals.T - self._offsets + slack
            score = np.minimum(score, margins.min(axis=1))
        return score

    def decision_function(self, X: MatrixLike) -> np.ndarray:
        """Signed score, larger means more ``classes_[1]`` (free post-processing).

        ``s(x) = min(min_h (a . z - b + tol * scale), tol * scale - dist(x, Aff))``
        is >= 0 exactly inside the region; the method returns ``-s`` when the
        public population's label is ``classes_[0]`` and ``s`` otherwise. The
        empty region gives the constant -1.0 or +1.0 (whichever predicts the
        other label). ``predict`` is authoritative at 0 (boundary points are
        inside).

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_queries, n_features)
            Query rows.

        Returns
        -------
        ndarray of shape (n_queries,)
            The signed scores. Nothing is charged.
        """
        return answer(self, X, self._query_plan("decision_function"))

    def predict(self, X: MatrixLike) -> np.ndarray:
        """``public_class_`` inside the released region, the other label outside.

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_queries, n_features)
            Query rows.

        Returns
        -------
        ndarray of shape (n_queries,)
            Labels of ``classes_``. Nothing is charged.
        """
        return answer(self, X, self._query_plan("predict"))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        tags.classifier_tags.poor_score = True
        return tags

    # -- non-private diagnostics (tests and audits only) ------------------------------------------
    def _selection_log_proba(self, X, y, is_public):
        """Exact log-law of ``fit(X, y, is_public=is_public)`` and its class.

        NOT PRIVATE: the law is a function of every mistake count. Never charges,
        never changes the estimator. With an integer ``random_state`` the class
        is the one ``fit`` would build.

        Returns
        -------
        log_proba : ndarray of shape (|G|,)
        family : CandidateFamily
        """
        probe = copy.copy(self)
        probe._validate_params()
        probe._check_params()
        X, labels, status, _, public_index = probe._validated(X, y, is_public)
        public_rng, _ = spawn_streams(self.random_state)
        family = probe._family(X, status, public_rng)
        mistakes = mistake_counts(family, X, labels, public_index)
        return self._log_selection_law(mistakes, float(self.epsilon)), family
