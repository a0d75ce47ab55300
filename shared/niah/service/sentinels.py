"""A sentinel's run, reported: checked against the sentinel's run before it, and announced.

When a sentinel's run (``niah.service.sentinel_firing``) is reported, the report checks
it against the sentinel's latest complete run before it (``check_sentinel_run``: the
paired test and the served model version, ``niah.core.results.sentinel_check``), keeps
the check on the run, and publishes it to the alerts topic
(``publish_sentinel_alert``), once.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from niah.core.interfaces import RUN_COMPLETE, AlertPublisher, ResultStore
from niah.core.request.sentinel_request import SENTINEL_CHECK, SENTINEL_KEY
from niah.core.results.sentinel_check import (
    alert_attributes,
    alert_message,
    previous_run,
    sentinel_check,
)
from niah.errors import RetryableError
from niah.logs import log

# What the check reads of a sentinel's earlier runs.
PREVIOUS_FIELDS = ("status", "spec.scheduled_at", SENTINEL_KEY, "model")


def check_sentinel_run(
    run_id: str, run: dict[str, Any], cells: list[dict[str, Any]], *, store: ResultStore
) -> dict[str, Any] | None:
    """The run's check against its sentinel's run before it; None for other runs.

    The store out of reach raises (the report is tried again); anything else the check
    trips on is kept as the check's own failure, flagged, and the report still made.
    """
    spec = run.get("spec") or {}
    name = spec.get("sentinel")
    if not name:
        return None
    try:
        runs = [r for r in store.sentinel_runs(str(name), PREVIOUS_FIELDS) if r["run_id"] != run_id]
        same, latest = previous_run(
            runs, str(spec.get("scheduled_at") or ""), run.get(SENTINEL_KEY), complete=RUN_COMPLETE
        )
        previous = None if same is None else (same, store.list_cells(str(same["run_id"])))
        return sentinel_check(
            str(name), ({**run, "run_id": run_id}, cells), previous, other_request=latest
        )
    except RetryableError:
        raise
    except Exception as error:  # a bug here must not cost the run its report
        reason = f"{type(error).__name__}: {error}"
        log("sentinel check failed", severity="ERROR", run_id=run_id, error=reason)
        return {
            "sentinel": name,
            "scheduled_at": spec.get("scheduled_at"),
            "flagged": True,
            "reasons": [f"not checked: {reason}"],
            "text": f"not checked: the check failed ({reason})",
        }


def publish_sentinel_alert(
    run_id: str, run: dict[str, Any], *, store: ResultStore, alerts: AlertPublisher
) -> bool:
    """Publish a reported sentinel run's check to the alerts topic, unless it was.

    Marked on the run after the publish: a failure in between publishes it again on the
    report request's next delivery (a subscriber may see a run twice; its ``run_id``
    attribute tells). False: nothing to publish (not a sentinel's, or published).
    """
    check = run.get(SENTINEL_CHECK)
    if not check or check.get("alerted_at"):
        return False
    alerts.publish_alert(alert_message(run_id, run, check), alert_attributes(check, run_id))
    # A nested map: merged into the check, not a field named with a dot.
    store.update_run(run_id, {SENTINEL_CHECK: {"alerted_at": dt.datetime.now(dt.UTC)}})
    log(
        "sentinel check published",
        run_id=run_id,
        sentinel=check["sentinel"],
        flagged=check["flagged"],
    )
    return True
