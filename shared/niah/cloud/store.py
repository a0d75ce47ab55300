"""Firestore: the one module that knows the document paths.

- ``runs/{run_id}``: the validated spec, status, counts (total, done, failed), report.
- ``runs/{run_id}/cells/{cell_id}``: one cell's result, in the harness's field names.

A cell result is stored by one batch that *creates* the cell (failing if it exists)
and increments the run's counter: atomic and idempotent, with no transaction on the
hot run document (the emulator and production both punish those).
"""

from __future__ import annotations

from typing import Any

from niah.core.interfaces import ReportClaim
from niah.settings import get_settings

RUNS = "runs"
CELLS = "cells"
ATTEMPTS = "attempts"
LEASES = "leases"


class FirestoreStore:
    """``niah.core.interfaces.ResultStore`` on Firestore.

    The emulator is reached through FIRESTORE_EMULATOR_HOST, as the client library does.
    """

    def __init__(self, client: Any = None) -> None:
        from google.cloud import firestore

        self._firestore = firestore
        self._db = client or firestore.Client(project=get_settings().project)

    def _run(self, run_id: str) -> Any:
        return self._db.collection(RUNS).document(run_id)

    def create_run(self, run_id: str, doc: dict[str, Any]) -> bool:
        """Create the run; False if it already exists."""
        from google.api_core.exceptions import AlreadyExists, Conflict

        stamped = {**doc, "created_at": self._firestore.SERVER_TIMESTAMP}
        try:
            self._run(run_id).create(stamped)
        except (AlreadyExists, Conflict):
            return False
        return True

    def get_run(self, run_id: str) -> dict[str, Any] | None:
        """The run document, or None."""
        snapshot = self._run(run_id).get()
        return snapshot.to_dict() if snapshot.exists else None

    def update_run(self, run_id: str, fields: dict[str, Any]) -> None:
        """Merge ``fields`` into the run document."""
        self._run(run_id).set(
            {**fields, "updated_at": self._firestore.SERVER_TIMESTAMP}, merge=True
        )

    def cell_exists(self, run_id: str, cell_id: str) -> bool:
        """Whether the cell has a stored result."""
        return bool(self._run(run_id).collection(CELLS).document(cell_id).get().exists)

    def record_cell(
        self,
        run_id: str,
        cell_id: str,
        doc: dict[str, Any],
        *,
        failed: bool,
        totals: dict[str, float] | None = None,
    ) -> bool:
        """Create the cell and count it on the run in one atomic batch.

        The same batch increments ``done`` or ``failed`` and the run's ``totals.*``
        (tokens, cost), so the run's figures can never disagree with its cells.
        """
        from google.api_core.exceptions import AlreadyExists, Conflict

        run = self._run(run_id)
        batch = self._db.batch()
        batch.create(run.collection(CELLS).document(cell_id), doc)
        batch.update(
            run,
            {
                "failed" if failed else "done": self._firestore.Increment(1),
                "updated_at": self._firestore.SERVER_TIMESTAMP,
                **{
                    f"totals.{key}": self._firestore.Increment(value)
                    for key, value in (totals or {}).items()
                },
            },
        )
        try:
            batch.commit()
        except (AlreadyExists, Conflict):
            return False
        return True

    def list_cells(self, run_id: str) -> list[dict[str, Any]]:
        """Every stored cell of the run, in cell-ID order."""
        docs = self._run(run_id).collection(CELLS).stream()
        cells = [doc.to_dict() | {"cell_id": doc.id} for doc in docs]
        return sorted(cells, key=lambda cell: str(cell["cell_id"]))

    def claim_cell(self, run_id: str, cell_id: str, lease_seconds: float) -> bool:
        """Create the cell's lease, or take over an expired one, in a transaction.

        One small document per cell: the transaction never contends with the run's.
        """
        import datetime as dt

        firestore = self._firestore
        reference = self._run(run_id).collection(LEASES).document(cell_id)

        @firestore.transactional
        def claim(transaction: Any) -> bool:
            now = dt.datetime.now(dt.UTC)
            lease = reference.get(transaction=transaction)
            expires = (lease.to_dict() or {}).get("expires_at") if lease.exists else None
            if expires is not None and expires > now:
                return False
            transaction.set(reference, {"expires_at": now + dt.timedelta(seconds=lease_seconds)})
            return True

        return bool(claim(self._db.transaction()))

    def release_cell(self, run_id: str, cell_id: str) -> None:
        """Delete the cell's lease."""
        self._run(run_id).collection(LEASES).document(cell_id).delete()

    def leased_cells(self, run_id: str) -> set[str]:
        """The cells whose lease has not expired."""
        import datetime as dt

        now = dt.datetime.now(dt.UTC)
        query = (
            self._run(run_id)
            .collection(LEASES)
            .where(filter=self._firestore.FieldFilter("expires_at", ">", now))
        )
        return {doc.id for doc in query.stream()}

    def note_attempt(self, run_id: str, cell_id: str, error: str) -> None:
        """Remember a cell's last retryable error (for the dead-letter record)."""
        self._run(run_id).collection(ATTEMPTS).document(cell_id).set(
            {
                "last_error": error[:2000],
                "failures": self._firestore.Increment(1),
                "updated_at": self._firestore.SERVER_TIMESTAMP,
            },
            merge=True,
        )

    def last_attempt(self, run_id: str, cell_id: str) -> dict[str, Any] | None:
        """The cell's attempt record: ``last_error`` and ``failures``."""
        snapshot = self._run(run_id).collection(ATTEMPTS).document(cell_id).get()
        return snapshot.to_dict() if snapshot.exists else None

    def claim_report(self, run_id: str, lease_seconds: float) -> ReportClaim:
        """Take the right to render the run's report, in a transaction on the run.

        Rare (once per run), so a transaction on the run document is fine here. A
        claim older than ``lease_seconds`` is taken over: its renderer died.
        """
        import datetime as dt

        firestore = self._firestore
        reference = self._run(run_id)

        @firestore.transactional
        def claim(transaction: Any) -> ReportClaim:
            run = reference.get(transaction=transaction).to_dict() or {}
            if run.get("status") == "complete" and run.get("report"):
                return "done"
            claimed_at = run.get("report_claimed_at")
            now = dt.datetime.now(dt.UTC)
            if claimed_at is not None and (now - claimed_at).total_seconds() < lease_seconds:
                return "held"
            transaction.update(reference, {"report_claimed_at": now})
            return "claimed"

        result: ReportClaim = claim(self._db.transaction())
        return result

    def reset_failed_cells(self, run_id: str) -> int:
        """Delete the run's failed cells (and their failure counts), uncount them, reopen.

        The run is reopened first, so a reset cut short never leaves a "complete" run
        with cells missing. Each delete requires the cell to exist, so two resets at
        once cannot both uncount the same cells.
        """
        from google.api_core.exceptions import FailedPrecondition, NotFound

        firestore = self._firestore
        run = self._run(run_id)
        run.update(
            {
                "status": "running",
                "report": firestore.DELETE_FIELD,
                "report_claimed_at": firestore.DELETE_FIELD,
                "updated_at": firestore.SERVER_TIMESTAMP,
            }
        )
        failed = list(
            run.collection(CELLS)
            .where(filter=firestore.FieldFilter("status", "==", "failed"))
            .stream()
        )
        reset = 0
        for first in range(0, len(failed), 200):
            chunk = failed[first : first + 200]
            batch = self._db.batch()
            for doc in chunk:
                batch.delete(doc.reference, option=self._db.write_option(exists=True))
                batch.delete(run.collection(ATTEMPTS).document(doc.id))
            batch.update(run, {"failed": firestore.Increment(-len(chunk))})
            try:
                batch.commit()
            except (NotFound, FailedPrecondition):
                continue  # another reset got there first and uncounted them
            reset += len(chunk)
        return reset

    def running_runs(self) -> list[dict[str, Any]]:
        """Every run whose status is still "running"."""
        query = self._db.collection(RUNS).where(
            filter=self._firestore.FieldFilter("status", "==", "running")
        )
        return [{**(doc.to_dict() or {}), "run_id": doc.id} for doc in query.stream()]
