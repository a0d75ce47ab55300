"""How the Vertex stand-in counts a prompt's tokens: ours (Gemma 3), or another tokenization.

Gemini 3.5 and later are not on Gemma 3 (google-genai maps them to Gemma 4 or to
nothing: ``niah.catalog.tokenizers``), so the stand-in can play a model on a tokenizer
the service does not hold (``tokenization: chunks4``), besides one that counts ours
times a constant (``token_count_ratio``).
"""

from __future__ import annotations

import re
from typing import Any


def count_tokens(text: str, estimate: bool = False) -> int:
    """Our count: the Gemma 3 tokenizer's (or ``len // 4`` where ``estimate``)."""
    if estimate:  # for load tests, where tokenizing megabytes would be the bottleneck
        return len(text) // 4
    from niah.models.tokenizer import get_tokenizer

    return len(get_tokenizer().encode(text))


# A run of letters and digits, a symbol, an underscore.
CHUNK_PIECES = re.compile(r"[^\W_]+|[^\w\s]|_")


def chunks4_tokens(text: str) -> int:
    """The ``chunks4`` tokenization's count: 4 characters a token in words, 1 a symbol.

    Deterministic and cheap, and no constant times Gemma 3's count: the essays count
    1.20-1.34 of ours, a needle's 7 digits 2 tokens where Gemma 3 makes 7.
    """
    return sum(
        -(-len(piece) // 4) if piece[0].isalnum() else 1 for piece in CHUNK_PIECES.findall(text)
    )


def modelled_prompt_tokens(config: dict[str, Any], text: str) -> int:
    """A prompt's tokens as the modelled model counts them: ours (or chunks4's) times its ratio.

    The one count of countTokens, promptTokenCount, the input limit and the cache.
    """
    if config.get("tokenization") == "chunks4":
        ours = chunks4_tokens(text)
    else:
        ours = count_tokens(text, bool(config["estimate_tokens"]))
    return int(ours * float(config["token_count_ratio"]) + 0.5)
