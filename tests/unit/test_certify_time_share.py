"""The local model's certificate by model time (niah_devtools.certify_time_share).

docs/certify.md quotes its figures; this holds them: the budget is a quarter of the
grid's model seconds at the catalog's speed with whole output budgets, so with replies
that long the certificate never takes more than a quarter of the grid's time, and with
shorter ones (which the planner cannot know in advance) less, in the same rounds.
"""

from __future__ import annotations

import pytest

from niah_devtools.certify_time_share import call_seconds, simulate


def test_a_call_s_time_is_its_prompt_and_its_reply_at_the_catalog_s_speed() -> None:
    # 250 tokens at 470 a second plus 128 at 48 a second (docs: measured 2026-12-06).
    assert call_seconds(250, 128) == pytest.approx(250 / 470 + 128 / 48)
    assert call_seconds(16_000, 0) > call_seconds(250, 356)


def test_the_certificate_never_takes_more_than_its_quarter_of_the_grid_s_time() -> None:
    whole, short = simulate(356, seeds=8), simulate(16, seeds=8)
    assert whole.worst <= 0.25 + 1e-12  # replies as long as the budget counted: at most it
    assert short.answers == whole.answers  # the same rounds: the planner counts estimates
    assert short.mean < whole.mean
