"""Which counter shard a cell is counted on, and how many cells each shard waits for.

A run's counts are spread over a few documents (Firestore sustains about one write per
second per document): one shard per ``CELLS_PER_SHARD`` cells, at most
``NIAH_COUNTER_SHARDS``, fixed when the run is created and kept on its document as
``counter_shards``. Sized to the run, so a small run's fixed reads (the completion
checks, the report's sum) stay few: 32 shards for 100 cells cost about one read a cell
more than 4 do. The same hash tells the dispatcher how many of the run's cells each
shard will count, so a worker can tell from its own shard alone whether the run may be
complete: only the last cell of a shard checks the run.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable

# Cells a shard counts before the run gets another: its writes stay under Firestore's
# sustained rate per document even if all of them land in the same second or so.
CELLS_PER_SHARD = 32


def shard_of(cell_id: str, shards: int) -> str:
    """The counter shard a cell's count goes to: fixed by its ID, spread evenly."""
    index = int.from_bytes(hashlib.sha256(cell_id.encode()).digest()[:4], "big") % shards
    return f"{index:03d}"


def shard_totals(cell_ids: Iterable[str], shards: int) -> dict[str, int]:
    """How many of these cells each shard counts (shards with none are left out)."""
    return dict(sorted(Counter(shard_of(cell_id, shards) for cell_id in cell_ids).items()))


def shards_for(total: int, most: int) -> int:
    """How many counter shards a new run of ``total`` cells gets: one per 32, 1 to ``most``."""
    return max(1, min(most, -(-total // CELLS_PER_SHARD)))
