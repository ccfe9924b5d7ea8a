"""Serve private predictions over HTTP: one budget for every worker and every restart.

Save a fitted estimator whose :class:`~skprivpred.PrivacyAccountant` keeps its
spending in a file or server ledger with :func:`save_model` (a :mod:`skops.io`
file, never a pickle), then start the service::

    python -m skprivpred.serving model.skops --workers 2 --port 8000

Every worker loads the model and charges the same ledger before it draws any
noise. ``POST /predict`` answers rows (one row is one query), ``GET /budget``
reports the spending, ``GET /guarantee`` the estimator's guarantee, ``GET
/card`` a model card (:func:`model_card`), ``GET /metrics`` Prometheus
metrics, ``GET /openapi.json`` the API's schema and ``GET /health`` whether
the ledger answers. Each ``/predict`` response leaves at a point of a public
schedule (:class:`ReleaseSchedule`, on by default), so that its timing tells
nothing about the training rows beyond a few bits per change of the schedule.
Needs the ``serve`` extra: ``pip install "skprivpred[serve]"``, or ``pip install -e
".[serve]"`` from a checkout (Starlette, uvicorn, prometheus_client and pandas).
:func:`save_model` and :func:`load_model` need only skops, a core dependency.
"""

from ._model import load_model, save_model
from ._schedule import ReleaseSchedule

__all__ = ["ReleaseSchedule", "create_app", "load_model", "model_card", "save_model"]


def __getattr__(name: str):
    # The web framework and skops.card are imported only when needed, so that save_model
    # works without them.
    if name == "create_app":
        from ._app import create_app

        return create_app
    if name == "model_card":
        from ._card import model_card

        return model_card
    raise AttributeError(f"module 'skprivpred.serving' has no attribute {name!r}")
