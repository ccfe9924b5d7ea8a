"""The hypothesis-class protocol and the finite classes of skprivpred.finite.

Every class (the exponential-mechanism learner's finite families, the PPM
candidate class and the everlasting classes) conforms to one protocol; the
finite families' mistake counts equal brute force and their released
hypotheses predict as their index says.
"""

import math

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.tree import DecisionTreeClassifier

from skprivpred import InvalidParameterError
from skprivpred.finite import (
    THRESHOLD_DIRECTIONS,
    ConjunctionClass,
    FiniteHypothesisClass,
    GridThresholdClass,
    HypothesisClass,
    HypothesisList,
    ThresholdClass,
    build_candidates,
)

CLASSES = np.array(["no", "yes"])


def _every_class():
    rng = np.random.default_rng(0)
    X_public = rng.normal(size=(6, 2))
    tree = DecisionTreeClassifier(max_depth=1).fit(rng.normal(size=(20, 2)), np.arange(20) % 2)
    return [
        ConjunctionClass(3),
        GridThresholdClass.from_grid([0.0, 1.0, 2.0], n_features=2, direction="both"),
        HypothesisList([tree, lambda X: np.zeros(len(X), dtype=int)]),
        build_candidates(X_public, "exact", rng=np.random.default_rng(0)),
        build_candidates(X_public, "sample", pool_size=20, rng=np.random.default_rng(0)),
        ThresholdClass(),
        FiniteHypothesisClass(predictions=np.eye(4, dtype=int)),
    ]


@pytest.mark.parametrize("family", _every_class(), ids=lambda f: type(f).__name__)
def test_every_class_follows_the_protocol(family):
    assert isinstance(family, HypothesisClass)
    size = family.n_hypotheses
    assert size is None or (isinstance(size, int) and size >= 1)
    vc = family.default_vc_dim()
    assert isinstance(vc, int) and vc >= 1
    if size is not None:
        assert vc <= max(1, math.floor(math.log2(size)))


def test_a_class_without_the_members_does_not_conform():
    assert not isinstance(object(), HypothesisClass)
    assert THRESHOLD_DIRECTIONS == ("increasing", "decreasing")


# -- finite families: mistakes against brute force, releases -----------------------------------
def _brute_mistakes(family, X, y, classes):
    out = []
    for index in range(family.n_hypotheses):
        _, released = family.release(index, classes)
        out.append(int(np.sum(released.predict(family.prepare(X)) != y)))
    return np.array(out)


def test_conjunction_mistakes_and_releases_agree():
    rng = np.random.default_rng(1)
    X = rng.integers(0, 2, size=(200, 4))
    y = CLASSES[rng.integers(0, 2, size=200)]
    family = ConjunctionClass(4)
    np.testing.assert_array_equal(
        family.mistakes(X, y, CLASSES), _brute_mistakes(family, X, y, CLASSES)
    )
    attributes, _ = family.release(0b1010, CLASSES)
    np.testing.assert_array_equal(attributes["selected_features_"], [1, 3])
    assert family.default_vc_dim() == 4


@pytest.mark.parametrize("direction", ["increasing", "decreasing", "both"])
def test_grid_threshold_mistakes_and_releases_agree(direction):
    rng = np.random.default_rng(2)
    grid = np.linspace(-1.0, 1.0, 9)
    X = np.column_stack([rng.choice(grid, 150), rng.normal(size=150)])  # ties and outliers
    y = CLASSES[rng.integers(0, 2, size=150)]
    family = GridThresholdClass.from_grid(grid, n_features=2, direction=direction)
    n_directions = 2 if direction == "both" else 1
    assert family.n_hypotheses == 2 * grid.size * n_directions
    np.testing.assert_array_equal(
        family.mistakes(X, y, CLASSES), _brute_mistakes(family, X, y, CLASSES)
    )


def test_grid_threshold_directions_mean_what_they_say():
    family = GridThresholdClass.from_grid([0.5], n_features=1, direction="both")
    X = np.array([[0.4], [0.5], [0.6]])
    increasing = family.release(0, CLASSES)
    decreasing = family.release(1, CLASSES)
    assert increasing[0]["direction_"] == "increasing"
    assert decreasing[0]["direction_"] == "decreasing"
    np.testing.assert_array_equal(increasing[1].predict(X), ["no", "yes", "yes"])  # x >= t
    np.testing.assert_array_equal(decreasing[1].predict(X), ["yes", "no", "no"])  # x < t
    assert family.default_vc_dim() == 1  # two hypotheses: log2(2) = 1


@pytest.mark.parametrize(
    "grid, n_features, error, match",
    [
        (None, 1, ValueError, "grid=None"),
        ([0.5, 0.5], 1, ValueError, "duplicate"),
        ([[0.5]], 2, ValueError, "per-feature grids"),
        (np.zeros((1, 2, 2)), 1, ValueError, "3 dimensions"),
        ([np.inf], 1, ValueError, "finite"),
        ([["a"], ["b"]], 2, TypeError, "real numbers"),
    ],
)
def test_bad_grids(grid, n_features, error, match):
    with pytest.raises(error, match=match):
        GridThresholdClass.from_grid(grid, n_features, "both")


def test_hypothesis_list_checks_its_members_and_counts_mistakes():
    X = np.array([[0.0], [1.0], [2.0]])
    y = np.array([0, 1, 1])
    family = HypothesisList([lambda X: (X[:, 0] > 0.5).astype(int), lambda X: np.ones(len(X))])
    np.testing.assert_array_equal(family.mistakes(X, y, np.array([0, 1])), [0, 1])
    attributes, released = family.release(1, np.array([0, 1]))
    assert attributes["selected_index_"] == 1
    np.testing.assert_array_equal(released.predict(X), [1, 1, 1])
    for bad, match in [
        ("abc", "must be a list"),
        ([], "at least one"),
        ([3], r"experts\[0\]"),
        ([LogisticRegression()], r"experts\[0\].*not fitted.*FrozenEstimator"),
    ]:
        with pytest.raises(InvalidParameterError, match=match):
            HypothesisList(bad, "experts")
    # On training rows a wrong shape is the member's failure on that row: a mistake.
    wrong_shape = HypothesisList([lambda X: np.zeros((len(X), 2))])
    np.testing.assert_array_equal(wrong_shape.mistakes(X, y, np.array([0, 1])), [3])


def test_conjunctions_refuse_non_binary_rows_and_too_many_features():
    with pytest.raises(ValueError, match="needs binary X.*Binarizer"):
        ConjunctionClass(2).prepare(np.array([[0, 2]]))
    with pytest.raises(ValueError, match="at most 62"):
        ConjunctionClass(63)


# -- the PPM candidate class: the "sample" pool (Bassily, Moran & Nandi 2020, Algorithm 1) -------
def test_sampled_pool_holds_hyperplanes_through_public_points_in_both_orientations():
    rng = np.random.default_rng(3)
    X_public = rng.normal(size=(300, 5)) @ rng.normal(size=(5, 5)) + 4.0
    family = build_candidates(X_public, "sample", pool_size=1001, rng=np.random.default_rng(1))
    assert family.strategy == "sample" and family.size == 1003
    A, b = family.normals, family.offsets
    assert A.shape == (1001, 5)
    np.testing.assert_allclose(np.linalg.norm(A, axis=1), 1.0)
    # Both orientations: halfspaces i and i + 501 share a hyperplane (an odd pool keeps one
    # orientation of the last hyperplane).
    np.testing.assert_array_equal(A[501:], -A[:500])
    np.testing.assert_array_equal(b[501:], -b[:500])
    # Each boundary passes through a public point (a one-point subset of Algorithm 1).
    Z, _ = family.to_affine(X_public)
    residual = np.abs(Z @ A.T - b)
    assert np.all(residual.min(axis=0) < 1e-9 * family.scale)
    # Unlike supporting halfspaces, the boundaries cut the public points.
    inside = (Z @ A.T >= b - family.slack).mean(axis=0)
    assert np.mean(inside < 0.99) > 0.9
    # Members intersect 1..j_max halfspaces, mostly one.
    windows = family.window_sizes
    assert windows is not None
    assert windows.min() >= 1 and windows.max() <= family.j_max == 5
    assert 0.4 < np.mean(windows == 1) < 0.65
    np.testing.assert_array_equal(
        family.members(2 + 1000), (1000 + np.arange(windows[1000])) % 1001
    )


# -- a callable class never raises on the points it is evaluated on ------------------------------
def _picky(X):
    """Label 1 at x >= 3; raises on a batch holding x = 7; label 2 at x = 5, NaN at x = 6."""
    x = np.asarray(X)[:, 0]
    if np.any(x == 7):
        raise ValueError("cannot label 7")
    labels = (x >= 3).astype(float)
    labels[x == 5], labels[x == 6] = 2, np.nan
    return labels


def _wrong_shape(X):
    return np.zeros(len(X) + 1)


def _strings(X):
    return np.where(np.asarray(X)[:, 0] >= 3, "1", "0").astype(object)


def test_callable_labels_fall_back_to_zero_where_a_hypothesis_gives_no_binary_label():
    """Regression: labels_on raised a ValueError (after the charge, in the everlasting
    predictors) when a callable returned a label outside {0, 1}, and let a raising
    callable's exception through."""
    family = FiniteHypothesisClass(hypotheses=[_picky, _wrong_shape, _strings, lambda X: X[:, 0]])
    points = np.arange(10, dtype=float).reshape(-1, 1)
    labels = family.labels_on(points)
    assert labels.dtype == np.int8 and labels.shape == (4, 10)
    # only the failing points get the fallback 0
    assert labels[0].tolist() == [0, 0, 0, 1, 1, 0, 0, 0, 1, 1]
    assert labels[1].tolist() == [0] * 10  # one label per row is never returned
    assert labels[2].tolist() == [0] * 10  # strings are not labels
    assert labels[3].tolist() == [0, 1] + [0] * 8  # the identity: 1 at x = 1 only
    # a point's label does not depend on the points evaluated with it
    for i in range(10):
        assert family.labels_on(points[i : i + 1])[:, 0].tolist() == labels[:, i].tolist()
    shuffled = np.random.default_rng(0).permutation(10)
    assert np.array_equal(family.labels_on(points[shuffled]), labels[:, shuffled])


def test_everlasting_protocol_of_a_callable_class_survives_failing_points():
    family = FiniteHypothesisClass(hypotheses=[_picky, lambda X: (X[:, 0] >= 5).astype(int)])
    points = np.arange(10, dtype=float).reshape(-1, 1)
    teachers = family.erm(points.reshape(2, 5, 1), np.array([[0, 0, 0, 1, 1], [1, 1, 1, 1, 1]]))
    assert teachers.tolist() == [1, 1]  # _picky fits the first block, x >= 5 the second
    expected = [0, 0, 0, 0.5, 0.5, 0.5, 0.5, 0.5, 1, 1]
    assert family.vote_fraction(teachers, points).tolist() == expected
    found = family.candidates(points[:6], np.array([0, 0, 0, 1, 1, 1.0]), points[6:])
    assert found.errors.shape == (2,)
    prior = family.prior_candidates(points, np.zeros(10))
    # a failing point (5, 6, 7 for _picky) counts as a mistake, whatever the label
    assert prior.errors.tolist() == [7.0, 5.0]
    assert prior.labels_of(0)[0].tolist() == [0, 0, 0, 1, 1, 0, 0, 0, 1, 1]  # relabelled 0


def test_popcount_without_numpy_bitwise_count(monkeypatch):
    """numpy < 2.0 has no ``np.bitwise_count``: the byte-table fallback counts the same bits."""
    from skprivpred.finite import _halfspaces as hypotheses

    rng = np.random.default_rng(0)
    bits = rng.random((70, 5)) < 0.3  # 70 rows: words padded past a byte boundary
    words = hypotheses._packed(bits)
    expected = bits.sum(axis=0)
    assert np.array_equal(hypotheses._popcount(words), expected)
    monkeypatch.delattr(np, "bitwise_count", raising=False)
    counts = hypotheses._popcount(words)
    assert counts.dtype == np.int64 and np.array_equal(counts, expected)
    strided = words[::2]  # a non-contiguous view is counted too
    assert np.array_equal(hypotheses._popcount(strided), bits[:, ::2].sum(axis=0))
