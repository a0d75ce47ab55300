"""The call ledger: every model call noted before it is made, and closed with its cost.

A call cut off mid-flight still shows in the spend, and the note is written only while
the caller's claim still holds the cell's lease, so two deliveries never both pay.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from niah.cloud import metering
from niah.cloud.google_errors import raises_service_errors
from niah.cloud.metering import FIRESTORE_WRITES
from niah.cloud.store.paths import FirestoreDocuments
from niah.errors import StoreUnavailableError


@metering.waits_on(metering.FIRESTORE)
@raises_service_errors(unavailable=StoreUnavailableError)
class CallLedger(FirestoreDocuments):
    """``runs/{run_id}/calls``: the model calls started for a run's cells."""

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
        """Note a model call about to be made (and paid for), if claim ``claim`` holds the cell.

        One transaction reads the lease, extends it and writes the note: a holder whose
        lease lapsed while the store was unreachable and was claimed by another delivery
        meanwhile gets False and makes no call, so two deliveries never both pay. A lease
        this process created and has not written since is checked by its update time
        instead, in the note's own write (``_note_on_fresh_lease``).
        """
        firestore = self._firestore
        lease_ref = self._leases(run_id).document(cell_id)
        note_ref = self._calls(run_id).document(call_id)
        if self._note_on_fresh_lease(
            run_id, cell_id, claim, lease_ref, note_ref, doc, lease_seconds
        ):
            return True

        @firestore.transactional
        def note(transaction: Any) -> bool:
            metering.reads(1)
            snapshot = lease_ref.get(transaction=transaction)
            lease = snapshot.to_dict() or {}
            if lease.get("claims") != claim or lease.get("released"):
                return False
            metering.count(FIRESTORE_WRITES, 2)
            _, expires = self._lease_expiry(snapshot, lease_seconds)
            transaction.update(lease_ref, {"expires_at": expires})
            transaction.set(note_ref, {**doc, "started_at": firestore.SERVER_TIMESTAMP}, merge=True)
            return True

        return bool(note(self._db.transaction()))

    def _note_on_fresh_lease(
        self,
        run_id: str,
        cell_id: str,
        claim: int,
        lease_ref: Any,
        note_ref: Any,
        doc: dict[str, Any],
        lease_seconds: float,
    ) -> bool:
        """The spend note in one write, if this process created the lease and nothing since.

        The lease's extension is guarded by the update time its creation returned: any
        write since (a renewal, a hand-on, another delivery's claim) fails the whole
        batch, and the transaction decides instead. Unchanged since its creation, the
        lease is still this claim's, as the transaction would have read it.
        """
        from google.api_core.exceptions import FailedPrecondition

        fresh = self._fresh_leases.pop((run_id, cell_id), None)
        if fresh is None or fresh[0] != claim:
            return False
        batch = self._db.batch()
        expires = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=lease_seconds)
        batch.update(
            lease_ref,
            {"expires_at": expires},
            option=self._db.write_option(last_update_time=fresh[1]),
        )
        batch.set(note_ref, {**doc, "started_at": self._firestore.SERVER_TIMESTAMP}, merge=True)
        try:
            batch.commit()
        except FailedPrecondition:
            return False
        metering.count(FIRESTORE_WRITES, 2)
        return True

    def close_call(self, run_id: str, call_id: str, fields: dict[str, Any]) -> None:
        """Record what a call cost (or that it failed unbilled)."""
        metering.count(FIRESTORE_WRITES)
        self._calls(run_id).document(call_id).set(fields, merge=True)

    def list_calls(self, run_id: str) -> list[dict[str, Any]]:
        """Every model call started for the run's cells."""
        docs = self._calls(run_id).stream()
        calls = [doc.to_dict() | {"call_id": doc.id} for doc in docs]
        metering.reads(len(calls))
        return calls
