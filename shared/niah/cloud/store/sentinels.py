"""The sentinels' definitions and their runs.

``sentinels/{name}`` holds a sentinel's definition as Terraform (or the local stack)
wrote it: ``request`` (the run request as JSON text), ``schedule`` and ``time_zone``.
A sentinel's runs are ordinary runs whose spec names it (``spec.sentinel``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from niah.cloud import metering
from niah.cloud.google_errors import raises_service_errors
from niah.cloud.store.paths import SENTINELS, FirestoreDocuments
from niah.errors import StoreUnavailableError


@metering.waits_on(metering.FIRESTORE)
@raises_service_errors(unavailable=StoreUnavailableError)
class SentinelRecords(FirestoreDocuments):
    """Reading sentinels' definitions and listing a sentinel's runs."""

    def get_sentinel(self, name: str) -> dict[str, Any] | None:
        """The definition of sentinel ``name`` (with its ``name``), or None."""
        snapshot = self._db.collection(SENTINELS).document(name).get()
        metering.reads(1)
        return {**(snapshot.to_dict() or {}), "name": name} if snapshot.exists else None

    def list_sentinels(self) -> list[dict[str, Any]]:
        """Every sentinel's definition, by name."""
        docs = sorted(self._db.collection(SENTINELS).stream(), key=lambda doc: doc.id)
        metering.reads(len(docs))
        return [{**(doc.to_dict() or {}), "name": doc.id} for doc in docs]

    def sentinel_runs(self, name: str, fields: Sequence[str]) -> list[dict[str, Any]]:
        """Every run of sentinel ``name``, with only ``fields`` and its ID, in no order.

        One equality filter (Firestore's automatic single-field index; no composite
        index to deploy): a sentinel fires a few hundred times a year.
        """
        query = self._runs().where(filter=self._firestore.FieldFilter("spec.sentinel", "==", name))
        docs = list(query.select(list(fields)).stream())
        metering.reads(len(docs))
        return [{**(doc.to_dict() or {}), "run_id": doc.id} for doc in docs]
