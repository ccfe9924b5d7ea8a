"""Teacher ensembles answer dask collections of queries (issue 40, item 4).

A two-worker ``LocalCluster`` on loopback, started and closed by this module.
Every answer to a dask collection is charged before any vote is counted (a
spent budget refuses before any task over the queries runs), the votes are
counted on the workers, the noise is drawn in the client, and the returned
dask array holds the drawn answers: computing it again replays them. With an
integer seed the answers' law (the vote counts / averages the draw receives)
equals the in-memory law on the same rows, and the seeded answers equal the
in-memory call's bitwise (same stream position).
"""

import dataclasses
import warnings

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_array_equal
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression

from skprivpred import (
    BudgetExhaustedError,
    PrivacyAccountant,
    SubsampleAggregateClassifier,
    SubsampleAverageClassifier,
    SubsampleAverageRegressor,
)
from skprivpred._teachers import _dask_queries
from skprivpred._teachers._votes import TeacherEnsemble
from skprivpred.exceptions import HorizonExhaustedError
from skprivpred.utils._testing import local_dask_client

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")
pytestmark = pytest.mark.xdist_group("dask-queries")

SEED = 11
N_QUERIES = 600


@pytest.fixture(scope="module")
def dask_client():
    """A 2-worker LocalCluster on loopback (worker processes) and its Client, always closed."""
    with local_dask_client() as client:
        yield client


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the integer seeds' PrivacyWarning
        yield


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(
        n_samples=1500, n_features=6, n_informative=4, n_classes=3, random_state=0
    )
    Q, _ = make_classification(
        n_samples=N_QUERIES, n_features=6, n_informative=4, n_classes=3, random_state=1
    )
    return X, y, Q


def _aggregate(**kw):
    return SubsampleAggregateClassifier(n_teachers=20, classes=[0, 1], random_state=SEED, **kw)


def _aggregate3(**kw):
    return SubsampleAggregateClassifier(n_teachers=20, classes=[0, 1, 2], random_state=SEED, **kw)


def _average(**kw):
    return SubsampleAverageClassifier(n_teachers=20, classes=[0, 1], random_state=SEED, **kw)


def _average3_proba(**kw):
    return SubsampleAverageClassifier(
        n_teachers=20, classes=[0, 1, 2], base_output="proba", random_state=SEED, **kw
    )


def _regressor(**kw):
    return SubsampleAverageRegressor(n_teachers=10, y_bounds=(-1.0, 3.0), random_state=SEED, **kw)


CASES = (
    [
        pytest.param(_aggregate, "predict", 2, kind, id=f"aggregate-predict-{kind}")
        for kind in ("array", "unknown-chunks", "frame")
    ]
    + [
        pytest.param(_aggregate3, "predict", 3, "frame", id="aggregate3-predict-frame"),
        pytest.param(_average, "predict", 2, "unknown-chunks", id="average-predict-unknown-chunks"),
        pytest.param(_average, "predict_proba", 2, "frame", id="average-predict_proba-frame"),
        pytest.param(_average, "decision_function", 2, "array", id="average-decision-array"),
        pytest.param(_average3_proba, "predict", 3, "array", id="average3-proba-predict-array"),
        pytest.param(
            _average3_proba, "predict_proba", 3, "unknown-chunks", id="average3-proba-proba-unknown"
        ),
    ]
    + [
        pytest.param(_regressor, "predict", None, kind, id=f"regressor-predict-{kind}")
        for kind in ("array", "unknown-chunks", "frame")
    ]
)


def _labels(y, n_classes):
    if n_classes is None:
        return y.astype(float)
    return y if n_classes == 3 else (y > 0).astype(int)


def _queries(Q, kind):
    """The query rows as a dask collection, and the row chunks the answers must have."""
    if kind == "array":
        return da.from_array(Q, chunks=(150, 4)), (150, 150, 150, 150)
    if kind == "unknown-chunks":
        x = da.from_array(Q, chunks=(200, 6))
        x = x[x[:, 0] > -np.inf]  # every row, in chunks of unknown length
        assert np.isnan(x.chunks[0][0])
        return x, (200, 200, 200)
    frame = dd.from_pandas(pd.DataFrame(Q, columns=[f"f{j}" for j in range(6)]), npartitions=3)
    return frame, tuple(len(p) for p in np.array_split(np.arange(N_QUERIES), 3))


def _fit(make, X, y, **kw):
    return make(**kw).fit(X, y)


def _recording_plans(monkeypatch):
    """Record the secret values each dask call's draw receives (the exact law's input)."""
    seen = []
    original = _dask_queries.answer_queries

    def answer_queries(estimator, X, plan):
        def draw(values, rng):
            seen.append(np.array(values))
            return plan.draw(values, rng)

        return original(estimator, X, dataclasses.replace(plan, draw=draw))

    monkeypatch.setattr(_dask_queries, "answer_queries", answer_queries)
    return seen


def _secret_values(estimator, Q):
    """The in-memory secret values (non-private diagnostics) the law is computed from."""
    if isinstance(estimator, SubsampleAggregateClassifier):
        return estimator._vote_counts(Q)
    return estimator._raw_score(Q)


@pytest.mark.parametrize("make, method, n_classes, kind", CASES)
def test_dask_answers_equal_the_in_memory_answers(
    dask_client, data, monkeypatch, make, method, n_classes, kind
):
    X, y, Q = data
    y = _labels(y, n_classes)
    accountant = PrivacyAccountant(ledger=":memory:")
    remote = _fit(make, X, y, accountant=accountant)
    local = _fit(make, X, y)
    queries, row_chunks = _queries(Q, kind)
    seen = _recording_plans(monkeypatch)

    # The client counts no vote itself: the teachers are counted where the rows live.
    def vote_counts(*args, **kwargs):
        pytest.fail("votes counted in the client")

    vote_counts.__name__ = "vote_counts"  # (a bound method pickles by name: workers count)
    monkeypatch.setattr(TeacherEnsemble, "vote_counts", vote_counts)
    with distributed.get_task_stream(dask_client) as stream:
        answers = getattr(remote, method)(queries)
    monkeypatch.undo()
    assert isinstance(answers, da.Array)
    assert answers.chunks[0] == row_chunks
    workers = {t["worker"] for t in stream.data if "_block_values" in str(t["key"])}
    assert workers and workers <= set(dask_client.scheduler_info()["workers"])
    # Charged once, for every row, before the answers existed.
    assert accountant.queries_answered == N_QUERIES
    assert remote.queries_answered_ == N_QUERIES
    first, second = answers.compute(), answers.compute()
    assert_array_equal(first, second)  # computing again replays the same answers
    assert accountant.queries_answered == N_QUERIES
    # The exact law: the draw received the in-memory secret values of the same rows.
    values = np.concatenate(seen, axis=0)
    assert_array_equal(values, _secret_values(local, Q))
    # Seeded answers: the same stream position gives bitwise the in-memory answers.
    assert_array_equal(first, getattr(local, method)(Q))


def test_recomputation_after_the_workers_restart_replays_the_answers(dask_client, data):
    X, y, Q = data
    clf = _fit(_aggregate, X, (y > 0).astype(int))
    answers = clf.predict(da.from_array(Q, chunks=100))
    before = answers.compute()
    dask_client.restart()  # every worker, and what it held, is lost: recompute from the graph
    dask_client.wait_for_workers(2, timeout=30)
    assert_array_equal(answers.compute(), before)
    assert clf.queries_answered_ == N_QUERIES


def _poisoned_array(n_rows=N_QUERIES, chunks=150):
    """A dask array whose value tasks raise when they run."""

    def poison(block):
        raise RuntimeError("a task over the queries' values ran")

    base = da.zeros((n_rows, 6), chunks=(chunks, 6))
    return base.map_blocks(poison, dtype=float)


def _poisoned_frame():
    def poison(k):
        raise RuntimeError("a task over the queries' values ran")

    meta = pd.DataFrame({f"f{j}": pd.Series(dtype=float) for j in range(6)})
    return dd.from_delayed([dask.delayed(poison)(k) for k in range(3)], meta=meta)


@pytest.mark.parametrize("make", [_aggregate, _average, _regressor])
@pytest.mark.parametrize("poisoned", [_poisoned_array, _poisoned_frame])
def test_spent_budget_refuses_before_any_task_runs(dask_client, data, make, poisoned):
    X, y, Q = data
    accountant = PrivacyAccountant(epsilon=2.0, ledger=":memory:")
    frame = poisoned is _poisoned_frame
    clf = _fit(
        make,
        X,
        y.astype(float) if make is _regressor else (y > 0).astype(int),
        accountant=accountant,
    )
    columns = [f"f{j}" for j in range(6)]
    spend = pd.DataFrame(Q[:2], columns=columns) if frame else Q[:2]
    clf.predict(spend)  # the budget is now spent
    spent = accountant.spent()
    queries = poisoned()
    with pytest.raises(RuntimeError, match="ran"):  # (the collection does poison its tasks)
        queries.compute()
    with pytest.raises(BudgetExhaustedError):
        clf.predict(queries)
    assert accountant.spent() == spent and accountant.queries_answered == 2
    assert clf.queries_answered_ == 2


def test_budget_too_small_for_known_rows_refuses_before_any_task_runs(dask_client, data):
    X, y, Q = data
    accountant = PrivacyAccountant(epsilon=50.0, ledger=":memory:")
    clf = _fit(_aggregate, X, (y > 0).astype(int), accountant=accountant)
    with pytest.raises(BudgetExhaustedError):
        clf.predict(_poisoned_array())  # 600 rows known from the chunks, 50 fit
    assert accountant.queries_answered == 0
    assert clf.predict(da.from_array(Q[:50], chunks=25)).compute().shape == (50,)
    assert accountant.queries_answered == 50


def test_budget_too_small_for_counted_rows_refuses_before_any_vote(dask_client, data):
    X, y, Q = data
    accountant = PrivacyAccountant(epsilon=50.0, ledger=":memory:")
    clf = _fit(_average, X, (y > 0).astype(int), accountant=accountant)
    queries, _ = _queries(Q, "frame")  # lengths counted first (public), then refused
    with pytest.raises(BudgetExhaustedError):
        clf.predict(queries)
    assert accountant.queries_answered == 0 and accountant.spent() == (0.0, 0.0)


def test_horizon_refuses_before_any_task_runs(dask_client, data):
    X, y, _ = data
    clf = SubsampleAggregateClassifier(
        classes=[0, 1], n_teachers=20, n_queries=100, total_epsilon=1.0, random_state=SEED
    ).fit(X, (y > 0).astype(int))
    with pytest.raises(HorizonExhaustedError):
        clf.predict(_poisoned_array())
    assert clf.queries_remaining_ == 100


def test_bad_rows_refuse_before_the_charge(dask_client, data):
    X, y, Q = data
    accountant = PrivacyAccountant(ledger=":memory:")
    clf = _fit(_aggregate, X, (y > 0).astype(int), accountant=accountant)
    bad = Q.copy()
    bad[450, 2] = np.nan  # in the last chunk
    with pytest.raises(ValueError, match="NaN"):
        clf.predict(da.from_array(bad, chunks=150))
    with pytest.raises(ValueError, match="features"):
        clf.predict(da.from_array(Q[:, :5], chunks=150))
    with pytest.raises(ValueError, match="0 sample"):
        clf.predict(da.from_array(Q[:0], chunks=150))
    assert accountant.queries_answered == 0 and clf.queries_answered_ == 0


def test_dry_run_refuses_text_columns_the_base_estimator_cannot_read(dask_client, data):
    X, y, _ = data
    frame = pd.DataFrame(X[:, :2], columns=["a", "b"]).assign(c=np.where(y > 0, "x", "y"))
    accountant = PrivacyAccountant(ledger=":memory:")
    clf = SubsampleAggregateClassifier(
        LogisticRegression(), n_teachers=10, classes=[0, 1], accountant=accountant
    ).fit(frame, (y > 0).astype(int))
    with pytest.raises(ValueError, match="cannot read"):
        clf.predict(dd.from_pandas(frame.iloc[:300], npartitions=3))
    assert accountant.queries_answered == 0


def test_score_on_dask_queries_charges_each_row_once(dask_client, data):
    X, y, Q = data
    labels = (y > 0).astype(int)
    accountant = PrivacyAccountant(ledger=":memory:")
    clf = _fit(_aggregate, X, labels, accountant=accountant)
    score = clf.score(da.from_array(X[:300], chunks=100), labels[:300])
    assert 0.0 <= score <= 1.0
    assert accountant.queries_answered == 300


def test_student_mode_answers_dask_queries_for_free_and_a_student_refuses(dask_client, data):
    X, y, Q = data
    labels = (y > 0).astype(int)
    accountant = PrivacyAccountant(ledger=":memory:")
    clf = _fit(_aggregate, X, labels, accountant=accountant, student=LogisticRegression())
    with pytest.raises(TypeError, match="student"):
        clf.predict(da.from_array(Q, chunks=150))
    with pytest.raises(TypeError, match="dask collection"):
        clf.fit_student(da.from_array(Q, chunks=150))
    assert accountant.queries_answered == 0
    clf.fit_student(Q[:200])
    queries = da.from_array(Q, chunks=150)
    assert_array_equal(clf.predict(queries).compute(), clf.predict(Q))
    assert_array_equal(clf.predict_proba(queries).compute(), clf.predict_proba(Q))
    assert accountant.queries_answered == 200


def test_a_source_that_changes_between_the_passes_releases_nothing(dask_client, data, tmp_path):
    X, y, _ = data
    accountant = PrivacyAccountant(ledger=":memory:")
    clf = _fit(_regressor, X, y.astype(float), accountant=accountant)
    marker = str(tmp_path / "counted")

    def changing(marker=marker):  # 100 rows when first read, 101 afterwards
        import os

        first = not os.path.exists(marker)
        if first:
            open(marker, "w").close()
        return np.zeros((100 if first else 101, 6))

    block = da.from_delayed(dask.delayed(changing, pure=False)(), (np.nan, 6), float)
    with pytest.raises(RuntimeError, match="changed between the two passes"):
        clf.predict(block)
    # Charged for the counted rows (a crash over-counts, never under-counts); nothing released.
    assert accountant.queries_answered == 100
    assert clf.queries_answered_ == 0
