"""Row helpers shared by the teacher engine and the hypothesis classes: taking and
concatenating rows, one output per row.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse


def take_rows(X, index: np.ndarray | slice):
    """Rows ``index`` of ``X``: a pandas object, a sparse matrix or an array."""
    if hasattr(X, "iloc"):
        return X.iloc[index]
    return X[index]


def concat_rows(blocks: list):
    """Stack row blocks that may mix kinds (DataFrames, sparse matrices, arrays).

    If any block is a DataFrame the result is one, the other blocks taking its
    columns and dtypes; otherwise any sparse block makes the result sparse.
    """
    frames = [b for b in blocks if hasattr(b, "iloc")]
    if frames:
        import pandas as pd

        template = frames[0]

        def as_frame(block):
            if hasattr(block, "iloc"):
                return block
            dense = block.toarray() if sparse.issparse(block) else np.asarray(block)
            frame = pd.DataFrame(dense, columns=template.columns)
            return frame.astype(template.dtypes.to_dict())

        return pd.concat([as_frame(b) for b in blocks], axis=0, ignore_index=True)
    if any(sparse.issparse(b) for b in blocks):
        return sparse.vstack([sparse.csr_matrix(b) for b in blocks], format="csr")
    return np.concatenate([np.asarray(b) for b in blocks], axis=0)


#: The vote of a teacher on a row it cannot answer: the first label of the public label set.
FALLBACK_LABEL_INDEX = 0


def one_per_row(output, n_rows: int) -> np.ndarray:
    """``output`` as a 1-D array of ``n_rows`` entries (a single column is accepted)."""
    output = np.asarray(output)
    if output.ndim == 2 and output.shape[1] == 1:
        output = output[:, 0]
    if output.shape != (n_rows,):
        raise ValueError(f"expected one output per row ({n_rows}), got shape {output.shape}.")
    return output
