"""Teachers fitted where the rows live: a dask collection cut into teacher blocks on a cluster.

Used by the ``fit`` of the subsample-and-aggregate estimators
(:class:`~skprivpred.SubsampleAggregateClassifier`,
:class:`~skprivpred.SubsampleAverageClassifier`,
:class:`~skprivpred.SubsampleAverageRegressor`) when ``X`` and ``y`` are dask
collections (a ``dask.array.Array`` or a ``dask.dataframe`` DataFrame for ``X``; a
1-D array or a Series for ``y``). X and y are paired **by position**, as in memory:
row ``i`` of X (counted over its partitions in order) with row ``i`` of y, whatever
their indexes, divisions or partitionings (never by index, as ``X.assign(y=...)``
would: a shuffle on the index that reorders the rows). When y is partitioned
otherwise than X, y's rows are cut by the row counts of X's partitions. The
labelled rows are never computed into the client; what reaches it is:

1. one small summary per partition of X and of y (its number of rows, whether its
   entries pass the same checks as in memory, and for a classifier the labels y's
   holds), from which the client takes the public ``n`` and each partition's
   global offset.
   The per-partition counts are used for the offsets only, never stored or
   shown (in a layout partitioned by a column they are that column's histogram);
2. the fitted teachers (small), one pickled object per teacher.

Steps (:func:`fit_dask_teachers`), all but the last on the workers:

- **Positions.** Each partition computes, for each of its rows, the global index
  ``offset + i`` and its permuted position under the keyed permutation
  (:class:`~skprivpred._teachers._partition.KeyedPermutation`, key from the fit stream:
  the same function as the in-memory :func:`~skprivpred._teachers._partition.random_partition`).
  It first checks its length against the counted one and refuses otherwise, so a
  source that changes between the counting pass and this one can never give two
  rows one position (or one row two blocks); every teacher's block depends on
  every partition (a shuffle), so the refusal comes before any fit.
- **Shuffle.** dask.dataframe's own range shuffle (``set_index`` on the position,
  with the teachers' block boundaries as divisions) moves every row to its
  teacher's block: output partition ``j`` is exactly block ``j``, ordered by
  position, as in memory.
- **Fits.** One task per teacher on a worker, with the seed of the in-memory path
  (:func:`~skprivpred._teachers._fit.teacher_seeds`) and its isolation (``_fit_batch``,
  through the one boundary :func:`~skprivpred._teachers._isolation.call_user_code`: a copy of
  its own of the template, pickled once in the client, its own copy of its rows, a
  fixed fallback). A fit that raises (any exception) becomes the fallback teacher
  inside the task, so a task never fails by itself. A task that fails anyway died with
  its worker (``KilledWorker``: out of memory, a crash) or lost its input with a
  worker that another teacher killed (a block recomputed by the shuffle, a cancelled
  dependency): it is tried again *alone*, after all the others (dask marks every task
  that was running on a dying worker as suspect, so a teacher that kills workers could
  otherwise take an innocent neighbour with it); a teacher whose task fails alone too
  gets the fallback. Nothing of it reaches the caller.

These fits go around joblib (``n_jobs`` and joblib backends are for the in-memory
path): with a ``distributed`` client they run on its workers, otherwise on dask's
local scheduler.
"""

from __future__ import annotations

import pickle
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_array, validate_data

from .._base import finite_target_column
from ._dask import import_dask, is_dask_collection
from ._fit import ConstantTeacher, _fit_batch, teacher_code, teacher_seeds
from ._partition import KeyedPermutation, block_sizes

__all__ = [
    "DaskTrainingRows",
    "KeyedParts",
    "SourceChangedError",
    "dask_training_rows",
    "fit_dask_teachers",
    "is_dask_input",
]

_POSITION = "__skprivpred_position__"
_TARGET = "__skprivpred_target__"


class SourceChangedError(ValueError):
    """A partition of the dask input did not hold the rows counted a moment before."""


_CHANGED = (
    "the dask input changed between the pass that counted its rows and the pass that "
    "assigned them to teachers (a partition holds a different number of rows): its rows "
    "cannot be given one teacher each. Nothing was fitted or charged; persist the input "
    "(X = X.persist()) or fit from a source that does not change."
)


def is_dask_input(X, y) -> bool:
    """Whether ``fit`` takes the dask path (either argument a dask collection)."""
    return is_dask_collection(X) or is_dask_collection(y)


class KeyedParts(Sequence):
    """The teachers' blocks as rows of the training set, computed one block at a time.

    Block ``j`` is the rows at permuted positions ``[start_j, start_j + size_j)``,
    in position order (the inverse permutation of that range): what
    :func:`~skprivpred._teachers._partition.random_partition` gives in memory, without
    materialising all ``n`` indices.
    """

    def __init__(self, permutation: KeyedPermutation, n_parts: int) -> None:
        self._permutation = permutation
        self._sizes = block_sizes(permutation.n_items, n_parts)
        self._starts = np.concatenate([[0], np.cumsum(self._sizes)[:-1]])

    def __len__(self) -> int:
        return len(self._sizes)

    def __getitem__(self, j):
        if isinstance(j, slice):
            return [self[k] for k in range(*j.indices(len(self)))]
        start = int(self._starts[j])
        return self._permutation.inverse(np.arange(start, start + int(self._sizes[j])))

    def __iter__(self) -> Iterator[np.ndarray]:
        return (self[j] for j in range(len(self)))


class DaskTrainingRows:
    """Validated dask training rows: the partitions, ``n`` and the public schema."""

    def __init__(self, **fields: Any) -> None:
        self.x_parts: list = fields["x_parts"]
        self.y_parts: list = fields["y_parts"]
        self.lengths: list[int] = fields["lengths"]  # used for offsets; never stored on a model
        self.kind: str = fields["kind"]  # "array" or "frame"
        self.x_meta = fields["x_meta"]
        self.y_meta = fields["y_meta"]
        self.labels: np.ndarray | None = fields["labels"]
        self.classes: np.ndarray | None = None  # set by the estimator once resolved

    @property
    def n_samples(self) -> int:
        return int(sum(self.lengths))

    @property
    def shape(self) -> tuple[int, int]:
        return (self.n_samples, self.x_meta.shape[1])


def _as_parts(X, y, who: str) -> tuple[list, list, str, Any, Any]:
    """The row partitions of X and of y, each in order, as two lists of delayed objects.

    Nothing pairs them here: :func:`dask_training_rows` pairs them by position (row
    ``i`` of X with row ``i`` of y, counted over the partitions in order), as memory
    does. Never by index: ``X.assign(y=...)`` would align them by a shuffle on the
    index, which changes the rows' order (and so the seeded teachers), pairs rows
    differently from memory, and fails on an unnamed Series.
    """
    (da, dd) = import_dask("dask.array", "dask.dataframe", who=who)
    if isinstance(y, da.Array) and y.ndim == 1:
        y_parts, y_meta = list(y.to_delayed()), np.empty(0, y.dtype)
    elif isinstance(y, dd.Series):
        y_parts, y_meta = list(y.to_delayed()), y._meta
    else:
        raise TypeError(
            "y must be a 1-D dask array or a dask Series (paired with X's rows by position, "
            f"as in memory), got {type(y).__module__}.{type(y).__name__}."
        )
    if isinstance(X, da.Array):
        if X.ndim != 2:
            raise ValueError(f"X must be a 2-D dask array, got {X.ndim} dimension(s).")
        if len(X.chunks[1]) > 1:
            X = X.rechunk({1: -1})
        x_parts = list(X.to_delayed()[:, 0])
        return x_parts, y_parts, "array", np.empty((0, X.shape[1]), X.dtype), y_meta
    if isinstance(X, dd.DataFrame):
        shared = _one_source(X, y, dd)
        if shared is not None:  # one read of each partition gives both (sources may change)
            x_parts, y_parts = shared
        else:
            x_parts = list(X.to_delayed())
        return x_parts, y_parts, "frame", X._meta, y_meta
    raise TypeError(
        "X must be a dask.array.Array or a dask.dataframe.DataFrame (with y a dask array or "
        f"Series), got {type(X).__module__}.{type(X).__name__} with "
        f"{type(y).__module__}.{type(y).__name__}; pass both as dask collections or both "
        "in memory."
    )


def _one_source(X, y, dd) -> tuple[list, list] | None:
    """X's and y's partitions cut from one read of the frame both select from, if they do.

    ``X = df[features]`` and ``y = df[label]`` are two selections of the same frame (a
    filtered one included): each partition of that frame is then read once per pass and
    split into X's columns and y's (the same rows, by position). Otherwise (or if dask's
    expressions cannot tell) None: X and y are read as they are.
    """
    from dask import delayed

    try:
        from dask.dataframe.dask_expr._expr import Projection

        x_expr, y_expr = X.expr, y.expr
        if not (isinstance(x_expr, Projection) and isinstance(y_expr, Projection)):
            return None
        if x_expr.frame._name != y_expr.frame._name:
            return None
        columns, label = list(X.columns), y_expr.operand("columns")
        if isinstance(label, list) or label != y.name:
            return None
        from dask.dataframe.dask_expr import new_collection

        parent = new_collection(x_expr.frame)
        parts = parent[list(dict.fromkeys([*columns, label]))].to_delayed()
    except Exception:  # noqa: BLE001 - dask's expression internals vary by version
        return None
    return (
        [delayed(_select, pure=True)(part, columns) for part in parts],
        [delayed(_select, pure=True)(part, label) for part in parts],
    )


def _select(frame, columns):
    """Columns of one partition (a DataFrame for a list, a Series for one name)."""
    return frame[columns]


def _cut_rows(start: int, length: int, lengths: list, y_meta, *pieces):
    """Rows ``[start, start + length)`` of the concatenated ``pieces`` (y's partitions).

    Runs on a worker. Each piece is first checked against the length counted in the
    first pass (a source that changed is refused, as in :func:`_assign`).
    """
    if [len(piece) for piece in pieces] != list(lengths):
        raise SourceChangedError(_CHANGED)
    if not pieces:
        return np.asarray(y_meta)
    values = np.concatenate([np.asarray(piece) for piece in pieces])
    return values[start : start + length]


def _recut(y_parts: list, y_lengths: list[int], x_lengths: list[int], y_meta) -> list:
    """y's rows cut as X's partitions cut theirs (by the counted lengths): pairs by position."""
    from dask import delayed

    y_starts = np.concatenate([[0], np.cumsum(y_lengths)]).astype(int)
    recut, start = [], 0
    for length in x_lengths:
        stop = start + length
        # y's partitions that hold a row of [start, stop): those that start before stop and
        # end after start (none for an empty partition of X).
        keep = [
            k
            for k in range(len(y_parts))
            if length and y_starts[k] < stop and y_starts[k + 1] > start and y_lengths[k]
        ]
        offset = int(start - y_starts[keep[0]]) if keep else 0
        recut.append(
            delayed(_cut_rows, pure=True)(
                offset,
                int(length),
                [int(y_lengths[k]) for k in keep],
                y_meta,
                *[y_parts[k] for k in keep],
            )
        )
        start = stop
    return recut


def _summarize_x(x_part) -> dict:
    """What one partition of X tells the client: its number of rows, whether it passes."""
    from ._input import _SPARSE_FORMATS, _refuse_non_scalar_entries

    summary: dict[str, Any] = {"n": int(x_part.shape[0]), "ok": True}
    if summary["n"]:
        try:
            checked = check_array(
                x_part, accept_sparse=_SPARSE_FORMATS, dtype=None, ensure_all_finite=True
            )
            _refuse_non_scalar_entries(checked)
        except (TypeError, ValueError):
            summary["ok"] = False
    return summary


def _summarize_y(y_part, classify: bool, y_numeric: bool) -> dict:
    """What one partition of y tells the client: its length, checks, its labels (a classifier)."""
    summary: dict[str, Any] = {"n": int(len(y_part)), "ok": True}
    summary["labels"] = None
    summary["target_error"] = None
    if summary["n"]:
        try:
            y = finite_target_column(np.asarray(y_part))
            if y_numeric and y.dtype.kind not in "biuf":
                raise ValueError
        except (TypeError, ValueError):
            summary["ok"] = False
        else:
            if classify:
                try:
                    check_classification_targets(y)
                except ValueError as error:  # the message names the target's type only
                    summary["target_error"] = str(error)
                else:
                    summary["labels"] = np.unique(y)
    return summary


def dask_training_rows(
    estimator, X, y, *, classify: bool, y_numeric: bool = False
) -> DaskTrainingRows:
    """Check dask training rows where they live; set ``n_features_in_`` (and feature names).

    One pass over the partitions (:func:`_summarize_x`, :func:`_summarize_y`); X and y
    are then paired by position (:func:`_recut` when their partitionings differ), and
    every later pass checks each partition's length on the worker. Nothing but the summaries
    reaches the client. Raises the errors of the in-memory checks (with messages
    that name no row and no partition).
    """
    who = f"{type(estimator).__name__}.fit on a dask collection"
    (dask,) = import_dask("dask", who=who)
    if not (is_dask_collection(X) and is_dask_collection(y)):
        raise TypeError(
            f"{type(estimator).__name__}.fit takes X and y both as dask collections or both in "
            f"memory, got X of type {type(X).__name__} and y of type {type(y).__name__}."
        )
    x_parts, y_parts, kind, x_meta, y_meta = _as_parts(X, y, who)
    from dask import delayed

    computed = dask.compute(
        *[delayed(_summarize_x, pure=True)(xp) for xp in x_parts],
        *[delayed(_summarize_y, pure=True)(yp, classify, y_numeric) for yp in y_parts],
    )
    x_summaries, y_summaries = computed[: len(x_parts)], computed[len(x_parts) :]
    lengths = [s["n"] for s in x_summaries]
    y_lengths = [s["n"] for s in y_summaries]
    if sum(lengths) != sum(y_lengths):
        raise ValueError(
            "X and y do not hold the same number of rows: fit pairs row i of X with row i of "
            "y (counted over the partitions in order), as in memory. Nothing was fitted or "
            "charged."
        )
    if sum(lengths) == 0:
        raise ValueError("X holds no rows: fit needs at least one training row.")
    if y_lengths != lengths:  # other partitionings: y is cut by the row counts of X's
        y_parts = _recut(y_parts, y_lengths, lengths, y_meta)
    if not all(s["ok"] for s in x_summaries):
        raise ValueError(
            "X holds an entry that fit refuses (NaN, infinity, or a value that is neither a "
            "number nor a string); the same check as for rows in memory."
        )
    if not all(s["ok"] for s in y_summaries):
        raise ValueError(
            "y holds NaN or infinity"
            + (", or a value that is not a number" if y_numeric else "")
            + "; the same check as for rows in memory."
        )
    labels = None
    if classify:
        errors = [s["target_error"] for s in y_summaries if s["target_error"]]
        if errors:
            raise ValueError(errors[0])
        labels = np.unique(
            np.concatenate([s["labels"] for s in y_summaries if s["labels"] is not None])
        )
    # The public schema: the number of columns and their names, from the metadata only.
    validate_data(estimator, x_meta, reset=True, skip_check_array=True)
    return DaskTrainingRows(
        x_parts=x_parts,
        y_parts=y_parts,
        lengths=lengths,
        kind=kind,
        x_meta=x_meta,
        y_meta=y_meta,
        labels=labels,
    )


def _free_name(base: str, taken) -> str:
    name = base
    while name in taken:
        name = "_" + name
    return name


def _assign(x_part, y_part, offset: int, length: int, key, n_samples: int, kind, target, position):
    """One partition as a frame of its rows, their target and their permuted positions."""
    import pandas as pd

    if x_part.shape[0] != length or len(y_part) != length:
        raise SourceChangedError(_CHANGED)
    if kind == "array":
        x_part = np.asarray(x_part)  # (string column names: the shuffle keeps those only)
        frame = pd.DataFrame(x_part, columns=[f"x{i}" for i in range(x_part.shape[1])])
    else:
        frame = x_part.reset_index(drop=True)
    frame[target] = np.asarray(y_part)
    permutation = KeyedPermutation(n_samples, key)
    frame[position] = permutation.forward(offset + np.arange(length, dtype=np.int64))
    return frame


def _fit_block(block, estimator, seeds: dict, classes, kind: str, target: str, fallback):
    """Fit one teacher on its block (on a worker); the pickled teacher, or None if it failed.

    ``estimator`` is the template's :class:`~skprivpred._teachers._isolation.UserCode` (one
    cloudpickle payload, made in the client): the fit goes through the one
    boundary (:func:`~skprivpred._teachers._fit._fit_batch`, hence
    :func:`~skprivpred._teachers._isolation.call_user_code`), with a copy of its own, its
    block handed as an object of its own, and its fallback. The block arrives
    ordered by permuted position (the shuffle's sort), as in memory. Whatever
    happens inside (any exception, even a ``BaseException``, or a teacher that
    cannot be pickled) gives None, which the client turns into the fallback
    teacher.
    """
    try:
        X_part = block.drop(columns=[target])
        if kind == "array":
            X_part = np.ascontiguousarray(X_part.to_numpy())
        y_part = np.asarray(block[target].to_numpy())
        y_index = None if classes is None else np.searchsorted(classes, y_part)
        [teacher] = _fit_batch(estimator, [(seeds, X_part, y_part, y_index)], fallback)
        import cloudpickle  # type: ignore[import-untyped]

        return cloudpickle.dumps(teacher)
    except BaseException:  # noqa: BLE001 - whether a fit fails depends on the block's rows
        return None


def _default_client():
    try:
        from distributed import default_client
    except ImportError:
        return None
    try:
        return default_client()
    except ValueError:  # no client: dask's local scheduler
        return None


def fit_dask_teachers(
    estimator,
    rows: DaskTrainingRows,
    n_teachers: int,
    rng: np.random.Generator,
    fallback: ConstantTeacher,
) -> tuple[list, KeyedParts]:
    """Fit one teacher per block of the keyed partition of dask rows (see the module docstring).

    Draws from ``rng`` exactly what the in-memory path draws (the permutation's
    key, then the teachers' seeds), so with an integer seed the blocks, their
    row order and the teachers are the in-memory ones.

    Returns
    -------
    teachers : list
        The fitted teachers in block order (``fallback`` where a fit failed).
    parts : KeyedParts
        The blocks, as training-row indices (computed on demand).
    """
    (dask, dd) = import_dask("dask", "dask.dataframe", who="fit on a dask collection")
    from dask import delayed

    n = rows.n_samples
    permutation = KeyedPermutation.from_rng(n, rng)
    seeds = teacher_seeds(estimator, n_teachers, rng)
    # The template pickled once, here, before any row is moved (one that cannot be pickled
    # is refused now); every worker task unpickles a copy of its own (the boundary).
    code = teacher_code(estimator)
    taken = set(map(str, rows.x_meta.columns)) if rows.kind == "frame" else set()
    target = _free_name(_TARGET, taken)
    position = _free_name(_POSITION, taken | {target})
    offsets = np.concatenate([[0], np.cumsum(rows.lengths)[:-1]]).astype(int)
    common = (permutation.key, n, rows.kind, target, position)
    meta = _assign(rows.x_meta, rows.y_meta, 0, 0, *common)
    assigned = [
        delayed(_assign, pure=True)(xp, yp, int(offset), int(length), *common)
        for xp, yp, offset, length in zip(rows.x_parts, rows.y_parts, offsets, rows.lengths)
    ]
    frame = dd.from_delayed(assigned, meta=meta, verify_meta=False)
    sizes = block_sizes(n, n_teachers)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    divisions = (*(int(s) for s in starts), n)  # block j = positions [start_j, start_j+1)
    blocks = frame.set_index(position, divisions=divisions).to_delayed()
    classes = rows.classes
    client = _default_client()
    if client is None:  # dask's local scheduler: the fit tasks never raise on their own
        payloads = list(
            dask.compute(
                *[
                    delayed(_fit_block, pure=False)(
                        block, code, seeds[j], classes, rows.kind, target, fallback
                    )
                    for j, block in enumerate(blocks)
                ]
            )
        )
    else:
        payloads = _fit_on_cluster(
            client, blocks, code, seeds, classes, rows.kind, target, fallback
        )
    teachers = []
    for payload in payloads:
        teacher = fallback
        if payload is not None:
            try:
                teacher = pickle.loads(payload)  # noqa: S301 - from the cluster's own workers
            except Exception:  # noqa: BLE001 - a teacher that does not unpickle here
                teacher = fallback
        teachers.append(teacher)
    return teachers, KeyedParts(permutation, n_teachers)


def _fit_on_cluster(client, blocks, estimator, seeds, classes, kind, target, fallback) -> list:
    """One fit task per teacher on the workers; failures become None (the fallback)."""
    from distributed import as_completed, wait

    block_futures = client.compute(blocks)
    token = uuid.uuid4().hex

    def submit(j: int, attempt: str):
        return client.submit(
            _fit_block,
            block_futures[j],
            estimator,
            seeds[j],
            classes,
            kind,
            target,
            fallback,
            key=f"skprivpred-fit-teacher-{token}-{attempt}-{j}",
            pure=False,
        )

    def upstream_error(j: int) -> None:
        """Raise the error of block ``j`` itself (the input, the shuffle), if it has one."""
        if block_futures[j].status == "error":
            error = block_futures[j].exception()
            if isinstance(error, SourceChangedError):
                raise SourceChangedError(_CHANGED)
            raise error

    payloads: list = [None] * len(blocks)
    retried = []
    fits: dict = {}
    try:
        # Every block is in the cluster's memory (or spilled) before any fit starts: a worker
        # that a teacher kills then takes only fits with it (retried below), never a piece of
        # the shuffle; and the fits read the blocks, not the source.
        wait(block_futures)
        for j in range(len(blocks)):
            upstream_error(j)
        fits = {submit(j, "first"): j for j in range(len(blocks))}
        for future in as_completed(list(fits)):
            j = fits[future]
            if future.status == "finished":
                payloads[j] = future.result()
                block_futures[j].release()
                continue
            wait([block_futures[j]])
            upstream_error(j)
            retried.append(j)  # _fit_block never raises: its worker died (module docstring)
        for j in sorted(retried):
            future = submit(j, "alone")
            wait([future])
            if future.status == "finished":
                payloads[j] = future.result()
            else:
                wait([block_futures[j]])
                upstream_error(j)
            block_futures[j].release()
    finally:
        for future in block_futures:
            future.release()
        for future in fits:
            future.release()
    return payloads
