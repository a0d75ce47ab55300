"""Resetting a run's failed cells, so a rerun retries them.

Apart from the cells' own module because it undoes what they did: it deletes cells,
uncounts them from their shards and reopens the run's report.
"""

from __future__ import annotations

from niah.cloud import metering
from niah.cloud.google_errors import raises_service_errors
from niah.cloud.metering import FIRESTORE_DELETES, FIRESTORE_WRITES
from niah.cloud.store.paths import SHARD_COUNTED
from niah.cloud.store.reports import ReportClaims
from niah.core.results.counters import shard_of
from niah.errors import StoreUnavailableError


@metering.waits_on(metering.FIRESTORE)
@raises_service_errors(unavailable=StoreUnavailableError)
class FailedCellResets(ReportClaims):
    """Deleting failed cells and uncounting them, after reopening the report."""

    def reset_failed_cells(self, run_id: str, *, shards: int) -> int:
        """Delete the run's failed cells (and their failure counts), uncount them, reopen.

        ``shards``: the run's counter shards, which its cells were counted on.

        The run is reopened first, so a reset cut short never leaves a "complete" run
        with cells missing. Each delete requires the cell to exist, so two resets at
        once cannot both uncount the same cells.
        """
        from google.api_core.exceptions import FailedPrecondition, NotFound

        firestore = self._firestore
        self.reopen_report(run_id)
        failed = list(
            self._cells(run_id)
            .where(filter=firestore.FieldFilter("status", "==", "failed"))
            .stream()
        )
        metering.reads(len(failed))
        reset = 0
        for first in range(0, len(failed), 100):
            chunk = failed[first : first + 100]
            batch = self._db.batch()
            per_shard: dict[str, int] = {}
            for doc in chunk:
                batch.delete(doc.reference, option=self._db.write_option(exists=True))
                batch.delete(self._attempts(run_id).document(doc.id))
                shard = shard_of(doc.id, shards)
                per_shard[shard] = per_shard.get(shard, 0) + 1
            for shard, count in per_shard.items():
                batch.set(
                    self._counters(run_id).document(shard),
                    {
                        "failed": firestore.Increment(-count),
                        SHARD_COUNTED: firestore.Increment(-count),
                    },
                    merge=True,
                )
            metering.count(FIRESTORE_DELETES, 2 * len(chunk))
            metering.count(FIRESTORE_WRITES, len(per_shard))
            try:
                batch.commit()
            except (NotFound, FailedPrecondition):
                continue  # another reset got there first and uncounted them
            reset += len(chunk)
        return reset
