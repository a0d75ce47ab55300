"""The least length a generated context can be built at, bounded without a tokenizer.

``common_words`` lists ``num_cw x freq_cw`` entries whatever the length, and GraphWalks
writes its planted question's edges and an edge for every node: below some length the
worker cannot build the prompt (``ContextTooShortError``). Admission refuses such a
length before anything is reserved (each task's ``short_length``); the dispatcher has no
tokenizer (its cold start stays light), so the bound is built from pieces whose most
tokens are pinned against the real Gemma 3 tokenizer by tests/unit/test_generated_sizes.py:

- a numbered entry " 12. amber-anchor": the number's digits + 2 (the space and the dot;
  Gemma writes one token a digit), the word at most ``PAIR_TOKENS`` (every pair is
  checked) or ``TRIPLE_TOKENS`` (a large seeded sample of the triples);
- an edge line "a -> b" and its newline: at most ``EDGE_LINE_TOKENS`` (a node ID is 10
  bytes, a token covers at least one byte; " ->" is one token);
- the built-in templates with their question: at most ``COMMON_WORDS_OWN_TOKENS`` and
  ``GRAPHWALKS_OWN_TOKENS``; a user's template is taken at a token a byte.

Each bound adds a landing margin: the worker lands the prompt on the exact length by
filling the last tokens (spare words listed once, edges moved to longer or shorter
IDs), which needs a little room. The same test builds a grid of options, lengths and
seeds as the worker builds them and demands that every admitted one builds.
"""

from __future__ import annotations

from collections.abc import Sequence

from niah.core.prompts.vocabulary import ADJECTIVES, NOUNS
from niah.core.request.axes import at_variant
from niah.core.request.grid import Cell, sample_rng
from niah.core.request.spec import RunRequest
from niah.tasks.base import ShortLength
from niah.tasks.graph_plan import plant_question

# Tokens of the built-in templates around the context, with their question and answer
# lead (common_words: any num_cw; GraphWalks: any node ID, BFS or parents).
COMMON_WORDS_OWN_TOKENS = 65
GRAPHWALKS_OWN_TOKENS = 411
# A user's template: a token a byte, plus the question and answer lead put in it
# (under this many bytes each for both tasks).
QUESTION_BYTES = 96
# Tokens of a listed word: an adjective-noun pair, or an adjective-adjective-noun triple.
PAIR_TOKENS = 4
TRIPLE_TOKENS = 7
PAIR_COUNT = len(ADJECTIVES) * len(NOUNS)
# Every entry " 12. amber-anchor" takes at least this many tokens (3 for the number, 2
# for a pair): how many distinct words a length can ever need.
MIN_ENTRY_TOKENS = 5
# Spare words the last tokens of a list may be filled with.
SPARE_WORDS = 64
# An edge line "a -> b" with its newline.
EDGE_LINE_TOKENS = 23
# Room the worker needs to land on the exact length: a few more entries (or lines).
COMMON_WORDS_LANDING = 24
GRAPHWALKS_LANDING = 2 * EDGE_LINE_TOKENS
# Below this length GraphWalks' graph has too few nodes and edges for the worker to move
# its last tokens onto the exact length reliably, though the planted graph fits: built
# at every length from 450 to 1,800 tokens (3 seeds, bfs_depth 1, 2, 3, 5, parents),
# admitted lengths failed up to 864 tokens, none from 1,000 (20 seeds, 1,000 to 1,400).
GRAPHWALKS_LEAST_LENGTH = 1_000


def common_words_pool_size(spec: RunRequest, context_length: int) -> int:
    """How many distinct words a list of ``context_length`` tokens can ever need."""
    uncommon = spec.common_word_repeats(context_length)[1]
    return spec.num_cw + context_length // (MIN_ENTRY_TOKENS * uncommon) + SPARE_WORDS


def number_tokens(last: int) -> int:
    """Tokens of the entry numbers " 1." to " {last}.": each its digits and 2."""
    total, low = 0, 1
    while low <= last:
        high = min(last, low * 10 - 1)
        total += (high - low + 1) * (len(str(low)) + 2)
        low *= 10
    return total


def own_tokens(spec: RunRequest, built_in: int) -> int:
    """Tokens of the prompt around the context: the built-in template's, or the user's bound."""
    template = spec.prompt_template
    if not template:
        return built_in
    asked = template.count("{question}") + template.count("{answer_lead}")
    return len(template.encode()) + asked * QUESTION_BYTES


def least_common_words_length(spec: RunRequest, context_length: int) -> int:
    """The least ``context_length`` at which common_words' list surely builds.

    ``context_length`` matters because RULER's repeats (and so the list) change at
    4096 tokens; the words are pairs unless the length needs more words than pairs.
    """
    common, uncommon = spec.common_word_repeats(context_length)
    entries = spec.num_cw * common
    pairs = common_words_pool_size(spec, context_length) <= PAIR_COUNT
    word = PAIR_TOKENS if pairs else TRIPLE_TOKENS
    landing = COMMON_WORDS_LANDING + 2 * uncommon * (word + len(str(entries)) + 3)
    return (
        own_tokens(spec, COMMON_WORDS_OWN_TOKENS)
        + number_tokens(entries)
        + entries * word
        + landing
        + spec.final_context_length_buffer
    )


def least_graphwalks_length(spec: RunRequest, cell: Cell) -> int:
    """The least length at which the cell's GraphWalks graph surely builds.

    The cell's question is planted here as the task plants it (same seed): its edges,
    and one edge for each node the walk does not close, are the least graph; never
    below ``GRAPHWALKS_LEAST_LENGTH`` of prompt.
    """
    planted = plant_question(spec, sample_rng(spec, cell, "graphwalks"))[0]
    lines = len(planted.edges) + sum(1 for node in planted.nodes if node not in planted.closed)
    graph = own_tokens(spec, GRAPHWALKS_OWN_TOKENS) + lines * EDGE_LINE_TOKENS
    return max(graph + GRAPHWALKS_LANDING, GRAPHWALKS_LEAST_LENGTH) + (
        spec.final_context_length_buffer
    )


def common_words_short_length(spec: RunRequest, cells: Sequence[Cell]) -> ShortLength | None:
    """The first length of ``cells`` common_words' list cannot be built at, if any."""
    for length in sorted({cell.context_length for cell in cells}):
        need = least_common_words_length(spec, length)
        if length < need:
            common = spec.common_word_repeats(length)[0]
            return ShortLength(
                "context_lengths",
                f"{length:,} tokens cannot hold common_words with freq_cw {common} and "
                f"num_cw {spec.num_cw} ({spec.num_cw * common:,} listed entries)"
                f"{_buffer(spec)}: "
                f"it needs at least ~{need:,}; use a longer length or a smaller freq_cw "
                "or num_cw",
            )
    return None


def graphwalks_short_length(spec: RunRequest, cells: Sequence[Cell]) -> ShortLength | None:
    """The first length of ``cells`` a cell's GraphWalks graph cannot be built at, if any."""
    worst: dict[int, int] = {}
    for cell in cells:
        need = least_graphwalks_length(at_variant(spec, cell.variant), cell)
        if cell.context_length < need:
            worst[cell.context_length] = max(worst.get(cell.context_length, 0), need)
    if not worst:
        return None
    length = min(worst)
    what, fix = (
        (f"a BFS to bfs_depth {spec.bfs_depth}", "or a smaller bfs_depth")
        if spec.graph_problem == "bfs"
        else ("a parents question", "")
    )
    return ShortLength(
        "context_lengths",
        f"{length:,} tokens cannot hold GraphWalks' graph for {what} (the question's "
        f"own nodes and edges{_buffer(spec)}): its cells need at least "
        f"~{worst[length]:,}; use a longer length {fix}".rstrip(),
    )


def _buffer(spec: RunRequest) -> str:
    buffer = spec.final_context_length_buffer
    return f", with final_context_length_buffer {buffer}" if buffer else ""
