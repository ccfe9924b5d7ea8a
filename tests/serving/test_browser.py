"""What a web page, a proxy and a command line can do to the service (issue 50), for real.

Each test starts ``python -m skprivpred.serving`` on 127.0.0.1 (``test_serving.Service``)
and sends real HTTP requests, or runs the command and reads its refusal. What is checked
(each was answered, or accepted, before the fix):

* A foreign ``Host`` (DNS rebinding) gets 400 and a body that is not declared
  ``application/json`` (what a page's ``fetch(..., {mode: "no-cors"})`` sends) gets 415,
  both uncharged; no response carries a CORS header; a ``--host`` other than loopback
  needs ``--allowed-hosts``.
* A body in UTF-16 or UTF-32 is refused (422) before anything reads it, uncharged.
* A key holding ``#`` or whitespace stops the start, naming its line; one rule for the
  key headers (``X-API-Key`` or ``Authorization: Bearer``), whatever else is sent.
* A password in ``--ledger`` is refused, naming the ways that keep it off the command
  line; ``--ledger-file`` (mode 0600) is the one the command takes.
* A squatted ``$TMPDIR/skprivpred-<uid>`` no longer stops the start (the metrics
  directory is a fresh ``mkdtemp``).
* A string where the public schema says number is refused (422), uncharged.
* When a client's quota and the global budget both bind, the 429 names the smaller and
  its ``remaining_rows`` is what a retry gets.
"""

from __future__ import annotations

import http.client
import json
import os
import stat
from pathlib import Path

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from test_serving import (
    EPSILON,
    KEY_A,
    KEY_B,
    _public_schema_model,
    _run_command,
    fitted_model,
    write_key_file,
)

from skprivpred import PrivacyAccountant, SubsampleAggregateClassifier
from skprivpred.serving import save_model
from skprivpred.serving._clients import parse_keys

pytest.importorskip("uvicorn")
pytest.importorskip("starlette")

JSON = {"Content-Type": "application/json"}
ROW = {"rows": [[0.1, -0.2, 0.3]]}


def send(service, method: str, path: str, body: bytes | None, headers: list[tuple[str, str]]):
    """One request with exactly ``headers`` (repeated ones too): (status, headers, body)."""
    conn = http.client.HTTPConnection("127.0.0.1", service.port, timeout=30)
    try:
        names = {name.lower() for name, _ in headers}
        conn.putrequest(method, path, skip_host="host" in names, skip_accept_encoding=True)
        for name, value in headers:
            conn.putheader(name, value)
        if body is not None:
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        response = conn.getresponse()
        return response.status, response.getheaders(), response.read()
    finally:
        conn.close()


# -- item 1: a web page ----------------------------------------------------------------------------


def _starlette_accepts(host: str, allowed: list[str]) -> bool:
    """Whether this Starlette's TrustedHostMiddleware accepts ``host`` for ``allowed``.

    Starlette before 1.7 reads an IPv6 literal's ``[`` as the host name, and before
    1.10 compares names case-sensitively: both refuse (fail closed). The tests expect
    what the installed Starlette does for those two cases, and 200 elsewhere.
    """
    import asyncio

    from starlette.middleware.trustedhost import TrustedHostMiddleware

    statuses = []

    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def send(message):
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    async def receive():
        return {"type": "http.request", "body": b""}

    scope = {
        "type": "http",
        "method": "GET",
        "path": "/",
        "query_string": b"",
        "root_path": "",
        "scheme": "http",
        "server": ("127.0.0.1", 80),
        "headers": [(b"host", host.encode())],
    }
    middleware = TrustedHostMiddleware(app, allowed_hosts=allowed, www_redirect=False)
    asyncio.run(middleware(scope, receive, send))
    return statuses == [200]


def test_a_foreign_host_or_a_body_not_declared_json_is_refused_uncharged(tmp_path, start):
    model, acc = fitted_model(tmp_path, cap_rows=100)
    service = start(model)  # no keys, on loopback: what the docs allow
    body = json.dumps(ROW).encode()
    here = f"127.0.0.1:{service.port}"
    cases = [
        # The red team's request: a rebound name and a page's no-cors content type.
        ([("Host", "rebind.attacker.example"), ("Content-Type", "text/plain")], 400),
        ([("Host", f"rebind.attacker.example:{service.port}"), *JSON.items()], 400),
        ([("Host", here), ("Content-Type", "text/plain")], 415),
        ([("Host", here), ("Content-Type", "text/plain;charset=UTF-8")], 415),
        ([("Host", here), ("Content-Type", "application/x-www-form-urlencoded")], 415),
        ([("Host", here), ("Content-Type", "multipart/form-data; boundary=x")], 415),
        ([("Host", here)], 415),  # no Content-Type at all
        ([("Host", here), ("Content-Type", "application/json; charset=utf-16")], 415),
        ([("Host", here), ("Content-Type", "application/json"), *JSON.items()], 415),
    ]
    for headers, expected in cases:
        status, response_headers, text = send(service, "POST", "/predict", body, headers)
        assert status == expected, (headers, text)
    assert acc.queries_answered == 0 and len(acc.history()) == 0
    # Every route checks the Host; the loopback names and the bound address are allowed.
    assert send(service, "GET", "/health", None, [("Host", "rebind.attacker.example")])[0] == 400
    answered = 0
    ipv6 = f"[::1]:{service.port}"
    hosts = [here, f"localhost:{service.port}", "127.0.0.1"]
    if _starlette_accepts(ipv6, ["::1", "[::1]"]):
        hosts.append(ipv6)
    else:  # an older Starlette refuses it: fail closed, uncharged
        status = send(service, "POST", "/predict", body, [("Host", ipv6), *JSON.items()])[0]
        assert status == 400
    for host in hosts:
        for content_type in ("application/json", "application/json; charset=utf-8"):
            headers = [("Host", host), ("Content-Type", content_type)]
            status, _, text = send(service, "POST", "/predict", body, headers)
            assert status == 200, (host, content_type, text)
            answered += 1
    assert acc.queries_answered == answered
    # No CORS header, on an answer, a refusal or a preflight.
    origin = ("Origin", "http://rebind.attacker.example")
    for method, headers, body_ in [
        ("POST", [("Host", here), origin, *JSON.items()], body),
        ("POST", [("Host", here), origin, ("Content-Type", "text/plain")], body),
        ("OPTIONS", [("Host", here), origin, ("Access-Control-Request-Method", "POST")], None),
        ("GET", [("Host", here), origin], None),
    ]:
        status, response_headers, _ = send(service, method, "/predict", body_, headers)
        assert not [n for n, _ in response_headers if n.lower().startswith("access-control")]
    assert acc.queries_answered == answered + 1


def test_allowed_hosts_replace_the_default_and_a_public_host_needs_them(tmp_path, start):
    model, acc = fitted_model(tmp_path, cap_rows=100)
    from skprivpred.serving._app import is_loopback

    # Binding anything but loopback without naming the hosts stops the command at once
    # (tried with documentation addresses, TEST-NET, which no interface here has: even a
    # command that did not refuse could not listen on them).
    assert not any(map(is_loopback, ("0.0.0.0", "::", "192.0.2.7", "[2001:db8::1]", "example")))
    assert all(map(is_loopback, ("127.0.0.1", "127.3.2.1", "::1", "[::1]", "localhost")))
    for host in ("192.0.2.7", "203.0.113.9", "2001:db8::1"):
        done = _run_command(str(model), "--host", host)
        assert done.returncode == 2 and "--allowed-hosts" in done.stderr, done.stderr
        assert "DNS rebinding" in done.stderr
    for bad in ("*", "api.example.com:8000", "api.*.com"):
        done = _run_command(str(model), "--allowed-hosts", bad)
        assert done.returncode == 2 and "--allowed-hosts" in done.stderr, (bad, done.stderr)
    service = start(model, "--allowed-hosts", "api.example.com,127.0.0.1")
    body = json.dumps(ROW).encode()
    for host, expected in [
        ("api.example.com", 200),
        (f"api.example.com:{service.port}", 200),
        (
            "API.Example.COM",
            200 if _starlette_accepts("API.Example.COM", ["api.example.com"]) else 400,
        ),
        ("localhost", 400),  # no longer a default once the hosts are named
        ("www.api.example.com", 400),
        ("api.example.com.attacker.example", 400),
    ]:
        status, headers, text = send(
            service, "POST", "/predict", body, [("Host", host), *JSON.items()]
        )
        assert status == expected, (host, text)
        assert not any(name.lower() == "location" for name, _ in headers)  # no redirect
    assert acc.queries_answered == 2 + _starlette_accepts("API.Example.COM", ["api.example.com"])


# -- item 2: UTF-8 only ---------------------------------------------------------------------------
def test_bodies_in_utf16_or_utf32_are_refused_before_anything_reads_them(tmp_path, start):
    model, acc = fitted_model(tmp_path, cap_rows=100)
    service = start(model)
    text = '{"rows": [[true, false, 0.3]]}'
    numbers = json.dumps(ROW)
    for encoding in ("utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le", "utf-8-sig"):
        for body in (text, numbers):
            status, payload = service.request(
                "POST", "/predict", raw=body.encode(encoding), headers=JSON
            )
            assert status == 422, (encoding, body, payload)
            assert "Traceback" not in json.dumps(payload)
    # In UTF-8, true and false are refused, and numbers answered.
    assert service.request("POST", "/predict", raw=text.encode(), headers=JSON)[0] == 422
    assert acc.queries_answered == 0 and len(acc.history()) == 0
    assert service.request("POST", "/predict", raw=numbers.encode(), headers=JSON)[0] == 200
    assert acc.queries_answered == 1


# -- item 3: keys ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "line",
    [
        "alpha:0123456789abcdef#secretsuffix",
        "alpha:0123456789abcdef # a trailing comment",
        "alpha:0123456789abcdef secretsuffix",
        "alpha:0123456789abcdef\tsecretsuffix",
    ],
)
def test_a_key_holding_a_hash_or_whitespace_stops_the_start_naming_its_line(tmp_path, line):
    text = f"# our clients\n\n{line}\nbeta:{KEY_B}\n"
    with pytest.raises(ValueError, match="line 3: the key of client 'alpha' holds '#'") as info:
        parse_keys(text, "keys.txt")
    assert "0123456789abcdef" not in str(info.value) and "secret" not in str(info.value)
    model, _ = fitted_model(tmp_path, cap_rows=10)
    keys = tmp_path / "keys.txt"
    write_key_file(keys, text)
    done = _run_command(str(model), "--api-keys", str(keys))
    assert done.returncode == 2 and "line 3" in done.stderr and "Traceback" not in done.stderr
    assert "0123456789abcdef" not in done.stderr
    done = _run_command(
        str(model), env={"SKPRIVPRED_API_KEYS": f"beta:{KEY_B},{line.replace('#', ' #')}"}
    )
    assert done.returncode == 2 and "SKPRIVPRED_API_KEYS, line 1" in done.stderr, done.stderr


def test_comments_start_lines_only_and_admin_lines_still_parse():
    text = f"  # a comment, indented\nalpha:{KEY_A}\n# beta:{KEY_B}\nadmin:ops:{KEY_B}\n"
    assert parse_keys(text, "keys.txt") == {"alpha": KEY_A, "admin:ops": KEY_B}
    assert parse_keys(f"alpha:{KEY_A},beta:{KEY_B}", "env") == {"alpha": KEY_A, "beta": KEY_B}


def test_one_rule_for_the_key_headers(tmp_path, start):
    model, acc = fitted_model(tmp_path, cap_rows=100)
    keys = tmp_path / "keys.txt"
    write_key_file(keys, f"alpha:{KEY_A}\nbeta:{KEY_B}\n")
    service = start(model, "--api-keys", str(keys))
    body = json.dumps(ROW).encode()
    base = [("Host", f"127.0.0.1:{service.port}"), *JSON.items()]
    named = ("X-API-Key", KEY_A)
    cases = [
        ([named, ("Authorization", "Basic YWxpY2U6c2VjcmV0")], 401),  # a proxy's Basic
        ([named, ("Authorization", "Bearer")], 401),  # a bare Bearer
        ([named, ("Authorization", "Bearer ")], 401),
        ([named, ("Authorization", "Digest username=alpha")], 401),
        ([named, ("Authorization", "Bearer wrong-key-0123456789")], 401),  # two that disagree
        ([named, ("Authorization", f"Bearer {KEY_B}")], 401),  # two valid keys that disagree
        ([named, named], 400),  # a repeated key header
        ([("Authorization", f"Bearer {KEY_A}"), ("Authorization", f"Bearer {KEY_A}")], 400),
        ([("Authorization", f"Basic {KEY_A}")], 401),
        ([("X-API-Key", "wrong-key-0123456789abcdef")], 401),
        ([], 401),
    ]
    for headers, expected in cases:
        status, _, text = send(service, "POST", "/predict", body, [*base, *headers])
        assert status == expected, (headers, text)
        payload = json.loads(text)
        assert KEY_A not in text.decode() and "error" in payload
        # The same rule on every route that needs a key.
        status, _, _ = send(service, "GET", "/budget", None, [*base, *headers])
        assert status == expected, ("/budget", headers)
    assert acc.queries_answered == 0 and len(acc.history()) == 0
    for headers in (
        [named],
        [("Authorization", f"Bearer {KEY_A}")],
        [("Authorization", f"bearer {KEY_A}")],
        [named, ("Authorization", f"Bearer {KEY_A}")],  # both, the same key
    ):
        status, _, text = send(service, "POST", "/predict", body, [*base, *headers])
        assert status == 200, (headers, text)
    assert acc.queries_answered == 4


# -- item 4 (command-line half): no password on the command line -------------------------------
@pytest.mark.parametrize(
    "url",
    [
        "postgresql://ledger:hunter2secret@127.0.0.1:5/db",
        "postgresql://:hunter2secret@127.0.0.1:5/db",
        "postgres://ledger:hunter2secret@/db?host=/run/postgresql",
        "postgresql://ledger@127.0.0.1:5/db?password=hunter2secret",
        "postgresql://ledger@127.0.0.1:5/db?sslmode=require&sslpassword=hunter2secret",
        "postgresql://ledger@127.0.0.1:5/db?PASSWORD=hunter2secret",
        "postgresql://ledger@127.0.0.1:5/db?pass%77ord=hunter2secret",
        "postgresql://ledger@127.0.0.1:5?password=hunter2secret",
    ],
)
def test_a_password_in_the_ledger_url_on_the_command_line_is_refused(tmp_path, url):
    model, _ = fitted_model(tmp_path, cap_rows=10)
    done = _run_command(str(model), "--ledger", url)
    assert done.returncode == 2, done.stderr
    for way in ("PGPASSFILE", "~/.pgpass", "PGPASSWORD", "--ledger-file", "/proc/PID/cmdline"):
        assert way in done.stderr, (way, done.stderr)
    assert "hunter2secret" not in done.stderr and "Traceback" not in done.stderr


def test_a_ledger_url_without_a_password_is_not_refused_for_one():
    from skprivpred.serving.__main__ import password_in_address

    for url in (
        "postgresql://ledger@127.0.0.1:5432/db",
        "postgresql://127.0.0.1/db?passfile=/home/me/.pgpass&sslmode=require",
        "postgresql:///db?host=/run/postgresql",
        "sqlite:////var/lib/budget.db",
        "/var/lib/budget:db",
    ):
        assert password_in_address(url) is None, url


def test_the_ledger_file_is_taken_only_when_no_one_else_can_read_it(tmp_path, start):
    model, acc = fitted_model(tmp_path, cap_rows=10)
    acc.charge(4, EPSILON)
    moved = tmp_path / "mounted" / "budget.db"
    moved.parent.mkdir()
    for suffix in ("", "-wal", "-shm"):
        if (tmp_path / f"budget.db{suffix}").exists():
            os.replace(tmp_path / f"budget.db{suffix}", moved.parent / f"budget.db{suffix}")
    ledger_file = tmp_path / "ledger.url"
    ledger_file.write_text(f"# the budget, moved\n{moved}\n")
    for mode in (0o644, 0o640, 0o604, 0o660):
        os.chmod(ledger_file, mode)
        done = _run_command(str(model), "--ledger-file", str(ledger_file))
        assert done.returncode == 2 and "chmod 600" in done.stderr, (oct(mode), done.stderr)
    done = _run_command(str(model), "--ledger-file", str(ledger_file), "--ledger", str(moved))
    assert done.returncode == 2 and "not both" in done.stderr
    os.chmod(ledger_file, 0o600)
    assert stat.S_IMODE(ledger_file.stat().st_mode) == 0o600
    service = start(model, "--ledger-file", str(ledger_file))
    status, budget = service.request("GET", "/budget")
    assert status == 200 and budget["queries_answered"] == 4
    assert service.request("POST", "/predict", {"rows": [[0.0, 0.0, 0.0]] * 6})[0] == 200
    assert service.request("POST", "/predict", ROW)[0] == 429
    assert (
        PrivacyAccountant(epsilon=10 * EPSILON, ledger=str(moved), name="test").queries_answered
        == 10
    )


def test_a_postgres_password_read_from_the_ledger_file_stays_off_the_command_line(
    tmp_path, start, postgres_url
):
    from urllib.parse import urlsplit, urlunsplit

    # The fixture's server trusts every local connection: any password is accepted.
    parts = urlsplit(postgres_url)
    host = parts.hostname + (f":{parts.port}" if parts.port else "")
    user = parts.username or "postgres"
    secret_url = urlunsplit(parts._replace(netloc=f"{user}:pw-hunter2secret@{host}"))
    # The model names the server without a password; the file gives it with one.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    budget = PrivacyAccountant(epsilon=10 * EPSILON, ledger=postgres_url, name="pg-ledger-file")
    clf = SubsampleAggregateClassifier(
        LogisticRegression(), epsilon=EPSILON, n_teachers=8, classes=[0, 1], accountant=budget
    ).fit(X, (X[:, 0] > 0).astype(int))
    model = tmp_path / "model.skops"
    save_model(clf, model)
    ledger_file = tmp_path / "ledger.url"
    write_key_file(ledger_file, secret_url + "\n")  # mode 0600
    service = start(model, "--ledger-file", str(ledger_file))
    assert service.request("POST", "/predict", ROW)[0] == 200
    assert budget.queries_answered == 1
    for pid in [service.proc.pid, *service.workers()]:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        assert b"hunter2secret" not in cmdline
    assert "hunter2secret" not in service.log.read_text()


# -- item 7 (metrics half): a squatted default directory ------------------------------------------
def test_a_squatted_temporary_directory_does_not_stop_the_start(tmp_path, start):
    from test_service_files import _as_another_user

    if os.geteuid() != 0:
        pytest.skip("a directory like /tmp and a second user need root")
    import shutil
    import tempfile

    shared = Path(tempfile.mkdtemp(prefix="skprivpred-shared-", dir="/tmp"))
    try:
        os.chmod(shared, 0o1777)
        squatted = shared / f"skprivpred-{os.getuid()}"
        # Another local user takes the name the metrics directory used to have, first.
        _as_another_user("mkdir", "-m", "0777", str(squatted))
        model, acc = fitted_model(tmp_path, cap_rows=10)
        service = start(model, env={"TMPDIR": str(shared)})
        assert service.request("POST", "/predict", ROW)[0] == 200
        status, text = service.request_raw("GET", "/metrics")[::2]
        assert status in (200, 401)
        created = [p for p in shared.iterdir() if p.name.startswith("skprivpred-metrics-")]
        assert len(created) == 1
        info = created[0].stat()
        assert info.st_uid == os.getuid() and stat.S_IMODE(info.st_mode) == 0o700
        assert os.listdir(squatted) == []  # left as it was
        service.stop()
        assert not created[0].exists()  # removed when the service stops
    finally:
        shutil.rmtree(shared, ignore_errors=True)


# -- item 8: strings where the schema says number -----------------------------------------------
def test_strings_where_the_schema_says_number_are_refused_uncharged(tmp_path, start):
    path, acc = _public_schema_model(tmp_path)
    service = start(path)
    good = {"age": 30, "hours": 40.0, "job": "nurse"}
    for record in (
        {**good, "age": "30"},
        {**good, "hours": "40.0"},
        {**good, "age": "1e1"},
        {**good, "age": " 30"},
    ):
        status, body = service.request("POST", "/predict", {"records": [good, record]})
        assert status == 422, (record, body)
        column = next(k for k in record if record[k] != good[k])
        assert body["column"] == column and "number" in body["error"]
    assert acc.queries_answered == 0 and len(acc.history()) == 0
    assert service.request("POST", "/predict", {"records": [good]})[0] == 200
    assert acc.queries_answered == 1
    # Rows are numbers, always: a numeric model without a schema, too.
    rows_dir = tmp_path / "rows"
    rows_dir.mkdir()
    model, rows_acc = fitted_model(rows_dir, cap_rows=10)
    rows_service = start(model)
    for row in (["1", 0.2, 0.3], [0.1, "0.2", 0.3], [0.1, 0.2, "nan"], [0.1, 0.2, [0.3]]):
        status, body = rows_service.request("POST", "/predict", {"rows": [[0.0, 0.0, 0.0], row]})
        assert status == 422, (row, body)
    assert rows_acc.queries_answered == 0 and len(rows_acc.history()) == 0
    assert rows_service.request("POST", "/predict", {"rows": [[1, 0.2, -3]]})[0] == 200


# -- issue 51 item 5: the binding limit ------------------------------------------------------
def test_a_refusal_states_the_binding_limit_and_rows_a_retry_gets(tmp_path, start):
    model, acc = fitted_model(tmp_path, cap_rows=10)
    keys = tmp_path / "keys.txt"
    write_key_file(keys, f"alpha:{KEY_A}\nbeta:{KEY_B}\n")
    service = start(model, "--api-keys", str(keys), "--quota-epsilon", repr(8 * EPSILON))
    alpha, beta = {"X-API-Key": KEY_A}, {"X-API-Key": KEY_B}
    rows = [[0.1, -0.2, 0.3]]
    assert service.request("POST", "/predict", {"rows": rows * 6}, alpha)[0] == 200
    # alpha: 2 rows of quota left; the budget: 4. The case: 5 asked.
    status, refusal = service.request("POST", "/predict", {"rows": rows * 5}, alpha)
    assert status == 429 and refusal["remaining_rows"] == 2 and refusal["asked_rows"] == 5
    assert refusal["binding_limit"] == "quota" and refusal["client"] == "alpha"
    assert refusal["error"] == (
        "this client's quota has 2 rows left, fewer than the 5 asked; nothing was charged."
    )
    status, refusal = service.request("POST", "/predict", {"rows": rows * 3}, alpha)
    assert status == 429 and refusal["remaining_rows"] == 2
    assert acc.queries_answered == 6
    # The retry with remaining_rows is answered.
    assert service.request("POST", "/predict", {"rows": rows * 2}, alpha)[0] == 200
    # beta: 8 rows of quota; the budget: 2 left. The budget binds.
    status, refusal = service.request("POST", "/predict", {"rows": rows * 5}, beta)
    assert status == 429 and refusal["remaining_rows"] == 2
    assert refusal["binding_limit"] == "budget" and "client" not in refusal
    assert refusal["error"] == (
        "the privacy budget has 2 rows left, fewer than the 5 asked; nothing was charged."
    )
    assert service.request("POST", "/predict", {"rows": rows * 2}, beta)[0] == 200
    status, refusal = service.request("POST", "/predict", {"rows": rows}, alpha)
    assert status == 429 and refusal["remaining_rows"] == 0
    assert acc.queries_answered == 10
