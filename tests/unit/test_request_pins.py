"""A request keeps its run ID and a stored request keeps reading as the request changes shape.

``tests/data/task_option_pins.json`` was written by the request before tasks owned their
options (every option a flat field; 60 fields): for requests of every task, their run IDs
and their stored spec (``RunRequest.model_dump``, as ``RunRecord.to_document`` writes it,
holding every task's options at their defaults). A run ID that moved would make a rerun
call the model again for every answered cell; a stored spec that no longer reads would
lose the run.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from niah.core.request.spec import RunRequest
from tests import REPO

PINS: list[dict[str, Any]] = json.loads((REPO / "tests/data/task_option_pins.json").read_text())


@pytest.mark.parametrize("pin", PINS, ids=[json.dumps(p["request"])[:60] for p in PINS])
def test_the_run_id_of_a_request_is_pinned(pin: dict[str, Any]) -> None:
    spec = RunRequest.model_validate(pin["request"])
    assert spec.run_id() == pin["run_id"]
    assert spec.run_id("abc123") == pin["run_id_with_haystack"]


@pytest.mark.parametrize("pin", PINS, ids=[json.dumps(p["request"])[:60] for p in PINS])
def test_a_stored_spec_reads_back_as_its_request(pin: dict[str, Any]) -> None:
    stored = RunRequest.model_validate(pin["stored_spec"])
    assert stored == RunRequest.model_validate(pin["request"])
    assert stored.run_id() == pin["run_id"]
    # What is stored now reads back the same, too.
    again = RunRequest.model_validate(stored.model_dump(mode="json"))
    assert again == stored
