"""The service's timing defence: responses leave at the points of a public schedule.

Every test drives the application through ASGI with an *injected* clock: the
estimator's computation advances a fake clock by a chosen amount, and the
schedule's waits advance it to the release point. No test reads the wall clock,
so none can pass or fail with the machine's load. What is checked:

* A response leaves at ``origin + quantum + per_row_teacher * rows * teachers``,
  whatever the computation took below that (two very different computation times
  give the same release time); every other route leaves on a lattice (the
  multiples of ``other_quantum``), whenever in its cell the request arrived.
* A computation that overruns its point raises the schedule's level: the response
  leaves at the next doubled point, and the responses that follow keep the doubled
  interval; after ``shrink_after`` responses on time the level comes down again.
* A refusal after the computation (the budget is spent: 429) leaves on the schedule
  too; a body refused before it (422) leaves at once.
* Waiting does not block the event loop: another request is answered while a
  response waits for its point.
* ``/metrics``' latency histogram records the scheduled release times.
* The defence is on by default (the programmatic default and the command's); turning
  it off logs a warning; bad settings are refused naming the option.
"""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
import threading

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from skprivpred import PrivacyAccountant, SubsampleAggregateClassifier

pytest.importorskip("starlette")
pytest.importorskip("anyio")

from skprivpred.serving import ReleaseSchedule, create_app  # noqa: E402
from skprivpred.serving._app import _schedule_from  # noqa: E402

N_TEACHERS = 8
QUANTUM, PER_ROW_TEACHER = 0.004, 1e-4
OTHER = ReleaseSchedule().other_quantum  # the default interval of every other route


def lattice_point(origin: float, step: float = OTHER) -> float:
    """The first multiple of ``step`` at least ``step`` after ``origin`` (a point above it)."""
    return (np.floor(origin / step) + 2) * step


class FakeTime:
    """A clock that moves only when the computation or a wait moves it."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.waits: list[float] = []
        self.gate: asyncio.Event | None = None

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        gate, self.gate = self.gate, None  # holds the first wait after it is set, only
        if gate is not None:
            await gate.wait()
        self.now += seconds


def fitted(tmp_path, cap_rows: int = 10_000):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    y = (X[:, 0] > 0).astype(int)
    budget = PrivacyAccountant(epsilon=cap_rows * 0.01, ledger=str(tmp_path / "budget.db"))
    clf = SubsampleAggregateClassifier(
        LogisticRegression(),
        epsilon=0.01,
        n_teachers=N_TEACHERS,
        classes=[0, 1],
        accountant=budget,
        random_state=0,
    )
    return clf.fit(X, y)


def with_cost(clf, fake: FakeTime, costs: list[float]):
    """Make each ``predict`` advance the fake clock by the next of ``costs`` (seconds)."""
    predict = clf.predict

    def timed(X):
        fake.now += costs.pop(0)
        return predict(X)

    clf.predict = timed  # an instance attribute: only this object is changed
    return clf


def app_of(clf, fake: FakeTime, **schedule):
    settings = {"quantum": QUANTUM, "per_row_teacher": PER_ROW_TEACHER, **schedule}
    return create_app(
        clf,
        timing_defence=ReleaseSchedule(**settings, clock=fake.clock, sleep=fake.sleep),
        isolate_computation=False,
    )


async def send(
    app, fake: FakeTime, method: str, path: str, body: bytes = b"", headers=(), on_start=None
):
    """One request through ASGI: ``(status, body, the fake time its response left)``."""
    sent = False
    out: dict = {"body": b""}

    async def receive():
        nonlocal sent
        if sent:
            await asyncio.Event().wait()  # no disconnect while the response is pending
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def transmit(message):
        if message["type"] == "http.response.start":
            out["status"], out["left"] = message["status"], fake.now
            if on_start is not None:
                on_start()
        elif message["type"] == "http.response.body":
            out["body"] += message.get("body", b"")

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "method": method,
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "headers": [
            *([] if any(n == b"host" for n, _ in headers) else [(b"host", b"127.0.0.1")]),
            (b"content-length", str(len(body)).encode()),
            *(
                [(b"content-type", b"application/json")]
                if method == "POST" and not any(n == b"content-type" for n, _ in headers)
                else []
            ),
            *headers,
        ],
        "http_version": "1.1",
        "scheme": "http",
        "server": ("127.0.0.1", 80),
        "client": ("127.0.0.1", 1),
        "root_path": "",
    }
    await app(scope, receive, transmit)
    return out["status"], out["body"], out["left"]


def rows(n: int) -> bytes:
    return json.dumps({"rows": [[0.1, -0.2, 0.3]] * n}).encode()


def predict_at(app, fake: FakeTime, n_rows: int) -> tuple[int, float]:
    """Send one request at the fake clock's current time: (status, its response time)."""
    origin = fake.now
    status, _, left = asyncio.run(send(app, fake, "POST", "/predict", rows(n_rows)))
    return status, left - origin


def interval(n_rows: int) -> float:
    return QUANTUM + PER_ROW_TEACHER * n_rows * N_TEACHERS


def test_responses_leave_at_the_schedules_points_whatever_the_computation_took(tmp_path):
    fake = FakeTime()
    costs = [0.0001, 0.0040, 0.0002, 0.0110, 0.0005, 0.0830]  # each below its interval
    app = app_of(with_cost(fitted(tmp_path), fake, costs), fake)
    for n_rows in (1, 1, 10, 10, 100, 100):
        status, took = predict_at(app, fake, n_rows)
        assert status == 200
        assert took == pytest.approx(interval(n_rows), abs=1e-12), n_rows
    assert costs == []  # every request ran its computation


def test_an_overrun_doubles_the_interval_and_it_shrinks_back_after_n_responses(tmp_path):
    fake = FakeTime()
    base = interval(1)
    # 1 on time; 1 overrun by 3x (to level 2: 4x); 3 on time at 4x; then back to level 1.
    costs = [0.001, 3 * base, 0.001, 0.001, 0.001, 0.001, 0.001, 0.001, 0.001]
    app = app_of(with_cost(fitted(tmp_path), fake, costs), fake, shrink_after=3)
    taken = [predict_at(app, fake, 1)[1] for _ in range(9)]
    expected = [1, 4, 4, 4, 4, 2, 2, 2, 1]  # multiples of the base interval
    assert taken == pytest.approx([m * base for m in expected], abs=1e-12)


def test_the_level_moves_one_epoch_at_a_time_and_is_capped():
    fake = FakeTime()
    schedule = ReleaseSchedule(
        quantum=0.01, per_row_teacher=0.0, shrink_after=2, max_level=3, clock=fake.clock
    )
    assert schedule.plan(0.0, 0.005, 1).time == pytest.approx(0.01)
    assert (schedule.level, schedule.epochs) == (0, 1)
    late = schedule.plan(0.0, 0.015, 1)  # overruns level 0: the point of level 1
    assert (late.time, late.level, late.overrun) == (pytest.approx(0.02), 1, True)
    assert (schedule.level, schedule.epochs) == (1, 2)
    # Beyond the top level (8x): refused at the top level's point, never later.
    beyond = schedule.plan(0.0, 0.25, 1)
    assert (beyond.time, beyond.level, beyond.refused) == (pytest.approx(0.08), 3, True)
    assert schedule.level == 3 and schedule.epochs == 3
    again = schedule.plan(0.0, 5.0, 1)  # the level stays at max_level: no new epoch
    assert (again.time, again.refused) == (pytest.approx(0.08), True)
    assert (schedule.level, schedule.epochs) == (3, 3)
    assert schedule.plan(0.0, 0.001, 1).time == pytest.approx(0.08)
    assert schedule.plan(0.0, 0.001, 1).time == pytest.approx(0.08)
    assert schedule.level == 2 and schedule.epochs == 4  # shrunk after 2 on time
    # An answer leaves at or after it is ready, or is refused at the last point before then.
    for ready in np.linspace(0.0, 1.0, 41):
        planned = schedule.plan(0.0, float(ready), 1)
        assert planned.time >= ready or (planned.refused and planned.time < ready)
    # Each route keeps its own level.
    assert schedule.level_of("health") == 0
    schedule.plan(0.0, 0.015, 1, route="health")
    assert (schedule.level_of("health"), schedule.epochs_of("health")) == (1, 2)
    # ... and each class of request sizes within a route (1 row, 2, 3-4, ..., 513-1,024).
    assert schedule.level_of("health", 1000) == 0
    schedule.plan(0.0, 0.5, 1000, route="health")
    assert (schedule.level_of("health", 1000), schedule.level_of("health", 600)) == (3, 3)
    assert (schedule.level_of("health", 1), schedule.level_of("health", 512)) == (1, 0)


def test_on_the_lattice_a_later_arrival_in_the_same_cell_leaves_at_the_same_time():
    """A poller's next request, delayed by a busy CPU, does not move its response."""
    schedule = ReleaseSchedule(quantum=0.004, shrink_after=2, max_level=3)
    step = schedule.other_quantum
    cell = 4000 * step  # a multiple of the step
    times = {
        schedule.plan(
            cell + delay, cell + delay + 0.001, 1, route="health", base=step, lattice=True
        ).time
        for delay in np.linspace(0.0001, 0.9999 * step, 25)
    }
    assert len(times) == 1 and times.pop() == pytest.approx(cell + 2 * step, abs=1e-9)
    # From the arrival instead, each delay moves its response by as much.
    anchored = {
        round(schedule.plan(cell + d, cell + d, 1, route="budget", base=step).time, 9)
        for d in (0.001, 0.002)
    }
    assert len(anchored) == 2
    # An overrun raises the level: the lattice of twice the step, still at fixed times.
    late = schedule.plan(cell, cell + 2.5 * step, 1, route="health", base=step, lattice=True)
    assert (late.level, late.overrun) == (1, True)
    assert late.time == pytest.approx(cell + 4 * step, abs=1e-9)
    assert late.time / (2 * step) == pytest.approx(round(late.time / (2 * step)), abs=1e-6)
    # Ready at or before its point, or refused at the last point: never earlier.
    for ready in np.linspace(cell, cell + 40 * step, 81):
        planned = schedule.plan(cell, float(ready), 1, route="card", base=step, lattice=True)
        assert planned.time >= ready or planned.refused
        assert planned.time <= schedule.last_point(cell, step, lattice=True) + 1e-9


def test_refusals_after_the_computation_and_of_the_body_leave_on_the_schedule(tmp_path):
    fake = FakeTime()
    app = app_of(with_cost(fitted(tmp_path, cap_rows=5), fake, [0.001, 0.002]), fake)
    status, took = predict_at(app, fake, 5)
    assert status == 200 and took == pytest.approx(interval(5), abs=1e-12)
    status, took = predict_at(app, fake, 3)  # the budget is spent: 429, on the schedule
    assert status == 429 and took == pytest.approx(interval(3), abs=1e-12)
    origin = fake.now
    status, _, left = asyncio.run(send(app, fake, "POST", "/predict", b'{"rows": [[1, 2]]}'))
    # Refused on the body alone: on the schedule too (as a one-row request).
    assert status == 422 and left - origin == pytest.approx(interval(1), abs=1e-12)


def test_a_waiting_response_does_not_block_the_event_loop(tmp_path):
    fake = FakeTime()
    app = app_of(with_cost(fitted(tmp_path), fake, [0.001]), fake)

    async def both():
        gate = fake.gate = asyncio.Event()
        order = []

        async def waiting():
            order.append(("predict", (await send(app, fake, "POST", "/predict", rows(1)))[0]))

        async def other():
            while not fake.waits:  # until the response waits for its point
                await asyncio.sleep(0.001)
            order.append(("health", (await send(app, fake, "GET", "/health"))[0]))
            gate.set()

        await asyncio.wait_for(asyncio.gather(waiting(), other()), timeout=60)
        return order

    assert asyncio.run(both()) == [("health", 200), ("predict", 200)]


def test_the_latency_histogram_records_the_scheduled_release_times(tmp_path, monkeypatch):
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    fake = FakeTime()
    app = app_of(with_cost(fitted(tmp_path), fake, [0.0001, 0.003, 0.05]), fake)
    for n_rows in (1, 1, 100):
        predict_at(app, fake, n_rows)
    _, text, _ = asyncio.run(send(app, fake, "GET", "/metrics"))
    lines = dict(
        line.rsplit(" ", 1) for line in text.decode().splitlines() if not line.startswith("#")
    )
    total = float(lines['skprivpred_request_duration_seconds_sum{endpoint="predict"}'])
    assert total == pytest.approx(2 * interval(1) + interval(100), abs=1e-9)


def test_the_defence_is_on_by_default_and_off_only_with_a_warning(tmp_path, monkeypatch, caplog):
    calls = []
    real = ReleaseSchedule.plan

    def spy(self, origin, ready, n_rows, n_teachers=1, **where):
        calls.append((where["route"], n_rows))
        return real(self, origin, ready, n_rows, n_teachers, **where)

    monkeypatch.setattr(ReleaseSchedule, "plan", spy)
    clf = fitted(tmp_path)
    fake = FakeTime()
    # The default: the schedule, and the computation in a spawned process.
    assert asyncio.run(send(create_app(clf), fake, "POST", "/predict", rows(2)))[0] == 200
    assert calls == [("predict", 2)]
    assert clf.accountant.queries_answered == 2  # charged by the child, in the same ledger
    # The command's workers: the settings it hands them, or the defaults if none.
    assert isinstance(_schedule_from({}), ReleaseSchedule)
    assert _schedule_from({"quantum": 0.01}).quantum == 0.01
    assert _schedule_from(None) is False
    with caplog.at_level(logging.WARNING, logger="skprivpred.serving"):
        app = create_app(clf, timing_defence=False)
    assert "timing defence is off" in caplog.text
    assert asyncio.run(send(app, fake, "POST", "/predict", rows(2)))[0] == 200
    assert len(calls) == 1  # no schedule


KEY = "alice-key-0123456789"


def test_every_route_and_status_leaves_on_the_schedule_each_route_on_its_own_level(
    tmp_path, monkeypatch
):
    """No response leaves before its point: every route, every status, known paths or not."""
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    fake = FakeTime()
    clf = with_cost(fitted(tmp_path, cap_rows=3), fake, [0.0001, 3 * interval(1), 0.0001])
    schedule = ReleaseSchedule(
        quantum=QUANTUM, per_row_teacher=PER_ROW_TEACHER, clock=fake.clock, sleep=fake.sleep
    )
    app = create_app(
        clf,
        api_keys={"alice": KEY},
        max_body_bytes=4000,
        timing_defence=schedule,
        isolate_computation=False,
    )
    key = [(b"x-api-key", KEY.encode())]
    cases = [
        ("GET", "/health", b"", key, 200),
        ("GET", "/budget", b"", key, 200),
        ("GET", "/budget", b"", [], 401),
        ("GET", "/guarantee", b"", key, 200),
        ("GET", "/card", b"", key, 200),
        ("GET", "/openapi.json", b"", [], 200),
        ("GET", "/metrics", b"", key, 200),
        ("GET", "/metrics", b"", [(b"x-api-key", b"wrong-key-0123456789")], 401),
        ("POST", "/predict", rows(1), key, 200),
        ("POST", "/predict", rows(1), [], 401),
        ("POST", "/predict", b" " * 5000, key, 413),
        ("POST", "/predict", b'{"rows": [[1, 2]]}', key, 422),
        ("POST", "/predict", b"{not json", key, 422),
        ("GET", "/no-such-route", b"", key, 404),
        ("GET", "/predict", b"", key, 405),
        # What a web page can send: a rebound Host, a body not declared JSON, not UTF-8.
        ("POST", "/predict", rows(1), [*key, (b"host", b"rebind.attacker.example")], 400),
        ("GET", "/health", b"", [(b"host", b"rebind.attacker.example")], 400),
        ("POST", "/predict", rows(1), [*key, (b"content-type", b"text/plain")], 415),
        ("POST", "/predict", rows(1).decode().encode("utf-16"), key, 422),
        ("POST", "/predict", json.dumps({"rows": [["1", 0, 0]]}).encode(), key, 422),
        ("POST", "/predict", rows(1), [*key, (b"authorization", b"Basic eDp5")], 401),
        ("POST", "/predict", rows(1), [*key, *key], 400),
    ]
    for method, path, body, headers, expected in cases:
        origin = fake.now
        status, _, left = asyncio.run(send(app, fake, method, path, body, headers))
        assert status == expected, (method, path)
        if path == "/predict":  # from the arrival; a refusal counts as one row
            assert left - origin == pytest.approx(interval(1), abs=1e-12), (path, status)
        else:  # on the lattice
            assert left == pytest.approx(lattice_point(origin), abs=1e-9), (method, path, status)
            assert OTHER <= left - origin <= 2 * OTHER + 1e-9
    # An overrun of /predict raises its level only: /health keeps its own.
    for expected in (4, 4):  # 3 base intervals: the point of level 2; then level 2 holds
        origin = fake.now
        status, _, left = asyncio.run(send(app, fake, "POST", "/predict", rows(1), key))
        assert status == 200 and left - origin == pytest.approx(expected * interval(1))
    assert (schedule.level_of("predict"), schedule.level_of("health")) == (2, 0)
    origin = fake.now
    left = asyncio.run(send(app, fake, "GET", "/health"))[2]
    assert left == pytest.approx(lattice_point(origin), abs=1e-9)


def test_past_the_last_level_a_fixed_503_leaves_at_its_point_and_the_charge_stands(tmp_path):
    fake = FakeTime()
    clf = fitted(tmp_path)
    predict, computing = clf.predict, threading.Event()

    def slow(X):  # runs until the test has seen the response leave
        answer = predict(X)
        assert computing.wait(timeout=60)
        return answer

    clf.predict = slow
    # The last point is 4 base intervals; the middleware waits for it on the event loop's
    # clock, so a base of half a second leaves the real computation of the second request
    # (unblocked) far inside it on a loaded machine.
    quantum = 0.5
    schedule = ReleaseSchedule(
        quantum=quantum,
        per_row_teacher=PER_ROW_TEACHER,
        max_level=2,
        clock=fake.clock,
        sleep=fake.sleep,
    )
    app = create_app(clf, timing_defence=schedule, isolate_computation=False)
    origin = fake.now
    status, body, left = asyncio.run(
        send(app, fake, "POST", "/predict", rows(1), on_start=computing.set)
    )
    from skprivpred.serving._release import OVERRUN_BODY

    assert status == 503 and json.loads(body) == json.loads(OVERRUN_BODY)
    base = quantum + PER_ROW_TEACHER * N_TEACHERS
    assert left - origin == pytest.approx(4 * base, abs=1e-12)  # the last point, not later
    assert clf.accountant.queries_answered == 1  # the charge stands
    assert (schedule.level, schedule.epochs) == (2, 2)
    status, _, left = asyncio.run(send(app, fake, "POST", "/predict", rows(1)))
    assert status == 200 and schedule.level == 2  # the level stays at max_level


def test_the_computation_runs_in_a_spawned_process_with_fresh_noise(tmp_path):
    import os

    from skprivpred.serving._compute import Computation

    clf = fitted(tmp_path)  # random_state=0: a copy that kept its stream would replay it
    X = np.zeros((200, 3))  # epsilon=0.01 per row: each answer about a fair coin

    async def answers():
        outcomes = []
        for _ in range(2):
            computation = Computation(clf, None, None, 1000, 1_000_000)
            try:
                pid = await computation.start()
                assert pid != os.getpid()
                assert computation._pool()._mp_context.get_start_method() == "spawn"
                outcomes.append(await computation.answer(X, None))
            finally:
                computation.stop()
        return outcomes

    (kind_a, a), (kind_b, b) = asyncio.run(answers())
    assert kind_a == kind_b == "answer"
    assert clf.accountant.queries_answered == 400  # both charged the one ledger
    assert a["predictions"] != b["predictions"]  # equal with probability about 2**-200


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"quantum": 0.0}, "quantum (--timing-quantum)"),
        ({"quantum": float("nan")}, "quantum (--timing-quantum)"),
        ({"other_quantum": -0.01}, "other_quantum (--timing-other-quantum)"),
        ({"per_row_teacher": -1e-6}, "per_row_teacher (--timing-per-row-teacher)"),
        ({"shrink_after": 0}, "shrink_after (--timing-shrink-after)"),
        ({"shrink_after": 2.5}, "shrink_after (--timing-shrink-after)"),
    ],
)
def test_bad_settings_are_refused_naming_the_option(settings, named):
    with pytest.raises(ValueError, match=named.replace("(", r"\(").replace(")", r"\)")):
        ReleaseSchedule(**settings)


def test_the_command_shows_the_timing_options_and_refuses_bad_ones(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "skprivpred.serving", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    help_text = " ".join(done.stdout.split())
    for phrase in (
        "--timing-quantum SECONDS the interval of any /predict request, before the public "
        "cost of its path (default: 0.004)",
        "--timing-other-quantum SECONDS the interval of every route but /predict, whose "
        "responses leave on the multiples of it (default: 0.025)",
        "--timing-per-row-teacher SECONDS",
        "(default: predicted from the public cost of the model's path)",
        "--timing-shrink-after N",
        "(default: 20)",
        "--no-timing-defence",
    ):
        assert phrase in help_text, phrase
    done = subprocess.run(
        [sys.executable, "-m", "skprivpred.serving", "model.skops", "--timing-quantum", "-1"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 2 and "quantum (--timing-quantum)" in done.stderr
