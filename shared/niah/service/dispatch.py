"""Dispatch: validate a run request, record the run, publish one message per cell."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from niah.catalog.availability import lifecycle_notes, retired_refusal
from niah.catalog.models import (
    LOCAL_MODEL,
    find_model,
    input_limit,
    is_gemini_name,
    model_notice,
    not_a_text_model,
    prompt_limit,
    provider_for_model,
    temperature_record,
)
from niah.core.answer_budget import answer_room, budget_warning, call_budget, reply_room
from niah.core.callers import LOCAL_CALLER
from niah.core.counters import run_shards, shard_totals, shards_for
from niah.core.haystack_files import (
    check_source_size,
    content_fingerprint,
    haystack_files,
    haystack_prefix,
    mrcr_source_prefix,
)
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
from niah.core.mrcr_files import csv_files, index_rows
from niah.core.request_errors import describe_validation_error
from niah.core.spec import Cell, RunRequest, run_label
from niah.errors import HaystackError, RequestError
from niah.logs import log
from niah.service.admission import admit_request
from niah.service.messages import primer_message, source_cells
from niah.service.missing_cells import publish_missing, taken_cells
from niah.settings import get_settings

MIN_CONTEXT_LENGTH = 128
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
    # Its cells were just published (or wait on its primer): publish nothing now.
    in_progress: bool = False
    # The run document as stored (its stamp goes into every message).
    run: dict[str, Any] = field(default_factory=dict)
    # Cancelled, and not resumed by this request: publish nothing.
    cancelled: bool = False


# No run option takes a whole number this long (the largest bound, seed's, has 19
# digits). Python refuses to read one of over 4,300 digits (its int conversion limit, a
# ValueError, not a JSON error), so a longer literal is refused here, by its key.
MAX_NUMBER_DIGITS = 100


@dataclass(frozen=True)
class _LongNumber:
    """A whole-number literal too long to be any option's value: how many digits."""

    digits: int


def decode_body(data: bytes) -> Any:
    """The request body as JSON, strictly: no repeated keys, no NaN or Infinity.

    Python's parser takes the last of two equal keys and reads NaN; either would run
    something other than what the client's other tools (and the client) read. A whole
    number of more than ``MAX_NUMBER_DIGITS`` digits is refused naming its key.
    """

    def no_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for key, value in pairs:
            if key in seen:
                raise RequestError(key, "is given twice in the JSON body; give it once")
            _no_long_number(key, value)
            seen[key] = value
        return seen

    def no_constants(name: str) -> Any:
        raise RequestError("body", f"{name} is not a JSON number; send a finite number")

    def short_int(literal: str) -> int | _LongNumber:
        digits = len(literal.lstrip("-"))
        return int(literal) if digits <= MAX_NUMBER_DIGITS else _LongNumber(digits)

    try:
        body = json.loads(
            data.decode("utf-8") or "null",
            object_pairs_hook=no_repeats,
            parse_constant=no_constants,
            parse_int=short_int,
        )
        _no_long_number("body", body)
        return body
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as error:
        raise RequestError(
            "body", f"not valid JSON ({error}); send a JSON object of run options"
        ) from error


def _no_long_number(key: str, value: Any) -> None:
    """Refuse a whole number too long for any option, in ``value`` or a list in it."""
    if isinstance(value, _LongNumber):
        raise RequestError(
            key,
            f"is a whole number of {value.digits} digits; no run option takes more than "
            f"{MAX_NUMBER_DIGITS} (see the option's limits in the README)",
        )
    if isinstance(value, list):
        for item in value:
            _no_long_number(key, item)


def parse_request(payload: Any) -> RunRequest:
    """Validate a JSON payload; the first problem becomes a ``RequestError``."""
    if not isinstance(payload, dict):
        raise RequestError("body", "must be a JSON object of run options")
    # A deployment picks the model a request that names none gets (Gemini, deployed).
    payload = {"model_name": get_settings().default_model_name, **payload}
    try:
        return RunRequest.model_validate(payload)
    except ValidationError as error:
        raise RequestError(*describe_validation_error(error)) from error


def check_budget(spec: RunRequest, cells: list[Cell] | None = None, reply_tokens: int = 0) -> None:
    """Refuse grids that are impossible or above the configured budget.

    ``cells``: the run's cells where they come from data (MRCR v2's files), not the grid;
    ``reply_tokens``: the room of the longest published reply among them.
    """
    settings = get_settings()
    lengths, depths = spec.lengths(), spec.depths()
    # Counted before the grid is expanded: a 1,000 x 1,000 request must cost nothing.
    count = len(cells) if cells is not None else len(lengths) * len(depths) * spec.samples_per_cell
    if count > settings.max_cells_per_run:
        samples = f" x {spec.samples_per_cell} samples" if spec.samples_per_cell > 1 else ""
        shape = (
            ""
            if cells is not None
            else f" ({len(lengths)} lengths x {len(depths)} depths{samples})"
        )
        raise RequestError(
            "context_lengths",
            f"the grid has {count} cells{shape}, above the limit of "
            f"{settings.max_cells_per_run} (NIAH_MAX_CELLS_PER_RUN); use fewer lengths, "
            "depths or samples",
        )
    cells = cells if cells is not None else spec.cells()
    total_tokens = sum(cell.context_length for cell in cells)
    if total_tokens > settings.max_tokens_per_run:
        raise RequestError(
            "context_lengths",
            f"the grid asks for {total_tokens} prompt tokens, above the limit of "
            f"{settings.max_tokens_per_run} (NIAH_MAX_TOKENS_PER_RUN)",
        )
    check_model(spec)
    check_output_budget(spec, reply_tokens)
    if spec.mrcr_source is None:  # published samples are as long as Google made them
        check_lengths(spec, cells)


def check_output_budget(spec: RunRequest, reply_tokens: int = 0) -> None:
    """Refuse a ``max_output_tokens`` below the room a right answer needs.

    Such a run could only end its answers at the budget (``truncated``): refused before
    anything is paid, with the least value that fits.
    """
    needed = max(answer_room(spec), reply_tokens)
    if spec.max_output_tokens is not None and spec.max_output_tokens < needed:
        raise RequestError(
            "max_output_tokens",
            f"{spec.max_output_tokens} tokens cannot hold a right answer to task {spec.task} "
            f"(up to {needed} tokens); set max_output_tokens to at least {needed} plus the "
            "model's thinking, or leave it out (the budget is then the answer's room plus "
            "the model's thinking room)",
        )


def check_lengths(spec: RunRequest, cells: list[Cell]) -> None:
    """Refuse lengths below the prompt's own size or above the model's input limit."""
    shortest = min(cell.context_length for cell in cells)
    floor = minimum_context_length(spec)
    if shortest < floor:
        raise RequestError(
            "context_lengths",
            f"{shortest} tokens is below the prompt's own size (template, question and "
            f"needle need about {floor}); ask for at least {floor} tokens",
        )
    limit = input_limit(spec.provider(), spec.model_name)
    output = call_budget(spec).max_output_tokens
    shared = ""
    if spec.provider() == "local" and limit is not None:
        # llama.cpp's window holds the answer too: leave it the run's answer budget.
        limit = get_settings().local_model_max_context - 1 - output
    elif limit is not None and (room := prompt_limit(spec.model_name, output)) != limit:
        # Gemini 4: input and output share one limit; the call's output budget is taken.
        shared = f" (its {limit}-token limit, shared with the output budget of {output})"
        limit = room
    longest = max(cell.context_length for cell in cells)
    if limit is not None and longest > limit:
        raise RequestError(
            "context_lengths",
            f"{longest} tokens is above {spec.model_name}'s input limit of {limit} tokens{shared}",
        )


def check_model(spec: RunRequest) -> None:
    """Refuse models no provider of this deployment can serve, and impossible thinking."""
    provider = spec.provider()
    if provider == "local" and spec.model_name != LOCAL_MODEL:
        raise RequestError("model_name", f"the local provider serves only {LOCAL_MODEL}")
    if provider == "local" and not get_settings().local_model_available:
        raise RequestError(
            "model_name",
            f"this deployment has no local model (deploy with LOCAL_MODEL=1 for {LOCAL_MODEL}); "
            "use a gemini-* model",
        )
    for field_name, name in (
        ("model_name", spec.model_name),
        ("evaluator_model_name", spec.evaluator_model_name),
    ):
        if name and not_a_text_model(name):
            raise RequestError(
                field_name,
                f"{name} is not a text model (an image, speech, live, embedding or other "
                "variant): a needle test needs a Gemini text model such as gemini-3.8-flash",
            )
    if provider == "gemini" and not is_gemini_name(spec.model_name):
        raise RequestError(
            "model_name",
            f"{spec.model_name!r} is not a Gemini model ID: give the bare ID (e.g. "
            "gemini-3.8-flash); the project and location are the deployment's",
        )
    if provider == "openai_compatible" and not get_settings().openai_base_url:
        raise RequestError(
            "model_name",
            f"unknown model {spec.model_name!r}: use a gemini-* model, {LOCAL_MODEL}, or "
            "model_provider openai_compatible on a deployment with NIAH_OPENAI_BASE_URL set",
        )
    for name in filter(None, [spec.evaluator_model_name]):
        if name == LOCAL_MODEL:
            raise RequestError(
                "evaluator_model_name",
                f"{LOCAL_MODEL} is a 270M base model: it cannot grade answers (it gives no "
                "score); use a Gemini model as the judge, or scorer exact",
            )
        if provider_for_model(name) == "gemini" and not is_gemini_name(name):
            raise RequestError(
                "evaluator_model_name",
                f"{name!r} is not a Gemini model ID: give the bare ID (e.g. gemini-3.8-flash)",
            )
        if provider_for_model(name) == "openai_compatible" and not get_settings().openai_base_url:
            raise RequestError("evaluator_model_name", f"unknown judge model {name!r}")
    check_thinking(spec)
    for field_name, name in (
        ("model_name", spec.model_name),
        ("evaluator_model_name", spec.evaluator_model_name),
    ):
        check_not_retired(field_name, name, allowed=spec.allow_retired)


def check_not_retired(field_name: str, model_name: str | None, *, allowed: bool) -> None:
    """Refuse a model Vertex AI has retired, naming its date and Google's replacement.

    Every call to it would be a 404. ``allowed`` (the request's ``allow_retired``) lets a
    project that still has access run it; the run's notes then say so.
    """
    refusal = retired_refusal(model_name) if model_name else None
    if refusal and not allowed:
        raise RequestError(
            field_name,
            f"{refusal}; to call it anyway (a project that still has access), set allow_retired",
        )


def check_thinking(spec: RunRequest) -> None:
    """Refuse a thinking setting the catalog says the model cannot take.

    Gemini 2.5 takes ``thinking_budget``, Gemini 3 ``thinking_level`` (the API refuses
    both in one request); each within its model's range.
    """
    if spec.thinking_budget is not None and spec.thinking_level is not None:
        raise RequestError(
            "thinking_level", "give thinking_budget (Gemini 2.5) or thinking_level (Gemini 3)"
        )
    known = find_model(spec.model_name)
    if known is None or known.provider != "gemini":
        return
    thinking = known.thinking
    if known.assumed and spec.thinking_budget not in (None, -1):
        raise RequestError(
            "thinking_budget",
            f"{known.name} is taken for a Gemini 3 model, which sets thinking by "
            "thinking_level, not by a budget",
        )
    if known.assumed:
        return  # its levels are not published here: the API says if one is refused
    if spec.thinking_level is not None and spec.thinking_level not in thinking.levels:
        takes = (
            f"takes thinking_level {', '.join(thinking.levels)}"
            if thinking.levels
            else "has no thinking_level"
            + (" (it takes thinking_budget)" if thinking.control == "budget" else "")
        )
        raise RequestError("thinking_level", f"{known.name} {takes}")
    budget = spec.thinking_budget
    if budget is None or budget == -1:
        return
    if thinking.control == "none":
        raise RequestError(
            "thinking_budget", f"{known.name} does not think; leave thinking_budget out"
        )
    if thinking.control == "level":
        raise RequestError(
            "thinking_budget",
            f"{known.name} sets thinking by thinking_level ({', '.join(thinking.levels)}), "
            "not by a budget",
        )
    if budget == 0 and not thinking.can_disable:
        raise RequestError(
            "thinking_budget",
            f"{known.name} cannot turn thinking off; use {thinking.budget_min} to "
            f"{thinking.budget_max}, or -1 for dynamic",
        )
    if budget != 0 and not thinking.budget_min <= budget <= thinking.budget_max:
        raise RequestError(
            "thinking_budget",
            f"{known.name} takes a thinking budget of {thinking.budget_min} to "
            f"{thinking.budget_max} tokens (or -1 for dynamic"
            + (", 0 for off)" if thinking.can_disable else ")"),
        )


def model_warnings(spec: RunRequest) -> list[str]:
    """What a user should know before paying: unknown or retiring models, a tight budget."""
    names = [name for name in (spec.model_name, spec.evaluator_model_name) if name]
    unknown = [notice for notice in map(model_notice, names) if notice]
    tight = budget_warning(spec)
    return [*unknown, *lifecycle_notes(*names), *([tight] if tight else [])]


def minimum_context_length(spec: RunRequest) -> int:
    """A safe lower bound on the prompt's own size in tokens, without a tokenizer.

    The built-in templates, question and needle take under 128 tokens; a custom
    template or needle (or the user's needles) is estimated at one token per 3 characters.
    """
    own_text = len(spec.prompt_template or "") + len(spec.retrieval_question)
    own_text += 0 if spec.dynamic_needle else len(spec.needle)
    own_text += sum(len(text) for text in spec.needles or [])
    return max(MIN_CONTEXT_LENGTH, own_text // 3 + 64) + spec.final_context_length_buffer


# A haystack listing up to this many files rides on the run document, so workers need
# not list the bucket for every cell (larger ones are listed by each worker instead).
MAX_LISTED_FILES = 1000


def resolve_haystack(spec: RunRequest, blobs: BlobStore) -> tuple[str, list[BlobInfo]]:
    """The haystack's object prefix and files; a ``RequestError`` if unusable."""
    try:
        prefix = haystack_prefix(spec.haystack_dir, blobs.bucket)
        files = haystack_files(blobs, prefix)
        check_source_size(files, option="haystack_dir")
        return prefix, files
    except HaystackError as error:
        raise RequestError("haystack_dir", str(error)) from error


def listed_files(files: list[BlobInfo]) -> list[dict[str, Any]]:
    """A haystack listing as the run document keeps it (empty when too long to keep)."""
    if len(files) > MAX_LISTED_FILES:
        return []
    return [{"name": f.name, "size": f.size, "fingerprint": f.fingerprint} for f in files]


@dataclass(frozen=True)
class _Source:
    """Google's MRCR v2 samples a run reads: the files and the rows kept."""

    files: list[str]
    rows: list[tuple[int, int, int, int, int]]  # (file index, row, context_len, offset, length)
    fingerprint: str
    reply_tokens: int = 0  # the room of the longest expected reply


def resolve_mrcr_source(spec: RunRequest, blobs: BlobStore) -> _Source | None:
    """The published MRCR v2 rows a run reads (one streaming pass), or None.

    Rows of another needle count than ``num_needles`` (when given) are left out.
    """
    if spec.mrcr_source is None:
        return None
    try:
        prefix = mrcr_source_prefix(spec.mrcr_source, blobs.bucket).rstrip("/")
        listed = csv_files(blobs, prefix)
        check_source_size(listed, option="mrcr_source")
        files = [info.name for info in listed]
        refs = index_rows(blobs, files)
    except (HaystackError, KeyError, ValueError) as error:
        raise RequestError("mrcr_source", str(error)) from error
    wanted = spec.num_needles
    kept = [ref for ref in refs if wanted is None or ref.needles in (None, wanted)]
    if not kept:
        raise RequestError("mrcr_source", f"no row of {', '.join(files)} has {wanted} needles")
    fingerprint = content_fingerprint(listed, salt="mrcr_v2")
    return _Source(
        files,
        [(files.index(r.file), r.row, r.context_len, r.offset, r.length) for r in kept],
        fingerprint,
        reply_room(max(r.answer_bytes for r in kept)),
    )


def run_record(
    run_id: str, spec: RunRequest, haystack_uri: str, source: _Source | None = None
) -> dict[str, Any]:
    """The run document a new run starts with.

    ``stamp`` tells this run from one created later under the same ID (after a
    delete): every cell message carries it, and a worker drops a message whose stamp
    is not its run's.
    """
    cells = source_cells(source.rows) if source else spec.cells()
    budget = call_budget(spec, source.reply_tokens if source else 0)
    shards = shards_for(len(cells), get_settings().counter_shards)
    sourced = (
        # Firestore holds no nested arrays: each row as a map.
        {
            "source_files": source.files,
            "source_rows": [
                {"file": f, "row": r, "tokens": n, "offset": at, "length": size}
                for f, r, n, at, size in source.rows
            ],
        }
        if source
        else {}
    )
    return sourced | {
        "run_id": run_id,
        "stamp": uuid.uuid4().hex[:16],
        "spec": spec.model_dump(mode="json"),
        "model": spec.model_name,
        # Google's word on the models' lifecycle when the run began (a retired model
        # called anyway says so here, on every page that shows the run).
        "model_notes": lifecycle_notes(spec.model_name, spec.evaluator_model_name),
        "label": spec.label or run_label({"model": spec.model_name, "spec": {"task": spec.task}}),
        "version": spec.results_version,
        "scorer": spec.scorer_name(),
        "haystack_uri": haystack_uri,
        "status": RUN_RUNNING,
        # How the model is called, stated with every result (MRCR v2's README asks it).
        "call_settings": {
            "temperature": temperature_record(spec.model_name),
            "thinking_budget": spec.thinking_budget,  # None: the model's default
            "thinking_level": spec.thinking_level,
            # The answer budget each call gets: the answer's room plus the thinking room
            # (niah.core.answer_budget), or the run's own max_output_tokens.
            "max_output_tokens": budget.max_output_tokens,
            "answer_tokens": budget.answer_tokens,
            "thinking_tokens": budget.thinking_tokens,
            "tools": False,
            # Online, call by call, or batch jobs at batch prices.
            "execution": "batch" if spec.is_batch() else "online",
        },
        "total": len(cells),
        # The counter shards, sized to the run, and what each will count: a worker
        # checks the run only when its shard is full (niah.core.counters).
        "counter_shards": shards,
        "shard_totals": shard_totals((c.cell_id for c in cells), shards),
        "done": 0,
        "failed": 0,
    }


def _progress(run_id: str, *, resume: bool, store: ResultStore) -> _Progress:
    """For a run that already exists: keep answered cells, reset failed ones when asked.

    Failed cells are retried when the run had finished or ``resume`` says so; a
    finished run with nothing failed is left as it is. Nothing paid for is asked again.
    A run whose report failed is finished too, and its report is tried again.
    """
    existing = store.get_run(run_id) or {}
    if existing.get("status") == RUN_CANCELLED:
        if not resume:
            return _Progress(set(), 0, already_complete=False, cancelled=True, run=existing)
        return _resume_cancelled(run_id, existing, store=store)
    report_failed = existing.get("status") == RUN_REPORT_FAILED
    if report_failed:  # reopened: its report is asked for below (``publish_missing``)
        store.reopen_report(run_id)
        log("failed report asked for again", run_id=run_id)
    finished = existing.get("status") == RUN_COMPLETE or report_failed
    retried = 0
    if int(existing.get("failed", 0)) > 0 and (finished or resume):
        retried = store.reset_failed_cells(run_id, shards=run_shards(existing))
    elif finished and not report_failed:
        return _Progress(set(), 0, already_complete=True, run=existing)
    elif dispatch_in_progress(existing) and not report_failed:
        return _Progress(set(), 0, already_complete=False, in_progress=True, run=existing)
    return _Progress(taken_cells(run_id, store), retried, already_complete=False, run=existing)


def _resume_cancelled(run_id: str, run: dict[str, Any], *, store: ResultStore) -> _Progress:
    """Set a cancelled run running again: its missing and failed cells are published.

    Running before anything is published, so no worker drops the new messages. Its
    primer counts as released: whatever the cancel held back is published now, at once
    (a primer left unanswered is published with the rest).
    """
    store.update_run(
        run_id,
        {"status": RUN_RUNNING, "primer_released": True, "resumed_at": dt.datetime.now(dt.UTC)},
    )
    retried = (
        store.reset_failed_cells(run_id, shards=run_shards(run))
        if int(run.get("failed", 0)) > 0
        else 0
    )
    log("cancelled run resumed", run_id=run_id)
    return _Progress(taken_cells(run_id, store), retried, already_complete=False, run=run)


def dispatch_in_progress(run: dict[str, Any]) -> bool:
    """Whether a run's cells are on their way: a repeated request publishes none then.

    In progress while its primer is unanswered (its answer publishes the rest), and for
    ``DISPATCH_SETTLE_SECONDS`` after its cells were last published. A run stuck past
    that is the sweep's (``sweep_stalled_runs``), or a later request's.
    """
    if run.get("primer_cell") and not run.get("primer_released"):
        return True
    stamps = [run.get("published_at"), run.get("created_at")]
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
) -> Dispatched:
    """Validate, record and fan out a run; idempotent for a repeated request.

    The run ID is derived from the request and the haystack's content, so a client
    that retries gets the same run back and workers skip the cells already answered.
    ``ledger``: where spend is held against the ceilings (none: unlimited, as in tests
    of other concerns); ``caller``: who asks (``niah.core.callers``).
    """
    spec = parse_request(payload)
    source = resolve_mrcr_source(spec, blobs)
    sourced = source_cells(source.rows) if source else None
    check_budget(spec, sourced, source.reply_tokens if source else 0)
    warnings = model_warnings(spec)
    prefix, files = resolve_haystack(spec, blobs)
    fingerprint = content_fingerprint(files)
    run_id = spec.run_id(fingerprint + (source.fingerprint if source else ""))
    record = run_record(run_id, spec, f"gs://{blobs.bucket}/{prefix}", source)
    record["haystack_files"] = listed_files(files)
    total = int(record["total"])
    primer = primer_message(run_id, spec, record)
    if primer is not None:  # until it is answered, the run's dispatch is in progress
        record["primer_cell"] = primer["cell_id"]
    record |= admit_request(
        run_id,
        spec,
        sourced or spec.cells(),
        call_budget(spec, source.reply_tokens if source else 0),
        store.get_run(run_id),
        running=store.running_runs,
        ledger=ledger,
        caller=caller,
        resume=resume,
    )
    created = store.create_run(run_id, record)
    if not created and spec.label is not None:
        # The label names the run for people, not its results: asked again under
        # another, the run is relabelled (and nothing else changes).
        store.update_run(run_id, {"label": spec.label})
    progress = (
        _Progress(set(), 0, False, run=record)
        if created
        else _progress(run_id, resume=resume, store=store)
    )
    if progress.already_complete:
        log("run already complete", run_id=run_id)
        return Dispatched(run_id, total, 0, True, created=False, warnings=warnings)
    if progress.cancelled:
        log("cancelled run asked again: nothing published", run_id=run_id)
        note = (
            f"run {run_id} is cancelled: nothing was published. Resume it with "
            f"`niah run --resume {run_id}` (answered cells are kept)"
        )
        return Dispatched(
            run_id, total, 0, False, created=False, warnings=[*warnings, note], cancelled=True
        )
    if progress.in_progress:
        log("run being dispatched: nothing published again", run_id=run_id)
        note = (
            "the run's cells were published moments ago or wait on its first cell: "
            "nothing was published again"
        )
        return Dispatched(run_id, total, 0, False, created=False, warnings=[*warnings, note])
    run_now = progress.run
    if spec.is_batch() and not created and (resume or progress.retried):
        run_now = start_batch_round(run_id, run_now, store=store)
    published = (
        publisher.publish_cells([primer])
        if created and primer is not None
        else publish_missing(
            run_id, spec, progress.stored, store=store, publisher=publisher, run=run_now
        )
    )
    if not created and published:
        store.update_run(run_id, {"published_at": dt.datetime.now(dt.UTC)})
    log(
        "run dispatched",
        run_id=run_id,
        cells=total,
        created=created,
        published=published,
        reused=len(progress.stored),
        retried=progress.retried,
    )
    return Dispatched(
        run_id,
        total,
        published,
        already_complete=False,
        created=created,
        reused=len(progress.stored),
        retried=progress.retried,
        warnings=warnings,
    )


def start_batch_round(run_id: str, run: dict[str, Any], *, store: ResultStore) -> dict[str, Any]:
    """A resumed batch run's next round: its unfinished jobs are left, its cells submitted anew.

    The run as updated (its ``batch_round`` one more); unchanged while a job of it is
    still open and not cancelled (a resume of a running batch run would pay twice).
    """
    if any(
        not (job.get("ingested") or job.get("ended") or job.get("superseded"))
        and not job.get("cancel_sent")
        for job in run.get("batch_jobs") or []
    ):
        return run
    jobs = [
        job | ({"superseded": True} if not (job.get("ingested") or job.get("ended")) else {})
        for job in run.get("batch_jobs") or []
    ]
    fields = {"batch_round": int(run.get("batch_round", 0)) + 1, "batch_jobs": jobs}
    store.update_run(run_id, fields)
    return run | fields
