"""The whole service on one machine: HTTP in, Pub/Sub push, worker, Firestore, report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

import pytest
import requests

from niah.cloud.blobs import GcsBlobStore
from niah.cloud.store import FirestoreStore
from niah_devtools import local_identity
from tests.integration.conftest import Stack, drain, wait_for

pytestmark = pytest.mark.integration

RUN = {"context_lengths": [300, 700], "document_depth_percents": [0, 50, 100], "seed": 7}
HARNESS_FIELDS = {
    "model",
    "context_length",
    "depth_percent",
    "version",
    "needle",
    "model_response",
    "score",
    "test_duration_seconds",
    "test_timestamp_utc",
}


def post(
    stack: Stack, body: Any, *, content_type: str = "application/json", timeout: float = 60
) -> requests.Response:
    data = body if isinstance(body, (str, bytes)) else json.dumps(body)
    return requests.post(
        stack.env["DISPATCHER_URL"],
        data=data,
        headers={"Content-Type": content_type, **local_identity.headers()},
        timeout=timeout,
    )


def wait_complete(run_id: str, timeout: float = 300) -> dict[str, Any]:
    store = FirestoreStore()

    def complete() -> dict[str, Any] | None:
        run = store.get_run(run_id)
        return run if run and run.get("status") == "complete" and run.get("report") else None

    return wait_for(complete, timeout=timeout, what=f"run {run_id} to complete")


@pytest.fixture(scope="module")
def finished_run(stack: Stack) -> dict[str, Any]:
    drain(stack.tap, settle_seconds=0.5)
    response = post(stack, RUN)
    assert response.status_code == 202, response.text
    body = response.json()
    run = wait_complete(body["run_id"])
    return {"body": body, "run": run, "published": drain(stack.tap)}


def test_a_run_submitted_over_http_completes_with_every_cell_and_the_report(
    stack: Stack, finished_run: dict[str, Any]
) -> None:
    run_id = finished_run["body"]["run_id"]
    assert finished_run["body"]["cells"] == 6
    assert sorted(m["cell_id"] for m in finished_run["published"]) == sorted(
        f"L{length:08d}-D{depth * 1000:06d}" for length in (300, 700) for depth in (0, 50, 100)
    )
    run = finished_run["run"]
    assert (run["total"], run["done"] + run["failed"]) == (6, 6)
    cells = FirestoreStore().list_cells(run_id)
    assert len(cells) == 6
    for cell in cells:
        assert cell.keys() >= HARNESS_FIELDS
        assert cell["expected_answer"] in cell["needle"]
        assert cell["model_response"].strip(), "the local model gave no answer"
        assert cell["score"] in (1, 10)
        assert cell["usage"]["prompt_token_count"] >= cell["context_length"]
    # The real model finds most needles at these lengths.
    assert sum(cell["score"] == 10 for cell in cells) >= 4
    blobs = GcsBlobStore(stack.env["NIAH_BUCKET"])
    heatmap = run["report"]["heatmap_uri"].split("/", 3)[3]
    assert blobs.read(heatmap).startswith(b"\x89PNG")
    summary = json.loads(blobs.read(run["report"]["summary_uri"].split("/", 3)[3]))
    assert summary["cells"] == 6 and summary["run_id"] == run_id


def test_a_redelivered_cell_does_not_call_the_model_nor_count_twice(
    stack: Stack, finished_run: dict[str, Any]
) -> None:
    import google.cloud.pubsub_v1 as pubsub_v1

    run_id = finished_run["body"]["run_id"]
    store = FirestoreStore()
    message = finished_run["published"][0]
    before = store.list_cells(run_id)

    def model_calls() -> int:
        return sum(
            1
            for line in stack.log_lines("worker")
            if line.get("message") == "model call" and line.get("run_id") == run_id
        )

    calls_before = model_calls()
    assert calls_before == 6
    publisher = pubsub_v1.PublisherClient()
    topic = publisher.topic_path(stack.env["NIAH_PROJECT"], "niah-cells")
    for _ in range(2):
        publisher.publish(topic, json.dumps(message).encode()).result(timeout=30)
    wait_for(
        lambda: (
            sum(
                1
                for line in stack.log_lines("worker")
                if line.get("message") == "duplicate delivery suppressed"
                and line.get("cell_id") == message["cell_id"]
            )
            >= 2
        ),
        timeout=60,
        what="the worker to see both duplicates",
    )
    assert model_calls() == calls_before
    run = store.get_run(run_id)
    assert run is not None and (run["done"] + run["failed"], run["total"]) == (6, 6)
    assert store.list_cells(run_id) == before


@pytest.mark.parametrize(
    ("body", "content_type", "field"),
    [
        (
            {"context_lengths": [1000], "document_depth_percents": [150]},
            "application/json",
            "document_depth_percents",
        ),
        ({"context_lengths": "1000"}, "application/json", "context_lengths"),
        ({"model_nmae": "gemini-2.5-pro"}, "application/json", "model_nmae"),
        ("{not json", "application/json", "body"),
        ("context_lengths=1000", "application/x-www-form-urlencoded", "Content-Type"),
        ({"context_lengths": [100_000]}, "application/json", "context_lengths"),
    ],
)
def test_a_malformed_request_is_refused_and_publishes_nothing(
    stack: Stack, body: Any, content_type: str, field: str
) -> None:
    drain(stack.tap, settle_seconds=0.5)
    runs_before = {run.id for run in FirestoreStore()._db.collection("runs").stream()}
    response = post(stack, body, content_type=content_type)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["field"] == field
    assert response.json()["error"]["message"]
    assert drain(stack.tap, settle_seconds=1.0) == []
    assert {run.id for run in FirestoreStore()._db.collection("runs").stream()} == runs_before


def test_the_cli_runs_waits_reports_and_exports(stack: Stack, tmp_path: Any) -> None:
    result = stack.niah(
        "run", "--context-lengths", "400", "--document_depth_percents", "25", "75",
        "--seed", "11", "--wait", "--timeout", "300",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    run_id = result.stdout.split()[1].rstrip(":")
    assert "heatmap: gs://" in result.stdout
    assert "depth %" in result.stdout
    png = tmp_path / "heatmap.png"
    assert stack.niah("report", run_id, "--out", str(png)).returncode == 0
    assert png.read_bytes().startswith(b"\x89PNG")
    assert stack.niah("export", run_id, "--out", str(tmp_path / "cells")).returncode == 0
    folder = tmp_path / "cells"
    exported = [json.loads(p.read_text()) for p in folder.glob("*_results.json")]
    assert len(exported) == 2
    assert all(cell.keys() >= HARNESS_FIELDS for cell in exported)
    # Only the cells in the folder (the harness's notebooks read every *.json there);
    # the run's summary beside it.
    assert len(list(folder.iterdir())) == 2
    assert json.loads((tmp_path / "cells.summary.json").read_text())["samples"] == 2


def test_ctrl_c_stops_following_and_niah_wait_reattaches_without_publishing(
    stack: Stack,
) -> None:
    import signal

    env = {**os.environ, **stack.env}
    drain(stack.tap, settle_seconds=0.5)
    # Ctrl-C as at a terminal, however the suite was started: a shell starts a
    # background job with SIGINT ignored, and Python then leaves it ignored. The CLI's
    # own process takes Python's handler back before it runs: a preexec_fn would run in
    # a fork of this gRPC-threaded process, where gRPC's fork handler once aborted the
    # child (epoll_wait: bad file descriptor) before it became niah.
    as_at_a_terminal = (
        "import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
        "sys.argv = ['niah', *sys.argv[1:]]; runpy.run_module('niah.cli', run_name='__main__')"
    )
    follow = subprocess.Popen(
        [sys.executable, "-c", as_at_a_terminal, "run", "--context_lengths", "500", "900",
         "--document_depth_percents", "30", "60", "--seed", "23", "--wait"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    assert follow.stdout is not None
    first = follow.stdout.readline()  # "run run-...: 4 cells"
    if not first.startswith("run "):  # the CLI ended before it followed: say why
        rest, stderr = follow.communicate(timeout=60)
        pytest.fail(f"niah run --wait printed {first + rest!r}, rc {follow.returncode}: {stderr}")
    run_id = first.split()[1].rstrip(":")
    time.sleep(1)
    follow.send_signal(signal.SIGINT)
    _, stderr = follow.communicate(timeout=60)
    assert follow.returncode == 130
    assert f"the run goes on. Follow it again with: niah wait {run_id}" in stderr
    assert "Traceback" not in stderr
    # Cache-aware dispatch publishes the primer first and the other 3 once it is
    # answered: by the end, each cell once.
    published = len(drain(stack.tap))
    assert published in (1, 4)
    again = stack.niah("wait", run_id, "--timeout", "300")
    assert again.returncode == 0, again.stderr[-2000:]
    assert "heatmap: gs://" in again.stdout
    assert published + len(drain(stack.tap)) == 4  # re-attaching published nothing


def test_the_local_model_s_certificate_is_budgeted_in_its_model_time(stack: Stack) -> None:
    """Issue 54: the local model's certification is budgeted in its model time.

    It has no price; its cost is its time, so the budget is a quarter of the grid's
    estimated model seconds, and the certificate spends no more.
    """
    from niah.core.request.spec import RunRequest
    from niah.core.results.certify_run import grid_seconds

    body = RUN | {"mode": "certify", "seed": 54}
    response = post(stack, body)
    assert response.status_code == 202, response.text
    run_id = response.json()["run_id"]
    run = wait_complete(run_id, timeout=600)
    plan = run["certify"]["plan"]
    grid = grid_seconds(RunRequest.model_validate(run["spec"]))
    assert grid is not None  # the catalog gives the local model's speed
    assert plan["budget_usd"] is None and plan["max_tokens"] is None
    assert plan["budget_seconds"] == pytest.approx(grid / 4, rel=1e-9)
    blobs = GcsBlobStore(stack.env["NIAH_BUCKET"])
    summary = json.loads(blobs.read(run["report"]["summary_uri"].split("/", 3)[3]))
    certificate = summary["certificate"]
    assert certificate["budget_seconds"] == plan["budget_seconds"]
    assert 0 < certificate["seconds"] <= plan["budget_seconds"]
    # The seconds are kept to the tenth, the share to four places: each off by half of that.
    off = 0.05 / grid + 0.00005
    assert certificate["share_of_grid"] == pytest.approx(certificate["seconds"] / grid, abs=off)
    cells = FirestoreStore().list_cells(run_id)
    assert len(cells) == int(run["total"]) >= certificate["samples"] > 0
    page = blobs.read(f"reports/{run_id}/report.html").decode()
    assert "s of model time (estimated)" in page  # the budget and what it spent, so named
