"""Shared fixtures: a real PostgreSQL server, started by the tests themselves.

``skprivpred.utils._testing.temporary_postgres`` runs the operating system package's
server binaries in a temporary directory, on 127.0.0.1 only, and stops it when
the test session ends. In CI (``CI=true``) a server that cannot be started is
an error, not a skip: ``.ci/run`` installs PostgreSQL.

The suite runs in parallel (pytest-xdist): a session fixture is set up once per
worker process, so each worker that runs a PostgreSQL test starts its own server
(at most one per worker, each in its own directory, on its own reserved port,
started within the fixture's timeout), and the tests of one worker share it.

Each worker gets its share of the cores for native threads (BLAS, OpenMP), and so do
the processes it starts: with two workers on two cores, two BLAS threads per worker
would oversubscribe the machine, and OpenBLAS threads that wait on a busy core make
the many tiny solves of the statistical tests an order of magnitude slower.
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

import pytest

from skprivpred.utils._testing import PostgresUnavailable, temporary_postgres

_NATIVE_THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
)
_THREAD_LIMITS = pytest.StashKey[object]()

# The tree mirrors the package (tests/<subpackage>/test_<module>.py, the cross-cutting audits
# in tests/audits/). Test modules share helpers by importing one another by basename
# (``from test_serving import Service``), so every directory of the tree is on ``sys.path``
# before any test module is imported, whatever file or directory is run; pytest's default
# ("prepend") import mode needs the basenames to be unique in the tree, and refuses two alike.
_TESTS = Path(__file__).resolve().parent
for _directory in sorted(_TESTS.iterdir()):
    if _directory.is_dir() and not _directory.name.startswith((".", "_")):
        if str(_directory) not in sys.path:
            sys.path.insert(0, str(_directory))


def pytest_configure(config):
    """In a pytest-xdist worker, use at most cores / workers native threads.

    A thread count the user sets in the environment is left alone.
    """
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if workers is None or any(name in os.environ for name in _NATIVE_THREAD_VARIABLES):
        return
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    threads = max(1, (cores or 1) // int(workers))
    for name in _NATIVE_THREAD_VARIABLES:  # inherited by the processes the tests start
        os.environ[name] = str(threads)
    from threadpoolctl import threadpool_limits

    config.stash[_THREAD_LIMITS] = threadpool_limits(limits=threads)  # held until exit


@pytest.fixture(scope="session")
def postgres_url():
    """URL of a fresh PostgreSQL server on 127.0.0.1 (one per worker, stopped at its end)."""
    try:
        server = temporary_postgres()
        url = server.__enter__()
    except PostgresUnavailable as exc:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"the PostgreSQL tests must run in CI: {exc}")
        pytest.skip(str(exc))
    try:
        yield url
    finally:
        server.__exit__(None, None, None)


@pytest.fixture
def service_factory(tmp_path):
    """Start the real service (``test_serving.Service``) on loopback; stop it at the end.

    ``service_factory(model, *options, workers=2, env=None)`` returns a started service;
    after the test every service is stopped and its log must hold no stack trace.
    """
    from test_serving import Service  # the real service in a subprocess

    started: list[Service] = []

    def start(model: Path, *extra: str, workers: int = 2, env: dict | None = None) -> Service:
        service = Service(model, tmp_path / "service.log", *extra, workers=workers, env=env)
        started.append(service)
        return service

    yield start
    for service in started:
        service.stop()
    log = (tmp_path / "service.log").read_text() if (tmp_path / "service.log").exists() else ""
    assert "Traceback" not in log, log  # never a stack trace in the service's log


@pytest.fixture
def start(service_factory):
    """:func:`service_factory` with one worker."""
    return functools.partial(service_factory, workers=1)
