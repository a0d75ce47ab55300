"""Batch output read when Google has written it, and partial jobs (issue 52).

A job is settled only once the lines read reach its ``completionStats`` (successful +
failed), waiting up to ``batch_output_wait_seconds`` for files that lag the state; a
``JOB_STATE_PARTIALLY_SUCCEEDED`` job's unwritten lines are refused for the next
round, never bought online. The Vertex stand-in runs the jobs: ``batch_output_lag_gets``
turns a job terminal (with its counts) before its files are written.
"""

from __future__ import annotations

import time
from typing import Any

from niah_devtools.standin import StandinState
from tests.fakes import MemoryBlobs
from tests.unit.test_batch_ingest import online_cells, run_to_end, settings_env  # noqa: F401
from tests.unit.test_batch_runs import drain, poll_until_done, world
from tests.unit.test_vertex_standin import standin  # noqa: F401 (the fixture)

CUT_AT_4: dict[str, Any] = {"batch_job_fails": "JOB_STATE_CANCELLED", "batch_job_fails_after": 4}


def poll(w: dict[str, Any]) -> dict[str, Any]:
    """One poll, its ingest and settle steps delivered; the run's one job after it."""
    w["step"]({"run_id": w["run_id"], "batch_action": "poll"})
    drain(w)
    (job,) = w["store"].get_run(w["run_id"])["batch_jobs"]
    return dict(job)


def poll_until_ended(w: dict[str, Any]) -> dict[str, Any]:
    """Poll until a poll has seen the job in a terminal state: the job as that poll left it."""
    deadline = time.monotonic() + 10
    while (job := poll(w)).get("state") in (None, "JOB_STATE_PENDING", "JOB_STATE_RUNNING"):
        assert time.monotonic() < deadline, "the batch job did not end"
        time.sleep(0.05)
    return job


def test_a_job_that_ends_before_its_files_are_written_is_settled_once_they_are(
    standin: tuple[str, StandinState],  # noqa: F811
    essay_blobs: MemoryBlobs,
) -> None:
    """CANCELLED with successful_count 4 and no files; the files appear one poll later.

    Before, the first poll to see the job ended found no files and failed all six cells
    ("it wrote no output"): four rows Google bills were never read.
    """
    w = world(standin, essay_blobs, batch_delay_seconds=0.1, batch_output_lag_gets=1, **CUT_AT_4)
    w["step"](w["publisher"].cells[0])
    job = poll_until_ended(w)
    assert job["state"] == "JOB_STATE_CANCELLED" and job["expected_lines"] == 4
    assert "output_wait_since" in job and not job.get("ended") and "ingest" not in job
    assert w["store"].cell_ids(w["run_id"]) == set()  # nothing failed while it waits
    job = poll(w)  # the files are there now
    assert job["ingested"] and job["lines_read"] == 4 and job["lines_stored"] == 4
    cells = w["store"].list_cells(w["run_id"])
    answered = [c for c in cells if c["status"] == "answered"]
    assert len(answered) == 4 and {c["execution"] for c in answered} == {"batch"}
    assert len(cells) == 6  # the two it never processed fail, saying why
    assert online_cells(w) == []  # nothing bought online


def test_files_that_never_come_are_waited_for_a_bounded_time_and_recorded(
    standin: tuple[str, StandinState],  # noqa: F811
    essay_blobs: MemoryBlobs,
    settings_env: Any,  # noqa: F811
) -> None:
    settings_env.setenv("NIAH_BATCH_OUTPUT_WAIT_SECONDS", "0.3")
    w = world(standin, essay_blobs, batch_delay_seconds=0.1, batch_output_lag_gets=10**6,
              **CUT_AT_4)  # fmt: skip
    w["step"](w["publisher"].cells[0])
    assert not poll_until_ended(w).get("ended")  # the wait starts
    time.sleep(0.35)
    job = poll(w)
    assert job["ended"] and job["lines_never_seen"] == 4
    assert "Google counted 4 rows (completionStats) but none appeared" in job["error"]
    cells = w["store"].list_cells(w["run_id"])
    assert len(cells) == 6 and {c["status"] for c in cells} == {"failed"}
    assert "Google counted 4 rows" in cells[0]["error"]["message"]
    assert online_cells(w) == []


def test_a_partially_succeeded_job_buys_none_of_its_unwritten_lines_online(
    standin: tuple[str, StandinState],  # noqa: F811
    essay_blobs: MemoryBlobs,
) -> None:
    """3 of 6 lines written: before, the other 3 went online at twice the batch rate."""
    w = world(standin, essay_blobs, batch_delay_seconds=0.1,
              batch_job_fails="JOB_STATE_PARTIALLY_SUCCEEDED", batch_job_fails_after=3)  # fmt: skip
    run = run_to_end(w)
    assert online_cells(w) == []
    assert sum(r["kind"] == "generate" for r in w["state"].requests) == 0  # no online call
    (job,) = run["batch_jobs"]
    assert (job["lines_read"], job["lines_stored"], job["lines_unwritten"]) == (3, 3, 3)
    failed = [c for c in w["store"].list_cells(w["run_id"]) if c["status"] == "failed"]
    assert len(failed) == 3
    assert (
        "ended JOB_STATE_PARTIALLY_SUCCEEDED without writing 3 of its 6 lines"
        in (failed[0]["error"]["message"])
    )


def test_a_partial_jobs_failed_line_may_still_go_online_but_not_its_unwritten_ones(
    standin: tuple[str, StandinState],  # noqa: F811
    essay_blobs: MemoryBlobs,
) -> None:
    w = world(standin, essay_blobs, batch_delay_seconds=0.1, batch_fail_lines=[1],
              batch_job_fails="JOB_STATE_PARTIALLY_SUCCEEDED", batch_job_fails_after=3)  # fmt: skip
    run = run_to_end(w)
    (job,) = run["batch_jobs"]
    assert (job["lines_stored"], job["lines_failed"], job["lines_unwritten"]) == (2, 1, 3)
    assert len(online_cells(w)) == 1 == job["lines_retried_online"]  # the failed line's cell


def test_a_file_written_after_the_others_is_read_before_the_job_is_settled(
    standin: tuple[str, StandinState],  # noqa: F811
    essay_blobs: MemoryBlobs,
) -> None:
    """Two files; the second is missing when the job is first read, and appears later."""
    w = world(standin, essay_blobs, batch_delay_seconds=0.1, batch_lines_per_file=3)
    w["step"](w["publisher"].cells[0])
    deadline = time.monotonic() + 10
    while not (late := [n for n in essay_blobs.objects if n.endswith("_00001.jsonl")]):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    held = essay_blobs.objects.pop(late[0])
    job = poll_until_ended(w)
    while "output_wait_since" not in job:  # its one file read; short of the 6 counted
        assert time.monotonic() < deadline and not job.get("ingested"), "settled short"
        job = poll(w)
    assert not job.get("ingested") and len(w["store"].cell_ids(w["run_id"])) == 3
    essay_blobs.objects[late[0]] = held
    poll_until_done(w)
    (job,) = w["store"].get_run(w["run_id"])["batch_jobs"]
    assert job["ingested"] and job["lines_read"] == 6 and len(job["ingest"]["files"]) == 2
    cells = w["store"].list_cells(w["run_id"])
    assert len(cells) == 6 and {c["status"] for c in cells} == {"answered"}
    assert online_cells(w) == []
