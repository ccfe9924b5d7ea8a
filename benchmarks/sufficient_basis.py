"""What a user basis costs the one-release classifier on Adult (issue 38, item 9).

``SufficientStatisticClassifier`` behind ``public_preprocessor(adult_schema())`` on the
benchmarks' Adult training file, 25 % of it unlabelled public rows (split seed 0), fitted
with the default basis (``basis="spline"``: its knots at public quantiles, batched: row-wise
by construction) and with ``basis=SplineTransformer()`` (a user transformer: each labelled
value goes through its own copy of the transformer fitted on the public rows, inside the
isolation guard, one distinct value of each column at a time). Reported: the median fit
time over ``--repeats`` fits of each (the fits alternate), the test accuracy of each, the
number of labelled rows and of the per-value transforms a user basis makes, and the cost of
one such transform (the fit-time difference divided by their number).

Run from the repository root::

    PYTHONPATH=. python benchmarks/sufficient_basis.py            # ~1 min on a quiet machine
    PYTHONPATH=. python benchmarks/sufficient_basis.py --repeats 1

The JSON (``sufficient_basis_results.json``) holds every fit time and the load average.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from pathlib import Path

import numpy as np
from _common import environment, write_json
from _sufficient import preprocessed
from sklearn.preprocessing import SplineTransformer

from skprivpred import SufficientStatisticClassifier


def _fit(basis, X, y, seed):
    est = SufficientStatisticClassifier(
        classes=[0, 1], basis=basis, random_state=np.random.default_rng(seed)
    )
    t0 = time.perf_counter()
    est.fit(X, y)
    return est, time.perf_counter() - t0


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = parser.parse_args(argv)

    data = preprocessed("adult")
    X = data["X"]
    n = X.shape[0]
    public = np.random.default_rng(0).permutation(n) < round(0.25 * n)
    y = np.where(public, -1, data["y"])
    bases = {"default": lambda: "spline", "SplineTransformer()": SplineTransformer}
    seconds: dict[str, list[float]] = {name: [] for name in bases}
    accuracy: dict[str, float] = {}
    load = [os.getloadavg()]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for r in range(args.repeats):
            for name, make in bases.items():
                est, s = _fit(make(), X, y, r)
                seconds[name].append(s)
                accuracy[name] = float(np.mean(est.predict(data["X_test"]) == data["y_test"]))
    load.append(os.getloadavg())
    numeric = est._numeric
    labelled = X[~public]
    transforms = int(sum(np.unique(labelled[:, j]).size for j in numeric))
    median = {name: float(np.median(v)) for name, v in seconds.items()}
    per_transform = (median["SplineTransformer()"] - median["default"]) / transforms
    payload = {
        "environment": environment(),
        "load_average_before_after": load,
        "n_labelled": int((~public).sum()),
        "n_public": int(public.sum()),
        "n_numeric_columns": len(numeric),
        "per_value_transforms": transforms,
        "per_row_transforms_without_sharing": int((~public).sum()) * len(numeric),
        "fit_seconds": seconds,
        "median_fit_seconds": median,
        "test_accuracy": accuracy,
        "seconds_per_value_transform": per_transform,
    }
    print(f"Adult, {payload['n_labelled']} labelled + {payload['n_public']} public rows")
    for name in bases:
        print(
            f"  basis={name:22s} fit {median[name]:7.2f} s (median of {args.repeats}), "
            f"test accuracy {accuracy[name]:.4f}"
        )
    print(
        f"  {transforms} per-value transforms ({len(numeric)} numeric columns; one per "
        f"distinct labelled value), {per_transform * 1e6:.0f} us each; load {load[0][0]:.2f} "
        f"-> {load[1][0]:.2f}"
    )
    path = write_json(args.out / "sufficient_basis_results.json", payload)
    print(f"wrote {path}")
    return payload


if __name__ == "__main__":
    main()
