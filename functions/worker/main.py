"""Worker (Pub/Sub push, HTTP): one message per push (``niah.service.routes.worker``).

HTTP, not CloudEvent: Pub/Sub puts ``deliveryAttempt`` at the top of a push body, and
functions-framework's CloudEvent conversion of a push rebuilds the event from the
message alone (3.10.2, ``event_conversion``), so a CloudEvent function never sees it.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import flask
import functions_framework

from niah.cloud.blobs import GcsBlobStore
from niah.cloud.bus import PubSubPublisher
from niah.cloud.store import FirestoreStore
from niah.errors import NiahError, RetryableError
from niah.service.routes.worker import Route, handle_push
from niah.settings import get_settings


@cache
def _clients() -> tuple[FirestoreStore, PubSubPublisher, GcsBlobStore]:
    """Cloud clients, created once per instance on first use."""
    return FirestoreStore(), PubSubPublisher(), GcsBlobStore(get_settings().bucket)


@cache
def _ledger() -> Any:
    """The spend ledger, for a certify round's hold; made on first use (light imports)."""
    from niah.cloud.spend_ledger import FirestoreSpendLedger

    return FirestoreSpendLedger()


def _answer(request: flask.Request, route: Route) -> tuple[str, int]:
    """204 done (or dropped); 503 retryable and 500 the deployment's fault: redelivered."""
    if request.method in ("GET", "HEAD"):  # a readiness or health probe, not a message
        return "ready", 200
    try:
        handle_push(request.get_json(silent=True), route=route, clients=_clients, ledger=_ledger)
    except RetryableError as error:  # any status but 102 and 2xx is a nack
        return error.kind, 503
    except NiahError as error:  # logged with the fix; redelivered once it is fixed
        return error.kind, 500
    return "", 204


@functions_framework.http
def handle_cell(request: flask.Request) -> tuple[str, int]:
    """Do what a message on the cells topic asks: a cell, a batch or certify step."""
    return _answer(request, "cells")


@functions_framework.http
def handle_dead_letter(request: flask.Request) -> tuple[str, int]:
    """Answer a dead letter again, record it failed, or drop it (``service.routes.worker``)."""
    return _answer(request, "dead_letter")
