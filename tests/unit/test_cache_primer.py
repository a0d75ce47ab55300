"""No cache primer where no prefix could reach the model's minimum (issue 52).

Before, cache-aware dispatch sent a primer alone and held the grid back for it whatever
the prefixes: a grid of 4,000- and 5,000-token prompts on Gemini 4 Argon, whose implicit
cache serves no prefix under 6,144 tokens, waited a whole call for a cache that could
not serve it. The dispatcher and the estimate now decide alike
(``niah.core.request.cache_primer``).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from niah.core.request.cache_primer import (
    BUILTIN_HEAD_BYTES,
    PLACEHOLDER_BYTES,
    head_tokens_at_most,
    shared_prefix_at_most,
)
from niah.core.request.grid import Cell, primer_cell
from niah.service.runs.dispatch import dispatch_run
from niah.settings import get_settings
from tests.fake_store import MemoryStore
from tests.fakes import MemoryBlobs, RecordingPublisher
from tests.unit.test_cli import niah

# Its longest prefix another cell shares with the primer (5,000 at 100 %) is the 4,000-
# token cell's at 100 %: past 3.8 Flash's 2,048, short of Argon's 6,144.
BETWEEN = {"context_lengths": [4000, 5000], "document_depth_percents": [0, 100]}


@pytest.fixture(autouse=True)
def cache_aware(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NIAH_DISPATCH_ORDER", "cache_aware")
    get_settings.cache_clear()


def published(essay_blobs: MemoryBlobs, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The messages a new run's dispatch publishes, and whether it recorded a primer."""
    store, publisher = MemoryStore(), RecordingPublisher()
    result = dispatch_run(body, store=store, publisher=publisher, blobs=essay_blobs)
    assert ("primer_cell" in store.runs[result.run_id]) == (len(publisher.cells) == 1)
    return list(publisher.cells)


def test_argon_gets_no_primer_where_flash_does_on_the_same_grid(essay_blobs: MemoryBlobs) -> None:
    flash = published(essay_blobs, BETWEEN | {"model_name": "gemini-3.8-flash"})
    assert len(flash) == 1 and flash[0]["primer"] is True
    argon = published(essay_blobs, BETWEEN | {"model_name": "gemini-4-argon"})
    assert len(argon) == 4 and not any(m.get("primer") for m in argon)  # all at once


def test_a_grid_whose_prefixes_stay_under_2048_gets_no_primer(essay_blobs: MemoryBlobs) -> None:
    short = {"model_name": "gemini-3.8-flash", "context_lengths": [1000, 2000],
             "document_depth_percents": [0, 100]}  # fmt: skip
    assert len(published(essay_blobs, short)) == 4
    # Needles at the start: every prompt shares the template's head alone.
    shallow = {"model_name": "gemini-3.8-flash", "context_lengths": [8000, 16000],
               "document_depth_percents": [0]}  # fmt: skip
    assert len(published(essay_blobs, shallow)) == 2


def test_the_local_model_keeps_its_primer_the_minimum_being_vertexs(
    essay_blobs: MemoryBlobs,
) -> None:
    """llama.cpp reuses whatever prefix its last prompt shares: no minimum binds it."""
    local = {"context_lengths": [300, 600], "document_depth_percents": [0, 100]}
    assert len(published(essay_blobs, local)) == 1


def estimate(*args: str) -> dict[str, Any]:
    done = niah("run", "--context_lengths", "4000", "5000", "--document_depth_percents", "0",
                "100", *args, "--estimate", "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    figures: dict[str, Any] = json.loads(done.stdout)
    return figures


def test_the_estimate_decides_as_the_dispatcher_and_the_bound_holds_its_prefixes() -> None:
    argon = estimate("--model_name", "gemini-4-argon")
    aware = argon["cache_aware"]
    assert aware["primer_cell_id"] is None and aware["cached_tokens"] == 0
    assert aware["cost_usd"] == argon["naive"]["cost_usd"]
    text = niah("run", "--context_lengths", "4000", "5000", "--document_depth_percents", "0",
                "100", "--model_name", "gemini-4-argon", "--estimate").stdout  # fmt: skip
    assert "no primer: no shared prefix reaches 6,144 tokens" in text
    flash = estimate("--model_name", "gemini-3.8-flash")
    assert flash["cache_aware"]["primer_cell_id"] == "L00005000-D100000"
    # The estimate's prefixes, counted in the tokenizer, are within the dispatcher's bound.
    cells = [Cell(4000, 0.0), Cell(4000, 100.0), Cell(5000, 0.0), Cell(5000, 100.0)]
    primer = primer_cell(cells)
    assert primer == Cell(5000, 100.0)
    bound = shared_prefix_at_most(cells, primer, head=head_tokens_at_most(None), buffer=0)
    cached = max(c["cached_tokens"] for c in flash["per_cell"])
    assert 2_048 <= cached <= bound == 4000


def test_the_head_allowance_holds_every_built_in_templates_head() -> None:
    import importlib
    import pkgutil

    import niah.tasks
    from niah.core.prompts import texts

    templates = [texts.HARNESS_TEMPLATE, texts.LOCAL_TEMPLATE]
    for module in pkgutil.iter_modules(niah.tasks.__path__):
        template = getattr(importlib.import_module(f"niah.tasks.{module.name}"), "TEMPLATE", None)
        if isinstance(template, str) and "{context}" in template:
            templates.append(template)
    assert len(templates) >= 6
    heads = [len(t.split("{context}")[0].encode()) for t in templates]
    assert max(heads) <= BUILTIN_HEAD_BYTES
    # A run's own template: its head's bytes, and room for a question put before the context.
    assert head_tokens_at_most("Answer from this:\n{context}\n{question}") == 18
    assert head_tokens_at_most("{question}\n\n{context}") == 2 + PLACEHOLDER_BYTES
