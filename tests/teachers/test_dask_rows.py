"""The one-release estimators fit from dask collections and answer them (issue 40).

A two-worker ``LocalCluster`` on loopback stands in for a cluster. The labelled
statistic is a sum over partitions computed on the workers; with an integer seed
the released model equals an in-memory fit of the same rows. The other
estimators refuse dask collections before anything is read or charged.
"""

import sys
import warnings

import numpy as np
import pytest
from _registry import all_estimators, make_estimator
from numpy.testing import assert_allclose, assert_array_equal

from skprivpred import (
    BudgetExhaustedError,
    PrivacyAccountant,
    SufficientStatisticClassifier,
    SufficientStatisticRegressor,
)
from skprivpred._teachers._dask import DASK_METHODS
from skprivpred.linear_model import _basis as sufficient_module
from skprivpred.preprocessing import PublicScaler
from skprivpred.utils._testing import local_dask_client

da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
pd = pytest.importorskip("pandas")
distributed = pytest.importorskip("distributed")
pytestmark = [
    pytest.mark.xdist_group("dask-release"),
    pytest.mark.filterwarnings("ignore::UserWarning"),
]

SEED = 3


@pytest.fixture(scope="module")
def dask_client():
    """A 2-worker LocalCluster on loopback (worker processes) and its Client, always closed."""
    with local_dask_client() as client:
        yield client


def _on_worker(block):
    """Identity, refusing to run outside a dask worker (the labelled rows' origin)."""
    distributed.get_worker()  # ValueError outside a worker
    return block


def _data(kind, n=6000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    if kind == "binary":
        y = (X[:, 0] + X[:, 1] ** 2 > 1).astype(np.int64)
    elif kind == "multiclass":
        y = np.digitize(X[:, 0] + 0.5 * X[:, 2], [-0.5, 0.5]).astype(np.int64)
    else:
        y = np.sin(2 * X[:, 0]) + 0.3 * X[:, 1]
    public = rng.random(n) < 0.3
    y = y.astype(float) if kind == "regression" else y
    y[public] = np.nan if kind == "regression" else -1
    return X, y


def _estimator(kind, **kw):
    if kind == "regression":
        return make_estimator(
            SufficientStatisticRegressor, y_bounds=(-2, 2), random_state=SEED, **kw
        )
    classes = [0, 1] if kind == "binary" else [0, 1, 2]
    return make_estimator(SufficientStatisticClassifier, classes=classes, random_state=SEED, **kw)


def _as_dask(X, y, container, chunks=1500, on_worker=False):
    Xd = da.from_array(X, chunks=(chunks, X.shape[1]))
    yd = da.from_array(y, chunks=chunks)
    if on_worker:
        Xd = Xd.map_blocks(_on_worker, dtype=Xd.dtype)
        yd = yd.map_blocks(_on_worker, dtype=yd.dtype)
    if container == "array":
        return Xd, yd
    frame = dd.from_dask_array(Xd, columns=["a", "b", "c"])
    target = dd.from_dask_array(yd)
    return frame, target


@pytest.mark.parametrize("kind", ["binary", "multiclass", "regression"])
@pytest.mark.parametrize("container", ["array", "frame"])
def test_fit_on_dask_releases_the_in_memory_model(dask_client, kind, container):
    X, y = _data(kind)
    local = _estimator(kind).fit(
        pd.DataFrame(X, columns=list("abc")) if container == "frame" else X, y
    )
    Xd, yd = _as_dask(X, y, container, on_worker=True)
    remote = _estimator(kind).fit(Xd, yd)
    # The reduced statistic equals the in-memory one to float tolerance ...
    s_local, plan = _estimator(kind)._exact_statistic(X, y)
    s_remote, plan_remote = _estimator(kind)._exact_statistic(Xd, yd)
    assert_allclose(s_remote, s_local, rtol=1e-12, atol=1e-9)
    assert plan == plan_remote
    # ... its grid index is the same, so the seeded release and the model are identical.
    assert_array_equal(np.rint(s_remote / plan["step"]), np.rint(s_local / plan["step"]))
    assert_array_equal(remote._released_statistic, local._released_statistic)
    assert_allclose(remote._coef, local._coef, rtol=1e-9, atol=1e-12)
    assert remote.n_labelled_ == local.n_labelled_ and remote.n_public_ == local.n_public_
    assert remote.privacy_guarantee_ == local.privacy_guarantee_
    # Answers on dask: lazy, the input's row partitioning, the in-memory values.
    Xq = np.random.default_rng(9).normal(size=(1000, 3))
    Xq_d = da.from_array(Xq, chunks=(300, 3))
    if container == "frame":
        Xq_d = dd.from_dask_array(Xq_d, columns=["a", "b", "c"])
        Xq = pd.DataFrame(Xq, columns=list("abc"))
    methods = (
        ["predict"] if kind == "regression" else ["predict", "predict_proba", "decision_function"]
    )
    for method in methods:
        lazy = getattr(remote, method)(Xq_d)
        assert isinstance(lazy, da.Array)
        if container == "array":
            assert lazy.chunks[0] == Xq_d.chunks[0]
        else:
            assert lazy.numblocks[0] == Xq_d.npartitions
        values = lazy.compute()
        assert_allclose(values, getattr(local, method)(Xq), rtol=1e-9, atol=1e-12)


def test_labelled_rows_never_reach_the_client(dask_client, monkeypatch):
    """Everything gathered into the client holds no labelled row's value."""
    X, y = _data("binary", n=4000, seed=1)
    labelled_values = X[y != -1].ravel()
    gathered = []
    original = distributed.Client.gather

    def spy(self, futures, *args, **kwargs):
        result = original(self, futures, *args, **kwargs)
        gathered.append(result)
        return result

    monkeypatch.setattr(distributed.Client, "gather", spy)
    Xd, yd = _as_dask(X, y, "array", chunks=700, on_worker=True)
    acc = PrivacyAccountant(epsilon=5.0, delta=1e-5, ledger=":memory:")
    clf = _estimator("binary", accountant=acc).fit(Xd, yd)
    assert acc.epsilon_spent == pytest.approx(1.0)
    arrays = []

    def collect(obj):
        if isinstance(obj, np.ndarray) and obj.dtype.kind == "f":
            arrays.append(obj.ravel())
        elif isinstance(obj, (list, tuple)):
            for item in obj:
                collect(item)
        elif isinstance(obj, dict):
            for item in obj.values():
                collect(item)

    collect(gathered)
    assert gathered and arrays  # the spy saw the results
    seen = np.concatenate(arrays)
    assert not np.isin(seen, labelled_values).any()
    # The public rows did come (they may): the basis is built from them.
    assert np.isin(X[y == -1].ravel(), seen).all()
    # The data's tasks refuse the client: a synchronous compute here raises.
    with pytest.raises(ValueError):
        Xd.compute(scheduler="sync")
    assert clf.n_labelled_ == int((y != -1).sum())


def test_public_sample_is_one_rule_for_both_paths(dask_client, monkeypatch):
    """More public rows than the cap: the same seeded sample in memory and on dask."""
    monkeypatch.setattr(sufficient_module, "MAX_PUBLIC_ROWS", 500)
    X, y = _data("binary", n=4000, seed=2)
    local = _estimator("binary").fit(X, y)
    remote = _estimator("binary").fit(*_as_dask(X, y, "array", chunks=900))
    assert local.n_public_ == remote.n_public_ > 500
    assert_array_equal(remote._released_statistic, local._released_statistic)
    assert_allclose(remote._coef, local._coef, rtol=1e-9, atol=1e-12)
    assert all(np.array_equal(a, b) for a, b in zip(remote._transformers, local._transformers))


def test_spent_budget_refuses_before_any_graph_runs(monkeypatch):
    X, y = _data("binary", n=600)
    acc = PrivacyAccountant(epsilon=1.5, delta=1e-5, ledger=":memory:")
    _estimator("binary", accountant=acc).fit(X, y)
    spent = acc.spent()

    def explode(block):
        raise AssertionError("a graph over the rows ran")

    Xd = da.from_array(X, chunks=(200, 3)).map_blocks(explode, dtype=float)
    yd = da.from_array(y, chunks=200).map_blocks(explode, dtype=y.dtype)
    clf = _estimator("binary", accountant=acc)
    with pytest.raises(BudgetExhaustedError) as dask_refusal:
        clf.fit(Xd, yd)
    with pytest.raises(BudgetExhaustedError) as memory_refusal:
        _estimator("binary", accountant=acc).fit(X, y)
    assert str(dask_refusal.value) == str(memory_refusal.value)
    assert acc.spent() == spent
    assert not hasattr(clf, "privacy_guarantee_")
    with pytest.raises(ValueError, match="delta=0"):
        _estimator("binary", delta=0).fit(Xd, yd)


@pytest.mark.parametrize("missing", ["distributed", "pandas", "pyarrow"])
def test_missing_extra_names_it_and_charges_nothing(monkeypatch, missing):
    X, y = _data("binary", n=600)
    Xd, yd = _as_dask(X, y, "frame", chunks=200)
    acc = PrivacyAccountant(epsilon=5.0, delta=1e-5, ledger=":memory:")
    monkeypatch.setitem(sys.modules, missing, None)
    with pytest.raises(ImportError, match=r"skprivpred\[dask\]") as error:
        _estimator("binary", accountant=acc).fit(Xd, yd)
    assert missing in str(error.value)
    assert acc.spent() == (0.0, 0.0)


def test_unlabelled_rows_warning_on_dask(dask_client):
    from skprivpred import UnlabelledRowsWarning

    X, y = _data("regression", n=900)
    Xd, yd = _as_dask(X, y, "array", chunks=300)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _estimator("regression").fit(Xd, yd)
    messages = [str(w.message) for w in caught if w.category is UnlabelledRowsWarning]
    assert any(f"took {int(np.isnan(y).sum())} of 900 rows" in m for m in messages)


def test_user_basis_failures_give_the_zero_block_on_dask(dask_client):
    """A user basis raising on some labelled values: the same statistic on both paths."""
    from sklearn.preprocessing import FunctionTransformer

    def picky(v):
        if np.any(v > 1.5):
            raise ValueError("no")
        return np.hstack([v, v**2])

    X, y = _data("binary", n=1500, seed=4)
    X[y == -1] = np.clip(X[y == -1], -1.4, 1.4)  # the public rows transform fine
    est = _estimator("binary", basis=FunctionTransformer(picky))
    s_local, _ = est._exact_statistic(X, y)
    s_remote, _ = est._exact_statistic(*_as_dask(X, y, "array", chunks=400))
    assert_allclose(s_remote, s_local, rtol=1e-12, atol=1e-9)


def test_misaligned_or_mixed_inputs_are_refused():
    X, y = _data("binary", n=600)
    Xd = da.from_array(X, chunks=(200, 3))
    with pytest.raises(TypeError, match="both as dask collections"):
        _estimator("binary").fit(Xd, y)
    with pytest.raises(ValueError, match="entries but X has"):
        _estimator("binary").fit(Xd, da.from_array(y[:500], chunks=100))


# -- every other estimator refuses dask collections -------------------------------------------
def _public_estimators():
    return [  # the suite's registry (tests/_registry.py)
        cls
        for cls in all_estimators()
        if f"{cls.__module__}.{cls.__qualname__}" not in DASK_METHODS
    ]


ANSWERING = (
    "fit",
    "partial_fit",
    "predict",
    "predict_proba",
    "decision_function",
    "score",
    "score_samples",
)


@pytest.mark.parametrize("cls", _public_estimators(), ids=lambda c: c.__name__)
def test_other_estimators_refuse_dask_collections(cls, monkeypatch):
    X = da.from_array(np.zeros((10, 2)), chunks=(5, 2)).map_blocks(
        lambda b: (_ for _ in ()).throw(AssertionError("computed")), dtype=float
    )
    y = da.from_array(np.zeros(10), chunks=5)
    for method in ANSWERING:
        if not hasattr(cls, method):
            continue
        # Not constructed with parameters, not fitted: the refusal comes before any check.
        estimator = cls.__new__(cls)
        if not hasattr(estimator, method):  # available_if: only once refitted
            continue
        with pytest.raises(TypeError, match="does not take a dask collection"):
            getattr(estimator, method)(X, y) if method in (
                "fit",
                "partial_fit",
                "score",
            ) else getattr(estimator, method)(X)


def test_refusal_names_what_takes_dask_and_charges_nothing():
    X, y = _data("binary", n=600)
    acc = PrivacyAccountant(epsilon=5.0, delta=1e-5, ledger=":memory:")
    clf = _estimator("binary", accountant=acc).fit(X, y)
    spent = acc.spent()
    with pytest.raises(TypeError, match="takes dask collections in decision_function, fit"):
        clf.score(da.from_array(X, chunks=(200, 3)), y)
    from skprivpred import StableERMClassifier

    with pytest.raises(TypeError, match="SufficientStatisticClassifier") as error:
        StableERMClassifier(accountant=acc).fit(da.from_array(X, chunks=(200, 3)), y)
    assert "Nothing was fitted, answered or charged" in str(error.value)
    assert acc.spent() == spent
    with pytest.raises(TypeError, match="PublicScaler.fit"):
        PublicScaler().fit(da.from_array(X, chunks=(200, 3)))
