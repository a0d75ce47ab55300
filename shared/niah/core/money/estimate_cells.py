"""One cell's call as the estimate counts it: its prompt tokens, how known, its prefix.

A generated sample's prompt is built to exactly ``context_length -
final_context_length_buffer`` tokens of our tokenizer, so that count is exact where the
model's tokenizer is ours (``PromptBasis`` says how each is known); a conversational
prompt (MRCR) gets ``TURN_ALLOWANCE`` tokens a turn on top; a published MRCR v2 row is
priced at its ``context_len``, Google's count. Each cell's prefix (the template's head
and the haystack before its first insertion) is what it may share with the primer's,
credited as cached where it reaches the model's minimum (``with_cache``). The run's
sums and figures are ``niah.core.money.estimate``'s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal

from niah.catalog.models import prompts_fitted
from niah.core.interfaces import Tokenizer
from niah.core.prompts.answer_budget import call_budget
from niah.core.prompts.sample import Sample
from niah.core.prompts.texts import CONTEXT_MARK, judge_prompt, render, split_transcript
from niah.core.request.axes import at_variant, haystack_order
from niah.core.request.grid import Cell
from niah.core.request.spec import RunRequest

# Tokens a turn may add when a transcript is sent as turns: Gemma's chat template wraps
# each in <start_of_turn>, the role, a newline, <end_of_turn> and a newline, while the
# "User: " / "Assistant: " marks and blank lines between them are dropped. An allowance.
TURN_ALLOWANCE = 5

# "exact": built to its length in the model's own tokenizer. Where the service does not
# hold it (niah.catalog.prompts_fitted): "fitted", a haystack prompt fitted per cell to
# Vertex's countTokens; "ratio", a batch line's, built at the run's measured ratio, not
# fitted per cell; "local_count", a prompt the task generates, built to its length in
# Gemma 3 and not fitted (docs/context-building.md, "Which models are exact").
PromptBasis = Literal["exact", "fitted", "ratio", "local_count", "turns_allowance", "published"]


def _length_basis(spec: RunRequest, *, haystack: bool) -> PromptBasis:
    """How a prompt's length is known, as the worker builds it for this run."""
    if not prompts_fitted(spec.model_name, spec.provider()):
        return "exact"
    if not haystack:
        return "local_count"
    return "ratio" if spec.is_batch() else "fitted"


@dataclass(frozen=True)
class CellEstimate:
    """One cell's call: its prompt tokens and how known, its cached prefix, its budget."""

    cell: Cell
    prompt_tokens: int
    basis: PromptBasis
    # Template head + haystack before the first insertion (None: no shared haystack).
    prefix_tokens: int | None
    head: str | None
    max_output_tokens: int
    answer_tokens: int
    cached_tokens: int = 0
    judge_prompt_tokens: int = 0


def same_haystack(
    spec: RunRequest, estimates: list[CellEstimate], primer: Cell
) -> list[CellEstimate]:
    """Only cells cut from the primer's haystack order share its prefix.

    A shuffled cell beside a coherent primer (or the reverse) shares the template's head
    and the corpus's first sentence at most: no cache is counted for it.
    """
    order = haystack_order(at_variant(spec, primer.variant))
    return [
        e
        if haystack_order(at_variant(spec, e.cell.variant)) == order
        else replace(e, prefix_tokens=None)
        for e in estimates
    ]


def cell_estimate(
    spec: RunRequest,
    cell: Cell,
    sample: Sample,
    default_template: str,
    tokenizer: Tokenizer | None,
    sentence_start: Callable[[int], int] | None,
) -> CellEstimate:
    """One cell's call as the worker would make it."""
    cell_budget = call_budget(spec, sample.answer_tokens)
    if sample.prompt is not None:  # a published row: sent whole, Google's count
        return CellEstimate(
            cell,
            sample.prompt_tokens or 0,
            "published",
            None,
            None,
            cell_budget.max_output_tokens,
            cell_budget.answer_tokens,
        )
    if sample.context_maker is not None:  # a list made per cell: no prefix is shared
        return CellEstimate(
            cell,
            cell.context_length - spec.final_context_length_buffer,
            _length_basis(spec, haystack=False),
            None,
            None,
            cell_budget.max_output_tokens,
            cell_budget.answer_tokens,
        )
    template = sample.template or spec.prompt_template or default_template
    head, tail = render(
        template, context=CONTEXT_MARK, question=sample.question, answer_lead=sample.answer_lead
    ).split(CONTEXT_MARK)
    ordered = sorted(sample.insertions, key=lambda insertion: insertion.depth_percent)
    own_text = head + "".join(i.text for i in ordered) + tail
    target = cell.context_length - spec.final_context_length_buffer
    prompt_tokens = target
    basis = _length_basis(spec, haystack=True)
    if sample.conversational:
        prompt_tokens += TURN_ALLOWANCE * len(split_transcript(own_text))
        basis = "turns_allowance"
    # The haystack's share: the builder gives the haystack what the template, question
    # and insertions leave (give or take a junction token).
    own = len(tokenizer.encode(own_text)) if tokenizer else len(own_text.encode())
    haystack = max(0, target - own)
    first = ordered[0].depth_percent if ordered else 100.0
    point = haystack if first >= 100 else int(haystack * first / 100)
    if sentence_start is not None and first < 100:
        point = sentence_start(point)
    head_tokens = len(tokenizer.encode(head)) if tokenizer else 0
    return CellEstimate(
        cell,
        prompt_tokens,
        basis,
        head_tokens + point,
        head,
        cell_budget.max_output_tokens,
        cell_budget.answer_tokens,
    )


def with_judge_prompt(estimate: CellEstimate, sample: Sample) -> CellEstimate:
    """The judge's prompt at its most: the template's bytes and the answer's room."""
    empty = judge_prompt(question=sample.question, reference=sample.needle, answer="")
    return replace(estimate, judge_prompt_tokens=len(empty.encode()) + estimate.answer_tokens)


def with_cache(estimates: list[CellEstimate], primer: Cell, minimum: int) -> list[CellEstimate]:
    """Each cell's prefix shared with the primer's, cached when it reaches ``minimum``.

    A cell whose head differs from the primer's (a question or request before the
    context) shares only part of the head, too short to cache.
    """
    first = next(e for e in estimates if e.cell == primer)
    out = []
    for estimate in estimates:
        shared = 0
        if (
            estimate.cell != primer
            and estimate.head == first.head
            and estimate.prefix_tokens is not None
            and first.prefix_tokens is not None
        ):
            shared = min(estimate.prefix_tokens, first.prefix_tokens, estimate.prompt_tokens)
        cached = shared if shared >= minimum else 0
        out.append(replace(estimate, cached_tokens=cached))
    return out
