"""A certify run's rounds: when one is in, plan and publish the next, or ask for the report.

Run completion publishes a step message when a certify run's cells are all stored (it
holds the run's report request meanwhile); a worker handles it here. The planner
replays the stored answers (``niah.core.results.certify``), so a step delivered twice
plans the same round, whose cells have the same IDs.
"""

from __future__ import annotations

from niah.core.interfaces import (
    RUN_CANCELLED,
    RUN_COMPLETE,
    Publisher,
    ResultStore,
    SpendLedger,
)
from niah.core.money.holds import round_hold
from niah.core.money.spend import worst_case
from niah.core.prompts.answer_budget import call_budget
from niah.core.request.grid import Cell
from niah.core.results.certify_run import certify_cells, certify_progress
from niah.core.results.counters import shard_totals
from niah.core.runs import RunRecord, stored_run
from niah.errors import SpendRefusedError
from niah.logs import log
from niah.service.messages import cell_messages, report_message
from niah.service.runs.admission import hold_more
from niah.settings import get_settings

# On ``certify``: the worst case of the cells the run had stored when its holds were
# last settled (a cancel). Their calls are over and paid (settled), so a later round
# need not hold for them again (``_hold_round``).
SETTLED_COVER = "settled_cover_usd"


def handle_certify_step(
    run_id: str,
    stamp: str | None,
    *,
    store: ResultStore,
    publisher: Publisher,
    ledger: SpendLedger | None = None,
) -> str:
    """Plan the run's next round and publish it, or ask for its report; what was done.

    The round's spend is held first (``_hold_round``): refused, the refusal is recorded
    on the run and its report asked for. Then the run's document grows (samples per
    length, total, counter shards), then the report request is let go, then the new
    cells are published: cut off before the publish, the run is short of cells and the
    sweep publishes them.
    """
    run = stored_run(store, run_id, counts=False)
    if run is None or (stamp is not None and run.stamp != stamp):
        return "gone"
    if run.status in (RUN_COMPLETE, RUN_CANCELLED):
        return run.status
    if store.count_cells(run_id) < run.total:
        return "round not in"  # a step of a round already planned
    spec = run.spec
    cells = store.list_cells(run_id)
    progress, samples = certify_progress(
        spec, run.certify, cells, max_cells=get_settings().max_cells_per_run
    )
    if progress.next_round is None:
        publisher.publish_report(report_message(run_id))
        log("certificate reached; report requested", run_id=run_id)
        return "certified"
    planned = certify_cells(spec, samples)
    kept = dict(run.certify or {})  # its plan stays as admitted
    round_number = progress.next_round.round
    if ledger is not None:
        try:
            _hold_round(run, planned, ledger)
        except SpendRefusedError as refused:  # recorded; the run ends with what it has
            record = {"round": round_number, "field": refused.field, "message": refused.message}
            store.update_run(run_id, {"certify": kept | {"refused": record}})
            publisher.publish_report(report_message(run_id))
            log(
                "certify round refused",
                severity="WARNING",
                run_id=run_id,
                round=round_number,
                refused=refused.message,
            )
            return "refused"
    store.update_run(
        run_id,
        {
            "certify": kept | {"samples": {str(n): count for n, count in samples.items()}},
            "total": len(planned),
            "shard_totals": shard_totals((c.cell_id for c in planned), run.counter_shards),
        },
    )
    stored = {str(c["cell_id"]) for c in cells}
    grown = run.with_fields(certify=kept | {"samples": samples})
    messages = [m for m in cell_messages(grown) if m["cell_id"] not in stored]
    # Let go before publishing: the new round's last cell, however soon it lands, asks
    # again (the run's total is already the new round's, so nothing asks early).
    store.clear_report_request(run_id)
    publisher.publish_cells(messages)
    log(
        "certify round published",
        run_id=run_id,
        round=round_number,
        length=progress.next_round.length,
        cells=len(messages),
    )
    return f"round {progress.next_round.round}"


def _hold_round(run: RunRecord, planned: list[Cell], ledger: SpendLedger) -> None:
    """Hold what every cell planned so far may cost beyond what covers it already.

    What covers it: the run's open holds (its admission's, its re-asks', its rounds'
    since its last settle), and the worst case of the cells it had stored at that
    settle (``SETTLED_COVER``). Taken as the round's own hold (a redelivered step holds
    nothing more) in one transaction with the ceilings and the kill switch, even when
    nothing more is needed: so no round is published after the switch trips.
    ``SpendRefusedError`` if refused.
    """
    spec, run_id = run.spec, run.run_id
    worst = worst_case(spec, planned, call_budget(spec), calls_per_cell=calls_per_cell())
    entry = ledger.entry(run_id) or {}
    covered = float((run.certify or {}).get(SETTLED_COVER) or 0.0)
    if not entry.get("settled", True):
        covered += float(entry.get("reserved", 0.0))
    hold_more(
        run_id,
        spec,
        worst,
        covered=covered,
        hold=round_hold(len(planned)),
        ledger=ledger,
        caller=run.created_by or "",
    )


def note_settled_cover(run: RunRecord, *, store: ResultStore) -> None:
    """On a certify run whose holds were just settled: what its stored cells covered.

    A resumed run's rounds then hold for the cells still to be answered only, beyond
    its re-ask's hold. Missing (a crash before it is written), a round holds for every
    planned cell again: more, never less.
    """
    spec = run.spec
    answered = store.cell_ids(run.run_id)
    planned = certify_cells(spec, run.certify_samples)
    stored = [cell for cell in planned if cell.cell_id in answered]
    worst = worst_case(spec, stored, call_budget(spec), calls_per_cell=calls_per_cell())
    cover = dict(run.certify or {}) | {SETTLED_COVER: float(worst.usd or 0.0)}
    store.update_run(run.run_id, {"certify": cover})


def calls_per_cell() -> int:
    """The calls a cell may take (the worker's retry allowance), as admission counts them."""
    return get_settings().max_cell_failures
