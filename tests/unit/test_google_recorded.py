"""Contract tests from Google's side: what Vertex writes is read, whatever it adds.

google-genai's models forbid unknown fields, and Google adds fields to its replies
without notice; one batch line the SDK's model could not hold used to stop the whole
ingest. The recorded lines and replies under ``tests/data/google_recorded`` (each
names its source) go through the batch reader and must give the expected answer
exactly; unknown fields at any depth are dropped as the online SDK drops them, and a
line that still cannot be read raises ``UnreadableLineError`` with its reason. A failed
line gives its inner error's reason; an echoed request is matched to what was sent by
its digest however Google re-serialises it; a job's ``completionStats`` reach the
settle through the SDK's own converter and ``_job_of``.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from niah.errors import PermanentCellError, UnreadableLineError
from niah.models.providers.gemini import _answer_of, _job_of, answer_from_json
from niah.models.providers.gemini_request import request_digest
from niah.service.batch.output import line_answered, line_reason
from niah.service.batch.wait import expected_fields
from tests.unit.test_vertex_standin import standin  # noqa: F401 (the fixture)

RECORDED = Path(__file__).parents[1] / "data" / "google_recorded"
RECORDINGS = sorted(RECORDED.glob("*.json"))
# What the readers take: a batch output line or a generateContent reply (not a job).
ANSWERS = [path for path in RECORDINGS if "job" not in json.loads(path.read_text())]
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
    assert len(RECORDINGS) >= 7
    for path in RECORDINGS:
        recording = _recording(path)
        source = recording["_source"]
        assert source["where"] and source["what"], path.name
        assert dt.date(2026, 11, 27) <= dt.date.fromisoformat(source["read"]) <= dt.date.today()
        assert sum(kind in recording for kind in ("line", "reply", "job")) == 1, path.name
        assert path.name in (RECORDED / "README.md").read_text()


@pytest.mark.parametrize("path", ANSWERS, ids=lambda path: path.stem)
def test_a_recorded_line_reads_as_expected(path: Path) -> None:
    recording = _recording(path)
    expected = recording["expected"]
    if "failed" in expected:  # the reader takes its status, never its response
        assert not line_answered(recording["line"])
        assert line_reason(recording["line"]["status"]) == expected["failed"]
        return
    assert "line" not in recording or line_answered(recording["line"])
    if "unreadable" in expected:
        with pytest.raises(UnreadableLineError) as raised:
            answer_from_json(_response(recording))
        assert raised.value.reason == expected["unreadable"]
        return
    assert _fields(answer_from_json(_response(recording))) == expected


def test_the_failed_line_google_wrote_gives_its_inner_error_not_the_http_phrase() -> None:
    """Issue 1308's line: ``Bad Request: {"error": {... "FAILED_PRECONDITION"}}``.

    Before, the reason was the status cut at 200 characters: "Bad Request: {"error":
    {"code": 400, ..." for every failure a 400 carries, whatever its cause.
    """
    status = _recording(RECORDED / "batch_line_failed.json")["line"]["status"]
    assert status.startswith("Bad Request: {")
    reason = line_reason(status)
    assert reason.startswith("FAILED_PRECONDITION (400): Service agents are being provisioned")
    assert reason.endswith("So please try again in a few minutes.")
    # The same error written bare, or as the error object alone, gives the same reason.
    inner = json.loads(status.partition(": ")[2])
    assert line_reason(json.dumps(inner)) == line_reason(inner) == reason
    assert line_reason(inner["error"]) == reason


def test_a_re_serialised_echo_with_null_fields_matches_the_request_sent() -> None:
    """Google's sample line echoes its request with keys sorted and nulls added.

    The line is matched to its cell by ``request_digest`` (``batch_output``): were the
    null ``file_data`` beside a text, or the null ``text`` beside a file, read as parts
    of the prompt, no line of a real job would find its cell.
    """
    recording = _recording(RECORDED / "batch_line_sample_notebook.json")
    echo, sent = recording["line"]["request"], recording["sent"]
    assert echo != sent and echo["contents"][0]["parts"][0]["file_data"] is None
    assert request_digest(echo) == request_digest(sent) is not None
    failed = _recording(RECORDED / "batch_line_failed.json")["line"]["request"]
    assert request_digest(failed) is not None  # issue 1308's echo: the same nulls


def test_the_stand_ins_null_echo_is_the_samples() -> None:
    """The stand-in's ``nulls`` echo writes a request back as the sample shows Google does.

    So ``test_batch_ingest``'s run through the stand-in in that mode reads lines shaped
    as Google's, through the whole reader.
    """
    from niah_devtools.standin_batch import _echoed

    recording = _recording(RECORDED / "batch_line_sample_notebook.json")
    echoed = _echoed({"request": recording["sent"]}, "nulls")["request"]
    assert json.dumps(echoed) == json.dumps(recording["line"]["request"])  # order too


def test_the_stand_ins_failed_line_is_written_as_google_wrote_issue_1308s() -> None:
    from niah_devtools.standin_batch import _failed_status

    status = _recording(RECORDED / "batch_line_failed.json")["line"]["status"]
    error = json.loads(status.partition(": ")[2])["error"]
    assert _failed_status(error["code"], error) == status


def test_a_jobs_completion_stats_reach_the_settle_as_google_counts_them() -> None:
    """A job read through google-genai's own converter for Vertex, then ``_job_of``.

    Google publishes no sample of a job with ``completionStats``: the fixture is built
    from the reference's fields, its int64 counts as JSON strings.
    """
    from google.genai import batches, types

    recording = _recording(RECORDED / "batch_job_completion_stats.json")
    expected = recording["expected"]
    sdk_job = types.BatchJob._from_response(
        response=batches._BatchJob_from_vertex(copy.deepcopy(recording["job"])), kwargs={}
    )
    job = _job_of(sdk_job)
    assert (job.name, job.state, job.output_dir, job.error) == (
        expected["name"], expected["state"], expected["output_dir"], expected["error"]
    )  # fmt: skip
    assert job.stats is not None
    assert (job.stats.successful, job.stats.failed, job.stats.incomplete) == tuple(
        expected["stats"][name] for name in ("successful", "failed", "incomplete")
    )
    # The lines its output must hold before it is settled: answered and failed rows.
    fields = expected_fields(job)
    assert fields["expected_lines"] == expected["expected_lines"] == job.stats.written
    assert fields["incomplete_lines"] == expected["stats"]["incomplete"]


def test_the_recorded_line_with_fields_the_sdk_lacks_is_what_used_to_stop_an_ingest() -> None:
    from google.genai import types
    from pydantic import ValidationError

    response = _response(_recording(RECORDED / "batch_line_unknown_fields.json"))
    with pytest.raises(ValidationError, match="billablePromptUsage"):
        types.GenerateContentResponse.model_validate(response)  # the old reader
    before = copy.deepcopy(response)
    assert answer_from_json(response).total_tokens == 1185
    assert response == before  # the caller's line is left as Google wrote it


@pytest.mark.parametrize("path", ANSWERS, ids=lambda path: path.stem)
def test_batch_reads_a_recording_as_the_online_call_does(path: Path) -> None:
    """The online path: the SDK's own converter on the same JSON, then ``_answer_of``."""
    from google.genai import types

    recording = _recording(path)
    if {"unreadable", "failed"} & set(recording["expected"]):
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
