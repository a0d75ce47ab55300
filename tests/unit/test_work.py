import re
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from niah.catalog.models import ProviderName
from niah.core.interfaces import Provider
from niah.core.results.summary import spend_summary
from niah.errors import PermanentCellError, RetryableError, StoreUnavailableError
from niah.models.tokenizer import get_tokenizer
from niah.service.cells.worker import process_cell
from niah.service.messages import CellTask
from niah.service.runs.dispatch import dispatch_run
from niah.settings import get_settings
from tests.fake_store import MemoryStore
from tests.fakes import MemoryBlobs, RecordingPublisher, ScriptedProvider


def echo_needle_number(prompt: str) -> str:
    """A model that finds the needle's number by reading the prompt."""
    match = re.search(r"special magic \w[\w ]* number is: (\d+)\.", prompt)
    return f" {match.group(1)}." if match else " I don't know."


def dispatch_task(essay_blobs: MemoryBlobs, **options: Any) -> dict[str, Any]:
    store, publisher = MemoryStore(), RecordingPublisher()
    result = dispatch_run(
        {"context_lengths": [600], "document_depth_percents": [50]} | options,
        store=store,
        publisher=publisher,
        blobs=essay_blobs,
    )
    return {
        "store": store,
        "publisher": publisher,
        "blobs": essay_blobs,
        "run_id": result.run_id,
        "tasks": [CellTask.from_message(m) for m in publisher.cells],
    }


@pytest.fixture
def world(essay_blobs: MemoryBlobs) -> dict[str, Any]:
    return dispatch_task(essay_blobs, context_lengths=[300, 600], document_depth_percents=[0, 100])


def run_cell(
    world: dict[str, Any],
    task: CellTask,
    provider: Provider,
    *,
    provider_for: Callable[[ProviderName, str], Provider] | None = None,
) -> str:
    """Deliver ``task`` to the worker, answered by ``provider`` (or ``provider_for``'s)."""

    def always(kind: ProviderName, name: str) -> Provider:
        return provider

    return process_cell(
        task,
        store=world["store"],
        blobs=world["blobs"],
        publisher=world["publisher"],
        provider_for=provider_for or always,
        tokenizer_for=get_tokenizer,
    )


def test_every_cell_is_answered_scored_and_the_report_requested_once(world: dict[str, Any]) -> None:
    provider = ScriptedProvider(echo_needle_number)
    outcomes = [run_cell(world, task, provider) for task in world["tasks"]]
    assert outcomes == ["answered"] * 4
    run = world["store"].get_run(world["run_id"])
    assert (run["done"], run["failed"], run["total"]) == (4, 0, 4)
    cells = world["store"].list_cells(world["run_id"])
    assert all(cell["score"] == 10 and cell["expected_answer"] in cell["needle"] for cell in cells)
    assert world["publisher"].reports == [world["run_id"]]


def test_redelivery_does_not_call_the_model_nor_count_twice(world: dict[str, Any]) -> None:
    provider = ScriptedProvider(echo_needle_number)
    task = world["tasks"][0]
    assert run_cell(world, task, provider) == "answered"
    assert run_cell(world, task, provider) == "duplicate"
    assert len(provider.prompts) == 1
    assert world["store"].get_run(world["run_id"])["done"] == 1


def test_permanent_errors_are_stored_and_retryable_ones_raise(world: dict[str, Any]) -> None:
    def too_long(prompt: str) -> str:
        raise PermanentCellError("input over the model's limit")

    def busy(prompt: str) -> str:
        raise RetryableError("429 RESOURCE_EXHAUSTED")

    first, second = world["tasks"][:2]
    assert run_cell(world, first, ScriptedProvider(too_long)) == "failed"
    stored = world["store"].list_cells(world["run_id"])[0]
    assert stored["error"]["message"] == "input over the model's limit"
    assert stored["score"] is None
    with pytest.raises(RetryableError):
        run_cell(world, second, ScriptedProvider(busy))
    assert second.cell_id not in world["store"].cells[world["run_id"]]
    run = world["store"].get_run(world["run_id"])
    assert (run["done"], run["failed"]) == (0, 1)


def test_a_context_too_short_at_the_worker_is_a_grey_cell_not_a_crash(
    world: dict[str, Any],
) -> None:
    # The dispatcher refuses lengths below the prompt's size by an estimate (a token per
    # 3 characters); digits are a token each, so this template slips through it.
    digits = "7" * 2000
    short = dispatch_task(
        world["blobs"], context_lengths=[1000], prompt_template="{context}" + digits + "{question}"
    )
    [task] = short["tasks"]
    outcome = run_cell(short, task, ScriptedProvider(echo_needle_number))
    assert outcome == "failed"
    [cell] = short["store"].list_cells(short["run_id"])
    assert "below the prompt's own size" in cell["error"]["message"]


def test_a_dead_lettered_cell_is_recorded_failed_with_its_last_error(
    world: dict[str, Any],
) -> None:
    from niah.service.cells.worker import record_dead_letter

    def busy(prompt: str) -> str:
        raise RetryableError("503 UNAVAILABLE: overloaded")

    first, second = world["tasks"][:2]
    with pytest.raises(RetryableError):
        run_cell(world, first, ScriptedProvider(busy))
    last_round = get_settings().dead_letter_republishes  # published again that often
    dead = CellTask(
        first.run_id,
        first.cell_id,
        first.context_length,
        first.depth_percent,
        5,
        dead_letters=last_round,
    )
    assert (
        record_dead_letter(
            dead, store=world["store"], publisher=world["publisher"], blobs=world["blobs"]
        )
        == "failed"
    )
    cell = world["store"].list_cells(world["run_id"])[0]
    assert cell["error"]["kind"] == "dead_letter"
    assert "503 UNAVAILABLE" in cell["error"]["message"]
    # A late success wins over a dead letter, and a dead letter never counts twice.
    assert run_cell(world, second, ScriptedProvider(echo_needle_number)) == "answered"
    assert record_dead_letter(
        replace(second, dead_letters=last_round),
        store=world["store"],
        publisher=world["publisher"],
        blobs=world["blobs"],
    ) == ("duplicate")
    assert record_dead_letter(
        dead, store=world["store"], publisher=world["publisher"], blobs=world["blobs"]
    ) == ("duplicate")
    run = world["store"].get_run(world["run_id"])
    assert (run["done"], run["failed"]) == (1, 1)


def test_a_cell_that_keeps_failing_is_given_up_after_the_limit(world: dict[str, Any]) -> None:
    def busy(prompt: str) -> str:
        raise RetryableError("429 RESOURCE_EXHAUSTED")

    task = world["tasks"][0]
    for _ in range(4):  # the default limit is 5 failed attempts
        with pytest.raises(RetryableError):
            run_cell(world, task, ScriptedProvider(busy))
    assert run_cell(world, task, ScriptedProvider(busy)) == "failed"
    [cell] = world["store"].list_cells(world["run_id"])
    assert cell["error"]["kind"] == "retries_exhausted"
    assert "gave up after 5 failed attempts" in cell["error"]["message"]


def test_a_failing_judge_keeps_the_paid_answer_and_does_not_redeliver(
    essay_blobs: MemoryBlobs,
) -> None:
    store, publisher = MemoryStore(), RecordingPublisher()
    result = dispatch_run(
        {
            "context_lengths": [1000],
            "document_depth_percents": [50],
            "scorer": "both",
            "evaluator_model_name": "gemini-3.8-flash",
        },
        store=store,
        publisher=publisher,
        blobs=essay_blobs,
    )
    model = ScriptedProvider(echo_needle_number)

    def judge_busy(prompt: str) -> str:
        raise RetryableError("429 RESOURCE_EXHAUSTED")

    judge = ScriptedProvider(judge_busy)

    def provider_for(kind: ProviderName, name: str) -> Provider:
        return judge if judge.prompts or model.prompts else model

    task = CellTask.from_message(publisher.cells[0])
    outcome = process_cell(
        task,
        store=store,
        blobs=essay_blobs,
        publisher=publisher,
        provider_for=provider_for,
        tokenizer_for=get_tokenizer,
    )
    assert outcome == "answered"
    assert len(model.prompts) == 1 and len(judge.prompts) == 1
    [cell] = store.list_cells(result.run_id)
    assert cell["exact_score"] == 10 and cell["score"] == 10
    assert cell["judge_score"] is None and "429" in cell["judge_error"]


def test_a_task_cell_stores_the_tasks_outcome_score_and_details(essay_blobs: MemoryBlobs) -> None:
    world = dispatch_task(essay_blobs, task="multi_key", num_distractors=2, samples_per_cell=2)
    assert [t.cell_id for t in world["tasks"]] == ["L00000600-D050000", "L00000600-D050000-S001"]

    def a_distractors_value(prompt: str) -> str:
        values = re.findall(r"special magic numbers for [\w-]+ is: (\d+)\.", prompt)
        asked = re.search(r"magic number for ([\w-]+) mentioned", prompt)
        assert asked is not None and len(values) == 3
        keyed = dict(re.findall(r"numbers for ([\w-]+) is: (\d+)\.", prompt))
        return next(v for k, v in keyed.items() if k != asked.group(1))

    provider = ScriptedProvider(a_distractors_value)
    assert [run_cell(world, task, provider) for task in world["tasks"]] == ["answered"] * 2
    cells = world["store"].list_cells(world["run_id"])
    assert [c["sample"] for c in cells] == [0, 1]
    for cell in cells:
        assert (cell["task"], cell["outcome"], cell["task_score"], cell["score"]) == (
            "multi_key",
            "wrong",
            0.0,
            0.0,
        )
        assert cell["task_details"]["distractor_hit"] is True
    assert cells[0]["needle"] != cells[1]["needle"]  # each sample its own needles


class OutOfBudget(ScriptedProvider):
    """A model that ran out of its output budget: what it wrote so far, cut off.

    ``ran_on``: it wrote its answer, then counted on until every token of its budget
    was spent (all the room an answer takes, and more); else it wrote 7 tokens.
    """

    ran_on = False

    def generate(
        self,
        prompt: str,
        *,
        max_output_tokens: int,
        thinking_budget: int | None = None,
        thinking_level: str | None = None,
        turns: tuple[tuple[str, str], ...] | None = None,
        tier: str | None = None,
    ):
        from niah.core.interfaces import ModelAnswer

        self.prompts.append(prompt)
        if self.ran_on:
            text = self._answer(prompt) + ", 1000001, 1000002, 1000003, 1000004, 1000005"
            return ModelAnswer(text, "length", 600, max_output_tokens, 0.0)
        return ModelAnswer(self._answer(prompt), "MAX_TOKENS", 600, 7, 0.0)


class RanOn(OutOfBudget):
    """A base model that listed what it listed, then ran on to the end of its budget."""

    ran_on = True


@pytest.mark.parametrize(("listed", "outcome", "share"), [(4, "correct", 1.0), (1, "wrong", 0.25)])
def test_an_answer_that_ran_on_past_its_room_is_scored_as_it_stands(
    essay_blobs: MemoryBlobs, listed: int, outcome: str, share: float
) -> None:
    """As RULER scores a reply as generated: the values it listed before running on count."""
    world = dispatch_task(essay_blobs, task="multi_value")
    [task] = world["tasks"]

    def some_values(prompt: str) -> str:
        values = re.findall(r"special magic numbers for [\w-]+ is: (\d+)\.", prompt)
        assert len(values) == 4
        return "The special magic numbers are " + ", ".join(values[:listed])

    assert run_cell(world, task, RanOn(some_values)) == "answered"
    [cell] = world["store"].list_cells(world["run_id"])
    assert (cell["outcome"], cell["task_score"]) == (outcome, share)
    assert "ran on past that room" in cell["ran_on"] and "unscored_reason" not in cell


@pytest.mark.parametrize("text", ["", "The special magic numbers are 1448800, 8231026, 82310"])
def test_an_answer_cut_off_by_its_budget_is_stored_truncated_never_wrong(
    essay_blobs: MemoryBlobs, text: str
) -> None:
    for options in ({}, {"task": "multi_needle"}):
        world = dispatch_task(essay_blobs, **options)
        [task] = world["tasks"]
        assert run_cell(world, task, OutOfBudget(lambda p, text=text: text)) == "answered"
        [cell] = world["store"].list_cells(world["run_id"])
        assert cell["outcome"] == "truncated" and cell["score"] is None
        assert "cut off at the output budget" in cell["unscored_reason"]
        assert "exact_score" not in cell and "task_score" not in cell


def test_a_second_delivery_while_the_first_is_calling_makes_no_call(
    world: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second delivery watches the lease until its holder renews it, then backs off."""
    from niah.errors import CellInFlightError

    monkeypatch.setenv("NIAH_CELL_LEASE_SECONDS", "1")  # renewed every third of a second
    get_settings.cache_clear()
    task = world["tasks"][0]
    calls: list[str] = []

    def answer_while_redelivered(prompt: str) -> str:
        calls.append(prompt)
        # The same message arrives again while this call is in flight.
        with pytest.raises(CellInFlightError):
            run_cell(world, task, ScriptedProvider(echo_needle_number))
        return echo_needle_number(prompt)

    assert run_cell(world, task, ScriptedProvider(answer_while_redelivered)) == "answered"
    assert len(calls) == 1
    assert run_cell(world, task, ScriptedProvider(echo_needle_number)) == "duplicate"
    assert world["store"].get_run(world["run_id"])["done"] == 1


def test_a_retryable_failure_frees_the_lease_and_a_dead_workers_lease_expires(
    world: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = world["tasks"][:2]

    def busy(prompt: str) -> str:
        raise RetryableError("429 RESOURCE_EXHAUSTED")

    with pytest.raises(RetryableError):
        run_cell(world, first, ScriptedProvider(busy))
    assert run_cell(world, first, ScriptedProvider(echo_needle_number)) == "answered"
    # A worker that died mid-call never released its lease: it holds until it expires.
    store = world["store"]
    assert store.claim_cell(world["run_id"], second.cell_id, lease_seconds=0.05)
    assert second.cell_id in store.leased_cells(world["run_id"])
    time.sleep(0.1)
    assert run_cell(world, second, ScriptedProvider(echo_needle_number)) == "answered"


def test_a_client_retry_does_not_publish_cells_in_flight(world: dict[str, Any]) -> None:
    store, publisher = world["store"], world["publisher"]
    in_flight = world["tasks"][1]
    assert store.claim_cell(world["run_id"], in_flight.cell_id, lease_seconds=60)
    publisher.cells.clear()
    store.settle(world["run_id"])  # past the dispatch's own settling time
    dispatch_run(
        {"context_lengths": [300, 600], "document_depth_percents": [0, 100]},
        store=store,
        publisher=publisher,
        blobs=world["blobs"],
    )
    republished = {m["cell_id"] for m in publisher.cells}
    assert in_flight.cell_id not in republished and len(republished) == 3


def test_an_answer_too_large_for_firestore_is_kept_whole_in_the_bucket(
    world: dict[str, Any],
) -> None:
    from niah.service.cells.scoring import MAX_STORED_ANSWER_BYTES

    huge = "7" * (1_100_000)  # over Firestore's 1 MiB document limit
    provider = ScriptedProvider(lambda prompt: huge)
    task = world["tasks"][0]
    assert run_cell(world, task, provider) == "answered"
    [cell] = [c for c in world["store"].list_cells(world["run_id"]) if c["cell_id"] == task.cell_id]
    assert cell["model_response_truncated"] is True
    assert len(cell["model_response"].encode()) == MAX_STORED_ANSWER_BYTES
    name = cell["model_response_uri"].split("/", 3)[3]
    assert world["blobs"].read(name).decode() == huge
    assert len(provider.prompts) == 1


@pytest.mark.parametrize(
    "forged",
    [
        {"context_length": 450},  # off the grid, with a matching ID
        {"depth_percent": float("nan")},
        {"cell_id": "L00000300-D000000-evil"},
        {"sample": 3},  # the run has one sample per cell
        {"source_file": "gs://elsewhere/x.csv", "row": 0},
        {"variant": "d9"},  # the run has no axis: no forged count of distractors
    ],
)
def test_a_message_that_is_not_a_cell_of_its_run_is_rejected_without_a_call(
    world: dict[str, Any], forged: dict[str, Any]
) -> None:
    from niah.core.request.grid import Cell

    message = {
        "run_id": world["run_id"],
        "cell_id": "L00000300-D000000",
        "context_length": 300,
        "depth_percent": 0.0,
        "sample": 0,
    } | forged
    if "cell_id" not in forged and "depth_percent" not in forged:
        message["cell_id"] = Cell(
            message["context_length"],
            message["depth_percent"],
            message["sample"],
            message.get("variant", ""),
        ).cell_id
    provider = ScriptedProvider(echo_needle_number)
    assert run_cell(world, CellTask.from_message(message), provider) == "rejected"
    assert provider.prompts == []
    assert world["store"].list_cells(world["run_id"]) == []


def judged_cell(
    world: dict[str, Any], model: ScriptedProvider, judge: ScriptedProvider
) -> dict[str, Any]:
    """The one cell of ``world``, answered by ``model`` and then graded by ``judge``."""

    def provider_for(kind: ProviderName, name: str) -> Provider:
        return judge if model.prompts else model

    [task] = world["tasks"]
    process_cell(
        task,
        store=world["store"],
        blobs=world["blobs"],
        publisher=world["publisher"],
        provider_for=provider_for,
        tokenizer_for=get_tokenizer,
    )
    [cell] = world["store"].list_cells(world["run_id"])
    return cell


def test_a_judge_that_gives_no_score_leaves_the_sample_unscored_saying_why(
    essay_blobs: MemoryBlobs,
) -> None:
    world = dispatch_task(
        essay_blobs, scorer="judge", evaluator_model_name="gemini-3.8-flash", context_lengths=[1000]
    )
    model = ScriptedProvider(echo_needle_number)
    judge = ScriptedProvider(lambda prompt: "Looks fine to me.")
    cell = judged_cell(world, model, judge)
    assert (cell["outcome"], cell["score"], cell["judge_score"]) == ("unscored", None, None)
    assert "the judge's reply held no score" in cell["unscored_reason"]
    assert "Looks fine to me." in cell["judge_error"]


def test_the_judge_grades_the_users_own_needles_against_all_of_them_on_the_tasks_scale(
    essay_blobs: MemoryBlobs,
) -> None:
    needles = ["Figs are in the perfect pizza.", "Prosciutto is in the perfect pizza."]
    world = dispatch_task(
        essay_blobs,
        task="multi_needle",
        needles=needles,
        retrieval_question="What is in the perfect pizza?",
        scorer="judge",
        evaluator_model_name="gemini-3.8-flash",
        context_lengths=[1000],
    )
    model = ScriptedProvider(lambda prompt: "Figs and prosciutto.")
    judge = ScriptedProvider(lambda prompt: "Score: 8\nBoth named.")
    cell = judged_cell(world, model, judge)
    assert all(needle in model.prompts[0] for needle in needles)
    [judged] = judge.prompts
    assert all(needle in judged for needle in needles)  # the reference is every needle
    assert "What is in the perfect pizza?" in judged
    assert (cell["scorer"], cell["judge_score"], cell["outcome"]) == ("judge", 8, "correct")
    # The heatmap of multi_needle shows fractions: 8 on 1-10 is 7/9.
    assert (cell["score"], cell["task_score"]) == (round(7 / 9, 6), pytest.approx(7 / 9))


def test_an_answer_the_store_refuses_is_kept_and_stored_without_a_second_call(
    world: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: a store failure after the call lost the paid answer; every delivery paid again."""
    store, task = world["store"], world["tasks"][0]
    provider = ScriptedProvider(echo_needle_number)
    real_record = store.record_cell

    def frozen(*args: Any, **kwargs: Any) -> bool:
        raise StoreUnavailableError("DeadlineExceeded: 504 commit timed out")

    monkeypatch.setattr(store, "record_cell", frozen)
    with pytest.raises(RetryableError, match="its answer is kept at gs://"):
        run_cell(world, task, provider)
    monkeypatch.setattr(store, "record_cell", real_record)
    # The redelivery finds the lease still held (never released) and the kept answer.
    assert run_cell(world, task, provider) == "answered"
    assert len(provider.prompts) == 1
    (cell,) = store.list_cells(world["run_id"])
    assert cell["score"] == 10 and store.get_run(world["run_id"])["done"] == 1
    (call,) = store.list_calls(world["run_id"])
    assert call["status"] == "answered" and call["call_id"] == f"{task.cell_id}.C001"


def test_every_call_started_is_in_the_spend(world: dict[str, Any]) -> None:
    """An error reply, a call cut off by a dead worker and the answer: three calls."""
    store, task = world["store"], world["tasks"][0]

    def busy(prompt: str) -> str:
        raise RetryableError("429 RESOURCE_EXHAUSTED")

    def killed(prompt: str) -> str:
        raise SystemExit("the instance is gone mid-call")

    with pytest.raises(RetryableError):
        run_cell(world, task, ScriptedProvider(busy))
    with pytest.raises(SystemExit):
        run_cell(world, task, ScriptedProvider(killed))
    store.leases.clear()  # the dead worker's lease expires
    assert run_cell(world, task, ScriptedProvider(echo_needle_number)) == "answered"
    calls = sorted(store.list_calls(world["run_id"]), key=lambda c: c["call_id"])
    assert [c["call_id"][-4:] for c in calls] == ["C001", "C002", "C003"]
    assert [c["status"] for c in calls] == ["error", "started", "answered"]
    spend = spend_summary(calls, "gemini-2.5-flash")
    assert (spend["calls"], spend["error_calls"], spend["cut_off_calls"]) == (3, 1, 1)
    assert spend["estimated_usd"] == pytest.approx(calls[1]["planned_prompt_tokens"] * 0.30 / 1e6)


def test_a_dead_letter_of_a_cell_in_flight_publishes_it_again_however_late(
    world: dict[str, Any],
) -> None:
    """Before: it raised "in flight" and was redelivered 30 times over 8 minutes.

    And before that, it stored the cell failed and threw the paid answer away. Now it
    publishes the cell again (its deliveries ran out on the lease, not on the cell),
    even past the rounds of republishing a cell with no live lease gets.
    """
    from niah.service.cells.worker import record_dead_letter

    store, task, publisher = world["store"], world["tasks"][0], world["publisher"]
    last_round = replace(task, dead_letters=get_settings().dead_letter_republishes)
    assert store.claim_cell(world["run_id"], task.cell_id, lease_seconds=60) == 1
    publisher.cells.clear()
    outcome = record_dead_letter(last_round, store=store, publisher=publisher, blobs=world["blobs"])
    assert outcome == "republished" and store.list_cells(world["run_id"]) == []
    (again,) = publisher.cells
    assert again == task.message() | {"dead_letters": last_round.dead_letters + 1}
    assert CellTask.from_message(again) == replace(task, dead_letters=last_round.dead_letters + 1)
    store.release_cell(world["run_id"], task.cell_id)
    assert run_cell(world, CellTask.from_message(again), ScriptedProvider(echo_needle_number)) == (
        "answered"
    )
    assert (
        record_dead_letter(last_round, store=store, publisher=publisher, blobs=world["blobs"])
        == "duplicate"
    )


def test_a_dead_letter_publishes_its_cell_again_a_few_rounds_then_stores_it_failed(
    world: dict[str, Any],
) -> None:
    """Each round is a cell's deliveries run out with no live lease: not the cell's fault.

    After ``dead_letter_republishes`` rounds the cell is stored failed, so the run ends.
    """
    from niah.service.cells.worker import record_dead_letter

    store, task, publisher = world["store"], world["tasks"][0], world["publisher"]
    rounds = get_settings().dead_letter_republishes
    publisher.cells.clear()
    letter = task
    for round_number in range(1, rounds + 1):
        outcome = record_dead_letter(letter, store=store, publisher=publisher, blobs=world["blobs"])
        assert outcome == "republished"
        letter = CellTask.from_message(publisher.cells[-1])
        assert letter.dead_letters == round_number
    assert store.list_cells(world["run_id"]) == []
    assert len(publisher.cells) == rounds
    outcome = record_dead_letter(letter, store=store, publisher=publisher, blobs=world["blobs"])
    assert outcome == "failed" and len(publisher.cells) == rounds
    (cell,) = store.list_cells(world["run_id"])
    assert cell["error"]["kind"] == "dead_letter"


def test_cache_aware_dispatch_sends_the_deepest_longest_cell_first_then_the_rest(
    essay_blobs: MemoryBlobs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The primer's prompt holds every other prompt up to its needle.

    Sent first, it fills the implicit cache the others then hit.
    """
    monkeypatch.setenv("NIAH_DISPATCH_ORDER", "cache_aware")
    get_settings.cache_clear()
    world = dispatch_task(
        essay_blobs, context_lengths=[300, 600], document_depth_percents=[0, 50, 100]
    )
    (primer,) = world["tasks"]
    assert (primer.context_length, primer.depth_percent, primer.primer) == (600, 100.0, True)
    provider = ScriptedProvider(echo_needle_number)
    assert run_cell(world, primer, provider) == "answered"
    released = [CellTask.from_message(m) for m in world["publisher"].cells[1:]]
    assert len(released) == 5 and primer.cell_id not in {t.cell_id for t in released}
    assert not any(t.primer for t in released)
    for task in released:
        assert run_cell(world, task, provider) == "answered"
    assert len(world["publisher"].cells) == 6  # the rest published once, not again
    # Every other prompt up to its needle is a prefix of the primer's prompt.
    first = provider.prompts[0]
    for prompt in provider.prompts[1:]:
        pairs = enumerate(zip(first, prompt, strict=False))
        shared = next((i for i, (a, b) in pairs if a != b), min(len(first), len(prompt)))
        assert shared >= prompt.index("The special magic") - 1  # up to the needle's space


def cache_aware_world(
    essay_blobs: MemoryBlobs, monkeypatch: pytest.MonkeyPatch
) -> tuple[dict[str, Any], CellTask]:
    monkeypatch.setenv("NIAH_DISPATCH_ORDER", "cache_aware")
    get_settings.cache_clear()
    world = dispatch_task(essay_blobs, context_lengths=[300, 600], document_depth_percents=[0, 100])
    (primer,) = world["tasks"]
    return world, primer


def test_a_primer_that_keeps_failing_releases_the_grid_once(
    essay_blobs: MemoryBlobs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: each failed delivery of the primer published the whole grid again."""
    world, primer = cache_aware_world(essay_blobs, monkeypatch)

    def busy(prompt: str) -> str:
        raise RetryableError("429 RESOURCE_EXHAUSTED")

    for _ in range(3):
        with pytest.raises(RetryableError):
            run_cell(world, primer, ScriptedProvider(busy))
    assert len(world["publisher"].cells) == 1 + 4  # the primer, then the grid once
    assert run_cell(world, primer, ScriptedProvider(echo_needle_number)) == "answered"
    assert len(world["publisher"].cells) == 5


def test_a_dead_lettered_primer_still_releases_the_grid(
    essay_blobs: MemoryBlobs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: a primer that crashed every delivery left the other cells unpublished.

    Released at its first dead letter, as the primer itself is published again.
    """
    from niah.service.cells.worker import record_dead_letter

    world, primer = cache_aware_world(essay_blobs, monkeypatch)
    outcome = record_dead_letter(
        primer, store=world["store"], publisher=world["publisher"], blobs=world["blobs"]
    )
    assert outcome == "republished"
    published = [m["cell_id"] for m in world["publisher"].cells[1:]]
    assert published.count(primer.cell_id) == 1  # the primer, published again
    released = set(published) - {primer.cell_id}
    assert len(released) == 3 and len(published) == 4


def test_a_failure_before_the_sample_keeps_the_cells_place_on_the_grid(
    world: dict[str, Any],
) -> None:
    """Before: such a cell had no length or depth, and the report raised KeyError."""
    from niah.service.cells.worker import record_dead_letter
    from niah.service.reports.render import render_report

    last_round = get_settings().dead_letter_republishes
    for task in world["tasks"]:
        record_dead_letter(
            replace(task, dead_letters=last_round),
            store=world["store"],
            publisher=world["publisher"],
            blobs=world["blobs"],
        )
    cells = world["store"].list_cells(world["run_id"])
    assert {(c["context_length"], c["depth_percent"]) for c in cells} == {
        (t.context_length, t.depth_percent) for t in world["tasks"]
    }
    assert render_report(world["run_id"], store=world["store"], blobs=world["blobs"])


def test_a_dead_letter_stores_a_kept_answer_instead_of_a_failure(
    world: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from niah.service.cells.worker import record_dead_letter

    store, task = world["store"], world["tasks"][0]
    real_record = store.record_cell

    def frozen(*args: Any, **kwargs: Any) -> bool:
        raise StoreUnavailableError("DeadlineExceeded")

    monkeypatch.setattr(store, "record_cell", frozen)
    with pytest.raises(RetryableError):
        run_cell(world, task, ScriptedProvider(echo_needle_number))
    monkeypatch.setattr(store, "record_cell", real_record)
    store.leases.clear()  # every delivery ran out; the lease has expired
    outcome = record_dead_letter(
        task, store=store, publisher=world["publisher"], blobs=world["blobs"]
    )
    assert outcome == "answered"
    (cell,) = store.list_cells(world["run_id"])
    assert cell["status"] == "answered" and cell["score"] == 10


def test_calls_cut_off_are_estimated_each_at_its_own_tier() -> None:
    """Before: three 150K cut-off prompts were priced as one 450K prompt (long tier)."""
    calls = [{"status": "started", "planned_prompt_tokens": 150_000} for _ in range(3)]
    spend = spend_summary(calls, "gemini-2.5-pro")
    assert spend["estimated_usd"] == pytest.approx(3 * 150_000 * 1.25 / 1e6)
    assert spend["usd"] == spend["estimated_usd"] and spend["cut_off_calls"] == 3


@pytest.mark.parametrize("run_id", ["run-x", "runs/run-0123456789abcdef", "run-0123456789abcdef/"])
def test_a_message_naming_no_possible_run_is_malformed(world: dict[str, Any], run_id: str) -> None:
    from niah.errors import MalformedMessageError

    message = world["tasks"][0].message() | {"run_id": run_id}
    with pytest.raises(MalformedMessageError, match="not a run ID"):
        CellTask.from_message(message)


def test_no_judge_is_called_for_a_cut_answer_and_one_is_for_an_answer_that_ran_on(
    essay_blobs: MemoryBlobs,
) -> None:
    """A truncated answer is never graded (nor paid for twice); a run-on one is, as it stands."""
    judged = {"scorer": "judge", "evaluator_model_name": "gemini-3.8-flash"}
    for model_kind, judge_calls, outcome in ((OutOfBudget, 0, "truncated"), (RanOn, 1, "correct")):
        world = dispatch_task(essay_blobs, **judged)
        model, judge = model_kind(echo_needle_number), ScriptedProvider(lambda p: "[[9]]")
        cell = judged_cell(world, model, judge)
        assert (len(model.prompts), len(judge.prompts)) == (1, judge_calls)
        assert cell["outcome"] == outcome
        assert ("ran_on" in cell) is (model_kind is RanOn)
