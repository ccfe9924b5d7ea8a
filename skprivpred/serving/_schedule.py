"""When a response may leave: a public release schedule against timing channels.

How long a model takes to answer can depend on its training rows (a teacher
that never saw a category, a deeper tree), so the moment an answer leaves the
service is a release too. :class:`ReleaseSchedule` implements *predictive
mitigation* (Askarov, Myers & Zhang, "Predictive black-box mitigation of
timing channels", CCS 2010; Zhang, Askarov & Myers, "Predictive mitigation of
timing channels in interactive systems", CCS 2011): a response leaves at a
point of a schedule computed from public quantities only (the route, the
number of rows asked, the public cost of the model's path, the configured
quantum); when a computation overruns its point, the route's level goes up
(the interval doubles) for the responses that follow, and it comes down one
level after a public number of responses that kept to the schedule.

What the schedule bounds. The release time depends on the secret
computation only through each route's level sequence, which changes at most
once per *epoch*. One epoch can leak which level it ended with *and when* it
ended: an overrun at the third response and one at the seventh give the same
levels but different delays, so an epoch ended by an overrun among ``N``
responses leaks up to ``log2(max_level + 1) + log2(N)`` bits (an epoch ended
by a step down ends at a public count, ``shrink_after``). Over ``N`` responses
a route has at most about ``2 N / shrink_after + (max_level + 1)`` epochs. The
bound is per schedule, and each worker process of a service keeps its own:
with ``W`` workers the constant is ``(max_level + 1) W`` (``21 W`` at the
default ``max_level``), for each route and each class of request sizes
(:func:`row_class`; at most 11 classes up to 1,000 rows). A route's level is shared by all its
clients: one client's overrun doubles every other client's delays on that
route until it steps down. Past ``max_level`` a response does not wait for
the next multiple (which would be unbounded): at the last level's point it
leaves as a fixed, public refusal (HTTP 503, :attr:`Release.refused`), the
level staying at ``max_level`` and any charge standing.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

__all__ = ["Release", "ReleaseSchedule"]


@dataclass(frozen=True)
class Release:
    """Where one response falls on the schedule.

    Attributes
    ----------
    time : float
        When the response leaves (the schedule's clock).
    level : int
        The schedule's level it was released at (its interval is
        ``2**level`` times the base interval).
    overrun : bool
        Whether the computation overran the level in force, which raised it.
    refused : bool, default=False
        Whether the computation overran even the last level: the response
        leaves at that level's point (``time``) as a fixed, public refusal
        instead of the answer.
    """

    time: float
    level: int
    overrun: bool
    refused: bool = False


class ReleaseSchedule:
    """Release each response at the next point of a public schedule.

    A request that arrives at ``origin``, asks ``n_rows`` rows of a model of
    ``n_teachers`` teachers, has the base interval ``quantum + per_row_teacher
    * n_rows * n_teachers``; at level ``k`` its response may leave at ``origin
    + 2**j * interval`` for ``j >= k`` only, the first such point at or after
    the moment the answer is ready. A response whose computation overran the
    level in force (``j > k``) raises the level to ``j`` for the responses
    that follow (a new epoch); after ``shrink_after`` responses in a row that
    kept to the level, it comes down by one (another epoch). A response not
    ready at the point of ``max_level`` is refused there (:attr:`Release.refused`:
    a fixed 503 leaves at that point; the level stays at ``max_level``).

    Every route but ``/predict`` (``/health``, ``/budget``, ``/metrics``,
    ``/guarantee``, ``/card``, ``/openapi.json``, an unknown path) has the base
    interval ``other_quantum`` and leaves on a *lattice* (``lattice=True`` of
    :meth:`plan`): at level ``k`` its points are the multiples of ``2**j *
    other_quantum`` on the schedule's clock, the first at least one interval
    after ``origin``. A client that polls these routes as fast as they answer
    then sees its responses at fixed times: a small delay of its next request
    (a busy CPU) moves none of them, where from its arrival each would move
    by as much, and the number answered in a given time would count it.

    Each route keeps its own level (``route=`` of :meth:`plan`), and within
    a route each class of request sizes (:func:`row_class`: 1 row, 2, 3 to 4,
    5 to 8, ..., powers of two), so that an overrun of ``/predict`` never
    delays ``/health``, and a one-row request queued behind a 1,000-row
    computation does not raise the level of the 1,000-row requests. What an epoch can leak,
    and how the bound grows with routes and worker processes, is in the
    module's docstring and on the privacy-model page.

    Parameters
    ----------
    quantum : float, default=0.004
        Seconds: the base interval of a ``/predict`` request, whatever its size.
    per_row_teacher : float or None, default=None
        Seconds added to the base interval per row asked and per teacher.
        ``None``: the service predicts the interval from the public cost of
        the model's path (:class:`~skprivpred.serving._cost.PathCost`: a
        stacked linear vote costs far less per row and teacher than a
        teacher's own ``predict``), and :meth:`interval` uses
        :attr:`default_per_row_teacher`.
    shrink_after : int, default=20
        Responses in a row that keep to the schedule before its level comes
        down by one.
    max_level : int, default=20
        Highest level (``2**20`` times the base interval).
    other_quantum : float, default=0.025
        Seconds: the base interval of every route but ``/predict``, and the
        step of their lattice (their responses leave 25 to 50 ms after they
        arrive at level 0).
    clock : callable, default=time.perf_counter
        Seconds on a monotonic clock (the tests inject theirs).
    sleep : callable, default=anyio.sleep
        ``await sleep(seconds)``: waits without blocking the event loop.

    References
    ----------
    Askarov, Zhang & Myers, "Predictive black-box mitigation of timing
    channels", ACM CCS 2010. Zhang, Askarov & Myers, "Predictive mitigation of
    timing channels in interactive systems", ACM CCS 2011.
    """

    #: Seconds per row and teacher of a teacher that votes through its own ``predict``: about
    #: ten times what a one-hot pipeline teacher takes, with its fallback's retries on halves,
    #: on a quiet machine (5e-05 was five times, and beside eight CPU-bound processes on two
    #: cores the slower of two neighbouring models overran it and sat a level above the other).
    default_per_row_teacher = 1e-04

    def __init__(
        self,
        quantum: float = 0.004,
        per_row_teacher: float | None = None,
        shrink_after: int = 20,
        max_level: int = 20,
        other_quantum: float = 0.025,
        *,
        clock: Callable[[], float] = time.perf_counter,
        sleep: Callable[[float], Awaitable[object]] | None = None,
    ) -> None:
        _check("quantum", quantum, "--timing-quantum", positive=True)
        _check("other_quantum", other_quantum, "--timing-other-quantum", positive=True)
        if per_row_teacher is not None:
            _check("per_row_teacher", per_row_teacher, "--timing-per-row-teacher", positive=False)
        for name, value, option in (
            ("shrink_after", shrink_after, "--timing-shrink-after"),
            ("max_level", max_level, None),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                where = f" ({option})" if option else ""
                raise ValueError(f"{name}{where} must be an integer >= 1, got {value!r}.")
        self.quantum = float(quantum)
        self.other_quantum = float(other_quantum)
        self.per_row_teacher = None if per_row_teacher is None else float(per_row_teacher)
        self.shrink_after = shrink_after
        self.max_level = max_level
        self.clock = clock
        if sleep is None:
            import anyio

            sleep = anyio.sleep
        self._sleep = sleep
        self._lock = threading.Lock()
        self._routes: dict[str, _Level] = {}

    def __repr__(self) -> str:
        return (
            f"ReleaseSchedule(quantum={self.quantum!r}, per_row_teacher={self.per_row_teacher!r},"
            f" shrink_after={self.shrink_after!r}, max_level={self.max_level!r},"
            f" other_quantum={self.other_quantum!r})"
        )

    def _route(self, route: str, n_rows: int = 1) -> _Level:
        key = f"{route}/{row_class(n_rows)}"
        state = self._routes.get(key)
        if state is None:
            state = self._routes[key] = _Level()
        return state

    @property
    def level(self) -> int:
        """The level in force on ``/predict``: its intervals are ``2**level`` times the base."""
        return self.level_of("predict")

    @property
    def epochs(self) -> int:
        """Epochs so far on ``/predict`` (1 + its level's changes)."""
        return self.epochs_of("predict")

    def level_of(self, route: str, n_rows: int = 1) -> int:
        """The level in force on ``route`` for requests of ``n_rows`` rows' class."""
        with self._lock:
            return self._route(route, n_rows).level

    def epochs_of(self, route: str, n_rows: int = 1) -> int:
        """Epochs so far on ``route`` for ``n_rows`` rows' class (1 + its level's changes)."""
        with self._lock:
            return self._route(route, n_rows).epochs

    def last_point(self, origin: float, base: float, lattice: bool = False) -> float:
        """The point of ``max_level``: a response not ready then is refused there."""
        return _point(origin, base * 2**self.max_level, lattice)

    def interval(self, n_rows: int, n_teachers: int = 1) -> float:
        """The base interval (level 0) of a request of ``n_rows`` rows, in seconds."""
        per_row_teacher = self.per_row_teacher
        if per_row_teacher is None:
            per_row_teacher = self.default_per_row_teacher
        return self.quantum + per_row_teacher * n_rows * n_teachers

    def plan(
        self,
        origin: float,
        ready: float,
        n_rows: int,
        n_teachers: int = 1,
        *,
        route: str = "predict",
        base: float | None = None,
        lattice: bool = False,
    ) -> Release:
        """The release of a response that arrived at ``origin`` and was ready at ``ready``.

        ``base``: the request's base interval, if the caller predicts it from
        the model's public path cost (default: :meth:`interval`). ``lattice``:
        the points are the multiples of ``2**j * base`` on the clock (the
        first at least ``2**j * base`` after ``origin``) instead of ``origin
        + 2**j * base``. Updates ``route``'s level for the responses that
        follow (thread-safe).
        """
        if base is None:
            base = self.interval(n_rows, n_teachers)
        with self._lock:
            state = self._route(route, n_rows)
            level = j = state.level
            while j < self.max_level and _point(origin, base * 2**j, lattice) < ready:
                j += 1
            release = _point(origin, base * 2**j, lattice)
            refused = release < ready  # not ready even at the last point: refused there
            overrun = j > level or refused
            if j > level:
                state.level, state.kept, state.epochs = j, 0, state.epochs + 1
            elif refused:
                state.kept = 0  # stays at max_level: the epoch goes on
            elif level > 0:
                state.kept += 1
                if state.kept >= self.shrink_after:
                    state.level, state.kept, state.epochs = level - 1, 0, state.epochs + 1
        return Release(release, j, overrun, refused)

    async def release(
        self,
        origin: float,
        n_rows: int,
        n_teachers: int = 1,
        *,
        route: str = "predict",
        base: float | None = None,
        lattice: bool = False,
    ) -> Release:
        """Wait, without blocking the event loop, until the response's point; return it."""
        planned = self.plan(
            origin, self.clock(), n_rows, n_teachers, route=route, base=base, lattice=lattice
        )
        await self.wait_until(planned.time)
        return planned

    async def wait_until(self, when: float) -> None:
        """Wait, without blocking the event loop, until ``when`` on the schedule's clock."""
        while (left := when - self.clock()) > 0:
            await self._sleep(left)


def _point(origin: float, step: float, lattice: bool) -> float:
    """``origin + step``, or on a lattice the first multiple of ``step`` at least that late.

    ``floor(origin / step) + 2`` steps: a multiple in ``(origin + step, origin + 2 step]``
    whatever the rounding of the division.
    """
    if not lattice:
        return origin + step
    return (math.floor(origin / step) + 2) * step


def row_class(n_rows: int) -> int:
    """The class of a request's size: ``ceil(log2(n_rows))`` (1 row: 0; 513 to 1,024: 10)."""
    return max(int(n_rows) - 1, 0).bit_length()


@dataclass
class _Level:
    """One route's level, the responses on time at it, and its epochs so far."""

    level: int = 0
    kept: int = 0
    epochs: int = 1


def _check(name: str, value: object, option: str, *, positive: bool) -> None:
    ok = (
        not isinstance(value, bool)
        and isinstance(value, int | float)
        and math.isfinite(value)
        and (value > 0 if positive else value >= 0)
    )
    if not ok:
        bound = "> 0" if positive else ">= 0"
        raise ValueError(
            f"{name} ({option}) must be a finite number of seconds {bound}, got {value!r}."
        )
