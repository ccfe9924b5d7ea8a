"""The service's files and inputs never lose or expose the budget.

What is checked (each was reproduced on the service before the fix):

* ``--metrics-dir`` set to the ledger's directory used to delete the ledger at start (a new
  accountant then read 0.0 spent): the service now deletes only the metric files it
  created, in a directory it marked as its own, and refuses any other directory.
* A request body that repeats a key (at any depth) is refused with 422 and charges
  nothing; it used to be answered and charged for the last copy.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from test_serving import (  # the real service in a subprocess, and a model to serve
    EPSILON,
    Service,
    _assert_one_line_refusal,
    _run_command,
    fitted_model,
)

from skprivpred import PrivacyAccountant
from skprivpred.serving._metrics import METRICS_MARKER, prepare_metrics_directory

pytest.importorskip("uvicorn")
pytest.importorskip("starlette")


@pytest.fixture
def start(tmp_path):
    started: list[Service] = []

    def run(model: Path, *extra: str) -> Service:
        service = Service(model, tmp_path / "service.log", *extra, workers=1)
        started.append(service)
        return service

    yield run
    for service in started:
        service.stop()
    log = (tmp_path / "service.log").read_text() if (tmp_path / "service.log").exists() else ""
    assert "Traceback" not in log, log


# -- the metrics directory ------------------------------------------------------------------------
def test_a_metrics_directory_holding_the_ledger_is_refused_and_the_ledger_survives(tmp_path):
    # The deploying guide's layout before the fix: one private 0700 directory for both.
    os.chmod(tmp_path, 0o700)
    model, acc = fitted_model(tmp_path, cap_rows=1000)
    acc.charge(400, EPSILON)  # 4.0 spent
    done = _run_command(str(model), "--metrics-dir", str(tmp_path))
    _assert_one_line_refusal(done, str(tmp_path), "budget.db", "dedicated directory")
    assert (tmp_path / "budget.db").exists()
    ledger = str(tmp_path / "budget.db")
    again = PrivacyAccountant(epsilon=1000 * EPSILON, ledger=ledger, name="test")
    assert again.epsilon_spent == pytest.approx(4.0)


def test_a_ledger_named_like_a_metric_file_is_never_deleted(tmp_path):
    metrics = tmp_path / "metrics"
    prepare_metrics_directory(str(metrics))  # the service's own directory
    ledger = metrics / "counter_1.db"  # a ledger that would be taken for a metric file
    with pytest.raises(ValueError, match=r"holds the ledger file .*counter_1\.db"):
        prepare_metrics_directory(str(metrics), ledger_path=str(ledger))
    PrivacyAccountant(epsilon=1.0, ledger=str(ledger)).charge(1, 0.5)
    with pytest.raises(ValueError, match=r"holds the ledger file"):
        prepare_metrics_directory(str(metrics), ledger_path=str(ledger))
    assert PrivacyAccountant(epsilon=1.0, ledger=str(ledger)).epsilon_spent == 0.5


def test_only_the_services_own_metric_files_are_deleted(tmp_path):
    # A directory the service never marked: nothing in it is deleted, it is refused.
    foreign = tmp_path / "foreign"
    foreign.mkdir(mode=0o700)
    (foreign / "notes.txt").write_text("mine")
    (foreign / "counter_7.db").write_bytes(b"someone's")
    with pytest.raises(ValueError, match=r"foreign holds files the service did not create"):
        prepare_metrics_directory(str(foreign))
    assert sorted(os.listdir(foreign)) == ["counter_7.db", "notes.txt"]
    os.remove(foreign / "notes.txt")
    with pytest.raises(ValueError, match=r"\(counter_7\.db\)"):  # unmarked: not its own
        prepare_metrics_directory(str(foreign))
    assert os.listdir(foreign) == ["counter_7.db"]
    # An empty directory becomes the service's own; a restart deletes its stale files only.
    own = tmp_path / "own"
    own.mkdir(mode=0o700)
    prepare_metrics_directory(str(own))
    marker = own / METRICS_MARKER
    assert stat.S_IMODE(marker.lstat().st_mode) == 0o600
    stale = ["counter_12.db", "gauge_livesum_12.db", "histogram_12.db", "summary_12.db"]
    for name in stale:
        (own / name).write_bytes(b"stale")
    prepare_metrics_directory(str(own))
    assert os.listdir(own) == [METRICS_MARKER]
    (own / "budget.db").write_bytes(b"")
    with pytest.raises(ValueError, match=r"own holds files the service did not create \(budget"):
        prepare_metrics_directory(str(own))
    assert (own / "budget.db").exists()


# -- request bodies ------------------------------------------------------------------------------
def test_duplicate_json_keys_at_any_depth_are_refused_and_charge_nothing(tmp_path, start):
    model, acc = fitted_model(tmp_path, cap_rows=100, frame=True)
    service = start(model)
    one, two = b"[[0.1, 0.2, 0.3]]", b"[[0.1, 0.2, 0.3], [0.3, 0.2, 0.1]]"
    record = b'{"age": 0.1, "hours": 0.2, "score": 0.3}'
    cases = {
        "rows twice": b'{"rows": ' + one + b', "rows": ' + two + b"}",
        "records twice": b'{"records": [' + record + b'], "records": [' + record + b"]}",
        "a column twice in a record": b'{"records": [{"age": 0.1, "age": 0.5, "hours": 0.2, '
        b'"score": 0.3}]}',
        "deep inside a value": b'{"rows": ' + one + b', "x": [{"a": {"b": 1, "b": 2}}]}',
    }
    answers = {case: service.request("POST", "/predict", raw=raw) for case, raw in cases.items()}
    assert {case: status for case, (status, _) in answers.items()} == dict.fromkeys(cases, 422)
    assert all("appears twice" in body["error"] for _, body in answers.values())
    assert acc.queries_answered == 0 and len(acc.history()) == 0
    status, _ = service.request("POST", "/predict", raw=b'{"rows": ' + two + b"}")
    assert status == 200 and acc.queries_answered == 2
