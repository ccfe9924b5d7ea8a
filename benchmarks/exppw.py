"""ExpProjectedWalkClassifier: speed against the naive walk, and accuracy on one feature.

What is measured
----------------
1. **Speed.** ``fit`` on ``--n`` training points and ``predict`` on as many
   queries (one feature, noisy threshold labels, distinct values), median of
   ``--repeats`` runs, against the naive evaluation of Figure 1: the sample is
   sorted once (counted), then every query walks over the sorted points at or
   to its left in a Python loop. The naive time per query is measured on
   ``--naive-queries`` random queries and scaled to ``--n`` queries; the same
   queries check that both give the same walk values. Targets: the library is
   at least 100 times faster, and ``fit`` + ``predict`` takes at most 5 s.
2. **Accuracy.** Test accuracy of the private answers (one answer per test
   row, mean ± sd over the answers' noise, ``random_state`` in ``--seeds``;
   the data are fixed) for several per-query ``epsilon`` and ``alpha``
   (``T = ceil(2 ln(2 / alpha) / epsilon)``: a saturated walk still answers
   wrongly with probability up to ``alpha / 2``, so ``alpha`` is an accuracy
   knob at no privacy cost), next to non-private references fitted on the same
   training rows: the best threshold function (one switch, either direction),
   the best function with at most ``k`` switches (by dynamic programming), and
   the majority label.

   - ``adult:<feature>``: one numeric column of Adult (published split),
     predicting ``income > 50K``; ``education-num`` (values 1-16),
     ``age`` and ``capital-gain``. ExpPW uses only the order of the values, so
     no range needs to be known.
   - ``threshold``: ``x ~ U[0, 1]``, label ``1[x >= 0.3]`` flipped with
     probability 0.1 (best possible accuracy 0.9).
   - ``intervals``: ``x ~ U[0, 1]``, label 1 on ``[0.2, 0.35)`` and
     ``[0.6, 0.8)`` (``k = 4`` endpoints), flipped with probability 0.1.

   For the synthetic tasks the table also gives Theorem 5.3's guarantee on the
   expected error, ``exp(epsilon) (0.1 + alpha)``, as a bound on accuracy
   when ``n_train >= exppw_min_samples(alpha, epsilon, k)``.
3. **Figure** (``--figure``): the walk value and the probability of answering 1
   across ``x`` for a small noisy threshold data set, written as a PNG for the
   documentation (``docs/_static/exppw_walk.png`` by default).

Integer seeds make the answers reproducible, which is right for an experiment
and wrong for a deployment. Results are printed and written to
``exppw_results.json`` in ``--out`` (default ``benchmarks/results/``).

Usage
-----
From the repository root::

    .venv/bin/python benchmarks/exppw.py             # ~10 s
    .venv/bin/python benchmarks/exppw.py --quick     # smoke test
    .venv/bin/python benchmarks/exppw.py --figure    # also write the docs picture
"""

from __future__ import annotations

import argparse
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from _common import DEFAULT_OUT, environment, format_table, timed, verdict, write_json

from skprivpred.datasets import load_adult
from skprivpred.walk import ExpProjectedWalkClassifier, exppw_min_samples

CLASSES = [0, 1]
LABEL_NOISE = 0.1
DEFAULT_EPSILONS = (0.1, 0.5, 1.0)
DEFAULT_ALPHAS = (0.1, 0.01)
ADULT_FEATURES = ("education-num", "age", "capital-gain")
#: Number of switches of the non-private "best k-interval" reference.
REFERENCE_SWITCHES = 4
MIN_SPEEDUP = 100.0
MAX_SECONDS = 5.0
FIGURE_PATH = Path(__file__).resolve().parents[1] / "docs" / "_static" / "exppw_walk.png"


# -- data ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Task:
    """A one-feature binary task with a train/test split."""

    name: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    n_endpoints: int | None = None  # k of the synthetic target (None: unknown)


def noisy_intervals(x: np.ndarray, endpoints: Sequence[float], noise: float, rng) -> np.ndarray:
    """Labels 1 where an odd number of endpoints is <= x, each flipped with prob. ``noise``."""
    target = np.searchsorted(np.sort(endpoints), x, side="right") % 2
    return np.where(rng.uniform(size=x.size) < noise, 1 - target, target)


def synthetic_task(
    name: str, endpoints: Sequence[float], n_train: int, n_test: int, seed: int
) -> Task:
    rng = np.random.default_rng(seed)
    x_train, x_test = rng.uniform(size=n_train), rng.uniform(size=n_test)
    return Task(
        name,
        x_train,
        noisy_intervals(x_train, endpoints, LABEL_NOISE, rng),
        x_test,
        noisy_intervals(x_test, endpoints, LABEL_NOISE, rng),
        n_endpoints=len(endpoints),
    )


def adult_tasks(features: Sequence[str]) -> list[Task]:
    X_train, y_train = load_adult(subset="train", as_frame=True, return_X_y=True)
    X_test, y_test = load_adult(subset="test", as_frame=True, return_X_y=True)
    return [
        Task(
            f"adult:{feature}",
            X_train[feature].to_numpy(dtype=float),
            y_train.to_numpy(),
            X_test[feature].to_numpy(dtype=float),
            y_test.to_numpy(),
        )
        for feature in features
    ]


# -- non-private references ------------------------------------------------------------
def best_k_switch_function(x: np.ndarray, y: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The labelling of the distinct training values with at most ``k`` switches and fewest errors.

    Dynamic programming over the sorted distinct values: ``cost[j, b]`` is the
    fewest errors so far using ``j`` switches and ending on label ``b``.

    Returns
    -------
    values : ndarray of shape (K,)
        Distinct training values, increasing.
    labels : ndarray of shape (K,)
        The optimal label of each value.
    """
    values, inverse = np.unique(x, return_inverse=True)
    ones = np.bincount(inverse, weights=y, minlength=values.size)
    zeros = np.bincount(inverse, minlength=values.size) - ones
    cost = np.full((k + 1, 2), np.inf)
    cost[0] = 0.0
    switched_here = np.zeros((values.size, k + 1, 2), dtype=bool)
    for i in range(values.size):
        switched = np.full((k + 1, 2), np.inf)
        switched[1:] = cost[:-1, ::-1]
        switched_here[i] = switched < cost
        cost = np.minimum(cost, switched) + np.array([ones[i], zeros[i]])
    n_switches, label = np.unravel_index(int(np.argmin(cost)), cost.shape)
    labels = np.empty(values.size, dtype=int)
    for i in range(values.size - 1, -1, -1):
        labels[i] = label
        if switched_here[i, n_switches, label]:
            n_switches, label = n_switches - 1, 1 - label
    return values, labels


def predict_step_function(values: np.ndarray, labels: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Label of the largest training value <= x (of the smallest, left of all of them)."""
    index = np.clip(np.searchsorted(values, x, side="right") - 1, 0, values.size - 1)
    return labels[index]


def reference_accuracies(task: Task) -> dict[str, float]:
    """Test accuracy of the non-private references fitted on the training rows."""
    result = {}
    for name, k in (
        ("best_threshold", 1),
        (f"best_{REFERENCE_SWITCHES}_switch", REFERENCE_SWITCHES),
    ):
        values, labels = best_k_switch_function(task.x_train, task.y_train, k)
        result[name] = float(
            np.mean(predict_step_function(values, labels, task.x_test) == task.y_test)
        )
    majority = int(np.mean(task.y_train) >= 0.5)
    result["majority"] = float(np.mean(task.y_test == majority))
    return result


# -- accuracy --------------------------------------------------------------------------
def private_accuracy(task: Task, epsilon: float, alpha: float, seed: int) -> dict[str, Any]:
    clf = ExpProjectedWalkClassifier(
        epsilon=epsilon, target_error=alpha, classes=CLASSES, random_state=seed
    )
    _, fit_seconds = timed(lambda: clf.fit(task.x_train.reshape(-1, 1), task.y_train))
    answers, predict_seconds = timed(lambda: clf.predict(task.x_test.reshape(-1, 1)))
    return {
        "accuracy": float(np.mean(answers == task.y_test)),
        "T": clf.clamp_bound_,
        "fit_seconds": fit_seconds,
        "predict_seconds": predict_seconds,
    }


def theorem_accuracy_bound(task: Task, epsilon: float, alpha: float) -> float | None:
    """``1 - exp(epsilon) (noise + alpha)`` when Theorem 5.3 applies, else None."""
    if task.n_endpoints is None:
        return None
    if task.x_train.size < exppw_min_samples(alpha, epsilon, task.n_endpoints):
        return None
    return 1.0 - math.exp(epsilon) * (LABEL_NOISE + alpha)


def run_accuracy(
    tasks: Sequence[Task], epsilons: Sequence[float], alphas: Sequence[float], seeds: Sequence[int]
) -> list[dict]:
    rows = []
    for task in tasks:
        references = reference_accuracies(task)
        for alpha in alphas:
            for epsilon in epsilons:
                rows.append(_accuracy_row(task, epsilon, alpha, seeds, references))
    return rows


def _accuracy_row(
    task: Task, epsilon: float, alpha: float, seeds: Sequence[int], references: dict
) -> dict:
    runs = [private_accuracy(task, epsilon, alpha, seed) for seed in seeds]
    accuracies = [r["accuracy"] for r in runs]
    return {
        "task": task.name,
        "n_train": int(task.x_train.size),
        "n_test": int(task.x_test.size),
        "epsilon": epsilon,
        "alpha": alpha,
        "T": runs[0]["T"],
        "accuracy": statistics.fmean(accuracies),
        "accuracy_sd": statistics.stdev(accuracies) if len(accuracies) > 1 else 0.0,
        "theorem_5_3_accuracy_bound": theorem_accuracy_bound(task, epsilon, alpha),
        **references,
        "runs": runs,
    }


def _bound_text(bound: float | None) -> str:
    if bound is None:
        return "-"
    return f"{bound:.3f}" if bound > 0 else "vacuous"


def accuracy_table(rows: Sequence[dict]) -> str:
    best_k = f"best_{REFERENCE_SWITCHES}_switch"
    table = [
        [
            r["task"],
            r["n_train"],
            f"{r['epsilon']:g}",
            f"{r['alpha']:g}",
            r["T"],
            f"{r['accuracy']:.4f} ± {r['accuracy_sd']:.4f}",
            _bound_text(r["theorem_5_3_accuracy_bound"]),
            f"{r['best_threshold']:.4f}",
            f"{r[best_k]:.4f}",
            f"{r['majority']:.4f}",
        ]
        for r in rows
    ]
    header = [
        "task",
        "n_train",
        "epsilon",
        "alpha",
        "T",
        "ExpPW accuracy",
        "Thm 5.3 >=",
        "best threshold",
        f"best {REFERENCE_SWITCHES}-switch",
        "majority",
    ]
    return format_table(table, header)


# -- speed -----------------------------------------------------------------------------
def naive_walk_value(sorted_x: list[float], sorted_steps: list[int], T: int, query: float) -> int:
    """Figure 1 for one query on a sorted sample: walk over the points <= query."""
    v, i, n = 0, 0, len(sorted_x)
    while i < n and sorted_x[i] <= query:
        v = min(T, max(-T, v + sorted_steps[i]))
        i += 1
    return v


def run_speed(n: int, n_naive_queries: int, repeats: int, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    y = noisy_intervals(x, [0.0], LABEL_NOISE, rng)
    queries = rng.normal(size=(n, 1))
    X = x.reshape(-1, 1)
    fit_times, predict_times = [], []
    for _ in range(repeats):
        clf = ExpProjectedWalkClassifier(classes=CLASSES, random_state=seed)
        fit_times.append(timed(lambda clf=clf: clf.fit(X, y))[1])
        predict_times.append(timed(lambda clf=clf: clf.predict(queries))[1])
    fit_seconds, predict_seconds = statistics.median(fit_times), statistics.median(predict_times)

    def sort_sample():
        order = np.argsort(x, kind="stable")
        return x[order].tolist(), (2 * y[order] - 1).tolist()

    (sorted_x, sorted_steps), naive_sort_seconds = timed(sort_sample)
    sample = queries[rng.choice(n, size=n_naive_queries, replace=False), 0]
    naive_values, naive_query_seconds = timed(
        lambda: [
            naive_walk_value(sorted_x, sorted_steps, clf.clamp_bound_, float(q)) for q in sample
        ]
    )
    per_query = naive_query_seconds / n_naive_queries
    naive_total = naive_sort_seconds + per_query * n
    library_total = fit_seconds + predict_seconds
    return {
        "n_train": n,
        "n_queries": n,
        "T": clf.clamp_bound_,
        "fit_seconds": fit_seconds,
        "predict_seconds": predict_seconds,
        "library_seconds": library_total,
        "naive_sort_seconds": naive_sort_seconds,
        "naive_seconds_per_query": per_query,
        "naive_queries_timed": n_naive_queries,
        "naive_seconds_scaled": naive_total,
        "speedup": naive_total / library_total,
        "walk_values_equal": bool(
            np.array_equal(naive_values, clf._walk_value(sample.reshape(-1, 1)))
        ),
    }


def speed_table(speed: dict[str, Any]) -> str:
    rows = [
        ["fit (library)", f"{speed['fit_seconds']:.3f}"],
        ["predict (library)", f"{speed['predict_seconds']:.3f}"],
        ["naive: sort once", f"{speed['naive_sort_seconds']:.3f}"],
        [
            f"naive: {speed['n_queries']} queries (scaled from {speed['naive_queries_timed']})",
            f"{speed['naive_seconds_scaled'] - speed['naive_sort_seconds']:.1f}",
        ],
        ["speed-up", f"{speed['speedup']:.0f}x"],
    ]
    return format_table(rows, [f"n = m = {speed['n_train']}", "seconds"])


# -- figure ----------------------------------------------------------------------------
def write_figure(path: Path, seed: int = 3) -> Path:
    """Walk value and P(answer = 1) across x for a small noisy threshold data set."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rng = np.random.default_rng(seed)
    threshold, epsilon, T = 4.0, 1.0, 3
    x = np.sort(rng.uniform(0, 10, size=40))
    y = noisy_intervals(x, [threshold], 0.15, rng)
    clf = ExpProjectedWalkClassifier(
        epsilon=epsilon, clamp_bound=T, classes=CLASSES, random_state=0
    )
    clf.fit(x.reshape(-1, 1), y)
    grid = np.linspace(-0.5, 10.5, 2201)
    walk = clf._walk_value(grid.reshape(-1, 1))  # non-private diagnostics, for the picture only
    p_one = clf._output_distribution(grid.reshape(-1, 1))[:, 1]

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 4.6), sharex=True, height_ratios=[3, 2])
    top.step(grid, walk, where="post", color="tab:blue", label="walk value V(x)")
    top.axhspan(-T, T, color="tab:blue", alpha=0.06, label=f"clamp [-T, T], T = {T}")
    for label, height, color in ((1, T + 0.6, "tab:green"), (0, -T - 0.6, "tab:red")):
        points = x[y == label]
        top.scatter(
            points,
            np.full(points.size, height),
            marker="|",
            color=color,
            s=80,
            label=f"label {label}",
        )
    top.set_ylim(-T - 1.2, T + 1.2)
    top.set_ylabel("V(x)")
    top.legend(loc="center right", fontsize=7, ncol=2, frameon=False)
    top.set_title(
        f"ExpPW on 40 noisy points (true threshold at {threshold:g}, 15% flipped)", fontsize=9
    )
    probability_label = f"P(answer 1) = expit({epsilon:g} V / 2)"
    bottom.step(grid, p_one, where="post", color="tab:purple", label=probability_label)
    bottom.axhline(0.5, color="grey", lw=0.6)
    for ax in (top, bottom):
        ax.axvline(threshold, color="grey", ls="--", lw=0.8)
        ax.tick_params(labelsize=8)
    bottom.set_ylim(0, 1)
    bottom.set_xlabel("x (query)")
    bottom.set_ylabel("P(1)")
    bottom.legend(loc="lower right", fontsize=7, frameon=False)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90, metadata={"Software": None})
    plt.close(fig)
    return path


def speed_targets(speed: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The speed targets with their measured values and verdicts."""
    return {
        "speedup_at_least": {
            "target": MIN_SPEEDUP,
            "value": speed["speedup"],
            "passed": speed["speedup"] >= MIN_SPEEDUP,
        },
        "fit_plus_predict_seconds_at_most": {
            "target": MAX_SECONDS,
            "value": speed["library_seconds"],
            "passed": speed["library_seconds"] <= MAX_SECONDS,
        },
        "walk_values_equal_naive": {
            "target": True,
            "value": speed["walk_values_equal"],
            "passed": speed["walk_values_equal"],
        },
    }


# -- command line -------------------------------------------------------------------------
def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--n", type=int, default=1_000_000, help="training points and queries for the speed test"
    )
    parser.add_argument(
        "--naive-queries", type=int, default=20, help="queries timed with the naive walk"
    )
    parser.add_argument(
        "--repeats", type=int, default=3, help="timed repeats of fit and predict (median)"
    )
    parser.add_argument("--epsilons", type=float, nargs="+", default=list(DEFAULT_EPSILONS))
    parser.add_argument("--alphas", type=float, nargs="+", default=list(DEFAULT_ALPHAS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument(
        "--n-train", type=int, default=10_000, help="training rows of the synthetic tasks"
    )
    parser.add_argument(
        "--n-test", type=int, default=50_000, help="test rows of the synthetic tasks"
    )
    parser.add_argument("--adult-features", nargs="*", default=list(ADULT_FEATURES))
    parser.add_argument("--quick", action="store_true", help="small sizes, one seed: a smoke test")
    parser.add_argument(
        "--figure",
        nargs="?",
        type=Path,
        const=FIGURE_PATH,
        default=None,
        help=f"write the docs picture (default path {FIGURE_PATH})",
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder of the JSON results")
    args = parser.parse_args(argv)
    if args.quick:
        args.n, args.naive_queries, args.repeats = 100_000, 5, 1
        args.seeds, args.n_test = args.seeds[:1], 10_000
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    speed = run_speed(args.n, args.naive_queries, args.repeats, seed=0)
    tasks = adult_tasks(args.adult_features) + [
        synthetic_task("threshold", [0.3], args.n_train, args.n_test, seed=1),
        synthetic_task("intervals", [0.2, 0.35, 0.6, 0.8], args.n_train, args.n_test, seed=2),
    ]
    accuracy = run_accuracy(tasks, args.epsilons, args.alphas, args.seeds)
    targets = speed_targets(speed)
    print(speed_table(speed))
    print()
    print(accuracy_table(accuracy))
    print()
    for name, target in targets.items():
        print(f"{verdict(target['passed'])}  {name}: {target['value']} (target {target['target']})")
    payload = {
        "config": {k: v for k, v in vars(args).items()},
        "environment": environment(),
        "speed": speed,
        "accuracy": accuracy,
        "targets": targets,
    }
    path = write_json(args.out / "exppw_results.json", payload)
    print(f"\nresults written to {path}")
    if args.figure is not None:
        print(f"figure written to {write_figure(args.figure)}")
    return 0 if all(t["passed"] for t in targets.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
