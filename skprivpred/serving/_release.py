"""Every response of the service leaves on the release schedule: an ASGI middleware.

:class:`ReleasedResponses` wraps the whole application. It reads the schedule's
clock first, before anything of the request is read (the request's *arrival*
as the answering process saw it), then runs the application with a ``send``
that holds its messages; when the response is ready, it asks the schedule for
its point (:meth:`~skprivpred.serving.ReleaseSchedule.plan`, on the route's
own level) and sends the held messages then. Every route and every status goes
through it: ``/predict``'s answers and refusals (400, 401, 413, 415, 422, 429, 503), the
other routes, an unknown path's 404. A response not ready at the point of the
schedule's last level is replaced there by a fixed, public 503 (the charge, if
any, stands).

The base interval of a request is a function of public quantities only
(``interval(route, rows)``): ``/predict`` tells the middleware, once it has
read the body, how many rows were asked (:func:`asked_rows`); until then, and
for every other route, a request counts as one row. The points of the routes
named ``anchored`` (``/predict``) are counted from each request's arrival;
every other route leaves on the schedule's lattice (the multiples of its
interval on the clock), so that how fast a client's next request arrives
after a response (which a busy CPU delays) moves none of the responses that
follow.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Collection, Mapping
from typing import Any

from ._schedule import ReleaseSchedule

__all__ = ["OVERRUN_BODY", "ReleasedResponses", "asked_rows"]

#: The fixed body of a response that was not ready at the schedule's last point.
OVERRUN_BODY = json.dumps(
    {
        "error": "the answer was not ready at the release schedule's last point, so it is "
        "refused; its charge, if any, stands."
    }
).encode()

_SIZE_KEY = "skprivpred.release_size"


class _Size:
    """The public size of a request (rows asked), which its endpoint may set once."""

    def __init__(self) -> None:
        self.rows = 1
        self.changed = asyncio.Event()


def asked_rows(scope: Mapping[str, Any], n_rows: int) -> None:
    """Tell the release middleware how many rows a ``/predict`` request asks."""
    size = scope.get(_SIZE_KEY)
    if size is not None and n_rows != size.rows:
        size.rows = int(n_rows)
        size.changed.set()


class ReleasedResponses:
    """An ASGI middleware that releases every HTTP response on ``schedule``.

    Parameters
    ----------
    app : ASGI application
    schedule : ReleaseSchedule
    routes : mapping of str to str
        Route name of each path (its level, its metric label); any other path
        is the route ``"other"``.
    interval : callable
        ``interval(route, rows)``: the base interval in seconds, from public
        quantities only.
    observe : callable, default=None
        ``observe(route, seconds)``: called with each known route's scheduled
        response time (the latency histogram).
    anchored : collection of str, default=()
        Routes whose points are counted from the arrival; every other route
        (and any unknown path) leaves on the lattice.
    """

    def __init__(
        self,
        app,
        schedule: ReleaseSchedule,
        routes: Mapping[str, str],
        interval: Callable[[str, int], float],
        observe: Callable[[str, float], None] | None = None,
        anchored: Collection[str] = (),
    ) -> None:
        self.app = app
        self.schedule = schedule
        self.routes = dict(routes)
        self.interval = interval
        self.observe = observe
        self.anchored = frozenset(anchored)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        schedule = self.schedule
        origin = schedule.clock()  # the arrival: before anything of the request is read
        route = self.routes.get(scope.get("path", ""), "other")
        lattice = route not in self.anchored
        size = _Size()
        scope = {**scope, _SIZE_KEY: size}
        held: asyncio.Queue = asyncio.Queue()

        async def hold(message) -> None:
            held.put_nowait(message)

        task = asyncio.ensure_future(self.app(scope, receive, hold))
        first = asyncio.ensure_future(held.get())
        try:
            while True:
                base = self.interval(route, size.rows)
                left = schedule.last_point(origin, base, lattice) - schedule.clock()
                resized = asyncio.ensure_future(size.changed.wait())
                done, _ = await asyncio.wait(
                    {first, resized, task},
                    timeout=max(left, 0.0),
                    return_when=asyncio.FIRST_COMPLETED,
                )
                resized.cancel()
                if first in done or not done:
                    break  # ready, or the last point has come
                if resized in done:
                    size.changed.clear()
                    continue
                if task in done and held.empty():  # the application ended without a response
                    break
                await asyncio.sleep(0)  # the task ended after sending: ``first`` has it
            if first.done():
                ready = schedule.clock()
            elif task.done():  # no response at all (an error the application did not answer)
                ready = schedule.clock()
            else:  # the last point has come and the response is not ready: refused there
                ready = float("inf")
            planned = schedule.plan(
                origin, ready, size.rows, route=route, base=base, lattice=lattice
            )
            await schedule.wait_until(planned.time)
            if planned.refused:
                await _send_fixed(send, 503, OVERRUN_BODY)
            elif first.done():
                await self._forward(first.result(), held, task, send)
            else:
                await _send_fixed(send, 500, _INTERNAL_BODY)
            if self.observe is not None and route in self.routes.values():
                self.observe(route, planned.time - origin)
        finally:
            first.cancel()
        await task  # its exceptions, as without the middleware; messages after a refusal dropped

    @staticmethod
    async def _forward(message, held: asyncio.Queue, task: asyncio.Future, send) -> None:
        """Send the held response, then each message the application still sends."""
        while True:
            await send(message)
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                return
            getter = asyncio.ensure_future(held.get())
            done, _ = await asyncio.wait({getter, task}, return_when=asyncio.FIRST_COMPLETED)
            if getter not in done:
                getter.cancel()
                if held.empty():
                    return
                message = held.get_nowait()
            else:
                message = getter.result()


_INTERNAL_BODY = json.dumps({"error": "internal error"}).encode()


async def _send_fixed(send, status: int, body: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body, "more_body": False})
