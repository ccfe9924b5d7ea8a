"""Per-client quotas of the reference service, against the real service on 127.0.0.1.

What is checked (each was reproduced on the service before the fix):

* A quota is charged for every estimator whose answers are charged per row, whatever
  its family: a subsample-averaging regressor, a stable-ERM and an averaged-PSGD
  classifier (their quotas used to be ignored: 5 x 10 rows answered on a quota of 2).
* A request that the model refuses (HTTP 422) charges neither the global budget nor the
  client's quota; a request that the global budget refuses (429) charges no quota. Both
  are charged in one ledger transaction.
* The service refuses to start when a quota could never be charged (a model whose
  guarantee is not per row, a quota below the cost of one row).
* A 429 body says the same thing as its fields (``remaining_rows``), in the right
  number ("1 row").
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.pipeline import make_pipeline
from test_serving import write_key_file  # key files at mode 0600, as the guide writes them

from skprivpred import (
    AveragedPSGDClassifier,
    ExponentialMechanismClassifier,
    PrivacyAccountant,
    StableERMClassifier,
    SubsampleAggregateClassifier,
    SubsampleAverageRegressor,
)
from skprivpred.preprocessing import PublicScaler
from skprivpred.serving import save_model
from skprivpred.utils._testing import free_port

pytest.importorskip("uvicorn")
pytest.importorskip("starlette")

KEY_A, KEY_B = "alpha-key-0123456789abcdef", "beta-key-0123456789abcdef"
ALPHA, BETA = {"X-API-Key": KEY_A}, {"X-API-Key": KEY_B}


def keys_file(tmp_path: Path) -> Path:
    keys = tmp_path / "keys.txt"
    write_key_file(keys, f"alpha:{KEY_A}\nbeta:{KEY_B}\n")
    return keys


def saved(tmp_path: Path, estimator, X, y, budget_epsilon: float, name: str = "svc"):
    """Fit ``estimator`` under a budget in a SQLite file, save it; return (path, budget)."""
    budget = PrivacyAccountant(
        epsilon=budget_epsilon, ledger=str(tmp_path / "budget.db"), name=name
    )
    estimator.set_params(accountant=budget)
    path = tmp_path / "model.skops"
    save_model(estimator.fit(X, y), path)
    return path, budget


def quota_of(budget: PrivacyAccountant, client: str, share: float) -> PrivacyAccountant:
    """The client's quota as the service keeps it, in the budget's ledger."""
    return PrivacyAccountant(
        epsilon=share,
        ledger=budget.ledger_url,
        name=f"{budget.name}/client/{client}/epsilon={share!r}",
    )


def data(n: int = 300):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 3))
    return X, rng, (X[:, 0] + X[:, 1] > 0).astype(int)


# -- every per-row estimator's quota is kept ---------------------------------------------------
def regressor():
    return SubsampleAverageRegressor(Ridge(), epsilon=0.5, n_teachers=5, y_bounds=(-3.0, 3.0))


def stable_erm():
    return StableERMClassifier(epsilon=0.5, classes=[0, 1])


def averaged_psgd():
    return AveragedPSGDClassifier(epsilon=0.5, classes=[0, 1])


@pytest.mark.parametrize("make", [regressor, stable_erm, averaged_psgd])
def test_the_quota_is_kept_for_every_per_row_estimator(tmp_path, start, make):
    X, rng, labels = data()
    y = X[:, 0] + rng.normal(scale=0.1, size=X.shape[0]) if make is regressor else labels
    model, budget = saved(tmp_path, make(), X, y, budget_epsilon=100.0)
    service = start(model, "--api-keys", str(keys_file(tmp_path)), "--quota-epsilon", "1.0")
    ten = {"rows": X[:10].tolist()}
    # Quota 1.0 at 0.5 per row: two rows, whatever the request size. (Before: 5 x 10 rows.)
    statuses = [service.request("POST", "/predict", ten, ALPHA)[0] for _ in range(5)]
    assert statuses == [429] * 5
    status, answer = service.request("POST", "/predict", {"rows": X[:2].tolist()}, ALPHA)
    assert status == 200 and len(answer["predictions"]) == 2
    status, refusal = service.request("POST", "/predict", {"rows": X[:1].tolist()}, ALPHA)
    assert status == 429 and refusal["client"] == "alpha" and refusal["remaining_rows"] == 0
    assert refusal["error"] == "this client's quota is spent; nothing was charged."
    # beta has a quota of its own; the global budget paid for exactly the answered rows.
    assert service.request("POST", "/predict", {"rows": X[:2].tolist()}, BETA)[0] == 200
    assert budget.queries_answered == 4
    assert quota_of(budget, "alpha", 1.0).queries_answered == 2
    assert set(budget.history()["estimator"]) == {type(make()).__name__}


# -- a quota pays for the rows the global budget pays for, in one transaction -------------------
def test_a_request_the_model_refuses_charges_no_quota(tmp_path, start):
    X, _, y = data()
    frame = pd.DataFrame(X, columns=["age", "hours", "score"])
    budget = PrivacyAccountant(epsilon=1.0, ledger=str(tmp_path / "budget.db"), name="svc")
    model = tmp_path / "model.skops"
    # A public step declares the columns numeric (an inferred dtype would not be public).
    pipeline = make_pipeline(
        PublicScaler.from_bounds([-5.0] * 3, [5.0] * 3),
        SubsampleAggregateClassifier(
            LogisticRegression(), epsilon=0.01, n_teachers=8, classes=[0, 1], accountant=budget
        ),
    )
    save_model(pipeline.fit(frame, y), model)
    service = start(model, "--api-keys", str(keys_file(tmp_path)), "--quota-epsilon", "0.05")
    row = {"age": 0.1, "hours": 0.2, "score": -0.3}
    for _ in range(3):  # the public scaler cannot read a string: 422
        status, _ = service.request("POST", "/predict", {"records": [{**row, "age": "x"}]}, ALPHA)
        assert status == 422
    quota = quota_of(budget, "alpha", 0.05)
    assert quota.queries_answered == 0 and budget.queries_answered == 0  # (before: 3 and 0)
    # The whole quota (5 rows) is still there.
    status, answer = service.request("POST", "/predict", {"records": [row] * 5}, ALPHA)
    assert status == 200 and len(answer["predictions"]) == 5
    assert quota.queries_answered == budget.queries_answered == 5
    journal = quota.history()
    assert list(journal["rows"]) == [5] and list(journal["estimator"]) == [
        "SubsampleAggregateClassifier"
    ]


def test_a_request_the_global_budget_refuses_charges_no_quota(tmp_path, start):
    X, _, y = data()
    clf = SubsampleAggregateClassifier(
        LogisticRegression(), epsilon=0.1, n_teachers=10, classes=[0, 1]
    )
    model, budget = saved(tmp_path, clf, X, y, budget_epsilon=1.2)  # 12 rows in all
    service = start(model, "--api-keys", str(keys_file(tmp_path)), "--quota-epsilon", "5.0")
    assert service.request("POST", "/predict", {"rows": X[:10].tolist()}, ALPHA)[0] == 200
    status, refusal = service.request("POST", "/predict", {"rows": X[:10].tolist()}, BETA)
    assert status == 429 and "client" not in refusal
    # The body says what its fields say (before: "the privacy budget is spent." with 2 rows).
    assert refusal["remaining_rows"] == 2 and refusal["asked_rows"] == 10
    assert refusal["error"] == (
        "the privacy budget has 2 rows left, fewer than the 10 asked; nothing was charged."
    )
    assert quota_of(budget, "beta", 5.0).queries_answered == 0
    assert service.request("POST", "/predict", {"rows": X[:1].tolist()}, BETA)[0] == 200
    status, refusal = service.request("POST", "/predict", {"rows": X[:2].tolist()}, BETA)
    assert status == 429 and refusal["remaining_rows"] == 1
    assert refusal["error"].startswith("the privacy budget has 1 row left, fewer than the 2")
    assert service.request("POST", "/predict", {"rows": X[:1].tolist()}, ALPHA)[0] == 200
    status, refusal = service.request("POST", "/predict", {"rows": X[:1].tolist()}, ALPHA)
    assert status == 429 and refusal["error"] == "the privacy budget is spent; nothing was charged."
    assert quota_of(budget, "alpha", 5.0).queries_answered == 11
    assert quota_of(budget, "beta", 5.0).queries_answered == 1
    assert budget.queries_answered == 12


# -- quotas that could never be charged stop the start -----------------------------------------
def serve_command(model: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "skprivpred.serving", str(model), "--port", str(free_port())]
        + list(extra),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_command_refuses_quotas_it_cannot_charge(tmp_path):
    X, _, y = data()
    keys = str(keys_file(tmp_path))
    # A model released by fit: its answers are free post-processing, never charged per row.
    released = ExponentialMechanismClassifier(
        "thresholds", grid=np.linspace(-2.0, 2.0, 9), classes=[0, 1]
    )
    model, _ = saved(tmp_path, released, X, y, budget_epsilon=10.0, name="released")
    done = serve_command(model, "--api-keys", keys, "--quota-epsilon", "1.0")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "quota_epsilon=1.0 (--quota-epsilon) cannot be kept" in done.stderr
    assert "'one release made by fit'" in done.stderr
    # A quota below the cost of one row: nobody could ever be answered.
    per_row = SubsampleAggregateClassifier(
        LogisticRegression(), epsilon=0.5, n_teachers=10, classes=[0, 1]
    )
    model, _ = saved(tmp_path, per_row, X, y, budget_epsilon=10.0, name="per-row")
    done = serve_command(model, "--api-keys", keys, "--quota-epsilon", "0.1")
    assert done.returncode == 2 and "smaller than the epsilon of one answered row" in done.stderr
