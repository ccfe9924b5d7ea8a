"""The default tree teacher of ``SubsampleAverageRegressor``: capped against uncapped.

What is measured
----------------
``SubsampleAverageRegressor`` with its default teacher, a ``DecisionTreeRegressor``
whose depth is capped by the public formula
``max(1, ceil(log2(n_samples // n_teachers) / 2))``
(:func:`skprivpred.averaging.default_tree_depth`), next to the same estimator with
``DecisionTreeRegressor()`` (no cap: the default before the cap), in one run:

* **diabetes** (scikit-learn's, the benchmark split of ``run.py``: 294 training rows,
  148 test rows, 10 teachers, public range ``(0, 400)``): test RMSE at ``epsilon`` 0.5,
  1 and 2 (mean over ``--seeds`` seeds), and the fit and ``predict`` times;
* **synthetic** (20,000 rows of 5 Gaussian features, a noisy target in ``[0, 1]``,
  200 teachers of 100 rows: an uncapped tree grows until its leaves hold single rows):
  the fitted depth and the levels every row descends, the fit time, the time of one
  ``predict`` of 20,000 rows, the median latency of a one-row ``predict``, and the RMSE
  of the answers (``epsilon`` 1) on 2,000 test rows.

Times are wall times (best of ``--repeats``) with the CPU time of this process next to
them; the machine's load average is printed, since it is shared.

Usage
-----
From the repository root::

    .venv/bin/python benchmarks/tree_depth.py              # ~1 min quiet
    .venv/bin/python benchmarks/tree_depth.py --seeds 3
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from sklearn.tree import DecisionTreeRegressor

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import load_dataset  # noqa: E402

from skprivpred import SubsampleAverageRegressor  # noqa: E402
from skprivpred.averaging import default_tree_depth  # noqa: E402

VARIANTS = {"capped (default)": None, "uncapped": DecisionTreeRegressor}


def _best(func: Callable[[], object], repeats: int) -> tuple[float, float]:
    """Best wall time and the CPU time of that call, in seconds."""
    best = (np.inf, np.inf)
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        func()
        best = min(best, (time.perf_counter() - wall, time.process_time() - cpu))
    return best


def _make(variant: str, **params) -> SubsampleAverageRegressor:
    factory = VARIANTS[variant]
    return SubsampleAverageRegressor(None if factory is None else factory(), **params)


def diabetes(n_seeds: int, repeats: int) -> None:
    data = load_dataset("diabetes")
    X, y, X_test, y_test = data.X_train, data.y_train, data.X_test, data.y_test
    print(f"diabetes: {X.shape[0]} rows, 10 teachers, cap {default_tree_depth(X.shape[0], 10)}")
    for variant in VARIANTS:
        rmse = []
        for epsilon in (0.5, 1.0, 2.0):
            errors = []
            for seed in range(n_seeds):
                reg = _make(variant, epsilon=epsilon, y_bounds=data.y_range, random_state=seed)
                reg.fit(X, y)
                errors.append(np.sqrt(np.mean((reg.predict(X_test) - y_test) ** 2)))
            rmse.append(np.mean(errors))
        reg = _make(variant, y_bounds=data.y_range, random_state=0)
        fit = _best(lambda reg=reg: reg.fit(X, y), repeats)
        answer = _best(lambda reg=reg: reg.predict(X_test), repeats)
        print(
            f"  {variant:17s} RMSE at epsilon 0.5 / 1 / 2: "
            + " / ".join(f"{v:.1f}" for v in rmse)
            + f"; fit {fit[0] * 1e3:.1f} ms (cpu {fit[1] * 1e3:.1f}),"
            f" predict {len(y_test)} rows {answer[0] * 1e3:.2f} ms (cpu {answer[1] * 1e3:.2f})"
        )


def synthetic(repeats: int) -> None:
    rng = np.random.default_rng(0)
    n, r = 20_000, 200
    X = rng.normal(size=(n + 2000, 5))
    y = np.clip(0.5 + 0.2 * X[:, 0] + rng.normal(scale=0.2, size=n + 2000), 0.0, 1.0)
    X, y, X_test, y_test = X[:n], y[:n], X[n:], y[n:]
    one = X[:1].copy()
    print(f"synthetic: {n} rows, {r} teachers, cap {default_tree_depth(n, r)}")
    for variant in VARIANTS:
        reg = _make(variant, n_teachers=r, y_bounds=(0.0, 1.0), random_state=0)
        fit = _best(lambda reg=reg: reg.fit(X, y), repeats)
        depth = max(t.get_depth() for t in reg._teachers)
        levels = reg._outputs._stacked._nodes.levels
        batch = _best(lambda reg=reg: reg.predict(X), repeats)
        rmse = np.sqrt(np.mean((reg.predict(X_test) - y_test) ** 2))
        latencies = []
        for _ in range(200):
            start = time.perf_counter()
            reg.predict(one)
            latencies.append(time.perf_counter() - start)
        print(
            f"  {variant:17s} fitted depth {depth}, levels descended {levels};"
            f" fit {fit[0] * 1e3:.0f} ms (cpu {fit[1] * 1e3:.0f}),"
            f" predict {n} rows {batch[0] * 1e3:.0f} ms (cpu {batch[1] * 1e3:.0f}),"
            f" one row (median of 200) {np.median(latencies) * 1e3:.2f} ms;"
            f" test RMSE at epsilon 1: {rmse:.3f}"
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--seeds", type=int, default=5, help="seeds per epsilon (default: 5)")
    parser.add_argument("--repeats", type=int, default=3, help="timing repeats (default: 3)")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")  # the integer seeds' PrivacyWarning
    print(f"load average before: {os.getloadavg()}")
    diabetes(args.seeds, args.repeats)
    synthetic(args.repeats)
    print(f"load average after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
