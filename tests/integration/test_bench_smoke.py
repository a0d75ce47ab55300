"""Every part of the benchmark runs, at tiny sizes: so none rots unseen.

``scripts/bench.py``'s stack part asked for a retired model for months before anyone
noticed (only ``bench.sh`` ran it). The figures of a smoke run are not judged; that each
part completes and writes its keys is.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from niah_devtools.docs_figures import cited, missing_keys
from tests import REPO
from tests.integration.conftest import BASE_PORT

pytestmark = pytest.mark.integration

# Docs tables whose section --smoke does not write: certify_local's smallest real run is
# minutes of the CPU model (tests/unit/test_bench_certify_local.py holds its table).
NOT_IN_SMOKE = {"batch_ingest", "certify_local", "certify_local_single"}


def bench(
    *args: str, results: Path, timeout: float, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``scripts/bench.py ARGS`` writing to ``results``, its stack on this run's ports.

    Its stack's nine ports: 8670 by default, as NIAH_TEST_BASE_PORT moves them.
    """
    return subprocess.run(
        [
            sys.executable,
            str(REPO / "scripts" / "bench.py"),
            *args,
            "--results",
            str(results),
            "--base-port",
            str(BASE_PORT + 100),
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def test_every_benchmark_part_completes_and_writes_its_keys(tmp_path: Path) -> None:
    results = tmp_path / "bench.json"
    # The run's own temporary folder, to see what it leaves behind. Short: the browser's
    # socket path under it must fit in 108 bytes, which tmp_path's does not.
    temporary = Path(tempfile.mkdtemp(prefix="nb-"))
    try:
        run = bench("--smoke", results=results, timeout=900, env={"TMPDIR": str(temporary)})
        left = sorted(path.name for path in temporary.glob("niah-bench*"))
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    # Its stack's state and the memory probe's files are removed when each part ends.
    assert left == []
    figures = json.loads(results.read_text())
    for key in ("build_seconds", "baseline_seconds", "ratio", "peak_rss_mib"):
        assert set(figures[key]) == {"1000", "4000"}, key
    assert figures["grid_121_cells"] == 4 and figures["grid_121_cells_answered"] == 4
    assert figures["dispatch_121_seconds"] > 0 and figures["overhead_per_cell_ms"] is not None
    assert figures["counting"]["samples"] == 20 and "hot_document_ratio" in figures["counting"]
    assert figures["grid_cost"]["naive"]["calls"] == figures["grid_cost"]["cache_aware"]["calls"]
    assert "cache_aware_saving" in figures["grid_cost"]
    # Batch: at most half of naive (half the rates; cache hits only lower it).
    assert figures["grid_cost"]["batch"]["calls"] == figures["grid_cost"]["naive"]["calls"]
    assert 0 < figures["grid_cost"]["batch_share_of_naive"] <= 0.5
    assert figures["local_reuse"]["cells"] == 2 and "model_seconds_ratio" in figures["local_reuse"]
    (scale,) = figures["scale"]["runs"]
    assert (scale["samples"], scale["stored"]) == (100, 100)
    assert scale["operations_per_sample"]["firestore_writes"] > 0
    assert scale["service_usd_per_1000_samples"] > 0 and scale["report_html_bytes"] > 0
    assert scale["report_peak_rss_mib"] > 0
    # The same hour's baseline: the cell's calls alone, one at a time, and the ratio.
    floor = scale["calls_floor"]
    assert (floor["samples"], floor["threads"]) == (100, 1) and floor["median_ms"] > 0
    assert scale["overhead_over_floor"] == round(
        scale["overhead_ms_median"] / floor["median_ms"], 2
    )
    # Every figure a page of docs/ cites between its markers is a key the benchmark writes,
    # with the commit and day it was measured at. The smoke runs no batch ingest: at its
    # smallest (1,000 lines, one piece) it takes 85 s and has no untraced piece to time.
    assert missing_keys(figures, [name for name in cited() if name not in NOT_IN_SMOKE]) == []
    assert {"grid_cost", "scale", "counting"} <= set(figures["measured"])


def test_the_stack_part_runs_at_its_documented_size(tmp_path: Path) -> None:
    """``scripts/bench.sh``'s stack part as the docs run it: 121 cells to 1M tokens, then 25.

    The smoke run's 4-cell grid never met the spend ceiling; this one stopped at it (issue
    51): the dispatcher refused the 121-cell grid's $544 worst case under the default $300
    a day. 71-94 s here (docs/benchmarks.md).
    """
    results = tmp_path / "bench.json"
    run = bench("--only", "stack", results=results, timeout=1800)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    figures = json.loads(results.read_text())
    assert figures["grid_121_cells"] == figures["grid_121_cells_answered"] == 121
    assert figures["overhead_grid_cells"] == 25
    assert figures["dispatch_121_seconds"] > 0 and figures["overhead_per_cell_ms"] is not None
