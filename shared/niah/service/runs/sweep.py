"""The sweep: cells whose holder died, messages lost, reports never asked for, stalled runs."""

from __future__ import annotations

import datetime as dt
from typing import Any

from niah.core.interfaces import Publisher, ResultStore
from niah.core.runs import RunRecord
from niah.errors import StoredRunError
from niah.logs import log
from niah.service.batch.pieces import hand_on_dead_pieces
from niah.service.messages import (
    BATCH_POLL,
    BATCH_SUBMIT,
    batch_message,
    cell_messages,
    primer_message,
)
from niah.service.runs.completion import request_report_if_complete
from niah.service.runs.missing_cells import publish_missing, release_after_primer, taken_cells
from niah.settings import get_settings


def sweep_stalled_runs(
    *,
    store: ResultStore,
    publisher: Publisher,
    stalled_after_seconds: float,
    quiet_after_seconds: float | None = None,
) -> dict[str, int]:
    """For every running run: hand on cells whose holder died, and the messages lost.

    - A cell whose holder died (its lease lapsed unreleased) is published again at
      once, whatever the run's progress: Pub/Sub's redelivery may be minutes away or,
      on the emulator, never come.
    - A holder's death may have taken other pushes with it (a worker serves several at
      once, and a push cut off mid-request is redelivered only after its ack deadline,
      10 minutes). So a run with a death since its last hand-on (a lease lapsed now, or
      taken over by a delivery since) gets its missing cells that nothing holds
      published again (``republish_lost``), at once.
    - A quiet run (nothing leased anywhere, no progress and no retryable failure for
      ``quiet_after_seconds``) has lost its messages some other way (a dispatcher or a
      release killed before it published): the same.
    - A run whose cells are all stored but which has no report asks for it once no
      renderer is alive: its claim lapsed (``report_lease_seconds`` unrenewed, the
      renderer died) or was never taken a lease after the last ask (the request was
      lost). Never while a renderer renews its claim.
    - The last resort, for what nothing above explains: a run with no progress for
      ``stalled_after_seconds`` gets its missing cells published again.

    Publishing again is always safe: workers skip stored cells and back off from
    leased ones, so a cell is called once however often it is published. A scheduler
    runs this every minute.
    """
    settings = get_settings()
    quiet_after = settings.sweep_quiet_after_seconds
    if quiet_after_seconds is not None:
        quiet_after = quiet_after_seconds
    now = dt.datetime.now(dt.UTC)
    runs = _readable(store.running_runs())
    for run in runs:
        if not run.admitted:  # its cells would be the default request's, never asked for
            log("a running run with no request left alone", severity="WARNING", run_id=run.run_id)
    runs = [run for run in runs if run.admitted]
    # One query of at most one lease per run: whether anything is at work anywhere.
    busy = any(_live(store, run) for run in runs)
    tally = {"runs_swept": 0, "runs_lost": 0, "cells_republished": 0, "cells_handed_on": 0}
    for run in runs:
        run_id = run.run_id
        try:
            stamps = [run.stamped("updated_at"), run.stamped("created_at")]
            last = max(filter(None, stamps), default=None)
            idle = None if last is None else (now - last).total_seconds()
            if run.spec.is_batch():
                stalled = idle is None or idle >= stalled_after_seconds
                tally["cells_republished"] += _sweep_batch(
                    run, store=store, publisher=publisher, stalled=stalled
                )
                continue
            lapsed = _hand_on_lapsed(run, store=store, publisher=publisher)
            tally["cells_handed_on"] += len(lapsed)
            if run.done + run.failed >= run.total:
                request_report_if_complete(run_id, store=store, publisher=publisher)
                continue
            reason = _lost(run, store, lapsed=bool(lapsed), busy=busy, idle=idle,
                           quiet_after=quiet_after)  # fmt: skip
            if reason is not None:
                tally["runs_lost"] += 1
                tally["cells_republished"] += republish_lost(
                    run, store=store, publisher=publisher, skip=set(lapsed), reason=reason
                )
                continue
            if idle is not None and idle < stalled_after_seconds:
                continue
            taken = taken_cells(run_id, store)
            count = publish_missing(run, taken, store=store, publisher=publisher)
            store.update_run(run_id, {"swept": count})  # counts as progress: no re-sweep soon
        except Exception as error:  # one bad run must not stop the sweep of the others
            log("sweep of a run failed", severity="ERROR", run_id=run_id, error=repr(error))
            continue
        log("stalled run swept", severity="WARNING", run_id=run_id, republished=count)
        tally["runs_swept"] += 1
        tally["cells_republished"] += count
    return tally


def _readable(docs: list[dict[str, Any]]) -> list[RunRecord]:
    """The running runs this version can read.

    One it cannot (``StoredRunError``: its stored request fails this version's checks)
    is left as stored, named in an ERROR line each sweep: no sweep can read it either,
    and it must not stop the sweep of the others.
    """
    runs = []
    for doc in docs:
        try:
            runs.append(RunRecord.from_document(doc))
        except StoredRunError as error:
            log("sweep left a run this version cannot read", severity="ERROR",
                run_id=error.run_id, kind=error.kind, problem=error.problem)  # fmt: skip
    return runs


def _lost(
    run: RunRecord,
    store: ResultStore,
    *,
    lapsed: bool,
    busy: bool,
    idle: float | None,
    quiet_after: float,
) -> str | None:
    """Why the run's unheld missing cells have lost their messages, or None.

    ``holder died``: a lease lapsed now, or one was taken over since the last hand-on.
    ``quiet``: nothing is leased anywhere (so nothing is queued ahead of the run: Pub/Sub
    pushes to an idle endpoint within seconds), the run made no progress for
    ``quiet_after`` s, and no cell failed within Pub/Sub's longest backoff.
    """
    run_id = run.run_id
    since = run.stamped("lost_republished_at") or run.stamped("created_at")
    if lapsed or (isinstance(since, dt.datetime) and store.taken_over_since(run_id, since)):
        return "holder died"
    if busy or (idle is not None and idle < quiet_after):
        return None
    if store.attempted_within(run_id, get_settings().sweep_retry_backoff_seconds):
        return None
    return "quiet"


def _live(store: ResultStore, run: RunRecord) -> bool:
    """Whether the run has a live lease; a run the store cannot answer for counts as live."""
    try:
        return store.has_live_lease(run.run_id)
    except Exception as error:  # unsure: hold the quiet rule back rather than republish
        log("sweep could not read a run's leases", severity="WARNING", error=repr(error))
        return True


def republish_lost(
    run: RunRecord,
    *,
    store: ResultStore,
    publisher: Publisher,
    skip: set[str] | frozenset[str] = frozenset(),
    reason: str,
) -> int:
    """Publish again what a run whose messages were lost waits on; how many messages.

    A run whose primer holds the rest back gets its primer again, or, if the primer is
    done with and its release was lost, the release. Any other gets its cells neither
    stored nor leased (nor in ``skip``: handed on already). Noted on the run
    (``lost_republished_at``, which is also its progress), so deaths before it are not
    counted again and the quiet rule waits another quiet spell.
    """
    run_id, primer = run.run_id, run.primer_cell
    if primer and not run.primer_released:
        if primer in store.cell_ids(run_id):
            count = release_after_primer(run_id, store=store, publisher=publisher)
        elif primer in store.leased_cells(run_id) or primer in skip:
            count = 0
        else:
            message = primer_message(run)
            count = publisher.publish_cells([message]) if message else 0
    else:
        taken = taken_cells(run_id, store) | set(skip)
        messages = [m for m in cell_messages(run) if m["cell_id"] not in taken]
        count = publisher.publish_cells(messages) if messages else 0
    store.update_run(
        run_id, {"lost_republished_at": dt.datetime.now(dt.UTC), "lost_republished": count}
    )
    log("lost messages published again", severity="WARNING", run_id=run_id, reason=reason,
        republished=count)  # fmt: skip
    return count


def _hand_on_lapsed(run: RunRecord, *, store: ResultStore, publisher: Publisher) -> list[str]:
    """Publish again the cells of the run whose holder died; which."""
    run_id = run.run_id
    lapsed = set(store.hand_on_lapsed(run_id))
    if not lapsed:
        return []
    messages = [m for m in cell_messages(run) if m["cell_id"] in lapsed]
    if messages:
        publisher.publish_cells(messages)
    log("cells of dead holders handed on", severity="WARNING", run_id=run_id, cells=len(messages))
    return sorted(lapsed)


def _sweep_batch(run: RunRecord, *, store: ResultStore, publisher: Publisher, stalled: bool) -> int:
    """A batch run's turn: poll its open jobs; re-ask dead pieces; resubmit a lost submit.

    Its jobs are polled on every sweep (the worker reads their state and ingests what is
    done): the sweep itself stays light, with no Vertex client. A piece of output whose
    holder died (its lease lapsed) is published again at once, as a dead holder's cell
    is. Messages published.
    """
    run_id, jobs = run.run_id, run.batch_jobs
    if any(
        not (j.get("ingested") or j.get("ended")) and (not j.get("superseded") or "ingest" in j)
        for j in jobs
    ):
        # An open job, or a superseded one whose output is still being read (a resume
        # waits on it): the poll tends both.
        dead = hand_on_dead_pieces(run, store=store, publisher=publisher)
        return dead + publisher.publish_cells([batch_message(run, BATCH_POLL)])
    if run.done + run.failed >= run.total:
        request_report_if_complete(run_id, store=store, publisher=publisher)
        return 0
    if not stalled:
        return 0
    if not any(j.get("round") == run.batch_round for j in jobs):
        return publisher.publish_cells([batch_message(run, BATCH_SUBMIT)])
    # Every job is done, yet cells are missing: failed lines sent online whose message
    # was lost. They go online again.
    taken = taken_cells(run_id, store)
    missing = [m for m in cell_messages(run) if m["cell_id"] not in taken]
    count = publisher.publish_cells(missing) if missing else 0
    store.update_run(run_id, {"swept": count})
    return count
