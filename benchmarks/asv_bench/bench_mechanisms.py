"""The exact samplers and the grid releases of the linear models, and the one-release fit.

Replaces ``benchmarks/exact_samplers.py --baseline``: compare two revisions with
``asv continuous`` (``benchmarks/README.md``).
"""

import numpy as np

from skprivpred import (
    AveragedPSGDClassifier,
    AveragedPSGDRegressor,
    StableERMClassifier,
    StableERMRegressor,
    SufficientStatisticClassifier,
)
from skprivpred.mechanisms import discrete_gaussian_noise, grid_laplace_release

from ._data import quiet

MODELS = {
    "StableERMRegressor laplace": (StableERMRegressor, {}),
    "StableERMRegressor gaussian": (StableERMRegressor, {"noise": "gaussian", "delta": 1e-6}),
    "AveragedPSGDRegressor laplace": (AveragedPSGDRegressor, {}),
    "AveragedPSGDRegressor gaussian": (
        AveragedPSGDRegressor,
        {"noise": "gaussian", "delta": 1e-6},
    ),
    "StableERMClassifier": (StableERMClassifier, {}),
    "AveragedPSGDClassifier": (AveragedPSGDClassifier, {}),
}


class Samplers:
    """10,000 values from the exact discrete samplers."""

    def setup(self):
        self.rng = np.random.default_rng(0)
        self.zeros = np.zeros(10_000)

    def time_discrete_gaussian_noise(self):
        discrete_gaussian_noise(1e4, self.rng, size=10_000)

    def time_grid_laplace_release(self):
        grid_laplace_release(self.zeros, 1.0, 1.0, self.rng)


class LinearRelease:
    """A 10,000-row answer of the linear models: one exact discrete noise value per row."""

    params = list(MODELS)
    param_names = ["model"]
    timeout = 300

    def setup(self, model):
        quiet()
        rng = np.random.default_rng(0)
        X = rng.normal(size=(5_000, 10)) / 3.0
        cls, extra = MODELS[model]
        kwargs = {"random_state": 0, **extra}
        if "Regressor" in model:
            kwargs["y_bounds"] = (-1.0, 1.0)
            y = np.clip(X[:, 0] + 0.1 * rng.normal(size=X.shape[0]), -1, 1)
        else:
            y = (X[:, 0] > 0).astype(int)
        self.model = cls(**kwargs).fit(X, y)
        self.queries = rng.normal(size=(10_000, 10)) / 3.0

    def time_predict(self, model):
        self.model.predict(self.queries)


class OneReleaseFit:
    """``SufficientStatisticClassifier.fit``: one noisy statistic, 25 % unlabelled public rows.

    The release draws one discrete Gaussian per coordinate of the statistic.
    """

    params = [5_000, 20_000]
    param_names = ["rows"]
    timeout = 180

    def setup(self, rows):
        quiet()
        rng = np.random.default_rng(0)
        self.X = rng.uniform(-1.0, 1.0, size=(rows, 8))
        y = (self.X[:, 0] + 0.5 * self.X[:, 1] > 0).astype(int)
        self.y = np.where(rng.permutation(rows) < rows // 4, -1, y)

    def time_fit(self, rows):
        SufficientStatisticClassifier(classes=[0, 1], random_state=0).fit(self.X, self.y)
