"""The service against its own ``/openapi.json``, tested by schemathesis (issue 50 item 9).

A tool no one here wrote generates requests for every operation of the real service
(``python -m skprivpred.serving``, two workers, API keys and per-client quotas, started
on 127.0.0.1 as the other serving tests start it), valid ones for every operation and
invalid ones for ``/predict``, a bounded number of each, and runs all of its checks on
every response: no server error, every status, content type, header and body as the
document says, invalid data refused with a 4xx (a row count over ``maxItems`` is 422:
413 is only for a body over its byte limit), valid data accepted. And every case is
checked against the ledger: nothing is charged without a 200, and every row of a 200
is charged, exactly.

The examples are derandomized (the same cases every run) and bounded, so that the test
finishes well within two minutes on two cores.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_serving import EPSILON, KEY_A, KEY_B, write_key_file

schemathesis = pytest.importorskip("schemathesis")
hypothesis = pytest.importorskip("hypothesis")

from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402

#: Cases generated per operation and mode (valid data for each operation; invalid data
#: for /predict, the one operation with a body).
EXAMPLES = 25


def _exercise(service, budget, n_examples: int = EXAMPLES) -> dict:
    """Run schemathesis on every operation of ``service``; check each case on the ledger."""
    base = f"http://127.0.0.1:{service.port}"
    schema = schemathesis.openapi.from_url(f"{base}/openapi.json")
    seen: dict = {"operations": set(), "statuses": {}, "answered": 0, "cases": 0}
    # Every operation but the document itself (which schemathesis leaves out).
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) == 6
    for operation in operations:
        modes = [schemathesis.GenerationMode.POSITIVE]
        if operation.path == "/predict":
            modes.append(schemathesis.GenerationMode.NEGATIVE)
        for mode in modes:

            @given(case=operation.as_strategy(generation_mode=mode))
            @settings(
                max_examples=n_examples,
                deadline=None,
                database=None,
                derandomize=True,
                phases=[Phase.explicit, Phase.generate],
                suppress_health_check=list(HealthCheck),
            )
            def run(case) -> None:
                before = budget.queries_answered
                response = case.call(base_url=base, headers={"X-API-Key": KEY_A})
                # Every check schemathesis has (some send further requests of their own).
                case.validate_response(response)
                charged = budget.queries_answered - before
                key = f"{case.operation.method.upper()} {case.operation.path}"
                status = response.status_code
                seen["operations"].add(key)
                seen["statuses"].setdefault(key, set()).add(status)
                seen["cases"] += 1
                if key == "POST /predict" and status == 200:
                    rows = len(response.json()["predictions"])
                    assert charged == rows, (charged, rows, case.body)
                    seen["answered"] += rows
                else:
                    assert charged == 0, (key, status, charged, case.body)

            run()
    return seen


def _typed_model(tmp_path: Path, cap_rows: int):
    """A model whose public schema types every column a number: it takes rows and records."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    from skprivpred import PrivacyAccountant, SubsampleAggregateClassifier
    from skprivpred.preprocessing import public_preprocessor
    from skprivpred.serving import save_model

    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(0, 10, size=(400, 3)), columns=["age", "hours", "score"])
    y = (X["age"] + X["hours"] > 0).astype(int)
    schema = {"numeric": {column: {"scale": 100.0} for column in X.columns}}
    budget = PrivacyAccountant(
        epsilon=cap_rows * EPSILON, ledger=str(tmp_path / "budget.db"), name="contract"
    )
    model = make_pipeline(
        public_preprocessor(schema),
        SubsampleAggregateClassifier(
            LogisticRegression(), epsilon=EPSILON, n_teachers=8, classes=[0, 1], accountant=budget
        ),
    ).fit(X, y)
    path = tmp_path / "model.skops"
    save_model(model, path)
    return path, budget


def test_schemathesis_finds_nothing_and_the_ledger_matches_every_case(tmp_path, service_factory):
    # Rows and records (every column typed a number by the public schema); a budget that
    # the generated requests spend (429s too); keys, an admin, a quota, two workers.
    model, budget = _typed_model(tmp_path, cap_rows=600)
    keys = tmp_path / "keys.txt"
    write_key_file(keys, f"alpha:{KEY_A}\nadmin:ops:{KEY_B}\n")
    options = ("--api-keys", str(keys), "--quota-epsilon", repr(500 * EPSILON))
    service = service_factory(model, *options, "--max-rows", "20", "--max-body-bytes", "20000")
    document = service.request("GET", "/openapi.json")[1]
    variants = document["paths"]["/predict"]["post"]["requestBody"]["content"]
    assert len(variants["application/json"]["schema"]["oneOf"]) == 2  # rows and records
    seen = _exercise(service, budget)
    assert seen["operations"] == {
        "POST /predict",
        "GET /budget",
        "GET /guarantee",
        "GET /card",
        "GET /metrics",
        "GET /health",
    }
    assert 200 in seen["statuses"]["POST /predict"], seen["statuses"]
    assert seen["statuses"]["POST /predict"] & {400, 401, 415, 422}, seen["statuses"]
    # The journal holds exactly the rows answered.
    history = budget.history()
    assert int(history["rows"].sum()) == seen["answered"] == budget.queries_answered
    assert budget._ledger.consistent(budget.name, budget._budget_id)
