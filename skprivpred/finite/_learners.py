"""Private learning over finite hypothesis classes, and private multiplicative weights.

Two classical private learners:

- :class:`ExponentialMechanismClassifier`: the private PAC learner of
  Kasiviswanathan et al. (2011). ``fit`` draws one hypothesis from a finite
  class with probability proportional to ``exp(-epsilon * mistakes / 2)`` (the
  exponential mechanism of McSherry & Talwar 2007); the drawn hypothesis is the
  released model.
- :class:`PrivateExpertsClassifier`: private multiplicative weights over a
  public list of experts (Arora, Hazan & Kale 2012; Dwork & Roth 2014, chapter
  11), run over a private stream of labelled rows.

The hypothesis classes and their exact mistake counts live in
:mod:`skprivpred.finite`, the exact sampler in :mod:`skprivpred.mechanisms`,
and every conversion between ``(epsilon, delta)`` and zCDP in
:mod:`skprivpred.accounting`; this module sets the multiplicative-weights rate
from them.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Sequence
from numbers import Integral, Real
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from .._base import (
    MULTICLASS_ALTERNATIVES,
    PrivatePredictorMixin,
    QueryPlan,
    QueryStream,
    answer,
    finite_target_column,
    keep_frame,
    reject_fit_params,
    resolve_classes,
)
from ..accounting._accountant import PrivacyAccountant
from ..accounting._composition import advanced_composition_inverse, per_query_epsilon
from ..accounting._guarantee import PER_QUERY_ROW, GuaranteeUnit, PrivacyGuarantee
from ..exceptions import HorizonExhaustedError, InvalidParameterError
from ..mechanisms._closed_forms import (
    exponential_mechanism_proba,
    sample_categorical,
    sample_fewest_mistakes,
)
from ..utils._deprecation import DEPRECATED, deprecated_constraints, renamed_param
from ..utils._param_validation import (
    Interval,
    StrOptions,
    UserCodeParam,
    validate_parameter_constraints,
)
from ..utils._typing import MatrixLike, RandomStateLike, Self, VectorLike
from ._hypotheses import THRESHOLD_DIRECTIONS, ConjunctionClass, GridThresholdClass, HypothesisList

__all__ = [
    "ExponentialMechanismClassifier",
    "PrivateExpertsClassifier",
    "mw_learning_rate",
    "mw_round_proba",
    "mw_round_rho",
]

_POSITIVE = Interval(Real, 0, None, closed="neither")
_DELTA = Interval(Real, 0, 1, closed="left")
_COUNT = Interval(Integral, 1, None, closed="left")
# PrivateExpertsClassifier's hypotheses (the multiplicative-weights "experts"): user code.
_EXPERT_LISTS = [
    UserCodeParam(list, kind="expert", each=True),
    UserCodeParam(tuple, kind="expert", each=True),
]

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


# -- multiplicative weights (pure) ----------------------------------------------------------
def mw_round_proba(
    rewards: MatrixLike, rate: float, initial: VectorLike | None = None
) -> np.ndarray:
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
    validate_parameter_constraints({"rate": [_POSITIVE]}, {"rate": rate}, "mw_round_proba")
    rewards = np.asarray(rewards, dtype=float)
    before = np.cumsum(rewards, axis=0) - rewards
    if initial is not None:
        before += np.asarray(initial, dtype=float)
    # The exponential mechanism at epsilon = 2 * rate has weights exp(rate * U).
    return exponential_mechanism_proba(before, 2.0 * rate)


def mw_round_rho(rate: float) -> float:
    """zCDP ``rho`` of one round (or one query) of multiplicative weights at rate ``a``.

    The choice, an exponential mechanism with weight ``exp(a U)`` on a utility
    of sensitivity 1, is ``2a``-bounded-range, hence ``(2a)^2 / 8 = a^2 / 2``
    -zCDP (Cesar & Rogers 2021), four times less than the
    ``(2a)^2 / 2`` of a generic ``2a``-DP release.

    Parameters
    ----------
    rate : float
        The learning rate ``a > 0``.

    Returns
    -------
    float
        ``a^2 / 2``.

    Examples
    --------
    >>> mw_round_rho(0.5)
    0.125
    """
    validate_parameter_constraints({"rate": [_POSITIVE]}, {"rate": rate}, "mw_round_rho")
    return float(rate) ** 2 / 2.0


def mw_learning_rate(
    epsilon: float, n_rounds: int, delta: float = 0.0, composition: str = "zcdp"
) -> float:
    """Learning rate ``a`` of private multiplicative weights over ``n_rounds`` rounds.

    Each round's choice is ``2a``-DP (an exponential mechanism on a 1-Lipschitz
    utility). With ``delta=0`` basic composition gives ``2aT``-DP, so
    ``a = epsilon / (2T)`` (pure). With ``delta > 0`` the rate is the largest
    ``a`` for which ``T`` rounds are ``(epsilon, delta)``-DP by the chosen
    composition, or the pure rate if that is larger (it is valid too):

    - ``"zcdp"``: the exponential mechanism with weight ``exp(a U)`` on a
      utility of sensitivity 1 is ``2a``-*bounded-range*, hence
      ``(2a)^2 / 8``-zCDP (Cesar & Rogers 2021); ``T`` adaptive rounds compose
      (Bun & Steinke 2016) within ``rho_cap(epsilon, delta)``. The per-round
      epsilon ``2a`` is therefore
      :func:`~skprivpred.accounting.per_query_epsilon` ``(epsilon, delta, T)``,
      the same rule as for any horizon of bounded-range releases.
    - ``"advanced"``: the advanced composition theorem (Dwork, Rothblum &
      Vadhan 2010) on ``2a``-DP rounds,
      :func:`~skprivpred.accounting.advanced_composition_inverse`.

    The setting ``a = sqrt(epsilon / (12 T))`` with
    ``delta = exp(-sqrt(T epsilon / 12))`` found in lecture notes on private
    multiplicative weights is *not* used: it is false (see
    :class:`PrivateExpertsClassifier`, "Corrected constants").

    Parameters
    ----------
    epsilon : float
        Epsilon of the whole sequence of choices, > 0.
    n_rounds : int
        The public number of rounds ``T >= 1``.
    delta : float, default=0.0
        Delta of the sequence, in [0, 1); 0 for pure differential privacy.
    composition : {"zcdp", "advanced"}, default="zcdp"
        How the rounds compose when ``delta > 0``.

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
    validate_parameter_constraints(
        {
            "epsilon": [_POSITIVE],
            "n_rounds": [_COUNT],
            "delta": [_DELTA],
            "composition": [StrOptions({"zcdp", "advanced"})],
        },
        {"epsilon": epsilon, "n_rounds": n_rounds, "delta": delta, "composition": composition},
        caller_name="mw_learning_rate",
    )
    pure = epsilon / (2.0 * n_rounds)
    if delta == 0:
        return pure
    if composition == "zcdp":
        return per_query_epsilon(epsilon, delta, n_rounds) / 2.0
    return max(pure, advanced_composition_inverse(epsilon, n_rounds, delta) / 2.0)


# -- the exponential-mechanism learner -------------------------------------------------------
class ExponentialMechanismClassifier(PrivatePredictorMixin, ClassifierMixin, BaseEstimator):
    """Private PAC learner: one hypothesis drawn by the exponential mechanism.

    ``fit`` draws one hypothesis from a finite, public class ``C`` with
    probability proportional to ``exp(-epsilon * mistakes(h) / 2)``, exactly.
    The drawn hypothesis is **the released model**: ``predict`` applies it, as
    free and deterministic post-processing.

    **Guarantee.** Under replace-one neighbours the released hypothesis, and
    every fitted attribute, is ``(epsilon, 0)``-DP (sensitivity 1). One ``fit``
    is one release, charged ``epsilon`` once before the draw; every refit is
    charged again; ``predict`` and ``score`` spend nothing.

    See the user guide: :ref:`finite_classes`.

    Parameters
    ----------
    hypotheses : {"conjunctions", "thresholds"} or list, default="conjunctions"
        The finite public class ``C``: the monotone conjunctions over binary
        features, the thresholds on a public ``grid``, or a list of fitted
        classifiers or callables ``X -> labels`` fixed before the data are seen
        (wrap fitted estimators in :class:`sklearn.frozen.FrozenEstimator` if
        the estimator is cloned). A list member labels the training rows one at
        a time in isolation; a row on which it fails counts as a mistake.
    epsilon : float, default=1.0
        Privacy parameter of the released hypothesis, > 0.
    grid : array-like or list of array-like, default=None
        Public candidate thresholds for ``hypotheses="thresholds"`` (required
        there, ignored otherwise): one 1-D grid for every feature, or one per
        feature. Fix it without looking at the training data.
    direction : {"increasing", "decreasing", "both"}, default="both"
        Threshold directions: ``"increasing"`` predicts ``classes_[1]`` when
        ``x_j >= a``, ``"decreasing"`` when ``x_j < a``. Thresholds only.
    classes : array-like, default=None
        The public label set (two labels for conjunctions and thresholds, the
        second positive). ``None`` reads it from ``y`` with a
        :class:`~skprivpred.PrivacyWarning`.
    max_hypotheses : int, default=2**24
        Largest class size ``|C|`` accepted; a larger class is refused, never
        truncated.
    accountant : PrivacyAccountant, default=None
        Charged ``epsilon`` once per ``fit``, before the draw.
    random_state : int, RandomState instance, Generator or None, default=None
        Seeds the draw. Use ``None`` (OS entropy) in deployment: a known seed
        voids the guarantee.

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
        The size ``|C|`` of the class (public).
    selected_features_ : ndarray of int
        Conjunctions: the features of the released conjunction.
    threshold_ : float
        Thresholds: the released threshold, a point of the grid.
    threshold_feature_ : int
        Thresholds: the feature it applies to.
    direction_ : {"increasing", "decreasing"}
        Thresholds: the released direction.
    selected_index_ : int
        A list: index of the released hypothesis.
    hypothesis_ : object
        A list: the released hypothesis, ``hypotheses[selected_index_]``.
    privacy_guarantee_ : PrivacyGuarantee
        ``(epsilon, 0)`` for the released hypothesis.

    See Also
    --------
    PrivateExpertsClassifier : Private multiplicative weights over public hypotheses.

    References
    ----------
    S. P. Kasiviswanathan, H. K. Lee, K. Nissim, S. Raskhodnikova and A. Smith.
    What Can We Learn Privately? SIAM Journal on Computing 40(3), 2011.
    F. McSherry and K. Talwar. Mechanism Design via Differential Privacy. FOCS 2007.

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

    _parameter_constraints: dict = {
        "hypotheses": [
            StrOptions({"conjunctions", "thresholds"}),
            UserCodeParam(list, kind="hypothesis", each=True),
            UserCodeParam(tuple, kind="hypothesis", each=True),
        ],
        "epsilon": [_POSITIVE],
        "grid": ["array-like", None],
        "direction": [StrOptions({*THRESHOLD_DIRECTIONS, "both"})],
        "classes": ["array-like", None],
        "max_hypotheses": [_COUNT],
        "accountant": [PrivacyAccountant, None],
        "random_state": ["random_state"],
    }

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
    def _check_params(self) -> HypothesisList | None:
        """Cross-parameter rules: a list's members (public, fitted), a grid for thresholds.

        Returns the list's class for a list of hypotheses (None for a named family).
        """
        if not isinstance(self.hypotheses, str):
            return HypothesisList(self.hypotheses, "hypotheses")
        if self.hypotheses == "thresholds" and self.grid is None:
            raise InvalidParameterError(
                "hypotheses='thresholds' needs a public grid of candidate thresholds, got "
                "grid=None. Pass grid= values fixed without looking at the training data (a grid "
                "read from the data would disclose it)."
            )
        return None

    def _validate_X(self, X, *, reset: bool, y=None):
        """Validate rows (``validate_data``); returns (X as the members take it, y)."""
        kwargs: dict[str, Any] = {"reset": reset, "ensure_all_finite": True}
        kwargs["dtype"] = "numeric" if self.hypotheses == "thresholds" else None
        if y is None:
            X_checked = validate_data(self, X, **kwargs)
        else:
            X_checked, y = validate_data(self, X, y, y_numeric=False, **kwargs)
        listed = not isinstance(self.hypotheses, str)
        return (keep_frame(X, X_checked) if listed else X_checked), y

    def _make_family(
        self, n_features: int, listed: HypothesisList | None
    ) -> ConjunctionClass | GridThresholdClass | HypothesisList:
        if listed is not None:
            return listed
        if self.hypotheses == "thresholds":
            return GridThresholdClass.from_grid(self.grid, n_features, self.direction)
        size = 2.0**n_features
        if size > self.max_hypotheses:
            raise ValueError(self._too_many(int(size)))
        return ConjunctionClass(n_features)

    def _too_many(self, size: int) -> str:
        return (
            f"hypotheses={self.hypotheses!r} on these features is a class of {size} "
            f"hypotheses, more than max_hypotheses={self.max_hypotheses}. The class is never "
            "truncated: use fewer features or a smaller grid, or raise max_hypotheses if "
            "time and memory allow (about 24 bytes per hypothesis)."
        )

    def _scored_problem(self, X, y, listed: HypothesisList | None):
        """Validate the data and count mistakes; sets n_features_in_ (call in an atomic block).

        Returns the family, the label set and the mistake counts (secret). A
        list's members count their mistakes row by row through the one
        boundary (:meth:`HypothesisList.mistakes`); the named families count
        them with the library's own vectorised code.
        """
        X, y = self._validate_X(X, reset=True, y=y)
        y = finite_target_column(y)
        check_classification_targets(y)
        classes = resolve_classes(self.classes, y, type(self).__name__)
        family = self._make_family(self.n_features_in_, listed)
        if family.binary and classes.shape[0] != 2:
            raise ValueError(
                f"Only binary classification is supported by hypotheses={self.hypotheses!r}: the "
                f"label set has {classes.shape[0]} labels. Pass a list of hypotheses for more "
                f"labels. {MULTICLASS_ALTERNATIVES}"
            )
        if family.n_hypotheses > self.max_hypotheses:
            raise ValueError(self._too_many(family.n_hypotheses))
        return family, classes, family.mistakes(family.prepare(X), y, classes)

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
        listed = self._check_fit_arguments(fit_params)
        epsilon = float(self.epsilon)
        with self._unchanged_on_error():
            family, classes, mistakes = self._scored_problem(X, y, listed)
            self._start_streams()
            index = self._release_model(epsilon, lambda rng: self._draw(mistakes, epsilon, rng))
            attributes, released = family.release(index, classes)
            for name in _RELEASE_ATTRIBUTES:  # a refit may use another family
                self.__dict__.pop(name, None)
            for name, value in attributes.items():
                setattr(self, name, value)
            self._family = family
            self._released = released
            self.classes_ = classes
            self.n_hypotheses_ = family.n_hypotheses
            self.privacy_guarantee_ = PrivacyGuarantee(
                epsilon=epsilon,
                delta=0.0,
                unit=GuaranteeUnit.RELEASE,
                scope="the released hypothesis; predictions are free post-processing",
                theorem="McSherry & Talwar (2007), exponential mechanism with utility -mistakes "
                "of sensitivity 1 (Dwork & Roth 2014, Theorem 3.10), as in the private learner "
                "of Kasiviswanathan et al. (2011)",
                details={"n_hypotheses": family.n_hypotheses},
            )
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
        return answer(self, X, self._query_plan())

    def _query_plan(self) -> QueryPlan:
        """How ``predict`` answers: the released hypothesis, free post-processing."""
        check_is_fitted(self, "privacy_guarantee_")
        released = self._released
        return QueryPlan(check=self._query_rows, values=lambda rows, n_jobs: released.predict(rows))

    def _query_rows(self, X):
        """The query rows checked and in the form the hypotheses take (public checks)."""
        X, _ = self._validate_X(X, reset=False)
        return self._family.prepare(X)

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
        probe = copy.copy(self)
        probe._validate_params()
        _, _, mistakes = probe._scored_problem(X, y, probe._check_params())
        return self._selection_law(mistakes, float(self.epsilon))


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
    """Private multiplicative weights over a public list of hypotheses (experts).

    The hypotheses are public classifiers or callables fixed before the data
    are seen. ``fit`` runs one round per row of the private stream ``(X, y)``:
    it draws a hypothesis from the current weights, exactly from the law
    ``softmax(a U_t)`` (``U_t``: each hypothesis's correct answers so far), then
    rewards the right ones; ``partial_fit`` continues the same run. The choice
    of every round, ``chosen_experts_``, is released. ``predict`` answers each
    query row with the label of a hypothesis drawn afresh from the weights.

    **Guarantee.** Under replace-one neighbours each choice is ``2a``-DP, with
    the rate ``a`` set from the public ``epsilon``, ``delta`` and ``n_rounds``
    (:func:`mw_learning_rate`) so that the run is ``(epsilon, delta)``-DP:
    basic composition when ``delta=0``, else zCDP or advanced composition. The
    run is charged once when it starts; each query row is ``(2a, 0)``-DP and
    ``a^2 / 2``-zCDP, charged before any noise is drawn.

    See the user guide: :ref:`finite_classes`.

    Parameters
    ----------
    hypotheses : list of fitted classifiers or callables, default=None
        The public hypotheses (``K >= 1``), each returning one label per row;
        required (``None`` is refused by ``fit``).
        Wrap fitted estimators in :class:`sklearn.frozen.FrozenEstimator` if
        the estimator is cloned. On the training stream a hypothesis labels one
        row at a time in isolation; a row on which it fails earns no reward.
        Query rows are public and go to each hypothesis as one batch.
    epsilon : float, default=1.0
        Epsilon of the released sequence of choices, > 0.
    delta : float, default=0.0
        Delta of the released sequence, in [0, 1); 0 for pure differential
        privacy. A ``delta > 0`` (e.g. ``1e-6``) allows a larger rate.
    composition : {"zcdp", "advanced"}, default="zcdp"
        How the rounds compose when ``delta > 0``.
    n_rounds : int, default=None
        The public number of rounds ``T`` of a run, fixed before the stream is
        seen. ``None`` lets ``fit`` use its number of rows; ``partial_fit``
        needs an integer.
    classes : array-like, default=None
        The public label set. ``None`` takes ``partial_fit``'s ``classes`` or
        reads it from ``y`` with a :class:`~skprivpred.PrivacyWarning`.
    accountant : PrivacyAccountant, default=None
        Charged ``(epsilon, delta)`` (``rho = n_rounds a^2 / 2``) when a run
        starts and ``2a`` (``rho = a^2 / 2``) per query row.
    random_state : int, RandomState instance, Generator or None, default=None
        Seeds the rounds' choices and the answers (two independent streams).
        Use ``None`` (OS entropy) in deployment: a known seed voids the
        guarantee.
    experts : list of fitted classifiers or callables, default="deprecated"
        Former name of ``hypotheses``.

        .. deprecated:: 0.4
           ``experts`` was renamed ``hypotheses`` in 0.4 and will be removed
           in 0.6.

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
        Number of hypotheses ``K``.
    n_rounds_ : int
        The number of rounds ``T`` the rate was set for.
    learning_rate_ : float
        The rate ``a``.
    chosen_experts_ : ndarray of int of shape (n_rounds_run,)
        The released choice of each round so far (indices into ``hypotheses``).
    privacy_guarantee_ : PrivacyGuarantee
        Per query row: ``(2a, 0)``, ``rho = a^2 / 2``; ``details["release"]``
        is the guarantee of the run.
    queries_answered_ : int
        Number of query rows answered since ``fit``.

    See Also
    --------
    ExponentialMechanismClassifier : One hypothesis from a finite class, released at fit.
    mw_learning_rate : The rate from ``epsilon``, ``delta`` and ``n_rounds``.

    References
    ----------
    S. Arora, E. Hazan and S. Kale. The Multiplicative Weights Update Method: a
    Meta-Algorithm and Applications. Theory of Computing 8, 2012.
    C. Dwork and A. Roth. The Algorithmic Foundations of Differential Privacy,
    2014, chapter 11.

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

    _parameter_constraints: dict = {
        "hypotheses": [*_EXPERT_LISTS, None],
        "epsilon": [_POSITIVE],
        "delta": [_DELTA],
        "n_rounds": [_COUNT, None],
        "classes": ["array-like", None],
        "accountant": [PrivacyAccountant, None],
        "random_state": ["random_state"],
        "composition": [StrOptions({"zcdp", "advanced"})],
        "experts": deprecated_constraints(_EXPERT_LISTS, "hypotheses"),
    }

    def __init__(
        self,
        hypotheses: Sequence[Any] | None = None,
        *,
        epsilon: float = 1.0,
        delta: float = 0.0,
        n_rounds: int | None = None,
        classes: VectorLike | None = None,
        accountant: PrivacyAccountant | None = None,
        random_state: RandomStateLike = None,
        composition: str = "zcdp",
        experts: Sequence[Any] | str = DEPRECATED,
    ) -> None:
        self.hypotheses = hypotheses
        self.epsilon = epsilon
        self.delta = delta
        self.composition = composition
        self.n_rounds = n_rounds
        self.classes = classes
        self.accountant = accountant
        self.random_state = random_state
        self.experts = experts

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
        experts = self._check_fit_arguments(fit_params)
        with self._unchanged_on_error():
            X, y = self._validate_stream(X, y, reset=True)
            n_rounds = self.n_rounds if self.n_rounds is not None else y.shape[0]
            run = self._resolve_run(y, self.classes, n_rounds, experts)
            rewards = self._rewards(run["experts"], X, y, run["classes"])
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
        first_call = "_cumulative_rewards" not in self.__dict__
        if first_call:
            self._validate_params()
            experts = self._check_params()
        reject_fit_params(self, fit_params)
        with self._unchanged_on_error():
            X, y = self._validate_stream(X, y, reset=first_call)
            if first_call:
                if self.n_rounds is None:
                    raise InvalidParameterError(
                        "partial_fit needs the public total number of rounds: set n_rounds to "
                        "the number of rows the whole stream will have (it sets the rate), got "
                        "n_rounds=None."
                    )
                run = self._resolve_run(
                    y, _agreed_classes(self.classes, classes), self.n_rounds, experts
                )
                rewards = self._rewards(run["experts"], X, y, run["classes"])
                self._start_run(run)
            else:
                _agreed_classes(self.classes_, classes)
                resolve_classes(self.classes_, y, type(self).__name__)
                self._check_round_budget(self.chosen_experts_.shape[0], y.shape[0], self.n_rounds_)
                rewards = self._rewards(self._experts, X, y, self.classes_)
            self._run_rounds(rewards)
        return self

    def _validate_stream(self, X, y, *, reset: bool):
        X_checked, y = validate_data(
            self, X, y, reset=reset, dtype=None, ensure_all_finite=True, y_numeric=False
        )
        y = finite_target_column(y)
        check_classification_targets(y)
        return keep_frame(X, X_checked), y

    def _check_params(self) -> HypothesisList:
        """Cross-parameter rules: the hypotheses are public, fitted classifiers or callables.

        The deprecated ``experts`` warns, at the user's line (and is refused beside
        ``hypotheses``); its values are checked, and named in messages, exactly as before.
        """
        hypotheses = renamed_param(self, "experts", "hypotheses")
        name = "hypotheses" if hypotheses is self.hypotheses else "experts"
        if hypotheses is None:
            raise InvalidParameterError(
                "PrivateExpertsClassifier needs its public hypotheses: pass a non-empty list of "
                "fitted classifiers or callables X -> labels as hypotheses=[...] (the first "
                "argument)."
            )
        return HypothesisList(hypotheses, name)

    def _resolve_run(self, y, classes, n_rounds, experts: HypothesisList) -> dict:
        """Resolve the public quantities of a new run; changes nothing, charges nothing."""
        epsilon, delta = float(self.epsilon), float(self.delta)
        n_rounds = int(n_rounds)
        classes = resolve_classes(classes, y, type(self).__name__)
        self._check_round_budget(0, y.shape[0], n_rounds)
        rate = self._rate(epsilon, n_rounds, delta)
        pure = delta == 0 or rate <= epsilon / (2.0 * n_rounds)
        return {
            "epsilon": epsilon,
            "delta": 0.0 if pure else delta,
            "n_rounds": n_rounds,
            "rate": rate,
            "experts": experts,
            "classes": classes,
        }

    @staticmethod
    def _rewards(experts: HypothesisList, X, y: np.ndarray, classes: np.ndarray) -> np.ndarray:
        """Reward matrix of shape (n_rows, n_experts): 1 where the expert is right. Secret.

        The stream's rows are protected: each expert labels each row alone,
        through the one boundary (:meth:`HypothesisList.correct`: a copy of its
        own per row, the row an object of its own, identical rows evaluated
        once); a row on which an expert fails earns it no reward.
        """
        return experts.correct(X, y, classes).T.astype(np.int64)

    def _start_run(self, run: dict) -> None:
        """Start the streams, charge the run and start its state (call after all checks)."""
        self._start_streams()
        # The run is one release: charged once, before any round is drawn; the rounds'
        # choices draw from a generator spawned from the release stream (never from the
        # fit stream, which a copied random_state object could replay).
        round_rng = self._release_model(
            run["epsilon"],
            lambda rng: rng.spawn(1)[0],
            delta=run["delta"],
            rho=run["n_rounds"] * mw_round_rho(run["rate"]),
        )
        self._round_stream = QueryStream(round_rng)
        # The run was charged for n_rounds rounds: every copy of this estimator counts the
        # rounds it runs in one ledger, so that all of them together never run more.
        self._rounds = (uuid.uuid4().hex, int(run["n_rounds"]))
        self._rounds_ledger = (
            self.accountant if self.accountant is not None else PrivacyAccountant()
        )
        self._experts = run["experts"]
        self._cumulative_rewards = np.zeros(run["experts"].n_hypotheses, dtype=np.int64)
        self.classes_ = run["classes"]
        self.n_experts_ = run["experts"].n_hypotheses
        self.n_rounds_ = run["n_rounds"]
        self.learning_rate_ = run["rate"]
        self.chosen_experts_ = np.empty(0, dtype=np.intp)
        self.privacy_guarantee_ = self._guarantee(run)

    def _guarantee(self, run: dict) -> PrivacyGuarantee:
        """Per query row ``(2a, 0)``, ``a^2/2``-zCDP; the run's guarantee is in ``details``.

        Every round and every query is ``2a``-bounded-range, hence
        ``a^2 / 2``-zCDP (Cesar & Rogers 2021), whichever composition set the
        rate: the run's ``rho`` is ``n_rounds a^2 / 2`` and a query's is
        ``a^2 / 2``, which is what the accountant is charged.
        """
        rate, n_rounds = run["rate"], run["n_rounds"]
        bounded_range = "2a-bounded-range rounds are a^2/2-zCDP (Cesar & Rogers 2021)"
        if run["delta"] == 0.0:
            release_theorem = (
                "basic composition of 2a-DP rounds (Dwork & Roth 2014, Theorem 3.16); "
                f"{bounded_range}, composed by Bun & Steinke (2016)"
            )
        elif self.composition == "zcdp":
            release_theorem = (
                f"{bounded_range}, composed by Bun & Steinke (2016) and converted by the tight "
                "Renyi bound (Canonne, Kamath & Steinke 2020)"
            )
        else:
            release_theorem = (
                "advanced composition of 2a-DP rounds (Dwork, Rothblum & Vadhan 2010; Dwork & "
                f"Roth 2014, Theorem 3.20); {bounded_range}, composed by Bun & Steinke (2016)"
            )
        release_rho = n_rounds * mw_round_rho(rate)
        release = PrivacyGuarantee(
            epsilon=run["epsilon"],
            delta=run["delta"],
            unit=GuaranteeUnit.RELEASE,
            scope=f"chosen_experts_, the choices of at most n_rounds={n_rounds} rounds",
            theorem=release_theorem,
            rho=release_rho,
            details={"learning_rate": rate, "n_rounds": n_rounds},
        )
        return PrivacyGuarantee(
            epsilon=2.0 * rate,
            delta=0.0,
            unit=PER_QUERY_ROW,
            theorem="exponential mechanism with weight exp(a U) on cumulative rewards of "
            "sensitivity 1 (McSherry & Talwar 2007; Dwork & Roth 2014, Theorem 3.10), "
            "2a-bounded-range, hence a^2/2-zCDP (Cesar & Rogers 2021)",
            neighbouring="replace-one (one row of the stream)",
            rho=mw_round_rho(rate),
            details={"learning_rate": rate, "release": release},
        )

    def _rate(self, epsilon: float, n_rounds: int, delta: float) -> float:
        """The learning rate ``a`` (:func:`mw_learning_rate`)."""
        return mw_learning_rate(epsilon, n_rounds, delta, self.composition)

    @staticmethod
    def _check_round_budget(done: int, more: int, n_rounds: int) -> None:
        if done + more > n_rounds:
            raise InvalidParameterError(
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
        return answer(self, X, self._query_plan())

    def _query_plan(self) -> QueryPlan:
        """How ``predict`` answers: the experts' labels (public), then one expert drawn per row.

        The experts and the queries are public, so every expert's label at the
        queries is computed with the public checks (an expert that raises
        refuses the call before the charge); the estimator's computation is
        the current law (the secret weights), its mechanism the draw.
        """
        check_is_fitted(self, "privacy_guarantee_")
        guarantee = self.privacy_guarantee_
        return QueryPlan(
            check=self._expert_labels,
            values=lambda labels, n_jobs: (labels, self._current_law()),
            draw=_draw_expert_labels,
            epsilon=guarantee.epsilon,
            rho=guarantee.rho,
        )

    def _expert_labels(self, X) -> np.ndarray:
        """Public checks of the queries, then every expert's label: shape (n_rows, n_experts)."""
        X_checked = validate_data(self, X, reset=False, dtype=None, ensure_all_finite=True)
        return self._experts.predictions(keep_frame(X, X_checked), X_checked.shape[0]).T

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
        probe._validate_params()
        experts = probe._check_params()
        X, y = probe._validate_stream(X, y, reset=True)
        n_rounds = self.n_rounds if self.n_rounds is not None else y.shape[0]
        run = probe._resolve_run(y, self.classes, n_rounds, experts)
        rewards = probe._rewards(run["experts"], X, y, run["classes"])
        return self._round_law(rewards, np.zeros(rewards.shape[1]), run["rate"])


def _draw_expert_labels(values: tuple, rng: np.random.Generator) -> np.ndarray:
    """The mechanism of the experts: per row, the label of an expert drawn from the law."""
    labels, law = values
    n_rows = labels.shape[0]
    chosen = sample_categorical(np.broadcast_to(law, (n_rows, law.shape[0])), rng)
    return labels[np.arange(n_rows), chosen]
