"""A run as a worker's delivery finds it: read once per instance, its liveness every time.

The spec, the haystack's listing, the counter shards and the published rows of a run
never change once it is created; an instance keeps them per run and creation stamp,
and each delivery reads only the fields that say the run is gone, replaced or
cancelled. The model's provider is resolved here, once per run view, not per call.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from niah.catalog.models import ProviderName
from niah.core.interfaces import RUN_CANCELLED, BlobInfo, ResultStore
from niah.core.request.spec import RunRequest
from niah.core.results.counters import run_shards
from niah.memo import ProcessCache
from niah.service.messages import CellTask, run_cell_tasks

# A run's spec never changes once stored (its ID is a hash of it), so an instance
# validates it once; whether the run still exists is read on every delivery.
_specs: ProcessCache[str, RunRequest] = ProcessCache()


@dataclass(frozen=True)
class RunView:
    """A run as a delivery finds it: its validated spec and its haystack's files."""

    spec: RunRequest
    # Who serves the run's model (``spec.provider()``), looked up in the catalog once.
    provider_name: ProviderName
    # The listing the run was created with (None: not kept; the worker lists).
    haystack_files: list[BlobInfo] | None
    total: int  # the run's cells: whether a stored cell was its last
    # The counter shards the run's cells are counted on (niah.core.results.counters).
    counter_shards: int
    # How many cells each counter shard counts (None: a run from before they were kept).
    shard_totals: dict[str, int] | None = None
    # Its shards keep ``counted``, which storing a cell returns (runs sized per run do).
    shards_keep_counted: bool = False
    # Cancelled (``niah cancel``): its cells are acknowledged, not answered. Read with
    # the run document every delivery reads anyway: no read more per cell.
    cancelled: bool = False
    # How the model counts the run's haystack (``niah.core.prompts.token_fit``), once measured.
    token_count: dict[str, Any] | None = None
    # A run over published rows: each cell's message as the dispatcher makes it, by
    # cell ID (its file, row and byte span are the run's record, not the message's).
    published: dict[str, CellTask] | None = None


# What a run keeps from its creation on (spec, listing, total, shards), by run ID and
# stamp (one creation): an instance reads the whole document once per run, then each
# delivery reads only the fields that change or tell the run is gone or replaced.
_created: ProcessCache[tuple[str, str], RunView] = ProcessCache()
LIVE_RUN_FIELDS = ("stamp", "status")


def current_run(store: ResultStore, run_id: str, stamp: str | None = None) -> RunView | None:
    """The run as stored now; None for a run that is gone, or replaced since ``stamp``.

    Read from the store each time (one document read): a worker must not answer a run
    that was deleted, or deleted and created again, from what its process remembers.
    Once this instance has read the whole run, the read is of its stamp and status
    only: the whole document holds the haystack's listing (a map per file), which each
    delivery decoded and copied again.
    """
    known = _created.known((run_id, stamp)) if stamp is not None else None
    if known is not None:
        live = store.get_run(run_id, counts=False, fields=LIVE_RUN_FIELDS)
        if live is None or live.get("stamp") != stamp:
            return None
        return replace(known, cancelled=live.get("status") == RUN_CANCELLED)
    run = store.get_run(run_id, counts=False)
    if run is None:
        return None
    if stamp is not None and run.get("stamp") not in (None, stamp):
        return None
    view = run_view(run_id, run)
    if stamp is not None and run.get("stamp") == stamp:
        _created.get((run_id, stamp), lambda: view)
    return view


def run_view(run_id: str, run: dict[str, Any]) -> RunView:
    """What a delivery needs of the run document ``run`` (read by the caller)."""
    # Stored by the dispatcher after validation, so it validates again.
    spec = _specs.get(run_id, lambda: RunRequest.model_validate(run["spec"]))
    listed = run.get("haystack_files") or None
    files = (
        [BlobInfo(str(f["name"]), int(f["size"]), str(f["fingerprint"])) for f in listed]
        if listed
        else None
    )
    totals = run.get("shard_totals")
    return RunView(
        spec,
        spec.provider(),
        files,
        int(run.get("total", 0)),
        run_shards(run),
        {str(k): int(v) for k, v in totals.items()} if totals else None,
        shards_keep_counted=bool(run.get("counter_shards")),
        cancelled=run.get("status") == RUN_CANCELLED,
        token_count=run.get("token_count") or None,
        published=_published_cells(run_id, spec, run) if spec.mrcr_source is not None else None,
    )


def _published_cells(run_id: str, spec: RunRequest, run: dict[str, Any]) -> dict[str, CellTask]:
    """The cells of a run over published rows, as the dispatcher publishes them."""
    if not run.get("source_rows"):
        return {}  # none recorded: no message can be of it
    return {task.cell_id: task for task in run_cell_tasks(run_id, spec, run)}


def run_spec(store: ResultStore, run_id: str, stamp: str | None = None) -> RunRequest | None:
    """The run's validated spec; None for a run that is gone or replaced."""
    run = current_run(store, run_id, stamp)
    return run.spec if run is not None else None
