"""Dispatch: validate a run request, record the run, publish one message per cell."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from niah.blobs import BlobStore
from niah.bus import Publisher
from niah.completion import request_report_if_complete
from niah.haystack_source import (
    HaystackError,
    content_fingerprint,
    haystack_files,
    haystack_prefix,
)
from niah.logs import log
from niah.providers import max_context_tokens
from niah.settings import get_settings
from niah.spec import LOCAL_MODEL, RunRequest, provider_for_model
from niah.store import ResultStore

MIN_CONTEXT_LENGTH = 128
GEMINI_NAME = re.compile(r"^gemini-\d[\w.-]*$")


class RequestError(ValueError):
    """A request the user must fix; ``field`` names the option at fault."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True)
class Dispatched:
    """What the dispatcher answers: the run and how much was published."""

    run_id: str
    cells: int
    published: int
    already_complete: bool
    created: bool
    reused: int = 0
    retried: int = 0


def parse_request(payload: Any) -> RunRequest:
    """Validate a JSON payload; the first problem becomes a ``RequestError``."""
    if not isinstance(payload, dict):
        raise RequestError("body", "must be a JSON object of run options")
    try:
        return RunRequest.model_validate(payload)
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "body"
        message = str(first["msg"]).removeprefix("Value error, ")
        if first["type"] == "extra_forbidden":
            message = "is not a run option; check its spelling against the README's list"
        raise RequestError(field, message) from error


def check_budget(spec: RunRequest) -> None:
    """Refuse grids that are impossible or above the configured budget."""
    settings = get_settings()
    cells = spec.cells()
    if len(cells) > settings.max_cells_per_run:
        raise RequestError(
            "context_lengths",
            f"the grid has {len(cells)} cells, above the limit of {settings.max_cells_per_run} "
            "(NIAH_MAX_CELLS_PER_RUN); use fewer lengths or depths",
        )
    total_tokens = sum(cell.context_length for cell in cells)
    if total_tokens > settings.max_tokens_per_run:
        raise RequestError(
            "context_lengths",
            f"the grid asks for {total_tokens} prompt tokens, above the limit of "
            f"{settings.max_tokens_per_run} (NIAH_MAX_TOKENS_PER_RUN)",
        )
    check_model(spec)
    shortest = min(cell.context_length for cell in cells)
    floor = minimum_context_length(spec)
    if shortest < floor:
        raise RequestError(
            "context_lengths",
            f"{shortest} tokens is below the prompt's own size (template, question and "
            f"needle need about {floor}); ask for at least {floor} tokens",
        )
    limit = max_context_tokens(spec.provider(), spec.model_name)
    longest = max(cell.context_length for cell in cells)
    if limit is not None and longest > limit:
        raise RequestError(
            "context_lengths",
            f"{longest} tokens is above {spec.model_name}'s input limit of {limit} tokens",
        )


def check_model(spec: RunRequest) -> None:
    """Refuse models no provider of this deployment can serve."""
    provider = spec.provider()
    if provider == "local" and spec.model_name != LOCAL_MODEL:
        raise RequestError("model_name", f"the local provider serves only {LOCAL_MODEL}")
    if provider == "gemini" and not GEMINI_NAME.match(spec.model_name.rsplit("/", 1)[-1]):
        raise RequestError(
            "model_name", f"{spec.model_name!r} is not a Gemini model name (e.g. gemini-2.5-flash)"
        )
    if provider == "openai_compatible" and not get_settings().openai_base_url:
        raise RequestError(
            "model_name",
            f"unknown model {spec.model_name!r}: use a gemini-* model, {LOCAL_MODEL}, or "
            "model_provider openai_compatible on a deployment with NIAH_OPENAI_BASE_URL set",
        )
    for name in filter(None, [spec.evaluator_model_name]):
        if provider_for_model(name) == "openai_compatible" and not get_settings().openai_base_url:
            raise RequestError("evaluator_model_name", f"unknown judge model {name!r}")


def minimum_context_length(spec: RunRequest) -> int:
    """A safe lower bound on the prompt's own size in tokens, without a tokenizer.

    The built-in templates, question and needle take under 128 tokens; a custom
    template or needle is estimated at one token per 3 characters.
    """
    own_text = len(spec.prompt_template or "") + len(spec.retrieval_question)
    own_text += 0 if spec.dynamic_needle else len(spec.needle)
    return max(MIN_CONTEXT_LENGTH, own_text // 3 + 64) + spec.final_context_length_buffer


def dispatch_run(
    payload: Any,
    *,
    store: ResultStore,
    publisher: Publisher,
    blobs: BlobStore,
    resume: bool = False,
) -> Dispatched:
    """Validate, record and fan out a run; idempotent for a repeated request.

    The run ID is derived from the request and the haystack's content, so a client
    that retries gets the same run back and workers skip the cells already answered.
    Failed cells are retried when the run had finished, or when ``resume`` says so;
    a run still in progress only gets its missing cells published.
    """
    spec = parse_request(payload)
    check_budget(spec)
    try:
        prefix = haystack_prefix(spec.haystack_dir, blobs.bucket)
        files = haystack_files(blobs, prefix)
    except HaystackError as error:
        raise RequestError("haystack_dir", str(error)) from error
    run_id = spec.run_id(content_fingerprint(files))
    cells = spec.cells()
    created = store.create_run(
        run_id,
        {
            "run_id": run_id,
            "spec": spec.model_dump(mode="json"),
            "model": spec.model_name,
            "version": spec.results_version,
            "scorer": spec.scorer_name(),
            "haystack_uri": f"gs://{blobs.bucket}/{prefix}",
            "status": "running",
            "total": len(cells),
            "done": 0,
            "failed": 0,
        },
    )
    retried = 0
    stored: set[str] = set()
    if not created:
        # A rerun, a client's retry or a resume: keep answered cells, retry failed ones,
        # publish only what is missing. Nothing already paid for is asked again.
        existing = store.get_run(run_id) or {}
        finished = existing.get("status") == "complete"
        if int(existing.get("failed", 0)) > 0 and (finished or resume):
            retried = store.reset_failed_cells(run_id)
        elif finished:
            log("run already complete", run_id=run_id)
            return Dispatched(run_id, len(cells), 0, already_complete=True, created=False)
        stored = {str(cell["cell_id"]) for cell in store.list_cells(run_id)}
    published = publish_missing(run_id, spec, stored, store=store, publisher=publisher)
    log(
        "run dispatched",
        run_id=run_id,
        cells=len(cells),
        created=created,
        published=published,
        reused=len(stored),
        retried=retried,
    )
    return Dispatched(
        run_id,
        len(cells),
        published,
        already_complete=False,
        created=created,
        reused=len(stored),
        retried=retried,
    )


def publish_missing(
    run_id: str, spec: RunRequest, stored: set[str], *, store: ResultStore, publisher: Publisher
) -> int:
    """Publish the cells of the run not in ``stored``; if none, ask for the report."""
    messages = [
        {
            "run_id": run_id,
            "cell_id": cell.cell_id,
            "context_length": cell.context_length,
            "depth_percent": cell.depth_percent,
        }
        for cell in spec.cells()
        if cell.cell_id not in stored
    ]
    if not messages:
        # Every cell is stored but the report may never have been asked for.
        request_report_if_complete(run_id, store=store, publisher=publisher)
        return 0
    return publisher.publish_cells(messages)


def sweep_stalled_runs(
    *, store: ResultStore, publisher: Publisher, stalled_after_seconds: float
) -> dict[str, int]:
    """Republish the missing cells of runs that have made no progress for a while.

    Pub/Sub redelivers what a crashed worker held, but not forever (7 days), and the
    emulator not at all when the worker died mid-request. Workers skip stored cells, so
    republishing is always safe; a scheduler runs this every few minutes.
    """
    now = dt.datetime.now(dt.UTC)
    swept = published = 0
    for run in store.running_runs():
        last = max(filter(None, [run.get("updated_at"), run.get("created_at")]), default=None)
        if last is None or (now - last).total_seconds() < stalled_after_seconds:
            continue
        run_id = str(run["run_id"])
        try:
            spec = RunRequest.model_validate(run["spec"])
            stored = {str(cell["cell_id"]) for cell in store.list_cells(run_id)}
            count = publish_missing(run_id, spec, stored, store=store, publisher=publisher)
            store.update_run(run_id, {"swept": count})  # counts as progress: no re-sweep soon
        except Exception as error:  # one bad run must not stop the sweep of the others
            log("sweep of a run failed", severity="ERROR", run_id=run_id, error=repr(error))
            continue
        log("stalled run swept", severity="WARNING", run_id=run_id, republished=count)
        swept += 1
        published += count
    return {"runs_swept": swept, "cells_republished": published}
