"""Teacher isolation: one changed training row changes one teacher, and nothing else (DESIGN 1.10).

The privacy proofs of every teacher-based estimator assume that replacing one training row
changes at most one teacher's output. This audit looks for the whole class of bugs that break
that assumption from the side: a teacher whose rows reach what *other* teachers compute, or
what the caller sees. A zoo of adversarial teachers a user could write (one that writes into
its input, one whose attributes depend on its block, one that warns depending on its block,
one with huge finite coefficients, one that changes process-wide state and leaves it changed,
one whose fit fails on a marked block, one that draws from the global random state, a
``ColumnTransformer`` with a callable selector, a teacher that relies on scikit-learn's
parameter validation, a pandas column whose dtype one row decides, teachers that set the
``strides``, ``shape`` or ``dtype`` of the array they are handed, one that leaves a cached
Gaussian in numpy's global state) is run through every teacher-taking estimator and its query
methods, on neighbouring data sets D and D' that differ in one row, with the same seed (so the
same partition). Spies record what every teacher is handed (the bytes, dtype and shape of its
rows) and the configuration it fits and answers under. Per pair:

(a) every teacher other than the changed one (teachers are matched by the bytes of the block
    they are fitted on) is handed bit-identical rows, in the same calls, and fits and answers
    under the same configuration (numpy's error state, scikit-learn's config, the global
    random states);
(b) the caller sees the same exceptions and warnings on D and D' (in ``fit`` and in every
    query call, under the default floating-point error state and under ``over="raise"``),
    and the same global random states after each, and gets its arrays back unchanged;
(c) every matched teacher gives the same output on D and D' (so at most the changed
    teacher's output differs).

The cases are grouped by the seven ways in which the issue found one teacher's rows reach
beyond it (ids ``c1`` to ``c7``), plus the other members of the zoo (``zoo``). The estimator x
method x teacher combinations are picked to cover each path once, not the full product.
On the code before the isolation fixes (main at e85b4f8) 33 of these 35 tests failed, at
least two per case ``c1`` to ``c7``; the two that passed are the ``zoo-*-fails`` cases (a
failing fit already became a constant teacher).

Issue 38 added three more ways (``i38-1`` to ``i38-3``): every teacher was handed the same
array object, whose metadata a teacher can set (``X.strides = (0, X.strides[1])``, a new
``shape`` or ``dtype``) for every teacher after it, also in the retries of the fallback
bisection (the metadata teachers refuse any block holding a huge value, so every answer is
bisected); a cached Gaussian left in numpy's global state was not restored; and the state
restored after a run of teachers was snapshotted outside the teachers' lock, so under the
threading backend it could be another thread's teacher's state
(:func:`test_a_shared_snapshot_is_never_taken_while_another_threads_teacher_runs`, made
deterministic by a :class:`threading.Event` inside the racing teacher).
"""

from __future__ import annotations

import hashlib
import random
import threading
import warnings
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import joblib
import numpy as np
import pandas as pd
import pytest
import sklearn
from scipy import sparse
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, clone
from sklearn.compose import ColumnTransformer, make_column_selector, make_column_transformer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import MinMaxScaler, OneHotEncoder, StandardScaler
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor
from sklearn.utils.metaestimators import available_if

from skprivpred import (
    PrivateEverlastingClassifier,
    PrivateGridSearchCV,
    SubsampleAggregateClassifier,
    SubsampleAverageClassifier,
    SubsampleAverageRegressor,
)
from skprivpred.preprocessing import PublicScaler

SEED = 3
#: The marker: a block holding a row whose last column is at least MARK is "marked".
MARK = 999.0

# -- Spies ------------------------------------------------------------------------------------
#: What the spies saw during one run: ("fit", key, config) and ("call", key, method, rows,
#: config, output) events, in order. Teachers are fitted and asked in this process
#: (``n_jobs=None``), so the spies can write here.
_EVENTS: list[tuple] = []


def _digest(data) -> str:
    """A digest of the exact contents of an array, a sparse matrix or a DataFrame."""
    h = hashlib.sha256()
    if data is None:
        h.update(b"None")
    elif hasattr(data, "iloc") and hasattr(data, "dtypes"):
        h.update(repr([str(c) for c in data.columns]).encode())
        h.update(repr([str(d) for d in data.dtypes]).encode())
        h.update(pd.util.hash_pandas_object(data, index=False).to_numpy().tobytes())
    elif sparse.issparse(data):
        csr = sparse.csr_matrix(data)
        for part in (csr.data, csr.indices, csr.indptr):
            h.update(np.ascontiguousarray(part).tobytes())
        h.update(repr(csr.shape).encode())
    else:
        array = np.asarray(data)
        h.update(f"{array.dtype.str}{array.shape}".encode())
        if array.dtype == object:
            h.update(repr(array.tolist()).encode())
        else:
            h.update(np.ascontiguousarray(array).tobytes())
    return h.hexdigest()[:16]


def _config() -> tuple:
    """The process-wide configuration a teacher runs under (what a teacher can change)."""
    state = np.random.get_state()  # noqa: NPY002 - the global state is what is watched
    return (
        tuple(sorted(np.geterr().items())),
        tuple(sorted((k, repr(v)) for k, v in sklearn.get_config().items())),
        _digest(state[1]) + str(state[2:]),
        hashlib.sha256(repr(random.getstate()).encode()).hexdigest()[:16],
    )


def _note_fit(teacher, X, y) -> None:
    teacher.spy_key_ = _digest(X) + _digest(y)
    _EVENTS.append(("fit", teacher.spy_key_, _config(), _marked(X)))


def _note_call(teacher, method: str, X, answer: Callable[[], Any]):
    """Record the rows ``teacher`` is handed (before it can touch them), then answer."""
    rows, config = _digest(X), _config()
    try:
        output = answer()
    except Exception as exc:
        _EVENTS.append(("call", teacher.spy_key_, method, rows, config, type(exc).__name__))
        raise
    _EVENTS.append(("call", teacher.spy_key_, method, rows, config, _digest(output)))
    return output


def _marked(X) -> bool:
    """Whether a block holds a marked row (its last column at least MARK)."""
    values = X.to_numpy() if hasattr(X, "to_numpy") else X
    if sparse.issparse(values):
        values = values.toarray()
    try:
        return bool(np.any(np.asarray(values[:, -1], dtype=float) >= MARK))
    except (TypeError, ValueError):
        return False


def _spied(method: str):
    def call(self, X):
        return _note_call(self, method, X, lambda: getattr(self.estimator_, method)(X))

    call.__name__ = method
    return call


def _inner_has(method: str):
    return lambda self: hasattr(self.estimator, method)


class SpyClassifier(ClassifierMixin, BaseEstimator):
    """Wraps a classifier: records the rows it is handed and the configuration it runs under."""

    def __init__(self, estimator=None) -> None:
        self.estimator = estimator

    def fit(self, X, y):
        _note_fit(self, X, y)
        self.estimator_ = clone(self.estimator).fit(X, y)
        self.classes_ = self.estimator_.classes_
        return self

    predict = _spied("predict")
    predict_proba = available_if(_inner_has("predict_proba"))(_spied("predict_proba"))
    decision_function = available_if(_inner_has("decision_function"))(_spied("decision_function"))


class SpyRegressor(RegressorMixin, BaseEstimator):
    """Wraps a regressor: records the rows it is handed and the configuration it runs under."""

    def __init__(self, estimator=None) -> None:
        self.estimator = estimator

    def fit(self, X, y):
        _note_fit(self, X, y)
        self.estimator_ = clone(self.estimator).fit(X, y)
        return self

    predict = _spied("predict")


# -- The zoo ----------------------------------------------------------------------------------
def _numbers(X) -> np.ndarray:
    values = X.to_numpy() if hasattr(X, "to_numpy") else X
    return np.asarray(values.toarray() if sparse.issparse(values) else values, dtype=float)


#: The metadata a teacher can set on a read-only array it is handed.
METADATA = ("strides", "shape", "dtype")
#: A metadata teacher refuses any batch holding a value above this (QUERIES holds 1e200).
HUGE = 1e100


def _set_metadata(X, what: str) -> None:
    """Set ``what`` of the array ``X`` in place: what a teacher can do to a read-only array."""
    if not isinstance(X, np.ndarray) or X.ndim != 2:
        return
    try:
        if what == "strides":
            X.strides = (0, X.strides[1])  # every row now reads as the first
        elif what == "shape":
            X.shape = X.shape[::-1]
        else:
            X.dtype = np.dtype(f"i{X.dtype.itemsize}")
    except Exception:  # noqa: BLE001 - an adversary answers anyway
        pass


def _draw_gauss(marked: bool, cached: float) -> float:
    """A legacy Gaussian draw; a marked teacher then leaves ``cached`` as numpy's cached one."""
    entry = np.random.get_state()  # noqa: NPY002 - the global state, on purpose
    z = float(np.random.standard_normal())  # noqa: NPY002
    if marked:  # the words it found, with a Gaussian cached for whoever draws next
        np.random.set_state((*entry[:3], 1, cached))  # noqa: NPY002
    return z


class _Zoo(BaseEstimator):
    """A teacher a user could write, misbehaving as ``behaviour`` says on a marked block.

    ``"scribble"``: writes block-dependent values into the rows it is handed (it first tries
    to make them writeable, and answers whatever happens). ``"attrs"``: on a marked block it
    has no ``predict_proba`` and no ``decision_function``. ``"warns"``: warns in ``fit`` and
    ``predict`` on a marked block. ``"state"``: on a marked block, ``fit`` and every answer
    change numpy's error state and scikit-learn's config and leave them changed.
    ``"fails"``: ``fit`` raises on a marked block. ``"global_rng"``: every fit and every
    answer draws from numpy's and Python's global random states, a marked block's twice.
    ``"validated"``: ``fit`` raises on a marked block; other blocks call a validated
    scikit-learn helper with a data-derived (invalid) argument and answer whether it was
    refused. ``"strides"``, ``"shape"``, ``"dtype"``: on a marked block, ``fit`` and every
    answer set that attribute of the array they are handed (``X.strides = (0, X.strides[1])``,
    the shape reversed, the dtype an integer one of the same size), after computing their
    own output; every block of these refuses (raises on) a batch holding a value above
    ``HUGE``, so each answer to ``QUERIES`` goes through the fallback bisection's retries.
    ``"gauss"``: every fit and answer draws a legacy ``np.random.standard_normal()``; on a
    marked block it then sets numpy's global state back to its words at entry, with a cached
    Gaussian (``set_state((..., has_gauss=1, gauss=v))``).
    """

    def __init__(self, behaviour: str = "plain") -> None:
        self.behaviour = behaviour

    def fit(self, X, y):
        _note_fit(self, X, y)
        marked = _marked(X)
        values = _numbers(X)
        self.threshold_ = float(np.median(values[:, 0]))
        self.offset_ = float(np.mean(values[:, -1]))  # moves with the changed row
        self.level_ = float(np.mean(np.asarray(y, dtype=float)))
        behaviour = self.behaviour
        if behaviour in ("fails", "validated") and marked:
            raise ValueError("this block cannot be fitted")
        if behaviour == "warns" and marked:
            warnings.warn("a warning only a marked block gives", UserWarning, stacklevel=2)
        if behaviour == "state" and marked:
            np.seterr(over="raise", divide="raise", invalid="raise")
            sklearn.set_config(assume_finite=True, transform_output="default")
        if behaviour == "global_rng":
            if marked:
                np.random.random()  # noqa: NPY002 - the global state, on purpose
                random.random()
            self.threshold_ += np.random.normal() + random.gauss(0.0, 1.0)  # noqa: NPY002
        if behaviour == "validated":
            try:
                # `normalize` must be a boolean: validation refuses a float.
                accuracy_score(y, y, normalize=float(np.mean(values[:, 0])))
            except ValueError:  # scikit-learn's InvalidParameterError
                self.threshold_ += 1.0
        if behaviour == "gauss":
            self.threshold_ += _draw_gauss(marked, 1e3 + self.offset_)
        if behaviour in METADATA and marked:
            _set_metadata(X, behaviour)
        self.marked_ = marked
        return self

    def _respond(self, X, output: Callable[[np.ndarray], Any]):
        """``output(score)`` after the side effects; a metadata teacher refuses huge values."""
        huge = self.behaviour in METADATA and bool(np.any(np.abs(_numbers(X)) > HUGE))
        score = self._score(X)
        self._side_effects(X)
        if huge:  # after its side effects: the library retries on halves, down to single rows
            raise ValueError("a value too large for this teacher")
        return output(score)

    def _side_effects(self, X) -> None:
        if self.behaviour == "scribble":
            offset = self.offset_
            try:
                if isinstance(X, np.ndarray):
                    base = X
                    while isinstance(base.base, np.ndarray):
                        base = base.base
                    for array in (base, X):
                        try:
                            array.flags.writeable = True
                        except ValueError:
                            pass
                    X[:, 0] += offset
                elif hasattr(X, "iloc"):
                    X.iloc[:, 0] = X.iloc[:, 0] + offset
            except Exception:  # noqa: BLE001 - an adversary answers anyway
                pass
        if self.behaviour == "warns" and self.marked_:
            warnings.warn("a warning only a marked block gives", UserWarning, stacklevel=2)
        if self.behaviour == "state" and self.marked_:
            np.seterr(over="raise", divide="raise", invalid="raise")
            sklearn.set_config(assume_finite=True)
        if self.behaviour in METADATA and self.marked_:
            _set_metadata(X, self.behaviour)

    def _score(self, X) -> np.ndarray:
        score = _numbers(X)[:, 0] - self.threshold_
        if self.behaviour == "global_rng":  # every answer draws, a marked block's twice
            if self.marked_:
                random.random()
                np.random.random()  # noqa: NPY002 - the global state, on purpose
            score = score + np.random.normal() + random.gauss(0.0, 1.0)  # noqa: NPY002
        if self.behaviour == "gauss":
            score = score + _draw_gauss(self.marked_, 1e3 + self.offset_)
        return score


class ZooClassifier(ClassifierMixin, _Zoo):
    def fit(self, X, y):
        super().fit(X, y)
        self.classes_ = np.unique(y)
        return self

    def predict(self, X):
        def output(score):
            return self.classes_[(score > 0).astype(int) % len(self.classes_)]

        return _note_call(self, "predict", X, lambda: self._respond(X, output))

    def _has_scores(self) -> bool:
        return not (self.behaviour == "attrs" and getattr(self, "marked_", False))

    def _proba(self, X):
        def output(score):
            p = 1.0 / (1.0 + np.exp(-np.clip(score, -50, 50)))
            proba = np.zeros((len(p), len(self.classes_)))
            proba[:, -1] = p
            proba[:, 0] += 1.0 - p
            return proba

        return self._respond(X, output)

    @available_if(_has_scores)
    def predict_proba(self, X):
        return _note_call(self, "predict_proba", X, lambda: self._proba(X))

    @available_if(_has_scores)
    def decision_function(self, X):
        return _note_call(self, "decision_function", X, lambda: self._proba(X)[:, -1] - 0.5)


class ZooRegressor(RegressorMixin, _Zoo):
    def predict(self, X):
        def output(score):
            return np.clip(score, -3.0, 3.0) + self.level_

        return _note_call(self, "predict", X, lambda: self._respond(X, output))


class HugeLogisticRegression(LogisticRegression):
    """A logistic regression whose coefficients are huge (finite) on a marked block."""

    def fit(self, X, y, sample_weight=None):
        _note_fit(self, X, y)
        super().fit(X, y, sample_weight=sample_weight)
        if _marked(X):
            self.coef_ = self.coef_ * 1e200
        return self


class ShyLogisticRegression(LogisticRegression):
    """A logistic regression that has no ``coef_`` (the lookup raises) on a marked block."""

    def fit(self, X, y, sample_weight=None):
        _note_fit(self, X, y)
        super().fit(X, y, sample_weight=sample_weight)
        self.shy_ = _marked(X)  # after the fit, which reads coef_ itself
        return self

    @property
    def coef_(self):
        if self.__dict__.get("shy_", False):
            raise AttributeError("coef_")
        return self.__dict__["_coef"]

    @coef_.setter
    def coef_(self, value) -> None:
        self.__dict__["_coef"] = value


def pick_by_marker(X) -> list[int]:
    """A callable column selector: the column it picks depends on the block it is fitted on."""
    return [0] if _marked(X) else [1]


# -- Data -------------------------------------------------------------------------------------
N_ROWS = 200
QUERIES = np.array([[0.3, -0.2, 0.0], [1e200, 0.5, 0.0], [-0.4, 0.9, 0.0], [2.0, -1.5, 0.0]])


def _numeric(n: int = N_ROWS, regression: bool = False):
    """Rows (x0, x1, marker column 0) and labels (or targets) of x0 + x1."""
    rng = np.random.default_rng(11)
    X = rng.normal(size=(n, 3))
    X[:, 2] = rng.uniform(-1.0, 1.0, n)
    score = X[:, 0] + X[:, 1]
    y = np.clip(score, -3.0, 3.0) if regression else (score > 0).astype(int)
    return X, y


def _neighbours(X, row: int):
    """D (row ``row`` marked) and D' (that row with an ordinary marker value instead)."""
    D, D2 = X.copy(), X.copy()
    D[row, -1] = MARK + 1.0
    D2[row, -1] = 0.25
    return D, D2


def _row_of_block(make: Callable[[], Any], X, y, block: int) -> int:
    """A training row in teacher ``block``'s part (the partition depends on the seed only)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        probe = make().fit(X, y)
    return int(probe._partition[block][0])


def _row_of_first_teacher(make: Callable[[], Any], X, y) -> int:
    """A training row of the first teacher fitted (found by marking rows until it is marked)."""
    for row in range(X.shape[0]):
        _EVENTS.clear()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            make().fit(_neighbours(X, row)[0], y)
        first = next(event for event in _EVENTS if event[0] == "fit")
        _EVENTS.clear()
        if first[3]:
            return row
    raise AssertionError("no row of the first teacher's block found")


# -- Running a pair ---------------------------------------------------------------------------
@dataclass
class Run:
    """What the caller saw (per step) and what the spies saw, on one data set."""

    caller: list = field(default_factory=list)
    fits: dict = field(default_factory=lambda: defaultdict(list))
    calls: dict = field(default_factory=lambda: defaultdict(list))


def _warning_list(caught) -> list:
    return [(w.category.__name__, str(w.message)) for w in caught]


def _random_states() -> tuple:
    """The caller's global random states (numpy's whole legacy state, and Python's)."""
    return _config()[2:]


def _observe(make, X, y, queries: list, methods: tuple, errstate: dict, backend=None) -> Run:
    """Fit on (X, y) and ask every query through every method; restore the process after."""
    if backend is not None:
        with joblib.parallel_config(backend=backend):
            return _observe(make, X, y, queries, methods, errstate)
    run = Run()
    saved_err, saved_config = np.geterr(), sklearn.get_config()
    np.random.seed(0)  # noqa: NPY002 - the global state the teachers may read
    random.seed(0)
    X_before = _digest(X)
    _EVENTS.clear()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                estimator = make().fit(X, y)
                outcome = "fitted"
            except Exception as exc:  # noqa: BLE001 - what the caller sees is compared
                estimator, outcome = None, type(exc).__name__
        run.caller.append(
            ("fit", outcome, _warning_list(caught), _random_states(), _digest(X) == X_before)
        )
        for q, query in enumerate(queries):
            for method in methods:
                if estimator is None or not hasattr(estimator, method):
                    run.caller.append((method, q, "not offered"))
                    continue
                before = _digest(query)
                with warnings.catch_warnings(record=True) as caught, np.errstate(**errstate):
                    warnings.simplefilter("always")
                    try:
                        getattr(estimator, method)(query)
                        outcome = "answered"
                    except Exception as exc:  # noqa: BLE001 - compared between D and D'
                        outcome = type(exc).__name__
                unchanged = _digest(query) == before
                states = _random_states()
                run.caller.append((method, q, outcome, _warning_list(caught), states, unchanged))
    finally:
        np.seterr(**saved_err)
        sklearn.set_config(**saved_config)
    for event in _EVENTS:
        if event[0] == "fit":
            run.fits[event[1]].append(event[2])
        else:
            run.calls[event[1]].append(event[2:])
    _EVENTS.clear()
    return run


def _assert_isolated(D: Run, D2: Run, spied: bool = True) -> None:
    """The three properties of the audit, with a message naming what differs."""
    # (b) the caller: same exceptions and warnings, arrays back unchanged.
    for seen, seen2 in zip(D.caller, D2.caller, strict=True):
        assert seen == seen2, (
            f"(b) the caller sees a difference between D and D': {seen} vs {seen2}"
        )
        if isinstance(seen[-1], bool):
            assert seen[-1], f"(b) the caller's array came back changed: {seen}"
    # (a) and (c): every teacher fitted on the same block on D and D' (all but the changed one).
    # Teachers are numbered in the order of their first fit on D.
    matched = [key for key in D.fits if key in D2.fits]
    assert matched or not spied, "(a) no teacher is handed the same training rows on D and D'"
    for key in matched:
        n = list(D.fits).index(key)
        assert D.fits[key] == D2.fits[key], (
            f"(a) teacher {n} (same block on D and D') fits under a different configuration"
        )
        calls, calls2 = D.calls[key], D2.calls[key]
        assert [c[:2] for c in calls] == [c[:2] for c in calls2], (
            f"(a) teacher {n} (same block on D and D') is handed different rows"
        )
        assert [c[2] for c in calls] == [c[2] for c in calls2], (
            f"(a) teacher {n} (same block on D and D') answers under a different configuration"
        )
        assert [c[3] for c in calls] == [c[3] for c in calls2], (
            f"(c) teacher {n} (same block on D and D') gives a different output"
        )


# -- The cases --------------------------------------------------------------------------------
@dataclass
class Case:
    """An estimator factory, a data set (X, y) with the row to change, queries and methods."""

    name: str
    make: Callable[[], Any]
    X: Any
    y: Any
    row: int | Callable[[], int] | None  # None: D and D' are given as X (a pair)
    queries: list
    methods: tuple
    spied: bool = True  # whether the teachers are spies (False: only the caller is watched)
    backend: str | None = None  # a joblib backend for the whole run (None: joblib's default)

    def pair(self):
        if self.row is None:
            return self.X
        row = self.row() if callable(self.row) else self.row
        return _neighbours(self.X, row)


CLASSIFIER_METHODS = ("predict", "predict_proba", "decision_function")


def _queries():
    return [QUERIES.copy(), QUERIES[1:2].copy()]


def _agg(teacher, n_teachers: int = 10, **params):
    return lambda: SubsampleAggregateClassifier(
        teacher, n_teachers=n_teachers, classes=[0, 1], epsilon=1.0, random_state=SEED, **params
    )


def _avg(teacher, output: str = "label", n_teachers: int = 10):
    return lambda: SubsampleAverageClassifier(
        teacher, base_output=output, n_teachers=n_teachers, classes=[0, 1], random_state=SEED
    )


def _reg(teacher, n_teachers: int = 10):
    return lambda: SubsampleAverageRegressor(
        teacher, n_teachers=n_teachers, y_bounds=(-3.0, 3.0), random_state=SEED
    )


def _ever(teacher):
    return lambda: PrivateEverlastingClassifier(
        teacher,
        n_teachers=4,
        phase_length=8,
        phase_growth=1.0,
        classes=(0, 1),
        random_state=SEED,
    )


SEARCH_METHODS = ("predict", "predict_proba")


def _search(estimator):
    return lambda: PrivateGridSearchCV(estimator, {"n_teachers": [8, 10]}, random_state=SEED)


def _ever_queries():
    # 4 + 1 + 4 + 1 rows per method: phases of 8 rows change inside the calls.
    return _queries() * 2


def _cases() -> list[Case]:
    X, y = _numeric()
    Xr, yr = _numeric(regression=True)
    X7, y7 = _numeric(n=512)
    X7r, y7r = _numeric(n=512, regression=True)
    cases = []

    def add(name, make, data, row, methods, queries=None):
        cases.append(Case(name, make, *data, row, queries or _queries(), methods))

    # 1. Teachers write into the rows they are handed.
    scaler_tree = SpyClassifier(make_pipeline(StandardScaler(copy=False), DecisionTreeClassifier()))
    add("c1-aggregate-scaler_copy_false", _agg(scaler_tree, 20), (X, y), 5, ("predict",))
    add(
        "c1-average_regressor-scaler_copy_false",
        _reg(SpyRegressor(make_pipeline(StandardScaler(copy=False), DecisionTreeRegressor()))),
        (Xr, yr),
        5,
        ("predict",),
    )
    add(
        "c1-average_proba-scribble",
        _avg(ZooClassifier("scribble"), "proba"),
        (X, y),
        5,
        CLASSIFIER_METHODS,
    )
    make1e = _ever(ZooClassifier("scribble"))
    add(
        "c1-everlasting-scribble",
        make1e,
        (X, y),
        lambda: _row_of_first_teacher(make1e, X, y),
        ("predict",),
        _ever_queries(),
    )
    add(
        "c1-search-scribble",
        _search(SubsampleAggregateClassifier(ZooClassifier("scribble"), classes=[0, 1])),
        (X, y),
        5,
        SEARCH_METHODS,
    )
    frame = pd.DataFrame(X, columns=["a", "b", "m"])
    frame2 = frame.copy()
    frame.loc[5, "m"], frame2.loc[5, "m"] = MARK + 1.0, 0.25
    add(
        "c1-aggregate-frame-scribble",
        _agg(ZooClassifier("scribble")),
        (None, y),
        None,
        ("predict",),
        [pd.DataFrame(QUERIES, columns=["a", "b", "m"])],
    )
    cases[-1].X = (frame, frame2)

    # 2. An attribute of a fitted teacher depends on its block.
    add(
        "c2-average_proba-attrs",
        _avg(ZooClassifier("attrs"), "proba"),
        (X, y),
        5,
        CLASSIFIER_METHODS,
    )

    # ... and one that has no `coef_` on its block, read when the teachers are stacked.
    add("c2-aggregate-shy_coef", _agg(ShyLogisticRegression()), (X, y), 5, ("predict",))
    add(
        "c2-everlasting-shy_coef",
        _ever(ShyLogisticRegression()),
        (X, y),
        5,
        ("predict",),
        _ever_queries(),
    )

    # 3. A dtype inferred from the rows used as a schema: one row of D' holds a string.
    age = np.round(np.random.default_rng(4).uniform(20, 70, N_ROWS)).astype(object)
    people = pd.DataFrame({"age": age.astype(float), "x": X[:, 0]})
    people2 = people.copy()
    people2["age"] = people2["age"].astype(object)
    people2.loc[7, "age"] = "unknown"
    numbers = make_column_transformer(
        (StandardScaler(), make_column_selector(dtype_include="number"))
    )
    query = pd.DataFrame({"age": pd.Series(["unknown"], dtype=object), "x": [0.1]})
    for name, make in [
        ("aggregate", _agg(SpyClassifier(make_pipeline(numbers, LogisticRegression())))),
        (
            "average_regressor",
            _reg(SpyRegressor(make_pipeline(numbers, DecisionTreeRegressor(max_depth=3)))),
        ),
    ]:
        target = y if name == "aggregate" else yr
        add(f"c3-{name}-dtype_from_rows", make, (None, target), None, ("predict",), [query])
        cases[-1].X = (people, people2)

    # 4. The library's stacked linear vote overflows depending on the weights.
    add(
        "c4-aggregate-huge_coef",
        _agg(HugeLogisticRegression()),
        (X, y),
        5,
        ("predict", "predict_proba"),
    )
    add("c4-average_label-huge_coef", _avg(HugeLogisticRegression()), (X, y), 5, CLASSIFIER_METHODS)
    add(
        "c4-everlasting-huge_coef",
        _ever(HugeLogisticRegression()),
        (X, y),
        5,
        ("predict",),
        _ever_queries(),
    )
    add(
        "c4-search-huge_coef",
        _search(SubsampleAverageClassifier(HugeLogisticRegression(), classes=[0, 1])),
        (X, y),
        5,
        SEARCH_METHODS,
    )

    # The same through the library's own stacked product, with an exact LogisticRegression:
    # a pipeline folded into the stacked weights, whose scaler gives the weight 1e12 to a
    # column that only the changed row moves (a range of 1e-12 on D, none on D').
    tiny, tiny2 = X.copy(), X.copy()
    tiny[:, 2] = tiny2[:, 2] = 0.0
    tiny[5, 2] = 1e-12
    q4 = QUERIES[:1].copy()
    q4[0, 2] = 1e300
    folded = _agg(make_pipeline(MinMaxScaler(), LogisticRegression()))
    add("c4-aggregate-folded_huge_weight", folded, (None, y), None, ("predict",), [q4])
    cases[-1].X, cases[-1].spied = (tiny, tiny2), False  # a spy would not be folded

    # 5. Teacher warnings count teachers.
    Xc = X.copy()
    category = np.where(np.arange(N_ROWS) % 2 == 0, 0.0, 1.0)
    Xc[:, 1] = category
    encoded = SpyClassifier(
        make_pipeline(
            make_column_transformer((OneHotEncoder(handle_unknown="warn"), [1])),
            LogisticRegression(),
        )
    )
    Dc, Dc2 = _neighbours(Xc, 5)
    Dc[5, 1] = 7.0  # a category only the changed block holds on D
    q5 = QUERIES[:1].copy()
    q5[0, 1] = 7.0
    add("c5-aggregate-onehot_warn", _agg(encoded), (None, y), None, ("predict",), [q5])
    cases[-1].X = (Dc, Dc2)
    add("c5-average_regressor-warns", _reg(ZooRegressor("warns")), (Xr, yr), 5, ("predict",))
    add(
        "c5-everlasting-warns",
        _ever(ZooClassifier("warns")),
        (X, y),
        5,
        ("predict",),
        _ever_queries(),
    )
    add(
        "c5-search-warns",
        _search(SubsampleAggregateClassifier(ZooClassifier("warns"), classes=[0, 1])),
        (X, y),
        5,
        SEARCH_METHODS,
    )

    # ... also from teachers fitted in joblib's threads (n_jobs=2, threading backend).
    add(
        "c5-aggregate-warns-threading",
        _agg(ZooClassifier("warns"), n_jobs=2),
        (X, y),
        5,
        ("predict",),
    )
    cases[-1].backend = "threading"

    # 6. A shared first step is the first teacher's: a callable selector resolved on its block.
    selected = Pipeline(
        [
            ("select", ColumnTransformer([("pick", PublicScaler(), pick_by_marker)])),
            ("spy", SpyClassifier(LogisticRegression())),
        ]
    )
    make6 = _agg(selected)
    add(
        "c6-aggregate-callable_selector",
        make6,
        (X, y),
        lambda: _row_of_block(make6, X, y, 0),
        ("predict",),
    )
    make6b = _avg(selected)
    add(
        "c6-average_label-callable_selector",
        make6b,
        (X, y),
        lambda: _row_of_block(make6b, X, y, 0),
        CLASSIFIER_METHODS,
    )

    # 7. Grouped fits share a validation flag (>= 128 teachers: two fits per joblib task).
    make7 = _agg(ZooClassifier("validated"), n_teachers=128)
    add(
        "c7-aggregate-validated_helper",
        make7,
        (X7, y7),
        lambda: _row_of_block(make7, X7, y7, 0),
        ("predict",),
    )
    make7r = _reg(ZooRegressor("validated"), n_teachers=128)
    add(
        "c7-average_regressor-validated_helper",
        make7r,
        (X7r, y7r),
        lambda: _row_of_block(make7r, X7r, y7r, 0),
        ("predict",),
    )

    # The rest of the zoo.
    add("zoo-aggregate-state", _agg(ZooClassifier("state")), (X, y), 5, ("predict",))
    add("zoo-average_regressor-state", _reg(ZooRegressor("state")), (Xr, yr), 5, ("predict",))
    add("zoo-average_label-fails", _avg(ZooClassifier("fails")), (X, y), 5, CLASSIFIER_METHODS)
    add(
        "zoo-everlasting-fails",
        _ever(ZooClassifier("fails")),
        (X, y),
        5,
        ("predict",),
        _ever_queries(),
    )
    add(
        "zoo-aggregate-global_rng",
        _agg(ZooClassifier("global_rng")),
        (X, y),
        5,
        ("predict", "predict_proba"),
    )
    add(
        "zoo-average_regressor-global_rng",
        _reg(ZooRegressor("global_rng")),
        (Xr, yr),
        5,
        ("predict",),
    )
    add("zoo-average_regressor-scribble", _reg(ZooRegressor("scribble")), (Xr, yr), 5, ("predict",))

    # Issue 38, 1. Teachers set the metadata of the array they are handed (every answer also
    # through the fallback bisection's retries), through every teacher-taking estimator.
    for what in METADATA:
        add(f"i38-1-aggregate-{what}", _agg(ZooClassifier(what)), (X, y), 5, CLASSIFIER_METHODS)
        add(f"i38-1-average_label-{what}", _avg(ZooClassifier(what)), (X, y), 5, CLASSIFIER_METHODS)
        add(
            f"i38-1-average_proba-{what}",
            _avg(ZooClassifier(what), "proba"),
            (X, y),
            5,
            CLASSIFIER_METHODS,
        )
        add(f"i38-1-average_regressor-{what}", _reg(ZooRegressor(what)), (Xr, yr), 5, ("predict",))
        make_ever = _ever(ZooClassifier(what))
        add(
            f"i38-1-everlasting-{what}",
            make_ever,
            (X, y),
            lambda make=make_ever: _row_of_first_teacher(make, X, y),
            ("predict",),
            _ever_queries(),
        )
        add(
            f"i38-1-search-{what}",
            _search(SubsampleAggregateClassifier(ZooClassifier(what), classes=[0, 1])),
            (X, y),
            5,
            SEARCH_METHODS,
        )

    # Issue 38, 2. A cached Gaussian left in numpy's global state (in fit and in answers).
    add("i38-2-aggregate-gauss", _agg(ZooClassifier("gauss")), (X, y), 5, CLASSIFIER_METHODS)
    add(
        "i38-2-average_proba-gauss",
        _avg(ZooClassifier("gauss"), "proba"),
        (X, y),
        5,
        CLASSIFIER_METHODS,
    )
    add("i38-2-average_regressor-gauss", _reg(ZooRegressor("gauss")), (Xr, yr), 5, ("predict",))
    add(
        "i38-2-everlasting-gauss",
        _ever(ZooClassifier("gauss")),
        (X, y),
        5,
        ("predict",),
        _ever_queries(),
    )
    add(
        "i38-2-search-gauss",
        _search(SubsampleAggregateClassifier(ZooClassifier("gauss"), classes=[0, 1])),
        (X, y),
        5,
        SEARCH_METHODS,
    )
    return cases


#: The caller's floating-point error state: numpy's default, and overflow raising (for the
#: cases where a floating-point error may arise: huge weights, a teacher changing the state).
ERRSTATES = {"default": {}, "over_raise": {"over": "raise"}}
PARAMS = [
    pytest.param(case, errstate, id=f"{case.name}-{errstate}")
    for case in _cases()
    for errstate in ERRSTATES
    if errstate == "default"
    or ("aggregate" in case.name and any(k in case.name for k in ("huge", "state")))
]


@pytest.mark.parametrize(("case", "errstate"), PARAMS)
def test_one_row_changes_one_teacher_and_nothing_else(case, errstate):
    D, D2 = case.pair()
    runs = [
        _observe(
            case.make,
            data,
            case.y,
            [q.copy() for q in case.queries],
            case.methods,
            ERRSTATES[errstate],
            case.backend,
        )
        for data in (D, D2)
    ]
    _assert_isolated(*runs, spied=case.spied)


# -- Issue 38, 3: a shared snapshot taken while another thread's teacher runs --------------
#: How long the racing teacher waits for another thread to snapshot the process state. The
#: wait ends at once when one does (the code before the fix); with the fix no thread can while
#: the teacher runs, and the teacher goes on after this timeout.
RACE_WAIT = 1.0
#: The racing teacher's events: ``running`` (it has seeded the states) and ``snapped``
#: (another thread read Python's random state meanwhile). Module-level: clones share them.
_RACE: dict[str, threading.Event] = {}


class RacingClassifier(ClassifierMixin, BaseEstimator):
    """On a marked block, ``predict_proba`` seeds the global random states, then waits.

    It waits (a :class:`threading.Event`) until another thread reads Python's random state
    (``random.getstate``, which it watches meanwhile), as a snapshot of the process state
    does, so that the interleaving the race needs happens every time, not one run in three.
    """

    def fit(self, X, y):
        _note_fit(self, X, y)
        self.classes_ = np.unique(y)
        self.marked_ = _marked(X)
        return self

    def _race(self) -> None:
        np.random.seed(12345)  # noqa: NPY002 - a state only this block's teacher leaves
        random.seed(12345)
        me, original = threading.get_ident(), random.getstate

        def watched():
            if threading.get_ident() != me:
                _RACE["snapped"].set()
            return original()

        random.getstate = watched
        _RACE["running"].set()
        try:
            _RACE["snapped"].wait(RACE_WAIT)
        finally:
            random.getstate = original

    def predict_proba(self, X):
        def answer():
            if self.marked_:
                self._race()
            return np.full((len(X), len(self.classes_)), 1.0 / len(self.classes_))

        return _note_call(self, "predict_proba", X, answer)

    def predict(self, X):
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]


def _other_thread(path: str, X, y, Xr, yr) -> Callable[[], Any]:
    """What the other thread does meanwhile: a path that snapshots the process state."""
    aggregate = dict(n_teachers=4, classes=[0, 1], random_state=SEED)
    if path == "fit":  # the snapshots of the fits and of the ensemble's reads
        return lambda: SubsampleAggregateClassifier(
            SpyClassifier(LogisticRegression()), **aggregate
        ).fit(X, y)
    if path == "votes":  # the snapshot of the votes counted by the teachers' own predict
        model = SubsampleAggregateClassifier(ZooClassifier(), **aggregate).fit(X, y)
        return lambda: model.predict(QUERIES)
    if path == "proba":  # the snapshot of the averaged probabilities
        model = SubsampleAverageClassifier(ZooClassifier(), base_output="proba", **aggregate).fit(
            X, y
        )
        return lambda: model.predict_proba(QUERIES)
    if path == "values":  # the snapshot of the averaged values
        model = SubsampleAverageRegressor(
            ZooRegressor(), n_teachers=4, y_bounds=(-3.0, 3.0), random_state=SEED
        ).fit(Xr, yr)
        return lambda: model.predict(QUERIES)
    assert path == "prefix"  # teacher_call's own snapshot (a shared public first step)
    model = SubsampleAggregateClassifier(
        make_pipeline(PublicScaler(), ZooClassifier()), **aggregate
    ).fit(X, y)
    return lambda: model.predict(QUERIES)


@pytest.mark.parametrize("path", ["fit", "votes", "proba", "values", "prefix"])
def test_a_shared_snapshot_is_never_taken_while_another_threads_teacher_runs(path):
    """Under joblib's threading backend, no thread restores another thread's teacher's state.

    Thread 1 asks for probabilities; its last teacher (of the marked block) seeds numpy's
    and Python's global random states and waits until thread 2, started meanwhile, takes a
    snapshot. Before the fix thread 2's snapshot, taken outside the teachers' lock, held
    that teacher's state: thread 2's teachers then ran, and left the caller, in a state
    that the marked block decided. Every teacher must fit and answer under the caller's
    configuration, and the caller's random states come back as they were.
    """
    X, y = _numeric()
    Xr, yr = _numeric(regression=True)
    _RACE.update(running=threading.Event(), snapped=threading.Event())
    running = _RACE["running"]

    def make():
        return SubsampleAverageClassifier(
            RacingClassifier(),
            base_output="proba",
            n_teachers=4,
            classes=[0, 1],
            random_state=SEED,
        )

    D, _ = _neighbours(X, _row_of_block(make, X, y, -1))  # the last teacher is the marked one
    racing = make().fit(D, y)
    other = _other_thread(path, X, y, Xr, yr)
    saved_err, saved_config = np.geterr(), sklearn.get_config()
    np.random.seed(0)  # noqa: NPY002 - the global state the teachers may read
    random.seed(0)
    caller = _config()
    _EVENTS.clear()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            joblib.Parallel(n_jobs=2, backend="threading")(
                [
                    joblib.delayed(racing.predict_proba)(QUERIES),
                    joblib.delayed(lambda: (running.wait(10 * RACE_WAIT), other()))(),
                ]
            )
        after = _config()
    finally:
        np.seterr(**saved_err)
        sklearn.set_config(**saved_config)
    seen = [event[2] if event[0] == "fit" else event[4] for event in _EVENTS]
    _EVENTS.clear()
    assert running.is_set()  # the race was run
    assert seen  # the spies saw the teachers of both threads
    for config in seen:  # scikit-learn's config and the global random states (not errstate)
        assert config[1:] == caller[1:], "a teacher ran under another thread's teacher's state"
    assert after[1:] == caller[1:], "the caller's state is another thread's teacher's"
