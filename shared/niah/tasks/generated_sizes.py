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
  ``GRAPHWALKS_OWN_TOKENS``; a user's template is taken at a token a byte (``own_tokens``).

Each task's bound and its figures are in its module (``niah.tasks.common_words``,
``niah.tasks.graphwalks``); the pieces they share are here.

Each bound adds a landing margin: the worker lands the prompt on the exact length by
filling the last tokens (spare words listed once, edges moved to longer or shorter
IDs), which needs a little room. The same test builds a grid of options, lengths and
seeds as the worker builds them and demands that every admitted one builds.
"""

from __future__ import annotations

from niah.core.request.spec import RunRequest

# A user's template: a token a byte, plus the question and answer lead put in it
# (under this many bytes each for both tasks).
QUESTION_BYTES = 96


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


def buffer_note(spec: RunRequest) -> str:
    """What a refusal adds when the run leaves tokens free below each length."""
    buffer = spec.final_context_length_buffer
    return f", with final_context_length_buffer {buffer}" if buffer else ""
