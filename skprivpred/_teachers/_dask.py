"""Recognising dask collections, and importing dask with a clear message when it is missing.

dask is an optional dependency (the ``dask`` extra: ``dask[distributed]``, pandas and
pyarrow, which ``dask.dataframe`` needs). A ``dask.array.Array`` or a
``dask.dataframe`` collection handed to an estimator must never be computed into the
client by accident (``np.asarray`` on a dask array gathers every row): the estimators
that take dask collections check with :func:`is_dask_collection` first, and the others
refuse one with :func:`refuse_dask_collection`, before anything is charged.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import sys
from types import ModuleType

__all__ = [
    "ANSWERING_METHODS",
    "DASK_INSTALL",
    "DASK_METHODS",
    "dask_methods",
    "import_dask",
    "import_dask_for",
    "install_dask_refusal",
    "refusing_dask",
    "is_dask_collection",
    "refuse_dask_collection",
]

#: The public methods of an estimator that read rows: each refuses a dask collection
#: (:func:`install_dask_refusal`) unless :data:`DASK_METHODS` says it takes one.
ANSWERING_METHODS = (
    "fit",
    "partial_fit",
    "fit_predict",
    "predict",
    "predict_proba",
    "predict_log_proba",
    "decision_function",
    "score",
    "score_samples",
)

_TAKES = frozenset({"fit", "predict", "predict_proba", "decision_function"})

#: The estimators that take dask collections, and in which methods (every other
#: method of theirs, and every method of every other estimator, refuses one).
DASK_METHODS: dict[str, frozenset[str]] = {
    "skprivpred.linear_model._sufficient.SufficientStatisticClassifier": _TAKES,
    "skprivpred.linear_model._sufficient.SufficientStatisticRegressor": _TAKES,
    # The teacher ensembles also score dask queries (each row charged once, then answered).
    "skprivpred.ensemble._aggregate.SubsampleAggregateClassifier": _TAKES | {"score"},
    "skprivpred.ensemble._averaging.SubsampleAverageClassifier": _TAKES | {"score"},
    "skprivpred.ensemble._averaging.SubsampleAverageRegressor": _TAKES | {"score"},
}

# What every message about a missing part of the extra says.
DASK_INSTALL = 'pip install "skprivpred[dask]" (or, from a checkout, pip install -e ".[dask]")'


def is_dask_collection(obj) -> bool:
    """Whether ``obj`` is a dask collection (array, DataFrame, Series, bag, delayed).

    Never imports dask: an object can only be a dask collection if dask is already
    imported, so a process without dask pays nothing.
    """
    if "dask" not in sys.modules:
        return False
    try:
        from dask import is_dask_collection as dask_is_collection
    except ImportError:  # a broken or partial install: not a collection we can read
        return False
    return bool(dask_is_collection(obj))


def dask_methods(cls: type) -> frozenset[str]:
    """The methods of the class ``cls`` (not of its subclasses) that take dask collections."""
    return DASK_METHODS.get(f"{cls.__module__}.{cls.__qualname__}", frozenset())


def import_dask(*modules: str, who: str) -> list[ModuleType]:
    """Import the named dask modules, or raise ImportError naming the extra.

    Parameters
    ----------
    *modules : str
        Module names, e.g. ``"dask.array"``, ``"dask.dataframe"``, ``"distributed"``.
    who : str
        What needs them, for the message (e.g. ``"SufficientStatisticClassifier.fit
        on a dask DataFrame"``).

    Returns
    -------
    list of module
        The imported modules, in the order given.
    """
    imported = []
    for name in modules:
        try:
            imported.append(importlib.import_module(name))
        except ImportError as error:
            raise ImportError(
                f"{who} needs {name}, which cannot be imported here ({error}). Install "
                f"the dask extra, which brings dask, distributed, pandas and pyarrow: "
                f"{DASK_INSTALL}. Nothing was fitted, answered or charged."
            ) from error
    return imported


def import_dask_for(*collections, who: str) -> None:
    """Import every part of the dask extra that dask input needs, or raise ImportError.

    Any dask input needs ``dask.array`` and ``distributed``; a ``dask.dataframe``
    collection (among ``collections``) also ``pandas``, ``pyarrow`` and ``dask.dataframe``.
    The message names the extra (:func:`import_dask`); nothing has been read or charged.
    """
    modules = ["dask", "dask.array", "distributed"]
    if any(type(c).__module__.startswith("dask.dataframe") for c in collections):
        modules += ["pandas", "pyarrow", "dask.dataframe"]
    import_dask(*modules, who=who)


def refuse_dask_collection(estimator, X, method: str, *, name: str = "X") -> None:
    """Refuse a dask collection for a method that does not take one, before any charge.

    A dask collection turned into an ndarray by the usual input checks would be
    computed whole into the client: for data on a cluster that is exactly what must
    not happen, so it is refused with the estimators that do take dask collections.
    """
    if not is_dask_collection(X):
        return
    takes = sorted(dask_methods(type(estimator)))
    if takes:
        hint = (
            f"{type(estimator).__name__} takes dask collections in {', '.join(takes)}; call "
            f"one of them (e.g. predict on the collection, then compare on the cluster), or "
            f"compute the rows first ({name}.compute()) if they fit in memory."
        )
    else:
        names = sorted(key.rsplit(".", 1)[1] for key in DASK_METHODS)
        hint = (
            f"{', '.join(names)} fit and answer dask collections where they live; for any "
            f"other estimator, compute the rows first ({name}.compute()) if they fit in memory."
        )
    raise TypeError(
        f"{type(estimator).__name__}.{method} does not take a dask collection as {name} "
        f"(got {type(X).__module__}.{type(X).__name__}): it would be computed whole into "
        f"this process. {hint} Nothing was fitted, answered or charged."
    )


def refusing_dask(function, method: str):
    """``function`` (a method) preceded by the refusal of a dask collection in any argument."""
    names = list(inspect.signature(function).parameters)[1:]

    @functools.wraps(function)
    def refusing(self, *args, **kwargs):
        if "dask" in sys.modules:  # no dask imported: no argument can be a collection
            for position, value in enumerate(args):
                name = names[position] if position < len(names) else f"argument {position + 1}"
                refuse_dask_collection(self, value, method, name=name)
            for name, value in kwargs.items():
                refuse_dask_collection(self, value, method, name=name)
        return function(self, *args, **kwargs)

    refusing._refuses_dask = True  # type: ignore[attr-defined]
    return refusing


def install_dask_refusal(cls: type) -> None:
    """Make every answering method that ``cls`` defines refuse dask collections first.

    Called for every subclass of the private-predictor mixin (as scikit-learn's
    ``_SetOutputMixin.__init_subclass__`` wraps ``transform``): each method of
    :data:`ANSWERING_METHODS` that the class has (defined in its body or inherited
    from a base that does not refuse yet) is wrapped so that a dask
    collection in any argument raises :func:`refuse_dask_collection`'s ``TypeError``
    before the method runs (nothing validated, fitted, charged or computed), except
    the methods :data:`DASK_METHODS` lists for the class.
    """
    takes = dask_methods(cls)
    for method in ANSWERING_METHODS:
        # The nearest definition, in the class or in a base (mixins of queries included).
        function = next((k.__dict__[method] for k in cls.__mro__ if method in k.__dict__), None)
        if not inspect.isfunction(function):
            continue
        if method in takes:
            if getattr(function, "_refuses_dask", False):  # a base's refusal: take it off
                setattr(cls, method, function.__wrapped__)  # type: ignore[attr-defined]
            continue
        if getattr(function, "_refuses_dask", False):
            continue
        setattr(cls, method, refusing_dask(function, method))


def _row_blocks(collection) -> list:
    """One delayed object per row partition of a dask array, DataFrame or Series."""
    if hasattr(collection, "chunks"):  # a dask array: whole rows in each block
        if collection.ndim == 2:
            return list(collection.rechunk({1: -1}).to_delayed()[:, 0])
        return list(collection.to_delayed().reshape(-1))
    return list(collection.to_delayed())


def aligned_partitions(X, y) -> list[tuple]:
    """``(X partition, y partition)`` pairs of delayed objects, one per row partition.

    Two dask arrays with known row chunks are aligned by rechunking ``y`` like ``X``
    (lazily); otherwise the collections must have as many row partitions, and
    DataFrames with known divisions the same divisions. Whether each pair holds the
    same number of rows is checked on the workers (no row is read here).
    """
    if hasattr(X, "chunks") and hasattr(y, "chunks"):
        import math

        known = not any(math.isnan(c) for c in (*X.chunks[0], *y.chunks[0]))
        if known and y.shape[0] != X.shape[0]:
            raise ValueError(f"y has {y.shape[0]} entries but X has {X.shape[0]} rows.")
        if known and y.chunks[0] != X.chunks[0]:
            y = y.rechunk({0: X.chunks[0]})
    if getattr(X, "known_divisions", False) and getattr(y, "known_divisions", False):
        if tuple(X.divisions) != tuple(y.divisions):
            raise ValueError(
                "X and y are dask DataFrame/Series with different divisions: pass y "
                "partitioned like X (e.g. two selections of one DataFrame)."
            )
    X_blocks, y_blocks = _row_blocks(X), _row_blocks(y)
    if len(X_blocks) != len(y_blocks):
        raise ValueError(
            f"X has {len(X_blocks)} row partitions and y has {len(y_blocks)}: pass y "
            "partitioned like X (dask arrays with the same row chunks, or a DataFrame and a "
            "Series with the same partitions)."
        )
    return list(zip(X_blocks, y_blocks))


def reduce_partitions(function, pairs, *args, per_partition=None) -> list:
    """``function(X_part, y_part, *args, *per_partition[i])`` for every pair, on the workers.

    Runs on the current dask scheduler (the default ``distributed.Client`` if one is
    active): each call runs where its partition is computed, and only its (small)
    result comes back to this process, in partition order.
    """
    import dask

    tasks = []
    for i, (X_part, y_part) in enumerate(pairs):
        extra = () if per_partition is None else tuple(per_partition[i])
        tasks.append(dask.delayed(function, pure=True)(X_part, y_part, *args, *extra))
    return list(dask.compute(*tasks)) if tasks else []
