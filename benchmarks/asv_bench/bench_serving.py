"""The service's answer cost in-process: one ``POST /predict`` through ASGI, no network.

Replaces ``benchmarks/serving.py --against``: compare two revisions with ``asv continuous``
(``benchmarks/README.md``). The request is charged to a durable SQLite ledger, as deployed;
``benchmarks/serving.py`` measures the real service over HTTP (throughput, latency).
"""

import asyncio
import json
import shutil
import tempfile
from pathlib import Path

from skprivpred import PrivacyAccountant, SubsampleAggregateClassifier

from ._data import classification, quiet


def _request(app, body: bytes):
    """A coroutine that sends ``POST /predict`` to ``app`` and returns the status."""
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
        "method": "POST",
        "path": "/predict",
        "raw_path": b"/predict",
        "query_string": b"",
        "headers": [
            (b"host", b"127.0.0.1"),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ],
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


class Answer:
    """One ``POST /predict`` of 1 or 100 rows, 23 default teachers, against ``predict``."""

    params = [1, 100]
    param_names = ["rows"]

    def setup(self, rows):
        from skprivpred.serving import create_app, load_model, save_model

        quiet()
        self.tmp = Path(tempfile.mkdtemp())
        self.tmp.chmod(0o700)
        budget = PrivacyAccountant(epsilon=1e12, ledger=str(self.tmp / "budget.db"))
        X, y = classification(5_000)
        clf = SubsampleAggregateClassifier(
            epsilon=1.0, n_teachers=23, classes=[0, 1], accountant=budget
        ).fit(X, y)
        save_model(clf, self.tmp / "model.skops")
        self.clf = clf
        self.app = create_app(load_model(self.tmp / "model.skops"))
        self.rows = classification(rows, seed=1)[0]
        self.body = json.dumps({"rows": self.rows.tolist()}).encode()
        self.loop = asyncio.new_event_loop()
        if self.loop.run_until_complete(_request(self.app, self.body)) != 200:
            raise RuntimeError("POST /predict failed")

    def teardown(self, rows):
        self.loop.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def time_service_answer(self, rows):
        self.loop.run_until_complete(_request(self.app, self.body))

    def time_predict_in_process(self, rows):
        self.clf.predict(self.rows)
