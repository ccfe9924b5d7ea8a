"""The exponential projected walk ExpPW(T, epsilon) of Dwork & Feldman (2018), Figure 1.

Private prediction for one real feature: thresholds and unions of ``k``
intervals. The training points are sorted by ``x``; a query ``x`` is answered
from the *walk value* ``V(S, x)``: an integer that starts at 0, moves up by one
for every label-1 point and down by one for every label-0 point at or to the
left of ``x``, and is clamped to ``[-clamp_bound, clamp_bound]`` after every
step (the paper's ``T``). The answer is 1 with probability
``expit(epsilon * V / 2)``.

Removing one training row changes ``V`` at every query by at most 1 (clamping is
1-Lipschitz), so each answer is ``epsilon / 2``-DP for add/remove neighbours and
``epsilon``-DP for replace-one neighbours (Dwork & Feldman (2018), Lemma 5.1).

The pure helpers :func:`exppw_clamp_bound`, :func:`exppw_min_samples` and
:func:`exppw_walk` compute the theory's parameters and the walk table; the
estimator :class:`ExpProjectedWalkClassifier` answers queries with them.
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import check_array, check_is_fitted, validate_data

from .._base import (
    PrivatePredictorMixin,
    QueryPlan,
    answer,
    binary_only_message,
    finite_target_column,
    resolve_classes,
)
from ..accounting._accountant import PrivacyAccountant
from ..accounting._guarantee import GuaranteeUnit, PrivacyGuarantee
from ..exceptions import InvalidParameterError
from ..mechanisms._closed_forms import exponential_mechanism_proba, sample_categorical
from ..mechanisms._teacher_count import ceil_int
from ..utils._deprecation import (
    DEPRECATED,
    deprecated_constraints,
    renamed_kwargs,
    renamed_param,
)
from ..utils._param_validation import Interval, StrOptions, validate_parameter_constraints
from ..utils._typing import MatrixLike, RandomStateLike, Self, VectorLike

__all__ = ["ExpProjectedWalkClassifier", "exppw_clamp_bound", "exppw_min_samples", "exppw_walk"]

TIE_HANDLING_OPTIONS = ("aggregate", "sequential")

# Constraints of the walk's parameters, shared by the pure helpers and the estimator.
_CONSTRAINTS: dict = {
    "epsilon": [Interval(Real, 0, None, closed="neither")],
    "target_error": [Interval(Real, 0, 1, closed="neither")],
    "k": [Interval(Integral, 1, None, closed="left")],
    "clamp_bound": [Interval(Integral, 1, None, closed="left")],
    "tie_handling": [StrOptions(set(TIE_HANDLING_OPTIONS))],
}


def _validate(caller_name: str, **params) -> None:
    """Check the pure helpers' arguments against :data:`_CONSTRAINTS`."""
    validate_parameter_constraints(_CONSTRAINTS, params, caller_name=caller_name)


# -- theory's parameters --------------------------------------------------------------
@renamed_kwargs({"alpha": "target_error"})
def exppw_clamp_bound(target_error: float, epsilon: float) -> int:
    """Clamp bound ``T`` of the walk for a target excess error.

    ``T = ceil(2 ln(2 / target_error) / epsilon)`` (Dwork & Feldman (2018),
    Theorem 5.3, whose ``alpha`` is the target error): the smallest ``T`` with
    ``exp(-epsilon T / 2) <= target_error / 2``, so that a saturated walk
    answers wrongly with probability at most ``target_error / 2``.

    .. deprecated:: 0.4
        The keyword ``alpha`` was renamed ``target_error`` in 0.4 and will be
        removed in 0.6.

    Parameters
    ----------
    target_error : float
        Target excess error, in (0, 1).
    epsilon : float
        Per-query privacy parameter (replace-one), > 0.

    Returns
    -------
    int
        The clamp bound, at least 1.

    Examples
    --------
    >>> exppw_clamp_bound(0.1, 1.0)
    6
    >>> exppw_clamp_bound(0.01, 0.1)
    106
    """
    _validate("exppw_clamp_bound", target_error=target_error, epsilon=epsilon)
    return max(1, ceil_int(2.0 * math.log(2.0 / target_error) / epsilon))


@renamed_kwargs({"alpha": "target_error"})
def exppw_min_samples(target_error: float, epsilon: float, k: int = 1) -> int:
    """Training-set size for which Theorem 5.3 promises excess error ``target_error``.

    With ``T = exppw_clamp_bound(target_error, epsilon)``, the empirical
    penalty ``(k + 2) T / n`` of Dwork & Feldman (2018), Lemma 5.2, is at most
    ``target_error / 2`` once ``n >= ceil(2 (k + 2) T / target_error)``; this
    is the value returned. The paper's bound in Theorem 5.3,
    ``4 (k + 2) ln(2 / alpha) / (alpha epsilon)`` (``alpha`` the target
    error), is corrected here: it ignores the ceiling in ``T`` and can be
    smaller than needed by up to ``2 (k + 2) / alpha``. Then
    ``E_S[err_P] <= exp(epsilon) (Opt_P + target_error)`` against the best
    union of ``k`` intervals (``k = 1``: thresholds, Theorem 2.4).

    .. deprecated:: 0.4
        The keyword ``alpha`` was renamed ``target_error`` in 0.4 and will be
        removed in 0.6.

    Parameters
    ----------
    target_error : float
        Target excess error, in (0, 1).
    epsilon : float
        Per-query privacy parameter (replace-one), > 0.
    k : int, default=1
        Number of endpoints of the comparison class (1: thresholds).

    Returns
    -------
    int
        The number of training rows ``n``.

    Examples
    --------
    >>> exppw_min_samples(0.1, 1.0)
    360
    """
    _validate("exppw_min_samples", k=k)
    T = exppw_clamp_bound(target_error, epsilon)
    return ceil_int(2.0 * (k + 2) * T / target_error)


# -- the walk -------------------------------------------------------------------------
def _clamped_walk(steps: np.ndarray, T: int) -> np.ndarray:
    """Values ``v_j = clip(v_{j-1} + steps[j], -T, T)`` after every step, from ``v_0 = 0``.

    Every step is a map ``v -> clip(v + a, low, high)``, and such maps are closed
    under composition::

        clip(clip(v + a1, l1, h1) + a2, l2, h2)
            = clip(v + a1 + a2, clip(l1 + a2, l2, h2), clip(h1 + a2, l2, h2))

    so the prefix compositions come from a parallel (Hillis-Steele) scan in
    ``ceil(log2(K))`` vectorised rounds, in exact integer arithmetic; the value
    after step ``j`` is the ``j``-th prefix map applied to 0.
    """
    shift = np.array(steps, dtype=np.int64)
    low = np.full(shift.shape, -T, dtype=np.int64)
    high = np.full(shift.shape, T, dtype=np.int64)
    span = 1
    while span < shift.size:
        # Prefix map j becomes (map j) o (map j - span): the earlier map is applied first.
        earlier_shift, earlier_low, earlier_high = shift[:-span], low[:-span], high[:-span]
        later_shift, later_low, later_high = shift[span:], low[span:], high[span:]
        new_low = np.clip(earlier_low + later_shift, later_low, later_high)
        new_high = np.clip(earlier_high + later_shift, later_low, later_high)
        new_shift = earlier_shift + later_shift
        shift[span:], low[span:], high[span:] = new_shift, new_low, new_high
        span *= 2
    return np.clip(shift, low, high)


def _group_starts(sorted_x: np.ndarray) -> np.ndarray:
    """Index of the first occurrence of each distinct value in a sorted array."""
    is_new = np.empty(sorted_x.shape, dtype=bool)
    is_new[:1] = True
    np.not_equal(sorted_x[1:], sorted_x[:-1], out=is_new[1:])
    return np.flatnonzero(is_new)


def _check_walk_data(x, y) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y)
    if x.ndim != 1 or y.ndim != 1 or x.shape != y.shape:
        raise ValueError(
            f"x and y must be 1-D arrays of the same length, got shapes {x.shape} and {y.shape}."
        )
    if not np.all(np.isfinite(x)):
        raise ValueError("x must not contain NaN or infinity.")
    if y.size and not np.all((y == 0) | (y == 1)):
        raise ValueError("y must hold label indices 0 and 1 only.")
    return x, y.astype(np.int64)


def exppw_walk(
    x: ArrayLike, y: ArrayLike, clamp_bound: int, tie_handling: str = "aggregate"
) -> tuple[np.ndarray, np.ndarray]:
    """The clamped walk of ExpPW over the distinct sorted training values.

    Figure 1 of Dwork & Feldman (2018), evaluated once for every distinct
    ``x``: the walk starts at 0, steps by ``2 y - 1`` per training point in
    increasing ``x`` and is clamped to ``[-clamp_bound, clamp_bound]`` (the
    paper's ``[-T, T]``); the walk value of a query ``q`` is the value after the
    last distinct ``u_j <= q`` (0 if there is none). The paper assumes distinct
    ``x``; ties are handled in one of two ways:

    - ``"aggregate"``: all points sharing a value ``u`` make one step, the sum
      of their ``2 y - 1``, then one clamp. Equal to Figure 1 on distinct
      ``x``; invariant to row order; exactly antisymmetric under label flip.
    - ``"sequential"``: Figure 1 verbatim, one clamped step per point, in the
      canonical order ``x`` ascending then ``y`` ascending.

    Both change the walk value at any query by at most 1 when one point is
    removed, which is what the privacy proof needs.

    Parameters
    ----------
    x : array-like of shape (n,)
        Training values, finite.
    y : array-like of shape (n,)
        Label indices, 0 or 1 (1 steps up).
    clamp_bound : int
        Clamp bound ``T``, >= 1.
    tie_handling : {"aggregate", "sequential"}, default="aggregate"
        How points with equal ``x`` are walked over.

    Returns
    -------
    u : ndarray of shape (K,) of float
        The distinct training values, increasing.
    V : ndarray of shape (K,) of int
        ``V[j]`` is the walk value after ``u[j]``, in ``[-clamp_bound, clamp_bound]``.

    Examples
    --------
    >>> u, V = exppw_walk([1, 2, 3, 4, 5], [0, 0, 1, 1, 1], clamp_bound=2)
    >>> V.tolist()
    [-1, -2, -1, 0, 1]
    """
    _validate("exppw_walk", clamp_bound=clamp_bound, tie_handling=tie_handling)
    x, y = _check_walk_data(x, y)
    steps = 2 * y - 1
    # |v| never exceeds the number of steps, so a larger clamp never binds:
    # the same walk, without huge integers.
    T = min(int(clamp_bound), max(x.size, 1))
    if tie_handling == "aggregate":
        order = np.argsort(x, kind="stable")
        sorted_x = x[order]
        starts = _group_starts(sorted_x)
        group_steps = np.add.reduceat(steps[order], starts) if starts.size else steps[:0]
        return sorted_x[starts], _clamped_walk(group_steps, T)
    order = np.lexsort((y, x))
    sorted_x = x[order]
    starts = _group_starts(sorted_x)
    walk = _clamped_walk(steps[order], T)
    ends = np.append(starts[1:], sorted_x.size) - 1
    return sorted_x[starts], walk[ends]


# -- the estimator ----------------------------------------------------------------------
class ExpProjectedWalkClassifier(PrivatePredictorMixin, ClassifierMixin, BaseEstimator):
    """Private prediction on one feature by the exponential projected walk (ExpPW).

    Dwork & Feldman's ExpPW(T, epsilon) for binary labels and one real feature
    ``x``: a query is answered from a clamped walk over the training labels at
    or left of ``x`` (+1 for ``classes_[1]``, -1 for ``classes_[0]``, clamped
    to ``[-clamp_bound, clamp_bound]``), answering ``classes_[1]`` with
    probability ``expit(epsilon * V / 2)``.

    **Guarantee.** Every answered row is ``(epsilon, 0)``-DP for replace-one
    neighbours (``(epsilon / 2, 0)`` for add/remove): one row moves the walk
    by at most 1 at every query (Lemma 5.1). The accountant is charged
    ``epsilon`` per row; ``fit`` releases nothing. With ``n >=``
    :func:`exppw_min_samples`, the expected error is at most
    ``exp(epsilon) (Opt + target_error)`` against the best union of ``k``
    intervals (Theorem 5.3). The walk table is the sorted training set:
    ``predict_proba`` is not offered, and a pickled model must be protected
    like the data.

    See the user guide: :ref:`exppw`.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy parameter of each answered query row (replace-one), > 0.
    target_error : float, default=0.1
        Target excess error in (0, 1) (the paper's ``alpha``; not a
        regularisation strength): gives the clamp bound
        ``ceil(2 ln(2 / target_error) / epsilon)`` (6 for
        ``target_error=0.1, epsilon=1``). Ignored when ``clamp_bound`` is given.
    clamp_bound : int, default=None
        Clamp bound ``T`` of the walk (Figure 1's ``[-T, T]``), an integer >= 1
        (public). Overrides ``target_error``; ``None`` derives it from
        ``target_error`` and ``epsilon`` (Theorem 5.3). Every value gives the
        same privacy; it only trades responsiveness (small) against confidence
        (large). It is not a number of queries.
    tie_handling : {"aggregate", "sequential"}, default="aggregate"
        Training points with equal ``x``: ``"aggregate"`` makes one step of
        their summed ``+1``/``-1`` and one clamp (invariant to row order and
        exactly antisymmetric under swapping the labels); ``"sequential"``
        walks over them one by one, ``classes_[0]`` first (Figure 1 with a
        canonical order). Both are equal on distinct ``x``.
    feature : int, str or None, default=None
        Which column of ``X`` is the feature. ``None`` requires ``X`` with
        exactly one column. An integer selects a column by position, a string
        by name (for a DataFrame with string column names). Only that column
        is validated and used; the others are ignored, but ``predict`` must
        receive the same columns as ``fit``.
    classes : array-like of shape (2,), default=None
        The public label set, two labels; ``classes_[1]`` (the larger in sort
        order) steps up. ``None`` reads it from ``y`` and emits a
        :class:`~skprivpred.PrivacyWarning`.
    accountant : PrivacyAccountant, default=None
        Charged ``epsilon`` per query row before any noise is drawn; a call that
        would exceed its budget raises
        :class:`~skprivpred.BudgetExhaustedError` and changes nothing. It is
        shared, not copied, by ``clone`` and ``copy.deepcopy``.
    random_state : int, RandomState instance, Generator or None, default=None
        Seeds the query stream (the answers' noise), which every query
        advances; ``fit`` uses no randomness. ``None`` uses OS entropy and is
        the right choice in deployment: anyone who knows an integer seed can
        regenerate the noise, which voids the guarantee. Integer seeds are for
        tests and reproducible experiments.
    alpha : float, default="deprecated"
        Old name of ``target_error``.

        .. deprecated:: 0.4
            ``alpha`` was renamed ``target_error`` in 0.4 and will be removed
            in 0.6.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        The public label set.
    clamp_bound_ : int
        The clamp bound used.
    n_features_in_ : int
        Number of columns of ``X`` seen during ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of the columns seen during ``fit`` (only for inputs with string
        column names).
    privacy_guarantee_ : PrivacyGuarantee
        The guarantee of each answered row (replace-one); ``details`` holds
        ``epsilon_add_remove`` (``epsilon / 2``) and the clamp bound.
    queries_answered_ : int
        Number of query rows answered since ``fit``.

    See Also
    --------
    exppw_clamp_bound : The clamp bound from ``target_error`` and ``epsilon``.
    exppw_min_samples : Training-set size for Theorem 5.3's guarantee.
    skprivpred.audit.audit_epsilon : Black-box audit of the per-query epsilon.

    References
    ----------
    C. Dwork and V. Feldman. Privacy-preserving Prediction. COLT 2018,
    Section 5 (Figure 1, Lemmas 5.1 and 5.2, Theorem 5.3).

    Examples
    --------
    >>> import numpy as np
    >>> from skprivpred import ExpProjectedWalkClassifier
    >>> rng = np.random.default_rng(0)
    >>> x = rng.uniform(size=(1000, 1))
    >>> y = (x[:, 0] > 0.3).astype(int)
    >>> clf = ExpProjectedWalkClassifier(epsilon=1.0, classes=[0, 1]).fit(x, y)
    >>> clf.clamp_bound_
    6
    >>> clf.predict([[0.1], [0.9]]).shape
    (2,)
    """

    _parameter_constraints: dict = {
        "epsilon": _CONSTRAINTS["epsilon"],
        "target_error": _CONSTRAINTS["target_error"],
        "alpha": deprecated_constraints(_CONSTRAINTS["target_error"], "target_error"),
        "clamp_bound": [*_CONSTRAINTS["clamp_bound"], None],
        "tie_handling": _CONSTRAINTS["tie_handling"],
        "feature": [Integral, str, None],
        "classes": ["array-like", None],
        "accountant": [PrivacyAccountant, None],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        *,
        epsilon: float = 1.0,
        target_error: float = 0.1,
        clamp_bound: int | None = None,
        tie_handling: str = "aggregate",
        feature: int | str | None = None,
        classes: VectorLike | None = None,
        accountant: PrivacyAccountant | None = None,
        random_state: RandomStateLike = None,
        alpha: float | str = DEPRECATED,
    ) -> None:
        self.epsilon = epsilon
        self.target_error = target_error
        self.clamp_bound = clamp_bound
        self.tie_handling = tie_handling
        self.feature = feature
        self.classes = classes
        self.accountant = accountant
        self.random_state = random_state
        self.alpha = alpha

    def fit(self, X: MatrixLike, y: VectorLike, **fit_params: Any) -> Self:
        """Compute the clamped walk over the distinct sorted training values.

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_samples, n_features)
            Training rows; the column chosen by ``feature`` must be numeric and
            finite.
        y : array-like of shape (n_samples,)
            Labels, two classes, all in ``classes``.
        **fit_params : dict
            Not supported; ``sample_weight`` in particular is refused because a
            weighted row can move an answer by more than one row.

        Returns
        -------
        self : ExpProjectedWalkClassifier
            The fitted estimator.
        """
        clamp_bound = self._check_fit_arguments(fit_params)
        epsilon = float(self.epsilon)
        with self._unchanged_on_error():
            X_checked, y = validate_data(
                self, X, y, reset=True, dtype=None, ensure_all_finite=False, y_numeric=False
            )
            self._feature_index = self._resolve_feature_index()
            x = self._feature_values(X, X_checked, training=True)
            y = finite_target_column(y)
            check_classification_targets(y)
            self._check_binary(y)
            classes = resolve_classes(self.classes, y, type(self).__name__)
            walk_x, walk_v = self._compute_walk(
                x, np.asarray(np.searchsorted(classes, y)), clamp_bound
            )
            self._start_streams()  # fit draws nothing; this creates the query stream
            self._walk_x = walk_x
            # _walk_v[j] is the walk value after the j smallest distinct values.
            self._walk_v = np.concatenate([np.zeros(1, dtype=walk_v.dtype), walk_v])
            self.classes_ = classes
            self.clamp_bound_ = clamp_bound
            self.privacy_guarantee_ = PrivacyGuarantee(
                epsilon,
                0.0,
                unit=GuaranteeUnit.QUERY_ROW,
                theorem="Dwork & Feldman (2018), Lemma 5.1 (ExpPW, Figure 1)",
                details={"epsilon_add_remove": epsilon / 2.0, "clamp_bound": clamp_bound},
            )
        return self

    # -- fit helpers --------------------------------------------------------------------
    def _check_params(self) -> int:
        """Cross-parameter rules; returns the clamp bound (given, or from ``target_error``)."""
        if self.classes is not None and np.unique(np.asarray(self.classes)).size > 2:
            raise InvalidParameterError(
                binary_only_message(
                    type(self).__name__,
                    f"but `classes` holds {np.unique(np.asarray(self.classes)).size} labels",
                    "Pass exactly two labels in `classes`.",
                )
            )
        # Read (and warned about) even when clamp_bound overrides it.
        target_error = renamed_param(self, "alpha", "target_error")
        if self.clamp_bound is not None:
            return int(self.clamp_bound)
        return exppw_clamp_bound(target_error, self.epsilon)

    def _resolve_feature_index(self) -> int:
        """Position of the feature column, from ``feature`` and the fitted schema."""
        n_features = self.n_features_in_
        feature = self.feature
        if feature is None:
            if n_features != 1:
                raise ValueError(
                    f"{type(self).__name__} uses one input feature, but X has {n_features} "
                    "columns; pass X of shape (n_samples, 1) or choose the column with the "
                    "`feature` parameter (a column index or name)."
                )
            return 0
        if isinstance(feature, str):
            names = getattr(self, "feature_names_in_", None)
            if names is None:
                raise ValueError(
                    f"feature={feature!r} is a column name, but X has no string column names; "
                    "pass a DataFrame or an integer column index."
                )
            matches = np.flatnonzero(names == feature)
            if matches.size == 0:
                raise ValueError(f"feature={feature!r} is not a column of X.")
            return int(matches[0])
        if not -n_features <= feature < n_features:
            raise ValueError(
                f"feature={feature} is out of range for X with {n_features} column(s)."
            )
        return int(feature) % n_features

    def _check_binary(self, y) -> None:
        """Refuse a third label in ``y`` (``classes=None``; _check_params checks ``classes``)."""
        if self.classes is None:
            y_type = type_of_target(y, input_name="y", raise_unknown=True)
            if y_type != "binary":
                raise ValueError(
                    binary_only_message(
                        type(self).__name__, f"but the type of the target is {y_type!r}"
                    )
                )

    def _compute_walk(self, x: np.ndarray, y_index: np.ndarray, clamp_bound: int):
        """The walk table ``(u, V)`` for training values ``x`` and label indices."""
        return exppw_walk(x, y_index, clamp_bound, self.tie_handling)

    def _feature_values(self, X, X_checked, *, training: bool) -> np.ndarray:
        """The feature column as floats: finite for training, any but NaN for queries."""
        if hasattr(X, "iloc"):
            column = X.iloc[:, self._feature_index].to_numpy()
        else:
            column = X_checked[:, self._feature_index]
        column = check_array(
            column.reshape(-1, 1), dtype=np.float64, ensure_all_finite=False, input_name="X"
        )[:, 0]
        if np.isnan(column).any():
            raise ValueError(
                f"X contains NaN in the feature column (index {self._feature_index}); "
                f"{'training' if training else 'query'} values must not be NaN."
            )
        if training and np.isinf(column).any():
            raise ValueError(
                f"X contains infinity in the feature column (index {self._feature_index}); "
                "training values must be finite (queries may be -inf or +inf)."
            )
        return column

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags

    # -- queries ------------------------------------------------------------------------
    def _query_values(self, X) -> np.ndarray:
        check_is_fitted(self, "clamp_bound_")
        X_checked = validate_data(self, X, reset=False, dtype=None, ensure_all_finite=False)
        return self._feature_values(X, X_checked, training=False)

    def _walk_value_of(self, x: np.ndarray) -> np.ndarray:
        """Walk value at query values ``x``: one binary search, then a table lookup."""
        return self._walk_v[np.searchsorted(self._walk_x, x, side="right")]

    def _answer_law(self, walk_value: np.ndarray) -> np.ndarray:
        """Exact output law ``[P(classes_[0]), P(classes_[1])]`` for walk values.

        ``P(classes_[1]) = expit(epsilon V / 2)``: the two-candidate exponential
        mechanism with scores ``(0, V)`` and weight ``epsilon / 2``. Only the
        second score moves (by at most 2 between replace-one neighbours), so the
        log-odds move by at most ``epsilon``.
        """
        scores = np.zeros((walk_value.shape[0], 2))
        scores[:, 1] = walk_value
        return exponential_mechanism_proba(scores, self.privacy_guarantee_.epsilon)

    def predict(self, X: MatrixLike) -> np.ndarray:
        """Answer each row with a label drawn from the walk's law.

        Each row is one query, ``epsilon``-DP (replace-one) with fresh noise;
        the attached accountant is charged for all rows before any noise is
        drawn.

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_queries, n_features)
            Query rows, with the columns seen in ``fit``. The feature may be
            ``-inf`` or ``+inf``, not NaN.

        Returns
        -------
        ndarray of shape (n_queries,)
            One private label per row, from ``classes_``.
        """
        return answer(self, X, self._query_plan())

    def _query_plan(self) -> QueryPlan:
        """How ``predict`` answers: the walk values, then the two-candidate mechanism."""
        check_is_fitted(self, "clamp_bound_")
        classes = self.classes_
        return QueryPlan(
            check=self._query_values,
            values=lambda x, n_jobs: self._walk_value_of(x),
            draw=lambda walk_value, rng: sample_categorical(self._answer_law(walk_value), rng),
            finish=lambda index: classes[index],
            epsilon=self.privacy_guarantee_.epsilon,
        )

    # -- non-private diagnostics (tests and audits only) -----------------------------------
    def _walk_value(self, X) -> np.ndarray:
        """Walk value ``V`` per row. NOT PRIVATE: leaks the training data; never charges."""
        return self._walk_value_of(self._query_values(X))

    def _output_distribution(self, X) -> np.ndarray:
        """Exact answer law per row, shape (n, 2). NOT PRIVATE: leaks ``V``; never charges."""
        return self._answer_law(self._walk_value(X))
