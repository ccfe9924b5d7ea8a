"""Can the base estimator read such rows at all? A dry run on public rows, before the charge.

A teacher that cannot read its rows (a ``LogisticRegression`` handed a
DataFrame with string columns) fails, and casts its fixed fallback vote; that
failure must not raise, since it depends on the training rows (the side-channel
rule), and the training frame's dtypes are not public either (pandas infers
them from the values). But when *every* teacher fails because of the kind of
rows, the estimator answers its fallback for every query, charged, and nobody
is told.

What is public is the estimator's configuration, the public label set (or
output range) and the *kind* of the queries: their columns, dtypes and, for
object columns, the Python types of their entries (the queries' signature,
checked like their shape and finiteness). So before a query call is charged,
:func:`check_teachers_can_read` fits a clone of the base estimator on a small
frame built from that signature alone: the queries' columns and dtypes, filled
with placeholder values (the strings ``"a"``, ``"b"``, ``"c"`` in every text
column, the numbers 0, 1, 2 elsewhere), labelled by cycling through the public
``classes`` (or a grid of the public ``y_bounds``), and asks it the way the
teachers are asked. When that fails, and the same dry run on a numeric
version of the frame (every text column replaced by numbers) succeeds, the
base estimator cannot read such rows at all: the call is refused with a
message that names the columns and the fix, and nothing is charged.

The dry run never sees a query's values: no user code meets a query row here
(the queries of the everlasting predictors are protected rows), and the
verdict and its message, computed from the signature and public parameters
only, are the same for every call with that signature. So the verdict is kept
per fitted estimator and per signature, and costs two small fits per kind of
query, not per call: a later call never gets a refusal, or an error text,
computed from an earlier call's rows. The dry run goes through the library's
one boundary (:func:`skprivpred._teachers._isolation.call_user_code`), as all user code
that meets rows does: a copy of the estimator of its own, its warnings dropped,
the process-wide state it changes restored, and a fixed public outcome (no
refusal) should anything escape its error capture.

:func:`check_numeric_rows` is the same message for the estimators that read
numeric rows themselves (:class:`~skprivpred.SufficientStatisticClassifier`,
:class:`~skprivpred.SufficientStatisticRegressor`).
"""

from __future__ import annotations

import weakref
from functools import partial
from typing import Any

import numpy as np
from scipy import sparse
from sklearn.base import clone

from ._isolation import call_user_code

__all__ = ["check_numeric_rows", "check_teachers_can_read"]

#: Rows of the dry run's frame (the queries repeated), at least four per class.
_MIN_ROWS = 20

#: Verdicts per fitted estimator (keyed by its query stream, new at every fit):
#: signature of the queries -> None (readable) or the refusal's message.
_VERDICTS: weakref.WeakKeyDictionary[Any, dict] = weakref.WeakKeyDictionary()

_FIX = (
    "Put an encoder inside the estimator, e.g. make_pipeline(make_column_transformer("
    '(OneHotEncoder(handle_unknown="ignore"), [...]), remainder="passthrough"), '
    "LogisticRegression()) (each teacher then fits its own encoder), or encode the rows "
    "outside with skprivpred.preprocessing.public_preprocessor(schema) (data-independent, "
    "from a public schema) and pass its output."
)


def _is_numeric_dtype(dtype) -> bool:
    """Numbers or booleans, numpy's or pandas's nullable ones (not a category, not objects)."""
    if isinstance(dtype, np.dtype):
        return dtype.kind in "biuf"
    from pandas.api.types import is_bool_dtype, is_numeric_dtype

    return (is_numeric_dtype(dtype) or is_bool_dtype(dtype)) and str(dtype) != "category"


def _non_numeric_columns(X) -> list[tuple[Any, str]]:
    """(column label or index, description) of every column that is not numeric."""
    if hasattr(X, "dtypes"):
        return [
            (column, str(dtype))
            for column, dtype in X.dtypes.items()
            if not _is_numeric_dtype(dtype)
        ]
    if isinstance(X, np.ndarray) and X.dtype == object and X.ndim == 2:
        found = []
        for j in range(X.shape[1]):
            kinds = {type(v) for v in X[:, j]}
            if any(not issubclass(t, int | float | bool | np.number | np.bool_) for t in kinds):
                found.append((j, "object"))
        return found
    return []


def _is_text(values) -> bool:
    """Whether every present entry is a string (missing values aside), and one is present."""
    present = [v for v in values if v is not None and not (isinstance(v, float) and v != v)]
    return bool(present) and all(isinstance(v, str) for v in present)


def _string_columns(X) -> list[tuple[Any, str]]:
    """The columns of text: every entry a string (or a category dtype of strings).

    A column that mixes numbers and strings is not one: a stray entry that a
    teacher cannot read is that teacher's fallback for that row, as always.
    """
    found = []
    for column, dtype in _non_numeric_columns(X):
        values = X[column] if hasattr(X, "dtypes") else X[:, column]
        if str(dtype) == "category":
            if _is_text(list(values.cat.categories)):
                found.append((column, dtype))
        elif _is_text(np.asarray(values, dtype=object).tolist()):
            found.append((column, dtype))
    return found


def _signature(X, columns: list[tuple[Any, str]]) -> tuple:
    """Public signature of the queries: column labels, dtypes, entry types of object columns."""
    entry_types = []
    for column, _ in columns:
        values = X[column] if hasattr(X, "dtypes") else X[:, column]
        entry_types.append(tuple(sorted({type(v).__name__ for v in np.asarray(values)})))
    layout: tuple
    if hasattr(X, "dtypes"):
        layout = tuple((str(c), str(d)) for c, d in X.dtypes.items())
    else:
        layout = ("array", X.shape[1], str(X.dtype))
    return layout, tuple(str(c) for c, _ in columns), tuple(entry_types)


#: The placeholder entries of a text column in the dry run's rows (public constants).
_PUBLIC_TEXT = ("a", "b", "c")


def _public_column(values: np.ndarray, dtype):
    """``values`` as a pandas column of ``dtype`` where that conversion works, else as they are."""
    import pandas as pd

    column = pd.Series(values)
    try:
        return column.astype("category" if str(dtype) == "category" else dtype)
    except (TypeError, ValueError):
        return column


def _public_rows(X, columns: list[tuple[Any, str]], n_rows: int):
    """``n_rows`` rows of ``X``'s kind built from its signature alone, never from its values.

    The same columns (labels, order) and dtypes as ``X``; each text column
    (``columns``) holds the strings of :data:`_PUBLIC_TEXT` in turn, every other
    column the numbers 0, 1, 2 in turn (in its dtype when it is numeric; a
    column that is neither text nor numeric holds numbers in both dry runs, as
    it always has).
    """
    codes = (np.arange(n_rows) % 3).astype(float)
    text_values = np.array(_PUBLIC_TEXT, dtype=object)[np.arange(n_rows) % 3]
    if hasattr(X, "dtypes"):
        import pandas as pd

        text = {str(c) for c, _ in columns}
        parts = []
        for column, dtype in X.dtypes.items():
            if str(column) in text:
                parts.append(_public_column(text_values, dtype))
            elif _is_numeric_dtype(dtype):
                parts.append(_public_column(codes, dtype))
            else:
                parts.append(pd.Series(codes))
        frame = pd.concat(parts, axis=1, ignore_index=True)
        return frame.set_axis(X.columns, axis=1)
    rows = np.empty((n_rows, X.shape[1]), dtype=object)
    rows[:] = codes[:, None]
    for column, _ in columns:
        rows[:, column] = text_values
    return rows


def _numeric_version(X, columns: list[tuple[Any, str]]):
    """``X`` with every non-numeric column replaced by the numbers 0, 1, 2, 0, 1, ..."""
    codes = (np.arange(X.shape[0]) % 3).astype(float)
    if hasattr(X, "iloc"):
        X = X.copy()
        for column, _ in columns:
            X[column] = codes
        return X
    X = X.copy()
    for column, _ in columns:
        X[:, column] = codes
    return X if _non_numeric_columns(X) else X.astype(float)


def _attempt(model, X, y, method: str) -> str | None:
    """Fit ``model`` on ``(X, y)`` and ask it ``method`` at ``X``: its error as text, if any."""
    try:
        model.fit(X, y)
        getattr(model, method)(X)
    except Exception as error:  # any failure of user code: that is what is tested
        return f"{type(error).__name__}: {' '.join(str(error).split())}"
    return None


def _outcome(value: Any) -> str | None:
    """The check of a dry run's outcome: None (it read the rows) or the text of its error."""
    if value is not None and not isinstance(value, str):
        raise TypeError("a dry run's outcome is None or the text of its error.")
    return value


def _dry_run(estimator, X, y, method: str) -> str | None:
    """A clone fitted on ``(X, y)`` and asked ``method`` at ``X``: the text of its error, if any.

    The user's estimator runs through the library's one boundary
    (:func:`~skprivpred._teachers._isolation.call_user_code`): a copy of its own, handed
    rows of its own, its warnings captured and the process-wide state restored
    after it. Its rows are public placeholders (:func:`_public_rows`); should
    anything escape the error capture, the fixed public outcome is "it reads
    such rows" (no refusal).
    """
    return call_user_code(
        clone(estimator),
        [(X, y)],
        partial(_attempt, method=method),
        _outcome,
        None,
        name="estimator",
    )[0]


def _describe(columns: list[tuple[Any, str]], frame: bool) -> str:
    shown = [f"{c!r} (dtype {d})" if frame else f"{c} (object entries)" for c, d in columns[:5]]
    more = f" and {len(columns) - 5} more" if len(columns) > 5 else ""
    noun = "column" if len(columns) == 1 else "columns"
    return f"{noun} {', '.join(shown)}{more}"


def check_teachers_can_read(
    owner,
    estimator,
    X,
    *,
    classes=None,
    y_bounds: tuple[float, float] | None = None,
    method: str = "predict",
) -> None:
    """Refuse, before the charge, query rows that the base estimator cannot read at all.

    Parameters
    ----------
    owner : estimator
        The fitted private estimator (its name is in the message; its verdicts
        are kept with its query stream).
    estimator : estimator
        The base estimator (unfitted; cloned for the dry run).
    X : DataFrame or ndarray
        The validated query rows. Only their signature is read (columns,
        dtypes, which columns are text, the types of object entries); no
        user code sees their values.
    classes : array-like, default=None
        The public label set (a classifier's teachers).
    y_bounds : tuple of float, default=None
        The public output range (a regressor's teachers).
    method : str, default="predict"
        How the teachers are asked.

    Raises
    ------
    ValueError
        Naming the non-numeric columns, the dry run's error and the fix,
        when the dry run fails on placeholder rows of the queries' kind and
        succeeds on a numeric version of them. Nothing has been charged then.
        The refusal and its message depend on the signature and the public
        parameters only: every call with that signature gets the same one.
    """
    if sparse.issparse(X) or X.shape[0] == 0:
        return
    columns = _string_columns(X)
    if not columns:
        return
    stream = owner.__dict__.get("_query_stream")
    verdicts = _VERDICTS.setdefault(stream, {}) if stream is not None else {}
    key = (method, _signature(X, columns))
    if key not in verdicts:
        verdicts[key] = _verdict(owner, estimator, X, columns, classes, y_bounds, method)
    if verdicts[key] is not None:
        raise ValueError(verdicts[key])


def _verdict(owner, estimator, X, columns, classes, y_bounds, method) -> str | None:
    if classes is not None:
        labels = np.asarray(classes)
        n_rows = max(_MIN_ROWS, 4 * labels.size)
        y = labels[np.arange(n_rows) % labels.size]
    else:
        lo, hi = (0.0, 1.0) if y_bounds is None else y_bounds
        n_rows = _MIN_ROWS
        y = np.linspace(lo, hi, n_rows)
    # Built from the signature only: the queries' values never reach the dry run.
    rows = _public_rows(X, columns, n_rows)
    error = _dry_run(estimator, rows, y, method)
    if error is None or _dry_run(estimator, _numeric_version(rows, columns), y, method) is not None:
        return None  # readable, or failing for another reason than the kind of rows
    reason = error if len(error) <= 200 else error[:197] + "..."
    name = type(owner).__name__
    return (
        f"{name} cannot answer these rows: its base estimator {type(estimator).__name__} cannot "
        f"read {_describe(columns, hasattr(X, 'dtypes'))} at all. Fitted on a few placeholder "
        "rows of these queries' columns and dtypes (the text columns holding 'a', 'b', 'c') and "
        f"the public labels, it raises {reason}; with "
        "those columns numeric, it does not. Every teacher would fail the same way and answer "
        "with its fallback, so nothing was answered and nothing was charged. " + _FIX
    )


def check_numeric_rows(owner, X) -> None:
    """Refuse non-numeric columns with a message that names them and ``public_preprocessor``.

    For estimators that read numeric rows themselves. The message names the
    columns (their labels or positions), never an entry.

    Raises
    ------
    ValueError
        When ``X`` (a DataFrame or an object array) has a non-numeric column.
    """
    columns = _non_numeric_columns(X)
    if not columns:
        return
    raise ValueError(
        f"{type(owner).__name__} reads numeric rows only, and X has the non-numeric "
        f"{_describe(columns, hasattr(X, 'dtypes'))}. Encode the rows first with "
        "skprivpred.preprocessing.public_preprocessor(schema) (data-independent, from a public "
        "schema) and pass its output, with schema=the same schema. Nothing was fitted, "
        "answered or charged."
    )
