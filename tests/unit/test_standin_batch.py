"""The stand-in's batch jobs, driven by google-genai's own ``client.batches``."""

from __future__ import annotations

import functools
import json
import time
from typing import Any

import pytest
import requests

from niah.models.providers.gemini_request import (
    batch_line,
    generation_for,
    request_body,
    request_digest,
)
from niah_devtools.standin import StandinState
from niah_devtools.standin_batch import MemoryFiles
from tests.unit.test_vertex_standin import standin  # noqa: F401 (the fixture)

PROMPT = "Some essay text. The special magic Lagos number is: 7304912. More text."


@functools.cache  # one client a stand-in: a client dropped is closed under its requests
def client(url: str) -> Any:
    import google.oauth2.credentials
    from google import genai
    from google.genai import types

    return genai.Client(
        vertexai=True,
        project="niah-test",
        location="global",
        credentials=google.oauth2.credentials.Credentials(token="t"),
        http_options=types.HttpOptions(base_url=url),
    )


def generation_of() -> Any:
    return generation_for("gemini-2.5-flash", max_output_tokens=1000, thinking_budget=0)


def submit(url: str, state: StandinState, cells: int, **config: Any) -> tuple[Any, MemoryFiles]:
    requests.post(f"{url}/_standin/config", json=config, timeout=5).raise_for_status()
    files = MemoryFiles()
    state.batch.files = files
    generation = generation_of()
    lines = [
        batch_line(request_body(f"{PROMPT} Line {n}.", None, generation)) for n in range(cells)
    ]
    files.write("gs://b/batches/in.jsonl", "\n".join(json.dumps(x) for x in lines).encode())
    job = client(url).batches.create(
        model="gemini-2.5-flash",
        src="gs://b/batches/in.jsonl",
        config={"dest": "gs://b/batches/out/", "display_name": "niah-test"},
    )
    return job, files


def wait_done(url: str, name: str) -> Any:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        job = client(url).batches.get(name=name)
        if job.done:
            return job
        time.sleep(0.05)
    raise AssertionError("the job did not finish")


def test_a_job_answers_every_line_and_writes_its_predictions(
    standin: tuple[str, StandinState],  # noqa: F811
) -> None:
    url, state = standin
    job, files = submit(url, state, 3, batch_delay_seconds=0.2)
    assert job.state.name == "JOB_STATE_PENDING" and job.name.startswith(
        "projects/niah-test/locations/global/batchPredictionJobs/"
    )
    done = wait_done(url, job.name)
    assert done.state.name == "JOB_STATE_SUCCEEDED"
    directory = done.dest.gcs_uri if done.dest else None
    assert directory == "gs://b/batches/out/"
    [output] = [uri for uri in files.objects if uri.endswith("predictions.jsonl")]
    lines = [json.loads(x) for x in files.objects[output].decode().splitlines()]
    # Each prediction echoes the request it answers, in input order here.
    asked = [request_body(f"{PROMPT} Line {n}.", None, generation_of()) for n in range(3)]
    assert [request_digest(x["request"]) for x in lines] == [request_digest(r) for r in asked]
    text = lines[0]["response"]["candidates"][0]["content"]["parts"][-1]["text"]
    assert "7304912" in text and lines[0]["response"]["usageMetadata"]["promptTokenCount"] > 0
    assert [job.name for job in client(url).batches.list()] == [done.name]
    assert sum(r["kind"] == "batch_line" for r in state.requests) == 3


def test_a_failed_line_and_a_failed_job_are_reported(
    standin: tuple[str, StandinState],  # noqa: F811
) -> None:
    url, state = standin
    job, files = submit(url, state, 3, batch_delay_seconds=0.1, batch_fail_lines=[1])
    wait_done(url, job.name)
    [output] = [uri for uri in files.objects if uri.endswith("predictions.jsonl")]
    lines = [json.loads(x) for x in files.objects[output].decode().splitlines()]
    assert [bool(x["status"]) for x in lines] == [False, True, False]
    assert "response" not in lines[1] and "Resource exhausted" in lines[1]["status"]
    failed, _ = submit(
        url, state, 2, batch_delay_seconds=0.1, batch_job_fails="JOB_STATE_EXPIRED",
        batch_job_error="ran past 24 hours",
    )  # fmt: skip
    ended = wait_done(url, failed.name)
    assert ended.state.name == "JOB_STATE_EXPIRED" and "24 hours" in ended.error.message


def test_a_job_cancelled_while_pending_answers_nothing(
    standin: tuple[str, StandinState],  # noqa: F811
) -> None:
    url, state = standin
    job, files = submit(url, state, 3, batch_delay_seconds=1.0)
    client(url).batches.cancel(name=job.name)
    ended = wait_done(url, job.name)
    assert ended.state.name == "JOB_STATE_CANCELLED"
    assert not [uri for uri in files.objects if uri.endswith("predictions.jsonl")]
    assert not [r for r in state.requests if r["kind"] == "batch_line"]


@pytest.mark.parametrize("path", ["/v1beta1/projects/p/locations/l/batchPredictionJobs/9"])
def test_an_unknown_job_is_404(standin: tuple[str, StandinState], path: str) -> None:  # noqa: F811
    url, _ = standin
    assert requests.get(url + path, timeout=5).status_code == 404
