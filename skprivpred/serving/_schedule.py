"""When a response may leave: a public release schedule against timing channels.

How long a model takes to answer can depend on its training rows (a teacher
that never saw a category, a deeper tree), so the moment an answer leaves the
service is a release too. :class:`ReleaseSchedule` implements *predictive
mitigation* (Askarov, Myers & Zhang, "Predictive black-box mitigation of
timing channels", CCS 2010; Zhang, Askarov & Myers, "Predictive mitigation of
timing channels in interactive systems", CCS 2011): a response leaves at a
point of a schedule computed from public quantities only (the number of rows
asked, the model's number of teachers, the configured quantum); when a
computation overruns its point, the schedule's level goes up (the interval
doubles) for the responses that follow, and it comes down one level after a
public number of responses that kept to the schedule. The release time then
depends on the secret computation only through the level, which changes at
most once per *epoch*: what one epoch can leak is which of the levels the
schedule moved to, at most ``log2(max_level + 1)`` bits.
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
    """

    time: float
    level: int
    overrun: bool


class ReleaseSchedule:
    """Release each response at the next point of a public schedule.

    A request that arrives at ``origin``, asks ``n_rows`` rows of a model of
    ``n_teachers`` teachers, has the base interval ``quantum + per_row_teacher
    * n_rows * n_teachers``; at level ``k`` its response may leave at ``origin
    + 2**j * interval`` for ``j >= k`` only, the first such point at or after
    the moment the answer is ready. A response whose computation overran the
    level in force (``j > k``) raises the level to ``j`` for the responses
    that follow (a new epoch); after ``shrink_after`` responses in a row that
    kept to the level, it comes down by one (another epoch). Beyond
    ``max_level`` the response leaves at the next multiple of the largest
    interval.

    Parameters
    ----------
    quantum : float, default=0.004
        Seconds: the base interval of a request, whatever its size.
    per_row_teacher : float, default=5e-05
        Seconds added to the base interval per row asked and per teacher.
    shrink_after : int, default=20
        Responses in a row that keep to the schedule before its level comes
        down by one.
    max_level : int, default=20
        Highest level (``2**20`` times the base interval).
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

    def __init__(
        self,
        quantum: float = 0.004,
        per_row_teacher: float = 5e-05,
        shrink_after: int = 20,
        max_level: int = 20,
        *,
        clock: Callable[[], float] = time.perf_counter,
        sleep: Callable[[float], Awaitable[object]] | None = None,
    ) -> None:
        _check("quantum", quantum, "--timing-quantum", positive=True)
        _check("per_row_teacher", per_row_teacher, "--timing-per-row-teacher", positive=False)
        for name, value, option in (
            ("shrink_after", shrink_after, "--timing-shrink-after"),
            ("max_level", max_level, None),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                where = f" ({option})" if option else ""
                raise ValueError(f"{name}{where} must be an integer >= 1, got {value!r}.")
        self.quantum = float(quantum)
        self.per_row_teacher = float(per_row_teacher)
        self.shrink_after = shrink_after
        self.max_level = max_level
        self.clock = clock
        if sleep is None:
            import anyio

            sleep = anyio.sleep
        self._sleep = sleep
        self._lock = threading.Lock()
        self._level = 0
        self._kept = 0  # responses in a row that kept to the current level
        self._epochs = 1

    def __repr__(self) -> str:
        return (
            f"ReleaseSchedule(quantum={self.quantum!r}, per_row_teacher={self.per_row_teacher!r},"
            f" shrink_after={self.shrink_after!r}, max_level={self.max_level!r})"
        )

    @property
    def level(self) -> int:
        """The level in force: intervals are ``2**level`` times the base interval."""
        return self._level

    @property
    def epochs(self) -> int:
        """Epochs so far (1 + the level's changes): each can leak ``log2(max_level + 1)`` bits."""
        return self._epochs

    def interval(self, n_rows: int, n_teachers: int = 1) -> float:
        """The base interval (level 0) of a request of ``n_rows`` rows, in seconds."""
        return self.quantum + self.per_row_teacher * n_rows * n_teachers

    def plan(self, origin: float, ready: float, n_rows: int, n_teachers: int = 1) -> Release:
        """The release of a response that arrived at ``origin`` and was ready at ``ready``.

        Updates the level for the responses that follow (thread-safe).
        """
        base = self.interval(n_rows, n_teachers)
        with self._lock:
            level = self._level
            j = level
            while j < self.max_level and origin + base * 2**j < ready:
                j += 1
            release = origin + base * 2**j
            if release < ready:  # beyond the largest level: its next multiple
                largest = base * 2**self.max_level
                release = origin + largest * math.ceil((ready - origin) / largest)
            overrun = j > level
            if overrun:
                self._level, self._kept, self._epochs = j, 0, self._epochs + 1
            elif level > 0:
                self._kept += 1
                if self._kept >= self.shrink_after:
                    self._level, self._kept, self._epochs = level - 1, 0, self._epochs + 1
        return Release(release, j, overrun)

    async def release(self, origin: float, n_rows: int, n_teachers: int = 1) -> Release:
        """Wait, without blocking the event loop, until the response's point; return it."""
        planned = self.plan(origin, self.clock(), n_rows, n_teachers)
        while (left := planned.time - self.clock()) > 0:
            await self._sleep(left)
        return planned


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
