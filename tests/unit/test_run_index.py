"""The runs index: what it says of each run, its leaderboards, its page, and no lost update."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
import re
from collections.abc import Sequence
from typing import Any

from niah.core.pages.run_index import INDEX_FIELDS, build_index, render_index_page
from niah.core.runs import RunRecord, listed_runs
from niah.service.reports.render import render_report
from niah.service.runs.index import refresh_index
from tests.fake_store import MemoryStore
from tests.fakes import MemoryBlobs
from tests.unit.test_report import CELLS


def complete_run(run_id: str, model: str, task: str, hour: int, by_length: dict[str, float]):
    mean = sum(by_length.values()) / len(by_length)
    return {
        "model": model,
        "spec": {"task": task},
        "status": "complete",
        "total": 4,
        "created_at": dt.datetime(2026, 11, 27, hour, tzinfo=dt.UTC),
        "measures": {
            "mean": mean,
            "mean_interval": [mean - 10, min(100.0, mean + 10)],
            "by_length": by_length,
            "effective_length": {"length": 2000, "interval": None, "determined": True},
        },
        "spend": {"usd": 0.25},
        "report": {"html_url": f"https://x/{run_id}/report.html", "heatmap_url": "https://x/h.png"},
    }


def test_each_run_is_listed_once_newest_first_with_its_label_mean_interval_and_links() -> None:
    runs = [
        complete_run("a", "gemini-2.5-flash", "single", 3, {"1000": 100.0, "2000": 80.0})
        | {"run_id": "a"},
        {"run_id": "b", "model": "gemini-2.5-pro", "spec": {"task": "mrcr"}, "status": "running"}
        | {"created_at": dt.datetime(2026, 11, 27, 4, tzinfo=dt.UTC), "label": "pro, try 2"},
    ]
    index = build_index(listed_runs(runs))
    assert [r["run_id"] for r in index["runs"]] == ["b", "a"]
    running, done = index["runs"]
    assert (done["label"], running["label"]) == ("gemini-2.5-flash · single", "pro, try 2")
    # Stored without what its interval assumes: as every interval was then, independent.
    assert done["mean_text"] == "90 (95 %, samples taken as independent: 80-100)"
    assert running["mean_text"] == "not yet (no report)"
    stopped = build_index(listed_runs([runs[1] | {"status": "cancelled"}]))["runs"][0]
    assert stopped["mean_text"] == "none (cancelled)"
    assert (done["effective_length"], done["spend_usd"]) == (2000, 0.25)
    assert done["report_url"] == "https://x/a/report.html"
    assert json.loads(json.dumps(index, default=str))["runs"][1]["created_at"].startswith(
        "2026-11-27T03:00"
    )


def test_a_leaderboard_per_task_holds_each_models_latest_complete_run_by_length() -> None:
    runs = [
        complete_run("old", "m1", "single", 1, {"1000": 10.0}) | {"run_id": "old"},
        complete_run("new", "m1", "single", 2, {"1000": 90.0, "4000": 70.0}) | {"run_id": "new"},
        complete_run("m2", "m2", "single", 3, {"2000": 100.0}) | {"run_id": "m2"},
        complete_run("mq", "m1", "multi_query", 3, {"1000": 50.0}) | {"run_id": "mq"},
    ]
    boards = build_index(listed_runs(runs))["leaderboards"]
    assert sorted(boards) == ["multi_query", "single"]
    single = boards["single"]
    assert single["lengths"] == [1000, 2000, 4000]
    assert [(row["model"], row["run_id"]) for row in single["rows"]] == [
        ("m2", "m2"),
        ("m1", "new"),
    ]
    assert single["rows"][1]["scores"] == {1000: 90.0, 4000: 70.0}


def test_a_run_with_an_axis_is_listed_by_its_values_and_kept_off_the_leaderboards() -> None:
    """Its pooled mean (over 0 and 4 distractors) is for scripts, not for the index."""
    from niah.core.results.summary import summarize
    from tests.unit.test_axis_report import axis_run

    run, cells = axis_run()
    summary = summarize(RunRecord.from_document(run), cells)
    entry = build_index(
        listed_runs([run | {"status": "complete", "measures": summary["measures"]}])
    )
    [listed] = entry["runs"]
    assert (listed["mean"], listed["mean_text"]) == (None, "per value of the axis (its report)")
    assert listed["effective_length_text"].startswith("per value of the axis: 0 distractors")
    assert entry["leaderboards"] == {}


def test_the_page_escapes_what_users_wrote_and_allows_only_its_own_script() -> None:
    run = complete_run("a", "m", "single", 3, {"1000": 100.0}) | {
        "run_id": "a",
        "label": "<script>alert(1)</script>",
    }
    page = render_index_page(build_index(listed_runs([run])))
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    [script] = re.findall(r"<script>(.*?)</script>", page, re.DOTALL)
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    policy = re.search(r'Content-Security-Policy" content="([^"]+)"', page)
    assert policy is not None
    assert f"script-src 'sha256-{digest}'" in policy.group(1)
    assert "default-src 'none'" in policy.group(1)
    assert page.count('<tr data-status="complete"') == 1


class RacingStore(MemoryStore):
    """A store whose first index read lets another report finish and write the index."""

    def __init__(self, blobs: MemoryBlobs) -> None:
        super().__init__()
        self.blobs, self.raced, self.reads = blobs, False, 0

    def index_runs(self, fields: Sequence[str]) -> list[dict[str, Any]]:
        self.reads += 1
        runs = super().index_runs(fields)
        if not self.raced:  # between this writer's generation read and its write
            self.raced = True
            self.runs["late"] = complete_run("late", "m2", "single", 5, {"1000": 50.0})
            assert refresh_index(self, self.blobs)
        return runs


def test_two_reports_finishing_together_both_appear_in_the_index() -> None:
    blobs = MemoryBlobs()
    store = RacingStore(blobs)
    store.runs["early"] = complete_run("early", "m1", "single", 4, {"1000": 100.0})
    assert refresh_index(store, blobs)
    index = json.loads(blobs.objects["reports/index.json"])
    assert sorted(r["run_id"] for r in index["runs"]) == ["early", "late"]
    assert store.reads == 3  # the raced writer lost its first write and rebuilt once
    page = blobs.objects["reports/index.html"].decode()
    assert '<td class="id">early</td>' in page and '<td class="id">late</td>' in page


def test_the_index_reads_only_its_fields_and_a_report_brings_it_up_to_date() -> None:
    store, blobs = MemoryStore(), MemoryBlobs()
    store.create_run("r", {"run_id": "r", "total": 4, "model": "m", "spec": {"scorer": "exact"}})
    for cell in CELLS:
        store.record_cell("r", cell["cell_id"], cell, failed=cell["score"] is None, shards=1)
    assert render_report("r", store=store, blobs=blobs) is not None
    [entry] = json.loads(blobs.objects["reports/index.json"])["runs"]
    assert (entry["run_id"], entry["status"]) == ("r", "complete")
    assert entry["mean_text"] == "not determined (nothing scored)"  # these cells have no task score
    assert entry["report_url"] == "memory://test-bucket/reports/r/report.html"
    assert "spec.task" in INDEX_FIELDS and "spec" not in INDEX_FIELDS  # never the whole spec
