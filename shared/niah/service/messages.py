"""The service's messages, each built and parsed here: one owner per format.

Every message says what it is in its ``kind`` field (``KIND``), written and read only
here: a handler calls ``parse_message`` and dispatches on the type it gets back, so no
other module sniffs a message's keys. A message with no kind, or one this version does
not know (published by an older one), is refused with ``MalformedMessageError``: the
handler logs it and acknowledges it, as it does any message that will never parse.

A cell's message (``CellTask``: the dispatcher, the sweep, a primer's release and the
dead-letter handler publish it, the worker parses it), a primer's, a batch run's
worker-side steps, and a run's report request. The worker, the sweep, cancel, batch
and run completion build their messages here, not in the dispatcher. Of the service
it imports only the cells of published rows (``run_sources``, core alone beneath it);
publishing a run's missing cells, which asks for the report, is
``niah.service.runs.missing_cells``. It is light: the dispatcher's cold start stays
free of the worker's machinery.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from niah.core.request.cache_primer import primer_pays
from niah.core.request.grid import Cell, primer_cell
from niah.core.request.spec import RUN_ID_PATTERN
from niah.core.results.certify_run import certify_cells, stored_samples
from niah.core.runs import RunRecord
from niah.errors import MalformedMessageError
from niah.service.runs.sources import source_cells
from niah.settings import get_settings

# The field every message names its kind in, and the kinds.
KIND = "kind"
MessageKind = Literal["cell", "batch", "certify_step", "report"]
CELL, BATCH, CERTIFY_STEP, REPORT = get_args(MessageKind)


@dataclass(frozen=True)
class CellTask:
    """A cell message: which run, which grid point, which delivery."""

    run_id: str
    cell_id: str
    context_length: int
    depth_percent: float
    delivery_attempt: int = 1
    sample: int = 0
    # A published MRCR v2 sample: which file of the run's source, which row, and where
    # its bytes are (offset, length) when the dispatcher kept that.
    source_file: str | None = None
    row: int | None = None
    span: tuple[int, int] | None = None
    # Published alone ahead of its run's other cells (cache-aware dispatch): whoever
    # answers it publishes the rest.
    primer: bool = False
    # The run's creation stamp: a message of a run deleted and created again is not its.
    run_stamp: str | None = None
    # How often the dead-letter handler has published this cell again.
    dead_letters: int = 0
    # The cell's values of the run's extra axes (niah.core.request.axes); "" for none.
    variant: str = ""

    @classmethod
    def from_message(cls, data: dict[str, Any], *, delivery_attempt: int = 1) -> CellTask:
        """Parse a cell message's body.

        ``MalformedMessageError`` for a run ID no run can have: it names no document.
        """
        run_id = data["run_id"]
        if not isinstance(run_id, str) or not RUN_ID_PATTERN.fullmatch(run_id):
            raise MalformedMessageError(f"run_id {str(run_id)[:40]!r} is not a run ID")
        return cls(
            run_id=run_id,
            cell_id=str(data["cell_id"]),
            context_length=int(data["context_length"]),
            depth_percent=float(data["depth_percent"]),
            delivery_attempt=delivery_attempt,
            sample=int(data.get("sample", 0)),
            source_file=str(data["source_file"]) if data.get("source_file") else None,
            row=int(data["row"]) if data.get("row") is not None else None,
            span=(int(data["offset"]), int(data["length"])) if data.get("length") else None,
            primer=data.get("primer") is True,
            run_stamp=str(data["run_stamp"]) if data.get("run_stamp") else None,
            dead_letters=int(data.get("dead_letters", 0)),
            variant=str(data.get("variant") or ""),
        )

    def message(self) -> dict[str, Any]:
        """The message body of this task (to publish it, or publish it again)."""
        body: dict[str, Any] = {
            KIND: CELL,
            "run_id": self.run_id,
            "cell_id": self.cell_id,
            "context_length": self.context_length,
            "depth_percent": self.depth_percent,
            "sample": self.sample,
        }
        optional = {
            "source_file": self.source_file,
            "row": self.row,
            "offset": self.span[0] if self.span else None,
            "length": self.span[1] if self.span else None,
            "primer": self.primer or None,
            "run_stamp": self.run_stamp,
            "dead_letters": self.dead_letters or None,
            "variant": self.variant or None,
        }
        return body | {key: value for key, value in optional.items() if value is not None}

    @property
    def cell(self) -> Cell:
        """The grid point and sample this message is about."""
        return Cell(self.context_length, self.depth_percent, self.sample, self.variant)


def run_cell_tasks(run: RunRecord) -> list[CellTask]:
    """Every cell of the run as its message says it: the grid's, or one per published row."""
    run_id, spec, stamp, rows = run.run_id, run.spec, run.stamp or None, run.source_rows
    if spec.is_certify():  # the rounds asked for so far
        # By length and depth, as a grid's go: a length's samples at one depth share their
        # prompt up to the needle, so the model's prompt cache (llama.cpp's, Vertex's
        # implicit one) reuses it; the samples' draws are as certify_cells makes them.
        cells = certify_cells(spec, stored_samples(run.certify))
        ordered = sorted(cells, key=lambda c: (c.context_length, c.depth_percent, c.sample))
        return [_cell_task(run_id, cell, stamp) for cell in ordered]
    if not rows:
        return [_cell_task(run_id, cell, stamp) for cell in spec.cells()]
    files = run.source_files or ()
    cells = source_cells([(row["file"], row["row"], row["tokens"]) for row in rows])
    return [
        # Its byte span where the dispatcher kept one: the worker reads the row alone.
        _cell_task(
            run_id,
            cell,
            stamp,
            source_file=files[row["file"]],
            row=row["row"],
            span=(row["offset"], row["length"]) if row.get("length") else None,
        )
        for cell, row in zip(cells, rows, strict=True)
    ]


def _cell_task(run_id: str, cell: Cell, stamp: str | None, **source: Any) -> CellTask:
    return CellTask(
        run_id=run_id,
        cell_id=cell.cell_id,
        context_length=cell.context_length,
        depth_percent=cell.depth_percent,
        sample=cell.sample,
        run_stamp=stamp,
        variant=cell.variant,
        **source,
    )


def cell_messages(run: RunRecord) -> list[dict[str, Any]]:
    """One message per cell of the run: the grid's, or one per published row."""
    return [task.message() for task in run_cell_tasks(run)]


def primer_message(run: RunRecord) -> dict[str, Any] | None:
    """The message of a new run's primer cell, published alone; None to publish all.

    Every prompt of a grid is the template's head and the haystack from its start up
    to the first needle, so the cell with the deepest needle at the longest length has
    the longest prefix, and every other cell's prefix is a prefix of its. Sent first,
    it fills Vertex's implicit cache; the worker that stores it publishes the rest
    (``missing_cells.release_after_primer``), whose prefixes then hit the cache. Runs of published
    MRCR samples share no haystack, one-cell runs have nothing to gain, and a grid whose
    prefixes cannot reach the model's minimum cached prefix none either (``primer_pays``).
    """
    spec = run.spec
    if (
        get_settings().dispatch_order != "cache_aware"
        or run.source_rows
        or spec.is_batch()
        or spec.is_certify()  # a round is one length: its cells share no longest prefix
    ):
        return None
    cells = spec.cells()  # in the order of cell_messages' (published rows have no primer)
    first = primer_cell(cells)
    if first is None or not primer_pays(spec, cells, first):
        return None  # no prefix the cache would serve: nothing to hold the grid for
    return cell_messages(run)[cells.index(first)] | {"primer": True}


# What a batch message asks of the worker: submit the run's missing cells as batch
# jobs, look at its jobs (ingest what is done, cancel them if the run is cancelled), or
# ingest one piece of a job's output, settle a job once read, or store a job's
# unanswered cells failed (the ``niah.service.batch_*`` modules).
BATCH_SUBMIT, BATCH_POLL, BATCH_INGEST = "submit", "poll", "ingest"
BATCH_SETTLE, BATCH_FAIL = "settle", "fail"


def batch_message(run: RunRecord, action: str) -> dict[str, Any]:
    """A message on the cells topic for a batch run's worker-side step.

    ``batch_round``: which submission (0, then one more per resume), so a redelivered
    submit of a round submits nothing again.
    """
    stamp = {"run_stamp": run.stamp} if run.stamp else {}
    return {
        KIND: BATCH,
        "run_id": run.run_id,
        "batch_action": action,
        "batch_round": run.batch_round,
        **stamp,
    }


def ingest_message(
    run: RunRecord, job_name: str, file: str, start: int, end: int
) -> dict[str, Any]:
    """The message that asks a worker to ingest bytes ``[start, end)`` of ``file``."""
    return batch_message(run, BATCH_INGEST) | {
        "job": job_name,
        "file": file,
        "start": start,
        "end": end,
    }


def settle_message(run: RunRecord, job_name: str) -> dict[str, Any]:
    """The message that asks a worker to go on settling ``job_name``."""
    return batch_message(run, BATCH_SETTLE) | {"job": job_name}


def settle_job_name(body: dict[str, Any]) -> str:
    """The job a settle message names."""
    return str(body["job"])


def fail_messages(
    run: RunRecord, cell_ids: list[str], reason: str, *, step: int
) -> list[dict[str, Any]]:
    """Messages that each ask a worker to store ``step`` of ``cell_ids`` failed."""
    return [
        batch_message(run, BATCH_FAIL) | {"cells": cell_ids[i : i + step], "reason": reason}
        for i in range(0, len(cell_ids), step)
    ]


def fail_request(body: dict[str, Any]) -> tuple[list[str], str]:
    """The cells a fail message names, and the reason to store them failed with."""
    return [str(cell) for cell in body.get("cells") or []], str(body.get("reason") or "")


def report_message(run_id: str) -> dict[str, Any]:
    """The message on the reports topic that asks for ``run_id``'s report."""
    return {KIND: REPORT, "run_id": run_id}


def certify_step_message(run: RunRecord) -> dict[str, Any]:
    """A certify run's round is in: a worker plans the next round or asks for the report.

    On the cells topic, as a batch run's steps are: the planner's interval code is the
    worker's, never the dispatcher's (``niah.service.runs.certify_rounds``).
    """
    stamp = {"run_stamp": run.stamp} if run.stamp else {}
    return {KIND: CERTIFY_STEP, "run_id": run.run_id, **stamp}


@dataclass(frozen=True)
class BatchStep:
    """A batch run's step (``batch_message``): which run, which action, which round.

    ``body`` is the whole message, for the fields of its action's own module (an
    ingest's byte range, a settle's job, a fail's cells).
    """

    run_id: str
    action: str
    batch_round: int = 0
    run_stamp: str | None = None
    body: dict[str, Any] = field(default_factory=dict, compare=False)


def batch_step(body: dict[str, Any]) -> BatchStep:
    """Parse a batch step's body (its run ID is checked against its run by the handler)."""
    stamp = body.get("run_stamp")
    return BatchStep(
        run_id=str(body.get("run_id")),
        action=str(body.get("batch_action")),
        batch_round=int(body.get("batch_round", 0)),
        run_stamp=None if stamp is None else str(stamp),
        body=body,
    )


@dataclass(frozen=True)
class CertifyStep:
    """A certify run's round is in (``certify_step_message``)."""

    run_id: str
    run_stamp: str | None = None


@dataclass(frozen=True)
class ReportRequest:
    """A run's report is asked for (``report_message``).

    ``deliveries``: on the dead-letter topic, how often Pub/Sub had delivered it (the
    attribute it adds when it forwards a dead letter; 0 elsewhere).
    """

    run_id: str
    deliveries: int = 0


Message = CellTask | BatchStep | CertifyStep | ReportRequest

# Where Pub/Sub says how often a dead letter was delivered before it was forwarded.
DEAD_LETTER_DELIVERIES = "CloudPubSubDeadLetterSourceDeliveryCount"


def parse_message(
    body: dict[str, Any],
    *,
    delivery_attempt: int = 1,
    attributes: dict[str, Any] | None = None,
) -> Message:
    """The message ``body`` is, by its ``kind``; ``MalformedMessageError`` if it never parses.

    Refused: a body with no kind or an unknown one (a message of an older version), and
    a run ID no run can have (it names no document).
    """
    kind = body.get(KIND)
    if kind not in get_args(MessageKind):
        raise MalformedMessageError(
            f"the message's {KIND} is {str(kind)[:40]!r}, not one of "
            f"{', '.join(get_args(MessageKind))}: a message of another version, dropped"
        )
    try:
        if kind == CELL:
            return CellTask.from_message(body, delivery_attempt=delivery_attempt)
        if kind == BATCH:
            return batch_step(body)
        run_id = body["run_id"]
        if not isinstance(run_id, str) or not RUN_ID_PATTERN.fullmatch(run_id):
            raise MalformedMessageError(f"run_id {str(run_id)[:40]!r} is not a run ID")
        if kind == CERTIFY_STEP:
            stamp = body.get("run_stamp")
            return CertifyStep(run_id, str(stamp) if stamp else None)
        deliveries = int((attributes or {}).get(DEAD_LETTER_DELIVERIES) or 0)
        return ReportRequest(run_id, deliveries)
    except (KeyError, TypeError, ValueError) as error:  # a field missing or of no use
        raise MalformedMessageError(f"a {kind} message without a usable {error}") from error
