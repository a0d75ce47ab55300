"""The local stack's sentinels: their definitions in Firestore, and Cloud Scheduler's part.

Deployed, Terraform writes each sentinel's definition to ``sentinels/{name}`` and a
Cloud Scheduler job POSTs ``{"sentinel": NAME}`` to the dispatcher's ``/sentinel`` route
on the sentinel's unix-cron schedule, with the firing's due time in
``X-CloudScheduler-ScheduleTime``. Locally the same file shape as infra's ``sentinels``
variable (``{NAME: {"schedule", "time_zone", "request", "baseline_run"}}``; ``request``
as JSON text or, here only, as an object) is written to the Firestore emulator by ``define``, and
``run_scheduler`` fires each sentinel when it is due, the same request as Scheduler's.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import time
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from niah.core.request.sentinel_request import SENTINEL_NAME
from niah_devtools import local_identity

SCHEDULE_TIME_HEADER = "X-CloudScheduler-ScheduleTime"


def load_definitions(path: Path) -> dict[str, dict[str, str]]:
    """The sentinels of a file, checked as infra's variable checks them; request as text."""
    raw = json.loads(path.read_text())
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: give an object of sentinels by name")
    found = {}
    for name, definition in raw.items():
        if not re.fullmatch(SENTINEL_NAME, name):
            raise ValueError(f"{path}: sentinel name {name!r}: lower-case letters, digits, '-'")
        request = definition.get("request")
        text = request if isinstance(request, str) else json.dumps(request)
        if not isinstance(json.loads(text), dict):
            raise ValueError(f"{path}: sentinel {name}: request must be a JSON object")
        found[name] = {
            "schedule": str(definition["schedule"]),
            "time_zone": str(definition.get("time_zone") or "Etc/UTC"),
            "request": text,
            # The run each firing is weighed against, when pinned (docs/sentinels.md).
            **({"baseline_run": str(pin)} if (pin := definition.get("baseline_run")) else {}),
        }
    return found


def define(definitions: Mapping[str, Mapping[str, str]], project: str) -> None:
    """Write each definition to the Firestore emulator, as Terraform writes them deployed."""
    from google.cloud import firestore

    db = firestore.Client(project=project)
    for name, definition in definitions.items():
        db.collection("sentinels").document(name).set(dict(definition))


def due(schedule: str, time_zone: str, after: dt.datetime, now: dt.datetime) -> list[dt.datetime]:
    """The firings of ``schedule`` in (``after``, ``now``], in UTC."""
    from croniter import croniter

    zone = ZoneInfo(time_zone)
    found = []
    times = croniter(schedule, after.astimezone(zone))
    while (when := times.get_next(dt.datetime)) <= now:
        found.append(when.astimezone(dt.UTC))
    return found


def fire(dispatcher_url: str, name: str, when: dt.datetime) -> dict[str, Any]:
    """POST one firing as Cloud Scheduler does: the name, the due time in its header."""
    request = urllib.request.Request(
        dispatcher_url.rstrip("/") + "/sentinel",
        data=json.dumps({"sentinel": name}).encode(),
        method="POST",
        headers={
            "Content-Type": "application/json",
            # As Scheduler's job: an ID token for its account (infra/sentinels.tf).
            **local_identity.headers(local_identity.SCHEDULER_ACCOUNT, url=dispatcher_url),
            "X-CloudScheduler": "true",
            "X-CloudScheduler-JobName": f"niah-sentinel-{name}",
            SCHEDULE_TIME_HEADER: when.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
        },
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        answer: dict[str, Any] = json.loads(response.read() or b"{}")
        return answer


def fire_due(path: Path, dispatcher_url: str, after: dt.datetime, now: dt.datetime) -> list[str]:
    """Fire every sentinel of ``path`` due in (``after``, ``now``]; a line for each firing."""
    lines = []
    try:
        definitions = load_definitions(path)
    except (OSError, ValueError, KeyError, AttributeError) as error:  # a bad edit: said
        return [json.dumps({"file": str(path), "error": f"{type(error).__name__}: {error}"})]
    for name, definition in definitions.items():
        try:
            due_times = due(definition["schedule"], definition["time_zone"], after, now)
        except (ValueError, KeyError) as error:  # a bad schedule or zone: the others go on
            lines.append(
                json.dumps({"sentinel": name, "error": f"{type(error).__name__}: {error}"})
            )
            continue
        for when in due_times:
            try:
                answer = fire(dispatcher_url, name, when)
                lines.append(json.dumps({"sentinel": name, "run_id": answer.get("run_id")}))
            except OSError as error:  # as Scheduler: logged; the next firing is another
                lines.append(json.dumps({"sentinel": name, "error": str(error)}))
    return lines


def run_scheduler(path: Path, dispatcher_url: str, poll_seconds: float = 15.0) -> None:
    """Fire every sentinel of ``path`` when due, forever; from now on, none missed before."""
    last = dt.datetime.now(dt.UTC)
    while True:
        time.sleep(poll_seconds)
        now = dt.datetime.now(dt.UTC)
        for line in fire_due(path, dispatcher_url, last, now):
            print(line, flush=True)
        last = now
