"""The small interfaces the NIAH logic needs of the outside world.

One module per outside system: blob storage (``blobs``: the haystack, the cache, the
reports), the result store (``result_store``: Firestore), the publisher (``publisher``:
Pub/Sub), the model's tokenizer and provider (``models``), Vertex AI batch jobs
(``batch_jobs``) and the spend ledger (``spend_ledger``). ``niah.cloud`` and
``niah.models`` implement them; the service's jobs receive them; unit tests pass small
fakes. This face gathers them, so every user imports from ``niah.core.interfaces``.
"""

from __future__ import annotations

from niah.core.interfaces.batch_jobs import (
    BATCH_ENDED_WITHOUT_OUTPUT,
    BATCH_PARTIAL,
    BATCH_SUCCEEDED,
    BatchClient,
    BatchJob,
    CompletionStats,
)
from niah.core.interfaces.blobs import BlobInfo, BlobStore, gs_uri
from niah.core.interfaces.models import ModelAnswer, Provider, Role, Tokenizer, Turn
from niah.core.interfaces.publisher import AlertPublisher, Bus, Publisher
from niah.core.interfaces.result_store import (
    CLAIM_ABANDONED,
    CLAIM_HELD,
    CLAIM_STORED,
    RUN_CANCELLED,
    RUN_COMPLETE,
    RUN_REPORT_FAILED,
    RUN_RUNNING,
    CancelOutcome,
    Recorded,
    ReportClaim,
    ResultStore,
    lapses_before_claim,
)
from niah.core.interfaces.spend_ledger import (
    KILL_SWITCH_WINDOW,
    OPEN_RUNS_LIMIT,
    Reservation,
    SpendLedger,
)

__all__ = [
    "BATCH_ENDED_WITHOUT_OUTPUT",
    "BATCH_PARTIAL",
    "BATCH_SUCCEEDED",
    "CLAIM_ABANDONED",
    "CLAIM_HELD",
    "CLAIM_STORED",
    "KILL_SWITCH_WINDOW",
    "OPEN_RUNS_LIMIT",
    "RUN_CANCELLED",
    "RUN_COMPLETE",
    "RUN_REPORT_FAILED",
    "RUN_RUNNING",
    "AlertPublisher",
    "BatchClient",
    "BatchJob",
    "BlobInfo",
    "BlobStore",
    "Bus",
    "CancelOutcome",
    "CompletionStats",
    "ModelAnswer",
    "Provider",
    "Publisher",
    "Recorded",
    "ReportClaim",
    "Reservation",
    "ResultStore",
    "Role",
    "SpendLedger",
    "Tokenizer",
    "Turn",
    "gs_uri",
    "lapses_before_claim",
]
