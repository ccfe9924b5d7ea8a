"""The HTTP service: a Starlette application around one fitted private estimator."""

from __future__ import annotations

import contextlib
import functools
import hmac
import json
import logging
import math
import os
import time
from collections.abc import Sequence
from numbers import Real
from typing import Any

import numpy as np
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..exceptions import LedgerError
from ._answer import _Answerer, _client_figures, _Refused
from ._clients import KEYS_ENVIRONMENT_VARIABLE, Clients, KeyFileRefused, UnknownKey, parse_keys
from ._columns import UNKNOWN_CATEGORIES, _typed_columns, categorical_columns, first_refused
from ._compute import Computation, ComputationFailed
from ._cost import PathCost
from ._metrics import BudgetCollector, ServiceMetrics
from ._model import budget_of, final_step, load_model, releases_at_fit
from ._release import ReleasedResponses, asked_rows
from ._schedule import ReleaseSchedule

__all__ = [
    "CONFIG_ENVIRONMENT_VARIABLE",
    "LOOPBACK_HOSTS",
    "app_from_environment",
    "create_app",
    "is_loopback",
]


#: Environment variable through which the command hands its settings to each worker.
CONFIG_ENVIRONMENT_VARIABLE = "SKPRIVPRED_SERVING_CONFIG"

logger = logging.getLogger("skprivpred.serving")


def _is_json(content_types: list[str]) -> bool:
    """Whether a request's ``Content-Type`` headers declare UTF-8 JSON, once.

    ``application/json``, with no parameter but ``charset=utf-8`` (any case);
    ``text/plain``, a form or a missing or repeated header are not (they are
    what a web page may send to another origin without a preflight).
    """
    if len(content_types) != 1:
        return False
    media, *parameters = (part.strip().lower() for part in content_types[0].split(";"))
    if media != "application/json":
        return False
    for parameter in parameters:
        name, _, value = parameter.partition("=")
        if name.strip() != "charset" or value.strip().strip('"') not in ("utf-8", "utf8"):
            return False
    return True


def _reject_constant(token: str):
    raise _Refused(422, f"{token} is not allowed: every value must be finite.")


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _parse_int(digits: str) -> int:
    """A JSON integer within the 64-bit range (a longer one is refused before it is converted)."""
    value = int(digits) if len(digits) <= 20 else None
    if value is None or not _INT64_MIN <= value <= _INT64_MAX:
        raise _Refused(422, "every integer must lie within the 64-bit range (-2**63 to 2**63-1).")
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict:
    """A JSON object whose keys are all distinct (a repeated key is refused, at any depth).

    Parsers disagree on a repeated key (Python keeps the last value, others the
    first): a proxy or a log that reads the other one would count differently.
    """
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise _Refused(422, "a key appears twice in one JSON object; each may appear once.")
    return obj


#: Roles in the key file: ``admin:NAME:KEY`` makes the client ``admin:NAME`` an administrator
#: (``_clients.parse_keys`` names it so).
ADMIN_PREFIX = "admin:"


def _is_admin(client: str | None) -> bool:
    return client is not None and client.startswith(ADMIN_PREFIX)


def _guard(metrics: ServiceMetrics, timed: bool = True):
    """A decorator that answers every failure of an endpoint with a short JSON body.

    No trace and no secret reach the response or the log. Every request is
    counted by endpoint and status, and timed here when ``timed`` (the timing
    defence is off); with the defence, the release middleware records each
    response at its scheduled release time (the latency histogram is a second
    view of the response times, and shows no more).
    """

    def guarded(name: str):
        def wrap(endpoint):
            @functools.wraps(endpoint)
            async def run(request: Request) -> Response:
                start = time.perf_counter()
                response = await _answer_or_refuse(endpoint, request, metrics)
                metrics.requests.labels(name, str(response.status_code)).inc()
                if timed:
                    metrics.latency.labels(name).observe(time.perf_counter() - start)
                return response

            return run

        return wrap

    return guarded


async def _answer_or_refuse(endpoint, request: Request, metrics: ServiceMetrics) -> Response:
    try:
        return await endpoint(request)
    except _Refused as refusal:
        return JSONResponse(refusal.body, status_code=refusal.status)
    except LedgerError:
        metrics.ledger_errors.inc()
        logger.error("the ledger is unavailable; nothing was charged or answered")
        return JSONResponse(
            {"error": "the privacy ledger is unavailable; nothing was charged or answered."},
            status_code=503,
        )
    except Exception as exc:  # noqa: BLE001 - never let a trace (or a secret) out
        logger.error("internal error (%s); nothing more is logged", type(exc).__name__)
        return JSONResponse({"error": "internal error"}, status_code=500)


class _Service(_Answerer):
    """What the endpoints share: the estimator, its budget, the clients and the limits."""

    def __init__(
        self,
        estimator,
        clients: Clients,
        max_rows: int,
        max_body_bytes: int,
        metrics_public: bool = False,
        schedule: ReleaseSchedule | None = None,
        unknown_categories: str = "refuse",
        computation: Computation | None = None,
    ) -> None:
        super().__init__(estimator, clients)
        self.unknown_categories = unknown_categories
        # The categorical columns whose public schema a query must keep to (refused if not).
        self.categorical = categorical_columns(estimator) if unknown_categories == "refuse" else []
        # The columns whose public schema is a number (a string there is refused).
        typed = _typed_columns(estimator) or {}
        self.numeric_columns = frozenset(n for n, kind in typed.items() if kind == "number")
        self.schedule = schedule
        self.computation = computation
        # The schedule's public model parameter: the number of teachers (1 for one model).
        n_teachers = getattr(final_step(estimator), "n_teachers_", None)
        self.n_teachers = 1 if n_teachers is None else max(int(n_teachers), 1)
        self.max_rows = max_rows
        self.max_body_bytes = max_body_bytes
        self.metrics_public = metrics_public
        self.metrics = ServiceMetrics()
        self._card: str | None = None
        self._openapi: dict | None = None
        # The width of a query row is the model's input width (a pipeline's first step).
        n_features = getattr(estimator, "n_features_in_", None)
        self.n_features = None if n_features is None else int(n_features)
        names = getattr(estimator, "feature_names_in_", None)
        self.feature_names = None if names is None else [str(n) for n in names]

    def check_quotas(self) -> None:
        """Refuse to start when per-client quotas are asked for but could never be charged."""
        share = self.clients.quota_epsilon
        if share is None:
            return
        if self.row_cost is None:
            raise ValueError(
                f"quota_epsilon={share!r} (--quota-epsilon) cannot be kept: "
                f"{self.row_cost_problem} Serve this model without quotas."
            )
        if share < self.row_cost[0] * (1 - 1e-12):
            raise ValueError(
                f"quota_epsilon={share!r} (--quota-epsilon) is smaller than the epsilon of one "
                f"answered row ({self.row_cost[0]!r}): no client could ever be answered."
            )

    # -- requests --------------------------------------------------------------------------
    @staticmethod
    def presented_key(request: Request) -> str | None:
        """The key a request presents: ``X-API-Key: KEY`` or ``Authorization: Bearer KEY``.

        One rule, whatever the key: a header given twice (400), an
        ``Authorization`` of any other scheme, a ``Bearer`` with no key, or both
        headers with different keys (401) are refused, never passed over for
        the other header.
        """
        named = request.headers.getlist("x-api-key")
        authorization = request.headers.getlist("authorization")
        if len(named) > 1 or len(authorization) > 1:
            raise _Refused(
                400, "the X-API-Key or Authorization header is repeated; send each at most once."
            )
        bearer = None
        if authorization:
            scheme, _, token = authorization[0].strip().partition(" ")
            if scheme.lower() != "bearer":
                raise _Refused(
                    401,
                    "an Authorization header must use the Bearer scheme "
                    "('Authorization: Bearer KEY'); no other scheme is accepted.",
                )
            bearer = token.strip()
            if not bearer:
                raise _Refused(401, "'Authorization: Bearer' needs a key after it.")
        key = named[0] if named else None
        if (
            key is not None
            and bearer is not None
            and not hmac.compare_digest(key.encode(), bearer.encode())
        ):
            raise _Refused(
                401, "X-API-Key and Authorization: Bearer hold different keys; send one key."
            )
        return bearer if bearer is not None else key

    def client(self, request: Request) -> str | None:
        if not self.clients.required:
            return None
        try:
            return self.clients.identify(self.presented_key(request))
        except UnknownKey:
            raise _Refused(401, "a valid API key is required.") from None
        except KeyFileRefused as refused:
            logger.error("%s", refused)  # names the file, its owner and mode; no key
            raise _Refused(
                503, "the service's API key file is refused; no key is accepted."
            ) from None

    def metrics_quotas(self, request: Request) -> dict:
        """The quotas this request may read: none, its own, or (an admin's) every client's.

        Without keys configured, or with ``metrics_public`` and no key
        presented, only the global figures are shown.
        """
        if not self.clients.required or (
            self.metrics_public and self.presented_key(request) is None
        ):
            return {}
        client = self.client(request)  # 401 for a missing or unknown key
        if _is_admin(client):
            return self.clients.quotas()
        quota = self.clients.quota(client)
        return {} if quota is None else {client: quota}

    def scrape(self, quotas: dict) -> bytes:
        """The metrics in the Prometheus text format (the budget read from the ledger now)."""
        return self.metrics.exposition(BudgetCollector(self.budget, self.row_cost, quotas))

    def card(self) -> str:
        if self._card is None:
            from ._card import model_card

            self._card = model_card(self.estimator)
        return self._card

    def openapi(self) -> dict:
        if self._openapi is None:
            from .. import __version__
            from ._openapi import openapi_document

            self._openapi = openapi_document(
                self.estimator,
                version=__version__,
                max_rows=self.max_rows,
                max_body_bytes=self.max_body_bytes,
                keys_required=self.clients.required,
                metrics_public=self.metrics_public,
                quotas=self.clients.quota_epsilon is not None,
                unknown_categories=self.unknown_categories,
            )
        return self._openapi

    async def body(self, request: Request) -> dict:
        """The JSON object of the body: UTF-8 JSON, declared ``application/json`` (else refused).

        The media type is checked before the body is read (415 for any other,
        which is what a web page's cross-origin ``fetch`` can send without a
        preflight), and the bytes are decoded strictly as UTF-8 before
        anything reads them (422 otherwise: ``json.loads`` alone would also
        take UTF-16 and UTF-32).
        """
        if not _is_json(request.headers.getlist("content-type")):
            raise _Refused(
                415,
                "the body must be sent as 'Content-Type: application/json' "
                "(charset=utf-8 is accepted, no other).",
            )
        too_large = f"the body is larger than the limit of {self.max_body_bytes} bytes."
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body_bytes:
            raise _Refused(413, too_large)
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > self.max_body_bytes:
                raise _Refused(413, too_large)
            chunks.append(chunk)
        try:
            text = b"".join(chunks).decode("utf-8")
        except UnicodeDecodeError:
            raise _Refused(422, "the body is not UTF-8 text.") from None
        try:
            payload = json.loads(
                text,
                parse_constant=_reject_constant,
                parse_int=_parse_int,
                object_pairs_hook=_unique_keys,
            )
        except _Refused:
            raise
        except RecursionError:
            raise _Refused(422, "the body is nested too deeply.") from None
        except ValueError:
            raise _Refused(422, "the body is not valid JSON.") from None
        if not isinstance(payload, dict):
            raise _Refused(422, 'the body must be a JSON object: {"rows": [...]}.')
        return payload

    def queries(self, payload: dict):
        """The query rows of a request body (a NumPy array, or a DataFrame of records)."""
        kinds = [k for k in ("rows", "records") if k in payload]
        if len(kinds) != 1 or set(payload) - {"rows", "records"}:
            raise _Refused(422, 'the body must hold exactly one of "rows" and "records".')
        items = payload[kinds[0]]
        if not isinstance(items, list) or not items:
            raise _Refused(422, f'"{kinds[0]}" must be a non-empty list.')
        if len(items) > self.max_rows:
            # Invalid data under the documented maximum (maxItems), as every other bad
            # query: 422. (413 is for a body over its byte limit, refused unread.)
            raise _Refused(
                422,
                f"{len(items)} rows asked; a request may ask at most {self.max_rows}.",
                asked_rows=len(items),
                max_rows=self.max_rows,
            )
        return self._rows(items) if kinds[0] == "rows" else self._records(items)

    def _rows(self, rows: list):
        width = self.n_features
        for i, row in enumerate(rows):
            if not isinstance(row, list) or (width is not None and len(row) != width):
                raise _Refused(422, f"row {i} must be a list of {width} numbers (the features).")
            for value in row:
                # Exactly what the JSON parser makes of a number: no bool (an int
                # subclass), no string ("1"), no list; a row never holds text.
                if type(value) is not float and type(value) is not int:
                    what = "true or false" if isinstance(value, bool) else "anything else"
                    raise _Refused(422, f"row {i}: every value must be a JSON number, not {what}.")
        try:
            X = np.array(rows, dtype=float)
        except (ValueError, TypeError, OverflowError):
            raise _Refused(422, "every value must be a number.") from None
        if X.ndim != 2 or not np.all(np.isfinite(X)):
            raise _Refused(422, "every value must be a finite number.")
        if self.feature_names is not None:
            import pandas as pd

            return self._within_schema(pd.DataFrame(X, columns=self.feature_names), "rows")
        return X

    def _records(self, records: list):
        if self.feature_names is None:
            raise _Refused(422, 'this model was fitted without column names: send "rows".')
        try:
            import pandas as pd
        except ImportError:
            raise _Refused(422, 'this server cannot read "records" (no pandas).') from None
        expected = set(self.feature_names)
        for i, record in enumerate(records):
            if not isinstance(record, dict):
                raise _Refused(422, f"record {i} must be a JSON object of column: value.")
            missing, extra = sorted(expected - set(record)), sorted(set(record) - expected)
            if missing or extra:
                raise _Refused(
                    422,
                    f"record {i} does not have the model's columns.",
                    missing=missing,
                    unexpected=extra,
                )
            for column, value in record.items():
                if isinstance(value, bool) or not isinstance(value, Real | str):
                    raise _Refused(422, f"record {i}, {column!r}: a number or a string is needed.")
                if isinstance(value, str) and column in self.numeric_columns:
                    raise _Refused(
                        422,
                        f"record {i}, {column!r}: the model's public schema makes this column "
                        "a number; a string (even of digits) is refused.",
                        column=column,
                    )
                if isinstance(value, Real) and not math.isfinite(value):
                    raise _Refused(422, "every value must be a finite number.")
        frame = pd.DataFrame.from_records(records, columns=self.feature_names)
        return self._within_schema(frame, "records")

    def _within_schema(self, frame, form: str):
        """``frame``, if every categorical value is one its public schema allows (else 422)."""
        refusal = first_refused(frame, self.categorical) if self.categorical else None
        if refusal is not None:
            raise _Refused(422, refusal.message(form), **refusal.details())
        return frame

    async def compute(self, X, client: str | None) -> dict:
        """:meth:`answer`, in the spawned child (:mod:`._compute`) or else in a thread."""
        if self.computation is None:
            return await run_in_threadpool(self.answer, X, client)
        outcome = await self.computation.answer(X, client)
        if outcome[0] == "answer":
            return outcome[1]
        if outcome[0] == "refused":
            status, body = outcome[1], dict(outcome[2])
            raise _Refused(status, body.pop("error"), **body)
        if outcome[0] == "ledger":
            raise LedgerError("the ledger is unavailable (in the computation's process)")
        raise ComputationFailed(outcome[1])

    def budget_report(self, client: str | None = None) -> dict:
        """The budget's figures; with quotas, also ``client``'s own.

        For a model that is itself the release (:func:`._model.releases_at_fit`)
        the budget's charges are fit releases, reported as ``fit_releases``
        (not as answered queries), and ``answers_charged`` is false.
        """
        budget = self.budget
        epsilon_spent, delta_spent = budget.spent()
        report = {
            "name": budget.name,
            "composition": budget.composition,
            "epsilon": budget.epsilon,
            "delta": budget.delta,
            "epsilon_spent": epsilon_spent,
            "delta_spent": delta_spent,
            "epsilon_remaining": max(budget.epsilon - epsilon_spent, 0.0),
        }
        if releases_at_fit(self.estimator):
            report.update(
                fit_releases=budget.queries_answered,
                answers_charged=False,
                note="This model is the release: its fit was charged to this budget, once; "
                "its answers are free post-processing of that release and charge nothing.",
            )
        else:
            report.update(queries_answered=budget.queries_answered, answers_charged=True)
        report["rows_remaining"] = self.remaining_rows()
        if self.row_cost is not None:
            report["epsilon_per_row"], report["delta_per_row"] = self.row_cost
        quota = self.clients.quota(client)
        if quota is not None:
            report.update(_client_figures(quota, quota.epsilon_spent))
        return report


def create_app(
    estimator,
    *,
    ledger: str | os.PathLike | None = None,
    api_keys=None,
    quota_epsilon: float | None = None,
    max_rows: int = 1000,
    max_body_bytes: int = 1_000_000,
    metrics_public: bool = False,
    timing_defence: bool | ReleaseSchedule = True,
    unknown_categories: str = "refuse",
    isolate_computation: bool = True,
    allowed_hosts: Sequence[str] | None = None,
):
    """The ASGI application that serves private answers of ``estimator``.

    Parameters
    ----------
    estimator : estimator
        A fitted skprivpred estimator (or a ``Pipeline`` ending in one) with a
        :class:`~skprivpred.PrivacyAccountant` on a file or server ledger.
    ledger : str or os.PathLike, default=None
        The same budget under another address (a mounted volume, a server
        address); see :meth:`~skprivpred.PrivacyAccountant.relocate`.
    api_keys : mapping, str, os.PathLike or None, default=None
        ``{client: key}`` or a file of ``client:key`` lines (re-read when it
        changes); a line ``admin:name:key`` (a mapping entry ``"admin:name":
        key``) is an administrator, who may read every client's figures in
        ``/metrics``. ``None`` and no ``SKPRIVPRED_API_KEYS`` in the
        environment: no keys.
    quota_epsilon : float, default=None
        Per-client share of the global budget (needs keys).
    max_rows : int, default=1000
        Most rows one request may ask (HTTP 422 beyond, as any invalid query).
    max_body_bytes : int, default=1000000
        Largest request body (HTTP 413 beyond).
    metrics_public : bool, default=False
        Whether ``/metrics`` shows the global figures (budget, request
        counters) to requests without a key. A client key also sees its own
        quota, an admin key every client's.
    timing_defence : bool or ReleaseSchedule, default=True
        Release every ``/predict`` response at the next point of a public
        schedule (:class:`~skprivpred.serving.ReleaseSchedule`), so that its
        time tells nothing about the training rows beyond the bits each of the
        schedule's epochs can leak. ``True``: the default schedule; a
        ``ReleaseSchedule``: that one; ``False``: responses leave as soon as
        they are ready (logged as a warning: their time can then tell
        neighbouring training sets apart). Every route and status leaves on
        it (:mod:`~skprivpred.serving._release`), each route on its own level.
    isolate_computation : bool, default=True
        Run each answer's computation (the estimator's validation, the charge
        and the prediction) in a child process that the application spawns
        (never forks), so that the answering process's event loop only waits
        for it and no computation can delay another response. ``False``: in
        a thread of this process (for tests that replace ``predict`` in
        place); an estimator whose ledger is ``":memory:"`` (which only this
        process can charge) is always answered in a thread, with a warning.
    unknown_categories : {"refuse", "encode-as-none"}, default="refuse"
        What to do with a query whose value in a categorical column is
        neither one of the public categories that the model's public
        preprocessor declares nor one of its schema's markers of a missing
        value (``missing_values``, Adult's ``"?"``). ``"refuse"``: HTTP 422
        naming the column and the values it allows, before anything is
        charged. ``"encode-as-none"``: answer it, the value encoded as none of
        the categories (as the encoder does), for a model that needs that.
    allowed_hosts : sequence of str, default=None
        The names a request's ``Host`` header may give (Starlette's
        ``TrustedHostMiddleware``; ``*.example.com`` for every subdomain):
        any other is refused with HTTP 400 before anything is read or
        charged, so that a web page whose name was rebound to this address
        (DNS rebinding) cannot spend the budget. ``None``: the loopback names
        (:data:`LOOPBACK_HOSTS`). ``"*"`` (every host) is refused.

    Returns
    -------
    ASGI application
        The Starlette application, wrapped by the release middleware when the
        timing defence is on.
    """
    if timing_defence is True:
        schedule: ReleaseSchedule | None = ReleaseSchedule()
    elif timing_defence is False:
        schedule = None
        _warn_timing_defence_off()
    elif isinstance(timing_defence, ReleaseSchedule):
        schedule = timing_defence
    else:
        raise TypeError(
            "timing_defence must be True, False or a ReleaseSchedule, got "
            f"{type(timing_defence).__name__}."
        )
    if unknown_categories not in UNKNOWN_CATEGORIES:
        raise ValueError(
            f"unknown_categories (--unknown-categories) must be one of {list(UNKNOWN_CATEGORIES)}, "
            f"got {unknown_categories!r}."
        )
    hosts = _allowed_hosts(allowed_hosts)
    budget = budget_of(estimator)
    if ledger is not None:
        budget.relocate(ledger)
    if api_keys is None and os.environ.get(KEYS_ENVIRONMENT_VARIABLE):
        api_keys = parse_keys(os.environ[KEYS_ENVIRONMENT_VARIABLE], KEYS_ENVIRONMENT_VARIABLE)
    computation = None
    if isolate_computation and budget.ledger_url == ":memory:":
        logger.warning(
            "the model's ledger is ':memory:', which only this process can charge: its "
            "computations run in this process, where their time can show in other responses"
        )
    elif isolate_computation:
        computation = Computation(
            estimator, api_keys, quota_epsilon, max_rows, max_body_bytes, unknown_categories
        )
    service = _Service(
        estimator,
        Clients(budget, api_keys, quota_epsilon),
        max_rows,
        max_body_bytes,
        metrics_public=bool(metrics_public),
        schedule=schedule,
        unknown_categories=unknown_categories,
        computation=computation,
    )
    service.check_quotas()  # quotas that could never be charged stop the start
    metrics = service.metrics
    guarded = _guard(metrics, timed=schedule is None)

    @guarded("predict")
    async def predict(request: Request) -> JSONResponse:
        client = service.client(request)
        X = service.queries(await service.body(request))
        n_rows = X.shape[0]
        asked_rows(request.scope, n_rows)  # the schedule's interval: a public size
        try:
            answer = await service.compute(X, client)
        except _Refused as refusal:
            if refusal.status == 429:
                metrics.rows_refused.inc(n_rows)
            raise
        metrics.rows_answered.inc(n_rows)
        return JSONResponse(answer)

    @guarded("budget")
    async def budget_endpoint(request: Request) -> JSONResponse:
        client = service.client(request)
        return JSONResponse(await run_in_threadpool(service.budget_report, client))

    @guarded("guarantee")
    async def guarantee(request: Request) -> JSONResponse:
        service.client(request)
        guarantee = getattr(final_step(estimator), "privacy_guarantee_", None)
        return JSONResponse(_jsonable(guarantee))

    @guarded("card")
    async def card(request: Request) -> Response:
        service.client(request)
        text = await run_in_threadpool(service.card)
        return Response(text, media_type="text/markdown; charset=utf-8")

    @guarded("openapi")
    async def openapi(request: Request) -> JSONResponse:
        # No key: the document holds public information only (the same on neighbouring
        # training sets), and client generators fetch it without one.
        return JSONResponse(service.openapi())

    @guarded("metrics")
    async def metrics_endpoint(request: Request) -> Response:
        body = await run_in_threadpool(lambda: service.scrape(service.metrics_quotas(request)))
        return Response(body, media_type="text/plain; version=0.0.4; charset=utf-8")

    @guarded("health")
    async def health(request: Request) -> JSONResponse:
        await run_in_threadpool(lambda: service.budget.queries_answered)  # the ledger answers
        return JSONResponse({"status": "ok"})

    @contextlib.asynccontextmanager
    async def lifespan(app):
        # The child is ready before the first request is answered (a cold start would
        # overrun the schedule's first points).
        if computation is not None:
            await computation.start()
        try:
            yield
        finally:
            if computation is not None:
                computation.stop()

    routes = {
        "/predict": ("predict", predict, "POST"),
        "/budget": ("budget", budget_endpoint, "GET"),
        "/guarantee": ("guarantee", guarantee, "GET"),
        "/card": ("card", card, "GET"),
        "/openapi.json": ("openapi", openapi, "GET"),
        "/metrics": ("metrics", metrics_endpoint, "GET"),
        "/health": ("health", health, "GET"),
    }
    application = Starlette(
        routes=[
            Route(path, endpoint, methods=[method])
            for path, (_, endpoint, method) in routes.items()
        ],
        lifespan=lifespan,
        # Inside the release middleware: a refused host leaves on the schedule too. No
        # CORS middleware: no response carries an Access-Control-* header.
        middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=hosts, www_redirect=False)],
    )
    if schedule is None:
        return application
    cost = PathCost.of(estimator, schedule)

    def interval(route: str, n_rows: int) -> float:
        return cost.interval(n_rows) if route == "predict" else schedule.other_quantum

    return ReleasedResponses(
        application,
        schedule,
        {path: name for path, (name, _, _) in routes.items()},
        interval,
        observe=lambda route, seconds: metrics.latency.labels(route).observe(seconds),
        anchored={"predict"},
    )


#: The names of this machine's loopback interface: the default of ``allowed_hosts``.
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address to listen on) is this machine's loopback."""
    import ipaddress

    name = host.strip().strip("[]").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _allowed_hosts(hosts: Sequence[str] | str | None) -> list[str]:
    """The ``Host`` names a request may give (checked; ``None``: the loopback names)."""
    if hosts is None:
        return list(LOOPBACK_HOSTS)
    if isinstance(hosts, str):
        hosts = [hosts]
    names = [str(h).strip().lower() for h in hosts]
    for name in names:
        if not name or name == "*" or "*" in name[1:] or (name[0] == "*" and name[:2] != "*."):
            raise ValueError(
                f"allowed_hosts (--allowed-hosts) must name hosts ('api.example.com', "
                f"'10.0.0.5', or '*.example.com' for every subdomain), got {name!r}: a "
                "service that answers every Host can be spent by any web page (DNS rebinding)."
            )
        if ":" in name and not name.startswith("[") and name.count(":") == 1:
            raise ValueError(
                f"allowed_hosts (--allowed-hosts) holds names without a port, got {name!r}."
            )
    if not names:
        raise ValueError("allowed_hosts (--allowed-hosts) must name at least one host.")
    return names


def _warn_timing_defence_off() -> None:
    """Log, once per service, that response times can tell training sets apart.

    The command logs it when it checks its settings at start (through
    :func:`create_app`); its workers, which find the settings in the
    environment, do not log it again.
    """
    if CONFIG_ENVIRONMENT_VARIABLE not in os.environ:
        logger.warning(
            "the timing defence is off (--no-timing-defence): the time a response takes can "
            "tell neighbouring training sets apart"
        )


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if hasattr(value, "__dataclass_fields__"):
        import dataclasses

        return _jsonable(dataclasses.asdict(value))
    return str(value)


def app_from_environment() -> Starlette:
    """The application of one worker of ``python -m skprivpred.serving`` (a uvicorn factory)."""
    config = json.loads(os.environ[CONFIG_ENVIRONMENT_VARIABLE])
    return create_app(
        load_model(config["model"], trusted=config.get("trusted") or None),
        ledger=config.get("ledger"),
        api_keys=config.get("api_keys"),
        quota_epsilon=config.get("quota_epsilon"),
        max_rows=config["max_rows"],
        max_body_bytes=config["max_body_bytes"],
        metrics_public=config.get("metrics_public", False),
        timing_defence=_schedule_from(config.get("timing", {})),
        unknown_categories=config.get("unknown_categories", "refuse"),
        allowed_hosts=config.get("allowed_hosts"),
    )


def _schedule_from(timing: dict | None) -> bool | ReleaseSchedule:
    """The ``timing_defence`` of the command's settings (``None``: the defence is off)."""
    if timing is None:
        return False
    return ReleaseSchedule(**timing)
