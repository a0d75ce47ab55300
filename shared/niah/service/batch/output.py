"""A batch job's output lines read, matched to their cells and stored.

A line is matched by the digest of the request it echoes (``batch_manifest``); a line
whose cell is stored already is skipped before any scoring or judge call, the rest are
scored and stored through the same create-if-absent write as an online answer. What a
reader saw (lines, failures, lines of shared prompts) goes into its piece's marker.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from typing import Any, BinaryIO

from niah.core.interfaces import (
    CLAIM_HELD,
    CLAIM_STORED,
    BlobStore,
    ModelAnswer,
    Publisher,
    ResultStore,
)
from niah.core.money.pricing import answer_cost
from niah.core.prompts.answer_budget import call_budget
from niah.core.prompts.token_fit import cell_token_fields
from niah.core.request.spec import RunRequest
from niah.core.runs import RunRecord
from niah.errors import CellInFlightError, NiahError, RetryableError
from niah.logs import log
from niah.models.providers.gemini import answer_from_json
from niah.models.providers.gemini_request import cell_of_line, request_digest
from niah.service.batch.manifest import prompt_groups, run_tasks
from niah.service.cells.answer import cell_record
from niah.service.cells.deps import ProviderFactory
from niah.service.cells.prompt import cell_sample
from niah.service.cells.records import harness_timestamp, store_cell
from niah.service.cells.run_view import record_view
from niah.service.cells.scoring import scored_answer
from niah.service.lease import LeaseKeeper
from niah.service.messages import CellTask
from niah.settings import get_settings


def lines_in_range(stream: BinaryIO, start: int, end: int) -> Iterator[tuple[int, bytes]]:
    """Each line (its offset, its bytes) that starts in ``[start, end)`` of ``stream``.

    A line belongs to the range it starts in: a range that starts mid-line skips to the
    next, and its last line may run past ``end``. So ranges that tile a file yield each
    line once, whatever their size.
    """
    if start > 0:
        stream.seek(start - 1)
        stream.readline()  # the rest of a line that began before this range
    else:
        stream.seek(0)
    position = stream.tell()
    while position < end:
        text = stream.readline()
        if not text:
            return
        yield position, text
        position += len(text)


class OutputReader:
    """What one piece (or a settle) reads and stores, and the tally it leaves behind."""

    def __init__(
        self,
        run: RunRecord,
        job: dict[str, Any],
        *,
        store: ResultStore,
        blobs: BlobStore,
        publisher: Publisher,
        provider_for: ProviderFactory,
    ) -> None:
        self.run_id, self.spec, self.job = run.run_id, run.spec, job
        self.store, self.blobs, self.publisher = store, blobs, publisher
        self.provider_for = provider_for
        self.view = record_view(run)
        self.tasks = {task.cell_id: task for task in run_tasks(run)}
        self.groups, self.planned = prompt_groups(job, blobs)
        self.stored = store.cell_ids(run.run_id)
        self.seen: dict[str, Any] = {
            "lines": 0, "stored": 0, "duplicate": 0, "unmatched": 0, "unmatched_answered": 0,
            "unmatched_usd": 0.0, "unreadable": [], "failed": [], "shared": [],
            "failed_prompts": [],
        }  # fmt: skip

    def read(self, name: str, start: int, end: int) -> int:
        """Handle each line that starts in ``[start, end)``; where it stopped."""
        deadline = time.monotonic() + get_settings().batch_ingest_seconds
        with self.blobs.open(name) as stream:
            for position, text in lines_in_range(stream, start, end):
                self.line(text, f"{name}@{position}")
                after = position + len(text)
                if after < end and time.monotonic() > deadline:
                    return after  # at least one line read: every hand-on moves on
        return end

    def line(self, text: bytes, line_id: str) -> None:
        """Match one output line to its cell and store it, fail it, or skip it.

        Whatever one line holds, it is that line's fault alone: a line that cannot be
        read or scored is kept as failed with its reason and the piece goes on. Only a
        fault of the service itself (the store, a lease held elsewhere) stops the
        piece, to be redelivered.
        """
        if not text.strip():
            return
        self.seen["lines"] += 1
        try:
            self._line(text, line_id)
        except RetryableError:
            raise
        except Exception as error:
            log("batch line failed", severity="WARNING", run_id=self.run_id, line=line_id,
                error=repr(error)[:300])  # fmt: skip
            self.seen["failed"].append([line_id, line_reason(f"unreadable line: {error}")])

    def _line(self, text: bytes, line_id: str) -> None:
        try:
            record = json.loads(text)
        except ValueError as error:
            record = error
        if not isinstance(record, dict):
            what = f"not JSON ({record})" if isinstance(record, ValueError) else (
                f"a JSON {type(record).__name__}, not an object"
            )  # fmt: skip
            self.seen["unreadable"].append([line_id, what[:200]])
            return
        digest = request_digest(record.get("request"))
        group = self._group(record, digest)
        answered = line_answered(record)
        if not group:
            self.seen["unmatched"] += 1
            if answered:  # billed by Google, and answered no cell of ours
                self.seen["unmatched_answered"] += 1
                self.seen["unmatched_usd"] += _line_cost(self.spec, record["response"])
            log("batch line of no cell of the run", severity="WARNING", run_id=self.run_id,
                line=line_id)  # fmt: skip
            return
        if not answered:
            self.seen["failed"].append([line_id, line_reason(record.get("status"))])
            self.seen["failed_prompts"].append([line_id, digest])  # its cells may go online
            return
        if len(group) > 1:  # cells sharing a prompt: paired with their lines at settle
            self.seen["shared"].append([line_id, digest])
            return
        if group[0] in self.stored:  # before any scoring or judge call
            self.seen["duplicate"] += 1
            return
        try:
            answer = answer_from_json(record["response"])
        except (NiahError, ValueError) as error:  # a line no reader takes fails alone
            self.seen["failed"].append([line_id, line_reason(f"unreadable response: {error}")])
            self.seen["failed_prompts"].append([line_id, digest])
            return
        outcome = self.store_line(group[0], answer, line_id)
        self.seen["stored" if outcome != "duplicate" else "duplicate"] += 1

    def _group(self, record: dict[str, Any], digest: str | None) -> list[str]:
        group = self.groups.get(digest or "", [])
        if group or self.groups:
            return [cell for cell in group if cell in self.tasks]
        legacy = cell_of_line(record)  # a job submitted before manifests
        return [legacy] if legacy in self.tasks else []

    def store_line(self, cell_id: str, answer: ModelAnswer, line_id: str) -> str:
        """Score and store ``answer`` as ``cell_id``, under the cell's lease.

        The lease, as the online path takes it: a delivery that finds another holding
        it backs off (redelivered) rather than score and judge the same answer twice.
        """
        settings = get_settings()
        claim = self.store.claim_cell(self.run_id, cell_id, settings.cell_lease_seconds)
        if claim == CLAIM_STORED:
            self.stored.add(cell_id)
            return "duplicate"
        if claim == CLAIM_HELD:
            raise CellInFlightError(f"{cell_id} is being stored by another delivery")
        try:
            with LeaseKeeper(self.store, self.run_id, cell_id, claim, settings.cell_lease_seconds):
                outcome = self._store_as(self.tasks[cell_id], answer, line_id)
        except BaseException:
            self.store.release_cell(self.run_id, cell_id, claim)
            raise
        self.stored.add(cell_id)
        return outcome

    def _store_as(self, task: CellTask, answer: ModelAnswer, line_id: str) -> str:
        spec = self.spec
        sample = cell_sample(task, spec, task.cell, self.blobs)
        budget = call_budget(spec, sample.answer_tokens)
        fields, totals, call_fields = scored_answer(
            task, spec, sample, answer, budget=budget, blobs=self.blobs,
            provider_for=self.provider_for, batch=True,
        )  # fmt: skip
        planned = self.planned.get(task.cell_id)
        if planned is not None:  # the exact local length, and how the model counted it
            fields |= {"planned_prompt_tokens": planned} | cell_token_fields(
                answer.prompt_tokens, planned
            )
        doc = (
            cell_record(task, spec, task.cell, sample)
            | fields
            | {
                "execution": "batch",
                "batch_job": self.job["name"],
                "batch_line": line_id,
                "test_timestamp_utc": harness_timestamp(),
            }
        )
        call = (f"{task.cell_id}.B{int(self.job.get('round', 0)):03d}", call_fields)
        return store_cell(task, doc, totals, call=call, store=self.store, blobs=self.blobs,
                          publisher=self.publisher, run=self.view)  # fmt: skip

    def read_line(self, line_id: str) -> dict[str, Any]:
        """The output line at ``line_id`` (``FILE@OFFSET``), read again."""
        name, _, offset = line_id.rpartition("@")
        with self.blobs.open(name) as stream:
            stream.seek(int(offset))
            record: dict[str, Any] = json.loads(stream.readline())
        return record


def _line_cost(spec: RunRequest, response: dict[str, Any]) -> float:
    """What Google bills for a line's answer, at the batch rate (0 if unreadable)."""
    try:
        return answer_cost(spec.model_name, answer_from_json(response), batch=True).usd
    except Exception:
        return 0.0


def reason_key(reason: str) -> str:
    """A reason as it groups: numbers (request IDs, counts) do not tell reasons apart."""
    return re.sub(r"\d+", "#", reason)


# A failed line's reason is kept to this many characters: Google's message of a service
# agent still being made (issue 1308 below) runs to 249 with its name and code.
REASON_CHARS = 300

# Vertex writes a failed line's ``status`` as an HTTP reason phrase before the error's
# JSON: ``Bad Request: {"error": {"code": 400, "message": "Service agents are being
# provisioned ...", "status": "FAILED_PRECONDITION"}}`` (GoogleCloudPlatform/
# generative-ai issue 1308, read 2026-12-05; tests/data/google_recorded).
_PHRASED_ERROR = re.compile(r"^[A-Z][A-Za-z '-]*:\s*(\{.*\})\s*$", re.DOTALL)


def line_answered(record: dict[str, Any]) -> bool:
    """Whether an output line holds an answer: no status, and a response object."""
    return not record.get("status") and isinstance(record.get("response"), dict)


def line_reason(status: Any) -> str:
    """A failed line's reason: its error's status, code and message, as Google wrote them.

    The error inside a status written as ``Bad Request: {"error": {...}}`` is unwrapped:
    the phrase is the HTTP code's (many reasons share a 400), the inner ``status``
    (``FAILED_PRECONDITION``) and message are what tell one reason from another.
    """
    if isinstance(status, str):
        text = status.strip()
        phrased = _PHRASED_ERROR.match(text)
        try:
            status = json.loads(phrased.group(1) if phrased else text)
        except ValueError:
            status = None
        if not isinstance(status, dict):
            return text[:REASON_CHARS] or "failed without a status"
    if isinstance(status, dict):
        inner = status.get("error")
        error = inner if isinstance(inner, dict) else status
        name, code = error.get("status") or "", error.get("code") or ""
        head = f"{name} ({code})" if name and code else str(name or code)
        message = str(error.get("message") or "").strip()
        return f"{head}: {message}"[:REASON_CHARS].strip(": ") or "failed without a status"
    return str(status)[:REASON_CHARS] if status else "no response and no status"
