"""A sentinel's run, reported: weighed against the sentinel's baseline, and announced.

When a sentinel's run (``niah.service.sentinel.firing``) is reported, the report checks
it (``check_sentinel_run``: the sequential test against the baseline, the served model
version against the run before, ``niah.core.results.sentinel_check``), keeps the check
on the run, and publishes it to the alerts topic (``publish_sentinel_alert``), once.
The test's threshold comes from the sentinel's schedule (its firings a year) and the
false alarms a year allowed (``sentinel_false_alarms_per_year``); its baseline from the
run before's check, or the run the sentinel's definition pins (``baseline_run``).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from niah.core.interfaces import RUN_COMPLETE, AlertPublisher, ResultStore
from niah.core.request.cron_ticks import firings_per_year
from niah.core.request.sentinel_request import SENTINEL_CHECK, SENTINEL_KEY
from niah.core.results.sentinel_check import (
    alert_attributes,
    alert_message,
    previous_run,
    sentinel_check,
)
from niah.core.results.sentinel_watch import WatchSettings
from niah.core.runs import ListedRun, RunRecord, listed_runs
from niah.errors import RetryableError
from niah.logs import log
from niah.settings import get_settings

# What the check reads of a sentinel's earlier runs: the run before's check carries the
# sequential test's state (its baseline and statistic).
PREVIOUS_FIELDS = ("status", "spec.scheduled_at", SENTINEL_KEY, "model", f"{SENTINEL_CHECK}.watch")
# A sentinel whose schedule cannot be read (its definition removed since it fired) is
# taken as daily: the firings a year its threshold assumes, said in its check.
DAILY = 365


def check_sentinel_run(
    run: RunRecord, cells: list[dict[str, Any]], *, store: ResultStore
) -> dict[str, Any] | None:
    """The run's check against its sentinel's run before it; None for other runs.

    The store out of reach raises (the report is tried again); anything else the check
    trips on is kept as the check's own failure, flagged, and the report still made.
    """
    run_id, name = run.run_id, run.spec.sentinel
    if not name:
        return None
    scheduled_at = run.spec.scheduled_at or ""
    try:
        listed = listed_runs(store.sentinel_runs(name, PREVIOUS_FIELDS))
        runs = [r for r in listed if r.run_id != run_id]
        same, latest = previous_run(runs, scheduled_at, run.sentinel_key, complete=RUN_COMPLETE)
        previous = None if same is None else (same, store.list_cells(same.run_id))
        definition = store.get_sentinel(name) or {}
        pinned, note = _pinned(definition, runs, run_id, scheduled_at, run.sentinel_key)
        found = sentinel_check(
            name,
            (run, cells),
            previous,
            watch=watch_settings(definition),
            other_request=latest,
            pinned=None if pinned is None else (pinned, store.list_cells(pinned.run_id)),
        )
        return found | {"text": note + found["text"]} if note else found
    except RetryableError:
        raise
    except Exception as error:  # a bug here must not cost the run its report
        reason = f"{type(error).__name__}: {error}"
        log("sentinel check failed", severity="ERROR", run_id=run_id, error=reason)
        return {
            "sentinel": name,
            "scheduled_at": run.spec.scheduled_at,
            "flagged": True,
            "reasons": [f"not checked: {reason}"],
            "text": f"not checked: the check failed ({reason})",
        }


def watch_settings(definition: dict[str, Any]) -> WatchSettings:
    """How the sentinel is watched: the settings' rate and margin, its schedule's firings."""
    settings = get_settings()
    try:
        firings = firings_per_year(str(definition.get("schedule") or ""))
    except ValueError:
        firings = DAILY
    return WatchSettings(
        false_alarms_per_year=settings.sentinel_false_alarms_per_year,
        firings_per_year=firings or DAILY,
        margin_points=settings.sentinel_margin_points,
    )


def _pinned(
    definition: dict[str, Any],
    runs: list[ListedRun],
    run_id: str,
    scheduled_at: str,
    key: str | None,
) -> tuple[ListedRun | None, str]:
    """The run the definition pins as the baseline, or None and why a pin is not taken.

    A pin must be a complete run of this request, due no later than this one (or this
    one itself).
    """
    pin = str(definition.get("baseline_run") or "")
    if not pin:
        return None, ""
    if pin == run_id:
        return ListedRun(run_id), ""
    found = next((r for r in runs if r.run_id == pin), None)
    if (
        found is None
        or found.status != RUN_COMPLETE
        or found.sentinel_key != key
        or (found.scheduled_at or "") > scheduled_at
    ):
        return None, (
            f"the pinned baseline run {pin} is not a complete earlier run of this request, so "
            "it is not used; "
        )
    return found, ""


def publish_sentinel_alert(run: RunRecord, *, store: ResultStore, alerts: AlertPublisher) -> bool:
    """Publish a reported sentinel run's check to the alerts topic, unless it was.

    Marked on the run after the publish: a failure in between publishes it again on the
    report request's next delivery (a subscriber may see a run twice; its ``run_id``
    attribute tells). False: nothing to publish (not a sentinel's, or published).
    """
    run_id, check = run.run_id, run.sentinel_check
    if not check or check.get("alerted_at"):
        return False
    message = alert_message(run, dict(check))
    alerts.publish_alert(message, alert_attributes(dict(check), run_id))
    # A nested map: merged into the check, not a field named with a dot.
    store.update_run(run_id, {SENTINEL_CHECK: {"alerted_at": dt.datetime.now(dt.UTC)}})
    log(
        "sentinel check published",
        run_id=run_id,
        sentinel=check["sentinel"],
        flagged=check["flagged"],
    )
    return True
