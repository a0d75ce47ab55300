"""Firestore: the one module that knows the document paths.

- ``runs/{run_id}``: the validated spec, status, counts (total, done, failed), report.
- ``runs/{run_id}/cells/{cell_id}``: one cell's result, in the harness's field names.

A cell result is stored by one batch that *creates* the cell (failing if it exists)
and increments the run's counter: atomic and idempotent, with no transaction on the
hot run document (the emulator and production both punish those).
"""

from __future__ import annotations

from typing import Any, Protocol

from niah.settings import get_settings

RUNS = "runs"
CELLS = "cells"


class ResultStore(Protocol):
    """Runs and their cells."""

    def create_run(self, run_id: str, doc: dict[str, Any]) -> bool:
        """Create the run; False if it already exists (nothing is changed then)."""
        ...

    def get_run(self, run_id: str) -> dict[str, Any] | None:
        """The run document, or None."""
        ...

    def update_run(self, run_id: str, fields: dict[str, Any]) -> None:
        """Merge ``fields`` into the run document."""
        ...

    def cell_exists(self, run_id: str, cell_id: str) -> bool:
        """Whether the cell has a stored result (answered or failed)."""
        ...

    def record_cell(
        self,
        run_id: str,
        cell_id: str,
        doc: dict[str, Any],
        *,
        failed: bool,
        totals: dict[str, float] | None = None,
    ) -> bool:
        """Create the cell's result and count it (and add ``totals``) on the run, atomically.

        Returns False, changing nothing, if the cell was already stored.
        """
        ...

    def list_cells(self, run_id: str) -> list[dict[str, Any]]:
        """Every stored cell of the run, in cell-ID order."""
        ...


class FirestoreStore:
    """``ResultStore`` on Firestore (or its emulator, via FIRESTORE_EMULATOR_HOST)."""

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
