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
from niah.core.request.cron_ticks import is_tick
from niah.core.request.sentinel_request import FIRING_FIELDS, SENTINEL_NAME, firing_time
from niah.errors import RequestError, UnknownSentinelError

# Cloud Scheduler's header with the firing's due time, RFC 3339 (with an offset: "Z" or
# +hh:mm, both taken), the same on each retry of a firing. Cloud Scheduler v1's
# reference lists it among the headers an HTTP target's request carries, as for App
# Engine targets (google.cloud.scheduler.v1.HttpTarget, "headers":
# cloud.google.com/ruby/docs/reference/google-cloud-scheduler-v1/latest/
# Google-Cloud-Scheduler-V1-HttpTarget and hexdocs google_api_cloud_scheduler 0.8.2;
# read 2026-12-04). A firing by Scheduler's account must carry it, and it must be a tick
# of the sentinel's own schedule (``niah.core.request.cron_ticks``).
SCHEDULE_TIME_HEADER = "X-CloudScheduler-ScheduleTime"
# How far from now a firing's time may be: Scheduler retries a firing for up to hours
# (infra's retry_config, with backoff); ahead, a clock a little fast.
FIRING_PAST = dt.timedelta(days=7)
FIRING_AHEAD = dt.timedelta(minutes=10)


def sentinel_payload(
    body: Any,
    *,
    schedule_time: str | None,
    store: ResultStore,
    scheduled: bool = False,
    now: dt.datetime | None = None,
) -> dict[str, Any]:
    """The run request of a sentinel's firing: its stored request, its name and time.

    ``body``: ``{"sentinel": NAME}``, optionally with ``scheduled_at`` (the CLI's time,
    kept across its retries). ``schedule_time``: Cloud Scheduler's header, which wins.
    Without either, the minute the firing arrived. ``scheduled``: the caller is Cloud
    Scheduler's account; its firing must name a tick of the sentinel's schedule.
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
    fired = _firing(body, schedule_time, now)
    if scheduled:
        _check_tick(name, definition, fired, given=schedule_time)
    return request | {"sentinel": name, "scheduled_at": fired}


def _check_tick(name: str, definition: Mapping[str, Any], fired: str, *, given: str | None) -> None:
    """Refuse a scheduled firing whose time is not one its schedule fires at.

    Each tick is one run on the sentinel's trend; any other time would be a further
    paid run, compared with nothing due before it.
    """
    if given is None:
        raise RequestError(
            SCHEDULE_TIME_HEADER,
            "a scheduled firing names its due time in this header (Cloud Scheduler sends it)",
        )
    schedule = str(definition.get("schedule") or "")
    zone = str(definition.get("time_zone") or "Etc/UTC")
    when = dt.datetime.strptime(fired, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC)
    try:
        due = is_tick(schedule, zone, when)
    except ValueError as error:
        raise RequestError(
            "sentinel",
            f"sentinel {name}'s stored schedule cannot be read ({error}); fix it where "
            "the sentinel is defined (infra's `sentinels` variable)",
        ) from None
    if not due:
        raise RequestError(
            SCHEDULE_TIME_HEADER,
            f"{fired} is not a firing of sentinel {name}'s schedule ({schedule!r} in "
            f"{zone}): a scheduled firing runs only at its schedule's times",
        )


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


def refused_alert(
    name: Any, error: RequestError, *, stored: bool
) -> tuple[dict[str, Any], dict[str, str]]:
    """The alert of a scheduled firing the dispatcher refused: no run, so no report says so.

    A sentinel whose model was retired, or whose stored request the service no longer
    takes, is refused at 6 a.m. with nobody watching: the alerts topic hears it, flagged.
    The alert holds no text of the request's: the name only if it is a sentinel's name,
    and the reason only when it is about the sentinel's stored request (``stored``: the
    request Terraform wrote was refused), else the status and field alone.
    """
    sentinel = name if isinstance(name, str) and re.fullmatch(SENTINEL_NAME, name) else ""
    if stored:
        reason = f"{error.field}: {error.message}"
    else:
        field = error.field if error.field in _FIRING_ERROR_FIELDS else "body"
        reason = f"{field}: the firing was refused ({error.status}); the dispatcher's log says why"
    text = f"firing refused, no run made: {reason}"
    message = {"sentinel": sentinel, "run_id": None, "flagged": True, "reasons": [text]}
    return message | {"text": text}, {"sentinel": sentinel, "run_id": "", "flagged": "true"}


# The fields a refusal of the firing itself names (not of the request it sent).
_FIRING_ERROR_FIELDS = frozenset({"body", "sentinel", "scheduled_at", SCHEDULE_TIME_HEADER})
