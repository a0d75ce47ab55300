"""Every error class of the service, each with its ``kind``, and the HTTP taxonomy.

What a failure does to a cell and to its run:

- ``RetryableError``: transient (rate limit, 5xx, timeout). The worker raises, Pub/Sub
  redelivers with backoff, and a dead-letter topic catches what never succeeds.
- ``PermanentCellError``: this cell can never succeed (context over the model's limit,
  prompt larger than the requested length). Recorded on the cell, shown grey, acked.
- ``PermanentRunError``: no cell of the run can succeed (unknown model, no access,
  quota limit 0, a haystack that cannot be read, a deployment that cannot serve the
  model). Recorded on the cell like a cell error and acked, so the run ends.
- ``RequestError``: a run request the user must fix; the dispatcher answers 400 (403
  for another caller's run, 429 for a spend ceiling or the kill switch).
- ``MalformedMessageError``: a message that will never parse; acknowledged, not retried.
- ``ReportRenderError``: a run's report cannot be drawn from its data; recorded on the
  run (``report_error``) and acknowledged. A report that cannot be stored (the store or
  bucket unavailable) is retried, and dead-lettered at the end.

``kind`` is what a stored cell's ``error.kind`` says. Google Cloud's own exceptions
become these classes at the adapters (``niah.cloud.google_errors``).
"""

from __future__ import annotations

import re

# HTTP statuses a model API call is retried on: rate limits, timeouts, server errors.
RETRYABLE_STATUS_CODES = (408, 429, 500, 502, 503, 504)


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


class ContextTooShortError(PermanentCellError):
    """The requested length cannot even hold the prompt template and the needle."""


class PromptOverLimitError(PermanentCellError):
    """The model would count the cell's prompt above its input limit: refused unpaid."""


class HaystackError(PermanentRunError):
    """The haystack cannot be used: missing, empty or not text."""


class StoredRunError(PermanentRunError):
    """A stored run whose request this version no longer accepts (its checks tightened).

    Nothing stored is changed: listings show the run as unreadable, and a read of it
    says which field fails and what to do, in one line.
    """

    run_id: str = ""
    problem: str = ""

    @classmethod
    def of(cls, run_id: str, problem: str) -> StoredRunError:
        """The error for run ``run_id`` whose request fails with ``problem``.

        (A factory, not ``__init__``: the deploy check's call graph reads an ``__init__``
        it cannot place as any of the tree's, and one of those publishes.)
        """
        error = cls(
            f"run {run_id or '(no ID)'}: its stored request no longer passes this version's "
            f"checks ({problem}); the run and its cells are kept as stored: read them with "
            "the version that ran it, or start the run again with a request that passes"
        )
        error.run_id, error.problem = run_id, problem
        return error


class ConfigurationError(PermanentRunError):
    """The deployment cannot serve the model (settings missing or inconsistent)."""


class RequestError(NiahError):
    """A run request the user must fix; ``field`` names the option at fault.

    ``status`` is the HTTP status the dispatcher answers with (400 unless a subclass
    says otherwise).
    """

    kind = "request"
    status = 400

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class ForbiddenError(RequestError):
    """The caller may not do this to the run: it is another caller's (a 403)."""

    kind = "forbidden"
    status = 403


class UnknownSentinelError(RequestError):
    """A sentinel asked for by a name nothing defines (a 404)."""

    kind = "unknown_sentinel"
    status = 404


class SpendRefusedError(RequestError):
    """A new run refused for money: over a spend ceiling, or the kill switch is on.

    A 429: the ceilings reset with the UTC day or month; an operator lifts the switch.
    """

    kind = "spend_refused"
    status = 429


class IdentityUnavailableError(RequestError):
    """The keys that verify ID tokens could not be read now (a 503: retry)."""

    kind = "identity_unavailable"
    status = 503


class MethodNotAllowedError(RequestError):
    """A route asked with a method it does not take (a 405)."""

    kind = "method_not_allowed"
    status = 405


class RunNotFoundError(RequestError):
    """A request about a run no one has started (a 404)."""

    kind = "run_not_found"
    status = 404


class RunCompleteError(RequestError):
    """A request to change a run that is complete: nothing is left to change (a 409)."""

    kind = "run_complete"
    status = 409


class ServiceUnavailableError(RequestError):
    """The store or the bus could not be reached now (a 503: the same request may retry)."""

    kind = "service_unavailable"
    status = 503


class MalformedMessageError(NiahError):
    """A message that will never parse; acknowledge it rather than loop."""

    kind = "malformed_message"


class DeadLetteredError(NiahError):
    """A cell whose message failed past its delivery limit; recorded by the DLQ handler."""

    kind = "dead_letter"


class WorkerDiedError(NiahError):
    """Holder after holder of a cell's lease died on it (crash, out of memory, kill)."""

    kind = "worker_died"


class BatchJobError(PermanentCellError):
    """A Vertex AI batch job ended without predictions (failed, expired, cancelled)."""

    kind = "batch_job"


class UnreadableLineError(PermanentCellError):
    """A batch prediction line whose ``response`` cannot be read as a reply.

    ``reason`` says why (not a JSON object, nothing of a reply in it, a field of the
    wrong type); batch ingest records that one line failed with it and goes on.
    """

    kind = "unreadable_line"

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class CellInFlightError(RetryableError):
    """Another delivery of this cell holds its lease and is calling the model now."""

    kind = "in_flight"


class CloudUnavailableError(RetryableError):
    """A Google Cloud call timed out or the service was unavailable: try again."""

    kind = "cloud_unavailable"


class StoreUnavailableError(CloudUnavailableError):
    """The result store did not answer (timed out or unavailable): try again."""

    kind = "store_unavailable"


class CloudRefusedError(PermanentCellError):
    """Google Cloud refused the request itself (say, a document over 1 MiB): never retry."""

    kind = "cloud_refused"


class CloudAccessError(PermanentRunError):
    """A Google Cloud resource is missing or out of reach: the deployment needs fixing."""

    kind = "cloud_access"


class ReportPendingError(RetryableError):
    """A render went stale (a reset dropped its claim meanwhile): render again on redelivery."""


class ReportRenderError(NiahError):
    """A run's report cannot be drawn from its data: rendering again would fail again."""

    kind = "report_render"


class ComparisonError(NiahError):
    """Runs that cannot be compared: no stored cells, or no shared grid point."""

    kind = "comparison"


class DifferentModelsError(ComparisonError):
    """A run to compare was answered by another model than it asked for (a routed ID).

    Compared under its name, its scores would be credited to a model that did not
    produce them; the caller may allow it explicitly.
    """


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
    if code in RETRYABLE_STATUS_CODES:
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
