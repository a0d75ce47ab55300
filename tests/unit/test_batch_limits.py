"""Google's limits and times for a Gemini batch job, as the service states and obeys them.

Google (batch-prediction-gemini, "Quotas and limits", read 2026-11-27): at most
200,000 requests a job and a 1 GB input file; a job may queue for up to 72 h and most
complete within 24 h of starting to run. The settings cannot go past the caps, ``niah
run --wait`` follows a batch run for the whole window, and the estimate says it as
Google does.
"""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from niah.cli.estimate import estimate_figures, format_estimate
from niah.cli.parser import build_parser
from niah.cli.run import BATCH_WAIT_SECONDS, ONLINE_WAIT_SECONDS, wait_timeout
from niah.core.request.request_options import BATCH_TURNAROUND
from niah.settings import Settings

GEMINI = {
    "model_name": "gemini-3.1-pro-preview",
    "context_lengths": [1000],
    "document_depth_percents": [50],
}


def test_a_batch_file_may_not_pass_googles_200000_requests_or_1_gb() -> None:
    at_the_caps = Settings(batch_max_lines=200_000, batch_max_bytes=1_000_000_000)
    assert (at_the_caps.batch_max_lines, at_the_caps.batch_max_bytes) == (200_000, 1_000_000_000)
    with pytest.raises(ValidationError, match="batch_max_lines"):
        Settings(batch_max_lines=200_001)
    with pytest.raises(ValidationError, match="batch_max_bytes"):
        Settings(batch_max_bytes=1_000_000_001)
    defaults = Settings()
    assert defaults.batch_max_lines == 10_000 and defaults.batch_max_bytes == 256_000_000


def test_wait_follows_a_batch_run_for_googles_72_h_queue_and_24_h_run() -> None:
    assert BATCH_WAIT_SECONDS == 96 * 3600 and ONLINE_WAIT_SECONDS == 3600
    assert wait_timeout(None, GEMINI | {"execution": "batch"}) == 96 * 3600
    assert wait_timeout(None, GEMINI) == 3600
    assert wait_timeout(None, GEMINI | {"execution": "online"}) == 3600
    assert wait_timeout(120.0, GEMINI | {"execution": "batch"}) == 120.0  # asked: kept
    parser = build_parser()
    run = parser.parse_args(["run", "--model_name", "x", "--batch", "--wait"])
    follow = parser.parse_args(["wait", "latest"])
    assert run.timeout is None and follow.timeout is None  # the run's kind decides


def _help(parser: object, command: str) -> str:
    import argparse

    assert isinstance(parser, argparse.ArgumentParser)
    for action in parser._subparsers._group_actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices[command].format_help()
    raise AssertionError(command)


def test_the_help_of_both_commands_names_the_batch_window() -> None:
    parser = build_parser()
    for command in ("run", "wait"):
        text = " ".join(_help(parser, command).split())
        assert "96 h, Google's 72 h queue and 24 h run" in text, command


def test_the_estimate_words_the_batch_turnaround_as_google_does() -> None:
    assert BATCH_TURNAROUND == (
        "most jobs complete within 24 h of starting to run, after up to 72 h queued"
    )
    text = format_estimate(estimate_figures(GEMINI))
    [line] = [line for line in text.splitlines() if line.startswith("model calls, batch")]
    assert BATCH_TURNAROUND in line and "results within 24 h" not in text
    batch_help = " ".join(_help(build_parser(), "run").split())
    assert BATCH_TURNAROUND in batch_help
