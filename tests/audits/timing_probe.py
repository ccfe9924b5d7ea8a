"""Timing-channel audit of the reference service: can response times tell D from D'?

A privacy audit, not a benchmark: it asks whether what the service leaks through time
stays within the guarantee. Two parts, each against the real service
(``python -m skprivpred.serving``, uvicorn on 127.0.0.1, 1 worker, its own SQLite ledger):

The timing channel (``--only timing``, the reproduction of issue 32). Three teachers
``make_pipeline(OneHotEncoder(), LogisticRegression())`` (the encoder's default
``handle_unknown="error"``: a teacher that never saw a category fails on a batch that
holds it, and the library retries it on halves) on 600 rows of two categorical columns
with values 0 to 4; on D one row (so one teacher's block) holds the category ``z`` = 9,
on D' none does. The request is 1,000 rows, one of which holds ``z``. Requests alternate
between D and D' (``--timing-requests`` per side, after 20 warm-up requests each), first
with ``--no-timing-defence``, then with the default schedule, in one run; under
``--timing-conditions`` ``quiet`` and ``loaded`` (beside ``--busy`` CPU-bound processes
and other clients at ``--background-rate`` one-row requests per second). A threshold
classifier on one response time (the threshold and direction that do best on a random
half of the requests) guesses D or D' on the other half; reported: its held-out accuracy
with the 95 % Clopper-Pearson interval. Target: the upper end <= 0.55 with the defence on.

The probe (``--only probe``, issue 38): 8 keep-alive connections poll every GET route
while one's own one-row ``/predict`` waits on busy-loop teachers
(:mod:`timing_probe_teacher`, a block with a marked row spins 65 ms instead of 5);
the number of probes answered before the response, and the wait itself, are classified
D vs D' the same way (``--probe-runs`` runs per side). Target as above.

Usage, from the repository root (needs the ``serve`` extra)::

    python tests/audits/timing_probe.py                 # both parts, about 15 minutes
    python -m tests.audits.timing_probe --only timing   # about 10 minutes
    python tests/audits/timing_probe.py --only probe --quick

Results go to ``--out`` (default ``benchmarks/results/``): ``timing_probe_results.json``
(or ``serving_timing_results.json`` / ``serving_probe_results.json`` with ``--only``, the
names the benchmark used).
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.linear_model import LogisticRegression

from skprivpred import PrivacyAccountant, SubsampleAggregateClassifier
from skprivpred.serving import ReleaseSchedule, save_model
from skprivpred.utils._testing import start_service, stop_service

#: The media type the service requires of a request body.
JSON = {"Content-Type": "application/json"}

HERE = Path(__file__).resolve().parent
REPOSITORY = HERE.parents[1]
DEFAULT_OUT = REPOSITORY / "benchmarks" / "results"
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))  # timing_probe_teacher, as the served process imports it


def environment() -> dict[str, Any]:
    """Versions and machine facts worth keeping next to timings."""
    import scipy
    import sklearn

    import skprivpred

    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "scikit-learn": sklearn.__version__,
        "skprivpred": skprivpred.__version__,
    }


def write_json(path: Path, payload: dict[str, Any]) -> Path:
    """Write ``payload`` as indented JSON to ``path``, creating its folder."""

    def builtin(value: Any) -> Any:
        if isinstance(value, np.generic):
            return value.item()
        if isinstance(value, np.ndarray):
            return value.tolist()
        if isinstance(value, Path):
            return str(value)
        raise TypeError(f"cannot serialise {type(value).__name__} to JSON")

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2, default=builtin) + "\n", encoding="utf-8")
    return path


def format_table(rows: Sequence[Sequence[Any]], header: Sequence[str]) -> str:
    """Plain-text table, left-aligned."""
    cells = [[str(h) for h in header]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[j]) for row in cells) for j in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


# -- the timing channel and the probe -----------------------------------------------------
#: Target: the upper end of the 95 % interval of the held-out accuracy, defence on.
TIMING_TARGET = 0.55


def timing_models(tmp: Path) -> tuple[dict[str, Path], bytes]:
    """The reproduction's two models (D with the category ``z`` in one block, D' without)."""
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    rng = np.random.default_rng(0)
    X = rng.integers(0, 5, size=(600, 2)).astype(float)
    y = (X[:, 0] + X[:, 1] > 4).astype(int)
    with_z = X.copy()
    with_z[0, 0] = 9.0  # z: one row, so one teacher's block
    models = {}
    for name, data in (("D", with_z), ("D'", X)):
        directory = tmp / f"timing-{len(models)}"
        directory.mkdir(mode=0o700)
        budget = PrivacyAccountant(epsilon=1e12, ledger=str(directory / "budget.db"), name=name)
        clf = SubsampleAggregateClassifier(
            make_pipeline(OneHotEncoder(), LogisticRegression()),
            n_teachers=3,
            epsilon=1.0,
            classes=[0, 1],
            accountant=budget,
        ).fit(data, y)
        models[name] = directory / "model.skops"
        save_model(clf, models[name])
    query = rng.integers(0, 5, size=(1000, 2)).astype(float)
    query[500, 0] = 9.0
    return models, json.dumps({"rows": query.tolist()}).encode()


def threshold_accuracy(times: np.ndarray, is_d: np.ndarray, seed: int = 0) -> dict:
    """Held-out accuracy of the best threshold on one response time (trained on half)."""
    from scipy.stats import beta

    order = np.random.default_rng(seed).permutation(len(times))
    train, test = order[: len(order) // 2], order[len(order) // 2 :]
    best = (-1.0, 0.0, True)
    values = np.sort(np.unique(times[train]))
    cuts = np.concatenate([[values[0] - 1], (values[:-1] + values[1:]) / 2, [values[-1] + 1]])
    for cut in cuts:
        below = times[train] <= cut
        for d_below in (True, False):
            accuracy = float(np.mean(below == (is_d[train] if d_below else ~is_d[train])))
            if accuracy > best[0]:
                best = (accuracy, float(cut), d_below)
    _, cut, d_below = best
    guess_d = (times[test] <= cut) == d_below
    right = int(np.sum(guess_d == is_d[test]))
    n = len(test)
    low = float(beta.ppf(0.025, right, n - right + 1)) if right > 0 else 0.0
    high = float(beta.ppf(0.975, right + 1, n - right)) if right < n else 1.0
    return {
        "train_accuracy": best[0],
        "held_out": n,
        "accuracy": right / n,
        "interval_95": (low, high),
        "threshold_ms": cut * 1e3,
    }


@contextlib.contextmanager
def busy_processes(n: int):
    """``n`` CPU-bound processes (``while True: pass``), stopped by their handles at the end."""
    procs = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], stdin=subprocess.DEVNULL)
        for _ in range(n)
    ]
    try:
        yield procs
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(timeout=60)


@contextlib.contextmanager
def background_clients(ports: list[int], rate: float, body: bytes):
    """One thread per port sending ``body`` at ``rate`` requests per second until the end."""
    stop = threading.Event()
    sent = [0]

    def client(port: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        next_at = time.monotonic()
        while not stop.is_set():
            try:
                conn.request("POST", "/predict", body=body, headers=JSON)
                conn.getresponse().read()
            except (ConnectionError, http.client.HTTPException):
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
                continue
            sent[0] += 1
            next_at += 1.0 / rate
            stop.wait(max(next_at - time.monotonic(), 0.0))
        conn.close()

    threads = [threading.Thread(target=client, args=(p,), daemon=True) for p in ports]
    if rate > 0:
        for thread in threads:
            thread.start()
    try:
        yield sent
    finally:
        stop.set()
        if rate > 0:
            for thread in threads:
                thread.join(timeout=120)


def timing_channel(
    tmp: Path,
    requests: int,
    busy: int = 0,
    rate: float = 0.0,
    off: bool = True,
    max_seconds: float | None = None,
) -> dict:
    """The reproduction through the real service: the defence off (if ``off``), then on.

    ``busy``: CPU-bound processes started beside the service for the run; ``rate``: other
    clients' one-row requests per second to each of the two services meanwhile.
    """
    models, body = timing_models(tmp)
    results: dict = {"busy_processes": busy, "background_rate_per_service": rate}
    loads = []
    labels = (("defence off", ("--no-timing-defence",)),) if off else ()
    for label, extra in (*labels, ("defence on", ())):
        started = {}
        started_at = time.monotonic()
        try:
            for name, model in models.items():
                started[name] = start_service(
                    model,
                    1,
                    tmp / "timing.log",
                    tmp / f"metrics-timing-{label}-{name}",
                    extra=extra,
                )
            conns = {
                name: http.client.HTTPConnection("127.0.0.1", port, timeout=120)
                for name, (_, port) in started.items()
            }
            times: dict[str, list[float]] = {name: [] for name in models}
            ports = [port for _, port in started.values()]
            with busy_processes(busy), background_clients(ports, rate, ONE_ROW) as sent:
                for step in range(20 + requests):
                    if max_seconds is not None and time.monotonic() - started_at > max_seconds:
                        print(f"{label}: stopped at the time budget at step {step}", flush=True)
                        break
                    for name in models:
                        for attempt in range(2):  # an idle keep-alive connection may be closed
                            try:
                                start = time.perf_counter()
                                conns[name].request("POST", "/predict", body=body, headers=JSON)
                                response = conns[name].getresponse()
                                response.read()
                                break
                            except (ConnectionError, http.client.HTTPException):
                                conns[name].close()
                                conns[name] = http.client.HTTPConnection(
                                    "127.0.0.1", started[name][1], timeout=120
                                )
                                if attempt:
                                    raise
                        elapsed = time.perf_counter() - start
                        if response.status != 200:
                            raise RuntimeError(f"{label}, {name}: HTTP {response.status}")
                        if step >= 20:
                            times[name].append(elapsed)
                    if step % 100 == 0:
                        loads.append(os.getloadavg()[0])
                        recent = [t[-100:] for t in times.values() if t]
                        shown = [f"{np.median(t) * 1e3:.1f}" for t in recent]
                        print(
                            f"{label}: step {step}, load {loads[-1]:.1f}, recent p50 ms {shown}",
                            flush=True,
                        )
            for conn in conns.values():
                conn.close()
        finally:
            for proc, _ in started.values():
                stop_service(proc)
        all_times = np.concatenate([times["D"], times["D'"]])
        is_d = np.arange(len(all_times)) < len(times["D"])
        figures = threshold_accuracy(all_times, is_d)
        figures["p50_ms"] = {n: float(np.median(t)) * 1e3 for n, t in times.items()}
        figures["p99_ms"] = {n: float(np.percentile(t, 99)) * 1e3 for n, t in times.items()}
        figures["distinct_times"] = {
            n: int(len(np.unique(np.round(np.asarray(t) * 1e3)))) for n, t in times.items()
        }
        figures["background_requests"] = sent[0]
        figures["seconds"] = time.monotonic() - started_at
        results[label] = figures
        low, high = figures["interval_95"]
        print(
            f"{label}: p50 D {figures['p50_ms']['D']:.1f} ms, D' {figures['p50_ms'][D_PRIME]:.1f} "
            f"ms; held-out accuracy {figures['accuracy']:.3f} [{low:.3f}, {high:.3f}]; load "
            f"{os.getloadavg()[0]:.1f}; {figures['seconds']:.0f} s",
            flush=True,
        )
    results["requests_per_side"] = len(times["D"])  # fewer than asked at the time budget
    results["load"] = os.getloadavg()[0]
    results["load_range"] = (min(loads), max(loads)) if loads else None
    return results


#: The other clients' request (one row of the reproduction's two columns).
ONE_ROW = json.dumps({"rows": [[1.0, 2.0]]}).encode()

#: The routes the probing connections poll (every GET route of the service).
PROBED_ROUTES = ("/health", "/budget", "/metrics", "/guarantee", "/card", "/openapi.json")


def probe_models(tmp: Path, n_teachers: int = 4) -> dict[str, Path]:
    """Two models of :class:`timing_probe_teacher.BusyTeacher`: D (a slow block), D' (none)."""
    from timing_probe_teacher import BusyTeacher

    rng = np.random.default_rng(1)
    X = rng.integers(0, 5, size=(400, 2)).astype(float)
    y = rng.integers(0, 2, size=400)
    with_mark = X.copy()
    with_mark[0, 0] = 9.0  # one row: one block's teacher spins 65 ms instead of 5
    models = {}
    for name, data in (("D", with_mark), ("D'", X)):
        directory = tmp / f"probe-{len(models)}"
        directory.mkdir(mode=0o700)
        budget = PrivacyAccountant(epsilon=1e12, ledger=str(directory / "budget.db"), name=name)
        clf = SubsampleAggregateClassifier(
            BusyTeacher(),
            n_teachers=n_teachers,
            epsilon=1.0,
            classes=[0, 1],
            accountant=budget,
        ).fit(data, y)
        models[name] = directory / "model.skops"
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # the custom type, trusted below
            save_model(clf, models[name])
    return models


def probe_channel(
    tmp: Path,
    runs: int,
    connections: int = 8,
    release_s: float = 0.5,
    max_seconds: float | None = None,
) -> dict:
    """Issue 38's probe: poll every route while one's own ``/predict`` waits; D vs D'.

    Each service (1 worker, the default schedule except a per-row-teacher term that puts
    the one-row ``/predict`` at ``release_s``) is polled by ``connections`` keep-alive
    connections, each cycling through :data:`PROBED_ROUTES` as fast as they are answered;
    the probing client sends its own one-row ``/predict`` and counts the probes answered
    until its response arrives. Runs alternate between D and D'.
    """
    models = probe_models(tmp)
    n_teachers = 4
    per_row_teacher = (release_s - 0.004) / n_teachers
    env_path = os.pathsep.join([str(Path(__file__).resolve().parent), str(REPOSITORY)])
    extra = (
        "--trust",
        "timing_probe_teacher.BusyTeacher",
        "--timing-per-row-teacher",
        repr(per_row_teacher),
    )
    started = {}
    counts: dict[str, list[int]] = {name: [] for name in models}
    waits: dict[str, list[float]] = {name: [] for name in models}
    loads = []
    started_at = time.monotonic()
    try:
        for name, model in models.items():
            started[name] = start_service(
                model,
                1,
                tmp / "probe.log",
                tmp / f"metrics-probe-{len(started)}",
                pythonpath=env_path,
                extra=extra,
            )
        body = json.dumps({"rows": [[1.0, 2.0]]}).encode()
        answered = {name: [0] for name in started}
        stop = threading.Event()

        def poll(offset: int, port: int, count: list) -> None:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
            i = offset
            while not stop.is_set():
                try:
                    conn.request("GET", PROBED_ROUTES[i % len(PROBED_ROUTES)])
                    conn.getresponse().read()
                except (ConnectionError, http.client.HTTPException):
                    conn.close()
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
                    continue
                count[0] += 1
                i += 1
            conn.close()

        # Keep-alive connections that poll every route for the whole run, on each service.
        pollers = [
            threading.Thread(target=poll, args=(k, port, answered[name]), daemon=True)
            for name, (_, port) in started.items()
            for k in range(connections)
        ]
        for thread in pollers:
            thread.start()
        own = {
            name: http.client.HTTPConnection("127.0.0.1", port, timeout=300)
            for name, (_, port) in started.items()
        }
        for step in range(30 + runs):
            if max_seconds is not None and time.monotonic() - started_at > max_seconds:
                print(f"probe: stopped at the time budget after {step - 30} runs", flush=True)
                break
            for name in started:
                for attempt in range(2):  # an idle keep-alive connection may be closed
                    try:
                        before = answered[name][0]
                        start = time.perf_counter()
                        own[name].request("POST", "/predict", body=body, headers=JSON)
                        response = own[name].getresponse()
                        response.read()
                        break
                    except (ConnectionError, http.client.HTTPException):
                        own[name].close()
                        own[name] = http.client.HTTPConnection(
                            "127.0.0.1", started[name][1], timeout=300
                        )
                        if attempt:
                            raise
                elapsed = time.perf_counter() - start
                count = answered[name][0] - before
                if response.status != 200:
                    raise RuntimeError(f"probe, {name}: HTTP {response.status}")
                if step >= 30:
                    counts[name].append(count)
                    waits[name].append(elapsed)
            if step % 100 == 0:
                loads.append(os.getloadavg()[0])
                print(
                    f"probe: {step} runs per side, load {loads[-1]:.1f}, mean probes "
                    f"{[round(float(np.mean(c[-100:])), 1) for c in counts.values() if c]}",
                    flush=True,
                )
        stop.set()
    finally:
        for proc, _ in started.values():
            stop_service(proc)
    all_counts = np.concatenate([counts["D"], counts["D'"]]).astype(float)
    is_d = np.arange(len(all_counts)) < len(counts["D"])
    figures = threshold_accuracy(all_counts, is_d)
    figures["threshold_probes"] = figures.pop("threshold_ms") / 1e3
    waits_all = np.concatenate([waits["D"], waits["D'"]])
    figures["wait_accuracy"] = threshold_accuracy(waits_all, is_d)
    figures["mean_probes"] = {n: float(np.mean(c)) for n, c in counts.items()}
    figures["p50_wait_ms"] = {n: float(np.median(w)) * 1e3 for n, w in waits.items()}
    figures["runs_per_side"] = len(counts["D"])
    figures["release_ms"] = release_s * 1e3
    figures["connections"] = connections
    figures["lattice_ms"] = ReleaseSchedule().other_quantum * 1e3
    figures["seconds"] = time.monotonic() - started_at
    figures["load_range"] = (min(loads), max(loads)) if loads else None
    return figures


def print_probe(f: dict) -> None:
    low, high = f["interval_95"]
    print(
        f"\nProbe (issue 38): {f['connections']} keep-alive connections polling "
        f"{', '.join(PROBED_ROUTES)} while one's own /predict waits (BusyTeacher, 80 vs 20 ms "
        f"of CPU, released at {f['release_ms']:.0f} ms; the polled routes on the lattice of "
        f"{f['lattice_ms']:g} ms); {f['runs_per_side']} runs per side, "
        f"{f['seconds']:.0f} s, load {f['load_range']}"
    )
    print(
        f"probes answered per wait: D {f['mean_probes']['D']:.1f}, D' "
        f"{f['mean_probes'][D_PRIME]:.1f}; wait p50 D {f['p50_wait_ms']['D']:.1f} ms, D' "
        f"{f['p50_wait_ms'][D_PRIME]:.1f} ms"
    )
    verdict = "PASS" if high <= TIMING_TARGET else "MISS"
    w = f["wait_accuracy"]
    print(
        f"threshold on the probe count: held-out accuracy {f['accuracy']:.3f} [{low:.3f}, "
        f"{high:.3f}] (target: upper end <= {TIMING_TARGET}): {verdict}; on the wait itself: "
        f"{w['accuracy']:.3f} [{w['interval_95'][0]:.3f}, {w['interval_95'][1]:.3f}]"
    )


D_PRIME = "D'"


def timing_conditions(tmp: Path, args) -> dict:
    """The reproduction under each of ``--timing-conditions``."""
    results = {}
    for condition in args.timing_conditions.split(","):
        where = tmp / condition
        where.mkdir()
        if condition == "quiet":
            results[condition] = timing_channel(where, args.timing_requests)
        elif condition == "loaded":
            results[condition] = timing_channel(
                where,
                args.timing_requests,
                args.busy,
                args.background_rate,
                off=False,
                max_seconds=args.max_minutes and args.max_minutes * 60,
            )
        else:
            raise SystemExit(f"unknown timing condition {condition!r}")
        print_timing(results[condition], condition)
    return results


def print_timing(results: dict, condition: str = "quiet") -> None:
    print(
        f"\nTiming channel (issue 32), {condition}: D vs D', 1,000-row requests, 1 worker, "
        f"{results['requests_per_side']} alternating requests per side; "
        f"{results['busy_processes']} CPU-bound processes beside, other clients at "
        f"{results['background_rate_per_service']:g} one-row requests/s per service; load "
        f"average {results['load_range']}"
    )
    rows = []
    for label in ("defence off", "defence on"):
        if label not in results:
            continue
        f = results[label]
        low, high = f["interval_95"]
        rows.append(
            [
                label,
                f"{f['p50_ms']['D']:.1f}",
                f"{f['p50_ms'][D_PRIME]:.1f}",
                f"{f['accuracy']:.3f}",
                f"[{low:.3f}, {high:.3f}]",
            ]
        )
    print(
        format_table(
            rows, ["", "D p50 ms", "D' p50 ms", "held-out accuracy", "95% Clopper-Pearson"]
        )
    )
    high = results["defence on"]["interval_95"][1]
    verdict = "PASS" if high <= TIMING_TARGET else "MISS"
    print(f"defence on: upper end {high:.3f} (target <= {TIMING_TARGET}): {verdict}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", choices=["timing", "probe"], help="one part only")
    parser.add_argument(
        "--timing-requests", type=int, default=3000, help="timing: requests per side"
    )
    parser.add_argument(
        "--timing-conditions",
        default="quiet,loaded",
        help="timing: comma-separated conditions, 'quiet' (the defence off, then on) and "
        "'loaded' (on, beside --busy CPU-bound processes and --background-rate requests/s)",
    )
    parser.add_argument("--busy", type=int, default=8, help="timing: CPU-bound processes")
    parser.add_argument(
        "--background-rate",
        type=float,
        default=2.0,
        help="timing, loaded: other clients' one-row requests per second to each service",
    )
    parser.add_argument("--probe-runs", type=int, default=1000, help="probe: runs per side")
    parser.add_argument(
        "--max-minutes",
        type=float,
        help="timing (loaded) and probe: stop each measurement after this many minutes and "
        "report the requests it got (fewer than asked: said in the output)",
    )
    parser.add_argument(
        "--probe-release",
        type=float,
        default=0.5,
        help="probe: seconds to the one-row /predict's release (level 0); the issue's figure "
        "used 0.25, which the busy teachers overran on the shared, loaded machine",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="short runs (timing 300 requests, probe 150 runs per side): the intervals are "
        "then too wide to decide the targets",
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    if args.quick:
        args.timing_requests, args.probe_runs = 300, 150

    results: dict = {"environment": environment()}
    with tempfile.TemporaryDirectory() as tmp_name:
        if args.only in (None, "timing"):
            results["timing"] = timing_conditions(Path(tmp_name), args)
        if args.only in (None, "probe"):
            results["probe"] = probe_channel(
                Path(tmp_name),
                args.probe_runs,
                release_s=args.probe_release,
                max_seconds=args.max_minutes and args.max_minutes * 60,
            )
            print_probe(results["probe"])
    name = "timing_probe" if args.only is None else f"serving_{args.only}"
    path = write_json(args.out / f"{name}_results.json", results)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
