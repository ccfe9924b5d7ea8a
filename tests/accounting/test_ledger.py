"""The durable privacy ledger: real SQLite files and a real PostgreSQL server.

What is checked, for SQLite and PostgreSQL alike (the server is started by the
``postgres_url`` fixture of ``conftest.py``):

* Several processes share one budget: 4 processes x 300 one-row charges against a
  cap of 500 rows answer exactly 500, never more, and the spending equals the rows.
* Crash safety: a child charging in a loop is killed with SIGKILL at random
  moments, 20 times; after each kill the ledger opens, its stored sums equal its
  journal, and it holds at least every charge the child had reported.
* Restart: a new process attaching to the same ledger sees the spending and
  refuses past the cap.
* The journal (``history``) keeps every charge; the three ledger kinds agree on the
  arithmetic.
* Faults, each a clear :class:`LedgerError` (or ``ValueError``) with nothing charged:
  a locked ledger after the timeout, a read-only file, a corrupted file, a missing
  file behind a pickled accountant, a server that is down, a budget removed from
  under a copy, a budget opened with other terms, a pickled ``":memory:"`` ledger.
"""

from __future__ import annotations

import json
import math
import os
import pickle
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from pathlib import Path

import numpy as np
import pytest
from _charging import charge_and_report

from skprivpred import (
    BudgetExhaustedError,
    HorizonExhaustedError,
    LedgerError,
    PrivacyAccountant,
    SubsampleAggregateClassifier,
)
from skprivpred.accounting._ledger import Mark, Totals
from skprivpred.utils._testing import free_port, temporary_postgres

# A new interpreter that attaches to the budget and charges (the restart test): the loop is
# the forked chargers' (_charging.py).
WORKER = textwrap.dedent(
    f"""
    import sys
    sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})
    from _charging import charge_and_report

    url, name, total, eps, calls = sys.argv[1:]
    charge_and_report(sys.stdout, url, name, float(total), float(eps), int(calls))
    """
)


def start_worker(url, name, total, eps, calls):
    return subprocess.Popen(
        [sys.executable, "-c", WORKER, url, name, repr(total), repr(eps), str(calls)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture(params=["sqlite", "postgresql"])
def ledger_url(request, tmp_path):
    """A ledger address of each persistent kind (a new file, or the test server)."""
    if request.param == "sqlite":
        return str(tmp_path / "budget.db")
    return request.getfixturevalue("postgres_url")


def new_name() -> str:
    return f"test-{uuid.uuid4().hex[:12]}"


# -- the arithmetic is the same on every ledger ------------------------------------------------
def test_every_ledger_kind_gives_the_same_totals(tmp_path, postgres_url):
    charges = [(3, 0.1, 0.0, None), (2, 0.05, 1e-7, None), (5, 0.2, 0.0, 0.005)]
    states = []
    for ledger in (":memory:", str(tmp_path / "b.db"), postgres_url):
        acc = PrivacyAccountant(
            epsilon=10.0, delta=1e-5, composition="zcdp", ledger=ledger, name=new_name()
        )
        for n_rows, eps, delta, rho in charges:
            acc.charge(n_rows, eps, delta, rho=rho, source="test")
        states.append((acc.queries_answered, acc.spent(), acc.remaining_queries(0.1)))
        history = acc.history()
        assert list(history["rows"]) == [3, 2, 5]
        assert list(history["estimator"]) == ["test"] * 3
        assert history["rho"].iloc[0] == pytest.approx(0.1**2 / 2)  # the generic pure rho
        assert history["rho"].iloc[2] == pytest.approx(0.005)
        assert history["rho"].isna().iloc[1]  # an (epsilon, delta) charge carries no rho
    assert states[0][0] == states[1][0] == states[2][0] == 10
    for state in states[1:]:
        assert state[1] == pytest.approx(states[0][1], rel=1e-12)
        assert state[2] == states[0][2]


def test_history_without_pandas_is_a_list_of_records(monkeypatch):
    acc = PrivacyAccountant(epsilon=1.0)
    acc.charge(2, 0.1, source="SubsampleAggregateClassifier")
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas now fails
    records = acc.history()
    assert isinstance(records, list) and len(records) == 1
    assert records[0]["rows"] == 2 and records[0]["estimator"] == "SubsampleAggregateClassifier"
    assert set(records[0]) == {"time", "name", "estimator", "rows", "epsilon", "delta", "rho"}


# -- processes ------------------------------------------------------------------------------------
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_four_processes_never_overspend(ledger_url):
    name, eps, cap = new_name(), 0.01, 500
    total = cap * eps
    PrivacyAccountant(epsilon=total, ledger=ledger_url, name=name)  # create the budget
    workers = [fork_charger(ledger_url, name, total, eps, 300) for _ in range(4)]
    results = []
    for pid, output in workers:
        code, result = finish(pid, output)
        assert code == 0
        results.append(result)
    answered = sum(r["answered"] for r in results)
    assert answered == cap  # exactly the cap: never more, and nothing lost
    assert sum(r["refused"] for r in results) == 4 * 300 - cap
    acc = PrivacyAccountant(epsilon=total, ledger=ledger_url, name=name)
    assert acc.queries_answered == cap
    assert acc.epsilon_spent == pytest.approx(total, rel=1e-12)
    assert acc._ledger.consistent(acc.name, acc._budget_id)
    with pytest.raises(BudgetExhaustedError):
        acc.charge(1, eps)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_processes_creating_one_new_ledger_at_once(ledger_url):
    name = new_name()  # nobody has created this budget (nor, for SQLite, the file) yet
    workers = [fork_charger(ledger_url, name, 1e3, 0.01, 50) for _ in range(4)]
    for pid, output in workers:
        assert finish(pid, output) == (0, {"answered": 50, "refused": 0})
    acc = PrivacyAccountant(epsilon=1e3, ledger=ledger_url, name=name)
    assert acc.queries_answered == 200


def test_restart_sees_the_spending_and_refuses_past_the_cap(ledger_url):
    name = new_name()
    first = start_worker(ledger_url, name, 1.0, 0.1, 7)
    out, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    assert json.loads(out.strip().splitlines()[-1]) == {"answered": 7, "refused": 0}
    # A new process (this one) attaches to the same ledger: the 7 charges are there.
    acc = PrivacyAccountant(epsilon=1.0, ledger=ledger_url, name=name)
    assert acc.queries_answered == 7
    assert acc.epsilon_spent == pytest.approx(0.7)
    second = start_worker(ledger_url, name, 1.0, 0.1, 5)
    out, err = second.communicate(timeout=120)
    assert json.loads(out.strip().splitlines()[-1]) == {"answered": 3, "refused": 2}
    assert acc.queries_answered == 10


def fork_charger(url: str, name: str, total: float, eps: float, calls: int = -1):
    """A forked child that charges ``eps`` per row; its output, line by line.

    The child is a process of its own (its own ledger connection, opened after the
    fork), started without a new interpreter, so that tests can run many of them
    cheaply. It runs :func:`_charging.charge_and_report`, as :data:`WORKER` does:
    ``ready``, then ``answered k`` after each committed charge, and, after
    ``calls`` calls (``-1``: until it is killed), a JSON line of the rows answered
    and refused; it exits with status 0.
    """
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        status = 1
        try:
            os.close(read_end)
            with os.fdopen(write_end, "w") as out:
                charge_and_report(out, url, name, total, eps, calls)
            status = 0
        finally:
            os._exit(status)
    os.close(write_end)
    return pid, os.fdopen(read_end)


def finish(pid: int, output) -> tuple[int, dict]:
    """Wait for a forked charger that runs to its end: its exit status and its last line."""
    with output:
        lines = output.read().splitlines()
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), json.loads(lines[-1]) if lines else {}


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_sigkill_never_loses_a_committed_charge(ledger_url):
    """20 charging processes, each killed with SIGKILL at a random moment of its loop."""
    name, eps = new_name(), 1e-3
    total = 1e6
    acc = PrivacyAccountant(epsilon=total, ledger=ledger_url, name=name)
    rng = np.random.default_rng(20)
    reported = 0
    for _ in range(20):
        pid, output = fork_charger(ledger_url, name, total, eps)
        with output:
            assert output.readline().strip() == "ready"
            time.sleep(rng.uniform(0.0, 0.25))  # a random moment inside the charging loop
            os.kill(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
            assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
            # Whole lines only: the kill may cut the last one short.
            lines = [
                line.split()
                for line in output.read().splitlines(keepends=True)
                if line.startswith("answered ") and line.endswith("\n")
            ]
        reported += int(lines[-1][1]) if lines else 0
        # The ledger opens, is consistent, and holds every reported charge (at most one
        # more: a charge committed just before the kill, whose answer was never printed).
        assert acc._ledger.consistent(acc.name, acc._budget_id)
        answered = acc.queries_answered
        assert reported <= answered <= reported + 20
        assert acc.epsilon_spent == pytest.approx(answered * eps, rel=1e-9)
        if not ledger_url.startswith("postgresql"):
            with sqlite3.connect(ledger_url) as conn:
                assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert reported > 0  # the kills did land inside the loop


# -- copies and the default ledger ---------------------------------------------------------------
def test_default_ledger_is_one_file_shared_by_pickled_copies():
    acc = PrivacyAccountant(epsilon=1.0)
    assert acc.ledger_url.startswith("sqlite:///")
    path = acc.ledger_url[len("sqlite:///") :]
    assert os.path.exists(path)
    assert os.path.basename(os.path.dirname(path)).startswith("skprivpred-")
    copy_ = pickle.loads(pickle.dumps(acc))
    copy_.charge(3, 0.1)
    assert acc.queries_answered == 3
    assert PrivacyAccountant(epsilon=1.0).ledger_url != acc.ledger_url  # one file each


def test_a_copy_of_a_default_ledger_outliving_its_creator_raises(tmp_path):
    """The default ledger is deleted when its creating process exits; copies never restart."""
    payload = tmp_path / "acc.pkl"
    script = textwrap.dedent(
        f"""
        import pickle
        from skprivpred import PrivacyAccountant
        acc = PrivacyAccountant(epsilon=1.0)
        acc.charge(4, 0.1)
        with open({str(payload)!r}, "wb") as f:
            pickle.dump(acc, f)
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
    with open(payload, "rb") as f:
        orphan = pickle.load(f)
    with pytest.raises(LedgerError, match="never starts again from zero"):
        orphan.charge(1, 0.1)
    with pytest.raises(LedgerError):
        orphan.spent()
    assert "ledger unavailable" in repr(orphan)


# -- faults: clear errors, nothing charged --------------------------------------------------------
def test_a_locked_ledger_raises_after_the_timeout_and_charges_nothing(tmp_path):
    path = str(tmp_path / "locked.db")
    acc = PrivacyAccountant(epsilon=1.0, ledger=path, timeout=0.3)
    acc.charge(1, 0.1)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another writer holds the lock
    try:
        started = time.monotonic()
        with pytest.raises(LedgerError, match="locked.*0.3 s"):
            acc.charge(1, 0.1)
        assert time.monotonic() - started >= 0.25
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert acc.queries_answered == 1
    acc.charge(1, 0.1)  # usable again once the lock is released
    assert acc.queries_answered == 2


def test_a_read_only_ledger_raises_and_charges_nothing(tmp_path):
    directory = tmp_path / "ro"
    directory.mkdir()
    path = str(directory / "ro.db")
    acc = PrivacyAccountant(epsilon=1.0, ledger=path)
    acc.charge(2, 0.1)
    payload = pickle.dumps(acc)
    # Run the charge in a process that may read the file but not write it. Root ignores
    # file modes, so as root the process runs without the capabilities that override them.
    os.chmod(directory, 0o555)
    os.chmod(path, 0o444)
    script = textwrap.dedent(
        """
        import pickle, sys
        from skprivpred import LedgerError
        acc = pickle.loads(sys.stdin.buffer.read())
        try:
            acc.charge(1, 0.1)
        except LedgerError as exc:
            print("LedgerError:", exc)
        """
    )
    drop = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"]
    try:
        done = subprocess.run(
            [*(drop if os.geteuid() == 0 else []), sys.executable, "-c", script],
            input=payload,
            capture_output=True,
            timeout=120,
        )
    finally:
        os.chmod(directory, 0o755)
        os.chmod(path, 0o644)
    out = done.stdout.decode()
    assert done.returncode == 0, done.stderr.decode()
    assert out.startswith("LedgerError:") and ("read-only" in out or "cannot be opened" in out)
    assert acc.queries_answered == 2


def test_a_corrupted_ledger_raises(tmp_path):
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not a database" * 100)
    with pytest.raises(LedgerError, match="not a readable SQLite database"):
        PrivacyAccountant(epsilon=1.0, ledger=str(garbage))
    path = tmp_path / "budget.db"
    acc = PrivacyAccountant(epsilon=1.0, ledger=str(path))
    acc.charge(1, 0.1)
    acc._ledger._drop_connection()  # as a new process would, after the damage
    for suffix in ("-wal", "-shm"):
        if os.path.exists(str(path) + suffix):
            os.remove(str(path) + suffix)
    with open(path, "r+b") as f:  # overwrite the header
        f.write(b"\x00" * 100)
    with pytest.raises(LedgerError):
        acc.charge(1, 0.1)


def test_a_deleted_ledger_file_raises_instead_of_starting_from_zero(tmp_path):
    path = str(tmp_path / "gone.db")
    acc = PrivacyAccountant(epsilon=1.0, ledger=path)
    acc.charge(5, 0.1)
    payload = pickle.dumps(acc)
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    copy_ = pickle.loads(payload)
    copy_._ledger._drop_connection()  # same process: forget the open connection
    with pytest.raises(LedgerError, match="is missing: the record of what this budget spent") as e:
        copy_.charge(1, 0.1)
    assert "restore" not in str(e.value)  # a restored copy would roll spending back
    assert not os.path.exists(path)  # the copy did not create a fresh, empty budget


def test_a_budget_removed_from_under_a_copy_raises(ledger_url):
    name = new_name()
    acc = PrivacyAccountant(epsilon=1.0, ledger=ledger_url, name=name)
    acc.charge(1, 0.1)
    copy_ = pickle.loads(pickle.dumps(acc))
    delete = "DELETE FROM skprivpred_budget WHERE name = ?"
    if ledger_url.startswith("postgresql"):
        import psycopg

        with psycopg.connect(ledger_url) as conn:
            conn.execute(delete.replace("?", "%s"), (name,))
    else:
        with sqlite3.connect(ledger_url) as conn:
            conn.execute(delete, (name,))
    with pytest.raises(LedgerError, match=f"no budget named '{name}'"):
        copy_.charge(1, 0.1)
    # Created again under the same name, it is another budget: the old copy still refuses.
    PrivacyAccountant(epsilon=1.0, ledger=ledger_url, name=name)
    with pytest.raises(LedgerError, match="not the one this accountant was created with"):
        copy_.charge(1, 0.1)


def test_other_terms_under_an_existing_name_are_refused(ledger_url):
    name = new_name()
    PrivacyAccountant(epsilon=1.0, ledger=ledger_url, name=name).charge(3, 0.1)
    with pytest.raises(ValueError, match=f"already holds a budget named '{name}'.*epsilon=1.0"):
        PrivacyAccountant(epsilon=2.0, ledger=ledger_url, name=name)
    again = PrivacyAccountant(epsilon=1.0, ledger=ledger_url, name=name)
    assert again.queries_answered == 3
    other = PrivacyAccountant(epsilon=2.0, ledger=ledger_url, name=name + "-b")
    assert other.queries_answered == 0  # several budgets in one ledger


def test_a_server_that_is_down_raises_and_draws_no_noise(postgres_url):
    url = f"postgresql://postgres@127.0.0.1:{free_port()}/postgres"  # nothing listens there
    with pytest.raises(LedgerError, match="PostgreSQL ledger"):
        PrivacyAccountant(epsilon=1.0, ledger=url, timeout=2.0)
    # A server that goes away while an estimator is using it.
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(60, 2)), np.tile([0, 1], 30)
    with temporary_postgres() as url:
        acc = PrivacyAccountant(epsilon=10.0, ledger=url, timeout=2.0)
        clf = SubsampleAggregateClassifier(n_teachers=3, classes=[0, 1], accountant=acc).fit(X, y)
        clf.predict(X[:2])
    state = clf._query_stream.rng.bit_generator.state
    with pytest.raises(LedgerError, match="PostgreSQL ledger"):
        clf.predict(X[:2])
    assert clf._query_stream.rng.bit_generator.state == state
    assert clf._query_stream.answered == 2


def test_bad_ledger_arguments_are_refused():
    for bad in (42, "", "mysql://host/db", "sqlite:///"):
        with pytest.raises(ValueError, match="ledger must be"):
            PrivacyAccountant(ledger=bad)
    with pytest.raises(ValueError, match="name must be"):
        PrivacyAccountant(name="")
    with pytest.raises(ValueError, match="timeout"):
        PrivacyAccountant(timeout=0.0)


def test_the_password_of_a_server_url_is_never_shown():
    from skprivpred.accounting._ledger import redact

    assert redact("postgresql://alice:s3cret@db:5432/x") == "postgresql://alice:***@db:5432/x"
    assert "s3cret" not in redact("postgres://bob:s3cret@h/d")
    # libpq also takes the password as a query parameter.
    assert (
        redact("postgresql://db/x?sslmode=require&Password=s3cret&sslpassword=k3y&port=1")
        == "postgresql://db/x?sslmode=require&Password=***&sslpassword=***&port=1"
    )


def test_spent_totals_are_recomputed_from_the_ledger_not_the_object(tmp_path):
    """Two objects on one file agree at once; neither keeps its own tally."""
    path = str(tmp_path / "shared.db")
    a = PrivacyAccountant(epsilon=5.0, delta=1e-5, ledger=path)
    b = PrivacyAccountant(epsilon=5.0, delta=1e-5, ledger=path)
    a.charge(4, 0.5)
    b.charge(2, 0.25, 1e-6)
    assert a.spent() == b.spent() == pytest.approx((2.5, 2e-6))
    assert math.isclose(a.remaining_queries(0.5), 5)


@pytest.mark.parametrize("kind", [":memory:", "sqlite", "postgresql"])
def test_advancing_a_horizon_spends_nothing_and_is_shared(kind, tmp_path, request):
    ledger = {
        ":memory:": ":memory:",
        "sqlite": str(tmp_path / "h.db"),
    }.get(kind) or request.getfixturevalue("postgres_url")
    acc = PrivacyAccountant(epsilon=1.0, ledger=ledger, name=new_name())
    acc.charge(2, 0.1)
    horizon = ("rounds-of-one-run", 10)
    acc.advance_horizon(3, horizon)
    twin = acc if kind == ":memory:" else pickle.loads(pickle.dumps(acc))
    twin.advance_horizon(4, horizon)
    with pytest.raises(HorizonExhaustedError, match="n_queries=10.*3 rows remain"):
        acc.advance_horizon(4, horizon)
    acc.advance_horizon(3, horizon)
    assert acc.horizon_answered("rounds-of-one-run") == 10
    assert acc.queries_answered == 2 and acc.epsilon_spent == pytest.approx(0.2)
    assert len(acc.history()) == 1  # a step of a charged release is not a charge
    with pytest.raises(ValueError, match="n_rows"):
        acc.advance_horizon(-1, horizon)


# -- files: created by this user only ----------------------------------------------------------
@pytest.fixture
def shared_tmp(monkeypatch, tmp_path_factory):
    """A world-writable sticky directory, like /tmp, as this process's temporary directory."""
    tmp_path_factory.getbasetemp()  # pytest's own temporary directory stays where it is
    root = tempfile.mkdtemp(prefix="skprivpred-shared-", dir="/tmp")
    os.chmod(root, 0o1777)
    monkeypatch.setattr(tempfile, "tempdir", root)
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)  # else the default ledger goes there
    yield Path(root)
    shutil.rmtree(root, ignore_errors=True)


def private_directory(shared: Path) -> Path:
    return shared / f"skprivpred-{os.getuid()}"


def as_another_user(*command: str) -> None:
    """Run ``command`` as uid/gid 65534 (another local user); needs root."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("acting as another user needs root and setpriv")
    subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *command],
        check=True,
        timeout=60,
    )


def _in_a_fresh_directory(acc: PrivacyAccountant, shared: Path) -> Path:
    """The default ledger's directory: new, this user's, 0700, named after the fixed name."""
    path = Path(acc.ledger_url[len("sqlite:///") :])
    directory = path.parent
    assert directory.parent == shared and directory != private_directory(shared)
    assert directory.name.startswith(private_directory(shared).name + "-")
    info = directory.lstat()
    assert info.st_uid == os.getuid() and stat.S_IMODE(info.st_mode) == 0o700
    return directory


@pytest.mark.parametrize("mode", ["0777", "0700"])
def test_a_default_directory_prepared_by_another_user_is_left_alone(shared_tmp, mode):
    # Another local user creates the directory first (as the red team did, with 0777): it
    # used to make every accountant with the default ledger refuse.
    as_another_user("mkdir", "-m", mode, str(private_directory(shared_tmp)))
    assert os.stat(private_directory(shared_tmp)).st_uid == 65534
    acc = PrivacyAccountant(epsilon=10.0)
    acc.charge(8, 1.0)
    _in_a_fresh_directory(acc, shared_tmp)
    assert os.listdir(private_directory(shared_tmp)) == []  # nothing was created in theirs
    copy_ = pickle.loads(pickle.dumps(acc))  # a copy charges the same budget
    with pytest.raises(BudgetExhaustedError):
        copy_.charge(3, 1.0)
    assert acc.queries_answered == 8


def test_a_default_directory_chowned_to_another_uid_or_open_is_left_alone(shared_tmp):
    if os.geteuid() != 0:
        pytest.skip("handing a directory to another uid needs root")
    directory = private_directory(shared_tmp)
    directory.mkdir(mode=0o700)
    os.chown(directory, 65534, 65534)
    first = PrivacyAccountant(epsilon=10.0)
    fresh = _in_a_fresh_directory(first, shared_tmp)
    second = PrivacyAccountant(epsilon=10.0)  # one fresh directory per process
    assert _in_a_fresh_directory(second, shared_tmp) == fresh
    assert first.ledger_url != second.ledger_url and os.listdir(directory) == []
    os.chown(directory, 0, 0)
    os.chmod(directory, 0o777)  # this user's, but open to others: left alone too
    _in_a_fresh_directory(PrivacyAccountant(epsilon=10.0), shared_tmp)
    assert os.listdir(directory) == []


def test_a_default_directory_that_is_a_link_is_left_alone_and_a_private_one_used(shared_tmp):
    directory = private_directory(shared_tmp)
    elsewhere = shared_tmp / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    directory.symlink_to(elsewhere)
    _in_a_fresh_directory(PrivacyAccountant(epsilon=10.0), shared_tmp)
    assert os.listdir(elsewhere) == []
    directory.unlink()
    directory.mkdir(mode=0o700)  # once it is private, it is used
    assert PrivacyAccountant(epsilon=10.0).ledger_url.startswith(f"sqlite:///{directory}/")


def test_the_default_ledger_prefers_a_private_runtime_directory(shared_tmp, monkeypatch):
    runtime = shared_tmp / "run-user"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    acc = PrivacyAccountant(epsilon=10.0)
    assert acc.ledger_url == f"sqlite:///{runtime}/skprivpred/{Path(acc.ledger_url).name}"
    os.chmod(runtime, 0o755)  # not a private runtime directory: not used
    assert PrivacyAccountant(epsilon=10.0).ledger_url.startswith(
        f"sqlite:///{private_directory(shared_tmp)}/"
    )


def file_mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_new_ledger_files_are_private_whatever_the_umask(shared_tmp, tmp_path):
    previous = os.umask(0)  # the most permissive umask: the modes come from the code
    try:
        default = PrivacyAccountant(epsilon=10.0)
        default.charge(1, 0.1)
        named = PrivacyAccountant(epsilon=10.0, ledger=str(tmp_path / "named.db"))
        named.charge(1, 0.1)
    finally:
        os.umask(previous)
    assert file_mode(private_directory(shared_tmp)) == 0o700
    for acc in (default, named):
        path = acc.ledger_url[len("sqlite:///") :]
        for suffix in ("", "-wal", "-shm"):
            assert file_mode(path + suffix) == 0o600, suffix
            assert os.stat(path + suffix).st_uid == os.getuid()


def test_a_missing_directory_is_named_and_restoring_is_never_advised(tmp_path):
    where = tmp_path / "srv" / "privacy" / "budget.db"  # the Deploying page's first set-up
    with pytest.raises(
        LedgerError, match="directory .*privacy of the ledger file .* does not exist"
    ) as e:
        PrivacyAccountant(epsilon=1.0, ledger=str(where))
    assert "restore" not in str(e.value) and not where.parent.exists()
    where.parent.mkdir(parents=True, mode=0o700)
    acc = PrivacyAccountant(epsilon=1.0, ledger=str(where))
    acc.charge(1, 0.1)
    shutil.rmtree(tmp_path / "srv")  # the whole directory is gone: a copy says so
    copy_ = pickle.loads(pickle.dumps(acc))
    with pytest.raises(LedgerError, match="does not exist") as e:
        copy_.charge(1, 0.1)
    assert "restore" not in str(e.value)


# -- a ledger is never rolled back ---------------------------------------------------------------
def sqlite_backup(path: Path) -> Path:
    """A consistent copy of a SQLite ledger (the way a backup tool takes one)."""
    copy_path = path.with_suffix(".backup")
    with sqlite3.connect(path) as source, sqlite3.connect(copy_path) as target:
        source.backup(target)
    return copy_path


def sqlite_restore(backup: Path, path: Path) -> None:
    """Put a backup back in place of the ledger, as an operator would."""
    for suffix in ("-wal", "-shm"):
        if os.path.exists(str(path) + suffix):
            os.remove(str(path) + suffix)
    shutil.copyfile(backup, str(path) + ".tmp")
    os.replace(str(path) + ".tmp", path)


def pg_backup(url: str, tmp_path: Path) -> Path:
    dump = tmp_path / "ledger.dump"
    subprocess.run(
        ["pg_dump", "-Fc", "-t", "skprivpred_*", "-f", str(dump), url], check=True, timeout=120
    )
    return dump


def pg_restore(dump: Path, url: str) -> None:
    subprocess.run(
        ["pg_restore", "--clean", "--if-exists", "-d", url, str(dump)], check=True, timeout=120
    )


def test_a_ledger_restored_from_a_backup_is_refused(ledger_url, tmp_path):
    name = new_name()
    acc = PrivacyAccountant(epsilon=10.0, ledger=ledger_url, name=name)
    postgres = ledger_url.startswith("postgresql")
    if postgres and shutil.which("pg_dump") is None:
        pytest.skip("pg_dump is not installed")
    # The backup is taken right after the budget was created (the red team's case).
    backup = pg_backup(ledger_url, tmp_path) if postgres else sqlite_backup(Path(ledger_url))
    for _ in range(8):
        acc.charge(1, 1.0)
    payload = pickle.dumps(acc)
    if postgres:
        pg_restore(backup, ledger_url)
    else:
        sqlite_restore(backup, Path(ledger_url))
    # The running accountant refuses: before the fix it read 0.0 spent and charged 10 more.
    with pytest.raises(LedgerError, match="no longer holds journal row #.*older copy") as e:
        acc.charge(1, 1.0)
    assert "never restored from a backup" in str(e.value)
    for read in (acc.spent, lambda: acc.queries_answered, acc.history):
        with pytest.raises(LedgerError, match="older copy"):
            read()
    # A pickled copy carries what it has seen: in another process it refuses too.
    script = textwrap.dedent(
        """
        import pickle, sys
        from skprivpred import LedgerError
        acc = pickle.loads(sys.stdin.buffer.read())
        try:
            acc.charge(1, 1.0)
            print("charged")
        except LedgerError as exc:
            print("LedgerError:", exc)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], input=payload, capture_output=True, timeout=120
    )
    assert done.stdout.decode().startswith("LedgerError:"), done.stderr.decode()
    # Nothing was charged in the restored ledger; a new accountant knows no better, and the
    # docs say so (a ledger is never restored from a backup).
    assert PrivacyAccountant(epsilon=10.0, ledger=ledger_url, name=name).queries_answered == 0


def test_a_restored_ledger_cannot_roll_a_horizon_back(tmp_path):
    path = tmp_path / "rounds.db"
    acc = PrivacyAccountant(epsilon=10.0, ledger=str(path), name="rounds")
    acc.charge(1, 1.0)  # a run, charged once up front
    horizon = ("rounds-of-one-run", 10)
    acc.advance_horizon(2, horizon)
    backup = sqlite_backup(path)
    acc.advance_horizon(7, horizon)  # steps only: a journal row of the horizon's
    sqlite_restore(backup, path)
    with pytest.raises(LedgerError, match="no longer holds journal row #.*older copy"):
        acc.advance_horizon(1, horizon)
    with pytest.raises(LedgerError, match="older copy"):
        acc.horizon_answered("rounds-of-one-run")


def test_a_deleted_and_replaced_file_is_seen_by_an_open_connection(tmp_path):
    """A running process notices that the path names another file (no stale connection)."""
    path = tmp_path / "b.db"
    acc = PrivacyAccountant(epsilon=10.0, ledger=str(path), name="b")
    acc.charge(3, 1.0)
    other = tmp_path / "other.db"
    PrivacyAccountant(epsilon=10.0, ledger=str(other), name="b").charge(1, 1.0)
    sqlite_restore(sqlite_backup(other), path)  # same budget name, another budget
    with pytest.raises(LedgerError, match="not the one this accountant was created with"):
        acc.charge(1, 1.0)
    os.remove(path)
    with pytest.raises(LedgerError, match="is missing: the record of what this budget spent"):
        acc.charge(1, 1.0)


# -- several budgets in one transaction ----------------------------------------------------------
@pytest.mark.parametrize("kind", [":memory:", "sqlite", "postgresql"])
def test_linked_budgets_are_charged_together_or_not_at_all(kind, tmp_path, request):
    ledger = {":memory:": ":memory:", "sqlite": str(tmp_path / "j.db")}.get(
        kind
    ) or request.getfixturevalue("postgres_url")
    budget = PrivacyAccountant(
        epsilon=3.0, delta=1e-5, composition="zcdp", ledger=ledger, name=new_name()
    )
    quota = PrivacyAccountant(epsilon=1.0, delta=1e-5, ledger=budget, name=budget.name + "/q")
    with budget.charging_also(quota):
        budget.charge(4, 0.2, rho=0.004, source="Est")  # both, with the same rho
        with pytest.raises(BudgetExhaustedError, match="; 1 row at that cost still fits") as e:
            budget.charge(2, 0.2)  # the quota has 1 row left: neither is charged
        assert e.value.budget == quota.name
        assert str(e.value).startswith(f"the budget {quota.name!r} refuses: answering 2 more")
        budget.charge(1, 0.2)
    assert budget.queries_answered == quota.queries_answered == 5
    assert list(quota.history()["rho"]) == pytest.approx([0.004, 0.02])
    sources = quota.history()["estimator"]
    assert sources.iloc[0] == "Est" and sources.isna().iloc[1]
    budget.charge(8, 0.2)  # outside the block: the budget only
    assert quota.queries_answered == 5 and budget.queries_answered == 13
    other = PrivacyAccountant(epsilon=100.0, ledger=budget, name=budget.name + "/r")
    with budget.charging_also(other):
        with pytest.raises(BudgetExhaustedError) as e:
            budget.charge(10, 0.2)  # now the budget refuses: the other is not charged
        assert e.value.budget == budget.name
    assert other.queries_answered == 0 and budget.queries_answered == 13
    # Budgets in another ledger, or the budget itself, cannot be linked.
    with pytest.raises(ValueError, match="one transaction of one ledger"):
        with budget.charging_also(PrivacyAccountant(epsilon=1.0, ledger=":memory:")):
            pass
    with pytest.raises(ValueError, match="to itself"):
        with budget.charging_also(budget):
            pass


@pytest.mark.parametrize("composition", ["basic", "advanced", "zcdp"])
@pytest.mark.parametrize("kind", [":memory:", "sqlite", "postgresql"])
def test_recording_reports_what_each_charge_committed(kind, composition, tmp_path, request):
    """A record holds the spending right after its block's last commit, not a later read."""
    import threading

    ledger = {":memory:": ":memory:", "sqlite": str(tmp_path / "r.db")}.get(
        kind
    ) or request.getfixturevalue("postgres_url")
    terms = {"basic": {}, "advanced": {"delta_prime": 1e-6}, "zcdp": {}}[composition]
    delta = 0.0 if composition == "basic" else 1e-5
    budget = PrivacyAccountant(
        epsilon=50.0, delta=delta, composition=composition, ledger=ledger, name=new_name(), **terms
    )
    quota = PrivacyAccountant(epsilon=5.0, delta=delta, ledger=budget, name=budget.name + "/q")
    budget.charge(2, 0.1)  # before the block: not recorded
    with budget.recording() as mine, quota.recording() as theirs:
        assert (mine.rows, mine.epsilon_spent, mine.delta_spent) == (0, None, None)
        with budget.charging_also(quota):
            budget.charge(3, 0.1)
        at_commit = budget.spent()
        assert mine.rows == 3
        assert (mine.epsilon_spent, mine.delta_spent) == pytest.approx(at_commit, rel=1e-12)
        assert theirs.rows == 3
        assert (theirs.epsilon_spent, theirs.delta_spent) == pytest.approx(quota.spent())
        # Another thread (its own context, as another process would) charges the same budget:
        # the ledger moves on, the record keeps what this block's commit left.
        elsewhere = threading.Thread(target=budget.charge, args=(4, 0.1))
        elsewhere.start()
        elsewhere.join(timeout=60)
        assert budget.queries_answered == 9 and budget.spent()[0] > at_commit[0] + 0.3
        assert mine.rows == 3
        assert (mine.epsilon_spent, mine.delta_spent) == pytest.approx(at_commit, rel=1e-12)
        with pytest.raises(BudgetExhaustedError):
            budget.charge(10**6, 0.1)  # refused: nothing recorded
        assert mine.rows == 3 and mine.epsilon_spent == pytest.approx(at_commit[0], rel=1e-12)
        budget.charge(1, 0.1)  # recorded: the last commit of the block wins
        assert mine.rows == 4
        assert (mine.epsilon_spent, mine.delta_spent) == pytest.approx(budget.spent(), rel=1e-12)
    budget.charge(1, 0.1)  # after the block: not recorded
    assert mine.rows == 4 and theirs.rows == 3 and budget.queries_answered == 11


def test_a_recording_shared_by_threads_keeps_the_last_commit(tmp_path):
    """Threads that run a copy of the recording's context: every row counted, and the
    figure is the one the last commit left (not the last thread to note its charge)."""
    import contextvars
    import threading

    budget = PrivacyAccountant(epsilon=1e6, ledger=str(tmp_path / "s.db"), name="shared")
    with budget.recording() as record:
        context = contextvars.copy_context()

    def charges():
        for _ in range(50):
            budget.charge(1, 1.0)

    threads = [threading.Thread(target=context.copy().run, args=(charges,)) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert record.rows == budget.queries_answered == 200
    assert record.epsilon_spent == budget.epsilon_spent == 200.0
    # A thread that notes its charge late (after a later commit was noted) changes nothing
    # but the rows: the figure stays the one of the newest journal row.
    with budget.recording() as late:
        budget._record_charge(1, Totals(201, 201.0, 0, 0, 0, 0), None, Mark(202, 0.0))
        budget._record_charge(1, Totals(4, 4.0, 0, 0, 0, 0), None, Mark(4, 0.0))
    assert late.rows == 2 and late.epsilon_spent == 201.0


def test_linked_budgets_in_threads_never_overspend(tmp_path):
    """Concurrent requests of two clients: the global cap and each quota hold together."""
    import threading

    budget = PrivacyAccountant(epsilon=30.0, ledger=str(tmp_path / "t.db"), name="g")
    quotas = [PrivacyAccountant(epsilon=20.0, ledger=budget, name=f"g/client/{c}") for c in "ab"]
    answered = [0, 0]

    def client(i):
        for _ in range(40):
            with budget.charging_also(quotas[i]):
                try:
                    budget.charge(1, 1.0)
                except BudgetExhaustedError:
                    continue
            answered[i] += 1

    threads = [threading.Thread(target=client, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert sum(answered) == 30 and max(answered) <= 20
    assert [q.queries_answered for q in quotas] == answered
    assert budget.queries_answered == 30
