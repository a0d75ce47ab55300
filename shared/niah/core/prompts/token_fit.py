"""Lengths as the model counts them: the model's count against ours, and the fit.

Prompts are built token-exact in the Gemma 3 vocabulary (``niah.models.tokenizer``),
which Google's local tokenizer uses for Gemini 2.x. Nothing says later Gemini models
count the same text the same way, and a model that counts 5 % more would put a "1M"
cell over its input limit and shift every length on the heatmap. So a Gemini run
measures, once, how the model counts a sample of its haystack (``countTokens``, which
costs nothing), records it, and builds each haystack prompt to the local length the
model counts as the requested one. The reply's ``promptTokenCount`` checks each cell.
A prompt the model would count above its input limit is refused before the call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from niah.core.interfaces import Provider, Tokenizer
from niah.core.prompts.haystack_tokens import HaystackTokens
from niah.errors import PromptOverLimitError

# The sample: the haystack's text that cells use (they start at its first token),
# whole up to this many tokens, else this many tokens in SAMPLE_SLICES slices spread
# evenly over it. 32,768 tokens (~130 KB) resolve the ratio to 1/32,768 (31 tokens in
# a 1M cell) in one countTokens request; slices from the whole span follow its mix of
# texts (one essay's ratio is not the corpus's).
SAMPLE_TOKENS = 32_768
SAMPLE_SLICES = 16
# A fitted prompt whose expected count is at least this share of the model's input
# limit is counted exactly (countTokens) before the call: the sample's ratio is an
# estimate, and near the limit an estimate is not enough.
NEAR_LIMIT_SHARE = 0.9


@dataclass(frozen=True)
class TokenCountRatio:
    """How the model counted a sample of the run's haystack, against the local count.

    Integer counts, not a float ratio, so the fit is exact integer arithmetic.
    """

    model_tokens: int
    local_tokens: int
    sample: str  # which text was counted, in words

    @property
    def ratio(self) -> float:
        """Model tokens per local token on the sample."""
        return self.model_tokens / self.local_tokens

    @property
    def deviation_percent(self) -> float:
        """How many percent more (negative: fewer) tokens the model counts."""
        return round(100 * (self.model_tokens - self.local_tokens) / self.local_tokens, 3)

    def local_length(self, model_tokens: int) -> int:
        """The local tokens whose text the model counts as at most ``model_tokens``.

        ``floor(model_tokens * local / model)``: at the sample's ratio the model's count
        of the result is in ``(model_tokens - ratio, model_tokens]``, never above. At a
        ratio of exactly 1 it is ``model_tokens`` itself (no fit).
        """
        return model_tokens * self.local_tokens // self.model_tokens

    def expected_model_tokens(self, local_tokens: int) -> int:
        """The model's count of ``local_tokens`` local tokens at the sample's ratio (rounded up)."""
        return -(-local_tokens * self.model_tokens // self.local_tokens)

    def record(self, model_name: str) -> dict[str, Any]:
        """As the run document keeps it (``token_count``)."""
        return {
            "model": model_name,
            "model_tokens": self.model_tokens,
            "local_tokens": self.local_tokens,
            "ratio": round(self.ratio, 6),
            "deviation_percent": self.deviation_percent,
            "sample": self.sample,
            "measured_by": "countTokens",
        }

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> TokenCountRatio:
        """Read back what ``record`` wrote."""
        return cls(int(record["model_tokens"]), int(record["local_tokens"]), str(record["sample"]))


def sample_spans(span_tokens: int) -> list[tuple[int, int]]:
    """Token ranges of the sample over the first ``span_tokens`` of the haystack.

    Whole when short; else ``SAMPLE_SLICES`` equal slices, the first at token 0 and the
    last ending at ``span_tokens``, evenly spaced between.
    """
    if span_tokens <= SAMPLE_TOKENS:
        return [(0, span_tokens)]
    size = SAMPLE_TOKENS // SAMPLE_SLICES
    step = (span_tokens - size) / (SAMPLE_SLICES - 1)
    return [(round(k * step), round(k * step) + size) for k in range(SAMPLE_SLICES)]


def sample_text(haystack: HaystackTokens, span_tokens: int) -> tuple[str, str]:
    """The sample's text and its description; slices are joined by a blank line."""
    span = max(1, min(span_tokens, haystack.corpus_tokens))  # beyond one pass it repeats
    spans = sample_spans(span)
    haystack.ensure(span)
    text = "\n\n".join(
        haystack.text_between(start, end).decode("utf-8", errors="ignore") for start, end in spans
    )
    if len(spans) == 1:
        return text, f"the haystack's first {span:,} tokens"
    size = spans[0][1] - spans[0][0]
    return text, f"{len(spans)} slices of {size:,} tokens spread over its first {span:,}"


def measure_ratio(
    haystack: HaystackTokens, tokenizer: Tokenizer, provider: Provider, span_tokens: int
) -> TokenCountRatio:
    """Count the sample both ways: one ``countTokens`` call and one local encode."""
    text, described = sample_text(haystack, span_tokens)
    local = len(tokenizer.encode(text))
    model = provider.count_tokens(text)
    if local <= 0 or model <= 0:  # an empty haystack: nothing to compare, nothing to fit
        return TokenCountRatio(1, 1, f"{described} (empty)")
    return TokenCountRatio(model, local, f"{described} ({local:,} local tokens)")


def needs_exact_count(
    *, fitted: bool, expected_model_tokens: int, limit: int | None, asked: bool
) -> bool:
    """Whether to count a prompt with ``countTokens`` before calling the model.

    Asked (``count_tokens_check``); a prompt not fitted (its text is not the haystack's,
    so the sample says nothing of it); or a fitted one near the limit.
    """
    if asked or not fitted:
        return True
    return limit is not None and expected_model_tokens >= NEAR_LIMIT_SHARE * limit


def refuse_over_limit(
    model_name: str,
    *,
    context_length: int,
    model_tokens: int,
    limit: int | None,
    counted: bool,
    shared_output: int | None = None,
) -> None:
    """Raise ``PromptOverLimitError`` for a prompt the model counts above its limit.

    Refused before the call: a request over the limit is a 400 at best, and nothing of
    it would be a result. The message names the option and the length that fits.
    """
    if limit is None or model_tokens <= limit:
        return
    how = "countTokens" if counted else "at the run's measured ratio"
    shared = f", shared with the output budget of {shared_output}" if shared_output else ""
    fits = context_length * limit // model_tokens
    raise PromptOverLimitError(
        f"context_lengths: the {context_length}-token cell's prompt is {model_tokens} tokens "
        f"as {model_name} counts it ({how}), above its input limit of {limit} tokens{shared}; "
        f"ask for at most {fits} tokens. Refused before the call: nothing was paid"
    )


def cell_token_fields(model_prompt_tokens: int | None, local_prompt_tokens: int) -> dict[str, Any]:
    """A cell's own count ratio: the reply's ``promptTokenCount`` against the local count."""
    if not model_prompt_tokens or local_prompt_tokens <= 0:
        return {}
    share = model_prompt_tokens / local_prompt_tokens
    return {
        "token_count_ratio": round(share, 6),
        "token_count_deviation_percent": round(100 * (share - 1), 3),
    }


def token_count_note(record: dict[str, Any] | None) -> str | None:
    """The report's line when the model counts the haystack otherwise than we do.

    A run records a ratio only where it fits its lengths by it (haystack prompts).
    """
    if not record or not record.get("deviation_percent"):
        return None
    deviation = float(record["deviation_percent"])
    model = str(record.get("model") or "the model")
    how = "more" if deviation > 0 else "fewer"
    return (
        f"{model} counts {abs(deviation):.1f} % {how} tokens than the local tokenizer on "
        f"this haystack ({record.get('sample')}); lengths fitted to {model}'s count"
    )
