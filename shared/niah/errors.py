"""The error taxonomy: what a failure does to a cell and to its run.

- ``RetryableError``: transient (rate limit, 5xx, timeout). The worker raises, Pub/Sub
  redelivers with backoff, and a dead-letter topic catches what never succeeds.
- ``PermanentCellError``: this cell can never succeed (context over the model's limit,
  prompt larger than the requested length). Recorded on the cell, shown grey, acked.
- ``PermanentRunError``: no cell of the run can succeed (unknown model, no access,
  quota limit 0). Recorded on the cell like a cell error and acked, so the run ends.
"""

from __future__ import annotations

import re


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


class DeadLetteredError(NiahError):
    """A cell whose message failed past its delivery limit; recorded by the DLQ handler."""

    kind = "dead_letter"


class ReportPendingError(RetryableError):
    """Another instance holds the report's lease; try again when it may have expired."""


def classify_http_error(code: int, status: str, message: str) -> NiahError:
    """Map a model API's HTTP error to what it does to the cell and the run.

    - 429 RESOURCE_EXHAUSTED: retryable, unless the quota's limit is 0 (the project
      has no quota for this model at all: no retry will ever succeed).
    - 408, 500, 502, 503 (UNAVAILABLE or RESOURCE_EXHAUSTED), 504: retryable.
    - 400 "exceeds the maximum number of tokens": the cell's context is over the
      model's input limit; a permanent cell error (grey).
    - 401, 403 (permission), 404 (model not found or no access): permanent for the run.
    - other 4xx: permanent for the cell.
    """
    text = f"{code} {status}: {message}"
    lowered = message.lower()
    if code == 429:
        if re.search(r"(quota )?limit(:| of)? 0\b", lowered):
            return PermanentRunError(f"no quota for this model ({text})")
        return RetryableError(text)
    if code in (408, 500, 502, 503, 504):
        return RetryableError(text)
    if code == 400 and (
        "maximum number of tokens" in lowered
        or "too long" in lowered
        or "context length" in lowered
    ):
        return PermanentCellError(f"context over the model's input limit ({text})")
    if code in (401, 403, 404):
        return PermanentRunError(text)
    return PermanentCellError(text)
