"""The one prompt builder: haystack slice + needle at a sentence end + prompt template.

Lengths are budgeted so the whole prompt (template, question, haystack and needle)
lands on the requested token count; the harness instead subtracted a fixed buffer,
which ``final_context_length_buffer`` still offers.
"""

from __future__ import annotations

from dataclasses import dataclass

from niah.core.haystack_tokens import HaystackTokens
from niah.core.interfaces import Tokenizer
from niah.core.needles import Needle
from niah.core.prompts import render
from niah.errors import ContextTooShortError


@dataclass(frozen=True)
class BuiltPrompt:
    """A cell's prompt, and where its parts landed (in tokens of the model's tokenizer)."""

    prompt: str
    context: str
    template_tokens: int
    needle_tokens: int
    haystack_tokens: int
    insertion_token: int

    @property
    def planned_prompt_tokens(self) -> int:
        """Tokens the prompt was budgeted to (template + haystack + needle)."""
        return self.template_tokens + self.haystack_tokens + self.needle_tokens

    @property
    def actual_depth_percent(self) -> float:
        """Where the needle really went, after backing up to a sentence end."""
        if self.haystack_tokens == 0:
            return 100.0
        return 100.0 * self.insertion_token / self.haystack_tokens


def build_prompt(
    haystack: HaystackTokens,
    tokenizer: Tokenizer,
    *,
    template: str,
    needle: Needle,
    context_length: int,
    depth_percent: float,
    buffer_tokens: int = 0,
) -> BuiltPrompt:
    """Build one cell's prompt of ``context_length`` tokens with the needle at a depth.

    Placement follows the harness: the insertion point is ``depth_percent`` of the
    haystack tokens, moved back to just after the previous '.' so the needle never
    splits a sentence; depth 100 appends it at the end.
    """
    template_tokens = len(
        tokenizer.encode(
            render(template, context="", question=needle.question, answer_lead=needle.answer_lead)
        )
    )
    needle_bytes = needle.text.encode("utf-8")
    needle_tokens = len(tokenizer.encode(needle.text))
    budget = context_length - buffer_tokens - template_tokens - needle_tokens
    if budget < 0:
        raise ContextTooShortError(
            f"context_length {context_length} is below the prompt's own size "
            f"({template_tokens} template + {needle_tokens} needle + {buffer_tokens} buffer "
            "tokens); ask for a longer context"
        )
    haystack.ensure(budget)
    if depth_percent >= 100:
        insertion = budget
    else:
        insertion = haystack.sentence_start_at_or_before(int(budget * depth_percent / 100))
    context_bytes = (
        haystack.text_between(0, insertion)
        + needle_bytes
        + haystack.text_between(insertion, budget)
    )
    # A cut can fall inside a multi-byte character split over byte-fallback tokens.
    context = context_bytes.decode("utf-8", errors="ignore")
    prompt = render(
        template, context=context, question=needle.question, answer_lead=needle.answer_lead
    )
    return BuiltPrompt(
        prompt=prompt,
        context=context,
        template_tokens=template_tokens,
        needle_tokens=needle_tokens,
        haystack_tokens=budget,
        insertion_token=insertion,
    )
