"""``frequent_words``: RULER's frequent words extraction (FWE), aggregation under a skew.

Coded words (six random lower-case letters) listed as often as a Zipf (zeta) law with
exponent ``alpha`` says: the word of rank k about ``n k^-alpha / zeta(alpha)`` times,
shuffled; the top-ranked word is "..." (noise the prompt says to ignore) and the model
names the next three. As NVIDIA/RULER ``scripts/data/synthetic/freq_words_extraction.py``
makes it (read 2026-11-26 at c3f5e3b): alpha 2.0, a vocabulary of ``(length - 50) // 50``
words unless ``vocab_size`` is set, counts truncated to whole numbers, RULER's template
and answer prefix (``scripts/data/synthetic/constants.py``), RULER's recall
(``string_match_all``).

The coded text is the whole context, grown to the largest ``n`` that fits; the last few
tokens are more "..." (one token each, the noise word the answer ignores), so the prompt
is exactly the cell's length. Where this differs from RULER: RULER seeds every sample's
vocabulary shuffle and word order alike; here each cell has its own seed, so samples
differ.
"""

from __future__ import annotations

import hashlib
import math
import random
import string
from dataclasses import dataclass

from pydantic import Field

from niah.core.prompts.generated_context import PieceCounter
from niah.core.request.grid import Cell
from niah.core.request.run_options import RunOptions
from niah.core.request.spec import RunRequest
from niah.core.request.task_options import TaskOptions
from niah.errors import ContextTooShortError
from niah.tasks.base import LISTED_ITEM, Sample, Task, Verdict, recall_verdict, sample_rng

# RULER's template and answer prefix for frequent words extraction, in its words.
TEMPLATE = (
    "Read the following coded text and track the frequency of each coded word. Find the "
    "three most frequently appeared coded words. {context}\nQuestion: {question} Answer: "
    "{answer_lead}"
)
QUESTION = (
    "Do not provide any explanation. Please ignore the dots '....'. What are the three most "
    "frequently appeared words in the above coded text?"
)
ANSWER_LEAD = "According to the coded text above, the three most frequently appeared words are:"
NOISE_WORD = "..."
CODED_WORD_LETTERS = 6
# RULER leaves its 50 generated tokens out of the length it sizes the vocabulary by.
RULER_TOKENS_TO_GENERATE = 50
TOP = 3


class FrequentWordsOptions(TaskOptions):
    """RULER's FWE options, under RULER's names; None where RULER's depends on the length."""

    alpha: float = Field(
        default=2.0,
        gt=1.0,
        le=10.0,
        description="frequent_words: the Zipf (zeta) exponent of word frequencies (RULER: 2.0)",
    )
    vocab_size: int | None = Field(
        default=None,
        ge=5,
        le=1_000_000,
        description="frequent_words: coded words drawn from (RULER: (length - 50) // 50)",
    )

    takes_haystack_order = False  # the coded text is the whole context

    def answer_bytes(self, request: RunOptions) -> int:
        """The three coded words, listed."""
        return TOP * (CODED_WORD_LETTERS + LISTED_ITEM)

    def vocabulary_size(self, context_length: int) -> int:
        """``vocab_size``, or RULER's default for the length."""
        default = (context_length - RULER_TOKENS_TO_GENERATE) // 50
        return self.vocab_size or max(TOP + 2, default)


def zeta(alpha: float, terms: int = 1000) -> float:
    """Riemann's zeta at ``alpha`` > 1: a partial sum and its Euler-Maclaurin tail.

    Matches ``scipy.special.zeta`` (which RULER calls) to about 1e-12 at alpha >= 1.05.
    """
    partial = math.fsum(k**-alpha for k in range(1, terms))
    n = float(terms)
    tail = n ** (1 - alpha) / (alpha - 1) + n**-alpha / 2 + alpha * n ** (-alpha - 1) / 12
    return partial + tail


def coded_words(rng: random.Random, count: int) -> list[str]:
    """``count`` distinct coded words of six lower-case letters, the first replaced by "..."."""
    words: dict[str, None] = {}
    while len(words) < count:
        words["".join(rng.choices(string.ascii_lowercase, k=CODED_WORD_LETTERS))] = None
    return [NOISE_WORD, *list(words)[1:]]


@dataclass(frozen=True)
class FrequentWordsText:
    """A cell's coded text, made to its length: the ranked vocabulary and the law."""

    vocabulary: tuple[str, ...]
    alpha: float
    seed: str

    def counts(self, size: int) -> list[int]:
        """How often each word of the vocabulary is written at RULER's ``num_words``."""
        norm = zeta(self.alpha)
        return [int(size * k**-self.alpha / norm) for k in range(1, len(self.vocabulary) + 1)]

    def words(self, size: int) -> list[str]:
        """The shuffled coded text at ``size`` (seeded by the size)."""
        written = [
            w for w, n in zip(self.vocabulary, self.counts(size), strict=True) for _ in range(n)
        ]
        random.Random(f"{self.seed}:{size}").shuffle(written)
        return written

    def make(self, counter: PieceCounter, *, head: str, tail: str, target: int) -> str:
        """The largest text that fits, then "..." words to land on ``target``."""

        def tokens(written: list[str]) -> int:
            if len(written) < 2:
                return counter.count(head + " ".join(written) + tail)
            inner = sum(counter.count(f" {word}") for word in written[1:-1])
            return counter.count(head + written[0]) + inner + counter.count(f" {written[-1]}{tail}")

        low, high = 1, 2
        while tokens(self.words(high)) <= target:
            low, high = high, high * 2
        while low < high - 1:  # tokens(words(low)) <= target < tokens(words(high))
            middle = (low + high) // 2
            if tokens(self.words(middle)) <= target:
                low = middle
            else:
                high = middle
        noise = counter.count(f" {NOISE_WORD}")
        for size in range(low, 0, -1):
            written = self.words(size)
            gap = target - tokens(written)
            if gap >= 0 and gap % noise == 0 and len(written) >= 2:
                self._check_ranks(size, target)
                rng = random.Random(f"{self.seed}:noise")
                for _ in range(gap // noise):
                    written.insert(rng.randint(1, len(written) - 1), NOISE_WORD)
                return " ".join(written)
        raise ContextTooShortError(
            f"{target} tokens cannot hold RULER's coded text around the template; ask for a "
            "longer context"
        )

    def _check_ranks(self, size: int, target: int) -> None:
        """Refuse a text whose third asked word is not written more often than the next."""
        counts = self.counts(size)
        third, next_one = counts[TOP], counts[TOP + 1] if len(counts) > TOP + 1 else 0
        if third <= next_one or third == 0:
            raise ContextTooShortError(
                f"at {target} tokens and alpha {self.alpha} the coded words of ranks "
                f"{TOP + 1} and {TOP + 2} are written {third} and {next_one} times: the top "
                "three are not distinct; ask for a longer context or a larger alpha"
            )


class FrequentWords(Task[FrequentWordsOptions]):
    """RULER's FWE: name the three most frequent coded words (after the noise "...")."""

    name = "frequent_words"
    options = FrequentWordsOptions

    def sample(self, spec: RunRequest, cell: Cell) -> Sample:
        """A seeded vocabulary; the text is made to the cell's length when it is built."""
        options = self.options_of(spec)
        rng = sample_rng(spec.seed, cell, self.name)
        vocabulary = coded_words(rng, options.vocabulary_size(cell.context_length))
        seed = hashlib.sha256(f"{rng.getrandbits(128)}".encode()).hexdigest()[:16]
        expected = tuple(vocabulary[1 : 1 + TOP])
        return Sample(
            insertions=(),
            question=QUESTION,
            expected=expected,
            answer_lead=ANSWER_LEAD,
            details={"alpha": options.alpha, "vocab_size": len(vocabulary)},
            template=None if spec.prompt_template else TEMPLATE,
            context_maker=FrequentWordsText(tuple(vocabulary), options.alpha, seed),
        )

    def score(self, sample: Sample, answer: str) -> Verdict:
        """RULER's recall: the share of the three words the answer names."""
        return recall_verdict(answer, sample.expected)
