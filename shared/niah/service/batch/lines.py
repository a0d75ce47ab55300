"""A cell as a line of a Vertex AI batch input file: the request an online call sends.

The prompt comes from the worker's own sequence (``prepare_call``) and the generation
settings from the one definition both paths use (``niah.models.providers.gemini_request``),
so a batch run asks exactly what an online run asks. A Gemini run's haystack prompt is
fitted to the model's count (``niah.core.prompts.token_fit``) and a prompt over the model's
input limit refused (``PromptOverLimitError``) here, before the job is paid for, as the
online path does before its call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from niah.core.interfaces import BlobInfo, BlobStore, Provider
from niah.core.prompts.token_fit import TokenCountRatio
from niah.core.request.spec import RunRequest
from niah.models.providers.gemini import GeminiProvider
from niah.models.providers.gemini_request import batch_line, generation_for, request_body
from niah.service.cells.deps import TokenizerFactory
from niah.service.cells.prompt import cell_sample, count_before_call, prepare_call, reads_haystack
from niah.service.messages import CellTask

# Prompts not built from the haystack (generated contexts, published rows) a batch counts
# exactly before it estimates the rest: one ``countTokens`` a cell would not fit a
# 10,000-line submit in the worker's 540 s (nor in countTokens' quota).
UNFITTED_COUNTED = 3


class UnfittedCounts:
    """How the model counts a batch's prompts that are not the haystack's.

    The first ``UNFITTED_COUNTED`` are counted exactly; the rest are estimated at the
    largest ratio seen and counted only near the input limit (``count_before_call``
    with a ratio), so a prompt over the limit is still refused before any job is paid.
    """

    def __init__(self) -> None:
        self.counted = 0
        self.worst: TokenCountRatio | None = None

    def note(self, model_tokens: int | None, local_tokens: int) -> None:
        """Keep an exact count, if it is the largest ratio yet."""
        if model_tokens is None or local_tokens <= 0:
            return
        self.counted += 1
        seen = TokenCountRatio(model_tokens, local_tokens, "a counted prompt of the batch")
        if self.worst is None or seen.ratio > self.worst.ratio:
            self.worst = seen


class BatchLine(NamedTuple):
    """A cell's input line, and its prompt's exact local length where it was built here."""

    line: dict[str, Any]
    planned_prompt_tokens: int | None


def cell_batch_line(
    task: CellTask,
    spec: RunRequest,
    *,
    blobs: BlobStore,
    tokenizer_for: TokenizerFactory,
    haystack_files: list[BlobInfo] | None = None,
    provider: Provider | None = None,
    token_ratio: Callable[[], TokenCountRatio | None] | None = None,
    unfitted: UnfittedCounts | None = None,
) -> BatchLine:
    """The batch input line of ``task``'s cell (found again by its prompt's digest).

    ``token_ratio``: the run's ratio, asked only for a prompt built from the haystack
    (measured once, on the first such cell); ``provider``: the model's count where a
    prompt must be counted before it is sent, and the refusal over its input limit;
    ``unfitted``: the batch's counts of prompts not built from the haystack.
    """
    sample = cell_sample(task, spec, task.cell, blobs)
    ratio = token_ratio() if token_ratio is not None and reads_haystack(sample) else None
    prepared = prepare_call(
        spec,
        task.cell,
        sample,
        default_template=GeminiProvider.default_template,
        tokenizer=tokenizer_for(GeminiProvider.tokenizer_name),
        blobs=blobs,
        haystack_files=haystack_files,
        token_ratio=ratio,
    )
    built, budget = prepared.built, prepared.budget
    if provider is not None:
        estimate = ratio
        if ratio is None and unfitted is not None and unfitted.counted >= UNFITTED_COUNTED:
            estimate = unfitted.worst
        counted = count_before_call(spec, task.cell, built, estimate, provider, budget)
        if ratio is None and unfitted is not None:
            unfitted.note(counted, built.planned_prompt_tokens)
    generation = generation_for(
        spec.model_name,
        max_output_tokens=budget.max_output_tokens,
        thinking_budget=budget.thinking_budget,
        thinking_level=budget.thinking_level,
    )
    planned = built.planned_prompt_tokens if sample.prompt is None else None
    return BatchLine(batch_line(request_body(built.prompt, prepared.turns, generation)), planned)
