"""A batch line's request is the online call's request (issue 21's equality test).

The online call goes through the real google-genai SDK to the Vertex stand-in, which
keeps the body it received; the batch line is built for the same cell.
"""

from __future__ import annotations

from typing import Any

import pytest

from niah.core.request.spec import RunRequest
from niah.models.providers.gemini_request import request_digest
from niah.models.tokenizer import get_tokenizer
from niah.service.batch.lines import cell_batch_line
from niah.service.cells.worker import process_cell
from niah.service.messages import CellTask
from niah.service.runs.dispatch import dispatch_run
from niah_devtools.standin import StandinState
from tests.fake_store import MemoryStore
from tests.fakes import MemoryBlobs, RecordingPublisher
from tests.unit.test_vertex_standin import standin  # noqa: F401 (the fixture)


@pytest.mark.parametrize(
    "options",
    [
        # The budget-controlled 2.5 models are retired on Vertex: run with allow_retired.
        {"model_name": "gemini-2.5-flash", "thinking_budget": 0, "allow_retired": True},
        {"model_name": "gemini-3.5-flash", "thinking_level": "low", "task": "multi_key"},
        {"model_name": "gemini-2.5-pro", "allow_retired": True},
        {"model_name": "gemini-3.8-flash"},
        {"model_name": "gemini-4-neon"},  # no temperature sent: it ignores one
    ],
    ids=["2.5-budget", "3.5-level-task", "2.5-pro-default", "3.8-default", "4-no-temperature"],
)
def test_the_batch_lines_request_is_what_the_online_call_sends(
    standin: tuple[str, StandinState],  # noqa: F811
    essay_blobs: MemoryBlobs,
    options: dict[str, Any],
) -> None:
    _url, state = standin
    store, publisher = MemoryStore(), RecordingPublisher()
    body = {"context_lengths": [600], "document_depth_percents": [50]} | options
    run = dispatch_run(body, store=store, publisher=publisher, blobs=essay_blobs)
    (message,) = publisher.cells
    task = CellTask.from_message(message)
    outcome = process_cell(
        task, store=store, blobs=essay_blobs, publisher=publisher, tokenizer_for=get_tokenizer
    )
    assert outcome == "answered"
    (online,) = [r["body"] for r in state.requests if r["kind"] == "generate"]
    stored = store.get_run(run.run_id)
    assert stored is not None
    spec = RunRequest.model_validate(stored["spec"])
    line = cell_batch_line(task, spec, blobs=essay_blobs, tokenizer_for=get_tokenizer).line
    assert line == {"request": online}  # and no label: nothing unique per cell
    assert request_digest(line["request"]) == request_digest(online) is not None
