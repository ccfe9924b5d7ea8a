"""The privacy accountant: a budget shared across queries, estimators, copies and
processes, charged before any noise is drawn (its ledger backends: :mod:`._ledger`).
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import os
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from numbers import Integral
from typing import Any, cast

from ..exceptions import (
    BudgetExhaustedError,
    HorizonExhaustedError,
    InvalidParameterError,
    LedgerError,
)
from ..utils._param_validation import (
    Data,
    Options,
    StrOptions,
    validate_parameter_constraints,
)
from ._composition import (
    _COUNT,
    _HALF_OPEN_UNIT,
    _OPEN_UNIT,
    _POSITIVE,
    _REL_TOL,
    _count,
    advanced_composition_epsilon,
    eps_of_rho,
)
from ._ledger import (
    JOURNAL_COLUMNS,
    Charge,
    Decide,
    Ledger,
    LedgerState,
    Mark,
    Step,
    Totals,
    mark_temporary,
    memory_ledger,
    open_ledger,
    open_ledger_url,
    redact,
    reopen_ledger,
    reopen_ledger_later,
    without_password,
)

__all__ = ["ChargeRecord", "PrivacyAccountant"]


#: The budgets linked by :meth:`PrivacyAccountant.charging_also` in this context:
#: ``((identity of the charged budget, budgets charged with it), ...)``.
_LINKED: contextvars.ContextVar[tuple[tuple[tuple[str, str, str], tuple[Any, ...]], ...]] = (
    contextvars.ContextVar("skprivpred_linked_budgets", default=())
)


@dataclass
class ChargeRecord:
    """What a budget's charges committed within :meth:`PrivacyAccountant.recording`.

    Attributes
    ----------
    rows : int
        Query rows charged to the budget in the block (``0``: no charge).
    epsilon_spent, delta_spent : float or None
        The budget's guarantee spent (as :meth:`PrivacyAccountant.spent`
        reports it) right after the block's last charge was committed,
        including that charge; ``None`` if nothing was charged in the block.
    """

    rows: int = 0
    epsilon_spent: float | None = None
    delta_spent: float | None = None
    _newest: int | None = field(default=None, repr=False, compare=False)  # its journal row


_RECORDS_LOCK = threading.Lock()


#: The open :meth:`PrivacyAccountant.recording` blocks of this context:
#: ``((identity of the recorded budget, its record), ...)``.
_RECORDING: contextvars.ContextVar[tuple[tuple[tuple[str, str, str], ChargeRecord], ...]] = (
    contextvars.ContextVar("skprivpred_charge_records", default=())
)


#: Names the ledger key file of accountants given none (the service's --ledger-key-file).
LEDGER_KEY_FILE_VARIABLE = "SKPRIVPRED_LEDGER_KEY_FILE"


def _key_file_from_environment() -> str | None:
    value = os.environ.get(LEDGER_KEY_FILE_VARIABLE)
    return os.path.abspath(value) if value else None


#: Set while an accountant is written to a file (a model file): its address loses its password.
_FOR_A_FILE: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "skprivpred_for_a_file", default=False
)


@contextlib.contextmanager
def ledger_addresses_without_passwords() -> Iterator[None]:
    """Within the block, accountants serialise their ledger's address without its password.

    For files that outlive the process (a model file): a password written there
    would be read by whoever reads the file. A process that loads such a copy
    supplies the password the way libpq finds one (``PGPASSFILE``,
    ``~/.pgpass``, ``PGPASSWORD``). Pickles made outside the block (joblib
    workers of this process) keep the full address.
    """
    token = _FOR_A_FILE.set(True)
    try:
        yield
    finally:
        _FOR_A_FILE.reset(token)


class PrivacyAccountant:
    """A privacy budget that query calls charge before they answer, kept in a ledger.

    What was spent lives in a *ledger*, not in this Python object: a SQLite
    file (the default), a PostgreSQL server, or, when asked for, this process's
    memory. Every copy of the accountant (``clone`` and ``copy.deepcopy`` of an
    estimator share this very object; pickle, joblib workers, other processes
    and restarts reopen the same ledger) charges one budget. A charge is one
    committed transaction, made before any noise is drawn: a crash can
    over-count what was spent, never under-count it.

    Parameters
    ----------
    epsilon : float, default=inf
        Total epsilon the accountant allows, > 0 (``inf``: no cap on epsilon,
        spending is still recorded).
    delta : float, default=0.0
        Total delta the accountant allows, in [0, 1).
    composition : {"basic", "advanced", "zcdp"}, default="basic"
        How per-row guarantees add up.

        - ``"basic"``: ``k`` releases that are ``(eps_i, delta_i)``-DP are
          ``(sum eps_i, sum delta_i)``-DP (Dwork & Roth, Thm 3.16).
        - ``"advanced"``: the advanced composition theorem (Dwork, Rothblum &
          Vadhan 2010; Dwork & Roth Thm 3.20): ``k`` adaptively chosen
          releases, each ``(eps0, delta0)``-DP, are also
          ``(eps0 sqrt(2 k ln(1/delta_prime)) + k eps0 (e^{eps0} - 1),
          k delta0 + delta_prime)``-DP. The theorem is stated for one per-row
          ``(eps0, delta0)``, so an advanced accountant takes every charge at the
          per-row guarantee of its first charge and refuses others with a
          ``ValueError`` (mixing per-row epsilons with an adaptive stopping rule
          needs privacy-filter theory; use ``"basic"``, which is valid for
          any mix). With one per-row guarantee the largest admissible ``k`` is
          fixed in advance, so stopping early is covered. The accountant
          reports whichever of the basic and the advanced pairs has the smaller
          epsilon while fitting the delta cap; both are valid.
        - ``"zcdp"``: zero-concentrated DP (Bun & Steinke 2016) with the tight
          conversion of :func:`eps_of_rho`. A pure ``epsilon``-DP charge carries
          ``rho = epsilon^2 / 2`` unless the mechanism states a smaller one (the
          soft-majority vote is bounded-range: ``rho = epsilon^2 / 8``); zCDP
          composes adaptively and a cap checked before each charge is a valid
          privacy filter (Feldman & Zrnic 2021). A charge with ``delta > 0``
          that states its ``rho`` (the Gaussian mechanism is ``rho``-zCDP)
          composes as zCDP too; other charges with ``delta > 0`` go to an
          ``(epsilon, delta)`` ledger composed by basic composition; the
          transcript is ``(eps_of_rho(sum rho, delta - sum delta_ledger) + sum
          eps_ledger, delta)``-DP, and also basic-composition DP: the accountant
          reports the smaller epsilon. Needs ``delta > 0``.
    delta_prime : float, default=None
        The slack ``delta_prime`` of advanced composition, in (0, 1). Required
        for ``composition="advanced"``, ignored otherwise; it must be below
        ``delta``.
    n_queries : int, default=None
        Optional cap on the number of query rows answered (the query horizon
        of everything this budget pays for).
    ledger : None, str, os.PathLike or PrivacyAccountant, default=None
        Where the spending lives.

        - ``None``: a new SQLite file in a per-user temporary directory, named
          by a random id. Every copy of the accountant *on this machine*
          (joblib workers, ``joblib.dump``/``load``, a second process) charges
          it, so ``cross_val_score(..., n_jobs=2)`` counts every answer. The
          file is deleted when the process that created the accountant exits;
          a copy that outlives it, or is opened on another machine, raises
          :class:`LedgerError`.
        - a file path, or ``"sqlite:///path/to/budget.db"``: a durable budget
          that survives restarts, shared by the processes of one machine
          (WAL mode, ``synchronous=FULL``, each charge in ``BEGIN IMMEDIATE``).
          ``name`` selects one budget inside the file.
        - ``"postgresql://user@host/db"``: one budget shared by processes on
          several machines (needs psycopg 3: ``pip install
          "skprivpred[postgres]"``, or ``pip install -e ".[postgres]"`` from a
          checkout); each charge locks the budget's row.
        - ``":memory:"``: this process only (threads share it; ``clone`` and
          ``deepcopy`` share the object, and so does a copy unpickled in this
          process). A copy unpickled in another process (a joblib or
          multiprocessing worker) and a forked child raise
          :class:`LedgerError` at their first use: a copy there would fork the
          budget.
        - another :class:`PrivacyAccountant`: its ledger, for a second budget
          beside it (a client's quota beside a service's budget, charged
          together with :meth:`charging_also`).
    name : str, default=None
        Which budget inside the ledger (``None``: ``"default"``). Creating an
        accountant on an existing budget attaches to it, with what it has
        spent, provided the terms (``epsilon``, ``delta``, ``composition``,
        ``delta_prime``, ``n_queries``) are the same; different terms raise a
        ``ValueError`` (a budget's terms never change).
    timeout : float, default=10.0
        Seconds a charge waits for a ledger that another writer holds locked
        (or for a server connection) before raising :class:`LedgerError`.
    ledger_key_file : str or os.PathLike, default=None
        A file holding a secret key (at least 16 bytes, owned by this user,
        mode 0600; kept outside the database): every journal row of the budget
        then carries an HMAC-SHA256 chained to the previous row, so that
        someone who can rewrite every row of the database, but has not the key,
        cannot rewrite the spending consistently. Fixed when the budget is
        created: a budget created with a key is charged only with that key, one
        created without a key (or migrated from an older ledger) takes none.
        ``None``: the file named by the ``SKPRIVPRED_LEDGER_KEY_FILE``
        environment variable, if it is set (the service's
        ``--ledger-key-file``), else no key. Only the file's path is kept (in
        pickles and model files), never the key. Not with ``":memory:"``.

    Attributes
    ----------
    queries_answered : int
        Number of query rows charged so far (read from the ledger).
    epsilon_spent : float
        Epsilon of the whole transcript so far.
    delta_spent : float
        Delta of the whole transcript so far.
    ledger_url : str
        The resolved address of the ledger (``":memory:"``, ``"sqlite:///..."``
        or the PostgreSQL URL).

    Notes
    -----
    A charge is checked and recorded in one transaction of the ledger, so
    concurrent calls from threads, processes and machines can never overspend.
    The ledger is tamper-evident: each journal row carries the sums after it;
    every charge and every read compares the budget's stored sums with its
    newest journal row, and an accountant checks the whole journal once before
    its first use (when it is created, or first used after unpickling). An
    edited ledger raises :class:`LedgerError` and nothing is charged.
    The accountant remembers the newest charge of its budget that it has seen
    (and a pickled copy carries it): a ledger that no longer holds it was
    replaced by an older copy, which would roll spending back, and every
    operation then raises :class:`LedgerError`. A ledger is never restored
    from a backup.
    Spending comparisons allow a relative floating-point slack of ``1e-12``.
    The totals of every composition are recomputed by this class from the sums
    the ledger stores beside its journal of charges (:meth:`history`).

    Examples
    --------
    >>> acc = PrivacyAccountant(epsilon=1.0)
    >>> acc.charge(n_rows=4, epsilon=0.25)
    >>> acc.epsilon_spent, acc.queries_answered
    (1.0, 4)
    """

    _parameter_constraints: dict = {
        "epsilon": [_POSITIVE, Options(float, [math.inf])],
        "delta": [_HALF_OPEN_UNIT],
        "composition": [StrOptions({"basic", "advanced", "zcdp"})],
        "delta_prime": [_OPEN_UNIT, None],
        "n_queries": [_COUNT, None],
        "name": [str, None],
        "timeout": [_POSITIVE],
        "ledger_key_file": [str, Data(os.PathLike), None],
    }

    # The newest journal row of this budget seen by this object (and its pickled copies),
    # and the largest count seen of each horizon: a ledger behind them was rolled back.
    _seen: Mark | None = None
    _verified: bool = False
    ledger_key_file: str | None
    _horizons_seen: dict[str, int]
    _ledger: Ledger
    _temporary: bool

    def __init__(
        self,
        epsilon: float = math.inf,
        delta: float = 0.0,
        *,
        composition: str = "basic",
        delta_prime: float | None = None,
        n_queries: int | None = None,
        ledger: str | os.PathLike | PrivacyAccountant | None = None,
        name: str | None = None,
        timeout: float = 10.0,
        ledger_key_file: str | os.PathLike | None = None,
    ) -> None:
        validate_parameter_constraints(
            self._parameter_constraints,
            {
                "epsilon": epsilon,
                "delta": delta,
                "composition": composition,
                "delta_prime": delta_prime,
                "n_queries": n_queries,
                "name": name,
                "timeout": timeout,
                "ledger_key_file": ledger_key_file,
            },
            type(self).__name__,
        )
        self.epsilon = float(epsilon)
        self.delta = float(delta)
        if composition == "zcdp" and self.delta == 0:
            raise InvalidParameterError(
                "composition='zcdp' needs a delta budget in (0, 1), got delta=0.0."
            )
        if composition == "advanced" and delta_prime is None:
            raise InvalidParameterError(
                "composition='advanced' needs delta_prime in (0, 1), got None."
            )
        if composition == "advanced" and float(cast(float, delta_prime)) >= self.delta:
            raise InvalidParameterError(
                f"delta_prime must be smaller than the delta budget, got "
                f"delta_prime={delta_prime!r} and delta={self.delta!r}."
            )
        if name == "":
            raise InvalidParameterError("name must be a non-empty string or None, got ''.")
        self.composition = composition
        self.delta_prime = None if delta_prime is None else float(delta_prime)
        self.n_queries = None if n_queries is None else int(n_queries)
        self.name = "default" if name is None else name
        self.timeout = float(timeout)
        self._horizons_seen = {}
        if isinstance(ledger, PrivacyAccountant):
            if ledger_key_file is not None:
                raise InvalidParameterError(
                    "ledger_key_file cannot be given with ledger=<a PrivacyAccountant>: the "
                    "budget is kept in that accountant's ledger, with its key."
                )
            self.ledger_key_file = ledger.ledger_key_file
            self._ledger, self._temporary = ledger._ledger, ledger._temporary
        else:
            if ledger_key_file is None and not (isinstance(ledger, str) and ledger == ":memory:"):
                ledger_key_file = _key_file_from_environment()
            self.ledger_key_file = (
                None if ledger_key_file is None else os.path.abspath(os.fspath(ledger_key_file))
            )
            self._ledger, self._temporary = open_ledger(ledger, self.timeout, self.ledger_key_file)
        # create() checks the whole journal of an existing budget (LedgerError if edited).
        self._budget_id, self._seen = self._ledger.create(self.name, self._terms())
        self._verified = True
        if self._temporary:
            mark_temporary(self._ledger)

    def _terms(self) -> dict:
        """The budget's terms, stored with it in the ledger."""
        return {
            "epsilon": self.epsilon,
            "delta": self.delta,
            "composition": self.composition,
            "delta_prime": self.delta_prime,
            "n_queries": self.n_queries,
        }

    @property
    def ledger_url(self) -> str:
        """The ledger's resolved address."""
        return self._ledger.url

    @property
    def durable(self) -> bool:
        """Whether the spending outlives this process: a file path or a server ledger.

        False for ``":memory:"`` and for the default ledger, a temporary file
        deleted when the process that created the accountant exits.
        """
        return self._ledger.persistent and not self._temporary

    def relocate(self, ledger: str | os.PathLike) -> None:
        """Charge this very budget at another address of its ledger, from now on.

        For the same SQLite file mounted under another path, or the same
        PostgreSQL database reached under another address (a service started
        elsewhere). The budget must be there with the identity it was created
        with: it is never created, so a wrong address raises
        :class:`LedgerError` and leaves the accountant as it was.

        Parameters
        ----------
        ledger : str or os.PathLike
            A file path, ``"sqlite:///path"`` or ``"postgresql://..."``.
        """
        if isinstance(ledger, str) and ledger == ":memory:":
            raise ValueError("relocate needs a file or server ledger, got ':memory:'.")
        url = open_ledger_url(ledger)
        moved = reopen_ledger(url, self.timeout, self.ledger_key_file)
        # Raises LedgerError if it is not this budget, an older copy of it, or edited.
        moved.verify(self.name, self._budget_id)
        state = moved.state(self.name, self._budget_id, seen=self._seen)
        self._ledger, self._temporary = moved, False
        self._saw(state.mark)

    # -- sharing and persistence -------------------------------------------------
    def __copy__(self) -> PrivacyAccountant:
        return self

    def __deepcopy__(self, memo) -> PrivacyAccountant:
        return self

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_horizons_seen"] = dict(self._horizons_seen)
        if self._ledger.persistent:
            url = self._ledger.url
            state["_ledger"] = without_password(url) if _FOR_A_FILE.get() else url
        else:  # this process's memory: only a copy unpickled in this very process reattaches
            ledger = cast(Any, self._ledger)
            state["_ledger"] = ("memory", ledger.key, ledger.pid)
        return state

    def __setstate__(self, state: dict) -> None:
        state = dict(state)
        # A copy reopens the same ledger and never creates a budget: if the ledger or the
        # budget is gone, the next charge raises LedgerError instead of starting from zero.
        if isinstance(state["_ledger"], tuple):
            state["_ledger"] = memory_ledger(*state["_ledger"][1:])
        else:
            # The environment's key file (the service's --ledger-key-file) wins over the
            # path the copy carries: the key may live elsewhere on the machine that loads it.
            key_file = _key_file_from_environment() or state.get("ledger_key_file")
            state["ledger_key_file"] = key_file
            state["_ledger"] = reopen_ledger_later(state["_ledger"], state["timeout"], key_file)
        state.setdefault("_horizons_seen", {})
        state.setdefault("ledger_key_file", None)
        state["_verified"] = False  # the whole journal is checked before the copy's first use
        self.__dict__.update(state)

    # -- what this object has seen of its budget -----------------------------------
    def _saw(self, mark: Mark | None) -> None:
        """Remember the budget's newest journal row (only ever a newer one)."""
        seen = self._seen
        if mark is not None and (seen is None or mark.id > seen.id):
            self._seen = mark

    def check_ledger(self) -> None:
        """Check the budget's whole journal now (see Notes); raise if the ledger was edited.

        Every journal row's sums must follow from the previous row's and its
        charge, the stored sums and horizons must equal those of the newest rows,
        and, with a ledger key, every row's MAC must match. A service calls it
        before it starts answering.

        Raises
        ------
        LedgerError
            If the ledger cannot be used, or fails the check.
        """
        self._ledger.verify(self.name, self._budget_id)
        self._verified = True

    def _check_journal(self) -> None:
        """Check the whole journal once, before a copy's first use (create() checked it)."""
        if not self._verified:
            self._ledger.verify(self.name, self._budget_id)
            self._verified = True

    def _state(self, horizon_key: str | None = None) -> LedgerState:
        """The budget as stored, refusing a ledger older than what this object has seen."""
        self._check_journal()
        state = self._ledger.state(self.name, self._budget_id, horizon_key, seen=self._seen)
        self._saw(state.mark)
        if horizon_key is not None:
            self._check_horizon_not_rolled_back(horizon_key, state.horizon_answered)
        return state

    def _check_horizon_not_rolled_back(self, key: str, answered: int) -> None:
        if answered < self._horizons_seen.get(key, 0):
            raise LedgerError(
                f"the ledger {redact(self.ledger_url)} counts {_count(answered, 'row')} "
                f"answered in a horizon where this accountant has seen "
                f"{self._horizons_seen[key]}: the ledger was replaced by an older copy of "
                "itself (a restored backup), which rolls the count back. Nothing was "
                "charged. A ledger is never restored from a backup."
            )

    def _saw_horizon(self, key: str, answered: int) -> None:
        if answered > self._horizons_seen.get(key, 0):
            self._horizons_seen[key] = answered

    def _check_reachable(self) -> None:
        """Raise :class:`LedgerError` now if this process cannot use an in-memory ledger.

        No I/O: a file or server ledger is checked at its first charge.
        """
        if not self._ledger.persistent:
            self._ledger.state(self.name, self._budget_id)

    @property
    def _ledger_key(self) -> str:
        """Which ledger: its address, or the identity of an in-memory one."""
        key = getattr(self._ledger, "key", None)
        return self._ledger.url if key is None else f":memory:{key}"

    def _identity(self) -> tuple[str, str, str]:
        return (self._ledger_key, self.name, self._budget_id)

    # -- the arithmetic of composition -------------------------------------------
    def _guarantees(self, totals: Totals, row_epsilon: float | None) -> list[tuple[float, float]]:
        """Every valid (epsilon, delta) pair for a transcript with these totals."""
        pairs = [(totals.epsilon, totals.delta)]
        if self.composition == "advanced" and totals.rows > 0:
            # Both are set under advanced composition once a row is charged.
            row_eps, delta_prime = cast(float, row_epsilon), cast(float, self.delta_prime)
            adv = advanced_composition_epsilon(row_eps, totals.rows, delta_prime)
            pairs.append((adv, totals.delta + delta_prime))
        if self.composition == "zcdp" and totals.rho > 0:
            delta_z = self.delta - totals.ledger_delta
            if delta_z > 0:
                eps = eps_of_rho(totals.rho, delta_z) + totals.ledger_epsilon
                pairs.append((eps, self.delta))
        return pairs

    def _within_budget(self, totals: Totals, row_epsilon: float | None) -> bool:
        return any(self._fits(p) for p in self._guarantees(totals, row_epsilon))

    def _best(self, totals: Totals, row_epsilon: float | None) -> tuple[float, float]:
        """The valid pair to report: the smallest epsilon among those within the cap."""
        pairs = self._guarantees(totals, row_epsilon)
        return min([p for p in pairs if self._fits(p)] or pairs)

    def _fits(self, pair) -> bool:
        eps, delta = pair
        return eps <= self.epsilon * (1 + _REL_TOL) and delta <= self.delta * (1 + _REL_TOL)

    @staticmethod
    def _totals_after(
        t: Totals, n_rows: int, epsilon: float, delta: float, rho: float | None
    ) -> Totals:
        # A pure charge, or one that states its rho (a Gaussian mechanism is
        # rho-zCDP), composes as zCDP; any other (epsilon, delta) charge goes to
        # the (epsilon, delta) ledger.
        zcdp = delta == 0 or rho is not None
        if rho is None:
            rho = epsilon**2 / 2.0  # pure epsilon-DP implies epsilon^2/2-zCDP
        return Totals(
            t.rows + n_rows,
            t.epsilon + n_rows * epsilon,
            t.delta + n_rows * delta,
            t.rho + (n_rows * rho if zcdp else 0.0),
            t.ledger_epsilon + (0.0 if zcdp else n_rows * epsilon),
            t.ledger_delta + (0.0 if zcdp else n_rows * delta),
        )

    def _validate_charge(self, n_rows, epsilon, delta, rho=None):
        validate_parameter_constraints(
            {
                "n_rows": [_COUNT],
                "epsilon": [_POSITIVE],
                "delta": [_HALF_OPEN_UNIT],
                "rho": [_POSITIVE, None],
            },
            {"n_rows": n_rows, "epsilon": epsilon, "delta": delta, "rho": rho},
            "PrivacyAccountant.charge",
        )
        epsilon, delta = float(epsilon), float(delta)
        if rho is not None:
            rho = float(rho)
            if delta == 0:
                rho = min(rho, epsilon**2 / 2.0)  # pure epsilon-DP is epsilon^2/2-zCDP anyway
        return int(n_rows), epsilon, delta, rho

    def _check_row_guarantee(self, stored, epsilon: float, delta: float) -> None:
        """Advanced composition takes one per-row guarantee."""
        if self.composition == "advanced" and stored not in (None, (epsilon, delta)):
            eps0, delta0 = stored
            raise ValueError(
                f"this accountant uses advanced composition, which accounts for one per-row "
                f"guarantee: it was first charged at epsilon={eps0!r}, delta={delta0!r} per row "
                f"and cannot take epsilon={epsilon!r}, delta={delta!r}; use "
                "composition='basic' to mix per-row guarantees."
            )

    def _decide(self, state: LedgerState, n_rows, epsilon, delta, rho, horizon):
        """The new sums after a charge, or the refusal (raised); runs inside the transaction."""
        self._check_row_guarantee(state.row_guarantee, epsilon, delta)
        self._check_horizon(state, n_rows, horizon)
        totals = self._totals_after(state.totals, n_rows, epsilon, delta, rho)
        if self.n_queries is not None and totals.rows > self.n_queries:
            raise self._refusal(
                f"answering {_count(n_rows, 'more query row')} would exceed n_queries="
                f"{self.n_queries} ({state.totals.rows} answered so far)."
            )
        if not self._within_budget(totals, epsilon):
            eps_after, delta_after = min(self._guarantees(totals, epsilon))
            remaining = self._remaining(state, epsilon, delta, rho)
            fit = "still fits" if remaining == 1 else "still fit"
            raise self._refusal(
                f"answering {_count(n_rows, 'more query row')} at epsilon={epsilon!r}, "
                f"delta={delta!r} per row would spend (epsilon={eps_after:.6g}, "
                f"delta={delta_after:.3g}), over the budget (epsilon={self.epsilon!r}, "
                f"delta={self.delta!r}); {_count(remaining, 'row')} at that cost {fit}."
            )
        row = (epsilon, delta) if self.composition == "advanced" and n_rows > 0 else None
        return totals, row or state.row_guarantee

    def _decide_as_linked(self, state: LedgerState, n_rows, epsilon, delta, rho):
        """:meth:`_decide` for a budget charged along with another: its refusal names it."""
        try:
            return self._decide(state, n_rows, epsilon, delta, rho, None)
        except BudgetExhaustedError as refusal:
            raise self._refusal(f"the budget {self.name!r} refuses: {refusal}") from None

    def _refusal(self, message: str, kind: type = BudgetExhaustedError) -> BudgetExhaustedError:
        """A refusal that names this budget (its ``budget`` attribute)."""
        error = kind(message)
        error.budget = self.name
        return error

    def _check_horizon(self, state: LedgerState, n_rows: int, horizon) -> None:
        if horizon is None:
            return
        self._check_horizon_not_rolled_back(horizon[0], state.horizon_answered)
        if state.horizon_answered + n_rows > horizon[1]:
            remaining = max(horizon[1] - state.horizon_answered, 0)
            remain = "remains" if remaining == 1 else "remain"
            raise self._refusal(
                f"answering {_count(n_rows, 'query row')} would cross the horizon "
                f"n_queries={horizon[1]} of this fitted estimator (counted in the ledger for "
                f"all its copies); {_count(remaining, 'row')} {remain}.",
                HorizonExhaustedError,
            )

    def _remaining(self, state: LedgerState, epsilon, delta, rho) -> int:
        self._check_row_guarantee(state.row_guarantee, epsilon, delta)
        rows = state.totals.rows
        limit = sys.maxsize if self.n_queries is None else self.n_queries - rows

        def fits(k: int) -> bool:
            return self._within_budget(
                self._totals_after(state.totals, k, epsilon, delta, rho), epsilon
            )

        if fits(limit):
            return max(limit, 0)
        lo, hi = 0, 1
        while fits(hi):
            lo, hi = hi, hi * 2
        while hi - lo > 1:  # invariant: fits(lo), not fits(hi)
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if fits(mid) else (lo, mid)
        return lo

    # -- spending ----------------------------------------------------------------
    def can_charge(
        self, n_rows: int, epsilon: float, delta: float = 0.0, rho: float | None = None
    ) -> bool:
        """Whether a charge of ``n_rows`` rows at ``(epsilon, delta)`` each would fit now.

        Parameters
        ----------
        n_rows : int
            Number of query rows.
        epsilon : float
            Per-row epsilon, > 0.
        delta : float, default=0.0
            Per-row delta, in [0, 1).
        rho : float, default=None
            Per-row zCDP parameter: of a pure charge, if smaller than the generic
            ``epsilon^2 / 2``; of a charge with ``delta > 0``, when the mechanism
            is also ``rho``-zCDP (the Gaussian mechanism), which then composes as
            zCDP instead of by basic composition (used by ``composition="zcdp"``
            only).

        Returns
        -------
        bool
            True when :meth:`charge` with these arguments would succeed now
            (another process may charge in between).
        """
        n_rows, epsilon, delta, rho = self._validate_charge(n_rows, epsilon, delta, rho)
        state = self._state()
        try:
            self._decide(state, n_rows, epsilon, delta, rho, None)
        except BudgetExhaustedError:
            return False
        return True

    def _refuse_if_over(
        self,
        n_rows: int,
        epsilon: float,
        delta: float = 0.0,
        rho: float | None = None,
        *,
        horizon: tuple[str, int] | None = None,
    ) -> None:
        """Raise the refusal that :meth:`charge` would raise now; record nothing.

        The same decisions as :meth:`charge` (this budget with the horizon, and
        the budgets :meth:`charging_also` links to it), on the ledger as stored,
        outside a transaction: a pre-check for a caller that must refuse a
        spent budget before doing any work. The charge decides again (another
        process may spend in between).
        """
        n_rows, epsilon, delta, rho = self._validate_charge(n_rows, epsilon, delta, rho)
        self._decide(
            self._state(None if horizon is None else horizon[0]),
            n_rows,
            epsilon,
            delta,
            rho,
            horizon,
        )
        for other in self._linked():
            other._decide_as_linked(other._state(), n_rows, epsilon, delta, rho)

    def charge(
        self,
        n_rows: int,
        epsilon: float,
        delta: float = 0.0,
        rho: float | None = None,
        *,
        horizon: tuple[str, int] | None = None,
        source: str | None = None,
    ) -> None:
        """Record ``n_rows`` releases, each ``(epsilon, delta)``-DP, or refuse.

        The check and the update are one transaction of the ledger: it is
        committed before this method returns, so the caller draws its noise
        only once the spending is durable.

        Parameters
        ----------
        n_rows : int
            Number of query rows about to be answered.
        epsilon : float
            Per-row epsilon, > 0.
        delta : float, default=0.0
            Per-row delta, in [0, 1).
        rho : float, default=None
            Per-row zCDP parameter: of a pure charge, if smaller than the generic
            ``epsilon^2 / 2``; of a charge with ``delta > 0``, when the mechanism
            is also ``rho``-zCDP (the Gaussian mechanism), which then composes as
            zCDP instead of by basic composition (used by ``composition="zcdp"``
            only).
        horizon : tuple of (str, int), default=None
            ``(key, n_queries)``: also count the rows against the public
            horizon ``key`` of a fitted estimator, in the same transaction.
        source : str, default=None
            What is charging (an estimator's class name), kept in the journal.

        Raises
        ------
        BudgetExhaustedError
            If the charge would exceed the budget
            (:class:`HorizonExhaustedError` if it would cross the horizon);
            nothing is recorded then.
        LedgerError
            If the ledger cannot be used; nothing is recorded then.
        ValueError
            If an argument is invalid, or an advanced-composition accountant is
            charged at a second per-row guarantee; nothing is recorded then.
        """
        n_rows, epsilon, delta, rho = self._validate_charge(n_rows, epsilon, delta, rho)
        pure_rho = epsilon**2 / 2.0 if rho is None else rho
        record = Charge(n_rows, epsilon, delta, pure_rho if delta == 0 else None, source)
        counted: list[int] = []  # the horizon's count as the transaction read it
        linked = self._linked()
        # Each budget's decision, per attempt of the transaction (the last one committed).
        decided: list[list] = [[] for _ in range(1 + len(linked))]

        def decide(state: LedgerState):
            counted.append(state.horizon_answered)
            decided[0].append(self._decide(state, n_rows, epsilon, delta, rho, horizon))
            return decided[0][-1]

        def decide_linked(other: PrivacyAccountant, outcomes: list) -> Decide:
            def decide(state: LedgerState):
                outcomes.append(other._decide_as_linked(state, n_rows, epsilon, delta, rho))
                return outcomes[-1]

            return decide

        steps = [self._step(decide, record, horizon)]
        steps += [
            other._step(decide_linked(other, outcomes), record)
            for other, outcomes in zip(linked, decided[1:])
        ]
        marks = self._commit([self, *linked], steps)
        if horizon is not None:
            # The ledger's count is now at least what this charge brought it to.
            self._saw_horizon(horizon[0], counted[-1] + n_rows)
        if _RECORDING.get():
            for budget, outcomes, mark in zip([self, *linked], decided, marks):
                assert mark is not None  # a recorded charge writes a journal row
                totals, guarantee = outcomes[-1]
                budget._record_charge(n_rows, totals, guarantee, mark)

    def _step(self, decide: Decide, charge: Charge, horizon=None, *, record=True) -> Step:
        """This budget's part of a transaction (its refusals come from :meth:`_refusal`)."""
        return Step(self.name, self._budget_id, decide, charge, horizon, record, self._seen)

    def _record_charge(
        self, n_rows: int, totals: Totals, guarantee: tuple[float, float] | None, mark: Mark
    ) -> None:
        """Note a committed charge, and the sums it left, in this budget's open records."""
        identity = self._identity()
        records = [record for owner, record in _RECORDING.get() if owner == identity]
        if not records:
            return
        spent = self._best(totals, None if guarantee is None else guarantee[0])
        with _RECORDS_LOCK:  # a context copied into several threads shares its records
            for record in records:
                record.rows += n_rows
                if record._newest is None or mark.id > record._newest:  # commit order
                    record._newest = mark.id
                    record.epsilon_spent, record.delta_spent = spent

    def _commit(self, budgets: list[PrivacyAccountant], steps: list[Step]) -> list[Mark | None]:
        for budget in budgets:
            budget._check_journal()
        marks = self._ledger.transact(steps)
        for budget, mark in zip(budgets, marks):
            budget._saw(mark)
        return marks

    def _linked(self) -> list[PrivacyAccountant]:
        """The budgets that :meth:`charging_also` links to this one here (this context)."""
        identity = self._identity()
        linked: dict[tuple[str, str, str], PrivacyAccountant] = {}
        for owner, others in _LINKED.get():
            if owner == identity:
                for other in others:
                    linked.setdefault(other._identity(), other)
        return list(linked.values())

    @contextlib.contextmanager
    def charging_also(self, *others: PrivacyAccountant) -> Iterator[None]:
        """Within the block, every charge of this budget also charges ``others``, atomically.

        A service uses it to charge a client's quota exactly when, and for
        what, its global budget is charged: ``with budget.charging_also(quota):
        estimator.predict(X)``. Each charge of this budget made in the block
        (in this thread, or in a task that copies its ``contextvars`` context)
        charges every budget in ``others`` for the same rows at the same
        per-row ``epsilon``, ``delta`` and ``rho``, in the *same* ledger
        transaction: if any of them refuses, none is charged, and the
        :class:`BudgetExhaustedError` names the budget that refused (its
        ``budget`` attribute). A query that is refused before the charge (bad
        input) charges none of them. Horizons are counted in this budget only.

        Parameters
        ----------
        *others : PrivacyAccountant
            Budgets in this accountant's ledger (created with
            ``ledger=this_accountant``, or on the same file or server), other
            than this one.

        Yields
        ------
        None

        Raises
        ------
        ValueError
            If a budget is in another ledger, or is this budget.
        """
        identity = self._identity()
        for other in others:
            if not isinstance(other, PrivacyAccountant):
                raise TypeError(
                    f"charging_also takes PrivacyAccountant objects, got {type(other).__name__}."
                )
            if other._ledger_key != self._ledger_key:
                raise ValueError(
                    f"charging_also charges budgets in one transaction of one ledger, but "
                    f"{other.name!r} is in {redact(other.ledger_url)} and {self.name!r} in "
                    f"{redact(self.ledger_url)}; create it with ledger=<this accountant>."
                )
            if other._identity() == identity:
                raise ValueError(f"charging_also cannot link the budget {self.name!r} to itself.")
        token = _LINKED.set((*_LINKED.get(), (identity, tuple(others))))
        try:
            yield
        finally:
            _LINKED.reset(token)

    @contextlib.contextmanager
    def recording(self) -> Iterator[ChargeRecord]:
        """Within the block, note what each charge of this budget committed.

        A service answers a request with what it has spent without reading the
        ledger a second time: ``with budget.recording() as charges:
        estimator.predict(X)``, then ``charges.epsilon_spent`` is the budget's
        spending right after the request's charge was committed (a read made
        later would also count other processes' charges since). Charges made
        in the block in this thread, or in a task that copies its
        ``contextvars`` context, are recorded, including the charges that
        :meth:`charging_also` links to another budget's. Nothing is recorded
        for a refused charge.

        Yields
        ------
        ChargeRecord
            Filled in as the charges are committed: the rows charged in the
            block, and the ``(epsilon, delta)`` spent after its last charge.

        Examples
        --------
        >>> acc = PrivacyAccountant(epsilon=1.0, ledger=":memory:")
        >>> acc.charge(n_rows=1, epsilon=0.25)
        >>> with acc.recording() as charges:
        ...     acc.charge(n_rows=2, epsilon=0.25)
        >>> charges.rows, charges.epsilon_spent
        (2, 0.75)
        """
        record = ChargeRecord()
        token = _RECORDING.set((*_RECORDING.get(), (self._identity(), record)))
        try:
            yield record
        finally:
            _RECORDING.reset(token)

    def remaining_queries(
        self, epsilon: float, delta: float = 0.0, rho: float | None = None
    ) -> int:
        """Largest number of further rows at ``(epsilon, delta)`` each that fit the budget.

        Parameters
        ----------
        epsilon : float
            Per-row epsilon, > 0.
        delta : float, default=0.0
            Per-row delta, in [0, 1).
        rho : float, default=None
            Per-row zCDP parameter: of a pure charge, if smaller than the generic
            ``epsilon^2 / 2``; of a charge with ``delta > 0``, when the mechanism
            is also ``rho``-zCDP (the Gaussian mechanism), which then composes as
            zCDP instead of by basic composition (used by ``composition="zcdp"``
            only).

        Returns
        -------
        int
            The number of rows (``sys.maxsize`` caps an unlimited budget).
        """
        _, epsilon, delta, rho = self._validate_charge(0, epsilon, delta, rho)
        return self._remaining(self._state(), epsilon, delta, rho)

    def advance_horizon(
        self, n_rows: int, horizon: tuple[str, int], *, source: str | None = None
    ) -> None:
        """Count ``n_rows`` more steps of an already charged release against its horizon.

        For a release whose whole privacy cost was charged up front for at most
        ``n_queries`` steps (the rounds of a multiplicative-weights run): every
        copy of the estimator that takes further steps counts them here, in
        one transaction of the ledger, so that all copies together never take
        more than ``n_queries``. Spends nothing and writes no journal row.

        Parameters
        ----------
        n_rows : int
            Steps about to be taken, >= 0.
        horizon : tuple of (str, int)
            ``(key, n_queries)``.
        source : str, default=None
            What is counting (an estimator's class name).

        Raises
        ------
        HorizonExhaustedError
            If the steps would cross the horizon; nothing is counted then.
        """
        if isinstance(n_rows, bool) or not isinstance(n_rows, Integral) or n_rows < 0:
            raise ValueError(f"n_rows must be a non-negative integer, got {n_rows!r}.")

        counted: list[int] = []

        def decide(state: LedgerState):
            counted.append(state.horizon_answered)
            self._check_horizon(state, int(n_rows), horizon)
            return state.totals, state.row_guarantee

        step = Charge(int(n_rows), 0.0, 0.0, None, source)
        self._commit([self], [self._step(decide, step, horizon, record=False)])
        self._saw_horizon(horizon[0], counted[-1] + int(n_rows))

    def horizon_answered(self, key: str) -> int:
        """Rows answered so far within the horizon ``key`` (see :meth:`charge`)."""
        answered = self._state(key).horizon_answered
        self._saw_horizon(key, answered)
        return answered

    @property
    def queries_answered(self) -> int:
        """Number of query rows charged so far."""
        return self._state().totals.rows

    @property
    def epsilon_spent(self) -> float:
        """Epsilon of everything released so far (under the chosen composition)."""
        return self.spent()[0]

    @property
    def delta_spent(self) -> float:
        """Delta of everything released so far (under the chosen composition)."""
        return self.spent()[1]

    @property
    def rho_spent(self) -> float:
        """zCDP rho of the pure (delta = 0) releases so far, as the ledger sums it.

        Under ``composition="zcdp"`` this is the budget's zCDP spending (compare
        with :func:`rho_cap`); under the other compositions it is recorded but
        not what limits the budget.
        """
        return float(self._state().totals.rho)

    def spent(self) -> tuple[float, float]:
        """The ``(epsilon, delta)`` guarantee of everything released so far.

        Returns
        -------
        tuple of float
            ``(epsilon, delta)``; with advanced composition, the valid pair with
            the smaller epsilon among those within the delta budget.
        """
        state = self._state()
        row = state.row_guarantee
        return self._best(state.totals, None if row is None else row[0])

    def history(self) -> Any:
        """The journal: one record per charge, oldest first.

        Returns
        -------
        pandas.DataFrame or list of dict
            Columns ``time`` (UTC), ``name``, ``estimator``, ``rows``,
            ``epsilon``, ``delta`` and ``rho`` (per row; ``rho`` is given for
            pure charges only). A DataFrame if pandas is installed.
        """
        self._check_journal()
        records = self._ledger.journal(self.name, self._budget_id, seen=self._seen)
        try:
            import pandas as pd
        except ImportError:
            return records
        return pd.DataFrame.from_records(records, columns=list(JOURNAL_COLUMNS))

    def __repr__(self) -> str:
        terms = (
            f"epsilon={self.epsilon!r}, delta={self.delta!r}, composition={self.composition!r}, "
            f"ledger={redact(self.ledger_url)!r}, name={self.name!r}"
        )
        try:
            eps, delta = self.spent()
            rows = self.queries_answered
        except LedgerError:
            return f"PrivacyAccountant({terms}; ledger unavailable)"
        return (
            f"PrivacyAccountant({terms}; spent epsilon={eps:.6g}, delta={delta:.3g} "
            f"over {_count(rows, 'query row')})"
        )
