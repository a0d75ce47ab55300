"""Which counter shard a cell is counted on, and how many cells each shard waits for.

A run's counts are spread over ``NIAH_COUNTER_SHARDS`` documents (Firestore sustains
about one write per second per document). The same hash tells the dispatcher how many
of the run's cells each shard will count, so a worker can tell from its own shard
alone whether the run may be complete: only the last cell of a shard checks the run.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable


def shard_of(cell_id: str, shards: int) -> str:
    """The counter shard a cell's count goes to: fixed by its ID, spread evenly."""
    index = int.from_bytes(hashlib.sha256(cell_id.encode()).digest()[:4], "big") % shards
    return f"{index:03d}"


def shard_totals(cell_ids: Iterable[str], shards: int) -> dict[str, int]:
    """How many of these cells each shard counts (shards with none are left out)."""
    return dict(sorted(Counter(shard_of(cell_id, shards) for cell_id in cell_ids).items()))
