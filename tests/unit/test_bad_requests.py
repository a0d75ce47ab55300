"""Hostile run requests at the dispatcher's door: each a 400 naming its field.

Numbers past any bound (a 5,000-digit literal included), hidden characters in any free
text, sources outside their prefixes or above the byte cap. The options are found from
the request's model and every task's options model, so a new one is covered.
"""

from __future__ import annotations

import sys
from typing import Any, get_args

import functions_framework
import pytest

from niah.cli.run_options import task_option_fields
from niah.core.request.spec import RunRequest
from niah.errors import RequestError
from niah.service.runs.request_body import parse_request
from niah.tasks import TASKS
from tests import REPO
from tests.fake_store import MemoryStore
from tests.fakes import MemoryBlobs, MemorySpendLedger, RecordingPublisher

DISPATCHER = str(REPO / "functions" / "dispatcher" / "main.py")


def kinds(annotation: Any) -> set[Any]:
    """Every type an annotation names (``list[int] | None`` names list, int, None)."""
    found = {getattr(annotation, "__origin__", annotation)}
    for inner in get_args(annotation):
        found |= kinds(inner)
    return found


# Every option's field: the request's own (its tasks' options apart), and each task's.
OPTION_FIELDS = {
    name: info for name, info in RunRequest.model_fields.items() if name != "task_options"
} | {name: info for name, (info, _) in task_option_fields().items()}


def fields_of(*wanted: type) -> list[str]:
    return [name for name, info in OPTION_FIELDS.items() if kinds(info.annotation) & set(wanted)]


def asking(name: str, value: Any) -> dict[str, Any]:
    """A request giving ``value`` to the option ``name`` (with a task that takes it)."""
    takers = [task for task in TASKS.values() if name in task.options.model_fields]
    return {name: value, **({"task": takers[0].name} if takers else {})}


NUMERIC_FIELDS = fields_of(int, float)


def http_dispatcher(monkeypatch: pytest.MonkeyPatch, blobs: MemoryBlobs | None = None) -> Any:
    """The dispatcher's HTTP entry point, on fakes; its requests carry a signed ID token."""
    from niah.core.request.callers import LOCAL_CALLER
    from tests.unit.id_tokens import signed, trust_test_keys

    trust_test_keys(monkeypatch)
    app = functions_framework.create_app(target="dispatch", source=DISPATCHER)
    served = sys.modules["main"]
    clients = (MemoryStore(), RecordingPublisher(), blobs or MemoryBlobs())
    monkeypatch.setattr(served, "_clients", lambda: clients)
    # Its own ledger too: without it the entry point reached for Firestore, and these
    # tests passed only after an integration stack had set the emulator's address.
    ledger = MemorySpendLedger()
    monkeypatch.setattr(served, "_ledger", lambda: ledger)
    client = app.test_client()
    client.environ_base["HTTP_AUTHORIZATION"] = signed(LOCAL_CALLER)
    return client, clients


def test_the_numeric_options_are_found_from_the_model() -> None:
    """A new number field is found here, so the bound tests below cover it."""
    assert {"seed", "alpha", "context_lengths", "document_depth_percents"} <= set(NUMERIC_FIELDS)
    assert "dynamic_needle" not in NUMERIC_FIELDS  # bool is no number here


@pytest.mark.parametrize("name", NUMERIC_FIELDS)
@pytest.mark.parametrize("value", [10**30, -(10**30), 1e300])
def test_every_numeric_option_has_bounds(name: str, value: float) -> None:
    is_list = list in kinds(OPTION_FIELDS[name].annotation)
    with pytest.raises(RequestError) as refused:
        parse_request(asking(name, [value] if is_list else value))
    assert refused.value.field.split(".")[0] == name, refused.value
    if isinstance(value, int) and float not in kinds(OPTION_FIELDS[name].annotation):
        assert any(word in refused.value.message for word in ("at most", "at least", "between"))


@pytest.mark.parametrize("name", NUMERIC_FIELDS)
def test_a_five_thousand_digit_number_is_a_400_naming_its_field(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: Python's int conversion limit raised ValueError in json.loads, a 500."""
    client, (store, publisher, _) = http_dispatcher(monkeypatch)
    huge = "9" * 5000
    task = asking(name, None).get("task")
    given = f'"task": "{task}", ' if task else ""
    for literal in (huge, f"-{huge}", f"[{huge}]"):
        response = client.post(
            "/", data=f'{{{given}"{name}": {literal}}}', content_type="application/json"
        )
        assert response.status_code == 400, response.get_data(as_text=True)[:300]
        error = response.get_json()["error"]
        assert error["field"] == name
        assert "5000 digits" in error["message"]
    assert store.runs == {} and publisher.cells == []


def test_a_long_number_anywhere_in_the_body_is_refused_not_a_traceback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    client, _ = http_dispatcher(monkeypatch)
    for body, field in (
        ("9" * 5000, "body"),
        ("[" + "9" * 5000 + "]", "body"),
        ('{"nested": {"deep": [[' + "9" * 5000 + "]]}}", "deep"),
        ('{"seed": ' + "9" * 101 + "}", "seed"),
    ):
        response = client.post("/", data=body, content_type="application/json")
        assert response.status_code == 400
        assert response.get_json()["error"]["field"] == field
    # A hundred digits is still a number, refused by the option's bound.
    response = client.post("/", data='{"seed": ' + "9" * 100 + "}", content_type="application/json")
    assert response.get_json()["error"] == {
        "field": "seed",
        "message": f"must be at most {2**63 - 1}",
    }


TEXT_FIELDS = fields_of(str)
# Names of things, held to a pattern of plain ASCII or a list (their own messages).
PATTERNED = {
    "task",
    "model_name",
    "evaluator_model_name",
    "haystack_dir",
    "mrcr_source",
    "sentinel",
    "scheduled_at",
}
HIDDEN = {
    "a bidi override": "\u202e",
    "a zero-width joiner": "\u200d",
    "a NUL": "\u0000",
    "an escape": "\u001b",
    "private use": "\ue000",
}


def text_value(name: str, text: str) -> Any:
    value = "{context}" + text + "{question}" if name == "prompt_template" else f"a{text}b"
    return [value] if list in kinds(OPTION_FIELDS[name].annotation) else value


def test_the_text_options_are_found_from_the_model() -> None:
    free = set(TEXT_FIELDS) - PATTERNED
    assert free == {
        "needle",
        "needles",
        "retrieval_question",
        "expected_answer",
        "expected_answers",
        "prompt_template",
        "label",
    }


@pytest.mark.parametrize("name", TEXT_FIELDS)
@pytest.mark.parametrize("hidden", list(HIDDEN), ids=list(HIDDEN))
def test_every_text_option_refuses_hidden_characters(name: str, hidden: str) -> None:
    """Before: needles and expected_answers took a bidi override that needle refused."""
    with pytest.raises(RequestError) as refused:
        parse_request(asking(name, text_value(name, HIDDEN[hidden])))
    assert refused.value.field.split(".")[0] == name
    if name not in PATTERNED | {"label"}:
        assert refused.value.message == (
            "must not contain control, format or private-use characters"
        )


def test_free_text_keeps_its_newlines_and_tabs() -> None:
    spec = parse_request(
        {
            "task": "multi_needle",
            "needles": ["\nThe first.\n", "The\tsecond."],
            "expected_answers": ["first", "sec\nond"],
            "retrieval_question": "What are\nthey?",
            "prompt_template": "{context}\n\t{question}",
        }
    )
    assert spec.model_dump()["needles"] == ["\nThe first.\n", "The\tsecond."]


def source_blobs() -> MemoryBlobs:
    """A bucket with a haystack, an MRCR file, and what no run may read."""
    from tests.unit.test_mrcr import PREFIX, REPLY, published_csv, transcript

    blobs = MemoryBlobs()
    csv = published_csv([(transcript(PREFIX, REPLY, "Essay."), PREFIX + REPLY, 5000, 2)])
    for name in ("mine", "paul_graham_essays"):
        blobs.objects[f"haystacks/{name}/a.txt"] = b"A sentence of the haystack. " * 400
    blobs.objects["mrcr_v2/a.csv"] = csv
    for other in ("contexts/run-0123456789abcdef", "reports/run-0123456789abcdef", "batches/x"):
        blobs.objects[f"{other}/a.txt"] = b"Someone's saved prompt. " * 400
        blobs.objects[f"{other}/a.csv"] = csv
    blobs.objects["reports/index.txt"] = b"An index. " * 400
    return blobs


def source_request(option: str, value: str) -> dict[str, Any]:
    """A request reading ``value`` as its haystack or its MRCR source."""
    task = {"task": "mrcr"} if option == "mrcr_source" else {"context_lengths": [1000]}
    return {option: value, **task}


@pytest.mark.parametrize(
    ("option", "value", "root"),
    [
        ("haystack_dir", "contexts/run-0123456789abcdef/", "haystacks/"),
        ("haystack_dir", "gs://test-bucket/reports/run-0123456789abcdef", "haystacks/"),
        ("haystack_dir", "batches/x", "haystacks/"),
        ("haystack_dir", "gs://test-bucket/reports", "haystacks/"),  # the runs index
        ("haystack_dir", "gs://test-bucket/haystacksx/", "haystacks/"),
        ("mrcr_source", "gs://test-bucket/contexts/run-0123456789abcdef/", "mrcr_v2/"),
        ("mrcr_source", "reports/run-0123456789abcdef/a.csv", "mrcr_v2/"),
        ("mrcr_source", "gs://test-bucket/batches/x/", "mrcr_v2/"),
        ("mrcr_source", "haystacks/mine/", "mrcr_v2/"),
    ],
)
def test_a_source_outside_its_prefix_is_refused_naming_the_prefix(
    option: str, value: str, root: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: any prefix of the bucket, other runs' saved prompts and reports too."""
    client, (store, publisher, _) = http_dispatcher(monkeypatch, source_blobs())
    response = client.post("/", json=source_request(option, value))
    assert response.status_code == 400, response.get_data(as_text=True)
    error = response.get_json()["error"]
    assert error["field"] == option
    assert f"must be under gs://test-bucket/{root}" in error["message"]
    assert store.runs == {} and publisher.cells == []


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("haystack_dir", "mine"),
        ("haystack_dir", "haystacks/mine/"),
        ("haystack_dir", "gs://test-bucket/haystacks/mine"),
        ("haystack_dir", "noise"),
        ("mrcr_source", "gs://test-bucket/mrcr_v2/"),  # as docs/tasks/mrcr.md says
        ("mrcr_source", "gs://test-bucket/mrcr_v2/a.csv"),
        ("mrcr_source", "mrcr_v2"),
    ],
)
def test_sources_under_their_prefixes_run(
    option: str, value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    client, (store, _, _) = http_dispatcher(monkeypatch, source_blobs())
    response = client.post("/", json=source_request(option, value))
    assert response.status_code == 202, response.get_data(as_text=True)
    assert len(store.runs) == 1


@pytest.mark.parametrize("option", ["haystack_dir", "mrcr_source"])
def test_a_source_above_the_byte_cap_is_refused_with_both_figures(
    option: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from niah.settings import get_settings

    blobs = source_blobs()
    listed = blobs.objects["haystacks/mine/a.txt" if option == "haystack_dir" else "mrcr_v2/a.csv"]
    monkeypatch.setenv("NIAH_MAX_SOURCE_BYTES", str(len(listed) - 1))
    get_settings.cache_clear()
    try:
        client, (store, _, _) = http_dispatcher(monkeypatch, blobs)
        named = "mine" if option == "haystack_dir" else "mrcr_v2"
        response = client.post("/", json=source_request(option, named))
    finally:
        monkeypatch.delenv("NIAH_MAX_SOURCE_BYTES")
        get_settings.cache_clear()
    assert response.status_code == 400
    error = response.get_json()["error"]
    assert error["field"] == option
    assert f"lists {len(listed):,} bytes" in error["message"]
    assert f"limit of {len(listed) - 1:,} (NIAH_MAX_SOURCE_BYTES)" in error["message"]
    assert store.runs == {}


def test_nolimas_rule_on_a_grid_without_a_short_length_is_a_400_naming_the_rule(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """NoLiMa's base is the mean at 1,000 tokens or less: a grid without one has none."""
    client, (store, publisher, _) = http_dispatcher(monkeypatch)
    asked = {"context_lengths": [2000, 4000], "document_depth_percents": [50]}
    response = client.post("/", json=asked | {"effective_length_rule": "nolima"})
    assert response.status_code == 400, response.get_data(as_text=True)
    error = response.get_json()["error"]
    assert error["field"] == "effective_length_rule"
    assert "the shortest length here is 2,000" in error["message"]
    assert "add a length of 1,000 or less to context_lengths" in error["message"]
    assert "or leave effective_length_rule out" in error["message"]
    assert store.runs == {} and publisher.cells == []
    # With a base length it is a run of its own (the rule names it), judged by NoLiMa's.
    based = parse_request(asked | {"context_lengths": [1000, 4000]})
    nolima = parse_request(
        asked | {"context_lengths": [1000, 4000], "effective_length_rule": "nolima"}
    )
    assert nolima.rule() == "nolima" and based.rule() == "ruler"
    assert nolima.run_id() != based.run_id()
