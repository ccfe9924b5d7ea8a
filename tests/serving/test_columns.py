"""Misuse of the service that must not be silent (issue 41, items 5 to 8), on the real server.

* A category value outside the schema the model declared public is refused with 422
  before the charge, naming the column and the values it takes; the schema's own
  markers of a missing value (Adult's ``?``) are answered, and ``/openapi.json`` lists
  exactly the values that are answered. ``--unknown-categories=encode-as-none`` keeps
  the old behaviour (any other value encodes as none of the categories).
* A one-release model (its fit is the release) says so in ``/card``, ``/budget``,
  ``/guarantee`` and ``/openapi.json``; a per-query model says that each answer is one.
* ``--no-timing-defence`` warns once at start, however many workers.
* ``SIGTERM`` stops the service cleanly, and its default metrics directory goes with it.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_serving import EPSILON, fitted_model

from skprivpred.datasets import adult_schema

pytest.importorskip("uvicorn")
pytest.importorskip("starlette")

TIMING_OFF = "the timing defence is off (--no-timing-defence)"


# -- --no-timing-defence warns once; SIGTERM removes the default metrics directory --------------
@pytest.mark.parametrize("workers", [1, 2])
def test_sigterm_removes_the_metrics_directory_and_the_timing_warning_shows_once(
    tmp_path, service_factory, workers
):
    path, acc = fitted_model(tmp_path, 10)
    temporary = tmp_path / "tmp"
    temporary.mkdir(mode=0o700)
    service = service_factory(
        path, "--no-timing-defence", workers=workers, env={"TMPDIR": str(temporary)}
    )
    # The default directory: a fresh mkdtemp in the temporary directory, mode 0700.
    (metrics,) = temporary.glob("skprivpred-metrics-*")
    assert metrics.stat().st_uid == os.getuid() and (metrics.stat().st_mode & 0o777) == 0o700
    assert service.request("POST", "/predict", {"rows": [[0.0, 1.0, 2.0]]})[0] == 200
    assert metrics.is_dir() and any(metrics.glob("counter_*.db"))  # the default directory
    service.proc.send_signal(signal.SIGTERM)
    assert service.proc.wait(timeout=60) == 0  # a clean stop
    assert not metrics.exists(), sorted(p.name for p in metrics.iterdir())
    log = Path(service.log).read_text()
    assert log.count(TIMING_OFF) == 1, log  # once, from the command, not once per process
    assert acc.queries_answered == 1


# -- category values outside the public schema ----------------------------------------------------
def _schema_model(tmp_path: Path, schema: dict, cap_rows: int):
    """A pipeline (public_preprocessor(schema), private ensemble), saved; its accountant."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    from skprivpred import PrivacyAccountant, SubsampleAggregateClassifier
    from skprivpred.preprocessing import public_preprocessor
    from skprivpred.serving import save_model

    rng = np.random.default_rng(0)
    n = 400
    X = pd.DataFrame(
        {
            **{column: rng.uniform(0.0, 60.0, n) for column in schema["numeric"]},
            **{column: rng.choice(v, n) for column, v in schema["categorical"].items()},
        }
    )
    y = (X[next(iter(schema["numeric"]))] > 30).astype(int)
    acc = PrivacyAccountant(epsilon=cap_rows * EPSILON, ledger=str(tmp_path / "budget.db"))
    model = make_pipeline(
        public_preprocessor(schema),
        SubsampleAggregateClassifier(
            LogisticRegression(), epsilon=EPSILON, n_teachers=4, classes=[0, 1], accountant=acc
        ),
    ).fit(X, y)
    path = tmp_path / "model.skops"
    save_model(model, path)
    return path, acc, X


def _record(X: pd.DataFrame, **values) -> dict:
    return {**{k: (v.item() if hasattr(v, "item") else v) for k, v in X.iloc[0].items()}, **values}


WORKCLASS = adult_schema()["categorical"]["workclass"]


def test_a_category_outside_the_schema_is_refused_before_the_charge(tmp_path, service_factory):
    path, acc, X = _schema_model(tmp_path, adult_schema(), cap_rows=200)
    service = service_factory(path, workers=1)
    status, body = service.request(
        "POST", "/predict", {"records": [_record(X), _record(X, workclass="Privat")]}
    )
    assert status == 422, body
    allowed = ", ".join(repr(v) for v in WORKCLASS)
    assert body["error"] == (
        "record 1: 'Privat' is not a value that the model's public schema allows in the column "
        f"'workclass'; allowed: {allowed}, or '?' (a missing value). Nothing was charged."
    )
    assert body["column"] == "workclass" and body["value"] == "Privat"
    assert body["allowed"] == [*WORKCLASS, "?"]
    # Nothing charged: the ledger and /budget agree.
    assert acc.queries_answered == 0
    assert service.request("GET", "/budget")[1]["epsilon_spent"] == 0.0
    # A row of numbers cannot carry a category given as text.
    status, body = service.request("POST", "/predict", {"rows": [[1.0] * 14]})
    assert status == 422
    assert body["error"].startswith("row 0, number 7: 1.0 is not a value that the model's")
    assert body["error"].endswith(
        'A row holds numbers only: send "records" to give this column by name. 8 values of '
        "the request are outside the schema in all. Nothing was charged."
    )
    assert acc.queries_answered == 0
    # The schema's marker of a missing value is answered (and charged).
    status, body = service.request("POST", "/predict", {"records": [_record(X, workclass="?")]})
    assert status == 200 and len(body["predictions"]) == 1
    assert acc.queries_answered == 1


def test_the_openapi_enum_is_exactly_what_is_answered(tmp_path, service_factory):
    schema = adult_schema()
    path, acc, X = _schema_model(tmp_path, schema, cap_rows=300)
    service = service_factory(path, workers=1)
    status, document = service.request("GET", "/openapi.json")
    assert status == 200
    schemas = document["components"]["schemas"]
    # Adult's categories are text: no row of numbers is answered, so rows are not offered.
    assert "RowsRequest" not in schemas
    properties = schemas["Record"]["properties"]
    answered = 0
    for column, categories in schema["categorical"].items():
        listed = properties[column]["enum"]
        assert listed == [*categories, *schema.get("missing", {}).get(column, [])], column
        # Every listed value is answered ...
        records = [_record(X, **{column: value}) for value in listed]
        status, body = service.request("POST", "/predict", {"records": records})
        assert status == 200, (column, body)
        answered += len(records)
        # ... and a value that is not listed is refused.
        for unlisted in ("?" if "?" not in listed else "Unknown", listed[0].lower(), 3):
            status, body = service.request(
                "POST", "/predict", {"records": [_record(X, **{column: unlisted})]}
            )
            assert status == 422 and body["column"] == column, (column, unlisted, body)
    assert acc.queries_answered == answered
    assert set(properties["workclass"]["enum"]) == {*WORKCLASS, "?"}


def test_encode_as_none_answers_values_outside_the_schema(tmp_path, service_factory):
    path, acc, X = _schema_model(tmp_path, adult_schema(), cap_rows=20)
    service = service_factory(path, "--unknown-categories=encode-as-none", workers=1)
    status, body = service.request(
        "POST", "/predict", {"records": [_record(X, workclass="Privat")]}
    )
    assert status == 200 and len(body["predictions"]) == 1
    assert acc.queries_answered == 1
    assert service.request("POST", "/predict", {"rows": [[1.0] * 14]})[0] == 200
    assert acc.queries_answered == 2
    document = service.request("GET", "/openapi.json")[1]
    workclass = document["components"]["schemas"]["Record"]["properties"]["workclass"]
    assert "enum" not in workclass and workclass["examples"] == [*WORKCLASS, "?"]
    assert "RowsRequest" in document["components"]["schemas"]


def test_numeric_categories_are_checked_in_rows_too(tmp_path, service_factory):
    schema = {
        "numeric": {"age": {"scale": 100.0}},
        "categorical": {"grade": [1, 2, 3]},
        "missing": {"grade": [0]},
    }
    path, acc, _ = _schema_model(tmp_path, schema, cap_rows=20)
    service = service_factory(path, workers=1)
    document = service.request("GET", "/openapi.json")[1]
    document_rows = document["components"]["schemas"]["RowsRequest"]["properties"]["rows"]["items"]
    assert document_rows["prefixItems"] == [{"type": "number"}, {"enum": [1, 2, 3, 0]}]
    status, body = service.request("POST", "/predict", {"rows": [[30.0, 2], [30.0, 0.0]]})
    assert status == 200 and acc.queries_answered == 2
    status, body = service.request("POST", "/predict", {"rows": [[30.0, 2], [30.0, 2.5]]})
    assert status == 422 and acc.queries_answered == 2
    assert body["error"] == (
        "row 1, number 2: 2.5 is not a value that the model's public schema allows in the "
        "column 'grade'; allowed: 1, 2, 3, or 0 (a missing value). Nothing was charged."
    )
    status, body = service.request("POST", "/predict", {"records": [{"age": 30.0, "grade": 4}]})
    assert status == 422 and body["value"] == 4 and acc.queries_answered == 2


@pytest.mark.parametrize(
    "categories",
    [[["a", "1", "2.5"]], [[1, 2, 3]], [[1, 2], ["a", "b"]]],
    ids=["text", "numbers", "mixed"],
)
def test_the_check_accepts_exactly_what_the_encoder_encodes_or_the_schema_marks(categories):
    """A value passes iff the encoder gives it a category, or it is a declared marker."""
    from skprivpred.preprocessing import PublicOneHotEncoder
    from skprivpred.serving._columns import CategoricalColumn, first_refused

    names = [f"c{i}" for i in range(len(categories))]
    markers = [["?"] if i == 0 else [] for i in range(len(categories))]
    encoder = PublicOneHotEncoder(categories=categories, missing_values=markers)
    encoder.fit(pd.DataFrame({n: [c[0]] for n, c in zip(names, categories)}))
    as_text = all(isinstance(v, str) for c in categories for v in c)
    columns = [
        CategoricalColumn(n, i, list(c), m, as_text)
        for i, (n, c, m) in enumerate(zip(names, categories, markers))
    ]
    candidates = ["a", "b", "1", "2.5", "?", "x", 1, 1.0, 2, 2.5, 3, 4, -0.0]
    for value in candidates:
        for i, name in enumerate(names):
            row = {n: c[0] for n, c in zip(names, categories)} | {name: value}
            frame = pd.DataFrame.from_records([row], columns=names)
            start = sum(len(c) for c in categories[:i])
            block = encoder.transform(frame)[0, start : start + len(categories[i])]
            expected = block.sum() == 1 or value in markers[i]
            assert (first_refused(frame, columns) is None) == expected, (categories, name, value)


def test_markers_are_validated_and_reach_the_encoder():
    from skprivpred.preprocessing import PublicOneHotEncoder, public_preprocessor

    frame = pd.DataFrame({"c": ["a"]})
    with pytest.raises(ValueError, match="also categories"):
        PublicOneHotEncoder(categories=[["a", "?"]], missing_values=[["?"]]).fit(frame)
    with pytest.raises(ValueError, match="one list per column"):
        PublicOneHotEncoder(categories=[["a"]], missing_values=[["?"], []]).fit(frame)
    with pytest.raises(ValueError, match="a list of markers, got '\\?'"):
        PublicOneHotEncoder(categories=[["a"]], missing_values=["?"]).fit(frame)
    with pytest.raises(ValueError, match="not categorical"):
        public_preprocessor({"numeric": {"n": {}}, "missing": {"n": ["?"]}})
    transformer = public_preprocessor(adult_schema())
    encoder = dict((name, step) for name, step, _ in transformer.transformers)["categorical"]
    assert encoder.missing_values[0] == ["?"] and encoder.missing_values[1] == []
    rows = pd.DataFrame({"c": ["?", "a"]})
    marked = PublicOneHotEncoder(categories=[["a"]], missing_values=[["?"]]).fit(rows)
    assert marked.transform(rows).tolist() == [[0.0], [1.0]]  # a marker encodes as none


# -- a one-release model says what it is, everywhere ----------------------------------------------
def _one_release_model(tmp_path: Path):
    from skprivpred import PrivacyAccountant, SufficientStatisticClassifier
    from skprivpred.serving import save_model

    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 3))
    y = (X[:, 0] > 0).astype(int)
    y[:1000] = -1  # unlabelled public rows
    acc = PrivacyAccountant(epsilon=1.0, delta=1e-6, ledger=str(tmp_path / "budget.db"))
    path = tmp_path / "model.skops"
    save_model(SufficientStatisticClassifier(classes=[0, 1], accountant=acc).fit(X, y), path)
    return path, acc


def test_a_one_release_model_says_that_it_is_the_release(tmp_path, service_factory):
    path, acc = _one_release_model(tmp_path)
    service = service_factory(path, workers=1)
    status, body = service.request("POST", "/predict", {"rows": [[0.1, 0.2, 0.3]] * 5})
    assert status == 200 and len(body["predictions"]) == 5
    status, report = service.request("GET", "/budget")
    assert status == 200
    assert report["fit_releases"] == 1 and report["answers_charged"] is False
    assert "queries_answered" not in report  # the fit's release is not a query answered
    assert report["note"] == (
        "This model is the release: its fit was charged to this budget, once; its answers "
        "are free post-processing of that release and charge nothing."
    )
    assert report["epsilon_spent"] == acc.epsilon_spent  # the answers charged nothing
    status, card = service.request_raw("GET", "/card")[::2]
    card = card.decode()
    assert "never released" not in card
    assert (
        "This model is itself a differentially private release, made once by fit and charged "
        "to the budget then; its answers are free post-processing of the release and charge "
        "nothing." in card
    )
    assert "| Cost of one answer | nothing: answers are post-processing of the one release" in card
    assert "Every answer is charged to this budget" not in card
    assert "The model's release was charged to this budget, in its ledger, once" in card
    assert service.request("GET", "/guarantee")[1]["unit"] == "one release made by fit"
    document = service.request("GET", "/openapi.json")[1]
    assert document["info"]["description"].startswith(
        "A differentially private model: fit released it once, and its answers are free "
        "post-processing of that release."
    )
    assert document["paths"]["/predict"]["post"]["summary"].startswith(
        "Answers of the released model"
    )
    budget = document["paths"]["/budget"]["get"]["responses"]["200"]["content"]
    properties = budget["application/json"]["schema"]["properties"]
    assert "fit_releases" in properties and "queries_answered" not in properties


def test_a_per_query_model_says_that_each_answer_is_a_release(tmp_path, service_factory):
    path, acc = fitted_model(tmp_path, 10)
    service = service_factory(path, workers=1)
    assert service.request("POST", "/predict", {"rows": [[0.0, 1.0, 2.0]] * 3})[0] == 200
    status, report = service.request("GET", "/budget")
    assert report["queries_answered"] == 3 and report["answers_charged"] is True
    assert "fit_releases" not in report
    card = service.request_raw("GET", "/card")[2].decode()
    assert (
        "Every answer of this model is a differentially private release, charged to the "
        "budget before it is drawn; the model itself is never released." in card
    )
    assert "Every answer is charged to this budget" in card
    assert service.request("GET", "/guarantee")[1]["unit"] == "each answered query row"
    document = service.request("GET", "/openapi.json")[1]
    assert document["paths"]["/predict"]["post"]["summary"].startswith("Private answers")
