"""
==================================================================
A service started and queried from Python
==================================================================

``python -m skprivpred.serving`` serves a saved model over HTTP: every answer
is charged to the model's budget before any noise is drawn, and a request that
would go past it is refused. This example saves a model, starts the service in
a subprocess on a free port of the loopback interface, asks it for answers and
for the budget, and stops it, whatever happens, in ``finally``.
"""

# %%
# Save a fitted model with its budget
# -----------------------------------
# The accountant's ledger is a SQLite file next to the model: the service
# charges that one budget, and survives restarts with it.
import json
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from sklearn.datasets import make_classification

from skprivpred import PrivacyAccountant, SubsampleAggregateClassifier
from skprivpred.serving import save_model

folder = Path(tempfile.mkdtemp(prefix="skprivpred-example-"))
X, y = make_classification(n_samples=3000, n_features=4, random_state=0)
budget = PrivacyAccountant(epsilon=3.0, ledger=folder / "budget.db", name="example")
model = SubsampleAggregateClassifier(epsilon=0.5, classes=[0, 1], accountant=budget)
save_model(model.fit(X, y), folder / "model.skops")


# %%
# Start the service on a free loopback port
# -----------------------------------------
# The operating system picks a free port; the service listens on 127.0.0.1
# only. ``/health`` answers once it is ready.
def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def call(method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        data=None if body is None else json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method=method,
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as refusal:  # a refusal is an answer too
        return refusal.code, json.loads(refusal.read())


port = free_port()
command = [sys.executable, "-m", "skprivpred.serving", str(folder / "model.skops")]
command += ["--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"]
service = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
try:
    deadline = time.monotonic() + 60
    while True:
        try:
            if call("GET", "/health")[0] == 200:
                break
        except OSError:
            pass  # not listening yet
        if service.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(service.stderr.read().decode() if service.poll() else "no start")
        time.sleep(0.2)

    # %%
    # Ask for answers, then for the budget
    # ------------------------------------
    # Each row costs 0.5 of the 3.0: four rows now, two more later, and the
    # seventh is refused before any noise is drawn.
    status, answer = call("POST", "/predict", {"rows": X[:4].tolist()})
    print(status, answer)
    status, answer = call("POST", "/predict", {"rows": X[4:6].tolist()})
    print(status, answer)
    status, refusal = call("POST", "/predict", {"rows": X[6:7].tolist()})
    print(status, refusal)
    status, state = call("GET", "/budget")
    print(status, {key: state[key] for key in ("epsilon", "epsilon_spent", "rows_remaining")})
finally:
    service.terminate()  # SIGTERM: the service stops as Ctrl-C stops it
    try:
        service.wait(timeout=30)
    except subprocess.TimeoutExpired:
        service.kill()
        service.wait()
    service.stderr.close()
print("service stopped:", service.returncode is not None)
