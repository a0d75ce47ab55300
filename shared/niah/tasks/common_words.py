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

from niah.core.prompts.generated_context import PieceCounter
from niah.core.prompts.vocabulary import ADJECTIVES, NOUNS
from niah.core.request.grid import Cell
from niah.core.request.spec import RunRequest
from niah.errors import ContextTooShortError
from niah.tasks.base import Sample, ShortLength, Task, Verdict, recall_verdict, sample_rng
from niah.tasks.generated_sizes import (
    SPARE_WORDS,
    common_words_pool_size,
    common_words_short_length,
)

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


class CommonWords(Task):
    """RULER's CWE: name the ``num_cw`` words listed most often."""

    name = "common_words"

    def sample(self, spec: RunRequest, cell: Cell) -> Sample:
        """Seeded words: the first ``num_cw`` are the common ones; the list fits the cell."""
        rng = sample_rng(spec, cell, self.name)
        pool = word_pool(rng, common_words_pool_size(spec, cell.context_length))
        common_repeats, other_repeats = spec.common_word_repeats(cell.context_length)
        common = tuple(pool[: spec.num_cw])
        seed = hashlib.sha256(f"{rng.getrandbits(128)}".encode()).hexdigest()[:16]
        maker = CommonWordsList(
            common, tuple(pool[spec.num_cw :]), common_repeats, other_repeats, seed
        )
        count = spec.num_cw
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
        """A length whose list of ``num_cw x freq_cw`` entries does not fit (generated_sizes)."""
        return common_words_short_length(spec, cells)
