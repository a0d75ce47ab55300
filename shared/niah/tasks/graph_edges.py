"""GraphWalks' graphs: a planted question, and random edges around it to the cell's length.

The answer is fixed before the graph is sized, as a needle is before its haystack:
``plant_bfs`` and ``plant_parents`` (``niah.tasks.graph_plan``) draw the few
nodes and edges that decide it, and
``GraphEdges`` (the sample's ``ContextMaker``) adds random nodes and edges until the edge
list fills the prompt to the token. No added edge can change the answer:

- BFS from a node at depth d: which nodes lie exactly d edges away (the shortest way)
  depends only on the out-edges of the nodes nearer than d. Those nodes are planted with
  all their out-edges ("closed"); no added edge leaves one. Edges into them change
  nothing, and a node reached first at depth d may lead anywhere.
- Parents of a node: no added edge enters it ("shut").

As in the published graphs (openai/graphwalks, dataset rows as copied into public
repositories, read 2026-11-28): node IDs are 10 hexadecimal characters (the dataset's
are MD5 prefixes; ours are seeded random), every node has at least one edge (the
prompt says "All nodes are at least degree 1": here each has an out-edge), duplicate
edges and self-loops occur, and a node's out-edges are listed together, one line
"a -> b" each.

Counting rests on what ``niah.core.prompts.generated_context`` rests on: a newline never
joins another character, nor a non-space character a following space, so an edge
line's tokens are those of "{a} ->" and " {b}", and the list's are the lines' plus one
newline between each two; only the first and last lines are counted with the
template's text around them.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from niah.core.prompts.generated_context import PieceCounter
from niah.errors import ContextTooShortError
from niah.tasks.graph_plan import (
    Edge,
    NodeIds,
    PlantedGraph,
    bfs_layer,
    parents_of,
    plant_bfs,
    plant_parents,
)

# The planting lives on the ground floor (admission plants a cell's question to size it);
# these names stay importable from here.
__all__ = [
    "Edge",
    "GraphEdges",
    "NodeIds",
    "PlantedGraph",
    "bfs_layer",
    "parents_of",
    "plant_bfs",
    "plant_parents",
]

# Added nodes get this many out-edges on average (at least one each), as planted ones do.
MEAN_OUT_DEGREE = 2.0
# Edges are added until this many in a row do not fit; the last tokens get this many
# tries (each with one more edge) to be made up.
MISSES = 8
LAST_TRIES = 8


class _Listing:
    """The edge list as it grows: each node's out-edges, and their tokens as lines."""

    def __init__(self, planted: PlantedGraph, counter: PieceCounter) -> None:
        self.counter = counter
        self.out: dict[str, list[str]] = {node: [] for node in planted.nodes}
        self.spent = 0  # tokens of the lines so far, each with one newline
        self.chosen: list[tuple[str, int]] = []  # edges not planted: (source, place)
        for edge in planted.edges:
            self.add(edge, planted=True)

    def dst(self, node: str) -> int:
        """Tokens of " {node}", the second half of a line."""
        return self.counter.count(f" {node}")

    def cost(self, edge: Edge) -> int:
        """Tokens of the line "a -> b" and its newline."""
        return self.counter.count(f"{edge[0]} ->") + self.dst(edge[1]) + 1

    def add(self, edge: Edge, *, planted: bool = False) -> None:
        if not planted:
            self.chosen.append((edge[0], len(self.out[edge[0]])))
        self.out[edge[0]].append(edge[1])
        self.spent += self.cost(edge)

    def junctions(self, head: str, tail: str, order: Sequence[str]) -> int:
        """Tokens the first and last lines join with the template's text (0 for ours)."""
        first = f"{order[0]} -> {self.out[order[0]][0]}"
        last = f"{order[-1]} -> {self.out[order[-1]][-1]}"
        count = self.counter.count
        alone = count(head) + count(first) + count(last) + count(tail)
        return count(head + first) + count(last + tail) - alone

    def retarget(
        self, gap: int, targets: Sequence[str], keep: set[tuple[str, int]], rng: random.Random
    ) -> int:
        """Move chosen edges to targets of other lengths until ``gap`` tokens are made up.

        Each edge moves once, to a target as many tokens longer (or shorter) as the gap
        still needs, or as near as any target comes; the edges in ``keep`` stay. Returns
        what is left of the gap (0 when it closes).
        """
        by_tokens: dict[int, list[str]] = {}
        for node in targets:
            by_tokens.setdefault(self.dst(node), []).append(node)
        for source, place in self.chosen:
            if gap == 0:
                break
            if (source, place) in keep:
                continue
            now = self.dst(self.out[source][place])
            steps = [t - now for t in by_tokens if (t - now) * gap > 0 and abs(t - now) <= abs(gap)]
            if steps:
                step = max(steps, key=abs)
                self.out[source][place] = rng.choice(by_tokens[now + step])
                self.spent += step
                gap -= step
        return gap

    def text(self, order: Sequence[str]) -> str:
        return "\n".join(f"{source} -> {target}" for source in order for target in self.out[source])


@dataclass(frozen=True)
class GraphEdges:
    """A cell's edge list, made to its length around the planted graph (seeded)."""

    planted: PlantedGraph
    seed: str

    def make(self, counter: PieceCounter, *, head: str, tail: str, target: int) -> str:
        """The edge list whose prompt ``head + list + tail`` has exactly ``target`` tokens.

        Added nodes (about one per ``MEAN_OUT_DEGREE`` edges) get one edge each, random
        edges are added while they fit, and the last few tokens are made up by moving
        added edges to targets whose IDs take more (or fewer) tokens.
        """
        rng = random.Random(self.seed)
        planted = self.planted
        listing = _Listing(planted, counter)
        # The list's tokens: each line's with one newline, less the newline before the first.
        room = target - counter.count(head) - counter.count(tail) + 1
        free = [node for node in planted.nodes if node not in planted.closed]
        ids = NodeIds(rng, planted.nodes)
        for _ in range(self._added_nodes(listing, room, len(free))):
            free.append(ids.new())
            listing.out[free[-1]] = []
        targets = [node for node in listing.out if node != planted.shut]
        order = list(listing.out)
        rng.shuffle(order)
        for source in free:  # every node has an edge: the free ones' first
            listing.add((source, rng.choice(targets)))
        # The first and last lines are now fixed (no edge is added to the last node's),
        # and so is what they join with the template's text.
        room -= listing.junctions(head, tail, order)
        sources = [node for node in free if node != order[-1]]
        misses = 0
        while sources and misses < MISSES:
            edge = (rng.choice(sources), rng.choice(targets))
            if listing.spent + listing.cost(edge) > room:
                misses += 1
                continue
            listing.add(edge)
            misses = 0
        keep = {(order[0], 0), (order[-1], len(listing.out[order[-1]]) - 1)}
        for _ in range(LAST_TRIES):
            if listing.retarget(room - listing.spent, targets, keep, rng) == 0:
                return listing.text(order)
            if room - listing.spent < 0 or not sources:
                break
            # Too few tokens to move up to: one more edge, and move some down instead.
            listing.add((rng.choice(sources), rng.choice(targets)))
        raise ContextTooShortError(
            f"{target} tokens cannot hold GraphWalks' prompt and its graph (the "
            "question's own nodes and edges, and an edge for every node); ask for a "
            "longer context, or a smaller bfs_depth"
        )

    def _added_nodes(self, listing: _Listing, room: int, free: int) -> int:
        """How many nodes to add so the free ones average ``MEAN_OUT_DEGREE`` edges."""
        sample = NodeIds(random.Random(f"{self.seed}:sizes"))
        lines = [(sample.new(), sample.new()) for _ in range(32)]
        average = sum(map(listing.cost, lines)) / len(lines)
        return max(0, int((room - listing.spent) / (average * MEAN_OUT_DEGREE)) - free)
