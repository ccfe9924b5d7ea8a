"""Fit time and memory of a teacher ensemble fitted from a dask array on a LocalCluster.

The rows (``--rows`` x 10 features, two classes) are generated on the workers with
``dask.array.random``, never in the client; ``SubsampleAggregateClassifier(
LogisticRegression(), n_teachers=--teachers)`` is fitted from them (the teachers on the
workers, see "Teachers on a cluster" in docs/user_guide/scaling.rst). Prints the wall
time, the client's peak resident memory, each worker's peak resident memory, and (with
``--in-memory``) the time of an in-memory fit of the same rows computed into the client
for comparison (only for sizes that fit in memory).

    python benchmarks/dask_teachers_fit.py --rows 1000000 --teachers 1000 --in-memory
    python benchmarks/dask_teachers_fit.py --rows 100000000 --teachers 1000 \\
        --memory-limit 3GiB --chunk 1000000
"""

from __future__ import annotations

import argparse
import logging
import resource
import time

import numpy as np


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--teachers", type=int, default=1000)
    parser.add_argument("--chunk", type=int, default=250_000, help="rows per dask chunk")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory-limit", default="auto", help="per worker, e.g. 3GiB")
    parser.add_argument("--in-memory", action="store_true", help="also fit in memory")
    args = parser.parse_args()

    import dask.array as da
    from distributed import Client, LocalCluster
    from sklearn.linear_model import LogisticRegression

    from skprivpred import SubsampleAggregateClassifier

    def make():
        return SubsampleAggregateClassifier(
            LogisticRegression(), n_teachers=args.teachers, classes=[0, 1], random_state=0
        )

    with (
        LocalCluster(
            n_workers=args.workers,
            threads_per_worker=1,
            host="127.0.0.1",
            dashboard_address=":0",
            memory_limit=args.memory_limit,
            silence_logs=logging.ERROR,
        ) as cluster,
        Client(cluster) as client,
    ):
        rng = da.random.default_rng(0)
        X = rng.normal(size=(args.rows, 10), chunks=(args.chunk, 10))
        w = np.linspace(-1.0, 1.0, 10)
        y = ((X @ w + rng.normal(size=args.rows, chunks=args.chunk)) > 0).astype(np.int64)
        start = time.perf_counter()
        clf = make().fit(X, y)
        wall = time.perf_counter() - start
        workers = client.run(_peak_rss_mib)
        print(f"rows={args.rows} teachers={args.teachers} chunk={args.chunk}")
        print(f"dask fit: {wall:.1f} s, {wall / args.rows * 1e6:.2f} us/row")
        print(f"client peak RSS: {_peak_rss_mib():.0f} MiB")
        for address, peak in sorted(workers.items()):
            print(f"worker {address} peak RSS: {peak:.0f} MiB")
        print(f"data size: {args.rows * 10 * 8 / 2**20:.0f} MiB (X, float64)")
        if args.in_memory:
            X_mem, y_mem = client.compute([X, y], sync=True)
            start = time.perf_counter()
            local = make().fit(X_mem, y_mem)
            local_wall = time.perf_counter() - start
            print(f"in-memory fit: {local_wall:.1f} s, {local_wall / args.rows * 1e6:.2f} us/row")
            print(f"dask / in-memory: {wall / local_wall:.2f}x")
            query = X_mem[:2000]
            same = np.array_equal(clf._vote_counts(query), local._vote_counts(query))
            print(f"same vote counts as the in-memory fit (2000 rows): {same}")


if __name__ == "__main__":
    main()
