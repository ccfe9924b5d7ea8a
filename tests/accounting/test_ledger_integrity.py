"""An edited ledger is refused, never charged (issue 50, item 5).

Reproduced before the fix, on a budget with a cap of epsilon = 10 and 8 spent:
``UPDATE skprivpred_budget SET rows=0, eps_sum=0`` let the running accountant charge
5 more (it then reported 5.0 spent) and a fresh accountant charge 5 more again; a
horizon's count, written with no journal row, could be set back to 0. Now

* every journal row carries the budget's sums after it (and a horizon's count), every
  charge and read compares the budget row with the newest journal row, and an
  accountant checks the whole journal before its first use: an edited ledger raises
  ``LedgerError`` and nothing is charged, on SQLite and on PostgreSQL;
* with a ledger key (a file outside the database), every row carries a MAC chained to
  the previous one: rewriting every row consistently, which the sums alone cannot
  reveal, is refused too;
* a ledger of schema version 1 (made here with the SQL of skprivpred before the fix)
  migrates to version 2 and keeps its sums, horizons and journal; a client of the older
  version can no longer charge it.
"""

from __future__ import annotations

import math
import os
import pickle
import sqlite3
import uuid
from contextlib import closing

import pytest

from skprivpred import PrivacyAccountant
from skprivpred.accounting._ledger import SCHEMA_VERSION
from skprivpred.exceptions import BudgetExhaustedError, LedgerError


@pytest.fixture(params=["sqlite", "postgresql"])
def ledger_url(request, tmp_path):
    """A ledger address of each persistent kind (a new file, or a new database)."""
    if request.param == "sqlite":
        return str(tmp_path / "budget.db")
    return _new_database(request.getfixturevalue("postgres_url"))


def _new_database(server_url: str) -> str:
    import psycopg

    name = f"ledger_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return server_url.rsplit("/", 1)[0] + "/" + name


def connect(url: str):
    """A plain DB-API connection to the ledger (autocommit), as an editor of it would use."""
    if url.startswith("postgresql"):
        import psycopg

        return psycopg.connect(url, autocommit=True)
    conn = sqlite3.connect(url, isolation_level=None)
    return conn


def execute(conn, query: str, params=()):
    if not isinstance(conn, sqlite3.Connection):
        query = query.replace("?", "%s")
    cursor = conn.cursor()
    cursor.execute(query, params)
    return cursor


def journal_length(url: str) -> int:
    with closing(connect(url)) as conn:
        return execute(conn, "SELECT COUNT(*) FROM skprivpred_charge").fetchone()[0]


def spent_8_of_10(url: str, **kwargs) -> PrivacyAccountant:
    acc = PrivacyAccountant(epsilon=10.0, ledger=url, name="b", **kwargs)
    for _ in range(8):
        acc.charge(1, 1.0, source="test")
    return acc


# -- level 1: the sums and the journal must agree ------------------------------------------------
def test_a_reset_budget_row_is_refused_by_the_running_and_a_fresh_accountant(ledger_url):
    acc = spent_8_of_10(ledger_url)
    with closing(connect(ledger_url)) as conn:
        execute(conn, "UPDATE skprivpred_budget SET rows = 0, eps_sum = 0")
    rows = journal_length(ledger_url)
    with pytest.raises(LedgerError, match=r"'b' .* fails its check: its stored sums differ"):
        acc.charge(5, 1.0)
    with pytest.raises(LedgerError, match="stored sums differ"):
        acc.epsilon_spent  # noqa: B018 - a read is refused too
    with pytest.raises(LedgerError, match="stored sums differ"):
        PrivacyAccountant(epsilon=10.0, ledger=ledger_url, name="b")
    copy_ = pickle.loads(pickle.dumps(acc))  # a copy checks the whole journal first
    with pytest.raises(LedgerError, match="stored sums differ"):
        copy_.charge(1, 1.0)
    assert journal_length(ledger_url) == rows  # nothing was charged
    with closing(connect(ledger_url)) as conn:
        assert execute(conn, "SELECT rows, eps_sum FROM skprivpred_budget").fetchone() == (0, 0)
        # Put back, the budget is as it was: 8 spent, 2 left.
        execute(conn, "UPDATE skprivpred_budget SET rows = 8, eps_sum = 8.0")
    assert acc.epsilon_spent == 8.0
    with pytest.raises(BudgetExhaustedError):
        PrivacyAccountant(epsilon=10.0, ledger=ledger_url, name="b").charge(5, 1.0)


def test_an_edited_journal_row_is_found_by_the_full_check(ledger_url):
    acc = spent_8_of_10(ledger_url)
    with closing(connect(ledger_url)) as conn:
        # An older charge made cheaper: the newest row and the budget row still agree.
        execute(
            conn,
            "UPDATE skprivpred_charge SET epsilon = 0.5 WHERE id = "
            "(SELECT MIN(id) FROM skprivpred_charge WHERE kind = 'charge')",
        )
    with pytest.raises(LedgerError, match=r"journal row #\d+ carries sums"):
        PrivacyAccountant(epsilon=10.0, ledger=ledger_url, name="b")
    assert not acc._ledger.consistent("b", acc._budget_id)


def test_a_reset_horizon_is_refused(ledger_url):
    acc = PrivacyAccountant(epsilon=10.0, ledger=ledger_url, name="h")
    horizon = ("an-estimator", 10)
    acc.charge(6, 0.1, horizon=horizon)
    acc.advance_horizon(2, ("rounds", 5))
    for key in ("an-estimator", "rounds"):
        with closing(connect(ledger_url)) as conn:
            execute(conn, "UPDATE skprivpred_horizon SET answered = 0 WHERE key = ?", (key,))
        rows = journal_length(ledger_url)
        fresh = PrivacyAccountant.__new__(PrivacyAccountant)
        fresh.__setstate__(acc.__getstate__() | {"_horizons_seen": {}, "_seen": None})
        with pytest.raises(LedgerError, match="horizon's count differs"):
            acc.charge(1, 0.1, horizon=horizon) if key == "an-estimator" else acc.advance_horizon(
                1, ("rounds", 5)
            )
        with pytest.raises(LedgerError, match="horizons' counts differ"):
            PrivacyAccountant(epsilon=10.0, ledger=ledger_url, name="h")
        with pytest.raises(LedgerError, match="horizons' counts differ"):
            fresh.horizon_answered(key)
        assert journal_length(ledger_url) == rows
        with closing(connect(ledger_url)) as conn:  # put back
            answered = 6 if key == "an-estimator" else 2
            execute(
                conn, "UPDATE skprivpred_horizon SET answered = ? WHERE key = ?", (answered, key)
            )
    assert acc.horizon_answered("an-estimator") == 6 and acc.horizon_answered("rounds") == 2


# -- level 2: a keyed MAC against a consistent rewrite -------------------------------------------
def rewrite_consistently(url: str, epsilon: float) -> None:
    """Make every charge of budget 'b' cost ``epsilon`` per row, sums and all, as the SQL allows."""
    with closing(connect(url)) as conn:
        rows = execute(
            conn,
            "SELECT id, kind, rows FROM skprivpred_charge WHERE name = 'b' ORDER BY id",
        ).fetchall()
        n, eps, rho = 0, 0.0, 0.0
        for row_id, kind, count in rows:
            if kind == "charge":
                n, eps, rho = n + count, eps + count * epsilon, rho + count * (epsilon**2 / 2.0)
                execute(
                    conn,
                    "UPDATE skprivpred_charge SET epsilon = ?, rho = ? WHERE id = ?",
                    (epsilon, epsilon**2 / 2.0, row_id),
                )
            execute(
                conn,
                "UPDATE skprivpred_charge SET t_rows = ?, t_eps = ?, t_rho = ? WHERE id = ?",
                (n, eps, rho, row_id),
            )
        execute(
            conn,
            "UPDATE skprivpred_budget SET rows = ?, eps_sum = ?, rho_sum = ? WHERE name = 'b'",
            (n, eps, rho),
        )


def key_file(tmp_path, name="ledger.key") -> str:
    path = tmp_path / name
    path.write_bytes(os.urandom(32).hex().encode())
    os.chmod(path, 0o600)
    return str(path)


def test_without_a_key_a_consistent_rewrite_goes_unnoticed(ledger_url):
    # What level 1 does not stop (the reason for the key): the sums agree with the journal.
    acc = spent_8_of_10(ledger_url)
    rewrite_consistently(ledger_url, 0.1)
    assert PrivacyAccountant(epsilon=10.0, ledger=ledger_url, name="b").epsilon_spent == (
        pytest.approx(0.8)
    )
    assert acc.epsilon_spent == pytest.approx(0.8)


def test_a_keyed_journal_refuses_a_consistent_rewrite(ledger_url, tmp_path):
    key = key_file(tmp_path)
    acc = spent_8_of_10(ledger_url, ledger_key_file=key)
    copy_ = pickle.loads(pickle.dumps(acc))
    assert b"ledger.key" in pickle.dumps(acc) and open(key, "rb").read() not in pickle.dumps(acc)
    rewrite_consistently(ledger_url, 0.1)
    rows = journal_length(ledger_url)
    with pytest.raises(LedgerError, match=r"the MAC of journal row #\d+ does not match"):
        acc.charge(5, 1.0)
    with pytest.raises(LedgerError, match="MAC of journal row"):
        PrivacyAccountant(epsilon=10.0, ledger=ledger_url, name="b", ledger_key_file=key)
    with pytest.raises(LedgerError, match="MAC of journal row"):
        copy_.charge(1, 1.0)
    assert journal_length(ledger_url) == rows
    # Without the key, or with another one, the budget is not charged either.
    with pytest.raises(LedgerError, match="signed with a ledger key"):
        PrivacyAccountant(epsilon=10.0, ledger=ledger_url, name="b")
    other = key_file(tmp_path, "other.key")
    with pytest.raises(LedgerError, match="MAC of journal row"):
        PrivacyAccountant(epsilon=10.0, ledger=ledger_url, name="b", ledger_key_file=other)


def test_a_keyed_journal_is_charged_with_its_key_only(tmp_path, monkeypatch):
    url = str(tmp_path / "b.db")
    key = key_file(tmp_path)
    spent_8_of_10(url, ledger_key_file=key)
    monkeypatch.setenv("SKPRIVPRED_LEDGER_KEY_FILE", key)  # the service's --ledger-key-file
    again = PrivacyAccountant(epsilon=10.0, ledger=url, name="b")
    assert again.epsilon_spent == 8.0 and again.ledger_key_file == key
    with pytest.raises(BudgetExhaustedError):
        again.charge(3, 1.0)
    again.charge(2, 1.0)
    monkeypatch.delenv("SKPRIVPRED_LEDGER_KEY_FILE")
    os.chmod(key, 0o644)  # a key others can read is refused
    with pytest.raises(LedgerError, match=r"ledger key file .* is readable by other users"):
        PrivacyAccountant(epsilon=10.0, ledger=url, name="b", ledger_key_file=key)
    # A budget created without a key never takes one (stripping the MACs would look alike).
    os.chmod(key, 0o600)
    PrivacyAccountant(epsilon=1.0, ledger=url, name="plain").charge(1, 0.5)
    with pytest.raises(LedgerError, match="carries no MAC"):
        PrivacyAccountant(epsilon=1.0, ledger=url, name="plain", ledger_key_file=key)


# -- migration from schema version 1 -----------------------------------------------------------
#: The SQL of skprivpred before schema version 2 (f6b663e, skprivpred/accounting/_ledger.py).
V1_TABLES = (
    """CREATE TABLE IF NOT EXISTS skprivpred_budget (
        name TEXT PRIMARY KEY,
        budget_id TEXT NOT NULL,
        config TEXT NOT NULL,
        created DOUBLE PRECISION NOT NULL,
        rows BIGINT NOT NULL,
        eps_sum DOUBLE PRECISION NOT NULL,
        delta_sum DOUBLE PRECISION NOT NULL,
        rho_sum DOUBLE PRECISION NOT NULL,
        ledger_eps DOUBLE PRECISION NOT NULL,
        ledger_delta DOUBLE PRECISION NOT NULL,
        row_epsilon DOUBLE PRECISION,
        row_delta DOUBLE PRECISION)""",
    """CREATE TABLE IF NOT EXISTS skprivpred_charge (
        id {serial},
        time DOUBLE PRECISION NOT NULL,
        name TEXT NOT NULL,
        estimator TEXT,
        rows BIGINT NOT NULL,
        epsilon DOUBLE PRECISION NOT NULL,
        delta DOUBLE PRECISION NOT NULL,
        rho DOUBLE PRECISION)""",
    "CREATE INDEX IF NOT EXISTS skprivpred_charge_name ON skprivpred_charge (name, id)",
    """CREATE TABLE IF NOT EXISTS skprivpred_horizon (
        name TEXT NOT NULL,
        key TEXT NOT NULL,
        answered BIGINT NOT NULL,
        n_queries BIGINT NOT NULL,
        PRIMARY KEY (name, key))""",
    """CREATE TABLE IF NOT EXISTS skprivpred_meta (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL)""",
)
V1_CHARGE = (
    "INSERT INTO skprivpred_charge (time, name, estimator, rows, epsilon, delta, rho) "
    "VALUES (?, ?, ?, ?, ?, ?, ?)"
)
V1_SUMS = (
    "UPDATE skprivpred_budget SET rows = ?, eps_sum = ?, delta_sum = ?, rho_sum = ?, "
    "ledger_eps = ?, ledger_delta = ?, row_epsilon = ?, row_delta = ? WHERE name = ?"
)
TERMS = {"composition": "basic", "delta": 0.0, "delta_prime": None, "epsilon": 10.0}


def make_v1_ledger(url: str, *, edited: bool = False) -> None:
    """Budget 'b' charged 3 x 1 row and 2 rows of a horizon at epsilon 1, as version 1 wrote it."""
    import json
    import time

    sqlite = not url.startswith("postgresql")
    serial = "INTEGER PRIMARY KEY AUTOINCREMENT" if sqlite else "BIGSERIAL PRIMARY KEY"
    if sqlite:
        os.close(os.open(url, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    with closing(connect(url)) as conn:
        for statement in V1_TABLES:
            execute(conn, statement.format(serial=serial))
        execute(conn, "INSERT INTO skprivpred_meta (key, value) VALUES ('schema', ?)", ("1",))
        config = json.dumps({**TERMS, "n_queries": None}, sort_keys=True)
        execute(
            conn,
            "INSERT INTO skprivpred_budget (name, budget_id, config, created, rows, eps_sum, "
            "delta_sum, rho_sum, ledger_eps, ledger_delta, row_epsilon, row_delta) "
            "VALUES (?, ?, ?, ?, 0, 0, 0, 0, 0, 0, NULL, NULL)",
            ("b", uuid.uuid4().hex, config, time.time()),
        )
        n, eps = 0, 0.0
        for rows in (1, 1, 1, 2):
            n, eps = n + rows, eps + rows * 1.0
            execute(conn, V1_SUMS, (n, eps, 0.0, eps / 2.0, 0.0, 0.0, None, None, "b"))
            execute(conn, V1_CHARGE, (time.time(), "b", "test", rows, 1.0, 0.0, 0.5))
        execute(
            conn,
            "INSERT INTO skprivpred_horizon (name, key, answered, n_queries) VALUES (?, ?, ?, ?)",
            ("b", "an-estimator", 2, 10),
        )
        if edited:
            execute(conn, "UPDATE skprivpred_budget SET rows = 0, eps_sum = 0")


def test_a_version_1_ledger_migrates_and_keeps_its_sums(ledger_url):
    make_v1_ledger(ledger_url)
    acc = PrivacyAccountant(epsilon=10.0, ledger=ledger_url, name="b")
    assert acc.epsilon_spent == 5.0 and acc.queries_answered == 5
    assert acc.horizon_answered("an-estimator") == 2
    assert list(acc.history()["rows"]) == [1, 1, 1, 2]
    assert acc._ledger.consistent("b", acc._budget_id)
    with closing(connect(ledger_url)) as conn:
        meta = execute(conn, "SELECT value FROM skprivpred_meta WHERE key = 'schema'").fetchone()
        assert meta == (SCHEMA_VERSION,) == ("2",)
        # A client of version 1 can no longer charge it: its insert fails, whole.
        with pytest.raises(Exception, match="schema 2: a client of an older skprivpred"):
            if isinstance(conn, sqlite3.Connection):
                execute(conn, "BEGIN IMMEDIATE")
            else:
                execute(conn, "BEGIN")
            execute(conn, V1_SUMS, (6, 6.0, 0.0, 3.0, 0.0, 0.0, None, None, "b"))
            execute(conn, V1_CHARGE, (0.0, "b", "old client", 1, 1.0, 0.0, 0.5))
        execute(conn, "ROLLBACK")
    acc.charge(5, 1.0, horizon=("an-estimator", 10))
    assert acc.epsilon_spent == 10.0 and acc.horizon_answered("an-estimator") == 7
    with pytest.raises(BudgetExhaustedError):
        PrivacyAccountant(epsilon=10.0, ledger=ledger_url, name="b").charge(1, 1.0)
    assert math.isclose(
        PrivacyAccountant(epsilon=10.0, ledger=ledger_url, name="b").epsilon_spent, 10.0
    )


def test_an_edited_version_1_ledger_is_not_migrated(ledger_url):
    make_v1_ledger(ledger_url, edited=True)
    with pytest.raises(LedgerError, match="is not migrated .* differ from its journal"):
        PrivacyAccountant(epsilon=10.0, ledger=ledger_url, name="b")
    with closing(connect(ledger_url)) as conn:  # left as it was: version 1
        meta = execute(conn, "SELECT value FROM skprivpred_meta WHERE key = 'schema'").fetchone()
        assert meta == ("1",)


# -- through the real service --------------------------------------------------------------------
def test_the_service_refuses_an_edited_ledger_and_charges_nothing(tmp_path, start):
    pytest.importorskip("uvicorn")
    from test_serving import _assert_one_line_refusal, _run_command, fitted_model

    model, acc = fitted_model(tmp_path, cap_rows=10)
    ledger = acc.ledger_url[len("sqlite:///") :]
    service = start(model)
    status, _ = service.request("POST", "/predict", {"rows": [[0.1, 0.2, 0.3]] * 8})
    assert status == 200 and acc.queries_answered == 8
    with closing(connect(ledger)) as conn:
        execute(conn, "UPDATE skprivpred_budget SET rows = 0, eps_sum = 0")
    rows = journal_length(ledger)
    status, body = service.request("POST", "/predict", {"rows": [[0.1, 0.2, 0.3]] * 5})
    assert status == 503 and "nothing was charged" in body["error"]
    assert journal_length(ledger) == rows
    done = _run_command(str(model))  # a restarted service does not start
    _assert_one_line_refusal(done, "'test'", "fails its check", "stored sums differ")
    assert journal_length(ledger) == rows


def test_the_service_charges_a_keyed_ledger_with_its_key_file(tmp_path, start):
    pytest.importorskip("uvicorn")
    import numpy as np
    from sklearn.linear_model import LogisticRegression
    from test_serving import _assert_one_line_refusal, _run_command

    from skprivpred import SubsampleAggregateClassifier
    from skprivpred.serving import save_model

    key = key_file(tmp_path)
    ledger = str(tmp_path / "budget.db")
    acc = PrivacyAccountant(epsilon=0.1, ledger=ledger, name="b", ledger_key_file=key)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    clf = SubsampleAggregateClassifier(
        LogisticRegression(), epsilon=0.01, n_teachers=8, classes=[0, 1], accountant=acc
    ).fit(X, (X[:, 0] > 0).astype(int))
    model = tmp_path / "model.skops"
    save_model(clf, model)
    assert open(key, "rb").read() not in model.read_bytes()
    moved = tmp_path / "elsewhere.key"
    os.replace(key, moved)  # on the serving machine the key lives elsewhere
    done = _run_command(str(model))
    _assert_one_line_refusal(done, "ledger key file", "cannot be read")
    service = start(model, "--ledger-key-file", str(moved))
    status, _ = service.request("POST", "/predict", {"rows": [[0.1, 0.2, 0.3]] * 8})
    assert status == 200 and acc.queries_answered == 8
    rewrite_consistently(ledger, 0.0001)  # 8 rows now "cost" 0.0008: the MAC says no
    rows = journal_length(ledger)
    status, _ = service.request("POST", "/predict", {"rows": [[0.1, 0.2, 0.3]] * 2})
    assert status == 503 and journal_length(ledger) == rows
