"""Redraw the pictures in docs/images/ with today's code, from fixed data.

The README's heatmap was a screenshot of one demo run, and it kept the old four-line
title long after the report drew one line: a picture copied by hand goes stale unseen.
This draws it with the report's own renderer (``niah.service.reports.render``) from a fixed
demo-shaped run (4 lengths x 5 depths on the local model, every needle found), so the
same code gives the same bytes and a changed picture in a diff means the report changed.
No stack, emulator or model is needed.

    python -m niah_devtools.docs_pictures [--out docs/images]
"""

from __future__ import annotations

import argparse
import datetime as dt
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
IMAGES = REPO / "docs" / "images"

# The local demo's grid (scripts/demo.sh): what the README's picture shows.
DEMO_RUN_ID = "run-f0976af0be775ec1"
DEMO_MODEL = "gemma-3-270m-local"
DEMO_LENGTHS = (1_000, 2_000, 3_000, 4_000)
DEMO_DEPTHS = (0.0, 25.0, 50.0, 75.0, 100.0)
DEMO_DAY = dt.datetime(2026, 11, 26, 12, 0, tzinfo=dt.UTC)


def demo_run() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A finished demo run and its cells: every needle found, answered in about a second."""
    run = {
        "run_id": DEMO_RUN_ID,
        "model": DEMO_MODEL,
        "spec": {"model_name": DEMO_MODEL, "task": "single"},
        "haystack_uri": "gs://niah-local/haystacks/paul_graham_essays/",
        "created_at": DEMO_DAY,
        "total": len(DEMO_LENGTHS) * len(DEMO_DEPTHS),
    }
    cells = [
        {
            "cell_id": f"L{length:08d}-D{int(depth * 1000):06d}",
            "model": DEMO_MODEL,
            "context_length": length,
            "depth_percent": depth,
            "status": "answered",
            "outcome": "correct",
            "score": 10,
            "exact_score": 10,
            "task_score": 1.0,
            "model_seconds": 1.0,
        }
        for length in DEMO_LENGTHS
        for depth in DEMO_DEPTHS
    ]
    return run, cells


def demo_heatmap() -> bytes:
    """The demo run's heatmap PNG, drawn as the report function draws a run's."""
    from niah.core.results.summary import summarize
    from niah.core.runs import RunRecord
    from niah.service.reports.render import render_report_files

    document, cells = demo_run()
    run = RunRecord.from_document(document)
    _, png, _ = render_report_files(run, cells, summarize(run, cells))["heatmap"]
    return png


# Every picture of docs/images/: its file and what draws it.
PICTURES = {"heatmap-demo.png": demo_heatmap}


def main() -> None:
    """Draw every picture into ``--out`` and say which changed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=IMAGES, help="where the pictures go")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for name, draw in PICTURES.items():
        path = args.out / name
        data = draw()
        changed = not path.exists() or path.read_bytes() != data
        path.write_bytes(data)
        print(f"{path}: {'redrawn' if changed else 'unchanged'} ({len(data):,} bytes)")


if __name__ == "__main__":
    main()
