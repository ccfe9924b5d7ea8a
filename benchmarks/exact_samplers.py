"""Cost of the exact samplers (issue 38, item 10): the code under test against a baseline tree.

Times, in the same run and alternating between two source trees (``--baseline``, for
example ``git archive 84ec230`` extracted elsewhere, and this checkout), each in its own
fresh interpreter:

* the one-release fit of ``SufficientStatisticClassifier`` on Adult (25 % public rows, the
  defaults ``epsilon=1, delta=1e-6``), whose release draws one discrete Gaussian per
  coordinate of the statistic;
* a 10,000-row ``predict`` of ``StableERMRegressor`` and ``AveragedPSGDRegressor``
  (Laplace and Gaussian noise on the public grid, one discrete noise value per row), and
  of ``StableERMClassifier`` / ``AveragedPSGDClassifier`` (labels; ``decision_function``
  too, which is a grid release);
* the samplers alone (10,000 values).

Each figure is the median over ``--repeats`` calls of the process CPU time
(``time.process_time``: the machine is shared, and CPU time is less disturbed by other
processes than wall time); the load average is printed with the figures.

Run::

    PYTHONPATH=. python benchmarks/exact_samplers.py --baseline /tmp/orig84
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _median_cpu(func, repeats: int) -> float:
    func()
    times = []
    for _ in range(repeats):
        t0 = time.process_time()
        func()
        times.append(time.process_time() - t0)
    times.sort()
    return times[len(times) // 2]


def worker(repeats: int, sufficient_repeats: int) -> dict:
    """Figures for the tree on ``sys.path`` (run in a fresh interpreter)."""
    import numpy as np

    from skprivpred import (
        AveragedPSGDClassifier,
        AveragedPSGDRegressor,
        StableERMClassifier,
        StableERMRegressor,
    )
    from skprivpred.mechanisms import discrete_gaussian_noise, grid_laplace_release

    warnings.simplefilter("ignore")
    out: dict = {}
    rng = np.random.default_rng(0)
    n, d = 5000, 10
    X = rng.normal(size=(n, d)) / 3.0
    yc = (X[:, 0] > 0).astype(int)
    yr = np.clip(X[:, 0] + 0.1 * rng.normal(size=n), -1, 1)
    Q = rng.normal(size=(10_000, d)) / 3.0
    models = [
        ("StableERMRegressor laplace predict", StableERMRegressor, {}, yr, "predict"),
        (
            "StableERMRegressor gaussian predict",
            StableERMRegressor,
            {"noise": "gaussian"},
            yr,
            "predict",
        ),
        ("AveragedPSGDRegressor laplace predict", AveragedPSGDRegressor, {}, yr, "predict"),
        (
            "AveragedPSGDRegressor gaussian predict",
            AveragedPSGDRegressor,
            {"noise": "gaussian"},
            yr,
            "predict",
        ),
        ("StableERMClassifier predict", StableERMClassifier, {}, yc, "predict"),
        ("StableERMClassifier decision_function", StableERMClassifier, {}, yc, "decision_function"),
        ("AveragedPSGDClassifier predict", AveragedPSGDClassifier, {}, yc, "predict"),
    ]
    for name, cls, extra, y, method in models:
        kwargs = dict(random_state=0, **extra)
        if "Regressor" in name:
            kwargs["y_bounds"] = (-1.0, 1.0)
        if extra.get("noise") == "gaussian":
            kwargs["delta"] = 1e-6
        est = cls(**kwargs).fit(X, y)
        call = getattr(est, method)
        out[name] = _median_cpu(lambda call=call: call(Q), repeats)
    out["discrete_gaussian_noise sigma=1e4 x10000"] = _median_cpu(
        lambda: discrete_gaussian_noise(1e4, rng, size=10_000), repeats
    )
    out["grid_laplace_release eps=1 x10000"] = _median_cpu(
        lambda: grid_laplace_release(np.zeros(10_000), 1.0, 1.0, rng), repeats
    )
    if sufficient_repeats:
        sys.path.insert(0, str(HERE))
        from _sufficient import preprocessed

        from skprivpred import SufficientStatisticClassifier

        data = preprocessed("adult")
        m = data["y"].shape[0]
        mask = np.random.default_rng(0).permutation(m) < round(0.25 * m)
        y = np.where(mask, -1, data["y"])

        def fit():
            SufficientStatisticClassifier(classes=[0, 1], random_state=0).fit(data["X"], y)

        out["SufficientStatisticClassifier fit (Adult)"] = _median_cpu(fit, sufficient_repeats)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--baseline", type=Path, required=False)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--sufficient-repeats", type=int, default=3)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.repeats, args.sufficient_repeats)))
        return 0
    trees = {"candidate": HERE.parent}
    if args.baseline is not None:
        trees = {"baseline": args.baseline.resolve(), **trees}
    results: dict = {name: [] for name in trees}
    loads = [os.getloadavg()]
    for _ in range(args.rounds):
        for name, root in trees.items():
            env = dict(os.environ, PYTHONPATH=str(root))
            command = [
                sys.executable,
                str(Path(__file__).resolve()),
                "--worker",
                "--repeats",
                str(args.repeats),
                "--sufficient-repeats",
                str(args.sufficient_repeats),
            ]
            done = subprocess.run(
                command, env=env, check=True, capture_output=True, text=True, cwd=root
            )
            results[name].append(json.loads(done.stdout.strip().splitlines()[-1]))
            loads.append(os.getloadavg())
    keys = list(results["candidate"][0])
    one_minute = [load[0] for load in loads]
    print(f"load average (1 min) during the run: {min(one_minute):.2f} .. {max(one_minute):.2f}")
    for key in keys:
        row = {name: sorted(r[key] for r in runs)[len(runs) // 2] for name, runs in results.items()}
        text = "  ".join(f"{name} {1e3 * value:9.2f} ms" for name, value in row.items())
        ratio = f"  ratio {row['candidate'] / row['baseline']:.2f}" if "baseline" in row else ""
        print(f"{key:45s} {text}{ratio}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
