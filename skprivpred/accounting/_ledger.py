"""Where a privacy budget's spending lives: a SQLite file, a PostgreSQL server, or memory.

A ledger stores, for each named budget,

- its configuration and a random identity (``budget_id``), fixed when it is created;
- the running sums that the composition theorems need (:class:`Totals`),
  updated in the same transaction as
- the *journal*: one row per charge (time, source estimator, rows, per-row
  epsilon, delta and rho), and one per step of a horizon, each carrying the
  budget's sums (and the horizon's count) after it, and with a ledger key a
  MAC chained to the budget's previous row (schema version 2; see
  :class:`_SQLLedger` for the checks that make an edited ledger fail);
- the *horizons*: for each fitted estimator with a public query horizon, the
  number of rows answered so far.

The arithmetic of composition is not here: :mod:`skprivpred.accounting` decides
inside the transaction (a callback), and the ledger makes the read-decide-write
atomic across threads, processes and machines. A charge is one committed
transaction; a refusal rolls back and writes nothing.

Several budgets of one ledger (a service's global budget and a client's quota)
can be charged in one transaction (:meth:`Ledger.transact` takes a list of
:class:`Step`): either every budget accepts and all are charged, or nothing is.

Connections are opened lazily, one per thread and process (a forked child opens
its own), and are never pickled: a pickled accountant carries the ledger's
address, and its copy reopens the same budget. A copy never creates a budget:
if the file or the budget is gone it raises :class:`LedgerError` instead of
starting again from zero. An in-memory ledger belongs to the process that
created it: a forked child, or a copy unpickled in another process, raises.

Every operation can be given the newest journal row the caller has seen
(:class:`Mark`); a ledger that no longer holds that row was replaced by an
older copy (a restored backup, which rolls spending back) and raises.

Files are created by this user only: a new SQLite file with ``O_EXCL`` and mode
0600 (SQLite gives its ``-wal`` and ``-shm`` files the same mode), and the
default ledger's directory is used only if it is a real directory owned by this
user with mode 0700 (a name another user took first is left alone for a fresh
directory of this user's: :func:`default_ledger_path`). A SQLite ledger that
another local user controls (the file, its directory or one above it, or a
symbolic link in its place) is refused before SQLite opens it
(:func:`~skprivpred.utils._private_dirs.foreign_control`).
Addresses are shown only through :func:`redact`, which hides every password.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import hmac
import json
import math
import os
import random
import re
import sqlite3
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import Any, NamedTuple
from urllib.parse import quote, unquote, unquote_plus

from ..exceptions import LedgerError
from ..utils._private_dirs import foreign_control, own_temporary_directory, user_temporary_directory

__all__ = [
    "JOURNAL_COLUMNS",
    "Charge",
    "Ledger",
    "LedgerError",
    "LedgerState",
    "Mark",
    "Step",
    "Totals",
    "default_ledger_path",
    "mark_temporary",
    "memory_ledger",
    "open_ledger",
    "open_ledger_url",
    "redact",
    "reopen_ledger",
    "sqlite_path",
    "without_password",
]

SCHEMA_VERSION = "2"


class Totals(NamedTuple):
    """Running sums of a budget's charges (what the composition theorems need)."""

    rows: int
    epsilon: float  # sum of per-row epsilons (basic composition)
    delta: float  # sum of per-row deltas (basic composition)
    rho: float  # zCDP of the pure charges
    ledger_epsilon: float  # charges with delta > 0, composed with the zCDP part by basic comp.
    ledger_delta: float


ZERO = Totals(0, 0.0, 0.0, 0.0, 0.0, 0.0)


class Mark(NamedTuple):
    """The newest journal row of a budget that a reader has seen: its id and time.

    Journal rows are only ever added, so a ledger that no longer holds a row
    someone has seen was replaced by an older copy of itself.
    """

    id: int
    time: float


class LedgerState(NamedTuple):
    """A budget as stored: its sums, the one per-row guarantee, and a horizon's count."""

    totals: Totals
    row_guarantee: tuple[float, float] | None  # advanced composition's per-row (eps, delta)
    horizon_answered: int  # rows answered within the requested horizon (0 if none)
    mark: Mark | None = None  # the budget's newest journal row (None: no charge yet)


class Charge(NamedTuple):
    """One journal row: ``rows`` releases, each ``(epsilon, delta)``-DP (and ``rho``-zCDP)."""

    rows: int
    epsilon: float
    delta: float
    rho: float | None
    source: str | None


#: ``decide(state) -> (new totals, new per-row guarantee)``, or raise to refuse.
Decide = Callable[[LedgerState], tuple[Totals, "tuple[float, float] | None"]]


class Step(NamedTuple):
    """What one budget takes part in a transaction (see :meth:`Ledger.transact`).

    With ``record=False`` only the horizon advances (by ``charge.rows``): the
    sums and the journal are left alone (steps of a release already charged).
    ``seen`` is the newest journal row the caller has seen of this budget: the
    transaction refuses a ledger that no longer holds it.
    """

    name: str
    budget_id: str
    decide: Decide
    charge: Charge
    horizon: tuple[str, int] | None = None
    record: bool = True
    seen: Mark | None = None


JOURNAL_COLUMNS = ("time", "name", "estimator", "rows", "epsilon", "delta", "rho")


class Ledger:
    """Interface of a ledger; see :func:`open_ledger`."""

    url: str
    persistent: bool
    mac_key: bytes | None = None  # the key of the journal's MAC (file and server ledgers)

    def verify(self, name: str, budget_id: str) -> None:
        """Check the budget's whole journal; raise :class:`LedgerError` if it was edited."""

    def create(self, name: str, config: dict) -> tuple[str, Mark | None]:
        """Create the budget ``name`` or attach to it; return its ``budget_id`` and newest row."""
        raise NotImplementedError

    def state(
        self,
        name: str,
        budget_id: str,
        horizon_key: str | None = None,
        seen: Mark | None = None,
    ) -> LedgerState:
        """Read the budget (and the count of one horizon) without writing."""
        raise NotImplementedError

    def transact(self, steps: Sequence[Step]) -> list[Mark | None]:
        """Read, decide, and write every step's budget, atomically: all of them or none.

        Each step's ``decide`` sees its budget as stored and returns its new
        sums, or raises to refuse; a refusal of any step rolls the whole
        transaction back. Returns each budget's newest journal row afterwards.
        """
        raise NotImplementedError

    def journal(self, name: str, budget_id: str, seen: Mark | None = None) -> list[dict]:
        """Every charge of the budget, oldest first."""
        raise NotImplementedError


def _rolled_back(url: str, name: str, seen: Mark) -> LedgerError:
    return LedgerError(
        f"the ledger {redact(url)} no longer holds journal row #{seen.id} of the budget {name!r}, "
        "which this accountant has seen: the ledger was replaced by an older copy of itself "
        "(a restored backup), which rolls spending back. Nothing was charged. A ledger is "
        "never restored from a backup: the budget's true spending includes every charge "
        "made since that copy."
    )


# -- in memory ------------------------------------------------------------------------------
#: Every in-memory ledger of this process, by key (weakly: a ledger lives as long as its users).
_MEMORY: weakref.WeakValueDictionary[str, _MemoryLedger] = weakref.WeakValueDictionary()


class _MemoryLedger(Ledger):
    """One process's memory: shared by identity; a pickled copy reattaches only in this process."""

    persistent = False

    def __init__(self) -> None:
        self.url = ":memory:"
        self.key = uuid.uuid4().hex
        self.pid = os.getpid()
        self._lock = threading.Lock()
        self._budgets: dict[str, dict] = {}
        self._journal: list[tuple[float, dict]] = []  # (time, row): the time as stored
        self._horizons: dict[tuple[str, str], list[int]] = {}
        _MEMORY[self.key] = self

    def _check_process(self) -> None:
        # Before the lock: a lock held by another thread when the process forked stays
        # held forever in the child.
        if os.getpid() != self.pid:
            raise LedgerError(
                f"this accountant's ledger is ':memory:', the memory of process {self.pid}, "
                f"and this is another process ({os.getpid()}, forked from it): a charge here "
                "would never reach the parent's budget, so it is refused. Use ledger=None (a "
                "file this machine's processes share), a file path or a 'postgresql://' URL "
                "for budgets used by several processes."
            )

    def create(self, name: str, config: dict) -> tuple[str, Mark | None]:
        self._check_process()
        with self._lock:
            if name not in self._budgets:
                self._budgets[name] = {
                    "budget_id": uuid.uuid4().hex,
                    "config": config,
                    "totals": ZERO,
                    "row": None,
                    "mark": None,
                }
            budget = self._budgets[name]
            return _same_config(budget, name, config, self.url), budget["mark"]

    def _budget(self, name: str, budget_id: str, seen: Mark | None) -> dict:
        budget = self._budgets.get(name)
        if budget is None or budget["budget_id"] != budget_id:
            raise LedgerError(f"the in-memory ledger holds no budget {name!r} with this identity.")
        if seen is not None and not (
            0 < seen.id <= len(self._journal)
            and self._journal[seen.id - 1][1]["name"] == name
            and self._journal[seen.id - 1][0] == seen.time
        ):
            raise _rolled_back(self.url, name, seen)
        return budget

    def state(self, name, budget_id, horizon_key=None, seen=None) -> LedgerState:
        self._check_process()
        with self._lock:
            budget = self._budget(name, budget_id, seen)
            answered = self._horizons.get((name, horizon_key or ""), [0, 0])[0]
            return LedgerState(budget["totals"], budget["row"], answered, budget["mark"])

    def transact(self, steps: Sequence[Step]) -> list[Mark | None]:
        self._check_process()
        _distinct(steps)
        with self._lock:
            budgets, entries, decisions = [], [], []
            for step in steps:  # every decision first: a refusal changes nothing
                budget = self._budget(step.name, step.budget_id, step.seen)
                stored = (
                    None
                    if step.horizon is None
                    else self._horizons.get((step.name, step.horizon[0]))
                )
                entry = _horizon_entry(stored, step.horizon)
                state = LedgerState(budget["totals"], budget["row"], entry[0], budget["mark"])
                budgets.append(budget)
                entries.append(entry)
                decisions.append(step.decide(state))
            for step, budget, entry, (totals, row) in zip(steps, budgets, entries, decisions):
                if step.record:
                    when = time.time()
                    budget["totals"], budget["row"] = totals, row
                    self._journal.append((when, _journal_row(when, step.name, step.charge)))
                    budget["mark"] = Mark(len(self._journal), when)
                if step.horizon is not None:
                    self._horizons[(step.name, step.horizon[0])] = [
                        entry[0] + step.charge.rows,
                        step.horizon[1],
                    ]
            return [budget["mark"] for budget in budgets]

    def journal(self, name: str, budget_id: str, seen: Mark | None = None) -> list[dict]:
        self._check_process()
        with self._lock:
            self._budget(name, budget_id, seen)
            return [dict(row) for _, row in self._journal if row["name"] == name]


class _DetachedMemoryLedger(Ledger):
    """What a ``":memory:"`` accountant unpickled in another process holds: nothing to charge."""

    persistent = False

    def __init__(self, key: str, pid: int) -> None:
        self.url = ":memory:"
        self.key, self.pid = key, pid

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise LedgerError(
            f"this accountant's ledger is ':memory:', the memory of process {self.pid}; this "
            f"copy was unpickled in process {os.getpid()} (a joblib or multiprocessing "
            "worker, a file loaded elsewhere), where that budget does not exist, so it cannot "
            "charge it. Use ledger=None (a file this machine's processes share), a file path "
            "or a 'postgresql://' URL, or keep the work in this process (for example "
            "joblib.parallel_config(backend='threading'))."
        )

    create = state = transact = journal = verify = _refuse


class _UnusableLedger(Ledger):
    """A copy's ledger that could not be reopened (its key file): every use raises why."""

    persistent = True

    def __init__(self, url: str, error: LedgerError) -> None:
        self.url, self.error = url, error

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise LedgerError(str(self.error))

    create = state = transact = journal = verify = _refuse


def reopen_ledger_later(
    url: str, timeout: float, key_file: str | os.PathLike | None = None
) -> Ledger:
    """:func:`reopen_ledger`, or a ledger whose every use raises its :class:`LedgerError`.

    For a copy being unpickled (a model file being loaded): the error is
    raised at the copy's first use, with its own message, not while loading.
    """
    try:
        return reopen_ledger(url, timeout, key_file)
    except LedgerError as exc:
        return _UnusableLedger(url, exc)


def memory_ledger(key: str, pid: int) -> Ledger:
    """The in-memory ledger ``key`` of this process, or a detached one that refuses every use."""
    ledger = _MEMORY.get(key)
    if ledger is not None and ledger.pid == os.getpid() == pid:
        return ledger
    return _DetachedMemoryLedger(key, pid)


def _distinct(steps: Sequence[Step]) -> None:
    names = [step.name for step in steps]
    if len(set(names)) != len(names):
        raise ValueError(f"a transaction charges each budget once, got {names!r}.")


def _horizon_entry(stored, horizon) -> list[int]:
    """``[answered, n_queries]`` of a horizon, checking that its size never changes."""
    if horizon is None:
        return [0, 0]
    if stored is None:
        return [0, horizon[1]]
    if stored[1] != horizon[1]:
        raise LedgerError(
            f"the ledger counts this estimator's horizon as n_queries={stored[1]}, but the "
            f"estimator asks for n_queries={horizon[1]}; a horizon never changes after fit."
        )
    return list(stored)


def _journal_row(when: float, name: str, charge: Charge) -> dict:
    return {
        "time": datetime.fromtimestamp(when, tz=timezone.utc),
        "name": name,
        "estimator": charge.source,
        "rows": charge.rows,
        "epsilon": charge.epsilon,
        "delta": charge.delta,
        "rho": charge.rho,
    }


def _same_config(budget: dict, name: str, config: dict, url: str) -> str:
    """The stored budget's id, if its configuration is the one asked for."""
    if budget["config"] != config:
        raise ValueError(
            f"the ledger {redact(url)} already holds a budget named {name!r} with "
            f"{_describe(budget['config'])}, not {_describe(config)}; a budget's terms never "
            "change: use its terms, or another name."
        )
    return budget["budget_id"]


def _describe(config: dict) -> str:
    return ", ".join(f"{key}={value!r}" for key, value in sorted(config.items()))


# -- SQL ledgers ------------------------------------------------------------------------------
#: Schema version 1: the journal holds the charges only. Version 2 (below) adds to each
#: journal row the running sums after it, horizon rows and an optional MAC chain.
_TABLES = (
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
    # Last: its presence means the whole schema was committed (DDL is transactional).
    """CREATE TABLE IF NOT EXISTS skprivpred_meta (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL)""",
)
_SUMS = "rows, eps_sum, delta_sum, rho_sum, ledger_eps, ledger_delta, row_epsilon, row_delta"

#: Columns that schema version 2 adds to the journal: what the row is (``kind``: ``open``
#: when the budget is created, ``charge``, ``horizon`` for a horizon's steps of a release
#: already charged, ``migrate`` when a version 1 ledger was migrated), the horizon it
#: counts and that horizon's count after it, the budget's sums after it, and its MAC.
_V2_COLUMNS = (
    ("kind", "TEXT"),
    ("hkey", "TEXT"),
    ("answered", "BIGINT"),
    ("t_rows", "BIGINT"),
    ("t_eps", "DOUBLE PRECISION"),
    ("t_delta", "DOUBLE PRECISION"),
    ("t_rho", "DOUBLE PRECISION"),
    ("t_ledger_eps", "DOUBLE PRECISION"),
    ("t_ledger_delta", "DOUBLE PRECISION"),
    ("t_row_epsilon", "DOUBLE PRECISION"),
    ("t_row_delta", "DOUBLE PRECISION"),
    ("mac", "TEXT"),
)
#: A journal row as the MAC covers it (and as it is read back), with each field's type.
_ROW_FIELDS = (
    ("time", float),
    ("name", str),
    ("estimator", str),
    ("rows", int),
    ("epsilon", float),
    ("delta", float),
    ("rho", float),
    ("kind", str),
    ("hkey", str),
    ("answered", int),
    ("t_rows", int),
    ("t_eps", float),
    ("t_delta", float),
    ("t_rho", float),
    ("t_ledger_eps", float),
    ("t_ledger_delta", float),
    ("t_row_epsilon", float),
    ("t_row_delta", float),
)
_ROW_SELECT = "id, mac, " + ", ".join(name for name, _ in _ROW_FIELDS)
_ROW_INSERT = (
    "INSERT INTO skprivpred_charge ("
    + ", ".join(name for name, _ in _ROW_FIELDS)
    + ", mac) VALUES ("
    + ", ".join("?" for _ in _ROW_FIELDS)
    + ", ?)"
)
_OLDER_CLIENT = (
    "this ledger has skprivpred ledger schema 2: a client of an older skprivpred cannot "
    "charge it (upgrade it); nothing was charged"
)


class _Row(NamedTuple):
    """One journal row as stored (schema 2)."""

    id: int
    mac: str | None
    fields: tuple  # in the order of _ROW_FIELDS

    def get(self, name: str) -> Any:
        return self.fields[_FIELD_INDEX[name]]

    @property
    def totals(self) -> Totals | None:
        if self.get("t_rows") is None:
            return None
        return Totals(*self.fields[_FIELD_INDEX["t_rows"] : _FIELD_INDEX["t_row_epsilon"]])

    @property
    def guarantee(self) -> tuple[float, float] | None:
        eps, delta = self.get("t_row_epsilon"), self.get("t_row_delta")
        return None if eps is None else (eps, delta)


_FIELD_INDEX = {name: i for i, (name, _) in enumerate(_ROW_FIELDS)}


def _typed(values: Sequence[Any]) -> tuple:
    """A journal row's fields with the Python types of :data:`_ROW_FIELDS` (None kept)."""
    return tuple(
        None if value is None else kind(value) for (_, kind), value in zip(_ROW_FIELDS, values)
    )


def _row(values: Sequence[Any]) -> _Row:
    return _Row(int(values[0]), values[1], _typed(values[2:]))


#: What the check of each charge reads of the newest row without a key: its id, MAC, time
#: and sums (the MAC of a keyed ledger covers every field, so then the whole row is read).
_HEAD_SELECT = "id, mac, time, " + ", ".join(name for name, _ in _ROW_FIELDS[10:])
_NO_CHARGE = (None,) * 9  # the fields between the time and the sums, not read


def _head_row(values: Sequence[Any]) -> _Row:
    return _Row(values[0], values[1], (values[2], *_NO_CHARGE, *values[3:]))


def _mac(key: bytes, budget_id: str, previous: str | None, fields: tuple) -> str:
    """HMAC-SHA256 of a journal row, chained to the MAC of the budget's previous row."""
    parts = [budget_id, previous or ""]
    for (_, kind), value in zip(_ROW_FIELDS, fields):
        parts.append("-" if value is None else repr(value) if kind is float else str(value))
    return hmac.new(key, "\x1e".join(parts).encode(), hashlib.sha256).hexdigest()


def _read_key(path: str | os.PathLike) -> bytes:
    """The ledger key in ``path``: a file of this user's, mode 0600, of at least 16 bytes."""
    name = os.fspath(path)
    problem = foreign_control(name, "the ledger key file", secret=True)
    if problem is not None:
        raise LedgerError(f"{problem}. Whoever reads the key can rewrite the ledger unnoticed.")
    try:
        with open(name, "rb") as handle:
            key = handle.read().strip()
    except OSError as exc:
        raise LedgerError(f"the ledger key file {name} cannot be read: {exc.strerror}.") from None
    if len(key) < 16:
        raise LedgerError(
            f"the ledger key file {name} holds {len(key)} bytes; a ledger key needs at least "
            "16 (for example `head -c 32 /dev/urandom | base64 > FILE; chmod 600 FILE`)."
        )
    return key


class _SQLLedger(Ledger):
    """What the SQLite and PostgreSQL ledgers share: schema, queries, per-thread connections.

    Subclasses open connections, start a write transaction that locks the
    budget (:meth:`_begin_write`) and translate driver errors into
    :class:`LedgerError`.

    **Tamper evidence** (schema version 2). Every journal row carries the
    budget's sums after it (and, for a horizon, its count after it); a budget
    has a journal row from its creation on. Every read and every charge
    compares the budget row with its newest journal row, and a horizon's count
    with its newest journal row, by index (:meth:`_check_head`): a mismatch
    raises :class:`LedgerError` and charges nothing. :meth:`verify` checks the
    whole journal (each row's sums follow from the previous row's and its
    charge). With a key (``mac_key``), every row also carries an HMAC-SHA256 chained
    to the budget's previous row: rewriting rows consistently needs the key.
    """

    persistent = True
    _placeholder = "?"
    _serial = "INTEGER PRIMARY KEY AUTOINCREMENT"
    _lock_suffix = ""  # appended to the budget SELECT of a write transaction

    def __init__(self, url: str, timeout: float, key: bytes | None = None) -> None:
        self.url = url
        self.timeout = timeout
        self.mac_key = key
        self._local = threading.local()

    # connections: one per thread and process, never shared or pickled
    def _connection(self, *, create: bool = False):
        local = self._local
        if getattr(local, "pid", None) != os.getpid():
            local.pid, local.conn = os.getpid(), None  # a forked child opens its own
        if local.conn is not None and self._replaced(local):
            self._drop_connection()
        if local.conn is None:
            local.conn = self._connect(create=create)
            self._opened(local)
        return local.conn

    def _replaced(self, local) -> bool:
        """Whether what this thread's connection reads is no longer the ledger at the address."""
        return False

    def _opened(self, local) -> None:
        """Remember what a new connection opened (see :meth:`_replaced`)."""

    def _drop_connection(self) -> None:
        """Forget this thread's connection after an error (a new one is opened next time)."""
        conn = getattr(self._local, "conn", None)
        self._local.conn = None
        if conn is not None:
            try:
                conn.close()
            except Exception:  # noqa: BLE001 - closing a broken connection may fail too
                pass

    def _connect(self, *, create: bool):
        raise NotImplementedError

    def _begin_write(self, cursor) -> None:
        raise NotImplementedError

    def _serialise_schema(self, cursor) -> None:
        """Inside a write transaction: keep concurrent schema creation apart."""

    def _has_schema(self, cursor) -> bool:
        """Whether the ledger's tables exist (the meta table is created last)."""
        raise NotImplementedError

    def _refuse_older_clients(self, cursor) -> None:
        """Make an insert without the sums of schema 2 (an older client's charge) fail."""
        raise NotImplementedError

    def _error(self, exc: Exception) -> LedgerError:
        raise NotImplementedError

    def _driver_errors(self) -> tuple[type[Exception], ...]:
        raise NotImplementedError

    def _sql(self, query: str) -> str:
        return query.replace("?", self._placeholder)

    def _run(self, body, *, write: bool, create: bool = False):
        """Run ``body(cursor)`` in one transaction, retried while the ledger is busy.

        A failed attempt is rolled back whole, so retrying it (``body`` runs
        again, on what is stored then) is safe. Errors become :class:`LedgerError`.
        """
        deadline = time.monotonic() + self.timeout
        pause = 5e-5
        with self._writer(write, deadline):
            while True:
                try:
                    return self._attempt(body, write=write, create=create)
                except self._driver_errors() as exc:
                    if self._busy(exc) and time.monotonic() < deadline:
                        time.sleep(pause * random.uniform(0.5, 1.0))
                        pause = min(2.0 * pause, 2e-3)
                        continue
                    self._drop_connection()
                    raise self._error(exc) from None

    def _attempt(self, body, *, write: bool, create: bool):
        conn = self._connection(create=create)
        cursor = conn.cursor()
        if write:
            self._begin_write(cursor)
        else:
            cursor.execute("BEGIN")
        try:
            result = body(cursor)
            cursor.execute("COMMIT")
            return result
        except BaseException:
            try:
                cursor.execute("ROLLBACK")
            except Exception:  # noqa: BLE001 - the connection may be gone
                self._drop_connection()
            raise

    def _writer(self, write: bool, deadline: float):
        """Context in which a write transaction runs (see the SQLite ledger)."""
        return contextlib.nullcontext()

    def _busy(self, exc: Exception) -> bool:
        """Whether ``exc`` says another writer holds the ledger (retry, do not fail)."""
        return False

    # the schema
    def create(self, name: str, config: dict) -> tuple[str, Mark | None]:
        def body(cursor):
            self._serialise_schema(cursor)
            self._create_schema(cursor)
            row = self._select_budget(cursor, name, lock=True)
            if row is None:
                budget_id = uuid.uuid4().hex
                cursor.execute(
                    self._sql(
                        "INSERT INTO skprivpred_budget (name, budget_id, config, created, "
                        f"{_SUMS}) VALUES (?, ?, ?, ?, 0, 0, 0, 0, 0, 0, NULL, NULL)"
                    ),
                    (name, budget_id, json.dumps(config, sort_keys=True), time.time()),
                )
                # The budget's first journal row: a budget never has none.
                return budget_id, self._append(cursor, name, budget_id, None, "open", ZERO, None)
            stored = {"budget_id": row[0], "config": json.loads(row[1])}
            budget_id = _same_config(stored, name, config, self.url)
            self._verify(cursor, name, budget_id, row)
            return budget_id, self._newest(cursor, name)

        return self._run(body, write=True, create=True)

    def _create_schema(self, cursor) -> None:
        # DDL only on a new ledger, or once to migrate one: on PostgreSQL, CREATE INDEX
        # would lock the journal against concurrent charges.
        if not self._has_schema(cursor):
            for statement in _TABLES:
                cursor.execute(statement.format(serial=self._serial))
            cursor.execute(
                self._sql("INSERT INTO skprivpred_meta (key, value) VALUES ('schema', '1')")
            )
        cursor.execute(self._sql("SELECT value FROM skprivpred_meta WHERE key = 'schema'"))
        row = cursor.fetchone()
        version = "1" if row is None else row[0]
        if row is None:
            cursor.execute(
                self._sql("INSERT INTO skprivpred_meta (key, value) VALUES ('schema', '1')")
            )
        if version == "1":
            self._migrate_from_1(cursor)
        elif version != SCHEMA_VERSION:
            raise LedgerError(
                f"the ledger {redact(self.url)} has schema version {version!r}; this "
                f"skprivpred reads version {SCHEMA_VERSION!r} (upgrade skprivpred)."
            )

    def _migrate_from_1(self, cursor) -> None:
        """Schema 1 to 2: add the journal's new columns; give each budget its first sums row.

        Each budget's sums must equal the sums of its journal (as :meth:`consistent`
        checked in version 1); the ``migrate`` row then carries them, and one row per
        horizon carries its count, so that what version 1 spent is kept.
        """
        for column, kind in _V2_COLUMNS:
            cursor.execute(f"ALTER TABLE skprivpred_charge ADD COLUMN {column} {kind}")
        # Partial: a charge outside any horizon (most of them) updates no second index.
        cursor.execute(
            "CREATE INDEX IF NOT EXISTS skprivpred_charge_horizon "
            "ON skprivpred_charge (name, hkey, id) WHERE hkey IS NOT NULL"
        )
        self._refuse_older_clients(cursor)
        cursor.execute(f"SELECT name, budget_id, {_SUMS} FROM skprivpred_budget ORDER BY name")
        budgets = cursor.fetchall()
        for name, budget_id, *sums in budgets:
            totals = Totals(int(sums[0]), *(float(v) for v in sums[1:6]))
            guarantee = None if sums[6] is None else (float(sums[6]), float(sums[7]))
            cursor.execute(
                self._sql(
                    "SELECT COALESCE(SUM(rows), 0), COALESCE(SUM(rows * epsilon), 0), "
                    "COALESCE(SUM(rows * delta), 0) FROM skprivpred_charge WHERE name = ?"
                ),
                (name,),
            )
            rows, eps, delta = cursor.fetchone()
            if not _close_sums(int(rows), float(eps), float(delta), totals):
                raise LedgerError(
                    f"the ledger {redact(self.url)} is not migrated to schema version "
                    f"{SCHEMA_VERSION}: the sums of the budget {name!r} differ from its "
                    "journal (the ledger was edited). Nothing was changed or charged."
                )
            self._append(cursor, name, budget_id, None, "migrate", totals, guarantee, sign=False)
            cursor.execute(
                self._sql(
                    "SELECT key, answered FROM skprivpred_horizon WHERE name = ? ORDER BY key"
                ),
                (name,),
            )
            for key, answered in cursor.fetchall():
                self._append(
                    cursor,
                    name,
                    budget_id,
                    None,
                    "migrate",
                    totals,
                    guarantee,
                    horizon=(key, int(answered)),
                    sign=False,
                )
        cursor.execute(
            self._sql("UPDATE skprivpred_meta SET value = ? WHERE key = 'schema'"),
            (SCHEMA_VERSION,),
        )

    # reading and checking
    def _select_budget(self, cursor, name: str, *, lock: bool):
        suffix = self._lock_suffix if lock else ""
        cursor.execute(
            self._sql(f"SELECT budget_id, config, {_SUMS} FROM skprivpred_budget WHERE name = ?")
            + suffix,
            (name,),
        )
        return cursor.fetchone()

    def _checked_budget(self, cursor, name: str, budget_id: str, *, lock: bool, seen=None):
        """The budget's sums, per-row guarantee and newest journal row, all checked."""
        row = self._select_budget(cursor, name, lock=lock)
        if row is None:
            raise LedgerError(
                f"the ledger {redact(self.url)} holds no budget named {name!r}: it was removed, "
                "or this is another ledger, and the record of what it spent is lost. An "
                "accountant never starts again from zero, so this one refuses; a new budget "
                "(a new accountant) must account for what the lost one had spent."
            )
        if row[0] != budget_id:
            raise LedgerError(
                f"the budget {name!r} in the ledger {redact(self.url)} is not the one this "
                "accountant was created with (it was deleted and created again). An "
                "accountant never starts again from zero; create a new accountant for the new "
                "budget."
            )
        totals = Totals(int(row[2]), *(float(v) for v in row[3:8]))
        guarantee = None if row[8] is None else (float(row[8]), float(row[9]))
        head = self._head(cursor, name)
        self._check_head(name, budget_id, totals, guarantee, head)
        newest = head[0]
        if seen is not None and (seen.id != newest.id or not _same_time(newest, seen.time)):
            cursor.execute(
                self._sql("SELECT time FROM skprivpred_charge WHERE id = ? AND name = ?"),
                (seen.id, name),
            )
            found = cursor.fetchone()
            if found is None or not math.isclose(float(found[0]), seen.time, abs_tol=1e-6):
                raise _rolled_back(self.url, name, seen)
        return totals, guarantee, newest

    def _head(self, cursor, name: str) -> list[_Row]:
        """The budget's newest journal row (and, with a key, the one before it)."""
        if self.mac_key is None:
            cursor.execute(
                self._sql(
                    f"SELECT {_HEAD_SELECT} FROM skprivpred_charge WHERE name = ? "
                    "ORDER BY id DESC LIMIT 1"
                ),
                (name,),
            )
            found = cursor.fetchone()
            return [] if found is None else [_head_row(found)]
        cursor.execute(
            self._sql(
                f"SELECT {_ROW_SELECT} FROM skprivpred_charge WHERE name = ? "
                "ORDER BY id DESC LIMIT 2"
            ),
            (name,),
        )
        return [_row(values) for values in cursor.fetchall()]

    def _edited(self, name: str, what: str) -> LedgerError:
        return LedgerError(
            f"the budget {name!r} in the ledger {redact(self.url)} fails its check: {what}. "
            "The ledger was edited (or written by a client that does not keep its journal); "
            "its spending cannot be trusted, so nothing was charged. Find out who changed "
            "it; a budget is never reset: a new budget must account for what this one spent."
        )

    def _check_head(self, name, budget_id, totals, guarantee, head: list[_Row]) -> None:
        """O(1): the budget row equals the sums its newest journal row carries (and its MAC)."""
        if not head:
            raise self._edited(name, "it has no journal row (every budget has one)")
        newest = head[0]
        if newest.totals is None:
            raise self._edited(name, "its newest journal row carries no sums")
        if newest.totals != totals or newest.guarantee != guarantee:
            raise self._edited(
                name, "its stored sums differ from those its newest journal row carries"
            )
        self._check_mac(name, budget_id, newest, head[1] if len(head) > 1 else None)

    def _check_mac(self, name: str, budget_id: str, row: _Row, previous: _Row | None) -> None:
        if self.mac_key is None:
            if row.mac is not None:
                raise LedgerError(
                    f"the budget {name!r} in the ledger {redact(self.url)} is signed with a "
                    "ledger key: open it with its key (ledger_key_file=..., or "
                    "--ledger-key-file for the service). Nothing was charged."
                )
            return
        if row.mac is None:
            raise self._edited(
                name,
                "a journal row carries no MAC, but this accountant has a ledger key (a budget "
                "created without a key, or migrated from schema version 1, takes none)",
            )
        expected = _mac(
            self.mac_key, budget_id, None if previous is None else previous.mac, row.fields
        )
        if not hmac.compare_digest(expected, row.mac):
            raise self._edited(name, f"the MAC of journal row #{row.id} does not match its key")

    def _check_horizon_head(self, cursor, name: str, key: str, stored) -> None:
        """O(1): a horizon's count equals the count its newest journal row carries."""
        cursor.execute(
            self._sql(
                "SELECT answered FROM skprivpred_charge WHERE name = ? AND hkey = ? "
                "ORDER BY id DESC LIMIT 1"
            ),
            (name, key),
        )
        found = cursor.fetchone()
        recorded = None if found is None else int(found[0])
        if recorded != (None if stored is None else stored[0]):
            raise self._edited(name, "a horizon's count differs from the count its journal holds")

    def _newest(self, cursor, name: str) -> Mark | None:
        """The budget's newest journal row."""
        cursor.execute(
            self._sql(
                "SELECT id, time FROM skprivpred_charge WHERE name = ? ORDER BY id DESC LIMIT 1"
            ),
            (name,),
        )
        row = cursor.fetchone()
        return None if row is None else Mark(int(row[0]), float(row[1]))

    def _horizon(self, cursor, name: str, key: str):
        cursor.execute(
            self._sql(
                "SELECT answered, n_queries FROM skprivpred_horizon WHERE name = ? AND key = ?"
            ),
            (name, key),
        )
        row = cursor.fetchone()
        return None if row is None else [int(row[0]), int(row[1])]

    def state(self, name, budget_id, horizon_key=None, seen=None) -> LedgerState:
        def body(cursor):
            totals, guarantee, newest = self._checked_budget(
                cursor, name, budget_id, lock=False, seen=seen
            )
            stored = None if horizon_key is None else self._horizon(cursor, name, horizon_key)
            if horizon_key is not None:
                self._check_horizon_head(cursor, name, horizon_key, stored)
            answered = 0 if stored is None else stored[0]
            return LedgerState(totals, guarantee, answered, Mark(newest.id, newest.get("time")))

        return self._run(body, write=False)

    # writing
    def transact(self, steps: Sequence[Step]) -> list[Mark | None]:
        _distinct(steps)

        def body(cursor):
            # Lock the budgets in one order (by name), so that two transactions charging the
            # same budgets never wait for each other in a cycle.
            read = {}
            for step in sorted(steps, key=lambda step: step.name):
                read[step.name] = self._checked_budget(
                    cursor, step.name, step.budget_id, lock=True, seen=step.seen
                )
            decided = []
            for step in steps:  # every decision first: a refusal writes nothing
                before, guarantee, newest = read[step.name]
                stored = None
                if step.horizon is not None:
                    stored = self._horizon(cursor, step.name, step.horizon[0])
                    self._check_horizon_head(cursor, step.name, step.horizon[0], stored)
                entry = _horizon_entry(stored, step.horizon)
                state = LedgerState(
                    before, guarantee, entry[0], Mark(newest.id, newest.get("time"))
                )
                decided.append((stored, entry, newest, step.decide(state)))
            marks = []
            for step, (stored, entry, newest, (totals, row)) in zip(steps, decided):
                mark = Mark(newest.id, newest.get("time"))
                horizon = None
                if step.horizon is not None:
                    horizon = (step.horizon[0], entry[0] + step.charge.rows)
                    self._advance(cursor, step, stored, entry)
                if step.record:
                    self._store_sums(cursor, step.name, totals, row)
                    mark = self._append(
                        cursor,
                        step.name,
                        step.budget_id,
                        newest,
                        "charge",
                        totals,
                        row,
                        charge=step.charge,
                        horizon=horizon,
                    )
                elif horizon is not None:  # a horizon's steps: the sums stay as they are
                    mark = self._append(
                        cursor,
                        step.name,
                        step.budget_id,
                        newest,
                        "horizon",
                        read[step.name][0],
                        read[step.name][1],
                        charge=step.charge._replace(epsilon=0.0, delta=0.0, rho=None),
                        horizon=horizon,
                    )
                marks.append(mark)
            return marks

        return self._run(body, write=True)

    def _advance(self, cursor, step: Step, stored, entry) -> None:
        """Count the step's rows against its horizon."""
        assert step.horizon is not None
        if stored is None:
            cursor.execute(
                self._sql(
                    "INSERT INTO skprivpred_horizon (name, key, answered, n_queries) "
                    "VALUES (?, ?, ?, ?)"
                ),
                (step.name, step.horizon[0], step.charge.rows, step.horizon[1]),
            )
        else:
            cursor.execute(
                self._sql("UPDATE skprivpred_horizon SET answered = ? WHERE name = ? AND key = ?"),
                (entry[0] + step.charge.rows, step.name, step.horizon[0]),
            )

    def _store_sums(self, cursor, name: str, totals: Totals, row) -> None:
        cursor.execute(
            self._sql(
                "UPDATE skprivpred_budget SET rows = ?, eps_sum = ?, delta_sum = ?, "
                "rho_sum = ?, ledger_eps = ?, ledger_delta = ?, row_epsilon = ?, "
                "row_delta = ? WHERE name = ?"
            ),
            (*totals, *(row if row is not None else (None, None)), name),
        )

    def _append(
        self,
        cursor,
        name: str,
        budget_id: str,
        previous: _Row | None,
        kind: str,
        totals: Totals,
        guarantee,
        *,
        charge: Charge | None = None,
        horizon: tuple[str, int] | None = None,
        sign: bool = True,
    ) -> Mark:
        """Add a journal row carrying the sums (and horizon count) after it; return its mark."""
        when = time.time()
        if charge is None:
            charge = Charge(0, 0.0, 0.0, None, None)
        fields = (
            when,
            name,
            charge.source,
            charge.rows,
            charge.epsilon,
            charge.delta,
            charge.rho,
            kind,
            None if horizon is None else horizon[0],
            None if horizon is None else horizon[1],
            *totals,
            *(guarantee if guarantee is not None else (None, None)),
        )
        mac = None
        if sign and self.mac_key is not None:
            fields = _typed(fields)  # the MAC covers the values as they are read back
            mac = _mac(self.mac_key, budget_id, None if previous is None else previous.mac, fields)
        cursor.execute(self._sql(_ROW_INSERT + self._returning_id), (*fields, mac))
        return Mark(self._inserted_id(cursor), when)

    _returning_id = ""

    def _inserted_id(self, cursor) -> int:
        raise NotImplementedError

    def journal(self, name: str, budget_id: str, seen: Mark | None = None) -> list[dict]:
        def body(cursor):
            self._checked_budget(cursor, name, budget_id, lock=False, seen=seen)
            cursor.execute(
                self._sql(
                    "SELECT time, name, estimator, rows, epsilon, delta, rho "
                    "FROM skprivpred_charge WHERE name = ? AND (kind IS NULL OR kind = 'charge') "
                    "ORDER BY id"
                ),
                (name,),
            )
            return cursor.fetchall()

        rows = self._run(body, write=False)
        return [
            _journal_row(r[0], r[1], Charge(int(r[3]), float(r[4]), float(r[5]), r[6], r[2]))
            for r in rows
        ]

    # the full check
    def verify(self, name: str, budget_id: str) -> None:
        """Check the budget's whole journal; raise :class:`LedgerError` if it was edited."""

        def body(cursor):
            row = self._select_budget(cursor, name, lock=False)
            if row is None or row[0] != budget_id:
                self._checked_budget(cursor, name, budget_id, lock=False)  # raises, naming why
            self._verify(cursor, name, budget_id, row)

        self._run(body, write=False)

    def consistent(self, name: str, budget_id: str) -> bool:
        """Whether the budget and its whole journal pass :meth:`verify`."""
        try:
            self.verify(name, budget_id)
        except LedgerError:
            return False
        return True

    def _verify(self, cursor, name: str, budget_id: str, budget_row) -> None:
        """Walk the budget's journal: each row's sums follow from the previous row's."""
        totals = Totals(int(budget_row[2]), *(float(v) for v in budget_row[3:8]))
        guarantee = None if budget_row[8] is None else (float(budget_row[8]), float(budget_row[9]))
        cursor.execute(
            self._sql(f"SELECT {_ROW_SELECT} FROM skprivpred_charge WHERE name = ? ORDER BY id"),
            (name,),
        )
        rows = [_row(values) for values in cursor.fetchall()]
        sums = [0, 0.0, 0.0]  # rows, epsilon and delta of the charges so far
        before: _Row | None = None  # the previous row that carries sums
        previous: _Row | None = None
        counts: dict[str, int] = {}
        for row in rows:
            kind = row.get("kind") or "charge"
            if kind == "charge":
                sums[0] += row.get("rows")
                sums[1] += row.get("rows") * row.get("epsilon")
                sums[2] += row.get("rows") * row.get("delta")
            after = row.totals
            if after is None:  # a row of schema version 1, before the migration
                if before is not None or kind != "charge":
                    raise self._edited(name, f"journal row #{row.id} carries no sums")
                previous = row
                continue
            problem = _step_problem(kind, row, before, after, sums)
            if problem is not None:
                raise self._edited(name, f"journal row #{row.id} {problem}")
            key = row.get("hkey")
            if key is not None:
                answered = row.get("answered")
                increment = row.get("rows") if kind != "migrate" else answered
                if answered != counts.get(key, 0) + increment:
                    raise self._edited(
                        name, f"journal row #{row.id} counts a horizon it does not follow"
                    )
                counts[key] = answered
            if self.mac_key is not None or row.mac is not None:
                self._check_mac(name, budget_id, row, previous if before is not None else None)
            before = previous = row
        self._check_head(name, budget_id, totals, guarantee, rows[::-1][:2])
        cursor.execute(
            self._sql("SELECT key, answered FROM skprivpred_horizon WHERE name = ?"), (name,)
        )
        stored = {key: int(answered) for key, answered in cursor.fetchall()}
        if stored != counts:
            raise self._edited(name, "its horizons' counts differ from those its journal holds")


def _close_sums(rows: int, eps: float, delta: float, totals: Totals) -> bool:
    return (
        rows == totals.rows
        and math.isclose(eps, totals.epsilon, rel_tol=1e-9, abs_tol=1e-12)
        and math.isclose(delta, totals.delta, rel_tol=1e-9, abs_tol=1e-15)
    )


def _same_time(row: _Row, when: float) -> bool:
    return math.isclose(row.get("time"), when, abs_tol=1e-6)


def _step_problem(kind: str, row: _Row, before: _Row | None, after: Totals, sums) -> str | None:
    """Why a journal row's sums do not follow from the previous row's, or None."""
    if not _close_sums(sums[0], sums[1], sums[2], after):
        return "carries sums that differ from the sums of the journal up to it"
    if kind in ("open", "migrate") and before is None:
        if kind == "open" and after != ZERO:
            return "opens the budget with sums that are not zero"
        return None
    if before is None:
        return "is the first of its budget but does not open it"
    last = before.totals
    assert last is not None
    if kind in ("horizon", "migrate", "open"):
        if kind == "open" or after != last or row.guarantee != before.guarantee:
            return "changes the sums without charging anything"
        return None
    if kind != "charge":
        return f"is of an unknown kind {kind!r}"
    n, eps, delta, rho = row.get("rows"), row.get("epsilon"), row.get("delta"), row.get("rho")
    expected = (last.rows + n, last.epsilon + n * eps, last.delta + n * delta)
    if (after.rows, after.epsilon, after.delta) != expected:
        return "carries sums that do not add its charge to the previous row's"
    zcdp_pure = (after.rho, after.ledger_epsilon, after.ledger_delta) == (
        last.rho + n * (rho if rho is not None else 0.0),
        last.ledger_epsilon,
        last.ledger_delta,
    )
    approximate = (after.ledger_epsilon, after.ledger_delta) == (
        last.ledger_epsilon + n * eps,
        last.ledger_delta + n * delta,
    ) and after.rho == last.rho
    zcdp_stated = (
        rho is None
        and (after.ledger_epsilon, after.ledger_delta) == (last.ledger_epsilon, last.ledger_delta)
        and after.rho >= last.rho
    )
    if not (zcdp_pure if delta == 0 else approximate or zcdp_stated):
        return "carries zCDP sums that do not follow from its charge"
    if before.guarantee is not None and row.guarantee != before.guarantee:
        return "changes the per-row guarantee of advanced composition"
    return None


def _identity(info: os.stat_result) -> tuple[int, ...]:
    return (info.st_dev, info.st_ino, info.st_mode, info.st_uid, info.st_gid)


class _SQLiteLedger(_SQLLedger):
    """A SQLite file in WAL mode with ``synchronous=FULL``; writers take ``BEGIN IMMEDIATE``."""

    def __init__(self, path: str, timeout: float, key: bytes | None = None) -> None:
        super().__init__("sqlite:///" + path, timeout, key)
        self.path = path
        self._writers: tuple[int, threading.Lock] | None = None

    @contextlib.contextmanager
    def _writer(self, write: bool, deadline: float):
        # One writer per process at a time: threads queue on a lock here instead of
        # polling the file lock. Other processes are waited for in _run's retry loop.
        if not write:
            yield
            return
        if self._writers is None or self._writers[0] != os.getpid():
            self._writers = (os.getpid(), threading.Lock())  # a fork gets its own lock
        lock = self._writers[1]
        if not lock.acquire(timeout=max(deadline - time.monotonic(), 0.0)):
            raise self._error(sqlite3.OperationalError("database is locked"))
        try:
            yield
        finally:
            lock.release()

    def _busy(self, exc: Exception) -> bool:
        text = str(exc)
        return isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text)

    def _has_schema(self, cursor) -> bool:
        cursor.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'skprivpred_meta'"
        )
        return cursor.fetchone() is not None

    def _refuse_older_clients(self, cursor) -> None:
        cursor.execute(
            "CREATE TRIGGER IF NOT EXISTS skprivpred_schema_2 BEFORE INSERT ON skprivpred_charge "
            f"WHEN NEW.t_rows IS NULL BEGIN SELECT RAISE(ABORT, '{_OLDER_CLIENT}'); END"
        )

    def _file_identity(self) -> tuple[int, ...] | None:
        """Which file the path names, its owner and its mode (a link is not followed)."""
        try:
            info = os.lstat(self.path)
        except OSError:
            return None
        return _identity(info)

    def _replaced(self, local) -> bool:
        # An open connection keeps reading the file it opened, even once the path names
        # another file (a deleted ledger, or one replaced by a copy): reopen, so that the
        # ledger at the path is the one that is checked and charged. A new owner or mode
        # reopens it too, and is checked then.
        return self._file_identity() != getattr(local, "file", None)

    def _opened(self, local) -> None:
        local.file = self._file_identity()

    def _connect(self, *, create: bool):
        self._refuse_if_foreign()
        if create:
            self._create_file()
        opened = self._open_checked()
        conn = sqlite3.connect(
            f"file:{quote(self.path)}?mode=rw",
            uri=True,
            # No busy handler: SQLite's sleeps from 1 ms up to 100 ms starve writers;
            # _run retries busy transactions with short pauses until the timeout.
            timeout=0.0,
            isolation_level=None,  # transactions are begun and ended explicitly
        )
        try:
            if create:
                conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")
        except sqlite3.Error:
            conn.close()
            raise  # _run retries while busy, then raises LedgerError
        finally:
            if opened is not None:
                os.close(opened[0])
        if opened is not None and self._file_identity() != opened[1]:
            conn.close()
            raise LedgerError(
                f"the ledger file {self.path} was replaced while it was being opened; "
                "another user may control its directory, so it is not used."
            )
        return conn

    def _refuse_if_foreign(self, info: os.stat_result | None = None) -> None:
        """Raise if another local user controls the ledger file or a directory above it."""
        problem = foreign_control(self.path, "the ledger file", info=info, strict_directory=True)
        if problem is not None:
            raise LedgerError(
                f"{problem}. A ledger another user controls could be reset or replaced "
                "(spending the budget again), so it is not used."
            )

    def _open_checked(self) -> tuple[int, tuple[int, ...]] | None:
        """Open the ledger file without following a link and check the file that was opened.

        ``sqlite3`` cannot be told not to follow a symbolic link: the file it
        opens next is compared with this one (:meth:`_connect`). Returns the
        descriptor and the file's identity, or None if there is no file (SQLite
        then reports it missing).
        """
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        try:
            descriptor = os.open(self.path, flags | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:
            return None
        except OSError:
            self._refuse_if_foreign()  # a symbolic link (ELOOP) is named as one
            return None  # no permission: SQLite reports it
        try:
            info = os.fstat(descriptor)
            self._refuse_if_foreign(info)
        except BaseException:
            os.close(descriptor)
            raise
        return descriptor, _identity(info)

    def _create_file(self) -> None:
        """Create the file if it does not exist: by this user only, mode 0600.

        ``O_EXCL`` makes sure the file is new (never one another user prepared,
        nor a symbolic link); SQLite then gives its ``-wal`` and ``-shm`` files
        the same mode.
        """
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
        flags |= getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        try:
            os.close(os.open(self.path, flags, 0o600))
        except FileExistsError:
            return  # an existing ledger (perhaps created by another process just now)
        except FileNotFoundError:
            raise LedgerError(self._missing_directory()) from None
        except OSError as exc:
            raise LedgerError(
                f"the ledger file {self.path} cannot be created: {exc.strerror}."
            ) from None

    def _missing_directory(self) -> str:
        directory = os.path.dirname(self.path) or "."
        return (
            f"the directory {directory} of the ledger file {self.path} does not exist; "
            f"create it first (readable by the service's user only, for example "
            f"`mkdir -p -m 700 {directory}`)."
        )

    def _begin_write(self, cursor) -> None:
        cursor.execute("BEGIN IMMEDIATE")

    def _inserted_id(self, cursor) -> int:
        return int(cursor.lastrowid)

    def _driver_errors(self):
        return (sqlite3.Error,)

    def _error(self, exc: Exception) -> LedgerError:
        text = str(exc)
        if "locked" in text or "busy" in text:
            why = (
                f"stayed locked by another writer for the whole timeout of {self.timeout:g} s; "
                "nothing was charged"
            )
        elif "unable to open" in text:
            if not os.path.isdir(os.path.dirname(self.path) or "."):
                return LedgerError(self._missing_directory())
            if not os.path.exists(self.path):
                why = (
                    "is missing: the record of what this budget spent is lost. An accountant "
                    "never starts again from zero, so this one refuses; a new budget (a new "
                    "accountant) must account for what the lost one had spent"
                )
            else:
                why = "cannot be opened (check its permissions)"
        elif "readonly" in text or "read-only" in text:
            why = "is read-only; a charge must be written before any answer is released"
        elif "not a database" in text or "malformed" in text:
            why = "is not a readable SQLite database (corrupted?)"
        elif "no such table" in text:
            why = "holds no skprivpred budget (it is another database)"
        else:
            why = f"failed: {text}"
        return LedgerError(f"the ledger file {self.path} {why}.")


class _PostgresLedger(_SQLLedger):
    """A PostgreSQL server; writers lock the budget row with ``SELECT ... FOR UPDATE``."""

    _placeholder = "%s"
    _serial = "BIGSERIAL PRIMARY KEY"
    _lock_suffix = " FOR UPDATE"

    def __init__(self, url: str, timeout: float, key: bytes | None = None) -> None:
        super().__init__(url, timeout, key)
        try:
            import psycopg
        except ImportError:
            raise ImportError(
                'a postgresql:// ledger needs psycopg 3: pip install "skprivpred[postgres]" '
                '(or, from a checkout, pip install -e ".[postgres]").'
            ) from None
        self._psycopg = psycopg

    def _connect(self, *, create: bool):
        conn = self._psycopg.connect(
            self.url,
            autocommit=True,  # transactions are begun and ended explicitly
            connect_timeout=max(1, math.ceil(self.timeout)),
        )
        # Wait at most `timeout` for a row lock held by another writer.
        conn.execute(f"SET lock_timeout = {int(self.timeout * 1000)}")
        return conn

    def _begin_write(self, cursor) -> None:
        cursor.execute("BEGIN")  # the budget row is then locked by SELECT ... FOR UPDATE

    _returning_id = " RETURNING id"

    def _inserted_id(self, cursor) -> int:
        return int(cursor.fetchone()[0])

    def _serialise_schema(self, cursor) -> None:
        # CREATE TABLE IF NOT EXISTS races between sessions in PostgreSQL.
        cursor.execute("SELECT pg_advisory_xact_lock(7253001)")

    def _has_schema(self, cursor) -> bool:
        cursor.execute("SELECT to_regclass('skprivpred_meta') IS NOT NULL")
        return bool(cursor.fetchone()[0])

    def _refuse_older_clients(self, cursor) -> None:
        cursor.execute(
            "CREATE OR REPLACE FUNCTION skprivpred_schema_2() RETURNS trigger LANGUAGE plpgsql "
            "AS $$ BEGIN IF NEW.t_rows IS NULL THEN RAISE EXCEPTION "
            f"'{_OLDER_CLIENT}'; END IF; RETURN NEW; END $$"
        )
        cursor.execute(
            "CREATE TRIGGER skprivpred_schema_2 BEFORE INSERT ON skprivpred_charge "
            "FOR EACH ROW EXECUTE FUNCTION skprivpred_schema_2()"
        )

    def _driver_errors(self):
        return (self._psycopg.Error,)

    def _error(self, exc: Exception) -> LedgerError:
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        text = redact(text, secrets_of=self.url)  # a driver may quote a piece of the address
        return LedgerError(f"the PostgreSQL ledger {redact(self.url)} failed: {text}.")


#: Connection parameters that hold a secret, or say where one is kept (libpq's names).
_SECRET_PARAMETERS = frozenset({"password", "sslpassword", "passfile"})
#: ``key = value`` in a libpq connection string: a single-quoted value (backslash escapes
#: ``\'`` and ``\\``, the closing quote perhaps missing), else a run of non-blanks.
_CONNINFO_PARAMETER = re.compile(r"([A-Za-z_]+)(\s*=\s*)('(?:[^'\\]|\\.)*'?|\S*)")
_HIDDEN = "***"
#: A libpq ``key=value`` connection string (a file name would not start a word with these).
_LIBPQ_CONNINFO = re.compile(
    r"(?:^|\s)(?:host|hostaddr|port|dbname|user|password|passfile|sslpassword|sslmode|service)"
    r"\s*=",
    re.I,
)
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


def redact(address: str, *, secrets_of: str | None = None) -> str:
    """``address`` with every password it holds replaced by ``***``.

    Hides the password of the user information (``scheme://user:PW@host``,
    ``scheme://:PW@host`` with no user name), and the values of the
    ``password``, ``sslpassword`` and ``passfile`` parameters, in a URL's query
    (``?password=PW``, whatever the case and whatever the value holds, quotes
    and blanks included) and in a libpq connection string (``password='a b'``).
    Everything else is kept as it was written, so a mistyped address can be
    recognised.

    Parameters
    ----------
    address : str
        A ledger's address, or any text that may hold one (an error message).
    secrets_of : str, default=None
        An address whose passwords must not appear in ``address`` at all, even
        apart from their parameter name (a driver's message may quote a piece of
        the address it could not parse).

    Returns
    -------
    str
    """
    if address.startswith("sqlite:"):
        hidden = address  # a file's path holds no credentials
    elif _URL.match(address):
        hidden = _redact_url(address)
    else:
        hidden = _CONNINFO_PARAMETER.sub(_hide_parameter, address)
    if secrets_of is not None:
        for secret in sorted(_secrets(secrets_of), key=len, reverse=True):
            hidden = hidden.replace(secret, _HIDDEN)
    return hidden


def _hide_parameter(match: re.Match) -> str:
    key, equals, value = match.groups()
    secret = key.lower() in _SECRET_PARAMETERS and value not in ("", _HIDDEN)
    return key + equals + (_HIDDEN if secret else value)


def _split_url(address: str) -> tuple[str, str, str, str]:
    """``(scheme://, user information, rest of the authority and path, query)``.

    The user information ends at the last ``@`` before the query (a password
    may hold an unescaped ``@`` or ``/``); the query is everything after the
    first ``?`` (a ``#`` may be part of a password, so no fragment is split off).
    """
    scheme, _, rest = address.partition("://")
    location, question, query = rest.partition("?")
    user_info, at, host = location.rpartition("@")
    return scheme + "://", user_info + at, host if at else location, question + query


def _redact_url(address: str) -> str:
    start, user_info, location, query = _split_url(address)
    if ":" in user_info:
        user_info = user_info.split(":", 1)[0] + ":" + _HIDDEN + "@"
    if query:
        pieces = query[1:].split("&")
        for i, piece in enumerate(pieces):
            key, equals, _ = piece.partition("=")
            if equals and unquote_plus(key).strip().lower() in _SECRET_PARAMETERS:
                pieces[i] = key + "=" + _HIDDEN
        query = "?" + "&".join(pieces)
    return start + user_info + location + query


#: The connection parameters that hold a password (``passfile`` only says where one is).
_PASSWORD_PARAMETERS = frozenset({"password", "sslpassword"})


def without_password(address: str) -> str:
    """``address`` with every password removed (not hidden): what may be written to a file.

    Removes the password of the user information (``user:PW@`` becomes
    ``user@``) and the ``password`` and ``sslpassword`` parameters of a URL's
    query; a file's path is returned as it is. Whoever opens the address then
    supplies the password the way libpq finds one: the file named by
    ``PGPASSFILE`` (or ``passfile=`` in the address), else ``~/.pgpass``, else
    the ``PGPASSWORD`` environment variable.

    Parameters
    ----------
    address : str
        A ledger's canonical address (``sqlite:///...`` or ``postgresql://...``).

    Returns
    -------
    str
    """
    if not _URL.match(address) or address.startswith("sqlite:"):
        return address
    start, user_info, location, query = _split_url(address)
    if user_info:
        user_info = user_info[:-1].split(":", 1)[0]
        user_info = user_info + "@" if user_info else ""
    if query:
        kept = [
            piece
            for piece in query[1:].split("&")
            if unquote_plus(piece.partition("=")[0]).strip().lower() not in _PASSWORD_PARAMETERS
        ]
        query = "?" + "&".join(kept) if kept else ""
    return start + user_info + location + query


def _secrets(address: str) -> set[str]:
    """The passwords (and password files) that ``address`` holds, raw and decoded."""
    found = []
    if _URL.match(address):
        _, user_info, _, query = _split_url(address)
        if ":" in user_info:
            found.append(user_info[:-1].split(":", 1)[1])
        for piece in query[1:].split("&"):
            key, equals, value = piece.partition("=")
            if equals and unquote_plus(key).strip().lower() in _SECRET_PARAMETERS:
                found.append(value)
    else:
        for key, _, value in _CONNINFO_PARAMETER.findall(address):
            if key.lower() in _SECRET_PARAMETERS:
                found.append(value)
    secrets = set(found) | {unquote(value) for value in found}
    secrets |= {value.strip("'") for value in secrets}
    return {value for value in secrets if value}


# -- opening ------------------------------------------------------------------------------------
_OPEN: dict[str, _SQLLedger] = {}
_OPEN_LOCK = threading.Lock()
_TEMPORARY: set[str] = set()


def _after_fork_in_child() -> None:
    """A lock held by another thread when the process forked would stay held in the child."""
    global _OPEN_LOCK
    _OPEN_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def default_ledger_path() -> str:
    """A new file name in a private directory of this user's (created if needed).

    The directory (:func:`~skprivpred.utils._private_dirs.own_temporary_directory`)
    is ``$XDG_RUNTIME_DIR/skprivpred`` when that is this user's runtime
    directory, else ``$TMPDIR/skprivpred-<uid>``, provided it is a real
    directory (not a symbolic link) owned by this user with mode 0700. A name
    that another local user took first (their directory, a link, a directory
    open to others) is left alone and never used: the ledger then goes to a new
    directory with a random name that ``mkdtemp`` creates, which no one else can
    take. On other systems the directory is inside the user's own temporary
    directory (on Windows ``%LOCALAPPDATA%\\Temp``, which the user's profile
    permissions protect).

    Raises
    ------
    LedgerError
        If the temporary directory itself lies in a directory that another
        user controls, or no directory can be created.
    """
    try:
        directory = own_temporary_directory()
    except ValueError as exc:
        raise LedgerError(
            f"the default ledger's directory {exc}: another user may have prepared it to "
            "read, copy or replace the budget's file, so it is not used. Pass "
            "ledger='path/to/budget.db' in a directory of your own."
        ) from None
    except OSError as exc:
        raise LedgerError(
            f"no directory for the default ledger can be created in "
            f"{user_temporary_directory().parent}: {exc.strerror}. Pass "
            "ledger='path/to/budget.db' to keep the budget elsewhere."
        ) from None
    return str(directory / f"budget-{uuid.uuid4().hex}.db")


def _remove_temporary(pid: int) -> None:
    """At exit of the process that created them, delete the default ledgers' files."""
    if os.getpid() != pid:
        return
    for path in list(_TEMPORARY):
        for suffix in ("", "-wal", "-shm"):
            try:
                os.remove(path + suffix)
            except OSError:
                pass


atexit.register(_remove_temporary, os.getpid())


@atexit.register
def _close_connections() -> None:
    """Close this thread's connections at exit (servers otherwise log an abrupt end)."""
    for ledger in list(_OPEN.values()):
        ledger._drop_connection()


def open_ledger(
    ledger: Any, timeout: float, key_file: str | os.PathLike | None = None
) -> tuple[Ledger, bool]:
    """The ledger at ``ledger``, and whether it is a new default (temporary) ledger.

    Parameters
    ----------
    ledger : None, str, os.PathLike or Ledger
        ``None``: a new SQLite file in a per-user temporary directory, deleted
        when the process that created it exits. A path or ``"sqlite:///path"``:
        that SQLite file. ``"postgresql://..."``: a PostgreSQL server.
        ``":memory:"``: this process's memory. A :class:`Ledger`: that very
        ledger.
    timeout : float
        Seconds to wait for a lock (and for a server connection).
    key_file : str or os.PathLike, default=None
        A file holding the key of the journal's MAC (file and server ledgers).

    Returns
    -------
    ledger : Ledger
    temporary : bool
    """
    if isinstance(ledger, str) and ledger == ":memory:":
        if key_file is not None:
            raise ValueError(
                "ledger_key_file signs a file or server ledger's journal; a ':memory:' "
                "ledger has none to sign: pass ledger_key_file=None."
            )
        return _MemoryLedger(), False
    if isinstance(ledger, Ledger):
        return ledger, False
    temporary = ledger is None
    url = "sqlite:///" + default_ledger_path() if temporary else open_ledger_url(ledger)
    return reopen_ledger(url, timeout, key_file), temporary


def open_ledger_url(ledger: Any) -> str:
    """The canonical address of a file or server ledger (absolute paths)."""
    if isinstance(ledger, str) and _LIBPQ_CONNINFO.search(ledger) and "://" not in ledger:
        raise ValueError(
            f"ledger {redact(ledger)!r} looks like a libpq connection string, which would "
            "be taken for a file name; pass a server's address as 'postgresql://...' "
            "(https://www.postgresql.org/docs/current/libpq-connect.html#LIBPQ-CONNSTRING-URIS)."
        )
    if isinstance(ledger, os.PathLike) or (
        isinstance(ledger, str) and "://" not in ledger and ledger
    ):
        return "sqlite:///" + os.path.abspath(os.fspath(ledger))
    if isinstance(ledger, str) and ledger.startswith("sqlite:///") and ledger[10:]:
        return "sqlite:///" + os.path.abspath(ledger[10:])
    if isinstance(ledger, str) and ledger.split("://")[0] in ("postgresql", "postgres"):
        return ledger
    raise ValueError(
        f"ledger must be None, ':memory:', a file path, 'sqlite:///path' or "
        f"'postgresql://...', got {redact(ledger) if isinstance(ledger, str) else ledger!r}."
    )


def sqlite_path(url: str) -> str | None:
    """The file of a ``sqlite:///`` address, or None for any other ledger."""
    return url[len("sqlite:///") :] if url.startswith("sqlite:///") else None


def reopen_ledger(url: str, timeout: float, key_file: str | os.PathLike | None = None) -> Ledger:
    """The persistent ledger at ``url`` (one object per address, key and process).

    With ``key_file``, the journal rows it writes carry a MAC with the key in
    that file, and every row it reads must carry a valid one
    (:func:`_read_key`: a file of this user's, mode 0600).
    """
    secret = None if key_file is None else _read_key(key_file)
    fingerprint = "" if secret is None else hashlib.sha256(secret).hexdigest()[:16]
    with _OPEN_LOCK:
        key = f"{url}#{timeout!r}#{fingerprint}"
        ledger = _OPEN.get(key)
        if ledger is None:
            path = sqlite_path(url)
            if path is not None:
                ledger = _SQLiteLedger(path, timeout, secret)
            else:
                ledger = _PostgresLedger(url, timeout, secret)
            _OPEN[key] = ledger
        return ledger


def mark_temporary(ledger: Ledger) -> None:
    """Delete this default ledger's file when the creating process exits."""
    if isinstance(ledger, _SQLiteLedger):
        _TEMPORARY.add(ledger.path)
