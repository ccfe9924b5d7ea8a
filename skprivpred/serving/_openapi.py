"""``GET /openapi.json``: an OpenAPI 3.1 description of the service, for generating clients.

Every endpoint's request and response bodies, the error bodies included. The
columns of a query come from public information only (:mod:`._columns`): the
column names the model was fitted with and, when its input goes through a
public preprocessor (:func:`skprivpred.preprocessing.public_preprocessor`:
public category lists, their markers of a missing value, numeric columns),
their types, the values the service answers. Nothing learned from the rows
appears: no category that an encoder fitted on the data found, no label set
read from ``y``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import is_classifier, is_regressor

from ._columns import categorical_columns, public_columns
from ._model import final_step, releases_at_fit

__all__ = ["openapi_document", "public_columns"]


def _jsonable_list(values: Any) -> list:
    return [v.item() if isinstance(v, np.generic) else v for v in np.asarray(values).tolist()]


def _prediction_schema(estimator: Any) -> dict:
    final = final_step(estimator)
    if is_regressor(final):
        return {"type": "number"}
    classes = final.get_params().get("classes") if hasattr(final, "get_params") else None
    if is_classifier(final) and classes is not None:  # a public label set, never read from y
        return {"enum": _jsonable_list(classes)}
    return {"type": ["number", "string", "integer"]}


def _error(description: str, extra: dict | None = None) -> dict:
    properties: dict = {"error": {"type": "string", "description": "What went wrong, in words."}}
    properties.update(extra or {})
    return {
        "description": description,
        "content": {
            "application/json": {
                "schema": {"type": "object", "required": ["error"], "properties": properties}
            }
        },
    }


def _json(description: str, schema: dict) -> dict:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _text(description: str, media_type: str) -> dict:
    return {"description": description, "content": {media_type: {"schema": {"type": "string"}}}}


def openapi_document(
    estimator: Any,
    *,
    version: str,
    max_rows: int,
    max_body_bytes: int,
    keys_required: bool,
    metrics_public: bool,
    quotas: bool = False,
    unknown_categories: str = "refuse",
) -> dict:
    """The OpenAPI 3.1 document of a service answering ``estimator``.

    Parameters
    ----------
    estimator : estimator
        The fitted served model.
    version : str
        The skprivpred version (the API's version).
    max_rows : int
        Rows per request at most.
    max_body_bytes : int
        Largest request body.
    keys_required : bool
        Whether requests need an API key.
    metrics_public : bool
        Whether ``/metrics`` answers without a key.
    quotas : bool, default=False
        Whether clients have quotas (``/budget`` and ``/predict`` then report
        the client's own figures too).
    unknown_categories : {"refuse", "encode-as-none"}, default="refuse"
        What the service does with a value outside a categorical column's
        public list. ``"refuse"``: the document lists exactly the values that
        are answered (the categories and the schema's markers of a missing
        value), and it describes rows only if a row of numbers can carry an
        allowed value in every categorical column.

    Returns
    -------
    dict
    """
    final = final_step(estimator)
    n_features = getattr(estimator, "n_features_in_", None)
    row: dict[str, Any] = {"type": "array", "items": {"type": "number"}}
    if n_features is not None:
        row.update(minItems=int(n_features), maxItems=int(n_features))
    categorical = categorical_columns(estimator) if unknown_categories == "refuse" else []
    if categorical and n_features is not None:
        # What a row can carry in each column: a number, or an allowed category as a number.
        items: list[dict] = [{"type": "number"} for _ in range(int(n_features))]
        for column in categorical:
            items[column.position] = {"enum": column.row_numbers()}
        row["prefixItems"] = items
    rows_request = {
        "type": "object",
        "required": ["rows"],
        "additionalProperties": False,
        "properties": {
            "rows": {
                "type": "array",
                "minItems": 1,
                "maxItems": max_rows,
                "items": row,
                "description": "One query per row, the features in the model's column order.",
            }
        },
    }
    request_variants = [{"$ref": "#/components/schemas/RowsRequest"}]
    schemas: dict[str, Any] = {"RowsRequest": rows_request}
    if any(not column.row_numbers() for column in categorical):
        # A categorical column whose values are text: no row of numbers is answered.
        request_variants, schemas = [], {}
    columns = public_columns(estimator, unknown_categories)
    if columns is not None:
        schemas["Record"] = {
            "type": "object",
            "required": list(columns),
            "additionalProperties": False,
            "properties": columns,
        }
        schemas["RecordsRequest"] = {
            "type": "object",
            "required": ["records"],
            "additionalProperties": False,
            "properties": {
                "records": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": max_rows,
                    "items": {"$ref": "#/components/schemas/Record"},
                    "description": "One query per record, by column name.",
                }
            },
        }
        request_variants.append({"$ref": "#/components/schemas/RecordsRequest"})
    guarantee = getattr(final, "privacy_guarantee_", None)
    refusal = {
        "asked_rows": {"type": "integer"},
        "remaining_rows": {
            "type": ["integer", "null"],
            "description": "The rows a retry can have now: the smallest of the limits that "
            "apply (the budget, the query horizon, the client's quota).",
        },
        "binding_limit": {
            "enum": ["budget", "horizon", "quota"],
            "description": "The limit that gives remaining_rows.",
        },
        "client": {"type": "string", "description": "Set when the client's quota binds."},
    }
    unauthorised = _error(
        "No API key, an unknown one, an Authorization header of another scheme than "
        "Bearer (or a Bearer with no key), or X-API-Key and Authorization: Bearer with "
        "different keys. Nothing was charged."
    )
    secured: dict[str, dict] = {}
    # Every route: a Host header that is not one of the service's names (--allowed-hosts)
    # gets Starlette's plain-text 400; a key header sent twice, a JSON one.
    bad_request = _error(
        "A Host header that is not one of the service's names (--allowed-hosts; a "
        "text/plain body), or, where a key is needed, an X-API-Key or Authorization header "
        "sent twice. Nothing was charged."
    )
    bad_request["content"]["text/plain"] = {"schema": {"type": "string"}}

    def responses(ok: dict, *codes: int, public: bool = False) -> dict:
        table = {"200": ok, "400": bad_request}
        if keys_required and not public:
            table["401"] = unauthorised
        for code in codes:
            table[str(code)] = {
                413: _error(f"A body over {max_body_bytes} bytes (refused unread)."),
                415: _error(
                    "The body is not declared 'Content-Type: application/json' (with no "
                    "parameter but charset=utf-8). Nothing was charged."
                ),
                422: _error(
                    "The body is not a valid query (not UTF-8, malformed or deeply nested "
                    f"JSON, more than {max_rows} rows, wrong columns, a value that is not a "
                    "finite number or allowed string, a string where the schema says number, "
                    "a category value outside the model's public schema, an integer outside "
                    "the 64-bit range). Nothing was charged.",
                    {
                        "asked_rows": {"type": "integer"},
                        "max_rows": {"type": "integer"},
                        "missing": {"type": "array", "items": {"type": "string"}},
                        "unexpected": {"type": "array", "items": {"type": "string"}},
                        "column": {
                            "type": "string",
                            "description": "The column whose value the schema does not allow.",
                        },
                        "value": {"description": "That value, as the request gave it."},
                        "allowed": {
                            "type": "array",
                            "description": "The values the column allows.",
                        },
                    },
                ),
                429: _error(
                    "The privacy budget, the client's quota or the query horizon is spent; "
                    "nothing was charged.",
                    refusal,
                ),
                500: _error("Internal error (nothing more is said)."),
                503: _error("The privacy ledger is unavailable; nothing was charged."),
            }[code]
        return table

    def operation(summary: str, ok: dict, *codes: int, public: bool = False, **more) -> dict:
        entry = {"summary": summary, "responses": responses(ok, *codes, public=public), **more}
        if public:
            entry["security"] = [{}]
        elif keys_required:
            entry["security"] = [{"bearer": []}, {"apiKey": []}]
        return entry

    client_figures = {
        "client_epsilon_spent": {
            "type": "number",
            "description": (
                "This client's quota: epsilon spent (basic composition of its answered rows)"
                " once this answer's charge was committed."
            ),
        },
        "client_epsilon_remaining": {
            "type": "number",
            "description": "This client's quota: epsilon left (the quota less what it spent).",
        },
    }
    budget_report = {
        "type": "object",
        "properties": {
            **{
                key: {"type": "number"}
                for key in (
                    "epsilon",
                    "delta",
                    "epsilon_spent",
                    "delta_spent",
                    "epsilon_remaining",
                    "epsilon_per_row",
                    "delta_per_row",
                )
            },
            "name": {"type": "string"},
            "composition": {"type": "string", "enum": ["basic", "advanced", "zcdp"]},
            "answers_charged": {
                "type": "boolean",
                "description": "Whether each answered row is charged (false: the model is "
                "the release made by fit, and its answers are free).",
            },
            "rows_remaining": {"type": ["integer", "null"]},
        },
    }
    budget_properties = budget_report["properties"]
    assert isinstance(budget_properties, dict)
    released = releases_at_fit(estimator)
    if released:
        budget_properties["fit_releases"] = {
            "type": "integer",
            "description": "Releases made by fit and charged to this budget (this model's "
            "own, and any other fit charged to it).",
        }
        budget_properties["note"] = {"type": "string"}
    else:
        budget_properties["queries_answered"] = {
            "type": "integer",
            "description": "Query rows charged to this budget.",
        }
    answer_required = ["predictions", "epsilon_spent"]
    answer_properties: dict[str, Any] = {
        "predictions": {"type": "array", "items": _prediction_schema(estimator)},
        "epsilon_spent": {
            "type": "number",
            "description": (
                "The budget's epsilon spent once this answer's charge was committed (this "
                "answer and every charge before it, by every client)."
            ),
        },
    }
    if quotas:
        answer_required += list(client_figures)
        answer_properties.update(client_figures)
        budget_report["required"] = list(client_figures)
        budget_properties.update(
            {
                "client_epsilon_spent": {
                    "type": "number",
                    "description": "This client's quota: epsilon spent.",
                },
                "client_epsilon_remaining": client_figures["client_epsilon_remaining"],
            }
        )
    metrics = operation(
        "Prometheus text format: request counters and latencies, and the budget read from the "
        "ledger (a client key also sees its own quota, an admin key every client's).",
        _text("The metrics.", "text/plain"),
        503,
    )
    if metrics_public and keys_required:
        metrics["security"] = [{}, {"bearer": []}, {"apiKey": []}]
        metrics["responses"]["401"] = _error("An unknown API key (no key: the global figures).")
    paths = {
        "/predict": {
            "post": operation(
                "Answers of the released model: post-processing of the one release made by "
                "fit, charged nothing."
                if released
                else "Private answers: one release per row, each charged before it is drawn.",
                _json(
                    "One answer per row, in order.",
                    {
                        "type": "object",
                        "required": answer_required,
                        "properties": answer_properties,
                    },
                ),
                413,
                415,
                422,
                429,
                500,
                503,
                requestBody={
                    "required": True,
                    "content": {"application/json": {"schema": {"oneOf": request_variants}}},
                },
            )
        },
        "/budget": {
            "get": operation(
                "The budget's spending, read from the ledger.",
                _json("The budget.", budget_report),
                503,
            )
        },
        "/guarantee": {
            "get": operation(
                "The estimator's privacy guarantee (privacy_guarantee_).",
                _json("The guarantee's fields.", {"type": "object"}),
            )
        },
        "/card": {
            "get": operation(
                "The model card (Markdown): guarantee, budget, estimator, what is secret.",
                _text("The card.", "text/markdown"),
            )
        },
        "/metrics": {"get": metrics},
        "/health": {
            "get": operation(
                "Whether the ledger answers.",
                _json(
                    "The ledger answers.",
                    {"type": "object", "properties": {"status": {"const": "ok"}}},
                ),
                503,
                public=True,
            )
        },
        "/openapi.json": {
            "get": operation(
                "This document (public information only: it needs no key, so that client "
                "generators can fetch it).",
                _json("OpenAPI 3.1.", {"type": "object"}),
                public=True,
            )
        },
    }
    components: dict[str, Any] = {"schemas": schemas}
    if keys_required:
        secured = {
            "bearer": {"type": "http", "scheme": "bearer"},
            "apiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
        }
        components["securitySchemes"] = secured
    return {
        "openapi": "3.1.0",
        "info": {
            "title": f"skprivpred service: {type(final).__name__}",
            "version": version,
            "description": (
                (
                    "A differentially private model: fit released it once, and its answers "
                    "are free post-processing of that release. "
                    if released
                    else "Differentially private answers of a fitted model, each answered row "
                    "one release, charged before it is drawn. "
                )
                + (f"Guarantee: {guarantee}." if guarantee is not None else "")
            ),
        },
        "paths": paths,
        "components": components,
    }
