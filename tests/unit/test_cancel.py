"""Cancel (issue 21): nothing more is published or answered; resume goes on."""

from typing import Any

import pytest

from niah.errors import RequestError
from niah.service.cells.worker import record_dead_letter
from niah.service.messages import CellTask
from niah.service.runs.cancel import cancel_run, parse_cancel
from niah.service.runs.dispatch import dispatch_run
from niah.service.runs.sweep import sweep_stalled_runs
from tests.fakes import MemoryBlobs, ScriptedProvider
from tests.unit.test_work import cache_aware_world, dispatch_task, echo_needle_number, run_cell

BODY = {"context_lengths": [300, 600], "document_depth_percents": [0, 100]}


@pytest.fixture
def world(essay_blobs: MemoryBlobs) -> dict[str, Any]:
    return dispatch_task(essay_blobs, **BODY)


def test_a_cancelled_runs_cells_are_acknowledged_without_a_call(world: dict[str, Any]) -> None:
    provider = ScriptedProvider(echo_needle_number)
    first, *rest = world["tasks"]
    assert run_cell(world, first, provider) == "answered"
    cancelled = cancel_run(world["run_id"], store=world["store"])
    assert (cancelled.outcome, cancelled.status) == ("cancelled", "cancelled")
    assert (cancelled.total, cancelled.answered, cancelled.failed) == (4, 1, 0)
    assert cancelled.totals["cost_usd"] >= 0 and cancelled.totals["prompt_tokens"] > 0
    assert [run_cell(world, task, provider) for task in rest] == ["cancelled"] * 3
    assert len(provider.prompts) == 1
    assert world["store"].get_run(world["run_id"])["done"] == 1
    again = cancel_run(world["run_id"], store=world["store"])
    assert again.outcome == "already_cancelled"


def test_nothing_publishes_a_cancelled_runs_cells_until_it_is_resumed(
    world: dict[str, Any], essay_blobs: MemoryBlobs
) -> None:
    store, publisher = world["store"], world["publisher"]
    provider = ScriptedProvider(echo_needle_number)
    assert run_cell(world, world["tasks"][0], provider) == "answered"
    cancel_run(world["run_id"], store=store)
    published = len(publisher.cells)
    # A repeated request, the sweep of a stalled run, a dead letter: none publishes.
    store.settle(world["run_id"])
    again = dispatch_run(BODY, store=store, publisher=publisher, blobs=essay_blobs)
    assert again.cancelled and again.published == 0
    assert any("--resume" in warning for warning in again.warnings)
    swept = sweep_stalled_runs(store=store, publisher=publisher, stalled_after_seconds=0)
    assert swept["cells_republished"] == 0
    dead = record_dead_letter(
        world["tasks"][1], store=store, publisher=publisher, blobs=world["blobs"]
    )
    assert dead == "cancelled" and store.cell_ids(world["run_id"]) == {world["tasks"][0].cell_id}
    assert len(publisher.cells) == published
    # Resumed: running again, the three missing cells published (the answered one kept).
    resumed = dispatch_run(BODY, store=store, publisher=publisher, blobs=essay_blobs, resume=True)
    assert not resumed.cancelled and (resumed.published, resumed.reused) == (3, 1)
    assert store.get_run(world["run_id"])["status"] == "running"
    for message in publisher.cells[published:]:
        assert run_cell(world, CellTask.from_message(message), provider) == "answered"
    assert len(provider.prompts) == 4
    assert publisher.reports == [world["run_id"]]


def test_a_primer_answered_after_the_cancel_releases_nothing_and_resume_publishes_all(
    essay_blobs: MemoryBlobs, monkeypatch: pytest.MonkeyPatch
) -> None:
    world, primer = cache_aware_world(essay_blobs, monkeypatch)
    store, publisher = world["store"], world["publisher"]
    cancel_run(world["run_id"], store=store)
    assert run_cell(world, primer, ScriptedProvider(echo_needle_number)) == "cancelled"
    assert len(publisher.cells) == 1  # the primer alone
    resumed = dispatch_run(BODY, store=store, publisher=publisher, blobs=essay_blobs, resume=True)
    assert resumed.published == 4  # the whole grid, primer included, at once
    assert store.get_run(world["run_id"])["primer_released"]


def test_a_complete_or_unknown_run_is_not_cancelled(world: dict[str, Any]) -> None:
    store = world["store"]
    store.update_run(world["run_id"], {"status": "complete"})
    assert cancel_run(world["run_id"], store=store).outcome == "complete"
    assert store.get_run(world["run_id"])["status"] == "complete"
    assert cancel_run("run-0000000000000000", store=store).outcome == "missing"


@pytest.mark.parametrize(
    "payload", [None, {}, {"run_id": 3}, {"run_id": "runs/x"}, {"run_id": "run-XYZ"}]
)
def test_a_cancel_request_names_a_run_id(payload: Any) -> None:
    with pytest.raises(RequestError) as caught:
        parse_cancel(payload)
    assert caught.value.field == "run_id"
    assert parse_cancel({"run_id": "run-0123456789abcdef"}) == "run-0123456789abcdef"


def test_niah_cancel_says_what_was_spent_and_how_to_resume(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from niah.cli.main import main
    from tests.fakes import json_server

    run_id = "run-0123456789abcdef"
    answer = {"run_id": run_id, "outcome": "cancelled", "status": "cancelled", "total": 6,
              "answered": 2, "failed": 1, "totals": {"cost_usd": 0.0125}}  # fmt: skip
    with json_server(200, answer) as url:
        main(["cancel", run_id, "--url", url])
    out = capsys.readouterr().out
    assert out.startswith(f"run {run_id} cancelled: 2 answered + 1 failed of 6 cells, $0.0125")
    assert f"niah run --resume {run_id}" in out
    with pytest.raises(SystemExit) as exited:
        main(["cancel", "runs/x", "--url", "http://127.0.0.1:9"])
    assert exited.value.code == 2 and "is not a run ID" in capsys.readouterr().err


def test_niah_cancel_of_a_run_this_version_cannot_read_says_so_not_zero_answered(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from niah.cli.main import main
    from tests.fakes import json_server

    run_id = "run-0123456789abcdef"
    problem = f"run {run_id} cannot be read by this version: context_lengths: ..."
    answer = {"run_id": run_id, "outcome": "cancelled", "status": "cancelled", "total": 0,
              "answered": 0, "failed": 0, "totals": {}, "unreadable": problem}  # fmt: skip
    with json_server(200, answer) as url:
        main(["cancel", run_id, "--url", url])
    out = capsys.readouterr().out
    assert out.startswith(f"run {run_id} cancelled, but this version cannot read it ({problem})")
    assert "0 answered" not in out and "spend hold stays open" in out
