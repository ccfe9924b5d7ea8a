"""Accuracy of the linear classifiers with their defaults, after the public preprocessing.

What is measured
----------------
``StableERMClassifier`` and ``AveragedPSGDClassifier`` placed after
``public_preprocessor(schema)``, at ``epsilon=1``, every test row answered once
(fresh noise per row), mean and standard deviation of the test accuracy over
five seeds, next to the majority class. Three configurations:

``defaults``
    Every parameter at its default except ``classes=[0, 1]`` (public):
    ``feature_norm_bound="auto"`` (``sqrt(n_features)``, a true bound when every
    feature lies in [-1, 1]) and the default radius (``0.08 s`` for ERM,
    ``0.05 s`` for PSGD, ``s = sqrt(n epsilon / (1 + epsilon))``).
``recipe``
    The documented recipe: as ``defaults``, plus
    ``feature_norm_bound=row_norm_bound(preprocessor)``, the largest row norm
    the public preprocessing can output, stated from its schema
    (``sqrt(14)`` for Adult; for MAGIC it equals the ``"auto"`` value
    ``sqrt(10)``, so the two rows coincide).
``previous``
    The defaults before this change, for comparison: ``feature_norm_bound=1``,
    ERM ``radius = ln(2) s / X`` (the fixed point of Corollary 4.11 it used),
    PSGD ``radius=1``.

Targets (issue 26): with defaults after ``public_preprocessor(adult_schema())``,
Adult's published split, ``epsilon=1``, mean of 5 seeds: >= 0.82 for both
classifiers; after ``public_preprocessor(magic_schema())``, at least 5 points
above the majority class on MAGIC (its fixed stratified 2/3 - 1/3 split, as in
``run.py``).

How the default constants were chosen (``--tune``): on Adult's *training* file
only, split once into 2/3 for fitting and 1/3 for validation
(``train_test_split(test_size=1/3, random_state=0)``), the radius multiple ``c``
of ``s`` was swept at epsilon 0.5, 1 and 2, with the ``"auto"`` bound and with
``row_norm_bound``, two seeds each; ``c`` near the top for both bounds and
every epsilon was kept. The test file (``adult.test``) and MAGIC played no part
in the choice.

Usage
-----
From the repository root::

    .venv/bin/python benchmarks/linear_defaults.py           # the targets, ~3 min
    .venv/bin/python benchmarks/linear_defaults.py --tune    # + the selection grid, ~1 min more
    .venv/bin/python benchmarks/linear_defaults.py --seeds 0 --datasets magic   # quick look
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from _common import DEFAULT_OUT, environment, format_table, load_dataset, verdict, write_json
from sklearn.base import clone
from sklearn.model_selection import train_test_split

from skprivpred import AveragedPSGDClassifier, PrivacyWarning, StableERMClassifier
from skprivpred.datasets import adult_schema, load_adult, magic_schema
from skprivpred.preprocessing import public_preprocessor, row_norm_bound

CLASSES = [0, 1]
EPSILON = 1.0
SEEDS = (0, 1, 2, 3, 4)
SCHEMAS = {"adult": adult_schema, "magic": magic_schema}
CLASSIFIERS = {"erm": StableERMClassifier, "psgd": AveragedPSGDClassifier}
CONFIGURATIONS = ("defaults", "recipe", "previous")

#: Radius multiples swept by ``--tune`` (the defaults are 0.08 for ERM, 0.05 for PSGD).
TUNE_MULTIPLES = {"erm": (0.03, 0.05, 0.08, 0.12, 0.2), "psgd": (0.02, 0.03, 0.05, 0.08, 0.12)}
TUNE_EPSILONS = (0.5, 1.0, 2.0)
TUNE_SEEDS = (0, 1)


def effective_size(n_samples: int, epsilon: float) -> float:
    """``s = sqrt(n epsilon / (1 + epsilon))``, the scale of the default radius."""
    return math.sqrt(n_samples * epsilon / (1.0 + epsilon))


def classifier_params(
    method: str, configuration: str, preprocessor: Any, n_samples: int, epsilon: float
) -> dict[str, Any]:
    """The constructor parameters of one configuration (all public: schema, n, epsilon)."""
    if configuration == "defaults":
        return {}
    if configuration == "recipe":
        return {"feature_norm_bound": row_norm_bound(preprocessor)}
    if configuration == "previous":
        if method == "psgd":
            return {"feature_norm_bound": 1.0, "radius": 1.0}
        norm_bound = math.hypot(1.0, 1.0)  # feature_norm_bound 1 and the intercept feature 1
        radius = math.log(2.0) * effective_size(n_samples, epsilon) / norm_bound
        return {"feature_norm_bound": 1.0, "radius": radius}
    raise ValueError(f"unknown configuration {configuration!r}")


def accuracy(estimator, X_train, y_train, X_test, y_test) -> float:
    """Fit, answer every test row once, return the accuracy of the private answers."""
    with warnings.catch_warnings():
        # Seeded on purpose (a reproducible experiment): the seed warning is expected.
        warnings.filterwarnings(
            "ignore", message="an integer random_state", category=PrivacyWarning
        )
        estimator.fit(X_train, y_train)
    return float(np.mean(estimator.predict(X_test) == y_test))


def _design(dataset: str, X_train, X_test):
    preprocessor = public_preprocessor(SCHEMAS[dataset]()).fit(X_train)  # reads no row
    return preprocessor, preprocessor.transform(X_train), preprocessor.transform(X_test)


def measure(datasets: Sequence[str], seeds: Sequence[int]) -> list[dict[str, Any]]:
    """Every (data set, classifier, configuration, seed) run."""
    runs = []
    for dataset in datasets:
        data = load_dataset(dataset)
        preprocessor, X_train, X_test = _design(dataset, data.X_train, data.X_test)
        values, counts = np.unique(data.y_train, return_counts=True)
        majority = float(np.mean(data.y_test == values[np.argmax(counts)]))
        for method, cls in CLASSIFIERS.items():
            for configuration in CONFIGURATIONS:
                params = classifier_params(
                    method, configuration, preprocessor, X_train.shape[0], EPSILON
                )
                for seed in seeds:
                    estimator = cls(classes=CLASSES, epsilon=EPSILON, random_state=seed, **params)
                    start = time.perf_counter()
                    score = accuracy(estimator, X_train, data.y_train, X_test, data.y_test)
                    runs.append(
                        {
                            "dataset": dataset,
                            "method": method,
                            "configuration": configuration,
                            "seed": seed,
                            "accuracy": score,
                            "majority": majority,
                            "feature_norm_bound": estimator.feature_norm_bound_,
                            "radius": estimator.radius_,
                            "noise_scale": estimator.noise_scale_,
                            "seconds": time.perf_counter() - start,
                        }
                    )
                print(f"  {dataset} {method} {configuration}: done", flush=True)
    return runs


def summarize(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mean and sd over seeds per (data set, classifier, configuration)."""
    groups: dict[tuple, list[dict]] = {}
    for run in runs:
        groups.setdefault((run["dataset"], run["method"], run["configuration"]), []).append(run)
    summary = []
    for (dataset, method, configuration), group in groups.items():
        scores = [r["accuracy"] for r in group]
        summary.append(
            {
                "dataset": dataset,
                "method": method,
                "configuration": configuration,
                "n_seeds": len(group),
                "accuracy_mean": statistics.fmean(scores),
                "accuracy_sd": statistics.stdev(scores) if len(scores) > 1 else 0.0,
                "majority": group[0]["majority"],
                "feature_norm_bound": group[0]["feature_norm_bound"],
                "radius": group[0]["radius"],
                "noise_scale": group[0]["noise_scale"],
            }
        )
    return summary


def check_targets(summary: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The targets of issue 26 on the ``defaults`` and ``recipe`` rows."""
    results = []
    for row in summary:
        if row["configuration"] == "previous":
            continue
        if row["dataset"] == "adult":
            goal, threshold = ">= 0.82", 0.82
        else:
            goal, threshold = "majority + 0.05", row["majority"] + 0.05
        results.append(
            {
                **{k: row[k] for k in ("dataset", "method", "configuration", "accuracy_mean")},
                "goal": goal,
                "passed": row["accuracy_mean"] >= threshold,
            }
        )
    return results


def tune(seeds: Sequence[int] = TUNE_SEEDS) -> list[dict[str, Any]]:
    """The selection grid: radius multiples on a held-out third of Adult's training file."""
    X, y = load_adult(subset="train", as_frame=True, return_X_y=True)
    X_fit, X_valid, y_fit, y_valid = train_test_split(
        X, y.to_numpy(), test_size=1 / 3, random_state=0
    )
    preprocessor, X_fit, X_valid = _design("adult", X_fit, X_valid)
    s_of = {epsilon: effective_size(X_fit.shape[0], epsilon) for epsilon in TUNE_EPSILONS}
    rows = []
    for method, cls in CLASSIFIERS.items():
        for bound in ("auto", "row_norm_bound"):
            feature_norm_bound = "auto" if bound == "auto" else row_norm_bound(preprocessor)
            for epsilon in TUNE_EPSILONS:
                for multiple in TUNE_MULTIPLES[method]:
                    radius = multiple * s_of[epsilon]
                    base = cls(
                        classes=CLASSES,
                        epsilon=epsilon,
                        feature_norm_bound=feature_norm_bound,
                        radius=radius,
                    )
                    scores = [
                        accuracy(
                            clone(base).set_params(random_state=seed),
                            X_fit,
                            y_fit,
                            X_valid,
                            y_valid,
                        )
                        for seed in seeds
                    ]
                    rows.append(
                        {
                            "method": method,
                            "bound": bound,
                            "epsilon": epsilon,
                            "multiple": multiple,
                            "radius": radius,
                            "validation_accuracy": statistics.fmean(scores),
                        }
                    )
                print(f"  tune {method} {bound} epsilon={epsilon:g}: done", flush=True)
    return rows


def tune_table(rows: list[dict[str, Any]]) -> str:
    """One line per (classifier, bound, epsilon): validation accuracy per radius multiple."""
    lines = []
    for method in CLASSIFIERS:
        multiples = TUNE_MULTIPLES[method]
        header = ["classifier", "bound", "epsilon", *[f"c={m:g}" for m in multiples]]
        table = []
        for bound in ("auto", "row_norm_bound"):
            for epsilon in TUNE_EPSILONS:
                own = {
                    r["multiple"]: r["validation_accuracy"]
                    for r in rows
                    if (r["method"], r["bound"], r["epsilon"]) == (method, bound, epsilon)
                }
                table.append([method, bound, f"{epsilon:g}", *[f"{own[m]:.4f}" for m in multiples]])
        lines.append(format_table(table, header))
    return "\n\n".join(lines)


def summary_table(summary: list[dict[str, Any]]) -> str:
    """The printed results."""
    header = [
        "dataset",
        "classifier",
        "configuration",
        "accuracy (mean ± sd)",
        "majority",
        "X0",
        "radius",
        "noise scale",
    ]
    rows = [
        [
            s["dataset"],
            s["method"],
            s["configuration"],
            f"{s['accuracy_mean']:.4f} ± {s['accuracy_sd']:.4f}",
            f"{s['majority']:.4f}",
            f"{s['feature_norm_bound']:.3f}",
            f"{s['radius']:.3g}",
            f"{s['noise_scale']:.3g}",
        ]
        for s in summary
    ]
    return format_table(rows, header)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse the command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--datasets", nargs="+", choices=list(SCHEMAS), default=list(SCHEMAS))
    parser.add_argument("--seeds", nargs="+", type=int, default=list(SEEDS))
    parser.add_argument(
        "--tune", action="store_true", help="also run the selection grid on adult.data"
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Measure, print the table and the targets, write JSON."""
    args = parse_args(argv)
    start = time.perf_counter()
    tuning = tune() if args.tune else []
    runs = measure(args.datasets, args.seeds)
    summary = summarize(runs)
    targets = check_targets(summary)
    print()
    if tuning:
        print("Validation accuracy on a held-out third of adult.data, by radius multiple c:")
        print(tune_table(tuning))
        print()
    print(f"epsilon = {EPSILON:g}, seeds {list(args.seeds)}, every test row answered once:")
    print(summary_table(summary))
    print()
    print("Targets (issue 26):")
    for t in targets:
        print(
            f"  {verdict(t['passed']):4}  {t['dataset']:5} {t['method']:4} {t['configuration']:8}"
            f" accuracy {t['accuracy_mean']:.4f} (target {t['goal']})"
        )
    wall = time.perf_counter() - start
    payload = {
        "benchmark": "linear classifiers with their defaults (benchmarks/linear_defaults.py)",
        "epsilon": EPSILON,
        "seeds": list(args.seeds),
        "environment": environment(),
        "wall_seconds": wall,
        "summary": summary,
        "targets": targets,
        "tuning": tuning,
        "runs": runs,
    }
    path = write_json(args.out / "linear_defaults.json", payload)
    print(f"\nWall time {wall:.0f} s. Wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
