"""Privacy state never forks: scikit-learn workflows, copies, processes and seeds.

What is checked (each was a measured privacy bug before the ledger):

* ``cross_val_score`` and ``GridSearchCV`` with ``n_jobs=2`` (loky worker processes)
  and one shared accountant: the spending equals the rows answered times epsilon, and a
  budget too small for the whole search is refused in the workers and visible in the
  parent.
* Noise replay: two clones of an estimator whose ``random_state`` is a ``Generator``
  agree on their answers only as often as independent draws do (exact law), while a
  variant that still derives the answers' noise from the copied ``Generator`` is flagged.
* The many-query horizon is one for the original, deep copies, pickled copies, a
  loky worker and another process: together they answer at most ``n_queries`` rows.
* The student hand-off raises the accountant's refusal at once instead of looping.
* Integer seeds warn; a ledger that fails leaves the estimator's noise stream untouched.
* Forks: a child made by ``os.fork`` or a fork-based pool draws fresh noise from every
  stream (the parent's next noise is never replayed), is not deadlocked by a lock held at
  the fork, and cannot charge a ``":memory:"`` ledger; such a ledger sent to worker
  processes fails with one clear ``LedgerError``.
"""

from __future__ import annotations

import contextlib
import copy
import math
import os
import pickle
import signal
import subprocess
import sys
import textwrap
import threading
import time
import warnings

import joblib
import numpy as np
import pytest
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score

import skprivpred._base as base
from skprivpred import (
    BudgetExhaustedError,
    HorizonExhaustedError,
    LedgerError,
    PrivacyAccountant,
    PrivacyWarning,
    SubsampleAggregateClassifier,
    SubsampleAverageRegressor,
)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 4))
    y = (X[:, 0] + 0.5 * X[:, 1] + rng.normal(scale=0.8, size=600) > 0).astype(int)
    return X, y


# -- scikit-learn workflows in worker processes -----------------------------------------------
def test_cross_val_score_in_two_processes_charges_one_budget(data):
    X, y = data
    acc = PrivacyAccountant(epsilon=1500.0)
    clf = SubsampleAggregateClassifier(epsilon=0.5, classes=[0, 1], accountant=acc)
    scores = cross_val_score(clf, X, y, cv=KFold(3), n_jobs=2)
    assert scores.shape == (3,)
    # Every row is scored exactly once, in one of two loky worker processes.
    assert acc.queries_answered == X.shape[0]
    assert acc.epsilon_spent == pytest.approx(0.5 * X.shape[0], rel=1e-12)
    history = acc.history()
    assert set(history["estimator"]) == {"SubsampleAggregateClassifier"}
    assert history["rows"].sum() == X.shape[0]


def test_grid_search_in_two_processes_charges_one_budget(data):
    X, y = data
    acc = PrivacyAccountant(epsilon=1e6)
    clf = SubsampleAggregateClassifier(epsilon=0.25, classes=[0, 1], accountant=acc)
    search = GridSearchCV(clf, {"n_teachers": [5, 10]}, cv=KFold(3), n_jobs=2, refit=False)
    search.fit(X, y)
    assert acc.queries_answered == 2 * X.shape[0]  # two candidates, every row scored once
    assert acc.epsilon_spent == pytest.approx(0.25 * 2 * X.shape[0], rel=1e-12)


def test_a_budget_too_small_for_the_search_is_refused_in_the_workers(data):
    X, y = data
    cap_rows = 300  # less than the 2 x 600 rows the search would answer
    acc = PrivacyAccountant(epsilon=0.25 * cap_rows)
    clf = SubsampleAggregateClassifier(epsilon=0.25, classes=[0, 1], accountant=acc)
    search = GridSearchCV(
        clf, {"n_teachers": [5, 10]}, cv=KFold(3), n_jobs=2, refit=False, error_score="raise"
    )
    with pytest.raises(BudgetExhaustedError):
        search.fit(X, y)
    # What the workers spent is in the parent's view of the ledger, and within the cap.
    assert 0 < acc.queries_answered <= cap_rows
    assert acc.queries_answered % 200 == 0  # whole folds only: a refused fold charges nothing
    assert acc.epsilon_spent <= 0.25 * cap_rows * (1 + 1e-12)


# -- noise never replays across clones ----------------------------------------------------------
def _legacy_spawn_streams(random_state):
    """The pre-0.2 derivation: both streams from the (copied) random_state object."""
    if isinstance(random_state, np.random.Generator):
        seq = np.random.SeedSequence(random_state.integers(0, 2**63, size=4).tolist())
    else:
        return base_spawn_streams(random_state)
    fit_seq, query_seq = seq.spawn(2)
    return np.random.default_rng(fit_seq), np.random.default_rng(query_seq)


base_spawn_streams = base.spawn_streams


def clone_agreement_excess(X, y, queries) -> float:
    """Agreements of two clones' answers minus the exact expectation under independence.

    Divided by the Hoeffding deviation at false-alarm probability 1e-6: a value above 1
    means the clones share noise.
    """
    template = SubsampleAggregateClassifier(
        epsilon=0.2, n_teachers=15, classes=[0, 1], random_state=np.random.default_rng(7)
    )
    a, b = clone(template).fit(X, y), clone(template).fit(X, y)
    law_a, law_b = a._output_distribution(queries), b._output_distribution(queries)
    expected = float(np.sum(law_a * law_b))  # P(equal answers) row by row, independent draws
    agree = int(np.sum(a.predict(queries) == b.predict(queries)))
    n = queries.shape[0]
    return (agree - expected) / math.sqrt(n * math.log(1e6) / 2)


def test_clones_with_a_generator_seed_do_not_share_noise(data, monkeypatch):
    X, y = data
    queries = np.random.default_rng(1).normal(size=(2000, 4))
    assert clone_agreement_excess(X, y, queries) < 1.0
    # The same detector flags the old derivation (the noise came from the copied Generator).
    monkeypatch.setattr(base, "spawn_streams", _legacy_spawn_streams)
    assert clone_agreement_excess(X, y, queries) > 1.0


def test_regressor_clones_with_a_generator_seed_do_not_replay_noise(monkeypatch):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(400, 3))
    y = X[:, 0] + rng.normal(scale=0.1, size=400)
    queries = rng.normal(size=(200, 3))
    template = SubsampleAverageRegressor(
        epsilon=1.0, n_teachers=10, y_bounds=(-3.0, 3.0), random_state=np.random.default_rng(3)
    )

    def answers_equal():
        a, b = clone(template).fit(X, y), clone(template).fit(X, y)
        return np.mean(a.predict(queries) == b.predict(queries))

    # Independent noise on a grid: two answers coincide rarely; shared noise: always.
    assert answers_equal() < 0.5
    monkeypatch.setattr(base, "spawn_streams", _legacy_spawn_streams)
    assert answers_equal() == 1.0


@pytest.mark.parametrize("random_state", [None, 0, np.random.default_rng(0)])
def test_copies_of_a_fitted_estimator_draw_fresh_noise(data, random_state):
    X, y = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        clf = SubsampleAggregateClassifier(
            epsilon=0.05, n_teachers=5, classes=[0, 1], random_state=random_state
        ).fit(X, y)
    queries = np.zeros((400, 4))  # near the boundary: answers close to a coin flip
    copies = [copy.deepcopy(clf), pickle.loads(pickle.dumps(clf))]
    answers = [clf.predict(queries), *(c.predict(queries) for c in copies)]
    for other in answers[1:]:
        assert not np.array_equal(answers[0], other)


def test_an_integer_seed_warns_that_it_seeds_the_noise(data):
    X, y = data
    with pytest.warns(PrivacyWarning, match="an integer random_state seeds the noise"):
        SubsampleAggregateClassifier(classes=[0, 1], random_state=3).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyWarning)
        SubsampleAggregateClassifier(classes=[0, 1]).fit(X, y)
        SubsampleAggregateClassifier(classes=[0, 1], random_state=np.random.default_rng()).fit(X, y)


# -- one horizon for all copies ------------------------------------------------------------------
def _many_query_session(X, y, **params):
    return SubsampleAggregateClassifier(
        n_queries=10, total_epsilon=1.0, total_delta=1e-6, classes=[0, 1], **params
    ).fit(X, y)


def _answer_in_a_worker(clf, rows):
    """Answer in a loky worker process (the estimator arrives pickled)."""
    try:
        return len(clf.predict(rows))
    except HorizonExhaustedError:
        return -1


def test_deep_copies_pickles_and_workers_share_one_horizon(data):
    X, y = data
    clf = _many_query_session(X, y)
    q = X[:1]
    assert len(clf.predict(np.repeat(q, 3, axis=0))) == 3
    twin, restored = copy.deepcopy(clf), pickle.loads(pickle.dumps(clf))
    assert len(twin.predict(np.repeat(q, 2, axis=0))) == 2
    assert len(restored.predict(np.repeat(q, 2, axis=0))) == 2
    worker = joblib.Parallel(n_jobs=2, backend="loky")(
        joblib.delayed(_answer_in_a_worker)(clf, np.repeat(q, 2, axis=0)) for _ in range(2)
    )
    assert sorted(worker) == [-1, 2]  # 9 answered, so only one of the two workers fits
    for session in (clf, twin, restored):
        assert session.queries_answered_ == 9
        assert session.queries_remaining_ == 1
    with pytest.raises(HorizonExhaustedError, match="n_queries=10.*; 1 row remains"):
        twin.predict(np.repeat(q, 2, axis=0))
    assert len(restored.predict(q)) == 1
    for session in (clf, twin, restored):
        with pytest.raises(HorizonExhaustedError):
            session.predict(q)
    assert clf._horizon_accountant.queries_answered == 10


def test_the_horizon_survives_a_restart_with_a_file_ledger(data, tmp_path):
    X, y = data
    acc = PrivacyAccountant(epsilon=10.0, delta=1e-5, ledger=str(tmp_path / "b.db"))
    clf = _many_query_session(X, y, accountant=acc)
    clf.predict(X[:6])
    model = tmp_path / "model.joblib"
    joblib.dump(clf, model)
    script = textwrap.dedent(
        f"""
        import joblib
        from skprivpred import HorizonExhaustedError
        clf = joblib.load({str(model)!r})
        print(len(clf.predict(clf_rows := __import__("numpy").zeros((4, 4)))))
        try:
            clf.predict(clf_rows[:1])
        except HorizonExhaustedError:
            print("refused")
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    ).stdout.split()
    assert out == ["4", "refused"]
    assert clf.queries_answered_ == 10 and acc.queries_answered == 10


def test_replacing_the_accountant_after_fit_cannot_reset_the_horizon(data):
    X, y = data
    clf = _many_query_session(X, y, accountant=PrivacyAccountant(epsilon=10.0, delta=1e-5))
    clf.predict(X[:10])
    fresh = PrivacyAccountant(epsilon=10.0, delta=1e-5)
    clf.set_params(accountant=fresh)
    with pytest.raises(ValueError, match="replaced after fit"):
        clf.predict(X[:1])
    assert fresh.queries_answered == 0


# -- the student hand-off ------------------------------------------------------------------------
def test_student_mode_raises_the_accountants_refusal_at_once(data):
    X, y = data
    acc = PrivacyAccountant(epsilon=1e-6)  # refuses every row
    clf = _many_query_session(
        X, y, accountant=acc, student=LogisticRegression(), on_exhausted="student"
    )
    outcome = []

    def call():
        try:
            clf.predict(X[:3])
        except BudgetExhaustedError as exc:
            outcome.append(exc)

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    thread.join(timeout=60)
    assert not thread.is_alive(), "predict kept retrying a refusal of the accountant"
    assert len(outcome) == 1 and not isinstance(outcome[0], HorizonExhaustedError)
    assert acc.queries_answered == 0 and clf.mode_ == "aggregate"


def test_a_copy_whose_horizon_was_spent_by_others_refuses_clearly(data):
    X, y = data
    clf = _many_query_session(X, y, student=LogisticRegression(), on_exhausted="student")
    twin = copy.deepcopy(clf)
    clf.predict(X[:10])  # the original spends the whole horizon
    with pytest.raises(HorizonExhaustedError, match="used up by other copies"):
        twin.predict(X[:2])
    assert clf.predict(X[:5]).shape == (5,)  # the original hands off to its student


# -- a failing ledger draws no noise -------------------------------------------------------------
def test_a_ledger_error_leaves_the_noise_stream_untouched(data, tmp_path):
    X, y = data
    path = tmp_path / "b.db"
    acc = PrivacyAccountant(epsilon=100.0, ledger=str(path), timeout=0.2)
    clf = SubsampleAggregateClassifier(classes=[0, 1], accountant=acc).fit(X, y)
    clf.predict(X[:2])
    state = copy.deepcopy(clf._query_stream.rng.bit_generator.state)
    import sqlite3

    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(LedgerError, match="locked"):
            clf.predict(X[:5])
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert clf._query_stream.rng.bit_generator.state == state
    assert clf.queries_answered_ == 2 and acc.queries_answered == 2


# -- multiplicative weights: the rounds of one charged run ----------------------------------------
def test_copies_of_an_experts_run_never_run_more_rounds_than_were_charged():
    from skprivpred import PrivateExpertsClassifier

    rng = np.random.default_rng(4)
    X = rng.normal(size=(10, 2))
    y = (X[:, 0] > 0).astype(int)
    experts = [_Feature(0), _Feature(1)]
    acc = PrivacyAccountant(epsilon=10.0, delta=1e-5)
    clf = PrivateExpertsClassifier(
        hypotheses=experts, epsilon=1.0, n_rounds=10, classes=[0, 1], accountant=acc
    )
    clf.partial_fit(X[:6], y[:6])
    twin, restored = copy.deepcopy(clf), pickle.loads(pickle.dumps(clf))
    twin.partial_fit(X[6:], y[6:])  # the run's last four rounds, in one copy
    with pytest.raises(HorizonExhaustedError, match="n_rounds=10"):
        restored.partial_fit(X[6:], y[6:])  # the same rounds again, in another copy
    with pytest.raises(HorizonExhaustedError):
        clf.partial_fit(X[6:7], y[6:7])
    assert restored.chosen_experts_.shape == (6,)  # the refused call changed nothing
    assert acc.queries_answered == 1  # the run was charged once, up front


class _Feature:
    """A public expert: the sign of one feature."""

    def __init__(self, j):
        self.j = j

    def predict(self, X):
        return (np.asarray(X)[:, self.j] > 0).astype(int)


# -- forked processes never replay noise, never fork a budget ----------------------------------
def in_forked_child(work, timeout: float = 60.0):
    """Run ``work()`` in a child made by ``os.fork``; return what it returned (or raised).

    The child is killed if it does not answer within ``timeout`` (a deadlock fails the
    test instead of hanging it).
    """
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        os.close(read)
        try:
            try:
                outcome = ("returned", work())
            except BaseException as exc:  # noqa: BLE001 - report it to the parent
                outcome = ("raised", f"{type(exc).__name__}: {exc}")
            with os.fdopen(write, "wb") as pipe:
                pickle.dump(outcome, pipe)
        finally:
            os._exit(0)
    os.close(write)
    deadline = time.monotonic() + timeout
    while os.waitpid(pid, os.WNOHANG) == (0, 0):
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(read)
            raise AssertionError(f"the forked child did not finish within {timeout} s")
        time.sleep(0.01)
    with os.fdopen(read, "rb") as pipe:
        return pickle.load(pipe)


def test_forked_children_never_replay_the_parents_noise():
    """The red team's reproduction: six fork pairs, the parent answers qa and the child qb."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(400, 3))
    y = X[:, 0] + rng.normal(scale=0.1, size=400)
    reg = SubsampleAverageRegressor(Ridge(), epsilon=1.0, y_bounds=(-3, 3)).fit(X, y)
    qa, qb = X[:1], X[1:2]
    differences = []
    for _ in range(6):
        child = in_forked_child(lambda: float(reg.predict(qb)[0]))
        differences.append(float(reg.predict(qa)[0]) - child[1])
    # Replayed noise gives the noiseless f(qa) - f(qb) every time (spread 1e-16 before the
    # fix); fresh noise on a grid of step sensitivity/1000 never repeats six times.
    assert np.ptp(differences) > 1e-3, differences


def test_every_live_stream_is_reseeded_in_a_forked_child(data):
    from skprivpred import PrivateExpertsClassifier

    X, y = data
    clf = SubsampleAggregateClassifier(classes=[0, 1]).fit(X, y)
    experts = PrivateExpertsClassifier(
        hypotheses=[_Feature(0), _Feature(1)], epsilon=1.0, n_rounds=10, classes=[0, 1]
    )
    experts.partial_fit(X[:2], y[:2])  # its rounds draw from a stream of their own
    streams = {
        "query": clf._query_stream,
        "experts' query": experts._query_stream,
        "experts' rounds": experts._round_stream,
    }
    before = {name: s.rng.bit_generator.state for name, s in streams.items()}
    after = in_forked_child(lambda: {n: s.rng.bit_generator.state for n, s in streams.items()})
    assert after[0] == "returned"
    for name in streams:
        assert after[1][name] != before[name], f"the {name} stream replays in the child"
        assert streams[name].rng.bit_generator.state == before[name]  # the parent's is kept


def test_a_lock_held_at_the_fork_does_not_deadlock_the_child(data):
    X, y = data
    clf = SubsampleAggregateClassifier(classes=[0, 1]).fit(X, y)
    held, release = threading.Event(), threading.Event()

    def answering():  # another thread is inside a query when the process forks
        with clf._query_stream.lock:
            held.set()
            release.wait(timeout=60)

    thread = threading.Thread(target=answering)
    thread.start()
    held.wait(timeout=60)
    try:
        outcome = in_forked_child(lambda: clf.predict(X[:3]).tolist(), timeout=30)
    finally:
        release.set()
        thread.join(timeout=60)
    assert outcome[0] == "returned" and len(outcome[1]) == 3


_FORKED_MODEL = None
_FORKED_BUDGET = None


def _forked_answers(task: int) -> list:
    """A task of a fork-based pool: the model is a module global, as a server would keep it."""
    return _FORKED_MODEL.predict(np.zeros((50, 3))).tolist()


def _forked_charge(task: int) -> str:
    try:
        _FORKED_BUDGET.charge(10, 1.0)
    except LedgerError as exc:
        return f"LedgerError: {exc}"
    return "charged"


@contextlib.contextmanager
def fork_pool(size: int = 3):
    """A fork-based multiprocessing pool (its workers are forked when it starts)."""
    import multiprocessing

    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("this system has no fork")
    pool = multiprocessing.get_context("fork").Pool(size)
    try:
        yield pool
    finally:
        pool.terminate()
        pool.join()


def test_a_fork_based_pool_never_replays_the_noise(monkeypatch):
    rng = np.random.default_rng(6)
    X = rng.normal(size=(300, 3))
    model = SubsampleAverageRegressor(Ridge(), epsilon=1.0, y_bounds=(-3, 3)).fit(X, X[:, 0])
    monkeypatch.setattr(sys.modules[__name__], "_FORKED_MODEL", model)
    with fork_pool() as pool:  # forked after fit, with the model as a module global
        answers = pool.map(_forked_answers, range(6), chunksize=1)
    answers.append(model.predict(np.zeros((50, 3))).tolist())  # the parent's next answers
    # Before the fix, every worker's first task drew the parent's next noise.
    assert len({tuple(a) for a in answers}) == len(answers)


def test_a_memory_ledger_refuses_forked_children(monkeypatch):
    budget = PrivacyAccountant(epsilon=10.0, ledger=":memory:")
    monkeypatch.setattr(sys.modules[__name__], "_FORKED_BUDGET", budget)
    with fork_pool() as pool:
        outcomes = pool.map(_forked_charge, range(3), chunksize=1)
    # Before the fix: three workers each spent 10 against a cap of 10, and the parent read 0.
    refusal = "LedgerError: this accountant's ledger is ':memory:'"
    assert all(o.startswith(refusal) for o in outcomes)
    assert all("forked from it" in o for o in outcomes)
    assert budget.queries_answered == 0
    budget.charge(10, 1.0)  # the parent's budget is whole


def _predict_in_worker(clf, rows):
    return clf.predict(rows)


def test_a_memory_accountant_sent_to_worker_processes_fails_with_one_clear_error(data):
    X, y = data
    budget = PrivacyAccountant(epsilon=1e4, ledger=":memory:")
    clf = SubsampleAggregateClassifier(classes=[0, 1], accountant=budget).fit(X, y)
    # Before: PicklingError("Could not pickle the task ..."), the reason buried in its chain.
    with pytest.raises(LedgerError, match="ledger is ':memory:'.*unpickled in process"):
        joblib.Parallel(n_jobs=2, backend="loky")(
            joblib.delayed(_predict_in_worker)(clf, X[:5]) for _ in range(2)
        )
    # scikit-learn gathers the workers' errors in its own message, which leads with ours.
    fresh = SubsampleAggregateClassifier(classes=[0, 1], accountant=budget)
    with pytest.raises(ValueError, match="LedgerError: this accountant's ledger is ':memory:'"):
        cross_val_score(fresh, X, y, cv=KFold(3), n_jobs=2)
    assert budget.queries_answered == 0
    with joblib.parallel_config(backend="threading"):  # threads share the budget
        cross_val_score(fresh, X, y, cv=KFold(3), n_jobs=2)
    assert budget.queries_answered == X.shape[0]
