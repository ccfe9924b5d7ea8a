"""The input check every layer of the teacher engine shares: accepted sparse formats,
and the refusal of non-scalar entries.
"""

from __future__ import annotations

import numpy as np

_SPARSE_FORMATS = ["csr", "csc"]


# Entries no base estimator reads as one feature value.
_CONTAINERS = (dict, list, tuple, set, frozenset, np.ndarray)


def _refuse_non_scalar_entries(X) -> None:
    """Refuse an object array holding a container (a dict, a list, a set, an array).

    Object arrays stay as they are otherwise (strings and missing values may be
    meant for an encoder inside the base estimator), but a container must fail
    here, for every partition alike: a teacher whose block has a single label is
    a constant and never calls the base estimator's ``fit``, so leaving the
    error to the teachers would make it depend on the random partition. Only
    the set of entry types is formed (one pass in C), as this runs on every
    query batch of an object array.

    Raises
    ------
    TypeError
        Naming the type of the container.
    """
    if not (isinstance(X, np.ndarray) and X.dtype == object):
        return
    containers = sorted(t.__name__ for t in set(map(type, X.ravel())) if issubclass(t, _CONTAINERS))
    if containers:
        raise TypeError(
            f"X holds a {containers[0]} as an entry: each argument must be a string or a "
            "number (or a missing value), never a container."
        )
