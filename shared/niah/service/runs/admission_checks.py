"""What a run request may ask, checked before anything is recorded, published or paid.

The checks that need more than the request's own fields: the deployment's limits (cells,
tokens), the model catalog (which models, what thinking, whose input limit), the answer
budget, and the sources in the bucket. ``check_request`` runs them in order and resolves
the model's catalog entry once, for every check and the run record after them. What a
run may spend, and who may change it, is ``niah.service.runs.admission``'s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from niah.catalog.models import (
    ModelInfo,
)
from niah.core.interfaces import BlobInfo, BlobStore
from niah.core.prompts.answer_budget import CallBudget, answer_room, call_budget
from niah.core.prompts.haystack_files import content_fingerprint
from niah.core.prompts.mrcr_files import RunSource
from niah.core.request.axes import variants
from niah.core.request.grid import Cell
from niah.core.request.spec import RunRequest
from niah.core.results.certify import NOLIMA
from niah.core.results.certify_run import (
    certify_plan,
    first_look_size,
    first_samples,
    plan_record,
)
from niah.errors import RequestError
from niah.service.runs.model_checks import check_model, model_warnings
from niah.service.runs.request_body import parse_request
from niah.service.runs.sources import resolve_haystack, resolve_published_rows, source_cells
from niah.settings import get_settings
from niah.tasks import get_task

MIN_CONTEXT_LENGTH = 128


def check_budget(
    spec: RunRequest,
    cells: list[Cell] | None = None,
    reply_tokens: int = 0,
    *,
    model: ModelInfo | None = None,
) -> None:
    """Refuse grids that are impossible or above the configured budget.

    ``cells``: the run's cells where they come from data (MRCR v2's files), not the grid;
    ``reply_tokens``: the room of the longest published reply among them; ``model``: the
    catalog's entry for ``spec.model_name`` where the caller resolved it (looked up here
    otherwise: a model the catalog does not know is None either way).
    """
    model = model or spec.catalog_model()
    settings = get_settings()
    lengths, depths = spec.lengths(), spec.depths()
    # Counted before the grid is expanded: a 1,000 x 1,000 request must cost nothing.
    # Each value of an axis (distractors, haystack order) is the grid once more.
    kinds = len(variants(spec))
    count = (
        len(cells)
        if cells is not None
        else len(lengths) * len(depths) * spec.samples_per_cell * kinds
    )
    if count > settings.max_cells_per_run:
        samples = f" x {spec.samples_per_cell} samples" if spec.samples_per_cell > 1 else ""
        axes = f" x {kinds} variants" if kinds > 1 else ""
        shape = (
            ""
            if cells is not None
            else f" ({len(lengths)} lengths x {len(depths)} depths{samples}{axes})"
        )
        raise RequestError(
            "context_lengths",
            f"the grid has {count} cells{shape}, above the limit of "
            f"{settings.max_cells_per_run} (NIAH_MAX_CELLS_PER_RUN); use fewer lengths, "
            "depths, samples or values of distractors and haystack_order",
        )
    cells = cells if cells is not None else spec.cells()
    total_tokens = sum(cell.context_length for cell in cells)
    if total_tokens > settings.max_tokens_per_run:
        raise RequestError(
            "context_lengths",
            f"the grid asks for {total_tokens} prompt tokens, above the limit of "
            f"{settings.max_tokens_per_run} (NIAH_MAX_TOKENS_PER_RUN)",
        )
    if spec.is_certify():
        check_certify_budget(spec, settings.max_tokens_per_run)
    check_model(spec, model)
    check_output_budget(spec, reply_tokens)
    if spec.task_options.published_source() is None:  # published samples are as published
        check_lengths(spec, model, cells)


def check_certify_budget(spec: RunRequest, most: int) -> None:
    """Refuse a certification above the run's token limit, or in dollars it cannot price."""
    plan = plan_record(spec, get_settings().max_cells_per_run)
    timed = plan["sample_seconds"] is not None
    if spec.certify_max_usd is not None and plan["sample_usd"] is None:
        raise RequestError(
            "certify_max_usd",
            f"{spec.model_name} has no price in the catalog (or costs nothing), so a budget "
            "in dollars cannot be kept; give "
            + ("certify_max_seconds (its cost is its time) or " if timed else "")
            + "certify_max_tokens instead",
        )
    if spec.certify_max_seconds is not None and not timed:
        raise RequestError(
            "certify_max_seconds",
            f"{spec.model_name} has no measured speed in the catalog (only a model the "
            "service runs itself, the local one, is budgeted in time); give "
            + ("certify_max_usd" if plan["sample_usd"] is not None else "certify_max_tokens")
            + " instead",
        )
    if not first_samples(spec, plan):
        field = binding_certify_budget(spec, plan)
        lengths = spec.lengths()
        middle = lengths[(len(lengths) - 1) // 2]  # the first length a certification asks
        count, length = (
            (certify_plan(spec, record=plan).base_samples, lengths[0])
            if spec.rule() == NOLIMA
            else (first_look_size(spec, plan, middle), middle)
        )
        name = "NoLiMa's base" if spec.rule() == NOLIMA else "a first look"
        if field == "certify_max_usd":
            has, needs = plan["budget_usd"], count * float(plan["sample_usd"][str(length)])
            amount, need = f"${has:,.4f}", f"${needs:,.4f}"
        elif field == "certify_max_seconds":
            has, needs = plan["budget_seconds"], count * plan["sample_seconds"][str(length)]
            amount, need = f"{has:,.0f} s of model time", f"{math.ceil(needs):,}"
        else:
            amount, need = f"{plan['max_tokens']:,} prompt tokens", f"{count * length:,}"
        budget = field if getattr(spec, field) is not None else "the default budget"
        raise RequestError(
            field,
            f"{budget} ({amount}) cannot pay for {name} ({count} samples at {length:,} "
            f"tokens: {need}); set {field} to at least {need}",
        )
    tokens = plan["max_tokens"]
    if tokens is not None and tokens > most:
        given = "certify_max_tokens" if spec.certify_max_tokens else "the default budget"
        raise RequestError(
            "certify_max_tokens",
            f"{given} ({tokens:,} prompt tokens) is above the limit of {most:,} "
            "(NIAH_MAX_TOKENS_PER_RUN); set certify_max_tokens lower, or use fewer or "
            "shorter lengths",
        )


def binding_certify_budget(spec: RunRequest, plan: dict[str, Any]) -> str:
    """The budget field a certification's first round does not fit: the one to raise.

    A priced model's budget is in dollars (``certify_max_usd``, given or a quarter of the
    grid's), the local model's in model seconds (``certify_max_seconds``), unless the
    ``certify_max_tokens`` it was also given is what refuses; another unpriced model's
    is in prompt tokens.
    """
    if plan["sample_usd"] is not None:
        field = "certify_max_usd"
    elif plan["sample_seconds"] is not None:
        field = "certify_max_seconds"
    else:
        return "certify_max_tokens"
    tokens_alone = spec.certify_max_tokens is not None and first_samples(
        spec, plan | {"max_tokens": None}
    )
    return "certify_max_tokens" if tokens_alone else field


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


def check_lengths(spec: RunRequest, model: ModelInfo | None, cells: list[Cell]) -> None:
    """Refuse lengths below the prompt's own size or above the model's input limit.

    ``model``: the catalog's entry for ``spec.model_name`` (None: limit unknown).
    """
    shortest = min(cell.context_length for cell in cells)
    floor = minimum_context_length(spec)
    if shortest < floor:
        raise RequestError(
            "context_lengths",
            f"{shortest} tokens is below the prompt's own size (template, question and "
            f"needle need about {floor}); ask for at least {floor} tokens",
        )
    # A context the task makes itself (a word list, a graph) too big for a length.
    short = get_task(spec.task).short_length(spec, cells)
    if short is not None:
        raise RequestError(short.field, short.message)
    output = call_budget(spec, model=model).max_output_tokens
    limit = model.prompt_limit(output) if model else None
    shared = ""
    if spec.provider() == "local":
        # llama.cpp's window holds the answer too: leave it the run's answer budget.
        limit = get_settings().local_model_max_context - 1 - output
    elif model is not None and limit != model.input_tokens:
        # Gemini 4: input and output share one limit; the call's output budget is taken.
        shared = (
            f" (its {model.input_tokens}-token limit, shared with the output budget of {output})"
        )
    longest = max(cell.context_length for cell in cells)
    if limit is not None and longest > limit:
        raise RequestError(
            "context_lengths",
            f"{longest} tokens is above {spec.model_name}'s input limit of {limit} tokens{shared}",
        )


def minimum_context_length(spec: RunRequest) -> int:
    """A safe lower bound on the prompt's own size in tokens, without a tokenizer.

    The built-in templates, question and needle take under 128 tokens; a custom
    template or needle (or the user's needles) is estimated at one token per 3 characters.
    """
    own_text = len(spec.prompt_template or "") + len(spec.retrieval_question)
    own_text += 0 if spec.dynamic_needle else len(spec.needle)
    own_text += sum(len(text) for text in spec.task_options.own_needles() or ())
    return max(MIN_CONTEXT_LENGTH, own_text // 3 + 64) + spec.final_context_length_buffer


@dataclass(frozen=True)
class CheckedRequest:
    """A run request that passed every check: what the dispatcher records and publishes."""

    spec: RunRequest
    # The catalog's entry for spec.model_name, resolved once (None: not in the catalog).
    model: ModelInfo | None
    run_id: str
    # The run's cells: the grid's, or one per published MRCR v2 row.
    cells: list[Cell]
    budget: CallBudget
    haystack_prefix: str
    haystack_files: list[BlobInfo]
    source: RunSource | None
    warnings: list[str]
    # A sentinel's run: what it asked apart from its firing (``RunRequest.request_key``).
    request_key: str | None = None


def check_request(payload: Any, blobs: BlobStore) -> CheckedRequest:
    """Read and check a run request, its sources included; a ``RequestError`` if refused.

    The run ID is derived from the request and its sources' content, so a client that
    retries names the same run.
    """
    spec = parse_request(payload)
    model = spec.catalog_model()
    source = resolve_published_rows(spec, blobs)
    sourced = source_cells(source.rows) if source else None
    reply_tokens = source.reply_tokens if source else 0
    check_budget(spec, sourced, reply_tokens, model=model)
    warnings = model_warnings(spec, model=model)
    prefix, files = resolve_haystack(spec, blobs)
    fingerprint = content_fingerprint(files) + (source.fingerprint if source else "")
    return CheckedRequest(
        spec,
        model,
        spec.run_id(fingerprint),
        sourced or spec.cells(),
        call_budget(spec, reply_tokens, model=model),
        prefix,
        files,
        source,
        warnings,
        spec.request_key(fingerprint) if spec.sentinel else None,
    )
