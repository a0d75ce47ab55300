"""What the service needs of a model: the tokenizer that counts, the provider that answers.

``niah.models`` implements both; ``ModelAnswer`` is the shape of every provider's reply.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

if TYPE_CHECKING:  # the dispatcher imports these interfaces and must not load numpy
    import numpy as np
    import numpy.typing as npt


class Tokenizer(Protocol):
    """What the prompt builder needs of a tokenizer."""

    name: str

    def encode(self, text: str) -> list[int]:
        """Token IDs of ``text``, without BOS/EOS."""
        ...

    def decode(self, ids: list[int]) -> str:
        """Text of ``ids``."""
        ...

    @property
    def piece_byte_lengths(self) -> npt.NDArray[np.int64]:
        """UTF-8 byte length of every vocabulary entry, indexed by token ID.

        The vocabulary is lossless (no normalisation, byte fallback), so the byte
        offset of token ``k`` in a text is the sum of these lengths over its first
        ``k`` tokens: a cell can then be cut from the text without decoding.
        """
        ...


Role = Literal["user", "model"]
Turn = tuple[Role, str]


@dataclass(frozen=True)
class ModelAnswer:
    """A model's reply and its usage as the API reports it.

    ``finish_reason`` is kept as the API gives it ("STOP", "MAX_TOKENS", "SAFETY"...).
    ``prompt_tokens`` includes ``cached_tokens`` (served from the provider's cache, billed
    at its cached rate); ``output_tokens`` is the answer's, ``thinking_tokens`` the
    thoughts' (billed as output); ``total_tokens`` is the API's own total where it gives one.
    ``model_version`` is the model that answered, as the API names it (Vertex's
    ``modelVersion``, an OpenAI-style ``model``): Google may route an ID to another
    model. ``response_id`` is the API's ID of this reply, to find it in Google's logs.
    None where the provider reports neither (the local model).
    """

    text: str
    finish_reason: str | None
    prompt_tokens: int | None
    output_tokens: int | None
    latency_seconds: float
    thinking_tokens: int | None = None
    cached_tokens: int | None = None
    total_tokens: int | None = None
    model_version: str | None = None
    response_id: str | None = None
    # Vertex's ``usageMetadata.trafficType`` (ON_DEMAND, ON_DEMAND_FLEX, ...): the tier
    # the call was served on (``niah.catalog.tiers``); None where the reply names none.
    traffic_type: str | None = None

    def usage(self) -> dict[str, int | None]:
        """The counts in Vertex AI's ``usageMetadata`` names, as stored on a cell."""
        counted = [self.prompt_tokens, self.output_tokens, self.thinking_tokens]
        return {
            "prompt_token_count": self.prompt_tokens,
            "cached_content_token_count": self.cached_tokens,
            "candidates_token_count": self.output_tokens,
            "thoughts_token_count": self.thinking_tokens,
            "total_token_count": self.total_tokens
            if self.total_tokens is not None
            else sum(n or 0 for n in counted),
        }


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
        self,
        prompt: str,
        *,
        max_output_tokens: int,
        thinking_budget: int | None = None,
        thinking_level: str | None = None,
        turns: tuple[Turn, ...] | None = None,
        tier: str | None = None,
    ) -> ModelAnswer:
        """Answer ``prompt``; raise a ``niah.errors`` error on failure.

        ``thinking_budget`` (Gemini 2.5) and ``thinking_level`` (Gemini 3) apply to
        models that think; others ignore them.
        ``turns`` is the same prompt as a conversation (user and model turns, the last a
        user's): chat APIs get the turns, a completion model the flattened ``prompt``.
        ``tier``: Vertex's pricing tier (flex, priority; None: standard); the run's
        checks refuse it for other providers, which ignore it.
        """
        ...

    def count_tokens(self, prompt: str) -> int:
        """The model's own count of ``prompt``'s tokens (an API call where there is one)."""
        ...
