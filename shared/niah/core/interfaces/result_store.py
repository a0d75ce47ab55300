"""What the service needs of its result store: runs, cells, leases, calls, the report.

``niah.cloud.store`` implements it on Firestore; unit tests pass ``tests.fakes.MemoryStore``.
The run statuses and the claim outcomes are here too: every side of the store reads them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

# "failed": the report's failure is recorded on the run (``fail_report``); only a
# reopen (a reset, a resume, the request sent again) lets it be rendered again.
ReportClaim = Literal["claimed", "done", "held", "failed"]
# What ``ResultStore.cancel_run`` found: the run cancelled now, cancelled before,
# complete (nothing left to stop), or no such run.
CancelOutcome = Literal["cancelled", "already_cancelled", "complete", "missing"]
# A run's status while it may still spend, once stopped, and once its report is written.
RUN_RUNNING, RUN_CANCELLED, RUN_COMPLETE = "running", "cancelled", "complete"
# Every cell is in, but its report could not be made (``report_error`` says why).
RUN_REPORT_FAILED = "report_failed"


# What ``ResultStore.claim_cell`` answers besides a claim number (1, 2, ...).
CLAIM_HELD = 0  # another delivery holds a live lease: it is calling the model now
CLAIM_STORED = -1  # the cell is stored: nothing to call
CLAIM_ABANDONED = -2  # holder after holder died on the cell: store it failed, call nothing


@dataclass(frozen=True)
class Recorded:
    """What storing a cell did: whether it was stored, and its shard's count after it.

    ``shard_counted``: the cells (stored and failed) the cell's counter shard has
    counted with this one, as the store's commit returned it (None: not known, e.g. a
    shard of a run from before the count was kept). True as a bool when stored.
    """

    stored: bool
    shard_counted: int | None = None

    def __bool__(self) -> bool:
        return self.stored


def lapses_before_claim(lease: dict[str, Any]) -> int:
    """How many holders in a row let a cell's lease lapse, as a new claim finds it.

    A released lease ended well (stored, or a failure counted and retried): zero. One
    that lapsed unreleased had a holder that died: one more than that holder found.
    """
    if not lease or lease.get("released"):
        return 0
    return int(lease.get("lapses", 0)) + 1


class ResultStore(Protocol):
    """Runs and their cells."""

    def create_run(self, run_id: str, doc: dict[str, Any]) -> bool:
        """Create the run; False if it already exists (nothing is changed then)."""
        ...

    def get_run(
        self, run_id: str, *, counts: bool = True, fields: Sequence[str] | None = None
    ) -> dict[str, Any] | None:
        """The run document with its counts (done, failed, totals), or None.

        ``counts=False`` skips the counts: cheaper, for the spec, total and status.
        ``fields``: only these top-level fields of the document (still one read, but
        not the whole document's bytes to send and decode).
        """
        ...

    def update_run(self, run_id: str, fields: dict[str, Any]) -> None:
        """Merge ``fields`` into the run document."""
        ...

    def update_batch_job(self, run_id: str, job_name: str, fields: dict[str, Any]) -> None:
        """Merge ``fields`` into the batch job's own state; ``get_run`` shows it in ``batch_jobs``.

        One document per job, so two jobs settling at once cannot drop each other's flag.
        """
        ...

    def cancel_run(self, run_id: str) -> CancelOutcome:
        """Mark a running run cancelled (a guarded transition); what it found."""
        ...

    def record_cell(
        self,
        run_id: str,
        cell_id: str,
        doc: dict[str, Any],
        *,
        failed: bool,
        shards: int,
        totals: dict[str, float] | None = None,
        call: tuple[str, dict[str, Any]] | None = None,
    ) -> Recorded:
        """Create the cell's result, count it (adding ``totals``), close ``call``, free its lease.

        Counted on the cell's shard of the run's ``shards`` (``niah.core.results.counters``).

        Atomic. Not stored if the cell was already stored: nothing is counted then, but
        the call is still closed (it was paid for).
        """
        ...

    def list_cells(self, run_id: str) -> list[dict[str, Any]]:
        """Every stored cell of the run, in cell-ID order."""
        ...

    def cell_ids(self, run_id: str) -> set[str]:
        """The IDs of the run's stored cells (not their contents)."""
        ...

    def count_cells(self, run_id: str) -> int:
        """How many cells of the run are stored."""
        ...

    def shard_count(self, run_id: str, cell_id: str, *, shards: int) -> int:
        """How many cells the cell's counter shard has counted (stored and failed)."""
        ...

    def claim_cell(
        self, run_id: str, cell_id: str, lease_seconds: float, *, max_lapses: int = 0
    ) -> int:
        """Take the cell's lease before its model call: the claim's number, from 1.

        ``CLAIM_HELD`` while another holder's lease is live (a lease not renewed for
        ``lease_seconds`` is taken over: its holder died); ``CLAIM_STORED`` if the cell
        is stored, checked atomically with the lease; ``CLAIM_ABANDONED`` once
        ``max_lapses`` (if not 0) holders in a row died holding it.
        """
        ...

    def renew_lease(self, run_id: str, cell_id: str, claim: int, lease_seconds: float) -> bool:
        """Keep claim ``claim``'s lease live ``lease_seconds`` more; False if it is gone."""
        ...

    def release_cell(self, run_id: str, cell_id: str, claim: int | None = None) -> None:
        """Give the cell's lease up (stored, or its call failed and will be retried).

        With ``claim``, only while the lease is still that claim's.
        """
        ...

    def leased_cells(self, run_id: str) -> set[str]:
        """The cells whose lease is live: in flight somewhere now."""
        ...

    def hand_on_lapsed(self, run_id: str) -> list[str]:
        """Cells whose holder died (lease lapsed unreleased), each returned once."""
        ...

    def lease_seconds_left(self, run_id: str, cell_id: str) -> float | None:
        """How long the cell's lease holds yet; None if it is not live (released, lapsed)."""
        ...

    def has_live_lease(self, run_id: str) -> bool:
        """Whether any lease of the run is live: something is at work on it now."""
        ...

    def taken_over_since(self, run_id: str, since: dt.datetime) -> bool:
        """Whether a lease of the run that lapsed unreleased was claimed after ``since``."""
        ...

    def open_call(
        self,
        run_id: str,
        call_id: str,
        doc: dict[str, Any],
        *,
        cell_id: str,
        claim: int,
        lease_seconds: float,
    ) -> bool:
        """Note a model call before it is made: a call cut off still shows in the spend.

        Atomically with the note, checks claim ``claim`` still holds the cell's lease and
        extends it; False (no note, no call) if another delivery has it now.
        """
        ...

    def close_call(self, run_id: str, call_id: str, fields: dict[str, Any]) -> None:
        """Record what a call cost, or that it failed."""
        ...

    def list_calls(self, run_id: str) -> list[dict[str, Any]]:
        """Every model call started for the run."""
        ...

    def note_attempt(self, run_id: str, cell_id: str, error: str) -> None:
        """Remember a cell's last retryable error (for the dead-letter record)."""
        ...

    def last_attempt(self, run_id: str, cell_id: str) -> dict[str, Any] | None:
        """The cell's attempt record: ``last_error`` and ``failures``."""
        ...

    def attempted_within(self, run_id: str, seconds: float) -> bool:
        """Whether a cell of the run failed retryably in the last ``seconds``."""
        ...

    def claim_report(self, run_id: str, lease_seconds: float, claim_id: str) -> ReportClaim:
        """Take the right to render the run's report: "claimed", or "done" / "held" / "failed".

        "held" while another renderer's claim is live: taken or renewed within
        ``lease_seconds``. One not renewed for that long is taken over (its renderer died).
        """
        ...

    def renew_report_claim(self, run_id: str, claim_id: str) -> bool:
        """Keep claim ``claim_id`` on the run's report live a lease more; False if it is gone.

        Gone: dropped (a reset, a recorded failure), or lapsed and taken over.
        """
        ...

    def fail_report(self, run_id: str, error: dict[str, Any], *, claim_id: str | None) -> bool:
        """Record that the run's report failed (status ``report_failed``, ``report_error``).

        With ``claim_id``: only while that claim stands. Never over a written report.
        False, changing nothing, otherwise.
        """
        ...

    def finish_report(
        self, run_id: str, claim_id: str, cells_read: int, fields: dict[str, Any]
    ) -> bool:
        """Mark the run complete, if the claim is still ``claim_id`` and no cell changed."""
        ...

    def mark_report_requested(self, run_id: str, window_seconds: float) -> bool:
        """Note the report is being asked for; False if that would ask twice.

        Twice: it was asked for within ``window_seconds``, or a renderer's claim on it is
        live (taken or renewed within ``window_seconds``), or it is written or failed.
        """
        ...

    def clear_report_request(self, run_id: str) -> None:
        """Forget that the report was asked for (a reset, or the request failed)."""
        ...

    def reopen_report(self, run_id: str) -> None:
        """Drop a stale or failed report and its claim, so the next request renders afresh."""
        ...

    def reset_failed_cells(self, run_id: str, *, shards: int) -> int:
        """Delete the run's failed cells (uncounting them) so a rerun retries them."""
        ...

    def running_runs(self) -> list[dict[str, Any]]:
        """Every run whose status is still "running"."""
        ...

    def index_runs(self, fields: Sequence[str]) -> list[dict[str, Any]]:
        """Every run with only ``fields`` (dotted paths) and its ID: no counts."""
        ...

    def recent_runs(self, limit: int) -> list[dict[str, Any]]:
        """The ``limit`` most recently created runs, newest first, with their counts."""
        ...

    def get_sentinel(self, name: str) -> dict[str, Any] | None:
        """Sentinel ``name``'s definition (``request``, ``schedule``, ``time_zone``), or None."""
        ...

    def list_sentinels(self) -> list[dict[str, Any]]:
        """Every sentinel's definition, with its ``name``, by name."""
        ...

    def sentinel_runs(self, name: str, fields: Sequence[str]) -> list[dict[str, Any]]:
        """Every run of sentinel ``name``, with only ``fields`` and its ID."""
        ...
