"""A cell or dead letter of a run this version cannot read (issue 53).

A run stored under an older version's checks (``StoredRunError``) will never be read
by this one, so a push of its cells is acknowledged, logged once at ERROR naming the
run and the field, and answered with nothing: no model call, no lease, no publish, no
stored document changed. Redelivering it would only loop: 5 deliveries on the cells
route, then the dead-letter route's until retention drops them (its subscription has
no dead-letter policy, infra/pubsub.tf).
"""

from __future__ import annotations

import base64
import copy
import json
import sys
from dataclasses import replace
from typing import Any

import pytest

from niah.errors import StoredRunError
from niah.service.cells.worker import record_dead_letter
from niah.service.messages import CellTask, report_message
from niah.service.routes.report import handle_report_request
from niah.service.routes.worker import Route, handle_push
from niah.settings import get_settings
from tests import REPO
from tests.fakes import MemoryBlobs, MemorySpendLedger, RecordingAlerts, ScriptedProvider
from tests.unit.test_work import cache_aware_world, dispatch_task, run_cell

# What this version's checks refuse in a stored spec, and how they name it.
REFUSED = {"context_lengths": [-5]}
PROBLEM = "context_lengths: each context length must be between 1 and 10000000 tokens"


def unreadable(world: dict[str, Any]) -> dict[str, Any]:
    """``world`` with its run's stored spec refused by this version; its state then."""
    world["store"].runs[world["run_id"]]["spec"] |= REFUSED
    return state(world)


def state(world: dict[str, Any]) -> dict[str, Any]:
    """All the fakes hold: the store's documents and leases, objects, what was published."""
    return copy.deepcopy(
        {
            "store": vars(world["store"]),
            "objects": world["blobs"].objects,
            "published": vars(world["publisher"]),
        }
    )


def no_model(prompt: str) -> str:
    raise AssertionError("a cell of an unreadable run reached the model")


def pushed(task: CellTask) -> dict[str, Any]:
    """Pub/Sub's push body of ``task``'s message."""
    data = base64.b64encode(json.dumps(task.message()).encode()).decode()
    return {"subscription": "projects/p/subscriptions/s", "message": {"data": data}}


@pytest.fixture
def world(essay_blobs: MemoryBlobs) -> dict[str, Any]:
    return dispatch_task(essay_blobs, context_lengths=[300, 600], document_depth_percents=[0, 100])


def test_a_cell_of_an_unreadable_run_claims_nothing_and_calls_no_model(
    world: dict[str, Any], essay_blobs: MemoryBlobs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every cell, and a primer (whose release would publish the grid), raise before a claim."""
    primed, primer = cache_aware_world(essay_blobs, monkeypatch)
    for each, tasks in ((world, world["tasks"]), (primed, [primer])):
        before = unreadable(each)
        provider = ScriptedProvider(no_model)
        for task in tasks:
            with pytest.raises(StoredRunError) as raised:
                run_cell(each, task, provider)
            assert (raised.value.run_id, raised.value.problem) == (each["run_id"], PROBLEM)
        assert provider.prompts == []
        assert state(each) == before


def test_a_dead_letter_of_an_unreadable_run_is_neither_published_again_nor_stored_failed(
    world: dict[str, Any],
) -> None:
    """The first round would publish the cell again, the last store it failed: neither."""
    before = unreadable(world)
    last_round = get_settings().dead_letter_republishes
    for task in world["tasks"]:
        for dead_letters in (0, last_round):
            with pytest.raises(StoredRunError) as raised:
                record_dead_letter(
                    replace(task, dead_letters=dead_letters, delivery_attempt=5),
                    store=world["store"],
                    publisher=world["publisher"],
                    blobs=world["blobs"],
                )
            assert (raised.value.run_id, raised.value.problem) == (world["run_id"], PROBLEM)
    assert state(world) == before


@pytest.mark.parametrize("route", ["cells", "dead_letter"])
def test_a_push_of_an_unreadable_run_is_acknowledged_in_one_error_line(
    world: dict[str, Any], route: Route, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: raised (a 500, redelivered), logged as the deployment's own fault each time."""
    before = unreadable(world)
    task = world["tasks"][0]

    def clients() -> tuple[Any, Any, Any]:
        return world["store"], world["publisher"], world["blobs"]

    def no_ledger() -> Any:
        raise AssertionError("a cell's push asked for the spend ledger")

    capsys.readouterr()
    outcome = handle_push(pushed(task), route=route, clients=clients, ledger=no_ledger)
    assert outcome == "unreadable"
    (line,) = [json.loads(text) for text in capsys.readouterr().out.splitlines()]
    assert (line["severity"], line["run_id"], line["cell_id"]) == ("ERROR", task.run_id,
                                                                   task.cell_id)  # fmt: skip
    assert line["problem"] == PROBLEM and line["kind"] == "run"
    assert state(world) == before


def report_push(run_id: str) -> dict[str, Any]:
    """Pub/Sub's push body of the request for ``run_id``'s report."""
    data = base64.b64encode(json.dumps(report_message(run_id)).encode()).decode()
    return {"subscription": "projects/p/subscriptions/reports", "message": {"data": data}}


def answered(world: dict[str, Any]) -> None:
    """Every cell of ``world``'s run answered: the worker asked for its report."""
    for task in world["tasks"]:
        run_cell(world, task, ScriptedProvider(lambda prompt: "I cannot tell."))
    assert world["publisher"].reports == [world["run_id"]]


def test_a_report_request_of_an_unreadable_run_is_acknowledged_in_one_error_line(
    world: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: ``StoredRunError`` went up out of the route, so the push was retried.

    Five deliveries, each a traceback, then a dead letter. Now: one ERROR line naming the
    run and the field, nothing rendered, claimed, settled or published.
    """
    answered(world)
    before = unreadable(world)
    ledger = MemorySpendLedger()

    def clients() -> tuple[Any, Any, Any]:
        return world["store"], world["blobs"], ledger

    capsys.readouterr()
    outcome = handle_report_request(report_push(world["run_id"]), clients=clients,
                                    alerts=RecordingAlerts())  # fmt: skip
    assert outcome == "unreadable"
    (line,) = [json.loads(text) for text in capsys.readouterr().out.splitlines()]
    assert (line["severity"], line["run_id"], line["problem"]) == ("ERROR", world["run_id"],
                                                                     PROBLEM)  # fmt: skip
    assert state(world) == before and (ledger.runs, ledger.windows) == ({}, {})  # nothing settled


def test_the_report_function_answers_a_report_request_of_an_unreadable_run_2xx(
    world: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through ``functions/report/main.py``: acknowledged. Before: a 500, so redelivered."""
    import functions_framework

    answered(world)
    before = unreadable(world)
    source = str(REPO / "functions" / "report" / "main.py")
    app = functions_framework.create_app(target="handle_report", source=source)
    served = sys.modules["main"]
    monkeypatch.setattr(
        served, "_clients", lambda: (world["store"], world["blobs"], MemorySpendLedger())
    )
    headers = {
        "ce-id": "1",
        "ce-specversion": "1.0",
        "ce-source": "//pubsub.googleapis.com/projects/p/topics/reports",
        "ce-type": "google.cloud.pubsub.topic.v1.messagePublished",
    }
    response = app.test_client().post("/", json=report_push(world["run_id"]), headers=headers)
    assert response.status_code == 200
    assert state(world) == before
