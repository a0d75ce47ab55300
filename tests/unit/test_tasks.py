"""The task layer: each task's samples and scorer, and its prompts token-exact."""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

import pytest

from niah.core.interfaces import ModelAnswer
from niah.core.prompts.answer_budget import CallBudget
from niah.core.prompts.haystack_tokens import HaystackTokens
from niah.core.prompts.prompt_builder import build_prompt
from niah.core.prompts.texts import HARNESS_TEMPLATE
from niah.core.request.grid import Cell
from niah.core.request.spec import RunRequest
from niah.core.results.scoring import truncated_reason, unscored_reason
from niah.errors import ConfigurationError, RequestError
from niah.models.tokenizer import SentencePieceTokenizer
from niah.service.runs.request_body import parse_request
from niah.tasks import TASKS, get_task, registry
from niah.tasks.nonliteral import TEMPLATES
from tests import HEAVY


def sample_of(task: str, length: int = 4000, depth: float = 50, index: int = 0, **options):
    spec = RunRequest(task=task, context_lengths=[length], **options)
    return get_task(task).sample(spec, Cell(length, depth, index))


# --- scorers, pinned on constructed answers -------------------------------------------


def test_multi_needle_scores_the_share_found() -> None:
    sample = sample_of("multi_needle", num_needles=3)
    first, second, _third = sample.expected
    verdict = get_task("multi_needle").score(sample, f"They are {first} and {second}.")
    assert verdict.score == pytest.approx(2 / 3)
    assert verdict.outcome == "wrong"
    assert verdict.details == {"retrieved": 2, "needles": 3}
    everything = get_task("multi_needle").score(sample, " ".join(sample.expected))
    assert (everything.outcome, everything.score) == ("correct", 1.0)


OWN_NEEDLES: dict[str, Any] = {
    "needles": [
        " Figs are one of the secret ingredients needed to build the perfect pizza. ",
        "Prosciutto is one of the secret ingredients needed to build the perfect pizza.",
        "Goat cheese is one of the secret ingredients needed to build the perfect pizza.",
    ],
    "retrieval_question": "What are the secret ingredients needed to build the perfect pizza?",
    "expected_answers": ["figs", "prosciutto", "goat cheese"],
}


def test_the_harness_s_own_needles_are_placed_in_order_as_given_and_scored_by_their_answers() -> (
    None
):
    sample = sample_of("multi_needle", depth=40, **OWN_NEEDLES)
    assert [i.text for i in sample.insertions] == OWN_NEEDLES["needles"]  # byte for byte
    assert [i.depth_percent for i in sample.insertions] == [40.0, 60.0, 80.0]  # the harness's
    assert sample.question == OWN_NEEDLES["retrieval_question"]
    assert sample.expected == ("figs", "prosciutto", "goat cheese")
    # Every cell and sample has the same needles: they are the user's, not seeded.
    assert sample_of("multi_needle", depth=40, index=3, **OWN_NEEDLES) == sample
    verdict = get_task("multi_needle").score(sample, "Figs and goat cheese.")
    assert (verdict.outcome, verdict.score) == ("wrong", pytest.approx(2 / 3))
    assert verdict.details == {"retrieved": 2, "needles": 3}


def test_own_needles_name_their_own_run_and_a_plain_multi_needle_run_keeps_its_id() -> None:
    plain = RunRequest(task="multi_needle", context_lengths=[1000])
    own = RunRequest(task="multi_needle", context_lengths=[1000], **OWN_NEEDLES)
    other = RunRequest(
        task="multi_needle",
        context_lengths=[1000],
        **(OWN_NEEDLES | {"needles": ["x.", "y.", "z."]}),
    )
    assert len({plain.run_id(), own.run_id(), other.run_id()}) == 3
    # Options added later, unset, are not in the hash: the ID runs had before them.
    assert {"needles", "expected_answers"}.isdisjoint(json.loads(plain.canonical_json()))
    assert get_task("multi_needle").options_of(own).needle_count() == 3
    assert own.scorer_name() == "task"
    judged = RunRequest(
        task="multi_needle",
        context_lengths=[1000],
        scorer="judge",
        evaluator_model_name="gemini-2.5-flash",
        **{k: v for k, v in OWN_NEEDLES.items() if k != "expected_answers"},
    )
    assert judged.scorer_name() == "judge"


def test_multi_key_counts_a_distractors_value_as_a_hit_and_scores_it_zero() -> None:
    sample = sample_of("multi_key", num_distractors=3)
    distractor = sample.details["distractor_values"][1]
    verdict = get_task("multi_key").score(sample, f"The number is {distractor}.")
    assert (verdict.outcome, verdict.score) == ("wrong", 0.0)
    assert verdict.details["distractor_hit"] is True
    right = get_task("multi_key").score(sample, f"It is {sample.expected[0]}.")
    assert (right.outcome, right.score, right.details["distractor_hit"]) == ("correct", 1.0, False)


def test_multi_value_and_multi_query_score_the_share_returned() -> None:
    values = sample_of("multi_value", num_values=4)
    verdict = get_task("multi_value").score(values, ", ".join(values.expected[:3]))
    assert verdict.score == pytest.approx(0.75)
    queries = sample_of("multi_query", num_queries=4)
    verdict = get_task("multi_query").score(queries, queries.expected[0])
    assert verdict.score == pytest.approx(0.25)


@pytest.mark.parametrize("kind", ["numbers", "words", "uuids"])
def test_absent_does_not_count_the_asked_key_echoed_back_as_a_value(kind: str) -> None:
    """Before: with keys and values of one kind, the key echoed back was a hallucination."""
    sample = sample_of("absent", needle_key_type=kind, needle_value_type=kind)
    asked = sample.details["asked_key"]
    verdict = get_task("absent").score(sample, f"There is no value for {asked}. UNANSWERABLE")
    assert verdict.outcome == "correct" and not verdict.details["hallucinated"]
    invented = get_task("absent").score(
        sample, f"For {asked} it is {sample.details['present_value']}."
    )
    assert invented.details["hallucinated"] and invented.outcome == "wrong"


def test_absent_counts_an_invented_number_as_a_hallucination() -> None:
    sample = sample_of("absent")
    invented = get_task("absent").score(sample, "The special magic number is 4815162.")
    assert (invented.outcome, invented.score) == ("wrong", 0.0)
    assert invented.details["hallucinated"] is True
    declined = get_task("absent").score(sample, "UNANSWERABLE")
    assert (declined.outcome, declined.score) == ("correct", 1.0)
    assert declined.details["hallucinated"] is False
    # Saying it is missing but giving a number anyway is still a hallucination.
    both = get_task("absent").score(sample, "It is not mentioned, maybe 1234567.")
    assert both.outcome == "wrong" and both.details["hallucinated"] is True


def test_nonliteral_scores_an_answer_naming_the_character() -> None:
    sample = sample_of("nonliteral")
    character = sample.expected[0]
    assert get_task("nonliteral").score(sample, f"{character} has.").score == 1.0
    assert get_task("nonliteral").score(sample, "Nobody did.").score == 0.0


def test_a_blocked_answer_is_unscored_and_one_cut_off_by_the_budget_is_truncated() -> None:
    assert unscored_reason("", "SAFETY") is not None
    assert unscored_reason("", "PROMPT_BLOCKED:PROHIBITED_CONTENT") is not None
    assert unscored_reason("", "STOP") is None  # the model chose to say nothing
    budget = CallBudget(300, answer_tokens=120, thinking_tokens=180)
    for text, finish in (("", "MAX_TOKENS"), ("1448800, 8231026, 82310", "length")):
        answer = ModelAnswer(text, finish, 900, 40, 0.1, thinking_tokens=260)
        reason = truncated_reason(answer, budget)
        assert reason is not None and "output budget of 300 tokens" in reason
    runaway = ModelAnswer("7768233, 6452673, " * 40, "length", 900, 300, 0.1)
    assert "ran on past that room" in str(
        truncated_reason(runaway, CallBudget(300, None, None, 120))
    )
    stopped = ModelAnswer("1448800", "STOP", 900, 3, 0.1)
    assert truncated_reason(stopped, budget) is None


# --- samples ----------------------------------------------------------------------------


@pytest.mark.parametrize("task", list(TASKS))
def test_samples_differ_and_are_reproducible_from_the_seed(task: str) -> None:
    first = [sample_of(task, index=i, seed=5) for i in range(3)]
    again = [sample_of(task, index=i, seed=5) for i in range(3)]
    other_seed = sample_of(task, index=0, seed=6)
    assert first == again
    assert len({s.needle + s.question + " ".join(s.expected) for s in first}) == 3
    assert other_seed != first[0]


def test_the_single_tasks_first_sample_is_the_needle_it_always_was() -> None:
    from niah.core.prompts.needles import needle_for

    spec = RunRequest(context_lengths=[4000])
    sample = get_task("single").sample(spec, Cell(4000, 50))
    needle = needle_for(spec, Cell(4000, 50))
    assert (sample.needle, sample.expected) == (needle.text.strip(), (needle.expected_answer,))


def test_multi_needle_spaces_the_rest_evenly_after_the_first() -> None:
    sample = sample_of("multi_needle", depth=40, num_needles=10)
    depths = [insertion.depth_percent for insertion in sample.insertions]
    assert depths == pytest.approx([40, 46, 52, 58, 64, 70, 76, 82, 88, 94])
    assert len(set(sample.expected)) == 10


def test_a_hundred_needles_have_a_hundred_keys_and_values() -> None:
    sample = sample_of("multi_needle", length=32_000, num_needles=100)
    assert len(set(sample.expected)) == 100
    assert len({i.text.split(" number")[0] for i in sample.insertions}) == 100


STOPWORDS = {
    "a",
    "an",
    "the",
    "of",
    "in",
    "on",
    "at",
    "to",
    "for",
    "from",
    "by",
    "with",
    "and",
    "or",
    "has",
    "have",
    "had",
    "been",
    "is",
    "are",
    "was",
    "were",
    "be",
    "which",
    "who",
    "what",
    "whose",
    "that",
    "this",
    "these",
    "those",
    "it",
    "its",
    "his",
    "her",
    "their",
    "one",
    "once",
    "last",
    "during",
    "up",
    "down",
    "over",
    "under",
    "near",
    "next",
    "beside",
    "below",
    "above",
    "outside",
    "inside",
    "past",
    "after",
    "before",
    "answer",
    "character",
    "character's",
    "name",
}


def content_words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z']+", text.lower()) if w not in STOPWORDS}


def test_nonliteral_needles_share_no_content_word_with_their_question() -> None:
    from niah.core.prompts.vocabulary import CHARACTER_NAMES

    assert len(TEMPLATES) == 36 and len(set(CHARACTER_NAMES)) == 60  # as the README says
    for needle, question in TEMPLATES:
        shared = content_words(needle.format(name="")) & content_words(question)
        assert shared == set(), (needle, question, shared)


# --- options ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "field_hint"),
    [
        ({"num_needles": 5}, "num_needles applies to task multi_needle"),
        ({"needles": ["a."]}, "needles applies to task multi_needle, not single"),
        ({"task": "multi_needle", "needles": []}, "needles give at least one"),
        ({"task": "multi_needle", "needles": ["  "]}, "needles item 1 is empty"),
        ({"task": "multi_needle", "needles": ["a {context}"]}, "template placeholder {context}"),
        (
            {"task": "multi_needle", "needles": ["a."], "expected_answers": ["a"]},
            "retrieval_question",
        ),
        (
            {"task": "multi_needle", "needles": ["a."], "retrieval_question": "q?"},
            "expected_answers say what a right answer names",
        ),
        (
            {
                "task": "multi_needle",
                "needles": ["a.", "b."],
                "retrieval_question": "q?",
                "expected_answers": ["a"],
            },
            "expected_answers has 1 items for 2 needles",
        ),
        (
            {
                "task": "multi_needle",
                "needles": ["a."],
                "retrieval_question": "q?",
                "expected_answers": ["a"],
                "num_needles": 2,
            },
            "num_needles (2) differs from the 1 needles given",
        ),
        (
            {
                "task": "multi_needle",
                "needles": ["a."],
                "retrieval_question": "q?",
                "scorer": "both",
                "evaluator_model_name": "gemini-2.5-flash",
            },
            "scorer 'both' applies to task single",
        ),
        ({"task": "multi_needle", "retrieval_question": "q?"}, "unless you give needles"),
        ({"task": "multi_key", "num_values": 3}, "num_values applies to task multi_value"),
        ({"task": "absent", "needle": "x"}, "needle applies to task single"),
        (
            {"task": "multi_key", "scorer": "judge", "evaluator_model_name": "gemini-2.5-flash"},
            "scores its own answers",
        ),
        ({"task": "nope"}, "task"),
        ({"samples_per_cell": 0}, "samples_per_cell"),
    ],
)
def test_options_that_do_not_fit_the_task_are_refused(payload: dict, field_hint: str) -> None:
    with pytest.raises(RequestError) as caught:
        parse_request({"context_lengths": [1000], **payload})
    assert field_hint in f"{caught.value.field} {caught.value.message}"


def test_the_single_tasks_run_ids_are_the_ones_runs_had_before_tasks() -> None:
    # Computed with the code before the task layer (commit 10f3a36).
    spec = RunRequest(context_lengths=[1000, 2000], document_depth_percents=[0, 50])
    assert spec.run_id("fp") == "run-d9156a099d0a1e78"
    spec = RunRequest(
        model_name="gemini-2.5-flash",
        context_lengths=[4000],
        document_depth_percents=[0, 50, 100],
        seed=3,
    )
    assert spec.run_id("fp2") == "run-7971b0df0719e189"
    assert RunRequest(context_lengths=[1000], samples_per_cell=2).run_id("fp") != RunRequest(
        context_lengths=[1000]
    ).run_id("fp")


def test_samples_are_cells_of_their_own() -> None:
    spec = RunRequest(context_lengths=[1000], document_depth_percents=[50], samples_per_cell=3)
    ids = [cell.cell_id for cell in spec.cells()]
    assert ids == ["L00001000-D050000", "L00001000-D050000-S001", "L00001000-D050000-S002"]


# --- every task's prompt, token-exact ---------------------------------------------------


# The tasks whose context is the haystack; RULER's word lists (common and frequent
# words) are their own context, pinned token-exact in tests/unit/test_ruler_tasks.py, as
# GraphWalks' edge lists are in tests/unit/test_graphwalks.py.
GENERATED_CONTEXT_TASKS = ("common_words", "frequent_words", "graphwalks")
HAYSTACK_TASKS = [task for task in TASKS if task not in GENERATED_CONTEXT_TASKS]


# Every task at 1,000 and 32,000 tokens: what a task changes (its template, needles and
# question) meets the haystack at a few junctions, and each is there at any length. A
# million tokens for one needle and for many (the corpus wraps; ~6 CPU-s each, nine tasks
# were a fifth of the unit tier's CPU).
MILLION_TOKEN_TASKS = ("single", "multi_needle")


@pytest.mark.parametrize(
    ("task", "length"),
    [(task, length) for task in HAYSTACK_TASKS for length in (1_000, 32_000)]
    + [pytest.param(task, 1_000_000, marks=HEAVY) for task in MILLION_TOKEN_TASKS],
)
def test_every_tasks_prompt_is_exact_with_needles_intact_at_sentence_ends(
    essays: HaystackTokens, tokenizer: SentencePieceTokenizer, task: str, length: int
) -> None:
    sample = sample_of(task, length=length, depth=25)
    assert sample.context_maker is None
    built = build_prompt(
        essays,
        tokenizer,
        template=sample.template or HARNESS_TEMPLATE,
        insertions=sample.insertions,
        question=sample.question,
        answer_lead=sample.answer_lead,
        context_length=length,
    )
    assert len(tokenizer.encode(built.prompt)) == length
    context = built.context
    # Each needle once (MRCR repeats its other requests: each as often as inserted).
    copies = Counter(insertion.text for insertion in sample.insertions)
    for insertion in sample.insertions:
        assert context.count(insertion.text) == copies[insertion.text]
        before = context[: context.index(insertion.text)]
        # At a sentence end, or right after another needle (which ends in '.').
        assert before == "" or before.endswith("."), before[-30:]


@pytest.mark.parametrize(
    "path", ["niah.tasks.passphrase:Passphrase", "niah.tasks.single:Passphrase"]
)
def test_a_registry_line_naming_no_task_class_fails_naming_the_line(path: str) -> None:
    with pytest.raises(ConfigurationError, match=re.escape(repr(path))):
        registry(path)


def test_a_registry_line_naming_a_class_that_is_no_task_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="is not a Task"):
        registry("collections:OrderedDict")
