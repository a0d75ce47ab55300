"""Model providers behind one interface (``niah.core.interfaces.Provider``).

``get_provider`` makes each provider once per process: a local model takes seconds to
load, and one SDK client serves every concurrent cell.
"""

from __future__ import annotations

from typing import Any

from niah.catalog.models import ProviderName
from niah.core.interfaces import Provider
from niah.memo import ProcessCache

_providers: ProcessCache[tuple[ProviderName, str], Provider] = ProcessCache()


def get_provider(provider: ProviderName, model_name: str) -> Provider:
    """The provider for ``model_name``, created once per process (models load slowly)."""
    return _providers.get_or_make((provider, model_name), lambda: _create(provider, model_name))


def _create(provider: ProviderName, model_name: str) -> Provider:
    return provider_class(provider)(model_name)


def provider_class(provider: ProviderName) -> Any:
    """The class serving ``provider`` (its ``default_template``, ``tokenizer_name``).

    Imported here so a process only loads the provider it uses; no model is loaded.
    """
    if provider == "local":
        from niah.models.providers.local_gemma import LocalGemmaProvider

        return LocalGemmaProvider
    if provider == "gemini":
        from niah.models.providers.gemini import GeminiProvider

        return GeminiProvider
    from niah.models.providers.openai_compat import OpenAICompatibleProvider

    return OpenAICompatibleProvider
