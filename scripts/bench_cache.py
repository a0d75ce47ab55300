"""Benchmark: a grid's input cost with naive and with cache-aware dispatch.

An 11 x 11 grid from 1,000 to 1,000,000 tokens on gemini-3.1-pro-preview: every cell's prompt
is built as the worker builds it (the single-needle task's sample, the harness
template, the default haystack, token-exact) and sent through the real google-genai
SDK to the Vertex stand-in with its implicit-cache model on (a prefix of at least
2,048 tokens, ``niah.core.money.estimate.IMPLICIT_CACHE_MIN_TOKENS``, shared with a prompt
answered in the last 300 s is billed as cached: ``niah_devtools.standin.
_cached_prefix_tokens`` has the sources and the assumptions). ``niah run --estimate``
prices the same calls from the same cache model without building them.

- "naive": every cell at once, as Pub/Sub fans a grid out to enough worker instances
  in seconds, while a 1M-token call takes longer: no call finds another's prefix
  cached. The stand-in answers after ``LATENCY`` seconds, longer than sending the
  grid takes here, and the figures say whether every call arrived before the first
  answer.
- "cache_aware": the primer the dispatcher picks (``messages.primer_message``) alone,
  then, once it is answered, the rest at once.
- "batch": the grid as one Vertex AI batch job (``execution: batch``), its lines in the
  order the worker writes them (cell order, ``batch_runs.submit_batch``), each line's
  request as the worker builds it (``request_body``), submitted through google-genai's
  ``client.batches`` to the stand-in, which answers the lines in file order with the
  same cache model; priced at the batch rates (``niah.core.money.pricing``: input and output
  at half, cached input at the cached rate). Vertex does not promise an order inside a
  job: with no cache hit at all the grid costs exactly half of naive.

The calls go straight to the stand-in, not through the local stack: the Pub/Sub
emulator keeps about 5 pushes in flight per subscription, so on the stack a "naive"
grid trickles through a few cells at a time and its later cells hit the caches of
earlier ones (measured 2026-11-26: 47 % of prompt tokens cached either way). The input
cost is priced from the usage the stand-in reported, at the catalog's gemini-3.1-pro-preview
prices (long-context tier above 200K tokens included).
"""

from __future__ import annotations

import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from bench_grid import grid_prompts

MODEL = "gemini-3.1-pro-preview"
MAX_OUTPUT_TOKENS = 20
GRID = {
    "model_name": MODEL,
    "context_lengths_min": 1000,
    "context_lengths_max": 1_000_000,
    "context_lengths_num_intervals": 11,
    "document_depth_percent_intervals": 11,
    "max_output_tokens": MAX_OUTPUT_TOKENS,
}
LATENCY = 30.0


def _send(prompts: list[str]) -> list[Any]:
    """Every prompt at once, through the SDK; the answers in order."""
    from niah.models.providers.gemini import GeminiProvider

    # A client each, as separate worker instances have: one client's connection pool
    # (100 connections in httpx) would hold the last calls back until the first return.
    with ThreadPoolExecutor(max_workers=len(prompts)) as pool:
        return list(
            pool.map(
                lambda p: GeminiProvider(MODEL).generate(p, max_output_tokens=MAX_OUTPUT_TOKENS),
                prompts,
            )
        )


def _standin(latency: float) -> tuple[Any, Any]:
    """A fresh stand-in with its cache model on, and the SDK pointed at it."""
    from niah.settings import get_settings
    from niah_devtools.standin import serve

    server, state = serve(0)
    os.environ |= {
        "NIAH_PROJECT": "niah-bench",
        "NIAH_VERTEX_BASE_URL": f"http://127.0.0.1:{server.server_port}",
        "NIAH_VERTEX_ACCESS_TOKEN": "bench",
        "NIAH_GEMINI_TIMEOUT_SECONDS": str(latency + 120),
        "NIAH_GEMINI_RETRY_ATTEMPTS": "1",
        "NO_PROXY": "127.0.0.1,localhost",
    }
    get_settings.cache_clear()
    state.reset(
        latency_seconds=latency, estimate_tokens=True, implicit_cache=True, batch_delay_seconds=0
    )
    return server, state


def _batch_answers(prompts: list[tuple[str, str]], latency: float) -> tuple[list[Any], float]:
    """The grid as one batch job through the stand-in; its answers and the job's wall time."""
    from niah.models.providers.gemini import GeminiProvider, answer_from_json
    from niah.models.providers.gemini_request import batch_line, generation_for, request_body
    from niah_devtools.standin_batch import MemoryFiles

    server, state = _standin(latency)
    files = MemoryFiles()
    state.batch.files = files
    generation = generation_for(MODEL, max_output_tokens=MAX_OUTPUT_TOKENS)
    lines = (
        json.dumps(batch_line(request_body(prompt, None, generation)))
        for cell_id, prompt in sorted(prompts)  # cell order, as the worker writes them
    )
    files.write("gs://bench/batch/input.jsonl", "\n".join(lines).encode())
    try:
        began = time.perf_counter()
        batches = GeminiProvider(MODEL).batches()
        job = batches.submit("gs://bench/batch/input.jsonl", "gs://bench/batch/out/", "bench")
        while (job := batches.get(job.name)).state not in (
            "JOB_STATE_SUCCEEDED",
            "JOB_STATE_FAILED",
        ):
            time.sleep(0.5)
        wall = time.perf_counter() - began
    finally:
        server.shutdown()
    (output,) = [uri for uri in files.objects if uri.endswith("predictions.jsonl")]
    records = [json.loads(line) for line in files.objects[output].decode().splitlines()]
    return [answer_from_json(record["response"]) for record in records], wall


def measure_grid_cost(grid: dict[str, Any] = GRID, latency: float = LATENCY) -> dict[str, Any]:
    """Both orders against a fresh stand-in each; the input costs and the saving."""
    started = time.perf_counter()
    from niah.core.prompts.texts import HARNESS_TEMPLATE

    prompts = grid_prompts(grid, HARNESS_TEMPLATE)  # the primer first
    build_seconds = time.perf_counter() - started
    figures: dict[str, Any] = {
        "model": MODEL,
        "grid": grid,
        "stand_in_latency_seconds": latency,
        "build_seconds": round(build_seconds, 1),
    }
    for order in ("naive", "cache_aware", "batch"):
        if order == "batch":
            answers, wall = _batch_answers(prompts, latency)
            figures[order] = _priced(answers, wall, None, batch=True)
            continue
        server, state = _standin(latency)
        try:
            began = time.perf_counter()
            if order == "naive":
                answers = _send([p for _, p in prompts])
            else:
                answers = _send([prompts[0][1]]) + _send([p for _, p in prompts[1:]])
            wall = time.perf_counter() - began
            arrivals = sorted(r["time"] for r in state.requests if r["kind"] == "generate")
            state.requests.clear()  # the bodies: a quarter of a gigabyte
        finally:
            server.shutdown()
        figures[order] = _priced(answers, wall, arrivals)
    naive, aware = figures["naive"], figures["cache_aware"]
    # Naive is naive only if every call arrived before the first answer.
    figures["naive_all_in_flight_together"] = naive["send_spread_seconds"] < latency
    figures["grid_cost_usd"] = {
        "naive": naive["input_usd"],
        "cache_aware": aware["input_usd"],
        "batch": figures["batch"]["input_usd"],
    }
    figures["batch_share_of_naive"] = round(figures["batch"]["input_usd"] / naive["input_usd"], 4)
    figures["cache_aware_saving"] = round(1 - aware["input_usd"] / naive["input_usd"], 4)
    return figures


def _priced(
    answers: list[Any], wall: float, arrivals: list[float] | None, *, batch: bool = False
) -> dict[str, Any]:
    """One order's figures: tokens, cache hits and the input cost (at batch rates)."""
    from niah.core.money.estimate import CallTokens, price_calls

    prompt = sum(a.prompt_tokens or 0 for a in answers)
    cached = sum(a.cached_tokens or 0 for a in answers)
    # Input only, priced as the estimate prices its calls (niah.core.money.estimate).
    cost = price_calls(
        MODEL,
        [CallTokens(a.prompt_tokens or 0, a.cached_tokens or 0) for a in answers],
        batch=batch,
    )
    return {
        "calls": len(answers),
        "wall_seconds": round(wall, 1),
        **(
            {"send_spread_seconds": round(arrivals[-1] - arrivals[0], 1)}
            if arrivals is not None
            else {}
        ),
        "prompt_tokens": prompt,
        "cached_tokens": cached,
        "cached_share": round(cached / prompt, 4),
        "calls_with_cache_hits": sum(1 for a in answers if a.cached_tokens),
        "input_usd": round(cost.usd, 4),
        "input_usd_without_cache": round(cost.usd_without_cache, 4),
    }


if __name__ == "__main__":
    print(json.dumps(measure_grid_cost(), indent=2))
