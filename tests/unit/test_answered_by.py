"""What answered is kept (issue 33): each reply's model version, on the cell and shown.

Google routes some model IDs to others and names the model that answered in each
reply's ``modelVersion``. These tests read it from real SDK responses and the Vertex
stand-in, store it on cells, and check that the summary, ``niah status``, the report,
the runs index and ``niah compare`` say so when it is not the model asked for.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from niah.catalog.models import same_model
from niah.core.interfaces import ModelAnswer
from niah.core.pages.run_index import build_index, index_entry, render_index_page
from niah.core.results.comparison import compare_runs, render_comparison_page
from niah.core.results.served_models import answer_identity, answered_by_text, served_versions
from niah.core.results.summary import summarize
from niah.core.runs import ListedRun, RunRecord, listed_runs
from niah.errors import DifferentModelsError
from niah.models.providers.gemini import GeminiProvider, _answer_of, answer_from_json
from niah.models.providers.openai_compat import OpenAICompatibleProvider
from niah_devtools.standin import StandinState
from niah_devtools.standin_batch import MemoryFiles
from tests.fakes import run_records
from tests.unit.test_cli_output import status, stored, use_store  # noqa: F401 (a fixture)
from tests.unit.test_report_page import cell, page_of, run_doc
from tests.unit.test_standin_batch import client, wait_done
from tests.unit.test_vertex_standin import (
    PROMPT,
    configure,
    run_one_gemini_cell,
    standin,  # noqa: F401 (the fixture)
    standin_reply,
)

# A Vertex generateContent reply as Vertex writes it: the shape and formats of one
# recorded from Vertex (github.com/inputhacker/ai_generated_code, rest_examples/
# vertexai_gemini_flash.sh, read 2026-11-27: modelVersion, an RFC 3339 createTime
# with microseconds, a 22-character responseId), with this service's kind of answer.
RECORDED_REPLY = """{
  "candidates": [{"content": {"role": "model", "parts": [{"text": "7304912"}]},
                  "finishReason": "STOP", "avgLogprobs": -0.0213}],
  "usageMetadata": {"promptTokenCount": 13, "candidatesTokenCount": 5,
                    "totalTokenCount": 18, "trafficType": "ON_DEMAND"},
  "modelVersion": "gemini-3.6-flash",
  "createTime": "2026-11-27T09:12:44.518207Z",
  "responseId": "rKsmaf2oHvPS1dkPuYyA0Qs"
}"""


def test_the_gemini_provider_reads_who_answered_from_a_recorded_reply() -> None:
    from google.genai import types

    reply = json.loads(RECORDED_REPLY)
    online = _answer_of(types.GenerateContentResponse.model_validate(reply), 0.5)
    batch = answer_from_json(reply)  # a batch prediction line's "response"
    for answer in (online, batch):
        assert (answer.text, answer.model_version, answer.response_id) == (
            "7304912",
            "gemini-3.6-flash",
            "rKsmaf2oHvPS1dkPuYyA0Qs",
        )
    assert answer_identity(online) == {
        "model_version": "gemini-3.6-flash",
        "response_id": "rKsmaf2oHvPS1dkPuYyA0Qs",
    }


def test_a_reply_without_them_reads_as_unknown_and_the_cell_keeps_nothing() -> None:
    reply = json.loads(RECORDED_REPLY)
    for name in ("modelVersion", "responseId", "createTime"):
        del reply[name]
    answer = answer_from_json(reply)
    assert (answer.model_version, answer.response_id) == (None, None)
    assert answer_identity(answer) == {}
    assert answer_identity(ModelAnswer("x", "STOP", 1, 1, 0.0)) == {}  # the local model


RESPONSE_ID = r"[A-Za-z0-9_-]{22}"


def test_the_stand_in_names_the_asked_model_by_default_as_vertex_does(
    standin: tuple[str, StandinState],  # noqa: F811
) -> None:
    url, _ = standin
    reply = standin_reply(url)
    assert reply["modelVersion"] == "gemini-3.5-flash"
    assert re.fullmatch(RESPONSE_ID, reply["responseId"])
    assert len(base64.urlsafe_b64decode(reply["responseId"] + "==")) == 16
    assert reply["createTime"].endswith("Z")
    created = dt.datetime.fromisoformat(reply["createTime"].replace("Z", "+00:00"))
    assert abs((dt.datetime.now(dt.UTC) - created).total_seconds()) < 60
    again = standin_reply(url)
    assert again["responseId"] != reply["responseId"]  # one ID a reply


def test_the_sdk_reads_a_routed_model_from_the_stand_in(
    standin: tuple[str, StandinState],  # noqa: F811
) -> None:
    url, _ = standin
    configure(url, served_versions={"gemini-3.5-flash": "gemini-3.6-flash"})
    routed = GeminiProvider("gemini-3.5-flash").generate(PROMPT, max_output_tokens=2000)
    assert routed.model_version == "gemini-3.6-flash"
    assert re.fullmatch(RESPONSE_ID, routed.response_id or "")
    # Another asked model is not routed: it answers as itself.
    other = GeminiProvider("gemini-3.8-flash").generate(PROMPT, max_output_tokens=2000)
    assert other.model_version == "gemini-3.8-flash"


def test_an_openai_style_reply_keeps_its_model_and_id(
    standin: tuple[str, StandinState],  # noqa: F811
) -> None:
    url, _ = standin
    configure(url, served_versions={"llama-3.1-8b": "llama-3.1-8b-instruct-q4"})
    answer = OpenAICompatibleProvider("llama-3.1-8b").generate(PROMPT, max_output_tokens=20)
    assert answer.model_version == "llama-3.1-8b-instruct-q4"
    assert (answer.response_id or "").startswith("chatcmpl-")


def test_a_batch_line_names_the_model_that_answered_it(
    standin: tuple[str, StandinState],  # noqa: F811
) -> None:
    from niah.models.providers.gemini_request import batch_line, generation_for, request_body

    url, state = standin
    configure(
        url, served_versions={"gemini-3.5-flash": "gemini-3.6-flash"}, batch_delay_seconds=0.1
    )
    files = MemoryFiles()
    state.batch.files = files
    generation = generation_for("gemini-3.5-flash", max_output_tokens=2000)
    line = batch_line(request_body(PROMPT, None, generation))
    files.write("gs://b/in.jsonl", json.dumps(line).encode())
    job = client(url).batches.create(
        model="gemini-3.5-flash", src="gs://b/in.jsonl", config={"dest": "gs://b/out/"}
    )
    done = wait_done(url, job.name)
    [written] = [uri for uri in files.objects if uri.endswith("predictions.jsonl")]
    [prediction] = [json.loads(x) for x in files.read(written).decode().splitlines()]
    assert done.state.name == "JOB_STATE_SUCCEEDED"
    assert answer_from_json(prediction["response"]).model_version == "gemini-3.6-flash"


def test_a_cell_keeps_the_model_asked_and_the_model_that_answered(
    standin: tuple[str, StandinState],  # noqa: F811
    essay_blobs: Any,
) -> None:
    url, _ = standin
    configure(url, served_versions={"gemini-3.5-flash": "gemini-3.6-flash"})
    store, run_id, outcome = run_one_gemini_cell(essay_blobs, model_name="gemini-3.5-flash")
    [stored_cell] = store.list_cells(run_id)
    assert outcome == "answered" and stored_cell["score"] == 10
    assert (stored_cell["model"], stored_cell["model_version"]) == (
        "gemini-3.5-flash",
        "gemini-3.6-flash",
    )
    [request] = [r for r in standin[1].requests if r["kind"] == "generate"]
    assert request["path"].endswith("/gemini-3.5-flash:generateContent")  # asked as itself
    assert len(stored_cell["response_id"]) == 22


@pytest.mark.parametrize(
    ("asked", "served", "same"),
    [
        ("gemini-3.5-flash", "gemini-3.5-flash", True),
        ("gemini-3.5-flash", "gemini-3.5-flash-001", True),  # a pinned version
        ("gemini-3.5-flash-001", "gemini-3.5-flash", True),
        ("publishers/google/models/gemini-3.5-flash", "gemini-3.5-flash", True),
        ("gemini-3.5-flash", "gemini-3.6-flash", False),  # routed to another family
        ("gemini-3.7-flash", "gemini-3.8-flash", False),  # deprecated, auto-routed
        ("gemini-3.5-flash", "gemini-3.5-flash-lite", False),  # its own entry
        ("gemini-9.9-flash", "gemini-9.9-flash-002", True),  # unknown, numbered version
        ("gemini-9.9-flash", "gemini-9.9-flash-lite", False),
        ("llama-3.1-8b", "llama-3.1-8b", True),
        ("llama-3.1-8b", "qwen-2.5-7b", False),
    ],
)
def test_a_pinned_version_is_the_same_model_and_another_family_is_not(
    asked: str, served: str, same: bool
) -> None:
    assert same_model(asked, served) is same


def answered(versions: Sequence[str | None], ok: bool = True) -> list[dict[str, Any]]:
    """Samples at one length, each answered by the version given (None: not recorded)."""
    cells = [cell(1000, 10.0 * i, ok) for i in range(len(versions))]
    return [c | ({"model_version": v} if v else {}) for c, v in zip(cells, versions, strict=True)]


def test_the_summary_says_asked_and_answered_by_with_counts() -> None:
    routed = answered(["gemini-3.6-flash"] * 3)
    mixed = answered(["gemini-3.6-flash"] * 3 + ["gemini-3.5-flash-001"])
    pinned = answered(["gemini-3.5-flash-001", "gemini-3.5-flash"])
    before = answered([None, None])  # cells stored before the field was kept
    run = run_doc("run-a", "gemini-3.5-flash")
    assert summarize(RunRecord.from_document(run), routed)["answered_by"] == (
        "asked gemini-3.5-flash, answered by gemini-3.6-flash"
    )
    assert summarize(RunRecord.from_document(run), mixed)["answered_by"] == (
        "asked gemini-3.5-flash, answered by gemini-3.6-flash (3 samples), "
        "gemini-3.5-flash-001 (1 sample)"
    )
    assert summarize(RunRecord.from_document(run), mixed)["served_models"] == {
        "gemini-3.6-flash": 3,
        "gemini-3.5-flash-001": 1,
    }
    assert summarize(RunRecord.from_document(run), pinned)["answered_by"] is None
    assert summarize(RunRecord.from_document(run), before)["answered_by"] is None
    assert summarize(RunRecord.from_document(run), before)["served_models"] == {}
    assert answered_by_text("gemini-3.5-flash", {}) is None


def test_the_report_and_the_index_show_who_answered() -> None:
    run = run_doc("run-a", "gemini-3.5-flash")
    page = page_of(run, answered(["gemini-3.6-flash"] * 2), [])
    assert 'data-fact="model">gemini-3.5-flash (answered by gemini-3.6-flash)</dd>' in page
    assert "<dt>answered by</dt><dd>gemini-3.6-flash</dd>" in page
    same = page_of(run, answered(["gemini-3.5-flash-001"] * 2), [])
    assert 'data-fact="model">gemini-3.5-flash</dd>' in same
    assert "<dt>answered by</dt><dd>gemini-3.5-flash-001</dd>" in same
    reported = run | {"served_models": served_versions(answered(["gemini-3.6-flash"] * 2))}
    entry = index_entry(ListedRun.from_document(reported))
    assert entry["answered_by"] == "asked gemini-3.5-flash, answered by gemini-3.6-flash"
    assert (
        index_entry(ListedRun.from_document(run))["answered_by"] is None
    )  # reported before it was kept
    index_page = render_index_page(build_index(listed_runs([reported])))
    assert "asked gemini-3.5-flash, answered by gemini-3.6-flash</span>" in index_page


def test_the_heatmap_notes_say_who_answered_so_a_shared_picture_does() -> None:
    from niah.service.reports.png import heatmap_notes

    run = run_doc("run-a", "gemini-3.5-flash")
    routed = heatmap_notes(
        summarize(RunRecord.from_document(run), answered(["gemini-3.6-flash"])),
        RunRecord.from_document(run),
    )
    assert " · asked gemini-3.5-flash, answered by gemini-3.6-flash · " in routed
    pinned = heatmap_notes(
        summarize(RunRecord.from_document(run), answered(["gemini-3.5-flash-001"])),
        RunRecord.from_document(run),
    )
    assert "answered by" not in pinned


def test_niah_status_says_the_scores_are_the_answering_models(
    capsys: pytest.CaptureFixture[str],
    use_store: Any,  # noqa: F811
) -> None:
    store = stored([])
    store.runs["run-t"]["model"] = "gemini-3.5-flash"
    store.cells["run-t"] = {c["cell_id"]: c for c in answered(["gemini-3.6-flash"] * 2)}
    use_store(store)
    _, out, _ = status(capsys)
    assert (
        "asked gemini-3.5-flash, answered by gemini-3.6-flash: the scores are that model's "
        "(each reply names its model)\n"
    ) in out
    _, out, _ = status(capsys, "--json")
    document = json.loads(out)
    assert document["served_models"] == {"gemini-3.6-flash": 2}
    assert document["answered_by"] == "asked gemini-3.5-flash, answered by gemini-3.6-flash"


def routed_runs() -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """Run A asked 3.5 Flash and was answered by 3.6 Flash; run B is 3.8 Flash's own."""
    return [
        (run_doc("run-a", "gemini-3.5-flash"), answered(["gemini-3.6-flash"] * 2)),
        (run_doc("run-b", "gemini-3.8-flash"), answered(["gemini-3.8-flash"] * 2, ok=False)),
    ]


REFUSAL = (
    "run run-a asked gemini-3.5-flash, answered by gemini-3.6-flash: compared by the "
    "models asked for, one model would be credited with another's answers"
)


def test_compare_refuses_a_run_answered_by_another_model_unless_allowed() -> None:
    with pytest.raises(DifferentModelsError) as refused:
        compare_runs(run_records(routed_runs()))
    assert str(refused.value) == REFUSAL
    comparison = compare_runs(run_records(routed_runs()), allow_different_models=True)
    overall = comparison.paired[0].overall
    assert overall is not None and overall.pairs == 2
    page = render_comparison_page(comparison)
    assert "<td>gemini-3.5-flash (answered by gemini-3.6-flash)</td>" in page
    assert "Answered by other models than asked for: run run-a asked gemini-3.5-flash" in page


def test_compare_pairs_different_models_each_answered_as_asked() -> None:
    runs = [
        (run_doc("run-a", "gemini-3.5-flash"), answered(["gemini-3.5-flash-001"] * 2)),
        (run_doc("run-b", "gemini-3.8-flash"), answered(["gemini-3.8-flash"] * 2)),
        (run_doc("run-c", "gemini-3.6-flash"), answered([None, None])),  # stored before
    ]
    overall = compare_runs(run_records(runs)).paired[0].overall
    assert overall is not None and overall.pairs == 2


def test_niah_compare_refuses_naming_the_models_and_the_flag(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from niah.cli import compare
    from niah.cli.main import main
    from tests.fake_store import MemoryStore

    store = MemoryStore()
    for run, cells in routed_runs():
        store.runs[run["run_id"]] = run
        store.cells[run["run_id"]] = {c["cell_id"]: c for c in cells}
    monkeypatch.setattr(compare, "result_store", lambda: store)
    out = tmp_path / "c.html"
    with pytest.raises(SystemExit) as refused:
        main(["compare", "run-a", "run-b", "--out", str(out)])
    # A message as exit status: the interpreter prints it and exits 1, as compare's
    # other refusals (no shared grid point) do.
    assert refused.value.code == (
        f"niah: compare: {REFUSAL}. Pass --allow-different-models to compare anyway"
    )
    assert not out.exists()
    main(["compare", "run-a", "run-b", "--out", str(out), "--allow-different-models", "--json"])
    assert out.exists() and out.with_suffix(".png").exists()


def test_a_run_of_the_local_model_reports_nothing_answered_by() -> None:
    run = run_doc("run-l", "gemma-3-270m-local")
    summary = summarize(RunRecord.from_document(run), answered([None, None]))
    assert (summary["served_models"], summary["answered_by"]) == ({}, None)
    assert "<dt>answered by</dt><dd>not reported</dd>" in page_of(run, answered([None]), [])
