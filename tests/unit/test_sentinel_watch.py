"""Issue 54: a sentinel's false alarms a year are stated and held, and a fall is seen.

Seeded simulations through the service's own step (``watch_step``), a thousand years or
runs at once. Each firing asks ``DEFAULT_SAMPLES`` samples, each right with the model's
share that day, independently: the worst case for the sentinel (the same prompts asked
again only make two runs more alike). Well under a second.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable

import numpy as np
import pytest

from niah.core.results.sentinel_watch import (
    BASELINE_RUNS,
    DEFAULT_REQUEST,
    DEFAULT_SAMPLES,
    WatchSettings,
    difference,
    fall_evidence,
    floor_share,
    watch_step,
)

DAILY = WatchSettings(false_alarms_per_year=1.0, firings_per_year=365, margin_points=10.0)


def simulate(
    share_on: Callable[[int], float], firings: int, runs: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Alarms per simulated run, and whether each firing raised one (runs x firings)."""
    rng = np.random.default_rng(seed)
    right = np.zeros(runs)
    samples = np.zeros(runs)
    count = np.zeros(runs, dtype=int)
    statistic = np.zeros(runs)
    alarms = np.zeros((runs, firings), dtype=bool)
    for firing in range(firings):
        scored = rng.binomial(DEFAULT_SAMPLES, share_on(firing), size=runs).astype(float)
        step = watch_step(
            (right, samples, count), statistic, (scored, DEFAULT_SAMPLES), settings=DAILY
        )
        alarms[:, firing] = step["alarm"]
        right, samples = step["baseline_right"], step["baseline_samples"]
        count, statistic = step["baseline_runs"], step["statistic"]
    return alarms.sum(axis=1), alarms


@pytest.mark.parametrize("share", [0.95, 0.5])
def test_an_unchanged_model_raises_at_most_the_stated_false_alarms_a_year(share: float) -> None:
    """1,000 years of daily firings: at most 1 false alarm a year on average (stated)."""
    per_year, _ = simulate(lambda _: share, 365, 1000, seed=54)
    assert per_year.mean() <= DAILY.false_alarms_per_year, per_year.mean()


def test_a_fall_from_95_to_85_percent_is_flagged_within_3_firings() -> None:
    def share(firing: int) -> float:
        return 0.95 if firing < BASELINE_RUNS else 0.85

    _, alarms = simulate(share, BASELINE_RUNS + 3, 1000, seed=55)
    seen = alarms[:, BASELINE_RUNS:].any(axis=1).mean()
    assert seen >= 0.90, seen


def test_a_drift_of_1_point_a_week_is_flagged_within_10_weeks() -> None:
    def share(firing: int) -> float:
        return 0.95 - max(0, firing - BASELINE_RUNS + 1) / 700

    _, alarms = simulate(share, BASELINE_RUNS + 70, 1000, seed=56)
    seen = alarms[:, BASELINE_RUNS:].any(axis=1).mean()
    assert seen >= 0.90, seen


def test_the_evidence_is_the_likelihood_ratio_worked_by_hand() -> None:
    # 100 of 100 right in the baseline: floor = n / (n + z²), z = 0.841621 (80 %).
    z2 = 0.8416212335729143**2
    assert float(floor_share(100, 100)) == pytest.approx(100 / (100 + z2))
    # A run of 20 with 15 right, weighed at 0.9 against 0.8: 15 ln(0.8/0.9) + 5 ln(0.2/0.1).
    by_hand = 15 * np.log(0.8 / 0.9) + 5 * np.log(0.2 / 0.1)
    assert float(fall_evidence(15, 20, 0.9, 0.1)) == pytest.approx(by_hand)
    # Shiryaev-Roberts: (1 + 3) x e^(that); past A = 365 it alarms and starts again at 0.
    step = watch_step((90.0, 100, 1), 3.0, (15.0, 20), settings=DAILY)
    floor = float(floor_share(90, 100))
    grown = 4 * float(np.exp(fall_evidence(15, 20, floor, 0.1)))
    assert float(step["evidence"]) == pytest.approx(grown)
    assert bool(step["alarm"]) is (grown >= 365)
    fell = watch_step((100.0, 100, 1), 0.0, (0.0, 20), settings=DAILY)
    assert bool(fell["alarm"]) and float(fell["statistic"]) == 0.0
    # An unpinned sentinel starts a new baseline at the run that raised the alarm.
    assert (int(fell["baseline_runs"]), float(fell["baseline_right"])) == (1, 0.0)
    pinned = watch_step((100.0, 100, 1), 0.0, (0.0, 20), settings=DAILY, pinned=True)
    assert bool(pinned["alarm"]) and int(pinned["baseline_runs"]) == 1
    assert float(pinned["baseline_right"]) == 100.0  # the pin stays


def test_the_baseline_is_its_first_runs_and_no_run_is_weighed_before_it() -> None:
    first = watch_step((0.0, 0, 0), 0.0, (18.0, 20), settings=DAILY)
    assert not bool(first["alarm"]) and float(first["evidence"]) == 0.0
    assert (int(first["baseline_runs"]), float(first["baseline_right"])) == (1, 18.0)
    full = watch_step((100.0, 140, BASELINE_RUNS), 0.0, (18.0, 20), settings=DAILY)
    assert int(full["baseline_runs"]) == BASELINE_RUNS  # full: it stays as it is
    assert float(full["baseline_samples"]) == 140


def test_unchanged_is_shown_within_the_margin_or_said_undecided() -> None:
    same = difference(114, 120, 800, 840, margin=10)
    assert same["verdict"] == "unchanged" and -10 < same["interval"][0] <= same["effect"]
    assert difference(102, 120, 800, 840, margin=10)["verdict"] == "undecided"  # 85 vs 95.2
    assert difference(40, 120, 800, 840, margin=10)["verdict"] == "fell"
    assert difference(8, 10, 8, 10, margin=10)["verdict"] == "undecided"  # 10 samples: unsure


def test_the_docs_state_the_recommended_sentinel_its_rate_and_its_cost() -> None:
    """docs/sentinels.md's size, rate and dollars: the estimate's tokens at the catalog's prices."""
    from niah.catalog.prices import prices_for
    from niah.settings import Settings
    from tests import REPO
    from tests.cli_inprocess import niah

    flat: list[str] = []
    for name, value in DEFAULT_REQUEST.items():
        flat += [f"--{name}", *(map(str, value) if isinstance(value, list) else [str(value)])]
    result = niah("run", *flat, "--estimate", "--json")
    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout)
    assert figures["cells"] == DEFAULT_SAMPLES == 120
    prompts, outputs = figures["prompt_tokens"], figures["output_tokens_at_most"]
    doc = (REPO / "docs" / "sentinels.md").read_text()
    assert f"{prompts:,} prompt tokens, at most\n{outputs:,} output tokens" in doc
    rows = {}
    for label, when in (
        ("until 2026-12-31", dt.datetime(2026, 12, 5, tzinfo=dt.UTC)),
        ("from 2027-01-01", dt.datetime(2027, 1, 2, tzinfo=dt.UTC)),
    ):
        prices = prices_for(str(DEFAULT_REQUEST["model_name"]), when)
        assert prices is not None
        prompt_usd = prompts * prices.input / 1e6
        rows[label] = (prompt_usd, prompt_usd + outputs * prices.output / 1e6)
        low, high = rows[label]
        assert f"| a firing, {label} | ${low:,.2f} | ${high:,.2f} |" in doc
    low, high = (365 * usd for usd in rows["from 2027-01-01"])
    assert f"| a year of daily firings at 2027's rates | ${low:,.0f} | ${high:,.0f} |" in doc
    # The rate the docs state is the setting's default.
    assert Settings().sentinel_false_alarms_per_year == 1.0
    assert "**at most 1\n  a year by default**" in doc
    assert f"the sentinel's first {BASELINE_RUNS} complete runs" in doc
