"""The dask edge of the answering path: charged first, computed on the workers.

The answering path (:func:`skprivpred._base.answer`) sends a ``dask.array.Array``
or a ``dask.dataframe.DataFrame`` of query rows here, with the same
:class:`~skprivpred._base.QueryPlan` its in-memory sequence runs (the public
checks, the dry run, the secret values of a block of rows, the draw of the
answers from them, the post-processing); :func:`answer_queries` runs it on a
cluster, in this order:

1. **Public checks on the schema** (nothing computed): the estimator is fitted,
   the queries are two-dimensional with the fitted width and column names, the
   answering configuration takes dask queries at all.
2. **The budget, before the graph runs**: with the number of rows known from
   the chunks (a dask array of known chunk sizes) the accountant is asked
   whether that many rows fit, otherwise whether one row does; a spent budget
   refuses here, having run no task over the queries' values, charged
   nothing.
3. **A pass over the queries** (public: the caller's own rows): each block's
   row count, the finiteness and entry checks of an in-memory batch
   (``check_array``), and its first rows, of which the first
   :data:`HEAD_ROWS` of the collection come to the client for the estimator's
   own public checks and dry run (the plan's ``check`` and ``dry_run``). Only
   lengths, a verdict and those few query rows reach the client. A bad row
   refuses the call here, before the charge, as in memory.
4. **The charge** for all rows, through
   :meth:`~skprivpred._base.PrivatePredictorMixin._release` (one committed
   ledger transaction, under the estimator's lock, as for an in-memory batch),
   and *then*, inside the same call, the secret values (the plan's ``values``:
   vote counts, teacher averages) are computed on the workers (the fitted
   teachers are shipped to them once per call as one graph key), gathered
   block by block in row order, and the noise is drawn in the client from the
   query stream (the plan's ``draw``).
5. The answers, already drawn, are wrapped as a dask array with the
   input's row chunks (a DataFrame's partitions become the row chunks: the
   result is a ``dask.array.Array``, as scikit-learn returns an ndarray for a
   DataFrame).

**Recomputation rule: eager release.** The returned collection holds the
released answers as literal blocks; computing it twice, or recomputing a lost
block, replays those very answers and draws nothing. A worker lost while the
votes are counted recomputes a deterministic function of the fitted teachers
and the query rows: no randomness ever runs on a worker. One charge, one
answer per row.
"""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
from sklearn.utils.validation import validate_data

from ._dask import import_dask

__all__ = ["HEAD_ROWS", "answer_queries", "free_answers"]

#: Query rows (the first of the collection) computed into the client for the public
#: checks that need rows: the estimator's query validation and its dry run.
HEAD_ROWS = 100

_SPARSE_FORMATS = ["csr", "csc"]


# -- tasks (run where the blocks live) -----------------------------------------------------
def _inspect_block(block, check_block, head_rows: int):
    """Public facts of one block: its length, the refusal of its rows if any, its first rows."""
    n_rows = int(block.shape[0])
    try:
        check_block(block)
    except (ValueError, TypeError) as error:
        return n_rows, (type(error), str(error)), None
    head = block.iloc[:head_rows] if hasattr(block, "iloc") else np.asarray(block[:head_rows])
    return n_rows, None, head


def _block_values(values, block, check_block) -> np.ndarray:
    """The plan's values of one block (on a worker): its rows checked as in the first pass."""
    return np.asarray(values(check_block(block), 1))


# -- the client side ------------------------------------------------------------------------
def _schema_rows(X):
    """An empty batch with the queries' schema (columns, dtypes), nothing computed."""
    meta: Any = getattr(X, "_meta", None)
    if hasattr(X, "chunks") and hasattr(X, "rechunk"):  # a dask array
        if not isinstance(meta, np.ndarray):
            raise TypeError(
                f"X is a dask array of {type(meta).__module__}.{type(meta).__name__} blocks; "
                "dask queries must be NumPy-backed dask arrays or dask DataFrames. Nothing "
                "was answered or charged."
            )
        if X.ndim == 2 and np.isnan(X.shape[1]):
            raise ValueError(
                "X is a dask array with an unknown number of columns; give it known column "
                "chunks (X.compute_chunk_sizes()). Nothing was answered or charged."
            )
        return np.empty((0, *(int(s) for s in X.shape[1:])), dtype=X.dtype)
    if hasattr(meta, "iloc") and hasattr(X, "to_delayed"):  # a dask DataFrame or Series
        return meta.iloc[:0]
    raise TypeError(
        f"X is a {type(X).__module__}.{type(X).__name__}; dask queries must be a "
        "dask.array.Array or a dask.dataframe.DataFrame. Nothing was answered or charged."
    )


def _blocks(X) -> tuple[list, int | None]:
    """One delayed object per block of rows, and the number of rows if the chunks tell it."""
    if hasattr(X, "chunks") and hasattr(X, "rechunk"):  # a dask array
        if X.ndim == 2 and len(X.chunks[1]) > 1:
            X = X.rechunk({1: -1})  # one block per row chunk (a lazy step of the graph)
        blocks = list(X.to_delayed().reshape(-1))
        rows = X.chunks[0]
        known = not any(np.isnan(r) for r in rows)
        return blocks, int(sum(rows)) if known else None
    return list(X.to_delayed()), None  # a DataFrame: partition lengths are never metadata


def _check_schema(estimator, X):
    """Step 1: two-dimensional, the fitted width and names (no task runs; the plan's
    builder checked that the estimator is fitted)."""
    rows = _schema_rows(X)
    with warnings.catch_warnings():  # said once, by the validation of the first rows
        warnings.simplefilter("ignore")
        validate_data(
            estimator,
            rows,
            reset=False,
            accept_sparse=_SPARSE_FORMATS,
            dtype=None,
            ensure_all_finite=True,
            ensure_min_samples=0,
        )


def refuse_if_over_budget(estimator, n_rows: int, plan) -> None:
    """Raise the refusal that charging ``n_rows`` rows would raise now; charge nothing.

    The accountant's own decision (budget, horizon, linked budgets) on its
    ledger as stored, without a transaction: the charge itself, later, decides
    again (and may still refuse if another process spent meanwhile).
    """
    accountant = estimator._charged_accountant()
    if accountant is not None:
        epsilon, delta, rho = plan.row_charge(n_rows)
        accountant._refuse_if_over(
            n_rows, epsilon, delta, rho, horizon=estimator.__dict__.get("_horizon")
        )


def _inspect(blocks: list, check_block, name: str) -> tuple[list[int], Any]:
    """Step 3: the lengths of the blocks, the first refusal, the first rows (public)."""
    (dask,) = import_dask("dask", who=f"{name} on dask queries")
    tasks = [dask.delayed(_inspect_block, pure=True)(b, check_block, HEAD_ROWS) for b in blocks]
    results = dask.compute(*tasks)
    for _, refusal, _ in results:
        if refusal is not None:
            kind, message = refusal
            raise kind(message)
    lengths = [n for n, _, _ in results]
    heads = [head for n, _, head in results if n > 0]
    if not heads:
        return lengths, None
    if hasattr(heads[0], "iloc"):
        import pandas as pd

        head = pd.concat(heads[:HEAD_ROWS], axis=0).iloc[:HEAD_ROWS]
    else:
        head = np.concatenate(heads[:HEAD_ROWS], axis=0)[:HEAD_ROWS]
    return lengths, head


def _in_row_order(dask, values_tasks: list) -> Iterator[np.ndarray]:
    """The results of the tasks in row order, one block at a time where a client allows it."""
    try:
        from distributed import default_client

        client = default_client()
    except (ImportError, ValueError):
        client = None
    if client is None:
        yield from dask.compute(*values_tasks)
        return
    futures = client.compute(values_tasks)
    try:
        for k, future in enumerate(futures):
            result = future.result()
            futures[k] = None  # released on the cluster as soon as it is in the client
            future.release()
            yield result
    finally:
        for future in futures:
            if future is not None:
                future.release()


def _as_dask_array(blocks: list[np.ndarray]):
    """Released answers (one array per row block) as a dask array of those blocks."""
    (da,) = import_dask("dask.array", who="answers to dask queries")
    first = blocks[0]
    name = f"skprivpred-answers-{uuid.uuid4().hex}"
    trailing = first.shape[1:]
    graph = {(name, k, *(0,) * len(trailing)): block for k, block in enumerate(blocks)}
    chunks = (tuple(int(b.shape[0]) for b in blocks), *((int(s),) for s in trailing))
    return da.Array(graph, name, chunks, dtype=first.dtype, meta=first[:0])


def _length_changed(block: int, counted: int, got: int) -> RuntimeError:
    return RuntimeError(
        f"block {block} of the queries had {counted} rows when counted and {got} when "
        "answered: the query collection changed between the two passes (persist it, or give "
        "it a deterministic source). The call was charged for the counted rows; nothing was "
        "answered."
    )


def answer_queries(estimator, X, plan):
    """Answer every row of the dask collection ``X`` by ``plan``, charged before any vote.

    Parameters
    ----------
    estimator : fitted private predictor
        Its ``_release`` and accountant are used.
    X : dask.array.Array or dask.dataframe.DataFrame
        The query rows.
    plan : skprivpred._base.QueryPlan
        What the answering method checks, computes and draws (its
        ``check_block`` runs on the workers, its ``check`` and ``dry_run`` on
        the first rows, its ``values`` on the workers after the charge, its
        ``draw`` and ``finish`` here).

    Returns
    -------
    dask.array.Array
        The released answers, with the queries' row chunks (a DataFrame's
        partition lengths). Its blocks are literal arrays: computing it never
        draws again.
    """
    name = type(estimator).__name__
    (dask,) = import_dask("dask", who=f"{name} on dask queries")
    _check_schema(estimator, X)
    blocks, n_rows = _blocks(X)
    refuse_if_over_budget(estimator, 1 if n_rows is None else max(n_rows, 1), plan)
    lengths, head = _inspect(blocks, plan.check_block, name)
    n_rows = int(sum(lengths))
    if head is None:  # no rows at all: refused as an empty in-memory batch is
        plan.check(_schema_rows(X))
        raise AssertionError("an empty batch is refused by validation")  # pragma: no cover
    rows = plan.check(head)  # the fitted schema (public rows: the caller's first ones)
    if plan.dry_run is not None:
        plan.dry_run(rows)
    values = dask.delayed(plan.values, name=f"skprivpred-teachers-{uuid.uuid4().hex}")
    tasks = [dask.delayed(_block_values, pure=True)(values, b, plan.check_block) for b in blocks]

    def draw(rng: np.random.Generator) -> list[np.ndarray]:
        # Runs after the charge is committed: only now are the votes counted, on the workers.
        if plan.row_wise:
            answers = []
            for k, block_values in enumerate(_in_row_order(dask, tasks)):
                if block_values.shape[0] != lengths[k]:
                    raise _length_changed(k, lengths[k], block_values.shape[0])
                answers.append(plan.finish(plan.draw(block_values, rng)))
            return answers
        gathered = list(_in_row_order(dask, tasks))
        for k, block_values in enumerate(gathered):
            if block_values.shape[0] != lengths[k]:
                raise _length_changed(k, lengths[k], block_values.shape[0])
        all_values = np.concatenate(gathered, axis=0)
        del gathered
        released = plan.finish(plan.draw(all_values, rng))
        cuts = np.cumsum(lengths)[:-1]
        return np.split(released, cuts, axis=0)

    epsilon, delta, rho = plan.row_charge(n_rows)
    answers = estimator._release(n_rows, epsilon, draw, delta=delta, rho=rho)
    return _as_dask_array(answers)


def free_answers(estimator, X, plan):
    """Answers that cost nothing (a model fitted on released answers), lazily per block.

    Post-processing: the plan's ``values`` runs on each block where it lives
    (after its ``check_block``), with no charge and no noise, so a
    recomputation gives the same values; ``plan.answer_meta`` gives the
    dtype and trailing shape of one row's answer. A dask array's known row
    chunks are the answers' row chunks (a DataFrame's partitions, of lengths
    not known before they are computed, give one block each).
    """
    name = type(estimator).__name__
    dask, da = import_dask("dask", "dask.array", who=f"{name} on dask queries")
    _check_schema(estimator, X)
    blocks, _ = _blocks(X)
    lengths = X.chunks[0] if hasattr(X, "chunks") else (np.nan,) * len(blocks)
    dtype, trailing = plan.answer_meta
    fn = dask.delayed(plan.values, name=f"skprivpred-student-{uuid.uuid4().hex}")
    pieces = [
        da.from_delayed(
            dask.delayed(_block_values, pure=True)(fn, b, plan.check_block),
            shape=(length, *trailing),
            dtype=dtype,
        )
        for b, length in zip(blocks, lengths)
    ]
    return da.concatenate(pieces, axis=0)
