"""What a model file holds and what it needs (issue 50, items 4 and 6).

* ``save_model`` used to store the accountant's ledger address with its password: a
  PostgreSQL ledger ``postgresql://user:PW@host/db`` put ``PW`` in the model file, for
  whoever reads the file. No password is written now; the loader supplies it the way libpq
  finds one (here ``PGPASSFILE``), and the loaded model charges the same ledger.
* A ``SubsampleAggregateClassifier`` with ``on_exhausted="student"`` used to be saved with
  its student unfitted: served by two workers, each fitted its own student on the answers
  it had released, and after a restart the spent horizon refused every request. Such a
  model is refused by ``save_model`` and by ``load_model`` (and so by the service) until
  its student is fitted (``fit_student(X_public)``).
"""

from __future__ import annotations

import io
import os
import uuid
import zipfile

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.tree import DecisionTreeClassifier
from test_serving import _assert_one_line_refusal, _run_command

from skprivpred import PrivacyAccountant, SubsampleAggregateClassifier
from skprivpred.exceptions import LedgerError

pytest.importorskip("skops")
EPSILON = 0.01


def _data(n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    return X, (X[:, 0] + X[:, 1] > 0).astype(int)


def _all_bytes(data: bytes) -> bytes:
    """The file's bytes and every member of the archive, uncompressed."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return data + b"".join(archive.read(member) for member in archive.namelist())


@pytest.fixture
def password_role(postgres_url):
    """A role that must give a password (scram), with its own database: (url, password)."""
    import psycopg

    suffix = uuid.uuid4().hex[:8]
    role, database, password = f"alice_{suffix}", f"ledger_{suffix}", f"pw-{uuid.uuid4().hex}"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        hba = conn.execute("SHOW hba_file").fetchone()[0]
        try:  # the test runs as the server's owner or as root (the server then drops to another)
            with open(hba, encoding="utf-8") as handle:
                lines = handle.read()
            # The role's rule first: every other role keeps the server's trust rule.
            with open(hba, "w", encoding="utf-8") as handle:
                handle.write(f"host all {role} 127.0.0.1/32 scram-sha-256\n" + lines)
        except OSError as exc:
            pytest.skip(f"cannot require a password on the test server: {exc}")
        conn.execute("SELECT pg_reload_conf()")
        conn.execute("SET password_encryption = 'scram-sha-256'")
        conn.execute(
            psycopg.sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                psycopg.sql.Identifier(role), psycopg.sql.Literal(password)
            )
        )
        conn.execute(
            psycopg.sql.SQL("CREATE DATABASE {} OWNER {}").format(
                psycopg.sql.Identifier(database), psycopg.sql.Identifier(role)
            )
        )
    host_port = postgres_url.split("@", 1)[1].rsplit("/", 1)[0]
    return f"postgresql://{role}:{password}@{host_port}/{database}", password


def _pg_model(url: str, tmp_path, name: str):
    X, y = _data()
    acc = PrivacyAccountant(epsilon=100 * EPSILON, ledger=url, name=name)
    clf = SubsampleAggregateClassifier(
        LogisticRegression(), epsilon=EPSILON, n_teachers=8, classes=[0, 1], accountant=acc
    ).fit(X, y)
    return clf, acc


def test_a_model_file_holds_no_ledger_password_and_loads_with_a_passfile(
    password_role, tmp_path, monkeypatch
):
    from skprivpred.serving import load_model, save_model

    url, password = password_role
    monkeypatch.delenv("PGPASSWORD", raising=False)
    monkeypatch.setenv("PGPASSFILE", str(tmp_path / "absent"))
    clf, acc = _pg_model(url, tmp_path, "passfile")
    clf.predict(_data(3, seed=1)[0])
    path = tmp_path / "model.skops"
    save_model(clf, path)
    data = _all_bytes(path.read_bytes())
    assert password.encode() not in data
    assert acc.queries_answered == 3
    # Without the password the saved address cannot reach the ledger: the server asks for it.
    loaded = load_model(path)
    with pytest.raises(LedgerError, match="password"):
        loaded.predict(_data(2, seed=2)[0])
    assert acc.queries_answered == 3
    # libpq's password file gives it: the loaded model charges the very same budget.
    passfile = tmp_path / "pgpass"
    role_host = url.split("://", 1)[1]
    user, rest = role_host.split(":", 1)
    host_port, database = rest.split("@", 1)[1].split("/", 1)
    host, port = host_port.split(":")
    passfile.write_text(f"{host}:{port}:{database}:{user}:{password}\n")
    os.chmod(passfile, 0o600)
    monkeypatch.setenv("PGPASSFILE", str(passfile))
    loaded = load_model(path)
    loaded.predict(_data(2, seed=2)[0])
    assert acc.queries_answered == 5
    assert password not in loaded.accountant.ledger_url


@pytest.mark.parametrize(
    "address",
    [
        "postgresql://alice:SECRET@db:5432/x",
        "postgresql://:SECRET@db/x?user=u",
        "postgresql://u:SE@CR/ET@db/x",
        "postgresql://db/x?sslmode=require&Password=SECRET&port=1",
        "postgresql://db/x?password=SECRET",
        "postgresql://db/x?sslpassword=SECRET&passfile=/etc/pg",
    ],
)
def test_without_password_removes_every_url_password(address):
    from skprivpred.accounting._ledger import without_password

    stripped = without_password(address)
    assert "SECRET" not in stripped and "SE@CR" not in stripped
    assert stripped.startswith("postgresql://") and "db" in stripped


# -- item 6: the student hand-off ------------------------------------------------------------------
def _student_model(tmp_path, horizon=60):
    X, y = _data()
    acc = PrivacyAccountant(epsilon=1000 * EPSILON, ledger=str(tmp_path / "budget.db"), name="s")
    clf = SubsampleAggregateClassifier(
        LogisticRegression(),
        n_teachers=8,
        classes=[0, 1],
        accountant=acc,
        n_queries=horizon,
        total_epsilon=1.0,
        total_delta=1e-6,
        student=DecisionTreeClassifier(max_depth=2, random_state=0),
        on_exhausted="student",
    ).fit(X, y)
    return clf, acc


def test_save_model_refuses_a_student_hand_off_until_the_student_is_fitted(tmp_path):
    from skprivpred.serving import save_model

    clf, acc = _student_model(tmp_path)
    path = tmp_path / "model.skops"
    with pytest.raises(ValueError, match=r"on_exhausted='student'.*fit_student\(X_public\)"):
        save_model(clf, path)
    assert not path.exists() and acc.queries_answered == 0  # refused before anything
    clf.fit_student(_data(40, seed=3)[0])  # public rows, charged within the horizon
    assert acc.queries_answered == 40
    save_model(clf, path)
    assert path.exists()


def test_a_fitted_student_is_served_by_every_worker_and_an_unfitted_one_is_refused(
    tmp_path, service_factory
):
    import skops.io as sio

    from skprivpred.serving import _model

    clf, acc = _student_model(tmp_path)
    # A file written by the code before the fix (save_model's own payload, unchecked).
    old = tmp_path / "old.skops"
    payload = {
        "format": _model._FORMAT,
        "version": _model._VERSION,
        "versions": _model._saving_versions(),
        "estimator": clf,
    }
    _model._write_private(str(old), sio.dumps(payload))
    done = _run_command(str(old))
    _assert_one_line_refusal(done, "old.skops", "is refused", "fit_student(X_public)")
    with pytest.raises(ValueError, match="fit_student"):
        _model.load_model(old)
    # With the student fitted first, two workers answer alike and charge nothing more.
    clf.fit_student(_data(60, seed=4)[0])
    spent = acc.queries_answered
    path = tmp_path / "model.skops"
    _model.save_model(clf, path)
    service = service_factory(path, workers=2)
    rows = _data(20, seed=5)[0].round(3).tolist()
    answers = set()
    for _ in range(8):
        status, body = service.request("POST", "/predict", {"rows": rows})
        assert status == 200, body
        answers.add(tuple(body["predictions"]))
    assert len(answers) == 1  # one student, whichever worker answers
    assert acc.queries_answered == spent
