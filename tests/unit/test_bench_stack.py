"""A benchmark part's stack removes its state when the part ends well, keeps it when not.

The local stack itself is faked (``localstack.up``/``down``, our own interface): what is
checked is what ``bench_stack`` does with the folder, which the smoke run checks too.
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
