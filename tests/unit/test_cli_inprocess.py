"""The in-process ``niah`` of the tests ends a hung command as subprocess.run's timeout did."""

from __future__ import annotations

import signal
import time

import pytest

from tests import cli_inprocess


def test_a_command_past_its_time_limit_is_stopped_and_the_alarm_is_put_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def hangs(_args: list[str]) -> None:
        time.sleep(30)

    monkeypatch.setattr(cli_inprocess, "main", hangs)
    before = signal.getsignal(signal.SIGALRM)
    started = time.monotonic()
    with pytest.raises(cli_inprocess.CommandTimeout, match=r"within 0\.2 s"):
        cli_inprocess.niah("wait", "run-x", timeout=0.2)
    assert time.monotonic() - started < 5
    assert signal.getsignal(signal.SIGALRM) == before
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_a_command_within_its_time_limit_answers_as_a_process_would(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def prints(args: list[str]) -> None:
        print(" ".join(args))
        raise SystemExit(3)

    monkeypatch.setattr(cli_inprocess, "main", prints)
    done = cli_inprocess.niah("status", "run-x", timeout=10)
    assert (done.returncode, done.stdout) == (3, "status run-x\n")
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
