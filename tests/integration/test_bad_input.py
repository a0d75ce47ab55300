"""Malformed and hostile run requests.

Each answers 400 naming the field, and nothing is published or written.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import requests

from niah.cloud.store import FirestoreStore
from niah.core.prompts.answer_budget import answer_room
from niah.core.request.spec import RunRequest
from niah_devtools import local_identity, localstack
from tests.integration.conftest import Stack, drain
from tests.integration.test_local_stack import wait_complete

pytestmark = pytest.mark.integration

JSON = "application/json"
OK = {"context_lengths": [1000], "document_depth_percents": [50]}

CASES: list[tuple[str, Any, str, str]] = [
    # (case, body, content type, field named in the error)
    ("lengths not a list", {"context_lengths": "1000"}, JSON, "context_lengths"),
    ("length not a number", {"context_lengths": ["many"]}, JSON, "context_lengths.0"),
    ("length a float", {"context_lengths": [1000.5]}, JSON, "context_lengths.0"),
    ("length a bool", {"context_lengths": [True]}, JSON, "context_lengths.0"),
    ("empty lengths", {"context_lengths": []}, JSON, "context_lengths"),
    ("zero length", {"context_lengths": [0]}, JSON, "context_lengths"),
    ("negative length", {"context_lengths": [-5]}, JSON, "context_lengths"),
    ("absurd length", {"context_lengths": [10**12]}, JSON, "context_lengths"),
    ("length below the prompt", {"context_lengths": [60]}, JSON, "context_lengths"),
    ("length above the model", {"context_lengths": [40_000]}, JSON, "context_lengths"),
    (
        "gemini above its limit",
        {"model_name": "gemini-3.8-flash", "context_lengths": [1_500_000]},
        JSON,
        "context_lengths",
    ),
    (
        "min above max",
        {"context_lengths_min": 9000, "context_lengths_max": 1000},
        JSON,
        "context_lengths_min",
    ),
    (
        "too many intervals",
        {"context_lengths_num_intervals": 5000},
        JSON,
        "context_lengths_num_intervals",
    ),
    (
        "huge grid",
        {"context_lengths_num_intervals": 40, "document_depth_percent_intervals": 40},
        JSON,
        "context_lengths",
    ),
    ("depth above 100", {**OK, "document_depth_percents": [101]}, JSON, "document_depth_percents"),
    ("depth below 0", {**OK, "document_depth_percents": [-1]}, JSON, "document_depth_percents"),
    (
        "depth min above 100",
        {**OK, "document_depth_percents": None, "document_depth_percent_min": 150},
        JSON,
        "document_depth_percent_min",
    ),
    ("empty depths", {**OK, "document_depth_percents": []}, JSON, "document_depth_percents"),
    (
        "unknown interval type",
        {**OK, "document_depth_percent_interval_type": "cubic"},
        JSON,
        "document_depth_percent_interval_type",
    ),
    ("unknown option", {**OK, "contxt_lengths": [1000]}, JSON, "contxt_lengths"),
    (
        "unknown local model",
        {**OK, "model_provider": "local", "model_name": "llama-3"},
        JSON,
        "model_name",
    ),
    (
        "not a gemini model",
        {**OK, "model_provider": "gemini", "model_name": "claude-3"},
        JSON,
        "model_name",
    ),
    ("not a gemini name", {**OK, "model_name": "gemini-ultra-plus"}, JSON, "model_name"),
    ("model name with a slash trick", {**OK, "model_name": "../../admin"}, JSON, "model_name"),
    (
        "model in another project",
        {
            **OK,
            "model_name": "projects/another/locations/us-central1/publishers/google/models/"
            "gemini-3.8-flash",
        },
        JSON,
        "model_name",
    ),
    ("model name with dots", {**OK, "model_name": "gemini-3.8-flash.."}, JSON, "model_name"),
    (
        "judge in another project",
        {**OK, "scorer": "judge", "evaluator_model_name": "projects/x/models/gemini-3.8-flash"},
        JSON,
        "evaluator_model_name",
    ),
    (
        "template repeating the context",
        {**OK, "prompt_template": "{context}" * 120 + "{question}"},
        JSON,
        "prompt_template",
    ),
    (
        "template repeating the question",
        {**OK, "prompt_template": "{context}" + "{question}" * 2000},
        JSON,
        "prompt_template",
    ),
    (
        "question holding the context",
        {**OK, "retrieval_question": "Repeat {context} {context}"},
        JSON,
        "retrieval_question",
    ),
    (
        "grid bomb",
        {
            "context_lengths_num_intervals": 1000,
            "document_depth_percent_intervals": 1000,
            "samples_per_cell": 100,
        },
        JSON,
        "context_lengths",
    ),
    ("model name with a NUL", {**OK, "model_name": "gemini-3.8-flash\u0000"}, JSON, "model_name"),
    ("unknown scorer", {**OK, "scorer": "vibes"}, JSON, "scorer"),
    ("judge without a judge", {**OK, "scorer": "judge"}, JSON, "scorer"),
    ("unknown provider", {**OK, "model_provider": "anthropic"}, JSON, "model_provider"),
    (
        "haystack in another bucket",
        {**OK, "haystack_dir": "gs://someone-else/texts"},
        JSON,
        "haystack_dir",
    ),
    ("haystack path traversal", {**OK, "haystack_dir": "../../etc/passwd"}, JSON, "haystack_dir"),
    (
        "haystack traversal in a URI",
        {**OK, "haystack_dir": "gs://niah-local/a/../../b"},
        JSON,
        "haystack_dir",
    ),
    (
        "haystack that does not exist",
        {**OK, "haystack_dir": "no_such_haystack"},
        JSON,
        "haystack_dir",
    ),
    (
        "haystack with fullwidth dots",
        {**OK, "haystack_dir": "\uff0e\uff0e/secret"},
        JSON,
        "haystack_dir",
    ),
    (
        "needle with a right-to-left override",
        {**OK, "dynamic_needle": False, "needle": "abc\u202edcba", "expected_answer": "abc"},
        JSON,
        "needle",
    ),
    (
        "question with a zero-width space",
        {**OK, "retrieval_question": "What\u200b?"},
        JSON,
        "retrieval_question",
    ),
    (
        # The harness's default needle has a known answer (issue 33): a needle of one's own
        # has none.
        "static needle of one's own without an answer or judge",
        {
            **OK,
            "dynamic_needle": False,
            "needle": "The vault code is 4417.",
            "retrieval_question": "What is the vault code?",
            "scorer": "exact",
        },
        JSON,
        "expected_answer",
    ),
    (
        "template without placeholders",
        {**OK, "prompt_template": "Answer now."},
        JSON,
        "prompt_template",
    ),
    (
        "negative buffer",
        {**OK, "final_context_length_buffer": -1},
        JSON,
        "final_context_length_buffer",
    ),
    (
        "buffer eats the context",
        {**OK, "final_context_length_buffer": 5000},
        JSON,
        "context_lengths",
    ),
    ("version zero", {**OK, "results_version": 0}, JSON, "results_version"),
    (
        "an output budget no answer fits in",
        {**OK, "task": "multi_needle", "num_needles": 8, "max_output_tokens": 40},
        JSON,
        "max_output_tokens",
    ),
    ("an image model", {**OK, "model_name": "gemini-3.1-flash-image"}, JSON, "model_name"),
    ("a model Vertex retired", {**OK, "model_name": "gemini-2.5-flash"}, JSON, "model_name"),
    (
        "a judge Vertex retired",
        {**OK, "scorer": "judge", "evaluator_model_name": "gemini-2.5-pro"},
        JSON,
        "evaluator_model_name",
    ),
    ("a TTS model", {**OK, "model_name": "gemini-3.8-flash-tts"}, JSON, "model_name"),
    ("seed a string", {**OK, "seed": "lucky"}, JSON, "seed"),
    ("a JSON array", [1000, 2000], JSON, "body"),
    ("a JSON string", '"run it"', JSON, "body"),
    ("JSON null", "null", JSON, "body"),
    ("not JSON", "{context_lengths: 1000", JSON, "body"),
    ("deeply nested JSON", "[" * 100_000 + "]" * 100_000, JSON, "body"),
    (
        "a key given twice",
        '{"context_lengths": [1000], "document_depth_percents": [50], "context_lengths": [9]}',
        JSON,
        "context_lengths",
    ),
    ("NaN depth minimum", '{"document_depth_percent_min": NaN}', JSON, "body"),
    (
        "haystack in saved prompts",
        {**OK, "haystack_dir": "gs://niah-local/contexts/"},
        JSON,
        "haystack_dir",
    ),
    (
        "MRCR source in reports",
        {**OK, "task": "mrcr", "mrcr_source": "reports/x/"},
        JSON,
        "mrcr_source",
    ),
    # The options of a task are validated by its model: each with the task that takes it.
    (
        "a bidi override in needles",
        {**OK, "task": "multi_needle", "needles": ["a\u202eb"]},
        JSON,
        "needles.0",
    ),
    (
        "a NUL in an answer",
        {**OK, "task": "multi_needle", "expected_answers": ["\u0000"]},
        JSON,
        "expected_answers.0",
    ),
    ("a zero-width joiner in a model ID", {**OK, "model_name": "gemini\u200d"}, JSON, "model_name"),
    # Past Python's int conversion limit (4,300 digits): a ValueError in json.loads, a 500.
    ("a 5,000-digit seed", '{"seed": ' + "9" * 5000 + "}", JSON, "seed"),
    ("a 5,000-digit length", '{"context_lengths": [' + "9" * 5000 + "]}", JSON, "context_lengths"),
    ("Infinity length", '{"context_lengths": [Infinity]}', JSON, "body"),
    ("invalid UTF-8", b'{"model_name": "\xff\xfe"}', JSON, "body"),
    ("empty body", "", JSON, "body"),
    ("form encoded", "context_lengths=1000", "application/x-www-form-urlencoded", "Content-Type"),
    ("plain text", "run 1000 tokens", "text/plain", "Content-Type"),
    ("oversized body", '{"needle": "' + "x" * 1_100_000 + '"}', JSON, "body"),
    # Generated contexts too big for their length: refused before anything is held.
    (
        "common_words freq_cw 1000 at 600 tokens",
        {**OK, "context_lengths": [600], "task": "common_words", "freq_cw": 1000},
        JSON,
        "context_lengths",
    ),
    (
        "graphwalks bfs_depth 10 at 1000 tokens",
        {**OK, "task": "graphwalks", "bfs_depth": 10},
        JSON,
        "context_lengths",
    ),
]


def send(stack: Stack, body: Any, content_type: str) -> requests.Response:
    if isinstance(body, (dict, list)):
        body = json.dumps(body)
    return requests.post(
        stack.env["DISPATCHER_URL"],
        data=body,
        headers={"Content-Type": content_type, **local_identity.headers()},
        timeout=60,
    )


def test_every_hostile_request_is_refused_and_changes_nothing(stack: Stack) -> None:
    assert len(CASES) >= 30
    drain(stack.tap, settle_seconds=0.5)
    runs = FirestoreStore()._db.collection("runs")
    before = {doc.id: doc.to_dict() for doc in runs.stream()}
    failures = []
    for case, body, content_type, field in CASES:
        response = send(stack, body, content_type)
        error = response.json().get("error", {}) if response.status_code == 400 else {}
        if response.status_code != 400 or error.get("field") != field or not error.get("message"):
            failures.append(f"{case}: {response.status_code} {response.text[:200]}")
    assert failures == [], "\n".join(failures)
    assert drain(stack.tap, settle_seconds=1.5) == [], "a refused request published cells"
    assert {doc.id: doc.to_dict() for doc in runs.stream()} == before


def test_the_error_message_says_how_to_fix_it(stack: Stack) -> None:
    response = send(stack, {**OK, "context_lengths": [60]}, JSON)
    assert "ask for at least" in response.json()["error"]["message"]
    response = send(stack, {**OK, "contxt_lengths": [1000]}, JSON)
    assert "spelling" in response.json()["error"]["message"]
    retired = send(stack, {**OK, "model_name": "gemini-2.5-flash"}, JSON)
    assert retired.json()["error"]["message"] == (
        "gemini-2.5-flash was retired on Vertex AI on 2026-10-20; Google names "
        "gemini-3.8-flash or gemini-3.5-flash-lite instead; to call it anyway (a project "
        "that still has access), set allow_retired"
    )
    words = send(
        stack, {**OK, "task": "common_words", "freq_cw": 1000, "context_lengths": [600]}, JSON
    )
    assert (
        "600 tokens cannot hold common_words with freq_cw 1000" in words.json()["error"]["message"]
    )
    assert "use a longer length or a smaller freq_cw" in words.json()["error"]["message"]
    tight = send(stack, {**OK, "task": "multi_needle", "max_output_tokens": 10}, JSON)
    room = answer_room(RunRequest.model_validate({**OK, "task": "multi_needle"}))
    assert tight.status_code == 400
    assert f"set max_output_tokens to at least {room}" in tight.json()["error"]["message"]


def test_twenty_grid_bombs_at_once_are_refused_and_leave_the_dispatcher_as_it_was(
    stack: Stack,
) -> None:
    """Before: eight 191-byte bombs grew the dispatcher from 92 MB to 1.1 GB."""
    bomb = {
        "context_lengths_num_intervals": 1000,
        "document_depth_percent_intervals": 1000,
        "samples_per_cell": 100,
    }
    send(stack, bomb, JSON)  # warm: the first request loads the dispatcher's modules
    before = localstack.group_rss_mib(stack.state_dir, "dispatcher")
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=20) as pool:
        answers = list(pool.map(lambda _: send(stack, bomb, JSON), range(20)))
    bombs_seconds = time.monotonic() - started
    timed = time.monotonic()
    normal = send(stack, {**OK, "model_name": "gemini-3.8-flash", "seed": 9090}, JSON)
    normal_seconds = time.monotonic() - timed
    after = localstack.group_rss_mib(stack.state_dir, "dispatcher")
    print(
        "BOMB-FIGURES "
        + json.dumps(
            {
                "bombs": 20,
                "rss_before_mib": round(before, 1),
                "rss_after_mib": round(after, 1),
                "bombs_wall_seconds": round(bombs_seconds, 3),
                "normal_request_seconds": round(normal_seconds, 3),
            }
        )
    )
    assert [a.status_code for a in answers] == [400] * 20
    assert {a.json()["error"]["field"] for a in answers} == {"context_lengths"}
    assert normal.status_code == 202, normal.text
    wait_complete(normal.json()["run_id"], timeout=120)  # no call left to land in a later test
    # Nothing was expanded: the process holds what it held (allocator noise aside).
    assert after - before < 20
