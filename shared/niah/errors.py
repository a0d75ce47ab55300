"""The error taxonomy: what a failure does to a cell and to its run.

- ``RetryableError``: transient (rate limit, 5xx, timeout). The worker raises, Pub/Sub
  redelivers with backoff, and a dead-letter topic catches what never succeeds.
- ``PermanentCellError``: this cell can never succeed (context over the model's limit,
  prompt larger than the requested length). Recorded on the cell, shown grey, acked.
- ``PermanentRunError``: no cell of the run can succeed (unknown model, no access,
  quota limit 0). Recorded on the cell like a cell error and acked, so the run ends.
"""

from __future__ import annotations


class NiahError(Exception):
    """Base of the service's own errors; ``kind`` names the class in stored records."""

    kind = "error"


class RetryableError(NiahError):
    """Try again later: the same request may succeed."""

    kind = "retryable"


class PermanentCellError(NiahError):
    """A cell that cannot succeed; record it and move on."""

    kind = "cell"


class PermanentRunError(NiahError):
    """No cell of this run can succeed; record it and move on."""

    kind = "run"
