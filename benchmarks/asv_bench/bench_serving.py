"""The service's answer cost in-process: one ``POST /predict`` through ASGI, no network.

Replaces ``benchmarks/serving.py --against``: compare two revisions with ``asv continuous``
(``benchmarks/README.md``). The request is charged to a durable SQLite ledger, as deployed;
``benchmarks/serving.py`` measures the real service over HTTP (throughput, latency).
"""

import asyncio
import json
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


class _Lifespan:
    """The application's lifespan, started and stopped as a server would (its child, if any)."""

    def __init__(self, app, loop):
        self.loop = loop
        self.started = asyncio.Event()
        self.stopping = asyncio.Event()
        self.messages = ["lifespan.startup"]

        async def receive():
            if self.messages:
                return {"type": self.messages.pop()}
            await self.stopping.wait()
            return {"type": "lifespan.shutdown"}

        async def send(message):
            if message["type"] == "lifespan.startup.complete":
                self.started.set()
            elif message["type"] == "lifespan.startup.failed":
                raise RuntimeError(message.get("message", "startup failed"))

        scope = {"type": "lifespan", "asgi": {"version": "3.0"}}
        self.task = loop.create_task(app(scope, receive, send))
        loop.run_until_complete(asyncio.wait_for(self.started.wait(), 120))

    def stop(self):
        self.stopping.set()
        self.loop.run_until_complete(asyncio.wait_for(self.task, 60))


class Answer:
    """One ``POST /predict`` of 1 or 100 rows, 23 default teachers, against ``predict``.

    The application runs as deployed (the computation in its child process) but without the
    timing defence, so that the figure is the answer's cost, not the schedule's wait."""

    params = [1, 100]
    param_names = ["rows"]
    timeout = 300

    def setup_cache(self):
        from skprivpred.serving import save_model

        quiet()
        # asv runs setup_cache in a directory of its own, removed after the run.
        directory = Path.cwd() / "answer-model"
        directory.mkdir(mode=0o700)
        budget = PrivacyAccountant(epsilon=1e12, ledger=str(directory / "budget.db"))
        X, y = classification(5_000)
        clf = SubsampleAggregateClassifier(
            epsilon=1.0, n_teachers=23, classes=[0, 1], accountant=budget
        ).fit(X, y)
        save_model(clf, directory / "model.skops")
        return str(directory / "model.skops")

    def setup(self, model, rows):
        from skprivpred.serving import create_app, load_model

        quiet()
        self.clf = load_model(model)
        # The work, not the wait: with the timing defence on (the default) every response
        # waits for its point of the release schedule, which would hide a change of cost.
        self.app = create_app(load_model(model), timing_defence=False)
        self.rows = classification(rows, seed=1)[0]
        self.body = json.dumps({"rows": self.rows.tolist()}).encode()
        self.loop = asyncio.new_event_loop()
        self.lifespan = _Lifespan(self.app, self.loop)
        if self.loop.run_until_complete(_request(self.app, self.body)) != 200:
            raise RuntimeError("POST /predict failed")

    def teardown(self, model, rows):
        self.lifespan.stop()
        self.loop.close()

    def time_service_answer(self, model, rows):
        self.loop.run_until_complete(_request(self.app, self.body))

    def time_predict_in_process(self, model, rows):
        self.clf.predict(self.rows)
