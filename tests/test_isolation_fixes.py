"""One focused test per way a teacher's rows reached other teachers or the caller (issue 31).

Each test fails on the code before the fix; the class-wide audit with a zoo of
adversarial teachers lives in ``test_teacher_isolation.py``.
"""

import warnings

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


def test_1_teachers_never_write_the_callers_array_or_each_others_rows():
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


def test_1_regression_teachers_each_answer_their_own_copy():
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


def test_1_the_everlasting_pool_keeps_the_callers_rows():
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


def test_2_a_fitted_teachers_missing_method_is_its_fallback():
    X, y = _data()
    X[0, 0] = 1e4  # one row makes one teacher lose predict_proba
    clf = SubsampleAverageClassifier(
        _ProbaIfSmall(), base_output="proba", n_teachers=10, classes=[0, 1], random_state=0
    ).fit(X, y)
    query = np.zeros((3, 2))
    assert clf.predict(query).shape == (3,)
    assert clf.predict_proba(query).shape == (3, 2)
    np.testing.assert_allclose(clf._averages(query), 0.5)  # its fallback is uniform too


def test_3_no_dtype_read_from_the_training_rows_refuses_or_reaches_other_blocks():
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


@pytest.mark.parametrize("Estimator", [SubsampleAggregateClassifier, SubsampleAverageClassifier])
def test_4_the_stacked_vote_never_raises_or_warns_on_overflow(Estimator):
    X, y = _data()
    clf = Estimator(LogisticRegression(), n_teachers=20, classes=[0, 1], random_state=0)
    clf.fit(X, y)
    query = np.array([[1e308, -1e308], [1e308, 1e308]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(all="raise"):
            assert clf.predict(query).shape == (2,)


def test_5_teacher_warnings_never_reach_the_caller():
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


def test_6_a_first_step_is_shared_only_when_every_teacher_resolved_the_same_columns():
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


def test_7_every_teacher_fits_under_the_same_configuration(monkeypatch):
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
