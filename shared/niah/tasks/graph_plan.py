"""GraphWalks' planted questions: the few nodes and edges that decide an answer.

Drawn from the cell's seeded generator before the graph is sized, as a needle is before
its haystack (``niah.tasks.graph_edges`` grows the graph around them). Without a
tokenizer, so that admission can plant a cell's question and refuse a length its planted
graph cannot fit (``GraphWalks.short_length``).
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

Edge = tuple[str, str]
GraphProblem = Literal["bfs", "parents"]
# Node IDs are this many hexadecimal characters; no question is planted with more than
# GRAPH_MAX_ANSWER_NODES nodes in its answer (the answer budget counts on it).
GRAPH_NODE_BYTES = 10
GRAPH_MAX_ANSWER_NODES = 32
# A planted node's out-edges: 1 to 4; a BFS target is a new node this often (else a node
# the walk has already met: the "revisited" nodes a BFS does not count again).
PLANTED_OUT_DEGREE = (1, 4)
NEW_NODE_SHARE = 0.7
INNER_LAYER_MOST = 8
# The parents question: 1 to 6 parents; a parent's edge listed twice, or the node's own
# self-loop (which the prompt says not to return), this often.
MAX_PARENTS = 6
DUPLICATE_SHARE = 0.2
SELF_LOOP_SHARE = 0.3


@dataclass(frozen=True)
class PlantedGraph:
    """The nodes and edges that decide a question's answer, and what may not be added.

    ``closed``: nodes that no added edge may leave; ``shut``: a node no added edge may
    enter (None: any).
    """

    nodes: tuple[str, ...]
    edges: tuple[Edge, ...]
    closed: frozenset[str] = frozenset()
    shut: str | None = None


class NodeIds:
    """Distinct node IDs of 10 hexadecimal characters from a seeded generator."""

    def __init__(self, rng: random.Random, taken: Iterable[str] = ()) -> None:
        self._rng = rng
        self._taken = set(taken)

    def new(self) -> str:
        """An ID not given before (nor among ``taken``)."""
        while True:
            node = f"{self._rng.getrandbits(4 * GRAPH_NODE_BYTES):0{GRAPH_NODE_BYTES}x}"
            if node not in self._taken:
                self._taken.add(node)
                return node


def bfs_layer(edges: Iterable[Edge], start: str, depth: int) -> set[str]:
    """The nodes whose shortest way from ``start`` is exactly ``depth`` edges."""
    out: dict[str, list[str]] = {}
    for source, target in edges:
        out.setdefault(source, []).append(target)
    seen, layer = {start}, {start}
    for _ in range(depth):
        layer = {target for node in layer for target in out.get(node, ()) if target not in seen}
        seen |= layer
    return layer


def parents_of(edges: Iterable[Edge], node: str) -> set[str]:
    """The nodes with an edge to ``node``, the node itself aside."""
    return {source for source, target in edges if target == node and source != node}


def plant_bfs(rng: random.Random, depth: int, most: int) -> tuple[PlantedGraph, str, set[str]]:
    """A start node's walk to ``depth``: the planted graph, the start, the nodes at ``depth``.

    The last layer holds 1 to ``most`` nodes, the ones before it at most
    ``INNER_LAYER_MOST`` (so a deep walk stays small); edges also lead back to nodes met
    before.
    """
    ids = NodeIds(rng)
    layers = [[ids.new()]]
    edges: list[Edge] = []
    for level in range(depth):
        met = [node for layer in layers for node in layer]
        reached: list[str] = []
        room = most if level == depth - 1 else min(most, INNER_LAYER_MOST)
        for node in layers[level]:
            for _ in range(rng.randint(*PLANTED_OUT_DEGREE)):
                if len(reached) < room and rng.random() < NEW_NODE_SHARE:
                    reached.append(ids.new())
                    edges.append((node, reached[-1]))
                else:
                    edges.append((node, rng.choice(met + reached)))
        if not reached:  # the walk goes on: one more edge to a new node
            reached.append(ids.new())
            edges.append((rng.choice(layers[level]), reached[-1]))
        layers.append(reached)
    closed = frozenset(node for layer in layers[:-1] for node in layer)
    nodes = tuple(node for layer in layers for node in layer)
    start = layers[0][0]
    return PlantedGraph(nodes, tuple(edges), closed), start, bfs_layer(edges, start, depth)


def plant_parents(rng: random.Random) -> tuple[PlantedGraph, str, set[str]]:
    """A node and its 1 to ``MAX_PARENTS`` parents: the planted graph, the node, the parents."""
    ids = NodeIds(rng)
    node = ids.new()
    parents = [ids.new() for _ in range(rng.randint(1, MAX_PARENTS))]
    edges = [(parent, node) for parent in parents]
    edges += [(parent, node) for parent in parents if rng.random() < DUPLICATE_SHARE]
    if rng.random() < SELF_LOOP_SHARE:
        edges.append((node, node))
    return PlantedGraph((node, *parents), tuple(edges), shut=node), node, parents_of(edges, node)


def plant_question(
    problem: GraphProblem, depth: int, rng: random.Random
) -> tuple[PlantedGraph, str, set[str]]:
    """A question planted from ``rng``: a BFS to ``depth``, or a node's parents."""
    if problem == "bfs":
        return plant_bfs(rng, depth, GRAPH_MAX_ANSWER_NODES)
    return plant_parents(rng)
