"""Synthetic data shared by the speed benchmarks (no download: any revision, any machine)."""

import warnings

import numpy as np


def classification(n_rows: int, n_features: int = 20, seed: int = 0):
    """Rows from a standard normal, labelled by a noiseless linear rule."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_rows, n_features))
    return X, (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)


def quiet() -> None:
    """Silence the library's warnings (the benchmarks seed on purpose, for steady figures)."""
    warnings.simplefilter("ignore")
