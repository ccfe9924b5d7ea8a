"""Recognising dask collections, and importing dask with a clear message when it is missing.

dask is an optional dependency (the ``dask`` extra: ``dask[distributed]``, pandas and
pyarrow, which ``dask.dataframe`` needs). A ``dask.array.Array`` or a
``dask.dataframe`` collection handed to an estimator must never be computed into the
client by accident (``np.asarray`` on a dask array gathers every row): the estimators
that take dask collections check with :func:`is_dask_collection` first, and the others
refuse one with :func:`refuse_dask_collection`, before anything is charged.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType

__all__ = [
    "DASK_INSTALL",
    "import_dask",
    "is_dask_collection",
    "refuse_dask_collection",
]

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


def refuse_dask_collection(estimator, X, method: str, *, name: str = "X") -> None:
    """Refuse a dask collection for a method that does not take one, before any charge.

    A dask collection turned into an ndarray by the usual input checks would be
    computed whole into the client: for data on a cluster that is exactly what must
    not happen, so it is refused with the estimators that do take dask collections.
    """
    if not is_dask_collection(X):
        return
    raise TypeError(
        f"{type(estimator).__name__}.{method} does not take a dask collection as {name} "
        f"(got {type(X).__module__}.{type(X).__name__}): it would be computed whole into "
        "this process. SufficientStatisticClassifier, SufficientStatisticRegressor, "
        "SubsampleAggregateClassifier, SubsampleAverageClassifier and "
        "SubsampleAverageRegressor fit and answer dask collections where they live; for "
        f"any other estimator, compute the rows first ({name}.compute()) if they fit in "
        "memory. Nothing was fitted, answered or charged."
    )
