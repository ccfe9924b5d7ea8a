"""Scale-out of SubsampleAggregateClassifier: fit time against teachers and workers, predict memory.

What is measured
----------------
1. **Fit time against the number of teachers and of workers.** Fitting
   ``SubsampleAggregateClassifier(LogisticRegression(), n_teachers=r)`` on the
   Adult training split (32,561 rows) and on Adult replicated 10 times
   (325,610 rows), through joblib with

   * ``loky-1``: the default backend, ``n_jobs=1`` (sequential, in process);
   * ``loky-2``: the default backend, ``n_jobs=2`` (two worker processes);
   * ``dask-1`` and ``dask-2``: joblib's ``dask`` backend on a
     ``dask.distributed.LocalCluster`` on loopback with 1 and 2 worker
     processes (one thread each), ``n_jobs=-1``. The teachers' rows are
     shipped from the client to the workers on every fit (no scatter), as in
     an ordinary call. joblib would run a one-thread cluster's share in the
     client process; ``dask-1`` is forced to ship the work to its worker.

   Each fit time is divided by the time of **one** ``LogisticRegression`` fit on
   all the same rows in the main process (the non-private model), and the
   ``dask-2`` time by the ``dask-1`` time (and ``loky-2`` by ``loky-1``). All
   pools and clusters are started first; every repeat then times one reference
   fit and all (teachers, backend) fits, interleaved, so that slow drifts of
   the load of a shared machine hit all alike; ratios are between medians. The
   first fit of each backend (on the first data set) is an untimed warm-up. Native
   thread pools (BLAS, OpenMP) are limited to ``--threads`` (default 1) in the
   main process; loky and dask workers run one native thread each, so the
   ratios measure the parallelism across teachers only.

2. **Bounded memory of large query batches.** In a fresh subprocess, 500
   logistic-regression teachers (40 synthetic rows each, 10 features) answer
   ``--memory-queries`` rows (default 10^7) in one ``predict`` call. The
   linear teachers are voted from one stacked matrix product, block by block;
   the peak of the memory allocated during the call (``tracemalloc``, which
   sees every numpy buffer) is compared to the size of the full
   (queries x teachers) vote matrix that a non-chunked implementation would
   build (8 bytes per vote), and to the query matrix itself. The process's
   peak resident set (``ru_maxrss``) is reported too. With ``--memory-trees``
   (default 100; 0 to skip) the same is measured for decision-tree teachers
   (voted one teacher at a time) on ``--memory-queries / 10`` rows.

3. **Data on a cluster** (``--data``, run alone: about 9 minutes). Fits and answers on
   dask arrays generated on a two-worker ``LocalCluster`` (``dask.array.random``: the
   rows never exist in the client): ``SufficientStatisticClassifier`` and
   ``SubsampleAggregateClassifier(LogisticRegression(), n_teachers=--data-teachers)``
   on ``--data-rows`` rows (default 10^8, 8.8 GB; 1 % public rows) with a memory limit
   of ``--data-memory-limit`` per worker (default 3 GiB, below the data's size), then a
   ``predict`` of ``--data-queries`` rows (default 10^7); then the same at a tenth of
   the rows (25 % public) on the cluster and in memory. Reported: wall times, the
   client's and the workers' peak resident sets, time per row against the in-memory
   fit, and whether the accuracies at a tenth agree within the two-proportion 99 %
   bound (``_cluster_data.py``). Written to ``scaleout_data_results.json``.

The design matrix of measurement 1 is built without looking at the data (the
public one-hot encoding of ``_design.py``), as in ``perf.py``. Results are
printed and written to ``scaleout_results.json`` (and ``scaleout_fit.png``
when matplotlib is installed) in ``--out`` (default ``benchmarks/results/``).

Usage
-----
From the repository root (needs ``dask[distributed]``)::

    .venv/bin/python benchmarks/scaleout.py            # ~6 min on 2 cores (more if loaded)
    .venv/bin/python benchmarks/scaleout.py --quick    # < 1 min
    .venv/bin/python benchmarks/scaleout.py --data     # measurement 3 alone, ~9 min
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import resource
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import joblib
import numpy as np
from _cluster_data import N_FEATURES, data_bytes, run_child, run_section
from _common import DEFAULT_OUT, environment, format_table, load_dataset, timed, write_json
from _design import public_design
from sklearn.linear_model import LogisticRegression
from threadpoolctl import threadpool_limits

from skprivpred import SubsampleAggregateClassifier

CLASSES = [0, 1]
LOGISTIC_MAX_ITER = 1000
BACKENDS = ("loky-1", "loky-2", "dask-1", "dask-2")
VOTE_BYTES = np.dtype(np.intp).itemsize  # one vote of a (queries x teachers) matrix

DEFAULT = {"teachers": [25, 100, 500], "replicas": [1, 10], "repeats": 2}
QUICK = {"teachers": [25, 100], "replicas": [1], "repeats": 1}
MEMORY_TEACHERS = 500
MEMORY_FEATURES = 10
MEMORY_ROWS_PER_TEACHER = 40
DATA_TEACHERS = 1000
DATA_MEMORY_LIMIT = "3GiB"


# -- measurement 1: fit time ---------------------------------------------------------------
def logistic() -> LogisticRegression:
    """The teacher, and the non-private reference model."""
    return LogisticRegression(max_iter=LOGISTIC_MAX_ITER)


def private_fit(X: np.ndarray, y: np.ndarray, n_teachers: int, n_jobs: int) -> None:
    """One fit of subsample-and-aggregate with logistic teachers."""
    SubsampleAggregateClassifier(
        logistic(), n_teachers=n_teachers, classes=CLASSES, n_jobs=n_jobs, random_state=0
    ).fit(X, y)


def _dispatching_dask_backend(client):
    """joblib's dask backend, made to ship the fits even to a one-thread cluster.

    joblib runs a ``Parallel`` call in the calling process when the backend has
    one slot, and the dask backend counts the cluster's worker threads: on a
    1-worker, 1-thread cluster nothing would reach the worker. For a fair
    "1 worker" point the benchmark reports two slots, so the batches queue on
    the worker as they do on a busy real cluster. (``joblib._dask`` is private
    API, used by this benchmark only.)
    """
    from joblib._dask import DaskDistributedBackend

    class DispatchingDaskBackend(DaskDistributedBackend):
        def effective_n_jobs(self, n_jobs):
            return max(2, super().effective_n_jobs(n_jobs))

    return DispatchingDaskBackend(client=client)


class Backends(contextlib.ExitStack):
    """The joblib backends of the fit measurement, all started once (and closed on exit).

    ``config(name)`` returns a fresh ``joblib.parallel_config`` context for the
    backend ``name`` and the ``n_jobs`` the estimator gets in it. Dask clusters
    are local, on loopback, with one-thread worker processes.
    """

    def __init__(self, names: Sequence[str]) -> None:
        super().__init__()
        self.names = list(names)
        self.clients: dict[int, Any] = {}

    def __enter__(self) -> Backends:
        super().__enter__()
        for name in self.names:
            kind, workers = name.split("-")
            if kind == "dask":
                self.clients[int(workers)] = self._start_cluster(int(workers))
        return self

    def _start_cluster(self, n_workers: int):
        from dask.distributed import Client, LocalCluster

        cluster = self.enter_context(
            LocalCluster(
                n_workers=n_workers,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                dashboard_address=":0",
                silence_logs=logging.ERROR,
            )
        )
        client = self.enter_context(Client(cluster, set_as_default=False))
        client.wait_for_workers(n_workers, timeout=60)
        return client

    def config(self, name: str):
        kind, workers = name.split("-")
        if kind == "loky":
            return joblib.parallel_config(backend="loky"), int(workers)
        client = self.clients[int(workers)]
        if int(workers) == 1:
            return joblib.parallel_config(backend=_dispatching_dask_backend(client)), -1
        return joblib.parallel_config(backend="dask", client=client), -1


def measure_fit(
    data: dict[str, tuple[np.ndarray, np.ndarray]],
    teachers: Sequence[int],
    repeats: int,
    backends: Sequence[str],
    progress,
) -> list[dict[str, Any]]:
    """Median fit times per (data set, backend, teachers), with the reference of each data set.

    All backends are started first; then, per data set, each repeat times one
    reference fit and then every (teachers, backend) fit, interleaved.
    """
    results = []
    with Backends(backends) as engines:

        def fit_with(name: str, X, y, n_teachers: int) -> float:
            config, n_jobs = engines.config(name)
            with config:
                return timed(lambda: private_fit(X, y, n_teachers, n_jobs))[1]

        for i, (data_name, (X, y)) in enumerate(data.items()):
            if i == 0:
                for name in backends:  # warm-up: worker start-up, imports on the workers
                    fit_with(name, X, y, min(teachers))
            reference_times: list[float] = []
            times: dict[tuple[str, int], list[float]] = {}
            for _ in range(repeats):
                reference_times.append(timed(lambda X=X, y=y: logistic().fit(X, y))[1])
                progress.update(1)
                for r in teachers:
                    for name in backends:
                        times.setdefault((name, r), []).append(fit_with(name, X, y, r))
                        progress.update(1)
            reference = statistics.median(reference_times)
            for (name, r), private_times in times.items():
                seconds = statistics.median(private_times)
                results.append(
                    {
                        "data": data_name,
                        "n_samples": int(X.shape[0]),
                        "backend": name,
                        "n_teachers": r,
                        "seconds": seconds,
                        "reference_seconds": reference,
                        "ratio_to_one_fit": seconds / reference,
                        "times": private_times,
                        "reference_times": reference_times,
                    }
                )
    return results


def worker_ratios(fit: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """2-worker time over 1-worker time, per engine, data set and number of teachers."""
    by_key = {(row["data"], row["backend"], row["n_teachers"]): row for row in fit}
    ratios = []
    for (data_name, backend_name, r), row in by_key.items():
        kind, workers = backend_name.split("-")
        one = by_key.get((data_name, f"{kind}-1", r))
        if workers == "2" and one is not None:
            ratios.append(
                {
                    "data": data_name,
                    "engine": kind,
                    "n_teachers": r,
                    "seconds_1_worker": one["seconds"],
                    "seconds_2_workers": row["seconds"],
                    "ratio_2_to_1": row["seconds"] / one["seconds"],
                }
            )
    return ratios


# -- measurement 2: memory of a large predict (runs in a fresh subprocess) -------------------
def memory_child(n_queries: int, base: str, n_teachers: int) -> dict[str, Any]:
    """Fit ``n_teachers`` small teachers, answer ``n_queries`` rows once, measure the peak."""
    from sklearn.tree import DecisionTreeClassifier

    rng = np.random.default_rng(0)
    n_train = n_teachers * MEMORY_ROWS_PER_TEACHER
    direction = rng.standard_normal(MEMORY_FEATURES)
    X_train = rng.standard_normal((n_train, MEMORY_FEATURES))
    y_train = (X_train @ direction + 0.5 * rng.standard_normal(n_train) > 0).astype(int)
    teacher = logistic() if base == "linear" else DecisionTreeClassifier(max_depth=6)
    clf = SubsampleAggregateClassifier(
        teacher, n_teachers=n_teachers, classes=CLASSES, random_state=0
    ).fit(X_train, y_train)
    X_query = rng.standard_normal((n_queries, MEMORY_FEATURES))
    clf.predict(X_query[:1000])  # warm-up (imports, first-call allocations)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    tracemalloc.start()
    start = time.perf_counter()
    answers = clf.predict(X_query)
    seconds = time.perf_counter() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    full_votes = n_queries * n_teachers * VOTE_BYTES
    return {
        "teachers": base,
        "n_queries": n_queries,
        "n_teachers": n_teachers,
        "n_features": MEMORY_FEATURES,
        "predict_seconds": seconds,
        "peak_traced_bytes": peak,
        "query_matrix_bytes": int(X_query.nbytes),
        "answers_bytes": int(answers.nbytes),
        "full_vote_matrix_bytes": full_votes,
        "peak_over_full_vote_matrix": peak / full_votes,
        "peak_over_query_matrix": peak / X_query.nbytes,
        "maxrss_before_bytes": rss_before,
        "maxrss_after_bytes": rss_after,
        "maxrss_growth_bytes": rss_after - rss_before,
    }


def measure_memory(n_queries: int, base: str, n_teachers: int, threads: int | None) -> dict:
    """Run :func:`memory_child` in a fresh interpreter (a clean ``ru_maxrss``)."""
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--memory-child",
        base,
        "--memory-queries",
        str(n_queries),
        "--memory-teachers",
        str(n_teachers),
    ]
    if threads:
        command += ["--threads", str(threads)]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"memory measurement failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


# -- report -----------------------------------------------------------------------------------
def _mb(n_bytes: float) -> str:
    return f"{n_bytes / 2**20:,.0f} MiB" if n_bytes < 2**30 else f"{n_bytes / 2**30:,.1f} GiB"


def format_fit(fit: list[dict[str, Any]], backends: Sequence[str]) -> str:
    """Fit time / one LR fit, one row per (data set, teachers), one column per backend."""
    rows = []
    keys = sorted(
        {(row["data"], row["n_samples"], row["n_teachers"]) for row in fit},
        key=lambda k: (k[1], k[2]),
    )
    by_key = {(row["data"], row["backend"], row["n_teachers"]): row for row in fit}
    for data_name, n_samples, r in keys:
        cells = [data_name, n_samples, r]
        references = []
        for name in backends:
            row = by_key.get((data_name, name, r))
            cells.append("-" if row is None else f"{row['ratio_to_one_fit']:.2f}x")
            if row is not None:
                references.append(row["reference_seconds"])
        cells.append(f"{statistics.median(references):.2f}")
        rows.append(cells)
    header = ["data", "n", "teachers", *backends, "one LR fit s"]
    return format_table(rows, header)


def format_workers(ratios: list[dict[str, Any]]) -> str:
    """2 workers / 1 worker, per engine."""
    rows = [
        [
            row["data"],
            row["engine"],
            row["n_teachers"],
            f"{row['seconds_1_worker']:.2f}",
            f"{row['seconds_2_workers']:.2f}",
            f"{row['ratio_2_to_1']:.2f}x",
        ]
        for row in sorted(ratios, key=lambda r: (r["engine"], r["data"], r["n_teachers"]))
    ]
    header = ["data", "engine", "teachers", "1 worker s", "2 workers s", "2 / 1"]
    return format_table(rows, header)


def format_memory(memory: list[dict[str, Any]]) -> str:
    """Peak memory of one large predict against the full vote matrix."""
    rows = [
        [
            row["teachers"],
            f"{row['n_queries']:,}",
            row["n_teachers"],
            f"{row['predict_seconds']:.1f}",
            _mb(row["peak_traced_bytes"]),
            _mb(row["query_matrix_bytes"]),
            _mb(row["full_vote_matrix_bytes"]),
            f"{row['peak_over_full_vote_matrix']:.2%}",
            _mb(row["maxrss_after_bytes"]),
        ]
        for row in memory
    ]
    header = [
        "teachers",
        "queries",
        "r",
        "predict s",
        "peak alloc",
        "X itself",
        "full votes",
        "peak / full",
        "max RSS",
    ]
    return format_table(rows, header)


def plot_fit(fit: list[dict[str, Any]], backends: Sequence[str], path: Path) -> Path | None:
    """Fit ratio against the number of teachers, one panel per data set."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    names = sorted({(row["n_samples"], row["data"]) for row in fit})
    fig, axes = plt.subplots(1, len(names), figsize=(5 * len(names), 3.6), squeeze=False)
    for ax, (n_samples, data_name) in zip(axes[0], names):
        for name in backends:
            rows = sorted(
                (row for row in fit if row["data"] == data_name and row["backend"] == name),
                key=lambda row: row["n_teachers"],
            )
            if rows:
                ax.plot(
                    [row["n_teachers"] for row in rows],
                    [row["ratio_to_one_fit"] for row in rows],
                    marker="o",
                    label=name,
                )
        ax.axhline(1.0, color="grey", linestyle="--", linewidth=1)
        ax.set_xscale("log")
        counts = sorted({row["n_teachers"] for row in fit})
        ax.set_xticks(counts, [str(c) for c in counts])
        ax.minorticks_off()
        ax.set_xlabel("number of teachers")
        ax.set_ylabel("fit time / one LR fit")
        ax.set_title(f"{data_name} (n = {n_samples:,})")
        ax.legend(fontsize="small")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# -- command line -------------------------------------------------------------------------------
def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse the command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="Adult only, teachers 25 and 100, one repeat, 10^6 queries (< 1 min)",
    )
    parser.add_argument(
        "--teachers",
        type=int,
        nargs="+",
        default=None,
        help=f"numbers of teachers (default: {DEFAULT['teachers']})",
    )
    parser.add_argument(
        "--replicas",
        type=int,
        nargs="+",
        default=None,
        help="copies of the Adult training split (default: 1 10)",
    )
    parser.add_argument("--repeats", type=int, default=None, help="timed repeats (default: 2)")
    parser.add_argument(
        "--backends",
        nargs="+",
        choices=BACKENDS,
        default=list(BACKENDS),
        help="joblib backends and worker counts (default: all)",
    )
    parser.add_argument(
        "--memory-queries",
        type=int,
        default=None,
        help="query rows of the memory measurement (default: 10^7; quick: 10^6)",
    )
    parser.add_argument(
        "--memory-teachers",
        type=int,
        default=MEMORY_TEACHERS,
        help="linear teachers of the memory measurement (default: 500)",
    )
    parser.add_argument(
        "--memory-trees",
        type=int,
        default=None,
        help="tree teachers of the second memory measurement, on a tenth of "
        "the queries (default: 100; quick: 0 = skip)",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="native (BLAS/OpenMP) threads in the main process (default: 1)",
    )
    parser.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help="results folder (default: %(default)s)"
    )
    parser.add_argument(
        "--memory-child", choices=["linear", "tree"], default=None, help=argparse.SUPPRESS
    )
    data = parser.add_argument_group("data on a cluster (measurement 3; run alone with --data)")
    data.add_argument(
        "--data",
        action="store_true",
        help="run measurement 3 only: fits and answers on dask collections generated on a "
        "two-worker cluster (about 15 minutes; --quick: 10^6 rows, under 2 minutes)",
    )
    data.add_argument(
        "--data-rows",
        type=int,
        default=None,
        help="rows of the largest fit (default: 10^8; quick: 10^6)",
    )
    data.add_argument(
        "--data-queries",
        type=int,
        default=None,
        help="query rows answered by each model (default: 10^7; quick: 10^5)",
    )
    data.add_argument(
        "--data-teachers",
        type=int,
        default=DATA_TEACHERS,
        help="teachers of the SubsampleAggregateClassifier (default: %(default)s)",
    )
    data.add_argument(
        "--data-memory-limit",
        default=DATA_MEMORY_LIMIT,
        help="memory limit of each of the two workers (default: %(default)s; they spill "
        "to disk above it)",
    )
    data.add_argument(
        "--data-public",
        type=float,
        default=None,
        help=argparse.SUPPRESS,
    )
    data.add_argument(
        "--data-child", choices=["cluster", "memory"], default=None, help=argparse.SUPPRESS
    )
    args = parser.parse_args(argv)
    preset = QUICK if args.quick else DEFAULT
    args.teachers = args.teachers or preset["teachers"]
    args.replicas = args.replicas or preset["replicas"]
    args.repeats = args.repeats or preset["repeats"]
    if args.memory_queries is None:
        args.memory_queries = 10**6 if args.quick else 10**7
    if args.memory_trees is None:
        args.memory_trees = 0 if args.quick else 100
    if args.data_rows is None:
        args.data_rows = 10**6 if args.quick else 10**8
    if args.data_queries is None:
        args.data_queries = 10**5 if args.quick else 10**7
    return args


def native_threads(threads: int | None):
    """Limit the native thread pools of this process (a context manager)."""
    return threadpool_limits(threads) if threads else contextlib.nullcontext()


def load_adult_design() -> tuple[np.ndarray, np.ndarray]:
    """The Adult training split as the data-independent design matrix."""
    data = load_dataset("adult")
    return public_design(data.X_train), data.y_train


def main(argv: Sequence[str] | None = None) -> int:
    """Measure, print the tables, write the JSON (and the plot)."""
    args = parse_args(argv)
    if args.memory_child:
        with native_threads(args.threads):
            print(
                json.dumps(
                    memory_child(args.memory_queries, args.memory_child, args.memory_teachers)
                )
            )
        return 0
    if args.data_child:
        with native_threads(args.threads):
            result = run_child(
                args.data_child,
                args.data_rows,
                args.data_queries,
                args.data_public,
                args.data_teachers,
                args.data_memory_limit,
            )
        print(json.dumps(result))
        return 0
    if args.data:
        return data_main(args)
    from tqdm.auto import tqdm

    start = time.perf_counter()
    X, y = load_adult_design()
    data = {
        ("adult" if k == 1 else f"adult-x{k}"): (np.tile(X, (k, 1)), np.tile(y, k))
        for k in args.replicas
    }
    print(
        f"Adult design matrix {X.shape[0]} x {X.shape[1]}; replicas {args.replicas}; teachers "
        f"{args.teachers}; backends {args.backends}; {args.repeats} repeats; "
        f"{args.threads} native thread(s) in the main process."
    )
    n_steps = len(data) * args.repeats * (1 + len(args.backends) * len(args.teachers))
    progress = tqdm(total=n_steps, desc="fit timings", leave=False)
    with native_threads(args.threads), progress:
        fit = measure_fit(data, args.teachers, args.repeats, args.backends, progress)
    ratios = worker_ratios(fit)
    memory = []
    with tqdm(total=1 + bool(args.memory_trees), desc="predict memory", leave=False) as progress:
        memory.append(
            measure_memory(args.memory_queries, "linear", args.memory_teachers, args.threads)
        )
        progress.update(1)
        if args.memory_trees:
            memory.append(
                measure_memory(args.memory_queries // 10, "tree", args.memory_trees, args.threads)
            )
            progress.update(1)
    wall_seconds = time.perf_counter() - start

    print("\nFit time / one LogisticRegression fit on the same rows (medians):")
    print(format_fit(fit, args.backends))
    print("\nTwo workers / one worker (fit time):")
    print(format_workers(ratios))
    print("\nOne predict call on a large batch (peak = tracemalloc during the call):")
    print(format_memory(memory))
    plot = plot_fit(fit, args.backends, args.out / "scaleout_fit.png")
    path = write_json(
        args.out / "scaleout_results.json",
        {
            "benchmark": "scale-out: fit time against teachers and workers, predict memory "
            "(benchmarks/scaleout.py)",
            "config": {
                "quick": args.quick,
                "teachers": args.teachers,
                "replicas": args.replicas,
                "repeats": args.repeats,
                "backends": args.backends,
                "threads": args.threads,
                "memory_queries": args.memory_queries,
                "memory_teachers": args.memory_teachers,
                "memory_trees": args.memory_trees,
            },
            "environment": {**environment(), **_engine_versions()},
            "wall_seconds": wall_seconds,
            "fit": fit,
            "worker_ratios": ratios,
            "memory": memory,
        },
    )
    print(f"\nWall time {wall_seconds:.0f} s. Wrote {path}" + (f" and {plot}" if plot else ""))
    return 0


def data_main(args: argparse.Namespace) -> int:
    """Measurement 3 alone: print its tables and write ``scaleout_data_results.json``."""
    print(
        f"Data on a two-worker cluster: {args.data_rows:.0e} rows x {N_FEATURES} features "
        f"({data_bytes(args.data_rows) / 1e9:.1f} GB), {args.data_queries:.0e} queries, "
        f"{args.data_teachers} teachers, worker memory limit {args.data_memory_limit}; "
        f"{args.threads} native thread(s) per process."
    )
    start = time.perf_counter()
    section = run_section(args, Path(__file__).resolve())
    wall_seconds = time.perf_counter() - start
    path = write_json(
        args.out / "scaleout_data_results.json",
        {
            "benchmark": "data on a cluster: fits and answers on dask collections "
            "(benchmarks/scaleout.py --data)",
            "config": {
                "rows": args.data_rows,
                "queries": args.data_queries,
                "teachers": args.data_teachers,
                "memory_limit_per_worker": args.data_memory_limit,
                "threads": args.threads,
            },
            "environment": {**environment(), **_engine_versions()},
            "wall_seconds": wall_seconds,
            **section,
        },
    )
    print(f"\nWall time {wall_seconds:.0f} s. Wrote {path}")
    return 0


def _engine_versions() -> dict[str, str]:
    versions = {}
    for name in ("dask", "distributed"):
        with contextlib.suppress(ImportError):
            versions[name] = __import__(name).__version__
    return versions


if __name__ == "__main__":
    raise SystemExit(main())
