"""Answers to dask queries: wall time and the client's peak memory (issue 40, item 4).

A ``SubsampleAggregateClassifier(LogisticRegression(), n_teachers=1000)`` fitted
in memory answers ``--rows`` query rows generated on a two-worker
``LocalCluster`` (loopback; ``dask.array.random``, never in the client). Reported:
the wall time of ``predict`` (count, charge, votes on the workers, noise in the
client: the answers are drawn when it returns), the client's peak traced
memory during it (``tracemalloc``), and, for comparison, an in-memory
``predict`` of the same rows computed into the client::

    PYTHONPATH=$PWD python benchmarks/dask_queries.py --rows 1000000

For the scale figures (10^7 query rows) pass ``--rows 10000000 --skip-local``.
"""

from __future__ import annotations

import argparse
import logging
import time
import tracemalloc
import warnings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="query rows")
    parser.add_argument("--chunk", type=int, default=250_000, help="query rows per chunk")
    parser.add_argument("--train", type=int, default=100_000, help="training rows")
    parser.add_argument("--skip-local", action="store_true", help="no in-memory comparison")
    args = parser.parse_args()

    import dask.array as da
    import distributed
    import numpy as np
    from sklearn.datasets import make_classification
    from sklearn.linear_model import LogisticRegression

    from skprivpred import SubsampleAggregateClassifier

    warnings.simplefilter("ignore")
    X, y = make_classification(n_samples=args.train, n_features=10, random_state=0)
    clf = SubsampleAggregateClassifier(
        LogisticRegression(), n_teachers=1000, classes=[0, 1], random_state=0
    ).fit(X, y)
    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
            silence_logs=logging.ERROR,
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        client.wait_for_workers(2, timeout=60)
        queries = da.random.default_rng(1).normal(size=(args.rows, 10), chunks=(args.chunk, 10))
        tracemalloc.start()
        start = time.perf_counter()
        answers = clf.predict(queries)
        wall = time.perf_counter() - start
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        print(
            f"dask predict: {args.rows} rows in {wall:.2f} s "
            f"({wall / args.rows * 1e6:.2f} us/row), client peak traced "
            f"{peak / 2**20:.1f} MiB, answers chunks {len(answers.chunks[0])}"
        )
        if not args.skip_local:
            Q = queries.compute()
            start = time.perf_counter()
            local = clf.predict(Q)
            wall_local = time.perf_counter() - start
            print(
                f"in-memory predict: {args.rows} rows in {wall_local:.2f} s "
                f"({wall_local / args.rows * 1e6:.2f} us/row); ratio dask/in-memory "
                f"{wall / wall_local:.2f}"
            )
            assert local.shape == answers.shape and np.isin(local, [0, 1]).all()


if __name__ == "__main__":
    main()
