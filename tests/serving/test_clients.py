"""The service as a client meets it: the guide's commands, its own quota, the schema, --help.

What is checked (each failed on the service before the fix):

* The deploying guide's shell blocks run as written, against the real service: the
  key file is created with mode 0600, the service starts with keys and quotas, and
  every ``curl`` example is answered (no ``401``), with the fields and the figures the
  guide shows. Only the deployment directory (``/srv/privacy``), the port and the
  Python interpreter are replaced.
* With quotas, ``/budget`` and the ``200`` answer of ``/predict`` give the client's own
  ``client_epsilon_spent`` and ``client_epsilon_remaining`` (besides the global
  ``epsilon_spent``), as the OpenAPI document describes them.
* ``/openapi.json`` answers without a key (it holds public information only);
  every other endpoint but ``/health`` still needs one.
* ``python -m skprivpred.serving --help`` shows every default (port 8000, host,
  workers, ...), and every option has help text.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from test_serving import _validator, write_key_file

from skprivpred import PrivacyAccountant, SubsampleAggregateClassifier
from skprivpred.serving import save_model
from skprivpred.utils._testing import free_port

pytest.importorskip("uvicorn")
pytest.importorskip("starlette")

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "user_guide" / "deploying.rst"
KEY_A, KEY_B = "alpha-key-0123456789abcdef", "beta-key-0123456789abcdef"


def code_blocks(path: Path, language: str) -> list[str]:
    """The ``.. code-block:: <language>`` blocks of an .rst page, dedented, in order."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks, i = [], 0
    while i < len(lines):
        if lines[i].strip() != f".. code-block:: {language}":
            i += 1
            continue
        indent = len(lines[i]) - len(lines[i].lstrip())
        j, body = i + 1, []
        while j < len(lines) and (
            not lines[j].strip() or len(lines[j]) - len(lines[j].lstrip()) > indent
        ):
            body.append(lines[j])
            j += 1
        width = min(len(b) - len(b.lstrip()) for b in body if b.strip())
        blocks.append("\n".join(b[width:] for b in body).strip("\n"))
        i = j
    return blocks


def commands_and_outputs(block: str) -> list[tuple[str, str]]:
    """Each command of a shell block with the output the guide shows below it (``# ...``)."""
    pairs: list[tuple[str, str]] = []
    for line in block.splitlines():
        if line.startswith("#"):
            if pairs:
                pairs[-1] = (pairs[-1][0], (pairs[-1][1] + " " + line[1:].strip()).strip())
        elif line.strip():
            pairs.append((line, ""))
    return pairs


def test_the_guides_commands_run_as_written(tmp_path):
    if shutil.which("curl") is None or shutil.which("openssl") is None:
        pytest.skip("the guide's commands need curl and openssl")
    port = free_port()
    directory = tmp_path / "srv"
    directory.mkdir(mode=0o700)

    def as_here(text: str) -> str:
        text = text.replace("/srv/privacy/", f"{directory}/").replace("8000", str(port))
        return re.sub(r"^python -m ", f"{sys.executable} -m ", text, flags=re.M)

    # The model, saved by the guide's own Python block.
    (save,) = [b for b in code_blocks(GUIDE, "python") if "save_model(clf.fit" in b]
    exec(compile(as_here(save), str(GUIDE), "exec"), {})  # noqa: S102 - the guide's code
    bash = code_blocks(GUIDE, "bash")
    (setup,) = [b for b in bash if "openssl rand" in b]
    (queries,) = [b for b in bash if "curl" in b and "/predict" in b]
    setup_steps = commands_and_outputs(setup)
    start = [c for c, _ in setup_steps if "-m skprivpred.serving" in c]
    assert len(start) == 1
    for command, shown in setup_steps:
        if command in start:
            continue
        done = subprocess.run(
            ["bash", "-c", as_here(command)], capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, (command, done.stderr)
        if shown:
            assert done.stdout.strip() == shown, command
    keys = directory / "keys.txt"
    assert stat.S_IMODE(keys.stat().st_mode) == 0o600  # created readable by its owner only
    log = open(tmp_path / "service.log", "wb")
    env = {k: v for k, v in os.environ.items() if k != "SKPRIVPRED_API_KEYS"}
    service = subprocess.Popen(
        ["bash", "-c", "exec " + as_here(start[0])], stdout=log, stderr=subprocess.STDOUT, env=env
    )
    try:
        script, marker = [], "@@skprivpred-end-of-command@@"
        steps = commands_and_outputs(queries)
        for command, _ in steps:
            script += [as_here(command), f"printf '\\n{marker}\\n'"]
        deadline = time.monotonic() + 120
        while True:  # until the service answers (it starts two workers)
            probe = subprocess.run(
                ["curl", "-s", f"localhost:{port}/health"], capture_output=True, text=True
            )
            if probe.stdout.strip() == '{"status":"ok"}':
                break
            assert service.poll() is None and time.monotonic() < deadline, (
                tmp_path / "service.log"
            ).read_text()
            time.sleep(0.3)
        done = subprocess.run(
            ["bash", "-c", "\n".join(script)], capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr
        outputs = done.stdout.split(marker)[:-1]
        assert len(outputs) == len(steps)
        for (command, shown), output in zip(steps, outputs):
            output = output.strip()
            if "curl" not in command:
                continue
            assert not output.startswith('{"error"'), (command, output)  # a 401's body
            assert output, command
            if shown.startswith("{"):
                answer = json.loads(output)
                for name, value in re.findall(r'"(\w+)":("?[\w.]+"?)', shown):
                    assert name in answer, (command, name)
                    if name != "predictions":
                        assert answer[name] == json.loads(value), (command, name)
        by_path = {
            re.search(r"localhost:\d+(/[\w.]+)", c).group(1): o
            for (c, _), o in zip(steps, outputs)
            if "curl" in c
        }
        assert by_path["/card"].lstrip().startswith("# Model card")
        assert "skprivpred_budget_epsilon_spent 0.5" in by_path["/metrics"]
        assert json.loads(by_path["/openapi.json"])["openapi"] == "3.1.0"
    finally:
        service.send_signal(2)  # SIGINT, as Ctrl-C
        service.wait(timeout=60)
        log.close()
    assert "Traceback" not in (tmp_path / "service.log").read_text()


def model_with_two_clients(tmp_path: Path, quota: float | None):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    y = (X[:, 0] > 0).astype(int)
    budget = PrivacyAccountant(epsilon=10.0, ledger=str(tmp_path / "budget.db"), name="c")
    clf = SubsampleAggregateClassifier(
        LogisticRegression(), epsilon=0.25, n_teachers=8, classes=[0, 1], accountant=budget
    ).fit(X, y)
    path = tmp_path / "model.skops"
    save_model(clf, path)
    keys = tmp_path / "keys.txt"
    write_key_file(keys, f"alice:{KEY_A}\nbob:{KEY_B}\n")
    extra = ["--api-keys", str(keys)]
    if quota is not None:
        extra += ["--quota-epsilon", str(quota)]
    return path, extra


def test_a_client_sees_its_own_quota_in_predict_and_budget(tmp_path, start):
    path, extra = model_with_two_clients(tmp_path, quota=2.0)
    service = start(path, *extra)
    alice, bob = {"X-API-Key": KEY_A}, {"X-API-Key": KEY_B}
    status, document = service.request("GET", "/openapi.json")  # no key needed
    assert status == 200
    answer_schema = document["paths"]["/predict"]["post"]["responses"]["200"]["content"][
        "application/json"
    ]["schema"]
    budget_schema = document["paths"]["/budget"]["get"]["responses"]["200"]["content"][
        "application/json"
    ]["schema"]
    for schema in (answer_schema, budget_schema):
        assert {"client_epsilon_spent", "client_epsilon_remaining"} <= set(schema["required"])
    status, body = service.request("POST", "/predict", {"rows": [[0.1, 0.2, 0.3]] * 4}, alice)
    assert status == 200
    assert (body["epsilon_spent"], body["client_epsilon_spent"]) == (1.0, 1.0)
    assert body["client_epsilon_remaining"] == 1.0
    _validator(document, answer_schema).validate(body)
    status, body = service.request("POST", "/predict", {"rows": [[0.1, 0.2, 0.3]]}, bob)
    assert status == 200
    # The global figure counts alice's rows too; bob's own counts his one row.
    assert body["epsilon_spent"] == 1.25
    assert (body["client_epsilon_spent"], body["client_epsilon_remaining"]) == (0.25, 1.75)
    for key, spent in ((alice, 1.0), (bob, 0.25)):
        status, report = service.request("GET", "/budget", headers=key)
        assert status == 200 and report["epsilon_spent"] == 1.25
        assert report["client_epsilon_spent"] == spent
        assert report["client_epsilon_remaining"] == 2.0 - spent
        _validator(document, budget_schema).validate(report)


def test_without_quotas_the_answers_have_no_client_figures(tmp_path, start):
    path, extra = model_with_two_clients(tmp_path, quota=None)
    service = start(path, *extra)
    status, body = service.request(
        "POST", "/predict", {"rows": [[0.1, 0.2, 0.3]]}, {"X-API-Key": KEY_A}
    )
    assert status == 200 and set(body) == {"predictions", "epsilon_spent"}
    status, report = service.request("GET", "/budget", headers={"X-API-Key": KEY_A})
    assert status == 200 and "client_epsilon_spent" not in report
    status, document = service.request("GET", "/openapi.json")
    answer_schema = document["paths"]["/predict"]["post"]["responses"]["200"]["content"][
        "application/json"
    ]["schema"]
    assert "client_epsilon_spent" not in answer_schema["properties"]


def test_only_health_and_the_schema_answer_without_a_key(tmp_path, start):
    path, extra = model_with_two_clients(tmp_path, quota=None)
    service = start(path, *extra)
    status, document = service.request("GET", "/openapi.json")
    assert status == 200 and document["openapi"] == "3.1.0"
    assert document["paths"]["/openapi.json"]["get"]["security"] == [{}]  # says so
    assert service.request("GET", "/health")[0] == 200
    for method, endpoint in (
        ("GET", "/budget"),
        ("GET", "/guarantee"),
        ("GET", "/card"),
        ("GET", "/metrics"),
        ("POST", "/predict"),
    ):
        status, _, _ = service.request_raw(method, endpoint, {"rows": [[0.1, 0.2, 0.3]]})
        assert status == 401, endpoint


def test_help_shows_every_default_and_every_option_has_help():
    from skprivpred.serving import __main__ as command

    done = subprocess.run(
        [sys.executable, "-m", "skprivpred.serving", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0
    text = " ".join(done.stdout.split())
    for phrase in (
        "--host HOST address to listen on (default: 127.0.0.1)",
        "--port PORT port to listen on (default: 8000)",
        "(default: 1)",  # workers
        "rows per request at most (default: 1000)",
        "largest request body, in bytes (default: 1000000)",
        "(default: info)",
    ):
        assert phrase in text, phrase
    # Every option has help text: argparse's own parser, as the command builds it.
    captured = {}

    class Stop(Exception):
        pass

    def capture(self, args=None, namespace=None):
        captured["parser"] = self
        raise Stop

    original = command.argparse.ArgumentParser.parse_args
    command.argparse.ArgumentParser.parse_args = capture
    try:
        with pytest.raises(Stop):
            command.main(["model.skops"])
    finally:
        command.argparse.ArgumentParser.parse_args = original
    actions = captured["parser"]._actions
    assert len(actions) > 15
    for action in actions:
        assert action.help, action.option_strings or action.dest
