"""The stored run: ``RunRecord``, built once at admission, its document's one reader and writer."""

from niah.core.runs.figures import ReportFigures
from niah.core.runs.record import (
    RunRecord,
    RunState,
    run_label,
    run_owner,
    run_state,
    stored_run,
    with_job_documents,
)

__all__ = [
    "ReportFigures",
    "RunRecord",
    "RunState",
    "run_label",
    "run_owner",
    "run_state",
    "stored_run",
    "with_job_documents",
]
