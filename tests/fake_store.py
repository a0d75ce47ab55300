"""An in-memory ``ResultStore`` for unit tests, with Firestore's semantics where they matter.

Create-if-absent cells, leases with claim numbers, report claims and marks, and the
values Firestore refuses (``firestore_value``), so a test that passes here does not
fail against the emulator for a reason the fake hid.
"""

from __future__ import annotations

import copy
import datetime as dt
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

from niah.core.interfaces import (
    CLAIM_ABANDONED,
    CLAIM_HELD,
    CLAIM_STORED,
    CancelOutcome,
    Recorded,
    ReportClaim,
    lapses_before_claim,
)
from niah.core.runs import with_job_documents


def firestore_value(value: Any, *, in_array: bool = False) -> None:
    """Refuse what Firestore refuses to store: an array directly inside an array.

    Firestore answers ``400 Cannot convert an array value in an array value`` (seen on
    the emulator, issue 34): a fake that took it would pass a test that production fails.
    """
    if isinstance(value, dict):
        for item in value.values():
            firestore_value(item)
    elif isinstance(value, list | tuple):
        if in_array:
            raise ValueError("Cannot convert an array value in an array value (Firestore)")
        for item in value:
            firestore_value(item, in_array=True)


def _merge(into: dict[str, Any], fields: dict[str, Any]) -> None:
    """Merge ``fields`` into ``into``, maps into maps, as Firestore's merge does."""
    for key, value in fields.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value


class MemoryStore:
    """A ``ResultStore`` in dicts, with the same create-if-absent semantics."""

    def __init__(self) -> None:
        self.runs: dict[str, dict[str, Any]] = {}
        self.cells: dict[str, dict[str, dict[str, Any]]] = {}
        self.attempts: dict[tuple[str, str], dict[str, Any]] = {}
        self.leases: dict[tuple[str, str], dict[str, Any]] = {}
        self.claims: dict[tuple[str, str], int] = {}
        self.calls: dict[str, dict[str, dict[str, Any]]] = {}
        self.report_requests: dict[str, float] = {}
        self.sentinels: dict[str, dict[str, Any]] = {}
        self.batch_jobs: dict[str, dict[str, dict[str, Any]]] = {}  # run -> job name -> state

    def create_run(self, run_id: str, doc: dict[str, Any]) -> bool:
        firestore_value(doc)
        if run_id in self.runs:
            return False
        # Stamped as Firestore's SERVER_TIMESTAMP stamps it.
        self.runs[run_id] = {**doc, "created_at": dt.datetime.now(dt.UTC)}
        self.cells[run_id] = {}
        return True

    def settle(self, run_id: str, minutes: float = 5) -> None:
        """Make the run's creation ``minutes`` old: its dispatch is over, it may stall."""
        self.runs[run_id]["created_at"] = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=minutes)

    def get_run(
        self, run_id: str, *, counts: bool = True, fields: Sequence[str] | None = None
    ) -> dict[str, Any] | None:
        run = self.runs.get(run_id)
        if run is None:
            return None
        run = {k: v for k, v in run.items() if k in fields} if fields else dict(run)
        states = list(self.batch_jobs.get(run_id, {}).values())
        return with_job_documents(run, copy.deepcopy(states)) if run.get("batch_jobs") else run

    def update_batch_job(self, run_id: str, job_name: str, fields: dict[str, Any]) -> None:
        firestore_value(fields)
        state = self.batch_jobs.setdefault(run_id, {}).setdefault(job_name, {})
        _merge(state, copy.deepcopy({**fields, "name": job_name}))

    def update_run(self, run_id: str, fields: dict[str, Any]) -> None:
        firestore_value(fields)
        # As Firestore's set(merge=True): nested maps merge; every update is progress.
        _merge(self.runs[run_id], {**fields, "updated_at": dt.datetime.now(dt.UTC)})

    def cancel_run(self, run_id: str) -> CancelOutcome:
        run = self.runs.get(run_id)
        if run is None:
            return "missing"
        if run.get("status") in ("complete", "cancelled"):
            return "complete" if run["status"] == "complete" else "already_cancelled"
        run.update(status="cancelled", cancelled_at=dt.datetime.now(dt.UTC))
        return "cancelled"

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
        firestore_value(doc)
        if call is not None:
            self.close_call(run_id, *call)
        if cell_id in self.cells[run_id]:
            return Recorded(False)
        self.cells[run_id][cell_id] = dict(doc)
        self.release_cell(run_id, cell_id)
        run = self.runs[run_id]
        counter = "failed" if failed else "done"
        run[counter] = run.get(counter, 0) + 1
        run_totals = run.setdefault("totals", {})
        for key, value in (totals or {}).items():
            run_totals[key] = run_totals.get(key, 0) + value
        # As Firestore's commit returns the shard's count: its cells, this one included.
        return Recorded(True, self._on_shard(run_id, cell_id, shards))

    def list_cells(self, run_id: str) -> list[dict[str, Any]]:
        return [doc | {"cell_id": cid} for cid, doc in sorted(self.cells[run_id].items())]

    def cell_ids(self, run_id: str) -> set[str]:
        return set(self.cells.get(run_id, {}))

    def claim_cell(
        self, run_id: str, cell_id: str, lease_seconds: float, *, max_lapses: int = 0
    ) -> int:
        if cell_id in self.cells.get(run_id, {}):
            return CLAIM_STORED
        now = time.monotonic()
        lease = self.leases.get((run_id, cell_id), {})
        if lease.get("expires_at", 0) > now:
            return CLAIM_HELD
        lapses = lapses_before_claim(lease)
        if max_lapses and lapses >= max_lapses:
            return CLAIM_ABANDONED
        claims = self.claims.get((run_id, cell_id), 0) + 1
        self.claims[(run_id, cell_id)] = claims
        self.leases[(run_id, cell_id)] = {
            "expires_at": now + lease_seconds,
            "claims": claims,
            "released": False,
            "handed_on": False,
            "lapses": lapses,
            **({"taken_over_at": dt.datetime.now(dt.UTC)} if lapses else {}),
        }
        return claims

    def renew_lease(self, run_id: str, cell_id: str, claim: int, lease_seconds: float) -> bool:
        lease = self.leases.get((run_id, cell_id), {})
        if lease.get("claims") != claim or lease.get("released"):
            return False
        lease["expires_at"] = time.monotonic() + lease_seconds
        return True

    def release_cell(self, run_id: str, cell_id: str, claim: int | None = None) -> None:
        lease = self.leases.setdefault((run_id, cell_id), {})
        if claim is None or lease.get("claims") == claim:
            lease.update(expires_at=time.monotonic(), released=True)

    def lapse(self, run_id: str, cell_id: str) -> None:
        """The holder died: its lease runs out unreleased (as a kill would leave it)."""
        self.leases[(run_id, cell_id)]["expires_at"] = 0.0

    def leased_cells(self, run_id: str) -> set[str]:
        now = time.monotonic()
        return {
            cell
            for (run, cell), lease in self.leases.items()
            if run == run_id and lease.get("expires_at", 0) > now
        }

    def hand_on_lapsed(self, run_id: str) -> list[str]:
        now = time.monotonic()
        lapsed = []
        for (run, cell), lease in sorted(self.leases.items()):
            if run != run_id or lease.get("released") or lease.get("handed_on"):
                continue
            if lease.get("expires_at", 0) <= now:
                lease["handed_on"] = True
                lapsed.append(cell)
        return lapsed

    def lease_seconds_left(self, run_id: str, cell_id: str) -> float | None:
        lease = self.leases.get((run_id, cell_id), {})
        left = lease.get("expires_at", 0) - time.monotonic()
        return None if lease.get("released") or left <= 0 else left

    def has_live_lease(self, run_id: str) -> bool:
        return bool(self.leased_cells(run_id))

    def taken_over_since(self, run_id: str, since: dt.datetime) -> bool:
        return any(
            run == run_id and lease.get("taken_over_at", since) > since
            for (run, _), lease in self.leases.items()
        )

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
        if not self.renew_lease(run_id, cell_id, claim, lease_seconds):
            return False
        self.calls.setdefault(run_id, {}).setdefault(call_id, {}).update(doc)
        return True

    def close_call(self, run_id: str, call_id: str, fields: dict[str, Any]) -> None:
        self.calls.setdefault(run_id, {}).setdefault(call_id, {}).update(fields)

    def list_calls(self, run_id: str) -> list[dict[str, Any]]:
        return [doc | {"call_id": cid} for cid, doc in self.calls.get(run_id, {}).items()]

    def count_cells(self, run_id: str) -> int:
        return len(self.cells.get(run_id, {}))

    def shard_count(self, run_id: str, cell_id: str, *, shards: int) -> int:
        return self._on_shard(run_id, cell_id, shards)

    def _on_shard(self, run_id: str, cell_id: str, shards: int) -> int:
        """The cells on ``cell_id``'s shard, tallied as cells come and go.

        Counting a run's cells afresh on every store made a 20,000-cell ingest quadratic
        in the fake (a benchmark measured the fake, not the ingest).
        """
        from niah.core.results.counters import shard_of

        cells = self.cells.get(run_id, {})
        tallies: dict[tuple[str, int], tuple[set[str], Counter[int]]] = self.__dict__.setdefault(
            "_shard_tallies", {}
        )
        counted, tally = tallies.setdefault((run_id, shards), (set(), Counter()))
        if not (len(cells) == len(counted) + 1 and cell_id in cells and cell_id not in counted):
            for gone in counted - cells.keys():
                counted.discard(gone)
                tally[shard_of(gone, shards)] -= 1
        for new in [cell_id] if cell_id in cells and cell_id not in counted else []:
            counted.add(new)
            tally[shard_of(new, shards)] += 1
        for new in cells.keys() - counted if len(cells) != len(counted) else ():
            counted.add(new)
            tally[shard_of(new, shards)] += 1
        return tally[shard_of(cell_id, shards)]

    def note_attempt(self, run_id: str, cell_id: str, error: str) -> None:
        record = self.attempts.setdefault((run_id, cell_id), {"failures": 0})
        record["failures"] += 1
        record["last_error"] = error
        record["at"] = time.monotonic()

    def attempted_within(self, run_id: str, seconds: float) -> bool:
        since = time.monotonic() - seconds
        return any(
            run == run_id and record.get("at", since) > since
            for (run, _), record in self.attempts.items()
        )

    def last_attempt(self, run_id: str, cell_id: str) -> dict[str, Any] | None:
        return self.attempts.get((run_id, cell_id))

    def claim_report(self, run_id: str, lease_seconds: float, claim_id: str) -> ReportClaim:
        run = self.runs[run_id]
        if run.get("status") == "complete" and run.get("report"):
            return "done"
        if run.get("status") == "report_failed":
            return "failed"
        claimed_at = run.get("report_claimed_at")
        now = time.monotonic()
        if claimed_at is not None and now - claimed_at < lease_seconds:
            return "held"
        run.update(report_claim=claim_id, report_claimed_at=now)
        return "claimed"

    def renew_report_claim(self, run_id: str, claim_id: str) -> bool:
        run = self.runs.get(run_id, {})
        if run.get("report_claim") != claim_id:
            return False
        run["report_claimed_at"] = time.monotonic()
        return True

    def lapse_report_claim(self, run_id: str) -> None:
        """The renderer died: its claim runs out unrenewed (as a kill would leave it)."""
        self.runs[run_id]["report_claimed_at"] = 0.0

    def finish_report(
        self, run_id: str, claim_id: str, cells_read: int, fields: dict[str, Any]
    ) -> bool:
        run = self.runs[run_id]
        counted = run.get("done", 0) + run.get("failed", 0)
        if run.get("report_claim") != claim_id or counted != cells_read:
            return False
        run.update(fields, status="complete")
        return True

    def fail_report(self, run_id: str, error: dict[str, Any], *, claim_id: str | None) -> bool:
        run = self.runs.get(run_id)
        if run is None or run.get("status") == "complete":
            return False
        if claim_id is not None and run.get("report_claim") != claim_id:
            return False
        firestore_value(error)
        run.update(status="report_failed", report_error=error)
        run.pop("report_claim", None)
        run.pop("report_claimed_at", None)
        return True

    def mark_report_requested(self, run_id: str, window_seconds: float) -> bool:
        now = time.monotonic()
        requested = self.report_requests.get(run_id)
        if requested is not None and now - requested < window_seconds:
            return False
        if requested is not None:  # past the window: as Firestore, read the run
            run = self.runs.get(run_id, {})
            if run.get("status") in ("complete", "report_failed"):
                return False
            claimed_at = run.get("report_claimed_at")
            if claimed_at is not None and now - claimed_at < window_seconds:
                return False
        self.report_requests[run_id] = now
        return True

    def clear_report_request(self, run_id: str) -> None:
        self.report_requests.pop(run_id, None)

    def reopen_report(self, run_id: str) -> None:
        self.clear_report_request(run_id)
        run = self.runs[run_id]
        run.update(status="running")
        run.pop("report", None)
        run.pop("report_error", None)
        run.pop("report_claim", None)
        run.pop("report_claimed_at", None)

    def running_runs(self) -> list[dict[str, Any]]:
        return [
            (self.get_run(rid) or run) | {"run_id": rid}
            for rid, run in self.runs.items()
            if run.get("status") == "running"
        ]

    def index_runs(self, fields: Sequence[str]) -> list[dict[str, Any]]:
        tops = {field.split(".")[0] for field in fields}
        return [
            {k: v for k, v in run.items() if k in tops} | {"run_id": run_id}
            for run_id, run in self.runs.items()
        ]

    def get_sentinel(self, name: str) -> dict[str, Any] | None:
        found = self.sentinels.get(name)
        return None if found is None else {**found, "name": name}

    def list_sentinels(self) -> list[dict[str, Any]]:
        return [{**doc, "name": name} for name, doc in sorted(self.sentinels.items())]

    def sentinel_runs(self, name: str, fields: Sequence[str]) -> list[dict[str, Any]]:
        return [
            run
            for run in self.index_runs(fields)
            if (self.runs[run["run_id"]].get("spec") or {}).get("sentinel") == name
        ]

    def recent_runs(self, limit: int) -> list[dict[str, Any]]:
        # As Firestore's order_by: a run without the field is not listed.
        dated = [(rid, run) for rid, run in self.runs.items() if "created_at" in run]
        newest = sorted(dated, key=lambda item: item[1]["created_at"], reverse=True)
        return [run | {"run_id": rid} for rid, run in newest][:limit]

    def reset_failed_cells(self, run_id: str, *, shards: int) -> int:
        failed = [cid for cid, doc in self.cells[run_id].items() if doc.get("status") == "failed"]
        for cell_id in failed:
            del self.cells[run_id][cell_id]
            self.attempts.pop((run_id, cell_id), None)
        run = self.runs[run_id]
        run["failed"] = run.get("failed", 0) - len(failed)
        self.reopen_report(run_id)
        return len(failed)
