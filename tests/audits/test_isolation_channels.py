"""One focused test per way a teacher's rows reached other teachers or the caller (issue 31).

Each test fails on the code before the fix; the class-wide audit with a zoo of
adversarial teachers lives in ``test_isolation.py``.
"""

import random
import threading
import warnings

import joblib
import numpy as np
import pandas as pd
import pytest
import sklearn
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.compose import ColumnTransformer, make_column_selector
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor
from sklearn.utils.metaestimators import available_if

from skprivpred import (
    PrivateEverlastingClassifier,
    SubsampleAggregateClassifier,
    SubsampleAverageClassifier,
    SubsampleAverageRegressor,
)
from skprivpred.preprocessing import PublicScaler


def _data(n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    return X, (X[:, 0] + X[:, 1] > 0).astype(int)


# Regression test: issue 31, item 1.
def test_teachers_never_write_the_callers_array_or_each_others_rows():
    X, y = _data()
    teacher = make_pipeline(StandardScaler(copy=False), DecisionTreeClassifier(max_depth=3))
    clf = SubsampleAverageClassifier(
        teacher, n_teachers=10, classes=[0, 1], epsilon=1.0, random_state=0
    ).fit(X, y)
    query = np.array([[0.5, 0.5], [-1.0, 2.0]])
    before = query.copy()
    votes, _ = clf._teacher_votes(query)
    clf.predict(query)
    np.testing.assert_array_equal(query, before)  # the caller's array comes back unchanged
    alone = [t.predict(before.copy()) for t in clf._teachers]  # each teacher on its own copy
    np.testing.assert_array_equal(votes, np.column_stack(alone))


# Regression test: issue 31, item 1.
def test_regressor_teachers_each_answer_their_own_copy():
    X, y = _data()
    teacher = make_pipeline(StandardScaler(copy=False), DecisionTreeRegressor(max_depth=3))
    reg = SubsampleAverageRegressor(
        teacher, n_teachers=10, y_bounds=(0.0, 1.0), random_state=0
    ).fit(X, y.astype(float))
    query = np.array([[0.5, 0.5], [-1.0, 2.0]])
    before = query.copy()
    average = reg._raw_score(query)
    np.testing.assert_array_equal(query, before)
    alone = np.mean([np.clip(t.predict(before.copy()), 0, 1) for t in reg._teachers], axis=0)
    np.testing.assert_allclose(average, alone)


# Regression test: issue 31, item 1.
def test_the_everlasting_pool_keeps_the_callers_rows():
    X, y = _data(n=300)
    teacher = make_pipeline(StandardScaler(copy=False), DecisionTreeClassifier(max_depth=2))
    clf = PrivateEverlastingClassifier(
        teacher, n_teachers=10, phase_length=100, classes=(0, 1), random_state=0
    ).fit(X, y)
    query = np.array([[0.5, 0.5]])
    clf.predict(query)
    np.testing.assert_array_equal(query, [[0.5, 0.5]])
    np.testing.assert_array_equal(clf._state["queries"][-1], [[0.5, 0.5]])


class _ProbaIfSmall(ClassifierMixin, BaseEstimator):
    """Offers predict_proba only if its block held no large value (decided by its rows)."""

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        self.small_ = bool(np.abs(X).max() < 100)
        return self

    def predict(self, X):
        return np.full(len(X), self.classes_[0])

    @available_if(lambda self: getattr(self, "small_", True))
    def predict_proba(self, X):
        return np.tile(np.full(len(self.classes_), 1.0 / len(self.classes_)), (len(X), 1))


# Regression test: issue 31, item 2.
def test_a_fitted_teachers_missing_method_is_its_fallback():
    X, y = _data()
    X[0, 0] = 1e4  # one row makes one teacher lose predict_proba
    clf = SubsampleAverageClassifier(
        _ProbaIfSmall(), base_output="proba", n_teachers=10, classes=[0, 1], random_state=0
    ).fit(X, y)
    query = np.zeros((3, 2))
    assert clf.predict(query).shape == (3,)
    assert clf.predict_proba(query).shape == (3, 2)
    np.testing.assert_allclose(clf._averages(query), 0.5)  # its fallback is uniform too


# Regression test: issue 31, item 3.
def test_no_dtype_read_from_the_training_rows_refuses_or_reaches_other_blocks():
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"age": rng.integers(18, 90, 300), "x": rng.normal(size=300)})
    y = (frame["x"] > 0).astype(int).to_numpy()
    # D: "age" numeric. A query with a string there is answered, never refused.
    clf = SubsampleAggregateClassifier(
        make_pipeline(OneHotEncoder(handle_unknown="ignore"), LogisticRegression()),
        n_teachers=5,
        classes=[0, 1],
        random_state=0,
    ).fit(frame, y)
    query = pd.DataFrame({"age": pd.Series(["unknown"], dtype=object), "x": [0.0]})
    assert clf.predict(query).shape == (1,)
    # D': one row holds "unknown"; the other teachers' blocks keep "age" numeric.
    changed = frame.astype({"age": object})
    changed.loc[0, "age"] = "unknown"
    numbers = ColumnTransformer(
        [("num", "passthrough", make_column_selector(dtype_include="number"))]
    )
    avg = SubsampleAverageClassifier(
        make_pipeline(numbers, LogisticRegression()), n_teachers=5, classes=[0, 1], random_state=0
    ).fit(changed, y)
    selected = [list(t[0].transformers_[0][2]) for t in avg._teachers]
    owner = next(j for j, part in enumerate(avg._partition) if 0 in part)
    assert selected[owner] == ["x"]
    assert all(cols == ["age", "x"] for j, cols in enumerate(selected) if j != owner)


# Regression test: issue 31, item 4.
@pytest.mark.parametrize("Estimator", [SubsampleAggregateClassifier, SubsampleAverageClassifier])
def test_the_stacked_vote_never_raises_or_warns_on_overflow(Estimator):
    X, y = _data()
    clf = Estimator(LogisticRegression(), n_teachers=20, classes=[0, 1], random_state=0)
    clf.fit(X, y)
    query = np.array([[1e308, -1e308], [1e308, 1e308]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(all="raise"):
            assert clf.predict(query).shape == (2,)


# Regression test: issue 31, item 5.
def test_teacher_warnings_never_reach_the_caller():
    rng = np.random.default_rng(0)
    X = rng.choice(["a", "b", "c"], size=(300, 1)).astype(object)
    X[0, 0] = "rare"  # one block has seen "rare"; the others warn about it
    y = rng.integers(0, 2, 300)
    clf = SubsampleAggregateClassifier(
        make_pipeline(OneHotEncoder(handle_unknown="warn"), LogisticRegression()),
        n_teachers=5,
        classes=[0, 1],
        random_state=0,
    ).fit(X, y)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf.predict(np.array([["rare"]], dtype=object))
    assert [str(w.message) for w in caught] == []


def _larger_column(X):
    """A callable column specification: resolved on each teacher's own block."""
    X = np.asarray(X, dtype=float)
    return [int(np.abs(X[:, 1]).max() > np.abs(X[:, 0]).max())]


# Regression test: issue 31, item 6.
def test_a_first_step_is_shared_only_when_every_teacher_resolved_the_same_columns():
    X, y = _data(n=200)
    X[:, 1] *= 0.1  # every block picks column 0 ...
    step = ColumnTransformer([("s", PublicScaler(), _larger_column)])

    def fit(X):
        return SubsampleAverageClassifier(
            make_pipeline(step, LogisticRegression()), n_teachers=5, classes=[0, 1], random_state=0
        ).fit(X, y)

    first_block = fit(X)._partition[0]
    X[first_block[0], 1] = 1e3  # ... except the first teacher's block
    clf = fit(X)
    query = np.array([[2.0, -2.0], [-2.0, 2.0], [1.0, 1.0]])
    votes, _ = clf._teacher_votes(query)
    np.testing.assert_array_equal(votes, np.column_stack([t.predict(query) for t in clf._teachers]))


class _Recorder(ClassifierMixin, BaseEstimator):
    """Records the configuration it fits under; a marked block changes process-wide state."""

    seen: list = []

    def fit(self, X, y):
        _Recorder.seen.append(
            (
                sklearn.get_config()["skip_parameter_validation"],
                sklearn.get_config()["assume_finite"],
                np.geterr()["over"],
                np.random.random(),  # noqa: NPY002
            )
        )
        if np.abs(X).max() > 100:  # the marked block leaves state changed
            sklearn.set_config(assume_finite=True)
            np.seterr(over="raise")
            np.random.random(5)  # noqa: NPY002
        self.classes_ = np.unique(y)
        return self

    def predict(self, X):
        return np.full(len(X), self.classes_[0])


# Regression test: issue 31, item 7.
def test_every_teacher_fits_under_the_same_configuration(monkeypatch):
    monkeypatch.setattr(_Recorder, "seen", [])
    X, y = _data(n=1200)
    X[0, 0] = 1e4
    np.random.seed(0)  # noqa: NPY002 - the global state a teacher may use
    before = (sklearn.get_config(), np.geterr())
    SubsampleAggregateClassifier(_Recorder(), n_teachers=300, classes=[0, 1], random_state=0).fit(
        X, y
    )
    assert (sklearn.get_config(), np.geterr()) == before
    assert len(_Recorder.seen) > 250
    assert len(set(_Recorder.seen)) == 1  # validated, same config, same errstate, same draws


# -- One array object per teacher, the whole random state, the lock (issue 38) -------------
class _MetadataIfMarked(ClassifierMixin, BaseEstimator):
    """Votes ``x0 > 0``; on a block holding a marked row (``x1 > 100``) it then sets ``attr``.

    ``"strides"``: ``X.strides = (0, X.strides[1])`` (every row reads as the first);
    ``"shape"``: the shape reversed. On the same array object, every later teacher would see it.
    """

    def __init__(self, attr="strides"):
        self.attr = attr

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        self.marked_ = bool(np.any(np.asarray(X)[:, 1] > 100))
        return self

    def predict(self, X):
        labels = self.classes_[(np.asarray(X)[:, 0] > 0).astype(int)]
        if self.marked_:
            if self.attr == "strides":
                X.strides = (0, X.strides[1])
            else:
                X.shape = X.shape[::-1]
        return labels


def _marked_pair(n_teachers=8):
    """D (one row of the first teacher's block marked) and D' (that row ordinary)."""
    X, y = _data(n=400, seed=1)
    probe = SubsampleAggregateClassifier(
        _MetadataIfMarked(), n_teachers=n_teachers, classes=[0, 1], random_state=0
    ).fit(X, y)
    row = probe._partition[0][0]
    D, D2 = X.copy(), X.copy()
    D[row, 1] = 1e3
    return D, D2, y


QUERIES = np.array([[1.0, 0.0], [-1.0, 0.0], [-0.5, 0.3], [-2.0, 1.0], [-0.1, -1.0], [0.7, 0.2]])


# Regression test: issue 38, item 1.
@pytest.mark.parametrize("attr", ["strides", "shape"])
def test_each_teacher_is_handed_an_array_object_of_its_own(attr):
    D, D2, y = _marked_pair()
    counts = []
    for data in (D, D2):
        clf = SubsampleAggregateClassifier(
            _MetadataIfMarked(attr), n_teachers=8, classes=[0, 1], random_state=0
        ).fit(data, y)
        # (Before the fix "shape" made this raise IndexError on D only.)
        assert clf.predict(QUERIES).shape == (6,)
        counts.append(clf._ensemble.vote_counts(QUERIES)[:, 1])
    # Every teacher votes x0 > 0, the marked one too. Before the fix "strides" gave
    # [8, 0, 0, 0, 0, 8] on D' and [8, 7, 7, 7, 7, 8] on D: seven teachers moved.
    for seen in counts:
        np.testing.assert_array_equal(seen, 8 * (QUERIES[:, 0] > 0))


# Regression test: issue 38, item 1.
def test_a_handed_view_is_frozen_and_its_metadata_its_own():
    from skprivpred._teachers._isolation import freeze_rows, handed_rows, is_frozen

    X = freeze_rows(np.arange(12.0).reshape(4, 3))
    first, second, third = handed_rows(X), handed_rows(X), handed_rows(X)
    assert len({id(X), id(first), id(second), id(third)}) == 4
    assert is_frozen(first)
    with pytest.raises(ValueError):
        first.flags.writeable = True
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # numpy 2.4 deprecates it
        first.strides = (0, first.strides[1])
    second.shape = (3, 4)
    third.dtype = np.int64
    with pytest.raises(ValueError):
        third.flags.writeable = True
    for view in (first, second, third):
        assert is_frozen(view)
    np.testing.assert_array_equal(X, np.arange(12.0).reshape(4, 3))
    assert (X.shape, X.strides, X.dtype) == ((4, 3), (24, 8), np.float64)
    fourth = handed_rows(X)
    assert (fourth.shape, fourth.strides, fourth.dtype) == ((4, 3), (24, 8), np.float64)
    np.testing.assert_array_equal(fourth, np.arange(12.0).reshape(4, 3))
    np.testing.assert_array_equal(first[:, 0], [0.0] * 4)  # each view as its teacher left it


class _GaussLeaver(ClassifierMixin, BaseEstimator):
    """Votes ``x0 + standard_normal() > 0`` (numpy's legacy global state).

    On a marked block it then sets the global state back to the words it found, with a
    cached Gaussian of 1e6: the next teacher's ``standard_normal()`` would return it.
    """

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        self.marked_ = bool(np.any(np.asarray(X)[:, 1] > 100))
        return self

    def predict(self, X):
        entry = np.random.get_state()  # noqa: NPY002 - the global state, on purpose
        z = np.random.standard_normal()  # noqa: NPY002
        if self.marked_:
            np.random.set_state((*entry[:3], 1, 1e6))  # noqa: NPY002
        return self.classes_[(np.asarray(X)[:, 0] + 0.01 * z > 0).astype(int)]


# Regression test: issue 38, item 2.
def test_a_cached_gaussian_left_by_a_teacher_is_cleared():
    D, D2, y = _marked_pair()
    counts = []
    for data in (D, D2):
        clf = SubsampleAggregateClassifier(
            _GaussLeaver(), n_teachers=8, classes=[0, 1], random_state=0
        ).fit(data, y)
        np.random.seed(0)  # noqa: NPY002
        counts.append(clf._ensemble.vote_counts(QUERIES)[:, 1])
    # Every teacher votes x0 > 0 (0.01 z moves no query across). Before the fix the teacher
    # after the marked one drew 1e6 on D and voted 1 on every row: [8, 1, 1, 1, 1, 8].
    for seen in counts:
        np.testing.assert_array_equal(seen, 8 * (QUERIES[:, 0] > 0))


# Regression test: issue 38, item 2.
@pytest.mark.parametrize("cached", [False, True])
def test_the_whole_global_random_state_is_restored(cached):
    from skprivpred._teachers._isolation import teacher_call

    np.random.seed(3)  # noqa: NPY002
    if cached:
        np.random.standard_normal()  # noqa: NPY002 - leaves a Gaussian cached
    random.seed(3)
    random.gauss(0.0, 1.0)  # leaves Python's gauss_next set
    before_numpy, before_python = np.random.get_state(), random.getstate()  # noqa: NPY002
    for has_gauss, gauss in [(1, 1e6), (0, 2.5), (1, 0.0)]:
        with teacher_call():
            np.random.set_state((*before_numpy[:3], has_gauss, gauss))  # noqa: NPY002
            random.setstate((*before_python[:2], 7.0))
        after = np.random.get_state()  # noqa: NPY002
        assert after[2:] == before_numpy[2:]
        np.testing.assert_array_equal(after[1], before_numpy[1])
        assert random.getstate() == before_python


# Regression test: issue 38, item 2.
def test_numpy_clears_a_cached_gaussian_when_the_bit_generator_is_set():
    """The fast restore relies on it: ``set_bit_generator`` resets numpy's cached Gaussian."""
    state = np.random.get_state()  # noqa: NPY002
    try:
        np.random.set_state((*state[:3], 1, 0.5))  # noqa: NPY002
        np.random.set_bit_generator(np.random.get_bit_generator())
        after = np.random.get_state()  # noqa: NPY002
        assert after[3:] == (0, 0.0)
        assert after[2] == state[2]
        np.testing.assert_array_equal(after[1], state[1])
    finally:
        np.random.set_state(state)  # noqa: NPY002


class _Seeder(ClassifierMixin, BaseEstimator):
    """On a marked block, ``predict_proba`` seeds numpy's global state, then waits.

    It waits (a ``threading.Event``, at most 1 s) until another thread reads Python's random
    state, as the snapshot of a run of teachers does: before the fix, the snapshot of a fit
    started meanwhile in another thread was taken outside the teachers' lock, so it always
    held this teacher's state, and that fit restored it after each of its teachers.
    """

    events: dict = {}

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        self.marked_ = bool(np.any(np.asarray(X)[:, 1] > 100))
        return self

    def predict_proba(self, X):
        if self.marked_:
            np.random.seed(12345)  # noqa: NPY002
            me, original = threading.get_ident(), random.getstate

            def watched():
                if threading.get_ident() != me:
                    _Seeder.events["snapped"].set()
                return original()

            random.getstate = watched
            _Seeder.events["running"].set()
            try:
                _Seeder.events["snapped"].wait(1.0)
            finally:
                random.getstate = original
        return np.full((len(X), 2), 0.5)

    def predict(self, X):
        return np.full(len(X), self.classes_[0])


# Regression test: issue 38, item 3.
def test_the_callers_next_draw_after_fit_is_its_own(monkeypatch):
    events = {"running": threading.Event(), "snapped": threading.Event()}
    monkeypatch.setattr(_Seeder, "events", events)
    X, y = _data(n=400, seed=1)

    def averaging():
        return SubsampleAverageClassifier(
            _Seeder(), base_output="proba", n_teachers=4, classes=[0, 1], random_state=0
        )

    D = X.copy()
    D[averaging().fit(X, y)._partition[-1][0], 1] = 1e3  # the last teacher's block is marked
    answering = averaging().fit(D, y)
    X2, y2 = _data(n=200, seed=2)

    def fit():  # started in the other joblib thread while the marked teacher answers
        events["running"].wait(10.0)
        SubsampleAggregateClassifier(
            DecisionTreeClassifier(max_depth=2), n_teachers=4, classes=[0, 1], random_state=0
        ).fit(X2, y2)

    np.random.seed(0)  # noqa: NPY002
    expected = np.random.RandomState(0).random_sample()
    joblib.Parallel(n_jobs=2, backend="threading")(
        [joblib.delayed(answering.predict_proba)(X[:3]), joblib.delayed(fit)()]
    )
    assert events["running"].is_set()
    # Before the fix: the value after np.random.seed(12345), which the marked block decided.
    assert np.random.random() == expected  # noqa: NPY002


# Regression test: issue 38, item 3.
def test_a_process_state_is_taken_only_under_the_teachers_lock():
    from skprivpred._teachers._isolation import ProcessState, teacher_call, teacher_run

    with pytest.raises(RuntimeError, match="WARNINGS_LOCK"):
        ProcessState()
    with teacher_run() as state:
        with teacher_call(state):
            pass
    with pytest.raises(RuntimeError, match="hold of WARNINGS_LOCK"):
        with teacher_call(state):  # taken in an earlier hold of the lock: stale
            pass
