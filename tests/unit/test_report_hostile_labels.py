"""Issue 35: no label blocks a report. matplotlib never reads text as math; pages escape."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from niah.core.request.spec import RunRequest
from niah.service.reports.render import render_report
from tests.fake_store import MemoryStore
from tests.fakes import MemoryBlobs
from tests.unit.test_report import CELLS

# Each raised in the report function before (ValueError, RecursionError), or must be
# shown as written: math, deep nesting, markup, the longest label the spec allows.
MATH = r"x $\frac{a$"
LONGEST_LABEL = 120  # RunRequest.label's max_length
NESTED = "$" + "{" * 59 + "}" * 59 + "$"  # as long as allowed: RecursionError in mathtext
SCRIPT = "<script>alert(1)</script>"
LONGEST = ("$\\sqrt{" * 20 + "<b>")[:LONGEST_LABEL]
ACCEPTED = [MATH, NESTED, SCRIPT, LONGEST, "$$", "\\$x$ & 'quotes' \""]
# Refused by the spec (a label is one line of printable text), but a run stored before
# that rule, or a model name or haystack URI that carries them, is drawn all the same.
REFUSED = ["right\u202eto left", "two\nlines", "tab\there"]


def test_the_spec_takes_hostile_but_printable_labels_and_refuses_controls() -> None:
    assert len(LONGEST) == len(NESTED) == LONGEST_LABEL
    with pytest.raises(ValidationError, match="at most 120"):
        RunRequest.model_validate({"label": LONGEST + "x"})
    for label in ACCEPTED:
        assert RunRequest.model_validate({"label": label}).label == label.strip()
    for label in REFUSED:
        with pytest.raises(ValidationError, match="label"):
            RunRequest.model_validate({"label": label})


def _store_run(store: MemoryStore, run_id: str, **fields: Any) -> None:
    store.create_run(
        run_id,
        {"run_id": run_id, "total": 4, "model": "m", "spec": {"scorer": "exact"}} | fields,
    )
    for cell in CELLS:
        store.record_cell(run_id, cell["cell_id"], cell, failed=cell["score"] is None, shards=1)


@pytest.mark.parametrize("label", ACCEPTED + REFUSED)
def test_every_hostile_label_gets_its_report_png_and_escaped_html(label: str) -> None:
    store, blobs = MemoryStore(), MemoryBlobs()
    # The label in the title, a model name and a haystack URI in the notes: all drawn.
    _store_run(store, "r", label=label, model=f"m {label}", haystack_uri=f"gs://b/{label}")
    location = render_report("r", store=store, blobs=blobs)
    assert location is not None and store.runs["r"]["status"] == "complete"
    assert blobs.objects["reports/r/heatmap.png"].startswith(b"\x89PNG")
    page = blobs.objects["reports/r/report.html"].decode()
    assert "<script>alert(1)" not in page
    if label == SCRIPT:
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    index = blobs.objects["reports/index.html"].decode()
    assert "<script>alert(1)" not in index


def test_no_text_matplotlib_draws_is_parsed_as_math(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every Text of every figure, tick labels and legend included, made as drawn."""
    from matplotlib.text import Text

    from niah.core.results.comparison import ComparedRun, Comparison
    from niah.core.results.summary import score_table
    from niah.core.runs import RunRecord
    from niah.service.reports import png as report

    texts: list[Text] = []
    real_png = report._png

    def png_then_look(figure: Any, **kwargs: Any) -> bytes:
        data = real_png(figure, **kwargs)  # drawn: the lazily made tick labels exist now
        texts.extend(figure.findobj(Text))
        return data

    monkeypatch.setattr(report, "_png", png_then_look)
    table = score_table(CELLS)
    report.render_heatmap(table, title=MATH, notes=f"{NESTED} {SCRIPT}")
    runs = [
        ComparedRun(f"run-{i}", RunRecord.from_document({}, f"run-{i}"), [], table, name)
        for i, name in enumerate([MATH, NESTED])
    ]
    comparison = Comparison(runs, table, [], {}, 0, [])
    report.render_comparison_png(comparison)
    assert len(texts) > 20
    drawn = [t for t in texts if t.get_text()]
    assert any(t.get_text() == MATH for t in drawn)  # the title, verbatim
    assert not [t.get_text() for t in texts if t.get_parse_math() or t.get_usetex()]
