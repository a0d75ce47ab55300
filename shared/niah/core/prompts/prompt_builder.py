"""The one prompt builder: haystack slices + insertions at sentence ends + a template.

The whole prompt (template, question, haystack and every insertion) lands exactly on
the requested token count, counted on the model's tokenizer, without tokenizing the
haystack again. That rests on one property of the Gemma 3 vocabulary, which
``tests/unit/test_tokenizer.py`` pins: no piece joins a non-space character to a
following space (but ``>▁</``), and no piece mixes newlines with anything else. So the
tokenization of a text splits, with nothing shared, at every *safe boundary*: a space
after a character that is neither a space nor '>', and either side of a run of
newlines. Between two safe boundaries inside the haystack the count is the cached
corpus tokens; only the short *glue* around each junction (the template's text, the
first and last words of a slice, an insertion) is tokenized, per cell.

The harness instead subtracted a fixed buffer, which ``final_context_length_buffer``
still offers (those tokens are left free).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from niah.core.interfaces import Tokenizer
from niah.core.prompts.texts import CONTEXT_MARK, render
from niah.errors import ContextTooShortError

if TYPE_CHECKING:  # the cached tokens (numpy) are the worker's: the tasks' imports stay light
    from niah.core.prompts.haystack_tokens import HaystackTokens

# Budget corrections tried before giving up on an exact landing (each one re-counts
# only the glue, a few hundred tokens).
MAX_ROUNDS = 12
# Where the haystack may start instead of its first token. A cut that ends on a newline
# next to a template's newline merges into one token, so some totals cannot be reached
# by moving the end alone; starting a token later reaches them.
MAX_START_SHIFT = 4


@dataclass(frozen=True)
class Insertion:
    """Text to hide in the haystack, at a depth in percent of the haystack's tokens."""

    text: str
    depth_percent: float


@dataclass(frozen=True)
class BuiltPrompt:
    """A cell's prompt, and where its parts landed (in tokens of the model's tokenizer)."""

    prompt: str
    context: str
    prompt_tokens: int
    haystack_tokens: int
    insertion_tokens: tuple[int, ...]

    @property
    def planned_prompt_tokens(self) -> int:
        """The prompt's exact token count (the requested length less any buffer)."""
        return self.prompt_tokens

    @property
    def actual_depths_percent(self) -> tuple[float, ...]:
        """Where each insertion really went, after backing up to a sentence end."""
        if self.haystack_tokens == 0:
            return tuple(100.0 for _ in self.insertion_tokens)
        return tuple(100.0 * t / self.haystack_tokens for t in self.insertion_tokens)

    def depths_of(self, insertions: Sequence[Insertion]) -> tuple[float, ...]:
        """Where each of ``insertions`` (as given to ``build_prompt``) really went, in order.

        The builder places them sorted by depth (a stable sort), so the i-th given is
        the one at its rank in that order.
        """
        ranks = sorted(range(len(insertions)), key=lambda i: insertions[i].depth_percent)
        placed = self.actual_depths_percent
        depths = [0.0] * len(insertions)
        for position, index in enumerate(ranks):
            depths[index] = placed[position]
        return tuple(depths)

    @property
    def actual_depth_percent(self) -> float:
        """Where the first insertion went (the cell's depth for one needle)."""
        return self.actual_depths_percent[0] if self.insertion_tokens else 100.0


@dataclass(frozen=True)
class _Layout:
    """One candidate: the haystack's first token, its length, and where insertions go.

    ``positions`` are token indices in the repeated corpus, between ``start`` and
    ``start + budget``.
    """

    start: int
    budget: int
    positions: tuple[int, ...]


def build_prompt(
    haystack: HaystackTokens,
    tokenizer: Tokenizer,
    *,
    template: str,
    insertions: Sequence[Insertion],
    question: str,
    answer_lead: str = "",
    context_length: int,
    buffer_tokens: int = 0,
) -> BuiltPrompt:
    """Build a prompt of exactly ``context_length - buffer_tokens`` tokens.

    Placement follows the harness: each insertion goes at its depth percent of the
    haystack tokens, moved back to just after the previous '.' so it never splits a
    sentence (nor another insertion); depth 100 appends at the end. Insertions keep
    their order when two land at the same sentence end.
    """
    prefix, suffix = render(
        template, context=CONTEXT_MARK, question=question, answer_lead=answer_lead
    ).split(CONTEXT_MARK)
    ordered = sorted(insertions, key=lambda insertion: insertion.depth_percent)
    target = context_length - buffer_tokens
    counter = _Counter(haystack, tokenizer, prefix, suffix, [i.text for i in ordered])
    own = counter.count(_layout(haystack, ordered, 0, 0))
    if own > target:
        raise ContextTooShortError(
            f"context_length {context_length} is below the prompt's own size ({own} tokens "
            f"of template, question and insertions + {buffer_tokens} buffer); ask for a "
            "longer context"
        )
    layout = _solve(counter, haystack, ordered, target, budget=target - own)
    context = counter.context(layout)
    return BuiltPrompt(
        prompt=prefix + context + suffix,
        context=context,
        prompt_tokens=counter.count(layout),
        haystack_tokens=layout.budget,
        insertion_tokens=tuple(position - layout.start for position in layout.positions),
    )


def _layout(
    haystack: HaystackTokens, insertions: Sequence[Insertion], start: int, budget: int
) -> _Layout:
    """Where each insertion goes in ``budget`` haystack tokens from token ``start``."""
    haystack.ensure(start + budget)
    positions = tuple(
        start + budget
        if insertion.depth_percent >= 100
        else max(
            start,
            haystack.sentence_start_at_or_before(
                start + int(budget * insertion.depth_percent / 100)
            ),
        )
        for insertion in insertions
    )
    return _Layout(start, budget, positions)


def _solve(
    counter: _Counter,
    haystack: HaystackTokens,
    insertions: Sequence[Insertion],
    target: int,
    *,
    budget: int,
) -> _Layout:
    """The layout whose prompt has exactly ``target`` tokens.

    First the whole layout follows the budget, each round moving it by the miss; with
    many insertions every move also moves them between sentences, so the count only
    gets close. Then the insertions stay where they are and only the haystack's end
    moves, one token adding about one prompt token. A merge at the end can skip a total
    (one more haystack token adds two prompt tokens): then the same from a later first
    token.
    """
    for start in range(MAX_START_SHIFT + 1):
        tried: dict[int, int] = {}
        guess = budget
        for _ in range(MAX_ROUNDS):
            guess = max(0, guess)
            if guess in tried:
                break
            tried[guess] = counter.count(_layout(haystack, insertions, start, guess))
            if tried[guess] == target:
                return _layout(haystack, insertions, start, guess)
            guess += target - tried[guess]
        nearest = min(tried, key=lambda b: (abs(tried[b] - target), b))
        found = _move_the_end(
            counter, haystack, insertions, _layout(haystack, insertions, start, nearest), target
        )
        if found is not None:
            return found
    raise ContextTooShortError(
        f"no haystack cut gives a prompt of exactly {target} tokens; report this haystack "
        "and template as a bug"
    )


def _move_the_end(
    counter: _Counter,
    haystack: HaystackTokens,
    insertions: Sequence[Insertion],
    layout: _Layout,
    target: int,
) -> _Layout | None:
    """``layout`` with only its end moved (and what is appended there) to hit ``target``."""
    end = layout.start + layout.budget
    # Insertions at depth 100 follow the end; the others stay put.
    fixed = [
        None if insertion.depth_percent >= 100 else position
        for insertion, position in zip(insertions, layout.positions, strict=True)
    ]
    floor = max((p for p in fixed if p is not None), default=layout.start)

    def at(new_end: int) -> _Layout:
        haystack.ensure(new_end)
        positions = tuple(new_end if p is None else p for p in fixed)
        return _Layout(layout.start, new_end - layout.start, positions)

    tried: dict[int, int] = {}
    guess = end
    for _ in range(MAX_ROUNDS):
        guess = max(floor, guess)
        if guess in tried:
            break
        tried[guess] = counter.count(at(guess))
        if tried[guess] == target:
            return at(guess)
        guess += target - tried[guess]
    nearest = min(tried, key=lambda e: (abs(tried[e] - target), e))
    for candidate in range(max(floor, nearest - 3), nearest + 4):
        if counter.count(at(candidate)) == target:
            return at(candidate)
    return None


class _Counter:
    """Counts a layout's prompt tokens exactly: cached counts inside, glue tokenized."""

    def __init__(
        self,
        haystack: HaystackTokens,
        tokenizer: Tokenizer,
        prefix: str,
        suffix: str,
        insertions: list[str],
    ) -> None:
        self._haystack = haystack
        self._tokenizer = tokenizer
        self._prefix = prefix
        self._suffix = suffix
        self._insertions = insertions
        self._junction = haystack.junction_correction(tokenizer)
        self._glue_counts: dict[str, int] = {}

    def _pieces(self, layout: _Layout) -> list[str | tuple[int, int]]:
        """The context in order: haystack spans (token ranges) and insertion texts."""
        bounds = (layout.start, *layout.positions, layout.start + layout.budget)
        pieces: list[str | tuple[int, int]] = []
        for i, (start, end) in enumerate(itertools.pairwise(bounds)):
            pieces.append((start, end))
            if i < len(self._insertions):
                pieces.append(self._insertions[i])
        return pieces

    def count(self, layout: _Layout) -> int:
        """Tokens of the whole prompt this layout gives."""
        total, glue = 0, [self._prefix]
        for piece in self._pieces(layout):
            if isinstance(piece, str):
                glue.append(piece)
                continue
            start, end = piece
            inner = self._haystack.safe_span(start, end)
            if inner is None:
                glue.append(self._decode(start, end))
                continue
            glue.append(self._decode(start, inner[0]))
            total += self._glue("".join(glue))
            total += self._haystack.tokens_between(inner[0], inner[1], self._junction)
            glue = [self._decode(inner[1], end)]
        glue.append(self._suffix)
        return total + self._glue("".join(glue))

    def context(self, layout: _Layout) -> str:
        """The context text itself, decoded piece by piece exactly as counted."""
        parts = []
        for piece in self._pieces(layout):
            if isinstance(piece, str):
                parts.append(piece)
                continue
            start, end = piece
            inner = self._haystack.safe_span(start, end)
            if inner is None:
                parts.append(self._decode(start, end))
            else:
                parts += [
                    self._decode(start, inner[0]),
                    self._decode(*inner),
                    self._decode(inner[1], end),
                ]
        return "".join(parts)

    def _decode(self, start: int, end: int) -> str:
        # A cut can fall inside a multi-byte character split over byte-fallback tokens;
        # the partial character is dropped, and the glue is counted as sent.
        return self._haystack.text_between(start, end).decode("utf-8", errors="ignore")

    def _glue(self, text: str) -> int:
        if text not in self._glue_counts:
            self._glue_counts[text] = len(self._tokenizer.encode(text))
        return self._glue_counts[text]
