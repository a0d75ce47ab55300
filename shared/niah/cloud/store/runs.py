"""The run documents: create, read with their counts, update, cancel, and list runs.

A run's counts are spread over ``NIAH_COUNTER_SHARDS`` counter documents (Firestore
sustains about one write per second per document, cloud.google.com/firestore/docs/
solutions/counters, read 2026-11-26); readers sum them here (``add_counts``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from niah.cloud import metering
from niah.cloud.google_errors import raises_service_errors
from niah.cloud.metering import FIRESTORE_WRITES
from niah.cloud.store.paths import COUNTED, FirestoreDocuments
from niah.core.interfaces import RUN_CANCELLED, RUN_COMPLETE, CancelOutcome
from niah.core.runs import with_job_documents
from niah.errors import StoreUnavailableError


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


@metering.waits_on(metering.FIRESTORE)
@raises_service_errors(unavailable=StoreUnavailableError)
class RunRecords(FirestoreDocuments):
    """The run documents and the listings of runs."""

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
        run = self._with_job_states(run_id, snapshot.to_dict() or {})
        return add_counts(run, self._shards(run_id)) if counts else run

    def update_run(self, run_id: str, fields: dict[str, Any]) -> None:
        """Merge ``fields`` into the run document."""
        metering.count(FIRESTORE_WRITES)
        self._run(run_id).set(
            {**fields, "updated_at": self._firestore.SERVER_TIMESTAMP}, merge=True
        )

    def _with_job_states(self, run_id: str, run: dict[str, Any]) -> dict[str, Any]:
        """A batch run with its jobs' own documents merged in (one query); others as read."""
        if not run.get("batch_jobs"):
            return run
        states = [doc.to_dict() or {} for doc in self._batch_jobs(run_id).stream()]
        metering.reads(max(1, len(states)))
        return with_job_documents(run, states)

    def update_batch_job(self, run_id: str, job_name: str, fields: dict[str, Any]) -> None:
        """Merge ``fields`` into the batch job's own document (created if absent).

        Only this job's document is written: a settle of another job at the same time
        keeps its fields (the run's ``batch_jobs`` list, written whole, dropped them).
        """
        metering.count(FIRESTORE_WRITES)
        self._batch_job(run_id, job_name).set(
            {**fields, "name": job_name, "updated_at": self._firestore.SERVER_TIMESTAMP},
            merge=True,
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

    def running_runs(self) -> list[dict[str, Any]]:
        """Every run whose status is still "running", with its counts."""
        query = self._runs().where(filter=self._firestore.FieldFilter("status", "==", "running"))
        docs = list(query.stream())
        metering.reads(len(docs))
        return [
            {
                **add_counts(
                    self._with_job_states(doc.id, doc.to_dict() or {}), self._shards(doc.id)
                ),
                "run_id": doc.id,
            }
            for doc in docs
        ]

    def index_runs(self, fields: Sequence[str]) -> list[dict[str, Any]]:
        """Every run's ``fields`` (a projection), one read per run, no counts."""
        query = self._runs().select(list(fields))
        docs = list(query.stream())
        metering.reads(len(docs))
        return [{**(doc.to_dict() or {}), "run_id": doc.id} for doc in docs]

    def recent_runs(self, limit: int) -> list[dict[str, Any]]:
        """The ``limit`` most recently created runs, newest first, with their counts."""
        query = self._runs().order_by("created_at", direction=self._firestore.Query.DESCENDING)
        docs = list(query.limit(limit).stream())
        metering.reads(len(docs))
        return [
            {**add_counts(doc.to_dict() or {}, self._shards(doc.id)), "run_id": doc.id}
            for doc in docs
        ]
