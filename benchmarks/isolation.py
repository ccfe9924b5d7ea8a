"""Cost of teacher isolation (issues 31 and 38): copies, views, guards, restores, the lock.

Every figure is measured for the code of this tree ("after") and of a git
revision ("before", ``--before``, default ``main``; extracted with ``git
archive``) in the same run: each measurement runs in a child process, the two
versions alternating, and the report gives medians and the after/before ratio.

Measured:

- ``stacked-linear``: vote counts of 100 stacked ``LogisticRegression``
  teachers on 100,000 rows x 20 features (no copy: the stack reads the rows once).
- ``stacked-trees``: the same with 100 depth-6 trees (one stacked descent).
- ``one-row``: one-row ``predict`` of ``SubsampleAggregateClassifier`` with its
  default teachers (what a service answers per request).
- ``own-predict``: one-row ``predict`` with 50 teachers that answer through their
  own ``predict`` (a scaler and a tree: each teacher in isolation).
- ``threads``: one-row ``predict`` calls per second of that estimator from 4
  threads against 1 thread (the warnings lock serialises teachers' answers).

And, for both trees (one run each), the two ways of handing rows to teachers that answer
through their own ``predict`` (50 teachers, 10,000 rows): (a) a private copy per
teacher, (b) one read-only copy per batch whose owning buffer is immutable, each
teacher handed a fresh view of it (issue 38); and the per-call cost of the
pieces every teacher call pays: ``handed_rows`` of a frozen batch (a view) and
the restore of the process state after a teacher that changed nothing
(``ProcessState.restore``: words compared, cached Gaussian cleared).

Run from the repository root::

    .venv/bin/python benchmarks/isolation.py            # ~2 min on 2 cores
    .venv/bin/python benchmarks/isolation.py --rounds 1 # quicker, noisier
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KINDS = ["stacked-linear", "stacked-trees", "one-row", "own-predict", "threads"]


def _median_time(func, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _data(n: int, d: int, seed: int = 0):
    import numpy as np

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)


def _own_predict_model():
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.tree import DecisionTreeClassifier

    from skprivpred import SubsampleAggregateClassifier

    X, y = _data(5000, 20)
    teacher = make_pipeline(StandardScaler(), DecisionTreeClassifier(max_depth=4))
    return SubsampleAggregateClassifier(teacher, n_teachers=50, classes=[0, 1], random_state=0).fit(
        X, y
    )


def _rate(clf, q, n_threads: int, seconds: float = 3.0) -> float:
    """One-row ``predict`` calls per second from ``n_threads`` threads."""
    calls = [0] * n_threads
    stop = time.perf_counter() + seconds

    def work(i: int) -> None:
        while time.perf_counter() < stop:
            clf.predict(q)
            calls[i] += 1

    threads = [threading.Thread(target=work, args=(i,)) for i in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(calls) / seconds


def child(kind: str) -> dict:
    """One measurement in this process (seconds, or calls per second for ``threads``)."""
    import warnings

    from sklearn.linear_model import LogisticRegression
    from sklearn.tree import DecisionTreeClassifier

    from skprivpred import SubsampleAggregateClassifier, SubsampleAverageClassifier

    warnings.simplefilter("ignore")
    if kind in ("stacked-linear", "stacked-trees"):
        X, y = _data(20000, 20)
        teacher = (
            LogisticRegression()
            if kind == "stacked-linear"
            else DecisionTreeClassifier(max_depth=6)
        )
        clf = SubsampleAverageClassifier(teacher, n_teachers=100, classes=[0, 1], random_state=0)
        clf.fit(X, y)
        Q, _ = _data(100_000, 20, seed=1)
        return {"seconds": _median_time(lambda: clf._ensemble.vote_counts(Q), 7)}
    if kind == "one-row":
        X, y = _data(20000, 20)
        clf = SubsampleAggregateClassifier(classes=[0, 1], random_state=0).fit(X, y)
        q = X[:1]
        return {"seconds": _median_time(lambda: [clf.predict(q) for _ in range(200)], 7) / 200}
    if kind == "own-predict":
        clf = _own_predict_model()
        q = _data(1, 20, seed=2)[0]
        return {"seconds": _median_time(lambda: [clf.predict(q) for _ in range(20)], 7) / 20}
    if kind == "threads":
        clf = _own_predict_model()
        q = _data(1, 20, seed=2)[0]
        return {
            "calls_per_second_1": _rate(clf, q, 1),
            "calls_per_second_4": _rate(clf, q, 4),
        }
    raise ValueError(kind)


def copies() -> dict:
    """Handing rows to 50 teachers on their own: per-teacher copies against one frozen copy."""
    import numpy as np

    from skprivpred._isolation import freeze_rows
    from skprivpred._teachers import teacher_votes

    clf = _own_predict_model()
    teachers = [t for _, t in clf._ensemble._other]
    Q, _ = _data(10_000, 20, seed=3)
    classes = np.array([0, 1])

    def per_teacher():  # teacher_votes copies an unfrozen batch for each teacher
        for t in teachers:
            teacher_votes(t, Q, classes)

    def per_batch():
        frozen = freeze_rows(Q)
        for t in teachers:
            teacher_votes(t, frozen, classes)

    figures = {
        "per_teacher_copy_s": _median_time(per_teacher, 5),
        "per_batch_frozen_s": _median_time(per_batch, 5),
        "n_teachers": len(teachers),
    }
    figures.update(_per_call())
    return figures


def _per_call(n: int = 20_000) -> dict:
    """Microseconds per ``handed_rows`` of a frozen batch, and per restore of an unchanged state."""
    from skprivpred import _isolation

    frozen = _isolation.freeze_rows(_data(100, 20, seed=4)[0])
    out = {}
    start = time.perf_counter()
    for _ in range(n):
        _isolation.handed_rows(frozen)
    out["handed_rows_us"] = (time.perf_counter() - start) / n * 1e6
    run = getattr(_isolation, "teacher_run", None)  # (absent before issue 38)
    with run() if run is not None else _isolation.captured_warnings():
        state = _isolation.ProcessState()
        start = time.perf_counter()
        for _ in range(n):
            state.restore()
        out["restore_us"] = (time.perf_counter() - start) / n * 1e6
    return out


def _run_child(kind: str, source: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(source))
    out = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--child", kind],
        env=env,
        cwd=tempfile.gettempdir(),  # never import the tree from the working directory
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", default="main", help="git revision of the old code")
    parser.add_argument("--rounds", type=int, default=3, help="alternations per measurement")
    parser.add_argument("--only", choices=KINDS, nargs="*", default=KINDS)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        payload = copies() if args.child == "copies" else child(args.child)
        print(json.dumps(payload))
        return
    from _common import extract_revision  # the child imports only its own tree

    with tempfile.TemporaryDirectory() as tmp:
        before = extract_revision(args.before, Path(tmp))
        results: dict = {}
        for kind in args.only:
            runs: dict = {"before": [], "after": []}
            for _ in range(args.rounds):
                runs["before"].append(_run_child(kind, before))
                runs["after"].append(_run_child(kind, ROOT))
            results[kind] = runs
            keys = runs["after"][0].keys()
            for key in keys:
                b = statistics.median(r[key] for r in runs["before"])
                a = statistics.median(r[key] for r in runs["after"])
                print(
                    f"{kind:15s} {key:22s} before {b:.4g}  after {a:.4g}  after/before {a / b:.3f}"
                )
        results["copies"] = _run_child("copies", ROOT)
        results["copies_before"] = _run_child("copies", before)
        print("handing rows, after: ", json.dumps(results["copies"]))
        print("handing rows, before:", json.dumps(results["copies_before"]))


if __name__ == "__main__":
    main()
