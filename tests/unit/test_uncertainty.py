"""Every mean's 95 % interval, pinned against published and hand-computed values (issue 22)."""

from __future__ import annotations

import math

import pytest

from niah.core.results.effective import effective_length
from niah.core.results.measures import measures
from niah.core.results.summary import score_table
from niah.core.results.uncertainty import Interval, interval
from tests.unit.test_report import sample_cell

# Newcombe (1998), "Two-sided confidence intervals for the single proportion: comparison
# of seven methods", Statistics in Medicine 17:857-872, Table I, method 3 (Wilson score,
# no continuity correction): (successes, trials) -> (lower, upper), to 4 decimals.
NEWCOMBE = {
    (81, 263): (0.2553, 0.3662),
    (15, 148): (0.0624, 0.1605),
    (0, 20): (0.0000, 0.1611),
    (1, 29): (0.0061, 0.1718),
}


@pytest.mark.parametrize(("counts", "published"), NEWCOMBE.items())
def test_wilson_reproduces_newcombe_s_published_intervals(
    counts: tuple[int, int], published: tuple[float, float]
) -> None:
    found, trials = counts
    result = interval([1.0] * found + [0.0] * (trials - found))
    assert result is not None and result.method == "wilson"
    assert (round(result.low / 100, 4), round(result.high / 100, 4)) == published


def wilson_by_hand(found: int, trials: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """Wilson (1927): (p + z²/2n ± z √(p(1-p)/n + z²/4n²)) / (1 + z²/n)."""
    p = found / trials
    centre = p + z * z / (2 * trials)
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials))
    scale = 1 + z * z / trials
    return (centre - half) / scale, (centre + half) / scale


@pytest.mark.parametrize(("found", "trials"), [(1, 1), (0, 1), (3, 4), (7, 10), (4, 5), (9, 9)])
def test_wilson_equals_the_formula_worked_by_hand(found: int, trials: int) -> None:
    result = interval([1.0] * found + [0.0] * (trials - found))
    low, high = wilson_by_hand(found, trials)
    assert result is not None
    assert result.low == pytest.approx(100 * low, abs=1e-9)
    assert result.high == pytest.approx(100 * high, abs=1e-9)


def test_graded_scores_get_a_bootstrap_interval_the_same_every_time() -> None:
    shares = [0.0, 1 / 3, 2 / 3, 1.0, 1.0, 1.0]
    first, second = interval(shares), interval(shares)
    assert first == second and first is not None and first.method == "bootstrap"
    mean = 100 * sum(shares) / len(shares)
    assert first.low < mean < first.high
    assert first.low >= 0 and first.high <= 100
    assert interval([0.5]) is None  # one graded sample: nothing to resample
    assert interval([0.5, 0.5]) == Interval(50.0, 50.0, "bootstrap", 2, 2)
    assert interval([]) is None


def test_the_effective_length_is_not_determined_when_an_interval_straddles_the_threshold() -> None:
    """4 of 4 right is Wilson 51.0-100 %: it cannot say the model is above 85.6."""
    by_length = {4000: 100.0, 8000: 75.0, 16000: 25.0}
    few = {
        n: interval([1.0] * round(v / 25) + [0.0] * (4 - round(v / 25)))
        for n, v in by_length.items()
    }
    result = effective_length(by_length, few, rule="ruler")
    assert result["length"] == 4000
    assert result["interval"] == {"low": None, "high": 8000} and result["determined"] is False
    # 60 of 60 right at 4,000 and 0 of 60 beyond: determined.
    many = {
        4000: interval([1.0] * 60),
        8000: interval([0.0] * 60),
        16000: interval([0.0] * 60),
    }
    clear = effective_length({4000: 100.0, 8000: 0.0, 16000: 0.0}, many, rule="ruler")
    assert clear["interval"] == {"low": 4000, "high": 4000} and clear["determined"] is True


def test_measures_carry_every_mean_s_interval() -> None:
    cells = [
        sample_cell(length, depth, score)
        for length, scores in {1000: [1.0, 1.0, 0.0], 2000: [1.0, 0.0, 0.0]}.items()
        for depth, score in zip((0, 50, 100), scores, strict=True)
    ]
    result = measures(cells, rule="ruler")
    assert result["mean"] == 50.0
    assert result["mean_interval"] == [round(100 * b, 2) for b in wilson_by_hand(3, 6)]
    assert result["by_length_interval"]["1000"] == [round(100 * b, 2) for b in wilson_by_hand(2, 3)]
    assert set(result["by_depth_interval"]) == {"0", "50", "100"}
    assert result["confidence"] == 0.95 and result["interval_methods"] == ["wilson"]
    table = score_table(cells)
    assert table.intervals is not None
    assert table.intervals[0][0] == [round(100 * b, 2) for b in wilson_by_hand(1, 1)]


def test_a_mean_with_its_interval_reads_the_same_on_the_page_and_in_the_terminal() -> None:
    from niah.core.results.uncertainty import with_interval

    clustered = {"method": "clustered", "samples": 60, "clusters": 15}
    assert (
        with_interval(66.66667, [52.1234, 79.0], basis=clustered)
        == "66.7 (95 %, clustered by grid point, 15 points: 52.1-79)"
    )
    one_each = {"method": "wilson", "samples": 15, "clusters": 15}
    assert (
        with_interval(66.66667, [52.1234, 79.0], unit=" %", basis=one_each)
        == "66.7 % (95 %, one sample per grid point: 52.1-79 %)"
    )
    one_point = {"method": "wilson", "samples": 4, "clusters": 1}
    assert with_interval(50, [15, 85], basis=one_point) == (
        "50 (95 %, 4 samples of one grid point, taken as independent: 15-85)"
    )
    # Stored before intervals said what they assume: they took every sample as independent.
    assert with_interval(66.66667, [52.1234, 79.0], basis=None) == (
        "66.7 (95 %, samples taken as independent: 52.1-79)"
    )
    assert with_interval(1234.5, None, basis=None) == "1,234"  # thousands written out
    assert with_interval(None, [1.0, 2.0], basis=None) == "not determined (nothing scored)"


Z95 = 1.959964  # the two-sided 95 % normal quantile, to 6 decimals


@pytest.mark.parametrize(
    ("margin", "score", "by_hand"),
    [
        # n = z² p (1 - p) / m², rounded up.
        (5, 50, 385),  # 3.841459 x 0.25 / 0.0025 = 384.15
        (5, 90, 139),  # 3.841459 x 0.09 / 0.0025 = 138.29
        (10, 50, 97),  # 96.04
        (3, 50, 1068),  # 1067.07
        (20, 95, 5),  # 4.56
    ],
)
def test_samples_for_a_margin_follow_the_normal_formula_worked_by_hand(
    margin: float, score: float, by_hand: int
) -> None:
    from niah.core.results.uncertainty import margin_for_samples, samples_for_margin, z_value

    assert z_value() == pytest.approx(Z95, abs=1e-6)
    p, m = score / 100, margin / 100
    assert math.ceil(Z95**2 * p * (1 - p) / m**2) == by_hand
    assert samples_for_margin(margin, score) == by_hand
    # The inverse: that many samples give a margin of at most ``margin``, one fewer more.
    assert margin_for_samples(by_hand, score) <= margin < margin_for_samples(by_hand - 1, score)
