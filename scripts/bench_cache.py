"""Benchmark: a grid's input cost with naive and with cache-aware dispatch.

An 11 x 11 grid from 1,000 to 1,000,000 tokens on gemini-2.5-pro runs twice on the
local stack against the Vertex stand-in with its implicit-cache model on (a prefix
of at least 2,048 tokens shared with a prompt answered in the last 300 s is billed as
cached: see ``niah_devtools.standin._cached_prefix_tokens`` for the sources and what
is assumed). "naive" publishes every cell at once, as a deployment with enough worker
instances answers them, all in flight together; "cache_aware" publishes the primer
(the deepest needle at the longest length) first and the rest when it is answered.
The stand-in answers each call after LATENCY seconds, longer than the stack takes to
deliver the grid: every naive cell is in flight before any is answered, as on a
deployment that fans out in seconds calls that take longer.
The input cost of each is computed from the usage the stand-in reported, at the
catalog's gemini-2.5-pro prices (long-context tier above 200K tokens included).
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

import requests

MODEL = "gemini-2.5-pro"
GRID = {
    "model_name": MODEL,
    "context_lengths_min": 1000,
    "context_lengths_max": 1_000_000,
    "context_lengths_num_intervals": 11,
    "document_depth_percent_intervals": 11,
    "max_output_tokens": 20,
}
# Longer than the local stack takes to deliver the whole grid (about 1 cell a second
# on 2 cores, building megabyte prompts), so that, as on a deployment whose workers take
# the grid at once and whose 1M-token calls take longer than the fan-out, every naive
# cell arrives before any has been answered and filled a cache.
LATENCY = 240.0
STACK_ENV = {
    "THREADS": "128",  # the whole grid in flight
    "NIAH_GEMINI_TIMEOUT_SECONDS": "400",  # above the stand-in's latency
    "NIAH_GEMINI_RETRY_ATTEMPTS": "1",  # one attempt stays inside the function timeout
    "NIAH_SWEEP_STALLED_AFTER_SECONDS": "3600",  # no sweep while the primer runs
}


def _restart_dispatcher(state: Path, order: str) -> None:
    """The dispatcher again, with NIAH_DISPATCH_ORDER set to ``order``."""
    from niah_devtools import localstack

    specs = json.loads((state / "functions.json").read_text())
    specs["dispatcher"]["env"]["NIAH_DISPATCH_ORDER"] = order
    (state / "functions.json").write_text(json.dumps(specs, indent=1))
    localstack.kill_process(state, "dispatcher")
    localstack.start_function(state, "dispatcher")


def _run_grid(url: str, standin: str, order: str, seed: int) -> dict[str, Any]:
    from niah.cloud.store import FirestoreStore
    from niah.core.pricing import cost_of

    requests.post(
        f"{standin}/_standin/config",
        json={"latency_seconds": LATENCY, "estimate_tokens": True, "implicit_cache": True},
        timeout=5,
    ).raise_for_status()
    started = time.perf_counter()
    response = requests.post(url, json=GRID | {"seed": seed}, timeout=300)
    assert response.status_code == 202, response.text
    run_id = response.json()["run_id"]
    store = FirestoreStore()
    deadline = time.monotonic() + 2400
    while time.monotonic() < deadline:
        if (store.get_run(run_id) or {}).get("status") == "complete":
            break
        time.sleep(2)
    wall = time.perf_counter() - started
    cells = store.list_cells(run_id)
    assert len(cells) == 121 and all(c.get("status") == "answered" for c in cells), order
    prompt = cached = 0
    usd = usd_uncached = 0.0
    for cell in cells:
        usage = cell["usage"]
        tokens, hit = (
            int(usage["prompt_token_count"]),
            int(usage["cached_content_token_count"] or 0),
        )
        prompt, cached = prompt + tokens, cached + hit
        usd += cost_of(MODEL, tokens, 0, cached_tokens=hit).usd
        usd_uncached += cost_of(MODEL, tokens, 0).usd
    return {
        "run_id": run_id,
        "wall_seconds": round(wall, 1),
        "prompt_tokens": prompt,
        "cached_tokens": cached,
        "cached_share": round(cached / prompt, 4),
        "first_answer_after_last_arrival": _all_arrived_first(standin),
        "cells_with_cache_hits": sum(1 for c in cells if c["usage"]["cached_content_token_count"]),
        "input_usd": round(usd, 4),
        "input_usd_without_cache": round(usd_uncached, 4),
    }


def _all_arrived_first(standin: str) -> bool:
    """Whether every call of the run arrived before the first was answered."""
    calls = requests.get(f"{standin}/_standin/requests", timeout=30).json()["requests"]
    arrivals = sorted(c["time"] for c in calls if c["kind"] == "generate")
    return bool(arrivals) and arrivals[-1] - arrivals[0] < LATENCY


def measure_grid_cost() -> dict[str, Any]:
    """Both orders on one stack; the costs and the saving."""
    from niah_devtools import localstack

    state = Path(tempfile.mkdtemp(prefix="niah-bench-cache-"))
    env = localstack.up(state, base_port=8770, worker_env=STACK_ENV)
    url, standin = env["DISPATCHER_URL"], env["VERTEX_STANDIN_URL"]
    figures: dict[str, Any] = {"model": MODEL, "grid": "11 x 11, 1,000 to 1,000,000 tokens"}
    try:
        for seed, order in enumerate(("naive", "cache_aware"), start=7100):
            _restart_dispatcher(state, order)
            figures[order] = _run_grid(url, standin, order, seed)
    finally:
        localstack.down(state)
    naive, aware = figures["naive"]["input_usd"], figures["cache_aware"]["input_usd"]
    figures["grid_cost_usd"] = {"naive": naive, "cache_aware": aware}
    figures["cache_aware_saving"] = round(1 - aware / naive, 4)
    return figures


if __name__ == "__main__":
    print(json.dumps(measure_grid_cost(), indent=2))
