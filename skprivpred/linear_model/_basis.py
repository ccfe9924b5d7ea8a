"""The public basis of the sufficient-statistic models: spline features built from public
rows and the labelled statistic they sum.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse
from scipy.interpolate import BSpline
from sklearn.base import clone

from .._teachers._isolation import UserCode, call_user_code, freeze_rows
from ..exceptions import InvalidParameterError

try:  # a dependency of joblib >= 1.6; vendored by older joblib
    import cloudpickle  # type: ignore[import-untyped]
except ImportError:  # pragma: no cover
    from joblib.externals import cloudpickle


__all__ = ["GRID_STEPS", "MAX_PUBLIC_ROWS"]


#: Grid steps per ``sqrt(d)``: the statistic is rounded to a grid of step
#: ``gamma = sensitivity / (GRID_STEPS sqrt(d))``, so the rounding adds ``sqrt(d)``
#: to an index sensitivity of ``GRID_STEPS sqrt(d)``: 1 % more noise.
GRID_STEPS = 100

#: At most this many public rows build the basis and the post-processing. With more
#: public rows, ``MAX_PUBLIC_ROWS`` of them are drawn uniformly without replacement by
#: the fit stream (a rule that reads only the number of public rows) and kept in their
#: order; in memory and on a cluster alike, so that both fit the same model.
MAX_PUBLIC_ROWS = 100_000

# Distinct labels a partition of a dask y may hold (classes=None reads the label set).
_MAX_LABELS = 1000

# Knots of the default spline basis (quantiles of the public rows) and its degree.
_N_KNOTS, _DEGREE = 5, 3


# -- the public feature map -------------------------------------------------------------------
def _is_binary(column: np.ndarray) -> bool:
    return bool(np.all((column == 0) | (column == 1)))


def detect_groups(X_public: np.ndarray) -> list[np.ndarray]:
    """One-hot groups found in the public rows: runs of adjacent 0/1 columns never 1 together.

    A column that is 0 or 1 on every public row joins the run in progress when no
    public row has a 1 in it and in the run at once; otherwise it starts a new run.
    Columns that are not 0/1 are numeric. Reads public rows only.

    Returns
    -------
    list of ndarray of int
        The column indices of each group, in column order.
    """
    groups: list[list[int]] = []
    run_sum = None
    previous = -2
    for j in range(X_public.shape[1]):
        column = X_public[:, j]
        if not _is_binary(column):
            continue
        if run_sum is not None and previous == j - 1 and not np.any((run_sum + column) > 1):
            groups[-1].append(j)
            run_sum = run_sum + column
        else:
            groups.append([j])
            run_sum = column.copy()
        previous = j
    return [np.asarray(g, dtype=np.intp) for g in groups]


def _schema_layout(schema: dict, n_features: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """Numeric columns and one-hot groups of ``public_preprocessor(schema)``'s output."""
    if not isinstance(schema, dict) or set(schema) - {"numeric", "categorical", "missing"}:
        raise InvalidParameterError(
            'schema must be a dict with the keys "numeric" and/or "categorical" (the schema '
            f"of public_preprocessor), got {schema!r}."
        )
    n_numeric = len(schema.get("numeric", {}))
    sizes = [len(list(v)) for v in schema.get("categorical", {}).values()]
    if n_numeric + sum(sizes) != n_features:
        raise ValueError(
            f"schema describes {n_numeric} numeric columns and one-hot blocks of {sum(sizes)} "
            f"columns ({n_numeric + sum(sizes)} in all, in the layout of public_preprocessor), "
            f"but X has {n_features} columns."
        )
    ends = n_numeric + np.cumsum(sizes)
    groups = [np.arange(end - size, end) for end, size in zip(ends, sizes)]
    return np.arange(n_numeric), groups


def _default_knots(column: np.ndarray) -> np.ndarray | None:
    """Knots at 5 quantiles of the public values of a column (None: constant on them).

    A column with a point mass at its smallest value (capital gains: mostly 0) has
    fewer than 5 distinct quantiles; its knots then also take 5 quantiles of the public
    values above that smallest value, so that the spline still resolves them. Public
    rows only.
    """
    knots = np.unique(np.quantile(column, np.linspace(0.0, 1.0, _N_KNOTS)))
    if knots.size < _N_KNOTS:
        above = column[column > knots[0]]
        if above.size >= _N_KNOTS:
            knots = np.unique(np.r_[knots, np.quantile(above, np.linspace(0.0, 1.0, _N_KNOTS))])
    return knots if knots.size >= 2 else None


def spline_block(x: np.ndarray, knots: np.ndarray, degree: int = _DEGREE) -> np.ndarray:
    """Cubic B-splines on ``knots``, constant beyond the first and last knot.

    The basis of ``SplineTransformer(knots=knots[:, None], degree=degree,
    extrapolation="constant")`` (the same values: the outer knots continue the
    spacing of the first and last intervals), evaluated by
    :class:`scipy.interpolate.BSpline`; the model stores only the knots, so a model
    file holds no spline object.
    """
    first, last = knots[1] - knots[0], knots[-1] - knots[-2]
    full = np.r_[
        np.linspace(knots[0] - degree * first, knots[0] - first, degree),
        knots,
        np.linspace(knots[-1] + last, knots[-1] + degree * last, degree),
    ]
    inside = np.clip(x, knots[0], knots[-1])
    basis = BSpline(full, np.eye(full.size - degree - 1), degree, extrapolate=False)
    return basis(inside)


def _fit_basis(basis, X_public: np.ndarray, numeric: np.ndarray) -> list:
    """Per numeric column: knots (default basis) or a fitted transformer (None: dropped).

    A column constant on the public rows carries no information the basis could use:
    the default basis drops it.
    """
    fitted: list = []
    for j in numeric:
        column = X_public[:, j]
        if isinstance(basis, str):
            fitted.append(_default_knots(column))
        else:
            fitted.append(clone(basis).fit(column[:, None]))
    return fitted


def _copy_payloads(basis, transformers: list) -> list[bytes]:
    """Each fitted user transformer pickled once, to give every labelled value its own copy.

    ``cloudpickle`` (joblib's pickler) holds lambdas and closures by value, so a copy
    unpickled from the payload has its own closure cells and function state as well as
    its own attributes. A transformer that cannot be pickled is refused (it was fitted
    on public rows only: nothing private is read, nothing is charged).
    """
    payloads = []
    for transformer in transformers:
        try:
            payloads.append(cloudpickle.dumps(transformer))
        except Exception as exc:  # noqa: BLE001 - any failure to copy refuses the basis
            raise InvalidParameterError(
                f"basis={basis!r} cannot be used: each labelled row goes through its own "
                "copy of the fitted transformer (so that its features depend on that row "
                "alone), made by pickling the transformer fitted on the public rows with "
                f"cloudpickle, and pickling it failed ({type(exc).__name__}: {exc}). Use a "
                'picklable transformer or basis="spline".'
            ) from exc
    return payloads


def _transformed_value(width: int):
    """A check of a transformer's output for one value: one finite row of ``width`` values."""

    def check(block) -> np.ndarray:
        block = np.asarray(block.toarray() if sparse.issparse(block) else block)
        block = np.array(block, dtype=np.float64)  # a copy, always
        if block.shape != (1, width) or not np.all(np.isfinite(block)):
            raise ValueError("not one finite row of the basis width")
        return block[0]

    return check


def _isolated_block(payload: bytes, values: np.ndarray, width: int) -> np.ndarray:
    """A user transformer's block for labelled rows: each value through its own copy.

    Through the one boundary (:func:`~skprivpred._teachers._isolation.call_user_code`):
    the block of a labelled row depends on that row's value alone, by
    construction. Each distinct value (by its bits: ``0.0`` and ``-0.0`` are
    different inputs) is one protected unit, transformed as a frozen ``(1, 1)``
    array by a copy of the fitted transformer of its own (unpickled from
    ``payload``), with warnings captured and dropped, floating-point
    conditions ignored, numpy's and Python's global random states and
    scikit-learn's configuration restored afterwards; rows of the same value
    share that one result. Whatever the copy does on a value (raises, warns,
    returns non-finite values or not one row of ``width`` values, the ``width``
    of its output on the public rows), that value's block is the fixed public
    zero block.
    """
    bits = np.ascontiguousarray(values, dtype=np.float64).view(np.uint64)
    distinct, inverse = np.unique(bits, return_inverse=True)
    units = [(freeze_rows(np.full((1, 1), value)),) for value in distinct.view(np.float64)]
    code = UserCode(payload, "basis")
    blocks = call_user_code(
        code, units, lambda t, Z: t.transform(Z), _transformed_value(width), None, name="basis"
    )
    out = np.zeros((distinct.size, width))
    for k, block in enumerate(blocks):
        if block is not None:
            out[k] = block
    return out[inverse.reshape(-1)]


def _batched_block(transformer, X: np.ndarray, j: int) -> np.ndarray:
    """A user transformer's block for public or query rows, transformed as one batch.

    Public and query rows are not protected: a failure there raises.
    """
    block = transformer.transform(X[:, [j]])
    block = np.asarray(block.toarray() if sparse.issparse(block) else block, dtype=float)
    if block.ndim != 2 or block.shape[0] != X.shape[0]:
        raise ValueError(
            f"the basis transformer returned an output of shape {block.shape} for "
            f"{X.shape[0]} rows of one column; expected (n_rows, n_basis_columns)."
        )
    if not np.all(np.isfinite(block)):
        raise ValueError("the basis transformer returned NaN or infinity.")
    return block


def _features(
    X: np.ndarray,
    numeric: np.ndarray,
    transformers: list,
    groups: list[np.ndarray],
    norm_bound: float,
    nonnegative: bool,
    private: list | None = None,
    widths: list | None = None,
) -> np.ndarray:
    """``phi(X)``: intercept, a block per numeric column and per group, each of norm <= 1.

    Every row is finally scaled by ``min(1, B / ||phi||)``, whatever the blocks hold.
    ``private``, for labelled rows: per numeric column, ``(payload, width)`` of a user
    transformer (:func:`_isolated_block`: one value at a time, each through its own
    copy). Otherwise a user transformer transforms the rows as one batch, and the width
    of each of its blocks is appended to ``widths`` (if given); the default basis is
    row-wise by construction and always batched.
    """
    blocks = []
    for position, (j, transformer) in enumerate(zip(numeric, transformers)):
        if transformer is None:
            continue
        if isinstance(transformer, np.ndarray):
            block = spline_block(X[:, j], transformer)
        elif private is not None:
            payload, width = private[position]
            block = _isolated_block(payload, X[:, j], width)
        else:
            block = _batched_block(transformer, X, j)
            if widths is not None:
                widths.append(block.shape[1])
        if nonnegative:
            block = np.maximum(block, 0.0)
        blocks.append(block)
    for group in groups:
        blocks.append(np.clip(X[:, group], 0.0, 1.0))
    phi = np.empty((X.shape[0], 1 + sum(b.shape[1] for b in blocks)))
    phi[:, 0] = 1.0
    start = 1
    for block in blocks:
        norms = np.sqrt(np.einsum("ij,ij->i", block, block))
        stop = start + block.shape[1]
        np.divide(block, np.maximum(norms, 1.0)[:, None], out=phi[:, start:stop])
        start = stop
    norms = np.sqrt(np.einsum("ij,ij->i", phi, phi))
    phi *= np.minimum(1.0, norm_bound / np.maximum(norms, np.finfo(float).tiny))[:, None]
    return phi


def public_sample_ranks(n_public: int, rng: np.random.Generator) -> np.ndarray | None:
    """Which public rows build the basis: ``None`` (all of them), else sorted ranks.

    The rank of a public row is its position among the public rows. Reads only the
    public count, never a value: the same rule for rows in memory and on a cluster.
    """
    if n_public <= MAX_PUBLIC_ROWS:
        return None
    return np.sort(rng.choice(n_public, size=MAX_PUBLIC_ROWS, replace=False))


def labelled_statistic(X: np.ndarray, y: np.ndarray, spec: tuple, target: tuple) -> np.ndarray:
    """The exact statistic of labelled rows ``X, y`` (a sum over rows: additive over parts).

    ``spec`` holds the public feature map (the arguments of :func:`_features` after
    ``X``); ``target`` is ``("classes", classes)`` or ``("bounds", lo, hi)``. The same
    function computes the statistic of all labelled rows in memory and of each
    partition of a dask collection on its worker.
    """
    phi = _features(X, *spec)
    if target[0] == "bounds":
        lo, hi = target[1], target[2]
        return (np.clip(y, lo, hi) - 0.5 * (lo + hi)) @ phi
    classes = target[1]
    codes = np.searchsorted(classes, y)
    if classes.size == 2:
        return (codes - 0.5) @ phi
    onehot = np.eye(classes.size)[codes] - 1.0 / classes.size
    return onehot.T @ phi  # (k, d)
