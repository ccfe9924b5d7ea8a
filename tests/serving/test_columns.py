"""The service's columns: category values outside the public schema, on the real server.

A category value outside the schema the model declared public is refused with 422 before
the charge, naming the column and the values it takes; the schema's own markers of a
missing value (Adult's ``?``) are answered, and ``/openapi.json`` lists exactly the values
that are answered. ``--unknown-categories=encode-as-none`` keeps the old behaviour (any other
value encodes as none of the categories). (Issue 41, items 5 to 8.)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_serving import EPSILON

from skprivpred.datasets import adult_schema

pytest.importorskip("uvicorn")
pytest.importorskip("starlette")


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
