"""``GET /metrics``: the service's counters, and the budget read from the ledger at each scrape.

Request counters and latencies are kept by :mod:`prometheus_client`; with
several workers, in its multiprocess mode (``PROMETHEUS_MULTIPROC_DIR``: one
file per worker process, summed at each scrape). The budget and the clients'
quotas are not counters of a worker: they are read from the ledger at each
scrape, so every worker reports the same figures, the ones every charge is
checked against.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import stat
from collections.abc import Iterator
from typing import Any

from ..accounting._accountant import PrivacyAccountant
from ..accounting._composition import rho_cap
from ..utils._private_dirs import make_private_directory, private_directory_problem

__all__ = [
    "MULTIPROCESS_ENVIRONMENT_VARIABLE",
    "BudgetCollector",
    "ServiceMetrics",
    "default_metrics_directory",
    "prepare_metrics_directory",
    "remove_metrics_directory",
]

#: Where prometheus_client's multiprocess mode keeps the workers' files (read at import).
MULTIPROCESS_ENVIRONMENT_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"


def _private_directory(path: str) -> str:
    """``path`` as an absolute directory owned by this user with mode 0700 (created if absent).

    The checks are the default ledger directory's
    (:func:`~skprivpred.utils._private_dirs.private_directory_problem`).
    """
    path = os.path.abspath(path)
    make_private_directory(path)
    problem = private_directory_problem(path)
    if problem is not None:
        raise ValueError(
            f"the metrics directory {path} {problem}; refused: another user could have "
            "prepared its files (chmod 700 a directory of your own, or let the service "
            "create it)."
        )
    return path


def default_metrics_directory() -> str:
    """A new directory for this service's metric files, that no other user could prepare.

    A fresh :func:`tempfile.mkdtemp` (``$TMPDIR/skprivpred-metrics-XXXXXXXX``,
    created by this call with mode 0700): a random name that another local
    user cannot take first, as they could a predictable one
    (``$TMPDIR/skprivpred-<uid>``) to stop the service from starting.
    """
    import tempfile

    return tempfile.mkdtemp(prefix="skprivpred-metrics-")


#: The file that marks a metrics directory as this service's own (so a restart may clean it).
METRICS_MARKER = ".skprivpred-metrics"
#: The names of prometheus_client's multiprocess files: ``counter_<pid>.db``,
#: ``gauge_<mode>_<pid>.db``, ``histogram_<pid>.db``, ``summary_<pid>.db``.
_METRIC_FILE = re.compile(r"(?:counter|histogram|summary|gauge_[a-z]+)_[0-9]+\.db")


def _listing(names: list[str], limit: int = 5) -> str:
    shown = ", ".join(sorted(names)[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def prepare_metrics_directory(path: str, *, ledger_path: str | None = None) -> str:
    """Create or check the multiprocess directory and delete a previous run's metric files.

    The service deletes only the files it created: prometheus_client's metric
    files in a directory that holds its marker (:data:`METRICS_MARKER`, written
    when the directory is first used, so that a restart recognises it). A
    directory that holds anything else, or the ledger's file, is refused and
    left as it is.

    Parameters
    ----------
    path : str
        The directory (created with mode 0700 if absent); a directory
        dedicated to the service's metric files.
    ledger_path : str, default=None
        The SQLite file of the service's ledger, which must not lie in it.

    Returns
    -------
    str
        Its absolute path.

    Raises
    ------
    ValueError
        If it is a symbolic link, is not owned by this user, its mode is not
        0700, it would hold the ledger, or it holds files the service did not
        create.
    """
    if ledger_path is not None:
        ledger_directory = os.path.dirname(os.path.realpath(ledger_path))
        if ledger_directory == os.path.realpath(path):
            raise ValueError(
                f"the metrics directory {os.path.abspath(path)} holds the ledger file "
                f"{ledger_path}; refused, since the service deletes stale metric files there. "
                "Give --metrics-dir a dedicated directory, apart from the ledger's."
            )
    path = _private_directory(path)
    entries = os.listdir(path)
    foreign = [n for n in entries if n != METRICS_MARKER and not _METRIC_FILE.fullmatch(n)]
    marker = os.path.join(path, METRICS_MARKER)
    marked = METRICS_MARKER in entries
    if marked and not stat.S_ISREG(os.lstat(marker).st_mode):
        foreign.append(METRICS_MARKER)
    if foreign or (entries and not marked):
        raise ValueError(
            f"the metrics directory {path} holds files the service did not create "
            f"({_listing(foreign or entries)}); refused, since the service deletes stale "
            "metric files there. Give --metrics-dir a dedicated directory (empty, or one "
            "the service used before)."
        )
    if not marked:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        os.close(os.open(marker, flags, 0o600))
    # Counters start at zero with the service: files left by an earlier run are stale.
    for name in entries:
        if _METRIC_FILE.fullmatch(name):
            os.remove(os.path.join(path, name))
    return path


def remove_metrics_directory(path: str) -> None:
    """Delete a metrics directory prepared by :func:`prepare_metrics_directory`.

    Only the service's own files go (its metric files and the marker); the
    directory is removed if nothing else is left in it.
    """
    try:
        entries = os.listdir(path)
    except OSError:
        return
    for name in entries:
        if name == METRICS_MARKER or _METRIC_FILE.fullmatch(name):
            with contextlib.suppress(OSError):
                os.remove(os.path.join(path, name))
    with contextlib.suppress(OSError):
        os.rmdir(path)


class ServiceMetrics:
    """The counters and latency histograms that every request updates.

    In multiprocess mode (``PROMETHEUS_MULTIPROC_DIR`` set before
    ``prometheus_client`` is imported) the values go to this process's files
    in that directory; otherwise to a registry of this application.
    """

    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry, Counter, Histogram
        from prometheus_client.values import ValueClass

        self.multiprocess = bool(getattr(ValueClass, "_multiprocess", False))
        self._registry = None if self.multiprocess else CollectorRegistry(auto_describe=True)
        registry = self._registry
        self.requests = Counter(
            "skprivpred_requests",
            "HTTP requests answered, by endpoint and status code.",
            ["endpoint", "status"],
            registry=registry,
        )
        self.latency = Histogram(
            "skprivpred_request_duration_seconds",
            "Time from a request's arrival to its response, by endpoint.",
            ["endpoint"],
            registry=registry,
        )
        self.rows_answered = Counter(
            "skprivpred_rows_answered",
            "Query rows answered (each charged to the budget before its answer).",
            registry=registry,
        )
        self.rows_refused = Counter(
            "skprivpred_rows_refused",
            "Query rows refused because the budget, a client's quota or the horizon is spent.",
            registry=registry,
        )
        self.ledger_errors = Counter(
            "skprivpred_ledger_errors",
            "Requests that failed because the ledger was unavailable (nothing charged).",
            registry=registry,
        )

    def exposition(self, *collectors: Any) -> bytes:
        """The text format of every counter (all workers) and of ``collectors``."""
        from prometheus_client import CollectorRegistry, generate_latest

        registry = CollectorRegistry(auto_describe=False)
        if self.multiprocess:
            from prometheus_client.multiprocess import MultiProcessCollector

            MultiProcessCollector(registry)
        else:
            registry.register(_Forward(self._registry))
        for collector in collectors:
            registry.register(collector)
        return generate_latest(registry)


class _Forward:
    """A collector that yields another registry's metrics (to combine registries)."""

    def __init__(self, registry: Any) -> None:
        self._registry = registry

    def collect(self) -> Iterator[Any]:
        yield from self._registry.collect()


class BudgetCollector:
    """The budget's figures, and the quotas of some clients, read from the ledger.

    Parameters
    ----------
    budget : PrivacyAccountant
        The global budget.
    row_cost : tuple of float or None
        ``(epsilon, delta)`` of one answered row, if the estimator states one.
    quotas : dict of str to PrivacyAccountant
        The clients whose quota to report, by name.
    """

    def __init__(self, budget: PrivacyAccountant, row_cost, quotas: dict) -> None:
        self.budget = budget
        self.row_cost = row_cost
        self.quotas = quotas

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily

        budget = self.budget
        epsilon_spent, delta_spent = budget.spent()
        rows = budget.queries_answered
        figures = {
            "epsilon_cap": budget.epsilon,
            "epsilon_spent": epsilon_spent,
            "epsilon_remaining": max(budget.epsilon - epsilon_spent, 0.0),
            "delta_cap": budget.delta,
            "delta_spent": delta_spent,
            "delta_remaining": max(budget.delta - delta_spent, 0.0),
            "rows_charged": rows,
        }
        if budget.composition == "zcdp":
            uncapped = math.isinf(budget.epsilon)
            cap = budget.epsilon if uncapped else rho_cap(budget.epsilon, budget.delta)
            spent = budget.rho_spent
            figures.update(rho_cap=cap, rho_spent=spent, rho_remaining=max(cap - spent, 0.0))
        if self.row_cost is not None:
            figures["rows_remaining"] = budget.remaining_queries(*self.row_cost)
        for key, value in figures.items():
            yield GaugeMetricFamily(f"skprivpred_budget_{key}", _HELP[key], value=float(value))
        if not self.quotas:
            return
        families = {
            key: GaugeMetricFamily(
                f"skprivpred_client_quota_{key}", _QUOTA_HELP[key], labels=["client"]
            )
            for key in ("epsilon_cap", "epsilon_spent", "epsilon_remaining", "rows_charged")
        }
        if self.row_cost is not None:
            families["rows_remaining"] = GaugeMetricFamily(
                "skprivpred_client_quota_rows_remaining",
                _QUOTA_HELP["rows_remaining"],
                labels=["client"],
            )
        for client in sorted(self.quotas):
            quota = self.quotas[client]
            spent = quota.spent()[0]
            values = {
                "epsilon_cap": quota.epsilon,
                "epsilon_spent": spent,
                "epsilon_remaining": max(quota.epsilon - spent, 0.0),
                "rows_charged": quota.queries_answered,
            }
            if self.row_cost is not None:
                values["rows_remaining"] = quota.remaining_queries(*self.row_cost)
            for key, family in families.items():
                family.add_metric([client], float(values[key]))
        yield from families.values()


_HELP = {
    "epsilon_cap": "Total epsilon of the budget",
    "epsilon_spent": "Epsilon spent so far, as the ledger records it",
    "epsilon_remaining": "Epsilon left before the budget refuses",
    "delta_cap": "Total delta of the budget",
    "delta_spent": "Delta spent so far",
    "delta_remaining": "Delta left before the budget refuses",
    "rho_cap": "zCDP rho whose tight conversion is the (epsilon, delta) cap",
    "rho_spent": "zCDP rho of the charges composed as zCDP so far",
    "rho_remaining": "rho left, if every further charge composes as zCDP",
    "rows_charged": "Rows charged so far (query rows; for a one-release model, its fit release)",
    "rows_remaining": "Query rows that still fit, at the cost of one answered row",
}

_QUOTA_HELP = {
    "epsilon_cap": "A client's share of the budget (--quota-epsilon)",
    "epsilon_spent": "Epsilon a client's answers have spent of its share",
    "epsilon_remaining": "Epsilon left of a client's share",
    "rows_charged": "Query rows charged to a client's share",
    "rows_remaining": "Query rows that still fit a client's share",
}
