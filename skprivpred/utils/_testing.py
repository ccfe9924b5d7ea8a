"""Throwaway servers on loopback for the tests and benchmarks: PostgreSQL, a dask cluster,
the prediction service.

Not part of the public API. :func:`temporary_postgres` runs the server binaries of the
operating system's PostgreSQL package (``initdb``, ``pg_ctl``) in a temporary
directory, listening on 127.0.0.1 only, on a free port, with trust authentication,
and stops and removes it afterwards. As root the server runs as the ``postgres`` system user, since
PostgreSQL refuses to run as root.
"""

from __future__ import annotations

import contextlib
import glob
import http.client
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

__all__ = [
    "PostgresUnavailable",
    "free_port",
    "local_dask_client",
    "start_service",
    "stop_service",
    "temporary_postgres",
    "wait_healthy",
]


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL server can be started here (what is missing is in the message)."""


def free_port() -> int:
    """A loopback TCP port that nothing listens on, held back from other callers for a while.

    Binding port 0 lets the kernel choose a free port, but once the probing socket
    is closed another process (a parallel test worker, say) may be handed the same
    port before our server binds it. So the port is left reserved: a connection to
    it is accepted and closed from the accepting side first, which keeps the port
    in ``TIME_WAIT`` (about a minute on Linux). The kernel does not hand out such a
    port to ``bind(("127.0.0.1", 0))`` or to a plain ``bind`` to that port, while a
    server that sets ``SO_REUSEADDR`` (as PostgreSQL and uvicorn do) can listen on
    it at once.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        address = listener.getsockname()
        with socket.create_connection(address, timeout=10):
            accepted, _ = listener.accept()
            accepted.close()  # the accepting side closes first: it keeps TIME_WAIT
        return address[1]


def _bindir() -> str:
    found = shutil.which("pg_ctl")
    if found:
        return os.path.dirname(found)
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    if not candidates:
        raise PostgresUnavailable("no PostgreSQL server binaries (apt-get install postgresql)")
    return os.path.dirname(candidates[-1])


def _server_user():
    """``(preexec_fn, (uid, gid))`` to drop root to ``postgres``; ``(None, None)`` otherwise."""
    if os.geteuid() != 0:
        return None, None
    import pwd

    try:
        user = pwd.getpwnam("postgres")
    except KeyError:
        raise PostgresUnavailable("running as root, and no 'postgres' system user") from None

    def drop() -> None:
        os.setgid(user.pw_gid)
        os.setuid(user.pw_uid)

    return drop, (user.pw_uid, user.pw_gid)


@contextlib.contextmanager
def temporary_postgres(timeout: float = 60.0) -> Iterator[str]:
    """Start a PostgreSQL server; yield its URL; stop it and delete its files.

    Raises
    ------
    PostgresUnavailable
        If psycopg or the server binaries are missing, or the server does not start.
    """
    try:
        import psycopg
    except ImportError:
        raise PostgresUnavailable("psycopg is not installed: pip install psycopg[binary]") from None
    bindir = _bindir()
    drop, owner = _server_user()
    root = tempfile.mkdtemp(prefix="skprivpred-pg-")
    if owner is not None:
        os.chown(root, *owner)
    data, port = os.path.join(root, "data"), free_port()
    quiet = dict(
        preexec_fn=drop,
        env={**os.environ, "LC_ALL": "C", "LANG": "C"},
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,  # the server inherits pg_ctl's output: never pipe it
        stderr=subprocess.DEVNULL,
    )
    pg_ctl = [os.path.join(bindir, "pg_ctl"), "-D", data, "-l", os.path.join(root, "log")]
    try:
        initdb = [os.path.join(bindir, "initdb"), "-D", data, "-A", "trust", "-U", "postgres"]
        if subprocess.run([*initdb, "-E", "UTF8"], **quiet).returncode != 0:
            raise PostgresUnavailable("initdb failed")
        for attempt in range(3):  # another process may take the port first: try another
            if attempt:
                port = free_port()
            options = (
                f"-c listen_addresses=127.0.0.1 -c port={port} -c unix_socket_directories={root}"
            )
            start = [*pg_ctl, "-o", options, "-w", "-t", str(int(timeout)), "start"]
            if subprocess.run(start, **quiet).returncode == 0:
                break
        else:
            raise PostgresUnavailable("pg_ctl start failed (three ports tried)")
        url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
        deadline = time.monotonic() + timeout
        while True:
            try:
                psycopg.connect(url, connect_timeout=2).close()
                break
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise PostgresUnavailable("the server did not accept connections") from None
                time.sleep(0.2)
        yield url
    finally:
        if os.path.exists(os.path.join(data, "postmaster.pid")):
            subprocess.run([*pg_ctl, "-m", "immediate", "-w", "stop"], **quiet)
        shutil.rmtree(root, ignore_errors=True)


@contextlib.contextmanager
def local_dask_client(
    n_workers: int = 2,
    *,
    allowed_failures: int | None = None,
    timeout: float = 30.0,
    **cluster_options,
) -> Iterator:
    """A dask ``LocalCluster`` of worker processes on 127.0.0.1 and its ``Client``.

    One thread per worker, no dashboard, logs below errors silenced; the client
    and the cluster are always closed. ``allowed_failures`` sets
    ``distributed.scheduler.allowed-failures`` for the cluster (0: a task whose
    worker dies fails at once, instead of being retried elsewhere). Further keyword
    arguments (``memory_limit``, ``local_directory``, ...) go to ``LocalCluster``.
    """
    import logging

    import dask
    import distributed

    config = (
        {}
        if allowed_failures is None
        else {"distributed.scheduler.allowed-failures": allowed_failures}
    )
    with dask.config.set(config):
        cluster = distributed.LocalCluster(
            n_workers=n_workers,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
            silence_logs=logging.CRITICAL,
            **cluster_options,
        )
    try:
        client = distributed.Client(cluster, timeout=f"{timeout}s")
        try:
            client.wait_for_workers(n_workers, timeout=timeout)
            yield client
        finally:
            client.close()
    finally:
        cluster.close()


def start_service(
    model: Path,
    workers: int,
    log: Path,
    metrics_dir: Path,
    *,
    pythonpath: str | None = None,
    extra: tuple[str, ...] = (),
) -> tuple[subprocess.Popen, int]:
    """Start ``python -m skprivpred.serving`` on 127.0.0.1 and wait until it is healthy.

    The service serves ``model`` with ``workers`` workers on a free port, at most 1,000
    rows per request, its output appended to ``log``; ``extra`` are further command-line
    options. Returns the process and its port; stop it with :func:`stop_service`.
    """
    port = free_port()
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    command = [
        sys.executable,
        "-m",
        "skprivpred.serving",
        str(model),
        "--port",
        str(port),
        "--workers",
        str(workers),
        "--log-level",
        "warning",
        "--max-rows",
        "1000",
        "--metrics-dir",
        str(metrics_dir),
        *extra,
    ]
    with open(log, "ab") as output:
        proc = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT, env=env)
    wait_healthy(proc, port, log)
    return proc, port


def stop_service(proc: subprocess.Popen) -> None:
    """Stop a service started by :func:`start_service`."""
    proc.terminate()
    proc.wait(timeout=60)


def wait_healthy(proc: subprocess.Popen, port: int, log: Path, timeout: float = 600.0) -> None:
    """Wait until the service on ``port`` answers ``GET /health`` with 200.

    Kills it and raises ``RuntimeError`` (naming ``log``) if it exits or does not answer
    within ``timeout`` seconds (a loaded machine starts the worker and its child slowly).
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/health")
            if conn.getresponse().status == 200:
                return
        except OSError:
            if proc.poll() is not None:
                break
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError(f"the service did not start; see {log}")
