"""The stored run: ``RunRecord``, built once at admission, its document's one reader and writer."""

from niah.core.runs.figures import ReportFigures
from niah.core.runs.listing import ListedRun, listed_runs
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
    "ListedRun",
    "ReportFigures",
    "RunRecord",
    "RunState",
    "listed_runs",
    "run_label",
    "run_owner",
    "run_state",
    "stored_run",
    "with_job_documents",
]
