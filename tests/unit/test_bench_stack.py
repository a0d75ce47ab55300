"""The benchmark's stack helpers: a part's state folder, and its wait for a run.

The stack is removed when the part ends well and kept when not; a wait ends when the run
is finished and fails one stuck past its time. The local stack and the store are faked
(``localstack.up``/``down``, ``get_run``: our own interfaces); the smoke run uses the
real ones.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import pytest

from tests import REPO

sys.path.insert(0, str(REPO / "scripts"))


@pytest.fixture
def states(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[Path]:
    """The state folders the fake stack was started in (each gets a log, as a real one)."""
    from niah_devtools import localstack

    started: list[Path] = []

    def up(state: Path, **_: object) -> dict[str, str]:
        (state / "logs").mkdir()
        (state / "logs" / "worker.log").write_text("why it failed\n")
        started.append(state)
        return {}

    monkeypatch.setattr(localstack, "up", up)
    monkeypatch.setattr(localstack, "down", lambda state: None)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # not /tmp, even when kept
    return started


def test_a_part_that_ends_well_leaves_nothing(states: list[Path]) -> None:
    from bench_pipeline import bench_stack

    with bench_stack(8670, {}) as (state, _):
        assert state.is_dir()
    assert states == [state] and not state.exists()


def test_a_failed_part_keeps_its_logs_and_says_where(
    states: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    from bench_pipeline import bench_stack

    with pytest.raises(RuntimeError), bench_stack(8670, {}):
        raise RuntimeError("the part failed")
    (state,) = states
    assert (state / "logs" / "worker.log").read_text() == "why it failed\n"
    assert capsys.readouterr().err == f"bench: the stack's logs are kept in {state / 'logs'}\n"


class Runs:
    """A store whose run has ``done`` cells after each read: the benchmark's poll target."""

    def __init__(self) -> None:
        self.reads = 0

    def get_run(self, run_id: str) -> dict[str, int]:
        self.reads += 1
        return {"done": self.reads}


def test_the_wait_ends_when_the_run_is_finished_and_fails_a_run_stuck_past_its_time() -> None:
    from bench_pipeline import wait_for

    runs = Runs()
    wait_for(runs, "run-a", lambda run: run["done"] >= 3, poll=0)
    assert runs.reads == 3
    with pytest.raises(TimeoutError, match=r"run run-b did not finish within 0\.1 s"):
        wait_for(Runs(), "run-b", lambda run: False, poll=0.01, seconds=0.1)
