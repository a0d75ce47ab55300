"""A batch job's output waited for until it holds the rows Google counted.

No Google page says a job's export is complete when its state turns terminal ("If the
batch prediction job is terminated, all completed rows are exported", Vertex AI "Batch
inference from Cloud Storage", read 2026-11-27, says what, not when). The job's
``completionStats`` (successful and failed rows; google-genai ``BatchJob.
completion_stats``) says how many lines its output must hold: a job is settled only
once the lines read reach that count, or once ``batch_output_wait_seconds`` have passed
since it ended, and then the rows never seen are recorded on the job
(``lines_never_seen``) and their cells fail saying so. A job that reports no
``completionStats`` (Google is silent on when it is set) is settled on what it wrote,
as before.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from niah.core.interfaces import BatchJob, BlobStore, Publisher, ResultStore
from niah.core.runs import RunRecord
from niah.logs import log
from niah.service.batch.manifest import output_files
from niah.service.batch.pieces import piece_messages
from niah.settings import get_settings


def expected_fields(now: BatchJob) -> dict[str, Any]:
    """What the job records of Google's counts: the lines its output must hold."""
    fields: dict[str, Any] = {}
    if now.stats is not None and now.stats.written is not None:
        fields["expected_lines"] = now.stats.written
        if now.stats.incomplete is not None:
            fields["incomplete_lines"] = now.stats.incomplete
    if now.output_dir:
        fields["output_dir"] = now.output_dir
    return fields


def still_waiting(job: dict[str, Any]) -> dict[str, Any] | None:
    """The fields of a job that waits for late output; None once the wait is over.

    The wait starts the first time output is found short (``output_wait_since``).
    """
    now = dt.datetime.now(dt.UTC)
    since = job.get("output_wait_since") or now
    if (now - since).total_seconds() >= get_settings().batch_output_wait_seconds:
        return None
    return {"output_wait_since": since}


def never_seen_reason(job: dict[str, Any], read: int) -> str:
    """Why a job's cells fail when the rows Google counted never appeared."""
    return (
        f"batch job {job['name']} ended {job.get('state')} and Google counted "
        f"{job['expected_lines']} rows (completionStats), but only {read} appeared in its "
        f"output within {get_settings().batch_output_wait_seconds:g} s "
        "(batch_output_wait_seconds); resume the run to submit the rest again"
    )


def late_output(
    run: RunRecord,
    job: dict[str, Any],
    lines_read: int,
    *,
    store: ResultStore,
    blobs: BlobStore,
    publisher: Publisher,
) -> str | None:
    """Read late files, or wait for them, while a job's output is short of its count.

    None: settle now (the count is reached, none was given, or the wait is over).
    Otherwise what was done: new files found are added to the job's ingest and their
    pieces published; none yet, the job waits (the next poll asks again).
    """
    run_id = run.run_id
    expected = job.get("expected_lines")
    if expected is None or lines_read >= int(expected):
        return None
    where = job.get("output_dir") or job.get("output")
    known = {file["name"] for file in job["ingest"]["files"]}
    fresh = [info for info in output_files(where, blobs) if info.name not in known] if where else []
    if fresh:
        files = job["ingest"]["files"] + [{"name": i.name, "size": i.size} for i in fresh]
        store.update_batch_job(run_id, job["name"], {"ingest": {"files": files}})
        publisher.publish_cells(piece_messages(run, job["name"], fresh))
        log("late batch output found", run_id=run_id, job=job["name"], files=len(fresh))
        return "reading late output"
    waiting = still_waiting(job)
    if waiting is None:
        return None
    store.update_batch_job(run_id, job["name"], waiting)
    log("batch output short of its completionStats; waiting", run_id=run_id, job=job["name"],
        read=lines_read, expected=expected)  # fmt: skip
    return "waiting for output"
