"""Firestore: the one module that knows the document paths.

- ``runs/{run_id}``: the validated spec, status, ``total``, the report.
- ``runs/{run_id}/cells/{cell_id}``: one cell's result, in the harness's field names.
- ``runs/{run_id}/counters/{shard}``: the run's counts (done, failed, totals.*), sharded.
- ``runs/{run_id}/leases/{cell_id}``: who is calling the model for a cell, until when.
- ``runs/{run_id}/calls/{cell_id}.C{n}``: every model call started for a cell (spend).
- ``runs/{run_id}/attempts/{cell_id}``: a cell's retryable failures.
- ``runs/{run_id}/marks/report_requested``: when the run's report was last asked for.

A cell result is stored by one batch that *creates* the cell (failing if it exists),
closes its call and increments one counter shard: atomic and idempotent, with no
write to the run document. Firestore sustains about one write per second per document
(cloud.google.com/firestore/docs/solutions/counters, read 2026-11-26), so the counts
are spread over ``NIAH_COUNTER_SHARDS`` documents picked by the cell's ID; readers
sum them (``get_run``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from niah.cloud import metering
from niah.cloud.google_errors import raises_service_errors
from niah.cloud.metering import FIRESTORE_DELETES, FIRESTORE_WRITES
from niah.core.counters import shard_of
from niah.core.interfaces import (
    CLAIM_ABANDONED,
    CLAIM_HELD,
    CLAIM_STORED,
    RUN_CANCELLED,
    RUN_COMPLETE,
    RUN_REPORT_FAILED,
    CancelOutcome,
    Recorded,
    ReportClaim,
    lapses_before_claim,
)
from niah.errors import StoreUnavailableError
from niah.settings import get_settings

RUNS = "runs"
CELLS = "cells"
ATTEMPTS = "attempts"
LEASES = "leases"
COUNTERS = "counters"
CALLS = "calls"
MARKS = "marks"
REPORT_REQUESTED = "report_requested"
# Fields the shards hold; the run document's own copies (runs stored before the
# counts were sharded) are added in.
COUNTED = ("done", "failed")


def add_counts(run: dict[str, Any], shards: list[dict[str, Any]]) -> dict[str, Any]:
    """The run with its shards' counts, totals and latest progress time summed in."""
    merged = dict(run)
    totals = dict(run.get("totals") or {})
    for shard in shards:
        for name in COUNTED:
            merged[name] = merged.get(name, 0) + int(shard.get(name, 0))
        for key, value in (shard.get("totals") or {}).items():
            totals[key] = totals.get(key, 0) + value
        stamp = shard.get("updated_at")
        if stamp is not None and (merged.get("updated_at") is None or stamp > merged["updated_at"]):
            merged["updated_at"] = stamp
    for name in COUNTED:
        merged.setdefault(name, 0)
    merged["totals"] = totals
    return merged


# A counter shard's ``done`` plus ``failed``, kept in the same write as each, so the
# commit that stores a cell also says whether its shard is now full.
SHARD_COUNTED = "counted"


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


@raises_service_errors(unavailable=StoreUnavailableError)
class FirestoreStore:
    """``niah.core.interfaces.ResultStore`` on Firestore.

    The emulator is reached through FIRESTORE_EMULATOR_HOST, as the client library does.
    """

    def __init__(self, client: Any = None) -> None:
        from google.cloud import firestore

        self._firestore = firestore
        self._db = client or firestore.Client(project=get_settings().project)
        # The update time of each lease this process created and has not written since,
        # by (run, cell): its claim number and the time. The spend note is then one write
        # guarded by that time, not a transaction (see ``open_call``).
        self._fresh_leases: dict[tuple[str, str], tuple[int, Any]] = {}

    def _run(self, run_id: str) -> Any:
        return self._db.collection(RUNS).document(run_id)

    def create_run(self, run_id: str, doc: dict[str, Any]) -> bool:
        """Create the run; False if it already exists."""
        from google.api_core.exceptions import AlreadyExists

        stamped = {**doc, "created_at": self._firestore.SERVER_TIMESTAMP}
        metering.count(FIRESTORE_WRITES)
        try:
            self._run(run_id).create(stamped)
        except AlreadyExists:  # not Conflict: Aborted is one too, and wrote nothing
            return False
        return True

    def get_run(
        self, run_id: str, *, counts: bool = True, fields: Sequence[str] | None = None
    ) -> dict[str, Any] | None:
        """The run document, with its counts summed from the shards, or None.

        ``counts=False``: the document alone, one read (spec, total, status).
        ``fields``: only these fields of it (a projection: the same read, fewer bytes).
        """
        snapshot = self._run(run_id).get(field_paths=list(fields) if fields else None)
        metering.reads(1)
        if not snapshot.exists:
            return None
        run = snapshot.to_dict() or {}
        return add_counts(run, self._shards(run_id)) if counts else run

    def _shards(self, run_id: str) -> list[dict[str, Any]]:
        shards = [doc.to_dict() or {} for doc in self._run(run_id).collection(COUNTERS).stream()]
        metering.reads(len(shards))
        return shards

    def _shard(self, run_id: str, cell_id: str, shards: int) -> Any:
        return self._run(run_id).collection(COUNTERS).document(shard_of(cell_id, shards))

    def shard_count(self, run_id: str, cell_id: str, *, shards: int) -> int:
        """How many cells (stored and failed) the cell's counter shard has counted."""
        snapshot = self._shard(run_id, cell_id, shards).get()
        metering.reads(1)
        shard = snapshot.to_dict() or {}
        return int(shard.get("done", 0)) + int(shard.get("failed", 0))

    def count_cells(self, run_id: str) -> int:
        """How many cells are stored: one aggregation read, not one per cell."""
        result = self._run(run_id).collection(CELLS).count().get()
        stored = int(result[0][0].value)
        metering.reads(-(-stored // 1000))  # one read per 1,000 index entries counted
        return stored

    def update_run(self, run_id: str, fields: dict[str, Any]) -> None:
        """Merge ``fields`` into the run document."""
        metering.count(FIRESTORE_WRITES)
        self._run(run_id).set(
            {**fields, "updated_at": self._firestore.SERVER_TIMESTAMP}, merge=True
        )

    def cancel_run(self, run_id: str) -> CancelOutcome:
        """Mark the run cancelled, unless it is complete, in a transaction on the run.

        Rare (a person's command), so a transaction on the run document is fine. Workers
        read the status with the run document they read for every delivery anyway.
        """
        firestore = self._firestore
        reference = self._run(run_id)

        @firestore.transactional
        def cancel(transaction: Any) -> CancelOutcome:
            metering.reads(1)
            snapshot = reference.get(transaction=transaction)
            if not snapshot.exists:
                return "missing"
            status = (snapshot.to_dict() or {}).get("status")
            if status == RUN_COMPLETE:
                return "complete"
            if status == RUN_CANCELLED:
                return "already_cancelled"
            metering.count(FIRESTORE_WRITES)
            transaction.update(
                reference,
                {
                    "status": RUN_CANCELLED,
                    "cancelled_at": firestore.SERVER_TIMESTAMP,
                    "updated_at": firestore.SERVER_TIMESTAMP,
                },
            )
            return "cancelled"

        outcome: CancelOutcome = cancel(self._db.transaction())
        return outcome

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
        run = self._run(run_id)
        batch = self._db.batch()
        batch.create(run.collection(CELLS).document(cell_id), doc)
        counts: dict[str, Any] = {
            SHARD_COUNTED: firestore.Increment(1),
            "failed" if failed else "done": firestore.Increment(1),
            "updated_at": firestore.SERVER_TIMESTAMP,
        }
        if totals:  # an empty map under merge would replace the shard's totals with {}
            counts["totals"] = {key: firestore.Increment(value) for key, value in totals.items()}
        batch.set(self._shard(run_id, cell_id, shards), counts, merge=True)
        if call is not None:
            batch.set(run.collection(CALLS).document(call[0]), call[1], merge=True)
        # Stored: the lease has done its job (one write in the batch, not a request more).
        batch.set(
            run.collection(LEASES).document(cell_id),
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
        docs = self._run(run_id).collection(CELLS).stream()
        cells = [doc.to_dict() | {"cell_id": doc.id} for doc in docs]
        metering.reads(len(cells))
        return sorted(cells, key=lambda cell: str(cell["cell_id"]))

    def cell_ids(self, run_id: str) -> set[str]:
        """The IDs of the run's stored cells: a projection on no field, not whole cells.

        Firestore still bills a read per cell, but nothing of a cell (its answer may
        be 100 KB) crosses the wire.
        """
        docs = self._run(run_id).collection(CELLS).select([]).stream()
        ids = {doc.id for doc in docs}
        metering.reads(len(ids))
        return ids

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
        reference = self._run(run_id).collection(LEASES).document(cell_id)
        cell = self._run(run_id).collection(CELLS).document(cell_id)

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
            now = dt.datetime.now(dt.UTC)
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
                    "expires_at": now + dt.timedelta(seconds=lease_seconds),
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

        reference = self._run(run_id).collection(LEASES).document(cell_id)
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

        Gone: released, or lapsed and claimed by another delivery since.
        """
        self._fresh_leases.pop((run_id, cell_id), None)  # written now: no longer fresh
        firestore = self._firestore
        reference = self._run(run_id).collection(LEASES).document(cell_id)

        @firestore.transactional
        def renew(transaction: Any) -> bool:
            metering.reads(1)
            lease = reference.get(transaction=transaction).to_dict() or {}
            if lease.get("claims") != claim or lease.get("released"):
                return False
            metering.count(FIRESTORE_WRITES)
            expires = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=lease_seconds)
            transaction.update(reference, {"expires_at": expires})
            return True

        return bool(renew(self._db.transaction()))

    def release_cell(self, run_id: str, cell_id: str, claim: int | None = None) -> None:
        """End the cell's lease now; its claim count stays, so call IDs never repeat.

        With ``claim``, only if the lease is still that claim's (a transaction): a holder
        that lost its lease never frees the next holder's.
        """
        self._fresh_leases.pop((run_id, cell_id), None)
        reference = self._run(run_id).collection(LEASES).document(cell_id)
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
        query = (
            self._run(run_id)
            .collection(LEASES)
            .where(filter=self._firestore.FieldFilter("expires_at", ">", now))
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
        leases = self._run(run_id).collection(LEASES)
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
        snapshot = self._run(run_id).collection(LEASES).document(cell_id).get()
        metering.reads(1)
        lease = snapshot.to_dict() or {}
        expires = lease.get("expires_at")
        if lease.get("released") or expires is None:
            return None
        left = (expires - dt.datetime.now(dt.UTC)).total_seconds()
        return left if left > 0 else None

    def _any_later(self, run_id: str, collection: str, field: str, since: Any) -> bool:
        """Whether a document of the run's ``collection`` has ``field`` after ``since``.

        One query of at most one document (a single-field index Firestore keeps by
        default); an empty result is billed one read.
        """
        query = (
            self._run(run_id)
            .collection(collection)
            .where(filter=self._firestore.FieldFilter(field, ">", since))
            .limit(1)
        )
        found = list(query.stream())
        metering.reads(max(1, len(found)))
        return bool(found)

    def taken_over_since(self, run_id: str, since: dt.datetime) -> bool:
        """Whether a dead holder's lease of the run was taken over after ``since``."""
        return self._any_later(run_id, LEASES, "taken_over_at", since)

    def has_live_lease(self, run_id: str) -> bool:
        """Whether any lease of the run is live."""
        return self._any_later(run_id, LEASES, "expires_at", dt.datetime.now(dt.UTC))

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
        lease_ref = self._run(run_id).collection(LEASES).document(cell_id)
        note_ref = self._run(run_id).collection(CALLS).document(call_id)
        if self._note_on_fresh_lease(
            run_id, cell_id, claim, lease_ref, note_ref, doc, lease_seconds
        ):
            return True

        @firestore.transactional
        def note(transaction: Any) -> bool:
            metering.reads(1)
            lease = lease_ref.get(transaction=transaction).to_dict() or {}
            if lease.get("claims") != claim or lease.get("released"):
                return False
            metering.count(FIRESTORE_WRITES, 2)
            expires = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=lease_seconds)
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
        self._run(run_id).collection(CALLS).document(call_id).set(fields, merge=True)

    def list_calls(self, run_id: str) -> list[dict[str, Any]]:
        """Every model call started for the run's cells."""
        docs = self._run(run_id).collection(CALLS).stream()
        calls = [doc.to_dict() | {"call_id": doc.id} for doc in docs]
        metering.reads(len(calls))
        return calls

    def note_attempt(self, run_id: str, cell_id: str, error: str) -> None:
        """Remember a cell's last retryable error (for the dead-letter record)."""
        metering.count(FIRESTORE_WRITES)
        self._run(run_id).collection(ATTEMPTS).document(cell_id).set(
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
        return self._any_later(run_id, ATTEMPTS, "updated_at", since)

    def last_attempt(self, run_id: str, cell_id: str) -> dict[str, Any] | None:
        """The cell's attempt record: ``last_error`` and ``failures``."""
        snapshot = self._run(run_id).collection(ATTEMPTS).document(cell_id).get()
        metering.reads(1)
        return snapshot.to_dict() if snapshot.exists else None

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
        shards_query = reference.collection(COUNTERS).limit(1000)

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

        reference = self._run(run_id).collection(MARKS).document(REPORT_REQUESTED)
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
        self._run(run_id).collection(MARKS).document(REPORT_REQUESTED).delete()

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

    def reset_failed_cells(self, run_id: str, *, shards: int) -> int:
        """Delete the run's failed cells (and their failure counts), uncount them, reopen.

        ``shards``: the run's counter shards, which its cells were counted on.

        The run is reopened first, so a reset cut short never leaves a "complete" run
        with cells missing. Each delete requires the cell to exist, so two resets at
        once cannot both uncount the same cells.
        """
        from google.api_core.exceptions import FailedPrecondition, NotFound

        firestore = self._firestore
        run = self._run(run_id)
        self.reopen_report(run_id)
        failed = list(
            run.collection(CELLS)
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
                batch.delete(run.collection(ATTEMPTS).document(doc.id))
                shard = shard_of(doc.id, shards)
                per_shard[shard] = per_shard.get(shard, 0) + 1
            for shard, count in per_shard.items():
                batch.set(
                    run.collection(COUNTERS).document(shard),
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

    def running_runs(self) -> list[dict[str, Any]]:
        """Every run whose status is still "running", with its counts."""
        query = self._db.collection(RUNS).where(
            filter=self._firestore.FieldFilter("status", "==", "running")
        )
        docs = list(query.stream())
        metering.reads(len(docs))
        return [
            {**add_counts(doc.to_dict() or {}, self._shards(doc.id)), "run_id": doc.id}
            for doc in docs
        ]

    def index_runs(self, fields: Sequence[str]) -> list[dict[str, Any]]:
        """Every run's ``fields`` (a projection), one read per run, no counts."""
        query = self._db.collection(RUNS).select(list(fields))
        docs = list(query.stream())
        metering.reads(len(docs))
        return [{**(doc.to_dict() or {}), "run_id": doc.id} for doc in docs]

    def recent_runs(self, limit: int) -> list[dict[str, Any]]:
        """The ``limit`` most recently created runs, newest first, with their counts."""
        query = self._db.collection(RUNS).order_by(
            "created_at", direction=self._firestore.Query.DESCENDING
        )
        docs = list(query.limit(limit).stream())
        metering.reads(len(docs))
        return [
            {**add_counts(doc.to_dict() or {}, self._shards(doc.id)), "run_id": doc.id}
            for doc in docs
        ]
