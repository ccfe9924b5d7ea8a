"""Data on a cluster at scale: the *data* section of ``scaleout.py``.

A synthetic classification set is generated on the workers (``dask.array.random``,
never in the client): ``n`` rows of 10 standard normal features, the label
``[x . w + e > 0]`` with ``w = (1, 0.9, ..., 0.1)`` and ``e`` a standard normal, a
fraction of the rows marked public (label ``-1``) for the one-release fit. The same
graph, computed into memory, is the in-memory baseline's data (at sizes that fit),
so that both paths see the very same rows. Query rows come from a second seed.

Each measurement runs in a fresh subprocess (``scaleout.py --data-child``), so that
its peak resident set (``ru_maxrss``) is its own:

* ``cluster``: a two-worker ``LocalCluster`` on 127.0.0.1 (one thread each, a
  memory limit per worker, spilling to a temporary directory) started by the
  child; ``SufficientStatisticClassifier.fit`` on the rows with their public
  ones, ``SubsampleAggregateClassifier(LogisticRegression(), n_teachers=...)``
  ``.fit`` on the labelled rows (the public ones given their labels), then each
  model's ``predict`` of the query rows (a dask array, answered eagerly: the
  teachers' votes on the workers, the noise in the client), and the accuracies,
  counted on the workers. Reported: wall times, the client's peak resident set,
  and each worker process's peak (``client.run`` of ``ru_maxrss`` at the end: the
  nanny restarts no worker, so the worker's peak covers the run).
* ``memory``: the same estimators fitted and asked on the same rows computed into
  NumPy arrays in the process (no cluster).

Time per row is a fit's wall time over its number of rows; the ratio of the
cluster's at ``n`` to the in-memory one's at a tenth of ``n`` shows how the cost
grows. The accuracy check compares the cluster's and the in-memory fit's held-out
accuracies at the same size, on the same query rows: their difference is judged
against the two-proportion 99 % bound of the held-out sampling (``2.576 sqrt(p (1 -
p) 2 / m)``): with an integer seed the two fits release models of one law, so only
the queries' noise and the held-out sample separate them.
"""

from __future__ import annotations

import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from _common import format_table

#: Features of the synthetic set, and the label's weights.
N_FEATURES = 10
WEIGHTS = np.linspace(1.0, 0.1, N_FEATURES)
#: Rows per chunk of the generated arrays (80 MB of features).
CHUNK_ROWS = 10**6
#: Seeds of the training rows and of the query rows; of the estimators.
DATA_SEED, QUERY_SEED, FIT_SEED = 0, 1, 0


def generate(n_rows: int, public_fraction: float, seed: int, chunk_rows: int = CHUNK_ROWS):
    """``(X, y, y_public)`` as lazy dask arrays: the rows are made where they are computed.

    ``y_public`` is ``y`` with the public rows' labels replaced by ``-1``.
    """
    import dask.array as da

    rng = da.random.default_rng(seed)
    chunks = min(chunk_rows, n_rows)
    X = rng.normal(size=(n_rows, N_FEATURES), chunks=(chunks, N_FEATURES))
    noise = rng.normal(size=n_rows, chunks=chunks)
    y = (X @ WEIGHTS + noise > 0).astype(np.int64)
    public = rng.random(n_rows, chunks=chunks) < public_fraction
    return X, y, da.where(public, -1, y)


def _estimators(n_teachers: int):
    from sklearn.linear_model import LogisticRegression

    from skprivpred import SubsampleAggregateClassifier, SufficientStatisticClassifier

    one_release = SufficientStatisticClassifier(classes=[0, 1], random_state=FIT_SEED)
    teachers = SubsampleAggregateClassifier(
        LogisticRegression(), n_teachers=n_teachers, classes=[0, 1], random_state=FIT_SEED
    )
    return one_release, teachers


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _timed(func):
    start = time.perf_counter()
    value = func()
    return value, time.perf_counter() - start


def run_child(
    where: str,
    n_rows: int,
    n_queries: int,
    public_fraction: float,
    n_teachers: int,
    memory_limit: str,
) -> dict[str, Any]:
    """One measurement (in this process): ``where`` is ``"cluster"`` or ``"memory"``."""
    import warnings

    from skprivpred import PrivacyWarning, UnlabelledRowsWarning

    warnings.simplefilter("ignore", PrivacyWarning)  # integer seeds, on purpose
    warnings.simplefilter("ignore", UnlabelledRowsWarning)
    result: dict[str, Any] = {
        "where": where,
        "rows": n_rows,
        "queries": n_queries,
        "public_fraction": public_fraction,
        "teachers": n_teachers,
        "rss_mb_before": _peak_rss_mb(),
    }
    X, y, y_public = generate(n_rows, public_fraction, DATA_SEED)
    X_query, y_query, _ = generate(n_queries, 0.0, QUERY_SEED)
    one_release, teachers = _estimators(n_teachers)
    if where == "memory":
        import dask

        (X, y, y_public, X_query, y_query), result["generate_seconds"] = _timed(
            lambda: dask.compute(X, y, y_public, X_query, y_query, scheduler="threads")
        )
        result.update(_fit_and_ask(one_release, teachers, X, y, y_public, X_query, y_query))
    else:
        from skprivpred.utils._testing import local_dask_client

        with (
            tempfile.TemporaryDirectory(prefix="skprivpred-spill-") as spill,
            local_dask_client(2, memory_limit=memory_limit, local_directory=spill) as client,
        ):
            result["memory_limit_per_worker"] = memory_limit
            result.update(_fit_and_ask(one_release, teachers, X, y, y_public, X_query, y_query))
            peaks = client.run(_peak_rss_mb)
            result["worker_peak_rss_mb"] = sorted(peaks.values())
    result["client_peak_rss_mb"] = _peak_rss_mb()
    return result


def _accuracy(answers, y_query) -> tuple[float, float]:
    """Held-out accuracy of ``answers`` (an array, NumPy or dask) and its wall time."""

    def count():
        hits = answers == y_query
        return float(hits.mean().compute() if hasattr(hits, "compute") else hits.mean())

    return _timed(count)


def _fit_and_ask(one_release, teachers, X, y, y_public, X_query, y_query) -> dict[str, Any]:
    out: dict[str, Any] = {}
    _, out["one_release_fit_seconds"] = _timed(lambda: one_release.fit(X, y_public))
    answers, out["one_release_predict_seconds"] = _timed(lambda: one_release.predict(X_query))
    out["one_release_accuracy"], out["one_release_count_seconds"] = _accuracy(answers, y_query)
    _, out["teachers_fit_seconds"] = _timed(lambda: teachers.fit(X, y))
    answers, out["teachers_predict_seconds"] = _timed(lambda: teachers.predict(X_query))
    out["teachers_accuracy"], out["teachers_count_seconds"] = _accuracy(answers, y_query)
    return out


def measure(
    script: Path,
    where: str,
    n_rows: int,
    n_queries: int,
    public_fraction: float,
    n_teachers: int,
    memory_limit: str,
    threads: int,
) -> dict[str, Any]:
    """Run :func:`run_child` in a fresh interpreter (``script --data-child``) and read its JSON."""
    command = [
        sys.executable,
        str(script),
        "--data-child",
        where,
        "--data-rows",
        str(n_rows),
        "--data-queries",
        str(n_queries),
        "--data-public",
        str(public_fraction),
        "--data-teachers",
        str(n_teachers),
        "--data-memory-limit",
        memory_limit,
        "--threads",
        str(threads),
    ]
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stdout}\n{done.stderr}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["child_wall_seconds"] = time.perf_counter() - start
    return result


def data_bytes(n_rows: int) -> int:
    """Bytes of the features and labels of ``n_rows`` rows (float64 and int64)."""
    return n_rows * (N_FEATURES + 1) * 8


def compare(scale: dict, cluster: dict, memory: dict) -> dict[str, Any]:
    """Time per row and accuracy verdicts from the three measurements."""
    verdicts: dict[str, Any] = {
        "data_gb": data_bytes(scale["rows"]) / 1e9,
        "client_peak_rss_mb": scale["client_peak_rss_mb"],
        "client_below_1_gb": scale["client_peak_rss_mb"] < 1000,
        "client_below_a_tenth_of_the_data": scale["client_peak_rss_mb"] * 2**20
        < data_bytes(scale["rows"]) / 10,
    }
    for part in ("one_release", "teachers"):
        per_row = scale[f"{part}_fit_seconds"] / scale["rows"]
        baseline = memory[f"{part}_fit_seconds"] / memory["rows"]
        verdicts[f"{part}_fit_us_per_row_cluster"] = per_row * 1e6
        verdicts[f"{part}_fit_us_per_row_memory"] = baseline * 1e6
        verdicts[f"{part}_fit_per_row_ratio"] = per_row / baseline
        verdicts[f"{part}_fit_per_row_ratio_cluster"] = per_row / (
            cluster[f"{part}_fit_seconds"] / cluster["rows"]
        )
        p_cluster, p_memory = cluster[f"{part}_accuracy"], memory[f"{part}_accuracy"]
        m = cluster["queries"]
        p = (p_cluster + p_memory) / 2
        bound = 2.576 * math.sqrt(2 * p * (1 - p) / m)
        verdicts[f"{part}_accuracy_difference"] = p_cluster - p_memory
        verdicts[f"{part}_accuracy_bound"] = bound
        verdicts[f"{part}_accuracy_equal_within_noise"] = abs(p_cluster - p_memory) <= bound
    return verdicts


def format_report(scale: dict, cluster: dict, memory: dict, verdicts: dict) -> str:
    """The section's printed tables."""
    rows = []
    for name, run in (("cluster", scale), ("cluster", cluster), ("in memory", memory)):
        for part, label in (("one_release", "SufficientStatistic"), ("teachers", "SubsampleAgg")):
            rows.append(
                [
                    name,
                    f"{run['rows']:.0e}",
                    f"{run['public_fraction']:.0%}",
                    label,
                    f"{run[f'{part}_fit_seconds']:.1f}",
                    f"{run[f'{part}_fit_seconds'] / run['rows'] * 1e6:.3f}",
                    f"{run[f'{part}_predict_seconds'] + run[f'{part}_count_seconds']:.1f}",
                    f"{run[f'{part}_accuracy']:.4f}",
                    f"{run['client_peak_rss_mb']:.0f}",
                    ", ".join(f"{v:.0f}" for v in run.get("worker_peak_rss_mb", [])) or "-",
                ]
            )
    table = format_table(
        rows,
        [
            "where",
            "rows",
            "public",
            "estimator",
            "fit s",
            "fit us/row",
            f"predict+count s ({scale['queries']:.0e} q)",
            "accuracy",
            "client MB",
            "workers MB",
        ],
    )
    lines = [table, ""]
    lines.append(
        f"Data {verdicts['data_gb']:.1f} GB; client peak {verdicts['client_peak_rss_mb']:.0f} MB: "
        f"below 1 GB {verdicts['client_below_1_gb']}, below a tenth of the data "
        f"{verdicts['client_below_a_tenth_of_the_data']}."
    )
    for part, label in (("one_release", "one release"), ("teachers", "teachers")):
        lines.append(
            f"{label}: fit time per row, cluster at {scale['rows']:.0e} / in memory at "
            f"{memory['rows']:.0e}: x{verdicts[f'{part}_fit_per_row_ratio']:.2f}, / cluster at "
            f"{cluster['rows']:.0e}: x{verdicts[f'{part}_fit_per_row_ratio_cluster']:.2f}; "
            f"accuracy at "
            f"{memory['rows']:.0e}, cluster - in memory "
            f"{verdicts[f'{part}_accuracy_difference']:+.5f} (99 % bound "
            f"{verdicts[f'{part}_accuracy_bound']:.5f}): equal within noise "
            f"{verdicts[f'{part}_accuracy_equal_within_noise']}."
        )
    return "\n".join(lines)


def run_section(args, script: Path) -> dict[str, Any]:
    """The whole section: the cluster at ``args.data_rows``, cluster and memory at a tenth."""
    small = args.data_rows // 10
    common = {
        "n_queries": args.data_queries,
        "n_teachers": args.data_teachers,
        "memory_limit": args.data_memory_limit,
        "threads": args.threads,
    }
    scale = measure(script, "cluster", args.data_rows, public_fraction=0.01, **common)
    cluster = measure(script, "cluster", small, public_fraction=0.25, **common)
    memory = measure(script, "memory", small, public_fraction=0.25, **common)
    verdicts = compare(scale, cluster, memory)
    print(format_report(scale, cluster, memory, verdicts))
    return {"scale": scale, "cluster": cluster, "memory": memory, "verdicts": verdicts}


__all__ = ["compare", "data_bytes", "generate", "measure", "run_child", "run_section"]
