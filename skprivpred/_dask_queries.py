"""Private answers to a dask collection of queries: charged first, counted on the workers.

The teacher ensembles (:class:`~skprivpred.SubsampleAggregateClassifier`,
:class:`~skprivpred.SubsampleAverageClassifier`,
:class:`~skprivpred.SubsampleAverageRegressor`) answer a ``dask.array.Array``
or a ``dask.dataframe.DataFrame`` of query rows where the rows live. Each
answering method describes how it answers as a :class:`QueryPlan` (the secret
values of a block of rows, the draw of the answers from them, the
post-processing), the same plan its in-memory path runs; :func:`answer_queries`
runs it on a cluster, in this order:

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
   own query validation and dry run
   (:meth:`~skprivpred._subsample.SubsampleMixin._validate_queries`). Only
   lengths, a verdict and those few query rows reach the client. A bad row
   refuses the call here, before the charge, as in memory.
4. **The charge** for all rows, through
   :meth:`~skprivpred._base.PrivatePredictorMixin._release` (one committed
   ledger transaction, under the estimator's lock, as for an in-memory batch),
   and *then*, inside the same call, the secret values (vote counts, teacher
   averages) are computed on the workers (the fitted teachers are shipped to
   them once per call as one graph key), gathered block by block in row order,
   and the noise is drawn in the client from the query stream.
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
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.utils.validation import check_array, check_is_fitted, validate_data

from ._base import keep_frame
from ._dask import import_dask

__all__ = ["HEAD_ROWS", "QueryPlan", "answer_queries", "free_answers"]

#: Query rows (the first of the collection) computed into the client for the public
#: checks that need rows: the estimator's query validation and its dry run.
HEAD_ROWS = 100

_SPARSE_FORMATS = ["csr", "csc"]


@dataclass(frozen=True)
class QueryPlan:
    """How an answering method answers a batch of validated query rows.

    Attributes
    ----------
    values : callable
        ``values(rows, n_jobs)``: the secret values of the rows, one entry per
        row along the first axis (vote counts, teacher averages). Picklable:
        on a cluster it runs on the workers, so it must hold the fitted
        teachers and public constants only (never the accountant or the
        query stream).
    draw : callable
        ``draw(values, rng)``: the released answers, noise from ``rng``.
    finish : callable
        Post-processing of the drawn answers (labels from indices, clipping).
    epsilon, delta, rho : float
        The per-row charge.
    row_wise : bool
        Whether ``draw`` on consecutive blocks of rows, in order, with one
        stream, gives exactly ``draw`` on the whole batch (a sampler that uses a
        fixed number of uniforms per row). Then a cluster call draws block by
        block and holds one block of secret values at a time; otherwise it
        gathers them all and draws once.
    """

    values: Callable[[Any, int | None], np.ndarray]
    draw: Callable[[np.ndarray, np.random.Generator], np.ndarray]
    finish: Callable[[np.ndarray], np.ndarray]
    epsilon: float
    delta: float = 0.0
    rho: float | None = None
    row_wise: bool = False

    def answer(self, estimator, rows, n_jobs: int | None) -> np.ndarray:
        """The in-memory path: values, then the charge and the draw, then post-processing."""
        values = self.values(rows, n_jobs)
        drawn = estimator._release(
            values.shape[0],
            self.epsilon,
            lambda rng: self.draw(values, rng),
            delta=self.delta,
            rho=self.rho,
        )
        return self.finish(drawn)


# -- tasks (run where the blocks live) -----------------------------------------------------
def _checked(block, estimator_name: str):
    """The block as an in-memory batch is checked (finite, scalar entries); frames kept."""
    from ._subsample import _refuse_non_scalar_entries

    rows = check_array(
        block,
        accept_sparse=_SPARSE_FORMATS,
        dtype=None,
        ensure_all_finite=True,
        ensure_min_samples=0,
        input_name="X",
        estimator=estimator_name,
    )
    _refuse_non_scalar_entries(rows)
    return keep_frame(block, rows)


def _inspect_block(block, estimator_name: str, head_rows: int):
    """Public facts of one block: its length, the refusal of its rows if any, its first rows."""
    n_rows = int(block.shape[0])
    try:
        _checked(block, estimator_name)
    except (ValueError, TypeError) as error:
        return n_rows, (type(error), str(error)), None
    head = block.iloc[:head_rows] if hasattr(block, "iloc") else np.asarray(block[:head_rows])
    return n_rows, None, head


def _block_values(values, block, estimator_name: str) -> np.ndarray:
    """The secret values of one block (on a worker): its rows checked as in the first pass."""
    return np.asarray(values(_checked(block, estimator_name), 1))


def _block_free(answer, block, estimator_name: str) -> np.ndarray:
    """A free answer (post-processing of a released model) of one block."""
    return np.asarray(answer(_checked(block, estimator_name)))


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
    """Step 1: fitted, two-dimensional, the fitted width and names (no task runs)."""
    check_is_fitted(estimator, "n_teachers_")
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


def refuse_if_over_budget(estimator, n_rows: int, plan: QueryPlan) -> None:
    """Raise the refusal that charging ``n_rows`` rows would raise now; charge nothing.

    The accountant's own decision (budget, horizon, linked budgets) on its
    ledger as stored, without a transaction: the charge itself, later, decides
    again (and may still refuse if another process spent meanwhile).
    """
    accountant = estimator._charged_accountant()
    if accountant is not None:
        accountant._refuse_if_over(
            n_rows, plan.epsilon, plan.delta, plan.rho, horizon=estimator.__dict__.get("_horizon")
        )


def _inspect(estimator, blocks: list, name: str) -> tuple[list[int], Any]:
    """Step 3: the lengths of the blocks, the first refusal, the first rows (public)."""
    (dask,) = import_dask("dask", who=f"{name} on dask queries")
    tasks = [dask.delayed(_inspect_block, pure=True)(b, name, HEAD_ROWS) for b in blocks]
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


def answer_queries(estimator, X, plan: QueryPlan):
    """Answer every row of the dask collection ``X`` by ``plan``, charged before any vote.

    Parameters
    ----------
    estimator : fitted teacher ensemble
        Its ``_validate_queries`` (on the first rows), ``_release`` and
        accountant are used.
    X : dask.array.Array or dask.dataframe.DataFrame
        The query rows.
    plan : QueryPlan
        What the answering method computes and draws.

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
    lengths, head = _inspect(estimator, blocks, name)
    n_rows = int(sum(lengths))
    if head is None:  # no rows at all: refused as an empty in-memory batch is
        estimator._validate_queries(_schema_rows(X))
        raise AssertionError("an empty batch is refused by validation")  # pragma: no cover
    estimator._validate_queries(head)  # the fitted schema, the dry run (public rows)
    values = dask.delayed(plan.values, name=f"skprivpred-teachers-{uuid.uuid4().hex}")
    tasks = [dask.delayed(_block_values, pure=True)(values, b, name) for b in blocks]

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

    answers = estimator._release(n_rows, plan.epsilon, draw, delta=plan.delta, rho=plan.rho)
    return _as_dask_array(answers)


def free_answers(estimator, X, answer: Callable[[Any], np.ndarray], dtype, trailing=()):
    """Answers that cost nothing (a model fitted on released answers), lazily per block.

    Post-processing: ``answer`` runs on each block where it lives, with no
    charge and no noise, so a recomputation gives the same values.
    """
    name = type(estimator).__name__
    dask, da = import_dask("dask", "dask.array", who=f"{name} on dask queries")
    _check_schema(estimator, X)
    blocks, _ = _blocks(X)
    fn = dask.delayed(answer, name=f"skprivpred-student-{uuid.uuid4().hex}")
    pieces = [
        da.from_delayed(
            dask.delayed(_block_free, pure=True)(fn, b, name),
            shape=(np.nan, *trailing),
            dtype=dtype,
        )
        for b in blocks
    ]
    return da.concatenate(pieces, axis=0)
