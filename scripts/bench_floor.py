"""The scale benchmark's baseline, measured in the same run: a cell's Google calls alone.

A cell's overhead (its push's wall time less its model call's) is mostly the calls it
must make: the run's liveness read, the claim, the model's countTokens, the spend note,
the store. Their cost moves with the machine: on 2026-12-06 the same code's 3,000-sample
run took a median 20.2 ms at 05:41 and 29.7 and 33.7 ms twenty minutes later, the
machine otherwise idle. So the bench also makes exactly those calls, through the
service's own adapters but with none of its work between them (no message, no prompt
built, no scoring, no log line), one cell at a time and each call after the last, on
the same stack right after the run: what those calls take that hour, unloaded. The
run's overhead over it says what the service adds (its own work, and cells waiting on
each other) less what it overlaps (the worker's first three go at once), whatever the
machine's speed.

One at a time: from eight threads at once (as many as the worker serves) the calls
queue on the emulators and on the bench's own interpreter, and took 84.6 ms a cell
where the service's run took 28.6 (2026-12-06); the service's cells do not all arrive
at once.
"""

from __future__ import annotations

import os
import statistics
import threading
import time
from typing import Any

# One cell at a time: the calls' own latency, no queueing (see the module's docstring).
FLOOR_THREADS = 1
FLOOR_PROMPT = "The grass is green. The sky is blue. The sun is yellow. " * 120


def cell_calls_floor(
    model: str, samples: int, standin_url: str, threads: int = FLOOR_THREADS
) -> dict[str, Any]:
    """Each sample's wall time for a cell's calls in a row, less its model call; ms.

    The calls, as a first delivery of a known run makes them (``process_cell``): the
    run's stamp and status (one projected read), the claim (one create), countTokens,
    the spend note (one batch), the model call (its time taken off), the store (one
    batch of the cell, its shard, its call and its lease). The cell document has a
    stored cell's fields (``_cell_doc``), not its exact size: a real cell's answer and
    extra fields make it somewhat larger.
    """
    from niah.cloud.store import FirestoreStore
    from niah.models.providers.gemini import GeminiProvider
    from niah.settings import get_settings

    # The provider reaches the stand-in as the stack's worker does (worker_model_env);
    # the bench's own settings are put back once it is made.
    reaching = {"NIAH_VERTEX_BASE_URL": standin_url, "NIAH_VERTEX_ACCESS_TOKEN": "floor"}
    kept = {name: os.environ.get(name) for name in reaching}
    os.environ |= reaching
    get_settings.cache_clear()
    try:
        provider = GeminiProvider(model)
    finally:
        for name, value in kept.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        get_settings.cache_clear()
    store = FirestoreStore()
    run_id = f"run-floor{time.time_ns() % 10**11:011d}"
    # Complete, so the stack's sweep never takes this document for a run to tend.
    store.create_run(run_id, {"stamp": "floor", "status": "complete", "spec": {}})
    overheads: list[float] = []
    lock = threading.Lock()
    numbers = iter(range(samples))

    def one(number: int) -> float:
        cell_id = f"L001000_D{number % 100:03d}_S{number // 100:03d}"
        started = time.perf_counter()
        store.get_run(run_id, counts=False, fields=["stamp", "status"])
        claim = store.claim_cell(run_id, cell_id, 30.0)
        provider.count_tokens(FLOOR_PROMPT)
        call_id = f"{cell_id}.C{claim:03d}"
        note = {"cell_id": cell_id, "model": model, "status": "started"}
        store.open_call(run_id, call_id, note, cell_id=cell_id, claim=claim, lease_seconds=30.0)
        answer = provider.generate(FLOOR_PROMPT, max_output_tokens=64)
        doc = _cell_doc(run_id, cell_id, answer.text)
        closed = (call_id, {"status": "answered"})
        store.record_cell(run_id, cell_id, doc, failed=False, shards=4, call=closed)
        return time.perf_counter() - started - answer.latency_seconds

    def work() -> None:
        while True:
            with lock:
                number = next(numbers, None)
            if number is None:
                return
            overhead = one(number)
            with lock:
                overheads.append(overhead)

    pool = [threading.Thread(target=work) for _ in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    ordered = sorted(overheads)
    return {
        "samples": len(overheads),
        "threads": threads,
        "median_ms": round(1000 * statistics.median(ordered), 1),
        "p99_ms": round(1000 * ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))], 1),
    }


def _cell_doc(run_id: str, cell_id: str, answer: str) -> dict[str, Any]:
    """A stored cell's fields as the worker names them (scores, tokens, texts)."""
    return {
        "run_id": run_id,
        "model": "gemini-3.8-flash",
        "task": "niah",
        "context_length": 1000,
        "depth_percent": 50.0,
        "sample": 0,
        "version": 1,
        "needle": "The special magic number is: 4821.",
        "question": "What is the special magic number?",
        "expected_answer": "4821",
        "expected_answers": ["4821"],
        "attempts": 1,
        "planned_prompt_tokens": 995,
        "insertion_depth_percent": 50.1,
        "build_seconds": 0.002,
        "fitted_prompt_tokens": 995,
        "max_output_tokens": 64,
        "model_response": answer,
        "score": 10,
        "task_score": 1.0,
        "outcome": "correct",
        "prompt_tokens": 1000,
        "output_tokens": 8,
        "cost_usd": 0.0003,
        "cell_id": cell_id,
    }
