"""A sentinel's firing: its stored run request, named by the sentinel and the firing's time.

Defined in Terraform (``infra``'s ``sentinels`` variable) or the local stack, a
sentinel's definition is kept in Firestore (``sentinels/{name}``: the request as JSON,
the schedule). Cloud Scheduler POSTs ``{"sentinel": NAME}`` to the dispatcher's
``/sentinel`` route with the firing's due time in ``X-CloudScheduler-ScheduleTime``;
``niah sentinel run NAME`` POSTs the same with the time it was asked. The route adds
both to the stored request (``sentinel_payload``) and dispatches it as any run: the
name and the time are part of the run's ID, so each firing is a run of its own and a
retried firing the same run. Light: the dispatcher imports it.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Mapping
from typing import Any

from niah.core.interfaces import ResultStore
from niah.core.request.sentinel_request import FIRING_FIELDS, SENTINEL_NAME, firing_time
from niah.errors import RequestError, UnknownSentinelError

# The dispatcher's route for a sentinel's firing (infra's scheduler jobs POST here).
SENTINEL_PATH = "/sentinel"
# Cloud Scheduler's header with the firing's due time, RFC 3339 UTC, the same on each
# retry of a firing (documented for App Engine targets, cloud.google.com/java/docs/
# reference/google-cloud-scheduler/latest/com.google.cloud.scheduler.v1.AppEngineHttpTarget,
# read 2026-11-28; for HTTP targets Google's reference is silent: without it, the minute
# the firing arrived names it, docs/sentinels.md).
SCHEDULE_TIME_HEADER = "X-CloudScheduler-ScheduleTime"
# Set on every request Cloud Scheduler sends (the same reference): a firing of its own.
SCHEDULER_HEADER = "X-CloudScheduler"
# How far from now a firing's time may be: Scheduler retries a firing for up to hours
# (infra's retry_config, with backoff); ahead, a clock a little fast.
FIRING_PAST = dt.timedelta(days=7)
FIRING_AHEAD = dt.timedelta(minutes=10)


def sentinel_payload(
    body: Any,
    *,
    schedule_time: str | None,
    store: ResultStore,
    now: dt.datetime | None = None,
) -> dict[str, Any]:
    """The run request of a sentinel's firing: its stored request, its name and time.

    ``body``: ``{"sentinel": NAME}``, optionally with ``scheduled_at`` (the CLI's time,
    kept across its retries). ``schedule_time``: Cloud Scheduler's header, which wins.
    Without either, the minute the firing arrived.
    """
    if not isinstance(body, dict):
        raise RequestError("body", 'send a JSON object: {"sentinel": "NAME"}')
    unknown = sorted(set(body) - set(FIRING_FIELDS))
    if unknown:
        raise RequestError(
            unknown[0],
            "is not taken here: a sentinel runs its stored request; change the request "
            "in infra's `sentinels` variable",
        )
    name = body.get("sentinel")
    if not isinstance(name, str) or not re.fullmatch(SENTINEL_NAME, name):
        raise RequestError(
            "sentinel",
            "give the sentinel's name: lower-case letters, digits and '-', starting with "
            "a letter, at most 40",
        )
    definition = store.get_sentinel(name)
    if definition is None:
        raise UnknownSentinelError(
            "sentinel",
            f"no sentinel named {name!r}; `niah sentinel list` shows those defined "
            "(infra's `sentinels` variable, or the local stack's sentinels file)",
        )
    try:
        request = json.loads(str(definition.get("request") or ""))
    except ValueError:
        request = None
    if not isinstance(request, dict):
        raise RequestError(
            "sentinel",
            f"sentinel {name!r}'s stored request is not a JSON object; fix it where it "
            "is defined (infra's `sentinels` variable)",
        )
    named = [field for field in FIRING_FIELDS if field in request]
    if named:
        raise RequestError(
            "sentinel",
            f"sentinel {name!r}'s stored request gives {named[0]}, which its firing sets; "
            "remove it where the sentinel is defined (infra's `sentinels` variable)",
        )
    return request | {"sentinel": name, "scheduled_at": _firing(body, schedule_time, now)}


def _firing(body: Mapping[str, Any], header: str | None, now: dt.datetime | None) -> str:
    """When the firing was due: the scheduler's header, the body's, else this minute."""
    given = header or body.get("scheduled_at")
    if given is None:
        minute = (now or dt.datetime.now(dt.UTC)).replace(second=0, microsecond=0)
        return minute.strftime("%Y-%m-%dT%H:%M:%SZ")
    field = SCHEDULE_TIME_HEADER if header else "scheduled_at"
    if not isinstance(given, str):
        raise RequestError(field, "give an RFC 3339 time, like 2026-11-28T06:00:00Z")
    try:
        fired = firing_time(given)
    except ValueError as error:
        raise RequestError(field, str(error)) from None
    # A firing is due now, or was within Scheduler's retries: a time far off would put a
    # run on the trend where no firing is, compared with nothing due before it.
    now = now or dt.datetime.now(dt.UTC)
    earliest = (now - FIRING_PAST).strftime("%Y-%m-%dT%H:%M:%SZ")
    latest = (now + FIRING_AHEAD).strftime("%Y-%m-%dT%H:%M:%SZ")
    if not earliest <= fired <= latest:
        raise RequestError(
            field,
            f"{fired} is not a firing due now: give a time from {earliest} to {latest} "
            "(or none: the firing is named by the minute it arrives)",
        )
    return fired


def refused_alert(name: Any, error: RequestError) -> tuple[dict[str, Any], dict[str, str]]:
    """The alert of a scheduled firing the dispatcher refused: no run, so no report says so.

    A sentinel whose model was retired, or whose stored request the service no longer
    takes, is refused at 6 a.m. with nobody watching: the alerts topic hears it, flagged.
    """
    sentinel = str(name) if isinstance(name, str) else ""
    text = f"firing refused, no run made: {error.field}: {error.message}"
    message = {"sentinel": sentinel, "run_id": None, "flagged": True, "reasons": [text]}
    return message | {"text": text}, {"sentinel": sentinel, "run_id": "", "flagged": "true"}
