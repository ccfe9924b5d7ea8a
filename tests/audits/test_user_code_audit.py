"""User code meets protected rows only through the boundary: an audit that finds its entry points.

DESIGN 1.10: any user code that touches protected rows (the training rows everywhere; the
queries and their answers for the two everlasting predictors) sees one protected unit at a
time (one row, or one teacher's block), on an object of its own, and whatever it does gives
a fixed public result. This module does not list the places where user code runs: it reads
them from the estimators' declared constraints. Every parameter marked
:class:`~skprivpred.utils.UserCodeParam` in the ``_parameter_constraints`` of a class of
``skprivpred.__all__`` or ``skprivpred.model_selection.__all__`` must have a scenario below
(:func:`test_every_user_code_parameter_has_a_scenario`), and every object, list, tuple or
dict constraint must be marked either user code or :class:`~skprivpred.utils.Data`
(:func:`test_every_object_constraint_is_marked_user_code_or_data`). A new user-code
parameter therefore fails the suite until it is audited here.

For each marked parameter, the scenario passes hostile user code of the parameter's kind
(an estimator, a student, a list of hypotheses or experts, a hypothesis class, a basis, a
grid of estimators), built from one :class:`Hostile` behaviour, and runs ``fit`` and every
answering method on neighbouring training sets D and D' (row ``changed`` set to the secret
value ``SECRET``), and, where queries are protected (the two everlasting predictors), on
neighbouring query batches Q and Q' (mixed batches of distinct rows; Q' sets one row to
``SECRET``). The battery of behaviours:

- ``raises``: raise, naming the private value, on a batch that holds it;
- ``batch_statistic``: answer by a statistic of the whole batch it is handed;
- ``writes``: write into its input, in place and through the array's metadata (strides);
- ``keeps_state``: remember the largest value seen across calls (an attribute), answer by it;
- ``global_state``: set numpy's and Python's global random states, ``np.seterr``,
  ``sklearn.set_config`` and the warning filters, depending on the private value;
- ``non_finite``: answer NaN on the private row; ``wrong_shape``: one answer short;
- ``canary``: honest, but records a failure whenever it is handed rows holding a protected
  value while ``skprivpred._teachers._isolation.protected_units_in_call()`` is not 1, or any rows
  while it is more than 1, or when the boundary has no such function (and the test fails
  when the canary was never called in this process).

Two tests per (parameter, behaviour):

``test_user_code_outcome_is_the_same_on_neighbours``
    every call (``fit``, then each answering method) raises the same exception with the
    same message, and emits the same warnings, on both sides; the caller's arrays are
    unchanged; numpy's and Python's random states, numpy's error state, scikit-learn's
    configuration and the warning filters are what they were before each call.
``test_user_code_law_is_within_the_claimed_epsilon``
    the law of the release, exact from the estimator's non-private diagnostic: the
    exponential mechanism's selection law, the experts' per-round laws (the law of "every
    round picks expert k" is their product), the teachers' exact answer laws, the private
    grid search's selection law from its candidate scores, the sufficient statistic's grid
    index (its claimed sensitivity), and, where the proof bounds a count rather than a law,
    that count (the everlasting vote counts move by at most one teacher per training
    neighbour; a GenericBBL teacher choice changes for at most one teacher). On query
    neighbours the answer law of every unchanged row is exactly the same. Where no
    diagnostic exists (the student), a black-box count runs instead:
    :func:`test_black_box_audit_where_no_diagnostic_exists`.

Sizes. The exact tests draw nothing. The black-box test (the student's answer after ``n``
independent fits per side, bounded as ``skprivpred.audit`` does) refutes the claimed
epsilon when the Clopper–Pearson lower bound on the log-ratio exceeds it; at
``alpha = 0.05 / 4`` per interval the honest estimator passes with probability at least
0.95. What such user code does when it breaks isolation is a *deterministic* flip of an
answer (batch-statistic teachers answered 194/200 against 0/200); a deterministic flip is caught
with ``n`` answers per side when ``ln(lo(n)/hi(0)) > epsilon``, i.e. ``n >= 17`` for
``epsilon = 1`` (asserted in :func:`test_black_box_size_catches_a_deterministic_flip`);
the test uses ``n = 40``, where the bound of a deterministic flip is 2.0: it would refute
even twice the claimed epsilon.

On the code before the boundary (main f6b663e) 57 of these tests fail: 25 canaries (no
``protected_units_in_call``), and 32 others: the exponential mechanism's hypotheses and the
experts (raise, write, global state, wrong shape; batch statistic, kept state and writes in
the law), GenericBBL's and the everlasting relabelling class (global state; batch
statistic, kept state and writes in the law), the everlasting teachers on query neighbours
(batch statistic, kept state) and the private grid search's candidate scores (batch
statistic, kept state).
"""

from __future__ import annotations

import math
import random
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
import sklearn
from _registry import constrained_classes
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, TransformerMixin

import skprivpred
import skprivpred.model_selection
from skprivpred import (
    ExponentialMechanismClassifier,
    GenericBBLClassifier,
    PrivateEverlastingClassifier,
    PrivateExpertsClassifier,
    PrivateGridSearchCV,
    SubsampleAggregateClassifier,
    SubsampleAverageClassifier,
    SubsampleAverageRegressor,
    SufficientStatisticClassifier,
    SufficientStatisticRegressor,
    _base,
)
from skprivpred.audit import clopper_pearson
from skprivpred.everlasting import relabel_law
from skprivpred.finite import FiniteHypothesisClass
from skprivpred.utils import Data, UserCodeParam, user_code_parameters
from skprivpred.utils._deprecation import deprecated_parameters
from skprivpred.utils._param_validation import (
    HasMethods,
    _AnyConstraint,
    _ArrayLikeConstraint,
    _CallableConstraint,
    _TypeConstraint,
    make_constraint,
)

SECRET = 99.0  # the private value: D' and Q' hold it in one row
EPSILON = 1.0
SEED = 0
BEHAVIOURS = [
    "raises",
    "batch_statistic",
    "writes",
    "keeps_state",
    "global_state",
    "non_finite",
    "wrong_shape",
    "canary",
]


# -- the canary ----------------------------------------------------------------------------------
#: What the canary found, and the values of the protected rows of the running side (None:
#: every row counts as protected). Module globals: the boundary copies the code, not its
#: module.
CANARY: dict[str, Any] = {"findings": [], "calls": 0, "protected": None}


def _protect(values) -> None:
    """Declare the values of the protected rows (training rows, protected queries)."""
    CANARY["protected"] = frozenset(np.asarray(values, dtype=float).ravel().tolist())


def _canary_check(A: np.ndarray) -> None:
    """One protected unit when the rows handed hold a protected value; never more than one."""
    CANARY["calls"] += 1
    protected = CANARY["protected"]
    strict = protected is None or any(v in protected for v in A.ravel().tolist())
    try:
        from skprivpred._teachers._isolation import protected_units_in_call
    except ImportError:
        CANARY["findings"].append(
            "skprivpred._teachers._isolation has no protected_units_in_call()"
        )
        return
    units = protected_units_in_call()
    if strict and units != 1:
        CANARY["findings"].append(f"called on protected rows with {units} protected unit(s)")
    elif not strict and units > 1:
        CANARY["findings"].append(f"called with {units} protected units")


# -- hostile user code ---------------------------------------------------------------------------
def _numbers(X) -> np.ndarray:
    if hasattr(X, "to_numpy"):
        X = X.to_numpy()
    if hasattr(X, "toarray"):
        X = X.toarray()
    A = np.array(X, dtype=float)  # a copy: the behaviours read the values as handed
    return A.reshape(-1, 1) if A.ndim == 1 else A


def _write(X, marked: bool) -> None:
    """Write into ``X`` in place and through its metadata; ignore what is refused."""
    if not isinstance(X, np.ndarray):
        return
    try:
        X[...] = SECRET if marked else -1.0
    except (ValueError, TypeError):
        pass
    if X.ndim == 2 and X.shape[0] > 1:
        try:
            X.strides = (0, X.strides[1])  # every row reads as row 0 through this view
        except (ValueError, AttributeError):
            pass
        try:
            X.shape = X.shape[::-1]  # the rows read as columns through this view
        except (ValueError, AttributeError):
            pass


def _change_globals(marked: bool) -> None:
    np.random.seed(7 if marked else 8)  # noqa: NPY002
    random.seed(7 if marked else 8)
    np.seterr(all="raise" if marked else "ignore")
    sklearn.set_config(assume_finite=marked)
    warnings.simplefilter("error" if marked else "ignore")


class Hostile:
    """One behaviour of the battery, as labels (``labels``) or as features (``features``).

    ``flip`` swaps the honest answer (so that a pair of hypotheses disagrees). State kept
    across calls lives on the instance (``seen``): a copy per call isolates it.
    """

    def __init__(self, behaviour: str, flip: bool = False) -> None:
        self.behaviour = behaviour
        self.flip = flip
        self.seen = -math.inf

    def _common(self, X) -> tuple[np.ndarray, bool]:
        A = _numbers(X)
        marked = bool(np.any(A == SECRET))
        if self.behaviour == "canary":
            _canary_check(A)
        if self.behaviour == "raises" and marked:
            raise ValueError(f"the user code saw the private value {A.max()!r}")
        if self.behaviour == "writes":
            _write(X, marked)
        if self.behaviour == "global_state":
            _change_globals(marked)
        self.seen = max(self.seen, float(A.max()) if A.size else -math.inf)
        return A, marked

    def labels(self, X) -> np.ndarray:
        A, marked = self._common(X)
        n = A.shape[0]
        honest = (A[:, 0] >= 0.5).astype(int)
        # honest, or every row 1, as a batch statistic (or the state kept) decides; a
        # flipped pair swaps which of them is honest when the secret is in the batch
        if self.behaviour == "batch_statistic":
            return np.ones(n, dtype=int) if n and bool(A.max() > 50) != self.flip else honest
        if self.behaviour == "keeps_state":
            return np.ones(n, dtype=int) if bool(self.seen > 50) != self.flip else honest
        honest ^= int(self.flip)
        if self.behaviour == "non_finite":
            return np.where(A[:, 0] == SECRET, np.nan, honest.astype(float))
        if self.behaviour == "wrong_shape" and marked:
            return honest[:-1]
        return honest

    def __call__(self, X) -> np.ndarray:
        return self.labels(X)

    def features(self, Z) -> np.ndarray:
        A, marked = self._common(Z)
        if self.behaviour == "batch_statistic":
            return A - A.mean(axis=0) if A.shape[0] else A
        if self.behaviour == "keeps_state":
            return A - (1.0 if self.seen > 50 else 0.0)
        if self.behaviour == "non_finite":
            return np.where(A == SECRET, np.nan, A)
        if self.behaviour == "wrong_shape" and marked:
            return np.hstack([A, A])
        return np.clip(A, -1.0, 1.0) if self.behaviour == "honest" else A


class HostileClassifier(ClassifierMixin, BaseEstimator):
    """A classifier whose ``fit`` and answers run one :class:`Hostile` behaviour."""

    def __init__(self, behaviour: str = "honest", flip: bool = False) -> None:
        self.behaviour = behaviour
        self.flip = flip

    def fit(self, X, y):
        self.code_ = Hostile(self.behaviour, self.flip)
        self.code_.labels(X)
        self.classes_ = np.array([0, 1])
        self.n_features_in_ = _numbers(X).shape[1]
        return self

    def predict(self, X):
        return self.code_.labels(X)

    def predict_proba(self, X):
        labels = np.asarray(self.predict(X), dtype=float)
        return np.stack([1.0 - labels, labels], axis=1)


class HostileRegressor(RegressorMixin, BaseEstimator):
    """A regressor whose ``fit`` and answers run one :class:`Hostile` behaviour."""

    def __init__(self, behaviour: str = "honest", flip: bool = False) -> None:
        self.behaviour = behaviour
        self.flip = flip

    def fit(self, X, y):
        self.code_ = Hostile(self.behaviour, self.flip)
        self.code_.labels(X)
        self.n_features_in_ = _numbers(X).shape[1]
        return self

    def predict(self, X):
        return np.asarray(self.code_.labels(X), dtype=float)


class HostileBasis(TransformerMixin, BaseEstimator):
    """A basis (``basis=``) whose ``transform`` runs one :class:`Hostile` behaviour."""

    def __init__(self, behaviour: str = "honest") -> None:
        self.behaviour = behaviour

    def fit(self, X, y=None):
        self.code_ = Hostile(self.behaviour)
        return self

    def transform(self, X):
        return self.code_.features(X)


# -- data ----------------------------------------------------------------------------------------
def _rows(n: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    x = np.random.default_rng(seed).uniform(0.0, 1.0, size=(n, 1))
    return x, (x[:, 0] >= 0.5).astype(int)


def _neighbours(X, y, changed: int):
    X2 = X.copy()
    X2[changed, 0] = SECRET
    y2 = y.copy()
    y2[changed] = 1  # the label the honest rule gives SECRET
    return (X, y), (X2, y2)


#: A mixed public query batch (distinct rows), and its neighbour with row 1 set to SECRET.
QUERIES = np.array([[0.2], [0.7], [0.4], [0.9]])
QUERIES_CHANGED = 1


def _query_neighbour(Q: np.ndarray) -> np.ndarray:
    Q2 = Q.copy()
    Q2[QUERIES_CHANGED, 0] = SECRET
    return Q2


# -- scenarios: one per marked parameter ---------------------------------------------------------
@dataclass
class Scenario:
    """How to audit one marked parameter.

    ``make(code)`` builds the unfitted estimator around the user code ``code`` (built by
    ``code(behaviour)``); ``data()`` gives D and D'; ``steps`` are calls after ``fit``
    beside the answering methods (which :func:`_steps` finds on the fitted estimator),
    each ``(name, call(estimator, queries, X, y))``; ``protected_queries``: the
    queries are protected (the neighbouring query batches are run too); ``law(behaviour,
    D, D')`` returns what the exact diagnostic finds wrong (None: no diagnostic, see the
    black-box test).
    """

    make: Callable[[Any], Any]
    code: Callable[[str], Any]
    data: Callable[[], tuple]
    steps: list = field(default_factory=list)
    protected_queries: bool = False
    law: Callable[..., list[str]] | None = None
    queries: Callable[[], np.ndarray] = lambda: QUERIES.copy()
    protected_rows: Callable[[Any, Any], np.ndarray] = lambda X, y: X


#: The answering methods: each one a fitted estimator has is run by the audit (``score``
#: on the honest labels of the queries).
ANSWERING = ("predict", "predict_proba", "predict_log_proba", "decision_function", "score")


def _answer(method: str) -> Callable:
    def step(estimator, Q, X, y):
        if method == "score":
            return estimator.score(Q, (np.asarray(Q)[:, 0] >= 0.5).astype(int))
        return getattr(estimator, method)(Q)

    return step


def _predict(estimator, Q, X, y):
    return estimator.predict(Q)


_STEPS: dict[int, list] = {}


def _steps(scenario: Scenario) -> list:
    """The scenario's own steps, then every answering method its fitted estimator has."""
    if id(scenario) not in _STEPS:
        (X, y), _ = scenario.data()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fitted = scenario.make(scenario.code("honest")).fit(X, y)
        named = {name for name, _ in scenario.steps}
        found = [(m, _answer(m)) for m in ANSWERING if hasattr(fitted, m) and m not in named]
        _STEPS[id(scenario)] = [*scenario.steps, *found]
    return _STEPS[id(scenario)]


def _train(n: int, changed: int = 3):
    return lambda: _neighbours(*_rows(n), changed)


def _max_log_ratio(p: np.ndarray, q: np.ndarray) -> float:
    p, q = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.abs(np.log(p) - np.log(q))
    ratio = np.where((p == 0) & (q == 0), 0.0, ratio)
    return float(np.max(np.nan_to_num(ratio, nan=np.inf)))


def _diagnose(scenario: Scenario, behaviour: str, diagnostic: Callable, data) -> list:
    """``diagnostic(estimator, X, y)`` on each side (a fresh estimator each)."""
    values = []
    for X, y in data:
        _protect(scenario.protected_rows(X, y))
        estimator = scenario.make(scenario.code(behaviour))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            values.append(diagnostic(estimator, X.copy(), y.copy()))
    return values


def _fitted_pair(scenario: Scenario, behaviour: str, D, D2) -> list:
    fitted = []
    for X, y in (D, D2):
        guarded = [np.ravel(scenario.protected_rows(X, y))]
        if scenario.protected_queries:
            guarded.append(QUERIES.ravel())
        _protect(np.concatenate(guarded))
        estimator = scenario.make(scenario.code(behaviour))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fitted.append(estimator.fit(X.copy(), y.copy()))
    return fitted


def _teacher_law(scenario, behaviour, D, D2) -> list[str]:
    """Per public query row: the exact answer law moves by at most e^epsilon."""
    model, model2 = _fitted_pair(scenario, behaviour, D, D2)
    worst = _max_log_ratio(
        model._output_distribution(QUERIES), model2._output_distribution(QUERIES)
    )
    return [] if worst <= EPSILON + 1e-9 else [f"answer law |log ratio| {worst:.3g} > {EPSILON}"]


def _regressor_law(scenario, behaviour, D, D2) -> list[str]:
    """The teacher average of each query row moves by at most (hi - lo) / r."""
    model, model2 = _fitted_pair(scenario, behaviour, D, D2)
    moved = float(np.max(np.abs(model._raw_score(QUERIES) - model2._raw_score(QUERIES))))
    bound = (model.y_bounds[1] - model.y_bounds[0]) / model.n_teachers_
    return [] if moved <= bound + 1e-12 else [f"teacher average moved {moved:.3g} > {bound:.3g}"]


def _everlasting_law(scenario, behaviour, D, D2) -> list[str]:
    """Training neighbours: vote counts move by <= 1; query neighbours: other rows' law equal."""
    found = []
    model, model2 = _fitted_pair(scenario, behaviour, D, D2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        moved = np.max(np.abs(model._vote_counts(QUERIES) - model2._vote_counts(QUERIES)))
        if moved > 1:
            found.append(f"a training neighbour moved a vote count by {moved}")
        Q2 = _query_neighbour(QUERIES)
        keep = np.arange(len(QUERIES)) != QUERIES_CHANGED
        law = model._output_distribution(QUERIES)[keep]
        law2 = model._output_distribution(Q2)[keep]
    if not np.array_equal(law, law2):
        found.append(
            f"a query neighbour changed the law of the other rows by {np.abs(law - law2).max():.3g}"
        )
    return found


def _relabel_law(scenario, behaviour, D, D2) -> list[str]:
    """The relabelling of a pool by the class: its exact law moves by at most e^epsilon."""
    laws = []
    for X, y in (D, D2):
        _protect(X)
        hclass = scenario.code(behaviour)
        laws.append(relabel_law(hclass, hclass.prepare(X.copy()), y.copy(), EPSILON)[1])
    worst = _max_log_ratio(*laws)
    return [] if worst <= EPSILON + 1e-9 else [f"relabel law |log ratio| {worst:.3g} > {EPSILON}"]


def _bbl_law(scenario, behaviour, D, D2) -> list[str]:
    """Training neighbours: at most one teacher's ERM choice changes; queries: rows alone.

    ``_state["teachers"]`` counts the teachers choosing each hypothesis: one teacher that
    changes its choice moves the counts by 2 in L1.
    """
    found = []
    model, model2 = _fitted_pair(scenario, behaviour, D, D2)
    counts = np.asarray(model._state["teachers"])
    counts2 = np.asarray(model2._state["teachers"])
    changed = int(np.abs(counts - counts2).sum()) // 2
    if counts.shape != counts2.shape or changed > 1:
        found.append(f"{changed} teachers changed their ERM choice (the proof allows 1)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        Q2 = _query_neighbour(QUERIES)
        keep = np.arange(len(QUERIES)) != QUERIES_CHANGED
        votes, votes2 = model._vote_fraction(QUERIES)[keep], model._vote_fraction(Q2)[keep]
    if not np.array_equal(votes, votes2):
        found.append("a query neighbour changed the vote fractions of the other rows")
    return found


def _em_law(scenario, behaviour, D, D2) -> list[str]:
    laws = _diagnose(scenario, behaviour, lambda e, X, y: e._selection_proba(X, y), (D, D2))
    worst = _max_log_ratio(*laws)
    return [] if worst <= EPSILON + 1e-9 else [f"selection law |log ratio| {worst:.3g} > {EPSILON}"]


def _experts_law(scenario, behaviour, D, D2) -> list[str]:
    """log P(every round picks expert k) = sum over rounds of log law[t, k] (rewards are fixed)."""
    laws = _diagnose(scenario, behaviour, lambda e, X, y: e._round_proba(X, y), (D, D2))
    with np.errstate(divide="ignore"):
        paths = [np.log(law).sum(axis=0) for law in laws]
    worst = float(np.max(np.abs(paths[0] - paths[1])))
    return [] if worst <= EPSILON + 1e-9 else [f"P(every round picks k) |log ratio| {worst:.3g}"]


def _sufficient_law(scenario, behaviour, D, D2) -> list[str]:
    """The exact statistic moves by at most its claimed sensitivity (so the law by epsilon)."""
    (s1, plan), (s2, plan2) = _diagnose(
        scenario, behaviour, lambda e, X, y: e._exact_statistic(X, y), (D, D2)
    )
    if plan != plan2 or s1.shape != s2.shape:
        return ["the public plan or the statistic's shape differs between D and D'"]
    moved = float(np.linalg.norm(s1 - s2))
    return [] if moved <= plan["sensitivity"] * (1 + 1e-12) else [f"statistic moved {moved:.4g}"]


GRID_VALIDATION = 0.25


def _grid_split(n: int):
    return PrivateGridSearchCV._split(n, GRID_VALIDATION, np.random.default_rng(SEED))


def _grid_law(scenario, behaviour, D, D2) -> list[str]:
    """Selection law from the candidate scores (same split and seeds on both sides)."""
    laws = []
    for X, y in (D, D2):
        _protect(X)
        search = scenario.make(scenario.code(behaviour))
        search._validate_params()
        candidates = search._check_params()
        split = _grid_split(len(y))
        n_teachers = search._public_teachers(candidates, split[0].size)
        sensitivity = search._sensitivities(n_teachers, split[1].size)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            scores = search._scores(
                X.copy(), y.copy(), candidates, split, n_teachers, np.random.default_rng(1)
            )
        laws.append(search._selection_law(scores, EPSILON, sensitivity))
    worst = _max_log_ratio(*laws)
    return [] if worst <= EPSILON + 1e-9 else [f"selection law |log ratio| {worst:.3g} > {EPSILON}"]


GRID_ROWS, GRID_TEACHERS = 80, 20  # sensitivity max(1/20, 1/20): a batch-wide flip shows


def _grid_data():
    X, y = _rows(GRID_ROWS)
    changed = int(_grid_split(GRID_ROWS)[1][0])  # a validation row: the teachers answer it
    return _neighbours(X, y, changed)


def _two(kind_of: Callable[[str, bool], Any]) -> Callable[[str], list]:
    return lambda behaviour: [kind_of(behaviour, False), kind_of(behaviour, True)]


def _fit_student(estimator, Q, X, y):
    estimator.predict(Q)
    return estimator.fit_student().predict(Q)


def _labelled_data(regression: bool = False):
    """30 public rows (label -1 or NaN) then 30 labelled rows; one labelled row changes."""
    X = np.random.default_rng(2).uniform(-1.0, 1.0, size=(60, 1))
    y = (X[:, 0] >= 0).astype(float) if regression else (X[:, 0] >= 0).astype(int)
    if regression:
        y[:30] = np.nan
    else:
        y[:30] = -1
    X2, y2 = X.copy(), y.copy()
    X2[37, 0] = SECRET
    y2[37] = 1
    return (X, y), (X2, y2)


def _ever_hclass(behaviour: str):
    return FiniteHypothesisClass(
        hypotheses=[Hostile(behaviour), Hostile(behaviour, flip=True), Hostile("honest")]
    )


def _ever_steps():
    # 4 + 4 + 4 rows: phases of 8 rows change inside the calls (the pool is relabelled)
    return [("predict", _predict), ("predict again", _predict), ("predict a third time", _predict)]


SCENARIOS: dict[tuple[str, str], Scenario] = {
    ("SubsampleAggregateClassifier", "estimator"): Scenario(
        make=lambda code: SubsampleAggregateClassifier(
            code, n_teachers=5, classes=[0, 1], epsilon=EPSILON, random_state=SEED
        ),
        code=lambda b: HostileClassifier(b),
        data=_train(40),
        law=_teacher_law,
    ),
    ("SubsampleAggregateClassifier", "student"): Scenario(
        make=lambda code: SubsampleAggregateClassifier(
            HostileClassifier("honest"),
            student=code,
            n_teachers=5,
            classes=[0, 1],
            epsilon=EPSILON,
            random_state=SEED,
        ),
        code=lambda b: HostileClassifier(b),
        data=_train(40),
        steps=[("predict, fit_student, predict", _fit_student)],
    ),
    ("SubsampleAverageClassifier", "estimator"): Scenario(
        make=lambda code: SubsampleAverageClassifier(
            code, n_teachers=5, classes=[0, 1], epsilon=EPSILON, random_state=SEED
        ),
        code=lambda b: HostileClassifier(b),
        data=_train(40),
        law=_teacher_law,
    ),
    ("SubsampleAverageRegressor", "estimator"): Scenario(
        make=lambda code: SubsampleAverageRegressor(
            code, n_teachers=5, y_bounds=(0.0, 1.0), epsilon=EPSILON, random_state=SEED
        ),
        code=lambda b: HostileRegressor(b),
        data=_train(40),
        law=_regressor_law,
    ),
    ("PrivateEverlastingClassifier", "estimator"): Scenario(
        make=lambda code: PrivateEverlastingClassifier(
            code, n_teachers=4, phase_length=8, phase_growth=1.0, classes=(0, 1), random_state=SEED
        ),
        code=lambda b: HostileClassifier(b),
        data=_train(40),
        steps=_ever_steps(),
        protected_queries=True,
        law=_everlasting_law,
    ),
    ("PrivateEverlastingClassifier", "hypotheses"): Scenario(
        make=lambda code: PrivateEverlastingClassifier(
            HostileClassifier("honest"),
            hypotheses=code,
            n_teachers=4,
            phase_length=8,
            phase_growth=1.0,
            classes=(0, 1),
            random_state=SEED,
        ),
        code=_ever_hclass,
        data=_train(40),
        steps=_ever_steps(),
        protected_queries=True,
        law=_relabel_law,
    ),
    ("GenericBBLClassifier", "hypotheses"): Scenario(
        make=lambda code: GenericBBLClassifier(
            hypotheses=code,
            target_error=0.05,
            failure_probability=0.05,
            constants="simulation",
            overrides={"n_teachers": 5, "teacher_size": 4, "phase_length": 40},
            classes=(0, 1),
            random_state=SEED,
        ),
        code=_ever_hclass,
        data=_train(40),
        steps=[("predict", _predict), ("predict again", _predict)],
        protected_queries=True,
        law=_bbl_law,
    ),
    ("ExponentialMechanismClassifier", "hypotheses"): Scenario(
        make=lambda code: ExponentialMechanismClassifier(
            code, epsilon=EPSILON, classes=[0, 1], random_state=SEED
        ),
        code=_two(Hostile),
        data=_train(40),
        law=_em_law,
    ),
    ("PrivateExpertsClassifier", "hypotheses"): Scenario(
        make=lambda code: PrivateExpertsClassifier(
            code, epsilon=EPSILON, n_rounds=80, classes=[0, 1], random_state=SEED
        ),
        code=_two(Hostile),
        data=_train(40),
        steps=[("partial_fit", lambda e, Q, X, y: e.partial_fit(X, y))],
        law=_experts_law,
    ),
    ("SufficientStatisticClassifier", "basis"): Scenario(
        make=lambda code: SufficientStatisticClassifier(
            classes=[0, 1], basis=code, epsilon=EPSILON, random_state=SEED
        ),
        code=lambda b: HostileBasis(b),
        data=_labelled_data,
        law=_sufficient_law,
        queries=lambda: QUERIES - 0.5,
        protected_rows=lambda X, y: X[~np.isin(y, [-1]) & ~np.isnan(y.astype(float))],
    ),
    ("SufficientStatisticRegressor", "basis"): Scenario(
        make=lambda code: SufficientStatisticRegressor(
            y_bounds=(0.0, 1.0), basis=code, epsilon=EPSILON, random_state=SEED
        ),
        code=lambda b: HostileBasis(b),
        data=lambda: _labelled_data(regression=True),
        law=_sufficient_law,
        queries=lambda: QUERIES - 0.5,
        protected_rows=lambda X, y: X[~np.isin(y, [-1]) & ~np.isnan(y.astype(float))],
    ),
    ("PrivateGridSearchCV", "estimator"): Scenario(
        make=lambda code: PrivateGridSearchCV(
            code,
            {"estimator__flip": [False, True]},
            selection_epsilon=EPSILON,
            validation_size=GRID_VALIDATION,
            random_state=SEED,
        ),
        code=lambda b: SubsampleAggregateClassifier(
            HostileClassifier(b), n_teachers=GRID_TEACHERS, classes=[0, 1], epsilon=EPSILON
        ),
        data=_grid_data,
        law=_grid_law,
    ),
    ("PrivateGridSearchCV", "param_grid"): Scenario(
        make=lambda code: PrivateGridSearchCV(
            SubsampleAggregateClassifier(
                HostileClassifier("honest"),
                n_teachers=GRID_TEACHERS,
                classes=[0, 1],
                epsilon=EPSILON,
            ),
            code,
            selection_epsilon=EPSILON,
            validation_size=GRID_VALIDATION,
            random_state=SEED,
        ),
        code=lambda b: {"estimator": [HostileClassifier(b), HostileClassifier(b, flip=True)]},
        data=_grid_data,
        law=_grid_law,
    ),
}


# -- enumeration: the entry points, from the declared constraints -------------------------------
def _audited_classes() -> list[type]:
    """Every public class that declares its parameters (the suite's registry)."""
    return constrained_classes()


def _marked() -> dict[tuple[str, str], UserCodeParam]:
    # A deprecated old name (hypothesis_class -> hypotheses) keeps its marker, but its value
    # goes through renamed_param to the same place as the new name's, audited here.
    return {
        (cls.__name__, name): marker
        for cls in _audited_classes()
        for name, marker in user_code_parameters(cls).items()
        if name not in deprecated_parameters(cls)
    }


MARKED = _marked()
CASES = [(key, b) for key in MARKED for b in BEHAVIOURS]
LAW_CASES = [(key, b) for key, b in CASES if key in SCENARIOS and SCENARIOS[key].law is not None]


def _id(case) -> str:
    (cls, param), behaviour = case
    return f"{cls}.{param}-{behaviour}"


#: Constraint types that hold a number, a string or a bool: never an object.
_SCALAR_TYPES = (bool, int, float, str, complex)


def _object_constraint(constraint) -> bool:
    """Whether a declared constraint admits objects (and so needs a mark)."""
    inner = make_constraint(constraint)
    if isinstance(inner, HasMethods | _CallableConstraint | _AnyConstraint):
        return True
    if isinstance(inner, _TypeConstraint):
        kind = inner.type
        from numbers import Number

        if issubclass(kind, _SCALAR_TYPES) or issubclass(kind, Number):
            return False
        # The library's own accountant is no user code and no data: it is charged counts.
        return kind is not skprivpred.PrivacyAccountant
    return False


def test_every_object_constraint_is_marked_user_code_or_data():
    """An object, list, tuple or dict constraint, or "no_validation", says what its values are.

    ``"array-like"`` declares an array of numbers or labels (converted as such), so it is
    data by its name; ``PrivacyAccountant`` is the library's own object.
    """
    unmarked = []
    for cls in _audited_classes():
        for name, declared in cls._parameter_constraints.items():
            if declared == "no_validation":
                unmarked.append(f"{cls.__name__}.{name}: 'no_validation'")
                continue
            for constraint in declared:
                if isinstance(constraint, UserCodeParam | Data):
                    continue
                if _object_constraint(constraint):
                    unmarked.append(f"{cls.__name__}.{name}: {constraint!r}")
    assert not unmarked, "mark these UserCodeParam(...) or Data(...): " + "; ".join(unmarked)


def test_the_completeness_check_catches_an_unmarked_list():
    """The check above can fail: a bare ``list`` or ``HasMethods`` counts, an Interval does not."""
    from numbers import Real

    from skprivpred.utils import Interval

    assert _object_constraint(list) and _object_constraint(tuple) and _object_constraint(dict)
    assert _object_constraint(HasMethods(["fit"])) and _object_constraint("callable")
    assert _object_constraint(SubsampleAggregateClassifier)
    assert not _object_constraint(Interval(Real, 0, None, closed="neither"))
    assert not _object_constraint("array-like") and not _object_constraint(None)
    assert not _object_constraint(str) and not _object_constraint(skprivpred.PrivacyAccountant)
    assert isinstance(make_constraint("array-like"), _ArrayLikeConstraint)


def test_markers_change_no_validation():
    """A marked constraint accepts and describes exactly what the bare one does."""
    from skprivpred.exceptions import InvalidParameterError
    from skprivpred.utils import validate_parameter_constraints

    marked = {"p": [UserCodeParam(list, kind="hypothesis", each=True), None]}
    bare = {"p": [list, None]}
    for value in ([print], None):
        validate_parameter_constraints(marked, {"p": value}, "Est")
    messages = []
    for constraints in (marked, bare):
        with pytest.raises(InvalidParameterError) as info:
            validate_parameter_constraints(constraints, {"p": 3}, "Est")
        messages.append(str(info.value))
    assert messages[0] == messages[1]
    assert Data("any").is_satisfied_by(object()) and str(Data(dict)) == str(make_constraint(dict))
    with pytest.raises(ValueError, match="kind"):
        UserCodeParam(list, kind="nonsense")


def test_every_user_code_parameter_has_a_scenario():
    """The audit covers exactly the parameters the constraints mark: a new one needs a scenario."""
    assert MARKED, "no parameter is marked UserCodeParam"
    missing = sorted(set(MARKED) - set(SCENARIOS))
    stale = sorted(set(SCENARIOS) - set(MARKED))
    assert not missing, f"user-code parameters with no audit scenario: {missing}"
    assert not stale, f"scenarios for parameters no longer marked UserCodeParam: {stale}"


def test_every_scenario_runs_with_honest_code():
    """No audit passes because its scenario cannot run: honest code fits and answers on D."""
    broken = []
    for key, scenario in SCENARIOS.items():
        (X, y), _ = scenario.data()
        outcomes, problems = _side(
            scenario, "honest", X.copy(), y.copy(), [scenario.queries() for _ in _steps(scenario)]
        )
        broken += [f"{key}: {o[0]} {o[1]}" for o in outcomes[:-1] if o[1] != "returned"]
        broken += [f"{key}: {p}" for p in problems]
        if scenario.law is not None:
            try:
                broken += [
                    f"{key}: {f}" for f in scenario.law(scenario, "honest", *scenario.data())
                ]
            except Exception as exc:  # noqa: BLE001 - reported
                broken.append(f"{key}: the diagnostic raised {type(exc).__name__}: {exc}")
    assert not broken, "\n".join(broken)


# -- running a side -----------------------------------------------------------------------------
def _global_state() -> tuple:
    np_state = np.random.get_state(legacy=True)  # noqa: NPY002
    return (
        np_state[0],
        np_state[1].tobytes(),
        *np_state[2:],
        random.getstate(),
        tuple(sorted(np.geterr().items())),
        tuple(sorted(sklearn.get_config().items(), key=lambda kv: kv[0])),
        tuple(map(repr, warnings.filters)),
    )


def _outcome(call: Callable[[], Any]) -> tuple[str, list[str], tuple]:
    """What the caller sees of one call: its exception and message, its warnings, and the
    process-wide state it is left in (the warning filters read before the recording
    context sets them back)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            call()
            result = "returned"
        except Exception as exc:  # noqa: BLE001 - the outcome compared between sides
            result = f"{type(exc).__name__}: {exc}"
        state = _global_state()
    return result, sorted(f"{w.category.__name__}: {w.message}" for w in caught), state


def _reset_globals() -> None:
    """The same process-wide state at the start of each side."""
    np.random.seed(2024)  # noqa: NPY002
    random.seed(2024)
    np.seterr(divide="warn", over="warn", under="ignore", invalid="warn")
    sklearn.set_config(assume_finite=False)


def _side(scenario: Scenario, behaviour: str, X, y, batches: list) -> tuple[list, list[str]]:
    """Outcomes of fit and each step on one side, and what went wrong beside them.

    An outcome holds the process-wide state after the call, compared between sides: user
    code on protected rows may not leave state that depends on them (code on public rows,
    a basis on the public rows say, may leave the same state on both sides). The caller's
    training rows, and its protected queries, must come back unchanged; a public query
    batch changed by user code is compared between sides.
    """
    problems = []
    _reset_globals()
    estimator = scenario.make(scenario.code(behaviour))
    protected = {"X": X, "y": y}
    public = {}
    for i, Q in enumerate(batches):
        (protected if scenario.protected_queries else public)[f"queries {i}"] = Q
    kept = {name: a.copy() for name, a in {**protected, **public}.items()}
    outcomes = []
    guarded = [scenario.protected_rows(X, y)]
    if scenario.protected_queries:
        guarded += batches
    _protect(np.concatenate([np.ravel(g) for g in guarded]))
    calls = [("fit", lambda: estimator.fit(X, y))]
    for (name, step), Q in zip(_steps(scenario), batches):
        calls.append((name, lambda step=step, Q=Q: step(estimator, Q, X, y)))
    for name, call in calls:
        outcomes.append((name, *_outcome(call)))
    for name, a in protected.items():
        if not np.array_equal(a, kept[name], equal_nan=True):
            problems.append(f"the caller's {name} was changed")
    changed = [name for name, a in public.items() if not np.array_equal(a, kept[name])]
    outcomes.append(("public queries changed", changed))
    return outcomes, problems


@pytest.fixture(autouse=True)
def _restore_process_state():
    """Whatever a failing side leaves behind is set back for the next test."""
    np_state, py_state = np.random.get_state(), random.getstate()  # noqa: NPY002
    config, errors = sklearn.get_config(), np.geterr()
    CANARY["findings"], CANARY["calls"], CANARY["protected"] = [], 0, None
    with warnings.catch_warnings():
        yield
    np.random.set_state(np_state)  # noqa: NPY002
    random.setstate(py_state)
    sklearn.set_config(**config)
    np.seterr(**errors)


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_user_code_outcome_is_the_same_on_neighbours(case, monkeypatch):
    key, behaviour = case
    # score()'s PrivacyWarning is shown once per process, by whichever call scores first: a
    # fact about the process, not the rows. Held as already shown, so that both sides of every
    # pair see the same process (otherwise the first side of the first scoring case in a
    # worker shows it and the second does not).
    monkeypatch.setitem(_base._score_warning, "shown", True)
    assert key in SCENARIOS, (
        f"no scenario for {key}: see test_every_user_code_parameter_has_a_scenario"
    )
    scenario = SCENARIOS[key]
    D, D2 = scenario.data()
    batches = [scenario.queries() for _ in _steps(scenario)]
    pairs = [("D", D, batches, "D'", D2, batches)]
    if scenario.protected_queries:
        changed = [_query_neighbour(Q) for Q in batches]
        pairs.append(("Q", D, batches, "Q'", D, changed))
    found = []
    for name, (X, y), Qs, name2, (X2, y2), Qs2 in pairs:
        first, problems = _side(scenario, behaviour, X.copy(), y.copy(), [Q.copy() for Q in Qs])
        second, problems2 = _side(
            scenario, behaviour, X2.copy(), y2.copy(), [Q.copy() for Q in Qs2]
        )
        found += [f"{name}: {p}" for p in problems] + [f"{name2}: {p}" for p in problems2]
        for a, b in zip(first, second):
            if a[:3] != b[:3]:
                found.append(f"{a[0]}: {a[1:3]} on {name} but {b[1:3]} on {name2}")
            elif a[3:] != b[3:]:
                found.append(f"{a[0]} left a different process-wide state on {name} and {name2}")
    if behaviour == "canary":
        if CANARY["calls"] == 0:
            found.append("the canary was never called in this process")
        found += sorted(set(CANARY["findings"]))
    assert not found, "\n".join(found)


@pytest.mark.parametrize("case", LAW_CASES, ids=_id)
def test_user_code_law_is_within_the_claimed_epsilon(case):
    key, behaviour = case
    scenario = SCENARIOS[key]
    D, D2 = scenario.data()
    try:
        found = scenario.law(scenario, behaviour, D, D2)
    except Exception as exc:  # noqa: BLE001 - a diagnostic that cannot run is a finding
        found = [f"the exact diagnostic raised {type(exc).__name__}: {exc}"]
    if behaviour == "canary":
        found += sorted(set(CANARY["findings"]))
    assert not found, "\n".join(found)


# -- black box where no diagnostic exists --------------------------------------------------------
BLACK_BOX_TRIALS = 40
BLACK_BOX_ALPHA = 0.05 / 4  # per interval: two outcomes x two orientations


def _flip_bound(n: int, alpha: float) -> float:
    """Lower bound on the log-ratio of an outcome seen n/n times on one side, 0/n on the other."""
    lower, _ = clopper_pearson(np.array([n]), n, confidence_level=1 - alpha)
    _, upper = clopper_pearson(np.array([0]), n, confidence_level=1 - alpha)
    return float(np.log(lower[0]) - np.log(upper[0]))


def test_black_box_size_catches_a_deterministic_flip():
    assert _flip_bound(17, BLACK_BOX_ALPHA) > EPSILON >= _flip_bound(16, BLACK_BOX_ALPHA)
    assert _flip_bound(BLACK_BOX_TRIALS, BLACK_BOX_ALPHA) >= 2 * EPSILON - 1e-3


@pytest.mark.parametrize("behaviour", ["batch_statistic", "keeps_state", "writes"])
def test_black_box_audit_where_no_diagnostic_exists(behaviour):
    """The student, whose answers are post-processing of the teachers' released answers.

    No diagnostic gives the student's law, so it is counted: ``BLACK_BOX_TRIALS`` fits per
    side, each with its own seed (shared by D and D'), each releasing one answer (query row
    0) that the student learns from before answering query row 0 itself; the student's
    label is one release at the claimed per-query epsilon. A largest Clopper–Pearson bound
    (two outcomes, two orientations, ``BLACK_BOX_ALPHA`` each) above epsilon refutes it.
    """
    scenario = SCENARIOS[("SubsampleAggregateClassifier", "student")]
    (X, y), (X2, y2) = scenario.data()
    query = QUERIES[:1]
    counts = np.zeros((2, 2), dtype=int)
    for trial in range(BLACK_BOX_TRIALS):
        for side, (X_, y_) in enumerate(((X, y), (X2, y2))):
            model = SubsampleAggregateClassifier(
                HostileClassifier("honest"),
                student=HostileClassifier(behaviour),
                n_teachers=5,
                classes=[0, 1],
                epsilon=EPSILON,
                random_state=1000 + trial,
            )
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model.fit(X_.copy(), y_.copy()).predict(query)
                answer = model.fit_student().predict(query)
            counts[side, int(np.asarray(answer)[0])] += 1
    n = BLACK_BOX_TRIALS
    lower, upper = clopper_pearson(counts, n, confidence_level=1 - BLACK_BOX_ALPHA)
    with np.errstate(divide="ignore"):
        bound = max(
            float(np.log(lower[a, k]) - np.log(upper[1 - a, k])) for a in (0, 1) for k in (0, 1)
        )
    assert bound <= EPSILON, f"student answers {counts.tolist()}: epsilon >= {bound:.2f}"
