"""What the service needs of Vertex AI batch prediction: submit, poll, find, cancel a job.

The Gemini provider (``niah.models.providers.gemini``) implements it; batch runs
(``niah.service.batch.runs``) use it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

# A batch job's states that end it (Vertex's JobState). PARTIALLY_SUCCEEDED is "The job
# is partially succeeded, some results may be missing due to errors" (google-genai
# types.JobState, read 2026-12-04): it wrote predictions, but not necessarily all.
BATCH_PARTIAL = "JOB_STATE_PARTIALLY_SUCCEEDED"
BATCH_SUCCEEDED = ("JOB_STATE_SUCCEEDED", BATCH_PARTIAL)
BATCH_ENDED_WITHOUT_OUTPUT = ("JOB_STATE_FAILED", "JOB_STATE_CANCELLED", "JOB_STATE_EXPIRED")


@dataclass(frozen=True)
class CompletionStats:
    """A job's ``completionStats``: how many rows it processed, as Vertex counts them.

    Vertex's CompletionStats (REST ``successfulCount``, ``failedCount``,
    ``incompleteCount``, int64 so JSON strings; google-genai ``BatchJob.completion_stats``
    with ``successful_count``, ``failed_count``, ``incomplete_count``; googleapis.dev
    GoogleCloudAiplatformV1beta1CompletionStats, read 2026-12-04). ``incomplete`` is -1
    when Vertex does not know it. None: Vertex sent no count.
    """

    successful: int | None = None
    failed: int | None = None
    incomplete: int | None = None

    @property
    def written(self) -> int | None:
        """The rows the job processed, answered or failed: the lines its output must hold."""
        if self.successful is None and self.failed is None:
            return None
        return int(self.successful or 0) + int(self.failed or 0)


@dataclass(frozen=True)
class BatchJob:
    """A batch prediction job as the API reports it."""

    name: str
    state: str  # JOB_STATE_*
    output_dir: str | None = None  # gs:// folder of its predictions, once written
    error: str | None = None
    stats: CompletionStats | None = None  # None: the job reported no completionStats


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
