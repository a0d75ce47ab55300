"""Batch output as Google may write it (issue 34).

Lines matched by content, rows of a job cut short kept, output read in pieces, and
failed lines classified before any goes online.

The Vertex stand-in runs the jobs (``devtools/niah_devtools/standin_batch.py``); its
modes echo the request otherwise than it was sent, end a job early after writing some
rows, or fail every line for one reason.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from niah.errors import CellInFlightError
from niah.service.runs.cancel import cancel_run
from niah.service.runs.dispatch import dispatch_run
from niah.settings import get_settings
from niah_devtools.standin import StandinState
from tests.fakes import MemoryBlobs
from tests.unit.test_batch_runs import BODY, drain, ingest_started, poll_until_done, world
from tests.unit.test_google_recorded import RECORDED
from tests.unit.test_vertex_standin import standin  # noqa: F401 (the fixture)


def online_cells(w: dict[str, Any]) -> list[dict[str, Any]]:
    """The cells published to be answered online (pieces and batch steps name none)."""
    return [m for m in w["publisher"].cells if "cell_id" in m]


def run_to_end(w: dict[str, Any]) -> dict[str, Any]:
    w["step"](w["publisher"].cells[0])
    poll_until_done(w)
    run: dict[str, Any] = w["store"].get_run(w["run_id"])
    return run


@pytest.fixture
def settings_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """Set NIAH_ settings for one test; the process's settings read them afresh."""
    get_settings.cache_clear()
    yield monkeypatch
    monkeypatch.undo()
    get_settings.cache_clear()


@pytest.mark.parametrize("echo", ["no_labels", "reformatted", "nulls"])
def test_every_cell_is_stored_from_batch_output_however_the_request_is_echoed(
    standin: tuple[str, StandinState],  # noqa: F811
    essay_blobs: MemoryBlobs,
    echo: str,
) -> None:
    w = world(standin, essay_blobs, batch_delay_seconds=0.1, batch_echo=echo)
    run = run_to_end(w)
    cells = w["store"].list_cells(w["run_id"])
    assert len(cells) == 6 and {c["execution"] for c in cells} == {"batch"}
    assert {c["status"] for c in cells} == {"answered"} and all(c["score"] == 10 for c in cells)
    assert online_cells(w) == []  # no cell answered online
    (job,) = run["batch_jobs"]
    assert (job["lines_read"], job["lines_stored"], job["lines_unmatched"]) == (6, 6, 0)
    # The input lines carry no label of any kind: nothing per cell for Google's caps.
    (name,) = [n for n in essay_blobs.objects if n.endswith("-input-000.jsonl")]
    lines = [json.loads(x) for x in essay_blobs.objects[name].decode().splitlines()]
    assert [x["request"].get("labels") for x in lines] == [None] * 6


def test_a_job_whose_lines_match_no_cell_fails_loudly_and_is_not_ingested(
    standin: tuple[str, StandinState],  # noqa: F811
    essay_blobs: MemoryBlobs,
) -> None:
    w = world(standin, essay_blobs, batch_delay_seconds=0.1, batch_echo="none")
    run = run_to_end(w)
    (job,) = run["batch_jobs"]
    assert job["ended"] and not job.get("ingested") and job["lines_unmatched"] == 6
    assert "none of the 6 output lines" in job["error"] and run["batch_error"] == job["error"]
    cells = w["store"].list_cells(w["run_id"])
    assert len(cells) == 6 and {c["error"]["kind"] for c in cells} == {"batch_job"}
    assert online_cells(w) == []  # the grid is not bought again online


def test_a_job_cut_short_keeps_its_rows_and_fails_only_the_rest(
    standin: tuple[str, StandinState],  # noqa: F811
    essay_blobs: MemoryBlobs,
) -> None:
    w = world(standin, essay_blobs, batch_delay_seconds=0.1, batch_job_fails="JOB_STATE_EXPIRED",
              batch_job_fails_after=4, batch_job_error="ran past 24 hours")  # fmt: skip
    run_to_end(w)
    cells = w["store"].list_cells(w["run_id"])
    answered = [c for c in cells if c["status"] == "answered"]
    failed = [c for c in cells if c["status"] == "failed"]
    assert (len(answered), len(failed)) == (4, 2)
    assert {c["execution"] for c in answered} == {"batch"} and all(c["cost_usd"] for c in answered)
    assert (
        "JOB_STATE_EXPIRED: ran past 24 hours, after writing 4 of 6 lines"
        in (failed[0]["error"]["message"])
    )
    assert online_cells(w) == []


def test_a_cancelled_job_keeps_what_it_wrote_and_a_resume_asks_only_the_rest(
    standin: tuple[str, StandinState],  # noqa: F811
    essay_blobs: MemoryBlobs,
) -> None:
    url, state = standin
    w = world(standin, essay_blobs, batch_delay_seconds=0.1, batch_line_delay_seconds=0.3)
    w["step"](w["publisher"].cells[0])
    deadline = time.monotonic() + 10
    while sum(r["kind"] == "batch_line" for r in state.requests) < 3:
        assert time.monotonic() < deadline  # the job has answered three of its six lines
        time.sleep(0.02)
    cancel_run(w["run_id"], store=w["store"], publisher=w["publisher"])
    assert w["step"](w["publisher"].cells[-1]) == "cancelled"  # the cancel sent
    for _ in range(100):  # the poll the cancel publishes, redelivered until the job ends
        try:
            w["step"](w["publisher"].cells[-1])
            break
        except CellInFlightError as error:  # redelivered by Pub/Sub
            assert "still being cancelled" in str(error)
            time.sleep(0.05)
    drain(w)
    answered_before_cancel = sum(r["kind"] == "batch_line" for r in state.requests)
    kept = w["store"].cell_ids(w["run_id"])
    assert 3 <= len(kept) == answered_before_cancel < 6  # every written row stored
    requests.post(f"{url}/_standin/config", json={"batch_line_delay_seconds": 0}, timeout=5)
    resumed = dispatch_run(BODY, store=w["store"], publisher=w["publisher"], blobs=essay_blobs,
                           resume=True)  # fmt: skip
    assert resumed.published == 1
    assert w["step"](w["publisher"].cells[-1]) == "submitted"
    (name,) = [n for n in essay_blobs.objects if "/r001" in n and n.endswith("-input-000.jsonl")]
    assert len(essay_blobs.objects[name].decode().splitlines()) == 6 - len(kept)
    poll_until_done(w)
    assert len(w["store"].cell_ids(w["run_id"])) == 6
    # The stand-in's log restarted with the config: the new round asked only the rest.
    assert sum(r["kind"] == "batch_line" for r in state.requests) == 6 - len(kept)


def test_a_reason_that_fails_most_lines_stops_the_online_fallback(
    standin: tuple[str, StandinState],  # noqa: F811
    essay_blobs: MemoryBlobs,
    settings_env: pytest.MonkeyPatch,
) -> None:
    settings_env.setenv("NIAH_BATCH_SYSTEMIC_MIN_LINES", "2")
    denied = {"code": 403, "status": "PERMISSION_DENIED", "message": "service agent lacks access"}
    w = world(standin, essay_blobs, batch_delay_seconds=0.1, batch_fail_status=denied)
    run = run_to_end(w)
    assert online_cells(w) == []  # the grid was not bought online
    cells = w["store"].list_cells(w["run_id"])
    assert len(cells) == 6 and {c["status"] for c in cells} == {"failed"}
    assert "PERMISSION_DENIED (403): service agent lacks access" in cells[0]["error"]["message"]
    assert "6 of 6 lines" in run["batch_stopped"]


def test_failed_lines_below_the_share_go_online_up_to_the_cap(
    standin: tuple[str, StandinState],  # noqa: F811
    essay_blobs: MemoryBlobs,
    settings_env: pytest.MonkeyPatch,
) -> None:
    settings_env.setenv("NIAH_BATCH_ONLINE_FALLBACK_MAX", "1")
    w = world(standin, essay_blobs, batch_delay_seconds=0.1, batch_fail_lines=[1, 4])
    run_to_end(w)
    assert len(online_cells(w)) == 1
    cells = w["store"].list_cells(w["run_id"])
    (capped,) = [c for c in cells if c["status"] == "failed"]
    assert "batch_online_fallback_max" in capped["error"]["message"]
    assert len(cells) == 5  # four from batch, one capped; the online one is still to answer


def test_output_in_many_small_pieces_is_read_once_each(
    standin: tuple[str, StandinState],  # noqa: F811
    essay_blobs: MemoryBlobs,
    settings_env: pytest.MonkeyPatch,
) -> None:
    settings_env.setenv("NIAH_BATCH_INGEST_PIECE_BYTES", "5000")  # a few lines a piece
    w = world(standin, essay_blobs, batch_delay_seconds=0.1, batch_lines_per_file=4)
    run = run_to_end(w)
    pieces = [m for m in w["publisher"].cells if m.get("batch_action") == "ingest"]
    assert len(pieces) > 2 and len({m["file"] for m in pieces}) == 2
    (job,) = run["batch_jobs"]
    # Every line read exactly once across the pieces, each stored once.
    assert (job["lines_read"], job["lines_stored"], job["lines_duplicate"]) == (6, 6, 0)
    assert len(w["store"].list_cells(w["run_id"])) == 6


def test_a_piece_past_its_time_hands_the_rest_of_its_range_on(
    standin: tuple[str, StandinState],  # noqa: F811
    essay_blobs: MemoryBlobs,
    settings_env: pytest.MonkeyPatch,
) -> None:
    settings_env.setenv("NIAH_BATCH_INGEST_SECONDS", "0.000001")  # one line, then hand on
    w = world(standin, essay_blobs, batch_delay_seconds=0.1)
    run = run_to_end(w)
    pieces = [m for m in w["publisher"].cells if m.get("batch_action") == "ingest"]
    assert len(pieces) == 6  # the first piece, then a hand-on after each line but the last
    assert [m["start"] for m in pieces] == sorted({m["start"] for m in pieces})
    (job,) = run["batch_jobs"]
    assert (job["lines_read"], job["lines_stored"]) == (6, 6)


def test_cells_that_ask_the_same_prompt_each_get_one_line(
    standin: tuple[str, StandinState],  # noqa: F811
    essay_blobs: MemoryBlobs,
) -> None:
    # A static needle sampled three times: three cells, one prompt.
    body = BODY | {
        "dynamic_needle": False,
        "samples_per_cell": 3,
        "context_lengths": [400],
        "document_depth_percents": [50],
    }
    w = world(standin, essay_blobs, batch_delay_seconds=0.1, body=body)
    run = run_to_end(w)
    (manifest,) = [n for n in essay_blobs.objects if n.endswith("-cells-000.json")]
    digests = [line[1] for line in json.loads(essay_blobs.objects[manifest])["lines"]]
    assert len(digests) == 3 and len(set(digests)) == 1  # the precondition: one prompt
    cells = w["store"].list_cells(w["run_id"])
    assert len(cells) == 3 and {c["status"] for c in cells} == {"answered"}
    assert len({c["batch_line"] for c in cells}) == 3  # each line went to one cell
    # Read again from the start: every line finds the cell it took, nothing moves.
    for j in run["batch_jobs"]:
        j.pop("ingested"), j.pop("ingest")
    w["store"].batch_jobs.pop(w["run_id"])  # each job's own document, forgotten too
    w["store"].update_run(w["run_id"], {"batch_jobs": run["batch_jobs"]})
    poll_until_done(w)
    assert w["store"].list_cells(w["run_id"]) == cells


def test_batch_lines_are_fitted_to_the_models_count_and_refused_over_its_limit(
    standin: tuple[str, StandinState],  # noqa: F811
    essay_blobs: MemoryBlobs,
) -> None:
    w = world(standin, essay_blobs, batch_delay_seconds=0.1, token_count_ratio=1.05)
    run = run_to_end(w)
    recorded = run["token_count"]
    local, model = recorded["local_tokens"], recorded["model_tokens"]
    assert model == int(local * 1.05 + 0.5)
    assert sum(r["kind"] == "count" for r in w["state"].requests) == 1  # once for the run
    cells = w["store"].list_cells(w["run_id"])
    assert len(cells) == 6 and {c["execution"] for c in cells} == {"batch"}
    for cell in cells:
        length = cell["context_length"]
        assert cell["planned_prompt_tokens"] == length * local // model  # exact, local
        counted = cell["usage"]["prompt_token_count"]
        assert counted == int(cell["planned_prompt_tokens"] * 1.05 + 0.5)  # the model's
        assert length - 1 <= counted <= length, cell["cell_id"]
        assert round(cell["token_count_deviation_percent"], 1) == 5.0

    # 100 times ours: 12,000 tokens of common words are 1.2M as the model counts them,
    # over gemini-3.8-flash's limit. The cell is refused at submit: in no job, unpaid.
    body = BODY | {"task": "common_words", "context_lengths": [12000],
                   "document_depth_percents": [50]}  # fmt: skip
    over = world(standin, essay_blobs, body, batch_delay_seconds=0.1, token_count_ratio=100)
    assert over["step"](over["publisher"].cells[0]) == "submitted"
    (cell,) = over["store"].list_cells(over["run_id"])
    assert cell["status"] == "failed" and cell["error"]["message"].startswith("context_lengths:")
    assert over["store"].get_run(over["run_id"])["batch_jobs"] == []
    assert not [r for r in over["state"].requests if r["kind"] in ("batch_line", "generate")]


def test_pieces_lost_with_their_worker_are_asked_again_only_once_progress_stops(
    standin: tuple[str, StandinState],  # noqa: F811
    essay_blobs: MemoryBlobs,
    settings_env: pytest.MonkeyPatch,
) -> None:
    # A 1 s budget: at 0.2 s, two polls on a loaded machine were already 0.4 s apart.
    settings_env.setenv("NIAH_BATCH_INGEST_SECONDS", "1.0")
    w = world(standin, essay_blobs, batch_delay_seconds=0.1)
    lost = [ingest_started(w)]  # its one piece published, never delivered: its worker died
    w["delivered"] = len(w["publisher"].cells)

    def poll() -> list[dict[str, Any]]:
        before = len(w["publisher"].cells)
        w["step"]({"run_id": w["run_id"], "batch_action": "poll"})
        return [m for m in w["publisher"].cells[before:] if m.get("batch_action") == "ingest"]

    assert poll() == []  # notes how much is unread
    assert poll() == []  # within twice the time budget: a piece may still be working
    time.sleep(2.2)
    (again,) = poll()  # no progress for longer: the unread range is asked again
    assert (again["file"], again["start"], again["end"]) == (
        lost[0]["file"], lost[0]["start"], lost[0]["end"],
    )  # fmt: skip
    assert poll() == []  # and not again at once
    drain(w)
    (job,) = w["store"].get_run(w["run_id"])["batch_jobs"]
    assert job["ingested"] and (job["lines_read"], job["lines_stored"]) == (6, 6)


def test_ranges_of_every_size_yield_each_line_once() -> None:
    import io

    from niah.service.batch.output import lines_in_range

    lines = [b"a\n", b"\n", b"bbbbbbbbbb\n", b"cc\n", b"d" * 40 + b"\n", b"e"]  # no final newline
    data = b"".join(lines)
    offsets = [sum(len(x) for x in lines[:n]) for n in range(len(lines))]
    for step in range(1, len(data) + 2):  # every range size, boundaries on and off lines
        seen = [
            found
            for start in range(0, len(data), step)
            for found in lines_in_range(io.BytesIO(data), start, min(start + step, len(data)))
        ]
        assert seen == list(zip(offsets, lines, strict=True)), step


def test_lines_no_reader_takes_fail_alone_and_the_job_settles(
    standin: tuple[str, StandinState],  # noqa: F811
    essay_blobs: MemoryBlobs,
) -> None:
    corrupt = {"1": "[1, 2]", "3": "not json {", "4": "null"}
    w = world(standin, essay_blobs, batch_delay_seconds=0.1, batch_corrupt_lines=corrupt)
    run = run_to_end(w)
    (job,) = run["batch_jobs"]
    assert job["ingested"] and (job["lines_read"], job["lines_unreadable"]) == (6, 3)
    assert job["lines_stored"] == 3 and len(online_cells(w)) == 3  # below the share


def test_a_reason_that_fails_every_line_of_a_small_job_is_systemic(
    standin: tuple[str, StandinState],  # noqa: F811
    essay_blobs: MemoryBlobs,
) -> None:
    denied = {"code": 403, "message": "Permission denied on resource 1234 (request 98765)"}
    body = BODY | {"context_lengths": [400], "document_depth_percents": [0, 100]}
    w = world(standin, essay_blobs, body, batch_delay_seconds=0.1, batch_fail_status=denied)
    run = run_to_end(w)
    assert online_cells(w) == [] and "2 of 2 lines" in run["batch_stopped"]


def test_the_service_agent_failure_google_wrote_stops_the_job_with_its_own_reason(
    standin: tuple[str, StandinState],  # noqa: F811
    essay_blobs: MemoryBlobs,
) -> None:
    """Every line failing as issue 1308's did: one systemic reason, Google's message.

    The stand-in writes each line's status as that recording's (``Bad Request: {...}``,
    pinned by ``test_google_recorded``); the run stops naming FAILED_PRECONDITION and the
    message, not the HTTP phrase, and buys nothing online.
    """
    recorded = RECORDED / "batch_line_failed.json"
    status = json.loads(recorded.read_text())["line"]["status"]
    error = json.loads(status.partition(": ")[2])["error"]
    body = BODY | {"context_lengths": [400], "document_depth_percents": [0, 100]}
    w = world(standin, essay_blobs, body, batch_delay_seconds=0.1, batch_fail_status=error)
    run = run_to_end(w)
    assert online_cells(w) == []
    stopped = run["batch_stopped"]
    assert "2 of 2 lines" in stopped and "(FAILED_PRECONDITION (400): Service agents are" in stopped
    cells = w["store"].list_cells(w["run_id"])
    assert {c["error"]["kind"] for c in cells} == {"batch_job"} and len(cells) == 2


def test_answered_lines_that_match_no_cell_stop_the_online_fallback_and_are_costed(
    standin: tuple[str, StandinState],  # noqa: F811
    essay_blobs: MemoryBlobs,
) -> None:
    w = world(standin, essay_blobs, batch_delay_seconds=0.1, batch_echo="cut_odd")
    run = run_to_end(w)
    (job,) = run["batch_jobs"]
    assert (job["lines_stored"], job["lines_unmatched"]) == (3, 3)
    assert job["unmatched_cost_usd"] > 0 and "matched no cell" in job["error"]
    assert online_cells(w) == []  # they may be answered already: not bought twice
    failed = [c for c in w["store"].list_cells(w["run_id"]) if c["status"] == "failed"]
    assert len(failed) == 3 and "not bought again online" in failed[0]["error"]["message"]


def test_a_jobs_failed_cells_are_stored_in_bounded_messages(
    standin: tuple[str, StandinState],  # noqa: F811
    essay_blobs: MemoryBlobs,
    settings_env: pytest.MonkeyPatch,
) -> None:
    settings_env.setenv("NIAH_BATCH_FAIL_CELLS", "2")
    w = world(standin, essay_blobs, batch_delay_seconds=0.1, batch_job_fails="JOB_STATE_FAILED")
    run_to_end(w)
    fails = [m for m in w["publisher"].cells if m.get("batch_action") == "fail"]
    assert [len(m["cells"]) for m in fails] == [2, 2, 2]
    cells = w["store"].list_cells(w["run_id"])
    assert len(cells) == 6 and {c["status"] for c in cells} == {"failed"}


def test_a_batch_counts_a_few_unfitted_prompts_and_estimates_the_rest(
    standin: tuple[str, StandinState],  # noqa: F811
    essay_blobs: MemoryBlobs,
) -> None:
    body = BODY | {"task": "common_words", "context_lengths": [600, 700, 800, 900, 1000],
                   "document_depth_percents": [50]}  # fmt: skip
    w = world(standin, essay_blobs, body, batch_delay_seconds=0.1, token_count_ratio=1.05)
    assert w["step"](w["publisher"].cells[0]) == "submitted"
    assert sum(r["kind"] == "count" for r in w["state"].requests) == 3  # not one a cell


def test_a_stale_round_and_a_malformed_run_id_are_refused_with_nothing_paid(
    standin: tuple[str, StandinState],  # noqa: F811
    essay_blobs: MemoryBlobs,
) -> None:
    w = world(standin, essay_blobs, batch_delay_seconds=0.1)
    submit = w["publisher"].cells[0]
    assert w["step"](submit | {"batch_round": 3}) == "rejected"  # not the run's round
    assert w["step"](submit | {"run_id": "run-../../x"}) == "rejected"
    assert w["store"].get_run(w["run_id"]).get("batch_jobs") is None
    assert not [r for r in w["state"].requests if r["kind"] in ("count", "batch_line")]
    assert w["step"](submit) == "submitted"  # the run's own submit still goes
