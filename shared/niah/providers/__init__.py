"""Model providers behind one interface; ``get_provider`` picks one per run spec."""

from __future__ import annotations

import threading

from niah.providers.base import ModelAnswer, Provider
from niah.settings import get_settings
from niah.spec import ProviderName

__all__ = [
    "DEFAULT_MAX_OUTPUT_TOKENS",
    "ModelAnswer",
    "Provider",
    "get_provider",
    "max_context_tokens",
]

# Answer lengths when the run does not set max_output_tokens (the harness used 300).
DEFAULT_MAX_OUTPUT_TOKENS: dict[ProviderName, int] = {
    "local": 24,
    "gemini": 300,
    "openai_compatible": 300,
}

_lock = threading.Lock()
_providers: dict[tuple[str, str], Provider] = {}

# Input limits (tokens) used to refuse impossible grids before anything is published.
GEMINI_INPUT_LIMITS = {"gemini-1.5-pro": 2_097_152, "gemini-": 1_048_576}


def max_context_tokens(provider: ProviderName, model_name: str) -> int | None:
    """The model's input limit in tokens, where known without calling it."""
    if provider == "local":
        # llama.cpp's window holds the BOS token, the prompt and the answer.
        return get_settings().local_model_max_context - 1 - DEFAULT_MAX_OUTPUT_TOKENS["local"]
    if provider == "gemini":
        for prefix, limit in GEMINI_INPUT_LIMITS.items():
            if model_name.rsplit("/", 1)[-1].startswith(prefix):
                return limit
    return None


def get_provider(provider: ProviderName, model_name: str) -> Provider:
    """The provider for ``model_name``, created once per process (models load slowly)."""
    key = (provider, model_name)
    with _lock:
        if key not in _providers:
            _providers[key] = _create(provider, model_name)
        return _providers[key]


def _create(provider: ProviderName, model_name: str) -> Provider:
    # Imported here so a process only loads the provider it uses.
    if provider == "local":
        from niah.providers.local_gemma import LocalGemmaProvider

        return LocalGemmaProvider(model_name)
    if provider == "gemini":
        from niah.providers.gemini import GeminiProvider

        return GeminiProvider(model_name)
    from niah.providers.openai_compat import OpenAICompatibleProvider

    return OpenAICompatibleProvider(model_name)
