"""Benchmark (issue 54): the certificate on a real model, against a full grid of it.

The local model (Gemma 3 270M through llama.cpp, in the local stack's worker) is
certified as a user would ask for it: a ``mode: certify`` request posted to the
dispatcher, its rounds going through Pub/Sub, the workers and the report. The same
request with ``mode`` left out and 5 samples a point (the grid a certificate's budget is
a share of: ``niah.core.results.certify_run.GRID_SAMPLES``) is the full grid of the same
model over the same lengths and depths, judged by the same rule. Each run's effective
length is the one its own summary gives (the certificate's, the grid's); its cost is
what its cells record: the model's call seconds (time inside llama.cpp, not queued and
not the pipeline, so other work on the machine skews both runs alike rather than the
ratio by when it came) and prompt tokens.

Why this task and these lengths: on the harness's single needle the model is right at
every depth up to 8,000 tokens (5 depths, 2026-12-05), and at 30,000 tokens at depth 90
(2026-12-06); a grid past that costs hours on two cores. RULER's multi-value needle (four
values of one key, all to be listed) is where its answers get worse within lengths a
benchmark can afford: read off the raw text, 100 % at 500 tokens, 83 % at 1,000, 58 % at
2,000 (3 depths, one sample each). The model lists the values it found and then counts
on to the end of its output budget; such a reply ran past the room its answer takes and
is scored as it stands, as RULER scores it (``niah.core.results.scoring.
ran_past_its_room``; until 2026-12-06 it was truncated, and 54 of the grid's 60 samples
went unscored). 4,000 tokens is the length past the answer that a grid pays most for.
"""

from __future__ import annotations

import json
import time
from typing import Any

import requests
from bench_pipeline import Stack, bench_stack, wait_for

# The request both runs share (the grid adds 5 samples a point; certify adds its mode).
REQUEST: dict[str, Any] = {
    "model_name": "gemma-3-270m-local",
    "task": "multi_value",
    "context_lengths": [250, 500, 1000, 2000, 4000],
    "document_depth_percents": [10, 50, 90],
    "seed": 54,
}
# A second comparison where lengths pass (scripts/bench.sh --only certify_local_single):
# the harness's single needle, which the model finds at every depth up to 8,000 tokens,
# over 500-4,000 tokens at 11 depths. The 3-depth grid above buys its certificate too
# few samples to pass any length; with 11 depths a quarter of the grid can pass two.
SINGLE_REQUEST: dict[str, Any] = {
    "model_name": "gemma-3-270m-local",
    "task": "single",
    "context_lengths": [500, 1000, 2000, 4000],
    "document_depth_percents": [10 * step for step in range(11)],
    "seed": 54,
}
RULE = "ruler"
# The stack as a user's: cache-aware dispatch (bench_stack's naive order is the stack
# part's, whose figure is the publish).
WORKER_ENV = {"NIAH_DISPATCH_ORDER": "cache_aware"}
# Under load a 4,000-token call of the local model has taken 130 s: a run may take long.
RUN_TIMEOUT_SECONDS = 3 * 3600


def measure_certify_local(
    request: dict[str, Any] = REQUEST,
    *,
    rule: str = RULE,
    base_port: int = 8670,
    shared: Stack | None = None,
) -> dict[str, Any]:
    """Certify the local model on the local stack; run its full grid; compare the two."""
    from niah.core.results.certify_run import GRID_SAMPLES

    grid_request = {**request, "samples_per_cell": GRID_SAMPLES, "effective_length_rule": rule}
    certify_request = {**request, "mode": "certify", "effective_length_rule": rule}
    with bench_stack(base_port, WORKER_ENV, shared) as (_, env):
        certify = finished_run(env, certify_request)
        grid = finished_run(env, grid_request)
    return compare(certify, grid, lengths=sorted(request["context_lengths"]), rule=rule) | {
        "request": request,
        "grid_samples_per_point": GRID_SAMPLES,
    }


def finished_run(env: dict[str, str], body: dict[str, Any]) -> dict[str, Any]:
    """Post ``body`` to the stack's dispatcher; when its report is in, what it measured.

    The run's summary (the report's summary.json) and, per cell, its length, score,
    model seconds and prompt tokens.
    """
    from niah.cloud.blobs import GcsBlobStore
    from niah.cloud.store import FirestoreStore
    from niah_devtools import local_identity

    url = env["DISPATCHER_URL"]
    started = time.perf_counter()
    response = requests.post(url, json=body, headers=local_identity.headers(url=url), timeout=120)
    assert response.status_code == 202, response.text
    run_id = response.json()["run_id"]
    store = FirestoreStore()
    wait_for(
        store,
        run_id,
        lambda run: run.get("status") == "complete" and bool(run.get("report")),
        poll=2,
        seconds=RUN_TIMEOUT_SECONDS,
    )
    wall = time.perf_counter() - started
    run = store.get_run(run_id) or {}
    summary_path = run["report"]["summary_uri"].split("/", 3)[3]
    summary = json.loads(GcsBlobStore(env["NIAH_BUCKET"]).read(summary_path))
    cells = [
        {
            "length": int(cell["context_length"]),
            "score": cell.get("task_score"),
            "model_seconds": float(cell.get("model_seconds") or 0),
            "prompt_tokens": int((cell.get("usage") or {}).get("prompt_token_count") or 0),
            "output_tokens": int((cell.get("usage") or {}).get("candidates_token_count") or 0),
        }
        for cell in store.list_cells(run_id)
    ]
    print(f"certify_local: {run_id} ({body.get('mode', 'grid')}) done in {wall:.0f} s wall")
    return {"run_id": run_id, "summary": summary, "cells": cells, "wall_seconds": round(wall, 1)}


def compare(
    certify: dict[str, Any], grid: dict[str, Any], *, lengths: list[int], rule: str
) -> dict[str, Any]:
    """The two effective lengths, how many candidate lengths apart, and the two costs."""
    certificate = certify["summary"]["certificate"]
    effective = grid["summary"]["measures"]["effective_length"]
    certify_cost, grid_cost = cost(certify["cells"]), cost(grid["cells"])
    apart = steps(certificate["length"], effective["length"], lengths)
    means = grid["summary"]["measures"]["by_length"]
    return {
        "rule": rule,
        "lengths": lengths,
        "grid": {
            "run_id": grid["run_id"],
            "length": effective["length"],
            "determined": bool(effective.get("determined")),
            "text": effective["text"],
            "by_length": [
                {"length": n, "mean": means.get(str(n)), "samples": samples(grid["cells"], n)}
                for n in lengths
            ],
            "wall_seconds": grid["wall_seconds"],
            **grid_cost,
        },
        "certify": {
            "run_id": certify["run_id"],
            "length": certificate["length"],
            "below": certificate["below"],
            "determined": bool(certificate["determined"]),
            "reason": certificate["reason"],
            "text": certify["summary"]["measures"]["effective_length"]["text"],
            # Each length's last look: the samples it was given, their mean, its verdict
            # (0 samples: not asked).
            "by_length": last_looks(certificate["looks"], lengths),
            "rounds": len(certificate["looks"]),
            "wall_seconds": certify["wall_seconds"],
            **certify_cost,
        },
        "lengths_apart": apart,
        "within_one_length": apart <= 1,
        "model_seconds_share_of_grid": round(
            certify_cost["model_seconds"] / grid_cost["model_seconds"], 4
        ),
        "tokens_share_of_grid": round(
            certify_cost["prompt_tokens"] / grid_cost["prompt_tokens"], 4
        ),
        # What the calls read and wrote at the catalog's speed: the share the machine's
        # other work (which slows the two runs unevenly) cannot move.
        "speed_seconds_share_of_grid": round(
            certify_cost["speed_seconds"] / grid_cost["speed_seconds"], 4
        ),
    }


def cost(cells: list[dict[str, Any]]) -> dict[str, Any]:
    """A run's model seconds (the sum of its calls'), tokens and samples.

    ``unscored``: samples without a score (truncated, blocked, failed): paid for, never
    counted right or wrong, so a task the model answers by running on measures nothing.
    ``speed_seconds``: its calls' prompt and reply tokens at the catalog's measured speed
    (``CallSpeed``, what the budget is estimated with), the time an idle machine takes.
    """
    from niah.catalog.models import find_model

    model = find_model(REQUEST["model_name"])
    speed = model.speed if model else None
    assert speed is not None, "the local model's catalog entry gives its speed"
    prompt = sum(cell["prompt_tokens"] for cell in cells)
    output = sum(cell.get("output_tokens", 0) for cell in cells)
    return {
        "samples": len(cells),
        "unscored": sum(1 for cell in cells if cell["score"] is None),
        "model_seconds": round(sum(cell["model_seconds"] for cell in cells), 1),
        "prompt_tokens": prompt,
        "output_tokens": output,
        "speed_seconds": round(speed.seconds(prompt, output), 1),
    }


def steps(found: int | None, truth: int | None, lengths: list[int]) -> int:
    """How many candidate lengths apart two effective lengths are (None: below the shortest)."""
    index: dict[int | None, int] = {None: -1, **{n: i for i, n in enumerate(lengths)}}
    return abs(index[found] - index[truth])


def samples(cells: list[dict[str, Any]], length: int) -> int:
    """How many of a run's cells are at ``length``."""
    return sum(1 for cell in cells if cell["length"] == length)


def last_looks(looks: list[dict[str, Any]], lengths: list[int]) -> list[dict[str, Any]]:
    """Each candidate length's last look: what the certificate ended on there."""
    last = {look["length"]: look for look in looks}
    fields = ("samples", "mean", "verdict")
    return [
        {"length": n, **({key: last[n][key] for key in fields} if n in last else NOT_ASKED)}
        for n in lengths
    ]


NOT_ASKED: dict[str, Any] = {"samples": 0, "mean": None, "verdict": "not asked"}
