"""The stored run as a type (issue 53): one reader, one writer, resolved once.

- ``RunRecord.to_document`` / ``from_document`` (and the listings' ``ListedRun``) are the
  only code that reads a run's fields by key, with the Firestore adapter that hands
  them the documents; a grep keeps it so.
- Admission looks the model up in the catalog once, and so does a worker's run view.
"""

from __future__ import annotations

import collections
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

import niah.catalog.models as catalog_models
import niah.catalog.prices as catalog_prices
from niah.catalog.models import LOCAL_MODEL
from niah.core.prompts.answer_budget import call_budget
from niah.core.runs import ListedRun, RunRecord, stored_run
from niah.errors import StoredRunError
from niah.service.cells.run_view import current_run
from niah.service.runs.dispatch import dispatch_run
from tests import REPO
from tests.fake_store import MemoryStore
from tests.fakes import MemoryBlobs, MemorySpendLedger, RecordingPublisher

pytestmark = pytest.mark.unit

SHIPPED = REPO / "shared" / "niah"
BODY = {
    "model_name": "gemini-3.8-flash",
    "context_lengths": [1000, 2000],
    "document_depth_percents": [0, 50],
}


@pytest.fixture
def lookups(monkeypatch: pytest.MonkeyPatch) -> Iterator[collections.Counter[str]]:
    """Every catalog lookup, by model name: the module's own and the price table's."""
    counted: collections.Counter[str] = collections.Counter()
    original = catalog_models.catalog_entry

    def counting(model_name: str) -> catalog_models.ModelInfo | None:
        counted[model_name] += 1
        return original(model_name)

    # find_model, model_family and the lifecycle look up through the module's global;
    # the price table imported the function itself.
    monkeypatch.setattr(catalog_models, "catalog_entry", counting)
    monkeypatch.setattr(catalog_prices, "catalog_entry", counting)
    yield counted


def test_the_counter_sees_a_lookup(lookups: collections.Counter[str]) -> None:
    """The counter is wired where lookups go: find_model and prices_for each count one."""
    catalog_models.find_model("gemini-3.8-flash")
    catalog_prices.prices_for("gemini-3.8-flash")
    assert lookups["gemini-3.8-flash"] == 2


def test_one_admission_looks_the_model_up_once(
    essay_blobs: MemoryBlobs, lookups: collections.Counter[str]
) -> None:
    """Checks, warnings, budget, record and the spend held: one lookup (13 before)."""
    store, publisher = MemoryStore(), RecordingPublisher()
    dispatched = dispatch_run(
        BODY, store=store, publisher=publisher, blobs=essay_blobs, ledger=MemorySpendLedger()
    )
    assert dispatched.created and dispatched.published > 0
    assert lookups == {"gemini-3.8-flash": 1}


@pytest.mark.parametrize(
    ("model", "budget"),
    [("gemini-3.8-flash", {}), (LOCAL_MODEL, {}), (LOCAL_MODEL, {"certify_max_seconds": 400})],
)
def test_a_certify_admission_looks_the_model_up_once(
    essay_blobs: MemoryBlobs,
    lookups: collections.Counter[str],
    model: str,
    budget: dict[str, float],
) -> None:
    """A certification's plan is priced from the one entry admission resolved.

    Its prices or seconds per length, budget, unreachable warning and the spend held:
    9 and 25 lookups before (2026-12-06), one per length each time a check rebuilt it.
    """
    body = BODY | {"model_name": model, "mode": "certify"} | budget
    store, publisher = MemoryStore(), RecordingPublisher()
    dispatched = dispatch_run(
        body, store=store, publisher=publisher, blobs=essay_blobs, ledger=MemorySpendLedger()
    )
    assert dispatched.created and dispatched.published > 0
    assert lookups == {model: 1}


def test_a_worker_s_run_view_looks_the_model_up_once(
    essay_blobs: MemoryBlobs, lookups: collections.Counter[str]
) -> None:
    """The view's provider, model entry and call budgets resolve once, however often read."""
    store, publisher = MemoryStore(), RecordingPublisher()
    run_id = dispatch_run(BODY, store=store, publisher=publisher, blobs=essay_blobs).run_id
    lookups.clear()
    stamp = store.runs[run_id]["stamp"]
    view = current_run(store, run_id, stamp)
    assert view is not None
    for _ in range(3):  # as every cell of the run asks
        assert view.provider_name == "gemini"
        assert view.record.model_info is not None
        assert call_budget(view.spec, 40).max_output_tokens > 0
    assert lookups == {"gemini-3.8-flash": 1}


def test_the_document_written_reads_back_as_the_record(essay_blobs: MemoryBlobs) -> None:
    """to_document is what is stored; from_document reads it back field for field."""
    store, publisher = MemoryStore(), RecordingPublisher()
    run_id = dispatch_run(BODY, store=store, publisher=publisher, blobs=essay_blobs).run_id
    record = stored_run(store, run_id, counts=False)
    assert record is not None
    assert record.run_id == run_id and record.total == 4 and record.model == "gemini-3.8-flash"
    assert record.provider == "gemini" and record.haystack_files
    assert record.call_settings["max_output_tokens"] > 0
    again = RunRecord.from_document(record.to_document())
    assert again == record
    # What the CLI and the report page read of a run is in the document.
    stored = store.runs[run_id]
    for name in ("label", "model", "status", "spec", "total", "stamp", "haystack_uri"):
        assert stored[name] == record.to_document()[name]


def test_the_report_s_figures_and_batch_notes_read_back_as_written() -> None:
    """What the report and a batch step write on the run survives a read and a write."""
    figures = {
        "mean_score": 7.5,
        "measures": {"mean": 75.0, "effective_length": {"length": 2000}},
        "outcomes": {"correct": 3, "wrong": 1},
        "count_fit": {"cells": 4, "max_abs": 2},
        "served_models": {"gemini-3.8-flash-001": 4},
    }
    doc = {"run_id": "run-f", "spec": {}, "batch_error": "job failed"} | figures
    record = RunRecord.from_document(doc)
    assert record.figures.measures == figures["measures"]
    assert record.figures.count_fit == figures["count_fit"]
    assert record.batch_error == "job failed" and record.batch_stopped is None
    written = record.to_document()
    assert {name: written[name] for name in figures} == figures
    assert written["batch_error"] == "job failed" and "variants" not in written


def test_a_run_stored_under_the_rule_s_old_name_is_read_under_its_rule() -> None:
    """Certify runs stored before ``effective_length_rule`` said ``certify_rule``."""
    stored = RunRecord.from_document({"run_id": "run-c", "spec": {"certify_rule": "nolima"}})
    assert stored.effective_length_rule == "nolima"
    assert RunRecord.from_document({"run_id": "run-d", "spec": {}}).effective_length_rule == "ruler"


def test_a_listing_reads_a_projection_the_record_would_refuse() -> None:
    """A sentinel's earlier runs are read of a few fields: a spec that is no request."""
    projected = {
        "run_id": "run-a",
        "status": "complete",
        "spec": {"scheduled_at": "2026-11-28T06:00:00Z"},  # PREVIOUS_FIELDS' part of it
        "sentinel_key": "k1",
        "sentinel_check": {"watch": {"share": 90.0}},
        "measures": {"mean": 90.0},
    }
    with pytest.raises(StoredRunError, match="names both the sentinel and its firing"):
        RunRecord.from_document(projected)
    listed = ListedRun.from_document(projected)
    assert (listed.run_id, listed.status, listed.sentinel_key) == ("run-a", "complete", "k1")
    assert listed.scheduled_at == "2026-11-28T06:00:00Z" and listed.sentinel is None
    assert listed.watch == {"share": 90.0} and listed.figures.measures == {"mean": 90.0}
    assert listed.task == "single" and listed.label == "model not recorded · single"


# Where a run's document is read by key, by design: the runs package (RunRecord, the
# listings' ListedRun and the report's figures: the one reader and writer), and the
# Firestore adapter, the document boundary. The store hands documents to
# RunRecord.from_document; inside its transactions it guards transitions on the raw
# fields (a report's claim, its status and counts) and sums the counter shards into
# the document it returns, before any record exists.
DOCUMENT_BOUNDARY = ("core/runs/", "cloud/store/")
# A parameter typed as the run's document, or a read of a run's field by key.
RUN_DICT = re.compile(r"\brun: dict\b|\brun: Mapping\b")
RUN_READ = re.compile(r"""\b(run|existing|stored_run|run_doc|previous)(\[["']|\.get\(["'])""")


def _offenders() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    roots = [(SHIPPED, ""), (REPO / "functions", "functions/")]
    for root, prefix in roots:
        for path in sorted(root.rglob("*.py")):
            name = prefix + path.relative_to(root).as_posix()
            if name.startswith(DOCUMENT_BOUNDARY) or "/niah/" in name:  # or functions' copy
                continue
            lines = [
                f"{number}: {line.strip()}"
                for number, line in enumerate(path.read_text().splitlines(), 1)
                if RUN_DICT.search(line) or RUN_READ.search(line)
            ]
            if lines:
                found[name] = lines
    return found


def test_nothing_but_the_record_reads_a_run_by_key() -> None:
    """No ``run: dict`` and no ``run["..."]`` / ``run.get("...")`` outside RunRecord."""
    assert _offenders() == {}, "read the run through niah.core.runs.RunRecord (or ListedRun)"


def test_the_grep_finds_what_it_looks_for(tmp_path: Path) -> None:
    """The patterns catch the forms they forbid (so an empty result means something)."""
    for line in (
        "def f(run: dict[str, Any]) -> None:",
        '    status = run.get("status")',
        "    total = run['total']",
        '    existing.get("failed")',
    ):
        assert RUN_DICT.search(line) or RUN_READ.search(line), line
    for line in ("run.status", "record.to_document()", 'cell.get("status")'):
        assert not (RUN_DICT.search(line) or RUN_READ.search(line)), line
