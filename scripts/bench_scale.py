"""Benchmark: the service's own speed and cost from 100 to 10,000 samples (issue 26).

Runs of 100, 1,000 and 10,000 samples (a 10 x 10 grid at 1,000-1,900 tokens, with 1,
10 and 100 samples per point) through the local stack, the Vertex stand-in answering
at zero latency, so what is measured is the service: dispatch, the worker's path, the
report. Figures come from the functions' own log lines (each request logs its wall and
CPU seconds and the Google operations it made, counted at the adapters) and from the
bucket. Priced at Google's list prices (``niah.core.money.service_cost``), as the service's
own cost per 1,000 samples beside the model's cost for a typical cell.
"""

from __future__ import annotations

import itertools
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import requests
from bench_floor import cell_calls_floor
from bench_pipeline import Stack, bench_stack

SIZES = (100, 1_000, 10_000)
LENGTHS = [1_000 + 100 * step for step in range(10)]
# The most samples of a run's same-hour baseline (``_with_floor``).
FLOOR_SAMPLES = 500
# A run not complete in this long has stalled: the benchmark says so rather than wait on.
WAIT_SECONDS = 3600
# How long the report function may take to log its line once the run is complete.
REPORT_LOG_SECONDS = 30.0
TYPICAL_CELL: dict[str, Any] = {
    "model": "gemini-3.5-flash",
    "prompt_tokens": 128_000,
    "output_tokens": 50,
}


def _lines(state: Path, function: str, run_id: str) -> list[dict[str, Any]]:
    lines = []
    for text in (state / "logs" / f"{function}.log").read_text().splitlines():
        if text.startswith("{") and f'"{run_id}"' in text:
            try:
                lines.append(json.loads(text))
            except json.JSONDecodeError:
                continue
    return [line for line in lines if line.get("run_id") == run_id]


def report_logged(state: Path, run_id: str, seconds: float = REPORT_LOG_SECONDS) -> bool:
    """Wait until the report function has logged its run's line (at most ``seconds``).

    The run is complete when the report is stored, before the function logs what it
    read and wrote: read at once, the 100-sample run of 2026-12-06 missed the report's
    line (1.14 reads a sample, not 3.29, and no render time).
    """
    deadline = time.monotonic() + seconds
    while not any("operations" in line for line in _lines(state, "report", run_id)):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def _open_seconds(html: bytes) -> float:
    """How long headless Chromium takes to load the page to its ``load`` event."""
    import shutil

    from playwright.sync_api import sync_playwright

    with tempfile.NamedTemporaryFile(suffix=".html", delete=False) as page_file:
        page_file.write(html)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=shutil.which("chromium"), args=["--no-sandbox"]
        )
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        started = time.perf_counter()
        page.goto(f"file://{page_file.name}", wait_until="load")
        seconds = time.perf_counter() - started
        browser.close()
    Path(page_file.name).unlink()
    return seconds


def sample_waits(worker: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """The answered samples' overhead and its parts, median and p99 in ms.

    A sample's overhead is its push's wall time less its model call's; its parts are the
    seconds in each system's calls (``niah.cloud.metering.waits_on``), ``other`` what is
    left of the overhead (the worker's own work, and waiting on its other threads) and
    ``background`` what the threads it started spent in calls, off its path.
    """
    from niah.cloud.metering import BACKGROUND, SYSTEMS

    model = {
        line["cell_id"]: line["latency_seconds"]
        for line in worker
        if line.get("message") == "model call"
    }
    parts: dict[str, list[float]] = {key: [] for key in ("overhead", *SYSTEMS, "other", BACKGROUND)}
    for line in worker:
        if line.get("message") != "cell handled" or line.get("outcome") != "answered":
            continue
        overhead = line["wall_seconds"] - model.get(line["cell_id"], 0.0)
        waits = line.get("waits", {})
        parts["overhead"].append(overhead)
        for system in SYSTEMS:
            parts[system].append(waits.get(system, 0.0))
        parts["other"].append(overhead - sum(waits.get(system, 0.0) for system in SYSTEMS))
        parts[BACKGROUND].append(waits.get(BACKGROUND, 0.0))
    return {
        key: {
            "median": round(1000 * statistics.median(values), 1) if values else 0.0,
            "p99": round(1000 * _percentile(values, 0.99), 1) if values else 0.0,
        }
        for key, values in parts.items()
    }


def _one_run(samples: int, url: str, state: Path, bucket: str) -> dict[str, Any]:
    """One run of ``samples`` samples: its figures."""
    from niah.cloud.blobs import GcsBlobStore
    from niah.cloud.store import FirestoreStore
    from niah.core.money.service_cost import function_usd, operations_usd
    from niah_devtools import local_identity, localstack

    body = {
        "model_name": "gemini-3.8-flash",
        "context_lengths": LENGTHS,
        "document_depth_percent_intervals": 10,
        "samples_per_cell": samples // 100,
        "seed": 26_000 + samples,
    }
    started = time.perf_counter()
    response = requests.post(url, json=body, headers=local_identity.headers(url=url), timeout=600)
    dispatch_seconds = time.perf_counter() - started
    assert response.status_code == 202, response.text
    run_id = response.json()["run_id"]
    store = FirestoreStore()
    deadline = time.monotonic() + WAIT_SECONDS
    while (store.get_run(run_id, counts=False) or {}).get("status") != "complete":
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"run {run_id} of {samples} samples not complete in {WAIT_SECONDS} s"
            )
        time.sleep(0.5)
    wall = time.perf_counter() - started
    report_logged(state, run_id)
    worker = _lines(state, "worker", run_id)
    handled = [line for line in worker if "operations" in line]
    answered = {
        line["cell_id"]: line
        for line in worker
        if line.get("message") == "cell handled" and line.get("outcome") == "answered"
    }
    waits = sample_waits(worker)
    metered = (
        handled
        + [line for line in _lines(state, "dispatcher", run_id) if "operations" in line]
        + [line for line in _lines(state, "report", run_id) if "operations" in line]
    )
    operations: dict[str, float] = {}
    for line in metered:
        for kind, number in line["operations"].items():
            operations[kind] = operations.get(kind, 0) + number
    reports = [line for line in _lines(state, "report", run_id) if "operations" in line]
    blobs = GcsBlobStore(bucket)
    page_name = f"reports/{run_id}/report.html"
    page = blobs.read(page_name)
    deliveries = len(handled) + len(reports)
    service_usd = operations_usd(operations, push_deliveries=deliveries) + function_usd(
        sum(line["wall_seconds"] for line in handled), len(handled)
    )
    return {
        "samples": samples,
        "stored": len(answered),
        "dispatch_seconds": round(dispatch_seconds, 3),
        "wall_seconds": round(wall, 1),
        "samples_per_second": round(samples / wall, 1),
        "deliveries_per_sample": round(len(handled) / samples, 3),
        "overhead_ms_median": waits["overhead"]["median"],
        "overhead_ms_p99": waits["overhead"]["p99"],
        # Where the overhead went: each system's calls on the cell's path, the rest
        # (the worker's own CPU, and waiting on its other threads), and what the threads
        # a cell started waited off its path; median and p99 each, in ms.
        "waits_ms": {key: value for key, value in waits.items() if key != "overhead"},
        "worker_cpu_seconds_per_sample": round(
            sum(line["cpu_seconds"] for line in handled) / samples, 5
        ),
        "operations_per_sample": {k: round(v / samples, 3) for k, v in sorted(operations.items())},
        "report_render_seconds": max((line["wall_seconds"] for line in reports), default=None),
        "report_html_bytes": len(page),
        # The report function's highest memory so far (runs go smallest first, so this
        # is the largest report's): against its 1 GiB in infra/functions.tf.
        "report_peak_rss_mib": round(localstack.group_rss_mib(state, "report", peak=True), 1),
        "report_open_seconds": round(_open_seconds(page), 2),
        "service_usd_per_1000_samples": round(service_usd / samples * 1000, 5),
    }


def _with_floor(run: dict[str, Any], standin_url: str) -> dict[str, Any]:
    """The run's figures with its same-hour baseline: the cell's Google calls alone.

    Measured right after the run on its stack (``bench_floor``), up to ``FLOOR_SAMPLES``
    cells one at a time; ``overhead_over_floor`` is the run's median overhead over the
    baseline's median, which the machine's speed that hour moves far less than either.
    """
    floor = cell_calls_floor(
        "gemini-3.8-flash", min(run["samples"], FLOOR_SAMPLES), standin_url=standin_url
    )
    return run | {
        "calls_floor": floor,
        "overhead_over_floor": round(run["overhead_ms_median"] / floor["median_ms"], 2),
    }


def _growth(runs: list[dict[str, Any]], key: str) -> list[float | None]:
    """How ``key`` grows per 10x samples: each run's figure over the previous one's."""
    ratios: list[float | None] = []
    for before, after in itertools.pairwise(runs):
        a, b = before.get(key), after.get(key)
        ratios.append(round(b / a, 2) if a and b is not None else None)
    return ratios


def scale_worker_env(largest: int) -> dict[str, str]:
    """The worker's settings the scale part needs beyond ``WORKER_ENV``.

    (Its 1,000-sample run's worst case, about $315 at Gemini's prices, passes the default
    daily ceiling of $300: ``WORKER_ENV``'s ``BENCH_CEILINGS`` admit it.)
    """
    return {"NIAH_MAX_CELLS_PER_RUN": str(largest)}


def measure_scale(
    sizes: tuple[int, ...] = SIZES, *, base_port: int = 8690, shared: Stack | None = None
) -> dict[str, Any]:
    """Every size on one local stack; the figures, their growth and the costs.

    ``shared``: a running stack started with ``scale_worker_env(max(sizes))``.
    """
    from niah.core.money.pricing import cost_of
    from niah.settings import get_settings

    with bench_stack(base_port, scale_worker_env(max(sizes)), shared) as (state, env):
        # The stack's project and emulators, not what an earlier part left in the settings
        # (the grid-cost part sets another project): else the run is looked for elsewhere.
        get_settings.cache_clear()
        requests.post(
            f"{env['VERTEX_STANDIN_URL']}/_standin/config",
            json={"latency_seconds": 0.0, "estimate_tokens": True},
            timeout=5,
        ).raise_for_status()
        runs = [
            _with_floor(
                _one_run(n, env["DISPATCHER_URL"], state, env["NIAH_BUCKET"]),
                env["VERTEX_STANDIN_URL"],
            )
            for n in sizes
        ]
    typical = cost_of(
        TYPICAL_CELL["model"], TYPICAL_CELL["prompt_tokens"], TYPICAL_CELL["output_tokens"]
    )
    per_kind = {
        kind: _growth([{"v": run["operations_per_sample"].get(kind)} for run in runs], "v")
        for kind in runs[0]["operations_per_sample"]
    }
    return {
        "runs": runs,
        "growth_per_10x": {
            key: _growth(runs, key)
            for key in (
                "wall_seconds",
                "dispatch_seconds",
                "overhead_ms_median",
                "overhead_ms_p99",
                "worker_cpu_seconds_per_sample",
                "report_render_seconds",
                "report_html_bytes",
                "report_peak_rss_mib",
                "service_usd_per_1000_samples",
            )
        }
        | {"operations_per_sample": per_kind},
        "model_usd_per_1000_typical_cells": round(typical.usd * 1000, 2)
        if typical.priced
        else None,
        "typical_cell": TYPICAL_CELL,
        "note": (
            "local stack on this machine (emulators, 8 worker threads), stand-in at zero "
            "latency; costs at Google's list prices beyond free tiers "
            "(niah.core.money.service_cost)"
        ),
    }
