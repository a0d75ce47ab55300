"""Benchmarks for issue 5: context building, memory, fan-out and pipeline overhead.

Prints a table and writes the same figures to results/bench.json. Baselines are measured
in the same run. Not a test: figures depend on the machine.

    scripts/bench.sh [--lengths 1000 8000 ...] [--baseline-limit 60] [--skip-stack]
    scripts/bench.sh --only stack [--base-port 8670]   # the local-stack part alone
    scripts/bench.sh --only certify_local [--base-port 8670]   # the local model certified
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_batch import measure_batch_ingest
from bench_cache import measure_grid_cost
from bench_certify import measure_certify, measure_certify_nolima
from bench_certify_local import SINGLE_REQUEST, measure_certify_local
from bench_counting import SAMPLES, measure_counting
from bench_local import measure_local_reuse
from bench_pipeline import Stack, bench_stack, measure_stack
from bench_scale import measure_scale, scale_worker_env

REPO = Path(__file__).resolve().parents[1]
ESSAYS = REPO / ".local" / "haystacks" / "paul_graham_essays"
LENGTHS = [1_000, 8_000, 32_000, 128_000, 512_000, 1_000_000, 2_000_000]
PREFIX = "haystacks/paul_graham_essays/"


def essay_blobs() -> Any:
    """The default haystack in an in-memory blob store."""
    sys.path.insert(0, str(REPO))
    from tests.fakes import MemoryBlobs

    blobs = MemoryBlobs()
    for path in sorted(ESSAYS.glob("*.txt")):
        blobs.objects[PREFIX + path.name] = path.read_bytes()
    return blobs


def measure_builds(lengths: list[int]) -> tuple[dict[int, float], dict[int, float], float]:
    """Seconds to build one cell from cached tokens (median of 5, warm instance)."""
    import niah.tasks  # noqa: F401  the task registry: a request names a task
    from niah.core.prompts.haystack_tokens import load_haystack, loaded_haystacks
    from niah.core.prompts.needles import needle_for
    from niah.core.prompts.prompt_builder import Insertion, build_prompt
    from niah.core.prompts.texts import HARNESS_TEMPLATE
    from niah.core.request.grid import Cell
    from niah.core.request.spec import RunRequest
    from niah.models.tokenizer import get_tokenizer

    tokenizer = get_tokenizer()
    blobs = essay_blobs()
    started = time.perf_counter()
    load_haystack(blobs, PREFIX, tokenizer)  # tokenize once and write the cache object
    tokenize_seconds = time.perf_counter() - started
    loaded_haystacks.clear()
    started = time.perf_counter()
    haystack = load_haystack(blobs, PREFIX, tokenizer)  # a new instance: from the cache
    cache_load_seconds = time.perf_counter() - started
    print(
        f"haystack: {haystack.corpus_tokens:,} tokens; tokenized once in "
        f"{tokenize_seconds:.2f} s; a new instance loads the cache in {cache_load_seconds:.3f} s"
    )
    first: dict[int, float] = {}
    warm: dict[int, float] = {}
    spec = RunRequest()
    for length in lengths:
        times = []
        for attempt in range(6):
            depth = [50, 0, 25, 75, 100, 33][attempt]
            needle = needle_for(spec, Cell(length, depth))
            started = time.perf_counter()
            build_prompt(
                haystack,
                tokenizer,
                template=HARNESS_TEMPLATE,
                insertions=[Insertion(needle.text, depth)],
                question=needle.question,
                context_length=length,
            )
            times.append(time.perf_counter() - started)
        first[length] = times[0]
        warm[length] = statistics.median(times[1:])
    return warm, first, cache_load_seconds


def harness_baseline(
    lengths: list[int], max_length: int, limit_seconds: float
) -> tuple[dict[int, float], float, int, bool]:
    """Build cells the NIAH harness's way, in a grid whose longest length is ``max_length``.

    Per cell: read the files appending to a string and re-tokenizing the whole
    string after each file until it holds ``max_length`` tokens; encode and trim to
    the cell's length; re-encode; insert the needle (backing up to a '.'); decode.

    The read phase is the same for every cell of the grid, so it is run once and
    charged to every cell; if it passes ``limit_seconds`` it stops early and the
    figures are lower bounds.
    """
    from niah.models.tokenizer import get_tokenizer

    tokenizer = get_tokenizer()
    files = sorted(glob.glob(str(ESSAYS / "*.txt")))
    context = ""
    started = time.perf_counter()
    stopped = False
    while not stopped and len(tokenizer.encode(context)) < max_length:
        for path in files:
            with open(path) as handle:
                context += handle.read()
            if len(tokenizer.encode(context)) >= max_length:
                break
            if time.perf_counter() - started > limit_seconds:
                stopped = True
                break
    read_seconds = time.perf_counter() - started
    read_tokens = len(tokenizer.encode(context))
    period = tokenizer.encode(".")
    needle = " The special magic Lagos number is: 7304912."
    per_cell: dict[int, float] = {}
    for length in lengths:
        started = time.perf_counter()
        tokens = tokenizer.encode(context)[: length - 200]  # encode_and_trim, 200 buffer
        trimmed = tokenizer.decode(tokens)
        tokens = tokenizer.encode(trimmed)  # insert_needle re-encodes
        needle_tokens = tokenizer.encode(needle)
        tokens = tokens[: length - 200 - len(needle_tokens)]
        point = len(tokens) // 2
        while point > 0 and tokens[point - 1] not in period:
            point -= 1
        tokenizer.decode(tokens[:point] + needle_tokens + tokens[point:])
        per_cell[length] = read_seconds + time.perf_counter() - started
    return per_cell, read_seconds, read_tokens, stopped


PEAK_PROBE = """
import resource, sys, time
sys.path.insert(0, {repo!r})
from niah.core.prompts.prompt_builder import Insertion, build_prompt
from niah.core.prompts.haystack_tokens import load_haystack
from niah.core.prompts.needles import needle_for
from niah.core.prompts.texts import HARNESS_TEMPLATE
from niah.core.request.spec import RunRequest
from niah.core.request.grid import Cell
from niah.models.tokenizer import get_tokenizer
import niah.tasks  # the task registry: a request names a task
from tests.fakes import MemoryBlobs
tokenizer = get_tokenizer()
blobs = MemoryBlobs()
blobs.objects.update({{name: open(path, "rb").read() for name, path in {objects!r}.items()}})
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
haystack = load_haystack(blobs, {prefix!r}, tokenizer)
needle = needle_for(RunRequest(), Cell({length}, 50))
built = build_prompt(haystack, tokenizer, template=HARNESS_TEMPLATE,
                     insertions=[Insertion(needle.text, 50)], question=needle.question,
                     context_length={length})
prompt = built.prompt.encode()  # what goes on the wire
rss_now = [int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmRSS")]
print(before, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, rss_now[0])
"""


def measure_peak_rss(
    lengths: list[int],
) -> tuple[dict[int, float], dict[int, float], float]:
    """Peak RSS (MiB) of a fresh process building one cell, and its RSS right after.

    The process loads the tokenizer and the cached tokens, as a new worker would.
    """
    from niah.core.prompts.haystack_tokens import CACHE_PREFIX, load_haystack, loaded_haystacks
    from niah.models.tokenizer import get_tokenizer

    blobs = essay_blobs()
    loaded_haystacks.clear()
    load_haystack(blobs, PREFIX, get_tokenizer())  # writes the cache object the probe reads
    peaks: dict[int, float] = {}
    after: dict[int, float] = {}
    base = 0.0
    # The probe reads the haystack's objects from files; they go when it is done.
    with tempfile.TemporaryDirectory(prefix="niah-bench-") as folder:
        objects = {}
        for index, (name, data) in enumerate(sorted(blobs.objects.items())):
            path = Path(folder) / f"{index}.bin"
            path.write_bytes(data)
            objects[name] = str(path)
        assert any(name.startswith(CACHE_PREFIX) for name in objects)
        for length in lengths:
            code = PEAK_PROBE.format(repo=str(REPO), objects=objects, prefix=PREFIX, length=length)
            out = subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
            ).stdout.split()
            base, peak = int(out[0]) / 1024, int(out[1]) / 1024
            peaks[length] = round(peak, 1)
            after[length] = round(int(out[2]) / 1024, 1)
    return peaks, after, round(base, 1)


PARTS = {
    "batch_ingest": measure_batch_ingest,
    "certify": measure_certify,
    "certify_nolima": measure_certify_nolima,
    "counting": measure_counting,
    "grid_cost": measure_grid_cost,
    "local_reuse": measure_local_reuse,
    "scale": measure_scale,
}


# The local-stack part (``measure_stack``): its figures are top-level keys of bench.json.
STACK_PART = "stack"
# Parts with a stack of their own, on ``--base-port``'s ports (the scale part's: +20).
# certify_local and certify_local_single are not in the smoke run: their smallest real
# run is minutes of the CPU model (tests/unit/test_bench_certify_local.py holds their
# comparison and table).
STACK_PARTS = {
    "scale": lambda base_port: measure_scale(base_port=base_port + SCALE_PORT_OFFSET),
    "certify_local": lambda base_port: measure_certify_local(base_port=base_port),
    "certify_local_single": lambda base_port: measure_certify_local(
        SINGLE_REQUEST, base_port=base_port
    ),
}


def update_part(name: str, *, base_port: int, latency: float, results: Path) -> None:
    """Run one part; print its figures and merge them into ``results`` (results/bench.json)."""
    if name == STACK_PART:
        stack = measure_stack(latency, base_port=base_port)
        print(json.dumps(stack, indent=2))
        merge_results(stack, results)
        print(f"updated the stack part's keys in {results}")
        return
    figures = STACK_PARTS[name](base_port) if name in STACK_PARTS else PARTS[name]()
    print(json.dumps(figures, indent=2))
    top = {"grid_cost_usd": figures["grid_cost_usd"]} if "grid_cost_usd" in figures else {}
    merge_results({name: figures, **top}, results)  # the issue's key at the top, as asked
    print(f"updated {name} in {results}")


RESULTS = REPO / "results" / "bench.json"
# The scale part's own stack sits this far above ``--base-port`` (8690 by default).
SCALE_PORT_OFFSET = 20


def provenance() -> dict[str, str]:
    """The commit and UTC day figures are measured at: what the docs cite them by."""
    head = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short=12", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    day = time.strftime("%Y-%m-%d", time.gmtime())
    return {"commit": head.stdout.strip() or "unknown", "date": day}


def merge_results(figures: dict[str, Any], results: Path = RESULTS) -> None:
    """Write ``figures`` into ``results`` (results/bench.json) over what is there.

    A full run keeps the parts run alone (``--only``); a part keeps the full run's.
    ``measured`` says, per key, the commit and day it was measured at
    (scripts/docs_figures.py writes them beside the docs' tables).
    """
    out = json.loads(results.read_text()) if results.exists() else {}
    stamp = provenance()
    measured = out.get("measured", {}) | {key: stamp for key in figures}
    results.parent.mkdir(exist_ok=True)
    results.write_text(json.dumps(out | figures | {"measured": measured}, indent=2) + "\n")


# Every part at tiny sizes (--smoke): what tests/integration/test_bench_smoke.py runs, so
# no part rots unseen. Its figures say nothing; it shows that each part completes.
SMOKE_LENGTHS = [1_000, 4_000]
SMOKE_GRID = {
    "model_name": "gemini-3.1-pro-preview",
    "context_lengths": [3_000, 6_000],
    "document_depth_percents": [0, 100],
}
SMOKE_DEMO = {"context_lengths": [500, 1_000], "document_depth_percents": [50]}


SMOKE_SCALE = (100,)


def smoke_parts(stack: Stack) -> dict[str, Any]:
    """The parts that run only alone (``--only``), at tiny sizes; ``stack`` is shared."""
    return {
        "certify": measure_certify(
            seeds=2, curves=((64_000, 0.3),), family_counts={"logistic": 2, "always_right": 1}
        ),
        "certify_nolima": measure_certify_nolima(seeds=2, curves=((64_000, 0.3, 0.9),)),
        "grid_cost": measure_grid_cost(SMOKE_GRID, latency=0.5),
        "local_reuse": measure_local_reuse(SMOKE_DEMO),
        "scale": measure_scale(SMOKE_SCALE, shared=stack),
    }


def main() -> None:
    """Run every benchmark, print the table, write results/bench.json."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--lengths", type=int, nargs="+", default=LENGTHS)
    parser.add_argument(
        "--baseline-limit",
        type=float,
        default=60.0,
        help="seconds the harness-way read phase may take before stopping",
    )
    parser.add_argument(
        "--latency", type=float, default=0.5, help="the model stand-in's fixed latency, seconds"
    )
    parser.add_argument("--skip-stack", action="store_true", help="skip the local-stack parts")
    parser.add_argument(
        "--skip-counting", action="store_true", help="skip the counting-path benchmark"
    )
    parser.add_argument(
        "--base-port",
        type=int,
        default=8670,
        help="the first of the local stack's nine ports (the scale part's stack: +20)",
    )
    parser.add_argument(
        "--only",
        choices=sorted([*PARTS, *STACK_PARTS, STACK_PART]),
        help="run one part and update its key in results/bench.json, keeping the rest",
    )
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="every part at tiny sizes, into --results (a test that no part broke)",
    )
    parser.add_argument("--results", type=Path, default=RESULTS, help="where figures go")
    args = parser.parse_args()
    if args.only:
        update_part(args.only, base_port=args.base_port, latency=args.latency, results=args.results)
        return
    if not args.smoke:
        run_benchmarks(args, None)
        return
    args.lengths, args.baseline_limit, args.latency = SMOKE_LENGTHS, 5.0, 0.05
    # One stack for both stack parts (the scale part's settings hold the other's).
    with bench_stack(args.base_port, scale_worker_env(max(SMOKE_SCALE))) as shared:
        run_benchmarks(args, shared)


def run_benchmarks(args: argparse.Namespace, shared: Stack | None) -> None:
    """Every part ``args`` asks for; ``shared``: the smoke run's one stack."""
    lengths = sorted(args.lengths)

    warm, first, cache_load = measure_builds(lengths)
    baseline, read_seconds, read_tokens, stopped = harness_baseline(
        lengths, max(lengths), args.baseline_limit
    )
    peaks, after_build, base_rss = measure_peak_rss(lengths)
    stack = (
        {}
        if args.skip_stack
        else measure_stack(args.latency, 2, big_side=2, big_max=8_000, shared=shared)
        if shared is not None
        else measure_stack(args.latency, base_port=args.base_port)
    )
    counting = {} if args.skip_counting else measure_counting(20 if args.smoke else SAMPLES)

    print(
        f"\nharness-way read phase (grid up to {max(lengths):,}): {read_seconds:.1f} s for "
        f"{read_tokens:,} tokens"
        + (
            "; STOPPED EARLY at the limit: baseline figures below are lower bounds"
            if stopped
            else ""
        )
    )
    print(
        f"{'length':>10} {'build s':>10} {'first s':>9} {'baseline s':>11} {'ratio':>12} "
        f"{'peak RSS MiB':>13} {'RSS after MiB':>14}"
    )
    for length in lengths:
        ratio = baseline[length] / warm[length]
        mark = ">=" if stopped else ""
        print(
            f"{length:>10,} {warm[length]:>10.5f} {first[length]:>9.4f} "
            f"{mark + format(baseline[length], '.1f'):>11} {mark + format(ratio, ',.0f'):>12} "
            f"{peaks[length]:>13.1f} {after_build[length]:>14.1f}"
        )
    print(
        f"(peak RSS of the same process before loading the haystack, tokenizer loaded: "
        f"{base_rss} MiB)"
    )
    for key, value in stack.items():
        print(f"{key}: {value}")
    if counting:
        for way in ("one_counter", "sharded"):
            row = counting[way]
            print(
                f"counting, {way}: {row['cells_per_second']} cells/s, hottest document "
                f"{row['hottest_document_writes']} writes of {counting['samples']} = "
                f"{row['hottest_writes_per_second_at_1000_a_minute']}/s at 1,000 samples/min"
            )
        ratio = counting["hot_document_ratio"]
        print(f"counting, hot-document ratio (one counter / sharded): {ratio}")

    out = {
        "build_seconds": {str(n): round(warm[n], 6) for n in lengths},
        "first_build_seconds": {str(n): round(first[n], 6) for n in lengths},
        "baseline_seconds": {str(n): round(baseline[n], 3) for n in lengths},
        "baseline_is_lower_bound": stopped,
        "baseline_read_seconds": round(read_seconds, 3),
        "baseline_read_tokens": read_tokens,
        "ratio": {str(n): round(baseline[n] / warm[n], 1) for n in lengths},
        "peak_rss_mib": {str(n): peaks.get(n) for n in lengths},
        "rss_after_build_mib": {str(n): after_build.get(n) for n in lengths},
        "process_rss_before_haystack_mib": base_rss,
        "cache_load_seconds": round(cache_load, 4),
        "dispatch_121_seconds": stack.get("dispatch_121_seconds"),
        "overhead_per_cell_ms": stack.get("overhead_per_cell_ms"),
        **{
            k: v
            for k, v in stack.items()
            if k not in ("dispatch_121_seconds", "overhead_per_cell_ms")
        },
        "counting": counting,
        "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]},
        "max_rss_this_process_mib": round(
            resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1
        ),
    }
    if shared is not None:
        out |= smoke_parts(shared)
    merge_results(out, args.results)
    print(f"wrote {args.results}")


if __name__ == "__main__":
    main()
