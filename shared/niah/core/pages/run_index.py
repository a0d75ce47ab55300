"""The index of every run: one page and one JSON beside the reports in the bucket.

Every run with its label, model (and what answered it, where that was another model),
task, status, mean with its 95 % interval, effective length, spend, creation time and
links; per task a leaderboard of models against lengths, as RULER's table (each
model's latest complete run); and per sentinel its trend, flagged runs marked. Built
from the run documents alone (one read per run, no counter shards), so any report, or
``niah index``, can rebuild it whole: there is no partial update to lose.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from typing import Any

from niah.core.interfaces import RUN_CANCELLED
from niah.core.pages.environment import content_security_policy, render
from niah.core.pages.sentinel_trend import sentinel_trends
from niah.core.results.effective import effective_length_text
from niah.core.results.measures import basis_of
from niah.core.results.served_models import answered_by_text
from niah.core.results.uncertainty import with_interval
from niah.core.runs import ListedRun

# The run document's fields the index reads (a Firestore projection: nothing else).
INDEX_FIELDS = (
    "model",
    "label",
    "spec.task",
    "status",
    "measures",
    "spend",
    "created_at",
    "report",
    "total",
    "served_models",
    "report_error",
    "spec.sentinel",
    "spec.scheduled_at",
    "sentinel_check",
)
INDEX_JSON = "index.json"
INDEX_HTML = "index.html"


def index_entry(run: ListedRun) -> dict[str, Any]:
    """What the index says of one run (its document's ``INDEX_FIELDS``)."""
    measures = run.figures.measures or {}
    created = run.created_at
    effective = measures.get("effective_length")
    report = run.report or {}
    spend = run.figures.spend or {}
    served = run.figures.served_models or {}
    check = run.sentinel_check or {}
    watch = run.watch
    # A run with an axis has no one mean (its pooled figures are for scripts): off the
    # leaderboards, and its values' lengths in the effective length's sentence.
    pooled = bool(measures.get("pooled_over_variants"))
    return {
        "run_id": run.run_id,
        "label": run.label,
        "model": run.model or None,
        # Kept by the report (runs reported before it was kept have none).
        "served_models": served,
        "answered_by": answered_by_text(run.model, served),
        "task": run.task,
        "status": run.status or "unknown",
        "samples": run.total,
        "mean": None if pooled else measures.get("mean"),
        "mean_interval": None if pooled else measures.get("mean_interval"),
        "mean_basis": None if pooled else basis_of(measures, "mean"),
        "mean_text": "per value of the axis (its report)" if pooled else _mean_text(run, measures),
        "effective_length": effective.get("length") if effective else None,
        "effective_length_text": effective_length_text(effective) if effective else "",
        "by_length": {}
        if pooled
        else {int(k): v for k, v in (measures.get("by_length") or {}).items()},
        "spend_usd": spend.get("usd"),
        "created_at": created.isoformat() if isinstance(created, dt.datetime) else created,
        "report_url": report.get("html_url"),
        "report_error": report_error_text(run.report_error),
        "heatmap_url": report.get("heatmap_url"),
        # A sentinel's run: which, when it was due, and what its check found.
        "sentinel": run.sentinel,
        "scheduled_at": run.scheduled_at,
        "sentinel_flagged": bool(check.get("flagged")),
        "sentinel_text": check.get("text") or "",
        # What the sentinel's test weighed (checks made before it kept none of these):
        # the run's share of every sample asked, their count, and the baseline's share.
        "sentinel_share": watch.get("share"),
        "sentinel_samples": watch.get("samples"),
        "sentinel_baseline": (watch.get("compared_with") or {}).get("share"),
    }


def report_error_text(error: Mapping[str, Any] | None) -> str:
    """Why the run's report failed (its ``report_error``; "" if none): kind and reason."""
    if not error:
        return ""
    reason = " ".join(str(error.get("reason") or "no reason recorded").split())  # one line
    return f"{error.get('kind', 'error')}: {reason}"


def _mean_text(run: ListedRun, measures: dict[str, Any]) -> str:
    """The mean with its interval; or why there is none (cancelled, failed, not yet)."""
    if measures:
        return with_interval(
            measures.get("mean"), measures.get("mean_interval"), basis=basis_of(measures, "mean")
        )
    if run.report_error:
        return f"none (report failed: {report_error_text(run.report_error)})"
    return "none (cancelled)" if run.status == RUN_CANCELLED else "not yet (no report)"


def leaderboards(entries: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per task: models (rows) against lengths (columns), each model's latest complete run."""
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    for entry in sorted(entries, key=lambda e: str(e["created_at"] or "")):
        if entry["status"] == "complete" and entry["by_length"]:
            latest[(entry["task"], str(entry["model"]))] = entry
    boards: dict[str, dict[str, Any]] = {}
    for (task, model), entry in sorted(latest.items()):
        board = boards.setdefault(task, {"lengths": set(), "rows": []})
        board["lengths"].update(entry["by_length"])
        board["rows"].append(
            {
                "model": model,
                "answered_by": entry["answered_by"],
                "run_id": entry["run_id"],
                "scores": entry["by_length"],
                "mean": entry["mean"],
            }
        )
    for board in boards.values():
        board["lengths"] = sorted(board["lengths"])
        board["rows"].sort(key=lambda row: -(row["mean"] or 0))
    return boards


def build_index(runs: list[ListedRun], now: dt.datetime | None = None) -> dict[str, Any]:
    """The index of ``runs`` (each read of ``INDEX_FIELDS``): newest first."""
    entries = sorted(
        (index_entry(run) for run in runs),
        key=lambda e: str(e["created_at"] or ""),
        reverse=True,
    )
    return {
        "generated_at": (now or dt.datetime.now(dt.UTC)).isoformat(timespec="seconds"),
        "runs": entries,
        "leaderboards": leaderboards(entries),
        "sentinels": sentinel_trends(entries),
    }


def index_json(index: dict[str, Any]) -> bytes:
    """The index as the bucket's ``index.json`` holds it."""
    return json.dumps(index, indent=1, default=str).encode()


def render_index_page(index: dict[str, Any]) -> str:
    """The index page: runs table (sortable, filterable) and a leaderboard per task.

    Its policy allows its one inline script by hash, and no request leaves the page.
    """
    return render("runs_index.html", index=index, policy=content_security_policy("runs_index.js"))
