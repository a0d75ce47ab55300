"""``common_words``: RULER's common words extraction (CWE), aggregation over the context.

A numbered list of words in which ``num_cw`` words are listed ``freq_cw`` times each and
every other word ``freq_ucw`` times, shuffled; the model names the ``num_cw`` most common.
As NVIDIA/RULER ``scripts/data/synthetic/common_words_extraction.py`` makes it (read
2026-11-26 at c3f5e3b): its defaults 10, 30 and 3, and 6 and 1 below 4096 tokens; the
list "1. word 2. word ..." as RULER formats it; RULER's template and answer prefix
(``scripts/data/synthetic/constants.py``); RULER's recall (``string_match_all``).

The list is the whole context, grown to the largest number of other words that fits the
cell's length; the last few tokens are filled with words listed once (fewer times than
any other word, so no answer changes), so the prompt is exactly the length.

Where this differs from RULER, and why: RULER's words come from the ``wonderwords``
lists and a downloaded English word list; here they are adjective-noun pairs of the
service's own pools (``niah.core.prompts.vocabulary``, the same form as RULER's word keys),
adjective-adjective-noun triples past what the pairs can fill (about 200K tokens), so
nothing is downloaded. RULER's one-shot example before the prompt is left out (at 4K
tokens it would take a quarter of the prompt).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import Field

from niah.core.prompts.generated_context import PieceCounter
from niah.core.prompts.vocabulary import ADJECTIVES, NOUNS
from niah.core.request.grid import Cell
from niah.core.request.run_options import RunOptions
from niah.core.request.spec import RunRequest
from niah.core.request.task_options import TaskOptions
from niah.errors import ContextTooShortError
from niah.tasks.base import (
    LISTED_ITEM,
    Sample,
    ShortLength,
    Task,
    Verdict,
    recall_verdict,
    sample_rng,
)
from niah.tasks.generated_sizes import buffer_note, number_tokens, own_tokens

# RULER's template and answer prefix for common words extraction, in its words.
TEMPLATE = (
    "Below is a numbered list of words. In these words, some appear more often than others. "
    "Memorize the ones that appear most often.\n{context}\nQuestion: {question} Answer: "
    "{answer_lead}"
)
QUESTION = "What are the {count} most common words in the above list?"
ANSWER_LEAD = "The top {count} words that appear most often in the list are:"
PAIRS = tuple(f"{adjective}-{noun}" for adjective in ADJECTIVES for noun in NOUNS)
# The most spare words (``SPARE_WORDS`` are drawn) the last tokens may be filled with.
MAX_FILL_WORDS = 12
# Below this many tokens RULER's common words extraction lists its words fewer times.
RULER_SHORT_LENGTH = 4096
# A right answer's word: an adjective-noun pair, or a triple past the pairs.
COMMON_WORD_BYTES = 2 * max(map(len, ADJECTIVES)) + max(map(len, NOUNS)) + 2

# How long a list must be, bounded without a tokenizer (niah.tasks.generated_sizes; the
# figures pinned by tests/unit/test_generated_sizes.py). Tokens of the built-in template
# around the list, with its question and answer lead (any num_cw):
COMMON_WORDS_OWN_TOKENS = 65
# Tokens of a listed word: an adjective-noun pair, or an adjective-adjective-noun triple.
PAIR_TOKENS = 4
TRIPLE_TOKENS = 7
PAIR_COUNT = len(ADJECTIVES) * len(NOUNS)
# Every entry " 12. amber-anchor" takes at least this many tokens (3 for the number, 2
# for a pair): how many distinct words a length can ever need.
MIN_ENTRY_TOKENS = 5
# Spare words the last tokens of a list may be filled with.
SPARE_WORDS = 64
# Room the worker needs to land on the exact length: a few more entries.
COMMON_WORDS_LANDING = 24


class CommonWordsOptions(TaskOptions):
    """RULER's CWE options, under RULER's names; None where RULER's depends on the length."""

    num_cw: int = Field(
        default=10, ge=1, le=100, description="common_words: the common words asked for (RULER: 10)"
    )
    freq_cw: int | None = Field(
        default=None,
        ge=2,
        le=1000,
        description="common_words: times each common word is listed (RULER: 30, or 6 below "
        f"{RULER_SHORT_LENGTH} tokens)",
    )
    freq_ucw: int | None = Field(
        default=None,
        ge=1,
        le=1000,
        description="common_words: times each other word is listed (RULER: 3, or 1 below "
        f"{RULER_SHORT_LENGTH} tokens)",
    )

    takes_haystack_order = False  # the list is the whole context

    def repeats(self, context_length: int) -> tuple[int, int]:
        """How often each common word and each other word is listed.

        RULER's rule when unset: 30 and 3, but 6 and 1 below 4096 tokens (NVIDIA/RULER
        scripts/data/synthetic/common_words_extraction.py, read 2026-11-26 at c3f5e3b).
        """
        short = context_length < RULER_SHORT_LENGTH
        common = self.freq_cw or (6 if short else 30)
        uncommon = self.freq_ucw or (1 if short else 3)
        return common, uncommon

    def pool_size(self, context_length: int) -> int:
        """How many distinct words a list of ``context_length`` tokens can ever need."""
        uncommon = self.repeats(context_length)[1]
        return self.num_cw + context_length // (MIN_ENTRY_TOKENS * uncommon) + SPARE_WORDS

    def answer_bytes(self, request: RunOptions) -> int:
        """The common words, listed."""
        return self.num_cw * (COMMON_WORD_BYTES + LISTED_ITEM)

    def check(self, request: RunOptions) -> None:
        """The common words must be listed more often than the others, at every length."""
        for length in (1, RULER_SHORT_LENGTH):
            common, uncommon = self.repeats(length)
            if common <= uncommon:
                where = "below" if length < RULER_SHORT_LENGTH else "from"
                raise ValueError(
                    f"freq_cw ({common}) must exceed freq_ucw ({uncommon}) {where} "
                    f"{RULER_SHORT_LENGTH} tokens: the common words must be listed more "
                    "often than the others (set both, or leave both out for RULER's)"
                )


def least_common_words_length(spec: RunRequest, context_length: int) -> int:
    """The least ``context_length`` at which the run's list surely builds.

    ``context_length`` matters because RULER's repeats (and so the list) change at
    4096 tokens; the words are pairs unless the length needs more words than pairs.
    """
    options = CommonWords().options_of(spec)
    common, uncommon = options.repeats(context_length)
    entries = options.num_cw * common
    pairs = options.pool_size(context_length) <= PAIR_COUNT
    word = PAIR_TOKENS if pairs else TRIPLE_TOKENS
    landing = COMMON_WORDS_LANDING + 2 * uncommon * (word + len(str(entries)) + 3)
    return (
        own_tokens(spec, COMMON_WORDS_OWN_TOKENS)
        + number_tokens(entries)
        + entries * word
        + landing
        + spec.final_context_length_buffer
    )


def word_pool(rng: random.Random, needed: int) -> list[str]:
    """``needed`` distinct words in a seeded order: pairs, or triples past the pairs."""
    if needed <= len(PAIRS):
        return rng.sample(PAIRS, needed)
    words: dict[str, None] = {}
    while len(words) < needed:
        first, second = rng.sample(ADJECTIVES, 2)
        words[f"{first}-{second}-{rng.choice(NOUNS)}"] = None
    return list(words)


@dataclass(frozen=True)
class CommonWordsList:
    """A cell's list, made to its length: the common words, the others, their repeats."""

    common: tuple[str, ...]
    others: tuple[str, ...]
    common_repeats: int
    other_repeats: int
    seed: str

    def words(self, count: int) -> list[str]:
        """The shuffled list with the first ``count`` other words (seeded by the count)."""
        listed = list(self.common) * self.common_repeats
        listed += list(self.others[:count]) * self.other_repeats
        random.Random(f"{self.seed}:{count}").shuffle(listed)
        return listed

    def make(self, counter: PieceCounter, *, head: str, tail: str, target: int) -> str:
        """The largest list that fits, then words listed once to land on ``target``."""
        numbers = _NumberCosts(counter)

        def tokens(listed: list[str]) -> int:
            if len(listed) == 1:
                return counter.count(head + "1.") + counter.count(f" {listed[0]}{tail}")
            words = sum(counter.count(f" {word}") for word in listed[:-1])
            return (
                counter.count(head + "1.")
                + numbers.between(2, len(listed))
                + words
                + counter.count(f" {listed[-1]}{tail}")
            )

        most = len(self.others) - SPARE_WORDS
        if tokens(self.words(0)) > target:
            raise ContextTooShortError(
                f"{target} tokens cannot hold the {len(self.common)} common words listed "
                f"{self.common_repeats} times each; ask for a longer context or lower num_cw "
                "or freq_cw"
            )
        low, high = 0, most  # tokens(words(low)) <= target
        while low < high:
            middle = (low + high + 1) // 2
            if tokens(self.words(middle)) <= target:
                low = middle
            else:
                high = middle - 1
        for count in range(low, -1, -1):
            listed = self.words(count)
            spares = self.others[count : count + SPARE_WORDS]
            chosen = _fill(counter, numbers, len(listed), spares, target - tokens(listed))
            if chosen is not None:
                return _numbered(_spread(listed, chosen, self.seed))
        raise ContextTooShortError(
            f"{target} tokens leave too little room to land a list of common words exactly "
            "(a few words listed once fill the last tokens); ask for a longer context"
        )


class _NumberCosts:
    """Tokens of " 12." per entry number, summed over ranges from a running table."""

    def __init__(self, counter: PieceCounter) -> None:
        self._counter = counter
        self._running = [0, 0]  # _running[i]: tokens of numbers 2..i-1

    def between(self, first: int, last: int) -> int:
        """Tokens of the numbers ``first`` to ``last`` (both included, first >= 2)."""
        while len(self._running) <= last + 1:
            number = len(self._running) - 1
            self._running.append(self._running[-1] + self._counter.count(f" {number}."))
        return self._running[last + 1] - self._running[first]


def _fill(
    counter: PieceCounter,
    numbers: _NumberCosts,
    listed: int,
    spares: tuple[str, ...],
    gap: int,
) -> list[str] | None:
    """Spare words whose entries (numbered after ``listed``) add exactly ``gap`` tokens."""
    if gap == 0:
        return []
    costs = [counter.count(f" {word}") for word in spares]
    for extra in range(1, MAX_FILL_WORDS + 1):
        if listed < 2:
            return None  # spares go between the first and last entries
        rest = gap - numbers.between(listed + 1, listed + extra)
        if rest < extra * min(costs):
            return None
        picked = _pick(costs, extra, rest)
        if picked is not None:
            return [spares[i] for i in picked]
    return None


def _pick(costs: list[int], count: int, total: int) -> list[int] | None:
    """Indices of ``count`` costs that sum to ``total`` (a small subset-sum)."""
    reach: dict[tuple[int, int], list[int]] = {(0, 0): []}
    for index, cost in enumerate(costs):
        for (taken, summed), chosen in list(reach.items()):
            key = (taken + 1, summed + cost)
            if taken < count and summed + cost <= total and key not in reach:
                reach[key] = [*chosen, index]
    return reach.get((count, total))


def _spread(listed: list[str], spares: list[str], seed: str) -> list[str]:
    """``spares`` at seeded places after the first entry and before the last."""
    rng = random.Random(f"{seed}:spares")
    result = list(listed)
    for word in spares:
        result.insert(rng.randint(1, len(result) - 1), word)
    return result


def _numbered(listed: list[str]) -> str:
    """RULER's numbered list: "1. word 2. word 3. word"."""
    return " ".join(f"{i}. {word}" for i, word in enumerate(listed, 1))


class CommonWords(Task[CommonWordsOptions]):
    """RULER's CWE: name the ``num_cw`` words listed most often."""

    name = "common_words"
    options = CommonWordsOptions

    def sample(self, spec: RunRequest, cell: Cell) -> Sample:
        """Seeded words: the first ``num_cw`` are the common ones; the list fits the cell."""
        options = self.options_of(spec)
        rng = sample_rng(spec.seed, cell, self.name)
        count = options.num_cw
        pool = word_pool(rng, options.pool_size(cell.context_length))
        common_repeats, other_repeats = options.repeats(cell.context_length)
        common = tuple(pool[:count])
        seed = hashlib.sha256(f"{rng.getrandbits(128)}".encode()).hexdigest()[:16]
        maker = CommonWordsList(common, tuple(pool[count:]), common_repeats, other_repeats, seed)
        return Sample(
            insertions=(),
            question=QUESTION.format(count=count),
            expected=common,
            answer_lead=ANSWER_LEAD.format(count=count),
            details={"freq_cw": common_repeats, "freq_ucw": other_repeats},
            template=None if spec.prompt_template else TEMPLATE,
            context_maker=maker,
        )

    def score(self, sample: Sample, answer: str) -> Verdict:
        """RULER's recall: the share of the common words the answer names."""
        return recall_verdict(answer, sample.expected)

    def short_length(self, spec: RunRequest, cells: Sequence[Cell]) -> ShortLength | None:
        """The first length whose list of ``num_cw x freq_cw`` entries does not fit."""
        options = self.options_of(spec)
        for length in sorted({cell.context_length for cell in cells}):
            need = least_common_words_length(spec, length)
            if length < need:
                common = options.repeats(length)[0]
                return ShortLength(
                    "context_lengths",
                    f"{length:,} tokens cannot hold common_words with freq_cw {common} and "
                    f"num_cw {options.num_cw} ({options.num_cw * common:,} listed entries)"
                    f"{buffer_note(spec)}: it needs at least ~{need:,}; use a longer length "
                    "or a smaller freq_cw or num_cw",
                )
        return None
