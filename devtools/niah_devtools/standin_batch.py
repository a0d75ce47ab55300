"""The Vertex stand-in's batch prediction jobs: create, get, list and cancel.

The routes and bodies are the ones google-genai's ``client.batches`` sends for Vertex
(read from google-genai 2.x's ``batches.py`` and seen on the wire): ``POST
.../batchPredictionJobs`` with ``model``, ``inputConfig.gcsSource.uris`` and
``outputConfig.gcsDestination.outputUriPrefix``; ``GET .../batchPredictionJobs/ID``;
``GET .../batchPredictionJobs``; ``POST .../batchPredictionJobs/ID:cancel``.

A job reads its input JSONL from Cloud Storage (the emulator, or a test's dict),
answers each line as an online call would be answered (the implicit cache model
included), writes ``predictions.jsonl`` under the destination prefix, and moves through
its states after ``batch_delay_seconds``. Output lines are as Vertex writes them for
Gemini: ``{"status": "", "processed_time": ..., "request": ..., "response": ...}``,
a failed line with its error in ``status`` and no response (Vertex AI "Batch inference
from Cloud Storage", docs.cloud.google.com/vertex-ai/generative-ai/docs/multimodal/
batch-prediction-from-cloud-storage, read 2026-11-27), written as the one public failed
line shows it: the HTTP reason phrase, then the error's JSON (``Bad Request: {"error":
{"code": 400, ...}}``, GoogleCloudPlatform/generative-ai issue 1308, read 2026-12-05;
the phrases of codes other than 400 are the standard ones, unseen from Google).

Faults, through ``/_standin/config``: ``batch_fail_lines`` (line numbers, from 0, that
fail with a 429-like status) or ``batch_fail_status`` (a status every line fails with, as
a missing permission would), ``batch_job_fails`` (a terminal state such as
``JOB_STATE_FAILED`` or ``JOB_STATE_EXPIRED``, with ``batch_job_error``;
``batch_job_fails_after`` lines written first; ``JOB_STATE_PARTIALLY_SUCCEEDED`` too),
``batch_line_delay_seconds`` (per line, so a test can cancel midway),
``batch_output_lag_gets`` (the job's state turns terminal, with its ``completionStats``,
before its files are written: they appear after that many GETs of the ended job, as an
export that lags the state would; no Google page says the export is complete at the
terminal state). A job that ends early exports the rows it completed, as
Vertex does ("If the batch prediction job is terminated, all completed rows are
exported", the page above).

How the request comes back, ``batch_echo``: ``verbatim`` (as sent), ``no_labels``
(labels dropped: no page says they are echoed), ``reformatted`` (keys in snake case and
another order, as a re-serialising service might write them), ``nulls`` (as Google's
sample notebook shows an echo: keys sorted, every part carrying ``file_data`` and
``text``, null where it had none; GoogleCloudPlatform/generative-ai, gemini/
batch-prediction/intro_batch_prediction.ipynb at 094823bd, read 2026-12-05),
``none`` (no request),
``cut_odd`` (the request's text cut short on every other line, as a service might cut a
4 MB echo). ``batch_corrupt_lines`` (line number, from 0, to the raw text written in its
place: a line no reader takes).
Output is split into files of ``batch_lines_per_file`` lines (default: one file).
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import re
import threading
import time
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

JOBS_PATH = re.compile(
    r"^/v1(?:beta1)?/(projects/[^/]+/locations/[^/]+)/batchPredictionJobs"
    r"(?:/(?P<job>[^/:?]+))?(?P<cancel>:cancel)?(?:\?.*)?$"
)
FINAL_STATES = (
    "JOB_STATE_SUCCEEDED",
    "JOB_STATE_FAILED",
    "JOB_STATE_CANCELLED",
    "JOB_STATE_EXPIRED",
    "JOB_STATE_PARTIALLY_SUCCEEDED",
)
# Kept on a job, never sent: its output held back, and the GETs left before it is written.
PRIVATE = ("cancel_requested", "held_output", "held_gets")
# What a line answers: (the request's generateContent body, the model) -> (status, reply).
Answer = Callable[[dict[str, Any], str], tuple[int, dict[str, Any]]]


class MemoryFiles:
    """gs:// objects in a dict: the stand-in's files with no Cloud Storage (tests, bench)."""

    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}

    def read(self, uri: str) -> bytes:
        """The object's bytes."""
        return self.objects[uri]

    def write(self, uri: str, data: bytes) -> None:
        """Store ``data`` at ``uri``."""
        self.objects[uri] = data


class GcsFiles:
    """gs:// objects through the Cloud Storage client (the emulator on the local stack)."""

    def read(self, uri: str) -> bytes:
        """The object's bytes."""
        bucket, name = _split(uri)
        return bytes(self._client().bucket(bucket).blob(name).download_as_bytes())

    def write(self, uri: str, data: bytes) -> None:
        """Store ``data`` at ``uri``."""
        bucket, name = _split(uri)
        self._client().bucket(bucket).blob(name).upload_from_string(
            data, content_type="application/jsonl"
        )

    def _client(self) -> Any:
        from google.cloud import storage

        return storage.Client()


def _split(uri: str) -> tuple[str, str]:
    bucket, _, name = uri.removeprefix("gs://").partition("/")
    return bucket, name


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat().replace("+00:00", "Z")


class BatchJobs:
    """The stand-in's batch jobs, each run on its own thread."""

    def __init__(self, files: Any = None) -> None:
        self.files = files if files is not None else GcsFiles()
        self.lock = threading.Lock()
        self.jobs: dict[str, dict[str, Any]] = {}
        self._ids = itertools.count(1000)

    def handle(
        self, method: str, path: str, body: dict[str, Any], config: dict[str, Any], answer: Answer
    ) -> tuple[int, dict[str, Any]] | None:
        """A batch route's answer, or None if ``path`` is not one."""
        match = JOBS_PATH.match(path)
        if match is None:
            return None
        parent, job, cancel = match.group(1), match.group("job"), match.group("cancel")
        if method == "POST" and job is None:
            return self.create(parent, body, dict(config), answer)
        if job is None:
            with self.lock:
                listed = [
                    {k: v for k, v in j.items() if k not in PRIVATE}
                    for j in self.jobs.values()
                    if j["name"].startswith(parent)
                ]
            return 200, {"batchPredictionJobs": listed}
        name = f"{parent}/batchPredictionJobs/{job}"
        with self.lock:
            found = self.jobs.get(name)
            if found is None:
                return 404, {
                    "error": {"code": 404, "message": f"{name} not found", "status": "NOT_FOUND"}
                }
            if cancel:
                if found["state"] not in FINAL_STATES:
                    found["state"] = "JOB_STATE_CANCELLING"
                    found["cancel_requested"] = True
                return 200, {}
            if found.get("held_output") is not None and found["state"] in FINAL_STATES:
                if found["held_gets"] <= 0:  # this reply comes after the files
                    self._write_output(*found.pop("held_output"))
                found["held_gets"] -= 1
            return 200, {k: v for k, v in found.items() if k not in PRIVATE}

    def create(
        self, parent: str, body: dict[str, Any], config: dict[str, Any], answer: Answer
    ) -> tuple[int, dict[str, Any]]:
        """Record a job in JOB_STATE_PENDING and start running it."""
        uris = (body.get("inputConfig") or {}).get("gcsSource", {}).get("uris") or []
        prefix = (body.get("outputConfig") or {}).get("gcsDestination", {}).get("outputUriPrefix")
        if not uris or not prefix:
            return 400, {
                "error": {
                    "code": 400,
                    "message": "inputConfig.gcsSource.uris and outputConfig.gcsDestination."
                    "outputUriPrefix are required",
                    "status": "INVALID_ARGUMENT",
                }
            }
        name = f"{parent}/batchPredictionJobs/{next(self._ids)}"
        job = {
            "name": name,
            "displayName": body.get("displayName", ""),
            "model": body.get("model", ""),
            "inputConfig": body["inputConfig"],
            "outputConfig": body["outputConfig"],
            "state": "JOB_STATE_PENDING",
            "createTime": _now(),
            "updateTime": _now(),
        }
        with self.lock:
            self.jobs[name] = job
        threading.Thread(
            target=self._run, args=(name, uris, prefix, config, answer), daemon=True
        ).start()
        return 200, dict(job)

    def _set(self, name: str, **fields: Any) -> bool:
        """Update the job; False (changing nothing) once it was asked to cancel."""
        with self.lock:
            job = self.jobs[name]
            if job.get("cancel_requested"):
                job.update(state="JOB_STATE_CANCELLED", endTime=_now(), updateTime=_now())
                return False
            job.update(fields, updateTime=_now())
            return True

    def _run(
        self, name: str, uris: list[str], prefix: str, config: dict[str, Any], answer: Answer
    ) -> None:
        delay = float(config.get("batch_delay_seconds", 0.5))
        time.sleep(delay / 2)
        if not self._set(name, state="JOB_STATE_RUNNING", startTime=_now()):
            return
        time.sleep(delay / 2)
        failure = config.get("batch_job_fails")
        stop_after = int(config.get("batch_job_fails_after") or 0) if failure else None
        error = config.get("batch_job_error") or "the job failed (stand-in fault)"
        if failure and not stop_after:
            self._set(name, state=failure, endTime=_now(), error={"code": 13, "message": error})
            return
        model = self.jobs[name]["model"].rpartition("/")[2]
        fail_lines = set(config.get("batch_fail_lines") or [])
        fail_all = config.get("batch_fail_status")
        line_delay = float(config.get("batch_line_delay_seconds") or 0)
        out, succeeded, failed = [], 0, 0
        lines = [line for uri in uris for line in self.files.read(uri).decode().splitlines()]
        directory = f"{prefix.rstrip('/')}/prediction-model-{name.rpartition('/')[2]}"
        ended: tuple[str, str | None] = ("JOB_STATE_SUCCEEDED", None)
        for number, text in enumerate(line for line in lines if line.strip()):
            if self.jobs[name].get("cancel_requested"):
                ended = ("JOB_STATE_CANCELLED", None)
                break
            if stop_after is not None and number >= stop_after:
                ended = (str(failure), error)
                break
            request = json.loads(text)["request"]
            status, reply = (
                (
                    429,
                    {
                        "error": {
                            "code": 429,
                            "message": "Resource exhausted (stand-in fault)",
                            "status": "RESOURCE_EXHAUSTED",
                        }
                    },
                )
                if number in fail_lines
                else (int(fail_all.get("code") or 403), {"error": fail_all})
                if fail_all
                else answer(request, model)
            )
            record: dict[str, Any] = {"status": "", "processed_time": _now(), "request": request}
            if status == 200:
                record["response"] = reply
                succeeded += 1
            else:
                record["status"] = _failed_status(status, reply.get("error", reply))
                failed += 1
            echo = str(config.get("batch_echo") or "verbatim")
            if echo == "cut_odd" and number % 2:
                echo = "cut"
            corrupt = (config.get("batch_corrupt_lines") or {}).get(str(number))
            out.append(corrupt if corrupt is not None else json.dumps(_echoed(record, echo)))
            time.sleep(line_delay)
        output = (directory, out, int(config.get("batch_lines_per_file") or 0))
        lag = config.get("batch_output_lag_gets")
        if lag is None:
            self._write_output(*output)
        with self.lock:
            job = self.jobs[name]
            state = "JOB_STATE_CANCELLED" if job.get("cancel_requested") else ended[0]
            job.update(
                state=state,
                endTime=_now(),
                updateTime=_now(),
                outputInfo={"gcsOutputDirectory": directory},
                # int64 counts, so JSON strings (proto3 JSON; js-genai types.CompletionStats
                # types them as string; read 2026-12-04).
                completionStats={
                    "successfulCount": str(succeeded),
                    "failedCount": str(failed),
                    "incompleteCount": str(len(lines) - succeeded - failed),
                },
            )
            if lag is not None:  # the state turns terminal before the files are there
                job.update(held_output=output, held_gets=int(lag))
            if ended[1] and state == ended[0]:
                job["error"] = {"code": 13, "message": ended[1]}

    def _write_output(self, directory: str, out: list[str], per_file: int) -> None:
        """The completed rows, in one file or several of ``per_file`` lines."""
        if not out:
            return
        step = per_file or len(out)
        chunks = [out[i : i + step] for i in range(0, len(out), step)]
        for number, chunk in enumerate(chunks):
            file = "predictions.jsonl" if len(chunks) == 1 else f"predictions_{number:05d}.jsonl"
            self.files.write(f"{directory}/{file}", ("\n".join(chunk) + "\n").encode())


def _snake(key: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


def _failed_status(code: int, error: dict[str, Any]) -> str:
    """A failed line's ``status``: ``Bad Request: {"error": {...}}``, as issue 1308 shows."""
    return f"{HTTPStatus(code).phrase}: {json.dumps({'error': error})}"


def _reformatted(value: Any) -> Any:
    """Keys in snake case and reversed order: the same request, written otherwise."""
    if isinstance(value, dict):
        return {_snake(k): _reformatted(v) for k, v in reversed(list(value.items()))}
    if isinstance(value, list):
        return [_reformatted(v) for v in value]
    return value


def _sorted(value: Any) -> Any:
    """Keys sorted at every depth."""
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


def _with_nulls(request: dict[str, Any]) -> dict[str, Any]:
    """The request as Google's sample echoes it: each part with its fields null where unset."""
    contents = [
        content | {"parts": [{"file_data": None, "text": None} | part for part in content["parts"]]}
        for content in request.get("contents", [])
    ]
    return _sorted(request | {"contents": contents})


def _echoed(record: dict[str, Any], echo: str) -> dict[str, Any]:
    """The output record with its request echoed as ``batch_echo`` says."""
    request = record["request"]
    if echo == "none":
        return {k: v for k, v in record.items() if k != "request"}
    if echo == "no_labels":
        return record | {"request": {k: v for k, v in request.items() if k != "labels"}}
    if echo == "reformatted":
        return record | {"request": _reformatted(request)}
    if echo == "nulls":
        return record | {"request": _with_nulls(request)}
    if echo == "cut":
        contents = [
            content | {"parts": [{"text": part.get("text", "")[:100]} for part in content["parts"]]}
            for content in request.get("contents", [])
        ]
        return record | {"request": request | {"contents": contents}}
    return record
