"""The service's files and inputs never lose or expose the budget.

What is checked (each was reproduced on the service before the fix):

* ``--metrics-dir`` set to the ledger's directory used to delete the ledger at start (a new
  accountant then read 0.0 spent): the service now deletes only the metric files it
  created, in a directory it marked as its own, and refuses any other directory.
* A request body that repeats a key (at any depth) is refused with 422 and charges
  nothing; it used to be answered and charged for the last copy.
* A ledger password never shows, whatever its form (``postgresql://:PW@host/db?user=u``
  used to show it in ``GET /card``; ``password='a b'`` showed ``b'``; a mistyped address
  was printed whole): the card, the accountant's repr, error messages, the command's log.
* Files another local user (uid 65534, through ``setpriv``) controls are refused, naming
  the path, the owner and the mode: a ledger file that user created with mode 0666 (they
  reset it and the budget was spent twice), their symbolic link, a default directory whose
  parent they own, a model file others can read, an API key file others can read or
  write, checked again whenever it changes.
* A model file whose ``SVC`` has ``_dual_coef_`` shrunk to (1, 1) is refused at load time
  (``decision_function`` used to read out of bounds).
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
import uuid
from pathlib import Path

import numpy as np
import pytest
from test_serving import (  # the real service in a subprocess, and a model to serve
    EPSILON,
    KEY_A,
    _assert_one_line_refusal,
    _run_command,
    fitted_model,
)

from skprivpred import PrivacyAccountant
from skprivpred.exceptions import LedgerError
from skprivpred.serving._metrics import METRICS_MARKER, prepare_metrics_directory

pytest.importorskip("uvicorn")
pytest.importorskip("starlette")


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


# -- ledger passwords ----------------------------------------------------------------------------
#: Every form a password takes in a ledger's address (``SECRET`` stands for it).
PASSWORD_FORMS = {
    "user and password": "postgresql://alice:SECRET@db:5432/x",
    "password, no user": "postgresql://:SECRET@db/x?user=u",
    "password with @ and /": "postgresql://u:SE@CR/ET@db/x",
    "password= parameter": "postgresql://db/x?sslmode=require&Password=SECRET&port=1",
    "quoted value with a blank": "postgresql://db/x?password='SE CRET'&port=1",
    "sslpassword=": "postgresql://db/x?sslpassword=SECRET",
    "passfile=": "postgresql://db/x?passfile=/home/u/SECRET",
    "encoded parameter name": "postgresql://db/x?pass%77ord=SECRET",
    "conninfo": "host=db user=u password=SECRET dbname=x",
    "conninfo, quoted": "host=db password = 'SE \\' CRET' dbname=x",
    "conninfo sslpassword": "host=db sslpassword=SECRET",
}


def _hidden(text: str) -> bool:
    return not any(piece in text for piece in ("SECRET", "SE@CR", "SE CRET", "SE \\'", "CRET"))


@pytest.mark.parametrize("form", PASSWORD_FORMS)
def test_redact_hides_every_password_form_and_keeps_the_rest(form):
    from skprivpred.accounting._ledger import redact

    address = PASSWORD_FORMS[form]
    shown = redact(address)
    assert _hidden(shown) and "***" in shown, shown
    assert "db" in shown and redact(shown) == shown  # the rest is kept as written
    # Mistyped addresses are refused with the address shown, without its password.
    with pytest.raises(ValueError, match="ledger must be|libpq connection string") as refused:
        PrivacyAccountant(ledger=address.replace("postgresql://", "postgresq://"))
    assert _hidden(str(refused.value)) and "***" in str(refused.value)


def test_a_file_path_and_other_parameters_are_shown_whole():
    from skprivpred.accounting._ledger import redact

    assert redact("sqlite:////data/a:b@c.db") == "sqlite:////data/a:b@c.db"
    address = "postgresql://u@db:5/x?sslmode=require&password='a b'&application_name=p"
    assert (
        redact(address) == "postgresql://u@db:5/x?sslmode=require&password=***&application_name=p"
    )


def test_no_password_shows_in_the_card_the_repr_messages_or_the_log(tmp_path, postgres_url):
    from skprivpred import SubsampleAggregateClassifier
    from skprivpred.serving import model_card, save_model

    # The fixture's server trusts every local connection: any password is accepted.
    assert postgres_url.startswith("postgresql://postgres@")
    rest = postgres_url[len("postgresql://postgres@") :]
    addresses = {
        "no user": f"postgresql://:SECRET@{rest}?user=postgres",
        "user": f"postgresql://postgres:SE%40CR%2FET@{rest}",
        "quoted": f"postgresql://postgres@{rest}?password='SE%20CRET'",
        "sslpassword": f"postgresql://postgres@{rest}?sslpassword=SECRET",
        "passfile": f"postgresql://postgres@{rest}?passfile={tmp_path}/SECRET",
    }
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(100, 2)), rng.integers(0, 2, 100)
    for form, address in addresses.items():
        acc = PrivacyAccountant(epsilon=1.0, ledger=address, name=f"card-{uuid.uuid4().hex}")
        clf = SubsampleAggregateClassifier(n_teachers=4, classes=[0, 1], accountant=acc)
        clf.fit(X, y)
        shown = {"card": model_card(clf), "repr": repr(acc), "estimator repr": repr(clf)}
        assert all(_hidden(text) and "***" in text for text in shown.values()), (form, shown)
    # The driver's messages: a server that refuses the connection ...
    with pytest.raises(LedgerError) as failed:
        PrivacyAccountant(epsilon=1.0, ledger="postgresql://u:SECRET@127.0.0.1:1/x", timeout=1)
    assert _hidden(str(failed.value)) and "***" in str(failed.value), str(failed.value)
    # ... and an address with a space in its password: libpq 18 cannot parse it (and its
    # message quotes the password); older libpq (psycopg-binary < 3.3) accepts it and
    # connects, and then the accountant must not show it.
    spaced = f"postgresql://postgres@{rest}?password='SE CRET'"
    try:
        acc = PrivacyAccountant(epsilon=1.0, ledger=spaced, timeout=1, name="card-spaced")
    except LedgerError as refused:
        assert _hidden(str(refused)) and "***" in str(refused), str(refused)
    else:
        assert _hidden(repr(acc)) and "***" in repr(acc), repr(acc)
    # The command's log line names the ledger it charges, and its refusals name the address.
    model = tmp_path / "model.skops"
    save_model(clf, model)
    os.chmod(model, 0o600)
    done = _run_command(str(model), "--ledger", "postgresql://u@127.0.0.1:1/x?sslmode=disable")
    _assert_one_line_refusal(done, "postgresql://u@127.0.0.1:1/x?sslmode=disable")
    # A password on the command line is refused before anything connects (issue 50), and
    # the refusal does not repeat it.
    done = _run_command(str(model), "--ledger", "postgresql://:SECRET@127.0.0.1:1/x?user=u")
    assert done.returncode == 2 and "PGPASSFILE" in done.stderr and _hidden(done.stderr)


def test_a_postgres_ledger_does_not_make_unrelated_objects_part_of_the_model(
    tmp_path, postgres_url, monkeypatch
):
    # The ledger's driver holds the psycopg module; a walk of the model that entered modules
    # reached every object of the interpreter, and refused to save a plain ensemble because an
    # everlasting predictor lived somewhere else in the process.
    import sys

    from skprivpred import PrivateEverlastingClassifier, SubsampleAggregateClassifier
    from skprivpred.serving import save_model
    from skprivpred.serving._trust import process_local

    monkeypatch.setattr(
        sys.modules[__name__], "_UNRELATED", PrivateEverlastingClassifier(None), raising=False
    )
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(100, 2)), rng.integers(0, 2, 100)
    acc = PrivacyAccountant(epsilon=1.0, ledger=postgres_url, name=f"walk-{uuid.uuid4().hex}")
    clf = SubsampleAggregateClassifier(n_teachers=4, classes=[0, 1], accountant=acc).fit(X, y)
    assert process_local(clf) is None
    save_model(clf, tmp_path / "model.skops")
    assert (tmp_path / "model.skops").stat().st_size > 0


# -- model files: libsvm's arrays ----------------------------------------------------------------
def _svms(model) -> list:
    from sklearn.svm import SVC, SVR, NuSVC, NuSVR, OneClassSVM

    from skprivpred.serving._trust import _objects

    kinds = (SVC, NuSVC, SVR, NuSVR, OneClassSVM)
    return [obj for obj in _objects(model) if isinstance(obj, kinds)]


def test_a_model_file_with_inconsistent_svm_arrays_is_refused(tmp_path):
    from sklearn.svm import SVC

    from skprivpred import SubsampleAggregateClassifier
    from skprivpred.serving import load_model, save_model

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 2))
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    acc = PrivacyAccountant(epsilon=10.0, ledger=str(tmp_path / "budget.db"))
    model = SubsampleAggregateClassifier(SVC(), n_teachers=3, classes=[0, 1], accountant=acc)
    model.fit(X, y)
    path = tmp_path / "model.skops"
    save_model(model, path)
    assert load_model(path) is not None  # the honest model loads
    teacher = _svms(model)[0]
    honest = dict(vars(teacher))
    edits = {
        # The red team's file: decision_function read past the dual coefficients.
        "_dual_coef_ does not match": {"_dual_coef_": honest["_dual_coef_"][:, :1].copy()},
        "support counts do not add up": {"_n_support": honest["_n_support"] + 1},
        "support_ is not a C-ordered 1-D int32": {"support_": honest["support_"].astype(int)},
        "support vectors do not match": {"support_vectors_": honest["support_vectors_"][:-1]},
        "support indices lie outside": {"support_": honest["support_"] + 10**6},
        "intercepts do not match": {"_intercept_": np.zeros(3)},
        "probability calibration": {"_probA": np.zeros(2), "_probB": np.zeros(2)},
    }
    for message, changes in edits.items():
        vars(teacher).update(changes)
        save_model(model, path)
        vars(teacher).update(honest)
        with pytest.raises(ValueError, match=message) as refused:
            load_model(path)
        assert "\n" not in str(refused.value) and "model.skops" in str(refused.value)


@pytest.mark.parametrize("kind", ["SVC", "NuSVC", "SVR", "NuSVR", "OneClassSVM", "sparse SVC"])
def test_honest_svms_pass_and_a_shrunk_dual_coef_is_caught(kind):
    import scipy.sparse as sp
    import sklearn.svm

    from skprivpred.serving._trust import check_svms

    rng = np.random.default_rng(1)
    X = rng.normal(size=(80, 3))
    y = rng.integers(0, 3, 80) if "SVC" in kind else X[:, 0]
    if kind == "sparse SVC":
        X = sp.csr_matrix(X)
    svm = getattr(sklearn.svm, kind.split()[-1])()
    svm.fit(X) if kind == "OneClassSVM" else svm.fit(X, y)
    check_svms([svm])
    if kind == "sparse SVC":
        svm._dual_coef_ = sp.csr_matrix(svm._dual_coef_.toarray()[:, :1])
    else:
        svm._dual_coef_ = svm._dual_coef_[:, :1].copy()
    with pytest.raises(ValueError, match="_dual_coef_ does not match"):
        check_svms([svm])


# -- files another local user controls -----------------------------------------------------------
OTHER = 65534  # another local user (nobody)


def _as_another_user(*command: str) -> None:
    """Run ``command`` as uid/gid 65534 with ``setpriv`` (needs root)."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("acting as another user needs root and setpriv")
    subprocess.run(
        ["setpriv", f"--reuid={OTHER}", f"--regid={OTHER}", "--clear-groups", *command],
        check=True,
        timeout=60,
    )


@pytest.fixture
def shared():
    """A directory in /tmp that every user may write, sticky and owned by root like /tmp."""
    if os.geteuid() != 0:
        pytest.skip("a directory like /tmp and a second user need root")
    directory = Path(tempfile.mkdtemp(prefix="skprivpred-shared-", dir="/tmp"))
    os.chmod(directory, 0o1777)
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def _mine(directory: Path) -> Path:
    directory.mkdir(mode=0o700)
    return directory


def test_a_ledger_file_another_user_owns_or_can_write_is_refused(tmp_path, shared):
    # The red team's file: another user created the explicit ledger path, mode 0666.
    planted = shared / "budget.db"
    _as_another_user("sh", "-c", f"umask 0; touch {planted}")
    owned = rf"ledger file {planted} belongs to another user \(owner uid {OTHER}, mode 0666\)"
    with pytest.raises(LedgerError, match=owned):
        PrivacyAccountant(epsilon=1.0, ledger=str(planted))
    assert planted.stat().st_size == 0  # nothing was written into it
    # The same file in a directory of this user's: its owner and mode are named.
    own = _mine(tmp_path / "own")
    path = own / "budget.db"
    acc = PrivacyAccountant(epsilon=1.0, ledger=str(path), name="b")
    acc.charge(1, 0.9)
    os.chmod(path, 0o666)
    with pytest.raises(LedgerError, match=r"budget\.db is writable by other users .*mode 0666"):
        PrivacyAccountant(epsilon=1.0, ledger=str(path), name="b")
    os.chmod(path, 0o600)
    os.chown(path, OTHER, OTHER)  # the file handed to another user
    with pytest.raises(LedgerError, match=rf"belongs to another user \(owner uid {OTHER}, mode"):
        PrivacyAccountant(epsilon=1.0, ledger=str(path), name="b")
    os.chown(path, 0, 0)
    assert PrivacyAccountant(epsilon=1.0, ledger=str(path), name="b").epsilon_spent == 0.9


def test_a_ledger_directory_another_user_controls_is_refused(tmp_path, shared):
    # Its own directory: no exception even when sticky and root's (SQLite's -wal, -shm and
    # -journal files are created without O_EXCL).
    with pytest.raises(LedgerError, match=rf"lies in {shared} \(owner uid 0, mode 1777\)"):
        PrivacyAccountant(epsilon=1.0, ledger=str(shared / "new.db"))
    assert os.listdir(shared) == []
    # A directory above it: refused if another user owns or can write it, unless it is
    # sticky and root's like /tmp.
    _as_another_user("mkdir", "-m", "755", str(shared / "theirs"))
    _as_another_user("mkdir", "-m", "777", str(shared / "theirs" / "open"))
    inner = shared / "theirs" / "open" / "mine"
    inner.mkdir(mode=0o700)
    with pytest.raises(LedgerError, match=rf"lies in {shared}/theirs/open \(owner uid {OTHER}"):
        PrivacyAccountant(epsilon=1.0, ledger=str(inner / "budget.db"))
    assert os.listdir(inner) == []
    below_tmp = _mine(shared / "mine") / "budget.db"  # under a sticky root directory: fine
    assert PrivacyAccountant(epsilon=1.0, ledger=str(below_tmp)).epsilon_spent == 0.0


def test_a_ledger_path_that_is_a_symbolic_link_is_refused(tmp_path, shared):
    own = _mine(tmp_path / "own")
    target = own / "budget.db"
    PrivacyAccountant(epsilon=1.0, ledger=str(target), name="b").charge(1, 0.5)
    # Another user's link to their own file (fs.protected_symlinks=0 on the red team's host).
    _as_another_user("sh", "-c", f"umask 077; touch {shared}/theirs.db")
    _as_another_user("ln", "-s", f"{shared}/theirs.db", f"{shared}/link.db")
    with pytest.raises(LedgerError, match=r"link\.db is a symbolic link \(owner uid 65534"):
        PrivacyAccountant(epsilon=1.0, ledger=str(shared / "link.db"))
    # This user's own link too: sqlite3 would follow whatever it points to later.
    (own / "link.db").symlink_to(target)
    with pytest.raises(LedgerError, match=r"link\.db is a symbolic link"):
        PrivacyAccountant(epsilon=1.0, ledger=str(own / "link.db"), name="b")


def test_the_default_directory_in_a_folder_another_user_owns_is_refused(
    tmp_path, shared, monkeypatch
):
    _as_another_user("mkdir", "-m", "755", str(shared / "their-tmp"))
    monkeypatch.setattr(tempfile, "tempdir", str(shared / "their-tmp"))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    with pytest.raises(LedgerError, match=rf"lies in {shared}/their-tmp \(owner uid {OTHER}"):
        PrivacyAccountant(epsilon=1.0)
    # The private directory was created (by this user, 0700) but holds no budget.
    assert os.listdir(shared / "their-tmp" / f"skprivpred-{os.getuid()}") == []


def test_a_model_file_others_can_read_is_refused(tmp_path):
    from skprivpred.serving import load_model

    model, _ = fitted_model(tmp_path, cap_rows=10)
    os.chmod(model, 0o644)  # the red team's model loaded at 0644: it holds the teachers
    with pytest.raises(ValueError, match=r"is readable by other users \(owner uid \d+, mode 0644"):
        load_model(model)
    # (the command prints load_model's message in one line: see test_serving.py)
    os.chmod(model, 0o600)
    assert load_model(model) is not None


def test_an_api_key_file_others_can_read_is_refused_at_start_and_at_every_reload(tmp_path, start):
    model, acc = fitted_model(tmp_path, cap_rows=100)
    keys = tmp_path / "keys.txt"
    keys.write_text(f"alpha:{KEY_A}\n")  # the umask leaves it 0644
    assert stat.S_IMODE(keys.stat().st_mode) == 0o644
    done = _run_command(str(model), "--api-keys", str(keys))
    _assert_one_line_refusal(done, f"the API key file {keys} is readable by other users")
    os.chmod(keys, 0o600)
    service = start(model, "--api-keys", str(keys))
    auth = {"X-API-Key": KEY_A}
    body = {"rows": [[0.1, 0.2, 0.3]]}
    assert service.request("POST", "/predict", body, auth)[0] == 200
    # Opened to others while the service runs (a chmod changes no content): refused at once.
    for mode in (0o640, 0o604, 0o602):
        os.chmod(keys, mode)
        status, answer = service.request("POST", "/predict", body, auth)
        assert status == 503 and "key file is refused" in answer["error"], mode
    assert acc.queries_answered == 1  # nothing charged while refused
    os.chmod(keys, 0o600)
    assert service.request("POST", "/predict", body, auth)[0] == 200
    log = service.log.read_text()
    assert f"the API key file {keys} is writable by other users" in log and KEY_A not in log
    if os.geteuid() == 0:  # another owner (only root can hand a file over)
        os.chown(keys, OTHER, OTHER)
        assert service.request("POST", "/predict", body, auth)[0] == 503
        assert f"belongs to another user (owner uid {OTHER}" in service.log.read_text()
        os.chown(keys, 0, 0)
        assert service.request("POST", "/predict", body, auth)[0] == 200
