"""A batch run end to end on fakes and the Vertex stand-in (issue 21).

Dispatch publishes one submit; the worker's submit writes the JSONL and creates the
job through google-genai; the stand-in answers it; a poll ingests each line once, at
batch prices.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
import requests

from niah.core.interfaces import ModelAnswer
from niah.core.money.pricing import answer_cost
from niah.models.providers.gemini import GeminiProvider
from niah.models.tokenizer import get_tokenizer
from niah.service.batch.runs import handle_batch_message
from niah.service.runs.cancel import cancel_run
from niah.service.runs.dispatch import dispatch_run
from niah_devtools.standin import StandinState
from tests.fake_store import MemoryStore
from tests.fakes import MemoryBlobs, RecordingPublisher
from tests.unit.test_vertex_standin import standin  # noqa: F401 (the fixture)

BODY = {
    "model_name": "gemini-3.8-flash",
    "execution": "batch",
    "context_lengths": [400, 800],
    "document_depth_percents": [0, 50, 100],
}


class BlobFiles:
    """The stand-in's gs:// reads and writes, on the test's bucket."""

    def __init__(self, blobs: MemoryBlobs) -> None:
        self.blobs = blobs

    def read(self, uri: str) -> bytes:
        return self.blobs.read(uri.removeprefix(f"gs://{self.blobs.bucket}/"))

    def write(self, uri: str, data: bytes) -> None:
        name = uri.removeprefix(f"gs://{self.blobs.bucket}/")
        self.blobs.write(name, data, content_type="application/jsonl")


def world(
    served: tuple[str, StandinState],
    blobs: MemoryBlobs,
    body: dict[str, Any] = BODY,
    *,
    store: MemoryStore | None = None,
    **config: Any,
) -> dict[str, Any]:
    """A batch run dispatched on fakes (``store``, or a new one), the stand-in set to ``config``."""
    url, state = served
    requests.post(f"{url}/_standin/config", json=config, timeout=5).raise_for_status()
    state.batch.files = BlobFiles(blobs)
    store, publisher = store or MemoryStore(), RecordingPublisher()
    run = dispatch_run(body, store=store, publisher=publisher, blobs=blobs)

    def step(message: dict[str, Any]) -> str:
        return handle_batch_message(
            message,
            store=store,
            blobs=blobs,
            publisher=publisher,
            batches_for=lambda name: GeminiProvider(name).batches(),
            tokenizer_for=get_tokenizer,
        )

    return {"store": store, "publisher": publisher, "run_id": run.run_id, "step": step,
            "state": state}  # fmt: skip


def drain(w: dict[str, Any]) -> None:
    """Deliver the ingest, settle and fail steps published since, as Pub/Sub would."""
    cells = w["publisher"].cells
    while w.setdefault("delivered", 0) < len(cells):
        message = cells[w["delivered"]]
        w["delivered"] += 1
        if message.get("batch_action") in ("ingest", "settle", "fail"):
            w["step"](message)


def poll_until_done(w: dict[str, Any]) -> None:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        w["step"]({"run_id": w["run_id"], "batch_action": "poll"})
        drain(w)
        jobs = w["store"].get_run(w["run_id"])["batch_jobs"]
        if all(j.get("ingested") or j.get("ended") or j.get("superseded") for j in jobs):
            return
        time.sleep(0.1)
    raise AssertionError("the batch job did not end")


def test_a_batch_run_stores_one_cell_per_line_at_batch_prices(
    standin: tuple[str, StandinState],  # noqa: F811
    essay_blobs: MemoryBlobs,
) -> None:
    w = world(standin, essay_blobs, batch_delay_seconds=0.2)
    (submit,) = w["publisher"].cells  # one message for the whole grid, no cell
    assert submit["batch_action"] == "submit" and "cell_id" not in submit
    assert w["step"](submit) == "submitted"
    assert w["step"](submit) == "duplicate"  # a redelivered submit submits nothing
    run = w["store"].get_run(w["run_id"])
    (job,) = run["batch_jobs"]
    assert job["cells"] == 6 and job["input"].endswith("r000-input-000.jsonl")
    poll_until_done(w)
    cells = w["store"].list_cells(w["run_id"])
    assert len(cells) == 6 and {c["status"] for c in cells} == {"answered"}
    assert {c["execution"] for c in cells} == {"batch"} and all(c["score"] == 10 for c in cells)
    for cell in cells:  # priced at the batch rate: half of what the same usage costs online
        usage = cell["usage"]
        answer = ModelAnswer("", "STOP", usage["prompt_token_count"],
                             usage["candidates_token_count"], 0.0,
                             thinking_tokens=usage["thoughts_token_count"],
                             cached_tokens=usage["cached_content_token_count"])  # fmt: skip
        assert cell["cost_usd"] == pytest.approx(
            answer_cost("gemini-3.8-flash", answer, batch=True).usd
        )
    assert w["publisher"].reports == [w["run_id"]]
    # The same job ingested again from the start stores nothing twice, and skips each
    # line before scoring it (no judge, no cost).
    run = w["store"].get_run(w["run_id"])
    for j in run["batch_jobs"]:
        j.pop("ingested"), j.pop("ingest")
    w["store"].batch_jobs.pop(w["run_id"])  # each job's own document, forgotten too
    w["store"].update_run(w["run_id"], {"batch_jobs": run["batch_jobs"]})
    poll_until_done(w)
    assert w["store"].list_cells(w["run_id"]) == cells
    assert w["store"].get_run(w["run_id"])["batch_jobs"][0]["lines_duplicate"] == 6
    assert sum(r["kind"] == "batch_line" for r in w["state"].requests) == 6


def test_a_failed_line_goes_online_and_a_failed_job_fails_its_cells_with_the_reason(
    standin: tuple[str, StandinState],  # noqa: F811
    essay_blobs: MemoryBlobs,
) -> None:
    w = world(standin, essay_blobs, batch_delay_seconds=0.1, batch_fail_lines=[2])
    w["step"](w["publisher"].cells[0])
    poll_until_done(w)
    assert len(w["store"].list_cells(w["run_id"])) == 5
    retried = [m for m in w["publisher"].cells if "cell_id" in m]  # pieces name no cell
    assert len(retried) == 1  # the failed line, published as an online cell

    for state, reason in (
        ("JOB_STATE_EXPIRED", "queued past 72 hours"),
        ("JOB_STATE_FAILED", "INVALID_ARGUMENT: the input file is not JSONL"),
    ):
        failing = world(
            standin, essay_blobs, batch_delay_seconds=0.1, batch_job_fails=state,
            batch_job_error=reason,
        )  # fmt: skip
        failing["step"](failing["publisher"].cells[0])
        poll_until_done(failing)
        cells = failing["store"].list_cells(failing["run_id"])
        assert len(cells) == 6 and {c["error"]["kind"] for c in cells} == {"batch_job"}
        assert f"{state}: {reason}" in cells[0]["error"]["message"]


def test_a_resume_while_a_job_is_open_submits_nothing_more(
    standin: tuple[str, StandinState],  # noqa: F811
    essay_blobs: MemoryBlobs,
) -> None:
    w = world(standin, essay_blobs, batch_delay_seconds=1.0)
    w["step"](w["publisher"].cells[0])
    w["store"].settle(w["run_id"])  # past the dispatch's settle window
    resumed = dispatch_run(
        BODY, store=w["store"], publisher=w["publisher"], blobs=essay_blobs, resume=True
    )
    assert resumed.published == 1 and len(w["publisher"].cells) == 2
    submit = w["publisher"].cells[-1]
    assert submit["batch_round"] == 0 and w["step"](submit) == "duplicate"
    poll_until_done(w)
    assert len(w["store"].get_run(w["run_id"])["batch_jobs"]) == 1
    assert len(w["store"].list_cells(w["run_id"])) == 6


def test_a_cancelled_batch_runs_job_is_cancelled_and_resume_submits_a_new_round(
    standin: tuple[str, StandinState],  # noqa: F811
    essay_blobs: MemoryBlobs,
) -> None:
    w = world(standin, essay_blobs, batch_delay_seconds=2.0)
    w["step"](w["publisher"].cells[0])
    cancel_run(w["run_id"], store=w["store"], publisher=w["publisher"])
    poll = w["publisher"].cells[-1]
    assert poll["batch_action"] == "poll"
    assert w["step"](poll) == "cancelled"
    (job,) = w["store"].get_run(w["run_id"])["batch_jobs"]
    url, state = standin
    deadline = time.monotonic() + 5
    while state.batch.jobs[job["name"]]["state"] != "JOB_STATE_CANCELLED":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert not [r for r in state.requests if r["kind"] == "batch_line"]
    requests.post(f"{url}/_standin/config", json={"batch_delay_seconds": 0.1}, timeout=5)
    resumed = dispatch_run(BODY, store=w["store"], publisher=w["publisher"], blobs=essay_blobs,
                           resume=True)  # fmt: skip
    assert resumed.published == 1
    submit = w["publisher"].cells[-1]
    assert (submit["batch_action"], submit["batch_round"]) == ("submit", 1)
    assert w["step"](submit) == "submitted"
    poll_until_done(w)
    assert len(w["store"].list_cells(w["run_id"])) == 6
    old, new = w["store"].get_run(w["run_id"])["batch_jobs"]
    assert old["superseded"] and old["cancel_sent"] and new["ingested"]


def ingests(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in messages if m.get("batch_action") == "ingest"]


def ingest_started(w: dict[str, Any]) -> dict[str, Any]:
    """Submit and poll until the job's output is being ingested: its one piece, published."""
    w["step"](w["publisher"].cells[0])
    deadline = time.monotonic() + 10
    while "ingest" not in w["store"].get_run(w["run_id"])["batch_jobs"][0]:
        assert time.monotonic() < deadline
        w["step"]({"run_id": w["run_id"], "batch_action": "poll"})
        time.sleep(0.05)
    (piece,) = ingests(w["publisher"].cells)
    return piece
