"""Public hypothesis classes: one protocol shared by every learner over a finite class.

The protocol (:class:`HypothesisClass`), the library's classes (conjunctions, grid
thresholds, thresholds on a line, a list of callables) and their mistake counts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from numbers import Real
from typing import Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import ArrayLike
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from .._base import known_label_index, one_label_index
from .._teachers._isolation import call_user_code, call_user_code_by_row, freeze_rows
from .._teachers._rows import one_per_row
from ..exceptions import InvalidParameterError
from ..utils._typing import MatrixLike

__all__ = [
    "THRESHOLD_DIRECTIONS",
    "ThresholdClass",
    "ConjunctionClass",
    "FiniteHypothesisClass",
    "GridThresholdClass",
    "HypothesisClass",
    "HypothesisList",
    "LabelBoostCandidates",
    "binary_patterns",
    "conjunction_mistakes",
    "superset_sums",
    "threshold_mistakes",
]


#: The direction of a threshold hypothesis: ``"increasing"`` predicts the positive
#: label when ``x >= threshold``, ``"decreasing"`` when ``x < threshold``.
THRESHOLD_DIRECTIONS = ("increasing", "decreasing")


@runtime_checkable
class HypothesisClass(Protocol):
    """A public class of binary (or multiclass, for a user's list) hypotheses.

    Every member is data-independent: the class is built from public parameters
    (and, for the PPM candidates, public rows) only, so reading any of these
    members discloses nothing about private rows.

    Attributes
    ----------
    n_hypotheses : int or None
        Number of hypotheses of a finite class (indices ``0 .. n_hypotheses - 1``);
        ``None`` for an infinite class (thresholds on the whole line).

    Methods
    -------
    default_vc_dim()
        A public upper bound on the VC dimension (at least 1), used where a
        learner's sample size depends on it.
    prepare(X)
        The rows as the class evaluates them (validated, finite; for example
        one value per row for thresholds on the line, 0/1 rows for
        conjunctions). Raises ``ValueError`` for rows outside the domain.

    Notes
    -----
    **A class of your own for the everlasting predictors: the row-wise
    protocol.** The ``hypothesis_class`` of
    :class:`~skprivpred.GenericBBLClassifier` and
    :class:`~skprivpred.PrivateEverlastingClassifier` meets protected rows
    (training rows, and the queries and their answers, which these predictors
    protect too). The library's own classes (:class:`ThresholdClass` and
    :class:`FiniteHypothesisClass`, exactly those classes: a subclass may
    compute anything) are accepted as they are. A class of your own is
    accepted only in this protocol, which the library's one boundary
    (:func:`skprivpred._teachers._isolation.call_user_code`) can keep: every call sees
    one protected unit, on a copy of the class of its own, and whatever the
    call does gives a fixed public result.

    ``n_hypotheses`` : int >= 1
        The number ``K`` of hypotheses (public; read once, at ``fit``).
    ``erm_block(points, labels) -> int``
        Empirical risk minimisation on **one teacher's block**, called once
        per block: ``points`` of shape (block size, n_features), float,
        finite (the validated rows: the library prepares the points, the
        class's ``prepare`` is not called), ``labels`` 0/1 of shape
        (block size,). Returns the index in ``[0, K)`` of the chosen
        hypothesis. A call that raises or returns anything else chooses
        hypothesis 0.
    ``labels_at(point) -> array of K labels``
        The label (0/1) of every hypothesis on **one point** (shape
        (n_features,)), called once per distinct point (identical points
        share one call). A call that raises, or returns another shape,
        labels the point 0 under every hypothesis; an entry other than 1
        is label 0 (as a callable of :class:`FiniteHypothesisClass`).
    ``default_vc_dim()`` : optional
        A public bound on the VC dimension; without it, ``max(1,
        floor(log2 K))``.

    From these the library computes the teachers' votes, LabelBoost's
    dichotomies and the relabelling's candidates itself (uniform prior
    over the ``K`` hypotheses). The class is pickled once at ``fit`` (with
    ``cloudpickle``) and every call runs on a copy of its own: state it
    keeps in its attributes never reaches another call (module globals, class
    attributes and files are outside what a process can isolate). A class
    with methods that take whole pools (``erm`` on every block at once,
    ``vote_fraction``, ``candidates``, ``prior_candidates``) is refused
    with :class:`~skprivpred.exceptions.InvalidParameterError`.
    """

    @property
    def n_hypotheses(self) -> int | None:
        """Number of hypotheses, or ``None`` for an infinite class."""
        ...

    def default_vc_dim(self) -> int:
        """A public upper bound (>= 1) on the VC dimension of the class."""
        ...

    def prepare(self, X: MatrixLike) -> np.ndarray:
        """The rows of ``X`` in the form the class evaluates them."""
        ...


# -- mistake counts of whole classes (pure) -------------------------------------------------
def superset_sums(values: ArrayLike) -> np.ndarray:
    """Superset-sum (zeta) transform over the subsets of ``d`` elements.

    ``out[T] = sum of values[P] over all P with T ⊆ P``, where a subset is the bit
    mask of its elements (bit ``i`` set means element ``i`` belongs to it). One
    pass per element, each a vectorised addition: ``O(d 2**d)`` time.

    Parameters
    ----------
    values : array-like of shape (2**d,)
        One value per subset, indexed by bit mask.

    Returns
    -------
    ndarray of shape (2**d,)
        The superset sums, in the dtype of ``values``.

    Examples
    --------
    >>> superset_sums([1, 2, 3, 4]).tolist()  # {} {0} {1} {0, 1}
    [10, 6, 7, 4]
    """
    out = np.array(values, copy=True)
    size = out.shape[0]
    if out.ndim != 1 or size < 1 or size & (size - 1):
        raise ValueError(f"values must be 1-D of length 2**d, got shape {out.shape}.")
    for bit in range(size.bit_length() - 1):
        # Axis 1 of this view is bit `bit` of the index: add "bit set" into "bit unset".
        view = out.reshape(-1, 2, 1 << bit)
        view[:, 0, :] += view[:, 1, :]
    return out


def binary_patterns(X: ArrayLike) -> np.ndarray:
    """Bit mask of each binary row: bit ``i`` is set when feature ``i`` is 1.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), values 0/1 or bool
        Binary rows, ``n_features <= 62``.

    Returns
    -------
    ndarray of shape (n_samples,) of int64
    """
    X = np.asarray(X)
    weights = np.left_shift(np.int64(1), np.arange(X.shape[1], dtype=np.int64))
    return X.astype(np.int64) @ weights


def conjunction_mistakes(patterns: ArrayLike, positive: ArrayLike, n_features: int) -> np.ndarray:
    """Mistakes of all ``2**d`` monotone conjunctions on a labelled data set.

    The conjunction ``h_T`` (bit mask ``T``) predicts positive on a row with bit
    pattern ``P`` iff ``T ⊆ P``; the empty conjunction is the constant positive.
    Its mistakes are ``(n_pos - sup_pos[T]) + sup_neg[T]``, where ``sup_b[T]``
    counts the rows of label ``b`` whose pattern contains ``T``. By linearity this
    is ``n_pos + superset_sums(hist_neg - hist_pos)[T]``: one histogram pass and
    one transform, ``O(n + d 2**d)``.

    Parameters
    ----------
    patterns : array-like of int of shape (n_samples,)
        Bit patterns of the rows (:func:`binary_patterns`).
    positive : array-like of bool of shape (n_samples,)
        Whether each row's label is the positive class.
    n_features : int
        Number of binary features ``d``.

    Returns
    -------
    ndarray of int64 of shape (2**n_features,)
        ``mistakes[T]`` for every bit mask ``T``.
    """
    patterns = np.asarray(patterns, dtype=np.int64)
    positive = np.asarray(positive, dtype=bool)
    size = 1 << n_features
    balance = np.bincount(patterns[~positive], minlength=size)
    balance -= np.bincount(patterns[positive], minlength=size)
    return int(np.count_nonzero(positive)) + superset_sums(balance)


def threshold_mistakes(x: ArrayLike, positive: ArrayLike, grid: ArrayLike) -> np.ndarray:
    """Mistakes of ``h_k(x) = 1[x >= grid[k]]`` for every point of a sorted grid.

    Each row falls in the cell ``c(x) = #{k : grid[k] <= x}``; ``h_k`` is positive
    on the row iff ``c(x) > k``. Its mistakes are the positive rows with
    ``c <= k`` plus the negative rows with ``c > k``: prefix sums of two cell
    histograms, ``O(n log N + N)``. The decreasing direction (positive when
    ``x < grid[k]``) makes ``n - mistakes[k]`` mistakes.

    Parameters
    ----------
    x : array-like of shape (n_samples,)
        One real feature.
    positive : array-like of bool of shape (n_samples,)
        Whether each row's label is the positive class.
    grid : array-like of shape (n_grid,)
        Candidate thresholds, strictly increasing.

    Returns
    -------
    ndarray of int64 of shape (n_grid,)
    """
    positive = np.asarray(positive, dtype=bool)
    grid = np.asarray(grid, dtype=float)
    cells = np.searchsorted(grid, np.asarray(x, dtype=float), side="right")
    n_grid = grid.shape[0]
    pos_below = np.cumsum(np.bincount(cells[positive], minlength=n_grid + 1))[:n_grid]
    neg_below = np.cumsum(np.bincount(cells[~positive], minlength=n_grid + 1))[:n_grid]
    n_neg = positive.shape[0] - int(np.count_nonzero(positive))
    return pos_below + (n_neg - neg_below)


def _log2_bound(n_hypotheses: int) -> int:
    """``max(1, floor(log2 K))``: a VC-dimension bound valid for any class of K hypotheses."""
    return max(1, int(math.floor(math.log2(max(n_hypotheses, 1)))))


# -- released hypotheses ----------------------------------------------------------------------
class _Conjunction:
    """A released monotone conjunction: positive iff every selected feature is 1."""

    def __init__(self, features: np.ndarray, classes: np.ndarray) -> None:
        self.features = features
        self.classes = classes

    def predict(self, X: np.ndarray) -> np.ndarray:
        positive = np.all(X[:, self.features] == 1, axis=1)
        return self.classes[positive.astype(np.intp)]


class _Threshold:
    """A released threshold on one feature."""

    def __init__(self, feature: int, threshold: float, direction: str, classes: np.ndarray) -> None:
        self.feature = feature
        self.threshold = threshold
        self.direction = direction
        self.classes = classes

    def predict(self, X: np.ndarray) -> np.ndarray:
        above = X[:, self.feature] >= self.threshold
        positive = above if self.direction == "increasing" else ~above
        return self.classes[positive.astype(np.intp)]


class _Listed:
    """A released member of a user's list of hypotheses."""

    def __init__(self, hypotheses: HypothesisList, index: int) -> None:
        self.hypotheses = hypotheses
        self.index = index

    def predict(self, X: MatrixLike) -> np.ndarray:
        return self.hypotheses.predictions(X, np.shape(X)[0], members=[self.index])[0]


# -- finite classes of the exponential-mechanism learner ----------------------------------------
class ConjunctionClass:
    """All ``2**d`` monotone conjunctions over ``d`` binary features.

    ``h_S(x) = AND_{i in S} x_i`` predicts the positive label ``classes[1]``; the
    empty conjunction is the constant positive label. Hypothesis ``k`` is the
    conjunction of the features whose bits are set in ``k``. Its mistakes are
    computed for all ``2**d`` hypotheses at once (:func:`conjunction_mistakes`).

    Parameters
    ----------
    n_features : int
        Number ``d`` of binary features, at most 62.

    Examples
    --------
    >>> import numpy as np
    >>> family = ConjunctionClass(2)
    >>> family.n_hypotheses, family.default_vc_dim()
    (4, 2)
    >>> X = np.array([[1, 1], [1, 0], [0, 0]])
    >>> family.mistakes(X, np.array([1, 0, 0]), np.array([0, 1])).tolist()
    [2, 1, 0, 0]
    """

    binary = True

    def __init__(self, n_features: int) -> None:
        if n_features > 62:
            raise ValueError(
                f"hypotheses='conjunctions' takes at most 62 binary features, got {n_features}."
            )
        self.n_features = n_features

    @property
    def n_hypotheses(self) -> int:
        """``2**d``."""
        return 1 << self.n_features

    def default_vc_dim(self) -> int:
        """The VC dimension of monotone conjunctions over ``d`` features: ``d`` (at least 1)."""
        return max(1, self.n_features)

    def prepare(self, X: MatrixLike) -> np.ndarray:
        """``X`` itself, after checking that every value is 0 or 1 (or ``False``/``True``)."""
        X = np.asarray(X)
        if X.dtype.kind not in "biuf" or not np.all((X == 0) | (X == 1)):
            raise ValueError(
                "hypotheses='conjunctions' needs binary X: every value 0 or 1 (or False/True), "
                "and X holds other values. Binarise the features with public thresholds first, "
                "for example with sklearn.preprocessing.Binarizer(threshold=...) at a value "
                "fixed without looking at the data."
            )
        return X

    def mistakes(self, X: np.ndarray, y: np.ndarray, classes: np.ndarray) -> np.ndarray:
        """Mistakes of every conjunction on ``(X, y)`` (NOT private: reads the rows)."""
        return conjunction_mistakes(binary_patterns(X), y == classes[1], self.n_features)

    def release(self, index: int, classes: np.ndarray) -> tuple[dict, Any]:
        """Public fitted attributes and a predictor for hypothesis ``index``."""
        features = np.flatnonzero((index >> np.arange(self.n_features)) & 1)
        return {"selected_features_": features}, _Conjunction(features, classes)


class GridThresholdClass:
    """Thresholds at the points of a public grid, on every feature, in given directions.

    ``"increasing"`` hypotheses predict the positive label ``classes[1]`` when
    ``x_j >= a``, ``"decreasing"`` ones when ``x_j < a``. Hypotheses are laid
    out feature by feature; within a feature, the ``"increasing"`` block (one
    per grid point) comes before the ``"decreasing"`` block.

    Parameters
    ----------
    grids : list of ndarray
        One strictly increasing finite grid per feature (see :meth:`from_grid`).
    direction : {"increasing", "decreasing", "both"}
        The directions the class holds.

    Examples
    --------
    >>> import numpy as np
    >>> family = GridThresholdClass.from_grid([0.0, 1.0], n_features=1, direction="both")
    >>> family.n_hypotheses, family.default_vc_dim()
    (4, 2)
    >>> family.release(3, np.array([0, 1]))[0]["direction_"]
    'decreasing'
    """

    binary = True

    def __init__(self, grids: list[np.ndarray], direction: str) -> None:
        self.grids = grids
        self.direction = direction
        self.directions = THRESHOLD_DIRECTIONS if direction == "both" else (direction,)
        sizes = [grid.shape[0] * len(self.directions) for grid in grids]
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)

    @classmethod
    def from_grid(cls, grid: Any, n_features: int, direction: str) -> GridThresholdClass:
        """The class from a ``grid`` parameter: one 1-D grid for all features, or one each.

        Raises ``ValueError`` (``TypeError`` for non-numbers) for a missing,
        empty, non-finite or duplicated grid, or one per feature of the wrong
        count.
        """
        if grid is None:
            raise ValueError(
                "hypotheses='thresholds' needs a public grid of candidate thresholds, got "
                "grid=None. Pass grid= values fixed without looking at the training data (a grid "
                "read from the data would disclose it)."
            )
        per_feature = (
            isinstance(grid, (list, tuple)) and len(grid) > 0 and all(np.ndim(g) == 1 for g in grid)
        )
        if per_feature or np.ndim(grid) == 2:
            if len(grid) != n_features:
                raise ValueError(
                    f"grid holds {len(grid)} per-feature grids but X has {n_features} features; "
                    "pass one grid per feature or a single 1-D grid shared by all features."
                )
            grids = list(grid)
        elif np.ndim(grid) == 1:
            grids = [grid] * n_features
        else:
            raise ValueError(
                "grid must be a 1-D array-like of thresholds (shared by all features) or one 1-D "
                f"array-like per feature, got an object with {np.ndim(grid)} dimensions."
            )
        checked = []
        for j, values in enumerate(grids):
            try:
                values = np.asarray(values, dtype=float)
            except (TypeError, ValueError):
                raise TypeError(f"grid for feature {j} must hold real numbers.") from None
            if values.shape[0] == 0 or not np.all(np.isfinite(values)):
                raise ValueError(
                    f"grid for feature {j} must hold at least one finite threshold and no NaN "
                    "or infinity."
                )
            values = np.sort(values)
            if np.any(np.diff(values) == 0):
                raise ValueError(
                    f"grid for feature {j} holds duplicate thresholds; pass distinct values."
                )
            checked.append(values)
        return cls(checked, direction)

    @property
    def n_hypotheses(self) -> int:
        """Grid points times directions, summed over the features."""
        return int(self.offsets[-1])

    def default_vc_dim(self) -> int:
        """1 (2 with both directions) on one feature, else ``max(1, floor(log2 K))``."""
        if len(self.grids) == 1:
            return min(len(self.directions), _log2_bound(self.n_hypotheses))
        return _log2_bound(self.n_hypotheses)

    def prepare(self, X: MatrixLike) -> np.ndarray:
        """``X`` as a float array (its values are compared with the grid)."""
        return np.asarray(X, dtype=float)

    def mistakes(self, X: np.ndarray, y: np.ndarray, classes: np.ndarray) -> np.ndarray:
        """Mistakes of every threshold on ``(X, y)`` (NOT private: reads the rows)."""
        positive = y == classes[1]
        n_rows = positive.shape[0]
        blocks = []
        for j, grid in enumerate(self.grids):
            increasing = threshold_mistakes(X[:, j], positive, grid)
            blocks += [
                increasing if d == "increasing" else n_rows - increasing for d in self.directions
            ]
        return np.concatenate(blocks)

    def release(self, index: int, classes: np.ndarray) -> tuple[dict, Any]:
        """Public fitted attributes and a predictor for hypothesis ``index``."""
        feature = int(np.searchsorted(self.offsets, index, side="right") - 1)
        grid = self.grids[feature]
        direction_index, point = divmod(index - int(self.offsets[feature]), grid.shape[0])
        direction = self.directions[direction_index]
        threshold = float(grid[point])
        attributes = {
            "threshold_": threshold,
            "threshold_feature_": feature,
            "direction_": direction,
        }
        return attributes, _Threshold(feature, threshold, direction, classes)


class HypothesisList:
    """A user's finite list of public hypotheses: fitted classifiers or callables.

    Used for the hypotheses of
    :class:`~skprivpred.ExponentialMechanismClassifier` and the experts of
    :class:`~skprivpred.PrivateExpertsClassifier`. Each member is fitted (or
    written) before the private data are seen; a fitted classifier is used
    through ``predict``, a callable as ``h(X) -> labels``. On training rows
    (:meth:`mistakes`, :meth:`correct`, :meth:`label_index`) every member
    labels each row alone, through the one boundary of
    :mod:`skprivpred._teachers._isolation`; public rows (:meth:`predictions`) go to
    each member as one batch.

    Parameters
    ----------
    functions : list or tuple
        The hypotheses, at least one.
    name : str, default="hypotheses"
        The parameter they came from, for error messages.

    Raises
    ------
    InvalidParameterError
        For an empty list, a member that is neither a classifier nor a
        callable, or an unfitted classifier.

    Examples
    --------
    >>> import numpy as np
    >>> family = HypothesisList([lambda X: X[:, 0], lambda X: 1 - X[:, 0]])
    >>> family.n_hypotheses
    2
    >>> family.mistakes(np.array([[0], [1]]), np.array([0, 1]), np.array([0, 1])).tolist()
    [0, 2]
    """

    binary = False

    def __init__(self, functions: Sequence[Any], name: str = "hypotheses") -> None:
        if isinstance(functions, (str, bytes)) or not isinstance(functions, (list, tuple)):
            raise InvalidParameterError(
                f"{name} must be a list of fitted classifiers or callables, got "
                f"{type(functions).__name__}."
            )
        if len(functions) == 0:
            raise InvalidParameterError(
                f"{name} must hold at least one fitted classifier or callable, got []."
            )
        for i, function in enumerate(functions):
            if hasattr(function, "predict"):
                if hasattr(function, "fit"):
                    _check_fitted_member(function, f"{name}[{i}]")
            elif not callable(function):
                raise InvalidParameterError(
                    f"{name}[{i}] must be a fitted classifier (with predict) or a callable "
                    f"X -> labels, got {type(function).__name__}."
                )
        self.functions = list(functions)
        self.name = name

    @property
    def n_hypotheses(self) -> int:
        """The length of the list."""
        return len(self.functions)

    def default_vc_dim(self) -> int:
        """``max(1, floor(log2 K))``: a valid bound for any class of ``K`` hypotheses."""
        return _log2_bound(self.n_hypotheses)

    def prepare(self, X: MatrixLike) -> MatrixLike:
        """``X`` unchanged: the members take the rows as given (a DataFrame stays one)."""
        return X

    def predictions(
        self, X: MatrixLike, n_rows: int, members: Sequence[int] | None = None
    ) -> np.ndarray:
        """Labels of every member (or of ``members``) on PUBLIC rows, shape (n_members, n_rows).

        For queries, which these learners do not protect: each member labels
        the batch in one call, and an output of another shape raises. Training
        rows go through :meth:`label_index` instead.
        """
        chosen = range(len(self.functions)) if members is None else members
        rows = []
        for i in chosen:
            function = self.functions[i]
            labels = function.predict(X) if hasattr(function, "predict") else function(X)
            labels = np.asarray(labels)
            if labels.shape != (n_rows,):
                raise ValueError(
                    f"{self.name}[{i}] must return one label per row, shape ({n_rows},), got "
                    f"shape {labels.shape}."
                )
            rows.append(labels)
        return np.stack(rows)

    def label_index(self, X: MatrixLike, classes: np.ndarray) -> np.ndarray:
        """Each member's label on each protected row, as an index in ``classes``; -1: none.

        The training rows are protected: every member labels each row alone,
        through the one boundary
        (:func:`~skprivpred._teachers._isolation.call_user_code_by_row`): its own copy of
        the member for every row (pickled once with ``cloudpickle``; an
        unpicklable member is refused with an ``InvalidParameterError`` before
        any row is read), the row as a one-row object of its own (2-D, shape
        ``(1, n_features)``; a DataFrame row with the index ``[0]``), warnings
        captured and the process-wide state restored after each row. Identical
        rows share one evaluation. A row on which the member raises, or does
        not give one label of ``classes`` (shape ``(1,)`` or ``(1, 1)``), gets
        ``-1``, which matches no label: **a failing row counts as a mistake**.

        Returns
        -------
        ndarray of shape (n_members, n_rows) of intp
        """

        check = one_label_index(classes)
        by_predict = [hasattr(function, "predict") for function in self.functions]
        out = np.empty((len(self.functions), np.shape(X)[0]), dtype=np.intp)
        for wanted in (True, False):  # the same accessor for a run of members
            members = [i for i, p in enumerate(by_predict) if p is wanted]
            if not members:
                continue
            out[members] = call_user_code_by_row(
                [self.functions[i] for i in members],
                X,
                (lambda h, Z: h.predict(Z)) if wanted else (lambda h, Z: h(Z)),
                check,
                -1,
                names=[f"{self.name}[{i}]" for i in members],
                dtype=np.intp,
            )
        return out

    def correct(self, X: MatrixLike, y: np.ndarray, classes: np.ndarray) -> np.ndarray:
        """Where each member gives the row's label, shape (n_members, n_rows) (NOT private).

        Row by row through the boundary (:meth:`label_index`): a row on which a
        member fails is a mistake of that member.
        """
        y_index, known = known_label_index(classes, np.asarray(y))
        predicted = self.label_index(X, classes)
        return (predicted == np.where(known, y_index, -2)[None, :]) & (predicted >= 0)

    def mistakes(self, X: MatrixLike, y: np.ndarray, classes: np.ndarray) -> np.ndarray:
        """Mistakes of every member on ``(X, y)`` (NOT private: reads the rows).

        Each member labels each row alone (:meth:`label_index`); a row on which
        it fails counts as a mistake. One row changes each count by at most 1.
        """
        correct = self.correct(X, y, classes)
        return (correct.shape[1] - np.count_nonzero(correct, axis=1)).astype(np.int64)

    def release(self, index: int, classes: np.ndarray) -> tuple[dict, Any]:
        """Public fitted attributes and a predictor for member ``index``."""
        attributes = {"selected_index_": index, "hypothesis_": self.functions[index]}
        return attributes, _Listed(self, index)


def _check_fitted_member(estimator: Any, label: str) -> None:
    try:
        check_is_fitted(estimator)
    except NotFittedError:
        raise InvalidParameterError(
            f"{label} ({type(estimator).__name__}) is not fitted. Its members are public and "
            "fitted before the private data are seen. Note that sklearn.base.clone (used by "
            "GridSearchCV and cross_val_score) returns unfitted copies of estimators in a list: "
            "wrap each fitted estimator in sklearn.frozen.FrozenEstimator to keep it fitted."
        ) from None


@dataclass(frozen=True)
class LabelBoostCandidates:
    """Candidate labellings of the points P of Shat and Dhat by a class, and their scores.

    ``errors[k]`` is the number of labelled points candidate ``k`` gets wrong;
    ``labels_of(k)`` gives its labels (0/1) on the labelled and unlabelled points.
    ``log_prior`` is ``None`` for LabelBoost's candidates (one per distinct
    dichotomy, equally weighted: Beimel, Nissim & Stemmer 2021), or the log of
    the mass that a *public* prior on the class gives each candidate (see
    :meth:`ThresholdClass.prior_candidates`): the masses of all candidates sum
    to one whatever the points are.
    """

    errors: np.ndarray
    labels_of: Any  # callable: int -> (labels on Shat, labels on Dhat), each an int8 array
    log_prior: np.ndarray | None = None


class ThresholdClass:
    """1-D thresholds on the line, VC dimension 1: ``1[x >= t]`` or ``1[x < t]``.

    A concept class for :class:`~skprivpred.GenericBBLClassifier` and the
    relabelling of :class:`~skprivpred.PrivateEverlastingClassifier`: an exact
    ERM (the midpoint of the optimal range), votes by binary search in the
    sorted teacher thresholds, and LabelBoost's ``l + 1`` dichotomies of ``l``
    distinct values by prefix sums.

    **Guarantee.** None of its own: the class is public, fixed before the data
    are seen, and the learner that uses it carries the guarantee.

    See the user guide: :ref:`everlasting`.

    Parameters
    ----------
    direction : {"increasing", "decreasing"}, default="increasing"
        ``"increasing"``: label 1 (``classes_[1]``) when ``x >= t``;
        ``"decreasing"``: label 1 when ``x < t`` (learned on the negated
        values). A public choice; a class with both directions has VC
        dimension 2 and is not offered here.
    prior_loc : float, default=0.0
        Centre of the public Cauchy prior on ``t`` (in the units of ``x``) used
        by :meth:`prior_candidates`, the relabelling of
        :class:`~skprivpred.PrivateEverlastingClassifier`; not used by
        LabelBoost's dichotomies (:meth:`candidates`).
    prior_scale : float, default=1.0
        Scale of that prior, > 0. Public: choose it from the feature's
        documented units, never from the data.

    Raises
    ------
    InvalidParameterError
        From :meth:`prepare` if ``direction`` is not one of
        :data:`THRESHOLD_DIRECTIONS`, or if the prior is not finite with a
        positive scale.

    References
    ----------
    M. Naor, K. Nissim, U. Stemmer and C. Yan. Private Everlasting Prediction.
    NeurIPS 2023.
    """

    def __init__(
        self, direction: str = "increasing", prior_loc: float = 0.0, prior_scale: float = 1.0
    ) -> None:
        self.direction = direction
        self.prior_loc = prior_loc
        self.prior_scale = prior_scale

    def __repr__(self) -> str:
        if (self.prior_loc, self.prior_scale) == (0.0, 1.0):
            return f"ThresholdClass(direction={self.direction!r})"
        return (
            f"ThresholdClass(direction={self.direction!r}, prior_loc={self.prior_loc!r}, "
            f"prior_scale={self.prior_scale!r})"
        )

    @property
    def n_hypotheses(self) -> None:
        """``None``: thresholds on the line are an infinite class."""
        return None

    def default_vc_dim(self) -> int:
        """VC dimension of thresholds on the line: 1."""
        return 1

    def prepare(self, X: MatrixLike) -> np.ndarray:
        """Validated points: one finite value per row, negated if decreasing.

        ``X`` has shape (n,) or (n, 1).
        """
        from sklearn.utils.validation import check_array

        if self.direction not in THRESHOLD_DIRECTIONS:
            raise InvalidParameterError(
                f"The 'direction' parameter of ThresholdClass must be a str among "
                f"{set(THRESHOLD_DIRECTIONS)}. Got {self.direction!r} instead."
            )
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
    ) -> LabelBoostCandidates:
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

        return LabelBoostCandidates(errors=np.rint(errors), labels_of=labels_of)

    def _prior(self) -> tuple[float, float]:
        """``(loc, scale)`` of the Cauchy prior in prepared units (negated if decreasing)."""
        loc, scale = self.prior_loc, self.prior_scale
        if not (
            isinstance(loc, (int, float, np.floating, np.integer))
            and isinstance(scale, (int, float, np.floating, np.integer))
            and math.isfinite(loc)
            and math.isfinite(scale)
            and scale > 0
        ):
            raise InvalidParameterError(
                "The 'prior_loc' and 'prior_scale' parameters of ThresholdClass must be finite "
                f"reals with prior_scale > 0. Got prior_loc={loc!r}, prior_scale={scale!r}."
            )
        return (float(loc) if self.direction == "increasing" else -float(loc)), float(scale)

    def prior_candidates(self, points: np.ndarray, labels: np.ndarray) -> LabelBoostCandidates:
        """Every threshold, weighted by the public prior, grouped by its labelling of the points.

        The ``l + 1`` intervals between the ``l`` distinct prepared values
        partition the line; candidate ``k`` is every ``t`` in ``(v_{k-1}, v_k]``
        (it labels the first ``k`` values 0), with ``log_prior[k]`` the log of
        the prior's mass on that interval, computed without cancellation
        (``arctan b - arctan a = atan2(b - a, 1 + a b)``). The masses sum to one
        for any points, so the exponential mechanism over them is the one over
        the fixed class with a fixed base measure (McSherry & Talwar 2007).

        Parameters
        ----------
        points : ndarray of shape (n,)
            Prepared values.
        labels : ndarray of shape (n,)
            0/1 labels of the points (all of them score).

        Returns
        -------
        LabelBoostCandidates
            With ``log_prior`` set; ``labels_of(k)`` returns the labels of the
            points twice (scored and relabelled are the same points).
        """
        loc, scale = self._prior()
        values, rank = np.unique(np.asarray(points, dtype=float), return_inverse=True)
        labels = np.asarray(labels, dtype=float)
        ones = np.bincount(rank, weights=labels, minlength=values.size)
        zeros = np.bincount(rank, weights=1 - labels, minlength=values.size)
        ones_before = np.concatenate([[0.0], np.cumsum(ones)])
        zeros_before = np.concatenate([[0.0], np.cumsum(zeros)])
        errors = ones_before + (zeros_before[-1] - zeros_before)
        z = (values - loc) / scale
        lower = np.concatenate([[-np.inf], z])
        upper = np.concatenate([z, [np.inf]])
        gap = np.concatenate([[np.inf], np.diff(values) / scale, [np.inf]])
        with np.errstate(invalid="ignore", over="ignore"):
            angle = np.arctan2(gap, 1.0 + lower * upper)  # arctan(upper) - arctan(lower)
        angle[0] = np.arctan2(1.0, -upper[0])  # arctan(upper) + pi/2
        angle[-1] = np.arctan2(1.0, lower[-1])  # pi/2 - arctan(lower)
        if values.size == 0:
            angle = np.array([np.pi])
        with np.errstate(divide="ignore"):
            log_prior = np.log(angle) - math.log(math.pi)

        def labels_of(k: int) -> tuple[np.ndarray, np.ndarray]:
            relabelled = (rank >= k).astype(np.int8)
            return relabelled, relabelled

        return LabelBoostCandidates(
            errors=np.rint(errors), labels_of=labels_of, log_prior=log_prior
        )


def _positive_labels(values: np.ndarray) -> np.ndarray:
    """Where ``values`` (1-D) is the label 1, as bools; any other value counts as label 0."""
    if values.dtype.kind in "biuf":
        return values == 1
    if values.dtype.kind == "O":
        return np.fromiter(
            (isinstance(v, Real) and v == 1 for v in values),
            dtype=bool,
            count=values.shape[0],
        )
    return np.zeros(values.shape[0], dtype=bool)


#: A callable hypothesis's label on a point where it gives no label 0 or 1 (it raises, or
#: returns another shape or value): counted as a mistake of the hypothesis wherever
#: mistakes are counted, and as the label 0 (``classes_[0]``) wherever labels are used.
_FAILED = -1


def _one_binary_label(output) -> int:
    """The 0/1 label in a hypothesis's output for one point; raises for anything else."""
    value = one_per_row(output, 1)[0]
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    if isinstance(value, (Real, np.number)) and value in (0, 1):
        return 1 if value == 1 else 0
    raise ValueError("not a label in {0, 1}")


def _block_binary_labels(size: int) -> Any:
    """A check of a hypothesis's output on a block of ``size`` points: 0, 1 or -1 per point."""

    def check(output) -> np.ndarray:
        values = one_per_row(output, size)
        if values.dtype.kind not in "biuf":
            values = np.array([v if isinstance(v, (Real, np.number)) else np.nan for v in values])
        with np.errstate(invalid="ignore"):
            labels = np.where(values == 1, 1, np.where(values == 0, 0, _FAILED))
        return labels.astype(np.int8)

    return check


def _callable_labels(hypotheses: Sequence[Any], points: np.ndarray) -> np.ndarray:
    """0/1 labels of callable hypotheses on protected points, ``-1`` where a call fails.

    Through the one boundary, point by point
    (:func:`~skprivpred._teachers._isolation.call_user_code_by_row`): each hypothesis
    labels each point alone (a one-row 2-D array of its own, frozen), through a
    copy of its own for every point (pickled once with ``cloudpickle``);
    identical points share one evaluation. A point on which it raises or does
    not return one label in {0, 1} (shape ``(1,)`` or ``(1, 1)``) gets
    ``-1`` (:data:`_FAILED`), whatever the other points are.

    Returns
    -------
    ndarray of shape (n_hypotheses, n_points) of int8
    """
    return call_user_code_by_row(
        list(hypotheses),
        points,
        lambda h, Z: h(Z),
        _one_binary_label,
        _FAILED,
        names=[f"hypotheses[{k}]" for k in range(len(hypotheses))],
        dtype=np.int8,
    )


def _as_label(labels: np.ndarray) -> np.ndarray:
    """Labels with a failure (:data:`_FAILED`) read as the fixed public label 0."""
    return np.where(labels == _FAILED, 0, labels).astype(np.int8)


class FiniteHypothesisClass:
    """A finite class of binary hypotheses, as a prediction matrix or as callables.

    A concept class for :class:`~skprivpred.GenericBBLClassifier` and the
    relabelling of :class:`~skprivpred.PrivateEverlastingClassifier`. ERM takes
    the lowest-index minimiser; LabelBoost de-duplicates the hypotheses' label
    vectors on the points. Label 1 means ``classes_[1]``.

    **Guarantee.** None of its own: the class is public, fixed before the data
    are seen, and the learner that uses it carries the guarantee. Callables
    meet protected rows (training rows, and the everlasting predictors'
    queries) only through the library's isolation boundary, one point at a
    time (see :ref:`user-code`): where a callable gives no label in {0, 1}
    (it raises, or returns another shape or value), the point counts as a
    mistake of that hypothesis, and its label there is 0, silently.

    See the user guide: :ref:`everlasting`.

    Parameters
    ----------
    predictions : array-like of shape (n_hypotheses, n_domain), default=None
        ``predictions[k, x]`` in {0, 1} is hypothesis ``k``'s label on domain
        point ``x``; queries and training rows are then integer indices in
        ``[0, n_domain)`` (shape (n,) or (n, 1)), and :meth:`prepare` refuses
        one outside the domain before anything is charged.
    hypotheses : list of callable, default=None
        ``h(X)`` returns one label in {0, 1} per row of ``X`` (2-D); each must
        pickle with ``cloudpickle``. Exactly one of ``predictions`` and
        ``hypotheses`` must be given.

    References
    ----------
    M. Naor, K. Nissim, U. Stemmer and C. Yan. Private Everlasting Prediction.
    NeurIPS 2023.
    """

    def __init__(
        self,
        predictions: MatrixLike | None = None,
        hypotheses: list[Any] | None = None,
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
            raise InvalidParameterError(
                "FiniteHypothesisClass needs exactly one of predictions and hypotheses."
            )
        if self.predictions is None:
            if not self.hypotheses or not all(callable(h) for h in self.hypotheses):
                raise InvalidParameterError(
                    "The 'hypotheses' parameter of FiniteHypothesisClass must be a non-empty "
                    "list of callables h(X) -> labels in {0, 1}."
                )
            return None
        matrix = np.asarray(self.predictions)
        if matrix.ndim != 2 or matrix.size == 0 or not np.isin(matrix, (0, 1)).all():
            raise InvalidParameterError(
                "The 'predictions' parameter of FiniteHypothesisClass must be a non-empty 2-D "
                "matrix of 0/1 labels (hypotheses x domain)."
            )
        return matrix.astype(np.int8)

    def _callables(self) -> list[Any]:
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
        from sklearn.utils.validation import check_array

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
        """Labels of every hypothesis on the points, shape (K, n_points), int8; never raises.

        A callable labels each point alone, through the one boundary (see the
        class's Notes); its label on a point where it does not give one label
        in {0, 1} (it raises, returns another shape or another value) is 0, a
        fixed public fallback.
        """
        matrix = self._matrix()
        if matrix is not None:
            return matrix[:, points]
        return _as_label(self._raw_labels(points))

    def _raw_labels(
        self, points: np.ndarray, members: Sequence[int] | np.ndarray | None = None
    ) -> np.ndarray:
        """Labels on the points with -1 where a callable fails (matrix: 0/1 only).

        ``members``: only these hypotheses (rows in that order); all by default.
        """
        matrix = self._matrix()
        if matrix is not None:
            chosen = matrix if members is None else matrix[np.asarray(members, dtype=np.intp)]
            return chosen[:, points]
        callables = self._callables()
        if members is not None:
            callables = [callables[k] for k in members]
        n_points = len(points)
        if not callables:
            return np.zeros((0, n_points), np.int8)
        return _callable_labels(callables, points)

    def erm(self, points: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """Multiplicity of each hypothesis among the blocks' ERM choices (lowest index on ties).

        With callables, each hypothesis is called once per block, on that
        block's points alone (one teacher's block is one protected unit: the
        proof lets a teacher depend on its own whole block), through the one
        boundary (:func:`~skprivpred._teachers._isolation.call_user_code`: a copy of its
        own per block, the block an object of its own, the process-wide state
        restored after it). A point whose label is not 0 or 1, or every point
        of a block on which the call raises or returns another shape, counts
        as a mistake. One changed point changes one block's choice at most.

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
        matrix = self._matrix()
        if matrix is not None:
            flat = points.reshape((n_blocks * size,) + points.shape[2:])
            predicted = matrix[:, flat].reshape(-1, n_blocks, size)
        else:
            callables = self._callables()
            frozen = freeze_rows(np.asarray(points))
            units = [(frozen[b],) for b in range(n_blocks)]
            check = _block_binary_labels(size)
            predicted = np.empty((len(callables), n_blocks, size), dtype=np.int8)
            for k, hypothesis in enumerate(callables):
                predicted[k] = call_user_code(
                    hypothesis,
                    units,
                    lambda h, Z: h(Z),
                    check,
                    np.full(size, _FAILED, dtype=np.int8),
                    name=f"hypotheses[{k}]",
                )
        errors = (predicted != labels[None].astype(np.int8)).sum(axis=2)
        return np.bincount(np.argmin(errors, axis=0), minlength=predicted.shape[0])

    def vote_fraction(self, teachers: np.ndarray, points: np.ndarray) -> np.ndarray:
        """Fraction of teachers voting 1 (weighted by multiplicity).

        Only the hypotheses some teacher chose are evaluated; a callable labels
        each point alone through the one boundary (:meth:`labels_on`), 0 where
        it fails.
        """
        chosen = np.flatnonzero(teachers)
        matrix = self._matrix()
        if matrix is not None:
            return (teachers[chosen] @ matrix[chosen][:, points]) / teachers.sum()
        on_points = _as_label(self._raw_labels(points, members=chosen))
        return (teachers[chosen] @ on_points) / teachers.sum()

    def candidates(
        self, labelled: np.ndarray, labels: np.ndarray, unlabelled: np.ndarray
    ) -> LabelBoostCandidates:
        """The distinct dichotomies on the distinct points of Shat and Dhat, scored on Shat.

        A point where a callable fails counts as a mistake of its dichotomy on
        every labelled copy of that point, and is relabelled 0.
        """
        every = np.concatenate([labelled, unlabelled])
        points, rank = np.unique(every, axis=0, return_inverse=True)
        rank = rank.ravel()
        rank_labelled, rank_unlabelled = rank[: len(labelled)], rank[len(labelled) :]
        on_points = self._raw_labels(points)
        packed = np.concatenate(  # a failure is a third value: its own bit
            [np.packbits(on_points == 1, axis=1), np.packbits(on_points == _FAILED, axis=1)],
            axis=1,
        )
        _, first = np.unique(packed, axis=0, return_index=True)
        dichotomies = on_points[np.sort(first)].astype(np.int64)
        ones = np.bincount(rank_labelled, weights=labels, minlength=len(points))
        zeros = np.bincount(rank_labelled, weights=1 - labels, minlength=len(points))
        errors = (dichotomies != 1) @ ones + (dichotomies != 0) @ zeros

        def labels_of(k: int) -> tuple[np.ndarray, np.ndarray]:
            row = _as_label(dichotomies[k])
            return row[rank_labelled], row[rank_unlabelled]

        return LabelBoostCandidates(errors=np.rint(errors), labels_of=labels_of)

    def prior_candidates(self, points: np.ndarray, labels: np.ndarray) -> LabelBoostCandidates:
        """Every hypothesis of the class, equally weighted (no merging of equal labellings).

        The candidate set is the fixed class with the uniform prior
        (``log_prior = -ln K``), so the exponential mechanism over it does not
        depend on which points are in the pool (McSherry & Talwar 2007). A
        callable labels each point alone through the one boundary; a point
        where it fails counts as a mistake, and is relabelled 0.

        Parameters
        ----------
        points : ndarray
            Prepared points.
        labels : ndarray of shape (n,)
            0/1 labels of the points.

        Returns
        -------
        LabelBoostCandidates
            One candidate per hypothesis; ``labels_of(k)`` returns hypothesis
            ``k``'s labels on the points twice.
        """
        on_points = self._raw_labels(points).astype(np.int64)
        labels = np.asarray(labels, dtype=np.int64)
        errors = (on_points != labels[None, :]).sum(axis=1).astype(float)
        log_prior = np.full(on_points.shape[0], -math.log(on_points.shape[0]))

        def labels_of(k: int) -> tuple[np.ndarray, np.ndarray]:
            row = _as_label(on_points[k])
            return row, row

        return LabelBoostCandidates(errors=errors, labels_of=labels_of, log_prior=log_prior)
