"""Benchmark of the counting path: how many writes the hottest document takes.

Firestore sustains about one write per second per document
(cloud.google.com/firestore/docs/solutions/counters, read 2026-11-26). The baseline
stores each cell as the service did before: one batch creating the cell and
incrementing the run document. The service now increments one of
``NIAH_COUNTER_SHARDS`` shard documents picked by the cell's ID. Both store the same
cells into a Firestore emulator from 16 threads; the figures are the writes the
hottest document took and its rate at 1,000 samples a minute, and the read costs.
The emulator does not throttle hot documents, so the rates are computed from the
writes counted, not from errors seen.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

SAMPLES = 1000
PER_SECOND_AT_1000_A_MINUTE = 1000 / 60
THREADS = 16


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _start_firestore() -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    gcloud = shutil.which("gcloud") or "gcloud"
    process = subprocess.Popen(
        [gcloud, "emulators", "firestore", "start", f"--host-port=127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        cwd=tempfile.gettempdir(),
    )
    host = f"127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return process, host
        except OSError:
            time.sleep(0.5)
    process.kill()
    raise RuntimeError("the Firestore emulator did not start")


def measure_counting(samples: int = SAMPLES) -> dict[str, Any]:
    """Store ``samples`` cells both ways; the hottest document's writes and the read costs."""
    import signal

    process, host = _start_firestore()
    os.environ["FIRESTORE_EMULATOR_HOST"] = host
    os.environ.setdefault("NIAH_PROJECT", "niah-bench")
    try:
        from google.cloud import firestore

        from niah.cloud.store import FirestoreStore
        from niah.core.results.counters import shard_of
        from niah.settings import get_settings

        get_settings.cache_clear()
        shards = get_settings().counter_shards
        store = FirestoreStore()
        db = store._db
        doc = {"status": "answered", "score": 10, "model_response": "x" * 200}
        cell_ids = [f"L{i // 100:08d}-D{i % 100:06d}" for i in range(samples)]

        def baseline(run_id: str, cell_id: str) -> None:
            run = db.collection("runs").document(run_id)
            batch = db.batch()
            batch.create(run.collection("cells").document(cell_id), doc)
            batch.update(run, {"done": firestore.Increment(1)})
            batch.commit()

        def sharded(run_id: str, cell_id: str) -> None:
            store.record_cell(
                run_id, cell_id, doc, failed=False, shards=shards, totals={"cost_usd": 0.001}
            )

        figures: dict[str, Any] = {"samples": samples, "threads": THREADS, "shards": shards}
        for name, store_one in (("one_counter", baseline), ("sharded", sharded)):
            run_id = f"bench-{name}"
            store.create_run(run_id, {"total": samples, "status": "running"})
            started = time.perf_counter()
            with ThreadPoolExecutor(THREADS) as pool:
                list(pool.map(store_one, [run_id] * samples, cell_ids))
            wall = time.perf_counter() - started
            hottest = (
                samples
                if name == "one_counter"
                else max(Counter(shard_of(c, shards) for c in cell_ids).values())
            )
            run = store.get_run(run_id) or {}
            assert run["done"] == samples, run  # every cell counted once, either way
            figures[name] = {
                "wall_seconds": round(wall, 2),
                "cells_per_second": round(samples / wall, 1),
                "hottest_document_writes": hottest,
                "hottest_writes_per_second_at_1000_a_minute": round(
                    hottest / samples * PER_SECOND_AT_1000_A_MINUTE, 2
                ),
            }
        for label, read in (
            ("get_run_with_counts_ms", lambda: store.get_run("bench-sharded")),
            ("get_run_document_only_ms", lambda: store.get_run("bench-sharded", counts=False)),
            ("count_cells_ms", lambda: store.count_cells("bench-sharded")),
        ):
            started = time.perf_counter()
            for _ in range(20):
                read()
            figures[label] = round((time.perf_counter() - started) / 20 * 1000, 2)
        figures["hot_document_ratio"] = round(
            figures["one_counter"]["hottest_document_writes"]
            / figures["sharded"]["hottest_document_writes"],
            1,
        )
        return figures
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)


if __name__ == "__main__":
    import json

    print(json.dumps(measure_counting(), indent=2))
