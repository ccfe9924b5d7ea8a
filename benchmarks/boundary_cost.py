"""Cost of the one boundary (issue 49): user code on training rows, one row at a time.

``ExponentialMechanismClassifier`` with a list of 100 callables (thresholds on the
age and hours-per-week columns, each a closure over its threshold) fitted on the
UCI Adult training rows (32,561 rows, 14 columns, an object array, as
:func:`skprivpred.datasets.load_adult` returns it; fetched on a fresh machine).

"after" is the code of this tree: every callable labels every distinct row alone,
through a copy of its own (one cloudpickle payload per callable, unpickled per
row), handed a one-row object of its own, the process state restored after it.
"before" is a git revision (``--before``, default ``f6b663e``, the last commit
before issue 49; extracted with ``git archive``), where each callable labelled
the whole batch in one call. Each measurement runs in a child process with that
tree first on ``PYTHONPATH``; the report gives the fit time, the time per row and
per callable-row (wall and CPU time: on a shared machine the CPU time is the
steadier figure), and the after/before ratio.

Run from the repository root::

    .venv/bin/python benchmarks/boundary_cost.py              # both, full Adult
    .venv/bin/python benchmarks/boundary_cost.py --rows 5000  # quicker
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
N_CALLABLES = 100


def _threshold(column: int, value: float):
    def hypothesis(X):
        return (X[:, column].astype(float) >= value).astype(int)

    return hypothesis


def hypotheses() -> list:
    """100 public thresholds: 50 on age (column 0), 50 on hours-per-week (column 12)."""
    ages = [_threshold(0, 17 + 1.2 * k) for k in range(N_CALLABLES // 2)]
    hours = [_threshold(12, 1 + 2.0 * k) for k in range(N_CALLABLES // 2)]
    return ages + hours


def child(rows: int) -> dict:
    from skprivpred import ExponentialMechanismClassifier
    from skprivpred.datasets import load_adult

    X, y = load_adult(return_X_y=True)
    X, y = X[:rows], y[:rows]
    clf = ExponentialMechanismClassifier(hypotheses(), epsilon=1.0, classes=[0, 1], random_state=0)
    start, cpu_start = time.perf_counter(), time.process_time()
    clf.fit(X, y)
    seconds = time.perf_counter() - start
    cpu = time.process_time() - cpu_start
    return {
        "rows": int(y.shape[0]),
        "seconds": seconds,
        "cpu_seconds": cpu,
        "cpu_us_per_callable_row": 1e6 * cpu / (y.shape[0] * N_CALLABLES),
        "us_per_row": 1e6 * seconds / y.shape[0],
        "us_per_callable_row": 1e6 * seconds / (y.shape[0] * N_CALLABLES),
    }


def _run(tree: Path, rows: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    out = subprocess.run(
        [sys.executable, __file__, "--child", "--rows", str(rows)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
        cwd=tree,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=32_561)
    parser.add_argument("--before", default="f6b663e")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.rows)))
        return
    from _common import extract_revision  # the child imports only its own tree

    with tempfile.TemporaryDirectory() as tmp:
        before = _run(extract_revision(args.before, Path(tmp)), args.rows)
    after = _run(ROOT, args.rows)
    for name, result in (("before", before), ("after", after)):
        print(
            f"{name:6s} {result['rows']} rows x {N_CALLABLES} callables: "
            f"{result['seconds']:.2f} s ({result['us_per_row']:.1f} us/row, "
            f"{result['us_per_callable_row']:.2f} us per callable-row; CPU "
            f"{result['cpu_seconds']:.2f} s, {result['cpu_us_per_callable_row']:.2f} us per "
            "callable-row)"
        )
    print(f"after/before: x{after['seconds'] / before['seconds']:.0f}")


if __name__ == "__main__":
    main()
