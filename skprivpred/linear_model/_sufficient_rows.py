"""The rows of a sufficient-statistic fit: in memory, or partitions of dask collections
(every pass runs where the rows live; only counts and statistics reach the client).
"""

from __future__ import annotations

import numpy as np
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import validate_data

from .._base import resolve_classes
from .._semisupervised import (
    check_classes_exclude_marker,
    check_labelled_classes,
    check_row_kinds,
    classification_rows,
    regression_rows,
    unlabelled_mask,
    warn_unlabelled_at_fit,
)
from .._teachers._dask import import_dask_for, is_dask_collection, reduce_partitions
from .._teachers._dry_run import check_numeric_rows
from ._basis import _MAX_LABELS, labelled_statistic


# -- partitions of dask collections (each function runs on the worker holding it) ------------
def _partition_rows(X_part, y_part, regression: bool):
    """A partition's rows as a float array, its targets and its labelled mask."""
    X = np.asarray(X_part, dtype=np.float64)
    y = np.asarray(y_part)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if regression:
        y = y.astype(np.float64)
        return X, y, ~np.isnan(y)
    return X, y, ~unlabelled_mask(y)


def _labels(y: np.ndarray) -> np.ndarray:
    return np.asarray(y.tolist()) if y.dtype == object else y


def _count_partition(X_part, y_part, regression: bool, classes) -> dict:
    """Pass 1: counts and the checks ``fit`` makes on rows in memory (no value leaves)."""
    X = np.asarray(X_part)
    y = np.asarray(y_part)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    out: dict = {"n_rows": int(X.shape[0]), "aligned": y.ndim == 1 and y.shape[0] == X.shape[0]}
    if not out["aligned"]:
        return out
    out["finite"] = bool(np.all(np.isfinite(np.asarray(X, dtype=np.float64))))
    if regression:
        try:
            y = y.astype(np.float64)
        except (TypeError, ValueError):
            out["numeric"] = False
            return out
        out["numeric"], out["infinite"] = True, bool(np.isinf(y).any())
        out["n_public"] = int(np.isnan(y).sum())
        return out
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        out["nan"] = True
        return out
    public = unlabelled_mask(y)
    out["n_public"] = int(public.sum())
    labelled = _labels(y[~public])
    if classes is not None:
        try:
            out["outside"] = bool((~np.isin(labelled, classes)).any())
        except TypeError:
            out["outside"] = bool(labelled.size)
    found = np.unique(labelled) if labelled.size else labelled
    out["labels"] = found if found.size <= _MAX_LABELS else None
    return out


def _public_partition(X_part, y_part, regression: bool, ranks) -> np.ndarray:
    """Pass 2: the partition's public rows (all, or those at the local ``ranks``)."""
    X, _, labelled = _partition_rows(X_part, y_part, regression)
    public = X[~labelled]
    return public if ranks is None else public[ranks]


def _statistic_partition(X_part, y_part, regression: bool, spec, target) -> tuple:
    """Pass 3: the partition's statistic, its labelled count and whether it is finite."""
    X, y, labelled = _partition_rows(X_part, y_part, regression)
    X_labelled = X[labelled]
    y_labelled = y[labelled] if regression else _labels(y[labelled])
    finite = bool(np.all(np.isfinite(X_labelled)))
    if not finite:  # refused in the client before the release (X changed between passes)
        X_labelled = np.zeros_like(X_labelled)
    return labelled_statistic(X_labelled, y_labelled, spec, target), int(labelled.sum()), finite


# -- the rows of a fit: in memory, or partitions of dask collections ------------------------------
class _MemoryRows:
    """Rows in memory: validated as before; the statistic in one call."""

    def __init__(self, owner, X, y, regression: bool) -> None:
        X = owner._validate_X(X, reset=True)
        check = regression_rows if regression else classification_rows
        y, labelled = check(y, X.shape[0])
        self.n_public = int((~labelled).sum())
        self.n_labelled = int(labelled.sum())
        warn_unlabelled_at_fit(
            type(owner).__name__, self.n_public, labelled.size, regression=regression
        )
        y_labelled = y[labelled]
        if not regression:
            y_labelled = _labels(y_labelled)  # labels mixed with the integer marker -1
            check_classification_targets(y_labelled)
            check_labelled_classes(y_labelled, owner.classes)
            self.classes = resolve_classes(owner.classes, y_labelled, type(owner).__name__)
            check_classes_exclude_marker(self.classes)
        self._X, self._y, self._labelled = X, y_labelled, labelled

    def public_rows(self, ranks) -> np.ndarray:
        public = self._X[~self._labelled]
        return public if ranks is None else public[ranks]

    def labelled_sum(self, spec: tuple, target: tuple) -> np.ndarray:
        return labelled_statistic(self._X[self._labelled], self._y, spec, target)


class _DaskRows:
    """Rows in dask collections: every pass runs per partition, where the rows live.

    Only counts, flags, label sets, the public rows (or the public sample) and the
    per-partition statistics reach the client; the labelled rows never do.
    """

    def __init__(self, owner, X, y, regression: bool) -> None:
        name = type(owner).__name__
        import_dask_for(X, y, who=f"{name}.fit on a dask collection")
        self._pairs = _dask_fit_input(owner, X, y)
        self._regression = regression
        classes = None
        if not regression and owner.classes is not None:
            classes = np.unique(np.asarray(owner.classes))
        counts = reduce_partitions(_count_partition, self._pairs, regression, classes)
        if not all(c["aligned"] for c in counts):
            raise ValueError(
                "X and y are dask collections whose partitions do not hold the same rows: pass "
                "y partitioned like X (dask arrays with the same row chunks, or a DataFrame "
                "and a Series with the same partitions, e.g. two selections of one DataFrame)."
            )
        n_rows = sum(c["n_rows"] for c in counts)
        if not all(c["finite"] for c in counts):
            raise ValueError("Input X contains NaN or infinity.")
        if regression:
            if not all(c["numeric"] for c in counts):
                raise ValueError("y must be numeric (NaN marks an unlabelled row).")
            if any(c["infinite"] for c in counts):
                raise ValueError(
                    "y must not contain infinity (NaN marks an unlabelled public row)."
                )
        elif any(c.get("nan") for c in counts):
            raise ValueError(
                "y must not contain NaN or infinity (a classifier marks its unlabelled rows "
                "with -1)."
            )
        self._public_counts = [c["n_public"] for c in counts]
        self.n_public = sum(self._public_counts)
        self.n_labelled = n_rows - self.n_public
        self._labelled_counts = [c["n_rows"] - c["n_public"] for c in counts]
        marker = "y NaN" if regression else "y == -1"
        check_row_kinds(self.n_labelled, n_rows, marker)
        warn_unlabelled_at_fit(name, self.n_public, n_rows, regression=regression)
        if regression:
            return
        if any(c["labels"] is None for c in counts):
            raise ValueError(
                f"y has more than {_MAX_LABELS} distinct labels in a partition: it is not a "
                "classification target (pass the public label set as `classes`)."
            )
        labels = np.unique(np.concatenate([c["labels"] for c in counts]))
        check_classification_targets(labels)
        check_labelled_classes(labels, owner.classes)
        if any(c.get("outside", False) for c in counts):  # whether, never how many
            raise ValueError(
                "y contains labels outside `classes`; every training label must belong to the "
                "public label set."
            )
        self.classes = resolve_classes(owner.classes, labels, name)
        check_classes_exclude_marker(self.classes)

    def public_rows(self, ranks) -> np.ndarray:
        jobs, expected, start = [], [], 0
        for pair, count in zip(self._pairs, self._public_counts):
            if ranks is None:
                local = None
                expected.append(count)
            else:
                local = ranks[(ranks >= start) & (ranks < start + count)] - start
                expected.append(local.size)
            start += count
            jobs.append((pair, local))
        keep = [(pair, local) for (pair, local), n in zip(jobs, expected) if n > 0]
        parts = reduce_partitions(
            _public_partition,
            [pair for pair, _ in keep],
            self._regression,
            per_partition=[(local,) for _, local in keep],
        )
        if [p.shape[0] for p in parts] != [n for n in expected if n > 0]:
            raise RuntimeError(_CHANGED)
        return np.concatenate(parts, axis=0)

    def labelled_sum(self, spec: tuple, target: tuple) -> np.ndarray:
        parts = reduce_partitions(_statistic_partition, self._pairs, self._regression, spec, target)
        if [n for _, n, _ in parts] != self._labelled_counts or not all(f for _, _, f in parts):
            raise RuntimeError(_CHANGED)
        total = parts[0][0].copy()
        for statistic, _, _ in parts[1:]:
            total += statistic
        return total


_CHANGED = (
    "the dask collections X and y gave other rows in a later pass than in the first (fit "
    "reads them three times: counts, public rows, labelled statistic). Persist them "
    "(X, y = dask.persist(X, y)) or make their source deterministic. Nothing was charged."
)


def _dask_fit_input(owner, X, y) -> list:
    """Check the schema of dask ``X``, set ``n_features_in_``; the aligned partitions."""
    from .._teachers._dask import aligned_partitions

    if not (is_dask_collection(X) and is_dask_collection(y)):
        raise TypeError(
            f"{type(owner).__name__}.fit takes X and y both as dask collections, partitioned "
            f"alike, or both in memory; got X of type {type(X).__name__} and y of type "
            f"{type(y).__name__}."
        )
    meta = getattr(X, "_meta", None)
    if hasattr(X, "columns"):
        check_numeric_rows(owner, meta)
        validate_data(owner, meta, reset=True, dtype=np.float64, ensure_min_samples=0)
    else:
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D (rows, features), got a dask array of {X.ndim} dim.")
        if X.dtype.kind not in "biuf":
            raise ValueError(f"X must be numeric, got a dask array of dtype {X.dtype}.")
        validate_data(owner, np.empty((0, X.shape[1])), reset=True, ensure_min_samples=0)
    return aligned_partitions(X, y)
