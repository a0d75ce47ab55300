"""The provider interface: what the worker needs of a model."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class ModelAnswer:
    """A model's reply and what it cost.

    ``finish_reason`` is kept as the API gives it ("STOP", "MAX_TOKENS", "SAFETY"...);
    a blocked or empty answer is an answer, scored like any other.
    """

    text: str
    finish_reason: str | None
    prompt_tokens: int | None
    output_tokens: int | None
    latency_seconds: float


class Provider(Protocol):
    """A model that answers prompts.

    ``tokenizer_name`` says which tokenizer counts its tokens; ``default_template``
    is the prompt template (placeholders ``{context}``, ``{question}``,
    ``{answer_lead}``) that suits it.
    """

    model_name: str
    tokenizer_name: str
    default_template: str

    def generate(
        self, prompt: str, *, max_output_tokens: int, thinking_budget: int | None = None
    ) -> ModelAnswer:
        """Answer ``prompt``; raise a ``niah.errors`` error on failure.

        ``thinking_budget`` applies to models that think (Gemini 2.5); others ignore it.
        """
        ...

    def count_tokens(self, prompt: str) -> int:
        """The model's own count of ``prompt``'s tokens (an API call where there is one)."""
        ...
