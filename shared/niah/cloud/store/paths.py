"""Where the store's documents live in Firestore: the one place that knows the paths.

- ``runs/{run_id}``: the validated spec, status, ``total``, the report.
- ``runs/{run_id}/cells/{cell_id}``: one cell's result, in the harness's field names.
- ``runs/{run_id}/counters/{shard}``: the run's counts (done, failed, totals.*), sharded.
- ``runs/{run_id}/leases/{cell_id}``: who is calling the model for a cell, until when.
- ``runs/{run_id}/calls/{cell_id}.C{n}``: every model call started for a cell (spend).
- ``runs/{run_id}/attempts/{cell_id}``: a cell's retryable failures.
- ``runs/{run_id}/batch_jobs/{job_key}``: one batch job's state (its poll, ingest and
  settle), merged over the run's ``batch_jobs`` list when the run is read, so two jobs
  settling at once each write only their own document.
- ``runs/{run_id}/marks/report_requested``: when the run's report was last asked for.
- ``sentinels/{name}``: a sentinel's definition (its request, schedule, time zone).

Each part of the store (``niah.cloud.store``) builds on ``FirestoreDocuments``, which
holds the client and finds these documents, so no other module spells a path:
each asks for ``_cells(run_id)``, ``_leases(run_id)`` and the like.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from typing import Any

from niah.cloud import metering
from niah.core.results.counters import shard_of
from niah.settings import get_settings

RUNS = "runs"
CELLS = "cells"
ATTEMPTS = "attempts"
LEASES = "leases"
COUNTERS = "counters"
CALLS = "calls"
MARKS = "marks"
BATCH_JOBS = "batch_jobs"
REPORT_REQUESTED = "report_requested"
SENTINELS = "sentinels"
# Fields the shards hold; the run document's own copies (runs stored before the
# counts were sharded) are added in.
COUNTED = ("done", "failed")

# A counter shard's ``done`` plus ``failed``, kept in the same write as each, so the
# commit that stores a cell also says whether its shard is now full.
SHARD_COUNTED = "counted"


class FirestoreDocuments:
    """The Firestore client and the run's documents, shared by every part of the store.

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

    def _runs(self) -> Any:
        return self._db.collection(RUNS)

    @staticmethod
    def _lease_expiry(snapshot: Any, lease_seconds: float) -> tuple[dt.datetime, dt.datetime]:
        """The store's now (the read's time) and a lease from it: never the worker's clock.

        A lease taken, renewed or compared in a transaction is timed by the read that
        began it, so a holder's ``ClaimDeadline`` and another delivery's takeover agree
        whatever the workers' clocks say (docs/reliability.md, "One paid call per cell").
        """
        now = snapshot.read_time or dt.datetime.now(dt.UTC)
        return now, now + dt.timedelta(seconds=lease_seconds)

    def _run(self, run_id: str) -> Any:
        return self._runs().document(run_id)

    def _cells(self, run_id: str) -> Any:
        return self._run(run_id).collection(CELLS)

    def _leases(self, run_id: str) -> Any:
        return self._run(run_id).collection(LEASES)

    def _calls(self, run_id: str) -> Any:
        return self._run(run_id).collection(CALLS)

    def _attempts(self, run_id: str) -> Any:
        return self._run(run_id).collection(ATTEMPTS)

    def _counters(self, run_id: str) -> Any:
        return self._run(run_id).collection(COUNTERS)

    def _batch_jobs(self, run_id: str) -> Any:
        return self._run(run_id).collection(BATCH_JOBS)

    def _batch_job(self, run_id: str, job_name: str) -> Any:
        return self._batch_jobs(run_id).document(batch_job_key(job_name))

    def _report_mark(self, run_id: str) -> Any:
        return self._run(run_id).collection(MARKS).document(REPORT_REQUESTED)

    def _shards(self, run_id: str) -> list[dict[str, Any]]:
        shards = [doc.to_dict() or {} for doc in self._counters(run_id).stream()]
        metering.reads(len(shards))
        return shards

    def _shard(self, run_id: str, cell_id: str, shards: int) -> Any:
        return self._counters(run_id).document(shard_of(cell_id, shards))

    def _any_later(self, collection: Any, field: str, since: Any) -> bool:
        """Whether a document of ``collection`` (one of a run's) has ``field`` after ``since``.

        One query of at most one document (a single-field index Firestore keeps by
        default); an empty result is billed one read.
        """
        query = collection.where(filter=self._firestore.FieldFilter(field, ">", since)).limit(1)
        found = list(query.stream())
        metering.reads(max(1, len(found)))
        return bool(found)


def batch_job_key(job_name: str) -> str:
    """A batch job's document ID: deterministic, so a redelivered write finds its document."""
    return hashlib.sha256(job_name.encode()).hexdigest()[:16]
