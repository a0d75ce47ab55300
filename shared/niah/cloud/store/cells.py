"""The cell results: stored once, counted in the same batch, and read back.

A cell result is stored by one batch that *creates* the cell (failing if it exists),
closes its call and increments one counter shard: atomic and idempotent, with no
write to the run document. Also each cell's retryable failures (``attempts``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from niah.cloud import metering
from niah.cloud.google_errors import raises_service_errors
from niah.cloud.metering import FIRESTORE_WRITES
from niah.cloud.store.calls import CallLedger
from niah.cloud.store.paths import SHARD_COUNTED
from niah.core.interfaces import Recorded
from niah.errors import StoreUnavailableError
from niah.settings import get_settings


def _counted_after(results: Sequence[Any]) -> int | None:
    """The shard's ``counted`` after ``record_cell``'s commit, from its write results.

    The shard is the batch's second write. A write's transform results come in the
    order of its field transforms, which the client sorts by field path: ``counted``
    sorts before ``done``, ``failed``, ``totals.*`` and ``updated_at``, so it is the
    first. None if the commit returned no such value.
    """
    if len(results) < 2 or not results[1].transform_results:
        return None
    value = results[1].transform_results[0]
    return int(value.integer_value) if "integer_value" in value else None


@metering.waits_on(metering.FIRESTORE)
@raises_service_errors(unavailable=StoreUnavailableError)
class CellRecords(CallLedger):
    """``runs/{run_id}/cells`` and their ``attempts``; a stored cell closes its call."""

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
        """Create the cell, close its call, count it and free its lease, in one atomic batch.

        The same batch increments ``done`` or ``failed`` and ``totals.*`` (tokens, cost)
        on the cell's counter shard (of the run's ``shards``), so the run's figures can
        never disagree with its cells, and no document takes more than its share of the
        writes. It also increments the shard's ``counted`` (done and failed), whose new
        value the commit returns: whether the shard is full, known without a read.
        """
        from google.api_core.exceptions import AlreadyExists

        firestore = self._firestore
        self._fresh_leases.pop((run_id, cell_id), None)
        batch = self._db.batch()
        batch.create(self._cells(run_id).document(cell_id), doc)
        counts: dict[str, Any] = {
            SHARD_COUNTED: firestore.Increment(1),
            "failed" if failed else "done": firestore.Increment(1),
            "updated_at": firestore.SERVER_TIMESTAMP,
        }
        if totals:  # an empty map under merge would replace the shard's totals with {}
            counts["totals"] = {key: firestore.Increment(value) for key, value in totals.items()}
        batch.set(self._shard(run_id, cell_id, shards), counts, merge=True)
        if call is not None:
            batch.set(self._calls(run_id).document(call[0]), call[1], merge=True)
        # Stored: the lease has done its job (one write in the batch, not a request more).
        batch.set(
            self._leases(run_id).document(cell_id),
            {"expires_at": dt.datetime.now(dt.UTC), "released": True},
            merge=True,
        )
        metering.count(FIRESTORE_WRITES, 4 if call is not None else 3)
        try:
            results = batch.commit(timeout=get_settings().store_timeout_seconds)
        except AlreadyExists:  # not Conflict: Aborted is one too, and wrote nothing
            if call is not None:  # stored by another delivery; this call still cost
                self.close_call(run_id, call[0], call[1])
            return Recorded(False)
        return Recorded(True, _counted_after(results))

    def list_cells(self, run_id: str) -> list[dict[str, Any]]:
        """Every stored cell of the run, in cell-ID order."""
        docs = self._cells(run_id).stream()
        cells = [doc.to_dict() | {"cell_id": doc.id} for doc in docs]
        metering.reads(len(cells))
        return sorted(cells, key=lambda cell: str(cell["cell_id"]))

    def cell_ids(self, run_id: str) -> set[str]:
        """The IDs of the run's stored cells: a projection on no field, not whole cells.

        Firestore still bills a read per cell, but nothing of a cell (its answer may
        be 100 KB) crosses the wire.
        """
        docs = self._cells(run_id).select([]).stream()
        ids = {doc.id for doc in docs}
        metering.reads(len(ids))
        return ids

    def count_cells(self, run_id: str) -> int:
        """How many cells are stored: one aggregation read, not one per cell."""
        result = self._cells(run_id).count().get()
        stored = int(result[0][0].value)
        metering.reads(-(-stored // 1000))  # one read per 1,000 index entries counted
        return stored

    def shard_count(self, run_id: str, cell_id: str, *, shards: int) -> int:
        """How many cells (stored and failed) the cell's counter shard has counted."""
        snapshot = self._shard(run_id, cell_id, shards).get()
        metering.reads(1)
        shard = snapshot.to_dict() or {}
        return int(shard.get("done", 0)) + int(shard.get("failed", 0))

    def note_attempt(self, run_id: str, cell_id: str, error: str) -> None:
        """Remember a cell's last retryable error (for the dead-letter record)."""
        metering.count(FIRESTORE_WRITES)
        self._attempts(run_id).document(cell_id).set(
            {
                "last_error": error[:2000],
                "failures": self._firestore.Increment(1),
                "updated_at": self._firestore.SERVER_TIMESTAMP,
            },
            merge=True,
        )

    def attempted_within(self, run_id: str, seconds: float) -> bool:
        """Whether a cell of the run failed retryably in the last ``seconds``."""
        since = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=seconds)
        return self._any_later(self._attempts(run_id), "updated_at", since)

    def last_attempt(self, run_id: str, cell_id: str) -> dict[str, Any] | None:
        """The cell's attempt record: ``last_error`` and ``failures``."""
        snapshot = self._attempts(run_id).document(cell_id).get()
        metering.reads(1)
        return snapshot.to_dict() if snapshot.exists else None
