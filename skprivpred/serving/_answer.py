"""The answering core of the service, apart from its HTTP layer.

``_Answerer.answer`` charges the global budget and the client's quota in one
transaction and answers; ``_Refused`` is a request answered with an error status.
The spawned computation child (:mod:`._compute`) imports this module, never the
Starlette application (:mod:`._app`).
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np

from ..accounting._accountant import PrivacyAccountant
from ..exceptions import BudgetExhaustedError, HorizonExhaustedError
from ._clients import Clients
from ._model import budget_of, final_step, per_row_guarantee


class _Refused(Exception):
    """A request answered with an error status and a JSON body; nothing was charged."""

    def __init__(self, status: int, error: str, **details: Any) -> None:
        super().__init__(error)
        self.status, self.body = status, {"error": error, **details}


#: The ``binding_limit`` of a 429 body, for each limit a charge can meet.
_LIMIT_NAMES = {
    "the privacy budget": "budget",
    "the query horizon": "horizon",
    "this client's quota": "quota",
}


def _client_figures(quota, spent: float) -> dict:
    """A client's own quota figures, as ``/budget`` and the answers of ``/predict`` add them."""
    return {
        "client_epsilon_spent": spent,
        "client_epsilon_remaining": max(quota.epsilon - spent, 0.0),
    }


def _refusal_message(what: str, used_up: str, remaining: int | None, asked: int) -> str:
    """What a 429 body says: the same as its ``asked_rows`` and ``remaining_rows``."""
    if remaining == 0:
        return f"{what} {used_up}; nothing was charged."
    if remaining is not None and remaining < asked:
        left = "1 row" if remaining == 1 else f"{remaining} rows"
        return f"{what} has {left} left, fewer than the {asked} asked; nothing was charged."
    return f"{what} cannot pay for these rows now; nothing was charged."


class _Answerer:
    """What answers a query: the estimator, its budget and the clients' quotas.

    The answering core, without the web framework: the spawned computation child
    (:mod:`._compute`) builds one, and the HTTP layer's ``_Service`` (:mod:`._app`)
    extends it with what the endpoints need.
    """

    def __init__(self, estimator, clients: Clients) -> None:
        self.estimator = estimator
        self.clients = clients
        self.budget = budget_of(estimator)
        self.row_cost: tuple[float, float] | None = None
        try:
            self.row_cost = per_row_guarantee(estimator)
        except ValueError as exc:
            self.row_cost_problem = str(exc)

    def answer(self, X, client: str | None) -> dict:
        """Answer ``X``, charging the global budget and the client's quota in one transaction.

        The estimator checks the rows before it charges (bad rows: 422, nothing
        charged anywhere). Its charge of the global budget also charges the
        client's quota, in the same ledger transaction
        (:meth:`~skprivpred.PrivacyAccountant.charging_also`): a quota pays for
        exactly the rows the global budget pays for, and a refusal of either
        charges neither.

        Returns the body of the answer: the predictions and the global
        budget's epsilon spent right after their charge was committed, as that
        charge's transaction left it
        (:meth:`~skprivpred.PrivacyAccountant.recording`): no second read of
        the ledger. With quotas, also the client's own epsilon spent and
        remaining after the same transaction.
        """
        n_rows = X.shape[0]
        quota = self.clients.quota(client)
        linked = contextlib.nullcontext() if quota is None else self.budget.charging_also(quota)
        own = contextlib.nullcontext() if quota is None else quota.recording()
        try:
            with linked, self.budget.recording() as charged, own as client_charged:
                predictions = self.estimator.predict(X)
        except BudgetExhaustedError as exc:
            raise self._exhausted(
                n_rows,
                horizon=isinstance(exc, HorizonExhaustedError),
                quota=quota,
                client=client,
                by_quota=quota is not None and exc.budget == quota.name,
            ) from None
        except (ValueError, TypeError):
            # The estimator validates before it charges. Its message is not passed on: a
            # teacher's error (an unknown category, say) could describe its training rows.
            raise _Refused(
                422, "the model cannot read these rows (check types and values)."
            ) from None
        spent = charged.epsilon_spent
        if spent is None:  # answered without a charge (a student after the hand-off)
            spent = self.budget.epsilon_spent
        body = {"predictions": np.asarray(predictions).tolist(), "epsilon_spent": spent}
        if quota is not None:
            assert client_charged is not None
            client_spent = client_charged.epsilon_spent
            if client_spent is None:
                client_spent = quota.epsilon_spent
            body.update(_client_figures(quota, client_spent))
        return body

    def _exhausted(
        self,
        n_rows: int,
        horizon: bool = False,
        quota: PrivacyAccountant | None = None,
        client: str | None = None,
        by_quota: bool = False,
    ) -> _Refused:
        """The 429 of a refused charge: the binding limit, and rows a retry can have.

        Every limit that applies is read (the global budget, the query horizon,
        the client's quota): ``remaining_rows`` is the smallest, so that a
        retry asking that many rows is not refused again by another limit,
        and the message names the limit that gives it. ``horizon`` and
        ``by_quota`` say which limit refused the charge (named on a tie).
        """
        limits: list[tuple[str, str, int]] = []
        if self.row_cost is not None:
            budget_left = self.budget.remaining_queries(*self.row_cost)
            limits.append(("the privacy budget", "is spent", budget_left))
        horizon_left = getattr(final_step(self.estimator), "queries_remaining_", None)
        if horizon_left is not None:
            limits.append(("the query horizon", "is reached", int(horizon_left)))
        if quota is not None and self.row_cost is not None:
            quota_left = quota.remaining_queries(*self.row_cost)
            limits.append(("this client's quota", "is spent", quota_left))
        refusing = (
            "this client's quota"
            if by_quota
            else "the query horizon"
            if horizon
            else "the privacy budget"
        )
        if not limits:
            return _Refused(
                429,
                _refusal_message(refusing, "is spent", None, n_rows),
                asked_rows=n_rows,
                remaining_rows=None,
            )
        # The smallest limit binds; on a tie, the one that refused the charge is named.
        what, used_up, remaining = min(limits, key=lambda limit: (limit[2], limit[0] != refusing))
        details: dict[str, Any] = {"asked_rows": n_rows, "remaining_rows": remaining}
        if what == "this client's quota":
            details["client"] = client
        details["binding_limit"] = _LIMIT_NAMES[what]
        return _Refused(429, _refusal_message(what, used_up, remaining, n_rows), **details)

    def remaining_rows(self) -> int | None:
        remaining = []
        if self.row_cost is not None:
            remaining.append(self.budget.remaining_queries(*self.row_cost))
        horizon = getattr(final_step(self.estimator), "queries_remaining_", None)
        if horizon is not None:
            remaining.append(int(horizon))
        return min(remaining) if remaining else None
