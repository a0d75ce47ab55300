"""A batch job's output read back into cells: matched by content, in bounded pieces.

**Matching.** A line carries no cell key (Google documents none for Cloud Storage
input, and a label per cell breaks its label caps). At submit, each job gets a
*manifest* beside its input file: the digest of each line's prompt
(``request_digest``) and the cells that asked it. An output line is matched by the
digest of the request it echoes. Cells whose prompts are the same (an absent needle at
two depths) share a digest: a line takes the first of them not yet stored, and a claim
object per line (``ingest/JOB/lines/``) keeps that choice across redeliveries.

**Pieces.** Ingest is fanned out as messages on the cells topic, one per byte range of
each output file (``batch_ingest_piece_bytes``). A piece streams its range, skips a
line whose cell is stored before any scoring or judge call, stores the rest through
the same create-if-absent write as an online answer, and writes a marker of what it
saw. A piece that runs past ``batch_ingest_seconds`` hands the rest of its range to a
new message, so no request holds a whole file or outlives the function's timeout. A
piece holds a lease while it reads; one whose worker died is asked again by the sweep
once its lease lapses (``niah.service.batch_pieces``).

**Settling.** When the markers cover every byte of the job's output, the job is settled
once (a claim guards it): its unstored cells are the failed lines and the lines the job
never wrote. A job whose lines matched no cell fails loudly and is not marked
ingested. A reason that failed most lines (``batch_systemic_share``) is a fault of the
deployment or the service, not of a line: the cells are stored failed with it, and the
grid is not bought again online. Otherwise failed lines go online, at most
``batch_online_fallback_max`` a job. A job that ended early (cancelled, expired, failed)
keeps what it wrote, Google bills those rows; its other cells fail with its reason, or,
in a cancelled or superseded run, wait for the next round.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any, BinaryIO, NamedTuple

from niah.core.answer_budget import call_budget
from niah.core.interfaces import (
    CLAIM_HELD,
    CLAIM_STORED,
    RUN_CANCELLED,
    BlobInfo,
    BlobStore,
    ModelAnswer,
    Publisher,
    ResultStore,
)
from niah.core.pricing import answer_cost
from niah.core.spec import RunRequest
from niah.core.token_fit import cell_token_fields
from niah.errors import BatchJobError, CellInFlightError, NiahError, RetryableError
from niah.logs import log
from niah.models.providers import get_provider
from niah.models.providers.gemini import answer_from_json
from niah.models.providers.gemini_request import cell_of_line, request_digest
from niah.service.batch_pieces import file_key, job_key, piece_lease
from niah.service.cell_answer import cell_record
from niah.service.cell_prompt import cell_sample
from niah.service.cell_records import failed_cell, harness_timestamp, store_cell
from niah.service.cell_scoring import scored_answer
from niah.service.lease import LeaseKeeper
from niah.service.messages import (
    BATCH_FAIL,
    BATCH_SETTLE,
    BATCH_SUBMIT,
    CellTask,
    batch_message,
    cell_messages,
    ingest_message,
)
from niah.service.run_completion import request_report_if_complete
from niah.service.run_view import RunView, run_view
from niah.service.worker_deps import ProviderFactory
from niah.settings import get_settings

MANIFEST_TYPE = "application/json"


def haystack_files(run: dict[str, Any]) -> list[BlobInfo] | None:
    """The haystack listing the run was created with (None: the worker lists)."""
    listed = run.get("haystack_files") or None
    return (
        [BlobInfo(str(f["name"]), int(f["size"]), str(f["fingerprint"])) for f in listed]
        if listed
        else None
    )


def run_tasks(
    run_id: str, spec: RunRequest, run: dict[str, Any], skip: set[str] | None = None
) -> list[CellTask]:
    """The run's cells as tasks, those in ``skip`` left out."""
    skip = skip or set()
    return [
        CellTask.from_message(message)
        for message in cell_messages(run_id, spec, run)
        if message["cell_id"] not in skip
    ]


# ---------- the manifest: which cells each line's prompt belongs to ----------


def manifest_name(input_name: str) -> str:
    """The manifest's object beside the input file ``...-input-000.jsonl``."""
    return input_name.removesuffix(".jsonl").replace("-input-", "-cells-") + ".json"


class ManifestLine(NamedTuple):
    """An input line and what its manifest keeps of it."""

    cell_id: str
    digest: str  # request_digest of its request
    planned_prompt_tokens: int | None  # its prompt's exact local length, if built here
    json: bytes  # the line as written to the input file


def write_manifest(blobs: BlobStore, name: str, lines: list[ManifestLine]) -> None:
    """Store each line's cell, digest and local prompt length, in input order."""
    body = json.dumps(
        {"lines": [[line.cell_id, line.digest, line.planned_prompt_tokens] for line in lines]}
    )
    blobs.write(name, body.encode(), content_type=MANIFEST_TYPE)


def job_cells(job: dict[str, Any], blobs: BlobStore) -> list[str]:
    """The cells a job asked, in input order (its manifest, or an older job's list)."""
    if "manifest" not in job:
        return list(job.get("cell_ids") or [])
    return [str(line[0]) for line in _manifest_lines(job, blobs)]


def _manifest_lines(job: dict[str, Any], blobs: BlobStore) -> list[list[Any]]:
    lines: list[list[Any]] = json.loads(blobs.read(_object(job["manifest"], blobs)))["lines"]
    return lines


def _groups(job: dict[str, Any], blobs: BlobStore) -> tuple[dict[str, list[str]], dict[str, int]]:
    """Digest -> the cells that asked that prompt (input order); each cell's local length."""
    groups: dict[str, list[str]] = {}
    planned: dict[str, int] = {}
    for cell, digest, *rest in _manifest_lines(job, blobs) if "manifest" in job else []:
        groups.setdefault(digest, []).append(cell)
        if rest and rest[0] is not None:
            planned[cell] = int(rest[0])
    return groups, planned


def _object(uri: str, blobs: BlobStore) -> str:
    return uri.removeprefix(f"gs://{blobs.bucket}/")


# ---------- starting: one message per piece of each output file ----------


def output_files(output_dir: str, blobs: BlobStore) -> list[BlobInfo]:
    """The JSONL files a job wrote under ``output_dir`` (none: it wrote nothing)."""
    prefix = _object(output_dir, blobs).rstrip("/") + "/"
    return [info for info in blobs.list(prefix) if info.name.endswith(".jsonl")]


def start_ingest(
    run_id: str, run: dict[str, Any], job: dict[str, Any], files: list[BlobInfo]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The fields the job records of its ingest, and a message per piece of ``files``.

    The caller saves the fields before it publishes: a piece that finds no ingest on
    its job is redelivered, so publishing first only costs redeliveries.
    """
    step = get_settings().batch_ingest_piece_bytes
    messages = [
        ingest_message(run_id, run, job["name"], info.name, start, min(start + step, info.size))
        for info in files
        for start in range(0, info.size, step)
    ]
    log("batch output ingest started", run_id=run_id, job=job["name"], files=len(files),
        pieces=len(messages))  # fmt: skip
    # Firestore holds no array in an array: each file as a map.
    listed = [{"name": info.name, "size": info.size} for info in files]
    return {"ingest": {"files": listed, "started_at": dt.datetime.now(dt.UTC)}}, messages


def tend_ingest(
    run_id: str, run: dict[str, Any], job: dict[str, Any], *, store: ResultStore,
    blobs: BlobStore, publisher: Publisher, provider_for: ProviderFactory = get_provider,
) -> bool:  # fmt: skip
    """A job being ingested, as a poll finds it: settled once read, its lost pieces re-asked.

    A piece whose worker died is asked again by the sweep as soon as its lease lapses
    (``batch_pieces``); this is the backstop for one that died before taking its lease,
    or a message lost. A live piece writes a marker at least every
    ``batch_ingest_seconds`` (a hand-on writes one), so coverage that has not grown for
    twice that has no live piece behind it: only then are its gaps published again.
    Whether ``job`` changed (its progress noted), to be saved.
    """
    seen = _markers(run_id, job, blobs)
    gaps = [
        (file["name"], start, end)
        for file in job["ingest"]["files"]
        for start, end in _gaps(seen.get(file["name"], []), int(file["size"]))
    ]
    if not gaps:
        settle_job(run_id, job["name"], store=store, blobs=blobs, publisher=publisher,
                   provider_for=provider_for)  # fmt: skip
        return False
    ingest, now = job["ingest"], dt.datetime.now(dt.UTC)
    missing = sum(end - start for _, start, end in gaps)
    if missing != ingest.get("missing_bytes"):
        ingest |= {"missing_bytes": missing, "progress_at": now}
        return True
    since = ingest.get("progress_at") or ingest.get("started_at") or now
    if (now - since).total_seconds() < 2 * get_settings().batch_ingest_seconds:
        return False
    publisher.publish_cells(
        [ingest_message(run_id, run, job["name"], name, a, b) for name, a, b in gaps]
    )
    log("lost batch ingest pieces published again", severity="WARNING", run_id=run_id,
        job=job["name"], pieces=len(gaps))  # fmt: skip
    ingest["progress_at"] = now
    return True


# ---------- a piece ----------


def ingest_piece(
    body: dict[str, Any],
    run: dict[str, Any],
    spec: RunRequest,
    *,
    store: ResultStore,
    blobs: BlobStore,
    publisher: Publisher,
    provider_for: ProviderFactory,
) -> str:
    """Store the answered lines of one byte range of one output file; settle if last.

    Under the piece's lease (``batch_pieces``), renewed while it reads and released once
    its marker is written: a piece whose worker dies is published again by the sweep
    once the lease lapses. A delivery that finds the lease held backs off (redelivered).
    """
    run_id = str(body["run_id"])
    job = _job(run, str(body["job"]))
    if job is None or job.get("ingested") or job.get("ended"):
        return "nothing to ingest"
    if "ingest" not in job:  # published just before the poll recorded the ingest
        raise CellInFlightError(f"the ingest of {job['name']} is not recorded yet")
    name, start, end = str(body["file"]), int(body["start"]), int(body["end"])
    lease_seconds = get_settings().cell_lease_seconds
    key = piece_lease(job["name"], name, start, end)
    claim = store.claim_cell(run_id, key, lease_seconds)
    if claim == CLAIM_HELD:
        raise CellInFlightError(f"{name} from {start} is being read by another delivery")
    try:
        with LeaseKeeper(store, run_id, key, claim, lease_seconds):
            piece = _Piece(run_id, run, spec, job, store=store, blobs=blobs,
                           publisher=publisher, provider_for=provider_for)  # fmt: skip
            stop = piece.read(name, start, end)
            _write_marker(run_id, job, name, start, stop, piece.seen, blobs)
            if stop < end:
                rest = ingest_message(run_id, run, job["name"], name, stop, end)
                publisher.publish_cells([rest])
    finally:
        store.release_cell(run_id, key, claim)
    if stop < end:
        log("batch ingest piece handed on", run_id=run_id, file=name, at=stop, end=end)
        return "handed on"
    if _covered(run_id, job, blobs):
        return settle_job(run_id, job["name"], store=store, blobs=blobs, publisher=publisher,
                          provider_for=provider_for)  # fmt: skip
    return "piece ingested"


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


class _Piece:
    """What one piece (or a settle) reads and stores, and the tally it leaves behind."""

    def __init__(
        self,
        run_id: str,
        run: dict[str, Any],
        spec: RunRequest,
        job: dict[str, Any],
        *,
        store: ResultStore,
        blobs: BlobStore,
        publisher: Publisher,
        provider_for: ProviderFactory,
    ) -> None:
        self.run_id, self.spec, self.job = run_id, spec, job
        self.store, self.blobs, self.publisher = store, blobs, publisher
        self.provider_for = provider_for
        self.view = run_view(run_id, run)
        self.tasks = {task.cell_id: task for task in run_tasks(run_id, spec, run)}
        self.groups, self.planned = _groups(job, blobs)
        self.stored = store.cell_ids(run_id)
        self.seen: dict[str, Any] = {
            "lines": 0, "stored": 0, "duplicate": 0, "unmatched": 0, "unmatched_answered": 0,
            "unmatched_usd": 0.0, "unreadable": [], "failed": [], "shared": [],
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
            self.seen["failed"].append([line_id, _reason(f"unreadable line: {error}")])

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
        answered = not record.get("status") and isinstance(record.get("response"), dict)
        if not group:
            self.seen["unmatched"] += 1
            if answered:  # billed by Google, and answered no cell of ours
                self.seen["unmatched_answered"] += 1
                self.seen["unmatched_usd"] += _line_cost(self.spec, record["response"])
            log("batch line of no cell of the run", severity="WARNING", run_id=self.run_id,
                line=line_id)  # fmt: skip
            return
        if not answered:
            self.seen["failed"].append([line_id, _reason(record.get("status"))])
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
            self.seen["failed"].append([line_id, _reason(f"unreadable response: {error}")])
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


def _reason(status: Any) -> str:
    """A failed line's reason: its status code and message, as Google wrote them."""
    if isinstance(status, str):
        try:
            status = json.loads(status)
        except ValueError:
            return status.strip()[:200] or "failed without a status"
    if isinstance(status, dict):
        code = status.get("code") or status.get("status") or ""
        message = str(status.get("message") or "").strip()
        return f"{code}: {message}"[:200].strip(": ") or "failed without a status"
    return str(status)[:200] if status else "no response and no status"


# ---------- markers: which bytes of which files a piece has read ----------


def _ingest_prefix(run_id: str, job: dict[str, Any]) -> str:
    return f"{get_settings().batches_prefix}{run_id}/ingest/{job_key(str(job['name']))}/"


def _write_marker(
    run_id: str, job: dict[str, Any], name: str, start: int, end: int, seen: dict[str, Any],
    blobs: BlobStore,
) -> None:  # fmt: skip
    marker = f"{_ingest_prefix(run_id, job)}pieces/{file_key(name)}-{start:013d}-{end:013d}.json"
    body = {"file": name, "start": start, "end": end} | seen
    blobs.write(marker, json.dumps(body).encode(), content_type=MANIFEST_TYPE)


def _marker_infos(run_id: str, job: dict[str, Any], blobs: BlobStore) -> list[BlobInfo]:
    return blobs.list(f"{_ingest_prefix(run_id, job)}pieces/")


def _markers(
    run_id: str, job: dict[str, Any], blobs: BlobStore
) -> dict[str, list[tuple[int, int]]]:
    """Each output file's ranges read, by file name (from the markers' names)."""
    keys = {file_key(file["name"]): file["name"] for file in job["ingest"]["files"]}
    ranges: dict[str, list[tuple[int, int]]] = {}
    for info in _marker_infos(run_id, job, blobs):
        key, start, end = info.name.rsplit("/", 1)[1].removesuffix(".json").split("-")
        if key in keys:
            ranges.setdefault(keys[key], []).append((int(start), int(end)))
    return ranges


def _gaps(ranges: list[tuple[int, int]], size: int) -> list[tuple[int, int]]:
    """The parts of ``[0, size)`` no range covers."""
    gaps, at = [], 0
    for start, end in sorted(ranges):
        if start > at:
            gaps.append((at, start))
        at = max(at, end)
    if at < size:
        gaps.append((at, size))
    return gaps


def _covered(run_id: str, job: dict[str, Any], blobs: BlobStore) -> bool:
    seen = _markers(run_id, job, blobs)
    return not any(
        _gaps(seen.get(file["name"], []), int(file["size"])) for file in job["ingest"]["files"]
    )


def _job(run: dict[str, Any], name: str) -> dict[str, Any] | None:
    return next((dict(j) for j in run.get("batch_jobs") or [] if j.get("name") == name), None)


# ---------- settling a job once its output is read ----------


def settle_message(run_id: str, run: dict[str, Any], job_name: str) -> dict[str, Any]:
    """The message that asks a worker to go on settling ``job_name``."""
    return batch_message(run_id, BATCH_SETTLE, run) | {"job": job_name}


def settle_job(
    run_id: str,
    job_name: str,
    *,
    store: ResultStore,
    blobs: BlobStore,
    publisher: Publisher,
    provider_for: ProviderFactory = get_provider,
) -> str:
    """Decide the fate of a job's unstored cells, once; mark it ingested (or failed).

    Lines of cells that share a prompt are stored first, paired with those cells in a
    fixed order, ``batch_settle_lines`` a call: a settle with more hands the rest to a
    new message, so no call outlives the function however many there are.
    """
    settings = get_settings()
    key = f"batch-settle-{job_key(job_name)}"
    claim = store.claim_cell(run_id, key, settings.cell_lease_seconds)
    if claim == CLAIM_HELD:
        raise CellInFlightError(f"job {job_name} of {run_id} is being settled")
    try:
        with LeaseKeeper(store, run_id, key, claim, settings.cell_lease_seconds):
            run = store.get_run(run_id, counts=False)
            job = _job(run or {}, job_name)
            if run is None or job is None or job.get("ingested") or job.get("ended"):
                return "settled already"
            spec = RunRequest.model_validate(run["spec"])
            seen = _tally(run_id, job, blobs)
            piece = _Piece(run_id, run, spec, job, store=store, blobs=blobs,
                           publisher=publisher, provider_for=provider_for)  # fmt: skip
            if not _store_shared(piece, seen["shared"], settings.batch_settle_lines):
                publisher.publish_cells([settle_message(run_id, run, job_name)])
                return "settling"
            fields = _settle(run_id, run, spec, job, seen, store=store, blobs=blobs,
                             publisher=publisher)  # fmt: skip
            fresh = store.get_run(run_id, counts=False) or run
            jobs = [j | fields if j.get("name") == job_name else j for j in fresh["batch_jobs"]]
            store.update_run(run_id, {"batch_jobs": jobs} | fields.pop("run_fields", {}))
    finally:
        store.release_cell(run_id, key, claim)
    then = job.get("then_submit")
    if then is not None and int(run.get("batch_round", 0)) == int(then):
        publisher.publish_cells([batch_message(run_id, BATCH_SUBMIT, run)])
    request_report_if_complete(run_id, store=store, publisher=publisher)
    return "settled"


def _store_shared(piece: _Piece, shared: list[list[str]], limit: int) -> bool:
    """Store answered lines of shared prompts, at most ``limit``; True when none is left.

    Within a prompt's group, lines in file order go to cells in input order: the pairing
    depends on nothing but the output, so a redelivered settle makes the same pairs and
    finds them stored.
    """
    lines_of: dict[str, list[str]] = {}
    for line_id, digest in shared:
        lines_of.setdefault(digest, []).append(line_id)
    todo = [
        (cell, line_id)
        for digest, lines in sorted(lines_of.items())
        for cell, line_id in zip(
            piece.groups.get(digest, []), sorted(lines, key=_line_order), strict=False
        )
        if cell not in piece.stored and cell in piece.tasks
    ]
    stored = 0
    for cell, line_id in todo[:limit]:
        try:
            answer = answer_from_json(piece.read_line(line_id)["response"])
        except (NiahError, ValueError, KeyError, TypeError) as error:
            # Left to the settle's decision as a missing cell.
            log("shared batch line unreadable", severity="WARNING", run_id=piece.run_id,
                line=line_id, error=str(error)[:300])  # fmt: skip
            continue
        piece.store_line(cell, answer, line_id)
        stored += 1
    # Done when all fitted in this call, or when a call stored none (only unreadable
    # lines are left): never a chain of calls that stores nothing.
    return len(todo) <= limit or stored == 0


def _line_order(line_id: str) -> tuple[str, int]:
    name, _, offset = line_id.rpartition("@")
    return name, int(offset)


def _settle(
    run_id: str,
    run: dict[str, Any],
    spec: RunRequest,
    job: dict[str, Any],
    seen: dict[str, Any],
    *,
    store: ResultStore,
    blobs: BlobStore,
    publisher: Publisher,
) -> dict[str, Any]:
    settings = get_settings()
    cells = job_cells(job, blobs)
    stored = store.cell_ids(run_id)
    missing = [cell for cell in cells if cell not in stored]
    counts = {
        "lines_read": seen["lines"],
        "lines_stored": len(cells) - len(missing),
        "lines_duplicate": seen["duplicate"],
        "lines_unmatched": seen["unmatched"],
        "lines_unreadable": len(seen["unreadable"]),
        "lines_failed": len(seen["failed"]),
    }
    if seen["unmatched_answered"]:
        counts["unmatched_cost_usd"] = round(seen["unmatched_usd"], 6)
    usable = seen["lines"] - seen["unmatched"] - len(seen["unreadable"])
    if seen["lines"] and usable <= 0:
        why = (
            "their echoed requests differ from what was sent"
            if seen["unmatched"]
            else f"none could be read ({seen['unreadable'][0][1]})"
        )
        reason = (
            f"none of the {seen['lines']} output lines of batch job {job['name']} matched a "
            f"cell of the run ({why}); nothing was stored from it. Resume the run to submit "
            "its cells again"
        )
        log("batch output matched no cell", severity="ERROR", run_id=run_id, job=job["name"])
        fail_cells(run_id, spec, run, missing, BatchJobError(reason), store=store, blobs=blobs,
                   publisher=publisher)  # fmt: skip
        return counts | {"ended": True, "error": reason, "run_fields": {"batch_error": reason}}
    ended = job.get("state") not in ("JOB_STATE_SUCCEEDED", "JOB_STATE_PARTIALLY_SUCCEEDED")
    waiting = job.get("superseded") or run.get("status") == RUN_CANCELLED
    if waiting or not missing:
        # A cancelled or superseded run's other cells wait for its next round.
        return counts | {"ingested": True}
    if ended:
        reason = (
            f"batch job {job['name']} ended {job.get('state')}"
            + (f": {job['error']}" if job.get("error") else "")
            + f", after writing {seen['lines']} of {len(cells)} lines (kept); resume the run "
            "to submit the rest again"
        )
        fail_cells(run_id, spec, run, missing, BatchJobError(reason), store=store, blobs=blobs,
                   publisher=publisher)  # fmt: skip
        return counts | {"ingested": True}
    if seen["unmatched_answered"]:
        # Some answered lines found no cell: their cells may be among the missing, and
        # buying those online would pay twice. They fail, saying why.
        reason = (
            f"{seen['unmatched_answered']} answered lines of batch job {job['name']} matched "
            "no cell (their echoed requests differ from what was sent; Google billed them), "
            "so the job's unanswered cells were not bought again online. Resume the run to "
            "submit them in batch again"
        )
        fail_cells(run_id, spec, run, missing, BatchJobError(reason), store=store, blobs=blobs,
                   publisher=publisher)  # fmt: skip
        return counts | {"ingested": True, "error": reason}
    failures = [reason for _, reason in seen["failed"]] + [r for _, r in seen["unreadable"]]
    systemic = _systemic(failures, len(cells))
    if systemic is not None:
        reason, count = systemic
        message = (
            f"{count} of {len(cells)} lines of batch job {job['name']} failed with the same "
            f"reason ({reason}): a fault of the deployment or the service, not of a line, "
            "so they were not bought again online. Fix the cause, then resume the run"
        )
        log("batch lines failed systemically", severity="ERROR", run_id=run_id, reason=reason,
            lines=count)  # fmt: skip
        fail_cells(run_id, spec, run, missing, BatchJobError(message), store=store, blobs=blobs,
                   publisher=publisher)  # fmt: skip
        return counts | {"ingested": True, "systemic": reason,
                         "run_fields": {"batch_stopped": message}}  # fmt: skip
    cap = settings.batch_online_fallback_max
    online, over = missing[:cap], missing[cap:]
    tasks = {task.cell_id: task for task in run_tasks(run_id, spec, run, stored)}
    publisher.publish_cells([tasks[cell].message() for cell in online if cell in tasks])
    if over:
        fail_cells(run_id, spec, run, over, BatchJobError(
            f"{len(missing)} lines of batch job {job['name']} failed; {cap} went online (the "
            "cap, batch_online_fallback_max), these did not. Resume the run to submit them "
            "in batch again"), store=store, blobs=blobs, publisher=publisher)  # fmt: skip
    log("failed batch lines sent online", run_id=run_id, cells=len(online), capped=len(over),
        reasons=dict(Counter(map(reason_key, failures))))  # fmt: skip
    return counts | {"ingested": True, "lines_retried_online": len(online)}


def _systemic(reasons: list[str], lines: int) -> tuple[str, int] | None:
    """The reason (an example, and how many) too common to be one line's fault.

    Every line of the job (two or more), or the set share of them.
    """
    settings = get_settings()
    if not reasons:
        return None
    groups = Counter(map(reason_key, reasons))
    key, count = groups.most_common(1)[0]
    floor = max(settings.batch_systemic_min_lines, settings.batch_systemic_share * lines)
    if count >= floor or (count == lines and lines >= 2):
        return next(r for r in reasons if reason_key(r) == key), count
    return None


def _tally(run_id: str, job: dict[str, Any], blobs: BlobStore) -> dict[str, Any]:
    """The markers' counts summed, and their lines of note, each once.

    Two markers overlap only where a redelivered piece stopped elsewhere than the first
    delivery: its counts are then counted twice, its lines of note (keyed by line) not.
    """
    total: dict[str, Any] = {
        "lines": 0, "duplicate": 0, "unmatched": 0, "unmatched_answered": 0,
        "unmatched_usd": 0.0,
    }  # fmt: skip
    noted: dict[str, dict[str, str]] = {"failed": {}, "unreadable": {}, "shared": {}}
    for info in _marker_infos(run_id, job, blobs):
        marker = json.loads(blobs.read(info.name))
        for key in total:
            total[key] += marker.get(key, 0)
        for key, lines in noted.items():
            lines.update((line, value) for line, value in marker.get(key) or [])
    return total | {key: [list(item) for item in lines.items()] for key, lines in noted.items()}


def fail_cells(
    run_id: str,
    spec: RunRequest,
    run: dict[str, Any],
    cell_ids: list[str],
    error: BatchJobError,
    *,
    store: ResultStore,
    blobs: BlobStore,
    publisher: Publisher,
) -> None:
    """Store ``cell_ids`` failed with ``error`` (those still unstored), so the run ends.

    A few at once; more as messages of ``batch_fail_cells`` cells each, so failing a
    200,000-line job's cells never outlives the function.
    """
    wanted = [cell for cell in cell_ids if cell not in store.cell_ids(run_id)]
    step = get_settings().batch_fail_cells
    if len(wanted) > step:
        publisher.publish_cells([
            batch_message(run_id, BATCH_FAIL, run) | {"cells": wanted[i : i + step],
                                                      "reason": str(error)}
            for i in range(0, len(wanted), step)
        ])  # fmt: skip
        return
    store_failed(run_id, spec, run, wanted, error, store=store, blobs=blobs, publisher=publisher)


def store_failed(
    run_id: str,
    spec: RunRequest,
    run: dict[str, Any],
    cell_ids: list[str],
    error: BatchJobError,
    *,
    store: ResultStore,
    blobs: BlobStore,
    publisher: Publisher,
) -> None:
    """Store each of ``cell_ids`` (cells of the run, not yet stored) failed with ``error``."""
    wanted = set(cell_ids)
    view: RunView = run_view(run_id, run)
    for task in run_tasks(run_id, spec, run, store.cell_ids(run_id)):
        if task.cell_id in wanted:
            store_cell(task, failed_cell(task, spec, error), {}, store=store, blobs=blobs,
                       publisher=publisher, run=view)  # fmt: skip
