"""``niah`` on the local stack as a harness user types it: run, status, list, pipes.

A run started with the harness's spellings (``--save_contexts True``), its status and
the run list read back through the real Firestore emulator: the links to the run's
record and report, no "None", plurals, and a reader that closes the pipe early.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.integration.conftest import Stack

pytestmark = pytest.mark.integration


def piped_to_head(stack: Stack, *words: str) -> subprocess.CompletedProcess[str]:
    """``niah WORDS | head -1``; the status is niah's own (bash's PIPESTATUS)."""
    return subprocess.run(
        ["bash", "-c", '"$0" -m niah.cli "$@" | head -1; exit "${PIPESTATUS[0]}"',
         sys.executable, *words],
        env={**os.environ, **stack.env}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_a_harness_style_run_then_status_and_list_read_well(stack: Stack) -> None:
    started = stack.niah(
        "run", "--context_lengths", "[400]", "--document_depth_percents", "50",
        "--save_contexts", "True", "--dynamic_needle=true", "--seed", "31", "--wait",
        "--timeout", "300",
    )  # fmt: skip
    assert started.returncode == 0, started.stderr[-2000:]
    run_id = started.stdout.split()[1].rstrip(":")
    assert started.stdout.startswith(f"run {run_id}: 1 cell\n")
    firestore = stack.env["FIRESTORE_EMULATOR_HOST"]
    link = f"Firestore (emulator): http://{firestore}/v1/projects/"
    assert link in started.stdout and f"/documents/runs/{run_id}" in started.stdout
    assert "report (written when the last cell is in): http://" in started.stdout
    assert "None" not in started.stdout

    status = stack.niah("status", run_id)
    assert status.returncode == 0, status.stderr
    assert status.stdout.startswith(f"run {run_id}: complete, 1 answered + 0 failed of 1 cell\n")
    assert "None" not in status.stdout and "1 cells" not in status.stdout
    assert link in status.stdout and "report: http://" in status.stdout

    for words in (["status", run_id], ["list"]):
        piped = piped_to_head(stack, *words)
        assert (piped.returncode, piped.stderr) == (0, ""), words
        assert len(piped.stdout.splitlines()) == 1

    listed = stack.niah("list")
    assert listed.returncode == 0 and run_id in listed.stdout
    assert "None" not in listed.stdout


def test_the_harness_readme_s_static_needle_runs_and_is_scored(stack: Stack) -> None:
    """`--dynamic_needle=False` alone: the harness's default needle, scored exact."""
    from niah.cloud.store import FirestoreStore
    from niah.core.request.request_options import HARNESS_DEFAULT_NEEDLE

    started = stack.niah(
        "run", "--dynamic_needle=False", "--context_lengths", "1000",
        "--document_depth_percents", "50", "--wait", "--timeout", "300",
    )  # fmt: skip
    assert started.returncode == 0, started.stderr[-2000:]
    run_id = started.stdout.split()[1].rstrip(":")
    [cell] = FirestoreStore().list_cells(run_id)
    assert cell.get("error") is None, cell.get("error")
    needle = HARNESS_DEFAULT_NEEDLE.strip()  # the cell stores it stripped
    assert (cell["needle"], cell["expected_answer"]) == (needle, "Dolores Park")
    assert cell["score"] in (1, 10)
    assert cell["model_response"].strip(), "the local model gave no answer"
