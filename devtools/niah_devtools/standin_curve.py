"""A stand-in model with a known curve: the share it answers right, as a function of length.

To check a certification against the truth, the model must have one: here a logistic
in the log of the prompt's length, ``top / (1 + exp((ln L - ln midpoint) / width))``,
answering right when a seeded draw from the prompt falls under it. The same prompt is
always answered the same way; different prompts (another depth, needle or sample) are
independent draws. The Vertex stand-in uses it when its config has ``curve``, and the
certify benchmark draws from the same function, so both meet one truth.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

# What a model that missed the needle says: no task scores it right.
MISSED = "I could not find that in the text."


@dataclass(frozen=True)
class KnownCurve:
    """The share answered right at a length: 1/2 of ``top`` at ``midpoint_tokens``."""

    midpoint_tokens: float
    width: float = 0.3  # in natural-log units of length: smaller is a sharper drop
    top: float = 1.0
    seed: int = 0

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> KnownCurve:
        """From the stand-in's ``curve`` config (its keys are this class's fields)."""
        return cls(
            **{k: config[k] for k in ("midpoint_tokens", "width", "top", "seed") if k in config}
        )

    def right_share(self, tokens: float) -> float:
        """The chance a prompt of ``tokens`` tokens is answered right."""
        exponent = (math.log(tokens) - math.log(self.midpoint_tokens)) / self.width
        return self.top / (1 + math.exp(min(exponent, 700.0)))

    def answers_right(self, key: str, tokens: float) -> bool:
        """Whether the prompt named ``key`` (its text, or any unique name) is answered right."""
        digest = hashlib.sha256(f"{self.seed}:{key}".encode()).digest()
        return int.from_bytes(digest[:8], "big") / 2**64 < self.right_share(tokens)

    def effective_length(self, lengths: Sequence[int], threshold: float) -> int | None:
        """The true effective length among ``lengths``: the longest at or above ``threshold`` %."""
        passing = [n for n in lengths if 100 * self.right_share(n) >= threshold]
        return max(passing, default=None)
