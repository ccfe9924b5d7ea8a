"""Shared fixtures: a real PostgreSQL server, started by the tests themselves.

The server runs from the Debian package's binaries (``initdb``, ``pg_ctl``) in a
temporary directory, listening on 127.0.0.1 only, on a free port, with trust
authentication for that loopback address, and is stopped when the test session
ends. As root (CI), the server runs as the ``postgres`` system user, since
PostgreSQL refuses to run as root. In CI (``CI=true``) a missing server is an
error, not a skip: ``.ci/run`` installs it.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time

import pytest


def _postgres_bindir() -> str | None:
    found = shutil.which("pg_ctl")
    if found:
        return os.path.dirname(found)
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    return os.path.dirname(candidates[-1]) if candidates else None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _as_server_user():
    """``preexec_fn`` that drops root to the ``postgres`` user (PostgreSQL refuses root)."""
    if os.geteuid() != 0:
        return None, None
    user = pwd.getpwnam("postgres")

    def drop():
        os.setgid(user.pw_gid)
        os.setuid(user.pw_uid)

    return drop, user


def _missing(reason: str):
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"PostgreSQL tests must run in CI: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def postgres_url():
    """URL of a fresh PostgreSQL server on 127.0.0.1 (stopped at the end of the session)."""
    try:
        import psycopg
    except ImportError:
        _missing("psycopg is not installed (pip install 'skprivpred[postgres]')")
    bindir = _postgres_bindir()
    if bindir is None:
        _missing("no PostgreSQL server binaries (apt-get install postgresql)")
    try:
        drop, user = _as_server_user()
    except KeyError:
        _missing("running as root and there is no 'postgres' system user")
    root = tempfile.mkdtemp(prefix="skprivpred-pg-")
    data = os.path.join(root, "data")
    if user is not None:
        os.chown(root, user.pw_uid, user.pw_gid)
    port = _free_port()
    env = {**os.environ, "LC_ALL": "C", "LANG": "C"}
    quiet = dict(
        preexec_fn=drop,
        env=env,
        timeout=120,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,  # the server keeps pg_ctl's output open: never pipe it
        stderr=subprocess.DEVNULL,
    )
    initdb = [os.path.join(bindir, "initdb"), "-D", data, "-A", "trust", "-U", "postgres"]
    if subprocess.run([*initdb, "-E", "UTF8"], **quiet).returncode != 0:
        pytest.fail("initdb failed")
    options = f"-c listen_addresses=127.0.0.1 -c port={port} -c unix_socket_directories={root}"
    pg_ctl = [os.path.join(bindir, "pg_ctl"), "-D", data, "-l", os.path.join(root, "log")]
    if subprocess.run([*pg_ctl, "-o", options, "-w", "-t", "60", "start"], **quiet).returncode:
        pytest.fail("pg_ctl start failed")
    url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
    deadline = time.monotonic() + 30
    while True:
        try:
            psycopg.connect(url, connect_timeout=2).close()
            break
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    try:
        yield url
    finally:
        subprocess.run([*pg_ctl, "-m", "immediate", "-w", "stop"], **quiet)
        shutil.rmtree(root, ignore_errors=True)
