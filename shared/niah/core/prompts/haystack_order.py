"""Haystack order: the corpus's sentences in a seeded random order, token-exact.

Chroma's "Context Rot" study found that models retrieve better from a shuffled
haystack than from a coherent one; ``haystack_order`` ``shuffled`` asks that question
of a run. The prompt builder counts a haystack's tokens from its cached ids, so the
shuffled corpus must come with ids that are exactly its tokenization, without
tokenizing it again (a million tokens take seconds).

That follows from the builder's safe boundaries (``niah.core.prompts.prompt_builder``):
tokenization splits at each one with nothing shared, so the corpus cut at boundaries
that are both safe and a sentence end gives segments whose ids are each their own
exact tokenization. Every such segment ends in '.' and the byte before its start was
'.' too, so wherever it moves it follows the same byte as before, and the junction
stays a safe boundary. The first segment (which does not start at a safe boundary)
stays first and whatever follows the last cut stays last, so the join of one pass of
the corpus to the next is also unchanged.
"""

from __future__ import annotations

import random

import numpy as np
import numpy.typing as npt

from niah.core.prompts.haystack_tokens import HaystackTokens
from niah.memo import ProcessCache

# Shuffled haystacks by (original key, seed): every cell of a run at one seed shares
# one. At most two are kept (each is a whole corpus; a seed per request must not grow a
# warm worker's memory without end), the oldest made forgotten first.
shuffled_haystacks: ProcessCache[tuple[str, int], HaystackTokens] = ProcessCache(max_entries=2)


def shuffled_haystack(haystack: HaystackTokens, seed: int) -> HaystackTokens:
    """``haystack`` with its sentences in an order fixed by ``seed``, ids still exact.

    The result has its own key (``<key>:shuffled:<seed>``), so caches keyed by a
    haystack never mix the two orders. A corpus with fewer than two movable sentences
    is returned as it is.
    """
    return shuffled_haystacks.get_or_make((haystack.key, seed), lambda: _shuffle(haystack, seed))


def _shuffle(haystack: HaystackTokens, seed: int) -> HaystackTokens:
    n_tokens = haystack.corpus_tokens
    cuts = _sentence_cuts(haystack)
    if len(cuts) < 3:  # fewer than two segments between the fixed first and last
        return haystack
    token_bounds = np.concatenate([[0], cuts, [n_tokens]])
    byte_ends = np.cumsum(haystack.piece_bytes[haystack.ids])
    byte_bounds = np.concatenate([[0], byte_ends[cuts - 1], [len(haystack.text)]])
    segments = len(token_bounds) - 1
    order = np.concatenate([[0], 1 + _permutation(segments - 2, seed), [segments - 1]])
    ids = haystack.ids[_gather(token_bounds, order)]
    text = np.frombuffer(haystack.text, dtype=np.uint8)[_gather(byte_bounds, order)]
    return HaystackTokens(
        f"{haystack.key}:shuffled:{seed}", text.tobytes(), ids, haystack.piece_bytes
    )


def _sentence_cuts(haystack: HaystackTokens) -> npt.NDArray[np.int64]:
    """Token positions inside one pass that are both a sentence end and a safe boundary.

    Read from the haystack's own arrays, so the cuts follow exactly the definitions the
    prompt builder counts by.
    """
    # Both are positions from ``flatnonzero``: sorted and unique (and without saying so,
    # numpy sorts a million of them again, a second).
    inside = np.intersect1d(haystack.sentence_ends, haystack.safe_boundaries, assume_unique=True)
    return inside[(inside > 0) & (inside < haystack.corpus_tokens)].astype(np.int64)


def _permutation(count: int, seed: int) -> npt.NDArray[np.int64]:
    """A seeded order of ``count`` items, the same on every Python and numpy version.

    ``Random.random()`` is the one stream Python promises to keep across versions
    (``shuffle`` and numpy's ``Generator`` methods may change), and every worker of a
    run must build the same haystack. The seed is salted so a run's needle seed does
    not also draw this order.
    """
    rng = random.Random(f"{seed}:haystack_order")
    keys = np.fromiter((rng.random() for _ in range(count)), dtype=np.float64, count=count)
    return np.argsort(keys, kind="stable").astype(np.int64)


def _gather(bounds: npt.NDArray[np.int64], order: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Indices that lay the segments ``[bounds[i], bounds[i + 1])`` end to end in ``order``."""
    starts, lengths = bounds[:-1][order], np.diff(bounds)[order]
    new_starts = np.cumsum(lengths) - lengths
    return np.repeat(starts - new_starts, lengths) + np.arange(int(bounds[-1]))
