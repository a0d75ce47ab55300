"""Dispatcher (HTTP): validate a run request, record the run, publish its cells."""

from __future__ import annotations

from functools import cache
from typing import Any

import flask
import functions_framework

from niah.cloud.blobs import GcsBlobStore
from niah.cloud.bus import PubSubPublisher, decode_event
from niah.cloud.identity import verified_caller
from niah.cloud.metering import metered
from niah.cloud.spend_ledger import FirestoreSpendLedger
from niah.cloud.store import FirestoreStore
from niah.errors import MalformedMessageError, RequestError
from niah.logs import log
from niah.service.admission import handle_budget_alert
from niah.service.cancel import cancel_run, parse_cancel
from niah.service.dispatch import dispatch_run
from niah.service.request_body import decode_body
from niah.service.route_owners import (
    BUDGET_ALERT_PATH,
    SENTINEL_PATH,
    check_route_owner,
    is_scheduler,
)
from niah.service.sentinel_firing import SCHEDULE_TIME_HEADER, refused_alert, sentinel_payload
from niah.service.spend_settlement import settle_ended
from niah.service.sweep import sweep_stalled_runs
from niah.settings import get_settings

MAX_BODY_BYTES = 1_000_000
Answer = tuple[dict[str, Any], int]


@cache
def _clients() -> tuple[FirestoreStore, PubSubPublisher, GcsBlobStore]:
    """Cloud clients, created once per instance on first use."""
    return FirestoreStore(), PubSubPublisher(), GcsBlobStore(get_settings().bucket)


@cache
def _ledger() -> FirestoreSpendLedger:
    """The spend ledger (spend windows, the kill switch), created once per instance."""
    return FirestoreSpendLedger()


def _error(status: int, field: str, message: str) -> Answer:
    return {"error": {"field": field, "message": message}}, status


def _refused(error: RequestError) -> Answer:
    """A refused request: 400 to fix it, 403 another caller's run, 429 money."""
    return _error(error.status, error.field, error.message)


def _caller(request: flask.Request) -> str:
    """The caller Cloud Run verified, or one verified here (``niah.cloud.identity``)."""
    return verified_caller(request.headers, host=request.host)


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


# The cancel route: on the dispatcher's own URL, so only those who may start a run (the
# invoker role on the dispatcher, infra/iam.tf) reach it; of them, only a run's
# creator or an operator may stop it. The machine routes' owners: route_owners.
CANCEL_PATH = "/cancel"


@functions_framework.http
def dispatch(request: flask.Request) -> tuple[dict[str, Any], int]:
    """POST a JSON run request; 202 with the run ID, or 400 naming the bad field.

    POST ``/cancel`` with ``{"run_id": ...}`` cancels a run (``cancel``); a budget
    alert's push to ``/budget-alert`` may trip the kill switch (``budget_alert``);
    ``/sentinel`` with ``{"sentinel": NAME}`` starts a sentinel's run (Cloud Scheduler's
    jobs and ``niah sentinel run``; ``niah.service.sentinels``).
    """
    path = request.path.rstrip("/")
    if path == CANCEL_PATH:
        return cancel(request)
    if path == BUDGET_ALERT_PATH:
        return budget_alert(request)
    sentinel = path == SENTINEL_PATH
    if request.method != "POST":
        return _error(405, "method", "POST a JSON run request")
    fired, scheduled = None, False
    try:
        caller = _caller(request)  # who, and (a machine route) whether they may: no body yet
        if sentinel:
            check_route_owner(SENTINEL_PATH, caller)
            scheduled = is_scheduler(caller)
        payload = _json_body(request)
        if sentinel:  # a sentinel's firing: its stored request, named by the firing
            fired = payload.get("sentinel") if isinstance(payload, dict) else None
            payload = sentinel_payload(
                payload,
                schedule_time=request.headers.get(SCHEDULE_TIME_HEADER),
                store=_clients()[0],
                scheduled=scheduled,
            )
    except RequestError as error:  # a firing's own refusal alerts without its reason
        return (
            _firing_refused(fired, error, scheduled, stored=False) if sentinel else _refused(error)
        )
    except Exception as error:  # Firestore down while reading the sentinel: retry
        log("sentinel not read", severity="ERROR", error=repr(error))
        return _error(503, "service", "the sentinel could not be read now; retry")
    # Made only now: a request refused above never needed a client (nor credentials).
    store, publisher, blobs = _clients()
    resume = request.args.get("resume", "").lower() in ("1", "true", "yes")
    try:
        with metered() as operations:
            result = dispatch_run(
                payload,
                store=store,
                publisher=publisher,
                blobs=blobs,
                resume=resume,
                ledger=_ledger(),
                caller=caller,
                sentinel_route=sentinel,
            )
        log("dispatch metered", run_id=result.run_id, operations=operations.counts())
    except RequestError as error:
        if sentinel:  # its stored request (or its spend), refused: say whose, and alert
            error = type(error)(error.field, f"sentinel {fired}: {error.message}")
            return _firing_refused(fired, error, scheduled, stored=True)
        return _refused(error)
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


def _firing_refused(name: Any, error: RequestError, scheduled: bool, *, stored: bool) -> Answer:
    """A refused firing; one by Scheduler's account told to the alerts topic (no caller text)."""
    if scheduled:
        message, attributes = refused_alert(name, error, stored=stored)
        try:
            _clients()[1].publish_alert(message, attributes)
        except Exception as unpublished:  # the refusal is still answered (and logged)
            log("refused firing not alerted", severity="ERROR", error=repr(unpublished))
    log("sentinel firing refused", severity="WARNING", sentinel=str(name), error=str(error))
    return _refused(error)


def cancel(request: flask.Request) -> tuple[dict[str, Any], int]:
    """Cancel a run: 200 with what it spent and answered, 404 no such run, 409 complete."""
    try:
        caller = _caller(request)
        run_id = parse_cancel(_json_body(request))
    except RequestError as error:
        return _error(405 if error.field == "method" else error.status, error.field, error.message)
    store, publisher, _ = _clients()
    try:
        result = cancel_run(
            run_id, store=store, publisher=publisher, ledger=_ledger(), caller=caller
        )
    except RequestError as error:  # another caller's run
        return _refused(error)
    except Exception as error:  # Firestore down: the client may retry
        log("cancel failed", severity="ERROR", run_id=run_id, error=repr(error))
        return _error(503, "service", "the run could not be cancelled now; retry (it is safe)")
    if result.outcome == "missing":
        return _error(404, "run_id", f"no run {run_id}")
    if result.outcome == "complete":
        return _error(409, "run_id", f"run {run_id} is complete: nothing is left to cancel")
    return result.as_json(), 200


def budget_alert(request: flask.Request) -> tuple[dict[str, Any], int]:
    """A Cloud Billing budget notification (a Pub/Sub push): trip the kill switch if spent.

    200 whatever the figures (a push answered 2xx is acknowledged); 400 for a push that
    will never parse (acknowledged too: retrying it cannot help); 403 from anyone but
    the budget topic's pusher or an operator; 503 if the switch could not be written
    (Pub/Sub pushes it again).
    """
    try:
        check_route_owner(BUDGET_ALERT_PATH, caller := _caller(request))  # before the body
        data, _ = decode_event(request.get_json(silent=True))
        tripped = handle_budget_alert(data, ledger=_ledger(), caller=caller)
    except RequestError as error:
        return _refused(error)
    except MalformedMessageError as error:
        log("malformed budget alert dropped", severity="ERROR", error=str(error))
        return _error(400, "message", str(error))
    except Exception as error:  # Firestore down: Pub/Sub redelivers
        log("budget alert not handled", severity="ERROR", error=repr(error))
        return _error(503, "service", "the kill switch could not be read or written; retry")
    return {"kill_switch_tripped": tripped}, 200


@functions_framework.http
def sweep(request: flask.Request) -> tuple[dict[str, Any], int]:
    """Republish the missing cells of stalled runs (called by Cloud Scheduler)."""
    store, publisher, _ = _clients()
    settings = get_settings()
    result = sweep_stalled_runs(
        store=store, publisher=publisher, stalled_after_seconds=settings.sweep_stalled_after_seconds
    )
    holds = settle_ended(
        store=store, ledger=_ledger(), older_than_seconds=settings.sweep_settle_holds_after_seconds
    )
    return result | holds, 200
