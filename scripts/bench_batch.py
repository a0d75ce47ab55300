"""Benchmark: ingesting a 20,000-line batch job in pieces (issue 34).

A batch run of N cells (default 20,000: a 20-length x 50-depth grid, 20 samples a point,
at 200-390 tokens) is submitted to the Vertex stand-in at zero latency, which answers
every line and writes the output as Vertex does. Its output is then ingested as the
worker does, piece by piece (``niah.service.batch.ingest``), each piece delivered in turn
as Pub/Sub would, on in-memory fakes of the store and the bucket, so what is measured is
the ingest's own work: each piece's wall seconds, against the worker's 540 s timeout,
and the memory the first piece allocates at its peak (``tracemalloc``, which slows what
it traces about tenfold, so it traces that piece alone), against the worker's 2 GiB
(``infra/functions.tf``). Pieces of 4 MiB here (``NIAH_BATCH_INGEST_PIECE_BYTES``; the
default is 32 MiB), so a piece's peak is measured on a piece a few times smaller.

The baseline, measured in the same run on the same output: what the ingest did before
pieces, one request reading the whole output into memory (``blobs.read`` of each file,
then its lines).
"""

from __future__ import annotations

import os
import resource
import statistics
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
WORKER_TIMEOUT_SECONDS = 540  # infra/functions.tf, the worker
WORKER_MEMORY_BYTES = 2 * 1024**3  # 2Gi, the same
PIECE_BYTES = 4 * 1024**2


def grid_for(cells: int) -> dict[str, Any]:
    """A batch grid of ``cells`` cells (a multiple of 1,000): 20 lengths x 50 depths x S."""
    samples = max(1, cells // 1000)
    return {
        "model_name": "gemini-3.8-flash",
        "execution": "batch",
        "context_lengths": [200 + 10 * step for step in range(20)],
        "document_depth_percents": [2 * step for step in range(50)],
        "samples_per_cell": samples,
    }


def measure_batch_ingest(cells: int = 20_000) -> dict[str, Any]:
    """Submit, answer and ingest a ``cells``-line job; the figures."""
    os.environ["NIAH_MAX_CELLS_PER_RUN"] = str(cells)
    os.environ["NIAH_BATCH_MAX_LINES"] = str(cells)
    os.environ["NIAH_BATCH_INGEST_PIECE_BYTES"] = str(PIECE_BYTES)
    os.environ["NIAH_PROJECT"] = "niah-bench"
    os.environ["NIAH_VERTEX_ACCESS_TOKEN"] = "bench-token"
    sys.path.insert(0, str(REPO))
    from bench_grid import essay_blobs

    from niah.models.providers import _providers as provider_cache
    from niah.settings import get_settings
    from niah_devtools.standin import serve
    from tests.fake_store import MemoryStore
    from tests.fakes import RecordingPublisher

    server, state = serve(0)
    os.environ["NIAH_VERTEX_BASE_URL"] = f"http://127.0.0.1:{server.server_port}"
    os.environ["NO_PROXY"] = "127.0.0.1,localhost"
    get_settings.cache_clear()
    provider_cache.clear()
    try:
        return _run(cells, state, essay_blobs(), MemoryStore(), RecordingPublisher())
    finally:
        server.shutdown()


def _run(cells: int, state: Any, blobs: Any, store: Any, publisher: Any) -> dict[str, Any]:
    from niah.core.runs import stored_run
    from niah.models.providers.gemini import GeminiProvider
    from niah.models.tokenizer import get_tokenizer
    from niah.service.batch.runs import handle_batch_message
    from niah.service.messages import (
        BATCH_INGEST,
        BATCH_POLL,
        BatchStep,
        batch_message,
        parse_message,
    )
    from niah.service.runs.dispatch import dispatch_run

    class Files:  # the stand-in's gs:// reads and writes, on the bench's bucket
        def read(self, uri: str) -> bytes:
            data: bytes = blobs.read(uri.removeprefix(f"gs://{blobs.bucket}/"))
            return data

        def write(self, uri: str, data: bytes) -> None:
            name = uri.removeprefix(f"gs://{blobs.bucket}/")
            blobs.write(name, data, content_type="application/jsonl")

    state.batch.files = Files()
    state.reset(batch_delay_seconds=0.0)

    def step(message: dict[str, Any]) -> str:
        return handle_batch_message(
            message, store=store, blobs=blobs, publisher=publisher,
            batches_for=lambda name: GeminiProvider(name).batches(), tokenizer_for=get_tokenizer,
        )  # fmt: skip

    run = dispatch_run(grid_for(cells), store=store, publisher=publisher, blobs=blobs)
    started = time.perf_counter()
    step(publisher.cells[0])
    submit_seconds = time.perf_counter() - started
    (job,) = store.get_run(run.run_id)["batch_jobs"]
    while state.batch.jobs[job["name"]]["state"] != "JOB_STATE_SUCCEEDED":
        time.sleep(0.5)
    outputs = [i for i in blobs.list(f"batches/{run.run_id}/") if "-output-" in i.name]
    output_bytes = sum(i.size for i in outputs)

    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    for info in outputs:  # the baseline: the whole output read in one request
        lines = blobs.read(info.name).decode().splitlines()
        del lines
    whole_peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()

    published = len(publisher.cells)
    record = stored_run(store, run.run_id, counts=False)
    assert record is not None
    step(batch_message(record, BATCH_POLL))
    pieces = 0
    piece_seconds: list[float] = []
    piece_peaks: list[int] = []
    while published < len(publisher.cells):
        message = publisher.cells[published]
        published += 1
        parsed = parse_message(message)
        if not isinstance(parsed, BatchStep) or parsed.action != BATCH_INGEST:
            continue
        traced = not piece_peaks
        if traced:
            tracemalloc.start()
            base = tracemalloc.get_traced_memory()[0]
        began = time.perf_counter()
        step(message)
        if traced:
            piece_peaks.append(tracemalloc.get_traced_memory()[1] - base)
            tracemalloc.stop()
        else:
            piece_seconds.append(time.perf_counter() - began)
        pieces += 1
    done = store.get_run(run.run_id)
    (job,) = done["batch_jobs"]
    stored = len(store.cell_ids(run.run_id))
    return {
        "lines": cells,
        "output_files": len(outputs),
        "output_mib": round(output_bytes / 2**20, 1),
        "submit_seconds": round(submit_seconds, 1),
        "pieces": pieces,
        "cells_stored": stored,
        "lines_read": job.get("lines_read"),
        "piece_mib": PIECE_BYTES / 2**20,
        "untraced_pieces_seconds": round(sum(piece_seconds), 1),
        "piece_seconds_max": round(max(piece_seconds), 1),
        "piece_seconds_mean": round(statistics.mean(piece_seconds), 1),
        "piece_peak_mib_max": round(max(piece_peaks) / 2**20, 1),
        "whole_output_peak_mib": round(whole_peak / 2**20, 1),
        "piece_peak_share_of_whole": round(max(piece_peaks) / whole_peak, 3),
        "piece_seconds_share_of_timeout": round(max(piece_seconds) / WORKER_TIMEOUT_SECONDS, 3),
        "piece_peak_share_of_memory": round(max(piece_peaks) / WORKER_MEMORY_BYTES, 3),
        # The whole process's high-water mark: the fakes' bucket and store included, and
        # what tracemalloc does not see (native buffers).
        "process_peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


if __name__ == "__main__":
    import json

    count = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    print(json.dumps(measure_batch_ingest(count), indent=2))
