"""Paired comparison of two runs, pinned against hand-computed and published values (issue 22)."""

from __future__ import annotations

import json
import math
import random
import re
from pathlib import Path
from typing import Any

import pytest

from niah.core.results.comparison import compare_runs, render_comparison_page
from niah.core.results.paired import (
    NO_DIFFERENCE,
    mcnemar_exact_p,
    newcombe_paired_interval,
    paired_comparison,
    paired_test,
)
from niah.core.results.paired_text import comparison_lines, effect_text
from tests.fakes import run_records
from tests.unit.test_report import sample_cell
from tests.unit.test_report_page import cell, run_doc

Z = 1.959963984540054


@pytest.mark.parametrize(
    ("b", "c", "by_hand"),
    [
        # Two-sided exact binomial at 1/2: 2 x P(X <= min(b, c)) of Binomial(b + c, 1/2).
        (1, 9, 2 * (1 + 10) / 2**10),  # 0.0215: significant
        (0, 6, 2 / 2**6),  # 0.03125: six flips one way are enough
        (0, 5, 2 / 2**5),  # 0.0625: five are not
        (3, 3, 1.0),  # as many each way: min(1, 2 x P(X <= 3)) = 1
        (2, 5, 2 * (1 + 7 + 21) / 2**7),  # 0.453
        (0, 0, 1.0),  # no discordant pair
    ],
)
def test_mcnemar_is_the_exact_binomial_of_the_discordant_pairs(
    b: int, c: int, by_hand: float
) -> None:
    assert mcnemar_exact_p(b, c) == pytest.approx(by_hand, rel=1e-12)


def test_newcombe_reproduces_the_published_paired_interval() -> None:
    # Fagerland, Lydersen and Laake, "Statistical Analysis of Contingency Tables" (2017),
    # chapter 8, Cavo et al. (2012): the paired table [[59, 6], [16, 80]] (rows: the
    # one whose proportion comes first). Newcombe's square-and-add interval: estimate
    # -0.0621, 95 % CI -0.1186 to -0.0046 (R package contingencytables, tests/ch8).
    low, high = newcombe_paired_interval(59, 6, 16, 80)
    assert (round(low, 4), round(high, 4)) == (-0.1186, -0.0046)


def test_when_every_pair_agrees_the_interval_is_wilsons_lower_gap_both_ways() -> None:
    # 8 of 8 right in both runs: phi is 0 (a margin is empty), each side's gap is
    # 1 minus Wilson's lower bound of 8/8, which is n / (n + z²).
    gap = 1 - 8 / (8 + Z * Z)
    low, high = newcombe_paired_interval(8, 0, 0, 0)
    assert (low, high) == (pytest.approx(-gap), pytest.approx(gap))
    assert round(100 * gap, 1) == 32.4


def test_graded_pairs_get_an_exact_sign_flip_p_and_a_bootstrap_interval() -> None:
    # Five pairs each 50 points up: of the 2^5 sign flips only all-up and all-down reach
    # |mean| 50, so p = 2/32. Five pairs can refuse no difference at all (the best p is
    # 1/16), so the interval is the whole range; the bootstrap's alone read 50 to 50.
    five = paired_test([(0.5, 1.0)] * 5, binary=False)
    assert five.p_value == pytest.approx(2 / 32)
    assert (five.effect, five.low, five.high) == (50.0, -100.0, 100.0)
    assert five.verdict == NO_DIFFERENCE
    # Differences 0.3, 0 and 1/3: the zero's sign is free, the others must agree: 4 of 8.
    three = paired_test([(0.2, 0.5), (0.5, 0.5), (1 / 3, 2 / 3)], binary=False)
    assert three.p_value == pytest.approx(0.5)
    assert three.low is not None and three.high is not None
    assert three.low <= three.effect <= three.high
    assert paired_test([(0.2, 0.5)], binary=False).p_value == 1.0  # one pair: nothing to flip


def test_samples_pair_by_length_depth_and_sample_and_each_length_is_tested() -> None:
    # 1,000 tokens: the second run right where the first was wrong, 6 times (b=0, c=6),
    # two samples at each of 3 depths; 2,000 tokens: the same outcomes (b=c=0). A sample
    # only the first has, and one the second failed, are not pairs.
    first = [sample_cell(1000, d, 0.0, s) for d in (0, 50, 100) for s in (0, 1)]
    first += [sample_cell(2000, d, 1.0, 0) for d in (0, 50)]
    first += [sample_cell(2000, 100, 1.0, 0), sample_cell(2000, 100, 1.0, 5)]
    second = [sample_cell(1000, d, 1.0, s) for d in (0, 50, 100) for s in (0, 1)]
    second += [sample_cell(2000, d, 1.0, 0) for d in (0, 50)]
    second.append(sample_cell(2000, 100, None, 0))
    paired = paired_comparison(("run-a", first), ("run-b", second))
    assert paired.unscored_pairs == 1
    at_1000, at_2000 = paired.by_length[1000], paired.by_length[2000]
    assert (at_1000.pairs, at_1000.discordant, at_1000.effect) == (6, (0, 6), 100.0)
    # Issue 54: the 6 pairs fall in 3 grid points, whose pairs share a haystack and a
    # needle's place: 3 pieces of evidence, not 6. Swapping whole points, only all three
    # one way or all the other reach +100: p = 2/2^3 (McNemar on 6 pairs said 2/2^6).
    assert (at_1000.method, at_1000.clusters) == ("clustered", 3)
    assert at_1000.p_value == pytest.approx(2 / 2**3) and not at_1000.significant
    # One pair a point at 2,000: McNemar, as before.
    assert (at_2000.pairs, at_2000.discordant, at_2000.p_value) == (2, (0, 0), 1.0)
    assert at_2000.method == "mcnemar" and at_2000.verdict == NO_DIFFERENCE
    overall = paired.overall
    assert overall is not None and overall.pairs == 8 and overall.clusters == 5
    assert overall.effect == pytest.approx(75.0) and overall.method == "clustered"
    # Point sums 2, 2, 2, 0, 0: the zeros' signs are free, the twos must agree: 8 of 32.
    assert overall.p_value == pytest.approx(8 / 32)
    lines = comparison_lines(paired)
    assert lines[0].startswith("run-b minus run-a (paired permutation test over grid points")
    assert lines[2].startswith("  1,000 tokens: +100 points (95 %: ")
    assert lines[2].endswith(", p = 0.25, 6 pairs in 3 grid points: no significant difference")
    assert lines[3].endswith("p = 1, 2 pairs: no significant difference")
    assert "1 shared samples are scored in one run only" in lines[4]


def test_clustered_pairs_that_all_agree_count_each_grid_point_once() -> None:
    """40 pairs all right in both runs, in 10 points: each point counts once.

    No variance says how alike a point's pairs are, so the interval is Newcombe's at 10
    pairs (shrunk for 9 degrees of freedom), wider than at 40 independent ones.
    """
    pairs = [(1.0, 1.0)] * 40
    points = [(1000, float(d), "") for d in range(10) for _ in range(4)]
    clustered = paired_test(pairs, binary=True, clusters=points)
    independent = paired_test(pairs, binary=True)
    assert clustered.method == "clustered" and independent.method == "mcnemar"
    assert clustered.low is not None and independent.low is not None
    assert clustered.high is not None and independent.high is not None
    factor = (Z / 2.262157162740992) ** 2  # (z / t on 9 degrees of freedom)²
    low, _ = newcombe_paired_interval(40 * 10 * factor / 40, 0, 0, 0)
    assert clustered.low == pytest.approx(100 * low)
    assert clustered.low < independent.low < 0 < independent.high < clustered.high
    assert clustered.p_value == 1.0


def test_graded_clustered_pairs_get_a_t_interval_on_the_clustered_error() -> None:
    # Two points, their differences +0.5 and +0.5, then 0 and 0: point sums 1 and 0.
    pairs = [(0.5, 1.0), (0.5, 1.0), (0.5, 0.5), (0.5, 0.5)]
    points = ["a", "a", "b", "b"]
    test = paired_test(pairs, binary=False, clusters=points)
    # mean 0.25; residual sums per point +0.5 and -0.5: CR1 variance 2/1 x 0.5 / 16.
    half = 12.706204736174707 * math.sqrt(2 * 0.5 / 16)
    assert test.method == "clustered" and test.effect == pytest.approx(25.0)
    assert (test.low, test.high) == (pytest.approx(-100.0), pytest.approx(100.0))
    assert 25 + 100 * half > 100  # clipped to the differences' range
    assert test.p_value == pytest.approx(1.0)  # 2 points: flips reach |1| half the time x2


def test_an_effect_reads_with_its_interval_and_p() -> None:
    test = paired_test([(1.0, 0.0)] * 7 + [(1.0, 1.0)], binary=True)
    # b = 7, c = 0: p = 2/128. The interval is Newcombe's for 1/8 - 8/8 (its low end)
    # and exact McNemar's inverted: c/7 within Clopper-Pearson's [0, 0.410], times 7/8.
    low, _ = newcombe_paired_interval(1, 0, 7, 0)
    high = (2 * (1 - 0.025 ** (1 / 7)) - 1) * 7 / 8
    assert effect_text(test) == (
        f"-87.5 points (95 %: {100 * low:.1f} to {100 * high:.1f}), p = 0.016, 8 pairs: significant"
    )
    assert test.as_dict()["discordant"] == [7, 0] and test.as_dict()["p_value"] == 0.01562


def _graded(length: int, depth: float, score: float) -> dict[str, Any]:
    return cell(length, depth, True, task_score=score, outcome="correct")


def test_the_page_marks_significant_lengths_and_says_where_there_is_no_difference() -> None:
    depths = (0, 20, 40, 60, 80, 100)  # one sample a point: each pair independent
    a = [cell(n, d, False) for n in (1000, 2000) for d in depths]
    b = [cell(1000, d, True) for d in depths]
    b += [cell(2000, d, False) for d in depths]
    runs = [run_doc("run-a") | {"label": "Flash <old>"}, run_doc("run-b", "gemini-2.5-pro")]
    comparison = compare_runs(run_records([(runs[0], a), (runs[1], b)]))
    page = render_comparison_page(comparison)
    # Each run by its label (escaped); without one, "model · task".
    assert "<h3>gemini-2.5-pro · single minus Flash &lt;old&gt;</h3>" in page
    section = page.split('id="section-significance"')[1].split("</section>")[0]
    rows = re.findall(r"<tr><td>(.*?)</td>.*?<td>([^<]*)</td></tr>", section)
    # 12 pairs, b = 0, c = 6: p = 2/64 overall and at 1,000; 2,000 agrees everywhere.
    assert rows == [
        ("all lengths", "significant"),
        ("1,000", "significant"),
        ("2,000", NO_DIFFERENCE),
    ]
    difference = page.split('id="section-difference"')[1]
    labels = re.findall(r'middle">([\d,]+)( <tspan[^>]*>\*</tspan>)?</text>', difference)
    marks = [(label, bool(star)) for label, star in labels if "," in label]
    assert marks == [("1,000", True), ("2,000", False)]


def test_the_difference_map_carries_no_float_noise() -> None:
    # Graded scores that differ in their last bits give 0, not 5e-05.
    a = [_graded(1000, 0, 0.66667), _graded(1000, 50, 0.3)]
    b = [_graded(1000, 0, 2 / 3), _graded(1000, 50, 0.1 + 0.2)]
    comparison = compare_runs(run_records([(run_doc("run-a"), a), (run_doc("run-b"), b)]))
    assert comparison.difference.scores == [[0.0], [0.0]]
    assert all(
        v is not None and math.copysign(1, v) > 0
        for row in comparison.difference.scores
        for v in row
    )
    page = render_comparison_page(comparison)
    assert "e-0" not in page.split('id="section-difference"')[1]


def test_niah_compare_prints_the_tests_and_its_json_holds_them(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from niah.cli import compare
    from niah.cli.main import main
    from tests.fake_store import MemoryStore

    store = MemoryStore()
    depths = (0, 20, 40, 60, 80, 100)  # one sample a point: McNemar on 6 independent pairs
    first = [cell(500, d, True) for d in depths]
    second = [cell(500, d, False) for d in depths]
    for run_id, cells in (("run-a", first), ("run-b", second)):
        store.runs[run_id] = run_doc(run_id) | {"label": f"model {run_id[-1].upper()}"}
        store.cells[run_id] = {c["cell_id"]: c for c in cells}
    monkeypatch.setattr(compare, "result_store", lambda: store)
    out = tmp_path / "c.html"
    main(["compare", "run-a", "run-b", "--out", str(out)])
    printed = capsys.readouterr().out.splitlines()
    assert "6 samples disagree between run-a and run-b" in printed
    assert any(line.startswith("model B minus model A (exact McNemar") for line in printed)
    assert "  overall: -100 points (95 %: " in "\n".join(printed)
    assert printed[-1].endswith("p = 0.031, 6 pairs: significant")
    main(["compare", "run-a", "run-b", "--out", str(out), "--json"])
    document = json.loads(capsys.readouterr().out)
    [paired] = document["paired"]
    assert (paired["first"], paired["second"]) == ("run-a", "run-b")
    assert (paired["first_label"], paired["second_label"]) == ("model A", "model B")
    assert document["runs"][0] == {"run_id": "run-a", "label": "model A"}
    assert paired["overall"]["discordant"] == [6, 0]
    assert paired["by_length"]["500"]["verdict"] == "significant"
    assert document["difference"]["points"] == [[-100.0]] * 6
    assert len(document["disagreements"]) == 6 and document["html"] == str(out)


def test_the_page_overlays_one_curve_per_run_with_its_interval_band() -> None:
    lengths = (1000, 2000, 4000)
    a = [cell(n, d, n < 4000, s) for n in lengths for d in (0, 100) for s in (0, 1)]
    b = [cell(n, d, n < 2000, s) for n in lengths for d in (0, 100) for s in (0, 1)]
    c = [cell(n, d, True, s) for n in lengths for d in (0, 100) for s in (0, 1)]
    runs = [
        (run_doc(f"run-{x}") | {"label": f"run {x}"}, cs)
        for x, cs in zip("abc", (a, b, c), strict=True)
    ]
    page = render_comparison_page(compare_runs(run_records(runs)))
    [svg] = re.findall(r'<svg class="curves".*?</svg>', page, flags=re.S)
    assert re.findall(r'<polyline class="curve" data-run="([^"]+)"', svg) == [
        "run a",
        "run b",
        "run c",
    ]
    assert svg.count('<g class="band">') == 3 and "http" not in svg.replace(
        'xmlns="http://www.w3.org/2000/svg"', ""
    )
    # Run a: 100, 100, 0 % at its three lengths. 4 right of 4 would be Wilson's 51-100 %
    # if independent; they are 2 samples at each of 2 grid points, all alike, so each
    # point counts once, on 1 degree of freedom (issue 54): n = 2 (z / t)², 1.22-100 %.
    dots = re.findall(r'data-value="([^"]+)"><title>run a, ([\d,]+) tokens: ([^<]+)</title>', svg)
    assert dots == [
        ("100", "1,000", "100 % (95 %, clustered by grid point, 2 points: 1.22-100 %)"),
        ("100", "2,000", "100 % (95 %, clustered by grid point, 2 points: 1.22-100 %)"),
        ("0", "4,000", "0 % (95 %, clustered by grid point, 2 points: 0-98.8 %)"),
    ]


def _random_pairs(
    rng: random.Random, binary: bool
) -> tuple[list[tuple[float, float]], list[tuple[int, float, str]]]:
    """A small comparison: 2-12 points of 1-6 pairs, a random shift between the runs."""
    points, per_point = rng.randint(2, 12), rng.randint(1, 6)
    base, shift = rng.random(), rng.uniform(-0.5, 0.5)
    pairs, where = [], []
    for point in range(points):
        first_share = min(1.0, max(0.0, base + rng.uniform(-0.3, 0.3)))
        second_share = min(1.0, max(0.0, first_share + shift))
        for _ in range(per_point):
            if binary:
                pairs.append(
                    (float(rng.random() < first_share), float(rng.random() < second_share))
                )
            else:
                pairs.append(
                    (round(first_share * rng.random(), 2), round(second_share * rng.random(), 2))
                )
            where.append((1000, float(point), ""))
    return pairs, where


@pytest.mark.parametrize("binary", [True, False])
def test_the_interval_leaves_0_out_only_where_p_is_below_5_percent(binary: bool) -> None:
    """Never "significant" with an interval through 0, never an interval past 0 at p >= 5 %.

    1,200 small random comparisons (few pairs and few points, where the methods used to
    disagree), each tested with its pairs independent and clustered by point.
    """
    rng = random.Random(54)
    disagreements, tested, refused = [], 0, 0
    for _ in range(600):
        pairs, where = _random_pairs(rng, binary)
        for clusters in (None, where):
            test = paired_test(pairs, binary=binary, clusters=clusters)
            assert test.low is not None and test.high is not None
            leaves_0_out = not test.low <= 0 <= test.high
            tested += 1
            refused += test.significant
            if leaves_0_out != test.significant or (leaves_0_out and test.p_value >= 0.05):
                disagreements.append((pairs, clusters, test))
    assert disagreements == []
    assert tested == 1200 and refused > 100  # the cases include real differences


def test_the_two_reported_contradictions_now_read_no_difference() -> None:
    """2 pairs both lost (McNemar p = 0.5) and 5 points x 10 pairs all one way (p = 1/16)."""
    two = paired_test([(1.0, 0.0), (1.0, 0.0)], binary=True)
    assert two.p_value == 0.5 and two.verdict == NO_DIFFERENCE
    assert two.low is not None and two.high is not None and two.low <= 0 <= two.high
    pairs = [(1.0, 0.0)] * 50
    points = [(1000, float(depth), "") for depth in range(5) for _ in range(10)]
    five = paired_test(pairs, binary=True, clusters=points)
    assert five.p_value == pytest.approx(1 / 16) and five.verdict == NO_DIFFERENCE
    assert (five.low, five.high) == (-100.0, 100.0)
