"""Saving a fitted private estimator for a service, and finding its budget."""

from __future__ import annotations

import math
import os
from typing import Any

import joblib
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from ..accounting import GuaranteeUnit, PrivacyAccountant, PrivacyGuarantee

__all__ = ["budget_of", "load_model", "per_row_guarantee", "save_model"]

_FORMAT = "skprivpred-model"
_VERSION = 1


def budget_of(estimator: BaseEstimator) -> PrivacyAccountant:
    """The one accountant that every answer of ``estimator`` charges.

    Looks through the parameters (a ``Pipeline``'s steps included) and the
    accountant that a fitted estimator with a query horizon keeps for it.

    Raises
    ------
    ValueError
        If there is no accountant, or more than one.
    """
    found: dict[int, PrivacyAccountant] = {}
    for value in estimator.get_params(deep=True).values():
        if isinstance(value, PrivacyAccountant):
            found[id(value)] = value
    for step in _steps(estimator):
        horizon = step.__dict__.get("_horizon_accountant")
        if isinstance(horizon, PrivacyAccountant):
            found[id(horizon)] = horizon
    if not found:
        raise ValueError(
            f"{type(estimator).__name__} has no PrivacyAccountant: a served model needs one, "
            "with a file or server ledger, since its budget is what protects the training "
            "data (for example accountant=PrivacyAccountant(epsilon=..., ledger='budget.db'))."
        )
    if len(found) > 1:
        raise ValueError(
            f"{type(estimator).__name__} charges {len(found)} different accountants; a served "
            "model must charge exactly one budget."
        )
    return next(iter(found.values()))


def _steps(estimator: BaseEstimator) -> list:
    steps = [estimator]
    for _, step in getattr(estimator, "steps", []):
        if step is not None and step != "passthrough":
            steps.append(step)
    return steps


def per_row_guarantee(estimator: BaseEstimator) -> tuple[float, float]:
    """The ``(epsilon, delta)`` that one answered row costs (for per-client quotas).

    Raises
    ------
    ValueError
        If the estimator's guarantee is not per answered row
        (:attr:`~skprivpred.accounting.GuaranteeUnit.QUERY_ROW`) and it states no
        ``epsilon_per_query_``: its answers are not charged row by row.
    """
    final = _steps(estimator)[-1]
    per_query = getattr(final, "epsilon_per_query_", None)
    if per_query is not None:
        return float(per_query), 0.0
    guarantee = getattr(final, "privacy_guarantee_", None)
    if isinstance(guarantee, PrivacyGuarantee) and guarantee.unit is GuaranteeUnit.QUERY_ROW:
        return guarantee.epsilon, guarantee.delta
    unit = "none" if not isinstance(guarantee, PrivacyGuarantee) else repr(guarantee.unit.value)
    raise ValueError(
        f"{type(final).__name__} states no per-row guarantee (its guarantee's unit is {unit}), "
        "so a per-client quota cannot be charged for its answers."
    )


def save_model(estimator: BaseEstimator, path: str | os.PathLike) -> None:
    """Write a fitted private estimator to ``path`` (joblib) for ``skprivpred.serving``.

    The file holds the teachers: protect it like the training data. Its
    accountant is saved by address, so every process that loads the file
    charges the same ledger.

    Parameters
    ----------
    estimator : estimator
        A fitted skprivpred estimator (or a ``Pipeline`` ending in one) with one
        :class:`~skprivpred.PrivacyAccountant` whose ledger is a file or a
        server: not ``":memory:"``, and not the default ledger, a temporary
        file deleted when the process that created it exits.
    path : str or os.PathLike
        Where to write.

    Raises
    ------
    ValueError
        If the estimator has no accountant, or its ledger would not outlive
        this process.
    sklearn.exceptions.NotFittedError
        If the estimator is not fitted.
    """
    check_is_fitted(estimator)
    budget = budget_of(estimator)
    if not budget.durable:
        where = "':memory:'" if budget.ledger_url == ":memory:" else "the default temporary file"
        raise ValueError(
            f"the estimator's PrivacyAccountant keeps its spending in {where}, which does not "
            "outlive this process: a service loading the model could not charge it. Fit with "
            "accountant=PrivacyAccountant(..., ledger='path/to/budget.db') or a "
            "'postgresql://' ledger."
        )
    if not math.isfinite(budget.epsilon):
        raise ValueError(
            "the estimator's PrivacyAccountant has no epsilon cap (epsilon=inf): a served model "
            "needs a total budget."
        )
    joblib.dump({"format": _FORMAT, "version": _VERSION, "estimator": estimator}, path)


def load_model(path: str | os.PathLike) -> Any:
    """Read a model written by :func:`save_model`.

    Parameters
    ----------
    path : str or os.PathLike
        The file.

    Returns
    -------
    estimator
        The fitted estimator; its accountant charges the ledger it was saved with.
    """
    payload = joblib.load(path)
    if not isinstance(payload, dict) or payload.get("format") != _FORMAT:
        raise ValueError(f"{os.fspath(path)!r} was not written by skprivpred.serving.save_model.")
    if payload.get("version") != _VERSION:
        raise ValueError(
            f"{os.fspath(path)!r} has model format version {payload.get('version')!r}; this "
            f"skprivpred reads version {_VERSION}."
        )
    return payload["estimator"]
