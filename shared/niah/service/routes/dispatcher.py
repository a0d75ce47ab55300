"""The dispatcher's routes: who calls, what they send, which job answers.

- ``/`` (POST a run request): 202 with the run ID, 200 if it is already complete.
- ``/sentinel`` (``{"sentinel": NAME}``): a sentinel's stored request, fired by Cloud
  Scheduler's jobs or an operator (``niah.service.sentinel.check``); a refused firing by
  Scheduler's account is told to the alerts topic.
- ``/cancel`` (``{"run_id": ...}``): on the dispatcher's own URL, so only those who may
  start a run (the invoker role, infra/iam.tf) reach it; of them, only a run's creator
  or an operator may stop it.
- ``/budget-alert``: a budget notification's push may trip the kill switch.

Each machine route's owner is checked on the verified caller before its body is read
(``route_owners``). A refusal is raised as a ``RequestError`` carrying its status for the
entry point to answer; a store or bus down is logged here and raised as
``ServiceUnavailableError`` (503: the client, or Pub/Sub, may retry).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from niah.cloud.bus import decode_event
from niah.cloud.identity import verified_caller
from niah.cloud.metering import metered
from niah.core.interfaces import BlobStore, Bus, ResultStore, SpendLedger
from niah.core.request.callers import Headers
from niah.errors import (
    MalformedMessageError,
    MethodNotAllowedError,
    RequestError,
    RunCompleteError,
    RunNotFoundError,
    ServiceUnavailableError,
)
from niah.logs import log
from niah.service.routes.owners import (
    BUDGET_ALERT_PATH,
    SENTINEL_PATH,
    check_route_owner,
    is_scheduler,
)
from niah.service.runs.admission import handle_budget_alert
from niah.service.runs.cancel import cancel_run, parse_cancel
from niah.service.runs.dispatch import dispatch_run
from niah.service.runs.request_body import decode_body
from niah.service.runs.spend_settlement import settle_ended
from niah.service.runs.sweep import sweep_stalled_runs
from niah.service.sentinel.firing import SCHEDULE_TIME_HEADER, refused_alert, sentinel_payload
from niah.settings import REPORTS_PREFIX, get_settings

MAX_BODY_BYTES = 1_000_000
CANCEL_PATH = "/cancel"
Answer = tuple[dict[str, Any], int]


@dataclass(frozen=True)
class HttpCall:
    """What the dispatcher needs of an HTTP request (the entry point fills it from Flask)."""

    method: str
    path: str
    headers: Headers
    host: str
    args: Mapping[str, str]
    mimetype: str
    content_length: int | None
    read: Callable[[int], bytes]  # at most that many bytes of the body
    json: Callable[[], Any]  # the body as JSON, None if it is not (a push)


@dataclass(frozen=True)
class Clients:
    """The dispatcher's cloud clients, each made on first use (a refusal needs none)."""

    cloud: Callable[[], tuple[ResultStore, Bus, BlobStore]]
    ledger: Callable[[], SpendLedger]


def route_call(call: HttpCall, clients: Clients) -> Answer:
    """Answer ``call`` on the route its path names; ``RequestError`` (its status) if refused."""
    path = call.path.rstrip("/")
    if path == CANCEL_PATH:
        return cancel(call, clients)
    if path == BUDGET_ALERT_PATH:
        return budget_alert(call, clients)
    if call.method != "POST":
        raise MethodNotAllowedError("method", "POST a JSON run request")
    if path == SENTINEL_PATH:
        return fire_sentinel(call, clients)
    try:
        caller, payload = caller_of(call), decode_json(call)
    except RequestError:
        raise
    except Exception as error:  # the identity's keys or the body unreadable now: retry
        log("request not read", severity="ERROR", error=repr(error))
        raise ServiceUnavailableError(
            "service", "the request could not be read now; retry"
        ) from error
    return start_run(call, clients, caller, payload)


def caller_of(call: HttpCall) -> str:
    """The caller Cloud Run verified, or one verified here (``niah.cloud.identity``)."""
    return verified_caller(call.headers, host=call.host)


def decode_json(call: HttpCall) -> Any:
    """The POSTed JSON body; ``RequestError`` (a 400, or 405) naming what is wrong with it."""
    if call.method != "POST":
        raise MethodNotAllowedError("method", "POST a JSON body")
    if (call.content_length or 0) > MAX_BODY_BYTES:
        raise RequestError("body", f"the request body is above {MAX_BODY_BYTES} bytes")
    if call.mimetype != "application/json":
        raise RequestError("Content-Type", "send the body as application/json")
    # Read at most one byte past the limit: a chunked body has no Content-Length.
    data = call.read(MAX_BODY_BYTES + 1)
    if len(data) > MAX_BODY_BYTES:
        raise RequestError("body", f"the request body is above {MAX_BODY_BYTES} bytes")
    return decode_body(data)


def fire_sentinel(call: HttpCall, clients: Clients) -> Answer:
    """Start the run of the sentinel a firing names: owner checked first, then its body."""
    fired, scheduled = None, False
    try:
        caller = caller_of(call)  # who, and whether they may: no body yet
        check_route_owner(SENTINEL_PATH, caller)
        scheduled = is_scheduler(caller)
        payload = decode_json(call)
        fired = payload.get("sentinel") if isinstance(payload, dict) else None
        payload = sentinel_payload(
            payload,
            schedule_time=call.headers.get(SCHEDULE_TIME_HEADER),
            store=clients.cloud()[0],
            scheduled=scheduled,
        )
    except RequestError as error:  # a firing's own refusal alerts without its reason
        raise _firing_refused(fired, error, scheduled, clients, stored=False) from None
    except Exception as error:  # Firestore down while reading the sentinel: retry
        log("sentinel not read", severity="ERROR", error=repr(error))
        raise ServiceUnavailableError(
            "service", "the sentinel could not be read now; retry"
        ) from error
    try:
        return start_run(call, clients, caller, payload, sentinel=True)
    except ServiceUnavailableError:
        raise
    except RequestError as error:  # its stored request (or its spend), refused: whose, alert
        error = type(error)(error.field, f"sentinel {fired}: {error.message}")
        raise _firing_refused(fired, error, scheduled, clients, stored=True) from None


def _firing_refused(
    name: Any, error: RequestError, scheduled: bool, clients: Clients, *, stored: bool
) -> RequestError:
    """A refused firing, to raise; one by Scheduler's account told to the alerts topic."""
    if scheduled:
        message, attributes = refused_alert(name, error, stored=stored)
        try:
            clients.cloud()[1].publish_alert(message, attributes)
        except Exception as unpublished:  # the refusal is still answered (and logged)
            log("refused firing not alerted", severity="ERROR", error=repr(unpublished))
    log("sentinel firing refused", severity="WARNING", sentinel=str(name), error=str(error))
    return error


def start_run(
    call: HttpCall, clients: Clients, caller: str, payload: Any, *, sentinel: bool = False
) -> Answer:
    """Record and publish the run ``payload`` asks for; 202 (200 if already complete)."""
    # Made only now: a request refused above never needed a client (nor credentials).
    store, publisher, blobs = clients.cloud()
    resume = call.args.get("resume", "").lower() in ("1", "true", "yes")
    try:
        with metered() as operations:
            result = dispatch_run(
                payload,
                store=store,
                publisher=publisher,
                blobs=blobs,
                resume=resume,
                ledger=clients.ledger(),
                caller=caller,
                sentinel_route=sentinel,
            )
        log("dispatch metered", run_id=result.run_id, operations=operations.counts())
    except RequestError:
        raise
    except Exception as error:  # Firestore or Pub/Sub down: the client may retry
        log("dispatch failed", severity="ERROR", error=repr(error))
        raise ServiceUnavailableError(
            "service",
            "the run could not be recorded or published; retry the same request (it is idempotent)",
        ) from error
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
        "report_prefix": f"gs://{settings.bucket}/{REPORTS_PREFIX}{result.run_id}/",
    }
    return body, 200 if result.already_complete else 202


def cancel(call: HttpCall, clients: Clients) -> Answer:
    """Cancel a run: 200 with what it spent and answered, 404 no such run, 409 complete."""
    caller = caller_of(call)
    run_id = parse_cancel(decode_json(call))
    store, publisher, _ = clients.cloud()
    try:
        result = cancel_run(
            run_id, store=store, publisher=publisher, ledger=clients.ledger(), caller=caller
        )
    except RequestError:  # another caller's run
        raise
    except Exception as error:  # Firestore down: the client may retry
        log("cancel failed", severity="ERROR", run_id=run_id, error=repr(error))
        raise ServiceUnavailableError(
            "service", "the run could not be cancelled now; retry (it is safe)"
        ) from error
    if result.outcome == "missing":
        raise RunNotFoundError("run_id", f"no run {run_id}")
    if result.outcome == "complete":
        raise RunCompleteError("run_id", f"run {run_id} is complete: nothing is left to cancel")
    return result.as_json(), 200


def budget_alert(call: HttpCall, clients: Clients) -> Answer:
    """A Cloud Billing budget notification (a Pub/Sub push): trip the kill switch if spent.

    200 whatever the figures (a push answered 2xx is acknowledged); a push that will
    never parse raises ``MalformedMessageError`` (a 400, acknowledged too: retrying it
    cannot help); 403 from anyone but the budget topic's pusher or an operator; 503 if
    the switch could not be written (Pub/Sub pushes it again).
    """
    try:
        check_route_owner(BUDGET_ALERT_PATH, caller := caller_of(call))  # before the body
        data, _ = decode_event(call.json())
        tripped = handle_budget_alert(data, ledger=clients.ledger(), caller=caller)
    except RequestError:
        raise
    except MalformedMessageError as error:
        log("malformed budget alert dropped", severity="ERROR", error=str(error))
        raise
    except Exception as error:  # Firestore down: Pub/Sub redelivers
        log("budget alert not handled", severity="ERROR", error=repr(error))
        raise ServiceUnavailableError(
            "service", "the kill switch could not be read or written; retry"
        ) from error
    return {"kill_switch_tripped": tripped}, 200


def sweep(clients: Clients) -> Answer:
    """Republish the missing cells of stalled runs and settle ended holds (Cloud Scheduler)."""
    store, publisher, _ = clients.cloud()
    settings = get_settings()
    result = sweep_stalled_runs(
        store=store, publisher=publisher, stalled_after_seconds=settings.sweep_stalled_after_seconds
    )
    holds = settle_ended(
        store=store,
        ledger=clients.ledger(),
        older_than_seconds=settings.sweep_settle_holds_after_seconds,
    )
    return result | holds, 200
