import io
import json
from typing import Any

import pytest
from PIL import Image

from niah.core.results.summary import format_table, score_table
from niah.core.runs import RunRecord
from niah.service.reports.png import ERROR_COLOUR, render_heatmap
from niah.service.reports.render import render_report
from tests.fake_store import MemoryStore
from tests.fakes import MemoryBlobs

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


def test_an_axis_run_s_picture_has_a_heatmap_per_value_side_by_side() -> None:
    from niah.core.results.summary import summarize
    from niah.service.reports.render import render_report_files

    cells = [
        c | {"variant": variant, "cell_id": f"{c['cell_id']}-X{variant}", "task_score": 1.0}
        for variant in ("d0", "d1", "d4")
        for c in CELLS
    ]
    run = {"run_id": "run-axis", "model": "m", "spec": {"task": "single"}}
    summary = summarize(RunRecord.from_document(run), cells)
    one = Image.open(io.BytesIO(render_heatmap(score_table(CELLS), title="t")))
    files = render_report_files(RunRecord.from_document(run), cells, summary)
    three = Image.open(io.BytesIO(files["heatmap"][1]))
    assert three.width == 3 * one.width
    assert three.height == one.height


def test_the_picture_s_title_names_the_run_then_its_mean_and_its_notes_never_cut_a_uri() -> None:
    from niah.core.results.summary import summarize
    from niah.service.reports.png import heatmap_notes, heatmap_title, wrap_notes

    cells = [c | {"task_score": 1.0 if c["score"] == 10 else 0.0} for c in CELLS if c["score"]]
    uri = "gs://a-rather-long-bucket-name-for-needles/haystacks/paul_graham_essays/"
    run = {"run_id": "r", "model": "gemini-2.5-flash", "spec": {}, "haystack_uri": uri}
    summary = summarize(RunRecord.from_document(run), cells)
    title = heatmap_title(summary, RunRecord.from_document(run))
    # The mean's interval says what it assumes, on a line of its own (issue 54).
    assert title == (
        "gemini-2.5-flash · single\nmean (%) 66.7 (95 %, one sample per grid point: 20.8-93.8)"
    )
    assert heatmap_title(
        summary, RunRecord.from_document(run | {"label": "flash, try 2"})
    ).startswith("flash, try 2\nmean (%) ")
    notes = heatmap_notes(summary, RunRecord.from_document(run))
    # Provenance: the run (its record's ID), then its haystack.
    assert f" · r · haystack {uri} · " in notes and "exact score" in notes
    png = render_heatmap(score_table(cells), title=title, notes=notes * 3)
    assert png.startswith(b"\x89PNG")
    # The notes as drawn: wrapped between words only, so the URI stays whole on a line.
    lines = wrap_notes(notes, 6.0)
    assert len(lines) > 1 and sum(line.count(uri) for line in lines) == 1


def test_report_waits_for_the_last_cell_and_is_safe_twice() -> None:
    store, blobs = MemoryStore(), MemoryBlobs()
    store.create_run("r", {"run_id": "r", "total": 4, "model": "m", "spec": {"scorer": "exact"}})
    for cell in CELLS[:3]:
        store.record_cell("r", cell["cell_id"], cell, failed=cell["score"] is None, shards=1)
    assert render_report("r", store=store, blobs=blobs) is None
    store.record_cell("r", "d", CELLS[3], failed=False, shards=1)
    first = render_report("r", store=store, blobs=blobs)
    second = render_report("r", store=store, blobs=blobs)
    assert first == second and first is not None
    assert store.runs["r"]["status"] == "complete"
    assert blobs.objects["reports/r/heatmap.png"].startswith(b"\x89PNG")
    assert store.runs["r"]["retrieved_share"] == pytest.approx(2 / 3, abs=1e-3)


def test_a_held_report_is_a_quiet_no_op_and_a_done_one_is_not_rendered_again() -> None:
    """Before: a held report raised (a traceback and a redelivery per duplicate request)."""
    store, blobs = MemoryStore(), MemoryBlobs()
    store.create_run("r", {"run_id": "r", "total": 1, "model": "m"})
    store.record_cell("r", "a", CELLS[0], failed=False, shards=1)
    assert store.claim_report("r", 60, "another") == "claimed"  # another instance renders
    assert render_report("r", store=store, blobs=blobs) is None
    assert "reports/r/heatmap.png" not in blobs.objects
    store.reopen_report("r")  # it failed and let go
    render_report("r", store=store, blobs=blobs)
    blobs.writes.clear()
    render_report("r", store=store, blobs=blobs)
    assert blobs.writes == []


def test_a_reset_while_rendering_leaves_no_stale_report(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Before: read, then claim; a reset mid-render still marked the stale report complete."""
    from niah.errors import ReportPendingError
    from niah.service.reports import render as report

    store, blobs = MemoryStore(), MemoryBlobs()
    store.create_run("r", {"run_id": "r", "total": 2, "model": "m", "spec": {}})
    store.record_cell("r", "a", CELLS[0], failed=False, shards=1)
    store.record_cell("r", "c", CELLS[2], failed=True, shards=1)
    real_render = report.render_heatmap

    def render_then_reset(*args: Any, **kwargs: Any) -> bytes:
        png = real_render(*args, **kwargs)
        store.reset_failed_cells("r", shards=1)  # a resume lands while this render runs
        return png

    monkeypatch.setattr(report, "render_heatmap", render_then_reset)
    assert render_report("r", store=store, blobs=blobs) is None  # stale: not complete
    assert store.runs["r"]["status"] == "running" and "report" not in store.runs["r"]
    monkeypatch.setattr(report, "render_heatmap", real_render)
    retried = dict(CELLS[2], status="answered", score=10, outcome="correct")
    del retried["error"]
    store.record_cell("r", "c", retried, failed=False, shards=1)
    location = render_report("r", store=store, blobs=blobs)
    assert location is not None and store.runs["r"]["status"] == "complete"
    summary = json.loads(blobs.objects["reports/r/summary.json"])
    assert (summary["answered"], summary["failed"]) == (2, 0)  # the fresh state, not 1 + 1
    # Counts that disagree with the cells read mean a stale read: rendered again.
    store.reopen_report("r")
    store.runs["r"]["done"] = 3
    with pytest.raises(ReportPendingError, match="went stale"):
        render_report("r", store=store, blobs=blobs)


def sample_cell(length: int, depth: float, score: float | None, sample: int = 0) -> dict[str, Any]:
    return {
        "cell_id": f"{length}-{depth}-{sample}",
        "context_length": length,
        "depth_percent": depth,
        "sample": sample,
        "score": score,
        "task_score": score,
        "outcome": "unscored" if score is None else ("correct" if score == 1 else "wrong"),
        "status": "answered",
    }


def test_repeats_show_their_mean_and_spread_and_unscored_samples_do_not_count() -> None:
    cells = [
        sample_cell(1000, 50, 1.0, 0),
        sample_cell(1000, 50, 0.0, 1),
        sample_cell(1000, 50, None, 2),  # unscored: not a miss
        sample_cell(2000, 50, None, 0),  # nothing scored: grey
    ]
    table = score_table(cells)
    assert table.scores == [[0.5, None]]
    assert table.stds == [[0.5, None]]
    assert table.counts == [[2, 0]]
    assert format_table(table).splitlines()[1].split() == ["50", "0.5±0.5", "--"]


def test_measures_per_length_per_depth_auc_and_the_ruler_effective_length() -> None:
    from niah.core.results.measures import measures

    scores = {4000: [1, 1, 1, 1], 8000: [1, 1, 1, 0], 16000: [1, 0, 0, 0]}
    cells = [
        sample_cell(length, depth, float(score))
        for length, values in scores.items()
        for depth, score in zip((0, 25, 50, 75), values, strict=True)
    ]
    result = measures(cells, rule="ruler")
    assert result["by_length"] == {"4000": 100.0, "8000": 75.0, "16000": 25.0}
    assert result["by_depth"] == {"0": 100.0, "25": 66.67, "50": 66.67, "75": 33.33}
    assert result["mean"] == 66.67
    # Longest length at or above RULER's 85.6.
    # Four samples a length cannot place it above 85.6: 4/4 is Wilson 51.0-100 %.
    assert result["effective_length"] == {
        "length": 4000,
        "threshold": 85.6,
        "rule": "rule ruler: fixed, as in RULER",
        "effective_length_rule": "ruler",
        "base": None,
        "interval": {"low": None, "high": 8000},
        "determined": False,
        "text": "not determined: 4,000 tokens by the means, but the 95 % intervals allow none "
        "to 8,000 (threshold 85.6 %, rule ruler: fixed, as in RULER; more samples per point "
        "narrow them)",
    }
    # Trapezoids: (4000 * (100 + 75) / 2 + 8000 * (75 + 25) / 2) / 12000.
    assert result["area_under_curve"] == pytest.approx((4000 * 87.5 + 8000 * 50) / 12000, abs=0.01)


def test_a_grid_with_a_1000_token_length_is_judged_by_rulers_rule_unless_it_asks() -> None:
    """A short length in the grid does not switch the rule: the run's choice does.

    The old implicit switch judged this grid by NoLiMa's 85 % of its base (70 %), 59.5 %,
    and called 4,000 effective; RULER's 85.6 % finds no length.
    """
    from niah.core.results.effective import effective_length

    by_length = {500: 80.0, 1000: 60.0, 4000: 60.0, 8000: 59.0}
    ruler = effective_length(by_length, rule="ruler")
    assert (ruler["length"], ruler["threshold"], ruler["base"]) == (None, 85.6, None)
    assert ruler["effective_length_rule"] == "ruler"
    assert ruler["text"] == (
        "not determined (no length scored 85.6 % or more; rule ruler: fixed, as in RULER)"
    )
    # 90 % at 1,000 tokens passes 85.6, and 1,000 is then the effective length.
    assert effective_length({1000: 90.0, 2000: 80.0}, rule="ruler")["length"] == 1000


def test_nolimas_rule_when_asked_is_its_share_of_the_base() -> None:
    from niah.core.results.effective import effective_length

    by_length = {500: 80.0, 1000: 60.0, 4000: 60.0, 8000: 59.0}
    result = effective_length(by_length, rule="nolima")
    # Base = mean at <= 1,000 tokens = 70; threshold = 0.85 x 70 = 59.5.
    assert result == {
        "length": 4000,
        "threshold": 59.5,
        "rule": "rule nolima: 85 % of the mean at lengths <= 1,000 tokens",
        "effective_length_rule": "nolima",
        "base": 70.0,
        # Without intervals, said as the means have it.
        "text": "4,000 tokens, by the means (threshold 59.5 %, rule nolima: 85 % of the mean "
        "at lengths <= 1,000 tokens)",
    }
    # No base scored (every short sample failed): nothing to judge by, and why.
    unbased = effective_length({2000: 90.0}, rule="nolima")
    assert unbased["length"] is None and unbased["threshold"] is None
    assert unbased["text"].startswith("not determined (no length of 1,000 tokens or less")


def test_a_run_with_no_cells_yet_formats_without_crashing() -> None:
    assert format_table(score_table([])) == "no cells stored yet"


def test_a_model_that_never_scores_has_no_effective_length() -> None:
    from niah.core.results.effective import effective_length

    for rule in ("ruler", "nolima"):
        assert effective_length({1000: 0.0, 2000: 0.0}, rule=rule)["length"] is None
