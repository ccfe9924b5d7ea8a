"""Teachers that are pipelines with affine preprocessing join the stacked linear votes.

What is checked: for random pipelines of ``StandardScaler``, ``MinMaxScaler``,
``MaxAbsScaler``, ``FunctionTransformer()``, ``"passthrough"`` and
``ColumnTransformer`` layouts (disjoint columns, ``remainder`` passthrough or drop,
by index or by name), binary and multi-class, with zero-variance columns, the
folded teachers are stacked, and the vote counts equal those of every pipeline's
own ``predict``. Pipelines that are not affine (clipping, polynomial features,
one-hot encoding, a frame whose dropped columns hold strings) are not folded and
still vote through ``predict``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression, RidgeClassifier
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import (
    FunctionTransformer,
    MaxAbsScaler,
    MinMaxScaler,
    OneHotEncoder,
    PolynomialFeatures,
    StandardScaler,
)

from skprivpred import SubsampleAggregateClassifier
from skprivpred._teachers._votes import TeacherEnsemble

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def data(n_classes: int, seed: int = 0, n: int = 600):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5)) * [1.0, 10.0, 0.1, 3.0, 1.0] + [0.0, 5.0, -2.0, 0.0, 7.0]
    X[:, 4] = 7.0  # a zero-variance column
    score = X[:, 0] + 0.1 * X[:, 1] - 3.0 * X[:, 2]
    y = np.digitize(score, np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1]))
    return X, y


def affine_pipelines():
    ct = ColumnTransformer  # shorthand
    yield make_pipeline(StandardScaler(), LogisticRegression())
    yield make_pipeline(MinMaxScaler(), LogisticRegression(C=0.5))
    yield make_pipeline(MaxAbsScaler(), StandardScaler(with_mean=False), RidgeClassifier())
    yield make_pipeline(FunctionTransformer(), "passthrough", LogisticRegression())
    yield Pipeline([("scale", StandardScaler(with_std=False)), ("clf", LogisticRegression())])
    yield make_pipeline(
        ct([("a", StandardScaler(), [0, 2]), ("b", MinMaxScaler(), [1])], remainder="passthrough"),
        LogisticRegression(),
    )
    yield make_pipeline(
        ct([("a", MaxAbsScaler(), [3]), ("b", StandardScaler(), [2, 0])], remainder="drop"),
        LogisticRegression(),
    )
    yield make_pipeline(
        ct([("a", make_pipeline(StandardScaler(), MinMaxScaler()), [1, 4])], remainder="drop"),
        StandardScaler(),
        LogisticRegression(),
    )


def fitted_teachers(pipeline, X, y, n_teachers=6, seed=0):
    """Clones of ``pipeline`` fitted on disjoint random blocks (rows of an array or frame)."""
    parts = np.array_split(np.random.default_rng(seed).permutation(y.size), n_teachers)
    take = (lambda p: X.iloc[p]) if hasattr(X, "iloc") else (lambda p: X[p])
    return [clone(pipeline).fit(take(p), y[p]) for p in parts]


def counts_by_predict(teachers, X, classes):
    counts = np.zeros((X.shape[0], classes.size), dtype=np.int64)
    for teacher in teachers:
        counts[np.arange(X.shape[0]), np.searchsorted(classes, teacher.predict(X))] += 1
    return counts


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("index", range(8))
def test_affine_pipelines_are_folded_and_vote_as_their_predict(index, n_classes):
    pipeline = list(affine_pipelines())[index]
    X, y = data(n_classes)
    classes = np.unique(y)
    teachers = fitted_teachers(pipeline, X, y)
    ensemble = TeacherEnsemble(teachers, classes)
    assert ensemble._other == [] and ensemble._stack is not None  # all folded
    queries = np.random.default_rng(9).normal(size=(2000, 5)) * 5.0
    queries[:, 4] = np.where(np.arange(2000) % 2, 7.0, -3.0)  # off the constant column too
    for rows in (X, queries):
        np.testing.assert_array_equal(
            ensemble.vote_counts(rows), counts_by_predict(teachers, rows, classes)
        )
        np.testing.assert_array_equal(
            ensemble.votes(rows), np.searchsorted(classes, [t.predict(rows) for t in teachers]).T
        )


def test_name_based_column_selection_on_a_frame_is_folded():
    X, y = data(2)
    frame = pd.DataFrame(X, columns=list("abcde"))
    pipeline = make_pipeline(
        ColumnTransformer(
            [("s", StandardScaler(), ["c", "a"]), ("m", MinMaxScaler(), ["b"])],
            remainder="passthrough",
        ),
        LogisticRegression(),
    )
    teachers = fitted_teachers(pipeline, frame, y, n_teachers=5)
    ensemble = TeacherEnsemble(teachers, np.array([0, 1]))
    assert ensemble._other == []
    np.testing.assert_array_equal(
        ensemble.vote_counts(frame), counts_by_predict(teachers, frame, np.array([0, 1]))
    )


@pytest.mark.parametrize(
    "pipeline",
    [
        make_pipeline(MinMaxScaler(clip=True), LogisticRegression()),
        make_pipeline(PolynomialFeatures(2), LogisticRegression()),
        make_pipeline(FunctionTransformer(np.tanh), LogisticRegression()),
        make_pipeline(
            ColumnTransformer([("a", StandardScaler(), [0, 1]), ("b", StandardScaler(), [1])]),
            LogisticRegression(),
        ),  # overlapping columns
    ],
)
def test_pipelines_that_are_not_affine_keep_their_own_predict(pipeline):
    X, y = data(2)
    teachers = fitted_teachers(pipeline, X, y, n_teachers=4)
    ensemble = TeacherEnsemble(teachers, np.array([0, 1]))
    assert ensemble._stack is None and len(ensemble._other) == 4
    np.testing.assert_array_equal(
        ensemble.vote_counts(X), counts_by_predict(teachers, X, np.array([0, 1]))
    )


def test_a_frame_with_dropped_string_columns_is_not_folded_and_still_answers():
    X, y = data(2)
    frame = pd.DataFrame(X[:, :3], columns=["a", "b", "c"]).assign(city="x")
    frame.loc[::3, "city"] = "y"
    pipeline = make_pipeline(
        ColumnTransformer([("s", StandardScaler(), ["a", "b", "c"])], remainder="drop"),
        LogisticRegression(),
    )
    clf = SubsampleAggregateClassifier(pipeline, n_teachers=4, classes=[0, 1]).fit(frame, y)
    assert clf._ensemble._stack is None
    assert clf.predict(frame.iloc[:10]).shape == (10,)
    encoded = make_pipeline(
        ColumnTransformer([("o", OneHotEncoder(handle_unknown="ignore"), ["city"])]),
        LogisticRegression(),
    )
    clf = SubsampleAggregateClassifier(encoded, n_teachers=4, classes=[0, 1]).fit(frame, y)
    assert clf._ensemble._stack is None and clf.predict(frame.iloc[:3]).shape == (3,)


def test_the_estimator_answers_from_the_folded_stack():
    X, y = data(2, n=2000)
    clf = SubsampleAggregateClassifier(
        make_pipeline(StandardScaler(), LogisticRegression()), n_teachers=20, classes=[0, 1]
    ).fit(X, y)
    assert clf._ensemble._other == [] and clf._ensemble._stack.weights.shape == (5, 20)
    law = clf._output_distribution(X[:50])
    assert law.shape == (50, 2) and np.allclose(law.sum(axis=1), 1.0)
