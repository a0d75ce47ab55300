"""A cell as a line of a Vertex AI batch input file: the request an online call sends.

The prompt comes from the worker's own builder (``build_cell_prompt``) and the generation
settings from the one definition both paths use (``niah.models.providers.gemini_request``),
so a batch run asks exactly what an online run asks.
"""

from __future__ import annotations

from typing import Any

from niah.core.answer_budget import call_budget
from niah.core.interfaces import BlobInfo, BlobStore
from niah.core.spec import RunRequest
from niah.models.providers.gemini import GeminiProvider
from niah.models.providers.gemini_request import batch_line, generation_for, request_body
from niah.service.cell_worker import (
    CellTask,
    TokenizerFactory,
    build_cell_prompt,
    cell_sample,
    cell_turns,
)


def cell_batch_line(
    task: CellTask,
    spec: RunRequest,
    *,
    blobs: BlobStore,
    tokenizer_for: TokenizerFactory,
    haystack_files: list[BlobInfo] | None = None,
) -> dict[str, Any]:
    """The batch input line of ``task``'s cell (found again by its prompt's digest)."""
    sample = cell_sample(task, spec, task.cell, blobs)
    built = build_cell_prompt(
        spec,
        task.cell,
        sample,
        default_template=GeminiProvider.default_template,
        tokenizer=tokenizer_for(GeminiProvider.tokenizer_name),
        blobs=blobs,
        haystack_files=haystack_files,
    )
    turns = cell_turns(built, sample)
    budget = call_budget(spec, sample.answer_tokens)
    generation = generation_for(
        spec.model_name,
        max_output_tokens=budget.max_output_tokens,
        thinking_budget=budget.thinking_budget,
        thinking_level=budget.thinking_level,
    )
    return batch_line(request_body(built.prompt, turns, generation))
