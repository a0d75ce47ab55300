"""The report's claim and request marks: one renderer at a time, asked for once.

Rare writes (once per run, and a renewal every third of a lease while a report
renders), so transactions on the run document are fine here.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from niah.cloud import metering
from niah.cloud.google_errors import raises_service_errors
from niah.cloud.metering import FIRESTORE_DELETES, FIRESTORE_WRITES
from niah.cloud.store.paths import FirestoreDocuments
from niah.cloud.store.runs import add_counts
from niah.core.interfaces import RUN_COMPLETE, RUN_REPORT_FAILED, ReportClaim
from niah.errors import StoreUnavailableError


@metering.waits_on(metering.FIRESTORE)
@raises_service_errors(unavailable=StoreUnavailableError)
class ReportClaims(FirestoreDocuments):
    """The run's report: claimed, renewed, finished or failed, requested and reopened."""

    def claim_report(self, run_id: str, lease_seconds: float, claim_id: str) -> ReportClaim:
        """Take the right to render the run's report, in a transaction on the run.

        Rare (once per run), so a transaction on the run document is fine here. The
        claim is ``report_claim`` and ``report_claimed_at``, when it was taken or last
        renewed (``renew_report_claim``): one not renewed for ``lease_seconds`` is taken
        over, its renderer died.
        """
        firestore = self._firestore
        reference = self._run(run_id)

        @firestore.transactional
        def claim(transaction: Any) -> ReportClaim:
            metering.reads(1)
            run = reference.get(transaction=transaction).to_dict() or {}
            if run.get("status") == "complete" and run.get("report"):
                return "done"
            if run.get("status") == RUN_REPORT_FAILED:
                return "failed"
            claimed_at = run.get("report_claimed_at")
            now = dt.datetime.now(dt.UTC)
            if claimed_at is not None and (now - claimed_at).total_seconds() < lease_seconds:
                return "held"
            metering.count(FIRESTORE_WRITES)
            transaction.update(reference, {"report_claimed_at": now, "report_claim": claim_id})
            return "claimed"

        result: ReportClaim = claim(self._db.transaction())
        return result

    def renew_report_claim(self, run_id: str, claim_id: str) -> bool:
        """Stamp claim ``claim_id``'s ``report_claimed_at`` now; False if it is gone.

        A transaction on the run, every third of a lease while a report renders: the run
        document takes no other steady writes (its counts are sharded).
        """
        firestore = self._firestore
        reference = self._run(run_id)

        @firestore.transactional
        def renew(transaction: Any) -> bool:
            metering.reads(1)
            run = reference.get(transaction=transaction).to_dict() or {}
            if run.get("report_claim") != claim_id:
                return False
            metering.count(FIRESTORE_WRITES)
            transaction.update(reference, {"report_claimed_at": dt.datetime.now(dt.UTC)})
            return True

        return bool(renew(self._db.transaction()))

    def finish_report(
        self, run_id: str, claim_id: str, cells_read: int, fields: dict[str, Any]
    ) -> bool:
        """Mark the run complete with ``fields``, if the report still stands.

        In one transaction: the claim is still ``claim_id`` (a reset since would have
        dropped it) and the counts say ``cells_read`` cells are all there are. False,
        changing nothing, otherwise: the report was read from a state that is gone.
        """
        firestore = self._firestore
        reference = self._run(run_id)
        shards_query = self._counters(run_id).limit(1000)

        @firestore.transactional
        def finish(transaction: Any) -> bool:
            run = reference.get(transaction=transaction).to_dict() or {}
            shards = [doc.to_dict() or {} for doc in transaction.get(shards_query)]
            metering.reads(1 + max(1, len(shards)))
            counted = add_counts(run, shards)
            if run.get("report_claim") != claim_id:
                return False
            if counted["done"] + counted["failed"] != cells_read or cells_read < int(
                run.get("total", 0)
            ):
                return False
            metering.count(FIRESTORE_WRITES)
            transaction.update(
                reference,
                {**fields, "status": "complete", "updated_at": firestore.SERVER_TIMESTAMP},
            )
            return True

        return bool(finish(self._db.transaction()))

    def fail_report(self, run_id: str, error: dict[str, Any], *, claim_id: str | None) -> bool:
        """Record the report's failure on the run, in one transaction on it.

        Never over a written report; with ``claim_id`` only while that claim stands (a
        reset since dropped it, and the cells as they are now deserve a fresh try). The
        claim is dropped with it: nothing renders a failed report until it is reopened.
        """
        firestore = self._firestore
        reference = self._run(run_id)

        @firestore.transactional
        def fail(transaction: Any) -> bool:
            metering.reads(1)
            snapshot = reference.get(transaction=transaction)
            run = snapshot.to_dict() or {}
            if not snapshot.exists or run.get("status") == RUN_COMPLETE:
                return False
            if claim_id is not None and run.get("report_claim") != claim_id:
                return False
            metering.count(FIRESTORE_WRITES)
            transaction.update(
                reference,
                {
                    "status": RUN_REPORT_FAILED,
                    "report_error": error,
                    "report_claimed_at": firestore.DELETE_FIELD,
                    "report_claim": firestore.DELETE_FIELD,
                    "updated_at": firestore.SERVER_TIMESTAMP,
                },
            )
            return True

        return bool(fail(self._db.transaction()))

    def mark_report_requested(self, run_id: str, window_seconds: float) -> bool:
        """Note that the run's report is being asked for; False if that would ask twice.

        One create (or, past the window, one update guarded by the mark's update time),
        so of any number of workers finishing or redelivered at once, one asks. Past the
        window the run is read too: a report written or failed is not asked for, nor one
        whose renderer is alive (its claim taken or renewed within the window); one
        whose renderer died (its claim lapsed) or whose request was lost is.
        """
        from google.api_core.exceptions import AlreadyExists, FailedPrecondition, NotFound

        reference = self._report_mark(run_id)
        now = dt.datetime.now(dt.UTC)
        metering.count(FIRESTORE_WRITES)
        try:
            reference.create({"requested_at": now})
            return True
        except AlreadyExists:  # not Conflict: Aborted is one too, and wrote nothing
            pass
        snapshot = reference.get()
        metering.reads(1)
        requested = (snapshot.to_dict() or {}).get("requested_at")
        if requested is not None and (now - requested).total_seconds() < window_seconds:
            return False
        run = self._run(run_id).get().to_dict() or {}
        metering.reads(1)
        if run.get("status") in (RUN_COMPLETE, RUN_REPORT_FAILED):
            return False
        claimed_at = run.get("report_claimed_at")
        if claimed_at is not None and (now - claimed_at).total_seconds() < window_seconds:
            return False  # a renderer is at work
        metering.count(FIRESTORE_WRITES)
        try:
            if snapshot.exists:
                # Guarded by the mark's update time, so of two askers one wins. ``update``:
                # ``set`` takes no write option (it raised TypeError, and so nothing past
                # the window ever asked again).
                reference.update(
                    {"requested_at": now},
                    option=self._db.write_option(last_update_time=snapshot.update_time),
                )
            else:  # cleared meanwhile (a reset): created, as a first ask is
                reference.create({"requested_at": now})
        except (FailedPrecondition, AlreadyExists, NotFound):
            return False  # another asker took it first
        return True

    def clear_report_request(self, run_id: str) -> None:
        """Forget that the report was asked for: the next completion asks again."""
        metering.count(FIRESTORE_DELETES)
        self._report_mark(run_id).delete()

    def reopen_report(self, run_id: str) -> None:
        """Drop a stale or failed report and its claim, so the next request renders afresh."""
        firestore = self._firestore
        self.clear_report_request(run_id)
        metering.count(FIRESTORE_WRITES)
        self._run(run_id).update(
            {
                "status": "running",
                "report": firestore.DELETE_FIELD,
                "report_error": firestore.DELETE_FIELD,
                "report_claimed_at": firestore.DELETE_FIELD,
                "report_claim": firestore.DELETE_FIELD,
                "updated_at": firestore.SERVER_TIMESTAMP,
            }
        )
