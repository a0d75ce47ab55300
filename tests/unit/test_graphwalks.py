"""GraphWalks: the card's extraction and set F1 on hand-worked answers, graphs to the token.

Each prompt is built as the worker builds it (``prepare_call``) and read back as a
checker would: the edge list parsed from the prompt's text, the answer computed again
by a BFS and a parents search written here, apart from the task's own code.
"""

from __future__ import annotations

import re
import time
from collections import deque
from typing import Any

import pytest

from niah.core.prompts.answer_budget import ANSWER_SLACK, answer_room
from niah.core.request.grid import Cell
from niah.core.request.spec import RunRequest
from niah.errors import ContextTooShortError, RequestError
from niah.models.tokenizer import SentencePieceTokenizer
from niah.service.runs.request_body import parse_request
from niah.tasks import Sample, get_task
from niah.tasks.graph_edges import GraphEdges
from niah.tasks.graph_plan import GRAPH_MAX_ANSWER_NODES
from niah.tasks.graphwalks import get_list, set_f1
from niah_devtools.standin_answers import answer_text
from tests import HEAVY
from tests.unit.test_ruler_tasks import built as built_as_worker

TASK = get_task("graphwalks")
GRAPH = re.compile(
    r"Here is the graph to operate on:\nThe graph has the following edges:\n(.*)\n\n"
    r"Operation:\n(.*)\n\nYou should immediately return",
    re.DOTALL,
)
LINE = re.compile(r"([0-9a-f]{10}) -> ([0-9a-f]{10})")


def built(length: int, tokenizer: SentencePieceTokenizer, **options: Any) -> tuple[Sample, str]:
    """The sample of seed 7's cell and its prompt, built as the worker builds it."""
    _, sample, prompt = built_as_worker("graphwalks", length, tokenizer, **options)
    return sample, prompt.prompt


def read_back(prompt: str) -> tuple[list[tuple[str, str]], str]:
    """The edges and the operation, as a reader of the prompt finds them."""
    found = GRAPH.search(prompt)
    assert found, prompt[-500:]
    lines = found.group(1).split("\n")
    edges = [LINE.fullmatch(line) for line in lines]
    assert all(edges), [line for line, edge in zip(lines, edges, strict=True) if not edge][:3]
    return [(edge.group(1), edge.group(2)) for edge in edges if edge], found.group(2)


def at_depth(edges: list[tuple[str, str]], start: str, depth: int) -> set[str]:
    """Nodes whose shortest path from ``start`` has ``depth`` edges (a queue, by the book)."""
    distance = {start: 0}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for source, target in edges:
            if source == node and target not in distance:
                distance[target] = distance[node] + 1
                queue.append(target)
    return {node for node, steps in distance.items() if steps == depth}


def answer_of(edges: list[tuple[str, str]], operation: str) -> set[str]:
    if bfs := re.fullmatch(r"Perform a BFS from node (\w+) with depth (\d+)\.", operation):
        wanted = bfs.group(1)
        # by the book but fast: a queue over each node's out-edges
        out: dict[str, list[str]] = {}
        for source, target in edges:
            out.setdefault(source, []).append(target)
        distance, queue = {wanted: 0}, deque([wanted])
        while queue:
            node = queue.popleft()
            for target in out.get(node, []):
                if target not in distance:
                    distance[target] = distance[node] + 1
                    queue.append(target)
        return {node for node, steps in distance.items() if steps == int(bfs.group(2))}
    parents = re.fullmatch(r"Find the parents of node (\w+)\.", operation)
    assert parents, operation
    return {a for a, b in edges if b == parents.group(1) and a != parents.group(1)}


# --- the card's extraction and grading, on answers worked by hand --------------------------

TRUTH = ("aaaa000001", "bbbb000002", "cccc000003", "dddd000004")


def scored(answer: str, truth: tuple[str, ...] = TRUTH) -> tuple[float, dict[str, Any], str]:
    sample = Sample(insertions=(), question="", expected=truth)
    verdict = TASK.score(sample, answer)
    return verdict.score, verdict.details, verdict.outcome


def test_the_right_set_in_any_order_scores_1() -> None:
    score, details, outcome = scored(
        "Final Answer: [dddd000004, aaaa000001, cccc000003, bbbb000002]"
    )
    assert (score, outcome) == (1.0, "correct")
    assert details == {
        "precision": 1.0,
        "recall": 1.0,
        "parse_failed": False,
        "answered_nodes": 4,
        "expected_nodes": 4,
    }


def test_a_partial_answer_scores_its_f1() -> None:
    # 2 of 4: precision 2/2, recall 2/4, F1 = 2 * 0.5 / 1.5 = 2/3.
    score, details, outcome = scored("Final Answer: [aaaa000001, bbbb000002]")
    assert score == 2 * (1.0 * 0.5) / (1.0 + 0.5) == pytest.approx(2 / 3)
    assert (details["precision"], details["recall"], outcome) == (1.0, 0.5, "wrong")


def test_extra_nodes_cost_precision() -> None:
    # All 4 and 2 more: precision 4/6, recall 1, F1 = 2 * (2/3) / (5/3) = 0.8.
    score, details, _ = scored(
        "Final Answer: [aaaa000001, bbbb000002, cccc000003, dddd000004, eeee000005, ffff000006]"
    )
    assert score == pytest.approx(0.8)
    assert (details["precision"], details["recall"]) == (pytest.approx(2 / 3), 1.0)
    # One right, one wrong: precision 1/2, recall 1/4, F1 = 2 * (1/8) / (3/4) = 1/3.
    score, details, _ = scored("Final Answer: [aaaa000001, eeee000005]")
    assert (score, details["precision"], details["recall"]) == (pytest.approx(1 / 3), 0.5, 0.25)


def test_nothing_in_common_scores_0_not_the_card_s_1() -> None:
    # The card prints "else 1" for precision + recall == 0: a wrong answer would score 1.
    assert scored("Final Answer: [eeee000005]")[0] == 0.0
    assert scored("Final Answer: []")[:2] == (
        0.0,
        {
            "precision": 0.0,
            "recall": 0.0,
            "parse_failed": False,
            "answered_nodes": 0,
            "expected_nodes": 4,
        },
    )


def test_an_empty_answer_to_an_empty_truth_scores_1() -> None:
    assert scored("Final Answer: []", truth=())[:1] == (1.0,)
    assert scored("Final Answer: [aaaa000001]", truth=())[0] == 0.0
    assert set_f1(set(), set(), failed_to_parse=False).f1 == 1.0


@pytest.mark.parametrize(
    "answer",
    [
        "aaaa000001, bbbb000002, cccc000003, dddd000004",  # no "Final Answer:"
        "Final Answer: aaaa000001, bbbb000002",  # no brackets
        "Final Answer: [aaaa000001, bbbb000002, cccc000003, dddd000004]\nDone.",  # not last
        "final answer: [aaaa000001, bbbb000002, cccc000003, dddd000004]",  # as the card: cased
        "",
    ],
)
def test_an_answer_whose_last_line_does_not_parse_scores_0_flagged(answer: str) -> None:
    score, details, outcome = scored(answer)
    assert (score, outcome, details["parse_failed"]) == (0.0, "wrong", True)
    assert get_list(answer) == ([], True)


@pytest.mark.parametrize(
    ("answer", "nodes"),
    [
        ("Final Answer: [a, b, c]", ["a", "b", "c"]),
        ("Final Answer: [a, b, c]\n", ["a", "b", "c"]),  # a trailing line break (not the card's)
        ("Final Answer:[a,b]", ["a", "b"]),  # the space after the colon is optional
        ("Final Answer: [ a ,, b , ]", ["a", "b"]),  # items stripped, empty ones dropped
        ("Final Answer: []", []),
        ("Final Answer: [[a, b]]", ["a", "b"]),  # every bracket at the ends goes
        ("I walked it twice.\nSo: Final Answer: [a]", ["a"]),  # text before it, same line
        ("Final Answer: [a] and [b]", ["a] and [b"]),  # greedy, as the card's ".*"
        ("Final Answer: [a, a, b]", ["a", "a", "b"]),  # a set when scored
    ],
)
def test_the_card_s_get_list_reads_the_bracketed_list(answer: str, nodes: list[str]) -> None:
    assert get_list(answer) == (nodes, False)


def test_a_repeated_node_counts_once() -> None:
    repeated = "Final Answer: [aaaa000001, aaaa000001, bbbb000002, cccc000003, dddd000004]"
    assert scored(repeated)[:2][0] == 1.0


# --- graphs, token-exact, answered by reading them back ------------------------------------


QUESTIONS: list[dict[str, Any]] = [
    {},
    {"bfs_depth": 1},
    {"bfs_depth": 3},
    {"bfs_depth": 6},
    {"graph_problem": "parents"},
]
# A walk of depth 3 needs about 1,500 tokens, of depth 6 about 4,000 (docs/tasks/graphwalks.md).
SHORTEST = {3: 2_000, 6: 8_000}


@pytest.mark.parametrize(
    ("length", "options"),
    [
        (length, options)
        for length in (1_000, 4_000, 32_000)
        for options in QUESTIONS
        if length >= SHORTEST.get(options.get("bfs_depth", 0), 0)
    ],
)
def test_the_prompt_is_exact_and_its_graph_gives_the_expected_set(
    tokenizer: SentencePieceTokenizer, length: int, options: dict[str, Any]
) -> None:
    sample, prompt = built(length, tokenizer, **options)
    assert len(tokenizer.encode(prompt)) == length
    edges, operation = read_back(prompt)
    assert operation == sample.question
    assert answer_of(edges, operation) == set(sample.expected)
    assert 1 <= len(sample.expected) <= GRAPH_MAX_ANSWER_NODES
    # "All nodes are at least degree 1": here every node has an out-edge.
    nodes = {node for edge in edges for node in edge}
    assert nodes == {source for source, _ in edges}
    # A node's out-edges are listed together, as the dataset lists them.
    sources = [source for source, _ in edges]
    assert len([s for i, s in enumerate(sources) if i == 0 or sources[i - 1] != s]) == len(nodes)
    assert prompt.startswith("You will be given a graph as a list of directed edges.")
    assert prompt.endswith(
        "If the operation returns the empty set, your response should be:\nFinal Answer: []"
    )


def test_the_book_bfs_and_the_fast_one_agree(tokenizer: SentencePieceTokenizer) -> None:
    sample, prompt = built(4_000, tokenizer, bfs_depth=3)
    edges, operation = read_back(prompt)
    start = sample.details["node"]
    assert at_depth(edges, start, 3) == answer_of(edges, operation) == set(sample.expected)


def test_a_node_met_earlier_is_not_returned_again(tokenizer: SentencePieceTokenizer) -> None:
    """Some planted walk leads back: its answer is not every node a walk of d edges ends at."""
    walks_back = 0
    for index in range(12):
        spec = RunRequest(task="graphwalks", context_lengths=[4000], bfs_depth=3, seed=index)
        sample = TASK.sample(spec, Cell(4000, 50.0))
        assert isinstance(sample.context_maker, GraphEdges)
        planted = sample.context_maker.planted
        ends = {sample.details["node"]}
        for _ in range(3):
            ends = {b for a, b in planted.edges if a in ends}
        walks_back += ends != set(sample.expected)
    assert walks_back > 0


@pytest.mark.parametrize("problem", ["bfs", pytest.param("parents", marks=HEAVY)])
def test_a_million_token_graph_is_exact_and_quick(
    tokenizer: SentencePieceTokenizer, problem: str
) -> None:
    began = time.perf_counter()
    sample, prompt = built(1_000_000, tokenizer, graph_problem=problem)
    seconds = time.perf_counter() - began
    assert len(tokenizer.encode(prompt)) == 1_000_000
    edges, operation = read_back(prompt)
    assert answer_of(edges, operation) == set(sample.expected)
    assert len(edges) > 40_000
    assert seconds < 10, seconds  # about 1-2 s here; a regression to quadratic shows


def test_samples_are_seeded_and_reproducible(tokenizer: SentencePieceTokenizer) -> None:
    first, prompt = built(4_000, tokenizer, graph_problem="parents")
    again, prompt_again = built(4_000, tokenizer, graph_problem="parents")
    assert (first, prompt) == (again, prompt_again)
    spec = RunRequest(task="graphwalks", context_lengths=[4000], seed=8)
    other = TASK.sample(spec, Cell(4000, 50.0, 1))
    assert other.question != first.question and other.expected != first.expected


def test_a_length_too_short_for_the_walk_is_refused_naming_bfs_depth(
    tokenizer: SentencePieceTokenizer,
) -> None:
    with pytest.raises(ContextTooShortError, match="bfs_depth"):
        built(700, tokenizer, bfs_depth=10)


# --- the stand-in answers it right, and the answer fits its room ----------------------------


@pytest.mark.parametrize(
    ("length", "options"),
    [
        (1_000, {}),
        (8_000, {"bfs_depth": 4}),
        (32_000, {"graph_problem": "parents"}),
        pytest.param(1_000_000, {"bfs_depth": 3}, marks=HEAVY),
    ],
)
def test_the_standin_answers_every_graph_right(
    tokenizer: SentencePieceTokenizer, length: int, options: dict[str, Any]
) -> None:
    sample, prompt = built(length, tokenizer, **options)
    answer = answer_text(prompt)
    assert answer.startswith("Final Answer: [") and "\n" not in answer
    verdict = TASK.score(sample, answer)
    assert (verdict.outcome, verdict.score) == ("correct", 1.0)


def test_the_answer_room_holds_the_largest_answer(tokenizer: SentencePieceTokenizer) -> None:
    """32 IDs of ten digits (a token each, the most an ID takes) fit the room."""
    spec = RunRequest(task="graphwalks", context_lengths=[4000])
    largest = "Final Answer: [" + ", ".join(["1234567890"] * GRAPH_MAX_ANSWER_NODES) + "]"
    assert len(tokenizer.encode(largest)) <= answer_room(spec) - ANSWER_SLACK


# --- options --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "field", "said"),
    [
        ({"bfs_depth": 0}, "bfs_depth", "at least 1"),
        ({"bfs_depth": 11}, "bfs_depth", "at most 10"),
        ({"graph_problem": "dfs"}, "graph_problem", "bfs"),
        ({"graph_problem": "parents", "bfs_depth": 3}, "bfs_depth", "graph_problem bfs"),
        ({"task": "single", "bfs_depth": 3}, "bfs_depth", "applies to task graphwalks"),
        ({"task": "common_words", "graph_problem": "parents"}, "graph_problem", "graphwalks"),
    ],
)
def test_a_bad_option_is_refused_naming_its_field(
    options: dict[str, Any], field: str, said: str
) -> None:
    with pytest.raises(RequestError) as refused:
        parse_request({"task": "graphwalks", "context_lengths": [4000], **options})
    assert refused.value.field == field
    assert said in str(refused.value)


def test_other_tasks_runs_keep_their_ids() -> None:
    """GraphWalks' options are its own: another task's run is named without them."""
    for task in ("single", "common_words", "multi_key"):
        canonical = RunRequest(task=task, context_lengths=[1000]).canonical_json()
        assert "graph_problem" not in canonical and "bfs_depth" not in canonical
    bfs = RunRequest(task="graphwalks", context_lengths=[1000])
    assert (
        bfs.run_id() != RunRequest(task="graphwalks", context_lengths=[1000], bfs_depth=3).run_id()
    )
    parents = RunRequest(task="graphwalks", context_lengths=[1000], graph_problem="parents")
    assert bfs.run_id() != parents.run_id()
