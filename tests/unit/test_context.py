from pathlib import Path
from typing import cast

import numpy as np
import pytest

from niah.core.prompts.haystack_tokens import HaystackTokens, load_haystack
from niah.core.prompts.needles import Needle, needle_for
from niah.core.prompts.prompt_builder import BuiltPrompt, Insertion, build_prompt
from niah.core.prompts.texts import HARNESS_TEMPLATE, LOCAL_TEMPLATE
from niah.core.request.grid import Cell
from niah.core.request.spec import RunRequest
from niah.errors import ContextTooShortError
from niah.models.tokenizer import SentencePieceTokenizer
from tests import HEAVY
from tests.fakes import MemoryBlobs


def build(
    essays: HaystackTokens,
    tokenizer: SentencePieceTokenizer,
    length: int,
    depth: float,
    buffer_tokens: int = 0,
) -> tuple[Needle, BuiltPrompt]:
    """The local model's prompt for one cell of the default run."""
    needle = needle_for(RunRequest(), Cell(length, depth))
    built = build_prompt(
        essays,
        tokenizer,
        template=LOCAL_TEMPLATE,
        insertions=[Insertion(needle.text, depth)],
        question=needle.question,
        answer_lead=needle.answer_lead,
        context_length=length,
        buffer_tokens=buffer_tokens,
    )
    return needle, built


# Placeholders next to newlines, spaces, punctuation and words: every kind of junction.
USER_TEMPLATE = "Q:\n<doc>{context}</doc>\n\n  {question}? Answer:{answer_lead}"
TEMPLATES = {
    "harness": HARNESS_TEMPLATE,  # Gemini and OpenAI-compatible
    "local": LOCAL_TEMPLATE,
    "user": USER_TEMPLATE,
    "bare": "{context}{question}",
}


@pytest.mark.parametrize("template", TEMPLATES)
@pytest.mark.parametrize("length", [1_000, 32_000, 128_000, pytest.param(1_000_000, marks=HEAVY)])
def test_the_whole_prompt_is_exactly_the_requested_length(
    essays: HaystackTokens, tokenizer: SentencePieceTokenizer, length: int, template: str
) -> None:
    # Every depth at the short lengths; one per template at the long ones (each check
    # tokenizes the whole prompt again, ~3 s at 1M tokens).
    depths = (
        (0, 50, 100) if length <= 32_000 else ((0, 50, 100, 75)[list(TEMPLATES).index(template)],)
    )
    for depth in depths:
        needle = needle_for(RunRequest(), Cell(length, depth))
        built = build_prompt(
            essays,
            tokenizer,
            template=TEMPLATES[template],
            insertions=[Insertion(needle.text, depth)],
            question=needle.question,
            answer_lead=needle.answer_lead,
            context_length=length,
        )
        # Counted again, whole, by the tokenizer: no tolerance.
        assert len(tokenizer.encode(built.prompt)) == length
        assert built.planned_prompt_tokens == length
        assert built.context.count(needle.text) == 1


# Two million tokens of the local template are counted whole by
# test_a_several_megabyte_haystack_works_as_well (a haystack of many files), and a
# million by test_the_whole_prompt_is_exactly_the_requested_length.
@pytest.mark.parametrize("length", [1_000, 8_000, 512_000])
def test_the_local_prompt_is_exact_at_every_length(
    essays: HaystackTokens, tokenizer: SentencePieceTokenizer, length: int
) -> None:
    needle, built = build(essays, tokenizer, length, 50.0)
    assert len(tokenizer.encode(built.prompt)) == length == built.planned_prompt_tokens
    assert built.context.count(needle.text) == 1


@pytest.mark.parametrize("length", [1_000, 8_000, 32_000, 128_000, 2_000_000])
@pytest.mark.parametrize("depth", [0, 10, 33, 50, 77.5, 100])
def test_needle_follows_a_sentence_end_at_the_requested_depth(
    essays: HaystackTokens, tokenizer: SentencePieceTokenizer, length: int, depth: float
) -> None:
    needle, built = build(essays, tokenizer, length, depth)
    before = built.context[: built.context.index(needle.text)]
    if depth < 100:  # depth 100 appends at the very end, as in the harness
        assert before == "" or before.endswith("."), before[-40:]
    # Backing up to the previous sentence end costs at most one sentence: within 1 %
    # of the haystack from 8k tokens up; at 1k a sentence is itself ~3 % of the text.
    tolerance = 1.0 if length >= 8_000 else 6.0
    assert depth - tolerance <= built.actual_depth_percent <= depth
    if depth == 100:
        assert built.context.endswith(needle.text)


def test_the_buffer_leaves_exactly_its_tokens_free(
    essays: HaystackTokens, tokenizer: SentencePieceTokenizer
) -> None:
    _, plain = build(essays, tokenizer, 2000, 50)
    _, buffered = build(essays, tokenizer, 2000, 50, buffer_tokens=200)
    assert len(tokenizer.encode(plain.prompt)) == 2000
    assert len(tokenizer.encode(buffered.prompt)) == 1800 == buffered.planned_prompt_tokens


def test_a_length_below_the_prompts_own_size_is_refused(
    essays: HaystackTokens, tokenizer: SentencePieceTokenizer
) -> None:
    with pytest.raises(ContextTooShortError, match="below the prompt's own size"):
        build(essays, tokenizer, 10, 50)


def test_haystack_repeats_in_file_order(essays: HaystackTokens) -> None:
    twice = 2 * essays.corpus_tokens + 10
    essays.ensure(twice)
    text = essays.text_between(0, twice)
    assert text.startswith(essays.text + essays.text)
    assert np.all(np.diff([essays.byte_offset(i) for i in range(0, twice, 997)]) >= 0)


@HEAVY
def test_a_several_megabyte_haystack_works_as_well(
    tokenizer: SentencePieceTokenizer, shakespeare_dir: Path
) -> None:
    blobs = MemoryBlobs()
    for path in sorted(shakespeare_dir.glob("*.txt")):
        blobs.objects[f"haystacks/shakespeare/{path.name}"] = path.read_bytes()
    haystack = load_haystack(blobs, "haystacks/shakespeare/", tokenizer)
    assert haystack.corpus_tokens > 2_000_000
    length = 2_000_000
    for depth in (0, 37.5, 100):
        _needle, built = build(haystack, tokenizer, length, depth)
        assert built.planned_prompt_tokens == length
        assert depth - 1 <= built.actual_depth_percent <= depth
    assert len(tokenizer.encode(built.prompt)) == length  # the last, at 100 %


def test_a_length_no_cut_can_reach_fails_the_cell_instead_of_landing_off(
    essays: HaystackTokens,
) -> None:
    from niah.core.prompts import prompt_builder

    class EvenTotalsOnly:
        """Every haystack token adds two prompt tokens: odd totals are unreachable."""

        def count(self, layout: prompt_builder._Layout) -> int:
            return 2 * layout.budget + 10

    insertions = [Insertion(" A needle.", 50)]
    with pytest.raises(ContextTooShortError, match="exactly 1001 tokens"):
        prompt_builder._solve(
            cast(prompt_builder._Counter, EvenTotalsOnly()),  # only count() is called
            essays,
            insertions,
            1001,
            budget=900,
        )
