"""Dispatcher (HTTP): validate a run request, record the run, publish its cells."""

from __future__ import annotations

from functools import cache
from typing import Any

import flask
import functions_framework

from niah.cloud.blobs import GcsBlobStore
from niah.cloud.bus import PubSubPublisher
from niah.cloud.metering import metered
from niah.cloud.store import FirestoreStore
from niah.errors import RequestError
from niah.logs import log
from niah.service.cancel import cancel_run, parse_cancel
from niah.service.dispatch import decode_body, dispatch_run
from niah.service.sweep import sweep_stalled_runs
from niah.settings import get_settings

MAX_BODY_BYTES = 1_000_000


@cache
def _clients() -> tuple[FirestoreStore, PubSubPublisher, GcsBlobStore]:
    """Cloud clients, created once per instance on first use."""
    return FirestoreStore(), PubSubPublisher(), GcsBlobStore(get_settings().bucket)


def _error(status: int, field: str, message: str) -> tuple[dict[str, Any], int]:
    return {"error": {"field": field, "message": message}}, status


def _json_body(request: flask.Request) -> Any:
    """The POSTed JSON body; ``RequestError`` (a 400) naming what is wrong with it."""
    if request.method != "POST":
        raise RequestError("method", "POST a JSON body")
    if (request.content_length or 0) > MAX_BODY_BYTES:
        raise RequestError("body", f"the request body is above {MAX_BODY_BYTES} bytes")
    if request.mimetype != "application/json":
        raise RequestError("Content-Type", "send the body as application/json")
    # Read at most one byte past the limit: a chunked body has no Content-Length.
    data = request.stream.read(MAX_BODY_BYTES + 1)
    if len(data) > MAX_BODY_BYTES:
        raise RequestError("body", f"the request body is above {MAX_BODY_BYTES} bytes")
    return decode_body(data)


# The cancel route: on the dispatcher's own URL, so whoever may start a run (the
# invoker role on the dispatcher, infra/iam.tf) may stop it, and nobody else.
CANCEL_PATH = "/cancel"


@functions_framework.http
def dispatch(request: flask.Request) -> tuple[dict[str, Any], int]:
    """POST a JSON run request; 202 with the run ID, or 400 naming the bad field.

    POST ``/cancel`` with ``{"run_id": ...}`` cancels a run (``cancel``).
    """
    if request.path.rstrip("/") == CANCEL_PATH:
        return cancel(request)
    if request.method != "POST":
        return _error(405, "method", "POST a JSON run request")
    try:
        payload = _json_body(request)
    except RequestError as error:
        return _error(400, error.field, error.message)
    store, publisher, blobs = _clients()
    resume = request.args.get("resume", "").lower() in ("1", "true", "yes")
    try:
        with metered() as operations:
            result = dispatch_run(
                payload, store=store, publisher=publisher, blobs=blobs, resume=resume
            )
        log("dispatch metered", run_id=result.run_id, operations=operations.counts())
    except RequestError as error:
        return _error(400, error.field, error.message)
    except Exception as error:  # Firestore or Pub/Sub down: the client may retry
        log("dispatch failed", severity="ERROR", error=repr(error))
        return _error(
            503,
            "service",
            "the run could not be recorded or published; retry the same request (it is idempotent)",
        )
    settings = get_settings()
    body = {
        "run_id": result.run_id,
        "cells": result.cells,
        "published": result.published,
        "created": result.created,
        "already_complete": result.already_complete,
        "reused": result.reused,
        "retried": result.retried,
        "cancelled": result.cancelled,
        "warnings": result.warnings,
        "firestore_document": f"runs/{result.run_id}",
        "project": settings.project,  # for the console link clients print
        "report_prefix": f"gs://{settings.bucket}/{settings.reports_prefix}{result.run_id}/",
    }
    return body, 200 if result.already_complete else 202


def cancel(request: flask.Request) -> tuple[dict[str, Any], int]:
    """Cancel a run: 200 with what it spent and answered, 404 no such run, 409 complete."""
    try:
        run_id = parse_cancel(_json_body(request))
    except RequestError as error:
        return _error(405 if error.field == "method" else 400, error.field, error.message)
    store, publisher, _ = _clients()
    try:
        result = cancel_run(run_id, store=store, publisher=publisher)
    except Exception as error:  # Firestore down: the client may retry
        log("cancel failed", severity="ERROR", run_id=run_id, error=repr(error))
        return _error(503, "service", "the run could not be cancelled now; retry (it is safe)")
    if result.outcome == "missing":
        return _error(404, "run_id", f"no run {run_id}")
    if result.outcome == "complete":
        return _error(409, "run_id", f"run {run_id} is complete: nothing is left to cancel")
    return result.as_json(), 200


@functions_framework.http
def sweep(request: flask.Request) -> tuple[dict[str, Any], int]:
    """Republish the missing cells of stalled runs (called by Cloud Scheduler)."""
    store, publisher, _ = _clients()
    result = sweep_stalled_runs(
        store=store,
        publisher=publisher,
        stalled_after_seconds=get_settings().sweep_stalled_after_seconds,
    )
    return result, 200
