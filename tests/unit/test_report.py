import io
from typing import Any

import pytest
from PIL import Image

from niah.core.summary import format_table, score_table
from niah.service.report import ERROR_COLOUR, render_heatmap, render_report
from tests.fakes import MemoryBlobs, MemoryStore

CELLS: list[dict[str, Any]] = [
    {
        "cell_id": "a",
        "context_length": 1000,
        "depth_percent": 0.0,
        "score": 10,
        "exact_score": 10,
        "status": "answered",
        "model_seconds": 1.0,
    },
    {
        "cell_id": "b",
        "context_length": 2000,
        "depth_percent": 0.0,
        "score": 1,
        "exact_score": 1,
        "status": "answered",
        "model_seconds": 3.0,
    },
    {
        "cell_id": "c",
        "context_length": 1000,
        "depth_percent": 50.0,
        "score": None,
        "status": "failed",
        "error": {"message": "too long"},
    },
    {
        "cell_id": "d",
        "context_length": 2000,
        "depth_percent": 50.0,
        "score": 10,
        "exact_score": 10,
        "status": "answered",
        "model_seconds": 2.0,
    },
]


def test_score_table_pivots_depth_by_length_with_gaps_for_errors() -> None:
    table = score_table(CELLS)
    assert table.lengths == [1000, 2000] and table.depths == [0.0, 50.0]
    assert table.scores == [[10, 1], [None, 10]]
    assert table.mean() == 7
    assert format_table(table).splitlines()[2].split() == ["50", "--", "10"]


def test_heatmap_is_a_png_with_a_grey_error_cell() -> None:
    png = render_heatmap(score_table(CELLS), title="t")
    image = Image.open(io.BytesIO(png)).convert("RGB")
    grey = tuple(int(ERROR_COLOUR[i : i + 2], 16) for i in (1, 3, 5))
    colours = image.getcolors(maxcolors=1 << 20) or []
    assert grey in {colour for _, colour in colours}


def test_report_waits_for_the_last_cell_and_is_safe_twice() -> None:
    store, blobs = MemoryStore(), MemoryBlobs()
    store.create_run("r", {"run_id": "r", "total": 4, "model": "m", "spec": {"scorer": "exact"}})
    for cell in CELLS[:3]:
        store.record_cell("r", cell["cell_id"], cell, failed=cell["score"] is None)
    assert render_report("r", store=store, blobs=blobs) is None
    store.record_cell("r", "d", CELLS[3], failed=False)
    first = render_report("r", store=store, blobs=blobs)
    second = render_report("r", store=store, blobs=blobs)
    assert first == second and first is not None
    assert store.runs["r"]["status"] == "complete"
    assert blobs.objects["reports/r/heatmap.png"].startswith(b"\x89PNG")
    assert store.runs["r"]["retrieved_share"] == pytest.approx(2 / 3, abs=1e-3)


def test_a_held_report_is_retried_and_a_done_one_is_not_rendered_again() -> None:
    from niah.errors import ReportPendingError

    store, blobs = MemoryStore(), MemoryBlobs()
    store.create_run("r", {"run_id": "r", "total": 1, "model": "m"})
    store.record_cell("r", "a", CELLS[0], failed=False)
    store.runs["r"]["claimed"] = True  # another instance is rendering
    with pytest.raises(ReportPendingError):
        render_report("r", store=store, blobs=blobs)
    assert "reports/r/heatmap.png" not in blobs.objects
    store.runs["r"]["claimed"] = False
    render_report("r", store=store, blobs=blobs)
    blobs.writes.clear()
    render_report("r", store=store, blobs=blobs)
    assert blobs.writes == []
