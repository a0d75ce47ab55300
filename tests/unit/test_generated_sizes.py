"""The least lengths of generated contexts: pinned maxima, and admitted means built.

The two tasks (with ``niah.tasks.generated_sizes``) bound, without a tokenizer, the least
length at which common_words' list and GraphWalks' graph can be built. These tests pin each
piece's maximum against the real Gemma 3 tokenizer, then build a grid of options,
lengths and seeds as the worker builds them (``prepare_call``): every admitted cell
builds, and every refusal names ``context_lengths`` and the option to change.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from niah.core.prompts.texts import CONTEXT_MARK, LOCAL_TEMPLATE, render
from niah.core.request.grid import Cell
from niah.core.request.spec import RunRequest
from niah.errors import ContextTooShortError, RequestError
from niah.models.tokenizer import SentencePieceTokenizer
from niah.service.cells.prompt import prepare_call
from niah.service.runs.admission_checks import check_budget
from niah.tasks import common_words, get_task, graphwalks
from niah.tasks import generated_sizes as sizes
from tests.fakes import MemoryBlobs


def own(tokenizer: SentencePieceTokenizer, template: str, question: str, lead: str = "") -> int:
    head, tail = render(template, context=CONTEXT_MARK, question=question, answer_lead=lead).split(
        CONTEXT_MARK
    )
    return len(tokenizer.encode(head)) + len(tokenizer.encode(tail))


def node_ids(count: int) -> list[str]:
    rng = random.Random(51)
    return [f"{rng.getrandbits(40):010x}" for _ in range(count)]


# --- the pinned maxima ------------------------------------------------------------------


def test_every_pair_takes_at_most_pair_tokens(tokenizer: SentencePieceTokenizer) -> None:
    most = max(len(tokenizer.encode(f" {pair}")) for pair in common_words.PAIRS)
    assert most == common_words.PAIR_TOKENS
    assert len(common_words.PAIRS) == common_words.PAIR_COUNT


def test_triples_take_at_most_triple_tokens(tokenizer: SentencePieceTokenizer) -> None:
    """A seeded sample of 40,000 of the 1.2M triples, as ``word_pool`` draws them."""
    rng = random.Random(51)
    words = common_words.word_pool(rng, common_words.PAIR_COUNT + 40_000)
    most = max(len(tokenizer.encode(f" {word}")) for word in words if word.count("-") == 2)
    assert most == common_words.TRIPLE_TOKENS


def test_an_entry_number_is_its_digits_and_two(tokenizer: SentencePieceTokenizer) -> None:
    numbers = [*range(1, 3_000), *range(3_000, 1_200_000, 997)]
    assert all(len(tokenizer.encode(f" {k}.")) == len(str(k)) + 2 for k in numbers)
    assert sizes.number_tokens(12_345) == sum(len(str(k)) + 2 for k in range(1, 12_346))
    assert sizes.number_tokens(0) == 0


def test_an_edge_line_takes_at_most_edge_line_tokens(tokenizer: SentencePieceTokenizer) -> None:
    """A 10-byte ID is at most 10 tokens; " ->" is one: 11 + 11 and the newline."""
    assert len(tokenizer.encode(" ->")) == 1
    ids = node_ids(20_000)
    source = max(len(tokenizer.encode(f"{node} ->")) for node in ids)
    target = max(len(tokenizer.encode(f" {node}")) for node in ids)
    assert source == target == 11
    assert source + target + len(tokenizer.encode("\n")) == graphwalks.EDGE_LINE_TOKENS


def test_the_built_in_templates_take_at_most_their_own_tokens(
    tokenizer: SentencePieceTokenizer,
) -> None:
    words = max(
        own(
            tokenizer,
            common_words.TEMPLATE,
            common_words.QUESTION.format(count=count),
            common_words.ANSWER_LEAD.format(count=count),
        )
        for count in range(1, 101)
    )
    assert words == common_words.COMMON_WORDS_OWN_TOKENS
    questions = [
        graphwalks.BFS_QUESTION.format(node=node, depth=depth)
        for node in node_ids(2_000)
        for depth in (1, 10)
    ] + [graphwalks.PARENTS_QUESTION.format(node=node) for node in node_ids(2_000)]
    graph = max(own(tokenizer, graphwalks.TEMPLATE, question) for question in questions)
    assert graph == graphwalks.GRAPHWALKS_OWN_TOKENS
    longest = max(
        [
            common_words.QUESTION.format(count=100),
            common_words.ANSWER_LEAD.format(count=100),
            *questions,
        ],
        key=len,
    )
    assert len(longest.encode()) <= sizes.QUESTION_BYTES


# --- admitted means built, refused means named --------------------------------------------


def builds(spec: RunRequest, cell: Cell, tokenizer: SentencePieceTokenizer) -> bool:
    sample = get_task(spec.task).sample(spec, cell)
    try:
        prepare_call(
            spec,
            cell,
            sample,
            default_template=LOCAL_TEMPLATE,
            tokenizer=tokenizer,
            blobs=MemoryBlobs(),
        )
    except ContextTooShortError:
        return False
    return True


SWEEP: list[tuple[dict[str, Any], range]] = [
    ({"task": "common_words"}, range(450, 760, 3)),
    # RULER's repeats change at 4096 tokens: all admitted, all built
    ({"task": "common_words"}, range(3_950, 4_250, 13)),
    ({"task": "common_words", "freq_cw": 30}, range(2_400, 2_900, 19)),
    ({"task": "common_words", "freq_cw": 100}, range(8_100, 9_400, 97)),
    ({"task": "common_words", "num_cw": 3, "freq_cw": 40, "freq_ucw": 5}, range(700, 1_400, 11)),
    ({"task": "common_words", "final_context_length_buffer": 100}, range(550, 800, 7)),
    ({"task": "graphwalks", "bfs_depth": 1}, range(800, 1_200, 7)),
    ({"task": "graphwalks"}, range(800, 1_200, 7)),
    ({"task": "graphwalks", "bfs_depth": 3}, range(800, 1_500, 11)),
    ({"task": "graphwalks", "bfs_depth": 5}, range(1_000, 2_000, 17)),
    ({"task": "graphwalks", "bfs_depth": 10}, range(2_800, 5_200, 41)),
    ({"task": "graphwalks", "graph_problem": "parents"}, range(800, 1_200, 7)),
]


@pytest.mark.parametrize(("options", "lengths"), SWEEP, ids=[str(case[0]) for case in SWEEP])
def test_every_admitted_length_builds_and_every_refusal_names_the_fix(
    tokenizer: SentencePieceTokenizer, options: dict[str, Any], lengths: range
) -> None:
    admitted = refused = 0
    failures = []
    for seed in (0, 1):
        for length in lengths:
            spec = RunRequest(context_lengths=[length], seed=seed, **options)
            cell = Cell(length, 50.0)
            short = get_task(spec.task).short_length(spec, [cell])
            if short is None:
                admitted += 1
                if not builds(spec, cell, tokenizer):
                    failures.append((seed, length))
            else:
                refused += 1
                assert short.field == "context_lengths"
                assert f"{length:,} tokens cannot hold" in short.message
                fix = "freq_cw" if spec.task == "common_words" else "longer length"
                assert fix in short.message
                if spec.task == "graphwalks":
                    graph = graphwalks.GraphWalks().options_of(spec)
                    if graph.graph_problem == "bfs":
                        assert f"bfs_depth {graph.bfs_depth}" in short.message
    assert failures == []
    assert admitted > 0
    # Each range straddles its bound, but the one around RULER's 4096-token switch
    # (where the default list is far below the length).
    switch = options == {"task": "common_words"} and lengths.start <= 4_096 < lengths.stop
    assert (refused == 0) if switch else (refused > 0)


def test_ruler_s_default_list_is_admitted_from_under_600_tokens() -> None:
    """It builds from about 485-507 tokens (seeds 0-2): the bound is within ~20 %."""
    spec = RunRequest(task="common_words", context_lengths=[1_000])
    assert common_words.least_common_words_length(spec, 1_000) < 600


# --- at admission ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (
            {"task": "common_words", "freq_cw": 1000, "context_lengths": [600]},
            "600 tokens cannot hold common_words with freq_cw 1000",
        ),
        ({"task": "graphwalks", "bfs_depth": 10, "context_lengths": [1000]}, "bfs_depth 10"),
        ({"task": "graphwalks", "bfs_depth": 3, "context_lengths": [900, 2000]}, "900 tokens"),
    ],
)
def test_admission_refuses_a_length_the_worker_cannot_build(
    options: dict[str, Any], said: str
) -> None:
    with pytest.raises(RequestError) as refused:
        check_budget(RunRequest(document_depth_percents=[50], **options))
    assert refused.value.field == "context_lengths"
    assert said in refused.value.message
    assert "use a longer length" in refused.value.message


@pytest.mark.parametrize(
    "options",
    [
        # tests/integration/test_tasks_run.py's runs
        {"task": "common_words", "context_lengths": [1000], "seed": 3},
        {"task": "graphwalks", "context_lengths": [1000], "seed": 3},
        {"task": "graphwalks", "graph_problem": "parents", "context_lengths": [4000], "seed": 3},
        # docs/tasks/common_words.md, graphwalks.md, ruler_suite.md
        {"task": "common_words", "num_cw": 10, "context_lengths": [1000, 2000]},
        {"task": "graphwalks", "bfs_depth": 3, "context_lengths": [2000, 8000]},
        {"task": "common_words", "context_lengths": [4000, 8000]},
        {"task": "common_words", "context_lengths": [4096, 8192, 16384, 32768, 65536, 131072]},
    ],
)
def test_what_runs_today_stays_admitted(options: dict[str, Any]) -> None:
    for seed in range(10):
        spec = RunRequest(**{"seed": seed, **options})
        assert get_task(spec.task).short_length(spec, spec.cells()) is None, (seed, options)
