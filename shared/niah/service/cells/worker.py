"""The worker's job: one cell from message to stored result, idempotently.

The entry points the worker function calls (``process_cell``, ``record_dead_letter``):
the run checked, the message trusted only if it is one of the run's cells, the cell
claimed under a lease (one paid call per cell, whatever the deliveries), then answered
(``niah.service.cells.answer``) and recorded (``niah.service.cells.records``).
"""

from __future__ import annotations

import datetime as dt
import math
import time
from concurrent.futures import Future
from functools import partial
from typing import Any

from niah.core.interfaces import (
    CLAIM_ABANDONED,
    CLAIM_HELD,
    CLAIM_STORED,
    BlobStore,
    Publisher,
    ResultStore,
)
from niah.core.request.axes import variants
from niah.core.results.certify_run import SAMPLES_PER_POINT
from niah.core.runs import stored_run
from niah.errors import CellInFlightError, DeadLetteredError, RetryableError, WorkerDiedError
from niah.logs import describe, log
from niah.models.providers import get_provider
from niah.models.tokenizer import get_tokenizer
from niah.service.cells.answer import answer_claimed
from niah.service.cells.deps import ProviderFactory, TokenizerFactory, WorkerDeps
from niah.service.cells.prepared import in_background, prepare_cell
from niah.service.cells.records import Outcome, failed_cell, kept_answer, store_cell
from niah.service.cells.run_view import (
    RunView,
    current_run,
    known_run,
    last_seen_cancelled,
    live_view,
)
from niah.service.lease import LeaseKeeper, watch_holder
from niah.service.messages import CellTask
from niah.service.runs.completion import request_report_if_complete
from niah.service.runs.missing_cells import release_after_primer
from niah.service.runs.sweep import republish_lost
from niah.settings import get_settings


def process_cell(
    task: CellTask,
    *,
    store: ResultStore,
    blobs: BlobStore,
    publisher: Publisher,
    provider_for: ProviderFactory = get_provider,
    tokenizer_for: TokenizerFactory | None = None,
) -> Outcome:
    """Build, ask, score and store one cell; ask for the report after the last one.

    Raises ``RetryableError`` for transient failures (the message is redelivered);
    permanent failures are stored on the cell as an error. A primer, once stored or
    failing, releases its run's other cells. The tokenizer's model comes from the
    bucket unless ``tokenizer_for`` says otherwise.
    """
    deps = WorkerDeps(
        store,
        blobs,
        publisher,
        provider_for,
        tokenizer_for or partial(get_tokenizer, blobs=blobs),
    )
    try:
        outcome = _process_cell(task, deps)
    except CellInFlightError:
        raise  # the primer's other delivery releases the rest
    except RetryableError:
        _release_if_primer(task, store=store, publisher=publisher)
        raise
    if outcome not in ("orphan", "rejected", "cancelled"):  # a duplicate too: a release may fail
        _release_if_primer(task, store=store, publisher=publisher)
    return outcome


def _release_if_primer(task: CellTask, *, store: ResultStore, publisher: Publisher) -> int:
    """Publish the run's held cells once its primer is done with (released once); how many."""
    if not task.primer:
        return 0
    if current_run(store, task.run_id, task.run_stamp) is None:
        return 0
    return release_after_primer(task.run_id, store=store, publisher=publisher)


def _republish_after_death(task: CellTask, *, store: ResultStore, publisher: Publisher) -> None:
    """Hand on what a death lost, once a delivery took over the dead holder's cell.

    The holder's worker may have been serving other pushes of the run, which Pub/Sub
    redelivers only after their ack deadline; published again now (at most once per
    quiet spell of the run, however many deliveries find deaths at once), they are
    answered within seconds. Never fails the cell: the sweep does the same a minute on.
    """
    try:
        run = stored_run(store, task.run_id, counts=False)
        last = run.stamped("lost_republished_at") if run is not None else None
        recent = (
            isinstance(last, dt.datetime)
            and (dt.datetime.now(dt.UTC) - last).total_seconds()
            < get_settings().sweep_quiet_after_seconds
        )
        if run is None or recent:
            return
        republish_lost(run, store=store, publisher=publisher,
                       reason="holder died (found by a delivery)")  # fmt: skip
    except Exception as error:
        log("lost messages not published again", severity="WARNING", run_id=task.run_id,
            error=describe(error))  # fmt: skip


def _process_cell(task: CellTask, deps: WorkerDeps) -> Outcome:
    """Check the run and the message, claim the cell, and answer it under its lease.

    A run this instance has read before is checked for liveness while the cell is
    claimed and its call readied (``niah.service.cells.prepared``): three waits at once
    where they were three in a row. A cell of a run gone or cancelled meanwhile lets
    go of its claim unanswered; nothing readied is paid for.
    """
    store, publisher = deps.store, deps.publisher
    known = known_run(task.run_id, task.run_stamp)
    if known is not None and not last_seen_cancelled(known):
        run: RunView | None = known
        liveness: Future[RunView | None] | None = in_background(live_view, store, known)
    else:
        run, liveness = current_run(store, task.run_id, task.run_stamp), None
    problem = _not_of_the_run(task, run) if run is not None else None
    if problem is not None and liveness is not None:
        run, liveness = liveness.result(), None  # a rejection is said of a live run only
    if run is None or run.cancelled:
        return _dropped(task, run)
    spec = run.spec
    if problem is not None:
        # Forged or corrupted: no model call, no count, acknowledged.
        log("cell message rejected", severity="ERROR", run_id=task.run_id, problem=problem)
        return "rejected"
    preparing = in_background(prepare_cell, task, run, deps)
    settings = get_settings()
    claimed_at = time.monotonic()  # the claim's request sent: its lease counts from here
    claim = store.claim_cell(
        task.run_id,
        task.cell_id,
        settings.cell_lease_seconds,
        max_lapses=settings.max_cell_failures,
    )
    if claim == CLAIM_HELD:
        seen = watch_holder(store, task.run_id, task.cell_id, settings.cell_lease_seconds)
        if seen != "alive":
            log("cell's holder gone", run_id=task.run_id, cell_id=task.cell_id, seen=seen)
            claimed_at = time.monotonic()
            claim = store.claim_cell(
                task.run_id,
                task.cell_id,
                settings.cell_lease_seconds,
                max_lapses=settings.max_cell_failures,
            )
            if seen == "lapsed" and claim >= 1:
                _republish_after_death(task, store=store, publisher=publisher)
    if liveness is not None:
        try:
            live = liveness.result()
        except BaseException:
            if claim >= 1:  # the store failed us: the next delivery may claim at once
                _let_go(task, store, claim)
            raise
        if live is None or live.cancelled:
            if claim >= 1:
                _let_go(task, store, claim)
            return _dropped(task, live)
    if claim == CLAIM_STORED:
        log("duplicate delivery suppressed", run_id=task.run_id, cell_id=task.cell_id)
        request_report_if_complete(task.run_id, store=store, publisher=publisher)
        return "duplicate"
    if claim != 1:
        # A claim before this one may have paid for an answer it could not store.
        kept = kept_answer(task, deps.blobs)
        if kept is not None:
            log("kept answer stored", run_id=task.run_id, cell_id=task.cell_id)
            return store_cell(
                task, **kept, run=run, store=store, blobs=deps.blobs, publisher=publisher
            )
    if claim == CLAIM_HELD:
        # Another delivery is calling the model for this cell now: back off, and find
        # the cell stored on redelivery. Never a second paid call.
        log("cell in flight elsewhere", run_id=task.run_id, cell_id=task.cell_id)
        raise CellInFlightError(f"{task.cell_id} is being answered by another delivery")
    if claim == CLAIM_ABANDONED:
        error = WorkerDiedError(
            f"its worker died {settings.max_cell_failures} times in a row while answering "
            "it (crashed, out of memory or killed; NIAH_MAX_CELL_FAILURES); resume the run "
            "to try it again"
        )
        return store_cell(
            task,
            failed_cell(task, spec, error),
            {},
            run=run,
            store=store,
            blobs=deps.blobs,
            publisher=publisher,
        )
    try:
        with LeaseKeeper(
            store,
            task.run_id,
            task.cell_id,
            claim,
            settings.cell_lease_seconds,
            claimed_at=claimed_at,
        ) as holder:
            ready = preparing.result()
            return answer_claimed(task, run, claim, deps, holder=holder, prepared=ready)
    except BaseException:
        # Whatever went wrong, the claim goes with it: the next delivery may claim at
        # once instead of waiting out the lease.
        _let_go(task, store, claim)
        raise


def _dropped(task: CellTask, run: RunView | None) -> Outcome:
    """Acknowledge a cell of a run that is gone (or replaced) or cancelled, unanswered."""
    if run is None:
        log("cell for an unknown run dropped", severity="WARNING", run_id=task.run_id)
        return "orphan"
    log("cell of a cancelled run dropped", run_id=task.run_id, cell_id=task.cell_id)
    return "cancelled"


def _let_go(task: CellTask, store: ResultStore, claim: int) -> None:
    """Release the cell's lease after a failure; if the store is down, it lapses soon.

    Only claim ``claim``'s: a lease another delivery took since is left to it.
    """
    try:
        store.release_cell(task.run_id, task.cell_id, claim)
    except Exception as error:
        log(
            "lease not released; it lapses by itself",
            severity="WARNING",
            run_id=task.run_id,
            cell_id=task.cell_id,
            error=describe(error),
        )


def _not_of_the_run(task: CellTask, run: RunView) -> str | None:
    """Why a message is not one of its run's cells, or None: trust no message.

    Anyone who may publish to the cells topic (or a bug) could otherwise have paid
    cells answered past the run's total: a grid cell must be on the run's grid, a cell
    of published rows must be one the run recorded, file, row and span alike.
    """
    spec = run.spec
    if not math.isfinite(task.depth_percent):
        return f"depth {task.depth_percent} is not a number"
    if task.cell.cell_id != task.cell_id:
        return f"cell_id {task.cell_id!r} does not name its own numbers"
    if task.variant not in variants(spec):
        return f"variant {task.variant[:40]!r} is not one of the run's"
    if spec.task_options.published_source() is not None:
        recorded = (run.published or {}).get(task.cell_id)
        if recorded is None:
            return f"{task.cell_id} is not one of the run's published rows"
        if _source_of(recorded) != _source_of(task):
            return (
                f"{task.cell_id} names row {task.row} of {task.source_file} at {task.span}; "
                f"the run recorded row {recorded.row} of {recorded.source_file} at "
                f"{recorded.span}"
            )
        return None
    if task.source_file is not None:
        return "a cell of a generated grid names a file"
    if task.context_length not in spec.lengths() or task.depth_percent not in spec.depths():
        return f"{task.cell_id} is not on the run's grid"
    # A certify run's rounds add samples (the view may be a round old): at most the
    # planner's samples a length, spread over the depths.
    most = SAMPLES_PER_POINT if spec.is_certify() else spec.samples_per_cell
    if not 0 <= task.sample < most:
        return f"sample {task.sample} is not one of the run's {most}"
    return None


def _source_of(task: CellTask) -> tuple[Any, ...]:
    """What a cell of published rows reads, and the cell it is."""
    return (task.source_file, task.row, task.span, task.context_length, task.depth_percent)


def record_dead_letter(
    task: CellTask, *, store: ResultStore, publisher: Publisher, blobs: BlobStore
) -> Outcome:
    """Have a dead-lettered cell answered again, or mark it failed so its run finishes.

    A cell's deliveries run out for reasons that are not the cell's: held off by a live
    lease (a slow call), a holder that died (the lease lapsed after the deliveries), the
    store down. Such a cell is published again, up to ``dead_letter_republishes``
    times and always while its lease is live; only then is it stored failed with its
    last error. Cells that fail themselves are given up by the worker
    (``max_cell_failures``). A paid answer an earlier delivery kept is stored. A
    primer's dead letter releases its run's other cells.
    """
    run = current_run(store, task.run_id, task.run_stamp)
    if run is None:
        return "orphan"
    if run.cancelled:  # not published again, not stored failed: a resume publishes it
        log("dead letter of a cancelled run dropped", run_id=task.run_id, cell_id=task.cell_id)
        return "cancelled"
    problem = _not_of_the_run(task, run)
    if problem is not None:  # neither published again nor counted as a failed cell
        log("dead letter rejected", severity="ERROR", run_id=task.run_id, problem=problem)
        return "rejected"
    spec = run.spec
    kept = kept_answer(task, blobs)
    if kept is not None:
        log("kept answer stored from a dead letter", run_id=task.run_id, cell_id=task.cell_id)
        outcome = store_cell(task, **kept, store=store, blobs=blobs, publisher=publisher, run=run)
        _release_if_primer(task, store=store, publisher=publisher)
        return outcome
    in_flight = task.cell_id in store.leased_cells(task.run_id)
    if in_flight or task.dead_letters < get_settings().dead_letter_republishes:
        # A primer's grid goes on now; its release publishes the primer too unless the
        # primer is in flight.
        released = _release_if_primer(task, store=store, publisher=publisher)
        if in_flight or not released:
            publisher.publish_cells([task.message() | {"dead_letters": task.dead_letters + 1}])
        log(
            "dead-lettered cell published again",
            run_id=task.run_id,
            cell_id=task.cell_id,
            in_flight=in_flight,
            dead_letters=task.dead_letters + 1,
        )
        return "republished"
    attempt = store.last_attempt(task.run_id, task.cell_id) or {}
    reason = attempt.get("last_error", "no error was recorded (the worker may have crashed)")
    error = DeadLetteredError(
        f"gave up after {attempt.get('failures', task.delivery_attempt)} failed deliveries; "
        f"last error: {reason}"
    )
    stored = store.record_cell(
        task.run_id,
        task.cell_id,
        failed_cell(task, spec, error),
        failed=True,
        shards=run.counter_shards,
    ).stored
    _release_if_primer(task, store=store, publisher=publisher)
    if not stored:
        log("dead letter for a stored cell ignored", run_id=task.run_id, cell_id=task.cell_id)
        return "duplicate"
    log(
        "dead-lettered cell recorded",
        severity="WARNING",
        run_id=task.run_id,
        cell_id=task.cell_id,
        error=str(error),
    )
    request_report_if_complete(task.run_id, store=store, publisher=publisher)
    return "failed"
