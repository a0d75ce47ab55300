"""A certify run's rounds: when one is in, plan and publish the next, or ask for the report.

Run completion publishes a step message when a certify run's cells are all stored (it
holds the run's report request meanwhile); a worker handles it here. The planner
replays the stored answers (``niah.core.results.certify``), so a step delivered twice
plans the same round, whose cells have the same IDs.
"""

from __future__ import annotations

from niah.core.interfaces import RUN_CANCELLED, RUN_COMPLETE, Publisher, ResultStore
from niah.core.request.spec import RunRequest
from niah.core.results.certify_run import certify_cells, certify_progress
from niah.core.results.counters import run_shards, shard_totals
from niah.logs import log
from niah.service.messages import cell_messages, report_message
from niah.settings import get_settings


def handle_certify_step(
    run_id: str, stamp: str | None, *, store: ResultStore, publisher: Publisher
) -> str:
    """Plan the run's next round and publish it, or ask for its report; what was done.

    The run's document grows first (samples per length, total, counter shards), then
    the report request is let go, then the new cells are published: cut off before the
    publish, the run is short of cells and the sweep publishes them.
    """
    run = store.get_run(run_id, counts=False)
    if run is None or (stamp is not None and run.get("stamp") != stamp):
        return "gone"
    if run.get("status") in (RUN_COMPLETE, RUN_CANCELLED):
        return str(run.get("status"))
    if store.count_cells(run_id) < int(run.get("total", 0)):
        return "round not in"  # a step of a round already planned
    spec = RunRequest.model_validate(run["spec"])
    cells = store.list_cells(run_id)
    progress, samples = certify_progress(
        spec, run, cells, max_cells=get_settings().max_cells_per_run
    )
    if progress.next_round is None:
        publisher.publish_report(report_message(run_id))
        log("certificate reached; report requested", run_id=run_id)
        return "certified"
    planned = certify_cells(spec, samples)
    kept = dict(run.get("certify") or {})  # its plan stays as admitted
    store.update_run(
        run_id,
        {
            "certify": kept | {"samples": {str(n): count for n, count in samples.items()}},
            "total": len(planned),
            "shard_totals": shard_totals((c.cell_id for c in planned), run_shards(run)),
        },
    )
    stored = {str(c["cell_id"]) for c in cells}
    grown = run | {"certify": kept | {"samples": samples}}
    messages = [m for m in cell_messages(run_id, spec, grown) if m["cell_id"] not in stored]
    # Let go before publishing: the new round's last cell, however soon it lands, asks
    # again (the run's total is already the new round's, so nothing asks early).
    store.clear_report_request(run_id)
    publisher.publish_cells(messages)
    log(
        "certify round published",
        run_id=run_id,
        round=progress.next_round.round,
        length=progress.next_round.length,
        cells=len(messages),
    )
    return f"round {progress.next_round.round}"
