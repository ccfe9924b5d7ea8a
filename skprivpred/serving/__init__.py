"""Serve private predictions over HTTP: one budget for every worker and every restart.

Save a fitted estimator whose :class:`~skprivpred.PrivacyAccountant` keeps its
spending in a file or server ledger with :func:`save_model`, then start the
service::

    python -m skprivpred.serving model.joblib --workers 2 --port 8000

Every worker loads the model and charges the same ledger before it draws any
noise. ``POST /predict`` answers rows (one row is one query), ``GET /budget``
reports the spending, ``GET /guarantee`` the estimator's guarantee and
``GET /health`` whether the ledger answers. Needs the ``serve`` extra
(``pip install 'skprivpred[serve]'``: Starlette and uvicorn).
"""

from ._model import load_model, save_model

__all__ = ["create_app", "load_model", "save_model"]


def __getattr__(name: str):
    # The web framework is imported only when the application is built, so that
    # save_model works without the 'serve' extra.
    if name == "create_app":
        from ._app import create_app

        return create_app
    raise AttributeError(f"module 'skprivpred.serving' has no attribute {name!r}")
