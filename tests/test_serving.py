"""The reference service, started for real on 127.0.0.1 by the tests.

Every test here starts ``python -m skprivpred.serving`` as a subprocess (uvicorn with
one or two worker processes) on a free loopback port, sends real HTTP requests
(bounded in number, each with a timeout) and stops the service. What is checked:

* 16 concurrent clients send 2,000 one-row requests to 2 workers against a budget
  for 1,500 rows: exactly 1,500 answered, 500 refused with HTTP 429, and the ledger
  spent exactly 1,500 times epsilon.
* A worker killed with SIGKILL during the load, then the whole service restarted:
  no overspend, the budget persists, the journal is consistent, and the restarted
  service answers exactly up to the cap.
* Bad requests (malformed JSON, wrong columns, NaN, wrong types, a huge body, too many
  rows, a missing or wrong API key) get their status codes and charge nothing.
* Per-client quotas are kept in the ledger; keys are re-read when their file changes.
* No response or log line carries a stack trace; ``save_model`` refuses models whose
  budget would not outlive the process.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression

from skprivpred import PrivacyAccountant, SubsampleAggregateClassifier
from skprivpred._testing import free_port
from skprivpred.serving import load_model, save_model

pytest.importorskip("uvicorn")
pytest.importorskip("starlette")

EPSILON = 0.01  # per answered row
KEY_A, KEY_B = "alpha-key-0123456789abcdef", "beta-key-0123456789abcdef"


# -- a real service ----------------------------------------------------------------------------
class Service:
    """``python -m skprivpred.serving`` in a subprocess, on a free loopback port."""

    def __init__(self, model: Path, log: Path, *extra: str, workers: int = 2) -> None:
        self.port = free_port()
        self.log = log
        self._log_file = open(log, "ab")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "skprivpred.serving",
                str(model),
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--workers",
                str(workers),
                "--log-level",
                "warning",
                *extra,
            ],
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            env={k: v for k, v in os.environ.items() if k != "SKPRIVPRED_API_KEYS"},
        )
        deadline = time.monotonic() + 120
        while True:
            try:
                if self.request("GET", "/health")[0] == 200:
                    break
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the service did not start: {log.read_text()}")
            time.sleep(0.2)

    def request(self, method: str, path: str, body=None, headers=None, raw: bytes | None = None):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            data = raw if raw is not None else None if body is None else json.dumps(body).encode()
            conn.request(method, path, body=data, headers=headers or {})
            response = conn.getresponse()
            return response.status, json.loads(response.read() or b"null")
        finally:
            conn.close()

    def workers(self) -> list[int]:
        """PIDs of the worker processes (children of the uvicorn supervisor)."""
        pids = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid == self.proc.pid and b"spawn_main" in cmdline:
                pids.append(int(entry))
        return pids

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)
        self._log_file.close()


@pytest.fixture
def service_factory(tmp_path):
    started: list[Service] = []

    def start(model: Path, *extra: str, workers: int = 2) -> Service:
        service = Service(model, tmp_path / "service.log", *extra, workers=workers)
        started.append(service)
        return service

    yield start
    for service in started:
        service.stop()
    log = (tmp_path / "service.log").read_text() if (tmp_path / "service.log").exists() else ""
    assert "Traceback" not in log, log  # never a stack trace in the service's log


def fitted_model(tmp_path: Path, cap_rows: int, *, frame: bool = False, name: str = "test"):
    """A fitted classifier whose budget (a SQLite file) allows ``cap_rows`` answers."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    if frame:
        X = pd.DataFrame(X, columns=["age", "hours", "score"])
    acc = PrivacyAccountant(
        epsilon=cap_rows * EPSILON, ledger=str(tmp_path / "budget.db"), name=name
    )
    clf = SubsampleAggregateClassifier(
        LogisticRegression(), epsilon=EPSILON, n_teachers=8, classes=[0, 1], accountant=acc
    ).fit(X, y)
    path = tmp_path / "model.joblib"
    save_model(clf, path)
    return path, acc


def one_row_load(service: Service, n_requests: int, n_clients: int, stop_after=None):
    """Send ``n_requests`` one-row requests from ``n_clients`` threads; count the statuses."""
    counts = {"answered": 0, "refused": 0, "lost": 0, "other": 0}
    lock = threading.Lock()
    queue = iter(range(n_requests))

    def client():
        conn = None
        while True:
            with lock:
                if next(queue, None) is None:
                    break
            try:
                if conn is None:
                    conn = http.client.HTTPConnection("127.0.0.1", service.port, timeout=30)
                conn.request("POST", "/predict", body=b'{"rows": [[0.1, -0.2, 0.3]]}')
                response = conn.getresponse()
                response.read()
                key = {200: "answered", 429: "refused"}.get(response.status, "other")
            except (OSError, http.client.HTTPException):
                key = "lost"  # the worker died with the request in flight
                conn = None
            with lock:
                counts[key] += 1
                if stop_after is not None and counts["answered"] == stop_after[0]:
                    stop_after[1].set()
        if conn is not None:
            conn.close()

    with ThreadPoolExecutor(n_clients) as pool:
        for future in [pool.submit(client) for _ in range(n_clients)]:
            future.result(timeout=600)
    return counts


# -- under load -------------------------------------------------------------------------------
def test_sixteen_clients_two_workers_answer_exactly_the_budget(tmp_path, service_factory):
    model, acc = fitted_model(tmp_path, cap_rows=1500)
    service = service_factory(model)
    assert len(service.workers()) == 2
    counts = one_row_load(service, 2000, 16)
    assert counts == {"answered": 1500, "refused": 500, "lost": 0, "other": 0}
    assert acc.queries_answered == 1500
    assert acc.epsilon_spent == pytest.approx(1500 * EPSILON, rel=1e-9)
    assert acc._ledger.consistent(acc.name, acc._budget_id)
    status, budget = service.request("GET", "/budget")
    assert status == 200 and budget["queries_answered"] == 1500
    assert budget["rows_remaining"] == 0 and budget["epsilon_remaining"] == pytest.approx(0.0)


def test_a_killed_worker_and_a_restart_never_overspend(tmp_path, service_factory):
    model, acc = fitted_model(tmp_path, cap_rows=1500)
    service = service_factory(model)
    reached = threading.Event()
    killer_done = threading.Event()

    def killer():
        reached.wait(timeout=300)
        os.kill(service.workers()[0], signal.SIGKILL)  # in the middle of the load
        killer_done.set()

    thread = threading.Thread(target=killer)
    thread.start()
    counts = one_row_load(service, 1200, 16, stop_after=(300, reached))
    thread.join(timeout=60)
    assert killer_done.is_set()
    charged = acc.queries_answered
    # Every answer that reached a client was charged first; a request lost with its worker
    # may have been charged without an answer (over-count), never the other way round.
    assert counts["answered"] <= charged <= counts["answered"] + counts["lost"]
    assert counts["refused"] == 0 and charged < 1500
    # Restart the whole service: the budget persists in the ledger.
    service.stop()
    restarted = service_factory(model)
    assert restarted.request("GET", "/budget")[1]["queries_answered"] == charged
    more = one_row_load(restarted, 1500 - charged + 100, 8)
    assert more["answered"] == 1500 - charged and more["refused"] == 100
    assert acc.queries_answered == 1500
    assert acc.epsilon_spent == pytest.approx(1500 * EPSILON, rel=1e-9)
    assert acc._ledger.consistent(acc.name, acc._budget_id)
    history = acc.history()
    assert history["rows"].sum() == 1500 and set(history["estimator"]) == {
        "SubsampleAggregateClassifier"
    }


# -- bad requests charge nothing ------------------------------------------------------------------
def test_bad_requests_get_their_status_and_charge_nothing(tmp_path, service_factory):
    model, acc = fitted_model(tmp_path, cap_rows=100, frame=True)
    keys = tmp_path / "keys.txt"
    keys.write_text(f"# client:key\nalpha:{KEY_A}\n")
    service = service_factory(
        model, "--api-keys", str(keys), "--max-rows", "5", "--max-body-bytes", "2000", workers=1
    )
    auth = {"Authorization": f"Bearer {KEY_A}"}
    row = {"age": 0.1, "hours": 0.2, "score": -0.3}
    cases = [
        ({}, {"rows": [[0.0, 0.0, 0.0]]}, None, 401),  # no key
        ({"X-API-Key": "wrong-key-0123456789abcdef"}, {"rows": [[0.0, 0.0, 0.0]]}, None, 401),
        (auth, None, b'{"rows": [[0.0, 0.0', 422),  # malformed JSON
        (auth, None, b'{"rows": [[0.0, NaN, 0.0]]}', 422),  # NaN
        (auth, None, b'{"rows": [[0.0, Infinity, 0.0]]}', 422),
        (auth, {"rows": [[0.0, 0.0]]}, None, 422),  # wrong number of columns
        (auth, {"rows": [[0.0, "a", 0.0]]}, None, 422),  # wrong type
        (auth, {"rows": [[0.0, True, 0.0]]}, None, 422),
        (auth, {"records": [{"age": 0.1, "hours": 0.2}]}, None, 422),  # missing column
        (auth, {"records": [{**row, "zip": 1.0}]}, None, 422),  # unexpected column
        (auth, {"records": [{**row, "age": None}]}, None, 422),
        (auth, {"records": [{**row, "age": "old"}]}, None, 422),  # the model refuses it
        (auth, {"rows": []}, None, 422),
        (auth, {"rows": [[0.0, 0.0, 0.0]], "extra": 1}, None, 422),
        (auth, [1, 2, 3], None, 422),
        (auth, {"rows": [[0.0, 0.0, 0.0]] * 6}, None, 413),  # more rows than allowed
        (auth, None, b'{"rows": [' + b"[0.0, 0.0, 0.0]," * 400 + b"[0,0,0]]}", 413),  # body
    ]
    journal = len(acc.history())
    for headers, body, raw, status in cases:
        got, payload = service.request("POST", "/predict", body=body, headers=headers, raw=raw)
        assert got == status, (body, raw, payload)
        assert set(payload) >= {"error"} and "Traceback" not in json.dumps(payload)
    missing = service.request("POST", "/predict", {"records": [{"age": 1}]}, auth)[1]
    assert missing["missing"] == ["hours", "score"] and missing["unexpected"] == []
    assert acc.queries_answered == 0 and len(acc.history()) == journal
    # The same service answers good requests, by rows or by records.
    status, answer = service.request("POST", "/predict", {"records": [row, row]}, auth)
    assert status == 200 and len(answer["predictions"]) == 2
    assert set(answer["predictions"]) <= {0, 1}
    assert answer["epsilon_spent"] == pytest.approx(2 * EPSILON)
    status, answer = service.request("POST", "/predict", {"rows": [[0.1, 0.2, 0.3]]}, auth)
    assert status == 200 and acc.queries_answered == 3
    status, guarantee = service.request("GET", "/guarantee", headers=auth)
    assert status == 200 and guarantee["epsilon"] == EPSILON and "Dwork" in guarantee["theorem"]
    assert service.request("GET", "/budget")[0] == 401  # the budget is for clients too


def test_quotas_share_the_budget_and_keys_rotate(tmp_path, service_factory):
    model, acc = fitted_model(tmp_path, cap_rows=100)
    keys = tmp_path / "keys.txt"
    keys.write_text(f"alpha:{KEY_A}\nbeta:{KEY_B}\n")
    service = service_factory(
        model, "--api-keys", str(keys), "--quota-epsilon", str(30 * EPSILON), workers=1
    )
    rows = {"rows": [[0.0, 0.0, 0.0]] * 10}
    alpha, beta = {"X-API-Key": KEY_A}, {"Authorization": f"Bearer {KEY_B}"}
    for _ in range(3):
        assert service.request("POST", "/predict", rows, alpha)[0] == 200
    status, refusal = service.request("POST", "/predict", rows, alpha)
    assert status == 429 and refusal["client"] == "alpha" and refusal["remaining_rows"] == 0
    assert acc.queries_answered == 30  # the refused request charged nothing globally
    assert service.request("POST", "/predict", rows, beta)[0] == 200
    quota = PrivacyAccountant(
        epsilon=30 * EPSILON, ledger=acc.ledger_url, name=f"test/client/alpha/epsilon={0.3!r}"
    )
    assert quota.queries_answered == 30  # the quota lives in the ledger
    # Rotate: beta's key is replaced in the file; the running service follows.
    new_beta = "beta-key-rotated-0123456789"
    time.sleep(0.01)
    keys.write_text(f"alpha:{KEY_A}\nbeta:{new_beta}\n")
    os.utime(keys, ns=(time.time_ns(), time.time_ns() + 10**9))
    assert service.request("POST", "/predict", rows, beta)[0] == 401
    assert service.request("POST", "/predict", rows, {"X-API-Key": new_beta})[0] == 200
    assert acc.queries_answered == 50


def test_the_ledger_option_points_at_the_same_budget_elsewhere(tmp_path, service_factory):
    model, acc = fitted_model(tmp_path, cap_rows=10)
    acc.charge(4, EPSILON)
    moved = tmp_path / "mounted" / "budget.db"
    moved.parent.mkdir()
    for suffix in ("", "-wal", "-shm"):  # the same database, under another path
        if (tmp_path / f"budget.db{suffix}").exists():
            os.replace(tmp_path / f"budget.db{suffix}", moved.parent / f"budget.db{suffix}")
    service = service_factory(model, "--ledger", str(moved), workers=1)
    status, budget = service.request("GET", "/budget")
    assert status == 200 and budget["queries_answered"] == 4
    assert service.request("POST", "/predict", {"rows": [[0.0, 0.0, 0.0]] * 6})[0] == 200
    assert service.request("POST", "/predict", {"rows": [[0.0, 0.0, 0.0]]})[0] == 429
    assert (
        PrivacyAccountant(epsilon=10 * EPSILON, ledger=str(moved), name="test").queries_answered
        == 10
    )


def test_the_command_refuses_a_ledger_that_does_not_hold_the_budget(tmp_path):
    model, _ = fitted_model(tmp_path, cap_rows=10)
    other = tmp_path / "other.db"
    PrivacyAccountant(epsilon=1.0, ledger=str(other), name="test")  # same name, other budget
    for ledger in (str(tmp_path / "missing.db"), str(other)):
        done = subprocess.run(
            [sys.executable, "-m", "skprivpred.serving", str(model), "--ledger", ledger],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 2
        assert done.stderr.startswith("skprivpred.serving: the ") and "Traceback" not in done.stderr


# -- saving ------------------------------------------------------------------------------------
def test_save_model_refuses_budgets_that_would_not_outlive_the_process(tmp_path):
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(100, 2)), np.tile([0, 1], 50)

    def fitted(**params):
        return SubsampleAggregateClassifier(n_teachers=4, classes=[0, 1], **params).fit(X, y)

    path = tmp_path / "m.joblib"
    with pytest.raises(ValueError, match="has no PrivacyAccountant"):
        save_model(fitted(), path)
    with pytest.raises(ValueError, match="':memory:'"):
        save_model(fitted(accountant=PrivacyAccountant(epsilon=1.0, ledger=":memory:")), path)
    with pytest.raises(ValueError, match="default temporary file"):
        save_model(fitted(accountant=PrivacyAccountant(epsilon=1.0)), path)
    with pytest.raises(ValueError, match="no epsilon cap"):
        save_model(fitted(accountant=PrivacyAccountant(ledger=str(tmp_path / "inf.db"))), path)
    many = fitted(n_queries=10, total_epsilon=1.0)  # its own horizon accountant: temporary
    with pytest.raises(ValueError, match="default temporary file"):
        save_model(many, path)
    assert not path.exists()
    good = fitted(accountant=PrivacyAccountant(epsilon=1.0, ledger=str(tmp_path / "b.db")))
    save_model(good, path)
    loaded = load_model(path)
    assert loaded.accountant.ledger_url == good.accountant.ledger_url
    (tmp_path / "not-a-model.joblib").write_bytes(b"")
    import joblib

    joblib.dump({"something": 1}, tmp_path / "not-a-model.joblib")
    with pytest.raises(ValueError, match="not written by skprivpred.serving.save_model"):
        load_model(tmp_path / "not-a-model.joblib")
