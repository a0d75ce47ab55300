"""A batch job settled once its output is read: the fate of the cells it left unstored.

Once, under a claim: lines of cells that share a prompt are paired and stored, then the
job's unstored cells are failed (a job that matched nothing, ended early, or failed
systemically) or sent online (at most ``batch_online_fallback_max``). Failing many cells
is fanned out as messages, so no call outlives the function.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from niah.core.interfaces import (
    BATCH_PARTIAL,
    BATCH_SUCCEEDED,
    CLAIM_HELD,
    BlobStore,
    Publisher,
    ResultStore,
)
from niah.core.runs import RunRecord, stored_run
from niah.errors import BatchJobError, CellInFlightError, NiahError
from niah.logs import log
from niah.models.providers import get_provider
from niah.models.providers.gemini import answer_from_json
from niah.service.batch.manifest import job_cells, prompt_groups, run_tasks
from niah.service.batch.markers import tally_markers
from niah.service.batch.output import OutputReader, reason_key
from niah.service.batch.pieces import job_key
from niah.service.batch.wait import late_output, never_seen_reason
from niah.service.cells.deps import ProviderFactory
from niah.service.cells.records import failed_cell, store_cell
from niah.service.cells.run_view import RunView, record_view
from niah.service.lease import LeaseKeeper
from niah.service.messages import (
    BATCH_SUBMIT,
    batch_message,
    fail_messages,
    settle_message,
)
from niah.service.runs.completion import request_report_if_complete
from niah.settings import get_settings


def settle_job(
    run_id: str,
    job_name: str,
    *,
    store: ResultStore,
    blobs: BlobStore,
    publisher: Publisher,
    provider_for: ProviderFactory = get_provider,
) -> str:
    """Decide the fate of a job's unstored cells, once; mark it ingested (or failed).

    Lines of cells that share a prompt are stored first, paired with those cells in a
    fixed order, ``batch_settle_lines`` a call: a settle with more hands the rest to a
    new message, so no call outlives the function however many there are.
    """
    settings = get_settings()
    key = f"batch-settle-{job_key(job_name)}"
    claim = store.claim_cell(run_id, key, settings.cell_lease_seconds)
    if claim == CLAIM_HELD:
        raise CellInFlightError(f"job {job_name} of {run_id} is being settled")
    try:
        with LeaseKeeper(store, run_id, key, claim, settings.cell_lease_seconds):
            run = stored_run(store, run_id, counts=False)
            job = run.batch_job(job_name) if run is not None else None
            if run is None or job is None or job.get("ingested") or job.get("ended"):
                return "settled already"
            seen = tally_markers(run_id, job, blobs)
            later = late_output(run, job, seen["lines"], store=store, blobs=blobs,
                                publisher=publisher)  # fmt: skip
            if later is not None:
                return later
            piece = OutputReader(run, job, store=store, blobs=blobs,
                           publisher=publisher, provider_for=provider_for)  # fmt: skip
            if not _store_shared(piece, seen["shared"], settings.batch_settle_lines):
                publisher.publish_cells([settle_message(run, job_name)])
                return "settling"
            fields = _settle(run, job, seen, store=store, blobs=blobs,
                             publisher=publisher)  # fmt: skip
            run_fields = fields.pop("run_fields", {})
            store.update_batch_job(run_id, job_name, fields)  # this job's document alone
            if run_fields:
                store.update_run(run_id, run_fields)
    finally:
        store.release_cell(run_id, key, claim)
    then = job.get("then_submit")
    if then is not None and run.batch_round == int(then):
        publisher.publish_cells([batch_message(run, BATCH_SUBMIT)])
    request_report_if_complete(run_id, store=store, publisher=publisher)
    return "settled"


def _store_shared(piece: OutputReader, shared: list[list[str]], limit: int) -> bool:
    """Store answered lines of shared prompts, at most ``limit``; True when none is left.

    Within a prompt's group, lines in file order go to cells in input order: the pairing
    depends on nothing but the output, so a redelivered settle makes the same pairs and
    finds them stored.
    """
    lines_of: dict[str, list[str]] = {}
    for line_id, digest in shared:
        lines_of.setdefault(digest, []).append(line_id)
    todo = [
        (cell, line_id)
        for digest, lines in sorted(lines_of.items())
        for cell, line_id in zip(
            piece.groups.get(digest, []), sorted(lines, key=_line_order), strict=False
        )
        if cell not in piece.stored and cell in piece.tasks
    ]
    stored = 0
    for cell, line_id in todo[:limit]:
        try:
            answer = answer_from_json(piece.read_line(line_id)["response"])
        except (NiahError, ValueError, KeyError, TypeError) as error:
            # Left to the settle's decision as a missing cell.
            log("shared batch line unreadable", severity="WARNING", run_id=piece.run_id,
                line=line_id, error=str(error)[:300])  # fmt: skip
            continue
        piece.store_line(cell, answer, line_id)
        stored += 1
    # Done when all fitted in this call, or when a call stored none (only unreadable
    # lines are left): never a chain of calls that stores nothing.
    return len(todo) <= limit or stored == 0


def _line_order(line_id: str) -> tuple[str, int]:
    """A line's place in the job's output: its file, then its offset."""
    name, _, offset = line_id.rpartition("@")
    return name, int(offset)


def _settle(
    run: RunRecord,
    job: dict[str, Any],
    seen: dict[str, Any],
    *,
    store: ResultStore,
    blobs: BlobStore,
    publisher: Publisher,
) -> dict[str, Any]:
    run_id = run.run_id
    settings = get_settings()
    cells = job_cells(job, blobs)
    stored = store.cell_ids(run_id)
    missing = [cell for cell in cells if cell not in stored]
    counts = {
        "lines_read": seen["lines"],
        "lines_stored": len(cells) - len(missing),
        "lines_duplicate": seen["duplicate"],
        "lines_unmatched": seen["unmatched"],
        "lines_unreadable": len(seen["unreadable"]),
        "lines_failed": len(seen["failed"]),
    }
    if seen["unmatched_answered"]:
        counts["unmatched_cost_usd"] = round(seen["unmatched_usd"], 6)
    usable = seen["lines"] - seen["unmatched"] - len(seen["unreadable"])
    if seen["lines"] and usable <= 0:
        why = (
            "their echoed requests differ from what was sent"
            if seen["unmatched"]
            else f"none could be read ({seen['unreadable'][0][1]})"
        )
        reason = (
            f"none of the {seen['lines']} output lines of batch job {job['name']} matched a "
            f"cell of the run ({why}); nothing was stored from it. Resume the run to submit "
            "its cells again"
        )
        log("batch output matched no cell", severity="ERROR", run_id=run_id, job=job["name"])
        fail_cells(run, missing, BatchJobError(reason), store=store, blobs=blobs,
                   publisher=publisher)  # fmt: skip
        return counts | {"ended": True, "error": reason, "run_fields": {"batch_error": reason}}
    ended = job.get("state") not in BATCH_SUCCEEDED
    never_seen = max(0, int(job.get("expected_lines") or 0) - seen["lines"])
    if never_seen:  # the wait for late output is over (``batch_wait``)
        counts["lines_never_seen"] = never_seen
    waiting = job.get("superseded") or run.cancelled
    if waiting or not missing:
        # A cancelled or superseded run's other cells wait for its next round.
        return counts | {"ingested": True}
    if not ended and (job.get("state") == BATCH_PARTIAL or never_seen):
        # Lines the job never wrote are not failed lines: they are refused here, with
        # the reason, for the next round; only cells of failed lines may go online.
        retry = _cells_of_failed_lines(job, seen, missing, blobs)
        unwritten = [cell for cell in missing if cell not in retry]
        reason = never_seen_reason(job, seen["lines"]) if never_seen else (
            f"batch job {job['name']} ended {BATCH_PARTIAL} without writing "
            f"{len(unwritten)} of its {len(cells)} lines; they were not bought online. "
            "Resume the run to submit them in batch again"
        )  # fmt: skip
        fail_cells(run, unwritten, BatchJobError(reason), store=store,
                   blobs=blobs, publisher=publisher)  # fmt: skip
        counts["lines_unwritten"] = len(unwritten)
        missing = retry
        if not missing:
            return counts | {"ingested": True, "error": reason}
    if ended:
        reason = never_seen_reason(job, seen["lines"]) if never_seen else (
            f"batch job {job['name']} ended {job.get('state')}"
            + (f": {job['error']}" if job.get("error") else "")
            + f", after writing {seen['lines']} of {len(cells)} lines (kept); resume the run "
            "to submit the rest again"
        )  # fmt: skip
        fail_cells(run, missing, BatchJobError(reason), store=store, blobs=blobs,
                   publisher=publisher)  # fmt: skip
        return counts | {"ingested": True}
    if seen["unmatched_answered"]:
        # Some answered lines found no cell: their cells may be among the missing, and
        # buying those online would pay twice. They fail, saying why.
        reason = (
            f"{seen['unmatched_answered']} answered lines of batch job {job['name']} matched "
            "no cell (their echoed requests differ from what was sent; Google billed them), "
            "so the job's unanswered cells were not bought again online. Resume the run to "
            "submit them in batch again"
        )
        fail_cells(run, missing, BatchJobError(reason), store=store, blobs=blobs,
                   publisher=publisher)  # fmt: skip
        return counts | {"ingested": True, "error": reason}
    failures = [reason for _, reason in seen["failed"]] + [r for _, r in seen["unreadable"]]
    systemic = _systemic(failures, len(cells))
    if systemic is not None:
        reason, count = systemic
        message = (
            f"{count} of {len(cells)} lines of batch job {job['name']} failed with the same "
            f"reason ({reason}): a fault of the deployment or the service, not of a line, "
            "so they were not bought again online. Fix the cause, then resume the run"
        )
        log("batch lines failed systemically", severity="ERROR", run_id=run_id, reason=reason,
            lines=count)  # fmt: skip
        fail_cells(run, missing, BatchJobError(message), store=store, blobs=blobs,
                   publisher=publisher)  # fmt: skip
        return counts | {"ingested": True, "systemic": reason,
                         "run_fields": {"batch_stopped": message}}  # fmt: skip
    cap = settings.batch_online_fallback_max
    online, over = missing[:cap], missing[cap:]
    tasks = {task.cell_id: task for task in run_tasks(run, stored)}
    publisher.publish_cells([tasks[cell].message() for cell in online if cell in tasks])
    if over:
        fail_cells(run, over, BatchJobError(
            f"{len(missing)} lines of batch job {job['name']} failed; {cap} went online (the "
            "cap, batch_online_fallback_max), these did not. Resume the run to submit them "
            "in batch again"), store=store, blobs=blobs, publisher=publisher)  # fmt: skip
    log("failed batch lines sent online", run_id=run_id, cells=len(online), capped=len(over),
        reasons=dict(Counter(map(reason_key, failures))))  # fmt: skip
    return counts | {"ingested": True, "lines_retried_online": len(online)}


def _cells_of_failed_lines(
    job: dict[str, Any], seen: dict[str, Any], missing: list[str], blobs: BlobStore
) -> list[str]:
    """The missing cells the job wrote a failed line for (one cell per line, input order)."""
    groups, _ = prompt_groups(job, blobs)
    failed_per_prompt = Counter(digest for _, digest in seen.get("failed_prompts") or [])
    unstored = set(missing)
    return [
        cell
        for digest, count in sorted(failed_per_prompt.items())
        for cell in [c for c in groups.get(digest or "", []) if c in unstored][:count]
    ]


def _systemic(reasons: list[str], lines: int) -> tuple[str, int] | None:
    """The reason (an example, and how many) too common to be one line's fault.

    Every line of the job (two or more), or the set share of them.
    """
    settings = get_settings()
    if not reasons:
        return None
    groups = Counter(map(reason_key, reasons))
    key, count = groups.most_common(1)[0]
    floor = max(settings.batch_systemic_min_lines, settings.batch_systemic_share * lines)
    if count >= floor or (count == lines and lines >= 2):
        return next(r for r in reasons if reason_key(r) == key), count
    return None


def fail_cells(
    run: RunRecord,
    cell_ids: list[str],
    error: BatchJobError,
    *,
    store: ResultStore,
    blobs: BlobStore,
    publisher: Publisher,
) -> None:
    """Store ``cell_ids`` failed with ``error`` (those still unstored), so the run ends.

    A few at once; more as messages of ``batch_fail_cells`` cells each, so failing a
    200,000-line job's cells never outlives the function.
    """
    stored = store.cell_ids(run.run_id)  # read once: it was read again for every cell
    wanted = [cell for cell in cell_ids if cell not in stored]
    step = get_settings().batch_fail_cells
    if len(wanted) > step:
        publisher.publish_cells(fail_messages(run, wanted, str(error), step=step))
        return
    store_failed(run, wanted, error, store=store, blobs=blobs, publisher=publisher)


def store_failed(
    run: RunRecord,
    cell_ids: list[str],
    error: BatchJobError,
    *,
    store: ResultStore,
    blobs: BlobStore,
    publisher: Publisher,
) -> None:
    """Store each of ``cell_ids`` (cells of the run, not yet stored) failed with ``error``."""
    wanted = set(cell_ids)
    view: RunView = record_view(run)
    for task in run_tasks(run, store.cell_ids(run.run_id)):
        if task.cell_id in wanted:
            store_cell(task, failed_cell(task, run.spec, error), {}, store=store, blobs=blobs,
                       publisher=publisher, run=view)  # fmt: skip
