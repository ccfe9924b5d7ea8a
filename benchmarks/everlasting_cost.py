"""Cost of answering the everlasting predictors' queries as protected rows (issue 49).

The queries of :class:`~skprivpred.PrivateEverlastingClassifier` are protected
rows: a teacher that answers through its own ``predict`` (user code) now
answers each distinct query row alone, through the library's one boundary
(``skprivpred._isolation.call_user_code_by_row``: a copy of the teacher of its
own per row, unpickled from one payload per teacher, guarded). Stacked linear
and tree teachers are voted by the library from their coefficients, row-wise
by construction, and keep their batched votes.

Every figure is measured for this tree ("after") and for an older checkout
("before", ``--before``: a directory holding the code to compare with, e.g. a
git worktree of ``f6b663e``) in the same run: each measurement runs in a child
process with that tree first on ``PYTHONPATH``, the two trees alternating, and
the report gives medians (of 3 batched calls and 20 one-row calls per process,
and over ``--rounds`` processes per tree) and the after/before ratio.

Measured (Adult, published split, the private training set ``adult.data``,
queries drawn with replacement from ``adult.test``, on the 8-column public
design of ``benchmarks/everlasting.py``, ``epsilon = 4``):

- ``stacked``: the teacher of ``benchmarks/everlasting.py``
  (``LogisticRegression(C=10, class_weight="balanced")``), the default sizing
  (about 2,700 teachers): one ``predict`` of 10,000 queries, and one-row
  ``predict`` calls (median per call). Target: within 2x of before.
- ``own-predict``: a teacher that answers through its own ``predict``
  (``KNeighborsClassifier(n_neighbors=3)``), 100 teachers: one ``predict`` of
  100 queries, and one-row calls.

Run from the repository root::

    git worktree add /tmp/wt-old-ev f6b663e
    .venv/bin/python benchmarks/everlasting_cost.py --before /tmp/wt-old-ev   # ~6 min, 2 cores
    git worktree remove /tmp/wt-old-ev
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KINDS = ["stacked", "own-predict"]
#: Queries of the batched call, and one-row calls timed, per kind.
BATCH = {"stacked": 10_000, "own-predict": 100}
ONE_ROW_CALLS = 20
#: Batched calls timed per child process (the median is kept).
BATCH_CALLS = 3


def _child(kind: str) -> dict:
    """Fit the predictor of ``kind`` and time its answers (runs in the tree on PYTHONPATH)."""
    import warnings

    from everlasting import adult_task, compact_logistic
    from sklearn.neighbors import KNeighborsClassifier

    from skprivpred.everlasting import PrivateEverlastingClassifier

    task = adult_task(4.0, BATCH_CALLS * BATCH[kind] + ONE_ROW_CALLS, seed=0)
    if kind == "stacked":
        clf = PrivateEverlastingClassifier(
            compact_logistic(), epsilon=4.0, classes=[0, 1], random_state=0
        )
    else:
        clf = PrivateEverlastingClassifier(
            KNeighborsClassifier(n_neighbors=3),
            epsilon=4.0,
            n_teachers=100,
            classes=[0, 1],
            random_state=0,
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(task.X_train, task.y_train)
    queries = task.X_stream
    batches = []
    for k in range(BATCH_CALLS):
        start = time.perf_counter()
        clf.predict(queries[k * BATCH[kind] : (k + 1) * BATCH[kind]])
        batches.append(time.perf_counter() - start)
    first = BATCH_CALLS * BATCH[kind]
    one_row = []
    for k in range(ONE_ROW_CALLS):
        start = time.perf_counter()
        clf.predict(queries[first + k : first + k + 1])
        one_row.append(time.perf_counter() - start)
    assert clf.phase_ == 1  # every timed call answered by phase 1's teachers
    return {
        "n_teachers": int(clf.n_teachers_),
        "batch_rows": BATCH[kind],
        "batch_seconds": statistics.median(batches),
        "one_row_seconds": statistics.median(one_row),
    }


def _run(tree: Path, kind: str) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tree), str(ROOT / "benchmarks")])
    env.setdefault("OMP_NUM_THREADS", "1")
    out = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--child", kind],
        env=env,
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--before", type=Path, help="checkout of the code to compare with")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--kinds", nargs="+", default=KINDS, choices=KINDS)
    parser.add_argument("--child", choices=KINDS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(_child(args.child)))
        return 0
    if args.before is None:
        parser.error("--before is required (a checkout of the code to compare with)")
    trees = {"after": ROOT, "before": args.before.resolve()}
    results: dict = {kind: {"after": [], "before": []} for kind in args.kinds}
    for _ in range(args.rounds):
        for kind in args.kinds:
            for name, tree in trees.items():
                results[kind][name].append(_run(tree, kind))
    print(f"{'kind':<12} {'teachers':>8} {'measure':<24} {'before':>10} {'after':>10} {'ratio':>7}")
    for kind, runs in results.items():
        for key, label in (
            ("batch_seconds", f"predict {BATCH[kind]:,} rows (s)"),
            ("one_row_seconds", "one-row predict (s)"),
        ):
            before = statistics.median(r[key] for r in runs["before"])
            after = statistics.median(r[key] for r in runs["after"])
            teachers = runs["after"][0]["n_teachers"]
            print(
                f"{kind:<12} {teachers:>8} {label:<24} {before:>10.4f} {after:>10.4f} "
                f"{after / before:>7.2f}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
