"""A teacher whose answer time depends on its rows, by a CPU-bound busy loop (for the timing audit).

:class:`BusyTeacher` predicts the majority label of its block, after spinning
the CPU (holding the GIL: a sleep would release it and hide the leak) for
``slow`` seconds if its block holds a marked row (first feature 9) and for
``fast`` seconds otherwise. The probe of ``tests/audits/timing_probe.py``
serves it (``--trust timing_probe_teacher.BusyTeacher``, with this directory on the
service's ``PYTHONPATH``).
"""

from __future__ import annotations

import time

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin


class BusyTeacher(ClassifierMixin, BaseEstimator):
    """Majority label of the block, answered after a busy loop whose length depends on it."""

    def __init__(self, fast: float = 0.005, slow: float = 0.065) -> None:
        self.fast = fast
        self.slow = slow

    def fit(self, X, y):
        X, y = np.asarray(X, dtype=float), np.asarray(y)
        self.classes_ = np.unique(y)
        values, counts = np.unique(y, return_counts=True)
        self.label_ = values[np.argmax(counts)]
        self.spin_ = float(self.slow if np.any(X[:, 0] == 9.0) else self.fast)
        self.n_features_in_ = X.shape[1]
        return self

    def predict(self, X):
        end = time.perf_counter() + self.spin_
        while time.perf_counter() < end:  # CPU-bound, holding the GIL
            pass
        return np.full(np.asarray(X).shape[0], self.label_)
