"""Throughput and latency of the reference service, next to ``predict`` in-process.

What is measured
----------------
A 23-teacher Adult model (``SubsampleAggregateClassifier(LogisticRegression())`` at
``epsilon=1``, on the public design matrix of ``_design.py``) with a SQLite-ledger
accountant is saved with ``skprivpred.serving.save_model`` and served by
``python -m skprivpred.serving`` on 127.0.0.1. Every answered row is charged to the
ledger, exactly as in deployment (WAL, ``synchronous=FULL``: one committed, flushed
transaction per request).

Throughput (``--only throughput``): with 1 and then 2 worker processes, for requests
of 1 and of 100 rows, ``--clients`` threads (keep-alive connections) send requests
for ``--seconds`` seconds; reported: requests per second, rows per second and p50/p99
latency, next to the same calls to ``predict`` in-process (one thread, back to back,
the same accountant and ledger).

The cost of one ``GET /metrics`` scrape (with the throughput): the application is
built in this process over the metric files the two workers left (prometheus_client's
multiprocess mode), and 20 scrapes are sent to it through ASGI; reported: the median
CPU time of one scrape (``time.process_time``: summing the worker files, reading the
budget from the ledger, writing the text format) and its median wall time. Target:
at most 5 ms of CPU per scrape.

One client's latency (``--only latency``): 1 worker, one client thread on one
keep-alive connection, 1-row requests. Each step sends one request and calls
``predict`` in-process on the same row (their order turns at each step), so that the
service and its baseline share the machine's load and the ledger: the file in
``--ledger-dir``, charged by both. Reported over ``--rounds`` rounds of
``--requests`` steps: p50 and p99 of the service and of the in-process ``predict``
(and of ``predict`` called back to back), their difference at p50 (the service's
*overhead*; target: at most 5 ms with the timing defence, on by default; 1.5 ms
before it) and the median of the step-by-step differences,
each as the median over the rounds, with the load average at each round.
To compare the answer cost of two revisions, use the ``asv`` suite
(``benchmarks/asv_bench/bench_serving.py``; ``benchmarks/README.md``).

Then where the time goes (unless ``--no-breakdown``): the service runs with timers
around the stages of ``POST /predict`` (``_serving_timers.py``), with
``--no-timing-defence`` (the work, not the wait) and a key file of two clients, for
``--requests`` more steps; per request, HTTP (client, loopback, uvicorn) is the
client's round trip less the application's time, and the application's parts
(body and JSON, key check, row checks, thread-pool hop, the estimator's input
validation, ledger commit, votes and draw, JSON encoding, metrics, routing and
middleware) come from its nested timers; reported: the median of each.

Whether response times tell D from D' (the timing channel of issue 32 and the probe of
issue 38) is a privacy audit, not a benchmark: ``tests/audits/timing_probe.py``.

The defence's cost (``--only cost``): the Adult model above, 1-row requests, with 1 and
2 workers, the defence off and on: one client's p50 and p99 (one thread, back to back)
and the throughput of ``--clients`` threads. Target: the defence adds < 5 ms at p50 for
one-row requests on a quiet machine.

Usage
-----
From the repository root (needs the ``serve`` extra)::

    .venv/bin/python benchmarks/serving.py                 # everything, about 2 minutes
    .venv/bin/python benchmarks/serving.py --only latency
    .venv/bin/python benchmarks/serving.py --only latency --ledger-dir /dev/shm
    .venv/bin/python benchmarks/serving.py --only cost --seconds 5
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import http.client
import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
from _common import DEFAULT_OUT, environment, format_table, load_dataset, write_json
from _design import public_design
from sklearn.linear_model import LogisticRegression

from skprivpred import PrivacyAccountant, SubsampleAggregateClassifier
from skprivpred.serving import save_model
from skprivpred.utils._testing import free_port, start_service, stop_service, wait_healthy

#: The media type the service requires of a request body.
JSON = {"Content-Type": "application/json"}

#: Overhead target of one client's 1-row request over ``predict`` in-process (p50, ms), with
#: the timing defence (on by default: each response waits for its point of the schedule);
#: 1.5 ms without it.
OVERHEAD_TARGET_MS = 5.0


def load(port: int, body: bytes, clients: int, seconds: float) -> list[float]:
    """Latencies (s) of every request answered with HTTP 200 during ``seconds``."""
    latencies: list[float] = []
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def client():
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        mine = []
        while time.monotonic() < stop:
            start = time.perf_counter()
            conn.request("POST", "/predict", body=body, headers=JSON)
            response = conn.getresponse()
            response.read()
            if response.status != 200:
                raise RuntimeError(f"HTTP {response.status}")
            mine.append(time.perf_counter() - start)
        conn.close()
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return latencies


def in_process(clf, rows: np.ndarray, seconds: float) -> list[float]:
    latencies = []
    stop = time.monotonic() + seconds
    while time.monotonic() < stop:
        start = time.perf_counter()
        clf.predict(rows)
        latencies.append(time.perf_counter() - start)
    return latencies


def _asgi_request(app, method: str, path: str, body: bytes = b"", headers=()):
    """A coroutine that sends one request to ``app`` through ASGI; returns the status."""
    status: list[int] = []
    sent = False

    async def receive():
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message):
        if message["type"] == "http.response.start":
            status.append(message["status"])

    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "headers": [(b"content-length", str(len(body)).encode()), *headers],
        "http_version": "1.1",
        "scheme": "http",
        "server": ("127.0.0.1", 80),
        "client": ("127.0.0.1", 1),
        "root_path": "",
    }

    async def run() -> int:
        await app(scope, receive, send)
        return status[0]

    return run()


def scrape_cost(model: Path, n_scrapes: int = 20) -> tuple[float, float]:
    """Median CPU and wall milliseconds of one ``GET /metrics``, through ASGI in this process."""
    from skprivpred.serving import create_app, load_model

    app = create_app(load_model(model))
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(_asgi_request(app, "GET", "/metrics"))  # warm-up
        cpu, wall = [], []
        for _ in range(n_scrapes):
            start_cpu, start_wall = time.process_time(), time.perf_counter()
            if loop.run_until_complete(_asgi_request(app, "GET", "/metrics")) != 200:
                raise RuntimeError("GET /metrics failed")
            cpu.append(time.process_time() - start_cpu)
            wall.append(time.perf_counter() - start_wall)
    finally:
        loop.close()
    return float(np.median(cpu)) * 1e3, float(np.median(wall)) * 1e3


def summary(label: str, n_rows: int, latencies: list[float], seconds: float) -> list:
    ms = np.asarray(latencies) * 1e3
    rate = len(latencies) / seconds
    return [label, n_rows, round(rate, 1), round(rate * n_rows), *np.percentile(ms, [50, 99])]


# -- one client's latency -----------------------------------------------------------------------
def _step(
    index: int, conns: dict, body: bytes, clf, row: np.ndarray, times: dict, headers=None
) -> None:
    """One request to each service and one ``predict`` in-process on the same row.

    Their order turns with ``index``: on a disk, the cost of a commit's flush
    depends on the commit just before it, and each one follows each other as
    often.
    """

    def request(label: str, conn: http.client.HTTPConnection) -> None:
        start = time.perf_counter()
        conn.request("POST", "/predict", body=body, headers={**JSON, **(headers or {})})
        response = conn.getresponse()
        response.read()
        elapsed = time.perf_counter() - start
        if response.status != 200:
            raise RuntimeError(f"{label}: HTTP {response.status}")
        times.setdefault(label, []).append(elapsed)

    def predict() -> None:
        start = time.perf_counter()
        clf.predict(row)
        times.setdefault("in-process predict", []).append(time.perf_counter() - start)

    calls = [functools.partial(request, label, conn) for label, conn in conns.items()]
    calls.append(predict)
    turn = index % len(calls)
    for call in calls[turn:] + calls[:turn]:
        call()


def one_client_latency(
    model: Path,
    clf,
    row: np.ndarray,
    body: bytes,
    tmp: Path,
    *,
    requests: int,
    rounds: int,
) -> dict:
    """Rounds of steps: a request to each service, then ``predict`` in-process."""
    services = ["service"]
    started = {}
    conns = {}
    try:
        for label in services:
            started[label] = start_service(
                model, 1, tmp / "latency.log", tmp / f"metrics-{len(started)}"
            )
        results = []
        for round_ in range(rounds + 1):  # round 0 warms everything up
            n_steps = requests if round_ else min(requests, 300)
            times: dict[str, list[float]] = {}
            # A new keep-alive connection per round: uvicorn closes one idle for 5 s.
            for label, (_, port) in started.items():
                if label in conns:
                    conns[label].close()
                conns[label] = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                conns[label].request("GET", "/health")
                conns[label].getresponse().read()
            load_before = os.getloadavg()[0]
            for index in range(n_steps):
                _step(index, conns, body, clf, row, times)
            back_to_back = []
            for _ in range(n_steps):
                start = time.perf_counter()
                clf.predict(row)
                back_to_back.append(time.perf_counter() - start)
            times["in-process predict, back to back"] = back_to_back
            if round_:
                results.append(_round_figures(times, services, load_before))
    finally:
        for conn in conns.values():
            conn.close()
        for proc, _ in started.values():
            stop_service(proc)
    return _median_over_rounds(results, services)


def _round_figures(times: dict[str, list[float]], services: list[str], load: float) -> dict:
    ms = {name: np.asarray(values) * 1e3 for name, values in times.items()}
    p50 = {name: float(np.percentile(values, 50)) for name, values in ms.items()}
    p99 = {name: float(np.percentile(values, 99)) for name, values in ms.items()}
    figures = {
        "p50": p50,
        "p99": p99,
        "load": load,
        "overhead": {},
        "paired": {},
        "over_back_to_back": {},
    }
    baseline = ms["in-process predict"]
    for label in services:
        figures["overhead"][label] = p50[label] - p50["in-process predict"]
        figures["paired"][label] = float(np.median(ms[label] - baseline))
        figures["over_back_to_back"][label] = p50[label] - p50["in-process predict, back to back"]
    return figures


def _median_over_rounds(results: list[dict], services: list[str]) -> dict:
    def median(key: str) -> dict:
        names = results[0][key]
        return {name: float(np.median([r[key][name] for r in results])) for name in names}

    return {
        "rounds": results,
        "p50": median("p50"),
        "p99": median("p99"),
        "overhead": median("overhead"),
        "overhead_range": {
            label: (
                min(r["overhead"][label] for r in results),
                max(r["overhead"][label] for r in results),
            )
            for label in services
        },
        "paired": median("paired"),
        "over_back_to_back": median("over_back_to_back"),
        "load": [r["load"] for r in results],
        "services": services,
    }


#: The stages the timed service records (``_serving_timers.py``), nested as they run.
_STAGES = (
    "application (ASGI)",
    "body: read and decode JSON",
    "API key check",
    "row checks",
    "thread-pool call",
    "answer (in the thread pool)",
    "estimator predict",
    "estimator input validation",
    "ledger commit (the charge)",
    "JSON encode",
    "metrics",
)


def breakdown(model: Path, clf, row: np.ndarray, body: bytes, tmp: Path, requests: int) -> dict:
    """Where one request's time goes, timed inside the service (``_serving_timers.py``).

    The service runs with timers around its stages and an API key file of two
    clients (the request presents a key); the same steps as the latency rounds
    (one request, then ``predict`` in-process). Per request: HTTP (client,
    loopback, uvicorn) is the client's round trip less the application's time;
    the other pieces by difference of nested timers. Medians over the requests.
    """
    keys = tmp / "keys.txt"
    key = "benchmark-key-0123456789abcdef"
    keys.touch(mode=0o600)  # the service refuses a key file that others can read
    keys.write_text(f"alpha:other-key-0123456789abcdef\nbeta:{key}\n")
    out = tmp / "stages.json"
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            str(Path(__file__).with_name("_serving_timers.py")),
            str(out),
            str(model),
            "--port",
            str(port),
            "--log-level",
            "warning",
            "--api-keys",
            str(keys),
            "--metrics-dir",
            str(tmp / "metrics-timed"),
            "--no-timing-defence",  # where the work goes, without the wait for the schedule
        ],
        stdout=open(tmp / "timed.log", "ab"),
        stderr=subprocess.STDOUT,
    )
    times: dict[str, list[float]] = {}
    try:
        wait_healthy(proc, port, tmp / "timed.log")
        conns = {"service": http.client.HTTPConnection("127.0.0.1", port, timeout=30)}
        headers = {"X-API-Key": key}
        for index in range(min(requests, 300)):  # warm-up
            _step(index, conns, body, clf, row, {}, headers)
        times = {}
        for index in range(requests):
            _step(index, conns, body, clf, row, times, headers)
        conns["service"].close()
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
    records = json.loads(out.read_text())[-requests:]
    stage = {name: np.array([r.get(name, 0.0) for r in records]) * 1e3 for name in _STAGES}
    service = np.asarray(times["service"]) * 1e3
    predict = np.asarray(times["in-process predict"]) * 1e3
    app = stage["application (ASGI)"]
    pieces = {
        "service (HTTP round trip, timed)": service,
        "HTTP: client, loopback, uvicorn": service - app,
        "application (ASGI)": app,
        "body: read and decode JSON": stage["body: read and decode JSON"],
        "API key check": stage["API key check"],
        "row checks": stage["row checks"],
        "thread-pool hop": stage["thread-pool call"] - stage["answer (in the thread pool)"],
        "answer: contexts, to list": stage["answer (in the thread pool)"]
        - stage["estimator predict"],
        "estimator predict": stage["estimator predict"],
        "estimator input validation": stage["estimator input validation"],
        "ledger commit (the charge)": stage["ledger commit (the charge)"],
        "votes and draw": stage["estimator predict"]
        - stage["estimator input validation"]
        - stage["ledger commit (the charge)"],
        "JSON encode": stage["JSON encode"],
        "metrics": stage["metrics"],
        "routing, middleware, sending": app
        - stage["body: read and decode JSON"]
        - stage["API key check"]
        - stage["row checks"]
        - stage["thread-pool call"]
        - stage["JSON encode"]
        - stage["metrics"],
        "in-process predict": predict,
        "overhead (service - in-process)": service - predict,
    }
    return {
        "requests": requests,
        "p50": {name: float(np.median(values)) for name, values in pieces.items()},
        "overhead_p50": float(np.median(service) - np.median(predict)),
        "load": os.getloadavg()[0],
    }


def print_latency(figures: dict, parts: dict | None, requests: int, ledger_dir: str) -> None:
    p50, p99 = figures["p50"], figures["p99"]
    services = figures["services"]
    loads = ", ".join(f"{value:.1f}" for value in figures["load"])
    http_impl = "httptools" if importlib.util.find_spec("httptools") else "h11"
    loop_impl = "uvloop" if importlib.util.find_spec("uvloop") else "asyncio"
    print(
        f"\nOne client, 1-row requests, 1 worker ({http_impl}, {loop_impl}), SQLite ledger in "
        f"{ledger_dir}: {len(figures['rounds'])} rounds of {requests} steps (each: one request, "
        f"then predict in-process); medians over the rounds; load average at each round: {loads}"
    )
    rows = []
    for name in [*services, "in-process predict", "in-process predict, back to back"]:
        rows.append([name, f"{p50[name]:.3f}", f"{p99[name]:.3f}"])
    print(format_table(rows, ["where", "p50 ms", "p99 ms"]))
    for label in services:
        low, high = figures["overhead_range"][label]
        verdict = "PASS" if figures["overhead"][label] <= OVERHEAD_TARGET_MS else "MISS"
        print(
            f"{label}: overhead over predict in-process {figures['overhead'][label]:.3f} ms at "
            f"p50 (rounds {low:.3f} to {high:.3f}; target <= {OVERHEAD_TARGET_MS} ms: "
            f"{verdict}); median step-by-step difference {figures['paired'][label]:.3f} ms; "
            f"over predict back to back {figures['over_back_to_back'][label]:.3f} ms"
        )
    if parts is None:
        return
    print(
        f"\nWhere the time goes: the service with timers around its stages and an API key "
        f"file of 2 clients, {parts['requests']} steps; median per request (ms)"
    )
    layout = [
        ("service (HTTP round trip, timed)", 0),
        ("HTTP: client, loopback, uvicorn", 1),
        ("application (ASGI)", 1),
        ("body: read and decode JSON", 2),
        ("API key check", 2),
        ("row checks", 2),
        ("thread-pool hop", 2),
        ("answer: contexts, to list", 2),
        ("estimator predict", 2),
        ("estimator input validation", 3),
        ("ledger commit (the charge)", 3),
        ("votes and draw", 3),
        ("JSON encode", 2),
        ("metrics", 2),
        ("routing, middleware, sending", 2),
        ("in-process predict", 0),
        ("overhead (service - in-process)", 0),
    ]
    table = [["  " * depth + name, f"{parts['p50'][name]:.3f}"] for name, depth in layout]
    print(format_table(table, ["piece", "p50 ms"]))


# -- what the timing defence costs -----------------------------------------------------------


def quickstart_model(tmp: Path) -> tuple[Path, bytes]:
    """The Adult quick-start pipeline (``public_preprocessor`` + 45 teachers), one record."""
    from sklearn.pipeline import make_pipeline

    from skprivpred.datasets import adult_schema, load_adult
    from skprivpred.preprocessing import public_preprocessor

    X, y = load_adult(subset="train", as_frame=True, return_X_y=True)
    X_test, _ = load_adult(subset="test", as_frame=True, return_X_y=True)
    directory = tmp / "quickstart"
    directory.mkdir(mode=0o700)
    budget = PrivacyAccountant(epsilon=1e12, ledger=str(directory / "budget.db"))
    model = make_pipeline(
        public_preprocessor(adult_schema()),
        SubsampleAggregateClassifier(
            LogisticRegression(max_iter=1000), epsilon=0.5, classes=[0, 1], accountant=budget
        ),
    ).fit(X, y)
    path = directory / "model.skops"
    save_model(model, path)
    record = json.loads(X_test.dropna()[:1].to_json(orient="records"))
    return path, json.dumps({"records": record}).encode()


def defence_cost(cases: dict, tmp: Path, clients: int, seconds: float, workers_list=(1, 2)) -> list:
    """One-row p50 (one client) and throughput (``clients`` threads), defence off and on.

    ``cases``: ``{label: (model file, body of one row)}``.
    """
    table = []
    for case, (model, body) in cases.items():
        for workers in workers_list:
            for label, extra in (("off", ("--no-timing-defence",)), ("on", ())):
                proc, port = start_service(
                    model,
                    workers,
                    tmp / "cost.log",
                    tmp / f"metrics-cost-{len(table)}",
                    extra=extra,
                )
                try:
                    # One client first, on the fresh service: a burst of concurrent requests
                    # queues, overruns the schedule and raises its level for the responses
                    # after. The warm-up is long enough for each worker's first, cold
                    # responses to be followed by the on-time responses that bring the level
                    # back down (``shrink_after`` per level): the figures are the steady state.
                    load(port, body, 1, min(20.0, 4 * seconds))  # warm-up
                    single = np.asarray(load(port, body, 1, seconds)) * 1e3
                    many = load(port, body, clients, seconds)
                finally:
                    stop_service(proc)
                table.append(
                    {
                        "model": case,
                        "workers": workers,
                        "defence": label,
                        "p50_ms": float(np.percentile(single, 50)),
                        "p99_ms": float(np.percentile(single, 99)),
                        "requests_per_s": len(many) / seconds,
                        "p50_ms_loaded": float(np.percentile(np.asarray(many) * 1e3, 50)),
                        "load": os.getloadavg()[0],
                    }
                )
                print(table[-1], flush=True)
    return table


def print_cost(table: list, clients: int, seconds: float) -> None:
    print(
        f"\nThe timing defence's cost: one-row requests; one client for the p50/p99, "
        f"{clients} clients for the throughput, {seconds:g} s each"
    )
    rows = [
        [
            r["model"],
            r["workers"],
            r["defence"],
            f"{r['p50_ms']:.2f}",
            f"{r['p99_ms']:.2f}",
            f"{r['requests_per_s']:.0f}",
            f"{r['p50_ms_loaded']:.2f}",
            f"{r['load']:.1f}",
        ]
        for r in table
    ]
    header = ["model", "workers", "defence", "p50 ms", "p99 ms", "requests/s", "p50 loaded"]
    print(format_table(rows, [*header, "load"]))
    for case in dict.fromkeys(r["model"] for r in table):
        for workers in dict.fromkeys(r["workers"] for r in table):
            off, on = (r for r in table if r["workers"] == workers and r["model"] == case)
            print(
                f"{case}, {workers} worker(s): the defence adds "
                f"{on['p50_ms'] - off['p50_ms']:.2f} ms at p50, x{on['p50_ms'] / off['p50_ms']:.2f}"
                " (one client; targets on a quiet machine: +5 ms for the Adult model from rows, "
                "x1.7 for the quick-start pipeline from records)"
            )


# -- the command ----------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", choices=["throughput", "latency", "cost"], help="one part only")
    parser.add_argument(
        "--cost-workers",
        type=int,
        nargs="+",
        default=[1, 2],
        help="cost: the numbers of workers to measure",
    )
    parser.add_argument(
        "--quick", action="store_true", help="short runs (cost and throughput: 2 s per figure)"
    )
    parser.add_argument("--seconds", type=float, default=5.0, help="length of each load")
    parser.add_argument("--clients", type=int, default=8, help="concurrent client threads")
    parser.add_argument("--requests", type=int, default=2000, help="latency: steps per round")
    parser.add_argument("--rounds", type=int, default=3, help="latency: rounds")
    parser.add_argument(
        "--ledger-dir", type=Path, help="directory of the SQLite ledger (default: a temporary one)"
    )
    parser.add_argument(
        "--no-breakdown", action="store_true", help="latency: skip the timed service"
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    if args.quick:
        args.seconds = 2.0

    data = load_dataset("adult")
    X_train, X_test = public_design(data.X_train), public_design(data.X_test)
    rows = {1: X_test[:1], 100: X_test[:100]}
    bodies = {n: json.dumps({"rows": r.tolist()}).encode() for n, r in rows.items()}

    results: dict = {"environment": environment()}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        ledger_dir = tmp if args.ledger_dir is None else args.ledger_dir
        ledger = Path(tempfile.mkdtemp(dir=ledger_dir, prefix="skprivpred-bench-"))
        metrics_dir = tmp / "metrics"
        # The applications built in this process (the scrape, the latency's pieces) count in
        # prometheus_client's multiprocess mode, as the service does: in the directory of
        # the workers' files, in a file of this process (made after the scrape has read it).
        metrics_dir.mkdir(mode=0o700)
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(metrics_dir)
        try:
            acc = PrivacyAccountant(epsilon=1e12, ledger=str(ledger / "budget.db"))
            clf = SubsampleAggregateClassifier(
                LogisticRegression(max_iter=1000), epsilon=1.0, classes=[0, 1], accountant=acc
            ).fit(X_train, data.y_train)
            model = tmp / "model.skops"
            save_model(clf, model)
            if args.only in (None, "cost"):
                cases = {
                    "Adult, 23 teachers, rows": (model, bodies[1]),
                    "quick-start pipeline, records": quickstart_model(tmp),
                }
                results["cost"] = defence_cost(
                    cases, tmp, args.clients, args.seconds, args.cost_workers
                )
                print_cost(results["cost"], args.clients, args.seconds)
            if args.only in (None, "throughput"):
                results["throughput"] = throughput(args, clf, model, rows, bodies, tmp, metrics_dir)
            if args.only in (None, "latency"):
                results["latency"] = one_client_latency(
                    model,
                    clf,
                    rows[1],
                    bodies[1],
                    tmp,
                    requests=args.requests,
                    rounds=args.rounds,
                )
                if not args.no_breakdown:
                    results["breakdown"] = breakdown(
                        model, clf, rows[1], bodies[1], tmp, args.requests
                    )
                print_latency(
                    results["latency"], results.get("breakdown"), args.requests, str(ledger_dir)
                )
            results["rows_charged"] = acc.queries_answered
        finally:
            import shutil

            shutil.rmtree(ledger, ignore_errors=True)
    print(f"{results['rows_charged']} rows charged to the SQLite ledger in all")
    path = write_json(args.out / "serving_results.json", results)
    print(f"wrote {path}")
    return 0


def throughput(args, clf, model: Path, rows: dict, bodies: dict, tmp: Path, metrics_dir: Path):
    table = []
    for n_rows, batch in rows.items():
        table.append(
            summary(
                "in-process predict", n_rows, in_process(clf, batch, args.seconds), args.seconds
            )
        )
    for workers in (1, 2):
        proc, port = start_service(model, workers, tmp / "service.log", metrics_dir)
        try:
            load(port, bodies[1], args.clients, 1.0)  # warm-up
            for n_rows, body in bodies.items():
                latencies = load(port, body, args.clients, args.seconds)
                table.append(
                    summary(f"service, {workers} worker(s)", n_rows, latencies, args.seconds)
                )
        finally:
            stop_service(proc)
    scrape_cpu, scrape_wall = scrape_cost(model)
    header = ["where", "rows/request", "requests/s", "rows/s", "p50 ms", "p99 ms"]
    print(f"{args.clients} client threads, {args.seconds:g} s per figure")
    print(format_table([[*r[:4], f"{r[4]:.2f}", f"{r[5]:.2f}"] for r in table], header))
    print(
        f"GET /metrics after the 2-worker load: {scrape_cpu:.2f} ms CPU per scrape "
        f"(median of 20; target <= 5 ms), {scrape_wall:.2f} ms wall"
    )
    return {
        "clients": args.clients,
        "seconds": args.seconds,
        "rows": [dict(zip(header, r)) for r in table],
        "scrape_cpu_ms_median": scrape_cpu,
        "scrape_wall_ms_median": scrape_wall,
    }


if __name__ == "__main__":
    raise SystemExit(main())
