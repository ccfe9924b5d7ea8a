"""Stacked tree votes equal every tree's and forest's own ``predict``, exactly.

What is checked: teachers that are scikit-learn trees or forests
(``DecisionTree*``, ``ExtraTree*``, ``RandomForest*``, ``ExtraTrees*``) are
evaluated by :class:`skprivpred._teachers._trees.StackedTrees` inside
:class:`~skprivpred._teachers._votes.TeacherEnsemble`, and their votes and vote counts
equal those of each model's own ``predict`` on random rows, on rows at and
around every threshold in ``float32`` and ``float64``, with tied class
proportions (in a leaf and summed over a forest), with blocks that lack a
class, several classes, string labels, sparse and pandas input, behind a public
first pipeline step, and in blocks small enough that the batch is cut many
times. Regressors' stacked predictions equal ``predict`` too, and
``SubsampleAverageRegressor`` averages its tree teachers from them. Rows the
trees would refuse (not finite once in ``float32``) are left to each tree's own
``predict``; 64-bit sparse indices are narrowed as the trees narrow them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import sparse
from sklearn.base import clone
from sklearn.ensemble import (
    ExtraTreesClassifier,
    ExtraTreesRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)
from sklearn.linear_model import LinearRegression
from sklearn.pipeline import make_pipeline
from sklearn.tree import (
    DecisionTreeClassifier,
    DecisionTreeRegressor,
    ExtraTreeClassifier,
    ExtraTreeRegressor,
)

from skprivpred import (
    PrivateEverlastingClassifier,
    SubsampleAggregateClassifier,
    SubsampleAverageRegressor,
)
from skprivpred._teachers import _trees
from skprivpred._teachers._fit import ConstantTeacher
from skprivpred._teachers._rows import FALLBACK_LABEL_INDEX
from skprivpred._teachers._trees import StackedPredictions, StackedTrees, is_stackable
from skprivpred._teachers._votes import TeacherEnsemble
from skprivpred.preprocessing import PublicScaler

CLASSIFIERS = [
    DecisionTreeClassifier(max_depth=1),
    DecisionTreeClassifier(max_depth=2),
    DecisionTreeClassifier(max_depth=4, min_samples_leaf=2),
    DecisionTreeClassifier(),  # no depth cap: descends as deep as the deepest tree
    DecisionTreeClassifier(max_leaf_nodes=5),  # best-first growth: another node numbering
    ExtraTreeClassifier(max_depth=3),
    RandomForestClassifier(n_estimators=5, max_depth=3),
    ExtraTreesClassifier(n_estimators=4),
    RandomForestClassifier(n_estimators=1, max_depth=1, bootstrap=False),
]


def blocks(n_blocks, rows, n_features, n_classes, rng, *, grid=None):
    """Small training blocks; about a third lack a class (the tree's classes_ is a subset)."""
    for k in range(n_blocks):
        X = rng.normal(size=(rows, n_features))
        if grid is not None:
            X = np.round(X * grid) / grid  # repeated values: ties in the leaves
        labels = np.arange(n_classes) if k % 3 else np.arange(n_classes)[k % n_classes :][:2]
        yield X, rng.choice(labels, size=rows)


def fitted(models, n_blocks, rows, n_features, n_classes, seed, grid=None):
    rng = np.random.default_rng(seed)
    teachers = []
    for k, (X, y) in enumerate(blocks(n_blocks, rows, n_features, n_classes, rng, grid=grid)):
        model = clone(models[k % len(models)])
        if "random_state" in model.get_params():
            model.set_params(random_state=k)
        teachers.append(model.fit(X, y))
    return teachers


def counts_by_predict(teachers, X, classes):
    counts = np.zeros((X.shape[0], classes.size), dtype=np.int64)
    for teacher in teachers:
        counts[np.arange(X.shape[0]), np.searchsorted(classes, teacher.predict(X))] += 1
    return counts


def assert_votes_equal_predict(teachers, X, classes):
    ensemble = TeacherEnsemble(teachers, classes)
    assert ensemble._other == [] and ensemble._trees is not None  # all on the stacked path
    np.testing.assert_array_equal(
        ensemble.votes(X), np.searchsorted(classes, [t.predict(X) for t in teachers]).T
    )
    np.testing.assert_array_equal(ensemble.vote_counts(X), counts_by_predict(teachers, X, classes))


@pytest.mark.parametrize("shallow_levels", [0, 3])
@pytest.mark.parametrize("n_classes", [2, 3, 5])
@pytest.mark.parametrize("index", range(len(CLASSIFIERS)))
def test_votes_equal_each_models_predict(monkeypatch, index, n_classes, shallow_levels):
    monkeypatch.setattr(_trees, "SHALLOW_LEVELS", shallow_levels)
    teachers = fitted([CLASSIFIERS[index]], 40, 14, 3, n_classes, seed=index)
    X = np.random.default_rng(100 + index).normal(size=(3000, 3)) * 1.5
    assert_votes_equal_predict(teachers, X, np.arange(n_classes))


def test_a_mixture_of_kinds_and_depths_in_one_ensemble():
    teachers = fitted(CLASSIFIERS, 90, 20, 4, 3, seed=7)
    teachers.insert(5, ConstantTeacher(2))
    X = np.random.default_rng(8).normal(size=(2000, 4))
    ensemble = TeacherEnsemble(teachers, np.arange(3))
    expected = np.array(
        [np.full(2000, 2) if isinstance(t, ConstantTeacher) else t.predict(X) for t in teachers]
    ).T
    np.testing.assert_array_equal(ensemble.votes(X), expected)
    np.testing.assert_array_equal(
        ensemble.vote_counts(X), np.stack([(expected == c).sum(axis=1) for c in range(3)], 1)
    )


@pytest.mark.parametrize("index", range(len(CLASSIFIERS)))
def test_tied_class_proportions_resolve_as_predict(index):
    """Features on a coarse grid and balanced labels: many leaves (and forest sums) tie."""
    teachers = fitted([CLASSIFIERS[index]], 60, 12, 2, 3, seed=20 + index, grid=1)
    X = np.round(np.random.default_rng(3).normal(size=(2000, 2)) * 2) / 2
    assert_votes_equal_predict(teachers, X, np.arange(3))


def test_exact_ties_in_a_leaf_and_over_a_forest_go_to_the_first_label():
    X = np.zeros((6, 1))
    y = np.array([2, 1, 0, 1, 2, 0])  # one leaf with proportions 1/3, 1/3, 1/3
    tree = DecisionTreeClassifier().fit(X, y)
    subset = DecisionTreeClassifier().fit(X[:2], y[:2])  # classes_ [1, 2], tied 1/2, 1/2
    forest = RandomForestClassifier(n_estimators=3, random_state=0).fit(X, y)
    queries = np.array([[0.0], [5.0], [-5.0]])
    for model in (tree, subset, forest):
        assert_votes_equal_predict([model], queries, np.arange(3))
    assert tree.predict(queries)[0] == 0 and subset.predict(queries)[0] == 1


def _adjacent_float32(values):
    """Each float32 value, and its float32 neighbours below and above, as float64."""
    v32 = np.asarray(values, dtype=np.float32)
    return np.concatenate(
        [v32, np.nextafter(v32, np.float32(-np.inf)), np.nextafter(v32, np.float32(np.inf))]
    ).astype(np.float64)


# scikit-learn's finiteness check sums the rows: near the float32 range it overflows.
@pytest.mark.filterwarnings("ignore:invalid value encountered in reduce:RuntimeWarning")
@pytest.mark.filterwarnings("ignore:overflow encountered in reduce:RuntimeWarning")
def test_rows_at_and_around_every_threshold():
    """float32 rows compared with float64 thresholds, as scikit-learn does, at the boundary."""
    rng = np.random.default_rng(5)
    base = [
        np.array([1.0, float(np.nextafter(np.float32(1.0), np.float32(2.0)))]),  # adjacent
        rng.normal(size=6) * 1e30,  # large magnitudes
        rng.normal(size=6) * 1e-30,  # tiny magnitudes
        np.array([0.1, 0.2, 0.3, 1 / 3, 2 / 3]),  # not representable in float32
        np.array([-3.4e38, 3.4e38, -1e-45, 1e-45]),  # near the ends of the float32 range
    ]
    teachers = []
    for k, values in enumerate(base):
        for shift in range(len(values)):
            X = np.sort(values).reshape(-1, 1)
            y = (np.arange(len(values)) >= shift).astype(int)
            if len(np.unique(y)) == 2:
                teachers.append(DecisionTreeClassifier(max_depth=1).fit(X, y))
                teachers.append(DecisionTreeClassifier(random_state=k).fit(X, y[::-1]))
    thresholds = np.concatenate([t.tree_.threshold[t.tree_.children_left >= 0] for t in teachers])
    queries = np.concatenate(
        [
            thresholds,
            np.nextafter(thresholds, np.inf),
            np.nextafter(thresholds, -np.inf),
            thresholds * (1 + 1e-12),  # differ only beyond float32 precision
            thresholds * (1 - 1e-12),
            _adjacent_float32(thresholds),
            _adjacent_float32(np.concatenate(base)),
        ]
    ).reshape(-1, 1)
    queries = queries[np.abs(queries[:, 0]) < 3.4e38]  # larger values are inf in float32
    assert_votes_equal_predict(teachers, queries, np.array([0, 1]))


def test_float32_floor_is_the_largest_float32_not_above():
    t = np.array([1.0, 0.1, -0.1, 1e300, -1e300, 3.4e38, 1e-50, -1e-50, 0.0, -2.0])
    floor = _trees._float32_floor(t)
    assert floor.dtype == np.float32
    assert np.all(floor.astype(np.float64) <= t)
    with np.errstate(over="ignore"):  # the float32 after its largest value is inf
        above = np.nextafter(floor, np.float32(np.inf)).astype(np.float64)
    assert np.all(above > t)


def test_string_labels():
    rng = np.random.default_rng(11)
    classes = np.array(["ant", "bee", "cat"])
    teachers = []
    for k in range(20):
        X = rng.normal(size=(9, 2))
        y = rng.choice(classes[: 2 + k % 2], size=9)
        teachers.append(DecisionTreeClassifier(max_depth=2 + k % 2).fit(X, y))
    teachers.append(RandomForestClassifier(n_estimators=3, random_state=0).fit(X, y))
    assert_votes_equal_predict(teachers, rng.normal(size=(500, 2)), classes)


def test_sparse_rows():
    rng = np.random.default_rng(12)
    teachers = []
    for k in range(30):
        X = sparse.random(15, 6, density=0.4, format="csr", random_state=k)
        y = rng.integers(0, 3, 15)
        model = [DecisionTreeClassifier(max_depth=3), ExtraTreesClassifier(n_estimators=3)][k % 2]
        teachers.append(model.set_params(random_state=k).fit(X, y))
    queries = sparse.random(800, 6, density=0.3, format="csr", random_state=99)
    assert_votes_equal_predict(teachers, queries, np.arange(3))
    assert_votes_equal_predict(teachers, queries.tocsc(), np.arange(3))


def test_frames_with_feature_names():
    rng = np.random.default_rng(13)
    frame = pd.DataFrame(rng.normal(size=(200, 3)), columns=["a", "b", "c"])
    y = (frame["a"] + frame["b"] > 0).astype(int).to_numpy()
    teachers = [
        DecisionTreeClassifier(max_depth=2).fit(frame.iloc[k::10], y[k::10]) for k in range(10)
    ]
    assert_votes_equal_predict(teachers, frame, np.array([0, 1]))


def test_dense_rows_keep_every_column_and_sparse_rows_the_used_ones():
    rng = np.random.default_rng(14)
    X = rng.normal(size=(300, 8))
    y = (X[:, 6] > 0).astype(int)
    teachers = [DecisionTreeClassifier(max_depth=1).fit(X[k::5], y[k::5]) for k in range(5)]
    stacked = StackedTrees(teachers, np.array([0, 1]))
    np.testing.assert_array_equal(stacked._nodes.used_features, [6])
    queries = rng.normal(size=(100, 8))
    assert stacked._columns(stacked.prepare(queries), slice(0, 10)).shape == (10, 8)
    rows = sparse.csr_matrix(np.where(queries > 0.5, queries, 0.0))
    assert stacked._columns(stacked.prepare(rows), slice(0, 10)).shape == (10, 1)
    assert_votes_equal_predict(teachers, queries, np.array([0, 1]))
    assert_votes_equal_predict(teachers, rows, np.array([0, 1]))


def test_a_public_first_step_is_applied_once_and_the_trees_stacked():
    rng = np.random.default_rng(15)
    X = rng.normal(size=(400, 2))
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    pipeline = make_pipeline(
        PublicScaler(center=0.5, scale=2.0, squash=True), DecisionTreeClassifier(max_depth=2)
    )
    teachers = [clone(pipeline).fit(X[k::8], y[k::8]) for k in range(8)]
    ensemble = TeacherEnsemble(teachers, np.array([0, 1]))
    assert ensemble._prefix is not None and ensemble._trees is not None and not ensemble._other
    queries = rng.normal(size=(500, 2))
    np.testing.assert_array_equal(
        ensemble.vote_counts(queries), counts_by_predict(teachers, queries, np.array([0, 1]))
    )


@pytest.mark.parametrize("shallow_levels", [0, 3])  # 0: shallow trees descend level by level
def test_small_blocks_cut_the_batch_many_times(monkeypatch, shallow_levels):
    monkeypatch.setattr(_trees, "SHALLOW_LEVELS", shallow_levels)
    monkeypatch.setattr(_trees, "BLOCK_BYTES", 97)
    monkeypatch.setattr(_trees, "TREE_BLOCK", 7)
    teachers = fitted(CLASSIFIERS, 45, 16, 3, 3, seed=16)
    X = np.random.default_rng(17).normal(size=(301, 3))
    assert_votes_equal_predict(teachers, X, np.arange(3))


def test_every_row_descends_the_public_depth_cap():
    teachers = fitted([DecisionTreeClassifier(max_depth=6)], 10, 5, 2, 2, seed=18)
    assert max(t.tree_.max_depth for t in teachers) < 6
    assert StackedTrees(teachers, np.array([0, 1]))._nodes.levels == 6
    uncapped = fitted([DecisionTreeClassifier()], 10, 30, 2, 2, seed=18)
    assert StackedTrees(uncapped, np.array([0, 1]))._nodes.levels == max(
        t.tree_.max_depth for t in uncapped
    )
    leaves = fitted([DecisionTreeClassifier(max_leaf_nodes=3)], 10, 30, 2, 2, seed=18)
    assert StackedTrees(leaves, np.array([0, 1]))._nodes.levels == 2


@pytest.mark.parametrize(
    "model",
    [
        DecisionTreeRegressor(max_depth=3),
        DecisionTreeRegressor(),
        ExtraTreeRegressor(max_depth=4),
        RandomForestRegressor(n_estimators=4, max_depth=3),
        ExtraTreesRegressor(n_estimators=3),
    ],
)
def test_regressors_predictions_equal_predict(model):
    rng = np.random.default_rng(19)
    models = []
    for k in range(25):
        X = np.round(rng.normal(size=(12, 3)), 1)
        models.append(clone(model).set_params(random_state=k).fit(X, rng.normal(size=12)))
    assert all(is_stackable(m) for m in models)
    stacked = StackedTrees(models)
    X = rng.normal(size=(700, 3))
    np.testing.assert_array_equal(
        stacked.predictions(stacked.prepare(X)), np.array([m.predict(X) for m in models]).T
    )


def test_what_is_not_stacked():
    X, y = np.random.default_rng(20).normal(size=(30, 2)), np.arange(30) % 3
    classes = np.arange(3)

    class Subclass(DecisionTreeClassifier):
        pass

    assert not is_stackable(Subclass().fit(X, y), classes)  # may override predict
    assert not is_stackable(DecisionTreeClassifier().fit(X, y), np.arange(2))  # label 2 unknown
    assert not is_stackable(DecisionTreeClassifier().fit(X, y.astype(str)), classes)
    assert not is_stackable(DecisionTreeClassifier().fit(X, np.stack([y, y], 1)), classes)
    assert not is_stackable(DecisionTreeRegressor().fit(X, y), classes)  # not a classifier
    assert not is_stackable(DecisionTreeClassifier().fit(X, y))  # not a regressor
    assert not is_stackable(DecisionTreeClassifier(), classes)  # not fitted
    assert is_stackable(ExtraTreesClassifier(n_estimators=2).fit(X, y), classes)


@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")
def test_rows_the_trees_refuse_go_to_their_own_predict():
    rng = np.random.default_rng(21)
    teachers = fitted([DecisionTreeClassifier(max_depth=2)], 5, 10, 2, 2, seed=21)
    ensemble = TeacherEnsemble(teachers, np.array([0, 1]))
    assert ensemble._trees is not None
    too_large = np.array([[1e39, 0.0]])  # finite in float64, inf in float32
    assert ensemble._trees.prepare(too_large) is None
    # Every tree's own predict raises on it, so each fitted tree votes the fallback label
    # there (a teacher's failure never reaches the caller).
    fitted_ids = [j for j, t in enumerate(teachers) if hasattr(t, "tree_")]
    assert fitted_ids
    for j in fitted_ids:
        with pytest.raises(ValueError, match="infinity"):
            teachers[j].predict(too_large)
    votes = ensemble.votes(too_large)
    assert (votes[0, fitted_ids] == FALLBACK_LABEL_INDEX).all()
    expected = np.bincount(votes[0], minlength=2)[np.newaxis, :]
    np.testing.assert_array_equal(ensemble.vote_counts(too_large), expected)
    # 64-bit sparse indices that fit in 32 bits are narrowed, by the trees as here.
    wide = sparse.csr_matrix(rng.normal(size=(40, 2)))
    wide.indices, wide.indptr = wide.indices.astype(np.int64), wide.indptr.astype(np.int64)
    assert ensemble._trees.prepare(wide) is not None
    assert_votes_equal_predict(teachers, wide, np.array([0, 1]))


def test_estimators_vote_tree_teachers_on_the_stacked_path():
    rng = np.random.default_rng(22)
    X = rng.random((3000, 1))
    y = (X[:, 0] >= 0.3).astype(int)
    clf = SubsampleAggregateClassifier(
        DecisionTreeClassifier(max_depth=1), n_teachers=150, classes=[0, 1], random_state=0
    ).fit(X, y)
    assert clf._ensemble._trees is not None
    queries = rng.random((400, 1))
    teachers = [t for t in clf._ensemble._tree_teachers]
    expected = counts_by_predict([t for _, t in teachers], queries, np.array([0, 1]))
    n_constant = len(clf._ensemble._constant)
    expected[:, 1] += sum(label for _, label in clf._ensemble._constant)
    expected[:, 0] += n_constant - sum(label for _, label in clf._ensemble._constant)
    np.testing.assert_array_equal(clf._vote_counts(queries), expected)

    ever = PrivateEverlastingClassifier(
        DecisionTreeClassifier(max_depth=2), n_teachers=50, classes=[0, 1], random_state=0
    ).fit(X, y)
    ensemble = ever._state["ensemble"]
    assert ensemble._trees is not None
    direct = np.zeros(400, dtype=np.int64)
    for _, label in ensemble._constant:
        direct += label
    for _, tree in ensemble._tree_teachers:
        direct += tree.predict(queries)
    np.testing.assert_array_equal(ever._vote_counts(queries), direct)


def test_regressor_teachers_are_stacked_and_averaged_as_their_predict():
    rng = np.random.default_rng(23)
    X = rng.normal(size=(2000, 3))
    y = 100 * np.tanh(X[:, 0]) + rng.normal(size=2000)
    reg = SubsampleAverageRegressor(n_teachers=40, y_bounds=(-80.0, 80.0), random_state=0).fit(
        X, y
    )  # default teachers: DecisionTreeRegressor
    assert reg._outputs._stacked is not None and len(reg._outputs._stacked_ids) == 40
    queries = rng.normal(size=(500, 3)) * 2
    expected = np.zeros(500)
    for teacher in reg._teachers:  # the same order of additions as the estimator's
        expected += np.clip(teacher.predict(queries), -80.0, 80.0)
    np.testing.assert_array_equal(reg._raw_score(queries), expected / 40)


def test_stacked_predictions_mix_trees_and_other_regressors():
    rng = np.random.default_rng(24)
    X, y = rng.normal(size=(60, 2)), rng.normal(size=60)
    models = [
        DecisionTreeRegressor(max_depth=2).fit(X, y),
        LinearRegression().fit(X, y),
        RandomForestRegressor(n_estimators=3, random_state=0).fit(X, y),
        ExtraTreeRegressor(random_state=0).fit(X[:20], y[:20]),
    ]
    outputs = StackedPredictions(models)
    assert outputs._stacked_ids == [0, 2, 3]
    queries = rng.normal(size=(300, 2))
    for model, output in zip(
        models, outputs.each(queries, lambda m, rows: m.predict(rows)), strict=True
    ):
        np.testing.assert_array_equal(output, model.predict(queries))
