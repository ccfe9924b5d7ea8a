"""Teacher fitting runs unchanged on a dask.distributed cluster (joblib's ``dask`` backend).

A two-worker ``LocalCluster`` on loopback stands in for a real cluster. Inside
``joblib.parallel_config(backend="dask")`` the teachers are fitted on the
workers; with the same integer seed the partition, the teachers' seeds and the
query stream are those of a local fit, so the private teachers are the same
models and the answers' law (the exact per-row output probabilities, from the
non-private diagnostic) is equal to the local one, as are seeded answers.
"""

import joblib
import numpy as np
import pytest
from _registry import make_estimator
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.datasets import make_classification
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier
from threadpoolctl import threadpool_limits

from skprivpred import SubsampleAggregateClassifier
from skprivpred._teachers import _votes as _teachers
from skprivpred.utils._testing import local_dask_client

pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")
# One cluster per module: its tests run on one parallel worker (pytest-xdist, loadgroup).
pytestmark = pytest.mark.xdist_group("dask-cluster")

SEED = 7


@pytest.fixture(scope="module")
def dask_client():
    """A 2-worker LocalCluster on loopback (worker processes) and its Client, always closed."""
    with local_dask_client() as client:
        yield client


@pytest.fixture(autouse=True)
def _one_native_thread():
    """One BLAS/OpenMP thread in the test process, as on the dask workers.

    The local reference fits are then as fast as the remote ones; on a loaded
    machine two OpenMP threads per tiny gradient-boosting fit can stall for
    seconds at every barrier.
    """
    with threadpool_limits(1):
        yield


def _data(n_classes=2, n_samples=2400, seed=0):
    X, y = make_classification(
        n_samples=n_samples,
        n_features=8,
        n_informative=5,
        n_classes=n_classes,
        n_clusters_per_class=1,
        random_state=seed,
    )
    X_query, _ = make_classification(
        n_samples=500,
        n_features=8,
        n_informative=5,
        n_classes=n_classes,
        n_clusters_per_class=1,
        random_state=seed + 1,
    )
    return X, y, X_query


def _make(base, n_classes, n_jobs):
    return make_estimator(
        SubsampleAggregateClassifier,
        estimator=base,
        epsilon=1.0,
        n_teachers=24,
        classes=list(range(n_classes)),
        n_jobs=n_jobs,
        random_state=SEED,
    )


def _fit_on_cluster(client, make_estimator, X, y):
    """Fit inside the dask backend; return the estimator and the workers that ran teacher fits."""
    with joblib.parallel_config(backend="dask"), distributed.get_task_stream(client) as stream:
        clf = make_estimator().fit(X, y)
    workers = {task["worker"] for task in stream.data if "_fit_batch" in str(task["key"])}
    return clf, workers


def _assert_same_private_model(local, remote, X_query):
    """Same partition, same vote counts and law on every query row, same seeded answers."""
    for part_local, part_remote in zip(local._partition, remote._partition, strict=True):
        assert_array_equal(part_local, part_remote)
    # Non-private diagnostics: the exact per-row law of the answers.
    assert_array_equal(local._vote_counts(X_query), remote._vote_counts(X_query))
    assert_allclose(
        local._output_distribution(X_query),
        remote._output_distribution(X_query),
        rtol=0,
        atol=1e-15,
    )
    # The query streams start from the same seed and draw the same noise.
    assert_array_equal(local.predict(X_query), remote.predict(X_query))
    assert_array_equal(local.predict(X_query), remote.predict(X_query))


@pytest.mark.parametrize("n_classes", [2, 3])
def test_linear_teachers_fitted_on_the_cluster_give_the_local_law(dask_client, n_classes):
    X, y, X_query = _data(n_classes)
    local = _make(LogisticRegression(), n_classes, n_jobs=1).fit(X, y)
    remote, workers = _fit_on_cluster(
        dask_client, lambda: _make(LogisticRegression(), n_classes, n_jobs=-1), X, y
    )
    assert workers, "no teacher was fitted on a dask worker"
    assert workers <= set(dask_client.scheduler_info()["workers"])
    # The stacked linear teachers are the same models (up to BLAS rounding).
    assert_allclose(
        remote._ensemble._stack.weights, local._ensemble._stack.weights, rtol=1e-10, atol=1e-12
    )
    _assert_same_private_model(local, remote, X_query)


def _tree():
    return DecisionTreeClassifier(max_depth=6, max_features=0.7)


def _boosting():
    return HistGradientBoostingClassifier(max_iter=5, max_leaf_nodes=8, early_stopping=False)


def _pipeline():
    return make_pipeline(StandardScaler(), LogisticRegression())


@pytest.mark.parametrize(
    "make_base, vote_block_rows",
    [
        pytest.param(_tree, None, id="tree"),
        # Small row blocks: the 500-row batch is more than one block (where the
        # ensemble votes teachers that vote through their own predict through
        # joblib, block by block; trees are voted by the stacked descent, here).
        pytest.param(_boosting, 128, id="hist-gradient-boosting-row-blocks"),
        pytest.param(_boosting, None, id="hist-gradient-boosting"),
        pytest.param(_pipeline, None, id="pipeline"),
    ],
)
def test_non_linear_teachers_fitted_and_voted_under_the_dask_backend(
    dask_client, make_base, vote_block_rows, monkeypatch
):
    if vote_block_rows is not None:
        monkeypatch.setattr(_teachers, "VOTE_BLOCK_ROWS", vote_block_rows)
    n_classes = 3
    X, y, X_query = _data(n_classes, seed=1)
    local = _make(make_base(), n_classes, n_jobs=1).fit(X, y)
    remote, workers = _fit_on_cluster(
        dask_client, lambda: _make(make_base(), n_classes, n_jobs=None), X, y
    )
    assert workers, "no teacher was fitted on a dask worker"
    # The teachers vote with the dask backend active (the batched, non-linear path).
    with joblib.parallel_config(backend="dask"), distributed.get_task_stream(dask_client) as stream:
        remote_law = remote._output_distribution(X_query)
        remote_answers = remote.predict(X_query)
    assert_array_equal(remote_law, local._output_distribution(X_query))
    assert_array_equal(remote_answers, local.predict(X_query))
    if vote_block_rows is not None:
        # A batch larger than one block is voted block by block on the workers.
        assert any("_count_votes" in str(task["key"]) for task in stream.data)
    _assert_same_private_model(local, remote, X_query)


def test_many_query_session_fitted_on_the_cluster_answers_like_the_local_one(dask_client):
    X, y, X_query = _data(2, seed=2)

    def make():
        return SubsampleAggregateClassifier(
            classes=[0, 1],
            min_samples_per_teacher=80,
            n_queries=300,
            total_epsilon=1.0,
            random_state=SEED,
        )

    local = make().fit(X, y)
    remote, workers = _fit_on_cluster(dask_client, make, X, y)
    assert workers
    assert remote.n_teachers_ == local.n_teachers_ == 30
    assert remote.epsilon_per_query_ == local.epsilon_per_query_
    assert_array_equal(remote.predict(X_query[:300]), local.predict(X_query[:300]))
    assert remote.queries_remaining_ == local.queries_remaining_ == 0


class _AlignmentRecorder(DecisionTreeClassifier):
    """A tree that records whether the rows it was fitted on were aligned in memory."""

    def fit(self, X, y):
        self.rows_aligned_ = bool(X.flags.aligned and np.asarray(y).flags.aligned)
        return super().fit(X, y)


def test_teachers_on_the_cluster_get_aligned_rows(dask_client):
    X, y, _ = _data(2, n_samples=24_000, seed=3)
    clf, workers = _fit_on_cluster(dask_client, lambda: _make(_AlignmentRecorder(), 2, -1), X, y)
    assert workers
    assert all(teacher.rows_aligned_ for _, teacher in clf._ensemble._other)
