"""Speed of SubsampleAggregateClassifier relative to one ordinary model, on Adult.

What is measured
----------------
Every ratio compares a *library* call with a *reference* call; both are called
once untimed (warm-up), then alternately ``--repeats`` times, so that drifts of
the load of a shared machine hit both alike; the ratio is between the medians
of their wall times (``time.perf_counter``).

1. **Fit**: ``SubsampleAggregateClassifier(LogisticRegression(), n_teachers=100)``
   on the Adult training split, against one ``LogisticRegression().fit`` on all
   the same rows; with ``n_jobs=1`` and ``n_jobs=2``. Target: ratio <= 1.5.
   For ``n_jobs=2`` the warm-up call starts the joblib worker processes, whose
   start-up (paid once per Python session) is therefore *not* in the median.
2. **Predict**: answering the whole Adult test split with the 100 linear
   teachers of (1), which the library votes with one stacked matrix product,
   against one ``LogisticRegression.predict``. Target: ratio <= 5. The verdict
   uses cold-cache times (the inputs are evicted from the CPU caches before
   every timed call, as for a fresh batch); the ratio of back-to-back repeats,
   where the 14 MB test matrix stays in cache and one LR predict gets about
   three times faster, is printed for information.
3. **Aggregation overhead with tree teachers**: ``predict`` with
   ``HistGradientBoostingClassifier`` teachers (fitted on the Adult DataFrame,
   categories from the dtype) minus the summed time of the teachers' own
   ``predict`` on the same rows, divided by that sum. Target: <= 10 %. The
   fitted teachers are reached through the private ``clf._ensemble._other``
   (a benchmark may look inside). 23 teachers: what ``target_error=0.1`` gives at
   ``epsilon=1``.

4. **Raw rows, public preprocessing outside**: the Adult test *DataFrame* through
   ``make_pipeline(public_preprocessor(adult_schema()), <100 LR teachers>)``
   against the same preprocessing before one LR. Target: ratio <= 5.
5. **Pipeline teachers**: 100 ``make_pipeline(StandardScaler(), LogisticRegression())``
   teachers (folded into the stacked product) against one such pipeline: fit
   (target <= 1.5) and predict of the test split (target <= 5).

The numeric design matrix is built *without looking at the data*, by the
library's public preprocessing (``skprivpred.preprocessing.public_preprocessor``
on ``skprivpred.datasets.adult_schema()``: one-hot columns for the category
lists published in ``adult.names``, ``"?"`` and anything else unknown as all
zeros, and fixed public formulas for the numeric columns). Because nothing in it
is fitted to the rows, it can sit outside the private estimator, shared by all
teachers, without affecting privacy.

Native thread pools (BLAS, OpenMP) are left at their defaults unless
``--threads`` is given. Results are printed and written to
``perf_results.json`` in ``--out`` (default ``benchmarks/results/``).

Usage
-----
From the repository root::

    .venv/bin/python benchmarks/perf.py               # ~1-2 min
    .venv/bin/python benchmarks/perf.py --repeats 11
    .venv/bin/python benchmarks/perf.py --profile     # cProfile of the library calls
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import pstats
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from _common import DEFAULT_OUT, environment, format_table, load_dataset, timed, verdict, write_json
from _design import public_design
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from skprivpred import SubsampleAggregateClassifier
from skprivpred.datasets import adult_schema
from skprivpred.preprocessing import public_preprocessor

CLASSES = [0, 1]
N_LINEAR_TEACHERS = 100
N_TREE_TEACHERS = 23  # what target_error=0.1 gives at epsilon=1
LOGISTIC_MAX_ITER = 1000


@dataclass(frozen=True)
class SpeedTarget:
    """An upper bound on a measured ratio."""

    name: str
    max_ratio: float


TARGETS = {
    "fit": SpeedTarget("fit, 100 LR teachers / one LR fit", 1.5),
    "predict": SpeedTarget("predict, 100 stacked LR teachers / one LR predict", 5.0),
    "overhead": SpeedTarget("aggregation overhead over tree teachers' own predict", 0.10),
}


# -- measurements ---------------------------------------------------------------------
def logistic() -> LogisticRegression:
    """The linear model of measurements 1 and 2."""
    return LogisticRegression(max_iter=LOGISTIC_MAX_ITER)


def private_logistic(n_jobs: int, seed: int = 0) -> SubsampleAggregateClassifier:
    """Subsample-and-aggregate over ``N_LINEAR_TEACHERS`` logistic regressions."""
    return SubsampleAggregateClassifier(
        logistic(), n_teachers=N_LINEAR_TEACHERS, classes=CLASSES, n_jobs=n_jobs, random_state=seed
    )


def tree_classifier() -> HistGradientBoostingClassifier:
    """The tree teacher of measurement 3 (as in ``run.py``)."""
    return HistGradientBoostingClassifier(
        max_iter=50, early_stopping=False, categorical_features="from_dtype"
    )


@lru_cache(maxsize=1)
def _eviction_buffer() -> np.ndarray:
    """64 MB: twice a large last-level cache."""
    return np.ones(64 * 2**20 // 8)


def evict_caches() -> None:
    """Read a large buffer, so the next call finds its inputs in memory, not in cache."""
    _eviction_buffer().sum()


def paired_times(
    library_call: Callable[[], Any], reference_call: Callable[[], Any], repeats: int
) -> dict[str, Any]:
    """Median cold-cache times of two calls, alternated within each repeat.

    Each call runs once untimed (warm-up); then, ``repeats`` times, the caches
    are evicted before each timed call (untimed), so that both calls read their
    input from memory as for a fresh batch, and alternating makes slow drifts of
    the machine's load hit both alike.
    """
    library_call()
    reference_call()
    library_times, reference_times = [], []
    for _ in range(repeats):
        evict_caches()
        library_times.append(timed(library_call)[1])
        evict_caches()
        reference_times.append(timed(reference_call)[1])
    library, reference = statistics.median(library_times), statistics.median(reference_times)
    return {
        "library_seconds": library,
        "reference_seconds": reference,
        "library_times": library_times,
        "reference_times": reference_times,
    }


def hot_times(
    library_call: Callable[[], Any], reference_call: Callable[[], Any], repeats: int
) -> dict[str, Any]:
    """Median times of back-to-back repeats of each call (inputs stay in cache)."""
    library = [timed(library_call)[1] for _ in range(repeats + 1)][1:]
    reference = [timed(reference_call)[1] for _ in range(repeats + 1)][1:]
    return {
        "library_seconds": statistics.median(library),
        "reference_seconds": statistics.median(reference),
        "library_times": library,
        "reference_times": reference,
    }


def measure_fit(X: np.ndarray, y: np.ndarray, repeats: int, n_jobs_list: Sequence[int]) -> dict:
    """Fit of 100 LR teachers against one LR fit on all rows, per ``n_jobs``."""
    result = {}
    for n_jobs in n_jobs_list:
        times = paired_times(
            lambda n_jobs=n_jobs: private_logistic(n_jobs).fit(X, y),
            lambda: logistic().fit(X, y),
            repeats,
        )
        result[n_jobs] = {**times, "ratio": times["library_seconds"] / times["reference_seconds"]}
    return result


def measure_predict(
    X_train: np.ndarray,
    y_train: np.ndarray,
    X_test: np.ndarray,
    repeats: int,
    raw_train: pd.DataFrame,
    raw_test: pd.DataFrame,
) -> dict:
    """Answering the test split with 100 stacked LR teachers against one LR predict.

    Timed on the design matrix, and end to end from the raw test DataFrame through
    the public preprocessing placed outside (``public_preprocessor(adult_schema())``
    in a pipeline before the private estimator, against the same preprocessing
    before one LR).
    """
    single_model = logistic().fit(X_train, y_train)
    private_model = private_logistic(n_jobs=1).fit(X_train, y_train)
    calls = (lambda: private_model.predict(X_test), lambda: single_model.predict(X_test))
    times = paired_times(*calls, repeats)
    hot = hot_times(*calls, repeats)
    private_pipe = make_pipeline(public_preprocessor(adult_schema()), private_logistic(n_jobs=1))
    single_pipe = make_pipeline(public_preprocessor(adult_schema()), logistic())
    private_pipe.fit(raw_train, y_train)
    single_pipe.fit(raw_train, y_train)
    end_to_end = paired_times(
        lambda: private_pipe.predict(raw_test), lambda: single_pipe.predict(raw_test), repeats
    )
    return {
        "n_rows": int(X_test.shape[0]),
        "stacked_teachers": int(len(private_model._ensemble._stack.teacher_ids)),
        **times,
        "ratio": times["library_seconds"] / times["reference_seconds"],
        "hot_cache": {**hot, "ratio": hot["library_seconds"] / hot["reference_seconds"]},
        "end_to_end": {
            **end_to_end,
            "ratio": end_to_end["library_seconds"] / end_to_end["reference_seconds"],
        },
    }


def scaled_logistic():
    """The teacher users write first: a scaler and a logistic regression."""
    return make_pipeline(StandardScaler(), logistic())


def measure_pipeline_teachers(
    X_train: np.ndarray, y_train: np.ndarray, X_test: np.ndarray, repeats: int
) -> dict:
    """100 ``StandardScaler + LogisticRegression`` teachers against one such pipeline."""
    single = scaled_logistic().fit(X_train, y_train)
    private = SubsampleAggregateClassifier(
        scaled_logistic(), n_teachers=N_LINEAR_TEACHERS, classes=CLASSES, random_state=0
    )
    fit = paired_times(
        lambda: private.fit(X_train, y_train),
        lambda: scaled_logistic().fit(X_train, y_train),
        repeats,
    )
    predict = paired_times(lambda: private.predict(X_test), lambda: single.predict(X_test), repeats)
    return {
        "folded_teachers": int(len(private._ensemble._stack.teacher_ids)),
        "fit": {**fit, "ratio": fit["library_seconds"] / fit["reference_seconds"]},
        "predict": {**predict, "ratio": predict["library_seconds"] / predict["reference_seconds"]},
    }


def tree_teachers(clf: SubsampleAggregateClassifier) -> list:
    """The fitted non-linear teachers (private attribute; benchmark use only)."""
    return [teacher for _, teacher in clf._ensemble._other]


def measure_overhead(
    X_train: pd.DataFrame, y_train: np.ndarray, X_test: pd.DataFrame, repeats: int, n_jobs: int
) -> dict:
    """Private predict with HGB teachers against the sum of the teachers' own predict."""
    clf = SubsampleAggregateClassifier(
        tree_classifier(),
        n_teachers=N_TREE_TEACHERS,
        classes=CLASSES,
        n_jobs=n_jobs,
        random_state=0,
    ).fit(X_train, y_train)
    teachers = tree_teachers(clf)

    def teachers_alone() -> None:
        for teacher in teachers:
            teacher.predict(X_test)

    times = paired_times(lambda: clf.predict(X_test), teachers_alone, repeats)
    library, alone = times["library_seconds"], times["reference_seconds"]
    return {
        "n_rows": int(X_test.shape[0]),
        "n_teachers": clf.n_teachers_,
        "n_tree_teachers": len(teachers),
        **times,
        "overhead": (library - alone) / alone,
    }


# -- profiling (optional) ---------------------------------------------------------------
@contextlib.contextmanager
def profiled(title: str, n_lines: int = 18) -> Iterator[None]:
    """Print the top functions of the body by cumulative time."""
    profiler = cProfile.Profile()
    profiler.enable()
    try:
        yield
    finally:
        profiler.disable()
        stream = io.StringIO()
        pstats.Stats(profiler, stream=stream).sort_stats("cumulative").print_stats(n_lines)
        print(f"\n=== cProfile: {title} ===\n{stream.getvalue()}")


def profile_library_calls(design: dict, frames: dict, n_jobs: int) -> None:
    """cProfile one private fit (n_jobs=1) and predict of each measurement."""
    with profiled("fit, 100 LR teachers, n_jobs=1"):
        clf = private_logistic(n_jobs=1).fit(design["X_train"], design["y_train"])
    with profiled("predict (20 calls), 100 stacked LR teachers"):
        for _ in range(20):
            clf.predict(design["X_test"])
    trees = SubsampleAggregateClassifier(
        tree_classifier(),
        n_teachers=N_TREE_TEACHERS,
        classes=CLASSES,
        n_jobs=n_jobs,
        random_state=0,
    ).fit(frames["X_train"], frames["y_train"])
    with profiled("predict, HGB teachers"):
        trees.predict(frames["X_test"])


# -- report ---------------------------------------------------------------------------
def report_rows(fit: dict, predict: dict, pipelines: dict, overhead: dict) -> list[dict]:
    """One row per ratio with its target and verdict."""
    rows = [
        {"measurement": f"fit, n_jobs={n_jobs}", "ratio": entry["ratio"], "target": "fit", **entry}
        for n_jobs, entry in fit.items()
    ]
    rows.append(
        {
            "measurement": f"predict {predict['n_rows']} rows",
            "ratio": predict["ratio"],
            "target": "predict",
            **predict,
        }
    )
    rows.append(
        {
            "measurement": f"predict {predict['n_rows']} rows, hot cache (info)",
            "ratio": predict["hot_cache"]["ratio"],
            "target": "predict",
            "informational": True,
            **predict["hot_cache"],
        }
    )
    rows.append(
        {
            "measurement": f"predict {predict['n_rows']} raw rows, public preprocessing outside",
            "ratio": predict["end_to_end"]["ratio"],
            "target": "predict",
            **predict["end_to_end"],
        }
    )
    rows.append(
        {
            "measurement": "fit, 100 StandardScaler+LR pipeline teachers",
            "ratio": pipelines["fit"]["ratio"],
            "target": "fit",
            **pipelines["fit"],
        }
    )
    rows.append(
        {
            "measurement": f"predict {predict['n_rows']} rows, 100 pipeline teachers (folded)",
            "ratio": pipelines["predict"]["ratio"],
            "target": "predict",
            **pipelines["predict"],
        }
    )
    rows.append(
        {
            "measurement": f"predict overhead, {overhead['n_tree_teachers']} HGB teachers",
            "ratio": overhead["overhead"],
            "target": "overhead",
            **overhead,
        }
    )
    summary = []
    for row in rows:
        target = TARGETS[row["target"]]
        summary.append(
            {
                "measurement": row["measurement"],
                "library_seconds": row["library_seconds"],
                "reference_seconds": row["reference_seconds"],
                "ratio": row["ratio"],
                "target": row["target"],
                "max_ratio": target.max_ratio,
                "passed": row["ratio"] <= target.max_ratio,
                "informational": row.get("informational", False),
            }
        )
    return summary


def format_report(rows: list[dict]) -> str:
    """The printed table of ratios."""
    header = ["measurement", "library s", "reference s", "ratio", "target", "verdict"]
    body = []
    for row in rows:
        is_overhead = row["target"] == "overhead"
        ratio = f"{row['ratio']:+.1%}" if is_overhead else f"{row['ratio']:.2f}x"
        target = f"<= {row['max_ratio']:.0%}" if is_overhead else f"<= {row['max_ratio']:g}x"
        body.append(
            [
                row["measurement"],
                f"{row['library_seconds']:.4f}",
                f"{row['reference_seconds']:.4f}",
                ratio,
                target,
                f"({verdict(row['passed'])})" if row["informational"] else verdict(row["passed"]),
            ]
        )
    legend = (
        "library = the SubsampleAggregateClassifier call; reference = one LR fit, one LR "
        "predict,\nor the tree teachers' own predict summed. Medians; cold cache unless noted."
    )
    return format_table(body, header) + "\n" + legend


# -- command line -------------------------------------------------------------------------
def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse the command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--repeats", type=int, default=7, help="timed repeats per measurement (default: 7)"
    )
    parser.add_argument(
        "--n-jobs",
        type=int,
        nargs="+",
        default=[1, 2],
        help="n_jobs values of the fit measurement; the last one also fits the tree "
        "teachers (default: 1 2)",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="limit native (BLAS/OpenMP) threads per process (default: no limit)",
    )
    parser.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help="results folder (default: %(default)s)"
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="also print cProfile of the library calls",
    )
    return parser.parse_args(argv)


def load_inputs() -> tuple[dict, dict]:
    """The Adult split as DataFrames, and as the data-independent design matrix."""
    data = load_dataset("adult")
    frames = {"X_train": data.X_train, "y_train": data.y_train, "X_test": data.X_test}
    design = {
        "X_train": public_design(data.X_train),
        "y_train": data.y_train,
        "X_test": public_design(data.X_test),
    }
    return frames, design


def run(args: argparse.Namespace) -> dict:
    """All measurements; returns the results payload."""
    frames, design = load_inputs()
    print(
        f"Adult: {design['X_train'].shape[0]} train rows, {design['X_test'].shape[0]} test rows, "
        f"{design['X_train'].shape[1]} design-matrix columns; {args.repeats} repeats."
    )
    fit = measure_fit(design["X_train"], design["y_train"], args.repeats, args.n_jobs)
    predict = measure_predict(
        design["X_train"],
        design["y_train"],
        design["X_test"],
        args.repeats,
        frames["X_train"],
        frames["X_test"],
    )
    pipelines = measure_pipeline_teachers(
        design["X_train"], design["y_train"], design["X_test"], args.repeats
    )
    overhead = measure_overhead(
        frames["X_train"], frames["y_train"], frames["X_test"], args.repeats, args.n_jobs[-1]
    )
    if args.profile:
        profile_library_calls(design, frames, args.n_jobs[-1])
    return {"fit": fit, "predict": predict, "pipelines": pipelines, "overhead": overhead}


def main(argv: Sequence[str] | None = None) -> int:
    """Measure, print the ratios with PASS/MISS, write the JSON."""
    args = parse_args(argv)
    start = time.perf_counter()
    limits = threadpool_limits(args.threads) if args.threads else contextlib.nullcontext()
    with limits:
        measurements = run(args)
    wall_seconds = time.perf_counter() - start
    rows = report_rows(
        measurements["fit"],
        measurements["predict"],
        measurements["pipelines"],
        measurements["overhead"],
    )
    print()
    print(format_report(rows))
    path = write_json(
        args.out / "perf_results.json",
        {
            "benchmark": "speed ratios (benchmarks/perf.py)",
            "config": {
                "repeats": args.repeats,
                "n_jobs": args.n_jobs,
                "threads": args.threads,
                "n_linear_teachers": N_LINEAR_TEACHERS,
                "n_tree_teachers": N_TREE_TEACHERS,
            },
            "targets": {key: asdict(target) for key, target in TARGETS.items()},
            "environment": environment(),
            "wall_seconds": wall_seconds,
            "ratios": rows,
            "measurements": measurements,
        },
    )
    print(f"\nWall time {wall_seconds:.0f} s. Wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
