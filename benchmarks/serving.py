"""Throughput and latency of the reference service, next to ``predict`` in-process.

What is measured
----------------
A 23-teacher Adult model (``SubsampleAggregateClassifier(LogisticRegression())`` at
``epsilon=1``, on the public design matrix of ``_design.py``) with a SQLite-ledger
accountant is saved with ``skprivpred.serving.save_model`` and served by
``python -m skprivpred.serving`` on 127.0.0.1 with 1 and then 2 worker processes.
For requests of 1 and of 100 rows, ``--clients`` threads (keep-alive connections)
send requests for ``--seconds`` seconds; reported: requests per second, rows per
second and p50/p99 latency, next to the same calls to ``predict`` in-process (one
thread, the same accountant and ledger). Every answered row is charged to the
ledger, exactly as in deployment.

Then the cost of one ``GET /metrics`` scrape: the application is built in this
process over the metric files the two workers left (prometheus_client's
multiprocess mode), and 20 scrapes are sent to it through ASGI; reported: the
median CPU time of one scrape (``time.process_time``: summing the worker files,
reading the budget from the ledger, writing the text format) and its median
wall time. Target: at most 5 ms of CPU per scrape.

Usage
-----
From the repository root (needs the ``serve`` extra)::

    .venv/bin/python benchmarks/serving.py            # about a minute
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
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
from skprivpred._testing import free_port
from skprivpred.serving import save_model


def start_service(
    model: Path, workers: int, log: Path, metrics_dir: Path
) -> tuple[subprocess.Popen, int]:
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "skprivpred.serving",
            str(model),
            "--port",
            str(port),
            "--workers",
            str(workers),
            "--log-level",
            "warning",
            "--max-rows",
            "1000",
            "--metrics-dir",
            str(metrics_dir),
        ],
        stdout=open(log, "ab"),
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/health")
            if conn.getresponse().status == 200:
                return proc, port
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError(f"the service did not start; see {log}")


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
            conn.request("POST", "/predict", body=body)
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


def scrape_cost(model: Path, metrics_dir: Path, n_scrapes: int = 20) -> tuple[float, float]:
    """Median CPU and wall milliseconds of one ``GET /metrics``, through ASGI in this process."""
    # prometheus_client reads its multiprocess directory when it is first imported.
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(metrics_dir)
    from skprivpred.serving import create_app, load_model

    app = create_app(load_model(model))

    async def get(path: str) -> int:
        status = []

        async def receive():
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message):
            if message["type"] == "http.response.start":
                status.append(message["status"])

        scope = {
            "type": "http",
            "method": "GET",
            "path": path,
            "raw_path": path.encode(),
            "query_string": b"",
            "headers": [],
            "http_version": "1.1",
            "scheme": "http",
            "server": ("127.0.0.1", 80),
            "client": ("127.0.0.1", 1),
            "root_path": "",
        }
        await app(scope, receive, send)
        return status[0]

    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(get("/metrics"))  # warm-up
        cpu, wall = [], []
        for _ in range(n_scrapes):
            start_cpu, start_wall = time.process_time(), time.perf_counter()
            if loop.run_until_complete(get("/metrics")) != 200:
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="length of each load")
    parser.add_argument("--clients", type=int, default=8, help="concurrent client threads")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)

    data = load_dataset("adult")
    X_train, X_test = public_design(data.X_train), public_design(data.X_test)
    rows = {1: X_test[:1], 100: X_test[:100]}
    bodies = {n: json.dumps({"rows": r.tolist()}).encode() for n, r in rows.items()}

    table = []
    with tempfile.TemporaryDirectory() as tmp:
        acc = PrivacyAccountant(epsilon=1e12, ledger=str(Path(tmp) / "budget.db"))
        clf = SubsampleAggregateClassifier(
            LogisticRegression(max_iter=1000), epsilon=1.0, classes=[0, 1], accountant=acc
        ).fit(X_train, data.y_train)
        model = Path(tmp) / "model.skops"
        metrics_dir = Path(tmp) / "metrics"
        save_model(clf, model)
        for n_rows, batch in rows.items():
            table.append(
                summary(
                    "in-process predict", n_rows, in_process(clf, batch, args.seconds), args.seconds
                )
            )
        for workers in (1, 2):
            proc, port = start_service(model, workers, Path(tmp) / "service.log", metrics_dir)
            try:
                load(port, bodies[1], args.clients, 1.0)  # warm-up
                for n_rows, body in bodies.items():
                    latencies = load(port, body, args.clients, args.seconds)
                    table.append(
                        summary(f"service, {workers} worker(s)", n_rows, latencies, args.seconds)
                    )
            finally:
                proc.terminate()
                proc.wait(timeout=60)
        scrape_cpu, scrape_wall = scrape_cost(model, metrics_dir)
        answered = acc.queries_answered

    header = ["where", "rows/request", "requests/s", "rows/s", "p50 ms", "p99 ms"]
    print(
        f"{args.clients} client threads, {args.seconds:g} s per figure; "
        f"{answered} rows charged to the SQLite ledger in all"
    )
    print(format_table([[*r[:4], f"{r[4]:.2f}", f"{r[5]:.2f}"] for r in table], header))
    print(
        f"GET /metrics after the 2-worker load: {scrape_cpu:.2f} ms CPU per scrape "
        f"(median of 20; target <= 5 ms), {scrape_wall:.2f} ms wall"
    )
    path = write_json(
        args.out / "serving_results.json",
        {
            "clients": args.clients,
            "seconds": args.seconds,
            "rows": [dict(zip(header, r)) for r in table],
            "scrape_cpu_ms_median": scrape_cpu,
            "scrape_wall_ms_median": scrape_wall,
            "environment": environment(),
        },
    )
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
