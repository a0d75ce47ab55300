"""Dispatch: record an admitted run and publish its cells (or its primer, or a batch round).

The request is read and checked first (``niah.service.runs.admission_checks``) and its spend
held (``niah.service.runs.admission``); this module expands the grid into the run record,
tells a new run from a repeated request, and publishes what is missing.
"""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass, field
from typing import Any

from niah.catalog.availability import notes_of
from niah.catalog.models import ModelInfo, find_model, temperature_record
from niah.core.interfaces import (
    RUN_CANCELLED,
    RUN_COMPLETE,
    RUN_REPORT_FAILED,
    RUN_RUNNING,
    BlobInfo,
    BlobStore,
    Publisher,
    ResultStore,
    SpendLedger,
)
from niah.core.money.holds import ADMIT
from niah.core.prompts.answer_budget import CallBudget, call_budget
from niah.core.prompts.mrcr_files import RunSource
from niah.core.request.callers import LOCAL_CALLER
from niah.core.request.grid import Cell
from niah.core.request.spec import RunRequest
from niah.core.results.certify_run import certify_cells, first_samples, plan_record
from niah.core.results.counters import shard_totals, shards_for
from niah.core.runs import RunRecord, run_label, stored_run
from niah.errors import RequestError
from niah.logs import log
from niah.service.messages import primer_message
from niah.service.runs.admission import REASKS, admit_request
from niah.service.runs.admission_checks import check_request
from niah.service.runs.missing_cells import publish_missing, taken_cells
from niah.service.runs.sources import listed_files, source_cells
from niah.settings import get_settings

# A repeated request within this long of the run's last publish publishes nothing: its
# cells are on their way (a client's retry, or twenty identical POSTs at once).
DISPATCH_SETTLE_SECONDS = 60.0


@dataclass(frozen=True)
class Dispatched:
    """What the dispatcher answers: the run, how much was published, what to heed."""

    run_id: str
    cells: int
    published: int
    already_complete: bool
    created: bool
    reused: int = 0
    retried: int = 0
    warnings: list[str] = field(default_factory=list)
    # The run is cancelled and was left so (a request without resume publishes nothing).
    cancelled: bool = False


@dataclass(frozen=True)
class _Progress:
    """What an existing run already holds: stored cells and failed cells reset."""

    stored: set[str]
    retried: int
    already_complete: bool
    # The run as stored (its stamp goes into every message).
    run: RunRecord
    # Its cells were just published (or wait on its primer): publish nothing now.
    in_progress: bool = False
    # Cancelled, and not resumed by this request: publish nothing.
    cancelled: bool = False


def run_record(
    run_id: str,
    spec: RunRequest,
    haystack_uri: str,
    source: RunSource | None = None,
    *,
    model: ModelInfo | None = None,
    cells: list[Cell] | None = None,
    budget: CallBudget | None = None,
    haystack_files: list[BlobInfo] | None = None,
) -> RunRecord:
    """The record a new run starts with, built once from what admission resolved.

    ``stamp`` tells this run from one created later under the same ID (after a
    delete): every cell message carries it, and a worker drops a message whose stamp
    is not its run's. ``model``, ``cells``, ``budget``: the catalog's entry, the grid and
    the call budget where admission worked them out (``CheckedRequest``; worked out here
    otherwise, as a test that builds a record alone does).
    """
    model = model or spec.catalog_model()
    certify: dict[str, Any] | None = None
    if spec.is_certify():  # its first round; each round's answers choose the next
        # Kept, so every replay decides with the budget and prices it began with.
        plan = plan_record(spec, get_settings().max_cells_per_run)
        first = first_samples(spec, plan)
        certify = {"samples": {str(n): k for n, k in first.items()}, "plan": plan}
        cells = certify_cells(spec, first)
    elif cells is None:
        cells = source_cells(source.rows) if source else spec.cells()
    budget = budget or call_budget(spec, source.reply_tokens if source else 0, model=model)
    shards = shards_for(len(cells), get_settings().counter_shards)
    spec_json = spec.model_dump(mode="json")
    judge = find_model(spec.evaluator_model_name) if spec.evaluator_model_name else None
    listed = listed_files(haystack_files or [])
    return RunRecord(
        run_id=run_id,
        spec=spec,
        stamp=uuid.uuid4().hex[:16],
        model=spec.model_name,
        # Google's word on the models' lifecycle when the run began (a retired model
        # called anyway says so here, on every page that shows the run).
        model_notes=tuple(notes_of(model, judge)),
        label=spec.label or run_label({"model": spec.model_name, "spec": spec_json}),
        version=spec.results_version,
        scorer=spec.scorer_name(),
        haystack_uri=haystack_uri,
        haystack_files=tuple(haystack_files or ()) if listed else None,
        status=RUN_RUNNING,
        # How the model is called, stated with every result (MRCR v2's README asks it).
        call_settings={
            "temperature": temperature_record(model),
            "thinking_budget": spec.thinking_budget,  # None: the model's default
            "thinking_level": spec.thinking_level,
            # The answer budget each call gets: the answer's room plus the thinking room
            # (niah.core.prompts.answer_budget), or the run's own max_output_tokens.
            "max_output_tokens": budget.max_output_tokens,
            "answer_tokens": budget.answer_tokens,
            "thinking_tokens": budget.thinking_tokens,
            "tools": False,
            # Online, call by call, or batch jobs at batch prices.
            "execution": "batch" if spec.is_batch() else "online",
        },
        total=len(cells),
        # The counter shards, sized to the run, and what each will count: a worker
        # checks the run only when its shard is full (niah.core.results.counters).
        counter_shards=shards,
        shard_totals=shard_totals((c.cell_id for c in cells), shards),
        source_files=tuple(source.files) if source else None,
        source_rows=tuple(
            {"file": f, "row": r, "tokens": n, "offset": at, "length": size}
            for f, r, n, at, size in source.rows
        )
        if source
        else None,
        certify=certify,
    )


def _progress(existing: RunRecord, *, resume: bool, store: ResultStore) -> _Progress:
    """For a run that already exists: keep answered cells, reset failed ones when asked.

    Failed cells are retried when the run had finished or ``resume`` says so; a
    finished run with nothing failed is left as it is. Nothing paid for is asked again.
    A run whose report failed is finished too, and its report is tried again.
    """
    run_id = existing.run_id
    if existing.status == RUN_CANCELLED:
        if not resume:
            return _Progress(set(), 0, already_complete=False, cancelled=True, run=existing)
        return _resume_cancelled(existing, store=store)
    report_failed = existing.status == RUN_REPORT_FAILED
    if report_failed:  # reopened: its report is asked for below (``publish_missing``)
        store.reopen_report(run_id)
        log("failed report asked for again", run_id=run_id)
    finished = existing.status == RUN_COMPLETE or report_failed
    retried = 0
    # A certify run's failed samples stay failed: each was replaced by a new one, and
    # scored now they would change what the rounds saw (niah.core.results.certify_run).
    if existing.failed > 0 and (finished or resume) and not existing.is_certify:
        retried = store.reset_failed_cells(run_id, shards=existing.counter_shards)
    elif finished and not report_failed:
        return _Progress(set(), 0, already_complete=True, run=existing)
    elif dispatch_in_progress(existing) and not report_failed:
        return _Progress(set(), 0, already_complete=False, in_progress=True, run=existing)
    return _Progress(taken_cells(run_id, store), retried, already_complete=False, run=existing)


def _resume_cancelled(run: RunRecord, *, store: ResultStore) -> _Progress:
    """Set a cancelled run running again: its missing and failed cells are published.

    Running before anything is published, so no worker drops the new messages. Its
    primer counts as released: whatever the cancel held back is published now, at once
    (a primer left unanswered is published with the rest).
    """
    store.update_run(
        run.run_id,
        {"status": RUN_RUNNING, "primer_released": True, "resumed_at": dt.datetime.now(dt.UTC)},
    )
    retried = (  # a certify run's failed samples are kept: see _progress
        store.reset_failed_cells(run.run_id, shards=run.counter_shards)
        if run.failed > 0 and not run.is_certify
        else 0
    )
    log("cancelled run resumed", run_id=run.run_id)
    resumed = run.with_fields(status=RUN_RUNNING, primer_released=True)
    return _Progress(taken_cells(run.run_id, store), retried, already_complete=False, run=resumed)


def dispatch_in_progress(run: RunRecord) -> bool:
    """Whether a run's cells are on their way: a repeated request publishes none then.

    In progress while its primer is unanswered (its answer publishes the rest), and for
    ``DISPATCH_SETTLE_SECONDS`` after its cells were last published. A run stuck past
    that is the sweep's (``sweep_stalled_runs``), or a later request's.
    """
    if run.primer_cell and not run.primer_released:
        return True
    stamps = [run.stamped("published_at"), run.stamped("created_at")]
    last = max((stamp for stamp in stamps if isinstance(stamp, dt.datetime)), default=None)
    return last is not None and (dt.datetime.now(dt.UTC) - last).total_seconds() < (
        DISPATCH_SETTLE_SECONDS
    )


def dispatch_run(
    payload: Any,
    *,
    store: ResultStore,
    publisher: Publisher,
    blobs: BlobStore,
    resume: bool = False,
    ledger: SpendLedger | None = None,
    caller: str = LOCAL_CALLER,
    sentinel_route: bool = False,
) -> Dispatched:
    """Validate, record and fan out a run; idempotent for a repeated request.

    The run ID is derived from the request and the haystack's content, so a client
    that retries gets the same run back and workers skip the cells already answered.
    ``ledger``: where spend is held against the ceilings (none: unlimited, as in tests
    of other concerns); ``caller``: who asks (``niah.core.request.callers``);
    ``sentinel_route``: the request is a sentinel's firing (``niah.service.sentinel.firing``),
    the only way a sentinel's run is started (asked again, or resumed, it may come by
    the plain route).
    """
    checked = check_request(payload, blobs)
    spec, run_id, warnings = checked.spec, checked.run_id, checked.warnings
    stored = stored_run(store, run_id)
    if spec.sentinel is not None and not sentinel_route and stored is None:
        raise RequestError(
            "sentinel",
            "a sentinel's run is started by its firing only (`niah sentinel run NAME`, "
            'or POST {"sentinel": NAME} to /sentinel); leave sentinel and scheduled_at '
            "out of a run request",
        )
    record = run_record(
        run_id,
        spec,
        f"gs://{blobs.bucket}/{checked.haystack_prefix}",
        checked.source,
        model=checked.model,
        cells=checked.cells,
        budget=checked.budget,
        haystack_files=checked.haystack_files,
    ).with_fields(sentinel_key=checked.request_key)
    primer = primer_message(record)
    if primer is not None:  # until it is answered, the run's dispatch is in progress
        record = record.with_fields(primer_cell=primer["cell_id"])
    admitted = admit_request(
        record,
        checked.cells,
        checked.budget,
        stored,
        ledger=ledger,
        caller=caller,
        resume=resume,
    )
    record = record.with_fields(created_by=admitted.created_by, worst_case=admitted.worst_case)
    # A run not stored now (the store down) keeps its hold: a retried POST finds it taken,
    # and the sweep settles a hold whose run never was (niah.service.runs.spend_settlement).
    created = store.create_run(run_id, record.to_document())
    if not created and spec.label is not None:
        # The label names the run for people, not its results: asked again under
        # another, the run is relabelled (and nothing else changes).
        store.update_run(run_id, {"label": spec.label})
    # Read again: admission took time, and another request may have created it since.
    existing = None if created else stored_run(store, run_id)
    progress = (
        _Progress(set(), 0, False, run=record)
        if existing is None
        else _progress(existing, resume=resume, store=store)
    )
    resumed = resume and stored is not None and stored.cancelled
    if admitted.hold not in (None, ADMIT) and (progress.retried or resumed):
        # Cells were asked again under this re-ask's hold; the next re-ask (whether or
        # not this one publishes now) takes a hold of its own.
        store.update_run(run_id, {REASKS: progress.run.reasks + 1})
    if progress.already_complete:
        log("run already complete", run_id=run_id)
        return Dispatched(run_id, record.total, 0, True, created=False, warnings=warnings)
    if progress.cancelled:
        log("cancelled run asked again: nothing published", run_id=run_id)
        note = (
            f"run {run_id} is cancelled: nothing was published. Resume it with "
            f"`niah run --resume {run_id}` (answered cells are kept)"
        )
        return Dispatched(
            run_id, record.total, 0, False, created=False, warnings=[*warnings, note],
            cancelled=True,
        )  # fmt: skip
    if progress.in_progress:
        log("run being dispatched: nothing published again", run_id=run_id)
        note = (
            "the run's cells were published moments ago or wait on its first cell: "
            "nothing was published again"
        )
        return Dispatched(run_id, record.total, 0, False, created=False, warnings=[*warnings, note])
    run_now = progress.run
    if spec.is_batch() and not created and (resume or progress.retried):
        run_now = start_batch_round(run_now, store=store)
    published = (
        publisher.publish_cells([primer])
        if created and primer is not None
        else publish_missing(run_now, progress.stored, store=store, publisher=publisher)
    )
    if not created and published:
        store.update_run(run_id, {"published_at": dt.datetime.now(dt.UTC)})
    log(
        "run dispatched",
        run_id=run_id,
        cells=record.total,
        created=created,
        published=published,
        reused=len(progress.stored),
        retried=progress.retried,
    )
    return Dispatched(
        run_id,
        record.total,
        published,
        already_complete=False,
        created=created,
        reused=len(progress.stored),
        retried=progress.retried,
        warnings=warnings,
    )


def start_batch_round(run: RunRecord, *, store: ResultStore) -> RunRecord:
    """A resumed batch run's next round: its unfinished jobs are left, its cells submitted anew.

    The run as updated (its ``batch_round`` one more); unchanged while a job of it is
    still open and not cancelled (a resume of a running batch run would pay twice).
    """
    if any(
        not (job.get("ingested") or job.get("ended") or job.get("superseded"))
        and not job.get("cancel_sent")
        for job in run.batch_jobs
    ):
        return run
    jobs = [
        dict(job) | ({"superseded": True} if not (job.get("ingested") or job.get("ended")) else {})
        for job in run.batch_jobs
    ]
    store.update_run(run.run_id, {"batch_round": run.batch_round + 1, "batch_jobs": jobs})
    return run.with_fields(batch_round=run.batch_round + 1, batch_jobs=tuple(jobs))
