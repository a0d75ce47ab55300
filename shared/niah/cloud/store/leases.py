"""The cell leases: who is calling the model for a cell, until when, and who died on it.

A delivery claims a cell's lease before its model call and renews it while it waits;
a lease that lapses unreleased means its holder died, and the sweep hands it on.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from niah.cloud import metering
from niah.cloud.google_errors import raises_service_errors
from niah.cloud.metering import FIRESTORE_WRITES
from niah.cloud.store.paths import FirestoreDocuments
from niah.core.interfaces import (
    CLAIM_ABANDONED,
    CLAIM_HELD,
    CLAIM_STORED,
    lapses_before_claim,
)
from niah.errors import StoreUnavailableError


@metering.waits_on(metering.FIRESTORE)
@raises_service_errors(unavailable=StoreUnavailableError)
class CellLeases(FirestoreDocuments):
    """``runs/{run_id}/leases``: one lease per cell, claimed, renewed, released."""

    def claim_cell(
        self, run_id: str, cell_id: str, lease_seconds: float, *, max_lapses: int = 0
    ) -> int:
        """Take the cell's lease (or a lapsed one) in a transaction: its claim number.

        ``CLAIM_HELD`` while another holder's lease is live, ``CLAIM_STORED`` once the
        cell is stored: the cell is read in the same transaction, so a delivery that
        comes in as another stores the cell and frees its lease never calls again.
        ``CLAIM_ABANDONED`` when ``max_lapses`` holders in a row let the lease lapse
        (each died on the cell: a crash or out of memory), so a cell that kills its
        worker is not paid for forever; the lease is not taken then.

        A cell never leased (its first delivery, nearly always) is claimed by one create
        instead (``_claim_fresh``): no read, one request where the transaction takes three.
        """
        if self._claim_fresh(run_id, cell_id, lease_seconds):
            return 1
        self._fresh_leases.pop((run_id, cell_id), None)
        firestore = self._firestore
        reference = self._leases(run_id).document(cell_id)
        cell = self._cells(run_id).document(cell_id)

        @firestore.transactional
        def claim(transaction: Any) -> int:
            # Both documents in one request.
            found = {
                snapshot.reference.path: snapshot
                for snapshot in self._db.get_all([cell, reference], transaction=transaction)
            }
            metering.reads(2)
            if found[cell.path].exists:
                return CLAIM_STORED
            now, expires_at = self._lease_expiry(found[reference.path], lease_seconds)
            lease = found[reference.path].to_dict() or {}
            expires = lease.get("expires_at")
            if expires is not None and expires > now:
                return CLAIM_HELD
            lapses = lapses_before_claim(lease)
            if max_lapses and lapses >= max_lapses:
                return CLAIM_ABANDONED
            claims = int(lease.get("claims", 0)) + 1
            metering.count(FIRESTORE_WRITES)
            # A lease that lapsed unreleased: its holder died, and with it perhaps the
            # pushes it was serving (the sweep looks for this: ``taken_over_since``).
            died = {"taken_over_at": now} if lapses else {}
            transaction.set(
                reference,
                {
                    "expires_at": expires_at,
                    "claims": claims,
                    "released": False,
                    "handed_on": False,
                    "lapses": lapses,
                    **died,
                },
            )
            return claims

        return int(claim(self._db.transaction()))

    def _claim_fresh(self, run_id: str, cell_id: str, lease_seconds: float) -> bool:
        """Claim a cell that was never leased: one create, where a transaction takes three.

        A cell is stored only in the batch that also writes its lease (``record_cell``),
        so a cell with no lease document is neither stored nor held. Of deliveries that
        race to create it one wins; the others find it exists and take the transaction.
        """
        from google.api_core.exceptions import AlreadyExists

        reference = self._leases(run_id).document(cell_id)
        lease = {
            "expires_at": dt.datetime.now(dt.UTC) + dt.timedelta(seconds=lease_seconds),
            "claims": 1,
            "released": False,
            "handed_on": False,
            "lapses": 0,
        }
        try:
            written = reference.create(lease)
        except AlreadyExists:
            return False
        metering.count(FIRESTORE_WRITES)
        self._fresh_leases[(run_id, cell_id)] = (1, written.update_time)
        return True

    def renew_lease(self, run_id: str, cell_id: str, claim: int, lease_seconds: float) -> bool:
        """Extend claim ``claim``'s lease by ``lease_seconds`` from now; False if it is gone.

        Gone: released, or lapsed and claimed by another delivery since. "Now" is the
        store's read time, which comes after the request was sent: the holder's
        ``ClaimDeadline`` counts from when it sent it.
        """
        self._fresh_leases.pop((run_id, cell_id), None)  # written now: no longer fresh
        firestore = self._firestore
        reference = self._leases(run_id).document(cell_id)

        @firestore.transactional
        def renew(transaction: Any) -> bool:
            metering.reads(1)
            snapshot = reference.get(transaction=transaction)
            lease = snapshot.to_dict() or {}
            if lease.get("claims") != claim or lease.get("released"):
                return False
            metering.count(FIRESTORE_WRITES)
            _, expires = self._lease_expiry(snapshot, lease_seconds)
            transaction.update(reference, {"expires_at": expires})
            return True

        return bool(renew(self._db.transaction()))

    def release_cell(self, run_id: str, cell_id: str, claim: int | None = None) -> None:
        """End the cell's lease now; its claim count stays, so call IDs never repeat.

        With ``claim``, only if the lease is still that claim's (a transaction): a holder
        that lost its lease never frees the next holder's.
        """
        self._fresh_leases.pop((run_id, cell_id), None)
        reference = self._leases(run_id).document(cell_id)
        released = {"expires_at": dt.datetime.now(dt.UTC), "released": True}
        if claim is None:
            metering.count(FIRESTORE_WRITES)
            reference.set(released, merge=True)
            return

        @self._firestore.transactional
        def release(transaction: Any) -> None:
            metering.reads(1)
            lease = reference.get(transaction=transaction).to_dict() or {}
            if lease.get("claims") == claim:
                metering.count(FIRESTORE_WRITES)
                transaction.set(reference, released, merge=True)

        release(self._db.transaction())

    def leased_cells(self, run_id: str) -> set[str]:
        """The cells whose lease has not expired."""
        now = dt.datetime.now(dt.UTC)
        query = self._leases(run_id).where(
            filter=self._firestore.FieldFilter("expires_at", ">", now)
        )
        leased = {doc.id for doc in query.stream()}
        metering.reads(len(leased))
        return leased

    def hand_on_lapsed(self, run_id: str) -> list[str]:
        """The cells whose holder let the lease lapse unreleased (it died), marked handed on.

        Each is marked in a transaction that finds it still lapsed, so two sweeps hand a
        cell on once, and a lease claimed again meanwhile is left to its new holder.
        One query on ``released`` (a single-field index Firestore keeps by default).
        """
        firestore = self._firestore
        leases = self._leases(run_id)
        held = leases.where(filter=firestore.FieldFilter("released", "==", False)).stream()
        now = dt.datetime.now(dt.UTC)
        leases_now = [(doc.id, doc.to_dict() or {}) for doc in held]
        metering.reads(len(leases_now))
        lapsed = [
            (cell_id, lease)
            for cell_id, lease in leases_now
            if not lease.get("handed_on") and lease.get("expires_at", now) <= now
        ]

        @firestore.transactional
        def hand_on(transaction: Any, reference: Any, claims: int) -> bool:
            metering.reads(1)
            lease = reference.get(transaction=transaction).to_dict() or {}
            expires = lease.get("expires_at")
            if (
                lease.get("claims") != claims
                or lease.get("released")
                or lease.get("handed_on")
                or expires is None
                or expires > dt.datetime.now(dt.UTC)
            ):
                return False
            metering.count(FIRESTORE_WRITES)
            transaction.update(reference, {"handed_on": True})
            return True

        return [
            cell_id
            for cell_id, lease in lapsed
            if hand_on(self._db.transaction(), leases.document(cell_id), lease.get("claims"))
        ]

    def lease_seconds_left(self, run_id: str, cell_id: str) -> float | None:
        """How long the cell's lease holds yet (one read); None if it is not live."""
        snapshot = self._leases(run_id).document(cell_id).get()
        metering.reads(1)
        lease = snapshot.to_dict() or {}
        expires = lease.get("expires_at")
        if lease.get("released") or expires is None:
            return None
        left = (expires - dt.datetime.now(dt.UTC)).total_seconds()
        return left if left > 0 else None

    def taken_over_since(self, run_id: str, since: dt.datetime) -> bool:
        """Whether a dead holder's lease of the run was taken over after ``since``."""
        return self._any_later(self._leases(run_id), "taken_over_at", since)

    def has_live_lease(self, run_id: str) -> bool:
        """Whether any lease of the run is live."""
        return self._any_later(self._leases(run_id), "expires_at", dt.datetime.now(dt.UTC))
