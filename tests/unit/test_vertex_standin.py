"""The real google-genai SDK against a local HTTP stand-in of the Vertex API."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from niah.core.prompts.answer_budget import answer_room, call_budget
from niah.core.request.spec import RunRequest
from niah.core.runs import RunRecord
from niah.errors import ConfigurationError, PermanentCellError, PermanentRunError, RetryableError
from niah.models.providers import _providers as provider_cache
from niah.models.providers.gemini import GeminiProvider, retry_budget_seconds
from niah.models.providers.gemini_request import HARM_CATEGORIES
from niah.models.providers.openai_compat import OpenAICompatibleProvider
from niah.models.tokenizer import get_tokenizer
from niah.settings import get_settings
from niah_devtools.standin import StandinState, serve

PROMPT = "Some essay text. The special magic Lagos number is: 7304912. More text."


@pytest.fixture
def standin(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, StandinState]]:
    server, state = serve(0)
    url = f"http://127.0.0.1:{server.server_port}"
    for name, value in {
        "NIAH_PROJECT": "niah-test",
        "NIAH_VERTEX_BASE_URL": url,
        "NIAH_VERTEX_ACCESS_TOKEN": "test-token",
        "NIAH_GEMINI_RETRY_INITIAL_DELAY": "0.01",
        "NIAH_GEMINI_RETRY_MAX_DELAY": "0.05",
        "NIAH_GEMINI_TIMEOUT_SECONDS": "5",
        "NIAH_OPENAI_BASE_URL": f"{url}/v1",
        "NO_PROXY": "127.0.0.1,localhost",
    }.items():
        monkeypatch.setenv(name, value)
    # Providers are made once per model and read the stand-in's URL then: one kept from
    # an earlier test would call that test's stopped stand-in.
    get_settings.cache_clear()
    provider_cache.clear()
    yield url, state
    server.shutdown()
    get_settings.cache_clear()
    provider_cache.clear()


def standin_reply(url: str, model: str = "gemini-3.5-flash") -> dict[str, Any]:
    """The stand-in's raw generateContent JSON for PROMPT, as Vertex's REST API answers."""
    path = f"/v1/projects/p/locations/global/publishers/google/models/{model}"
    body = {"contents": [{"role": "user", "parts": [{"text": PROMPT}]}]}
    answer = requests.post(f"{url}{path}:generateContent", json=body, timeout=30)
    reply: dict[str, Any] = answer.json()
    return reply


def configure(url: str, **config: Any) -> None:
    requests.post(f"{url}/_standin/config", json=config, timeout=5).raise_for_status()


def test_the_request_is_the_one_we_intend(standin: tuple[str, StandinState]) -> None:
    _url, state = standin
    # Room for 2.5 Flash's default thinking (500 tokens in the stand-in) and the answer.
    answer = GeminiProvider("gemini-2.5-flash").generate(PROMPT, max_output_tokens=1000)
    assert answer.text == "The special magic Lagos number is: 7304912."
    assert answer.finish_reason == "STOP"
    assert answer.prompt_tokens == len(get_tokenizer().encode(PROMPT))
    [request] = state.requests
    assert request["path"] == (
        "/v1beta1/projects/niah-test/locations/global/publishers/google/models/"
        "gemini-2.5-flash:generateContent"
    )
    assert request["authorization"] == "Bearer test-token"
    body = request["body"]
    assert body["contents"] == [{"parts": [{"text": PROMPT}], "role": "user"}]
    assert body["generationConfig"] == {"temperature": 0.0, "maxOutputTokens": 1000}
    assert {(s["category"], s["threshold"]) for s in body["safetySettings"]} == {
        (category, "BLOCK_NONE") for category in HARM_CATEGORIES
    }


def test_a_thinking_budget_reaches_the_request(standin: tuple[str, StandinState]) -> None:
    _, state = standin
    GeminiProvider("gemini-2.5-flash").generate(PROMPT, max_output_tokens=300, thinking_budget=0)
    thinking = state.requests[0]["body"]["generationConfig"]["thinkingConfig"]
    # google-genai 2.34 writes this field in snake case; the API's JSON accepts both.
    assert list(thinking.values()) == [0] and set(thinking) <= {"thinkingBudget", "thinking_budget"}


def test_429_then_200_is_retried_and_succeeds(standin: tuple[str, StandinState]) -> None:
    url, state = standin
    configure(url, fail_first=2, fail_status=429)
    answer = GeminiProvider("gemini-2.5-flash").generate(
        PROMPT, max_output_tokens=50, thinking_budget=0
    )
    assert "7304912" in answer.text
    assert len(state.requests) == 3


@pytest.mark.parametrize(
    ("status", "config", "error"),
    [
        (429, {}, RetryableError),
        (503, {}, RetryableError),
        (500, {}, RetryableError),
        (403, {}, PermanentRunError),
        (404, {}, PermanentRunError),
    ],
)
def test_errors_are_classified(
    standin: tuple[str, StandinState], status: int, config: dict[str, Any], error: type
) -> None:
    url, state = standin
    configure(url, fail_always=True, fail_status=status, **config)
    with pytest.raises(error):
        GeminiProvider("gemini-2.5-flash").generate(PROMPT, max_output_tokens=50)
    retried = status in (429, 500, 503)
    assert len(state.requests) == (get_settings().gemini_retry_attempts if retried else 1)


def test_a_context_over_the_input_limit_is_a_permanent_cell_error(
    standin: tuple[str, StandinState],
) -> None:
    url, state = standin
    configure(url, input_limit=10)
    with pytest.raises(PermanentCellError, match="input limit"):
        GeminiProvider("gemini-2.5-flash").generate(PROMPT, max_output_tokens=50)
    assert len(state.requests) == 1


def test_a_blocked_answer_is_an_answer_with_its_reason(standin: tuple[str, StandinState]) -> None:
    url, _ = standin
    configure(url, block=True)
    answer = GeminiProvider("gemini-2.5-flash").generate(PROMPT, max_output_tokens=50)
    assert answer.text == ""
    assert answer.finish_reason == "SAFETY"


def test_count_tokens_is_the_apis_count(standin: tuple[str, StandinState]) -> None:
    _, state = standin
    assert GeminiProvider("gemini-2.5-flash").count_tokens(PROMPT) == len(
        get_tokenizer().encode(PROMPT)
    )
    assert state.requests[0]["path"].endswith(":countTokens")


def test_retries_are_bounded_below_the_function_timeout(
    standin: tuple[str, StandinState], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert retry_budget_seconds(get_settings()) < get_settings().function_timeout_seconds
    monkeypatch.setenv("NIAH_GEMINI_RETRY_ATTEMPTS", "10")
    monkeypatch.setenv("NIAH_GEMINI_TIMEOUT_SECONDS", "120")
    get_settings.cache_clear()
    with pytest.raises(ConfigurationError, match="below the function timeout"):
        GeminiProvider("gemini-2.5-flash")


def test_openai_compatible_provider(standin: tuple[str, StandinState]) -> None:
    url, state = standin
    provider = OpenAICompatibleProvider("llama-3.1-8b")
    answer = provider.generate(PROMPT, max_output_tokens=20)
    assert "7304912" in answer.text and answer.prompt_tokens
    assert state.requests[0]["body"]["messages"] == [{"role": "user", "content": PROMPT}]
    configure(url, fail_always=True, fail_status=429)
    with pytest.raises(RetryableError):
        provider.generate(PROMPT, max_output_tokens=20)


def run_one_gemini_cell(essay_blobs: Any, **request: Any) -> tuple[Any, str, str]:
    from niah.models.providers import _providers as provider_cache
    from niah.models.providers import get_provider
    from niah.service.cells.worker import process_cell
    from niah.service.messages import CellTask
    from niah.service.runs.dispatch import dispatch_run
    from tests.fake_store import MemoryStore
    from tests.fakes import RecordingPublisher

    provider_cache.clear()  # providers read the stand-in's URL from settings
    store, publisher = MemoryStore(), RecordingPublisher()
    # gemini-2.5-flash is the budget-controlled model these tests need (thinking_budget 0
    # turns its thinking off); Vertex retired it, so the run says allow_retired.
    body = {
        "model_name": "gemini-2.5-flash",
        "allow_retired": True,
        "context_lengths": [2000],
        "document_depth_percents": [50],
        **request,
    }
    result = dispatch_run(body, store=store, publisher=publisher, blobs=essay_blobs)
    task = CellTask.from_message(publisher.cells[0])
    outcome = process_cell(
        task, store=store, blobs=essay_blobs, publisher=publisher, provider_for=get_provider
    )
    return store, result.run_id, outcome


def test_a_gemini_cell_stores_both_scores_usage_and_cost(
    standin: tuple[str, StandinState], essay_blobs: Any
) -> None:
    store, run_id, outcome = run_one_gemini_cell(
        essay_blobs,
        scorer="both",
        evaluator_model_name="gemini-2.5-flash",
        count_tokens_check=True,
        thinking_budget=0,  # thinking is the next test's subject
    )
    assert outcome == "answered"
    [cell] = store.list_cells(run_id)
    assert cell["exact_score"] == 10 and cell["judge_score"] == 10 and cell["score"] == 10
    assert cell["judge_reasoning"].startswith("Score: 10")
    assert cell["usage"]["prompt_token_count"] == cell["counted_prompt_tokens"]
    assert cell["prompt_token_deviation"] == 0
    assert cell["cost_usd"] > 0
    totals = store.get_run(run_id)["totals"]
    assert totals["prompt_tokens"] == cell["usage"]["prompt_token_count"]
    assert totals["judge_prompt_tokens"] > 0
    assert totals["cost_usd"] == pytest.approx(cell["cost_usd"], rel=1e-6)


def test_blocked_and_too_long_cells_are_stored_not_crashed(
    standin: tuple[str, StandinState], essay_blobs: Any
) -> None:
    url, _ = standin
    configure(url, block=True)
    store, run_id, outcome = run_one_gemini_cell(essay_blobs)
    [cell] = store.list_cells(run_id)
    # A blocked answer is stored with its reason and is unscored: never a miss.
    assert (outcome, cell["finish_reason"], cell["model_response"], cell["score"]) == (
        "answered",
        "SAFETY",
        "",
        None,
    )
    assert cell["outcome"] == "unscored" and "blocked" in cell["unscored_reason"]
    configure(url, input_limit=100)
    store, run_id, outcome = run_one_gemini_cell(essay_blobs, seed=1)
    [cell] = store.list_cells(run_id)
    assert outcome == "failed" and cell["score"] is None
    assert cell["error"]["kind"] == "cell" and "input limit" in cell["error"]["message"]


def test_thinking_tokens_are_billed_as_output_and_cached_input_at_its_rate(
    standin: tuple[str, StandinState], essay_blobs: Any
) -> None:
    url, _ = standin
    configure(url, thoughts_tokens=300, cached_tokens=1500)
    # The thoughts are spent first: the budget leaves room for the answer after them.
    store, run_id, _ = run_one_gemini_cell(essay_blobs, max_output_tokens=1000)
    [cell] = store.list_cells(run_id)
    usage = cell["usage"]
    assert usage["thoughts_token_count"] == 300
    assert usage["cached_content_token_count"] == 1500
    answer = usage["candidates_token_count"]
    assert usage["total_token_count"] == 2000 + answer + 300  # the API's total, as given
    assert cell["model_response"].startswith("The special magic")  # no thought text
    # gemini-2.5-flash: input 0.30, cached input 0.03, output 2.50 USD per 1M tokens.
    expected = (500 * 0.30 + 1500 * 0.03 + (answer + 300) * 2.50) / 1e6
    assert cell["cost_usd"] == pytest.approx(expected, rel=1e-9)
    assert cell["cost_without_cache_usd"] == pytest.approx(
        (2000 * 0.30 + (answer + 300) * 2.50) / 1e6, rel=1e-9
    )
    totals = store.get_run(run_id)["totals"]
    assert (totals["thinking_tokens"], totals["cached_tokens"]) == (300, 1500)
    assert totals["cost_usd"] == pytest.approx(expected, rel=1e-9)


def test_a_thinking_only_reply_is_truncated_and_its_thinking_is_paid_for(
    standin: tuple[str, StandinState], essay_blobs: Any
) -> None:
    url, _ = standin
    configure(url, thoughts_tokens=300, thinking_only=True)
    store, run_id, outcome = run_one_gemini_cell(essay_blobs)
    [cell] = store.list_cells(run_id)
    assert outcome == "answered" and cell["finish_reason"] == "MAX_TOKENS"
    assert (cell["outcome"], cell["score"], cell["model_response"]) == ("truncated", None, "")
    assert "after 300 thinking tokens" in cell["unscored_reason"]
    assert "lower thinking_budget" in cell["unscored_reason"]
    assert cell["cost_usd"] == pytest.approx((2000 * 0.30 + 300 * 2.50) / 1e6, rel=1e-9)


def test_a_blocked_prompt_keeps_the_apis_reason(
    standin: tuple[str, StandinState], essay_blobs: Any
) -> None:
    url, _ = standin
    configure(url, prompt_block="PROHIBITED_CONTENT")
    store, run_id, _ = run_one_gemini_cell(essay_blobs)
    [cell] = store.list_cells(run_id)
    assert cell["finish_reason"] == "PROMPT_BLOCKED:PROHIBITED_CONTENT"
    assert cell["outcome"] == "unscored"


def test_an_unpriced_model_costs_unknown_in_the_cell_the_run_and_the_report(
    standin: tuple[str, StandinState], essay_blobs: Any
) -> None:
    from niah.core.results.summary import summarize
    from niah.service.reports.png import heatmap_notes

    store, run_id, _ = run_one_gemini_cell(essay_blobs, model_name="gemini-9-ultra")
    [cell] = store.list_cells(run_id)
    assert cell["cost_usd"] is None
    run = store.get_run(run_id)
    assert run["totals"]["unpriced_cells"] == 1 and "cost_usd" not in run["totals"]
    summary = summarize(RunRecord.from_document(run | {"run_id": run_id}), store.list_cells(run_id))
    assert summary["cost_usd"] is None and summary["unpriced_cells"] == 1
    notes = heatmap_notes(summary, RunRecord.from_document(run, run_id))
    assert "cost unknown" in notes and "$0.0000" not in notes


def test_an_mrcr_conversation_goes_to_gemini_as_user_and_model_turns(
    standin: tuple[str, StandinState], essay_blobs: Any
) -> None:
    _, state = standin
    store, run_id, outcome = run_one_gemini_cell(
        essay_blobs, task="mrcr", num_needles=4, context_lengths=[8192]
    )
    assert outcome == "answered"
    [request] = [r for r in state.requests if r["kind"] == "generate"]
    contents = request["body"]["contents"]
    roles = [content["role"] for content in contents]
    assert roles == ["user", "model"] * (len(roles) // 2) + ["user"]
    assert len(roles) > 8 and contents[-1]["parts"][0]["text"].startswith("Prepend ")
    [cell] = store.list_cells(run_id)
    # The stand-in answers perfectly: the prefix, then the asked reply.
    assert (cell["outcome"], cell["task_score"]) == ("correct", 1.0)
    assert cell["planned_prompt_tokens"] == 8192  # the transcript's text, exact
    # The API's own count of the turns is stored beside it.
    assert cell["usage"]["prompt_token_count"] > 0
    run = store.get_run(run_id)
    budget = call_budget(RunRequest.model_validate(run["spec"]))
    # The task's answer room plus 2.5 Flash's dynamic thinking room (24,576).
    assert budget.thinking_tokens == 24_576
    assert run["call_settings"] == {
        "temperature": 0.0,
        "thinking_budget": None,
        "thinking_level": None,
        "max_output_tokens": budget.max_output_tokens,
        "answer_tokens": budget.answer_tokens,
        "thinking_tokens": budget.thinking_tokens,
        "tools": False,
        "execution": "online",
    }


def test_gemini_3_gets_its_thinking_level_and_googles_temperature(
    standin: tuple[str, StandinState], essay_blobs: Any
) -> None:
    _, state = standin
    store, run_id, _ = run_one_gemini_cell(
        essay_blobs, model_name="gemini-3.1-pro-preview", thinking_level="low"
    )
    [request] = [r for r in state.requests if r["kind"] == "generate"]
    config = request["body"]["generationConfig"]
    # The SDK writes the field as thinking_level; Vertex's JSON accepts either spelling.
    assert config["thinkingConfig"] in ({"thinkingLevel": "LOW"}, {"thinking_level": "LOW"})
    assert config["temperature"] == 1.0  # Google's advice for Gemini 3
    # Room to think at the level asked (8,192 for low) and still answer in full.
    spec = RunRequest(model_name="gemini-3.1-pro-preview", context_lengths=[2000])
    assert config["maxOutputTokens"] == answer_room(spec) + 8192
    run = store.get_run(run_id)
    assert run["call_settings"]["temperature"] == 1.0
    assert run["call_settings"]["thinking_level"] == "low"


def test_a_call_the_sdk_refuses_fails_the_cell_without_a_request(
    standin: tuple[str, StandinState],
) -> None:
    """Before: the SDK's ValueError went unclassified (a 500 on every delivery)."""
    _, state = standin
    with pytest.raises(PermanentCellError, match="the SDK refused the call: ValueError"):
        GeminiProvider("gemini-2.5-flash..").generate(PROMPT, max_output_tokens=50)
    assert len(state.requests) == 0


def test_the_implicit_cache_model_bills_a_shared_prefix_above_the_minimum(
    standin: tuple[str, StandinState],
) -> None:
    """Vertex: a prefix of at least 2,048 tokens seen recently is billed as cached."""
    url, _ = standin
    configure(url, implicit_cache=True, estimate_tokens=True)
    shared = "Shared haystack text. " * 1000  # 22,000 characters: 5,500 estimated tokens
    first = GeminiProvider("gemini-2.5-flash").generate(shared + "First.", max_output_tokens=50)
    second = GeminiProvider("gemini-2.5-flash").generate(shared + "Second.", max_output_tokens=50)
    assert first.cached_tokens in (None, 0)
    assert second.cached_tokens == len(shared) // 4  # up to the first difference
    short = GeminiProvider("gemini-2.5-flash").generate(
        "Shared haystack. Third.", max_output_tokens=50
    )
    assert short.cached_tokens in (None, 0)  # 4 tokens shared: under the minimum
    at_minimum = "m" * (2048 * 4)  # exactly 2,048 estimated tokens
    for tail in ("1", "2"):
        last = GeminiProvider("gemini-2.5-flash").generate(at_minimum + tail, max_output_tokens=9)
    assert last.cached_tokens == 2048
    below = "b" * (2047 * 4)
    for tail in ("1", "2"):
        last = GeminiProvider("gemini-2.5-flash").generate(below + tail, max_output_tokens=9)
    assert last.cached_tokens in (None, 0)
    configure(url, implicit_cache=True, estimate_tokens=True, cache_window_seconds=0)
    GeminiProvider("gemini-2.5-flash").generate(shared + "First.", max_output_tokens=50)
    time.sleep(0.05)
    again = GeminiProvider("gemini-2.5-flash").generate(shared + "Again.", max_output_tokens=50)
    assert again.cached_tokens in (None, 0)  # answered outside the window


@pytest.mark.parametrize(
    ("judge", "max_output", "thinking"),
    [
        ("gemini-2.5-flash", 256, 0),  # thinking off
        ("gemini-2.5-pro", 256 + 128, 128),  # cannot turn it off: its minimum, plus room
        # Gemini 3 cannot stop thinking: its least level, with that level's room (2,048).
        ("gemini-3-flash-preview", 256 + 2048, "MINIMAL"),
    ],
)
def test_the_judge_thinks_least_and_keeps_room_to_answer(
    standin: tuple[str, StandinState], judge: str, max_output: int, thinking: object
) -> None:
    """Before: 256 output tokens and default thinking; a thinking judge ran out of room."""
    from niah.core.results.scoring import judge_answer

    _, state = standin
    verdict = judge_answer(
        GeminiProvider(judge), question="Which number?", reference="7304912", answer="7304912"
    )
    assert verdict.score == 10
    config = state.requests[-1]["body"]["generationConfig"]
    assert config["maxOutputTokens"] == max_output
    assert list(config["thinkingConfig"].values()) == [thinking]


FILLER = [f"Essay sentence {i} is about gardens, rivers and old clocks." for i in range(60)]


def task_prompt(task_name: str, **options: Any) -> tuple[Any, Any, str]:
    """A real sample of ``task_name``, its insertions placed in filler text by depth."""
    from niah.core.prompts.texts import HARNESS_TEMPLATE, render
    from niah.core.request.grid import Cell
    from niah.core.request.spec import RunRequest
    from niah.tasks import get_task

    task = get_task(task_name)
    spec = RunRequest(
        task=task_name,
        model_name="gemini-2.5-flash",
        context_lengths=[4000],
        document_depth_percents=[50],
        **options,
    )
    sample = task.sample(spec, Cell(4000, 50.0))
    if sample.context_maker is not None:  # a generated context: RULER's lists, GraphWalks' graph
        from niah.core.prompts.generated_context import build_generated_prompt

        built = build_generated_prompt(
            get_tokenizer(),
            sample.context_maker,
            template=sample.template or HARNESS_TEMPLATE,
            question=sample.question,
            answer_lead=sample.answer_lead,
            context_length=4000,
        )
        return task, sample, built.prompt
    places = [round(len(FILLER) * i.depth_percent / 100) for i in sample.insertions]
    # Insertions at one place keep their order (MRCR: a needle turn, then the next turn).
    context = " ".join(
        piece
        for index, sentence in enumerate([*FILLER, ""])
        for piece in [
            *(i.text for i, place in zip(sample.insertions, places, strict=True) if place == index),
            sentence,
        ]
    )
    prompt = render(sample.template or HARNESS_TEMPLATE, context=context, question=sample.question)
    return task, sample, prompt


@pytest.mark.parametrize(
    ("task_name", "options"),
    [
        ("single", {}),
        ("multi_needle", {"num_needles": 8}),
        ("multi_key", {"num_distractors": 5}),
        ("multi_key", {"needle_value_type": "uuids"}),
        ("multi_value", {"num_values": 4}),
        ("multi_value", {"needle_value_type": "words"}),
        ("multi_query", {"num_queries": 4}),
        ("multi_query", {"needle_key_type": "uuids", "needle_value_type": "uuids"}),
        ("absent", {}),
        ("absent", {"needle_key_type": "numbers", "needle_value_type": "numbers"}),
        ("nonliteral", {}),
        ("mrcr", {"num_needles": 4}),
        ("variable_tracking", {}),
        ("variable_tracking", {"num_chains": 3, "num_hops": 6}),
        ("common_words", {}),
        ("common_words", {"freq_cw": 8, "freq_ucw": 2}),
        ("frequent_words", {}),
        ("graphwalks", {"bfs_depth": 3}),
        ("graphwalks", {"graph_problem": "parents"}),
    ],
)
def test_every_task_is_answered_right_by_default(
    standin: tuple[str, StandinState], task_name: str, options: dict[str, Any]
) -> None:
    from niah.core.prompts.texts import split_transcript

    task, sample, prompt = task_prompt(task_name, **options)
    turns = split_transcript(prompt) if sample.conversational else None
    answer = GeminiProvider("gemini-2.5-flash").generate(
        prompt, max_output_tokens=4000, turns=turns
    )
    assert answer.finish_reason == "STOP"
    verdict = task.score(sample, answer.text)
    assert (verdict.outcome, verdict.score) == ("correct", 1.0), answer.text
    # What a good model also avoids: a distractor's value, an invented one.
    assert not verdict.details.get("distractor_hit")
    assert not verdict.details.get("hallucinated")


def test_a_fixed_answer_is_still_the_wrong_answer_fault(standin: tuple[str, StandinState]) -> None:
    url, _ = standin
    configure(url, answer="The special magic number is: 0.")
    task, sample, prompt = task_prompt("multi_needle", num_needles=3)
    answer = GeminiProvider("gemini-2.5-flash").generate(prompt, max_output_tokens=4000)
    assert answer.text == "The special magic number is: 0."
    assert task.score(sample, answer.text).outcome == "wrong"


def test_an_unrecognised_prompt_is_unanswerable(standin: tuple[str, StandinState]) -> None:
    answer = GeminiProvider("gemini-2.5-flash").generate("Tell me a joke.", max_output_tokens=900)
    assert answer.text == "UNANSWERABLE"


LAGOS_ANSWER = "The special magic Lagos number is: 7304912."


def test_2_5_pro_thinks_first_and_answers_with_what_is_left(
    standin: tuple[str, StandinState],
) -> None:
    """Vertex spends maxOutputTokens on thoughts first; the answer gets the rest."""
    ids = get_tokenizer().encode(LAGOS_ANSWER)
    prompt_tokens = len(get_tokenizer().encode(PROMPT))
    pro = GeminiProvider("gemini-2.5-pro")
    whole = pro.generate(PROMPT, max_output_tokens=1000 + len(ids))
    assert (whole.text, whole.finish_reason) == (LAGOS_ANSWER, "STOP")
    assert (whole.thinking_tokens, whole.output_tokens) == (1000, len(ids))
    assert whole.total_tokens == prompt_tokens + 1000 + len(ids)

    thought_only = pro.generate(PROMPT, max_output_tokens=1000)
    assert (thought_only.text, thought_only.finish_reason) == ("", "MAX_TOKENS")
    assert (thought_only.thinking_tokens, thought_only.output_tokens) == (1000, None)
    assert thought_only.total_tokens == prompt_tokens + 1000

    kept = len(ids) // 2
    cut = pro.generate(PROMPT, max_output_tokens=1000 + kept)
    assert cut.finish_reason == "MAX_TOKENS"
    assert (cut.thinking_tokens, cut.output_tokens) == (1000, kept)
    assert cut.text == get_tokenizer().decode(ids[:kept])
    assert cut.total_tokens == prompt_tokens + 1000 + kept


def test_thinking_below_the_budget_never_exceeds_it(standin: tuple[str, StandinState]) -> None:
    """A budget smaller than the default thinking: thoughts are billed up to the cap only."""
    answer = GeminiProvider("gemini-2.5-flash").generate(PROMPT, max_output_tokens=300)
    assert (answer.text, answer.finish_reason) == ("", "MAX_TOKENS")
    assert (answer.thinking_tokens, answer.output_tokens) == (300, None)


def test_2_5_pro_refuses_a_budget_of_0_as_vertex_does(standin: tuple[str, StandinState]) -> None:
    url, state = standin
    with pytest.raises((PermanentCellError, PermanentRunError), match="Budget 0 is invalid"):
        GeminiProvider("gemini-2.5-pro").generate(PROMPT, max_output_tokens=300, thinking_budget=0)
    assert len(state.requests) == 1  # a 400 is not retried
    reply = requests.post(
        f"{url}/v1/projects/p/locations/global/publishers/google/models/gemini-2.5-pro:generateContent",
        json={
            "contents": [{"role": "user", "parts": [{"text": PROMPT}]}],
            "generationConfig": {"thinkingConfig": {"thinkingBudget": 0}},
        },
        timeout=5,
    )
    assert reply.status_code == 400
    assert reply.json()["error"] == {
        "code": 400,
        "message": "Budget 0 is invalid. This model only works in thinking mode.",
        "status": "INVALID_ARGUMENT",
    }


@pytest.mark.parametrize(
    ("model", "thinking", "thoughts"),
    [
        ("gemini-2.5-flash", {}, 500),
        ("gemini-2.5-flash", {"thinking_budget": 0}, None),
        ("gemini-2.5-flash", {"thinking_budget": 120}, 120),  # a budget caps thinking
        ("gemini-2.5-flash", {"thinking_budget": -1}, 500),  # dynamic: the default
        ("gemini-2.5-pro", {"thinking_budget": 128}, 128),
        ("gemini-2.5-pro", {"thinking_budget": 5000}, 1000),  # a cap, not a target
        ("gemini-2.5-flash-lite", {}, None),  # thinks only when asked
        ("gemini-2.5-flash-lite", {"thinking_budget": 512}, 500),
        ("gemini-2.0-flash", {}, None),
        ("gemini-3.5-flash", {}, 500),  # MEDIUM by default
        ("gemini-3.1-pro-preview", {}, 1000),  # HIGH by default
        ("gemini-3.1-flash-lite", {}, None),  # MINIMAL by default
        ("gemini-3-pro-preview", {}, 1000),  # other Gemini 3: HIGH
        ("gemini-3-flash-preview", {"thinking_level": "low"}, 200),
        ("gemini-3-flash-preview", {"thinking_level": "minimal"}, None),
        ("gemini-3.8-flash", {}, 500),  # MEDIUM by default, not Gemini 3's HIGH
        ("gemini-4-argon", {}, 500),  # MEDIUM by default
        ("gemini-4-carbon-cyber-permissive", {}, 1000),  # HIGH, unlike Carbon
        ("gemini-4-hydrogen", {}, 1000),  # HIGH by default
        ("gemini-4-neon", {"thinking_level": "xhigh"}, 2000),
    ],
)
def test_each_model_thinks_as_its_family_does(
    standin: tuple[str, StandinState], model: str, thinking: dict[str, Any], thoughts: int | None
) -> None:
    answer = GeminiProvider(model).generate(PROMPT, max_output_tokens=4000, **thinking)
    assert answer.thinking_tokens == thoughts
    assert (answer.text, answer.finish_reason) == (LAGOS_ANSWER, "STOP")


def test_a_budget_with_a_level_is_refused(standin: tuple[str, StandinState]) -> None:
    url, _ = standin
    reply = requests.post(
        f"{url}/v1/projects/p/locations/global/publishers/google/models/gemini-3-pro-preview:generateContent",
        json={
            "contents": [{"role": "user", "parts": [{"text": PROMPT}]}],
            "generationConfig": {"thinkingConfig": {"thinkingBudget": 100, "thinkingLevel": "LOW"}},
        },
        timeout=5,
    )
    assert reply.status_code == 400 and "together" in reply.json()["error"]["message"]


def generate_status(url: str, model: str, generation: dict[str, Any]) -> requests.Response:
    return requests.post(
        f"{url}/v1/projects/p/locations/global/publishers/google/models/{model}:generateContent",
        json={"contents": [{"role": "user", "parts": [{"text": PROMPT}]}], **generation},
        timeout=5,
    )


@pytest.mark.parametrize(
    ("model", "level"),
    [
        ("gemini-3.8-flash", "MINIMAL"),
        ("gemini-3.7-flash", "MINIMAL"),
        ("gemini-4-argon", "XHIGH"),
        ("gemini-4-hydrogen", "MINIMAL"),
        ("gemini-3.1-pro-preview", "MINIMAL"),
    ],
)
def test_a_level_the_model_does_not_take_is_refused_in_vertexs_words(
    standin: tuple[str, StandinState], model: str, level: str
) -> None:
    url, _ = standin
    reply = generate_status(
        url, model, {"generationConfig": {"thinkingConfig": {"thinkingLevel": level}}}
    )
    assert (reply.status_code, reply.json()["error"]) == (
        400,
        {
            "code": 400,
            "message": f"Thinking level is unsupported: THINKING_LEVEL_{level}",
            "status": "INVALID_ARGUMENT",
        },
    )


def test_gemini_4_prompt_and_output_share_one_limit(standin: tuple[str, StandinState]) -> None:
    """Prompt + maxOutputTokens over the shared limit is a 400; within it, an answer."""
    url, _ = standin
    prompt_tokens = len(get_tokenizer().encode(PROMPT))
    configure(url, shared_limits={"gemini-4": prompt_tokens + 2_000})
    fits = {"generationConfig": {"maxOutputTokens": 2_000}}
    over = {"generationConfig": {"maxOutputTokens": 2_001}}
    assert generate_status(url, "gemini-4-neon", fits).status_code == 200
    reply = generate_status(url, "gemini-4-neon", over)
    assert (reply.status_code, reply.json()["error"]["message"]) == (
        400,
        f"The input token count ({prompt_tokens}) plus max_output_tokens (2001) exceeds "
        f"the maximum number of tokens allowed ({prompt_tokens + 2_000}).",
    )
    # Only Gemini 4 shares it; unset maxOutputTokens is not checked against it.
    assert generate_status(url, "gemini-3.8-flash", over).status_code == 200
    assert generate_status(url, "gemini-4-neon", {}).status_code == 200
    # The real limit: 1,048,576.
    configure(url)
    big = {"generationConfig": {"maxOutputTokens": 1_048_576 - prompt_tokens + 1}}
    assert generate_status(url, "gemini-4-argon", big).status_code == 400


def test_retired_models_are_404_when_asked(standin: tuple[str, StandinState]) -> None:
    """Off by default (tests still call 2.5 for its budgets); on, Vertex's 404."""
    url, _ = standin
    assert generate_status(url, "gemini-2.5-flash", {}).status_code == 200
    configure(url, retired_404=True)
    for model in ("gemini-2.5-flash", "gemini-2.0-flash-001", "gemini-3-pro-preview"):
        assert generate_status(url, model, {}).status_code == 404
    assert generate_status(url, "gemini-3.8-flash", {}).status_code == 200
    configure(url, retired_404=True, retired={"gemini-3.8-flash": "2999-01-01"})
    assert generate_status(url, "gemini-3.8-flash", {}).status_code == 200


def test_the_thinking_table_is_configurable_and_merged(standin: tuple[str, StandinState]) -> None:
    url, _ = standin
    configure(
        url,
        thinking={"gemini-2.5-flash": 40},
        thinking_levels={"HIGH": 70},
        level_models={"gemini-3.8-flash": {"levels": ["LOW", "HIGH"], "default": "HIGH"}},
    )
    assert (
        GeminiProvider("gemini-2.5-flash").generate(PROMPT, max_output_tokens=900).thinking_tokens
        == 40
    )
    # The rest of the table stays as it was.
    assert (
        GeminiProvider("gemini-2.5-pro").generate(PROMPT, max_output_tokens=4000).thinking_tokens
        == 1000
    )
    assert (
        GeminiProvider("gemini-3-pro-preview")
        .generate(PROMPT, max_output_tokens=900)
        .thinking_tokens
        == 70
    )
    assert (
        GeminiProvider("gemini-3.8-flash").generate(PROMPT, max_output_tokens=900).thinking_tokens
        == 70
    )
    # The old override wins over the table, whatever the model.
    configure(url, thoughts_tokens=7)
    assert (
        GeminiProvider("gemini-2.5-pro").generate(PROMPT, max_output_tokens=900).thinking_tokens
        == 7
    )


def test_an_openai_style_answer_cut_by_its_budget_ends_with_length(
    standin: tuple[str, StandinState],
) -> None:
    answer = OpenAICompatibleProvider("llama-3.1-8b").generate(PROMPT, max_output_tokens=3)
    assert answer.finish_reason == "length"
    assert answer.text == get_tokenizer().decode(get_tokenizer().encode(LAGOS_ANSWER)[:3])


def test_the_implicit_cache_default_survives_a_reset() -> None:
    """The local stack starts the stand-in with the cache on; tests' resets keep it on."""
    server, state = serve(0, implicit_cache=True)
    try:
        configure(f"http://127.0.0.1:{server.server_port}", latency_seconds=0.0)
        assert state.config["implicit_cache"] is True
        configure(f"http://127.0.0.1:{server.server_port}", implicit_cache=False)
        assert state.config["implicit_cache"] is False
    finally:
        server.shutdown()
    server, state = serve(0)
    server.shutdown()
    assert state.config["implicit_cache"] is False  # an in-test stand-in: off unless asked


def test_a_gemini_2_5_flash_cell_at_the_services_defaults_is_answered(
    standin: tuple[str, StandinState], essay_blobs: Any
) -> None:
    store, run_id, _ = run_one_gemini_cell(essay_blobs)
    [cell] = store.list_cells(run_id)
    assert (cell["finish_reason"], cell["outcome"]) == ("STOP", "correct")


@pytest.mark.parametrize(
    ("model", "thoughts"),
    [
        ("gemini-2.5-pro", 1_000),
        ("gemini-2.5-flash", 500),
        ("gemini-3.8-flash", 500),  # its default level, medium
        ("gemini-4-neon", 1_000),  # its default level, high
    ],
)
def test_a_thinking_model_answers_in_full_with_the_default_budget(
    standin: tuple[str, StandinState], essay_blobs: Any, model: str, thoughts: int
) -> None:
    """The default budget leaves room for the model's thinking and the whole answer.

    2.5 Pro always thinks (1,000 tokens on the stand-in). Before: 300 tokens, and a call
    that ended MAX_TOKENS unanswered.
    """
    _, state = standin
    store, run_id, _ = run_one_gemini_cell(essay_blobs, model_name=model)
    [cell] = store.list_cells(run_id)
    assert (cell["finish_reason"], cell["outcome"], cell["score"]) == ("STOP", "correct", 10)
    assert cell["usage"]["thoughts_token_count"] == thoughts
    [request] = [r for r in state.requests if r["kind"] == "generate"]
    sent = request["body"]["generationConfig"]["maxOutputTokens"]
    spec = RunRequest(model_name=model, context_lengths=[2000], document_depth_percents=[50])
    assert sent == call_budget(spec).max_output_tokens == cell["max_output_tokens"]
    assert "thinkingConfig" not in request["body"]["generationConfig"]  # the model's default


def test_a_model_that_counts_otherwise_counts_so_everywhere(
    standin: tuple[str, StandinState],
) -> None:
    """token_count_ratio: countTokens, promptTokenCount and the input limit agree."""
    url, _ = standin
    configure(url, token_count_ratio=1.05, input_limit=20)
    ours = len(get_tokenizer().encode(PROMPT))
    theirs = int(ours * 1.05 + 0.5)
    provider = GeminiProvider("gemini-3.8-flash")
    assert provider.count_tokens(PROMPT) == theirs != ours
    with pytest.raises(PermanentCellError, match=rf"input token count \({theirs}\)"):
        provider.generate(PROMPT, max_output_tokens=2000)
    configure(url, token_count_ratio=1.05)
    assert provider.generate(PROMPT, max_output_tokens=2000).prompt_tokens == theirs


def test_a_gemini_cell_is_fitted_to_the_models_count_of_its_haystack(
    standin: tuple[str, StandinState], essay_blobs: Any
) -> None:
    url, state = standin
    configure(url, token_count_ratio=1.05)
    store, run_id, outcome = run_one_gemini_cell(essay_blobs, model_name="gemini-3.8-flash")
    assert outcome == "answered"
    recorded = store.get_run(run_id)["token_count"]
    # One count of the sample; gemini-3.8-flash's tokenizer is not ours (google-genai
    # maps it to none), so its cell is counted too: the worker's first cell of its kind
    # fits a probe (no needle, no question) at the sample's ratio, then the cell from the
    # probe's length, each once at this constant ratio.
    [sample, probe, counted_cell] = [r for r in state.requests if r["kind"] == "count"]
    sent = next(r for r in state.requests if r["kind"] == "generate")["body"]["contents"]
    assert counted_cell["body"]["contents"] == sent != probe["body"]["contents"]
    local, model = recorded["local_tokens"], recorded["model_tokens"]
    sample_text = sample["body"]["contents"][0]["parts"][0]["text"]
    assert len(get_tokenizer().encode(sample_text)) == local
    assert model == int(local * 1.05 + 0.5) and round(recorded["deviation_percent"], 1) == 5.0
    assert recorded["sample"] == f"the haystack's first 2,000 tokens ({local:,} local tokens)"
    [cell] = store.list_cells(run_id)
    assert cell["planned_prompt_tokens"] == 2000 * local // model  # the local count, exact
    assert cell["fitted_prompt_tokens"] == 2000
    counted = cell["usage"]["prompt_token_count"]
    assert counted == int(cell["planned_prompt_tokens"] * 1.05 + 0.5)
    assert 1999 <= counted <= 2000 and cell["prompt_token_deviation"] == counted - 2000
    assert round(cell["token_count_deviation_percent"], 1) == 5.0
    assert cell["counted_prompt_tokens"] == counted and cell["fit_rounds"] == 1
