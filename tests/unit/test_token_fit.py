"""Lengths as the model counts them: the ratio, the fit, the limit (niah.core.prompts.token_fit)."""

from __future__ import annotations

import itertools
from fractions import Fraction
from typing import Any

import pytest

from niah.core.prompts.answer_budget import call_budget
from niah.core.prompts.haystack_tokens import HaystackTokens
from niah.core.prompts.prompt_builder import BuiltPrompt
from niah.core.prompts.token_fit import (
    NEAR_LIMIT_SHARE,
    SAMPLE_SLICES,
    SAMPLE_TOKENS,
    TokenCountRatio,
    cell_token_fields,
    measure_ratio,
    needs_exact_count,
    refuse_over_limit,
    sample_spans,
    sample_text,
    token_count_note,
)
from niah.core.request.grid import Cell
from niah.core.request.spec import RunRequest
from niah.errors import PromptOverLimitError
from niah.models.tokenizer import SentencePieceTokenizer
from niah.service.cells.prompt import count_before_call


class CountingProvider:
    """Counts like a model whose tokens are ``ratio`` times Gemma 3's, rounded half up."""

    tokenizer_name = "gemma3"
    default_template = "{context}\n\n{question}"
    model_name = "gemini-3.8-flash"

    def __init__(self, tokenizer: SentencePieceTokenizer, ratio: float) -> None:
        self._tokenizer = tokenizer
        self._ratio = ratio
        self.counted: list[str] = []

    def generate(self, prompt: str, **_: Any) -> Any:
        raise AssertionError("no model call in these tests")

    def count_tokens(self, prompt: str) -> int:
        self.counted.append(prompt)
        return int(len(self._tokenizer.encode(prompt)) * self._ratio + 0.5)


def test_the_fit_is_the_floor_of_the_target_at_the_samples_ratio() -> None:
    ratio = TokenCountRatio(model_tokens=1050, local_tokens=1000, sample="s")
    assert ratio.local_length(1000) == 952  # 1000 * 1000 // 1050
    assert ratio.expected_model_tokens(952) == 1000  # ceil(952 * 1.05) = ceil(999.6)
    assert ratio.local_length(1_048_576) == 998_643
    assert ratio.deviation_percent == 5.0
    fewer = TokenCountRatio(model_tokens=950, local_tokens=1000, sample="s")
    assert fewer.local_length(1000) == 1052 and fewer.deviation_percent == -5.0


@pytest.mark.parametrize("counts", [(1050, 1000), (32_771, 32_768), (9_997, 10_000), (7, 3)])
def test_at_the_samples_ratio_the_model_counts_at_most_the_target_and_less_than_one_ratio_below(
    counts: tuple[int, int],
) -> None:
    """The claim, exactly: L' * model / local is in (T - model / local, T]."""
    ratio = TokenCountRatio(*counts, sample="s")
    share = Fraction(*counts)
    for target in [*range(1, 3000), 128_000, 1_000_000, 1_048_576]:
        counted = ratio.local_length(target) * share
        assert target - share < counted <= target, target


def test_a_ratio_of_exactly_one_fits_nothing() -> None:
    same = TokenCountRatio(4096, 4096, sample="s")
    assert all(same.local_length(n) == n for n in range(1, 5000))
    assert all(same.expected_model_tokens(n) == n for n in range(1, 5000))
    assert token_count_note(same.record("gemini-3.8-flash")) is None


def test_a_short_span_is_sampled_whole_and_a_long_one_in_even_slices() -> None:
    assert sample_spans(5000) == [(0, 5000)]
    assert sample_spans(SAMPLE_TOKENS) == [(0, SAMPLE_TOKENS)]
    spans = sample_spans(1_000_000)
    size = SAMPLE_TOKENS // SAMPLE_SLICES
    assert len(spans) == SAMPLE_SLICES == 16 and size == 2048
    assert all(end - start == size for start, end in spans)
    assert spans[0] == (0, 2048) and spans[-1] == (1_000_000 - 2048, 1_000_000)
    gaps = {b[0] - a[0] for a, b in itertools.pairwise(spans)}
    assert gaps <= {66_530, 66_531}  # (1,000,000 - 2,048) / 15, rounded


def test_the_ratio_is_measured_on_the_sample_both_ways(
    essays: HaystackTokens, tokenizer: SentencePieceTokenizer
) -> None:
    provider = CountingProvider(tokenizer, 1.05)
    ratio = measure_ratio(essays, tokenizer, provider, span_tokens=5000)
    [text] = provider.counted
    assert text == essays.text_between(0, 5000).decode("utf-8", errors="ignore")
    local = len(tokenizer.encode(text))
    assert (ratio.local_tokens, ratio.model_tokens) == (local, int(local * 1.05 + 0.5))
    assert ratio.sample == f"the haystack's first 5,000 tokens ({local:,} local tokens)"
    assert round(ratio.deviation_percent, 1) == 5.0
    record = ratio.record("gemini-3.8-flash")
    assert TokenCountRatio.from_record(record) == ratio
    assert record["measured_by"] == "countTokens" and record["model"] == "gemini-3.8-flash"


def test_a_long_span_is_counted_in_one_request_of_its_slices(
    essays: HaystackTokens, tokenizer: SentencePieceTokenizer
) -> None:
    provider = CountingProvider(tokenizer, 1.0)
    span = min(essays.corpus_tokens, 200_000)
    text, described = sample_text(essays, span)
    ratio = measure_ratio(essays, tokenizer, provider, span_tokens=10_000_000)  # one pass
    assert provider.counted == [sample_text(essays, essays.corpus_tokens)[0]]
    assert ratio.model_tokens == ratio.local_tokens and ratio.deviation_percent == 0
    assert described == f"16 slices of 2,048 tokens spread over its first {span:,}"
    assert text.count("\n\n") >= SAMPLE_SLICES - 1


def test_which_prompts_are_counted_before_the_call() -> None:
    limit = 1_000_000
    near = int(NEAR_LIMIT_SHARE * limit)
    fitted: dict[str, Any] = {"fitted": True, "limit": limit, "asked": False}
    assert not needs_exact_count(expected_model_tokens=near - 1, **fitted)
    assert needs_exact_count(expected_model_tokens=near, **fitted)
    assert needs_exact_count(fitted=True, expected_model_tokens=10, limit=limit, asked=True)
    assert needs_exact_count(fitted=False, expected_model_tokens=10, limit=limit, asked=False)
    assert not needs_exact_count(fitted=True, expected_model_tokens=10**9, limit=None, asked=False)


def test_a_prompt_over_the_limit_is_refused_naming_the_option_and_what_fits() -> None:
    refuse_over_limit("m", context_length=1000, model_tokens=1000, limit=1000, counted=True)
    refuse_over_limit("m", context_length=1000, model_tokens=10**9, limit=None, counted=True)
    with pytest.raises(PromptOverLimitError) as refused:
        refuse_over_limit(
            "gemini-3.8-flash",
            context_length=1_048_576,
            model_tokens=1_101_005,
            limit=1_048_576,
            counted=True,
        )
    assert str(refused.value) == (
        "context_lengths: the 1048576-token cell's prompt is 1101005 tokens as "
        "gemini-3.8-flash counts it (countTokens), above its input limit of 1048576 tokens; "
        "ask for at most 998643 tokens. Refused before the call: nothing was paid"
    )
    assert refused.value.kind == "cell"


def test_a_gemini_prompt_the_model_counts_over_its_limit_is_refused_before_the_call(
    tokenizer: SentencePieceTokenizer,
) -> None:
    spec = RunRequest(model_name="gemini-3.8-flash", task="common_words", context_lengths=[12000])
    provider = CountingProvider(tokenizer, 100.0)
    prompt = "word " * 12000  # 12,000 local tokens: 1.2M as this model counts
    local = len(tokenizer.encode(prompt))
    built = BuiltPrompt(prompt, prompt, local, local, ())
    budget = call_budget(spec)
    with pytest.raises(PromptOverLimitError, match=r"^context_lengths: the 12000-token cell"):
        count_before_call(spec, Cell(12000, 50.0), built, None, provider, budget)
    assert provider.counted == [prompt]  # counted once (free), never generated
    # At 1.05 it fits, and the count is kept on the cell.
    fits = CountingProvider(tokenizer, 1.05)
    counted = count_before_call(spec, Cell(12000, 50.0), built, None, fits, budget)
    assert counted == int(local * 1.05 + 0.5)


def test_a_fitted_prompt_far_below_the_limit_is_not_counted(
    tokenizer: SentencePieceTokenizer,
) -> None:
    spec = RunRequest(model_name="gemini-3.8-flash", context_lengths=[2000])
    provider = CountingProvider(tokenizer, 1.05)
    built = BuiltPrompt("text", "text", 1904, 1800, ())
    ratio = TokenCountRatio(1050, 1000, "s")
    assert (
        count_before_call(spec, Cell(2000, 50.0), built, ratio, provider, call_budget(spec)) is None
    )
    assert provider.counted == []


def test_a_cells_own_ratio_and_the_reports_line() -> None:
    assert cell_token_fields(1050, 1000) == {
        "token_count_ratio": 1.05,
        "token_count_deviation_percent": 5.0,
    }
    assert cell_token_fields(None, 1000) == {} and cell_token_fields(1000, 0) == {}
    record = TokenCountRatio(1050, 1000, "the haystack's first 1,000 tokens").record(
        "gemini-3.8-flash"
    )
    assert token_count_note(record) == (
        "gemini-3.8-flash counts 5.0 % more tokens than the local tokenizer on this haystack "
        "(the haystack's first 1,000 tokens); lengths fitted to gemini-3.8-flash's count"
    )
    fewer = TokenCountRatio(950, 1000, "s").record("gemini-4-neon")
    assert token_count_note(fewer) == (
        "gemini-4-neon counts 5.0 % fewer tokens than the local tokenizer on this haystack "
        "(s); lengths fitted to gemini-4-neon's count"
    )
    assert token_count_note(None) is None
