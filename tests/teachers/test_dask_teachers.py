"""Teacher ensembles fitted from dask collections on a two-worker cluster (issue 40, item 3).

A two-worker ``LocalCluster`` on loopback, started and closed by this module. With an
integer seed, a fit from a dask array or DataFrame gives the blocks, the teachers and the
exact answer law (vote counts, probabilities, averages) of an in-memory fit of the same
rows; the rows are never computed in the client; a teacher whose fit fails (an exception,
a dead worker) is the fallback teacher; a source that changes between passes is refused
before any fit.
"""

import os

import numpy as np
import pytest
from _registry import make_estimator
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor
from threadpoolctl import threadpool_limits

from skprivpred import (
    BudgetExhaustedError,
    InvalidParameterError,
    PrivacyAccountant,
    SubsampleAggregateClassifier,
    SubsampleAverageClassifier,
    SubsampleAverageRegressor,
)
from skprivpred._teachers._dask_teachers import SourceChangedError
from skprivpred.utils._testing import local_dask_client

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
pd = pytest.importorskip("pandas")
distributed = pytest.importorskip("distributed")
pytestmark = pytest.mark.xdist_group("dask-teachers-cluster")

SEED = 3


@pytest.fixture(scope="module")
def client():
    """A 2-worker LocalCluster on loopback (worker processes) and its Client, always closed.

    ``allowed-failures`` 0: a task whose worker dies is marked failed at once (the
    library's answer to a dead worker is what is tested, not dask's retries).
    """
    with local_dask_client(allowed_failures=0) as client:
        yield client


@pytest.fixture(autouse=True)
def _one_native_thread():
    with threadpool_limits(1):
        yield


def _data(n=1200, n_classes=2, seed=0):
    X, y = make_classification(
        n_samples=n,
        n_features=6,
        n_informative=4,
        n_classes=n_classes,
        n_clusters_per_class=1,
        random_state=seed,
    )
    X_query = make_classification(n_samples=200, n_features=6, random_state=seed + 1)[0]
    return X, y, X_query


def _on_workers_only(block):
    """The block, or an error if computed outside a dask worker (in the client)."""
    distributed.get_worker()  # raises ValueError outside a worker
    return block


def _dask_array(X, y, chunk=250):
    """X and y as dask arrays whose blocks can only be computed on a worker."""
    Xd = da.from_array(X, chunks=(chunk, -1)).map_blocks(_on_workers_only, dtype=X.dtype)
    yd = da.from_array(y, chunks=chunk).map_blocks(_on_workers_only, dtype=y.dtype)
    return Xd, yd


def _dask_frame(X, y, npartitions=5):
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
    frame["label"] = y
    ddf = dd.from_pandas(frame, npartitions=npartitions)
    return ddf[list(frame.columns[:-1])], ddf["label"], frame[list(frame.columns[:-1])]


ESTIMATORS = {
    "aggregate": lambda: make_estimator(
        SubsampleAggregateClassifier,
        estimator=LogisticRegression(),
        n_teachers=12,
        classes=[0, 1],
        random_state=SEED,
    ),
    "average": lambda: make_estimator(
        SubsampleAverageClassifier,
        estimator=DecisionTreeClassifier(max_depth=3),
        n_teachers=12,
        classes=[0, 1],
        random_state=SEED,
    ),
    "regressor": lambda: make_estimator(
        SubsampleAverageRegressor,
        estimator=DecisionTreeRegressor(max_depth=3),
        n_teachers=12,
        y_bounds=(-2.0, 2.0),
        random_state=SEED,
    ),
}


def _law(clf, X_query):
    """The exact answer law (non-private diagnostics) of each estimator."""
    if isinstance(clf, SubsampleAggregateClassifier):
        return clf._vote_counts(X_query), clf._output_distribution(X_query)
    return clf._raw_score(X_query), clf._output_distribution(X_query) if hasattr(
        clf, "_output_distribution"
    ) else None


def _assert_same(local, remote, X_query):
    for a, b in zip(local._partition, remote._partition, strict=True):
        assert_array_equal(a, b)
    for a, b in zip(_law(local, X_query), _law(remote, X_query)):
        if a is not None:
            assert_array_equal(a, b)  # same teachers, same rows in the same order: bitwise
    assert_array_equal(local.predict(X_query), remote.predict(X_query))  # same query stream
    assert remote.n_features_in_ == local.n_features_in_


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_a_dask_array_fit_equals_the_in_memory_fit(client, name):
    X, y, X_query = _data()
    if name == "regressor":
        y = np.clip(X[:, 0] + 0.1 * X[:, 1], -2, 2)
    local = ESTIMATORS[name]().fit(X, y)
    with distributed.get_task_stream(client) as stream:
        remote = ESTIMATORS[name]().fit(*_dask_array(X, y))
    fits = {t["worker"] for t in stream.data if "skprivpred-fit-teacher" in str(t["key"])}
    assert fits and fits <= set(client.scheduler_info()["workers"])  # fitted on the workers
    if name == "aggregate":
        assert_allclose(remote._ensemble._stack.weights, local._ensemble._stack.weights, rtol=0)
    _assert_same(local, remote, X_query)


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_a_dask_dataframe_fit_equals_the_in_memory_fit(client, name):
    X, y, X_query = _data(seed=4)
    if name == "regressor":
        y = np.clip(X[:, 0], -2, 2)
    Xd, yd, frame = _dask_frame(X, y)
    local = ESTIMATORS[name]().fit(frame, y)
    remote = ESTIMATORS[name]().fit(Xd, yd)
    assert list(remote.feature_names_in_) == list(frame.columns)
    query = pd.DataFrame(X_query, columns=frame.columns)
    _assert_same(local, remote, query)


def test_three_labels_and_the_label_set_read_from_y(client):
    X, y, X_query = _data(n_classes=3, seed=2)

    def make():
        return SubsampleAggregateClassifier(LogisticRegression(), n_teachers=10, random_state=1)

    with pytest.warns(UserWarning, match="label set was read from y"):
        local = make().fit(X, y)
    with pytest.warns(UserWarning, match="label set was read from y"):
        remote = make().fit(*_dask_array(X, y, chunk=333))
    assert_array_equal(remote.classes_, local.classes_)
    _assert_same(local, remote, X_query)


class _RaisesOnMarkedRows(ClassifierMixin, BaseEstimator):
    """Logistic regression, except that it raises when a row's first feature is 1e6."""

    def fit(self, X, y):
        if np.any(np.asarray(X)[:, 0] == 1e6):
            raise RuntimeError("marked row")
        self.model_ = LogisticRegression().fit(X, y)
        self.classes_ = self.model_.classes_
        return self

    def predict(self, X):
        return self.model_.predict(X)


class _KillsItsWorker(_RaisesOnMarkedRows):
    """Ends its worker process (as an out-of-memory kill would) on the marked block."""

    def fit(self, X, y):
        if np.any(np.asarray(X)[:, 0] == 1e6):
            os._exit(1)
        return super().fit(X, y)


@pytest.mark.parametrize("base", [_RaisesOnMarkedRows, _KillsItsWorker], ids=["raises", "kills"])
def test_a_failing_teacher_gets_the_fallback(client, base):
    X, y, X_query = _data(n=600, seed=5)
    X[17, 0] = 1e6  # row 17's teacher fails (raises, or kills the worker that fits it)

    def make(estimator):
        return SubsampleAggregateClassifier(
            estimator, n_teachers=6, classes=[0, 1], random_state=SEED
        )

    remote = make(base()).fit(*_dask_array(X, y, chunk=100))  # no error reaches the caller
    client.wait_for_workers(2, timeout=60)
    owner = next(j for j, part in enumerate(remote._partition) if 17 in part)
    # In memory, the same teacher raises and falls back (the killer is not run here).
    local = make(_RaisesOnMarkedRows()).fit(X, y)
    assert_array_equal(remote._vote_counts(X_query), local._vote_counts(X_query))
    votes, _ = remote._teacher_votes(X_query)
    assert np.all(votes[:, owner] == 0)  # the fallback: classes[0] on every row
    assert owner in dict(remote._ensemble._constant)  # a constant teacher


class _RecordsItsRows(ClassifierMixin, BaseEstimator):
    """Records the first feature of the rows it was fitted on (an id column)."""

    def fit(self, X, y):
        self.seen_ = np.asarray(X)[:, 0].copy()
        self.classes_ = np.unique(y)
        return self

    def predict(self, X):
        return np.full(len(X), self.classes_[0])


def test_each_teacher_gets_its_own_rows_in_position_order(client):
    n = 500
    X = np.column_stack([np.arange(n, dtype=float), np.random.default_rng(0).normal(size=n)])
    y = np.tile([0, 1], n // 2)
    clf = SubsampleAggregateClassifier(
        _RecordsItsRows(), n_teachers=7, classes=[0, 1], random_state=SEED
    ).fit(*_dask_array(X, y, chunk=90))
    fitted = [t for _, t in clf._ensemble._other]
    assert len(fitted) == 7
    seen = [t.seen_.astype(int) for t in fitted]
    for rows, part in zip(seen, clf._partition, strict=True):
        assert_array_equal(rows, part)  # its own block, ordered by position
    assert_array_equal(np.sort(np.concatenate(seen)), np.arange(n))  # disjoint, complete


def _changing_partition(path, k):
    """Partition k of a source whose first partition gains a row after its first read.

    (The counting pass reads it once; the assigning pass sees 41 rows.)
    """
    rows = 40
    if k == 0:
        reads = 0  # this read's number, taken atomically (the workers read concurrently)
        while True:
            try:
                os.close(os.open(path / f"read-{reads}", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
                break
            except FileExistsError:
                reads += 1
        rows += reads >= 1
    rng = np.random.default_rng(k)
    return pd.DataFrame(
        {"a": rng.normal(size=rows), "b": rng.normal(size=rows), "label": np.arange(rows) % 2}
    )


class _FitRecorder(_RecordsItsRows):
    """Writes a file when fitted (on a worker), so a test can tell whether any fit ran."""

    def __init__(self, marker=None):
        self.marker = marker

    def fit(self, X, y):
        with open(self.marker, "a") as f:
            f.write("fit\n")
        return super().fit(X, y)


def test_a_source_that_changes_between_passes_is_refused_before_any_fit(client, tmp_path):
    counter, marker = tmp_path / "reads", tmp_path / "fits"
    counter.mkdir()
    meta = pd.DataFrame({"a": [0.0], "b": [0.0], "label": [0]}).iloc[:0]
    source = dd.from_map(lambda k: _changing_partition(counter, k), range(3), meta=meta)
    clf = SubsampleAggregateClassifier(
        _FitRecorder(str(marker)), n_teachers=4, classes=[0, 1], random_state=SEED
    )
    # A dask that sees X and y as selections of one frame reads each partition once per
    # pass and finds the change at the next pass; an older dask (the floors job's) reads X
    # and y apart in the first pass, and their lengths already disagree there. Either way
    # the fit is refused before any teacher is fitted.
    with pytest.raises(
        (SourceChangedError, ValueError),
        match="changed between the pass|X and y do not hold the same number of rows",
    ):
        clf.fit(source[["a", "b"]], source["label"])
    assert not marker.exists()  # no teacher was fitted
    assert not hasattr(clf, "n_teachers_")  # nothing fitted


def test_the_rows_are_never_computed_in_the_client(client):
    X, y, _ = _data(n=300)
    Xd, yd = _dask_array(X, y)
    with pytest.raises(ValueError):
        Xd.compute(scheduler="sync")  # the guard works: computing in the client raises
    SubsampleAverageClassifier(n_teachers=5, classes=[0, 1], random_state=0).fit(Xd, yd)


def test_bad_parameters_and_a_spent_budget_refuse_with_nothing_charged(client):
    X, y, X_query = _data(n=300)
    Xd, yd = _dask_array(X, y)
    poisoned = Xd.map_blocks(lambda b: (_ for _ in ()).throw(AssertionError("ran")), dtype=float)
    with pytest.raises(InvalidParameterError, match="epsilon"):
        SubsampleAverageClassifier(epsilon=-1.0, classes=[0, 1]).fit(poisoned, yd)  # no graph ran
    with pytest.raises(InvalidParameterError, match="n_teachers=301"):
        SubsampleAggregateClassifier(n_teachers=301, classes=[0, 1]).fit(Xd, yd)
    with pytest.raises(TypeError, match="both as dask collections"):
        SubsampleAggregateClassifier(classes=[0, 1]).fit(Xd, y)
    accountant = PrivacyAccountant(1.0, ledger=":memory:")
    clf = SubsampleAggregateClassifier(
        n_teachers=5, epsilon=1.0, classes=[0, 1], accountant=accountant, random_state=0
    ).fit(Xd, yd)
    assert accountant.epsilon_spent == 0.0  # fit costs nothing
    clf.predict(X_query[:1])
    with pytest.raises(BudgetExhaustedError):
        clf.predict(X_query[:1])
    assert accountant.epsilon_spent == pytest.approx(1.0)


def test_labels_outside_classes_are_refused(client):
    X, y, _ = _data(n=300)
    with pytest.raises(ValueError, match="outside `classes`"):
        SubsampleAggregateClassifier(classes=[0, 5]).fit(*_dask_array(X, y))
    X[3, 2] = np.nan
    with pytest.raises(ValueError, match="NaN, infinity"):
        SubsampleAggregateClassifier(classes=[0, 1]).fit(*_dask_array(X, y))


def test_a_parquet_source_fits_like_its_rows_in_memory(client, tmp_path):
    # read_parquet may fuse files differently for X's columns and for y's: X and y are cut
    # from one collection, so every row keeps its label.
    X, y, X_query = _data(n=800, seed=6)
    columns = [f"f{i}" for i in range(X.shape[1])]
    frame = pd.DataFrame(X, columns=columns).assign(label=y)
    for k in range(4):
        frame.iloc[200 * k : 200 * (k + 1)].to_parquet(tmp_path / f"part-{k}.parquet")
    rows = dd.read_parquet(tmp_path)
    make = ESTIMATORS["aggregate"]
    remote = make().fit(rows[columns], rows["label"])
    local = make().fit(frame[columns], y)
    _assert_same(local, remote, pd.DataFrame(X_query, columns=columns))


# -- issue 49 item 3: X and y paired by position, as in memory ----------------------------------
def _frame(X, y):
    columns = [f"f{i}" for i in range(X.shape[1])]
    return pd.DataFrame(X, columns=columns), pd.Series(y, name="label"), columns


PAIRINGS = ["two sources", "filtered", "unnamed", "partitionings", "unknown chunks"]


def _pairings(X, y):
    """(name, dask X, dask y, in-memory X, in-memory y) for each of :data:`PAIRINGS`."""
    frame, label, columns = _frame(X, y)
    # Two collections from two sources: unknown divisions, each with its own index.
    two_x = dd.from_pandas(frame, npartitions=4).clear_divisions()
    reindexed = label.set_axis(np.arange(len(y))[::-1])  # y's file numbers its rows otherwise
    two_y = dd.from_pandas(reindexed, npartitions=4, sort=False)
    # A filtered frame: the surviving rows, in their order, with a gappy index.
    whole = dd.from_pandas(frame.assign(label=y), npartitions=5)
    kept = whole[whole["f1"] > -0.5]
    mask = frame["f1"].to_numpy() > -0.5
    # An unnamed Series, from a source of its own (unknown divisions).
    unnamed = dd.from_pandas(pd.Series(y, name=None), npartitions=3).clear_divisions()
    # Different partitionings: X in 3 partitions, y in 7; and arrays of unknown chunks.
    keep = X[:, 1] > -0.5
    Xa = da.from_array(X, chunks=(300, -1))[da.from_array(keep, 300)]  # unknown row chunks
    ya = da.from_array(y, chunks=170)[da.from_array(keep, 170)]
    return [
        ("two sources", two_x, two_y, frame, y),
        ("filtered", kept[columns], kept["label"], frame[mask], y[mask]),
        ("unnamed", dd.from_pandas(frame, npartitions=3).clear_divisions(), unnamed, frame, y),
        ("partitionings", dd.from_pandas(frame, npartitions=3), dd.from_pandas(label, 7), frame, y),
        ("unknown chunks", Xa, ya, X[keep], y[keep]),
    ]


@pytest.mark.parametrize("pairing", PAIRINGS)
def test_a_seeded_dask_fit_pairs_x_and_y_by_position_as_in_memory(client, pairing):
    X, y, X_query = _data(n=1200, seed=7)
    query = pd.DataFrame(X_query, columns=[f"f{i}" for i in range(X.shape[1])])
    for name, Xd, yd, X_mem, y_mem in _pairings(X, y):
        if name != pairing:
            continue
        remote = ESTIMATORS["aggregate"]().fit(Xd, yd)
        local = ESTIMATORS["aggregate"]().fit(X_mem, y_mem)
        rows = X_query if name == "unknown chunks" else query
        # Same teachers: the same rows, paired and ordered alike.
        assert_array_equal(remote._vote_counts(rows), local._vote_counts(rows), err_msg=name)
        _assert_same(local, remote, rows)


def test_x_and_y_of_different_lengths_are_refused_before_any_fit(client, tmp_path):
    X, y, _ = _data(n=300)
    frame, label, _ = _frame(X, y)
    marker = tmp_path / "fits"
    clf = SubsampleAggregateClassifier(
        _FitRecorder(str(marker)), n_teachers=4, classes=[0, 1], random_state=SEED
    )
    Xd = dd.from_pandas(frame, npartitions=3).clear_divisions()
    yd = dd.from_pandas(label.iloc[:-1], npartitions=3).clear_divisions()
    with pytest.raises(ValueError, match="same number of rows") as error:
        clf.fit(Xd, yd)
    assert not any(ch.isdigit() for ch in str(error.value))  # no count in the message
    assert not marker.exists() and not hasattr(clf, "n_teachers_")


class _LabelEchoes(ClassifierMixin, BaseEstimator):
    """Predicts, for a query, the label of the training row with the same id (column 0)."""

    def fit(self, X, y):
        X = np.asarray(X)
        self.labels_ = dict(zip(X[:, 0].astype(int).tolist(), np.asarray(y).tolist()))
        self.classes_ = np.array([0, 1])
        return self

    def predict(self, X):
        return np.array([self.labels_.get(int(v), 0) for v in np.asarray(X)[:, 0]])


@pytest.mark.parametrize("y_partitions", [4, 7], ids=["two sources", "other partitionings"])
def test_seeded_neighbours_on_dask_change_no_other_rows_teacher(client, y_partitions):
    # One row replaced in place (same seed): every other row keeps its teacher, as in memory.
    # (With the old pairing by index, 662 of the other 1199 rows changed teacher.)
    n = 1200
    rng = np.random.default_rng(0)
    X = np.column_stack([np.arange(n, dtype=float), rng.normal(size=(n, 3))])
    y = rng.integers(0, 2, n)
    X_prime, y_prime = X.copy(), y.copy()
    X_prime[600, 1:] = 99.0
    y_prime[600] = 1 - y[600]

    def owners(X, y):
        frame, label, _ = _frame(X, y)
        Xd = dd.from_pandas(frame, npartitions=4).clear_divisions()
        yd = dd.from_pandas(label, npartitions=y_partitions).clear_divisions()
        clf = SubsampleAggregateClassifier(
            _RecordsItsRows(), n_teachers=40, classes=[0, 1], random_state=SEED
        ).fit(Xd, yd)
        owner = np.empty(n, dtype=int)
        for j, teacher in enumerate(t for _, t in clf._ensemble._other):
            owner[teacher.seen_.astype(int)] = j
        return owner

    first, second = owners(X, y), owners(X_prime, y_prime)
    others = np.arange(n) != 600
    assert np.count_nonzero(first[others] != second[others]) == 0


class _CountsItsUnits(ClassifierMixin, BaseEstimator):
    """A canary: records how many protected units the boundary says it was handed."""

    def fit(self, X, y):
        from skprivpred._teachers._isolation import protected_units_in_call

        self.units_ = protected_units_in_call()
        self.classes_ = np.unique(y)
        return self

    def predict(self, X):
        return np.full(len(X), self.classes_[0])


def test_each_dask_teacher_fit_runs_through_the_boundary_on_one_block(client):
    X, y, _ = _data(n=300)
    clf = SubsampleAggregateClassifier(
        _CountsItsUnits(), n_teachers=5, classes=[0, 1], random_state=SEED
    ).fit(*_dask_array(X, y, chunk=100))
    fitted = [t for _, t in clf._ensemble._other]
    assert len(fitted) == 5 and [t.units_ for t in fitted] == [1] * 5
