"""Dispatcher (HTTP): validate a run request, record the run, publish its cells.

Its routes (``/``, ``/sentinel``, ``/cancel``, ``/budget-alert``), their owners and jobs:
``niah.service.routes.dispatcher``. Here: Flask's request in, a status out.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import flask
import functions_framework

from niah.cloud.blobs import GcsBlobStore
from niah.cloud.bus import PubSubPublisher
from niah.cloud.spend_ledger import FirestoreSpendLedger
from niah.cloud.store import FirestoreStore
from niah.errors import MalformedMessageError, RequestError
from niah.service.routes import dispatcher as routes
from niah.settings import get_settings


@cache
def _clients() -> tuple[FirestoreStore, PubSubPublisher, GcsBlobStore]:
    """Cloud clients, created once per instance on first use."""
    return FirestoreStore(), PubSubPublisher(), GcsBlobStore(get_settings().bucket)


@cache
def _ledger() -> FirestoreSpendLedger:
    """The spend ledger (spend windows, the kill switch), created once per instance."""
    return FirestoreSpendLedger()


@functions_framework.http
def dispatch(request: flask.Request) -> tuple[dict[str, Any], int]:
    """POST a JSON run request: 202 with the run ID, or the status its refusal carries."""
    call = routes.HttpCall(
        request.method, request.path, request.headers, request.host, request.args,
        request.mimetype, request.content_length, request.stream.read,
        lambda: request.get_json(silent=True),
    )  # fmt: skip
    try:
        return routes.route_call(call, routes.Clients(_clients, _ledger))
    except RequestError as error:  # 400 fix it, 403 not yours, 404, 405, 409, 429, 503 retry
        return {"error": {"field": error.field, "message": error.message}}, error.status
    except MalformedMessageError as error:  # a push that will never parse: acknowledged
        return {"error": {"field": "message", "message": str(error)}}, 400


@functions_framework.http
def sweep(request: flask.Request) -> tuple[dict[str, Any], int]:
    """Republish the missing cells of stalled runs (called by Cloud Scheduler)."""
    return routes.sweep(routes.Clients(_clients, _ledger))
