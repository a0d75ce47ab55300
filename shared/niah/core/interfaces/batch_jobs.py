"""What the service needs of Vertex AI batch prediction: submit, poll, find, cancel a job.

The Gemini provider (``niah.models.providers.gemini``) implements it; batch runs
(``niah.service.batch_runs``) use it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

# A batch job's states that end it (Vertex's JobState; ``JOB_STATE_PARTIALLY_SUCCEEDED``
# wrote predictions, as a success does).
BATCH_SUCCEEDED = ("JOB_STATE_SUCCEEDED", "JOB_STATE_PARTIALLY_SUCCEEDED")
BATCH_ENDED_WITHOUT_OUTPUT = ("JOB_STATE_FAILED", "JOB_STATE_CANCELLED", "JOB_STATE_EXPIRED")


@dataclass(frozen=True)
class BatchJob:
    """A batch prediction job as the API reports it."""

    name: str
    state: str  # JOB_STATE_*
    output_dir: str | None = None  # gs:// folder of its predictions, once written
    error: str | None = None


class BatchClient(Protocol):
    """Vertex AI batch prediction jobs of one model."""

    def submit(self, input_uri: str, output_prefix: str, display_name: str) -> BatchJob:
        """Create a job over the JSONL at ``input_uri``."""
        ...

    def get(self, name: str) -> BatchJob:
        """The job's state now."""
        ...

    def find(self, display_name: str) -> BatchJob | None:
        """The job of that display name, if there is one."""
        ...

    def cancel(self, name: str) -> None:
        """Ask for the job to be cancelled."""
        ...
