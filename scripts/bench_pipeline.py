"""Benchmark: the pipeline's fan-out and its overhead per cell, on the local stack.

An 11 x 11 grid up to 1M tokens dispatched at once (the dispatcher's publish), then a
grid answered by the Vertex stand-in at a fixed latency: the wall beyond what the
latency alone would take, per cell, is the pipeline's overhead. ``bench_stack`` also
gives the scale part (``bench_scale``) its stack, or the smoke run's shared one.
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import requests

# A running local stack: its state folder and client environment (localstack.up's).
Stack = tuple[Path, dict[str, str]]
# The spend ceilings of every benchmark stack. Its model is the Vertex stand-in: nothing
# is billed, yet admission prices each grid at Gemini's list prices. The stack part's
# 121-cell grid to 1M tokens may cost $544 at worst, over the default $300 a day
# (docs/limits.md), so the benchmark refused its own grid. The ceilings stay on (the
# dispatch figure includes the admission transaction) at a height no benchmark grid
# reaches; a deployment's own ceilings are unchanged (tests/unit/test_bench_admission.py
# holds every grid the stack parts send under these).
BENCH_CEILINGS = {
    "NIAH_DAILY_SPEND_CEILING_USD": "100000",
    "NIAH_MONTHLY_SPEND_CEILING_USD": "100000",
}
# What the stack parts need of the functions: 8 worker threads; the whole grid published
# by the dispatcher (cache-aware dispatch publishes one primer), as its figure is the
# publish; ceilings that admit the benchmark's grids.
WORKER_ENV = {"THREADS": "8", "NIAH_DISPATCH_ORDER": "naive", **BENCH_CEILINGS}
# The stack part's requests, in the order it sends them: a warm-up; an 11 x 11 grid up to
# 1M tokens, dispatched at once; a grid answered at the stand-in's fixed latency.
WARM_UP = {
    "context_lengths": [1000],
    "document_depth_percents": [0],
    "model_name": "gemini-3.5-flash",
}
# The stack part's documented size: what ``scripts/bench.sh`` runs (the smoke run's is 2).
BIG_SIDE, BIG_MAX, OVERHEAD_SIDE = 11, 1_000_000, 5


def big_grid(side: int = BIG_SIDE, longest: int = BIG_MAX) -> dict[str, Any]:
    """The fan-out grid: ``side`` lengths up to ``longest`` by ``side`` depths."""
    # No current Gemini takes 2M tokens (1.5 Pro, which did, is retired): 3.5 Flash
    # takes 1,048,576.
    return {
        "model_name": "gemini-3.5-flash",
        "context_lengths_min": 1000,
        "context_lengths_max": longest,
        "context_lengths_num_intervals": side,
        "document_depth_percent_intervals": side,
    }


def overhead_grid(side: int = OVERHEAD_SIDE) -> dict[str, Any]:
    """The overhead grid: ``side`` x ``side`` cells of 1,000-8,000 tokens."""
    return {
        "model_name": "gemini-3.8-flash",
        "context_lengths_min": 1000,
        "context_lengths_max": 8000,
        "context_lengths_num_intervals": side,
        "document_depth_percent_intervals": side,
        "seed": 99,
    }


@contextmanager
def bench_stack(
    base_port: int, worker_env: Mapping[str, str], shared: Stack | None = None
) -> Iterator[Stack]:
    """A local stack for one part: ``shared`` if given (its owner stops it), else a new one.

    The smoke run (``bench.py --smoke``) gives its two stack parts one stack: a stack's
    start and stop cost about as much as either part at its smoke size.
    """
    if shared is not None:
        # Its clients' addresses again: a part between (counting, grid cost) points this
        # process's clients at an emulator of its own, stopped since.
        os.environ.update(shared[1])
        yield shared
        return
    from niah_devtools import localstack

    state = Path(tempfile.mkdtemp(prefix="niah-bench-stack-"))
    env = localstack.up(state, base_port=base_port, worker_env={**WORKER_ENV, **worker_env})
    finished = False
    try:
        yield state, env
        finished = True
    finally:
        localstack.down(state)
        # Its emulators' data and logs (about 1 MB) go when the part ends well; a failed
        # part keeps them, as they say why.
        if finished:
            shutil.rmtree(state, ignore_errors=True)
        else:
            print(f"bench: the stack's logs are kept in {state / 'logs'}", file=sys.stderr)


def wait_for(
    store: Any,
    run_id: str,
    finished: Callable[[dict[str, Any]], bool],
    *,
    poll: float = 0.05,
    seconds: float = 900,
) -> None:
    """Until the run's record is ``finished``; a run stuck past ``seconds`` fails the part.

    (Before, one wait ran for ever and the other went on after 900 s with that as its
    figure.)
    """
    deadline = time.monotonic() + seconds
    while not finished(store.get_run(run_id) or {}):
        if time.monotonic() > deadline:
            raise TimeoutError(f"run {run_id} did not finish within {seconds:g} s")
        time.sleep(poll)


def measure_stack(
    latency: float,
    cells_side: int = OVERHEAD_SIDE,
    big_side: int = BIG_SIDE,
    big_max: int = BIG_MAX,
    shared: Stack | None = None,
    base_port: int = 8670,
) -> dict[str, Any]:
    """Dispatch an 11 x 11 grid up to 1M tokens; then a grid on a fixed-latency model."""
    from niah.cloud.store import FirestoreStore
    from niah_devtools import local_identity

    figures: dict[str, Any] = {}
    with bench_stack(base_port, {}, shared) as (_, env):
        url, standin = env["DISPATCHER_URL"], env["VERTEX_STANDIN_URL"]
        # The stand-in estimates counts so that it, not the pipeline, is never the
        # bottleneck.
        requests.post(
            f"{standin}/_standin/config",
            json={"latency_seconds": latency, "estimate_tokens": True},
            timeout=5,
        )
        big = big_grid(big_side, big_max)
        warm = requests.post(url, json=WARM_UP, headers=local_identity.headers(url=url), timeout=60)
        assert warm.status_code == 202, warm.text
        started = time.perf_counter()
        response = requests.post(
            url, json=big, headers=local_identity.headers(url=url), timeout=120
        )
        figures["dispatch_121_seconds"] = round(time.perf_counter() - started, 3)
        figures["grid_121_cells"] = big_side**2  # 121 but in the smoke run
        assert response.status_code == 202, response.text
        assert response.json()["published"] == big_side**2, response.text
        store = FirestoreStore()
        big_id = response.json()["run_id"]
        wait_for(store, big_id, lambda run: run.get("status") == "complete", poll=1)
        figures["grid_121_to_1m_wall_seconds"] = round(time.perf_counter() - started, 1)
        cells = store.list_cells(big_id)
        figures["grid_121_cells_answered"] = sum(c.get("status") == "answered" for c in cells)
        figures["grid_121_max_build_seconds"] = max(c.get("build_seconds", 0) for c in cells)

        grid = overhead_grid(cells_side)
        requests.post(
            f"{standin}/_standin/config",
            json={"latency_seconds": latency, "estimate_tokens": True},
            timeout=5,
        )
        configured = 8  # worker threads
        started = time.perf_counter()
        wall_started = time.time()
        response = requests.post(
            url, json=grid, headers=local_identity.headers(url=url), timeout=120
        )
        assert response.status_code == 202, response.text
        run_id = response.json()["run_id"]
        total = response.json()["cells"]
        wait_for(
            store, run_id, lambda run: int(run.get("done", 0)) + int(run.get("failed", 0)) >= total
        )
        wall = time.perf_counter() - started
        calls = requests.get(f"{standin}/_standin/requests", timeout=5).json()["requests"]
        starts = sorted(c["time"] - wall_started for c in calls if c["kind"] == "generate")
        # The most model calls in flight at once: what the pipeline really achieved.
        parallelism = max(sum(1 for t in starts if s <= t < s + latency) for s in starts)
        ideal = total * latency / parallelism
        cells = store.list_cells(run_id)
        inside = [1000 * (c["test_duration_seconds"] - c["model_seconds"]) for c in cells]
        figures |= {
            "overhead_grid_cells": total,
            "overhead_model_latency_seconds": latency,
            "overhead_worker_threads": configured,
            "overhead_observed_parallelism": parallelism,
            "grid_wall_seconds": round(wall, 2),
            "grid_ideal_seconds": round(ideal, 2),
            "grid_ideal_at_configured_seconds": round(total * latency / configured, 2),
            "overhead_per_cell_ms": round(1000 * (wall - ideal) * parallelism / total, 1),
            "worker_overhead_per_cell_ms": round(statistics.mean(inside), 1),
        }
    return figures


# Parts that can run alone (--only), each writing one key of results/bench.json.
