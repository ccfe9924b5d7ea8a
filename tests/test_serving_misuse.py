"""Misuse of the service that must not be silent (issue 41, items 5 to 8), on the real server.

* A category value outside the schema the model declared public is refused with 422
  before the charge, naming the column and the values it takes; the schema's own
  markers of a missing value (Adult's ``?``) are answered, and ``/openapi.json`` lists
  exactly the values that are answered. ``--unknown-categories=encode-as-none`` keeps
  the old behaviour (any other value encodes as none of the categories).
* A one-release model (its fit is the release) says so in ``/card``, ``/budget``,
  ``/guarantee`` and ``/openapi.json``; a per-query model says that each answer is one.
* ``--no-timing-defence`` warns once at start, however many workers.
* ``SIGTERM`` stops the service cleanly, and its default metrics directory goes with it.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from test_serving import fitted_model

pytest.importorskip("uvicorn")
pytest.importorskip("starlette")

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
    metrics = temporary / f"skprivpred-{os.getuid()}" / f"metrics-{service.proc.pid}"
    assert service.request("POST", "/predict", {"rows": [[0.0, 1.0, 2.0]]})[0] == 200
    assert metrics.is_dir() and any(metrics.glob("counter_*.db"))  # the default directory
    service.proc.send_signal(signal.SIGTERM)
    assert service.proc.wait(timeout=60) == 0  # a clean stop
    assert not metrics.exists(), sorted(p.name for p in metrics.iterdir())
    log = Path(service.log).read_text()
    assert log.count(TIMING_OFF) == 1, log  # once, from the command, not once per process
    assert acc.queries_answered == 1
