"""Type aliases used in the annotations of the public API.

The data arguments accept everything scikit-learn accepts (lists, NumPy arrays,
SciPy sparse matrices, pandas objects) and are validated at run time, so their
aliases are deliberately permissive.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np

if TYPE_CHECKING:
    from typing_extensions import Self  # typing.Self needs Python 3.11
else:  # annotations are never evaluated at run time (PEP 563)
    Self = Any

#: Rows of features: an array-like, a SciPy sparse matrix or a pandas DataFrame.
MatrixLike: TypeAlias = Any
#: One-dimensional data (targets, labels, a mask): an array-like or a pandas Series.
VectorLike: TypeAlias = Any
#: What a ``random_state`` parameter accepts.
RandomStateLike: TypeAlias = (
    int | np.random.Generator | np.random.RandomState | np.random.SeedSequence | None
)

__all__ = ["MatrixLike", "RandomStateLike", "Self", "VectorLike"]
