"""The worker's job: one cell from message to stored result, idempotently."""

from __future__ import annotations

import datetime as dt
import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, Literal

from niah.catalog.models import ProviderName, input_limit, prompt_limit, provider_for_model
from niah.core.answer_budget import CallBudget, call_budget
from niah.core.counters import run_shards, shard_of
from niah.core.generated_context import build_generated_prompt
from niah.core.grid import Cell
from niah.core.haystack_files import haystack_prefix
from niah.core.haystack_tokens import HaystackTokens, load_haystack
from niah.core.interfaces import (
    CLAIM_ABANDONED,
    CLAIM_HELD,
    CLAIM_STORED,
    RUN_CANCELLED,
    BlobInfo,
    BlobStore,
    ModelAnswer,
    Provider,
    Publisher,
    ResultStore,
    Tokenizer,
    Turn,
    gs_uri,
)
from niah.core.mrcr_files import read_row
from niah.core.pricing import Cost, answer_cost
from niah.core.prompt_builder import BuiltPrompt, build_prompt
from niah.core.prompts import split_transcript
from niah.core.scoring import (
    MISSED,
    RETRIEVED,
    judge_answer,
    truncated_reason,
    unscored_reason,
)
from niah.core.served_models import answer_identity
from niah.core.spec import RUN_ID_PATTERN, RunRequest
from niah.core.token_fit import (
    TokenCountRatio,
    cell_token_fields,
    needs_exact_count,
    refuse_over_limit,
)
from niah.errors import (
    CellInFlightError,
    CloudRefusedError,
    CloudUnavailableError,
    DeadLetteredError,
    HaystackError,
    MalformedMessageError,
    NiahError,
    PermanentCellError,
    PermanentRunError,
    RetryableError,
    StoreUnavailableError,
    WorkerDiedError,
)
from niah.logs import describe, log
from niah.memo import ProcessCache
from niah.models.providers import get_provider
from niah.models.tokenizer import get_tokenizer
from niah.service.dispatch import cell_messages, release_after_primer
from niah.service.lease import LeaseKeeper, watch_holder
from niah.service.run_completion import request_report_if_complete
from niah.service.sweep import republish_lost
from niah.service.token_counts import run_token_ratio
from niah.settings import get_settings
from niah.tasks import Sample, get_task
from niah.tasks.mrcr import published_sample

Outcome = Literal[
    "answered", "failed", "duplicate", "orphan", "rejected", "republished", "cancelled"
]
# Of an answer, what a cell document keeps (Firestore's limit is 1 MiB per document).
MAX_STORED_ANSWER_BYTES = 100_000
ProviderFactory = Callable[[ProviderName, str], Provider]
# A model call's record: its ID (cell and claim) and what it cost.
Call = tuple[str, dict[str, Any]]
TokenizerFactory = Callable[[str], Tokenizer]


@dataclass(frozen=True)
class CellTask:
    """A cell message: which run, which grid point, which delivery."""

    run_id: str
    cell_id: str
    context_length: int
    depth_percent: float
    delivery_attempt: int = 1
    sample: int = 0
    # A published MRCR v2 sample: which file of the run's source, which row, and where
    # its bytes are (offset, length) when the dispatcher kept that.
    source_file: str | None = None
    row: int | None = None
    span: tuple[int, int] | None = None
    # Published alone ahead of its run's other cells (cache-aware dispatch): whoever
    # answers it publishes the rest.
    primer: bool = False
    # The run's creation stamp: a message of a run deleted and created again is not its.
    run_stamp: str | None = None
    # How often the dead-letter handler has published this cell again.
    dead_letters: int = 0

    @classmethod
    def from_message(cls, data: dict[str, Any], *, delivery_attempt: int = 1) -> CellTask:
        """Parse a message body published by the dispatcher.

        ``MalformedMessageError`` for a run ID no run can have: it names no document.
        """
        run_id = data["run_id"]
        if not isinstance(run_id, str) or not RUN_ID_PATTERN.fullmatch(run_id):
            raise MalformedMessageError(f"run_id {str(run_id)[:40]!r} is not a run ID")
        return cls(
            run_id=run_id,
            cell_id=str(data["cell_id"]),
            context_length=int(data["context_length"]),
            depth_percent=float(data["depth_percent"]),
            delivery_attempt=delivery_attempt,
            sample=int(data.get("sample", 0)),
            source_file=str(data["source_file"]) if data.get("source_file") else None,
            row=int(data["row"]) if data.get("row") is not None else None,
            span=(int(data["offset"]), int(data["length"])) if data.get("length") else None,
            primer=data.get("primer") is True,
            run_stamp=str(data["run_stamp"]) if data.get("run_stamp") else None,
            dead_letters=int(data.get("dead_letters", 0)),
        )

    def message(self) -> dict[str, Any]:
        """The message body this task was parsed from (to publish it again)."""
        body: dict[str, Any] = {
            "run_id": self.run_id,
            "cell_id": self.cell_id,
            "context_length": self.context_length,
            "depth_percent": self.depth_percent,
            "sample": self.sample,
        }
        optional = {
            "source_file": self.source_file,
            "row": self.row,
            "offset": self.span[0] if self.span else None,
            "length": self.span[1] if self.span else None,
            "primer": self.primer or None,
            "run_stamp": self.run_stamp,
            "dead_letters": self.dead_letters or None,
        }
        return body | {key: value for key, value in optional.items() if value is not None}

    @property
    def cell(self) -> Cell:
        """The grid point and sample this message is about."""
        return Cell(self.context_length, self.depth_percent, self.sample)


# A run's spec never changes once stored (its ID is a hash of it), so an instance
# validates it once; whether the run still exists is read on every delivery.
_specs: ProcessCache[str, RunRequest] = ProcessCache()


@dataclass(frozen=True)
class RunView:
    """A run as a delivery finds it: its validated spec and its haystack's files."""

    spec: RunRequest
    # The listing the run was created with (None: not kept; the worker lists).
    haystack_files: list[BlobInfo] | None
    total: int  # the run's cells: whether a stored cell was its last
    # The counter shards the run's cells are counted on (niah.core.counters).
    counter_shards: int
    # How many cells each counter shard counts (None: a run from before they were kept).
    shard_totals: dict[str, int] | None = None
    # Its shards keep ``counted``, which storing a cell returns (runs sized per run do).
    shards_keep_counted: bool = False
    # Cancelled (``niah cancel``): its cells are acknowledged, not answered. Read with
    # the run document every delivery reads anyway: no read more per cell.
    cancelled: bool = False
    # How the model counts the run's haystack (``niah.core.token_fit``), once measured.
    token_count: dict[str, Any] | None = None
    # A run over published rows: each cell's message as the dispatcher makes it, by
    # cell ID (its file, row and byte span are the run's record, not the message's).
    published: dict[str, CellTask] | None = None


# What a run keeps from its creation on (spec, listing, total, shards), by run ID and
# stamp (one creation): an instance reads the whole document once per run, then each
# delivery reads only the fields that change or tell the run is gone or replaced.
_created: ProcessCache[tuple[str, str], RunView] = ProcessCache()
LIVE_RUN_FIELDS = ("stamp", "status")


def _current_run(store: ResultStore, run_id: str, stamp: str | None = None) -> RunView | None:
    """The run as stored now; None for a run that is gone, or replaced since ``stamp``.

    Read from the store each time (one document read): a worker must not answer a run
    that was deleted, or deleted and created again, from what its process remembers.
    Once this instance has read the whole run, the read is of its stamp and status
    only: the whole document holds the haystack's listing (a map per file), which each
    delivery decoded and copied again.
    """
    known = _created.known((run_id, stamp)) if stamp is not None else None
    if known is not None:
        live = store.get_run(run_id, counts=False, fields=LIVE_RUN_FIELDS)
        if live is None or live.get("stamp") != stamp:
            return None
        return replace(known, cancelled=live.get("status") == RUN_CANCELLED)
    run = store.get_run(run_id, counts=False)
    if run is None:
        return None
    if stamp is not None and run.get("stamp") not in (None, stamp):
        return None
    view = run_view(run_id, run)
    if stamp is not None and run.get("stamp") == stamp:
        _created.get((run_id, stamp), lambda: view)
    return view


def run_view(run_id: str, run: dict[str, Any]) -> RunView:
    """What a delivery needs of the run document ``run`` (read by the caller)."""
    # Stored by the dispatcher after validation, so it validates again.
    spec = _specs.get(run_id, lambda: RunRequest.model_validate(run["spec"]))
    listed = run.get("haystack_files") or None
    files = (
        [BlobInfo(str(f["name"]), int(f["size"]), str(f["fingerprint"])) for f in listed]
        if listed
        else None
    )
    totals = run.get("shard_totals")
    return RunView(
        spec,
        files,
        int(run.get("total", 0)),
        run_shards(run),
        {str(k): int(v) for k, v in totals.items()} if totals else None,
        shards_keep_counted=bool(run.get("counter_shards")),
        cancelled=run.get("status") == RUN_CANCELLED,
        token_count=run.get("token_count") or None,
        published=_published_cells(run_id, spec, run) if spec.mrcr_source is not None else None,
    )


def _published_cells(run_id: str, spec: RunRequest, run: dict[str, Any]) -> dict[str, CellTask]:
    """The cells of a run over published rows, as the dispatcher publishes them."""
    if not run.get("source_rows"):
        return {}  # none recorded: no message can be of it
    return {
        message["cell_id"]: CellTask.from_message(message)
        for message in cell_messages(run_id, spec, run)
    }


def _run_spec(store: ResultStore, run_id: str, stamp: str | None = None) -> RunRequest | None:
    """The run's validated spec; None for a run that is gone or replaced."""
    run = _current_run(store, run_id, stamp)
    return run.spec if run is not None else None


def harness_timestamp() -> str:
    """Now, as the harness's ``test_timestamp_utc`` writes it."""
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M:%S%z")


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
    if tokenizer_for is None:
        tokenizer_for = partial(get_tokenizer, blobs=blobs)
    try:
        outcome = _process_cell(
            task,
            store=store,
            blobs=blobs,
            publisher=publisher,
            provider_for=provider_for,
            tokenizer_for=tokenizer_for,
        )
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
    spec = _run_spec(store, task.run_id, task.run_stamp)
    if spec is None:
        return 0
    return release_after_primer(task.run_id, spec, store=store, publisher=publisher)


def _republish_after_death(
    task: CellTask, spec: RunRequest, *, store: ResultStore, publisher: Publisher
) -> None:
    """Hand on what a death lost, once a delivery took over the dead holder's cell.

    The holder's worker may have been serving other pushes of the run, which Pub/Sub
    redelivers only after their ack deadline; published again now (at most once per
    quiet spell of the run, however many deliveries find deaths at once), they are
    answered within seconds. Never fails the cell: the sweep does the same a minute on.
    """
    try:
        run = store.get_run(task.run_id, counts=False)
        last = (run or {}).get("lost_republished_at")
        recent = (
            isinstance(last, dt.datetime)
            and (dt.datetime.now(dt.UTC) - last).total_seconds()
            < get_settings().sweep_quiet_after_seconds
        )
        if run is None or recent:
            return
        republish_lost(task.run_id, spec, run, store=store, publisher=publisher,
                       reason="holder died (found by a delivery)")  # fmt: skip
    except Exception as error:
        log("lost messages not published again", severity="WARNING", run_id=task.run_id,
            error=describe(error))  # fmt: skip


def _process_cell(
    task: CellTask,
    *,
    store: ResultStore,
    blobs: BlobStore,
    publisher: Publisher,
    provider_for: ProviderFactory,
    tokenizer_for: TokenizerFactory,
) -> Outcome:
    run = _current_run(store, task.run_id, task.run_stamp)
    if run is None:
        log("cell for an unknown run dropped", severity="WARNING", run_id=task.run_id)
        return "orphan"
    if run.cancelled:
        log("cell of a cancelled run dropped", run_id=task.run_id, cell_id=task.cell_id)
        return "cancelled"
    spec = run.spec
    problem = _not_of_the_run(task, run)
    if problem is not None:
        # Forged or corrupted: no model call, no count, acknowledged.
        log("cell message rejected", severity="ERROR", run_id=task.run_id, problem=problem)
        return "rejected"
    settings = get_settings()
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
            claim = store.claim_cell(
                task.run_id,
                task.cell_id,
                settings.cell_lease_seconds,
                max_lapses=settings.max_cell_failures,
            )
            if seen == "lapsed" and claim >= 1:
                _republish_after_death(task, spec, store=store, publisher=publisher)
    if claim == CLAIM_STORED:
        log("duplicate delivery suppressed", run_id=task.run_id, cell_id=task.cell_id)
        request_report_if_complete(task.run_id, store=store, publisher=publisher)
        return "duplicate"
    if claim != 1:
        # A claim before this one may have paid for an answer it could not store.
        kept = _kept_answer(task, blobs)
        if kept is not None:
            log("kept answer stored", run_id=task.run_id, cell_id=task.cell_id)
            return store_cell(task, **kept, store=store, blobs=blobs, publisher=publisher, run=run)
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
        failed = failed_cell(task, spec, error)
        return store_cell(task, failed, {}, store=store, blobs=blobs, publisher=publisher, run=run)
    try:
        with LeaseKeeper(store, task.run_id, task.cell_id, claim, settings.cell_lease_seconds):
            return _answer_claimed(
                task,
                run,
                claim,
                store=store,
                blobs=blobs,
                publisher=publisher,
                provider_for=provider_for,
                tokenizer_for=tokenizer_for,
            )
    except BaseException:
        # Whatever went wrong, the claim goes with it: the next delivery may claim at
        # once instead of waiting out the lease.
        _let_go(task, store, claim)
        raise


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


def _answer_claimed(
    task: CellTask,
    run: RunView,
    claim: int,
    *,
    store: ResultStore,
    blobs: BlobStore,
    publisher: Publisher,
    provider_for: ProviderFactory,
    tokenizer_for: TokenizerFactory,
) -> Outcome:
    """Build, ask, score and store a cell this delivery holds the lease of."""
    cell, spec = task.cell, run.spec
    started = time.monotonic()
    try:
        sample = cell_sample(task, spec, cell, blobs)
    except HaystackError as error:  # a published file replaced or gone: nothing to ask
        failed = failed_cell(task, spec, error)
        return store_cell(task, failed, {}, store=store, blobs=blobs, publisher=publisher, run=run)
    totals: dict[str, float] = {}
    call: Call | None = None
    try:
        fields, totals, call = _answer_cell(
            task,
            spec,
            cell,
            sample,
            claim=claim,
            run=run,
            store=store,
            blobs=blobs,
            provider_for=provider_for,
            tokenizer_for=tokenizer_for,
        )
    except (CloudUnavailableError, CellInFlightError):
        raise  # the service's own store or bus, or another holder: not a failure of the cell
    except RetryableError as error:
        fields = _retry_or_give_up(task, error, store=store)
    except (PermanentCellError, PermanentRunError) as error:
        fields = _failure(error.kind, str(error))
    doc = cell_record(task, spec, cell, sample) | fields
    doc |= {
        "test_duration_seconds": round(time.monotonic() - started, 4),
        "test_timestamp_utc": harness_timestamp(),
    }
    return store_cell(
        task,
        doc,
        totals,
        call=call,
        store=store,
        blobs=blobs,
        publisher=publisher,
        run=run,
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
    if spec.mrcr_source is not None:
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
    if not 0 <= task.sample < spec.samples_per_cell:
        return f"sample {task.sample} is not one of the run's {spec.samples_per_cell}"
    return None


def _source_of(task: CellTask) -> tuple[Any, ...]:
    """What a cell of published rows reads, and the cell it is."""
    return (task.source_file, task.row, task.span, task.context_length, task.depth_percent)


def cell_sample(task: CellTask, spec: RunRequest, cell: Cell, blobs: BlobStore) -> Sample:
    """The cell's sample: made by its task, or read from a published MRCR v2 row."""
    if task.source_file is not None and task.row is not None:
        row = read_row(blobs, task.source_file, task.row, task.span)
        if int(float(row.get("context_len") or -1)) != task.context_length:
            raise HaystackError(
                f"row {task.row} of {task.source_file} is not the one the run was made with "
                "(its token count differs); was the file replaced? Start a new run"
            )
        return published_sample(row)
    return get_task(spec.task).sample(spec, cell)


def cell_record(task: CellTask, spec: RunRequest, cell: Cell, sample: Sample) -> dict[str, Any]:
    """The fields every stored cell has, in the harness's result names where they exist."""
    return {
        "run_id": task.run_id,
        "model": spec.model_name,
        "task": spec.task,
        "context_length": cell.context_length,
        "depth_percent": cell.depth_percent,
        "sample": cell.sample,
        "version": spec.results_version,
        "needle": sample.needle,
        "question": sample.question,
        "expected_answer": ", ".join(sample.expected),
        "expected_answers": list(sample.expected),
        "attempts": task.delivery_attempt,
    }


def _retry_or_give_up(
    task: CellTask, error: RetryableError, *, store: ResultStore
) -> dict[str, Any]:
    """Count the failure; raise it again (redelivery) until the cell has failed too often.

    Counted across deliveries, so a run ends even where dead-lettering is slow.
    """
    store.note_attempt(task.run_id, task.cell_id, str(error))
    failures = int((store.last_attempt(task.run_id, task.cell_id) or {}).get("failures", 1))
    if failures < get_settings().max_cell_failures:
        log(
            "cell will be retried",
            severity="WARNING",
            run_id=task.run_id,
            cell_id=task.cell_id,
            failures=failures,
            error=str(error),
        )
        raise error
    message = f"gave up after {failures} failed attempts; last error: {error}"
    return _failure("retries_exhausted", message)


def store_cell(
    task: CellTask,
    doc: dict[str, Any],
    totals: dict[str, float],
    *,
    call: Call | None = None,
    store: ResultStore,
    blobs: BlobStore,
    publisher: Publisher,
    run: RunView,
) -> Outcome:
    """Create the cell and count it on the run; ask for the report if it was the last.

    ``run``: the run as the caller read it (its shards, total and shard totals).

    An answer is paid for: if the store cannot take it, it is kept in the bucket where
    the next delivery stores it, rather than asking the model again.
    """
    failed = doc.get("status") == "failed"
    try:
        recorded = store.record_cell(
            task.run_id,
            task.cell_id,
            doc,
            failed=failed,
            shards=run.counter_shards,
            totals=totals,
            call=call,
        )
    except CloudRefusedError as error:
        if failed:
            raise
        # The store will never take this document: the cell is stored failed, with the
        # call it paid for closed, rather than redelivered until it is dead-lettered.
        kept = {key: doc[key] for key in GRID_FIELDS if key in doc}
        refused = kept | _failure(error.kind, f"the store refused the cell's result: {error}")
        return store_cell(
            task,
            refused,
            totals,
            call=call,
            store=store,
            blobs=blobs,
            publisher=publisher,
            run=run,
        )
    except StoreUnavailableError as error:
        if failed:
            raise
        name = _keep_answer(task, doc, totals, call, blobs)
        raise RetryableError(
            f"the store did not take {task.cell_id} ({error}); its answer is kept at "
            f"{gs_uri(blobs.bucket, name)} for the next delivery"
        ) from error
    # Stored, its lease freed in the same batch (so a reset of a failed cell can publish
    # and answer it again at once); or stored by another delivery, and this one's
    # claim freed here.
    if not recorded.stored:
        store.release_cell(task.run_id, task.cell_id)
        log("concurrent duplicate suppressed", run_id=task.run_id, cell_id=task.cell_id)
        return "duplicate"
    if failed:
        log(
            "cell failed",
            severity="WARNING",
            run_id=task.run_id,
            cell_id=task.cell_id,
            error=doc["error"],
        )
    if _may_be_last(task, run, recorded.shard_counted, store):
        request_report_if_complete(task.run_id, store=store, publisher=publisher, total=run.total)
    return "failed" if failed else "answered"


def _may_be_last(task: CellTask, run: RunView, counted: int | None, store: ResultStore) -> bool:
    """Whether the run may be complete now: the cell's shard has all of its cells.

    ``counted``: the shard's count that storing the cell returned; no read then. Else
    (a run from before shards kept it) one read of the cell's own counter shard,
    whatever the run's size (none when the cell is alone on its shard). Only the last
    cell of each shard counts the run's cells (an aggregation of one read per 1,000).
    Counting the run after every cell read n/1,000 each: n squared over a run.
    """
    if not run.shard_totals:
        return True
    expected = run.shard_totals.get(shard_of(task.cell_id, run.counter_shards))
    if expected is None or expected <= 1:  # alone on its shard: its own store filled it
        return True
    if run.shards_keep_counted and counted is not None:
        return counted >= expected
    return store.shard_count(task.run_id, task.cell_id, shards=run.counter_shards) >= expected


def _kept_answer_name(task: CellTask) -> str:
    return f"{get_settings().kept_answers_prefix}{task.run_id}/{task.cell_id}.json"


def _keep_answer(
    task: CellTask,
    doc: dict[str, Any],
    totals: dict[str, float],
    call: Call | None,
    blobs: BlobStore,
) -> str:
    """Write a paid answer the store refused to the bucket; where it went."""
    name = _kept_answer_name(task)
    record = {"doc": doc, "totals": totals, "call": list(call) if call else None}
    blobs.write(name, json.dumps(record).encode(), content_type="application/json")
    log("answer kept for the next delivery", severity="WARNING", run_id=task.run_id, name=name)
    return name


def _kept_answer(task: CellTask, blobs: BlobStore) -> dict[str, Any] | None:
    """A paid answer an earlier delivery could not store, as ``store_cell``'s arguments."""
    name = _kept_answer_name(task)
    if not any(info.name == name for info in blobs.list(name)):
        return None
    record = json.loads(blobs.read(name))
    call = record.get("call")
    return {
        "doc": record["doc"],
        "totals": record["totals"],
        "call": (str(call[0]), dict(call[1])) if call else None,
    }


# What a failed cell keeps of its record: its place on the grid and when.
GRID_FIELDS = (
    "run_id",
    "model",
    "task",
    "context_length",
    "depth_percent",
    "sample",
    "version",
    "attempts",
    "test_timestamp_utc",
)


def failed_cell(task: CellTask, spec: RunRequest, error: NiahError) -> dict[str, Any]:
    """A cell failed before it had a sample: its place on the grid and the error."""
    return {
        "run_id": task.run_id,
        "model": spec.model_name,
        "task": spec.task,
        "context_length": task.context_length,
        "depth_percent": task.depth_percent,
        "sample": task.sample,
        "version": spec.results_version,
        "attempts": task.delivery_attempt,
        "test_timestamp_utc": harness_timestamp(),
        **_failure(error.kind, str(error)),
    }


def _failure(kind: str, message: str) -> dict[str, Any]:
    """A failed cell's fields (shown grey, never a score)."""
    return {
        "status": "failed",
        "outcome": "unscored",
        "score": None,
        "task_score": None,
        "error": {"kind": kind, "message": message},
    }


def _answer_cell(
    task: CellTask,
    spec: RunRequest,
    cell: Cell,
    sample: Sample,
    *,
    claim: int,
    run: RunView,
    store: ResultStore,
    blobs: BlobStore,
    provider_for: ProviderFactory,
    tokenizer_for: TokenizerFactory,
) -> tuple[dict[str, Any], dict[str, float], Call]:
    """Build the prompt, ask the model, score.

    Returns the cell's fields, the run's increments and the call's record (closed with
    the cell, in one write).
    """
    started = time.monotonic()
    call_id = f"{task.cell_id}.C{claim:03d}"
    provider = provider_for(spec.provider(), spec.model_name)
    tokenizer = tokenizer_for(provider.tokenizer_name)
    ratio = None
    if spec.provider() == "gemini" and reads_haystack(sample):
        ratio = run_token_ratio(
            task.run_id,
            spec,
            run.token_count,
            stamp=task.run_stamp,
            haystack=run_haystack(spec, tokenizer, blobs, run.haystack_files),
            tokenizer=tokenizer,
            provider=provider,
            store=store,
        )
    built = build_cell_prompt(
        spec,
        cell,
        sample,
        default_template=provider.default_template,
        tokenizer=tokenizer,
        blobs=blobs,
        haystack_files=run.haystack_files,
        token_ratio=ratio,
    )
    turns = cell_turns(built, sample)
    fields: dict[str, Any] = {
        "planned_prompt_tokens": built.planned_prompt_tokens,
        "insertion_depth_percent": round(built.actual_depth_percent, 3),
        "build_seconds": round(time.monotonic() - started, 4),
    }
    if ratio is not None:
        # The length the prompt was fitted to, as the model counts (its local count is
        # planned_prompt_tokens, exact).
        fields["fitted_prompt_tokens"] = cell.context_length - spec.final_context_length_buffer
    if spec.save_contexts:
        fields["context_uri"] = _save_prompt(task, built.prompt, blobs)
    budget = call_budget(spec, sample.answer_tokens)
    counted = count_before_call(spec, cell, built, ratio, provider, budget)
    if counted is not None:
        fields["counted_prompt_tokens"] = counted
    # Noted before the call: a worker killed mid-call still leaves the call in the spend.
    # The note checks the lease is still this claim's: after a store stall longer than
    # the lease, another delivery may hold the cell, and then only it calls.
    noted = store.open_call(
        task.run_id,
        call_id,
        {
            "cell_id": task.cell_id,
            "model": spec.model_name,
            "status": "started",
            "planned_prompt_tokens": built.planned_prompt_tokens,
        },
        cell_id=task.cell_id,
        claim=claim,
        lease_seconds=get_settings().cell_lease_seconds,
    )
    if not noted:
        log("lease lost before the call", run_id=task.run_id, cell_id=task.cell_id)
        raise CellInFlightError(f"{task.cell_id} lost its lease to another delivery")
    fields["max_output_tokens"] = budget.max_output_tokens
    try:
        answer = provider.generate(
            built.prompt,
            max_output_tokens=budget.max_output_tokens,
            thinking_budget=budget.thinking_budget,
            thinking_level=budget.thinking_level,
            turns=turns,
        )
    except NiahError as error:
        # An error reply has no usage metadata: nothing was generated to bill.
        store.close_call(task.run_id, call_id, {"status": "error", "error": str(error)[:500]})
        raise
    log(
        "model call",
        run_id=task.run_id,
        cell_id=task.cell_id,
        latency_seconds=round(answer.latency_seconds, 3),
        prompt_tokens=answer.prompt_tokens,
    )
    answered, totals, call_fields = scored_answer(
        task, spec, sample, answer, budget=budget, blobs=blobs, provider_for=provider_for
    )
    if sample.prompt is None:  # built here: its local count is exact
        answered |= cell_token_fields(answer.prompt_tokens, built.planned_prompt_tokens)
    return fields | answered, totals, (call_id, call_fields)


def count_before_call(
    spec: RunRequest,
    cell: Cell,
    built: BuiltPrompt,
    ratio: TokenCountRatio | None,
    provider: Provider,
    budget: CallBudget,
) -> int | None:
    """The model's count of the prompt where it is asked for or needed; refuse it over the limit.

    Gemini only: the local model counts with the tokenizer the prompt was built in, and
    an OpenAI-compatible server has no count endpoint (its replies' usage is kept).
    ``ratio``: the run's, where the prompt was fitted by it. Raises
    ``PromptOverLimitError`` before anything is paid.
    """
    if spec.provider() != "gemini":
        return provider.count_tokens(built.prompt) if spec.count_tokens_check else None
    limit = prompt_limit(spec.model_name, budget.max_output_tokens)
    expected = (
        ratio.expected_model_tokens(built.planned_prompt_tokens)
        if ratio is not None
        else built.planned_prompt_tokens
    )
    counted = (
        provider.count_tokens(built.prompt)
        if needs_exact_count(
            fitted=ratio is not None,
            expected_model_tokens=expected,
            limit=limit,
            asked=spec.count_tokens_check,
        )
        else None
    )
    known = input_limit(spec.provider(), spec.model_name)
    refuse_over_limit(
        spec.model_name,
        context_length=cell.context_length,
        model_tokens=counted if counted is not None else expected,
        limit=limit,
        counted=counted is not None,
        shared_output=budget.max_output_tokens if known != limit else None,
    )
    return counted


def scored_answer(
    task: CellTask,
    spec: RunRequest,
    sample: Sample,
    answer: ModelAnswer,
    *,
    budget: CallBudget,
    blobs: BlobStore,
    provider_for: ProviderFactory,
    batch: bool = False,
) -> tuple[dict[str, Any], dict[str, float], dict[str, Any]]:
    """An answer (online or a batch line's) scored and priced, as the cell stores it.

    The cell's fields, the run's increments and the call's record. ``batch``: the
    model's call priced at batch rates (a judge is called online, at its own).
    """
    fields = _answer_fields(answer, task.cell) | _keep_whole_answer(task, answer.text, blobs)
    fields["max_output_tokens"] = budget.max_output_tokens
    score_fields, judged = _score(spec, sample, answer, provider_for, budget)
    fields |= score_fields
    cost = answer_cost(spec.model_name, answer, batch=batch)
    totals = _usage_totals("", answer)
    call_fields: dict[str, Any] = {"status": "answered", "usage": answer.usage()}
    if batch:
        call_fields["execution"] = "batch"
    if judged is not None and spec.evaluator_model_name:
        fields["judge_usage"] = judged.usage()
        call_fields["judge_usage"] = judged.usage()
        totals |= _usage_totals("judge_", judged)
        cost += answer_cost(spec.evaluator_model_name, judged)
    call_fields |= _cost_fields(cost)
    return fields | _cost_fields(cost), totals | _cost_totals(cost), call_fields


def _keep_whole_answer(task: CellTask, text: str, blobs: BlobStore) -> dict[str, Any]:
    """A paid-for answer too large for its Firestore document (1 MiB) stays whole.

    The cell keeps the first ``MAX_STORED_ANSWER_BYTES`` and a flag; the full text goes
    to the bucket, so storing the cell cannot fail on its size and call the model again.
    """
    data = text.encode()
    if len(data) <= MAX_STORED_ANSWER_BYTES:
        return {}
    name = f"{get_settings().contexts_prefix}{task.run_id}/{task.cell_id}.answer.txt"
    blobs.write(name, data, content_type="text/plain")
    kept = data[:MAX_STORED_ANSWER_BYTES].decode("utf-8", errors="ignore")
    return {
        "model_response": kept,
        "model_response_truncated": True,
        "model_response_uri": gs_uri(blobs.bucket, name),
    }


def _usage_totals(prefix: str, answer: ModelAnswer) -> dict[str, float]:
    """One call's token counts, as increments of the run's totals."""
    return {
        f"{prefix}prompt_tokens": float(answer.prompt_tokens or 0),
        f"{prefix}cached_tokens": float(answer.cached_tokens or 0),
        f"{prefix}output_tokens": float(answer.output_tokens or 0),
        f"{prefix}thinking_tokens": float(answer.thinking_tokens or 0),
    }


def _cost_fields(cost: Cost) -> dict[str, Any]:
    """The cell's cost: None where any of its calls had no known price (never $0)."""
    return {
        "cost_usd": round(cost.usd, 8) if cost.priced else None,
        "cost_without_cache_usd": round(cost.usd_without_cache, 8) if cost.priced else None,
    }


def _cost_totals(cost: Cost) -> dict[str, float]:
    """The run's cost increments: priced cells add dollars, unpriced ones are counted."""
    if not cost.priced:
        return {"unpriced_cells": 1.0}
    return {"cost_usd": cost.usd, "cost_without_cache_usd": cost.usd_without_cache}


def cell_turns(built: BuiltPrompt, sample: Sample) -> tuple[Turn, ...] | None:
    """A conversational sample's prompt as its turns (MRCR); None for one prompt."""
    return split_transcript(built.prompt) if sample.conversational else None


def build_cell_prompt(
    spec: RunRequest,
    cell: Cell,
    sample: Sample,
    *,
    default_template: str,
    tokenizer: Tokenizer,
    blobs: BlobStore,
    haystack_files: list[BlobInfo] | None = None,
    token_ratio: TokenCountRatio | None = None,
) -> BuiltPrompt:
    """The cell's prompt, token-exact in ``tokenizer``: online calls', batch lines', benches'.

    A sample that comes with its prompt (a published MRCR row) is sent as it is.
    ``haystack_files``: the run's listing; without it the haystack's prefix is listed.
    ``token_ratio``: how the model counts the haystack; a haystack prompt is then built
    to the local length the model counts as the cell's (``niah.core.token_fit``).
    """
    if sample.prompt is not None:
        return BuiltPrompt(sample.prompt, sample.prompt, sample.prompt_tokens or 0, 0, ())
    template = sample.template or spec.prompt_template or default_template
    if sample.context_maker is not None:  # the task's own context: no haystack read
        return build_generated_prompt(
            tokenizer,
            sample.context_maker,
            template=template,
            question=sample.question,
            answer_lead=sample.answer_lead,
            context_length=cell.context_length,
            buffer_tokens=spec.final_context_length_buffer,
        )
    haystack = run_haystack(spec, tokenizer, blobs, haystack_files)
    target = cell.context_length - spec.final_context_length_buffer
    return build_prompt(
        haystack,
        tokenizer,
        template=template,
        insertions=sample.insertions,
        question=sample.question,
        answer_lead=sample.answer_lead,
        context_length=token_ratio.local_length(target) if token_ratio else target,
    )


def reads_haystack(sample: Sample) -> bool:
    """Whether the sample's prompt is built from the run's haystack (not given, not generated)."""
    return sample.prompt is None and sample.context_maker is None


def run_haystack(
    spec: RunRequest, tokenizer: Tokenizer, blobs: BlobStore, haystack_files: list[BlobInfo] | None
) -> HaystackTokens:
    """The run's haystack, tokenized (once per process: ``load_haystack`` keeps it)."""
    prefix = haystack_prefix(spec.haystack_dir, blobs.bucket)
    return load_haystack(blobs, prefix, tokenizer, haystack_files)


def _save_prompt(task: CellTask, prompt: str, blobs: BlobStore) -> str:
    """Store the cell's prompt (``save_contexts``); where it went."""
    name = f"{get_settings().contexts_prefix}{task.run_id}/{task.cell_id}.txt"
    blobs.write(name, prompt.encode(), content_type="text/plain", if_absent=True)
    return gs_uri(blobs.bucket, name)


def _answer_fields(answer: ModelAnswer, cell: Cell) -> dict[str, Any]:
    """The model's answer, the API's usage and the model that answered, as stored."""
    return answer_identity(answer) | {
        "status": "answered",
        "model_response": answer.text,
        "finish_reason": answer.finish_reason,
        "model_seconds": round(answer.latency_seconds, 4),
        "usage": answer.usage(),
        "prompt_token_deviation": (
            answer.prompt_tokens - cell.context_length if answer.prompt_tokens else None
        ),
    }


def _score(
    spec: RunRequest,
    sample: Sample,
    answer: ModelAnswer,
    provider_for: ProviderFactory,
    budget: CallBudget,
) -> tuple[dict[str, Any], ModelAnswer | None]:
    """The sample's outcome and scores, and the judge's call where there was one.

    ``task_score`` is in [0, 1] for every task; ``score`` is what the heatmap shows: the
    harness's 1-10 scale for ``single``, the task's fraction for the others (the judge
    grades the user's own multi_needle needles on 1-10, shown as a fraction). A blocked
    answer is unscored; one cut off by the budget is truncated: never a miss.
    """
    reason = truncated_reason(answer, budget)
    if reason is not None:
        return {"outcome": "truncated", "unscored_reason": reason, "score": None}, None
    reason = unscored_reason(answer.text, answer.finish_reason)
    if reason is not None:
        return {"outcome": "unscored", "unscored_reason": reason, "score": None}, None
    task = get_task(spec.task)
    if spec.scorer_name() == "task":
        verdict = task.score(sample, answer.text)
        return {
            "scorer": "task",
            "outcome": verdict.outcome,
            "task_score": round(verdict.score, 6),
            "score": round(verdict.score, 6),
            "task_details": verdict.details,
        }, None
    scorer = spec.scorer_name()
    fields: dict[str, Any] = {"scorer": scorer}
    if sample.expected:
        correct = task.score(sample, answer.text).outcome == "correct"
        fields["exact_score"] = RETRIEVED if correct else MISSED
    judged: ModelAnswer | None = None
    if scorer in ("judge", "both") and spec.evaluator_model_name:
        judge_fields, judged = _judge(spec.evaluator_model_name, sample, answer.text, provider_for)
        fields |= judge_fields
    if scorer == "judge":
        fields["score"] = fields.get("judge_score")
    elif scorer == "both":
        fields["score"] = fields.get("judge_score") or fields.get("exact_score")
    else:
        fields["score"] = fields.get("exact_score")
    fields |= _outcome_on_the_harness_scale(fields["score"], fields)
    if spec.task != "single" and fields.get("task_score") is not None:
        # A judged multi_needle run keeps its task's scale: the heatmap shows fractions.
        fields["score"] = round(fields["task_score"], 6)
    return fields, judged


def _outcome_on_the_harness_scale(score: float | None, fields: dict[str, Any]) -> dict[str, Any]:
    """A 1-10 score as an outcome and a [0, 1] task score (10 is 1, 1 is 0).

    A judge that gave no score leaves the sample unscored.
    """
    if score is None:
        return {"outcome": "unscored", "unscored_reason": fields.get("judge_error", "no score")}
    task_score = (float(score) - 1) / 9
    return {"outcome": "correct" if task_score >= 0.5 else "wrong", "task_score": task_score}


def _judge(
    evaluator_name: str, sample: Sample, answer: str, provider_for: ProviderFactory
) -> tuple[dict[str, Any], ModelAnswer | None]:
    """The judge's score of ``answer``; a failed judge leaves only its score empty.

    The answer is paid for: a failed judge must neither redeliver the cell (and call
    the model again) nor discard the answer.
    """
    fields: dict[str, Any] = {"evaluator_model": evaluator_name}
    try:
        evaluator = provider_for(provider_for_model(evaluator_name), evaluator_name)
        verdict = judge_answer(
            evaluator, question=sample.question, reference=sample.needle, answer=answer
        )
    except NiahError as error:
        log("judge failed", severity="WARNING", error=str(error))
        return fields | {"judge_score": None, "judge_error": str(error)}, None
    fields |= {"judge_score": verdict.score, "judge_reasoning": verdict.reasoning}
    if verdict.score is None:  # it answered, but with no score in it: say so
        fields["judge_error"] = f"the judge's reply held no score: {verdict.reasoning[:200]!r}"
    return fields, verdict.answer


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
    run = _current_run(store, task.run_id, task.run_stamp)
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
    kept = _kept_answer(task, blobs)
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
