"""Firestore as the service's ``ResultStore``: one class, composed of one part per concern.

The runs (``runs``), the cell results and their failures (``cells``), the cells' leases
(``leases``), the call ledger (``calls``), the report's claim (``reports``), the
resets of failed cells (``resets``) and the sentinels (``sentinels``) each have their
module; ``paths`` alone knows where their documents live. Callers see one
``FirestoreStore``, as before the split.

Firestore sustains about one write per second per document
(cloud.google.com/firestore/docs/solutions/counters, read 2026-11-26), so the counts
are spread over ``NIAH_COUNTER_SHARDS`` documents picked by the cell's ID; readers
sum them (``get_run``).
"""

from __future__ import annotations

from niah.cloud.store.cells import CellRecords
from niah.cloud.store.leases import CellLeases
from niah.cloud.store.resets import FailedCellResets
from niah.cloud.store.runs import RunRecords
from niah.cloud.store.sentinels import SentinelRecords


class FirestoreStore(RunRecords, CellRecords, CellLeases, FailedCellResets, SentinelRecords):
    """``niah.core.interfaces.ResultStore`` on Firestore.

    Every part's public methods raise the service's errors, never Google's (each part
    is decorated with ``raises_service_errors``).
    """
