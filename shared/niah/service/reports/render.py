"""The report of a finished run, in Cloud Storage: heatmap PNG, HTML page, JSON summary."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from typing import Any

from niah.core.interfaces import (
    RUN_COMPLETE,
    AlertPublisher,
    BlobStore,
    ResultStore,
    SpendLedger,
    gs_uri,
)
from niah.core.pages.axis_view import panel_title
from niah.core.pages.report_page import REPORT_PAGE_FILE, heatmap_cells, render_run_page
from niah.core.request.sentinel_request import SENTINEL_CHECK
from niah.core.results.summary import (
    score_table,
    summarize,
)
from niah.core.runs import RunRecord, stored_run
from niah.errors import NiahError, ReportPendingError, ReportRenderError, RetryableError
from niah.logs import log
from niah.service.lease import keep_report_claim
from niah.service.reports.png import heatmap_notes, heatmap_title, render_heatmap
from niah.service.runs.completion import record_report_failure
from niah.service.runs.index import refresh_index
from niah.service.runs.spend_settlement import settle_run_spend, settle_spent, settled_usd
from niah.service.sentinel.check import check_sentinel_run, publish_sentinel_alert
from niah.settings import REPORTS_PREFIX, get_settings

ReportFile = tuple[str, bytes, str]  # name, data, content type


def render_report_files(
    run: RunRecord, cells: list[dict[str, Any]], summary: dict[str, Any]
) -> dict[str, ReportFile]:
    """The heatmap, the HTML report and the summary, rendered (nothing stored)."""
    fraction = summary["score_scale"] == "fraction"
    shown = heatmap_cells(cells, summary["task"])
    heatmap = render_heatmap(
        score_table(shown),
        title=heatmap_title(summary, run),
        fraction=fraction,
        notes=heatmap_notes(summary, run),
        panels=[
            (panel_title(v), score_table([c for c in shown if c.get("variant") == v["variant"]]))
            for v in summary.get("variants") or []
        ],
    )
    return {
        "heatmap": ("heatmap.png", heatmap, "image/png"),
        "html": (
            REPORT_PAGE_FILE,
            # Drawn once every cell is in: complete, as the run is marked when it is stored.
            render_run_page(run.with_fields(status=RUN_COMPLETE), cells, summary).encode(),
            "text/html; charset=utf-8",
        ),
        "summary": (
            "summary.json",
            json.dumps(summary, indent=2, default=str).encode(),
            "application/json",
        ),
    }


def write_report_files(
    run_id: str, files: dict[str, ReportFile], blobs: BlobStore
) -> dict[str, str]:
    """Store the rendered files; where each is (gs:// and https)."""
    prefix = f"{REPORTS_PREFIX}{run_id}/"
    location = {}
    for key, (name, data, content_type) in files.items():
        blobs.write(prefix + name, data, content_type=content_type)
        location[f"{key}_uri"] = gs_uri(blobs.bucket, prefix + name)
        location[f"{key}_url"] = blobs.browser_url(prefix + name)
    return location


def render_report(
    run_id: str,
    *,
    store: ResultStore,
    blobs: BlobStore,
    ledger: SpendLedger | None = None,
    alerts: AlertPublisher | None = None,
) -> dict[str, str] | None:
    """Render and store the run's report once every cell is in; rendered once.

    Once written, the run's spend reservation is settled to what its calls cost
    (``ledger``; ``niah.service.runs.spend_settlement``), and a sentinel's run has its check
    published to the alerts topic (``alerts``; ``niah.service.sentinel.check``), also by a
    redelivery that finds the report written but the check not yet published.

    Claims first, then reads: a reset while rendering drops the claim, and the run is
    marked complete only if the claim still stands and the counts match the cells read
    (``finish_report``). Otherwise the report is stale: it is reopened and requested
    again, so the cells as they are now are rendered. The claim is a short lease
    (``report_lease_seconds``) renewed while this renders (``keep_report_claim``): a
    renderer killed mid-render lets it lapse within a lease, and the sweep's next pass
    asks for the report again.

    A report that cannot be drawn from the run's data fails the same way every time: it
    is recorded on the run (``report_failed``) and acknowledged. Anything else (the
    store or the bucket out of reach) drops the claim and raises, so Pub/Sub delivers
    the request again, and dead-letters it at its limit (``record_report_dead_letter``).

    Returns the report's location, or None if the run is unknown, not finished, its
    report failed or went stale, or another instance is rendering it.
    """
    run = stored_run(store, run_id, counts=False)
    if run is None:
        log("report for an unknown run dropped", severity="WARNING", run_id=run_id)
        return None
    if store.count_cells(run_id) < run.total:
        log("report requested before the last cell", run_id=run_id)
        return None
    claim_id = uuid.uuid4().hex
    lease_seconds = get_settings().report_lease_seconds
    claim = store.claim_report(run_id, lease_seconds, claim_id)
    sentinel = run.spec.sentinel is not None
    if claim == "done":
        log("duplicate report request suppressed", run_id=run_id)
        done = stored_run(store, run_id, counts=False)
        if ledger is not None:  # a renderer killed before it settled: settled here
            settle_spent(run_id, store=store, ledger=ledger, run=done)
        if done is None:  # deleted since the claim
            return {}
        if sentinel and alerts is not None:
            publish_sentinel_alert(done, store=store, alerts=alerts)
        return dict(done.report or {})
    if claim == "failed":
        log("report failed before; not rendered until the run is reopened", run_id=run_id)
        return None
    if claim == "held":
        # Another renderer is at work: nothing to do here. If it dies, its claim lapses
        # within a lease and the sweep asks for the report again (``sweep_stalled_runs``).
        log("report being rendered elsewhere", run_id=run_id)
        return None
    keeper = keep_report_claim(store, run_id, claim_id, lease_seconds)
    try:
        with keeper:
            location = _render_claimed(run_id, claim_id, store=store, blobs=blobs, ledger=ledger)
    except Exception:
        # Let the next delivery render rather than find the claim held and drop it: so a
        # request that keeps failing is dead-lettered. Unless the keeper lost the claim
        # (a reset dropped it, or the store was out of reach a whole lease and another
        # renderer took it over): then it is not ours to drop.
        if not keeper.lost:
            try:
                store.reopen_report(run_id)
            except NiahError as error:
                log(
                    "report claim not dropped",
                    severity="WARNING",
                    run_id=run_id,
                    error=str(error),
                )
        raise
    # After the claim is let go: a publish that fails raises to be delivered again,
    # which finds the report done and publishes then (the report stays written).
    if location is not None and sentinel and alerts is not None:
        reported = stored_run(store, run_id, counts=False)  # the check, as stored
        if reported is not None:
            publish_sentinel_alert(reported, store=store, alerts=alerts)
    return location


def _render_claimed(
    run_id: str,
    claim_id: str,
    *,
    store: ResultStore,
    blobs: BlobStore,
    ledger: SpendLedger | None = None,
) -> dict[str, str] | None:
    """Read, render and store the report under ``claim_id``; see ``render_report``."""
    run = stored_run(store, run_id)  # with its counts and totals, read after the claim
    if run is None:  # deleted since the claim: nothing to report
        log("report for a deleted run dropped", severity="WARNING", run_id=run_id)
        return None
    cells = store.list_cells(run_id)
    if len(cells) < run.total:  # reset between the check and the claim
        store.reopen_report(run_id)
        log("report requested before the last cell", run_id=run_id, stored=len(cells))
        return None
    calls = store.list_calls(run_id)
    completed_at = dt.datetime.now(dt.UTC)  # on the page and the run document alike
    run = run.with_fields(stamps={**run.stamps, "completed_at": completed_at})
    try:
        summary = summarize(run, cells, calls)
        check = check_sentinel_run(run, cells, store=store)
        if check is not None:
            run = run.with_fields(sentinel_check=check)
        files = render_report_files(run, cells, summary)
    except RetryableError:
        raise
    except Exception as error:  # the run's data: the same every try, so never retried
        reason = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
        if record_report_failure(
            run_id, ReportRenderError.kind, reason, store=store, claim_id=claim_id
        ):
            if ledger is not None:  # no report, but its calls are spent: settled
                settle_spent(run_id, store=store, ledger=ledger, run=run)
            refresh_index(store, blobs)  # which says the report failed, and why
        return None
    location = write_report_files(run_id, files, blobs)
    fields: dict[str, Any] = {
        "report": location,
        "mean_score": summary["mean_score"],
        "measures": summary["measures"],
        **({"mrcr": summary["mrcr"]} if "mrcr" in summary else {}),
        # A run with an axis: each value's measures, and the later values against the
        # first (niah status shows them).
        **{key: summary[key] for key in ("variants", "variant_differences") if key in summary},
        "outcomes": summary["outcomes"],
        "retrieved_share": summary["retrieved_share"],
        "prompt_token_deviation": summary["prompt_token_deviation"],
        **({"count_fit": summary["count_fit"]} if summary.get("count_fit") else {}),
        "spend": summary["spend"],
        "served_models": summary["served_models"],
        "completed_at": completed_at,
        **({SENTINEL_CHECK: check} if check is not None else {}),
    }
    if not store.finish_report(run_id, claim_id, len(cells), fields):
        # A reset (or another renderer) came in while this one read and rendered: what
        # it wrote may be stale, and may have overwritten a fresher report. Reopen, so
        # the cells as they are now are rendered by the next request.
        log("report went stale while rendering", severity="WARNING", run_id=run_id)
        store.reopen_report(run_id)
        if store.count_cells(run_id) >= run.total:
            raise ReportPendingError(f"the report of {run_id} went stale; rendering again")
        return None
    log("report written", run_id=run_id, **location)
    if ledger is not None:
        settle_run_spend(run_id, settled_usd(summary["spend"]), ledger=ledger)  # as reported
    refresh_index(store, blobs)
    return location
