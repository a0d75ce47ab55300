"""A run as a listing reads it: a few fields of many runs, a projection of each document.

The index (``niah.core.pages.run_index``), a sentinel's runs (its check and its trend)
and ``niah index`` ask the store for some fields of every run (a Firestore projection,
``ResultStore.index_runs`` and ``sentinel_runs``), not whole documents: their spec is a
part of a request (its task, sentinel and firing), so it is read as those fields and
not validated as a request (``RunRecord`` is the whole run). Read here, as the record
is, so a field of the run document is named in this package alone.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from niah.core.request.request_options import DEFAULT_TASK
from niah.core.request.sentinel_request import SENTINEL_CHECK, SENTINEL_KEY
from niah.core.runs.figures import ReportFigures
from niah.core.runs.record import run_label


@dataclass(frozen=True)
class ListedRun:
    """The fields a listing reads of one run; each empty where the projection left it out.

    run_id, label, model, status, total: as ``RunRecord``'s (status "" where not read).
    task, sentinel, scheduled_at: the request's task, and a sentinel's run's sentinel and
        the firing it answers (``spec.task``, ``spec.sentinel``, ``spec.scheduled_at``).
    sentinel_key: a sentinel's run's request key (which runs pair with it).
    created_at: when the run was created (a UTC datetime as Firestore gives it).
    report, report_error: where its report is, or why it failed.
    sentinel_check: what its sentinel's check found (its test's state in ``watch``).
    figures: what its report kept on it (``ReportFigures``).
    """

    run_id: str
    label: str = ""
    model: str = ""
    status: str = ""
    total: int = 0
    task: str = DEFAULT_TASK
    sentinel: str | None = None
    scheduled_at: str | None = None
    sentinel_key: str | None = None
    created_at: dt.datetime | str | None = None
    report: Mapping[str, Any] | None = None
    report_error: Mapping[str, Any] | None = None
    sentinel_check: Mapping[str, Any] | None = None
    figures: ReportFigures = field(default_factory=ReportFigures)

    @classmethod
    def from_document(cls, doc: Mapping[str, Any], run_id: str | None = None) -> ListedRun:
        """The listing's run of a projected document (``run_id``: where it holds none)."""
        get = doc.get
        spec = get("spec") or {}
        return cls(
            run_id=str(get("run_id") or run_id or ""),
            label=run_label(doc),
            model=str(get("model") or ""),
            status=str(get("status") or ""),
            total=int(get("total") or 0),
            task=str(spec.get("task") or DEFAULT_TASK),
            sentinel=spec.get("sentinel") or None,
            scheduled_at=spec.get("scheduled_at") or None,
            sentinel_key=get(SENTINEL_KEY) or None,
            created_at=get("created_at"),
            report=get("report") or None,
            report_error=get("report_error") or None,
            sentinel_check=get(SENTINEL_CHECK) or None,
            figures=ReportFigures.from_document(doc),
        )

    @property
    def watch(self) -> Mapping[str, Any]:
        """Its sentinel check's test state (``sentinel_check.watch``; empty if none)."""
        return (self.sentinel_check or {}).get("watch") or {}


def listed_runs(docs: list[dict[str, Any]]) -> list[ListedRun]:
    """The runs of a listing the store gave (each document with its ``run_id``)."""
    return [ListedRun.from_document(doc) for doc in docs]
