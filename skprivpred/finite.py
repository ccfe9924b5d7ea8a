"""Private learning over finite hypothesis classes, and private multiplicative weights.

Two algorithms of the lecture notes on private learning (spec-002, after chapter 11
of Dwork & Roth):

- :class:`ExponentialMechanismClassifier`: private PAC learning. ``fit`` draws one
  hypothesis from a finite class with probability proportional to
  ``exp(-epsilon * mistakes / 2)`` (the exponential mechanism); the drawn
  hypothesis is the released model.
- :class:`PrivateExpertsClassifier`: private multiplicative weights over a public
  list of experts, run over a private stream of labelled rows.

The pure helpers below compute every mistake count exactly (superset-sum
transforms for monotone conjunctions, prefix sums for thresholds on a public
grid), sample exactly, and set the multiplicative-weights rate from the privacy
parameters.
"""

from __future__ import annotations

import copy
import math
import uuid
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.optimize import brentq
from scipy.special import log_softmax
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import NotFittedError
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ._base import (
    PrivatePredictorMixin,
    QueryStream,
    check_accountant,
    check_epsilon,
    check_open_unit_interval,
    check_positive_int,
    finite_target_column,
    keep_frame,
    reject_fit_params,
    resolve_classes,
    spawn_streams,
    unchanged_on_error,
)
from ._typing import MatrixLike, RandomStateLike, Self, VectorLike
from .accounting import (
    PrivacyAccountant,
    advanced_composition_epsilon,
    rho_cap,
)
from .exceptions import HorizonExhaustedError
from .mechanisms import exponential_mechanism_proba, sample_categorical

__all__ = ["ExponentialMechanismClassifier", "PrivateExpertsClassifier"]

#: Hypothesis families of :class:`ExponentialMechanismClassifier` given by name.
FAMILIES = ("conjunctions", "thresholds")

#: Threshold directions: "greater" predicts the positive class when x >= threshold,
#: "less" when x < threshold.
DIRECTIONS = ("greater", "less", "both")

# Readable forms of the hypothesis released by ExponentialMechanismClassifier, per family.
_RELEASE_ATTRIBUTES = (
    "selected_features_",  # conjunctions
    "threshold_",
    "threshold_feature_",
    "direction_",  # thresholds
    "selected_index_",
    "hypothesis_",  # a list
)

# Rows per block when the multiplicative-weights laws of a long stream are built.
_ROUND_BLOCK = 65_536


# -- mistake counts of whole hypothesis classes (pure) ---------------------------------------
def superset_sums(values) -> np.ndarray:
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


def binary_patterns(X) -> np.ndarray:
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


def conjunction_mistakes(patterns, positive, n_features: int) -> np.ndarray:
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


def threshold_mistakes(x, positive, grid) -> np.ndarray:
    """Mistakes of ``h_k(x) = 1[x >= grid[k]]`` for every point of a sorted grid.

    Each row falls in the cell ``c(x) = #{k : grid[k] <= x}``; ``h_k`` is positive
    on the row iff ``c(x) > k``. Its mistakes are the positive rows with
    ``c <= k`` plus the negative rows with ``c > k``: prefix sums of two cell
    histograms, ``O(n log N + N)``. The opposite direction (positive when
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


# -- exact sampling (pure) ----------------------------------------------------------------
def sample_fewest_mistakes(mistakes, epsilon: float, rng: np.random.Generator) -> int:
    """Draw index ``i`` with probability proportional to ``exp(-epsilon * mistakes[i] / 2)``.

    The exponential mechanism with utility ``-mistakes`` (sensitivity 1), sampled
    exactly in two stages that multiply to that law: a mistake level ``m`` is
    drawn by inverse CDF (one uniform variate) from the law proportional to
    ``c_m exp(-epsilon m / 2)``, normalised in log space, where ``c_m`` is the
    number of hypotheses with ``m`` mistakes; then one of those ``c_m`` hypotheses
    is drawn uniformly (one exact integer draw). Memory beyond ``mistakes`` is
    ``O(n)``, so classes of ``2**24`` hypotheses stay cheap; nothing is
    exponentiated unnormalised.

    Parameters
    ----------
    mistakes : array-like of non-negative int of shape (n_hypotheses,)
        Mistake count of each hypothesis.
    epsilon : float
        Privacy parameter, > 0.
    rng : numpy.random.Generator
        The stream to draw from.

    Returns
    -------
    int
        Index of the drawn hypothesis.
    """
    epsilon = check_epsilon(epsilon)
    mistakes = np.asarray(mistakes)
    counts = np.bincount(mistakes)
    levels = np.flatnonzero(counts)
    log_weight = np.log(counts[levels]) - 0.5 * epsilon * levels
    level_law = np.exp(log_softmax(log_weight))
    level = levels[sample_categorical(level_law[np.newaxis, :], rng)[0]]
    members = np.flatnonzero(mistakes == level)
    return int(members[rng.integers(members.shape[0])])


# -- multiplicative weights (pure) ----------------------------------------------------------
def mw_round_proba(rewards, rate: float, initial=None) -> np.ndarray:
    """Law of the expert chosen at each round of multiplicative weights.

    Round ``t`` draws expert ``i`` with probability proportional to
    ``exp(rate * U_t(i))``, where ``U_t(i) = initial(i) + sum_{t' < t} r_t'(i)``
    is the reward collected before round ``t``: the closed form of "start
    uniform, multiply ``y(i)`` by ``exp(rate r_t(i))`` and renormalise after every
    round", computed as a log-sum-exp normalised softmax.

    Parameters
    ----------
    rewards : array-like of shape (n_rounds, n_experts)
        Rewards ``r_t(i)`` in [0, 1].
    rate : float
        The learning rate ``a > 0``.
    initial : array-like of shape (n_experts,), default=None
        Cumulative rewards before the first of these rounds (zeros if None).

    Returns
    -------
    ndarray of shape (n_rounds, n_experts)
        Row ``t`` is the law of the choice at round ``t``.
    """
    rate = check_epsilon(rate, "rate")
    rewards = np.asarray(rewards, dtype=float)
    before = np.cumsum(rewards, axis=0) - rewards
    if initial is not None:
        before += np.asarray(initial, dtype=float)
    # The exponential mechanism at epsilon = 2 * rate has weights exp(rate * U).
    return exponential_mechanism_proba(before, 2.0 * rate)


def mw_learning_rate(
    epsilon: float, n_rounds: int, delta: float | None = None, composition: str = "zcdp"
) -> float:
    """Learning rate ``a`` of private multiplicative weights over ``n_rounds`` rounds.

    Each round's choice is ``2a``-DP (an exponential mechanism on a 1-Lipschitz
    utility). With ``delta=None`` basic composition gives ``2aT``-DP, so
    ``a = epsilon / (2T)`` (pure). With a ``delta`` the rate is the largest ``a``
    for which ``T`` rounds are ``(epsilon, delta)``-DP by the chosen
    composition, or the pure rate if that is larger (it is valid too):

    - ``"zcdp"``: the exponential mechanism with weight ``exp(a U)`` on a
      utility of sensitivity 1 is ``2a``-*bounded-range*, hence
      ``(2a)^2 / 8 = a^2 / 2``-zCDP (Cesar & Rogers 2021, Lemma 3.2; Durfee &
      Rogers 2019); ``T`` adaptive rounds compose to ``T a^2 / 2``, which must
      stay within :func:`~skprivpred.accounting.rho_cap` ``(epsilon, delta)``:
      ``a = sqrt(2 rho_cap / T)``.
    - ``"advanced"``: advanced composition
      (:func:`advanced_composition_epsilon` with ``epsilon_0 = 2a``).

    The lecture notes' setting ``a = sqrt(epsilon / (12 T))`` with
    ``delta = exp(-sqrt(T epsilon / 12))`` is *not* used: it is false (see
    :class:`PrivateExpertsClassifier`, "Corrected constants").

    Parameters
    ----------
    epsilon : float
        Epsilon of the whole sequence of choices, > 0.
    n_rounds : int
        The public number of rounds ``T >= 1``.
    delta : float, default=None
        Delta of the sequence, in (0, 1), or None for pure differential privacy.
    composition : {"zcdp", "advanced"}, default="zcdp"
        How the rounds compose when ``delta`` is given.

    Returns
    -------
    float
        The rate ``a``.

    Examples
    --------
    >>> mw_learning_rate(1.0, 100)
    0.005
    >>> zcdp = mw_learning_rate(1.0, 10_000, 1e-6)
    >>> round(zcdp / mw_learning_rate(1.0, 10_000, 1e-6, "advanced"), 1)
    2.4
    """
    epsilon = check_epsilon(epsilon)
    n_rounds = check_positive_int(n_rounds, "n_rounds")
    if composition not in ("zcdp", "advanced"):
        raise ValueError(f"composition must be 'zcdp' or 'advanced', got {composition!r}.")
    pure = epsilon / (2.0 * n_rounds)
    if delta is None:
        return pure
    delta = check_open_unit_interval(delta, "delta")
    if composition == "zcdp":
        return max(pure, math.sqrt(2.0 * rho_cap(epsilon, delta) / n_rounds))

    def excess(rate: float) -> float:
        return advanced_composition_epsilon(2.0 * rate, n_rounds, delta) - epsilon

    if excess(pure) >= 0.0:  # advanced composition allows no larger rate
        return pure
    high = 2.0 * pure
    while excess(high) <= 0.0:  # excess grows without bound: the loop ends
        high *= 2.0
    rate = brentq(excess, pure, high, xtol=1e-15, rtol=1e-13)
    while excess(rate) > 0.0:  # root finding may stop just above the root
        rate = math.nextafter(rate, 0.0) * (1.0 - 1e-12)
    return max(pure, rate)


# -- user-given hypotheses and experts --------------------------------------------------------
def _check_public_functions(functions, name: str) -> list:
    """Validate a public list of fitted classifiers or callables (hypotheses, experts)."""
    if isinstance(functions, (str, bytes)) or not isinstance(functions, (list, tuple)):
        raise TypeError(
            f"{name} must be a list of fitted classifiers or callables, got "
            f"{type(functions).__name__}."
        )
    if len(functions) == 0:
        raise ValueError(f"{name} must hold at least one fitted classifier or callable, got [].")
    for i, function in enumerate(functions):
        if hasattr(function, "predict"):
            if hasattr(function, "fit"):
                _check_fitted_member(function, f"{name}[{i}]")
        elif not callable(function):
            raise TypeError(
                f"{name}[{i}] must be a fitted classifier (with predict) or a callable "
                f"X -> labels, got {type(function).__name__}."
            )
    return list(functions)


def _check_fitted_member(estimator, label: str) -> None:
    try:
        check_is_fitted(estimator)
    except NotFittedError:
        raise ValueError(
            f"{label} ({type(estimator).__name__}) is not fitted. Its members are public and "
            "fitted before the private data are seen. Note that sklearn.base.clone (used by "
            "GridSearchCV and cross_val_score) returns unfitted copies of estimators in a list: "
            "wrap each fitted estimator in sklearn.frozen.FrozenEstimator to keep it fitted."
        ) from None


def _predict_each(functions, X, n_rows: int, name: str) -> np.ndarray:
    """Predictions of every public function on ``X``, shape (n_functions, n_rows)."""
    rows = []
    for i, function in enumerate(functions):
        labels = function.predict(X) if hasattr(function, "predict") else function(X)
        labels = np.asarray(labels)
        if labels.shape != (n_rows,):
            raise ValueError(
                f"{name}[{i}] must return one label per row, shape ({n_rows},), got shape "
                f"{labels.shape}."
            )
        rows.append(labels)
    return np.stack(rows)


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
        positive = above if self.direction == "greater" else ~above
        return self.classes[positive.astype(np.intp)]


class _Listed:
    """A released member of the user's list of hypotheses."""

    def __init__(self, hypothesis) -> None:
        self.hypothesis = hypothesis

    def predict(self, X: MatrixLike) -> np.ndarray:
        n_rows = X.shape[0]
        return _predict_each([self.hypothesis], X, n_rows, "hypotheses")[0]


# -- hypothesis families ------------------------------------------------------------------------
class _ConjunctionFamily:
    """All ``2**d`` monotone conjunctions over ``d`` binary features."""

    binary = True

    def __init__(self, n_features: int) -> None:
        self.n_features = n_features
        self.size = 1 << n_features

    def mistakes(self, X: np.ndarray, y: np.ndarray, classes: np.ndarray) -> np.ndarray:
        return conjunction_mistakes(binary_patterns(X), y == classes[1], self.n_features)

    def release(self, index: int, classes: np.ndarray) -> tuple[dict, object]:
        features = np.flatnonzero((index >> np.arange(self.n_features)) & 1)
        return {"selected_features_": features}, _Conjunction(features, classes)


class _ThresholdFamily:
    """Thresholds on a public grid, on every feature, in the allowed directions.

    Hypotheses are laid out feature by feature; within a feature, the "greater"
    block (one per grid point) comes before the "less" block.
    """

    binary = True

    def __init__(self, grids: list[np.ndarray], direction: str) -> None:
        self.grids = grids
        self.directions = ("greater", "less") if direction == "both" else (direction,)
        sizes = [grid.shape[0] * len(self.directions) for grid in grids]
        self.offsets = np.concatenate([[0], np.cumsum(sizes)])
        self.size = int(self.offsets[-1])

    def mistakes(self, X: np.ndarray, y: np.ndarray, classes: np.ndarray) -> np.ndarray:
        positive = y == classes[1]
        n_rows = positive.shape[0]
        blocks = []
        for j, grid in enumerate(self.grids):
            greater = threshold_mistakes(X[:, j], positive, grid)
            blocks += [greater if d == "greater" else n_rows - greater for d in self.directions]
        return np.concatenate(blocks)

    def release(self, index: int, classes: np.ndarray) -> tuple[dict, object]:
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


class _ListFamily:
    """A user-given finite list of hypotheses (fitted classifiers or callables)."""

    binary = False

    def __init__(self, hypotheses: list) -> None:
        self.hypotheses = hypotheses
        self.size = len(hypotheses)

    def mistakes(self, X, y: np.ndarray, classes: np.ndarray) -> np.ndarray:
        n_rows = y.shape[0]
        return np.array(
            [
                int(np.count_nonzero(_predict_each([h], X, n_rows, "hypotheses")[0] != y))
                for h in self.hypotheses
            ],
            dtype=np.int64,
        )

    def release(self, index: int, classes: np.ndarray) -> tuple[dict, object]:
        hypothesis = self.hypotheses[index]
        return {"selected_index_": index, "hypothesis_": hypothesis}, _Listed(hypothesis)


def _feature_grids(grid, n_features: int) -> list[np.ndarray]:
    """One strictly increasing finite grid per feature, from the ``grid`` parameter."""
    if grid is None:
        raise ValueError(
            "hypotheses='thresholds' needs a public grid of candidate thresholds, got grid=None. "
            "Pass grid= values fixed without looking at the training data (a grid read from the "
            "data would disclose it)."
        )
    per_feature = (
        isinstance(grid, (list, tuple)) and len(grid) > 0 and all(np.ndim(g) == 1 for g in grid)
    )
    if per_feature or np.ndim(grid) == 2:
        if len(grid) != n_features:
            raise ValueError(
                f"grid holds {len(grid)} per-feature grids but X has {n_features} features; pass "
                "one grid per feature or a single 1-D grid shared by all features."
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
                f"grid for feature {j} must hold at least one finite threshold and no NaN or "
                "infinity."
            )
        values = np.sort(values)
        if np.any(np.diff(values) == 0):
            raise ValueError(
                f"grid for feature {j} holds duplicate thresholds; pass distinct values."
            )
        checked.append(values)
    return checked


def _check_binary_classes(classes: np.ndarray, family: str) -> None:
    if classes.shape[0] != 2:
        raise ValueError(
            f"Only binary classification is supported by hypotheses={family!r}: the label set "
            f"has {classes.shape[0]} labels. Pass a list of hypotheses for more labels."
        )


def _check_binary_X(X: np.ndarray) -> None:
    if X.dtype.kind not in "biuf" or not np.all((X == 0) | (X == 1)):
        raise ValueError(
            "hypotheses='conjunctions' needs binary X: every value 0 or 1 (or False/True), and X "
            "holds other values. Binarise the features with public thresholds first, for example "
            "with sklearn.preprocessing.Binarizer(threshold=...) at a value fixed without looking "
            "at the data."
        )


# -- the exponential-mechanism learner -------------------------------------------------------
class ExponentialMechanismClassifier(ClassifierMixin, BaseEstimator):
    """Private PAC learner: one hypothesis drawn by the exponential mechanism.

    ``fit`` draws one hypothesis ``h`` from a finite class ``C`` with probability
    proportional to ``exp(epsilon * u(h) / 2)``, where ``u(h) = -mistakes(h)`` is
    minus the number of training rows ``h`` gets wrong. The drawn hypothesis is
    **the released model**: unlike the prediction-privacy estimators of this
    library, this one releases its model at ``fit``, and ``predict`` applies the
    released hypothesis, which is free and deterministic post-processing.

    **Privacy guarantee.** Neighbouring training sets have the same size and
    differ in one row (*replace-one*). Replacing one row changes the mistakes of
    every hypothesis by at most 1 (sensitivity 1), so the released hypothesis, and
    every fitted attribute, is ``(epsilon, 0)``-differentially private (the
    exponential mechanism, McSherry & Talwar 2007; Dwork & Roth Thm 3.10; lecture
    notes §1). One ``fit`` is one release: with an ``accountant`` attached,
    ``fit`` charges it ``epsilon`` once (one row), before the hypothesis is drawn;
    every refit is a new release and is charged again. ``predict`` and ``score``
    spend nothing and are not charged. The mistake counts are never stored.

    Sampling is exact: a mistake level is drawn from its closed-form law by
    inverse CDF on log-sum-exp normalised weights, then a hypothesis uniformly
    within the level (:func:`sample_fewest_mistakes`). The mistakes of all
    hypotheses are computed exactly:

    - ``"conjunctions"``: the ``2**d`` monotone conjunctions over ``d`` binary
      features (``h_S(x) = AND_{i in S} x_i``; the empty conjunction is the
      constant positive class), by a superset-sum transform of the bit-pattern
      histogram in ``O(n + d 2**d)`` time and ``O(2**d)`` memory.
    - ``"thresholds"``: ``h(x) = [x_j >= a]`` (direction ``"greater"``) or
      ``[x_j < a]`` (``"less"``) for every feature ``j`` and every point ``a`` of
      the public ``grid``, by prefix sums in ``O(n log N + N)`` per feature. With
      one feature this is the notes' threshold class.
    - a list: the user's own finite class, each member evaluated on every row.

    **Accuracy** (lecture notes §1). In the realizable case, if
    ``n >= 8 ln|C| / (alpha min(alpha, epsilon))`` the released hypothesis has
    population error at most ``alpha`` except with probability
    ``|C| e^{-epsilon alpha n / 4} + |C| e^{-alpha^2 n / 2}``.

    Parameters
    ----------
    hypotheses : {"conjunctions", "thresholds"} or list, default="conjunctions"
        The finite class ``C`` (public). A list holds fitted classifiers (used
        through ``predict``) or callables ``X -> labels``, fixed before the
        training data are seen. ``sklearn.base.clone`` returns unfitted copies of
        estimators in a list, so wrap fitted members in
        :class:`sklearn.frozen.FrozenEstimator` when the estimator will be cloned
        (``GridSearchCV``, ``cross_val_score``).
    epsilon : float, default=1.0
        Privacy parameter of the released hypothesis, > 0.
    grid : array-like or list of array-like, default=None
        Candidate thresholds for ``hypotheses="thresholds"`` (required there,
        ignored otherwise): one 1-D grid shared by every feature, or one 1-D grid
        per feature (a list, or the rows of a 2-D array). It must be public:
        fixed without looking at the training data (a grid read from the data
        would disclose it).
    direction : {"greater", "less", "both"}, default="both"
        Threshold directions in the class: ``"greater"`` predicts the positive
        label ``classes_[1]`` when ``x_j >= a``, ``"less"`` when ``x_j < a``.
    classes : array-like, default=None
        The public label set; conjunctions and thresholds need exactly two
        labels, the second being the positive one. ``None`` reads it from ``y``
        and emits a :class:`~skprivpred.PrivacyWarning`.
    max_hypotheses : int, default=2**24
        Largest class size ``|C|`` the estimator agrees to enumerate. A larger
        class is refused with a ``ValueError`` before any work (never truncated).
    accountant : PrivacyAccountant, default=None
        Charged ``epsilon`` once per ``fit``, before the hypothesis is drawn; a
        fit that would exceed its budget raises
        :class:`~skprivpred.BudgetExhaustedError` and changes nothing.
    random_state : int, RandomState instance, Generator or None, default=None
        Seeds the fit stream that draws the hypothesis. ``None`` (OS entropy) is
        the right choice in deployment: anyone who knows an integer seed can
        recompute the draw, which voids the guarantee.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The public label set.
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during ``fit`` (only for inputs with string
        column names).
    n_hypotheses_ : int
        The size ``|C|`` of the class (public: it does not depend on the data).
    selected_features_ : ndarray of int
        ``"conjunctions"`` only: indices of the features of the released
        conjunction (empty: the constant positive class).
    threshold_ : float
        ``"thresholds"`` only: the released threshold, a point of the grid.
    threshold_feature_ : int
        ``"thresholds"`` only: the feature it applies to.
    direction_ : {"greater", "less"}
        ``"thresholds"`` only: the released direction.
    selected_index_ : int
        List of hypotheses only: index of the released hypothesis.
    hypothesis_ : object
        List of hypotheses only: the released hypothesis, ``hypotheses[selected_index_]``.
    privacy_guarantee_ : dict
        ``epsilon``, ``delta``, ``neighbouring``, ``unit`` and ``theorem`` of the
        release.

    See Also
    --------
    PrivateExpertsClassifier : Private multiplicative weights over public experts.

    Notes
    -----
    Choosing ``hypotheses``, ``grid`` or ``epsilon`` with
    :class:`~sklearn.model_selection.GridSearchCV` on the private data is not
    private: every fit is a release, and the selection is another one.

    References
    ----------
    F. McSherry and K. Talwar. Mechanism Design via Differential Privacy. FOCS
    2007. C. Dwork and A. Roth. The Algorithmic Foundations of Differential
    Privacy, 2014, Theorem 3.10 and chapter 11.

    Examples
    --------
    >>> import numpy as np
    >>> from skprivpred import ExponentialMechanismClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.integers(0, 2, size=(2000, 6))
    >>> y = X[:, 1] & X[:, 4]  # the conjunction x_1 AND x_4
    >>> clf = ExponentialMechanismClassifier(epsilon=1.0, classes=[0, 1], random_state=0)
    >>> clf.fit(X, y).selected_features_
    array([1, 4])
    """

    def __init__(
        self,
        hypotheses: str | Sequence[Any] = "conjunctions",
        *,
        epsilon: float = 1.0,
        grid: Any = None,
        direction: str = "both",
        classes: VectorLike | None = None,
        max_hypotheses: int = 2**24,
        accountant: PrivacyAccountant | None = None,
        random_state: RandomStateLike = None,
    ) -> None:
        self.hypotheses = hypotheses
        self.epsilon = epsilon
        self.grid = grid
        self.direction = direction
        self.classes = classes
        self.max_hypotheses = max_hypotheses
        self.accountant = accountant
        self.random_state = random_state

    # -- validation -------------------------------------------------------------------------
    def _family_name(self) -> str:
        hypotheses = self.hypotheses
        if isinstance(hypotheses, str):
            if hypotheses not in FAMILIES:
                raise ValueError(
                    f"hypotheses must be 'conjunctions', 'thresholds' or a list of fitted "
                    f"classifiers or callables, got {hypotheses!r}."
                )
            return hypotheses
        return "list"

    def _validate_X(self, X, *, reset: bool, y=None):
        """Validate rows for the family in use; returns (X for the family, y)."""
        family = self._family_name()
        kwargs: dict[str, Any] = {"reset": reset, "ensure_all_finite": True}
        if family == "thresholds":
            kwargs["dtype"] = "numeric"
        else:
            kwargs["dtype"] = None
        if y is None:
            X_checked = validate_data(self, X, **kwargs)
        else:
            X_checked, y = validate_data(self, X, y, y_numeric=False, **kwargs)
        if family == "conjunctions":
            _check_binary_X(X_checked)
        return (keep_frame(X, X_checked) if family == "list" else X_checked), y

    def _make_family(self, n_features: int):
        family = self._family_name()
        if family == "conjunctions":
            return _ConjunctionFamily(n_features)
        if family == "thresholds":
            if self.direction not in DIRECTIONS:
                raise ValueError(
                    f"direction must be 'greater', 'less' or 'both', got {self.direction!r}."
                )
            return _ThresholdFamily(_feature_grids(self.grid, n_features), self.direction)
        return _ListFamily(_check_public_functions(self.hypotheses, "hypotheses"))

    def _scored_problem(self, X, y):
        """Validate everything and count mistakes; sets n_features_in_ (call in an atomic block).

        Returns the family, the label set and the mistake counts (secret).
        """
        family_name = self._family_name()
        max_hypotheses = check_positive_int(self.max_hypotheses, "max_hypotheses")
        X, y = self._validate_X(X, reset=True, y=y)
        y = finite_target_column(y)
        check_classification_targets(y)
        classes = resolve_classes(self.classes, y, type(self).__name__)
        family = self._make_family(self.n_features_in_)
        if family.binary:
            _check_binary_classes(classes, family_name)
        if family.size > max_hypotheses:
            raise ValueError(
                f"hypotheses={family_name!r} on these features is a class of {family.size} "
                f"hypotheses, more than max_hypotheses={max_hypotheses}. The class is never "
                "truncated: use fewer features or a smaller grid, or raise max_hypotheses if "
                "time and memory allow (about 24 bytes per hypothesis)."
            )
        if family_name == "conjunctions" and self.n_features_in_ > 62:
            raise ValueError(
                f"hypotheses='conjunctions' takes at most 62 binary features, got "
                f"{self.n_features_in_}."
            )
        return family, classes, family.mistakes(X, y, classes)

    # -- fit ----------------------------------------------------------------------------------
    def fit(self, X: MatrixLike, y: VectorLike, **fit_params: Any) -> Self:
        """Draw the released hypothesis by the exponential mechanism.

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_samples, n_features)
            Training rows: 0/1 (or bool) values for ``"conjunctions"``, real
            values for ``"thresholds"``, whatever the hypotheses take for a list.
            No NaN or infinity.
        y : array-like of shape (n_samples,)
            Labels, all in ``classes``.
        **fit_params : dict
            Not supported; ``sample_weight`` in particular is refused because a
            weighted row can change a mistake count by more than one.

        Returns
        -------
        self : ExponentialMechanismClassifier
            The fitted estimator (the released hypothesis).
        """
        reject_fit_params(self, fit_params)
        epsilon = check_epsilon(self.epsilon)
        check_accountant(self.accountant)
        with unchanged_on_error(self):
            family, classes, mistakes = self._scored_problem(X, y)
            _, release_rng = spawn_streams(self.random_state)
            if self.accountant is not None:
                self.accountant.charge(1, epsilon)
            index = self._draw(mistakes, epsilon, release_rng)
            attributes, released = family.release(index, classes)
            for name in _RELEASE_ATTRIBUTES:  # a refit may use another family
                self.__dict__.pop(name, None)
            for name, value in attributes.items():
                setattr(self, name, value)
            self._released = released
            self.classes_ = classes
            self.n_hypotheses_ = family.size
            self.privacy_guarantee_ = {
                "epsilon": epsilon,
                "delta": 0.0,
                "neighbouring": "replace-one",
                "unit": "per fit: the released hypothesis (predictions are free post-processing)",
                "theorem": "exponential mechanism, utility -mistakes of sensitivity 1, weight "
                "exp(epsilon u / 2) (McSherry & Talwar 2007; lecture notes §1)",
            }
        return self

    def _draw(self, mistakes: np.ndarray, epsilon: float, rng: np.random.Generator) -> int:
        """Index of the released hypothesis, drawn from the exact exponential-mechanism law."""
        return sample_fewest_mistakes(mistakes, epsilon, rng)

    def _selection_law(self, mistakes: np.ndarray, epsilon: float) -> np.ndarray:
        """Exact law of :meth:`_draw` for these mistake counts."""
        return exponential_mechanism_proba(-np.asarray(mistakes, dtype=float), epsilon)

    # -- predictions ------------------------------------------------------------------------
    def predict(self, X: MatrixLike) -> np.ndarray:
        """Apply the released hypothesis (free, deterministic post-processing).

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_queries, n_features)
            Query rows, in the form ``fit`` took (binary for conjunctions).

        Returns
        -------
        ndarray of shape (n_queries,)
            The released hypothesis's labels. Nothing is charged.
        """
        check_is_fitted(self, "privacy_guarantee_")
        X, _ = self._validate_X(X, reset=False)
        return self._released.predict(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.poor_score = True
        tags.classifier_tags.multi_class = not isinstance(self.hypotheses, str)
        return tags

    # -- non-private diagnostics (tests and audits only) ---------------------------------------
    def _selection_proba(self, X, y) -> np.ndarray:
        """Exact selection law of ``fit(X, y)`` with the current parameters.

        NOT PRIVATE: the law is a function of every mistake count, hence of the
        data. Never charges, never changes the estimator (the data are validated
        on a shallow copy). Hypotheses are indexed as in ``fit``: bit masks for
        conjunctions, per-feature blocks of grid points for thresholds, list
        order for a list.
        """
        epsilon = check_epsilon(self.epsilon)
        _, _, mistakes = copy.copy(self)._scored_problem(X, y)
        return self._selection_law(mistakes, epsilon)


def _agreed_classes(declared, given):
    """The label set from the ``classes`` parameter and a ``partial_fit`` argument."""
    if given is None:
        return declared
    if declared is not None and not np.array_equal(
        np.unique(np.asarray(given)), np.unique(np.asarray(declared))
    ):
        raise ValueError(
            "classes passed to partial_fit differ from the label set already declared (the "
            "classes parameter, or classes_ of the run in progress)."
        )
    return given


# -- private multiplicative weights over public experts ------------------------------------------
class PrivateExpertsClassifier(PrivatePredictorMixin, ClassifierMixin, BaseEstimator):
    """Private multiplicative weights over a public list of experts.

    The experts are public classifiers (fitted before the private data are seen)
    or callables ``X -> labels``. The private stream is ``(X, y)``, one row per
    round; the reward of expert ``i`` at round ``t`` is 1 when it predicts
    ``y_t`` and 0 otherwise. The multiplicative weights algorithm (lecture notes
    §2) starts with uniform weights over the ``K`` experts; at round ``t`` it
    draws an expert ``i_t`` from the current weights, then multiplies the weight
    of every expert ``i`` by ``exp(a r_t(i))`` and renormalises. The law of
    ``i_t`` is therefore ``softmax(a U_t)``, with ``U_t(i)`` the reward of expert
    ``i`` before round ``t``: an exponential mechanism on a 1-Lipschitz utility,
    sampled exactly in that closed form (:func:`mw_round_proba`).

    ``fit`` runs the rounds over the rows in order; ``partial_fit`` continues
    the same run over more rows. The sequence of chosen experts,
    ``chosen_experts_``, is released. ``predict`` answers each query row with
    the label of an expert drawn afresh from the current weights.

    **Privacy guarantee.** Neighbouring streams have the same length and
    differ in one row (*replace-one*), which changes one reward row
    ``r_t = (r_t(1), ..., r_t(K))``. The choice at each round is
    ``2a``-differentially private. The rate ``a`` comes from the public
    ``epsilon``, ``delta`` and ``n_rounds`` (:func:`mw_learning_rate`):

    - ``delta=None``: ``a = epsilon / (2 n_rounds)``; by basic composition the
      whole sequence ``chosen_experts_`` of at most ``n_rounds`` rounds is
      ``(epsilon, 0)``-DP (notes: "MW is ``2aT``-differentially private").
    - a ``delta``: the largest ``a`` for which ``n_rounds`` rounds are
      ``(epsilon, delta)``-DP, or the pure rate when that is larger (the
      guarantee is then ``(epsilon, 0)``). With ``composition="zcdp"`` (the
      default) each round, an exponential mechanism with weight ``exp(a U)``,
      is ``2a``-bounded-range, hence ``a^2 / 2``-zCDP (Cesar & Rogers 2021),
      and ``n_rounds`` rounds compose to ``n_rounds a^2 / 2``, converted by the
      tight Renyi bound; at ``epsilon = 1, delta = 1e-6`` this allows a rate
      about 2.4 times larger than ``composition="advanced"``, the advanced
      composition theorem (Dwork, Rothblum & Vadhan 2010; Dwork & Roth Thm
      3.20) on ``2a``-DP rounds.

    The run of ``n_rounds`` rounds is one release: with an ``accountant``
    attached, the ``fit`` (or first ``partial_fit``) that starts it charges
    ``(epsilon, delta)`` once, as one row, before any expert is drawn. More rows
    than ``n_rounds`` over a run is an error. Each row passed to ``predict`` (or
    ``score``) is one further query, answered with fresh noise and
    ``(2a, 0)``-DP; it is charged ``2a`` before any noise is drawn. Use a
    ``"basic"`` accountant: the run and the queries have different per-row
    guarantees. The cumulative rewards and the exact weights are secret; only
    the chosen experts and the answers are released.

    **Regret** (notes, Theorem 2). For ``0 < a <= 1.79`` and every expert ``i``,
    ``E[sum_t r_t(i_t)] >= sum_t r_t(i) - a T - ln(K) / a``.

    **Corrected constants.** The notes (Theorem 3) set ``a = sqrt(epsilon /
    (12 T))`` and claim ``(epsilon, exp(-sqrt(T epsilon / 12)))``-DP from an
    advanced composition bound ``(12 T a^2, e^{-T a})``. That bound is false for
    small ``a``: take two experts that are right on every row except the first,
    where one is right and the other wrong, and swap the two in the neighbour.
    Every later round is then a randomized response with parameter ``a``, and
    the exact delta at ``epsilon = 1`` is about ``3e-5`` for every ``T >= 1000``,
    while the claimed delta is ``1.1e-4`` at ``T = 1000`` and ``3e-13`` at
    ``T = 10^4``. This estimator uses zCDP or the advanced composition theorem
    as stated; both give a smaller rate, and the exact delta of that
    counterexample stays within the claim for both (a test).

    Parameters
    ----------
    experts : list of fitted classifiers or callables
        The public experts (``K >= 1``). Each takes the rows as passed to ``fit``
        and returns one label per row. ``sklearn.base.clone`` returns unfitted
        copies of estimators in a list: wrap fitted experts in
        :class:`sklearn.frozen.FrozenEstimator` when the estimator will be
        cloned (``GridSearchCV``, ``cross_val_score``, the audit).
    epsilon : float, default=1.0
        Epsilon of the released sequence of choices, > 0.
    delta : float, default=None
        Delta of the released sequence, in (0, 1); ``None`` for pure
        differential privacy.
    composition : {"zcdp", "advanced"}, default="zcdp"
        How the rounds compose when ``delta`` is given (see above).
    n_rounds : int, default=None
        The public total number of rounds ``T`` of a run; it enters the rate,
        so it must be fixed before the stream is seen. ``None`` lets ``fit`` use
        the number of rows it is given (public under replace-one neighbours);
        ``partial_fit`` needs an integer.
    classes : array-like, default=None
        The public label set. ``None`` takes the ``classes`` argument of the
        first ``partial_fit`` or reads it from ``y`` with a
        :class:`~skprivpred.PrivacyWarning`.
    accountant : PrivacyAccountant, default=None
        Charged ``(epsilon, delta)`` when a run starts and ``2a`` per query
        row, before any noise is drawn; a call that would exceed its budget
        raises :class:`~skprivpred.BudgetExhaustedError` and changes nothing.
    random_state : int, RandomState instance, Generator or None, default=None
        Seeds two independent streams: one for the rounds' choices, one for
        the answers to queries. ``None`` (OS entropy) is the right choice in
        deployment: anyone who knows an integer seed can recompute the draws,
        which voids the guarantee.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The public label set.
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during ``fit`` (only for inputs with string
        column names).
    n_experts_ : int
        Number of experts ``K``.
    n_rounds_ : int
        The number of rounds ``T`` the rate was set for.
    learning_rate_ : float
        The rate ``a``.
    chosen_experts_ : ndarray of int of shape (n_rounds_run,)
        The released choice of each round so far (indices into ``experts``).
    privacy_guarantee_ : dict
        ``epsilon`` (``2a``), ``delta``, ``neighbouring``, ``unit`` and
        ``theorem`` of each answered query, and ``release``: the same for the
        sequence ``chosen_experts_``.
    queries_answered_ : int
        Number of query rows answered since ``fit``.

    See Also
    --------
    ExponentialMechanismClassifier : One hypothesis from a finite class, released at fit.
    mw_learning_rate : The rate from ``epsilon``, ``delta`` and ``n_rounds``.

    References
    ----------
    S. Arora, E. Hazan and S. Kale. The Multiplicative Weights Update Method: a
    Meta-Algorithm and Applications. Theory of Computing 8, 2012, Theorem 2.4.
    C. Dwork and A. Roth. The Algorithmic Foundations of Differential Privacy,
    2014, Theorem 3.20 and chapter 11.

    Examples
    --------
    >>> import numpy as np
    >>> from skprivpred import PrivateExpertsClassifier
    >>> def first_positive(X):
    ...     return (X[:, 0] > 0).astype(int)
    >>> def always_zero(X):
    ...     return np.zeros(len(X), dtype=int)
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(1000, 2)); y = (X[:, 0] > 0).astype(int)
    >>> clf = PrivateExpertsClassifier(
    ...     [first_positive, always_zero], epsilon=10.0, classes=[0, 1], random_state=0
    ... ).fit(X, y)
    >>> clf.learning_rate_
    0.005
    >>> clf.chosen_experts_.shape
    (1000,)
    """

    def __init__(
        self,
        experts: Sequence[Any],
        *,
        epsilon: float = 1.0,
        delta: float | None = None,
        n_rounds: int | None = None,
        classes: VectorLike | None = None,
        accountant: PrivacyAccountant | None = None,
        random_state: RandomStateLike = None,
        composition: str = "zcdp",
    ) -> None:
        self.experts = experts
        self.epsilon = epsilon
        self.delta = delta
        self.composition = composition
        self.n_rounds = n_rounds
        self.classes = classes
        self.accountant = accountant
        self.random_state = random_state

    # -- fitting ----------------------------------------------------------------------------
    def fit(self, X: MatrixLike, y: VectorLike, **fit_params: Any) -> Self:
        """Run multiplicative weights over the rows in order (a new run).

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_samples, n_features)
            The private stream's rows, in round order, passed to the experts.
            No NaN or infinity.
        y : array-like of shape (n_samples,)
            Their labels, all in ``classes``.
        **fit_params : dict
            Not supported; ``sample_weight`` in particular is refused because a
            weighted row moves the weights by more than one row.

        Returns
        -------
        self : PrivateExpertsClassifier
            The fitted estimator; ``chosen_experts_`` holds one expert per row.
        """
        reject_fit_params(self, fit_params)
        with self._unchanged_on_error():
            X, y = self._validate_stream(X, y, reset=True)
            n_rounds = self.n_rounds if self.n_rounds is not None else y.shape[0]
            run = self._resolve_run(y, self.classes, n_rounds)
            rewards = self._rewards(run["experts"], X, y)
            self._start_run(run)
            self._run_rounds(rewards)
        return self

    def partial_fit(
        self, X: MatrixLike, y: VectorLike, classes: VectorLike | None = None, **fit_params: Any
    ) -> Self:
        """Run multiplicative weights over more rows of the stream, in order.

        The first call starts a run (and charges it); later calls continue it,
        with the parameters resolved by the first call, until ``n_rounds`` rows
        in all. Calling ``fit`` starts a new run.

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_samples, n_features)
            The next rows of the stream.
        y : array-like of shape (n_samples,)
            Their labels.
        classes : array-like, default=None
            The public label set, for the first call when the ``classes``
            parameter is None; must agree with it otherwise.
        **fit_params : dict
            Not supported (``sample_weight`` is refused).

        Returns
        -------
        self : PrivateExpertsClassifier
            The estimator, with ``chosen_experts_`` extended by one expert per row.
        """
        reject_fit_params(self, fit_params)
        first_call = "_cumulative_rewards" not in self.__dict__
        with self._unchanged_on_error():
            X, y = self._validate_stream(X, y, reset=first_call)
            if first_call:
                if self.n_rounds is None:
                    raise ValueError(
                        "partial_fit needs the public total number of rounds: set n_rounds to "
                        "the number of rows the whole stream will have (it sets the rate), got "
                        "n_rounds=None."
                    )
                run = self._resolve_run(y, _agreed_classes(self.classes, classes), self.n_rounds)
                rewards = self._rewards(run["experts"], X, y)
                self._start_run(run)
            else:
                _agreed_classes(self.classes_, classes)
                resolve_classes(self.classes_, y, type(self).__name__)
                self._check_round_budget(self.chosen_experts_.shape[0], y.shape[0], self.n_rounds_)
                rewards = self._rewards(self._experts, X, y)
            self._run_rounds(rewards)
        return self

    def _validate_stream(self, X, y, *, reset: bool):
        X_checked, y = validate_data(
            self, X, y, reset=reset, dtype=None, ensure_all_finite=True, y_numeric=False
        )
        y = finite_target_column(y)
        check_classification_targets(y)
        return keep_frame(X, X_checked), y

    def _resolve_run(self, y, classes, n_rounds) -> dict:
        """Validate the public parameters of a new run; changes nothing, charges nothing."""
        epsilon = check_epsilon(self.epsilon)
        delta = None if self.delta is None else check_open_unit_interval(self.delta, "delta")
        n_rounds = check_positive_int(n_rounds, "n_rounds")
        check_accountant(self.accountant)
        experts = _check_public_functions(self.experts, "experts")
        classes = resolve_classes(classes, y, type(self).__name__)
        self._check_round_budget(0, y.shape[0], n_rounds)
        rate = self._rate(epsilon, n_rounds, delta)
        pure = delta is None or rate <= epsilon / (2.0 * n_rounds)
        return {
            "epsilon": epsilon,
            "delta": 0.0 if pure else delta,
            "n_rounds": n_rounds,
            "rate": rate,
            "experts": experts,
            "classes": classes,
        }

    @staticmethod
    def _rewards(experts: list, X, y: np.ndarray) -> np.ndarray:
        """Reward matrix of shape (n_rows, n_experts): 1 where the expert is right. Secret."""
        predictions = _predict_each(experts, X, y.shape[0], "experts")
        return (predictions == y).T.astype(np.int64)

    def _start_run(self, run: dict) -> None:
        """Charge the run, then start the streams and the state (call after all checks)."""
        if self.accountant is not None:
            self.accountant.charge(1, run["epsilon"], run["delta"])
        self._start_streams()
        # The rounds' choices are releases: their noise never comes from the fit stream,
        # which a copied random_state object could replay.
        self._round_stream = QueryStream(self._query_stream.rng.spawn(1)[0])
        # The run was charged for n_rounds rounds: every copy of this estimator counts the
        # rounds it runs in one ledger, so that all of them together never run more.
        self._rounds = (uuid.uuid4().hex, int(run["n_rounds"]))
        self._rounds_ledger = (
            self.accountant if self.accountant is not None else PrivacyAccountant()
        )
        self._experts = run["experts"]
        self._cumulative_rewards = np.zeros(len(run["experts"]), dtype=np.int64)
        self.classes_ = run["classes"]
        self.n_experts_ = len(run["experts"])
        self.n_rounds_ = run["n_rounds"]
        self.learning_rate_ = run["rate"]
        self.chosen_experts_ = np.empty(0, dtype=np.intp)
        self.privacy_guarantee_ = {
            "epsilon": 2.0 * run["rate"],
            "delta": 0.0,
            "neighbouring": "replace-one (one row of the stream)",
            "unit": "per query row",
            "theorem": "exponential mechanism on cumulative rewards, weight exp(a U) (lecture "
            "notes §2)",
            "release": {
                "epsilon": run["epsilon"],
                "delta": run["delta"],
                "unit": f"chosen_experts_ over at most n_rounds={run['n_rounds']} rounds",
                "theorem": (
                    "basic composition of 2a-DP rounds"
                    if run["delta"] == 0.0
                    else "zCDP of 2a-bounded-range rounds, a^2/2 each (Cesar & Rogers 2021), "
                    "tight Renyi conversion (Balle et al. 2020)"
                    if self.composition == "zcdp"
                    else "advanced composition of 2a-DP rounds (Dwork, Rothblum & Vadhan 2010)"
                ),
            },
        }

    def _rate(self, epsilon: float, n_rounds: int, delta: float | None) -> float:
        """The learning rate ``a`` (:func:`mw_learning_rate`)."""
        return mw_learning_rate(epsilon, n_rounds, delta, self.composition)

    @staticmethod
    def _check_round_budget(done: int, more: int, n_rounds: int) -> None:
        if done + more > n_rounds:
            raise ValueError(
                f"n_rounds={n_rounds} rounds were announced and {done} have run, so {more} more "
                f"rows would exceed it by {done + more - n_rounds}. The rate was set for "
                "n_rounds; start a new run with fit, or announce a larger n_rounds."
            )

    def _run_rounds(self, rewards: np.ndarray) -> None:
        """One round per reward row: draw from the current law, then collect the rewards."""
        chosen = [self.chosen_experts_]
        cumulative = self._cumulative_rewards
        stream = self._round_stream
        try:
            self._rounds_ledger.advance_horizon(
                rewards.shape[0], self._rounds, source=type(self).__name__
            )
        except HorizonExhaustedError:
            raise HorizonExhaustedError(
                f"the run was charged for n_rounds={self._rounds[1]} rounds, and copies of this "
                "estimator have run them (the rounds are counted in the accountant's ledger); "
                "nothing was run. Start a new run with fit."
            ) from None
        with stream.lock:
            for start in range(0, rewards.shape[0], _ROUND_BLOCK):
                block = rewards[start : start + _ROUND_BLOCK]
                law = self._round_law(block, cumulative, self.learning_rate_)
                chosen.append(sample_categorical(law, stream.rng))
                cumulative = cumulative + block.sum(axis=0)
        self._cumulative_rewards = cumulative
        self.chosen_experts_ = np.concatenate(chosen).astype(np.intp)

    def _round_law(self, rewards: np.ndarray, cumulative: np.ndarray, rate: float) -> np.ndarray:
        """Law of the choice at each of these rounds (softmax of the rate times past rewards)."""
        return mw_round_proba(rewards, rate, initial=cumulative)

    # -- queries ------------------------------------------------------------------------------
    def predict(self, X: MatrixLike) -> np.ndarray:
        """Answer each row with the label of an expert drawn from the current weights.

        Each row is one query, ``(2a, 0)``-DP with fresh noise; the attached
        accountant is charged ``2a`` per row before any noise is drawn.

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_queries, n_features)
            Query rows (no NaN or infinity).

        Returns
        -------
        ndarray of shape (n_queries,)
            One private label per row.
        """
        check_is_fitted(self, "privacy_guarantee_")
        X_checked = validate_data(self, X, reset=False, dtype=None, ensure_all_finite=True)
        X = keep_frame(X, X_checked)
        n_rows = X_checked.shape[0]
        predictions = _predict_each(self._experts, X, n_rows, "experts")
        law = np.broadcast_to(self._current_law(), (n_rows, self.n_experts_))
        chosen = self._release(
            n_rows, self.privacy_guarantee_["epsilon"], lambda rng: sample_categorical(law, rng)
        )
        return predictions[chosen, np.arange(n_rows)]

    def _current_law(self) -> np.ndarray:
        no_reward = np.zeros((1, self.n_experts_))
        return self._round_law(no_reward, self._cumulative_rewards, self.learning_rate_)[0]

    # -- non-private diagnostics (tests and audits only) ---------------------------------------
    def _selection_proba(self) -> np.ndarray:
        """Law of the next choice (a query's expert).

        NOT PRIVATE: leaks the cumulative rewards. Never charges.
        """
        check_is_fitted(self, "privacy_guarantee_")
        return self._current_law()

    def _round_proba(self, X, y) -> np.ndarray:
        """Law of the choice at every round of ``fit(X, y)`` with the current parameters.

        NOT PRIVATE: the laws are functions of the rewards, hence of the data.
        Never charges, never changes the estimator (the data are validated on a
        shallow copy). Returns an array of shape (n_samples, n_experts).
        """
        probe = copy.copy(self)
        X, y = probe._validate_stream(X, y, reset=True)
        n_rounds = self.n_rounds if self.n_rounds is not None else y.shape[0]
        run = probe._resolve_run(y, self.classes, n_rounds)
        rewards = probe._rewards(run["experts"], X, y)
        return self._round_law(rewards, np.zeros(rewards.shape[1]), run["rate"])
