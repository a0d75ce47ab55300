"""``graphwalks``: OpenAI's GraphWalks, multi-hop reasoning over a graph filling the context.

The context is a directed graph written as its edge list, "a -> b" a line; the question
asks for the nodes a breadth-first search from a node reaches at exactly ``bfs_depth``
edges, or for a node's parents. The answer is a set of node IDs on the reply's last
line, "Final Answer: [a, b]", scored by set F1.

Sources (read 2026-11-28 through the search tool): the dataset card, openai/graphwalks
on Hugging Face (README.md, its example prompt, "Extraction and Grading" and changelog
of 2/27/26), and the dataset's prompts as copied whole into public repositories (the
instructions on two lines, "<begin example>" ... "<end example>", "Here is the graph to
operate on:", the operation's wording, the closing format instructions).

Where this differs, and why (docs/tasks/graphwalks.md says more):
- Graphs are generated per cell (seeded) to the cell's length in tokens; the question's
  nodes are planted first (``niah.tasks.graph_edges``), answer sets hold 1 to
  ``GRAPH_MAX_ANSWER_NODES`` nodes (the dataset's reach thousands, or none).
- Three examples of our choosing around the card's one (the card does not show the
  other two): BFS at depth 1 (the card's), at depth 2 (a node met at depth 1 is not
  returned again), and a node's parents. The BFS instruction gains one sentence saying
  "exactly that depth" as the changelog of 2/27/26 says the prompt now does (the card
  does not show the new words).
- Two lines of the card's code are read as they are meant, not as printed: its regex
  match includes "Final Answer: [" in the first item (so a right answer could never
  score 1), and its F1 of 1 when precision and recall are both 0 (the card's fix for an
  empty truth) would give full marks to a wrong answer. Here the list is what the
  brackets hold; F1 is 1 when both sets are empty, 0 when nothing overlaps or the last
  line does not parse.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import Field

from niah.core.request.axes import at_variant
from niah.core.request.grid import Cell
from niah.core.request.run_options import RunOptions
from niah.core.request.spec import RunRequest
from niah.core.request.task_options import TaskOptions
from niah.tasks.base import Outcome, Sample, ShortLength, Task, Verdict, sample_rng
from niah.tasks.generated_sizes import buffer_note, own_tokens
from niah.tasks.graph_edges import GraphEdges
from niah.tasks.graph_plan import (
    GRAPH_MAX_ANSWER_NODES,
    GRAPH_NODE_BYTES,
    GraphProblem,
    PlantedGraph,
    plant_question,
)

# The published prompt: the card's instructions, a worked example, the graph, the
# operation, the answer's format. One sentence (the second about BFS) is ours.
TEMPLATE = (
    "You will be given a graph as a list of directed edges. All nodes are at least degree 1. "
    "You will also get a description of an operation to perform on the graph.\n"
    "Your job is to execute the operation on the graph and return the set of nodes that the "
    "operation results in. If asked for a breadth-first search (BFS), only return the nodes "
    "that are reachable at that depth, do not return the starting node. Only return the "
    "nodes whose shortest path from the starting node has exactly that many edges. If asked "
    "for the parents of a node, only return the nodes that have an edge leading to the given "
    "node, do not return the given node itself.\n\n"
    "Here is an example:\n<begin example>\n\n"
    "The graph has the following edges:\nuvwx -> alke\nabcd -> uvwx\nabcd -> efgh\n"
    "efgh -> uvwx\n\n"
    "Example 1:\nOperation:\nPerform a BFS from node abcd with depth 1.\n"
    "Final Answer: [uvwx, efgh]\n\n"
    "Example 2:\nOperation:\nPerform a BFS from node abcd with depth 2.\n"
    "Final Answer: [alke]\n\n"
    "Example 3:\nOperation:\nFind the parents of node uvwx.\nFinal Answer: [abcd, efgh]\n\n"
    "<end example>\n"
    "Here is the graph to operate on:\nThe graph has the following edges:\n{context}\n\n"
    "Operation:\n{question}\n\n"
    "You should immediately return the set of nodes that the operation results in, with no "
    "additional text. Return your final answer as a list of nodes in the very last line of "
    "your response. For example, if the operation returns the set of nodes [node1, node2, "
    "node3], your response should be:\nFinal Answer: [node1, node2, node3]\n"
    "If the operation returns the empty set, your response should be:\nFinal Answer: []"
)
BFS_QUESTION = "Perform a BFS from node {node} with depth {depth}."
PARENTS_QUESTION = "Find the parents of node {node}."
NAME = "graphwalks"
FINAL_ANSWER = "Final Answer:"
# The card's pattern for the answer list; the group is what the brackets hold.
FINAL_ANSWER_LIST = re.compile(r"Final Answer: ?(\[.*\])")
# The deepest BFS asked for (its planted walk grows with the depth).
MAX_BFS_DEPTH = 10
# A right answer: "Final Answer: [id, id, ...]", every node with its ", ".
ANSWER_BYTES = len("Final Answer: []") + GRAPH_MAX_ANSWER_NODES * (GRAPH_NODE_BYTES + 2)

# How long a graph must be, bounded without a tokenizer (niah.tasks.generated_sizes; the
# figures pinned by tests/unit/test_generated_sizes.py). Tokens of the built-in template
# around the graph with its question (any node ID, BFS or parents):
GRAPHWALKS_OWN_TOKENS = 411
# An edge line "a -> b" with its newline.
EDGE_LINE_TOKENS = 23
# Room the worker needs to land on the exact length: a few more lines.
GRAPHWALKS_LANDING = 2 * EDGE_LINE_TOKENS
# Below this length GraphWalks' graph has too few nodes and edges for the worker to move
# its last tokens onto the exact length reliably, though the planted graph fits: built
# at every length from 450 to 1,800 tokens (3 seeds, bfs_depth 1, 2, 3, 5, parents),
# admitted lengths failed up to 864 tokens, none from 1,000 (20 seeds, 1,000 to 1,400).
GRAPHWALKS_LEAST_LENGTH = 1_000


class GraphWalksOptions(TaskOptions):
    """The question each graph asks: a BFS to a depth, or a node's parents."""

    graph_problem: GraphProblem = Field(
        default="bfs",
        description="graphwalks: bfs (the nodes at exactly bfs_depth edges) or parents",
    )
    bfs_depth: int = Field(
        default=2,
        ge=1,
        le=MAX_BFS_DEPTH,
        description=f"graphwalks: the BFS's depth in edges (1-{MAX_BFS_DEPTH}, default 2)",
    )

    takes_haystack_order = False  # the graph is the whole context

    def answer_bytes(self, request: RunOptions) -> int:
        """The card's answer line with every node a planted question can have."""
        return ANSWER_BYTES

    def check(self, request: RunOptions) -> None:
        """A depth is a BFS's (by value: a stored spec spells every default out)."""
        default = type(self).model_fields["bfs_depth"].default
        if self.graph_problem == "parents" and self.bfs_depth != default:
            raise ValueError(
                "bfs_depth applies to graph_problem bfs, not parents; leave bfs_depth out"
            )

    def plant(self, spec: RunRequest, cell: Cell) -> tuple[PlantedGraph, str, set[str]]:
        """The cell's question, planted from its seeded generator (as the task and admission do)."""
        return plant_question(self.graph_problem, self.bfs_depth, sample_rng(spec.seed, cell, NAME))


def least_graphwalks_length(spec: RunRequest, cell: Cell) -> int:
    """The least length at which the cell's graph surely builds.

    The cell's question is planted here as the task plants it (same seed): its edges,
    and one edge for each node the walk does not close, are the least graph; never
    below ``GRAPHWALKS_LEAST_LENGTH`` of prompt.
    """
    planted = GraphWalks().options_of(spec).plant(spec, cell)[0]
    lines = len(planted.edges) + sum(1 for node in planted.nodes if node not in planted.closed)
    graph = own_tokens(spec, GRAPHWALKS_OWN_TOKENS) + lines * EDGE_LINE_TOKENS
    return max(graph + GRAPHWALKS_LANDING, GRAPHWALKS_LEAST_LENGTH) + (
        spec.final_context_length_buffer
    )


def get_list(response: str) -> tuple[list[str], bool]:
    """The nodes on the response's very last line, and whether it failed to parse.

    The card's ``get_list``: only the last line counts; it must hold "Final Answer:" and
    a bracketed list; items are split on commas and stripped, empty ones dropped. One
    difference: trailing whitespace is dropped first. The card's split leaves a reply
    that ends in a newline an empty last line, a right answer scored 0 for a line
    break; Google does not document whether a reply may end in one, so this takes it.
    """
    line = response.rstrip().split("\n")[-1]
    if FINAL_ANSWER not in line:
        return [], True
    list_part = FINAL_ANSWER_LIST.search(line)
    if not list_part:
        return [], True
    items = list_part.group(1).strip("[]").split(",")
    return [item.strip() for item in items if item.strip()], False


@dataclass(frozen=True)
class SetScore:
    """The card's grading of one answer: precision, recall and their F1."""

    precision: float
    recall: float
    f1: float


def set_f1(sampled: set[str], truth: set[str], *, failed_to_parse: bool) -> SetScore:
    """The card's precision and recall over node sets, and their harmonic mean.

    An unparsed answer scores 0; two empty sets score 1 (a right empty answer); sets
    with nothing in common score 0.
    """
    if failed_to_parse:
        return SetScore(0.0, 0.0, 0.0)
    n_golden, n_sampled = len(truth), len(sampled)
    if n_golden == n_sampled == 0:
        return SetScore(1.0, 1.0, 1.0)
    n_overlap = len(sampled & truth)
    recall = n_overlap / n_golden if n_golden > 0 else 0.0
    precision = n_overlap / n_sampled if n_sampled > 0 else 0.0
    f1 = 2 * (recall * precision) / (recall + precision) if recall + precision > 0 else 0.0
    return SetScore(precision, recall, f1)


class GraphWalks(Task[GraphWalksOptions]):
    """GraphWalks: the nodes a BFS reaches at a depth, or a node's parents, as a set."""

    name = NAME
    options = GraphWalksOptions

    def sample(self, spec: RunRequest, cell: Cell) -> Sample:
        """A planted question and its answer; the graph grows to the cell's length when built."""
        options = self.options_of(spec)
        rng = sample_rng(spec.seed, cell, self.name)
        planted, node, answer = plant_question(options.graph_problem, options.bfs_depth, rng)
        if options.graph_problem == "bfs":
            depth = options.bfs_depth
            question = BFS_QUESTION.format(node=node, depth=depth)
            details = {"graph_problem": "bfs", "bfs_depth": depth, "node": node}
        else:
            question = PARENTS_QUESTION.format(node=node)
            details = {"graph_problem": "parents", "node": node}
        seed = hashlib.sha256(f"{rng.getrandbits(128)}".encode()).hexdigest()[:16]
        return Sample(
            insertions=(),
            question=question,
            expected=tuple(sorted(answer)),
            details=details,
            template=None if spec.prompt_template else TEMPLATE,
            context_maker=GraphEdges(planted, seed),
        )

    def score(self, sample: Sample, answer: str) -> Verdict:
        """The card's set F1 of the last line's nodes; correct when it is 1."""
        nodes, failed = get_list(answer)
        graded = set_f1(set(nodes), set(sample.expected), failed_to_parse=failed)
        outcome: Outcome = "correct" if graded.f1 == 1.0 else "wrong"
        return Verdict(
            outcome,
            graded.f1,
            {
                "precision": graded.precision,
                "recall": graded.recall,
                "parse_failed": failed,
                "answered_nodes": len(set(nodes)),
                "expected_nodes": len(sample.expected),
            },
        )

    def short_length(self, spec: RunRequest, cells: Sequence[Cell]) -> ShortLength | None:
        """The first length of ``cells`` a cell's planted graph does not fit in."""
        worst: dict[int, int] = {}
        for cell in cells:
            need = least_graphwalks_length(at_variant(spec, cell.variant), cell)
            if cell.context_length < need:
                worst[cell.context_length] = max(worst.get(cell.context_length, 0), need)
        if not worst:
            return None
        length = min(worst)
        options = self.options_of(spec)
        what, fix = (
            (f"a BFS to bfs_depth {options.bfs_depth}", "or a smaller bfs_depth")
            if options.graph_problem == "bfs"
            else ("a parents question", "")
        )
        return ShortLength(
            "context_lengths",
            f"{length:,} tokens cannot hold GraphWalks' graph for {what} (the question's "
            f"own nodes and edges{buffer_note(spec)}): its cells need at least "
            f"~{worst[length]:,}; use a longer length {fix}".rstrip(),
        )
