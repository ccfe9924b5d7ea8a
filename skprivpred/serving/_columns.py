"""The input columns of a served model, from public information only, and what each accepts.

The names are the column names the model was fitted with. A column's type
comes from a public preprocessor at the model's input (the first step of the
served pipeline, or of the teachers' pipeline; every one of its transformers
public, as :func:`skprivpred.preprocessing.public_preprocessor` builds it): a
number for a :class:`~skprivpred.preprocessing.PublicScaler` column, and for a
:class:`~skprivpred.preprocessing.PublicOneHotEncoder` column its public
categories and the markers of a missing value that its schema declares
(``missing_values``: Adult's ``"?"``), which encode as none of the categories.
Any other column is a number or a string.

The service refuses a query whose categorical value is neither (``422``,
before anything is charged), unless the operator chose to have such values
encoded as none of the categories (``unknown_categories="encode-as-none"``).
The values are compared as the encoder compares them (as text when all its
category lists are text), so that a value is accepted exactly when it encodes
as a category or is a declared marker; ``/openapi.json`` lists the same values
(:func:`public_columns`). All of this is public: the schema the model
declared and the caller's own rows.
"""

from __future__ import annotations

import dataclasses
import math
from numbers import Real
from typing import Any

import numpy as np

from ._model import final_step

__all__ = [
    "UNKNOWN_CATEGORIES",
    "CategoricalColumn",
    "categorical_columns",
    "first_refused",
    "public_columns",
]

#: What the service does with a categorical value outside the public schema:
#: ``"refuse"`` (422, nothing charged; the default) or ``"encode-as-none"`` (answered,
#: encoded as none of the categories, as the encoder does).
UNKNOWN_CATEGORIES = ("refuse", "encode-as-none")

_ANY_VALUE: dict = {"type": ["number", "string"]}


def _jsonable_list(values: Any) -> list:
    return [v.item() if isinstance(v, np.generic) else v for v in np.asarray(values).tolist()]


@dataclasses.dataclass(frozen=True)
class CategoricalColumn:
    """A column encoded by a public one-hot encoder: what its schema allows.

    Attributes
    ----------
    name : str
        The column's name.
    position : int
        Its position among the model's input columns (0-based).
    categories : list
        The public categories.
    markers : list
        The schema's markers of a missing value (encoded as none of the categories).
    as_text : bool
        Whether the encoder compares values as text (all its category lists are text).
    """

    name: str
    position: int
    categories: list
    markers: list
    as_text: bool

    @property
    def accepted(self) -> list:
        """The values the column accepts: the categories, then the markers."""
        return [*self.categories, *self.markers]

    def keys(self) -> frozenset:
        """The accepted values as the encoder compares them."""
        if self.as_text:
            return frozenset(str(v) for v in self.accepted)
        return frozenset(self.accepted)

    def row_numbers(self) -> list:
        """The accepted values that a row (an array of numbers) can carry, as numbers."""
        if not self.as_text:
            return [v for v in self.accepted if isinstance(v, Real) and not isinstance(v, bool)]
        numbers = []
        for value in self.accepted:  # a row's 1.0 is compared as the text "1.0"
            try:
                number = float(value)
            except ValueError:
                continue
            if math.isfinite(number) and str(number) == str(value):
                numbers.append(number)
        return numbers


def _column_names(columns: Any) -> list[str] | None:
    if isinstance(columns, str):
        return [columns]
    if isinstance(columns, list | tuple) and all(isinstance(c, str) for c in columns):
        return list(columns)
    if isinstance(columns, np.ndarray) and columns.dtype.kind in "OU":
        names = columns.tolist()
        return names if all(isinstance(c, str) for c in names) else None
    return None


def _public_transformer_columns(transformer: Any) -> dict[str, Any] | None:
    """Per column of a ``ColumnTransformer`` made only of public transformers: ``"number"``,
    ``"any"`` or a :class:`CategoricalColumn` (position -1, set by the caller); else None."""
    from sklearn.compose import ColumnTransformer

    from ..preprocessing import PublicOneHotEncoder, PublicScaler

    if not isinstance(transformer, ColumnTransformer):
        return None
    found: dict[str, Any] = {}
    for _, step, columns in transformer.transformers:
        names = _column_names(columns)
        if names is None:
            return None
        if isinstance(step, PublicScaler):
            found.update({name: "number" for name in names})
        elif isinstance(step, PublicOneHotEncoder):
            categories = step.categories
            if not isinstance(categories, list | tuple) or len(categories) != len(names):
                return None
            markers = getattr(step, "missing_values", None)  # absent from older model files
            if markers is None:
                markers = [[] for _ in names]
            if not isinstance(markers, list | tuple) or len(markers) != len(names):
                return None
            as_text = all(np.asarray(c).dtype.kind in "US" for c in categories)
            for name, listed, marked in zip(names, categories, markers):
                found[name] = CategoricalColumn(
                    name, -1, _jsonable_list(listed), _jsonable_list(list(marked)), as_text
                )
        elif isinstance(step, str) and step in ("drop", "passthrough"):
            found.update({name: "any" for name in names})
        else:
            return None
    return found


def _typed_columns(estimator: Any) -> dict[str, Any] | None:
    """``{column: "number" | "any" | CategoricalColumn}`` in the model's column order."""
    names = getattr(estimator, "feature_names_in_", None)
    if names is None:
        return None
    columns: dict[str, Any] = {str(name): "any" for name in names}
    candidates = []
    if hasattr(estimator, "steps"):
        candidates.append(estimator.steps[0][1])
    template = getattr(final_step(estimator), "estimator", None)
    if template is not None and hasattr(template, "steps"):
        candidates.append(template.steps[0][1])
    for candidate in candidates:
        typed = _public_transformer_columns(candidate)
        if typed:
            for name, kind in typed.items():
                if name in columns:
                    columns[name] = kind
            break
    positions = {name: i for i, name in enumerate(columns)}
    for name, kind in columns.items():
        if isinstance(kind, CategoricalColumn):
            columns[name] = dataclasses.replace(kind, position=positions[name])
    return columns


def categorical_columns(estimator: Any) -> list[CategoricalColumn]:
    """The model's input columns that a public one-hot encoder reads, in column order.

    Parameters
    ----------
    estimator : estimator
        The fitted served model.

    Returns
    -------
    list of CategoricalColumn
        Empty if the model was fitted without column names, or its input goes
        through no public preprocessor.
    """
    typed = _typed_columns(estimator) or {}
    return [kind for kind in typed.values() if isinstance(kind, CategoricalColumn)]


def public_columns(estimator: Any, unknown_categories: str = "refuse") -> dict[str, dict] | None:
    """The JSON schema of each input column, from public information only.

    A number for a :class:`~skprivpred.preprocessing.PublicScaler` column; for
    a :class:`~skprivpred.preprocessing.PublicOneHotEncoder` column, the enum
    of the values it accepts (its categories, then its schema's markers of a
    missing value) when unknown values are refused, or any number or string
    (the accepted values given as examples) when they are encoded as none of
    the categories; any other column is a number or a string.

    Parameters
    ----------
    estimator : estimator
        The fitted served model.
    unknown_categories : {"refuse", "encode-as-none"}, default="refuse"
        What the service does with a value outside a categorical column's list.

    Returns
    -------
    dict or None
        ``{column: schema}`` in column order, or ``None`` if the model was
        fitted without column names.
    """
    typed = _typed_columns(estimator)
    if typed is None:
        return None
    schemas: dict[str, dict] = {}
    for name, kind in typed.items():
        if kind == "number":
            schemas[name] = {"type": "number"}
        elif isinstance(kind, CategoricalColumn):
            marked = (
                ", or a marker of a missing value that the schema declares ("
                + ", ".join(repr(v) for v in kind.markers)
                + "), which encodes as none of them"
                if kind.markers
                else ""
            )
            if unknown_categories == "refuse":
                schemas[name] = {
                    "enum": kind.accepted,
                    "description": f"One of the public categories{marked}; any other value "
                    "is refused (422, nothing charged).",
                }
            else:
                schemas[name] = {
                    "type": ["number", "string"],
                    "examples": kind.accepted,
                    "description": f"One of the public categories{marked}; any other value "
                    "is answered as none of them (--unknown-categories=encode-as-none).",
                }
        else:
            schemas[name] = dict(_ANY_VALUE)
    return schemas


@dataclasses.dataclass(frozen=True)
class Refusal:
    """A value of a query that the model's public schema does not allow."""

    row: int
    column: CategoricalColumn
    value: Any
    count: int

    def message(self, form: str) -> str:
        """What the ``422`` body says; ``form`` is ``"rows"`` or ``"records"``."""
        column = self.column
        shown = repr(self.value)
        if len(shown) > 80:
            shown = shown[:77] + "..."
        where = (
            f"row {self.row}, number {column.position + 1}"
            if form == "rows"
            else f"record {self.row}"
        )
        allowed = ", ".join(repr(v) for v in column.categories)
        if column.markers:
            markers = ", ".join(repr(v) for v in column.markers)
            allowed += f", or {markers} (a missing value)"
        text = (
            f"{where}: {shown} is not a value that the model's public schema allows in the "
            f"column {column.name!r}; allowed: {allowed}."
        )
        if form == "rows" and not column.row_numbers():
            text += ' A row holds numbers only: send "records" to give this column by name.'
        if self.count > 1:
            text += f" {self.count} values of the request are outside the schema in all."
        return text + " Nothing was charged."

    def details(self) -> dict:
        """The fields that the ``422`` body adds to its message."""
        return {"column": self.column.name, "value": self.value, "allowed": self.column.accepted}


def first_refused(frame: Any, columns: list[CategoricalColumn]) -> Refusal | None:
    """The first value of the query rows that their column's schema does not allow.

    The values are compared as the one-hot encoder compares them: as text when
    all the category lists of its encoder are text, else as they are.

    Parameters
    ----------
    frame : pandas.DataFrame
        The query rows, with the model's column names.
    columns : list of CategoricalColumn
        The columns to check (:func:`categorical_columns`).

    Returns
    -------
    Refusal or None
        The first refused value (by row, then by column), with the number of
        refused values; ``None`` if every value is allowed.
    """
    first: tuple[int, int, Any] | None = None
    count = 0
    # The conversion of PublicOneHotEncoder.transform, which converts its columns together:
    # one selection of every checked column (a selection per column cost 0.4 ms each).
    table = np.asarray(frame[[column.name for column in columns]], dtype=object)
    for j, column in enumerate(columns):
        values = table[:, j]
        if column.as_text:
            values = values.astype(str)
        keys = column.keys()
        refused = [i for i, value in enumerate(values.tolist()) if value not in keys]
        count += len(refused)
        if refused and (first is None or refused[0] < first[0]):
            first = (refused[0], j, frame[column.name].iloc[refused[0]])
    if first is None:
        return None
    value = first[2].item() if isinstance(first[2], np.generic) else first[2]
    return Refusal(first[0], columns[first[1]], value, count)
