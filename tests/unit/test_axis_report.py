"""A run with an axis (distractors 0, 1, 4) in its report, its picture, compare and cost.

Three heatmaps on one scale and three curves; a row per value with its mean per length
(Context Rot's table); compare pairs each value's samples with the first value's, the
disagreements listed; the admission counts every value against the cell cap, and the
estimate credits no cache to cells of another haystack order than the primer's.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import pytest

from niah.core.pages.report_page import render_run_page
from niah.core.request.spec import RunRequest
from niah.core.results.comparison import compare_runs, render_comparison_page
from niah.core.results.summary import summarize
from niah.core.results.variants import split_by_variant
from niah.core.runs import RunRecord, run_label
from niah.errors import RequestError
from niah.memo import ProcessCache
from tests.unit.test_report_page import cell, run_doc


def axis_run() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A run of distractors 0, 1 and 4 at two lengths: 2, 1 and 0 right."""
    right = {0: 2, 1: 1, 4: 0}
    cells = []
    for count, correct in right.items():
        for i, length in enumerate((1000, 2000)):
            ok = i < correct
            hit = not ok and count > 0
            details = {"distractor_hit": hit, "distractor_kinds_returned": ["key"] if hit else []}
            cells.append(
                cell(length, 50.0, ok, variant=f"d{count}", task_details=details)
                | {"cell_id": f"L{length:08d}-D050000-Xd{count}"}
            )
    return run_doc("run-axis") | {"spec": {"task": "single", "distractors": [0, 1, 4]}}, cells


def test_compare_pairs_a_run_s_cells_across_its_axis() -> None:
    run, cells = axis_run()
    split = split_by_variant(RunRecord.from_document(run), cells)
    assert [r.run_id for r, _ in split] == ["run-axis/d0", "run-axis/d1", "run-axis/d4"]
    assert [c["cell_id"] for c in split[1][1]] == ["L00001000-D050000", "L00002000-D050000"]
    comparison = compare_runs(split)
    [one, four] = comparison.paired
    assert one.names() == ("gemini-2.5-flash · single · 0 distractors",
                           "gemini-2.5-flash · single · 1 distractor")  # fmt: skip
    assert (one.overall.pairs, one.overall.effect) == (2, -50.0)
    assert (four.overall.pairs, four.overall.effect) == (2, -100.0)
    # Paired by their place: none unpaired, the one disagreement (2,000 tokens) listed.
    assert comparison.unpaired_samples == 0
    assert [d["context_length"] for d in comparison.disagreements] == [2000]
    page = render_comparison_page(comparison)
    assert page.count('<svg class="heatmap"') >= 3


def test_an_axis_is_drawn_as_one_heatmap_and_one_curve_per_value() -> None:
    """Distractors [0, 1, 4]: three heatmaps on one scale, three small plots, a row each."""
    run, cells = axis_run()
    summary = summarize(RunRecord.from_document(run), cells)
    assert [v["variant"] for v in summary["variants"]] == ["d0", "d1", "d4"]
    assert [v["measures"]["mean"] for v in summary["variants"]] == [100.0, 50.0, 0.0]
    assert (summary["wrong_answers"], summary["distractor_answers"]) == (3, 3)
    page = render_run_page(RunRecord.from_document(run), cells, summary)
    heatmaps = page.split('id="section-heatmaps"', 1)[1].split("</section>", 1)[0]
    figures = re.findall(r'<figure data-variant="([^"]+)">', heatmaps)
    assert figures == ["0 distractors", "1 distractor", "4 distractors"]
    assert page.count('<svg class="heatmap"') == 3
    # One colour scale: the three legends have the same stops and the same ends.
    legends = re.findall(r"<linearGradient .*?</linearGradient>", page)
    assert len(legends) == 3
    assert len({re.sub(r'id="[^"]+"', "", legend) for legend in legends}) == 1
    # Small multiples: a plot per value, each with one band (its own); after the first,
    # the first value's line beside it for reference, without its band.
    plots = page.split('id="section-score-against-length"', 1)[1].split("</section>", 1)[0]
    assert re.findall(r'<figure data-variant="([^"]+)">', plots) == figures
    svgs = plots.split('<svg class="curves"')[1:]
    assert len(svgs) == 3
    assert [svg.count('<g class="band">') for svg in svgs] == [1, 1, 1]
    assert [svg.count('class="curve"') for svg in svgs] == [1, 2, 2]
    assert "0 distractors (for reference)" in svgs[2] and "4 distractors" in svgs[2]
    # The values' table: a column per length, as Context Rot's.
    table = page.split("<h3>By value of the axis</h3>", 1)[1].split("</table>", 1)[0]
    headers = re.findall(r"<th>([^<]*)</th>", table)
    assert headers[:5] == ["variant", "samples", "1,000", "2,000", "mean (%)"]
    rows = [re.findall(r"<td>([^<]*)</td>", row) for row in table.split("<tr>")[2:]]
    assert [row[:4] for row in rows] == [
        ["0 distractors", "2", "100.0", "100.0"],
        ["1 distractor", "2", "100.0", "0.0"],
        ["4 distractors", "2", "0.0", "0.0"],
    ]
    assert [row[-2:] for row in rows] == [
        ["0", "0"],
        ["1", "1 (another key 1, a near miss 0)"],
        ["2", "2 (another key 2, a near miss 0)"],
    ]
    assert "3 of 3 (another key 3, a near miss 0)" in page
    assert summary["distractor_answers_by_kind"] == {"key": 3, "wording": 0}


def test_a_run_s_name_says_its_axes() -> None:
    run = {"model": "m", "spec": {"task": "single", "distractors": [0, 1, 4]}}
    assert run_label(run) == "m · single · distractors 0/1/4"
    one = {"model": "m", "spec": {"task": "nonliteral", "distractors": [4],
                                  "haystack_order": ["shuffled"]}}  # fmt: skip
    assert run_label(one) == "m · nonliteral · 4 distractors · shuffled"
    assert run_label({"model": "m", "spec": {"task": "single"}}) == "m · single"


def test_every_value_of_an_axis_counts_against_the_cell_cap() -> None:
    from niah.service.runs.admission_checks import check_budget

    spec = RunRequest(
        context_lengths_min=1000, context_lengths_max=2000, context_lengths_num_intervals=15,
        document_depth_percent_intervals=15, distractors=[0, 1, 4],
    )  # fmt: skip
    assert len(spec.cells()) == 675
    with pytest.raises(RequestError) as refused:
        check_budget(spec)
    assert refused.value.field == "context_lengths"
    assert "675 cells (15 lengths x 15 depths x 3 variants)" in refused.value.message


def test_the_estimate_credits_no_cache_across_haystack_orders() -> None:
    from niah.core.money.estimate import estimate_run
    from niah.core.prompts.texts import LOCAL_TEMPLATE
    from niah.tasks import make_sample

    spec = RunRequest(
        model_name="gemini-3.8-flash", context_lengths=[8000, 16000],
        document_depth_percents=[50, 100], haystack_order=["coherent", "shuffled"],
    )  # fmt: skip
    cells = spec.cells()
    run = estimate_run(
        spec, cells, [make_sample(spec, c) for c in cells], default_template=LOCAL_TEMPLATE
    )
    assert run.primer_cell_id == "L00016000-D100000-Xcoherent"
    cached = {e.cell.cell_id: e.cached_tokens for e in run.cells}
    assert all(n == 0 for cell_id, n in cached.items() if cell_id.endswith("shuffled"))
    assert any(n > 0 for cell_id, n in cached.items() if cell_id.endswith("coherent"))


def test_a_bounded_process_cache_forgets_the_oldest() -> None:
    cache: ProcessCache[int, str] = ProcessCache(max_entries=2)
    for key in (1, 2, 3):
        cache.get_or_make(key, functools.partial(str, key))
    assert (cache.known(1), cache.known(2), cache.known(3)) == (None, "2", "3")


def test_an_axis_run_leads_with_each_value_and_its_paired_difference_never_a_pooled_one() -> None:
    """The headline is a row per value (mean, effective length) and its difference.

    Before: "mean over every value of the axis" 50 %, and one effective length pooled
    over 0, 1 and 4 distractors.
    """
    run, cells = axis_run()
    summary = summarize(RunRecord.from_document(run), cells)
    # No pooled length anywhere: the effective length is each value's.
    effective = summary["measures"]["effective_length"]
    assert effective["length"] is None and summary["measures"]["pooled_over_variants"]
    assert [one["label"] for one in effective["by_variant"]] == [
        "0 distractors", "1 distractor", "4 distractors",
    ]  # fmt: skip
    assert effective["text"].startswith("per value of the axis: 0 distractors ")
    # Each later value against the first, paired by length, depth and sample.
    one, four = summary["variant_differences"]
    assert (one["second"], one["overall"]["pairs"], one["overall"]["effect"]) == ("d1", 2, -50.0)
    assert (four["second"], four["overall"]["effect"]) == ("d4", -100.0)
    # 2 of 2 lost: exact McNemar's p = 0.5, and the interval holds 0 with it (Newcombe's
    # alone read -100 to -7, beside "no significant difference").
    low, high = four["overall"]["interval"]
    assert low < 0 < high and four["overall"]["verdict"] == "no significant difference"
    page = render_run_page(RunRecord.from_document(run), cells, summary)
    header = page.split("</header>", 1)[0]
    assert 'data-fact="mean (%)"' not in header and 'data-fact="effective length"' not in header
    assert "every value of the axis (%)" not in page
    assert "<dt>mean (%)</dt>" not in page and "<dt>effective length (tokens)</dt>" not in page
    table = header.split('id="headline-values"', 1)[1]
    rows = [re.findall(r"<td>([^<]*)</td>", row) for row in table.split("<tr>")[2:]]
    assert [row[:3] for row in rows] == [
        ["0 distractors", "2", "100 (95 %, one sample per grid point: 34.2-100)"],
        ["1 distractor", "2", "50 (95 %, one sample per grid point: 9.45-90.5)"],
        ["4 distractors", "2", "0 (95 %, one sample per grid point: 0-65.8)"],
    ]
    assert [row[3] for row in rows] == [
        "not determined (none to 2,000)",
        "not determined (none to 1,000)",
        "none",
    ]
    assert rows[0][4] == "the baseline"
    assert rows[2][4].startswith("-100 points (95 %: -100 to ") and "2 pairs" in rows[2][4]
    assert "rule ruler: fixed, as in RULER" in table
