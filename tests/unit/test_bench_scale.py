"""The scale benchmark's figures from the worker's log lines: the overhead and its parts."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests import REPO

sys.path.insert(0, str(REPO / "scripts"))


def _handled(cell: str, wall: float, waits: dict[str, float], outcome: str = "answered") -> dict:
    return {"message": "cell handled", "cell_id": cell, "outcome": outcome,
            "wall_seconds": wall, "waits": waits}  # fmt: skip


def test_each_samples_overhead_splits_into_its_waits_and_the_rest() -> None:
    from bench_scale import sample_waits

    lines = [
        {"message": "model call", "cell_id": "a", "latency_seconds": 0.010},
        _handled(
            "a", 0.040, {"firestore": 0.020, "pubsub": 0.0, "storage": 0.002, "background": 0.005}
        ),
        {"message": "model call", "cell_id": "b", "latency_seconds": 0.0},
        _handled(
            "b", 0.015, {"firestore": 0.010, "pubsub": 0.001, "storage": 0.0, "background": 0.0}
        ),
        _handled("c", 9.0, {"firestore": 9.0}, outcome="duplicate"),  # not a sample answered
    ]
    figures = sample_waits(lines)
    # Medians of two: their means. a: 30 ms over (20 + 0 + 2 waited, 8 other); b: 15 (11, 4).
    assert figures == {
        "overhead": {"median": 22.5, "p99": 30.0},
        "firestore": {"median": 15.0, "p99": 20.0},
        "pubsub": {"median": 0.5, "p99": 1.0},
        "storage": {"median": 1.0, "p99": 2.0},
        "count_tokens": {"median": 0.0, "p99": 0.0},
        "other": {"median": 6.0, "p99": 8.0},
        "background": {"median": 2.5, "p99": 5.0},
    }


def test_a_line_from_before_the_waits_were_logged_counts_its_overhead_as_other() -> None:
    from bench_scale import sample_waits

    figures = sample_waits([{"message": "cell handled", "cell_id": "a", "outcome": "answered",
                             "wall_seconds": 0.02}])  # fmt: skip
    assert figures["overhead"] == figures["other"] == {"median": 20.0, "p99": 20.0}
    assert figures["firestore"] == {"median": 0.0, "p99": 0.0}


def test_the_figures_wait_for_the_report_functions_line(tmp_path: Path) -> None:
    """The run is complete before the report function logs: its reads must not be lost."""
    from bench_scale import report_logged

    logs = tmp_path / "logs"
    logs.mkdir()
    report = logs / "report.log"
    report.write_text('{"message": "rendered", "run_id": "r1"}\n')
    assert not report_logged(tmp_path, "r1", seconds=0.2)  # no line with its operations
    line = {"message": "report request metered", "run_id": "r1", "operations": {}}
    report.write_text(report.read_text() + json.dumps(line) + "\n")
    assert report_logged(tmp_path, "r1", seconds=0.2)
