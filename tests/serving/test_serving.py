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
  budget would not outlive the process, and everlasting predictors.
* Model files: a pickle is refused unread (its payload never runs), untrusted types are
  refused by name unless trusted explicitly, malformed trees and files another user could
  write are refused, a file that is not a model gets a one-line error; every servable
  estimator survives the round trip and charges the same ledger.
* Integers beyond 64 bits and JSON nested 100,000 deep are refused with 422, not 500.
* ``GET /metrics`` (roles, the two-worker scrape under load), ``GET /openapi.json``
  (validated), ``GET /card`` and :func:`model_card` (identical on neighbouring data sets).
"""

from __future__ import annotations

import http.client
import json
import os
import pickle
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.tree import DecisionTreeClassifier

import skprivpred
from skprivpred import PrivacyAccountant, SubsampleAggregateClassifier
from skprivpred.serving import load_model, save_model
from skprivpred.utils._testing import free_port

pytest.importorskip("uvicorn")
pytest.importorskip("starlette")

EPSILON = 0.01  # per answered row
KEY_A, KEY_B = "alpha-key-0123456789abcdef", "beta-key-0123456789abcdef"


# -- a real service ----------------------------------------------------------------------------
class Service:
    """``python -m skprivpred.serving`` in a subprocess, on a free loopback port."""

    def __init__(
        self, model: Path, log: Path, *extra: str, workers: int = 2, env: dict | None = None
    ) -> None:
        self.log = log
        self._log_file = open(log, "ab")
        for attempt in range(3):  # another process may take the free port before uvicorn binds
            self._start(model, extra, workers, env)
            if self._wait_until_healthy(last=attempt == 2):
                return

    def _start(self, model: Path, extra: tuple, workers: int, env: dict | None) -> None:
        self.port = free_port()
        base = {k: v for k, v in os.environ.items() if k != "SKPRIVPRED_API_KEYS"}
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
            env={**base, **(env or {})},
        )

    def _wait_until_healthy(self, last: bool) -> bool:
        deadline = time.monotonic() + 120
        while True:
            try:
                if self.request("GET", "/health")[0] == 200:
                    return True
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                busy = "address already in use" in self.log.read_text().lower()
                if busy and not last and self.proc.poll() is not None:
                    return False  # the port was taken: start again on another one
                self.stop()
                raise RuntimeError(f"the service did not start: {self.log.read_text()}")
            time.sleep(0.2)

    def request(self, method: str, path: str, body=None, headers=None, raw: bytes | None = None):
        status, _, text = self.request_raw(method, path, body, headers, raw)
        return status, json.loads(text or b"null")

    def request_raw(self, method: str, path: str, body=None, headers=None, raw=None):
        """``(status, content type, body bytes)``."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            data = raw if raw is not None else None if body is None else json.dumps(body).encode()
            if data is not None:  # the service reads only a body declared as JSON
                headers = {"Content-Type": "application/json", **(headers or {})}
            conn.request(method, path, body=data, headers=headers or {})
            response = conn.getresponse()
            return response.status, response.getheader("content-type"), response.read()
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


def write_key_file(path: Path, text: str) -> None:
    """Write an API key file as the deploying guide does: readable by its owner only (0600)."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)


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
    path = tmp_path / "model.skops"
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
                conn.request(
                    "POST",
                    "/predict",
                    body=b'{"rows": [[0.1, -0.2, 0.3]]}',
                    headers={"Content-Type": "application/json"},
                )
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
    write_key_file(keys, f"# client:key\nalpha:{KEY_A}\n")
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
        (auth, {"rows": []}, None, 422),
        (auth, {"rows": [[0.0, 0.0, 0.0]], "extra": 1}, None, 422),
        (auth, [1, 2, 3], None, 422),
        (auth, {"rows": [[0.0, 0.0, 0.0]] * 6}, None, 422),  # over maxItems: invalid data (not 413)
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
    # A string where the training rows held numbers is not refused for the training rows'
    # dtype (inferred from them, not public), but for the query's own: a dry run on the
    # query rows and the public labels shows that the base estimator cannot read a text
    # column at all, so the request is refused before the charge.
    status, answer = service.request("POST", "/predict", {"records": [{**row, "age": "old"}]}, auth)
    assert status == 422 and "cannot read" in answer["error"] and acc.queries_answered == 3
    status, guarantee = service.request("GET", "/guarantee", headers=auth)
    assert status == 200 and guarantee["epsilon"] == EPSILON and "Dwork" in guarantee["theorem"]
    assert service.request("GET", "/budget")[0] == 401  # the budget is for clients too


def test_each_answer_reports_the_spending_its_own_charge_left(tmp_path, service_factory, request):
    """An answer's ``epsilon_spent`` is the ledger's sum right after that answer's charge.

    Another process charges the same budget all along, a tenth of a row's epsilon at a
    time: each answer's figure must be the journal's running sum at the answer's own
    charge. A second read of the ledger after the answer (what the service did before it
    took the figure from its charge's transaction) would count charges made since.
    """
    # On a memory file system (when there is one) a commit costs no disk flush: the other
    # charges come often enough to fall between an answer's charge and its response.
    shm = Path("/dev/shm")
    where = Path(tempfile.mkdtemp(dir=shm)) if shm.is_dir() else tmp_path
    if where != tmp_path:
        request.addfinalizer(lambda: shutil.rmtree(where, ignore_errors=True))
    model, acc = fitted_model(where, cap_rows=10**6)
    service = service_factory(model, workers=1)
    stop = threading.Event()

    def other_process():
        while not stop.is_set():
            acc.charge(1, EPSILON / 10, source="other")

    charger = threading.Thread(target=other_process)
    charger.start()
    try:
        answers = [
            service.request("POST", "/predict", {"rows": [[0.1, -0.2, 0.3]]}) for _ in range(100)
        ]
    finally:
        stop.set()
        charger.join(timeout=60)
    assert all(status == 200 for status, _ in answers)
    journal = acc.history()
    running, at_answers = 0.0, []
    for rows, epsilon, source in zip(journal["rows"], journal["epsilon"], journal["estimator"]):
        running = running + rows * epsilon  # the ledger's own order of additions
        if source == "SubsampleAggregateClassifier":
            at_answers.append(running)
    assert (journal["estimator"] == "other").sum() > 50  # the charges did interleave
    assert [answer["epsilon_spent"] for _, answer in answers] == pytest.approx(
        at_answers, rel=1e-12
    )


def test_no_access_log_drops_the_line_per_request_only(tmp_path, service_factory):
    model, _ = fitted_model(tmp_path, cap_rows=10)
    logs = []
    for extra in ((), ("--no-access-log",)):
        service = service_factory(model, "--log-level", "info", *extra, workers=1)
        assert service.request("POST", "/predict", {"rows": [[0.1, -0.2, 0.3]]})[0] == 200
        assert service.request("GET", "/budget")[0] == 200
        service.stop()
        text = service.log.read_text()
        logs.append(text[sum(len(log) for log in logs) :])
    with_access, without = logs
    assert '"POST /predict HTTP/1.1" 200' in with_access and '"GET /budget HTTP/1.1"' in with_access
    assert "Application startup complete" in without  # the info level is on
    assert '"POST /predict' not in without and '"GET /' not in without


def test_quotas_share_the_budget_and_keys_rotate(tmp_path, service_factory):
    model, acc = fitted_model(tmp_path, cap_rows=100)
    keys = tmp_path / "keys.txt"
    write_key_file(keys, f"alpha:{KEY_A}\nbeta:{KEY_B}\n")
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
    write_key_file(keys, f"alpha:{KEY_A}\nbeta:{new_beta}\n")
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

    path = tmp_path / "m.skops"
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
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # created for this user only
    loaded = load_model(path)
    assert loaded.accountant.ledger_url == good.accountant.ledger_url


# -- model files: never a pickle ------------------------------------------------------------------
class _RunsAShellCommand:
    """What an attacker writes into a pickle: unpickling it runs ``touch <marker>``."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def _run_command(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """``python -m skprivpred.serving ARGS`` that is expected to stop before serving."""
    return subprocess.run(
        [sys.executable, "-m", "skprivpred.serving", *args, "--port", str(free_port())],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


def _assert_one_line_refusal(done: subprocess.CompletedProcess, *phrases: str) -> None:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("skprivpred.serving: "), done.stderr
    for phrase in phrases:
        assert phrase in lines[0], (phrase, lines[0])


def test_a_pickle_is_refused_unread_by_load_model_and_by_the_command(tmp_path):
    import joblib

    marker = tmp_path / "payload-ran"
    payload = {"format": "skprivpred-model", "version": 1, "estimator": _RunsAShellCommand(marker)}
    files = {"pickle.pkl": pickle.dumps(payload), "old.joblib": None}
    joblib.dump(payload, tmp_path / "old.joblib")
    compressions = [1, 3, 9, ("gzip", 3), ("bz2", 3), ("xz", 3), ("lzma", 3)]
    for k, compress in enumerate(compressions):  # every level and codec joblib writes
        files[f"compressed-{k}.joblib"] = None
        joblib.dump(payload, tmp_path / f"compressed-{k}.joblib", compress=compress)
    (tmp_path / "pickle.pkl").write_bytes(files["pickle.pkl"])
    for name in files:
        os.chmod(tmp_path / name, 0o600)
        with pytest.raises(ValueError, match="not a model file written by save_model") as info:
            load_model(tmp_path / name)
        message = str(info.value).replace(str(tmp_path / name), "PATH")
        assert "looks like a pickle or joblib file" in message and "\n" not in message
        assert "save_model(joblib.load('model.joblib')['estimator'], 'model.skops')" in str(
            info.value
        )  # the one-line re-save recipe, quoted
        assert not marker.exists()  # the payload never ran
    _assert_one_line_refusal(_run_command(str(tmp_path / "old.joblib")), "pickle")
    assert not marker.exists()
    # The payload is live: unpickling it (what joblib.load did) does run the command.
    pickle.loads(files["pickle.pkl"])
    assert marker.exists()


def test_a_file_that_is_not_a_model_gets_a_one_line_error(tmp_path):
    import skops.io as sio

    cases = {
        "empty.skops": b"",
        "text.skops": b"rows,of,csv\n1,2,3\n",
        "zip-without-schema.skops": b"PK\x03\x04" + b"\x00" * 40,
        "another-object.skops": sio.dumps({"weights": [1.0, 2.0]}),
        "old-version.skops": sio.dumps({"format": "skprivpred-model", "version": 1}),
    }
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        os.chmod(tmp_path / name, 0o600)
        with pytest.raises(ValueError) as info:
            load_model(tmp_path / name)
        assert "\n" not in str(info.value) and name in str(info.value)
    _assert_one_line_refusal(_run_command(str(tmp_path / "text.skops")), "text.skops")
    with pytest.raises(FileNotFoundError, match="missing.skops"):
        load_model(tmp_path / "missing.skops")


def _write_teacher_module(directory: Path) -> str:
    """A module with a user's teacher class, importable from ``directory``."""
    (directory / "custom_teachers.py").write_text(
        "from sklearn.linear_model import LogisticRegression\n\n\n"
        "class MyTeacher(LogisticRegression):\n"
        "    pass\n"
    )
    return "custom_teachers.MyTeacher"


def test_untrusted_types_are_refused_by_name_and_trusting_admits_them(
    tmp_path, service_factory, monkeypatch
):
    type_name = _write_teacher_module(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    from custom_teachers import MyTeacher

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = (X[:, 0] > 0).astype(int)
    acc = PrivacyAccountant(epsilon=1.0, ledger=str(tmp_path / "budget.db"), name="custom")
    clf = SubsampleAggregateClassifier(
        MyTeacher(), n_teachers=4, classes=[0, 1], epsilon=EPSILON, accountant=acc
    ).fit(X, y)
    path = tmp_path / "model.skops"
    with pytest.warns(UserWarning, match=type_name):  # said when the file is written
        save_model(clf, path)
    with pytest.raises(ValueError, match=f"not trusted: {type_name}"):
        load_model(path)
    assert type(load_model(path, trusted=[type_name]).estimator) is MyTeacher
    assert type(load_model(path, trusted=[MyTeacher]).estimator) is MyTeacher
    with pytest.raises(TypeError, match="never True"):
        load_model(path, trusted=True)
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    _assert_one_line_refusal(_run_command(str(path), env=env), type_name)
    service = service_factory(path, "--trust", type_name, workers=1, env=env)
    status, answer = service.request("POST", "/predict", {"rows": [[0.5, 0.0, 0.0]]})
    assert status == 200 and acc.queries_answered == 1


def test_a_skops_file_naming_a_function_is_refused_by_name(tmp_path):
    import skops.io as sio

    marker = tmp_path / "payload-ran"
    # A file crafted by hand: a function where the estimator should be.
    data = sio.dumps({"format": "skprivpred-model", "version": 2, "estimator": os.system})
    (tmp_path / "crafted.skops").write_bytes(data)
    os.chmod(tmp_path / "crafted.skops", 0o600)
    with pytest.raises(ValueError, match=r"not trusted: (posix|os|nt)\.system"):
        load_model(tmp_path / "crafted.skops")
    assert not marker.exists()


# The servable kinds: every estimator whose answers a service can charge (the everlasting
# predictors are refused, the density has no predict).
def _servable_recipes():
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 2))
    y = (X[:, 0] > 0).astype(int)
    y_real = X @ np.array([0.5, -0.25])
    Xb = (X > 0).astype(int)
    frame = pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "c": rng.choice(["x", "y", "z"], 400)})
    encoded = make_pipeline(
        __import__("sklearn.compose").compose.make_column_transformer(
            (OneHotEncoder(handle_unknown="ignore"), ["c"]), remainder="passthrough"
        ),
        DecisionTreeClassifier(max_depth=3),
    )
    sp = skprivpred
    return {
        "SubsampleAggregateClassifier": (
            sp.SubsampleAggregateClassifier(n_teachers=8, classes=[0, 1]),
            X,
            y,
        ),
        "SubsampleAggregateClassifier-frame-trees": (
            sp.SubsampleAggregateClassifier(encoded, n_teachers=4, classes=[0, 1]),
            frame,
            y,
        ),
        "SubsampleAverageClassifier": (
            sp.SubsampleAverageClassifier(
                make_pipeline(StandardScaler(), LogisticRegression()), n_teachers=8, classes=[0, 1]
            ),
            X,
            y,
        ),
        "SubsampleAverageRegressor": (
            sp.SubsampleAverageRegressor(y_bounds=(-3.0, 3.0), n_teachers=8),
            X,
            y_real,
        ),
        "StableERMClassifier": (sp.StableERMClassifier(classes=[0, 1]), X, y),
        "StableERMRegressor": (sp.StableERMRegressor(y_bounds=(-3.0, 3.0)), X, y_real),
        "AveragedPSGDClassifier": (sp.AveragedPSGDClassifier(classes=[0, 1]), X, y),
        "AveragedPSGDRegressor": (sp.AveragedPSGDRegressor(y_bounds=(-3.0, 3.0)), X, y_real),
        "ExpProjectedWalkClassifier": (sp.ExpProjectedWalkClassifier(classes=[0, 1]), X[:, :1], y),
        "ExponentialMechanismClassifier": (
            sp.ExponentialMechanismClassifier(classes=[0, 1]),
            Xb,
            y,
        ),
        "PrivateHalfspacePPMClassifier": (
            sp.PrivateHalfspacePPMClassifier(classes=[0, 1]),
            X,
            y,
            {"is_public": np.arange(400) < 200},
        ),
        "DPValidatedLogisticRegression": (
            sp.DPValidatedLogisticRegression(lam_grid=(0.01, 0.1), classes=[0, 1]),
            X,
            y,
        ),
        "SufficientStatisticClassifier": (
            sp.SufficientStatisticClassifier(classes=[0, 1]),
            X,
            np.where(np.arange(400) < 100, -1, y),
        ),
        "SufficientStatisticRegressor": (
            sp.SufficientStatisticRegressor(y_bounds=(-3.0, 3.0)),
            X,
            np.where(np.arange(400) < 100, np.nan, y_real),
        ),
        "PrivateGridSearchCV": (
            sp.PrivateGridSearchCV(
                sp.SubsampleAggregateClassifier(classes=[0, 1]), {"n_teachers": [5, 10]}
            ),
            X,
            y,
        ),
        "Pipeline": (
            make_pipeline(StandardScaler(), sp.SubsampleAggregateClassifier(classes=[0, 1])),
            X,
            y,
        ),
    }


def _with_accountant(estimator, accountant):
    params = estimator.get_params()
    for key in params:
        if key == "accountant" or key.endswith("__accountant"):
            if "__estimator__" not in key and key != "estimator__accountant":
                estimator.set_params(**{key: accountant})
    if "estimator__accountant" in params and "accountant" not in params:
        estimator.set_params(estimator__accountant=accountant)  # the search's candidates
    return estimator


# Their released object is the model (charged at fit): their answers are free.
_RELEASED_MODELS = {
    "ExponentialMechanismClassifier",
    "PrivateHalfspacePPMClassifier",
    "DPValidatedLogisticRegression",
    "SufficientStatisticClassifier",
    "SufficientStatisticRegressor",
}


@pytest.mark.parametrize("kind", sorted(_servable_recipes()))
def test_every_servable_estimator_survives_the_round_trip_on_the_same_ledger(tmp_path, kind):
    recipe = _servable_recipes()[kind]
    estimator, X, y = recipe[:3]
    fit_params = recipe[3] if len(recipe) > 3 else {}
    delta = 0.5 if kind.startswith("SufficientStatistic") else 0.0  # a Gaussian release
    acc = PrivacyAccountant(epsilon=1e6, delta=delta, ledger=str(tmp_path / "budget.db"), name=kind)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        fitted = _with_accountant(estimator, acc).fit(X, y, **fit_params)
    path = tmp_path / "model.skops"
    save_model(fitted, path)
    first, second = load_model(path), load_model(path)
    assert type(first) is type(fitted)
    loaded_budget = skprivpred.serving._model.budget_of(first)
    assert loaded_budget.ledger_url == acc.ledger_url
    assert loaded_budget._budget_id == acc._budget_id  # the same budget, not a new one
    queries = X[:20] if not hasattr(X, "iloc") else X.iloc[:20]
    before = acc.queries_answered
    assert np.asarray(first.predict(queries)).shape == (20,)
    # Read through the original accountant: the loaded copy charged the same ledger.
    charged = acc.queries_answered - before
    assert charged == (0 if kind in _RELEASED_MODELS else 20)
    fitted.predict(queries)
    assert loaded_budget.queries_answered == acc.queries_answered == before + 2 * charged
    if kind == "SubsampleAverageRegressor":
        # Each loaded copy draws fresh noise: the two never replay each other's answers.
        assert not np.array_equal(first.predict(queries), second.predict(queries))


# The crafted file copies the predictor, which warns that copies fork its stream state.
@pytest.mark.filterwarnings("ignore::skprivpred.PrivacyWarning")
def test_save_model_refuses_everlasting_predictors(tmp_path):
    import skops.io as sio

    from skprivpred import PrivateEverlastingClassifier

    x = np.random.default_rng(1).random((8000, 1))
    y = (x[:, 0] >= 0.3).astype(int)
    acc = PrivacyAccountant(epsilon=1e6, delta=0.5, ledger=str(tmp_path / "budget.db"))
    everlasting = PrivateEverlastingClassifier(
        DecisionTreeClassifier(max_depth=1), n_teachers=100, accountant=acc
    ).fit(x, y)
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    for model in (everlasting, make_pipeline(StandardScaler().fit(x), everlasting)):
        with pytest.raises(ValueError, match="phase state .* lives in this Python process"):
            save_model(model, tmp_path / "model.skops")
    assert not (tmp_path / "model.skops").exists()
    # A file that holds one anyway (written by hand) is refused, even with its type trusted.
    crafted = tmp_path / "crafted.skops"
    crafted.write_bytes(
        sio.dumps({"format": "skprivpred-model", "version": 2, "estimator": everlasting})
    )
    os.chmod(crafted, 0o600)
    with pytest.raises(ValueError, match="PrivateEverlastingClassifier"):
        load_model(crafted)
    trusted = sio.get_untrusted_types(file=crafted)
    with pytest.raises(ValueError, match="phase state"):
        load_model(crafted, trusted=trusted)


def test_a_model_file_another_user_could_write_is_refused(tmp_path):
    model, _ = fitted_model(tmp_path, cap_rows=10)
    assert stat.S_IMODE(model.stat().st_mode) == 0o600
    load_model(model)
    os.chmod(model, 0o646)
    with pytest.raises(ValueError, match="writable by other users"):
        load_model(model)
    os.chmod(model, 0o600)
    os.chmod(tmp_path, 0o777)  # anyone could replace the file
    try:
        with pytest.raises(ValueError, match="lies in .* which other users can write"):
            load_model(model)
        _assert_one_line_refusal(_run_command(str(model)), "which other users can write")
    finally:
        os.chmod(tmp_path, 0o700)
    if os.geteuid() == 0:  # another owner: only root can hand the file over
        os.chown(model, 65534, 65534)
        with pytest.raises(ValueError, match="belongs to another user .owner uid 65534"):
            load_model(model)
        os.chown(model, 0, 0)
    assert load_model(model) is not None


def test_a_crafted_decision_tree_is_refused_before_it_answers(tmp_path):
    from skprivpred import SubsampleAverageRegressor

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 2))
    acc = PrivacyAccountant(epsilon=1e3, ledger=str(tmp_path / "budget.db"))
    model = SubsampleAverageRegressor(y_bounds=(-3.0, 3.0), n_teachers=4, accountant=acc)
    model.fit(X, X[:, 0])
    path = tmp_path / "model.skops"
    save_model(model, path)
    assert load_model(path) is not None  # honest trees load (Tree is trusted once checked)
    from sklearn.tree import BaseDecisionTree

    everything = skprivpred.serving._trust._objects(model)
    trees = [
        obj.tree_
        for obj in everything
        if isinstance(obj, BaseDecisionTree) and hasattr(obj, "tree_")
    ]
    assert len(trees) == 4
    inner = np.flatnonzero(trees[0].children_left != -1)
    edits = {
        "splits on a feature index outside": ("feature", inner[0], 10**6),
        "child index outside the tree": ("children_left", inner[-1], 0),
    }
    for message, (array, node, value) in edits.items():
        original = int(getattr(trees[0], array)[node])
        getattr(trees[0], array)[node] = value  # a view of the tree's node storage
        save_model(model, path)
        getattr(trees[0], array)[node] = original
        with pytest.raises(ValueError, match=message):
            load_model(path)


# -- hostile bodies: 422, never 500 ----------------------------------------------------------------
def test_huge_integers_and_deep_json_are_refused_with_422(tmp_path, service_factory):
    model, acc = fitted_model(tmp_path, cap_rows=100, frame=True)
    service = service_factory(model, workers=1)
    huge = b"9" * 4000  # parses as a Python int; no float holds it
    deep = b"[" * 100_000 + b"]" * 100_000
    record = b'{"records": [{"age": %s, "hours": 0.2, "score": 0.1}]}'
    cases = {
        "int beyond 64 bits in rows": b'{"rows": [[18446744073709551616, 0.0, 0.0]]}',
        "negative int beyond 64 bits in rows": b'{"rows": [[-9223372036854775809, 0, 0]]}',
        "huge int in rows": b'{"rows": [[' + huge + b", 0.0, 0.0]]}",
        "int beyond 64 bits in records": record % b"18446744073709551616",
        "huge int in records": record % huge,
        "100,000-deep JSON": deep,
        "100,000-deep rows": b'{"rows": ' + deep + b"}",
        "100,000-deep record value": record % deep,
    }
    answers = {case: service.request("POST", "/predict", raw=raw) for case, raw in cases.items()}
    assert {case: status for case, (status, _) in answers.items()} == dict.fromkeys(cases, 422)
    assert all(set(body) >= {"error"} for _, body in answers.values())
    assert acc.queries_answered == 0
    # The 64-bit range itself is accepted.
    status, _ = service.request("POST", "/predict", raw=record % str(2**62).encode())
    assert status == 200 and acc.queries_answered == 1


# -- GET /metrics ---------------------------------------------------------------------------------
def _scrape(service: Service, headers=None) -> tuple[int, dict]:
    """``(status, {sample name + labels: value})`` of one scrape, parsed by prometheus_client."""
    from prometheus_client.parser import text_string_to_metric_families

    status, content_type, body = service.request_raw("GET", "/metrics", headers=headers)
    if status != 200:
        return status, json.loads(body)
    assert content_type.startswith("text/plain")
    samples = {}
    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            labels = ",".join(f"{k}={v}" for k, v in sorted(sample.labels.items()))
            samples[f"{sample.name}{{{labels}}}" if labels else sample.name] = sample.value
    return status, samples


def _clients_in(samples: dict) -> set:
    return {
        key.split("client=", 1)[1].rstrip("}")
        for key in samples
        if key.startswith("skprivpred_client_quota_")
    }


def test_metrics_show_each_role_its_figures(tmp_path, service_factory):
    model, acc = fitted_model(tmp_path, cap_rows=100)
    keys = tmp_path / "keys.txt"
    admin_key = "admin-key-0123456789abcdef"
    write_key_file(keys, f"alpha:{KEY_A}\nbeta:{KEY_B}\nadmin:ops:{admin_key}\n")
    quota = str(30 * EPSILON)
    alpha, beta = {"X-API-Key": KEY_A}, {"X-API-Key": KEY_B}
    admin, wrong = {"Authorization": f"Bearer {admin_key}"}, {"X-API-Key": "w" * 24}
    service = service_factory(model, "--api-keys", str(keys), "--quota-epsilon", quota, workers=1)
    assert service.request("POST", "/predict", {"rows": [[0.0, 0.0, 0.0]] * 10}, alpha)[0] == 200
    assert service.request("POST", "/predict", {"rows": [[0.0, 0.0, 0.0]] * 5}, beta)[0] == 200
    assert _scrape(service)[0] == 401 and _scrape(service, wrong)[0] == 401
    status, mine = _scrape(service, alpha)
    assert status == 200 and _clients_in(mine) == {"alpha"}  # its own quota, not beta's
    assert mine["skprivpred_budget_rows_charged"] == 15
    assert mine["skprivpred_budget_epsilon_cap"] == pytest.approx(100 * EPSILON)
    assert mine["skprivpred_budget_epsilon_spent"] == pytest.approx(15 * EPSILON)
    assert mine["skprivpred_budget_rows_remaining"] == 85
    assert mine["skprivpred_client_quota_rows_charged{client=alpha}"] == 10
    assert mine["skprivpred_client_quota_rows_remaining{client=alpha}"] == 20
    assert mine["skprivpred_rows_answered_total"] == 15
    assert mine["skprivpred_requests_total{endpoint=predict,status=200}"] == 2
    status, everything = _scrape(service, admin)
    assert status == 200 and _clients_in(everything) == {"alpha", "beta", "admin:ops"}
    assert everything["skprivpred_client_quota_rows_charged{client=beta}"] == 5
    assert acc.queries_answered == 15  # scrapes charge nothing
    service.stop()
    public = service_factory(
        model, "--api-keys", str(keys), "--quota-epsilon", quota, "--metrics-public", workers=1
    )
    status, anyone = _scrape(public)
    assert status == 200 and _clients_in(anyone) == set()  # the global figures only
    assert anyone["skprivpred_budget_rows_charged"] == 15
    assert _scrape(public, wrong)[0] == 401
    assert _clients_in(_scrape(public, beta)[1]) == {"beta"}


def test_two_workers_report_the_ledger_during_and_after_load(tmp_path, service_factory):
    model, acc = fitted_model(tmp_path, cap_rows=600)
    metrics_dir = tmp_path / "metrics"
    service = service_factory(model, "--metrics-dir", str(metrics_dir))
    assert len(service.workers()) == 2
    assert stat.S_IMODE(metrics_dir.stat().st_mode) == 0o700
    figures = (
        "skprivpred_budget_rows_charged",
        "skprivpred_budget_epsilon_spent",
        "skprivpred_rows_answered_total",
        "skprivpred_rows_refused_total",
    )
    done = threading.Event()
    result: dict = {}

    def load():
        result.update(one_row_load(service, 800, 8))
        done.set()

    thread = threading.Thread(target=load)
    thread.start()
    previous, scrapes = dict.fromkeys(figures, 0.0), 0
    while not done.is_set() and scrapes < 200:
        status, samples = _scrape(service)
        journal = acc.history()  # read after the scrape: the journal can only have grown
        assert status == 200
        charged_rows, charged_epsilon = int(journal["rows"].sum()), acc.epsilon_spent
        now = {name: samples.get(name, 0.0) for name in figures}
        for name in figures:
            assert now[name] >= previous[name], name  # figures only grow
        assert now["skprivpred_budget_rows_charged"] <= charged_rows
        assert now["skprivpred_rows_answered_total"] <= charged_rows  # answered after charged
        assert now["skprivpred_budget_epsilon_spent"] <= charged_epsilon * (1 + 1e-12)
        previous, scrapes = now, scrapes + 1
        time.sleep(0.05)
    thread.join(timeout=600)
    assert scrapes >= 3 and result == {"answered": 600, "refused": 200, "lost": 0, "other": 0}
    for _ in range(4):  # whichever worker answers, the same figures: the ledger's
        status, samples = _scrape(service)
        assert samples["skprivpred_budget_rows_charged"] == acc.queries_answered == 600
        assert int(acc.history()["rows"].sum()) == 600
        assert samples["skprivpred_budget_epsilon_spent"] == pytest.approx(acc.epsilon_spent)
        assert samples["skprivpred_budget_rows_remaining"] == 0
        assert samples["skprivpred_rows_answered_total"] == 600
        assert samples["skprivpred_rows_refused_total"] == 200
        assert samples["skprivpred_requests_total{endpoint=predict,status=200}"] == 600
        assert samples["skprivpred_requests_total{endpoint=predict,status=429}"] == 200
        assert samples["skprivpred_request_duration_seconds_count{endpoint=predict}"] == 800
    worker_files = {p.stem.split("_")[1] for p in metrics_dir.glob("counter_*.db")}
    assert set(map(str, service.workers())) <= worker_files


def test_the_metrics_directory_is_checked_like_the_ledgers(tmp_path):
    from skprivpred.serving._metrics import prepare_metrics_directory

    model, _ = fitted_model(tmp_path, cap_rows=10)
    created = tmp_path / "new-metrics"
    assert prepare_metrics_directory(str(created)) == str(created)
    assert stat.S_IMODE(created.stat().st_mode) == 0o700
    (created / "counter_1234.db").write_bytes(b"stale")
    prepare_metrics_directory(str(created))
    assert not (created / "counter_1234.db").exists()  # a previous run's counters
    loose = tmp_path / "loose"
    loose.mkdir(mode=0o755)
    os.chmod(loose, 0o755)
    link = tmp_path / "link"
    link.symlink_to(created)
    cases = [(loose, "mode 0755"), (link, "symbolic link")]
    if os.geteuid() == 0:
        foreign = tmp_path / "foreign"
        foreign.mkdir(mode=0o700)
        os.chown(foreign, 65534, 65534)
        cases.append((foreign, "is owned by uid 65534"))
    for directory, reason in cases:
        with pytest.raises(ValueError, match=reason):
            prepare_metrics_directory(str(directory))
    _assert_one_line_refusal(_run_command(str(model), "--metrics-dir", str(loose)), "mode 0755")


# -- GET /openapi.json and GET /card ---------------------------------------------------------------
def _public_schema_model(tmp_path: Path, name: str = "schema"):
    from sklearn.pipeline import make_pipeline

    from skprivpred.preprocessing import public_preprocessor

    rng = np.random.default_rng(0)
    X = pd.DataFrame(
        {
            "age": rng.normal(40, 10, 400),
            "hours": rng.normal(40, 5, 400),
            "job": rng.choice(["clerk", "nurse", "pilot"], 400),
        }
    )
    y = (X["age"] > 40).astype(int)
    schema = {
        "numeric": {"age": {"scale": 100.0}, "hours": {"scale": 100.0}},
        "categorical": {"job": ["clerk", "nurse", "pilot"]},
    }
    acc = PrivacyAccountant(epsilon=20 * EPSILON, ledger=str(tmp_path / "budget.db"), name=name)
    model = make_pipeline(
        public_preprocessor(schema),
        SubsampleAggregateClassifier(
            LogisticRegression(), epsilon=EPSILON, n_teachers=8, classes=[0, 1], accountant=acc
        ),
    ).fit(X, y)
    path = tmp_path / "model.skops"
    save_model(model, path)
    return path, acc


def _validator(document: dict, schema: dict):
    """A JSON Schema validator of ``schema``, whose ``$ref``s point into ``document``."""
    from jsonschema import Draft202012Validator
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT202012

    resource = Resource.from_contents(document, default_specification=DRAFT202012)
    registry = Registry().with_resource("urn:skprivpred-api", resource)
    rebased = json.loads(json.dumps(schema).replace('"#/', '"urn:skprivpred-api#/'))
    return Draft202012Validator(rebased, registry=registry)


def test_openapi_document_is_valid_and_describes_the_real_answers(tmp_path, service_factory):
    from openapi_spec_validator import validate

    from skprivpred.serving import model_card

    path, acc = _public_schema_model(tmp_path)
    keys = tmp_path / "keys.txt"
    write_key_file(keys, f"alpha:{KEY_A}\n")
    service = service_factory(path, "--api-keys", str(keys), "--max-rows", "15", workers=1)
    auth = {"X-API-Key": KEY_A}
    # Public information only: no key needed (code generators fetch it without one).
    assert service.request("GET", "/openapi.json")[0] == 200
    status, document = service.request("GET", "/openapi.json", headers=auth)
    assert status == 200
    validate(document)  # raises on an invalid OpenAPI 3.1 document
    schemas = document["components"]["schemas"]
    record = schemas["Record"]
    assert list(record["properties"]) == ["age", "hours", "job"]
    assert record["properties"]["age"] == {"type": "number"}
    assert record["properties"]["job"]["enum"] == ["clerk", "nurse", "pilot"]
    # The job column's categories are text, which a row of numbers cannot carry: no rows.
    assert "RowsRequest" not in schemas
    assert schemas["RecordsRequest"]["properties"]["records"]["maxItems"] == 15
    predict = document["paths"]["/predict"]["post"]
    assert set(predict["responses"]) == {
        "200",
        "400",
        "401",
        "413",
        "415",
        "422",
        "429",
        "500",
        "503",
    }
    for endpoint in ("/budget", "/guarantee", "/card", "/metrics", "/health", "/openapi.json"):
        assert "get" in document["paths"][endpoint], endpoint

    def check(body, status_code: str):
        response = predict["responses"][status_code]["content"]["application/json"]["schema"]
        _validator(document, response).validate(body)

    request = {"records": [{"age": 30.0, "hours": 40.0, "job": "nurse"}] * 10}
    variants = predict["requestBody"]["content"]["application/json"]["schema"]["oneOf"]
    matching = [v for v in variants if _validator(document, v).is_valid(request)]
    assert len(matching) == 1  # the request the client sends is described
    status, body = service.request("POST", "/predict", request, auth)
    assert status == 200 and body["predictions"]
    check(body, "200")
    status, body = service.request("POST", "/predict", {"records": [{"age": 1.0}]}, auth)
    assert status == 422
    check(body, "422")
    # Rows are refused (a number is not one of the job column's categories), nothing charged.
    status, body = service.request("POST", "/predict", {"rows": [[30.0, 40.0, 1.0]] * 5}, auth)
    assert status == 422 and body["column"] == "job" and acc.queries_answered == 10
    check(body, "422")
    status, body = service.request("POST", "/predict", {"records": request["records"][:5]}, auth)
    assert status == 200
    check(body, "200")
    status, body = service.request("POST", "/predict", request, auth)  # 20 rows were allowed
    assert status == 429 and acc.queries_answered == 15
    check(body, "429")
    # The model card, served: the same Markdown as model_card of the loaded model.
    status, content_type, card = service.request_raw("GET", "/card", headers=auth)
    assert status == 200 and content_type.startswith("text/markdown")
    assert card.decode() == model_card(load_model(path))
    assert service.request("GET", "/card")[0] == 401


def test_openapi_and_card_hold_nothing_learned_from_the_rows(tmp_path):
    from sklearn.compose import make_column_transformer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    from skprivpred.serving import model_card
    from skprivpred.serving._openapi import openapi_document

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=300), "job": rng.choice(["x", "y"], 300)})
    X.loc[7, "job"] = "rare-secret-category"  # learned by the teachers' encoders
    y = np.where(X["a"] > 0, "label-secret-yes", "label-secret-no")
    teacher = make_pipeline(
        make_column_transformer((OneHotEncoder(handle_unknown="ignore"), ["job"]), ("drop", [])),
        LogisticRegression(),
    )
    acc = PrivacyAccountant(epsilon=1.0, ledger=str(tmp_path / "budget.db"))
    with pytest.warns(skprivpred.PrivacyWarning):  # classes=None: read from y
        model = SubsampleAggregateClassifier(teacher, n_teachers=4, accountant=acc).fit(X, y)
    document = json.dumps(
        openapi_document(
            model,
            version="x",
            max_rows=10,
            max_body_bytes=100,
            keys_required=False,
            metrics_public=False,
        )
    )
    card = model_card(model)
    for text in (document, card):
        assert "rare-secret-category" not in text and "label-secret" not in text
    assert "READ FROM THE TRAINING LABELS" in card  # the label set is flagged, not listed


def _card_kinds():
    from sklearn.compose import make_column_transformer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    sp, seed = skprivpred, 918273
    encoded = make_pipeline(
        make_column_transformer((OneHotEncoder(handle_unknown="ignore"), ["c"]), ("drop", [])),
        LogisticRegression(),
    )
    return {
        "SubsampleAggregateClassifier": lambda acc: sp.SubsampleAggregateClassifier(
            n_teachers=8, classes=[0, 1], random_state=seed, accountant=acc
        ),
        "SubsampleAggregateClassifier-encoder": lambda acc: sp.SubsampleAggregateClassifier(
            encoded, n_teachers=4, classes=[0, 1], random_state=seed, accountant=acc
        ),
        "SubsampleAverageRegressor": lambda acc: sp.SubsampleAverageRegressor(
            y_bounds=(-3.0, 3.0), n_teachers=8, random_state=seed, accountant=acc
        ),
        "StableERMClassifier": lambda acc: sp.StableERMClassifier(
            classes=[0, 1], random_state=seed, accountant=acc
        ),
        "AveragedPSGDRegressor": lambda acc: sp.AveragedPSGDRegressor(
            y_bounds=(-3.0, 3.0), random_state=seed, accountant=acc
        ),
        "ExpProjectedWalkClassifier": lambda acc: sp.ExpProjectedWalkClassifier(
            feature="a", classes=[0, 1], random_state=seed, accountant=acc
        ),
        "PrivateGridSearchCV": lambda acc: sp.PrivateGridSearchCV(
            sp.SubsampleAggregateClassifier(classes=[0, 1], accountant=acc),
            {"n_teachers": [5, 10]},
            random_state=seed,
        ),
    }


@pytest.mark.parametrize("kind", sorted(_card_kinds()))
def test_model_card_is_identical_on_neighbouring_data_sets(tmp_path, kind):
    from skprivpred.serving import model_card

    rng = np.random.default_rng(0)
    D = pd.DataFrame(
        {"a": rng.normal(size=400), "b": rng.normal(size=400), "c": rng.choice(["x", "y"], 400)}
    )
    D_prime = D.copy()
    D_prime.loc[399] = [250.0, -250.0, "never-seen"]  # one row replaced, an extreme one
    regression = "Regressor" in kind
    cards = []
    for data in (D, D_prime):
        y = data["a"].clip(-3, 3) if regression else (data["a"] > 0).astype(int)
        X = data if "encoder" in kind or "Walk" in kind else data[["a", "b"]]
        # The same budget for both fits: one ledger, one name, the same terms.
        acc = PrivacyAccountant(epsilon=50.0, ledger=str(tmp_path / "budget.db"), name="card")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            cards.append(model_card(_card_kinds()[kind](acc).fit(X, y)))
    assert cards[0] == cards[1]
    card = cards[0]
    assert "918273" not in card and "seeded" in card  # the seed would regenerate the noise
    assert " at 0x" not in card and skprivpred.__version__ in card
    assert "replace-one" in card and "Cost of one answer" in card and "What is secret" in card


def test_model_card_redacts_ledger_credentials(tmp_path, postgres_url):
    from skprivpred.serving import model_card

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 2))
    y = (X[:, 0] > 0).astype(int)
    with_password = postgres_url.replace("postgres@", "postgres:hunter2-secret@", 1)
    with_parameter = postgres_url + "?password=hunter3-secret&connect_timeout=5"
    for i, (url, secret) in enumerate(
        ((with_password, "hunter2-secret"), (with_parameter, "hunter3-secret"))
    ):
        acc = PrivacyAccountant(epsilon=1.0, ledger=url, name=f"card-{i}-{uuid.uuid4().hex}")
        clf = SubsampleAggregateClassifier(n_teachers=4, classes=[0, 1], accountant=acc).fit(X, y)
        card = model_card(clf)
        assert secret not in card and "***" in card and "PostgreSQL server" in card


def test_budget_figures_include_rho_for_a_zcdp_budget(tmp_path):
    from prometheus_client import CollectorRegistry, generate_latest
    from prometheus_client.parser import text_string_to_metric_families

    from skprivpred.accounting import rho_cap
    from skprivpred.serving._metrics import BudgetCollector

    acc = PrivacyAccountant(
        epsilon=1.0, delta=1e-6, composition="zcdp", ledger=str(tmp_path / "z.db")
    )
    acc.charge(10, 0.01, rho=0.01**2 / 8)
    registry = CollectorRegistry()
    registry.register(BudgetCollector(acc, (0.01, 0.0), {}))
    text = generate_latest(registry).decode()
    values = {s.name: s.value for f in text_string_to_metric_families(text) for s in f.samples}
    assert values["skprivpred_budget_rho_spent"] == pytest.approx(10 * 0.01**2 / 8)
    assert values["skprivpred_budget_rho_cap"] == pytest.approx(rho_cap(1.0, 1e-6))
    assert values["skprivpred_budget_epsilon_spent"] == pytest.approx(acc.epsilon_spent)
    assert values["skprivpred_budget_rows_charged"] == 10


def test_admin_lines_in_the_key_file():
    from skprivpred.serving._clients import parse_keys

    keys = parse_keys(f"alpha:{KEY_A}\nadmin:ops:{KEY_B}\n", "keys.txt")
    assert keys == {"alpha": KEY_A, "admin:ops": KEY_B}
    for malformed in (f"admin:{KEY_A}", f"admin::{KEY_A}"):
        with pytest.raises(ValueError, match="admin:name:key"):
            parse_keys(malformed, "keys.txt")


def test_every_trusted_skprivpred_type_exists():
    import importlib

    from skprivpred.serving._trust import SKPRIVPRED_STATE_TYPES, default_trusted_types

    for name in SKPRIVPRED_STATE_TYPES:  # a renamed class would silently stop loading
        module, _, attribute = name.rpartition(".")
        assert isinstance(getattr(importlib.import_module(module), attribute), type), name
    trusted = default_trusted_types()
    assert "skprivpred.everlasting._practical.PrivateEverlastingClassifier" not in trusted
    assert "skprivpred.ensemble._aggregate.SubsampleAggregateClassifier" in trusted
    assert "sklearn.tree._tree.Tree" in trusted and "builtins.eval" not in trusted


TIMING_OFF = "the timing defence is off (--no-timing-defence)"


# -- --no-timing-defence warns once; SIGTERM removes the default metrics directory --------------
@pytest.mark.parametrize("workers", [1, 2])
def test_sigterm_removes_the_metrics_directory_and_the_timing_warning_shows_once(
    tmp_path, service_factory, workers
):
    path, acc = fitted_model(tmp_path, 10)
    temporary = tmp_path / "tmp"
    temporary.mkdir(mode=0o700)
    service = service_factory(
        path, "--no-timing-defence", workers=workers, env={"TMPDIR": str(temporary)}
    )
    # The default directory: a fresh mkdtemp in the temporary directory, mode 0700.
    (metrics,) = temporary.glob("skprivpred-metrics-*")
    assert metrics.stat().st_uid == os.getuid() and (metrics.stat().st_mode & 0o777) == 0o700
    assert service.request("POST", "/predict", {"rows": [[0.0, 1.0, 2.0]]})[0] == 200
    assert metrics.is_dir() and any(metrics.glob("counter_*.db"))  # the default directory
    service.proc.send_signal(signal.SIGTERM)
    assert service.proc.wait(timeout=60) == 0  # a clean stop
    assert not metrics.exists(), sorted(p.name for p in metrics.iterdir())
    log = Path(service.log).read_text()
    assert log.count(TIMING_OFF) == 1, log  # once, from the command, not once per process
    assert acc.queries_answered == 1
