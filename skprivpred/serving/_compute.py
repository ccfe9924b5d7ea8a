"""The computation of an answer, in a spawned process of its own.

The answering process (a uvicorn worker) reads requests, checks them and
sends responses; the computation that can depend on the training rows (the
estimator's input validation, the charge and the prediction) runs in a child
process that the answering process *spawns* (``multiprocessing``'s ``spawn``
start method, never ``fork``: a fork would copy the parent's noise streams
and locks, and an in-memory ledger refuses a forked child). The answering
process's event loop only awaits the child's answer, so no computation holds
its loop or its GIL: the arrival time of the next request, and the moment
any other response is ready, cannot depend on what a computation does
(:mod:`._release`).

The child receives the estimator by pickle once, at its start: every query
stream of the copy takes fresh entropy there (:class:`skprivpred._base.QueryStream`),
so two answering processes never share noise, and the accountant reopens the
same ledger by address (charges are the ledger's, shared by every process).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import multiprocessing
import os
import pickle
import signal
import threading
import time
from typing import Any

__all__ = ["Computation", "ComputationFailed"]


class ComputationFailed(Exception):
    """The child raised something other than a refusal (nothing of it is passed on)."""


#: In the child: the object that answers (a ``_answer._Answerer``).
_ANSWERER: Any = None


def _start_child(state: bytes) -> None:
    """The child's initializer: build the answerer from the pickled settings."""
    global _ANSWERER
    # Ctrl-C reaches the whole process group: the answering process shuts the child down.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # The child keeps no metric of its own (the answering process counts every request).
    os.environ.pop("PROMETHEUS_MULTIPROC_DIR", None)
    from ._answer import _Answerer
    from ._clients import Clients
    from ._model import budget_of

    _exit_with_parent(os.getppid())
    settings = pickle.loads(state)
    estimator = settings["estimator"]
    clients = Clients(budget_of(estimator), settings["api_keys"], settings["quota_epsilon"])
    _ANSWERER = _Answerer(estimator, clients)


def _exit_with_parent(parent: int, every: float = 0.5) -> None:
    """Exit as soon as the answering process is gone (stopped, killed, crashed).

    A child whose parent died would otherwise live on (its pipe is not always
    closed: a terminated uvicorn worker does not shut its executor down).
    """

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(every)
        os._exit(0)

    threading.Thread(target=watch, name="skprivpred-parent-watch", daemon=True).start()


def _ready() -> int:
    return os.getpid()


def _answer_in_child(X, client: str | None) -> tuple:
    """Answer in the child; what it returns says how (no exception crosses the pipe)."""
    from ..exceptions import LedgerError
    from ._answer import _Refused

    try:
        return ("answer", _ANSWERER.answer(X, client))
    except _Refused as refusal:
        return ("refused", refusal.status, refusal.body)
    except LedgerError:
        return ("ledger",)
    except Exception as exc:  # noqa: BLE001 - only the type's name leaves the child
        return ("failed", type(exc).__name__)


class Computation:
    """One spawned child process that answers the queries of one answering process.

    Parameters
    ----------
    estimator : estimator
        The served estimator (sent to the child by pickle once).
    api_keys, quota_epsilon, max_rows, max_body_bytes, unknown_categories
        What the child's answerer needs (the quotas are charged there).
    """

    def __init__(
        self,
        estimator,
        api_keys,
        quota_epsilon,
        max_rows: int,
        max_body_bytes: int,
        unknown_categories: str = "refuse",
    ) -> None:
        self._state = pickle.dumps(
            {
                "estimator": estimator,
                "api_keys": api_keys,
                "quota_epsilon": quota_epsilon,
                "max_rows": max_rows,
                "max_body_bytes": max_body_bytes,
                "unknown_categories": unknown_categories,
            }
        )
        self._executor: concurrent.futures.ProcessPoolExecutor | None = None
        self._lock = threading.Lock()

    def _pool(self) -> concurrent.futures.ProcessPoolExecutor:
        with self._lock:
            if self._executor is None:
                self._executor = concurrent.futures.ProcessPoolExecutor(
                    max_workers=1,
                    mp_context=multiprocessing.get_context("spawn"),
                    initializer=_start_child,
                    initargs=(self._state,),
                )
            return self._executor

    async def start(self) -> int:
        """Start the child (if it is not running) and wait until it can answer; its pid."""
        return await asyncio.wrap_future(self._pool().submit(_ready))

    async def answer(self, X, client: str | None) -> tuple:
        """The child's outcome for ``X``: ``("answer", body)``, ``("refused", status, body)``...

        A child that died is replaced for the next request (this one fails).
        """
        pool = self._pool()
        try:
            return await asyncio.wrap_future(pool.submit(_answer_in_child, X, client))
        except concurrent.futures.process.BrokenProcessPool:
            with self._lock:
                if self._executor is pool:
                    self._executor = None
            return ("failed", "BrokenProcessPool")

    def stop(self) -> None:
        """Stop the child: queued computations are cancelled, a running one is waited for.

        Waiting lets the executor's manager thread end here: left running, it
        would write to a closed pipe at interpreter exit (a traceback in the log).
        """
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)
