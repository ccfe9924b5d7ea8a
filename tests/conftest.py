"""Shared fixtures: a real PostgreSQL server, started by the tests themselves.

``skprivpred._testing.temporary_postgres`` runs the operating system package's
server binaries in a temporary directory, on 127.0.0.1 only, and stops it when
the test session ends. In CI (``CI=true``) a server that cannot be started is
an error, not a skip: ``.ci/run`` installs PostgreSQL.
"""

from __future__ import annotations

import os

import pytest

from skprivpred._testing import PostgresUnavailable, temporary_postgres


@pytest.fixture(scope="session")
def postgres_url():
    """URL of a fresh PostgreSQL server on 127.0.0.1 (stopped at the end of the session)."""
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
