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
import time
from typing import Any

from bench_grid import grid_prompts

DEMO = {
    "context_lengths_min": 1000,
    "context_lengths_max": 4000,
    "context_lengths_num_intervals": 4,
    "document_depth_percent_intervals": 5,
}


def measure_local_reuse(demo: dict[str, Any] = DEMO) -> dict[str, Any]:
    """Model seconds and prompt tokens evaluated, with and without prompt reuse."""
    from niah.core.prompts.texts import LOCAL_TEMPLATE
    from niah.models.providers.local_gemma import LocalGemmaProvider

    # The primer first, then the grid's order, as the one local worker answers them.
    prompts = [prompt for _, prompt in grid_prompts(demo, LOCAL_TEMPLATE)]
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
