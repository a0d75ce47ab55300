"""The shuffled haystack: same sentences, seeded order, prompts still exact to the token."""

import re
from collections import Counter

import numpy as np
import pytest

from niah.core.prompts.haystack_order import shuffled_haystack, shuffled_haystacks
from niah.core.prompts.haystack_tokens import HaystackTokens, load_haystack
from niah.core.prompts.needles import needle_for
from niah.core.prompts.prompt_builder import Insertion, build_prompt
from niah.core.prompts.texts import HARNESS_TEMPLATE, LOCAL_TEMPLATE
from niah.core.request.grid import Cell
from niah.core.request.spec import RunRequest
from niah.models.tokenizer import SentencePieceTokenizer
from tests.fakes import MemoryBlobs

SEED = 7


@pytest.fixture(scope="module")
def noise(tokenizer: SentencePieceTokenizer) -> HaystackTokens:
    """RULER's noise haystack: five sentences, repeated, so most moves swap equals."""
    return load_haystack(MemoryBlobs(), "generated/noise/", tokenizer)


@pytest.fixture(params=["essays", "noise"])
def haystack(request: pytest.FixtureRequest) -> HaystackTokens:
    value: HaystackTokens = request.getfixturevalue(request.param)
    return value


def sentences(text: bytes) -> list[bytes]:
    """The text cut after each '.' that a space or newline follows.

    Written from the bytes alone, apart from the module's own cuts.
    """
    return re.split(rb"(?<=\.)(?=[ \n])", text)


def test_the_whole_shuffled_corpus_tokenizes_to_its_ids(
    haystack: HaystackTokens, tokenizer: SentencePieceTokenizer
) -> None:
    shuffled = shuffled_haystack(haystack, SEED)
    assert shuffled.text != haystack.text
    assert tokenizer.encode(shuffled.text.decode("utf-8")) == shuffled.ids.tolist()


def test_the_sentences_are_the_same_in_another_order(haystack: HaystackTokens) -> None:
    before, after = sentences(haystack.text), sentences(shuffled_haystack(haystack, SEED).text)
    assert len(before) > 1000
    assert Counter(after) == Counter(before)
    assert (after[0], after[-1]) == (before[0], before[-1])  # the pass's join is untouched
    # Shuffled, not nudged: most places hold another sentence than before (the noise
    # haystack has five sentences, so one place in five matches by chance).
    same_place = sum(a == b for a, b in zip(after, before, strict=True))
    assert same_place < 0.3 * len(before)


def test_the_order_follows_the_seed_alone(essays: HaystackTokens) -> None:
    first = shuffled_haystack(essays, SEED)
    assert shuffled_haystack(essays, SEED) is first  # kept per process
    assert first.key == f"{essays.key}:shuffled:{SEED}"
    shuffled_haystacks.clear()
    again = shuffled_haystack(essays, SEED)
    assert again is not first
    assert again.text == first.text and np.array_equal(again.ids, first.ids)
    other = shuffled_haystack(essays, SEED + 1)
    assert other.text != first.text and other.key != first.key


@pytest.mark.parametrize(
    "text",
    [
        "Title\n\nOne. Two.\n\nThree.  Four.\nFive.> Six. <b>Seven.</b> Eight... Nine.\nTen",
        "A. B. C. D. E. F. G. H.",  # ends on a sentence: the last stays last
        "\n\nAlpha. Beta.\n\n\nGamma. Delta. Épsilon. Zeta.\n",  # newlines at both ends
    ],
    ids=["markup-and-newlines", "ends-on-a-sentence", "newline-ends"],
)
def test_awkward_junctions_stay_exact(tokenizer: SentencePieceTokenizer, text: str) -> None:
    ids = np.asarray(tokenizer.encode(text), dtype=np.uint32)
    small = HaystackTokens(f"small:{text}", text.encode(), ids, tokenizer.piece_byte_lengths)
    texts = set()
    for seed in range(12):
        shuffled = shuffled_haystack(small, seed)
        assert tokenizer.encode(shuffled.text.decode("utf-8")) == shuffled.ids.tolist()
        assert Counter(sentences(shuffled.text)) == Counter(sentences(small.text))
        texts.add(shuffled.text)
    assert len(texts) > 1


def test_a_corpus_without_two_movable_sentences_is_returned_as_it_is(
    tokenizer: SentencePieceTokenizer,
) -> None:
    for text in ("no sentence ends here", "One.Two.Three", "First. Second. Last"):
        ids = np.asarray(tokenizer.encode(text), dtype=np.uint32)
        small = HaystackTokens(text, text.encode(), ids, tokenizer.piece_byte_lengths)
        assert shuffled_haystack(small, SEED) is small


def build(
    haystack: HaystackTokens,
    tokenizer: SentencePieceTokenizer,
    length: int,
    depths: tuple[float, ...],
    template: str = LOCAL_TEMPLATE,
) -> tuple[list[str], str, tuple[float, ...]]:
    """A prompt of ``length`` on the shuffled haystack, with one needle per depth."""
    needles = [needle_for(RunRequest(), Cell(length, depth)) for depth in depths]
    built = build_prompt(
        shuffled_haystack(haystack, SEED),
        tokenizer,
        template=template,
        insertions=[Insertion(n.text, d) for n, d in zip(needles, depths, strict=True)],
        question=needles[0].question,
        answer_lead=needles[0].answer_lead,
        context_length=length,
    )
    # Counted again, whole, by the tokenizer: no tolerance.
    assert len(tokenizer.encode(built.prompt)) == length == built.planned_prompt_tokens
    for needle in needles:
        assert built.context.count(needle.text) == 1
    return [n.text for n in needles], built.context, built.actual_depths_percent


@pytest.mark.parametrize("template", [LOCAL_TEMPLATE, HARNESS_TEMPLATE], ids=["local", "harness"])
@pytest.mark.parametrize("length", [1_000, 8_000, 32_000])
def test_prompts_on_the_shuffled_haystack_are_exact(
    haystack: HaystackTokens, tokenizer: SentencePieceTokenizer, length: int, template: str
) -> None:
    for depths in ((0,), (100,), (0, 37.5, 100)):
        build(haystack, tokenizer, length, depths, template)


def test_a_prompt_longer_than_the_shuffled_corpus_is_exact(
    haystack: HaystackTokens, tokenizer: SentencePieceTokenizer
) -> None:
    length = haystack.corpus_tokens * 2 + 10_000  # two joins of one pass to the next
    build(haystack, tokenizer, length, (0, 50, 100))


@pytest.mark.parametrize("length", [1_000, 8_000, 32_000])
@pytest.mark.parametrize("depth", [0, 10, 33, 50, 77.5, 100])
def test_the_needle_lands_after_a_sentence_end_at_its_depth(
    haystack: HaystackTokens, tokenizer: SentencePieceTokenizer, length: int, depth: float
) -> None:
    (needle,), context, (actual,) = build(haystack, tokenizer, length, (depth,))
    before = context[: context.index(needle)]
    if depth < 100:  # depth 100 appends at the very end, as in the harness
        assert before == "" or before.endswith("."), before[-40:]
    # As tests/unit/test_context.py: backing up costs at most one sentence.
    tolerance = 1.0 if length >= 8_000 else 6.0
    assert depth - tolerance <= actual <= depth
    if depth == 100:
        assert context.endswith(needle)
