"""Benchmark: the local demo's model seconds with and without llama.cpp prompt reuse.

The demo's grid (Gemma 3 270M, 1,000 to 4,000 tokens, 4 lengths x 5 depths) is built as
the worker builds it and answered in the order cache-aware dispatch gives the one local
worker: the primer, then the grid's order. llama.cpp keeps the last prompt's KV cache
in its slot; with ``cache_prompt`` (what the local provider sends) a prompt that shares
a prefix with the previous one evaluates only the rest. The same calls are made with
``cache_prompt`` off. Model seconds are llama.cpp's own prompt and generation time.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
ESSAYS = REPO / ".local" / "haystacks" / "paul_graham_essays"
DEMO = {
    "context_lengths_min": 1000,
    "context_lengths_max": 4000,
    "context_lengths_num_intervals": 4,
    "document_depth_percent_intervals": 5,
}


def _demo_prompts() -> list[str]:
    """The demo's prompts, the primer first, as the local worker receives them."""
    sys.path.insert(0, str(REPO))
    from niah.core.haystack_tokens import load_haystack
    from niah.core.prompt_builder import build_prompt
    from niah.core.prompts import LOCAL_TEMPLATE
    from niah.core.spec import RunRequest
    from niah.models.tokenizer import get_tokenizer
    from niah.service.dispatch import primer_message
    from niah.tasks import get_task
    from tests.fakes import MemoryBlobs

    blobs = MemoryBlobs()
    prefix = "haystacks/paul_graham_essays/"
    for path in sorted(ESSAYS.glob("*.txt")):
        blobs.objects[prefix + path.name] = path.read_bytes()
    tokenizer = get_tokenizer()
    haystack = load_haystack(blobs, prefix, tokenizer)
    spec = RunRequest.model_validate(DEMO)
    primer = primer_message("bench", spec, {})
    assert primer is not None
    cells = sorted(spec.cells(), key=lambda cell: cell.cell_id != primer["cell_id"])
    task = get_task(spec.task)
    prompts = []
    for cell in cells:
        sample = task.sample(spec, cell)
        prompts.append(
            build_prompt(
                haystack,
                tokenizer,
                template=LOCAL_TEMPLATE,
                insertions=sample.insertions,
                question=sample.question,
                answer_lead=sample.answer_lead,
                context_length=cell.context_length,
            ).prompt
        )
    return prompts


def measure_local_reuse() -> dict[str, Any]:
    """Model seconds and prompt tokens evaluated, with and without prompt reuse."""
    from niah.models.providers.local_gemma import LocalGemmaProvider

    prompts = _demo_prompts()
    provider = LocalGemmaProvider("gemma-3-270m-local")
    figures: dict[str, Any] = {"cells": len(prompts)}
    for label, reuse in (("without_reuse", False), ("with_reuse", True)):
        provider._server.handle_completions({"prompt": "warm up", "max_tokens": 1})
        seconds = evaluated = 0.0
        started = time.perf_counter()
        for prompt in prompts:
            reply = provider._server.handle_completions(
                {
                    "prompt": prompt,
                    "max_tokens": 24,
                    "temperature": 0.0,
                    "cache_prompt": reuse,
                    "stop": ["\n"],
                }
            )
            timings = reply.get("timings", {})
            seconds += (timings.get("prompt_ms", 0) + timings.get("predicted_ms", 0)) / 1000
            evaluated += timings.get("prompt_n", 0)
        figures[label] = {
            "model_seconds": round(seconds, 2),
            "wall_seconds": round(time.perf_counter() - started, 2),
            "prompt_tokens_evaluated": int(evaluated),
        }
    figures["model_seconds_ratio"] = round(
        figures["without_reuse"]["model_seconds"] / figures["with_reuse"]["model_seconds"], 2
    )
    return figures


if __name__ == "__main__":
    print(json.dumps(measure_local_reuse(), indent=2))
