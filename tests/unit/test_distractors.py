"""Distractors and the haystack's order (Context Rot's axes), as the worker builds them.

Every retrieval task with 1 and 4 distractors and with a shuffled haystack: the prompt
exact to the token, each distractor in it at least ``MIN_GAP`` from every needle and at
its recorded depth, none of their values the answer, the stand-in's answer right and a
distractor's value wrong (and noted). Then the options: one value or an axis, and the
run IDs of runs without them unchanged.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from niah.core.prompts.texts import LOCAL_TEMPLATE
from niah.core.request.axes import at_variant, variant_label, variants
from niah.core.request.grid import Cell
from niah.core.request.spec import RunRequest
from niah.models.tokenizer import SentencePieceTokenizer
from niah.service.cells.prompt import prepare_call
from niah.service.messages import CellTask
from niah.tasks import DISTRACTOR_TASKS, get_task, make_sample, score_answer
from niah.tasks.distractors import MIN_GAP
from niah_devtools.standin_answers import answer_text
from tests.fakes import MemoryBlobs

LENGTH = 4_000


def built(
    spec: RunRequest, cell: Cell, tokenizer: SentencePieceTokenizer, blobs: MemoryBlobs
) -> Any:
    sample = make_sample(spec, cell)
    prepared = prepare_call(
        spec, cell, sample, default_template=LOCAL_TEMPLATE, tokenizer=tokenizer, blobs=blobs
    )
    return sample, prepared.built


def recounted_positions(sample: Any, prompt: Any, tokenizer: SentencePieceTokenizer) -> list[int]:
    """Each insertion's place in haystack tokens, counted afresh by the tokenizer.

    The context up to it, tokenized, less the insertions before it.
    """
    positions, start, inserted = [], 0, 0
    for insertion in sorted(sample.insertions, key=lambda i: i.depth_percent):
        at = prompt.context.index(insertion.text, start)
        positions.append(len(tokenizer.encode(prompt.context[:at])) - inserted)
        inserted += len(tokenizer.encode(insertion.text))
        start = at + len(insertion.text)
    return positions


@pytest.mark.parametrize("task", DISTRACTOR_TASKS)
@pytest.mark.parametrize("count", [1, 4])
@pytest.mark.parametrize("depth", [0.0, 50.0, 100.0])
def test_each_retrieval_task_hides_its_distractors_to_the_token(
    task: str,
    count: int,
    depth: float,
    tokenizer: SentencePieceTokenizer,
    essay_blobs: MemoryBlobs,
) -> None:
    spec = RunRequest(task=task, context_lengths=[LENGTH], distractors=[count], seed=3)
    cell = Cell(LENGTH, depth, 1)
    sample, prompt = built(spec, cell, tokenizer, essay_blobs)
    assert len(tokenizer.encode(prompt.prompt)) == LENGTH
    assert sample.distractors == count
    listed = sample.details["distractors"]
    assert len(listed) == count
    needles = [i.depth_percent for i in sample.needle_insertions]
    for item, insertion in zip(listed, sample.insertions[-count:], strict=True):
        assert insertion.text.strip() == item["text"]
        assert prompt.context.count(item["text"]) == 1
        assert min(abs(item["depth_percent"] - d) for d in needles) >= MIN_GAP - 1e-9
        assert item["value"] not in sample.expected
    # Where each really went: at most one sentence before its asked depth.
    placed = prompt.depths_of(sample.insertions)
    for asked, went in zip((i.depth_percent for i in sample.insertions), placed, strict=True):
        assert went <= asked + 1e-9
        assert asked - went < 3.0
    assert recounted_positions(sample, prompt, tokenizer) == list(prompt.insertion_tokens)
    values = [item["value"] for item in listed]
    assert len(set(values)) == count
    # The two kinds in turn (absent and nonliteral: another key only).
    only_keys = task in ("absent", "nonliteral")
    assert [item["kind"] for item in listed] == [
        "key" if only_keys or i % 2 == 0 else "wording" for i in range(count)
    ]
    # The stand-in reads the needle, not a lookalike; a distractor's value is wrong.
    verdict = score_answer(get_task(task), sample, answer_text(prompt.prompt))
    assert verdict.outcome == "correct", (task, answer_text(prompt.prompt))
    assert verdict.details["distractor_hit"] is False
    if task != "absent":
        taken = score_answer(get_task(task), sample, f"It is {values[0]}.")
        assert taken.outcome == "wrong"
        assert taken.details["distractor_hit"] is True
        assert taken.details["distractor_values_returned"] >= 1
        assert taken.details["distractor_kinds_returned"] == ["key"]
        if count == 4 and not only_keys:
            near = score_answer(get_task(task), sample, f"It is {values[1]}.")
            assert near.details["distractor_kinds_returned"] == ["wording"]


@pytest.mark.parametrize("task", DISTRACTOR_TASKS)
def test_a_shuffled_haystack_is_exact_to_the_token_and_answers_alike(
    task: str, tokenizer: SentencePieceTokenizer, essay_blobs: MemoryBlobs
) -> None:
    coherent = RunRequest(task=task, context_lengths=[LENGTH], seed=5)
    shuffled = coherent.model_copy(update={"haystack_order": ["shuffled"]})
    cell = Cell(LENGTH, 40.0)
    same, plain = built(coherent, cell, tokenizer, essay_blobs)
    sample, prompt = built(shuffled, cell, tokenizer, essay_blobs)
    assert sample == same  # the order changes the haystack, not the needles
    assert len(tokenizer.encode(prompt.prompt)) == LENGTH
    assert recounted_positions(sample, prompt, tokenizer) == list(prompt.insertion_tokens)
    assert prompt.context != plain.context
    assert score_answer(get_task(task), sample, answer_text(prompt.prompt)).outcome == "correct"


def test_a_list_is_an_axis_and_each_cell_carries_its_variant() -> None:
    spec = RunRequest(
        context_lengths=[1000, 2000],
        document_depth_percents=[50],
        distractors=[4, 0, 1, 1],
        haystack_order=["shuffled", "coherent"],
    )
    assert spec.distractors == [0, 1, 4]
    assert spec.haystack_order == ["coherent", "shuffled"]
    assert variants(spec) == [
        "d0.coherent", "d0.shuffled", "d1.coherent", "d1.shuffled", "d4.coherent", "d4.shuffled",
    ]  # fmt: skip
    cells = spec.cells()
    assert len(cells) == 12
    assert len({c.cell_id for c in cells}) == 12
    assert cells[-1].cell_id == "L00002000-D050000-Xd4.shuffled"
    assert variant_label("d1.shuffled") == "1 distractor · shuffled"
    at = at_variant(spec, "d4.shuffled")
    assert (at.distractors, at.haystack_order) == ([4], ["shuffled"])
    task = CellTask.from_message(
        {"run_id": "run-0123456789abcdef", **_message(cells[-1])}, delivery_attempt=1
    )
    assert task.cell == cells[-1]


def _message(cell: Cell) -> dict[str, Any]:
    return {
        "cell_id": cell.cell_id,
        "context_length": cell.context_length,
        "depth_percent": cell.depth_percent,
        "sample": cell.sample,
        "variant": cell.variant,
    }


def test_runs_without_the_options_keep_their_ids() -> None:
    plain = RunRequest(context_lengths=[1000])
    # A single value where the axis takes a list: the JSON form users send, coerced.
    for scalar in ({"distractors": 0}, {"haystack_order": "coherent"}):
        same = RunRequest.model_validate({"context_lengths": [1000], **scalar})
        assert same.run_id() == plain.run_id()
    assert RunRequest(context_lengths=[1000], distractors=[0]).run_id() == plain.run_id()
    one = RunRequest(context_lengths=[1000], distractors=[4])
    assert one.run_id() != plain.run_id()
    assert one.run_id() == RunRequest(context_lengths=[1000], distractors=[4]).run_id()
    assert [c.cell_id for c in one.cells()] == [c.cell_id for c in plain.cells()]


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"distractors": 11}, "distractors"),
        ({"distractors": -1}, "distractors"),
        ({"distractors": True}, "distractors"),
        ({"distractors": []}, "distractors"),
        ({"haystack_order": "sorted"}, "haystack_order"),
        ({"distractors": 1, "task": "common_words"}, "distractors"),
        ({"distractors": 1, "task": "variable_tracking"}, "distractors"),
        ({"haystack_order": "shuffled", "task": "frequent_words"}, "haystack_order"),
        ({"haystack_order": "shuffled", "task": "graphwalks"}, "haystack_order"),
        ({"distractors": 4, "task": "graphwalks"}, "distractors"),
        ({"distractors": 1, "dynamic_needle": False, "expected_answer": "x"}, "dynamic_needle"),
        ({"distractors": [0, 4], "mode": "certify"}, "certify"),
    ],
)
def test_a_bad_axis_is_refused_naming_it(options: dict[str, Any], named: str) -> None:
    with pytest.raises(ValidationError) as raised:
        RunRequest(context_lengths=[1000, 2000], **options)
    assert named in str(raised.value)


def test_the_context_rot_table_has_a_row_per_condition_and_counts_lookalikes() -> None:
    from niah.core.results.context_rot import context_rot_table, format_context_rot

    cells = []
    for count in (0, 1, 4):
        for order in ("coherent", "shuffled"):
            for length in (1000, 2000):
                # Right at 1,000; at 2,000 right only without distractors, else the lookalike.
                right = length == 1000 or count == 0
                cells.append(
                    {
                        "context_length": length,
                        "depth_percent": 50.0,
                        "variant": f"d{count}.{order}",
                        "task_score": 1.0 if right else 0.0,
                        "outcome": "correct" if right else "wrong",
                        "task_details": {
                            "distractor_hit": not right,
                            "distractor_kinds_returned": [] if right else ["wording"],
                        },
                    }
                )
    rows = context_rot_table(cells, rule="ruler")
    assert [r.condition for r in rows] == [
        "0 distractors · coherent", "0 distractors · shuffled", "1 distractor · coherent",
        "1 distractor · shuffled", "4 distractors · coherent", "4 distractors · shuffled",
    ]  # fmt: skip
    assert [r.by_length for r in rows[::2]] == [
        {1000: 100.0, 2000: 100.0},
        {1000: 100.0, 2000: 0.0},
        {1000: 100.0, 2000: 0.0},
    ]
    assert [(r.wrong_answers, r.distractor_answers) for r in rows] == [(0, 0)] * 2 + [(1, 1)] * 4
    text = format_context_rot(rows, "ruler").splitlines()
    assert text[0].split()[:5] == ["condition", "1,000", "2,000", "mean", "effective"]
    # One sample a point: its Wilson interval (20.7-100 % for one right) decides nothing.
    assert [r.effective_length for r in rows] == ["not determined (none to 2,000)"] * 2 + [
        "not determined (none to 1,000)"
    ] * 4
    assert text[5].split()[-18:-1] == [
        "100.0", "0.0", "50.0", "not", "determined", "(none", "to", "1,000)",
        "1", "of", "1", "(another", "key", "0,", "a", "near", "miss",
    ]  # fmt: skip
    assert text[5].endswith("a near miss 1)")
    assert "effective length per condition, rule ruler: fixed, as in RULER" in text[-1]


@pytest.mark.parametrize("task", DISTRACTOR_TASKS)
def test_no_distractor_holds_the_needle_s_own_phrase(task: str) -> None:
    """The docs' "never": no lookalike says what the needle says before its value."""
    import re

    for seed in range(20):
        spec = RunRequest(task=task, context_lengths=[LENGTH], distractors=[10], seed=seed)
        sample = make_sample(spec, Cell(LENGTH, 30.0))
        for needle in sample.needle_insertions:
            # The needle's words up to its value: "special magic Lisbon number is"
            # (the old "former special magic Lisbon number" near miss held them).
            phrase = re.split(r":\s", needle.text.strip())[0]
            phrase = re.sub(r"^(The|One of the) ", "", phrase)
            for item in sample.details["distractors"]:
                assert phrase not in item["text"], (needle.text, item["text"])


def test_at_most_two_shuffled_corpora_are_kept() -> None:
    from niah.core.prompts.haystack_order import shuffled_haystacks

    assert shuffled_haystacks._max == 2
