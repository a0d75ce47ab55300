"""A run as a worker's delivery finds it: read once per instance, its liveness every time.

The spec, the haystack's listing, the counter shards and the published rows of a run
never change once it is created; an instance keeps them per run and creation stamp,
and each delivery reads only the fields that say the run is gone, replaced or
cancelled. The record (``niah.core.runs.RunRecord``) resolves the model's catalog
entry once per run view, not per call.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from niah.catalog.models import ProviderName
from niah.core.interfaces import RUN_CANCELLED, BlobInfo, ResultStore
from niah.core.request.spec import RunRequest
from niah.core.runs import RunRecord, run_state
from niah.memo import ProcessCache
from niah.service.messages import CellTask, run_cell_tasks


@dataclass(frozen=True)
class RunView:
    """A run as a delivery finds it: its record, read once per instance, and its liveness."""

    record: RunRecord
    # Cancelled (``niah cancel``): its cells are acknowledged, not answered. Read with
    # the run document every delivery reads anyway: no read more per cell.
    cancelled: bool = False
    # A run over published rows: each cell's message as the dispatcher makes it, by
    # cell ID (its file, row and byte span are the run's record, not the message's).
    published: dict[str, CellTask] | None = None

    @property
    def spec(self) -> RunRequest:
        """The run's validated request."""
        return self.record.spec

    @property
    def provider_name(self) -> ProviderName:
        """Who serves the run's model, looked up in the catalog once per record."""
        return self.record.provider

    @property
    def haystack_files(self) -> list[BlobInfo] | None:
        """The listing the run was created with (None: not kept; the worker lists)."""
        files = self.record.haystack_files
        return list(files) if files is not None else None

    @property
    def total(self) -> int:
        """The run's cells: whether a stored cell was its last."""
        return self.record.total

    @property
    def counter_shards(self) -> int:
        """The counter shards the run's cells are counted on (niah.core.results.counters)."""
        return self.record.counter_shards

    @property
    def shard_totals(self) -> dict[str, int]:
        """How many cells each counter shard counts."""
        return dict(self.record.shard_totals)

    @property
    def shards_keep_counted(self) -> bool:
        """Its shards keep ``counted``, which storing a cell returns: every run's do."""
        return True

    @property
    def token_count(self) -> dict[str, object] | None:
        """How the model counts the run's haystack (``niah.core.prompts.token_fit``)."""
        counted = self.record.token_count
        return dict(counted) if counted else None


# What a run keeps from its creation on (spec, listing, total, shards), by run ID and
# stamp (one creation): an instance reads the whole document once per run, then each
# delivery reads only the fields that change or tell the run is gone or replaced.
_created: ProcessCache[tuple[str, str], RunView] = ProcessCache()
# Whether the last read of each run (ID and stamp) found it cancelled.
_seen_cancelled: dict[tuple[str, str], bool] = {}


def current_run(store: ResultStore, run_id: str, stamp: str | None = None) -> RunView | None:
    """The run as stored now; None for a run that is gone, or replaced since ``stamp``.

    Read from the store each time (one document read): a worker must not answer a run
    that was deleted, or deleted and created again, from what its process remembers.
    Once this instance has read the whole run, the read is of its stamp and status
    only: the whole document holds the haystack's listing (a map per file), which each
    delivery decoded and copied again.
    """
    known = known_run(run_id, stamp)
    if known is not None:
        return live_view(store, known)
    doc = store.get_run(run_id, counts=False)
    if doc is None:
        return None
    record = RunRecord.from_document(doc, run_id)
    if stamp is not None and record.stamp != stamp:
        return None
    view = record_view(record)
    if stamp is not None:
        _created.get((run_id, stamp), lambda: view)
        _seen_cancelled[(run_id, stamp)] = view.cancelled
    return view


def known_run(run_id: str, stamp: str | None) -> RunView | None:
    """The run as this instance read it at creation ``stamp``; None: not read yet.

    No read: whether the run is still live (not deleted, replaced or cancelled) is
    ``live_view``'s to say.
    """
    return _created.known((run_id, stamp)) if stamp is not None else None


def live_view(store: ResultStore, known: RunView) -> RunView | None:
    """``known`` as the store has it now (one projected read): None if gone or replaced."""
    run_id, stamp = known.record.run_id, known.record.stamp
    live = run_state(store, run_id)
    if live is None or live.stamp != stamp:
        return None
    cancelled = live.status == RUN_CANCELLED
    _seen_cancelled[(run_id, stamp)] = cancelled
    return replace(known, cancelled=cancelled)


def last_seen_cancelled(known: RunView) -> bool:
    """Whether this instance's last read of the run found it cancelled (a guess, no read).

    A delivery of such a run reads its liveness before readying anything, so the cells
    a cancelled run's queue still holds are dropped without a prompt built for each.
    """
    return _seen_cancelled.get((known.record.run_id, known.record.stamp), False)


def record_view(record: RunRecord) -> RunView:
    """What a delivery needs of the run ``record`` (read by the caller)."""
    reads_rows = record.spec.task_options.published_source() is not None
    published = _published_cells(record) if reads_rows else None
    return RunView(record, cancelled=record.cancelled, published=published)


def _published_cells(record: RunRecord) -> dict[str, CellTask]:
    """The cells of a run over published rows, as the dispatcher publishes them."""
    if not record.source_rows:
        return {}  # none recorded: no message can be of it
    tasks = run_cell_tasks(record)
    return {task.cell_id: task for task in tasks}


def run_spec(store: ResultStore, run_id: str, stamp: str | None = None) -> RunRequest | None:
    """The run's validated spec; None for a run that is gone or replaced."""
    run = current_run(store, run_id, stamp)
    return run.spec if run is not None else None
