"""Prompts whose whole context a task generates: RULER's word lists, built to the token.

Common and frequent words extraction have no haystack to hide things in: the list of
words *is* the context, and its size is the test's length. A task hands the worker a
``ContextMaker`` (on ``Sample.context_maker``); the maker grows its list to the largest
size that fits and fills the last few tokens with items that change no answer, so the
prompt is exactly the requested length like every other prompt.

Counting rests on the property the prompt builder rests on (pinned by
``tests/unit/test_tokenizer.py``): the Gemma 3 vocabulary never joins a non-space
character to a following space, nor newlines to anything else. A list written as pieces
that each start with a space after a piece ending in another character tokenizes piece
by piece; so its count is the sum of its pieces' counts, with only the first and last
pieces counted together with the template's text around them. The built prompt is then
counted whole once, so a miscount is an error, never a prompt of the wrong length.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from niah.core.interfaces import Tokenizer
from niah.core.prompts.prompt_builder import BuiltPrompt
from niah.core.prompts.texts import CONTEXT_MARK, render
from niah.errors import ContextTooShortError


class PieceCounter:
    """Token counts of list pieces on one tokenizer, each distinct piece counted once."""

    def __init__(self, tokenizer: Tokenizer) -> None:
        self._tokenizer = tokenizer
        self._counts: dict[str, int] = {}

    def count(self, text: str) -> int:
        """Tokens of ``text`` alone."""
        if text not in self._counts:
            self._counts[text] = len(self._tokenizer.encode(text))
        return self._counts[text]

    def joined(self, head: str, pieces: Sequence[str], tail: str) -> int:
        """Tokens of ``head + "".join(pieces) + tail``.

        Each piece after the first starts with a space that follows a non-space character.
        """
        if not pieces:
            return self.count(head + tail)
        if len(pieces) == 1:
            return self.count(head + pieces[0] + tail)
        inner = sum(self.count(piece) for piece in pieces[1:-1])
        return self.count(head + pieces[0]) + inner + self.count(pieces[-1] + tail)


class ContextMaker(Protocol):
    """A task's generated context: made to fit between the template's head and tail."""

    def make(self, counter: PieceCounter, *, head: str, tail: str, target: int) -> str:
        """The context whose prompt ``head + context + tail`` has exactly ``target`` tokens.

        Raises ``ContextTooShortError`` when the task's smallest context does not fit.
        """
        ...


def build_generated_prompt(
    tokenizer: Tokenizer,
    maker: ContextMaker,
    *,
    template: str,
    question: str,
    answer_lead: str = "",
    context_length: int,
    buffer_tokens: int = 0,
) -> BuiltPrompt:
    """A prompt of exactly ``context_length - buffer_tokens`` tokens around a made context."""
    head, tail = render(
        template, context=CONTEXT_MARK, question=question, answer_lead=answer_lead
    ).split(CONTEXT_MARK)
    target = context_length - buffer_tokens
    counter = PieceCounter(tokenizer)
    context = maker.make(counter, head=head, tail=tail, target=target)
    prompt = head + context + tail
    counted = len(tokenizer.encode(prompt))
    if counted != target:
        raise ContextTooShortError(
            f"the generated context gives {counted} tokens, not {target}; report this "
            "task and template as a bug"
        )
    own = counter.count(head) + counter.count(tail)
    return BuiltPrompt(prompt, context, counted, max(0, counted - own), ())
