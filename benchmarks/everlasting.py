"""Private everlasting prediction on a long query stream (Naor, Nissim, Stemmer & Yan 2023).

What is measured
----------------
``PrivateEverlastingClassifier`` (the practical everlasting predictor: phases
of public length ``R``, an independent Gaussian noisy vote of ``T`` teachers per
query, the next phase's teachers trained on the phase's queries with their
released answers) answers a stream of at least 10^5 queries drawn i.i.d. from
the population, on two tasks:

* **thresholds**: ``x`` uniform on ``[0, 1]``, ``y = 1[x >= 0.3]``; the
  training size comes from :func:`~skprivpred.everlasting.practical_plan` for
  ``lambda`` rows per teacher (41 630 rows at ``lambda = 10``), the teachers
  and phases from the predictor's default sizing rule
  (:func:`~skprivpred.everlasting.practical_schedule`); the teacher is
  ``LogisticRegression`` on the fixed public feature ``10 (x - 0.5)``.
* **adult**: UCI Adult, published split; the private training set is
  ``adult.data``, the queries are rows of ``adult.test`` drawn with
  replacement; ``T`` follows the predictor's default sizing rule for the
  32 561 training rows (about 2 700 teachers of 12 rows in phase 1 at
  ``epsilon = 4``). The teacher (``--adult-teacher``) is by default
  ``compact``: ``LogisticRegression(C=10, class_weight="balanced")`` on the
  8-column design :func:`_design.adult_compact_design` (age, education-num,
  hours-per-week, log capital gain and loss, married, male, white-collar
  occupation; fixed transforms from the units). ``logistic`` is the teacher of
  version 0.1, ``LogisticRegression()`` on the 105-column public design
  :func:`_design.public_design`: fitted on a dozen rows it almost always
  predicts the majority label, so its vote is no better than a constant. The
  compact teacher was chosen on ``adult.data`` alone (teachers fitted on
  three quarters of it, their vote and the per-phase predictor scored on the
  other quarter, fixed split with seed 0), never on ``adult.test``;
  ``class_weight="balanced"`` keeps the rate of answers ``1`` from shrinking
  from phase to phase when later teachers learn from released answers.

For each task the script reports the answer accuracy in every phase and over
the whole stream, and the privacy spent: ``(epsilon, delta)`` for every
training row *and every query*, once, for the whole stream. Next to it:

* ``SubsampleAggregateClassifier`` with the same teachers (same ``T``, same
  base estimator) in its many-query mode, with the same total budget
  ``(epsilon, delta)`` for the training rows spread over the whole stream
  (``n_queries`` = stream length, zCDP composition); it does not protect the
  queries at all;
* the non-private base estimator fitted on all training rows (a reference; the
  balanced default Adult teacher answers ``1`` too often when fitted on all
  rows, so there it is below the private vote), and the rate of the majority
  label in the stream (what a constant answer gets).

Budgets: ``(epsilon, delta) = (2, 1e-6)`` on thresholds and ``(4, 1e-6)`` on
Adult by default (``--epsilon-thresholds``, ``--epsilon-adult``). At
``epsilon = 1`` the sizing rule asks 16 101 teachers and 161 010 training rows
for 10 rows per teacher (minutes of teacher fits per phase on this machine);
on Adult, ``epsilon < 4`` leaves fewer than 17 rows per teacher at constant
phases, 12 with the default growth (by the sizing rule, tasks that need
hundreds of rows per teacher need ``epsilon >= 4``).
No setting was chosen by looking at the test split (the Adult teacher was
chosen on a split of ``adult.data``, the private training set: a benchmark
choice, not accounted in the privacy guarantee).

Outputs: a table, ``everlasting_results.json`` and ``everlasting_phases.png``
(accuracy per phase, with the two references) in ``--out``.

Per-phase mode
--------------
``--per-phase`` runs the predictor alone, with its default parameters (the
sizing rule of :func:`~skprivpred.everlasting.practical_schedule`: phases
growing by ``phase_growth = 2``, teachers and phase lengths from ``(epsilon,
delta, n)``), on streams that span ``--phases`` (default 3) whole phases: the
1-D thresholds stream, each pool relabelled
through :class:`~skprivpred.finite.ThresholdClass` on its public feature
(``--no-relabel`` turns that off), and the Adult stream (no class to relabel
through). It prints accuracy and the rate of answers ``1`` per phase, next to
the majority label, checks the targets (Adult: no phase more than 0.005
below phase 1, the whole stream at least 2 points above the majority label;
thresholds: accuracy per phase does not decrease) and writes
``everlasting_per_phase.json``. ``--growth 1 --no-relabel`` is the constant
schedule of version 0.1.

Usage
-----
From the repository root::

    .venv/bin/python benchmarks/everlasting.py            # ~3 min on 2 loaded cores
    .venv/bin/python benchmarks/everlasting.py --quick    # smaller, for a smoke test
    .venv/bin/python benchmarks/everlasting.py --per-phase                # ~3 min
    .venv/bin/python benchmarks/everlasting.py --per-phase --growth 1 --no-relabel
    .venv/bin/python benchmarks/everlasting.py --per-phase --adult-teacher logistic  # 0.1 teacher
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from _common import DEFAULT_OUT, environment, format_table, load_dataset, write_json
from _design import adult_compact_design, public_design
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from threadpoolctl import threadpool_limits
from tqdm.auto import tqdm

from skprivpred.ensemble import SubsampleAggregateClassifier
from skprivpred.everlasting import (
    PRACTICAL_GROWTH,
    PrivateEverlastingClassifier,
    practical_plan,
    practical_schedule,
)
from skprivpred.finite import ThresholdClass

CLASSES = [0, 1]
DELTA = 1e-6
THRESHOLD = 0.3
#: Queries per ``predict`` call (the stream is consumed in row order either way).
CHUNK = 10_000


@dataclass(frozen=True)
class StreamTask:
    """A private training set, a query stream and the teacher to use.

    Attributes
    ----------
    name : str
        Task name.
    X_train, y_train : ndarray
        The private training set.
    X_stream, y_stream : ndarray
        The queries, in stream order, and their true labels (for scoring only).
    make_teacher : callable
        Returns an unfitted base estimator.
    epsilon : float
        Privacy parameter of every training row and every query.
    n_teachers : int or None
        ``T`` (``None``: the predictor's default sizing rule).
    """

    name: str
    X_train: np.ndarray
    y_train: np.ndarray
    X_stream: np.ndarray
    y_stream: np.ndarray
    make_teacher: Callable[[], object]
    epsilon: float
    n_teachers: int | None


def logistic() -> LogisticRegression:
    """The teacher of the thresholds task (and of Adult with ``--adult-teacher logistic``)."""
    return LogisticRegression(max_iter=1000)


def compact_logistic() -> LogisticRegression:
    """The default Adult teacher: balanced, weakly regularised LR for ``adult_compact_design``."""
    return LogisticRegression(C=10.0, class_weight="balanced", max_iter=1000)


#: Adult teachers by ``--adult-teacher`` name: (public design function, teacher factory).
ADULT_TEACHERS: dict[str, tuple[Callable, Callable[[], object]]] = {
    "compact": (adult_compact_design, compact_logistic),
    "logistic": (public_design, logistic),
}


def threshold_features(x: np.ndarray) -> np.ndarray:
    """The fixed public feature ``10 (x - 0.5)`` of the 1-D task, as one column."""
    return (10.0 * (x - 0.5)).reshape(-1, 1)


def thresholds_task(
    epsilon: float, teacher_size: int, n_phases: int, min_queries: int, seed: int
) -> StreamTask:
    """Synthetic 1-D thresholds, ``lambda T`` training rows by ``practical_plan``.

    The stream has at least ``min_queries`` queries and ``n_phases`` times the
    training size; the predictor sizes its teachers and phases by its default rule.
    """
    plan = practical_plan(epsilon, DELTA, teacher_size)
    n_train = plan["n_samples"]
    n_stream = max(n_phases, -(-min_queries // n_train)) * n_train
    rng = np.random.default_rng(seed)
    x_train, x_stream = rng.random(n_train), rng.random(n_stream)
    return StreamTask(
        "thresholds",
        threshold_features(x_train),
        (x_train >= THRESHOLD).astype(int),
        threshold_features(x_stream),
        (x_stream >= THRESHOLD).astype(int),
        logistic,
        epsilon,
        None,
    )


def adult_task(epsilon: float, n_queries: int, seed: int, teacher: str = "compact") -> StreamTask:
    """Adult: train on ``adult.data``, queries drawn with replacement from ``adult.test``.

    ``teacher`` names the design and base estimator (a key of :data:`ADULT_TEACHERS`).
    """
    design, make_teacher = ADULT_TEACHERS[teacher]
    data = load_dataset("adult")
    X_train, X_test = design(data.X_train), design(data.X_test)
    order = np.random.default_rng(seed).integers(0, len(data.y_test), size=n_queries)
    return StreamTask(
        "adult",
        X_train,
        data.y_train,
        X_test[order],
        data.y_test[order],
        make_teacher,
        epsilon,
        None,
    )


def phase_stream_tasks(args: argparse.Namespace) -> list[tuple[StreamTask, Any]]:
    """The two streams of ``--per-phase``, with the predictor's default sizing rule.

    Each stream spans ``--phases`` whole phases of the public schedule
    (:func:`~skprivpred.everlasting.practical_schedule`); the thresholds task
    relabels each pool through the threshold class on its one public feature
    (unless ``--no-relabel``); Adult has no class to relabel through.
    """
    growth = PRACTICAL_GROWTH if args.growth is None else args.growth
    relabel = not args.no_relabel
    tasks: list[tuple[StreamTask, Any]] = []
    if "thresholds" in args.tasks:
        eps = args.epsilon_thresholds
        n_train = practical_plan(eps, DELTA, args.teacher_size)["n_samples"]
        schedule = practical_schedule(
            eps, DELTA, n_train, phase_growth=growth, relabel=relabel, phases=args.phases
        )
        n_stream = sum(p["phase_length"] for p in schedule)
        rng = np.random.default_rng(args.seed)
        x_train, x_stream = rng.random(n_train), rng.random(n_stream)
        task = StreamTask(
            "thresholds",
            threshold_features(x_train),
            (x_train >= THRESHOLD).astype(int),
            threshold_features(x_stream),
            (x_stream >= THRESHOLD).astype(int),
            logistic,
            eps,
            None,
        )
        tasks.append((task, ThresholdClass() if relabel else None))
    if "adult" in args.tasks:
        eps = args.epsilon_adult
        n_train = len(load_dataset("adult").y_train)
        schedule = practical_schedule(eps, DELTA, n_train, phase_growth=growth, phases=args.phases)
        n_queries = sum(p["phase_length"] for p in schedule)
        tasks.append((adult_task(eps, n_queries, args.seed, args.adult_teacher), None))
    return tasks


def check_targets(name: str, result: dict) -> list[str]:
    """The targets of the per-phase mode, on the complete phases."""
    phases = [p for p in result["everlasting"]["phases"] if p["complete"]]
    accuracy = [p["accuracy"] for p in phases]
    if name == "adult":
        majority = result["majority_label_rate"]
        whole = result["everlasting"]["accuracy"]
        worst_drop = accuracy[0] - min(accuracy)
        return [
            f"adult: largest drop below phase 1 = {worst_drop:.4f} (target <= 0.005): "
            + ("met" if worst_drop <= 0.005 else "NOT met"),
            f"adult: whole stream - majority = {whole - majority:+.4f} (target >= +0.02): "
            + ("met" if whole - majority >= 0.02 else "NOT met"),
        ]
    steps = np.diff(accuracy)
    return [
        f"{name}: per-phase accuracy {' -> '.join(f'{a:.4f}' for a in accuracy)} "
        + ("does not decrease: met" if np.all(steps >= 0) else "decreases: NOT met")
    ]


def run_per_phase(args: argparse.Namespace) -> int:
    """``--per-phase``: per-phase accuracy of the default predictor on both streams."""
    start = time.perf_counter()
    results: dict[str, dict[str, Any]] = {}
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for task, hclass in phase_stream_tasks(args):
            everlasting = run_everlasting(
                task, args.seed, phase_growth=args.growth, hypothesis_class=hclass
            )
            rate = float(np.mean(task.y_stream))
            results[task.name] = {
                "n_train": int(len(task.y_train)),
                "n_queries": int(len(task.y_stream)),
                "epsilon": task.epsilon,
                "delta": DELTA,
                "relabel": hclass is not None,
                "everlasting": everlasting,
                "majority_label_rate": max(rate, 1.0 - rate),
                "positive_rate": rate,
            }
    wall = time.perf_counter() - start
    rows = []
    for name, result in results.items():
        ever = result["everlasting"]
        for p in ever["phases"]:
            rows.append(
                [
                    name,
                    p["phase"] if p["complete"] else f"{p['phase']} (part)",
                    p["n_teachers"],
                    p["teacher_size"],
                    p["queries"],
                    f"{p['accuracy']:.4f}",
                    f"{p['answered_positive']:.3f}",
                ]
            )
        rows.append(
            [name, "whole stream", "", "", result["n_queries"], f"{ever['accuracy']:.4f}", ""]
        )
        rows.append(
            [
                name,
                "majority label",
                "",
                "",
                "",
                f"{result['majority_label_rate']:.4f}",
                f"{result['positive_rate']:.3f}",
            ]
        )
    print(
        format_table(
            rows,
            ["task", "phase", "teachers", "rows/teacher", "queries", "accuracy", "answered 1"],
        )
    )
    for name, result in results.items():
        ever = result["everlasting"]
        print(
            f"{name}: eps = {result['epsilon']:g}, delta = {DELTA:g}, {result['n_train']} "
            f"training rows, phase growth {ever['phase_growth']:g}, relabelling "
            + ("through the threshold class" if result["relabel"] else "off")
        )
        for line in check_targets(name, result):
            print("  " + line)
    payload = {
        "benchmark": "everlasting predictor per phase (benchmarks/everlasting.py --per-phase)",
        "environment": environment(),
        "arguments": {k: v for k, v in vars(args).items() if k != "out"},
        "results": results,
        "wall_seconds": wall,
    }
    path = write_json(args.out / "everlasting_per_phase.json", payload)
    print(f"\nWall time {wall:.0f} s. Wrote: {path}")
    return 0


def answer_stream(clf, X: np.ndarray, desc: str) -> np.ndarray:
    """Answer ``X`` row by row in order, in chunks, with a progress bar."""
    answers = []
    for start in tqdm(range(0, len(X), CHUNK), desc=desc, unit="chunk", leave=False):
        answers.append(clf.predict(X[start : start + CHUNK]))
    return np.concatenate(answers)


def run_everlasting(
    task: StreamTask,
    seed: int,
    *,
    phase_growth: float | None = None,
    hypothesis_class: object = None,
) -> dict:
    """The practical everlasting predictor on the task's stream; accuracy per phase.

    ``phase_growth=None`` keeps the predictor's default; the phases are cut
    where the predictor's public schedule (``phase_schedule_``) puts them.
    """
    clf = PrivateEverlastingClassifier(
        task.make_teacher(),
        epsilon=task.epsilon,
        delta=DELTA,
        n_teachers=task.n_teachers,
        phase_growth=PRACTICAL_GROWTH if phase_growth is None else phase_growth,
        hypotheses=hypothesis_class,
        random_state=seed,
        classes=CLASSES,
    )
    start = time.perf_counter()
    clf.fit(task.X_train, task.y_train)
    answers = answer_stream(clf, task.X_stream, f"{task.name}: everlasting")
    correct = answers == task.y_stream
    schedule = clf.phase_schedule_
    phases: list[dict[str, Any]] = []
    first = 0
    for params in schedule:
        last = min(len(correct), first + params["phase_length"])
        if last <= first:
            break
        phases.append(
            {
                "phase": int(params["phase"]),
                "queries": last - first,
                "complete": last - first == params["phase_length"],
                "n_teachers": int(params["n_teachers"]),
                "teacher_size": int(params["teacher_size"]),
                "phase_length": int(params["phase_length"]),
                "accuracy": float(np.mean(correct[first:last])),
                "answered_positive": float(np.mean(answers[first:last] == CLASSES[1])),
            }
        )
        first = last
    return {
        "n_teachers": int(clf.n_teachers_),
        "teacher_size": int(schedule[0]["teacher_size"]),
        "phase_length": int(schedule[0]["phase_length"]),
        "phase_growth": float(clf.phase_growth),
        "relabel_epsilon": clf.relabel_epsilon_,
        "noise_sigma": clf.noise_sigma_,
        "privacy_guarantee": [clf.privacy_guarantee_.epsilon, clf.privacy_guarantee_.delta],
        "privacy_scope": str(clf.privacy_guarantee_),
        "phases": phases,
        "accuracy": float(np.mean(correct)),
        "seconds": time.perf_counter() - start,
    }


def run_subsample_aggregate(task: StreamTask, n_teachers: int, seed: int) -> dict:
    """Same teachers, same total budget for the training rows, spread over the whole stream."""
    n_queries = len(task.y_stream)
    clf = SubsampleAggregateClassifier(
        task.make_teacher(),
        classes=CLASSES,
        n_teachers=n_teachers,
        n_queries=n_queries,
        total_epsilon=task.epsilon,
        total_delta=DELTA,
        random_state=seed,
    )
    start = time.perf_counter()
    clf.fit(task.X_train, task.y_train)
    answers = answer_stream(clf, task.X_stream, f"{task.name}: subsample-aggregate")
    return {
        "n_teachers": int(clf.n_teachers_),
        "epsilon_per_query": float(clf.epsilon_per_query_),
        "total": [task.epsilon, DELTA],
        "accuracy": float(np.mean(answers == task.y_stream)),
        "seconds": time.perf_counter() - start,
    }


def run_non_private(task: StreamTask) -> float:
    """Accuracy of one base estimator fitted on all training rows (no privacy at all)."""
    model = task.make_teacher().fit(task.X_train, task.y_train)
    return float(np.mean(model.predict(task.X_stream) == task.y_stream))


def run_task(task: StreamTask, seed: int, phase_growth: float | None = None) -> dict:
    """Everything measured on one task."""
    everlasting = run_everlasting(task, seed, phase_growth=phase_growth)
    return {
        "n_train": int(len(task.y_train)),
        "n_queries": int(len(task.y_stream)),
        "epsilon": task.epsilon,
        "delta": DELTA,
        "everlasting": everlasting,
        "subsample_aggregate": run_subsample_aggregate(task, everlasting["n_teachers"], seed),
        "non_private_accuracy": run_non_private(task),
        "majority_label_rate": float(max(np.mean(task.y_stream), 1.0 - np.mean(task.y_stream))),
    }


def phase_rows(name: str, result: dict) -> list[list]:
    """Table rows: one per phase, then the whole stream and the two references."""
    ever = result["everlasting"]
    eps, delta = result["epsilon"], result["delta"]
    rows = [
        [
            name,
            f"everlasting, phase {p['phase']}" + ("" if p["complete"] else " (part)"),
            p["queries"],
            f"{p['accuracy']:.4f}",
            "",
            "",
        ]
        for p in ever["phases"]
    ]
    rows.append(
        [
            name,
            "everlasting, whole stream",
            result["n_queries"],
            f"{ever['accuracy']:.4f}",
            f"({eps:g}, {delta:g})",
            f"({eps:g}, {delta:g})",
        ]
    )
    sa = result["subsample_aggregate"]
    rows.append(
        [
            name,
            f"subsample-aggregate (eps0 {sa['epsilon_per_query']:.2e})",
            result["n_queries"],
            f"{sa['accuracy']:.4f}",
            f"({eps:g}, {delta:g})",
            "none",
        ]
    )
    rows.append(
        [
            name,
            "non-private base estimator on all rows",
            result["n_queries"],
            f"{result['non_private_accuracy']:.4f}",
            "none",
            "none",
        ]
    )
    rows.append(
        [
            name,
            "constant majority label (reference)",
            result["n_queries"],
            f"{result['majority_label_rate']:.4f}",
            "-",
            "-",
        ]
    )
    return rows


def plot(results: dict, path: Path) -> Path:
    """Accuracy per phase for each task, with the two references as lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(5.5 * len(results), 4), squeeze=False)
    for ax, (name, result) in zip(axes[0], results.items()):
        phases = result["everlasting"]["phases"]
        ax.plot(
            [p["phase"] for p in phases],
            [p["accuracy"] for p in phases],
            "o-",
            label="everlasting (per phase)",
        )
        ax.axhline(
            result["subsample_aggregate"]["accuracy"],
            color="tab:orange",
            linestyle="--",
            label="subsample-aggregate, same total budget",
        )
        ax.axhline(
            result["non_private_accuracy"],
            color="grey",
            linestyle=":",
            label="non-private base estimator",
        )
        ax.axhline(
            result["majority_label_rate"], color="black", linewidth=0.8, label="majority label"
        )
        ax.set_xticks([p["phase"] for p in phases])
        ax.set_xlabel("phase")
        ax.set_ylabel("answer accuracy")
        ax.set_title(
            f"{name}: {result['n_queries']} queries, "
            f"(eps, delta) = ({result['epsilon']:g}, {result['delta']:g})"
        )
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line options (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--tasks", nargs="+", default=["thresholds", "adult"], choices=["thresholds", "adult"]
    )
    parser.add_argument("--epsilon-thresholds", type=float, default=2.0)
    parser.add_argument("--epsilon-adult", type=float, default=4.0)
    parser.add_argument(
        "--adult-teacher",
        default="compact",
        choices=sorted(ADULT_TEACHERS),
        help="Adult teacher: balanced LR on the compact design (default) or the 0.1 LR",
    )
    parser.add_argument(
        "--teacher-size",
        type=int,
        default=10,
        help="rows per teacher on the thresholds task (lambda)",
    )
    parser.add_argument(
        "--phases",
        type=int,
        default=None,
        help="phases of the thresholds stream (5), or of both streams with --per-phase (3)",
    )
    parser.add_argument(
        "--queries", type=int, default=100_000, help="at least this many queries per stream"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--quick", action="store_true", help="small sizes and 10^4 queries, for a smoke test"
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument(
        "--per-phase",
        action="store_true",
        help="per-phase accuracy of the default predictor on both streams (whole phases)",
    )
    parser.add_argument(
        "--growth",
        type=float,
        default=None,
        help="phase_growth of the predictor (default: its default; 1 = constant phases)",
    )
    parser.add_argument(
        "--no-relabel",
        action="store_true",
        help="--per-phase: do not relabel the thresholds stream through the class",
    )
    return parser.parse_args(argv)


def build_task(name: str, args: argparse.Namespace) -> StreamTask:
    """The task ``name`` with the sizes chosen on the command line."""
    if name == "thresholds":
        teacher_size = 2 if args.quick else args.teacher_size
        return thresholds_task(
            args.epsilon_thresholds, teacher_size, args.phases, args.queries, args.seed
        )
    return adult_task(args.epsilon_adult, args.queries, args.seed, args.adult_teacher)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the tasks, print the table, write the JSON and the plot."""
    args = parse_args(argv)
    if args.per_phase:
        args.phases = 2 if args.quick else (args.phases or 3)
        return run_per_phase(args)
    args.phases = args.phases or 5
    if args.quick:
        args.queries, args.phases = 10_000, 2
    start = time.perf_counter()
    results = {}
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for name in args.tasks:
            results[name] = run_task(build_task(name, args), args.seed, args.growth)
    wall = time.perf_counter() - start

    rows = [row for name, result in results.items() for row in phase_rows(name, result)]
    print(
        format_table(
            rows,
            [
                "task",
                "predictor",
                "queries",
                "accuracy",
                "(eps, delta) per training row",
                "(eps, delta) per query",
            ],
        )
    )
    for name, result in results.items():
        ever = result["everlasting"]
        print(
            f"{name}: {result['n_train']} training rows, T = {ever['n_teachers']} teachers of "
            f"{ever['teacher_size']} rows, phase length R = {ever['phase_length']}, "
            f"vote noise sigma = {ever['noise_sigma']:.1f} votes"
        )
    payload = {
        "benchmark": "private everlasting prediction on a long stream (benchmarks/everlasting.py)",
        "environment": environment(),
        "arguments": {k: v for k, v in vars(args).items() if k != "out"},
        "results": results,
        "wall_seconds": wall,
    }
    written = [
        write_json(args.out / "everlasting_results.json", payload),
        plot(results, args.out / "everlasting_phases.png"),
    ]
    print(f"\nWall time {wall:.0f} s. Wrote: {', '.join(map(str, written))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
