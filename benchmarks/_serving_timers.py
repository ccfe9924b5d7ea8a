"""The reference service with timers around the stages of ``POST /predict`` (for serving.py).

``python benchmarks/_serving_timers.py OUT.json MODEL [options of python -m
skprivpred.serving]`` runs the service command in this process (one worker) after
wrapping, with ``time.perf_counter`` timers, the functions a request goes through:
the whole ASGI application, reading and decoding the body, the key check, the row
checks, the thread-pool call and what it runs, the estimator's ``predict``, its
input validation, the accountant's charge, the JSON response and the metrics. When
the service stops (SIGINT), it writes one record per ``POST /predict`` (stage:
seconds) to ``OUT.json``. Only a benchmark uses this: the timers cost about a
microsecond each, and requests must come one at a time (a single client).
"""

from __future__ import annotations

import atexit
import functools
import json
import sys
import time
from typing import Any

#: The stages of the request being answered (requests come one at a time).
_current: dict[str, float] = {}
_records: list[dict[str, float]] = []


def _add(stage: str, seconds: float) -> None:
    _current[stage] = _current.get(stage, 0.0) + seconds


def _timed(stage: str, function):
    @functools.wraps(function)
    def run(*args: Any, **kwargs: Any):
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            _add(stage, time.perf_counter() - start)

    return run


def _timed_async(stage: str, function):
    @functools.wraps(function)
    async def run(*args: Any, **kwargs: Any):
        start = time.perf_counter()
        try:
            return await function(*args, **kwargs)
        finally:
            _add(stage, time.perf_counter() - start)

    return run


def _install() -> None:
    import prometheus_client.metrics as metrics
    import starlette.responses as responses

    from skprivpred.accounting import PrivacyAccountant
    from skprivpred.serving import _app

    service = _app._Service
    service.body = _timed_async("body: read and decode JSON", service.body)
    service.client = _timed("API key check", service.client)
    service.queries = _timed("row checks", service.queries)
    service.answer = _timed("answer (in the thread pool)", service.answer)
    _app.run_in_threadpool = _timed_async("thread-pool call", _app.run_in_threadpool)
    PrivacyAccountant.charge = _timed("ledger commit (the charge)", PrivacyAccountant.charge)
    responses.JSONResponse.render = _timed("JSON encode", responses.JSONResponse.render)
    for cls, names in (
        (metrics.MetricWrapperBase, ("labels",)),
        (metrics.Counter, ("inc",)),
        (metrics.Histogram, ("observe",)),
    ):
        for name in names:
            setattr(cls, name, _timed("metrics", getattr(cls, name)))

    build = _app.app_from_environment
    _app.app_from_environment = lambda: _timed_app(build())


def _timed_estimator_class(estimator) -> None:
    cls = type(estimator.steps[-1][1] if hasattr(estimator, "steps") else estimator)
    if not getattr(cls, "_benchmark_timed", False):
        cls.predict = _timed("estimator predict", cls.predict)
        # The answering path's public checks and dry run: the teacher ensembles' two stages
        # (their _validate_queries calls both, so it is not timed again), or _validate_queries.
        if hasattr(cls, "_validate_protected_rows"):
            names = ("_validate_protected_rows", "_check_teachers_can_read")
        else:
            names = ("_validate_queries",)
        for name in names:
            if hasattr(cls, name):
                setattr(cls, name, _timed("estimator input validation", getattr(cls, name)))
        cls._benchmark_timed = True


def _timed_app(app):
    async def timed(scope, receive, send):
        if scope["type"] != "http" or scope["path"] != "/predict":
            return await app(scope, receive, send)
        _current.clear()
        start = time.perf_counter()
        try:
            return await app(scope, receive, send)
        finally:
            _add("application (ASGI)", time.perf_counter() - start)
            _records.append(dict(_current))

    return timed


def main(argv: list[str]) -> int:
    out, args = argv[0], argv[1:]
    _install()
    from skprivpred.serving import _model

    load_model = _model.load_model

    def loaded(*a: Any, **k: Any):
        estimator = load_model(*a, **k)
        _timed_estimator_class(estimator)
        return estimator

    from skprivpred.serving import _app

    _app.load_model = loaded

    def write() -> None:
        with open(out, "w", encoding="utf-8") as handle:
            json.dump(_records, handle)

    atexit.register(write)
    from skprivpred.serving.__main__ import main as serve

    return serve([*args, "--workers", "1"])


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
