"""Rows the base estimator cannot read at all are refused before the charge (issue 41, item 1).

A raw DataFrame with a string column used to fit every teacher's fallback, and every
answer was the fallback label, charged. The dry run (skprivpred/_teachers/_dry_run.py) judges
from the queries and the public labels only, and refuses with the column and the fix.
"""

import warnings

import numpy as np
import pandas as pd
import pytest
from _registry import make_estimator
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.compose import make_column_transformer
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder

from skprivpred import (
    PrivacyAccountant,
    PrivateEverlastingClassifier,
    PrivateGridSearchCV,
    SubsampleAggregateClassifier,
    SubsampleAverageClassifier,
    SubsampleAverageRegressor,
    SufficientStatisticClassifier,
    SufficientStatisticRegressor,
)
from skprivpred.preprocessing import public_preprocessor


def _frame(n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(
        {
            "age": rng.integers(18, 80, n).astype(float),
            "workclass": rng.choice(["State-gov", "Private", "Self-emp"], n),
            "hours": rng.normal(40, 5, n),
        }
    )
    y = (X["age"] > 45).astype(int).to_numpy()
    return X, y


def _estimators():
    lr = LogisticRegression(max_iter=200)
    return {
        "aggregate": lambda acc: make_estimator(
            SubsampleAggregateClassifier,
            estimator=lr,
            classes=[0, 1],
            n_teachers=10,
            accountant=acc,
            random_state=None,
        ),
        "aggregate_many_queries": lambda acc: make_estimator(
            SubsampleAggregateClassifier,
            estimator=lr,
            classes=[0, 1],
            n_queries=100,
            total_epsilon=50.0,
            accountant=acc,
        ),
        "average_label": lambda acc: make_estimator(
            SubsampleAverageClassifier, estimator=lr, classes=[0, 1], n_teachers=10, accountant=acc
        ),
        "average_proba": lambda acc: make_estimator(
            SubsampleAverageClassifier,
            estimator=lr,
            classes=[0, 1],
            n_teachers=10,
            base_output="proba",
            accountant=acc,
        ),
        "average_regressor": lambda acc: make_estimator(
            SubsampleAverageRegressor,
            estimator=Ridge(),
            y_bounds=(0.0, 1.0),
            n_teachers=10,
            accountant=acc,
        ),
        "everlasting": lambda acc: make_estimator(
            PrivateEverlastingClassifier,
            estimator=lr,
            classes=[0, 1],
            n_teachers=20,
            phase_length=100,
            accountant=acc,
        ),
    }


@pytest.mark.parametrize("name", sorted(_estimators()))
def test_string_columns_are_refused_before_the_charge(name):
    X, y = _frame()
    accountant = PrivacyAccountant(epsilon=1e6)
    est = _estimators()[name](accountant)
    est.fit(X, y)  # fit says nothing: the training frame's dtypes are not public
    for _ in range(2):  # the second call is refused the same way (the verdict is kept)
        with pytest.raises(ValueError, match="cannot read column 'workclass'") as info:
            est.predict(X.iloc[:5])
        message = str(info.value)
        assert "public_preprocessor" in message and "OneHotEncoder" in message
        assert "nothing was charged" in message
    assert accountant.queries_answered == 0 and accountant.epsilon_spent == 0.0
    assert est.queries_answered_ == 0


def test_every_answering_method_is_checked():
    X, y = _frame()
    accountant = PrivacyAccountant(epsilon=1e6)
    clf = SubsampleAverageClassifier(LogisticRegression(), classes=[0, 1], accountant=accountant)
    clf.fit(X, y)
    for method in ("predict", "predict_proba", "decision_function", "score"):
        args = (X.iloc[:5], y[:5]) if method == "score" else (X.iloc[:5],)
        with pytest.raises(ValueError, match="cannot read column 'workclass'"):
            getattr(clf, method)(*args)
    assert accountant.queries_answered == 0


def test_grid_search_answers_are_checked():
    X, y = _frame()
    X_num = X.assign(workclass=X["workclass"].map({"State-gov": 0.0, "Private": 1.0}).fillna(2.0))
    search = PrivateGridSearchCV(
        SubsampleAggregateClassifier(LogisticRegression(), classes=[0, 1], n_teachers=10),
        {"n_teachers": [5, 10]},
        random_state=0,
    ).fit(X_num, y)
    with pytest.raises(ValueError, match="cannot read column 'workclass'"):
        search.predict(X.iloc[:5])


def test_an_encoder_inside_the_estimator_answers():
    X, y = _frame()
    encoder = make_column_transformer(
        (OneHotEncoder(handle_unknown="ignore"), ["workclass"]), remainder="passthrough"
    )
    accountant = PrivacyAccountant(epsilon=1e6)
    clf = SubsampleAggregateClassifier(
        make_pipeline(encoder, LogisticRegression(max_iter=500)),
        classes=[0, 1],
        n_teachers=10,
        accountant=accountant,
    ).fit(X, y)
    assert clf.predict(X.iloc[:5]).shape == (5,)
    assert accountant.queries_answered == 5


class _Recorder(ClassifierMixin, BaseEstimator):
    """Records every frame it is fitted on; fails (with a warning first) on string columns."""

    seen: list = []

    def fit(self, X, y):
        _Recorder.seen.append(X.copy())
        warnings.warn("the recorder's own warning", UserWarning, stacklevel=2)
        np.asarray(X, dtype=float)  # ValueError on a string column
        self.classes_ = np.unique(y)
        return self

    def predict(self, X):
        return np.full(len(X), self.classes_[0])


def test_the_dry_run_sees_no_query_value_and_says_nothing_itself(monkeypatch):
    X, y = _frame()
    monkeypatch.setattr(_Recorder, "seen", [])
    clf = SubsampleAggregateClassifier(_Recorder(), classes=[0, 1], n_teachers=10).fit(X, y)
    _Recorder.seen.clear()  # the teachers' fits
    query = X.iloc[100:103]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(ValueError, match="cannot read column 'workclass'"):
            clf.predict(query)
        with pytest.raises(ValueError, match="cannot read column 'workclass'"):
            clf.predict(X.iloc[200:210])  # same signature: no new dry run
    assert not [w for w in caught if "recorder" in str(w.message)]  # its warnings stay inside
    assert len(_Recorder.seen) == 2  # the placeholder frame, then its numeric version
    real, numeric = _Recorder.seen
    # The queries' kind (columns, dtypes), never their values: placeholders only.
    assert list(real.columns) == list(query.columns)
    assert (real.dtypes == query.dtypes).all()
    assert set(real["workclass"]) == {"a", "b", "c"}
    assert set(real["age"]) <= {0.0, 1.0, 2.0} and set(real["hours"]) <= {0.0, 1.0, 2.0}
    assert numeric["workclass"].dtype.kind == "f"
    assert (numeric[["age", "hours"]].to_numpy() == real[["age", "hours"]].to_numpy()).all()


def test_a_base_estimator_failing_for_another_reason_is_not_refused():
    """Only the kind of rows refuses: a base estimator failing on numbers too answers as before."""

    class Broken(_Recorder):
        def fit(self, X, y):
            raise RuntimeError("always fails")

    X, y = _frame()
    clf = SubsampleAggregateClassifier(Broken(), classes=[0, 1], n_teachers=10).fit(X, y)
    assert clf.predict(X.iloc[:3]).shape == (3,)  # every teacher's fallback, as documented


def test_numeric_queries_skip_the_dry_run(monkeypatch):
    X, y = _frame()
    X = X.drop(columns="workclass")
    monkeypatch.setattr(_Recorder, "seen", [])
    clf = SubsampleAggregateClassifier(_Recorder(), classes=[0, 1], n_teachers=10).fit(X, y)
    _Recorder.seen.clear()
    clf.predict(X.iloc[:3])
    assert _Recorder.seen == []


@pytest.mark.parametrize("with_schema", [False, True])
def test_sufficient_statistic_names_public_preprocessor(with_schema):
    X, y = _frame()
    y = y.copy()
    y[:200] = -1
    schema = {
        "numeric": {
            "age": {"center": 40.0, "scale": 20.0},
            "hours": {"center": 40.0, "scale": 10.0},
        },
        "categorical": {"workclass": ["State-gov", "Private", "Self-emp"]},
    }
    clf = SufficientStatisticClassifier(classes=[0, 1], schema=schema if with_schema else None)
    with pytest.raises(ValueError, match="public_preprocessor") as info:
        clf.fit(X, y)
    assert "'workclass'" in str(info.value)
    assert "State-gov" not in str(info.value)  # no training value in the message
    reg = SufficientStatisticRegressor(y_bounds=(0, 1))
    with pytest.raises(ValueError, match="public_preprocessor"):
        reg.fit(X, np.where(y == -1, np.nan, y))
    # The fix the message names works.
    pre = public_preprocessor(schema)
    make_pipeline(pre, SufficientStatisticClassifier(classes=[0, 1], schema=schema)).fit(X, y)


def test_a_stray_string_in_a_numeric_column_stays_a_fallback():
    """A column mixing numbers and strings is not text: the stray row is that teacher's fallback."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 2))
    y = (X[:, 0] > 0).astype(int)
    accountant = PrivacyAccountant(epsilon=1e6)
    clf = SubsampleAggregateClassifier(
        LogisticRegression(), classes=[0, 1], n_teachers=5, accountant=accountant
    ).fit(X, y)
    queries = np.array([[3.0, 0.0], ["three", 0.0], [3.0, 1.0]], dtype=object)
    assert clf.predict(queries).shape == (3,)
    assert accountant.queries_answered == 3
