"""Contract tests from Google's side: what Vertex writes is read, whatever it adds.

google-genai's models forbid unknown fields, and Google adds fields to its replies
without notice; one batch line the SDK's model could not hold used to stop the whole
ingest. The recorded lines and replies under ``tests/data/google_recorded`` (each
names its source) go through the batch reader and must give the expected answer
exactly; unknown fields at any depth are dropped as the online SDK drops them, and a
line that still cannot be read raises ``UnreadableLineError`` with its reason.
"""

from __future__ import annotations

import copy
import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from niah.errors import PermanentCellError, UnreadableLineError
from niah.models.providers.gemini import _answer_of, answer_from_json
from tests.unit.test_vertex_standin import standin  # noqa: F401 (the fixture)

RECORDED = Path(__file__).parents[1] / "data" / "google_recorded"
RECORDINGS = sorted(RECORDED.glob("*.json"))
ANSWER_FIELDS = (
    "text",
    "finish_reason",
    "prompt_tokens",
    "output_tokens",
    "thinking_tokens",
    "cached_tokens",
    "total_tokens",
    "model_version",
    "response_id",
)


def _recording(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def _response(recording: dict[str, Any]) -> Any:
    """What batch ingest hands the reader: a line's ``response``, or the reply itself."""
    return recording["line"].get("response") if "line" in recording else recording["reply"]


def _fields(answer: Any) -> dict[str, Any]:
    return {name: getattr(answer, name) for name in ANSWER_FIELDS}


def test_every_recording_names_its_source_and_what_it_must_give() -> None:
    assert len(RECORDINGS) >= 5
    for path in RECORDINGS:
        recording = _recording(path)
        source = recording["_source"]
        assert source["where"] and source["read"] == "2026-11-27", path.name
        assert ("line" in recording) != ("reply" in recording), path.name
        assert path.name in (RECORDED / "README.md").read_text()


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda path: path.stem)
def test_a_recorded_line_reads_as_expected(path: Path) -> None:
    recording = _recording(path)
    expected = recording["expected"]
    if "unreadable" in expected:
        with pytest.raises(UnreadableLineError) as raised:
            answer_from_json(_response(recording))
        assert raised.value.reason == expected["unreadable"]
        return
    assert _fields(answer_from_json(_response(recording))) == expected


def test_the_recorded_line_with_fields_the_sdk_lacks_is_what_used_to_stop_an_ingest() -> None:
    from google.genai import types
    from pydantic import ValidationError

    response = _response(_recording(RECORDED / "batch_line_unknown_fields.json"))
    with pytest.raises(ValidationError, match="billablePromptUsage"):
        types.GenerateContentResponse.model_validate(response)  # the old reader
    before = copy.deepcopy(response)
    assert answer_from_json(response).total_tokens == 1185
    assert response == before  # the caller's line is left as Google wrote it


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda path: path.stem)
def test_batch_reads_a_recording_as_the_online_call_does(path: Path) -> None:
    """The online path: the SDK's own converter on the same JSON, then ``_answer_of``."""
    from google.genai import types

    recording = _recording(path)
    if "unreadable" in recording["expected"]:
        return
    response = copy.deepcopy(_response(recording))
    online = _answer_of(
        types.GenerateContentResponse._from_response(response=response, kwargs={}), 0
    )
    assert _fields(online) == _fields(answer_from_json(_response(recording)))


def _with(reply: dict[str, Any], path: tuple[Any, ...], name: str, value: Any) -> dict[str, Any]:
    grown = copy.deepcopy(reply)
    node: Any = grown
    for step in path:
        node = node[step]
    node[name] = value
    return grown


BASE = _recording(RECORDED / "batch_line_max_tokens.json")["line"]["response"]


@pytest.mark.parametrize(
    "path",
    [
        (),  # beside candidates
        ("candidates", 0),  # on a candidate
        ("candidates", 0, "content"),  # in its content
        ("candidates", 0, "content", "parts", 0),  # on a part
        ("usageMetadata",),  # in the usage
        ("usageMetadata", "promptTokensDetails", 0),  # in a modality count
    ],
    ids=lambda path: ".".join(map(str, path)) or "top",
)
def test_an_unknown_field_at_any_depth_is_dropped(path: tuple[Any, ...]) -> None:
    grown = _with(BASE, path, "fieldGoogleAddsTomorrow", {"nested": [1, {"deeper": True}]})
    assert _fields(answer_from_json(grown)) == _fields(answer_from_json(BASE))


def test_values_the_sdk_enums_lack_are_kept_as_google_spells_them() -> None:
    reply = _with(BASE, ("candidates", 0), "finishReason", "A_REASON_GOOGLE_ADDS")
    reply = _with(reply, ("usageMetadata",), "trafficType", "A_NEW_TRAFFIC")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the SDK warns of the unknown enum values
        answer = answer_from_json(reply)
    assert answer.finish_reason == "A_REASON_GOOGLE_ADDS"
    assert answer.text == "Hello there! It's nice to meet you"


def test_a_reply_without_usage_or_with_no_candidates_reads_with_nothing_invented() -> None:
    no_usage = {k: v for k, v in BASE.items() if k != "usageMetadata"}
    answer = answer_from_json(no_usage)
    assert (answer.prompt_tokens, answer.output_tokens, answer.total_tokens) == (None, None, None)
    empty = answer_from_json({"candidates": [], "usageMetadata": {"promptTokenCount": 3}})
    assert (empty.text, empty.finish_reason, empty.prompt_tokens) == ("", None, 3)
    safety = answer_from_json({"candidates": [{"finishReason": "SAFETY"}]})  # no content
    assert (safety.text, safety.finish_reason) == ("", "SAFETY")


@pytest.mark.parametrize(
    ("response", "reason"),
    [
        ("not an object", "the response is str, not a JSON object"),
        (None, "the response is NoneType, not a JSON object"),
        ({}, "the response carries no candidates, promptFeedback or usageMetadata"),
        (
            {"usageMetadata": {"promptTokenCount": "many"}},
            "the SDK cannot read the response: usageMetadata.promptTokenCount: "
            "Input should be a valid integer, unable to parse string as an integer",
        ),
        (
            {"candidates": "one"},
            "the SDK cannot read the response: candidates: Input should be a valid list",
        ),
    ],
    ids=["text", "null", "empty", "count-not-a-number", "candidates-not-a-list"],
)
def test_a_line_that_cannot_be_read_raises_its_reason(response: Any, reason: str) -> None:
    with pytest.raises(UnreadableLineError) as raised:
        answer_from_json(response)
    assert raised.value.reason == reason == str(raised.value)
    # A permanent cell error: recorded on that line's cell, never retried as a whole.
    assert isinstance(raised.value, PermanentCellError)
    assert raised.value.kind == "unreadable_line"


def test_the_stand_in_sends_the_fields_real_replies_carry_and_they_read(
    standin: tuple[str, Any],  # noqa: F811
) -> None:
    from tests.unit.test_vertex_standin import standin_reply

    url, _ = standin
    reply = standin_reply(url)
    usage = reply["usageMetadata"]
    assert usage["trafficType"] == "ON_DEMAND" and "billablePromptUsage" in usage
    assert usage["promptTokensDetails"] == [
        {"modality": "TEXT", "tokenCount": usage["promptTokenCount"]}
    ]
    answer = answer_from_json(reply)  # billablePromptUsage: not in the SDK, dropped
    assert answer.prompt_tokens == usage["promptTokenCount"] and answer.text
