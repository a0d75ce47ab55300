"""The HTML report, the comparison and the flat sample rows (CSV, JSONL), on fakes."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import re
from typing import Any

import pytest

from niah.core.pages.environment import content_security_policy
from niah.core.pages.heatmap import (
    DIFFERENCE_SCALE,
    ERROR_COLOUR,
    HARNESS_COLOURS,
    HARNESS_SCALE,
    PERCENT_SCALE,
)
from niah.core.pages.report_page import render_run_page
from niah.core.pages.report_samples import TEXT_LIMIT
from niah.core.results.comparison import compare_runs, render_comparison_page
from niah.core.results.sample_rows import COLUMN_NAMES, cells_jsonl, rows_csv
from niah.core.results.summary import summarize
from niah.core.runs import RunRecord
from niah.errors import ComparisonError
from niah.service.reports.render import render_report
from tests.fake_store import MemoryStore
from tests.fakes import MemoryBlobs, run_records


def cell(length: int, depth: float, ok: bool | None, sample: int = 0, **extra: Any) -> dict:
    """A stored sample: ``ok`` True correct, False wrong, None failed."""
    point = f"L{length:08d}-D{round(depth * 1000):06d}"
    base: dict[str, Any] = {
        "cell_id": f"{point}-S{sample:03d}" if sample else point,
        "context_length": length,
        "depth_percent": depth,
        "sample": sample,
        "needle": "The special magic Oslo number is: 1234567.",
        "question": "What is the special magic Oslo number?",
        "expected_answer": "1234567",
    }
    if ok is None:
        return (
            base
            | {
                "status": "failed",
                "outcome": "unscored",
                "score": None,
                "task_score": None,
                "error": {"kind": "cell", "message": "400 INVALID_ARGUMENT: too long"},
            }
            | extra
        )
    return (
        base
        | {
            "status": "answered",
            "model_response": "1234567." if ok else "I do not know",
            "outcome": "correct" if ok else "wrong",
            "score": 10 if ok else 1,
            "exact_score": 10 if ok else 1,
            "task_score": 1.0 if ok else 0.0,
            "finish_reason": "stop",
            "usage": {"prompt_token_count": length, "candidates_token_count": 4},
            "cost_usd": 0.001,
            "model_seconds": 0.5,
        }
        | extra
    )


def run_doc(run_id: str, model: str = "gemini-2.5-flash", task: str = "single") -> dict:
    return {
        "run_id": run_id,
        "model": model,
        "status": "complete",
        "scorer": "exact",
        "haystack_uri": "gs://b/haystacks/pg/",
        "spec": {"task": task, "seed": 7, "samples_per_cell": 2},
        "call_settings": {"temperature": 0.0, "thinking_budget": 0, "max_output_tokens": 256},
        "created_at": dt.datetime(2026, 11, 26, 9, 30, tzinfo=dt.UTC),
        "totals": {"prompt_tokens": 4000, "output_tokens": 16, "cost_usd": 0.004},
    }


CELLS = [
    cell(1000, 0.0, True),
    cell(1000, 0.0, False, sample=1),
    cell(1000, 50.0, None),
    cell(2000, 0.0, True),
    cell(2000, 50.0, True, model_response="<script>alert(1)</script>" + "x" * 2000),
]


def page_of(run: dict[str, Any], cells: list[dict[str, Any]], calls: list[Any]) -> str:
    return render_run_page(
        RunRecord.from_document(run), cells, summarize(RunRecord.from_document(run), cells, calls)
    )


def rows_of(page: str) -> list[dict[str, Any]]:
    """The samples table's rows, from the data the page's script renders them from."""
    text = page.split('<script type="application/json" id="sample-data">', 1)[1]
    data = json.loads(text.split("</script>", 1)[0])
    return [dict(zip(data["columns"], row, strict=True)) for row in data["rows"]]


def test_the_report_is_one_page_that_may_request_nothing() -> None:
    page = page_of(run_doc("run-a"), CELLS, [])
    policy = content_security_policy("page.js")
    assert f'content="{policy}"' in page
    assert policy.startswith("default-src 'none'")
    # Nothing to fetch: no src= or href= at all, no link or stylesheet element.
    assert re.search(r"\s(src|href)=", page) is None
    assert "<link" not in page and "@import" not in page


def test_one_table_row_per_sample_and_text_escaped_and_cut() -> None:
    page = page_of(run_doc("run-a"), CELLS, [])
    rows = rows_of(page)
    assert len(rows) == len(CELLS)
    # The answer's markup is data: no tag in the page, the text whole in the data.
    assert "<script>alert" not in page and "</script>alert" not in page
    assert page.count("</script>") == 2  # the data's end and the page script's end
    assert any("<script>alert(1)</script>" in str(row["model_response"]) for row in rows)
    assert any(str(row["model_response"]).endswith(f" … [+{2025 - TEXT_LIMIT:,}]") for row in rows)
    assert sum(row["outcome"] == "wrong" for row in rows) == 1
    assert sum(row["error_kind"] is not None for row in rows) == 1


def test_the_heatmap_has_a_square_per_point_margins_grey_failures_and_spread() -> None:
    page = page_of(run_doc("run-a"), CELLS, [])
    points = re.findall(r'<g class="point"><title>(.*?)</title><rect [^>]*fill="(#\w+)"', page)
    assert len(points) == 4  # 2 lengths x 2 depths
    titles = dict(points)
    # (1000, 0 %): one correct, one wrong sample: mean 5.5 on the harness's scale.
    # Its 95 % interval is Wilson's for 1 of 2 right: 9.45 to 90.5 %; within one point
    # there is nothing to cluster by, and the tooltip says so.
    assert (
        "1,000 tokens, depth 0 %: mean 5.5 ± 4.5 over 2 samples; 95 % interval 9.45-90.5 %, "
        "its samples taken as independent"
    ) in titles
    grey = [t for t, fill in points if fill == ERROR_COLOUR]
    assert grey == ["1,000 tokens, depth 50 %: failed, unscored or truncated"]
    margins = re.findall(r'<g class="margin"><title>(.*?)</title>', page)
    assert len(margins) == 2 + 2 + 1  # per depth, per length, overall
    assert "2,000 tokens, mean over depths: 10" in margins
    assert "depth 0 %, mean over lengths: 7.75" in margins


def test_the_figures_are_numbers_and_words_the_templates_draw() -> None:
    from niah.core.pages.heatmap import heatmap_figure
    from niah.core.results.curves import Curve, curve_figure
    from niah.core.results.summary import score_table

    hostile = "<b>label</b>"
    heatmap = heatmap_figure(score_table(CELLS), HARNESS_SCALE, label=hostile)
    depth_rows, mean_row = heatmap["lines"][:-1], heatmap["lines"][-1]
    assert [line["label"]["text"] for line in depth_rows] == ["0 %", "50 %"]
    assert mean_row["label"] == {"x": 62, "y": 107.0, "text": "mean", "bold": True, "marked": False}
    failed = depth_rows[1]["squares"][0]
    assert (failed["fill"], failed["value"], failed["text"]) == (ERROR_COLOUR, "", "–")
    assert heatmap["width"] >= 640 and heatmap["label"] == hostile  # escaped by the template
    plot = curve_figure([Curve(hostile, {1000: 50.0, 2000: None}, {1000: [40.0, 60.0]})], label="l")
    # Two lengths (2000 has no mean), edge to edge: 1000 at the left edge, x = 52.
    [band] = plot["bands"]
    assert band["bar"] == {"x": "52.0", "y1": "159.2", "y2": "110.8"} and not band["points"]
    [run] = plot["runs"]
    assert run["points"] == "52.0,135.0" and run["dots"][0]["value"] == "50"
    assert "<svg" not in str(heatmap) + str(plot)


def test_the_run_header_measures_and_failures_are_on_the_page() -> None:
    page = page_of(run_doc("run-a"), CELLS, [])
    for text in (
        "gemini-2.5-flash",
        "2026-11-26 09:30:00 UTC",
        "<dt>thinking</dt><dd>0</dd>",
        "<dt>seed</dt><dd>7</dd>",
        "<dt>output budget (tokens)</dt><dd>256</dd>",
        "effective length (tokens)",
        "area under the curve (%)",
        "<b>1 ×</b> failed (cell): 400 INVALID_ARGUMENT: too long",
        "L00001000-D050000",
        "$0.0040",
    ):
        assert text in page, text


def test_an_unknown_price_reads_unknown_not_zero() -> None:
    run = run_doc("run-a") | {"totals": {"unpriced_cells": 4}}
    page = page_of(run, CELLS, [])
    assert "<dd>unknown (4 cells without a price)</dd>" in page
    assert "<dt>cached share</dt><dd>unknown</dd>" in page


def test_scales_end_in_the_harness_colours() -> None:
    assert HARNESS_SCALE.colour(1) == HARNESS_COLOURS[0]
    assert HARNESS_SCALE.colour(5.5) == HARNESS_COLOURS[1]
    assert HARNESS_SCALE.colour(10) == HARNESS_COLOURS[2]
    assert PERCENT_SCALE.colour(150) == HARNESS_COLOURS[2]  # clipped
    assert DIFFERENCE_SCALE.colour(0) == "#FFFFFF"


def test_the_csv_has_one_row_per_sample_and_no_formula_from_an_answer() -> None:
    hostile = cell(4000, 0.0, False, model_response='=HYPERLINK("http://x")')
    text = rows_csv([*CELLS, hostile])
    rows = list(csv.DictReader(io.StringIO(text)))
    assert tuple(rows[0]) == COLUMN_NAMES
    assert len(rows) == len(CELLS) + 1
    by_id = {row["cell_id"]: row for row in rows}
    assert by_id["L00004000-D000000"]["model_response"] == '\'=HYPERLINK("http://x")'
    assert by_id["L00001000-D050000"]["error"] == "400 INVALID_ARGUMENT: too long"
    assert by_id["L00001000-D050000"]["score"] == ""  # unknown, not 0
    assert by_id["L00002000-D000000"]["prompt_tokens"] == "2000"


def test_jsonl_keeps_every_field_one_sample_per_line() -> None:
    lines = cells_jsonl(CELLS).splitlines()
    assert [json.loads(line) for line in lines] == sorted(CELLS, key=lambda c: c["cell_id"])


def test_comparing_two_runs_gives_the_exact_difference_and_the_disagreements() -> None:
    a = [cell(1000, 0.0, True), cell(1000, 50.0, True), cell(2000, 0.0, False)]
    b = [cell(1000, 0.0, False), cell(1000, 50.0, True), cell(2000, 0.0, True)]
    b.append(cell(8000, 0.0, True))  # outside the shared grid
    comparison = compare_runs(
        run_records([(run_doc("run-a"), a), (run_doc("run-b", "gemini-2.5-pro"), b)])
    )
    assert comparison.difference.lengths == [1000, 2000]
    assert comparison.difference.scores == [[-100.0, 100.0], [0.0, None]]
    assert [d["cell_id"] for d in comparison.disagreements] == [
        "L00001000-D000000",
        "L00002000-D000000",
    ]
    assert comparison.dropped_points == {"run-b": 1}
    page = render_comparison_page(comparison)
    assert page.count('class="heatmap"') == 3  # two runs and their difference
    assert "Where they disagree (2)" in page and "gemini-2.5-pro" in page


def test_runs_on_grids_that_share_no_point_are_refused_naming_both_grids() -> None:
    a = [cell(1000, 0.0, True)]
    b = [cell(2000, 50.0, True)]
    with pytest.raises(ComparisonError) as refused:
        compare_runs(run_records([(run_doc("run-a"), a), (run_doc("run-b"), b)]))
    message = str(refused.value)
    assert "share no (context length, depth) grid point" in message
    assert "run-a: lengths 1,000; depths 0" in message
    assert "run-b: lengths 2,000; depths 50" in message


def test_the_report_function_writes_the_html_beside_the_heatmap_with_links() -> None:
    store, blobs = MemoryStore(), MemoryBlobs()
    store.create_run("run-a", run_doc("run-a") | {"total": len(CELLS), "status": "running"})
    for stored in CELLS:
        store.record_cell("run-a", stored["cell_id"], stored, failed="error" in stored, shards=1)
    location = render_report("run-a", store=store, blobs=blobs)
    assert location is not None
    assert location["html_uri"] == "gs://test-bucket/reports/run-a/report.html"
    assert location["html_url"] == "memory://test-bucket/reports/run-a/report.html"
    page = blobs.objects["reports/run-a/report.html"].decode()
    assert len(rows_of(page)) == len(CELLS)
    run = store.runs["run-a"]
    assert run["report"] == location and isinstance(run["completed_at"], dt.datetime)
    assert "<dt>status</dt><dd>complete</dd>" in page  # drawn once every cell is in
    assert f"<dt>completed</dt><dd>{run['completed_at']:%Y-%m-%d %H:%M:%S} UTC</dd>" in page


def test_hostile_names_and_answers_are_text_on_both_pages() -> None:
    hostile = '<img src=x onerror="alert(1)">'
    run = run_doc(f"run-{hostile}", model=hostile)
    cells = [cell(1000, 0.0, True, model_response=hostile, needle=hostile)]
    pages = [
        page_of(run, cells, []),
        render_comparison_page(
            compare_runs(run_records([(run, cells), (run_doc("run-b"), cells)]))
        ),
    ]
    for page in pages:
        assert "<img" not in page and "&lt;img src=x onerror=&#34;alert(1)&#34;&gt;" in page


def test_only_the_pages_own_script_may_run() -> None:
    import base64
    import hashlib

    page = page_of(run_doc("run-a"), CELLS, [])
    [script] = re.findall(r"<script>(.*?)</script>", page, flags=re.S)
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    policy = content_security_policy("page.js")
    assert f"script-src 'sha256-{digest}'" in policy
    assert "unsafe-inline'; img-src" not in policy
    assert "script-src 'unsafe-inline'" not in policy


def test_mrcr_is_drawn_as_its_bins_curve_and_other_tasks_as_heatmap_and_curve() -> None:
    lengths = [3000, 5000, 6000, 7000, 12000]
    oks = [True, True, False, True, True]
    cells = [cell(n, 0.0, ok, score=float(ok)) for n, ok in zip(lengths, oks, strict=True)]
    page = page_of(run_doc("run-m", task="mrcr"), cells, [])
    # No one-row heatmap at "0 %": MRCR v2's bins, each a point with its interval.
    assert 'class="heatmap"' not in page and 'id="section-mrcr-v2-bins"' in page
    dots = re.findall(r'<circle [^>]*data-value="([^"]+)"><title>([^<]*)</title>', page)
    assert [(value, title.split(": ")[0]) for value, title in dots] == [
        ("100", "gemini-2.5-flash · mrcr, 4,096 tokens"),
        ("66.6667", "gemini-2.5-flash · mrcr, 8,192 tokens"),
        ("100", "gemini-2.5-flash · mrcr, 16,384 tokens"),
    ]
    assert page.count('<polyline class="curve"') == 1 and page.count('<g class="band">') == 1
    assert "retrieved (exact)" not in page and "mean score (1-10)" not in page
    single = page_of(run_doc("run-s"), CELLS, [])
    assert "mean score (1-10)" in single
    assert 'class="heatmap"' in single and 'id="section-score-against-length"' in single
    assert single.count('<polyline class="curve"') == 1


def test_unpaired_samples_are_counted_and_said() -> None:
    a = [cell(1000, 0.0, True), cell(1000, 0.0, True, sample=1)]
    b = [cell(1000, 0.0, False)]
    comparison = compare_runs(run_records([(run_doc("run-a"), a), (run_doc("run-b"), b)]))
    assert comparison.unpaired_samples == 1
    # Both runs are "gemini-2.5-flash · single": their run IDs tell them apart.
    names = "gemini-2.5-flash · single (run-a) and gemini-2.5-flash · single (run-b)"
    assert f"1 samples of {names} have no partner" in render_comparison_page(comparison)


def test_comparison_gradients_have_ids_of_their_own() -> None:
    a = [cell(1000, 0.0, True)]
    comparison = compare_runs(run_records([(run_doc("run-a"), a), (run_doc("run-b"), a)]))
    ids = re.findall(r'id="([^"]+)"', render_comparison_page(comparison))
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("start", ["=", "+", "-", "@", "\t", "\r"])
@pytest.mark.parametrize("column", ["needle", "question", "expected_answer", "model_response"])
def test_no_text_column_can_start_a_formula_and_numbers_stay_numbers(
    start: str, column: str
) -> None:
    extra: dict[str, Any] = {column: f"{start}1+1", "cost_usd": -0.5}
    hostile = cell(4000, 0.0, False, **extra)
    [row] = list(csv.DictReader(io.StringIO(rows_csv([hostile]), newline="")))
    assert row[column] == f"'{start}1+1"
    assert (row["context_length"], row["cost_usd"]) == ("4000", "-0.5")  # never prefixed


def test_an_error_message_cannot_start_a_formula_either() -> None:
    failed = cell(4000, 0.0, None, error={"kind": "cell", "message": "@SUM(A1)"})
    [row] = list(csv.DictReader(io.StringIO(rows_csv([failed]), newline="")))
    assert row["error"] == "'@SUM(A1)"


def test_a_truncated_sample_is_its_own_outcome_on_the_page_never_wrong() -> None:
    truncated = cell(
        2000,
        50.0,
        False,
        outcome="truncated",
        score=None,
        task_score=None,
        finish_reason="MAX_TOKENS",
        model_response="The special magic Oslo number is: 12",
        unscored_reason="cut off at the output budget of 300 tokens (MAX_TOKENS)",
    )
    del truncated["exact_score"]  # the worker scores nothing of a truncated answer
    cells = [cell(1000, 0.0, True), truncated]
    run = run_doc("run-cut")
    summary = summarize(RunRecord.from_document(run), cells, [])
    assert summary["outcomes"] == {"correct": 1, "wrong": 0, "unscored": 0, "truncated": 1}
    page = render_run_page(RunRecord.from_document(run), cells, summary)
    assert "1 correct, 0 wrong, 0 unscored, 1 truncated" in page
    assert [row["outcome"] for row in rows_of(page)].count("truncated") == 1
    assert "<option>truncated</option>" in page
    assert "truncated: cut off at the output budget of 300 tokens" in page  # failures list
    run["call_settings"] |= {"max_output_tokens": 300, "answer_tokens": 117, "thinking_tokens": 183}
    page = render_run_page(RunRecord.from_document(run), cells, summary)
    assert "300 (answer 117 + thinking 183)" in page


def test_a_10000_sample_page_of_long_answers_stays_under_5_mb() -> None:
    """Each text keeps 600 characters on small pages, its share of 2.4 MB on large ones."""
    from niah.core.pages.report_samples import text_limit

    assert (text_limit(1), text_limit(1_000), text_limit(5_000), text_limit(10_000)) == (
        TEXT_LIMIT,
        TEXT_LIMIT,
        160,
        80,
    )
    long = "The answer goes on and on. " * 100
    cells = [
        cell(1000 + 100 * (n % 10), float(10 * ((n // 10) % 10)), True, sample=n // 100)
        | {"model_response": long, "needle": long, "question": long}
        for n in range(10_000)
    ]
    page = page_of(run_doc("run-long"), cells, [])
    assert len(page.encode()) < 5_000_000
    row = rows_of(page)[0]
    assert row["model_response"] == long[:80] + " … [+2,620]"


def test_the_measures_show_each_mean_with_its_interval_and_an_undetermined_length() -> None:
    """Issue 22: a mean and an effective length say how sure they are."""
    from niah.core.pages.report_page import with_interval
    from niah.core.results.effective import effective_length_text

    page = page_of(run_doc("run-a"), CELLS, [])
    # 3 of 4 right, two of them at one grid point (issue 54): clustered over 3 points, on
    # 2 degrees of freedom, not Wilson's 30.1-95.4 % of 4 independent samples.
    assert (
        "<dt>mean (%)</dt><dd>75 (95 %, clustered by grid point, 3 points: 10.1-98.8)</dd>"
    ) in page
    # Per length: 1 of 2 at one point, and 2 of 2 at two points.
    assert (
        "1,000: 50 (95 %, 2 samples of one grid point, taken as independent: 9.45-90.5) · "
        "2,000: 100 (95 %, one sample per grid point: 34.2-100)"
    ) in page
    assert "<dt>intervals</dt><dd>clustered by grid point (length, depth and axis value)" in page
    assert "<dd>not determined: 2,000 tokens by the means" in page
    assert with_interval(66.67, [52.1, 79.0], basis=None) == (
        "66.7 (95 %, samples taken as independent: 52.1-79)"
    )
    assert with_interval(None, None, basis=None) == "not determined (nothing scored)"
    straddling = {"length": 4000, "interval": {"low": None, "high": 8000}, "determined": False}
    assert effective_length_text(straddling) == (
        "not determined: 4,000 tokens by the means, but the 95 % intervals allow none to "
        "8,000 (more samples per point narrow them)"
    )
    sure = {"length": 4000, "interval": {"low": 4000, "high": 4000}, "determined": True}
    assert effective_length_text(sure) == "4,000 tokens, 95 % confident"
    ruled = sure | {"threshold": 85.6, "rule": "ruler: 85.6"}
    assert (
        effective_length_text(ruled)
        == "4,000 tokens, 95 % confident (threshold 85.6 %, ruler: 85.6)"
    )


def test_the_report_template_escapes_every_text_a_user_or_model_wrote() -> None:
    hostile = "<img src=x onerror=alert(1)>"
    run = run_doc("run-x") | {"label": hostile, "haystack_uri": hostile}
    cells = [cell(1000, 0.0, None, error={"kind": "cell", "message": hostile})]
    page = page_of(run, cells, [])
    assert hostile not in page
    assert page.count("&lt;img src=x onerror=alert(1)&gt;") >= 3  # title, h1, settings, failure
    assert "<h1>&lt;img src=x onerror=alert(1)&gt;</h1>" in page


def test_the_comparison_template_escapes_labels_and_keeps_every_section() -> None:
    hostile = "<b onmouseover=alert(1)>x</b>"
    a = [cell(1000, 0.0, True), cell(2000, 0.0, True)]
    b = [cell(1000, 0.0, False), cell(2000, 0.0, True)]
    comparison = compare_runs(
        run_records([(run_doc("run-a") | {"label": hostile}, a), (run_doc("run-b"), b)])
    )
    page = render_comparison_page(comparison)
    assert hostile not in page and "&lt;b onmouseover=alert(1)&gt;x&lt;/b&gt;" in page
    sections = re.findall(r'<section id="(section-[\w-]+)"', page)
    assert sections == [
        "section-runs",
        "section-significance",
        "section-curves",
        "section-heatmaps",
        "section-difference",
        "section-disagreements",
    ]
    assert page.count('<svg class="heatmap"') == 3 and page.count('<svg class="curves"') == 1


def test_the_csv_names_the_model_that_answered_as_the_jsonl_does() -> None:
    """Issue 52: the JSONL kept modelVersion, the CSV dropped it."""
    served = cell(1000, 0.0, True) | {"model_version": "gemini-3.8-flash-001"}
    (row,) = csv.DictReader(io.StringIO(rows_csv([served])))
    assert row["model_version"] == "gemini-3.8-flash-001"
    assert json.loads(cells_jsonl([served]))["model_version"] == row["model_version"]
