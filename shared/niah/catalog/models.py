"""The model catalog's questions: what the service knows of a model name, asked here.

Which entry a name (or a pinned version of it) stands for, its provider, limits,
temperature and notices; whether two names are one model. Nothing else parses model
names. The entries, with the Google pages each fact was read from, are
``niah.catalog.model_entries``; an entry's type is ``niah.catalog.model_info``'s; the
tokenizer files ``niah.catalog.tokenizers``'. Names from those are re-exported here, so a
caller asks one module.

Plain data on the ground floor: it imports only the settings and the errors, so every
layer (the core, the tasks, the providers, the dispatcher) may read it.
"""

from __future__ import annotations

import re

from niah.catalog.lifecycle import Lifecycle
from niah.catalog.model_entries import ASSUMED_OUTPUT_TOKENS, NO_MINIMAL
from niah.catalog.model_entries import CATALOG as CATALOG
from niah.catalog.model_info import GEMINI_3_TEMPERATURE, TEMPERATURE, Thinking
from niah.catalog.model_info import LOCAL_MODEL as LOCAL_MODEL
from niah.catalog.model_info import PROVIDER_OUTPUT_TOKENS as PROVIDER_OUTPUT_TOKENS
from niah.catalog.model_info import THINKING_LEVEL_ROOM as THINKING_LEVEL_ROOM
from niah.catalog.model_info import ModelInfo as ModelInfo
from niah.catalog.model_info import ProviderName as ProviderName
from niah.catalog.names import base_name, gemini_major, is_gemini_name, not_a_text_model
from niah.catalog.tokenizers import GEMMA3_TOKENIZER as GEMMA3_TOKENIZER
from niah.catalog.tokenizers import GEMMA3_TOKENIZER_SHA256 as GEMMA3_TOKENIZER_SHA256
from niah.catalog.tokenizers import TOKENIZER_SHA256 as TOKENIZER_SHA256
from niah.catalog.tokenizers import tokenizer_object as tokenizer_object
from niah.settings import get_settings


def catalog_entry(model_name: str) -> ModelInfo | None:
    """The entry ``model_name`` names: itself, or its family's for a pinned version.

    A pinned version (``gemini-2.5-flash-001``) takes the longest entry name that the ID
    starts with, followed by '-' or the end.
    """
    name = base_name(model_name)
    if name in CATALOG:
        return CATALOG[name]
    if not_a_text_model(name):  # gemini-2.5-flash-image is not gemini-2.5-flash
        return None
    matches = [key for key in CATALOG if name.startswith(key + "-")]
    return CATALOG[max(matches, key=len)] if matches else None


# What follows a family's ID in a pinned version of it the catalog does not list
# (``gemini-9.9-flash-001``): a version number, nothing that names another model.
PINNED_SUFFIX = re.compile(r"^-\d+$")


def model_family(model_name: str) -> str:
    """The model a name stands for: its catalog entry's name, else the bare ID.

    A pinned version and its family are one model (``gemini-3.5-flash-001`` is
    ``gemini-3.5-flash``); ``gemini-3.5-flash-lite`` is its own entry, not 3.5 Flash.
    """
    entry = catalog_entry(model_name)
    return entry.name if entry is not None else base_name(model_name)


def same_model(asked: str, served: str) -> bool:
    """Whether ``served`` (the API's ``modelVersion``) is the model ``asked`` named.

    Google answers a stable ID with the ID or a pinned version of it: the same model.
    A routed or deprecated ID answered by another family (3.7 Flash by 3.8 Flash) is
    not. For names the catalog does not know, a numbered version of the asked ID
    (``-001``) is still the same model.
    """
    asked_family, served_family = model_family(asked), model_family(served)
    if asked_family == served_family:
        return True
    suffix = served_family.removeprefix(asked_family)
    return suffix != served_family and PINNED_SUFFIX.match(suffix) is not None


def find_model(model_name: str) -> ModelInfo | None:
    """What the service knows of ``model_name``; None for a model it knows nothing of.

    A Gemini 3 (or later) text ID the catalog does not list gets the Gemini 3 family's
    handling, marked ``assumed``: thinking by level (the levels all Gemini 3 models share,
    default unknown, so none is sent), temperature 1.0, input limit unknown, and calls
    capped at the least output limit of the listed ones.
    """
    known = catalog_entry(model_name)
    if known is not None:
        return known
    major = gemini_major(model_name)
    if major is None or major < 3 or not_a_text_model(model_name) or not is_gemini_name(model_name):
        return None
    return ModelInfo(
        base_name(model_name),
        "gemini",
        None,
        # The least output limit of any listed Gemini 3+ text model (Gemini 4 Argon and
        # Carbon, non-streaming): a call may not ask for more than the model serves.
        ASSUMED_OUTPUT_TOKENS,
        Thinking("level", levels=NO_MINIMAL),
        Lifecycle("GA"),
        temperature=GEMINI_3_TEMPERATURE,
        source="not in the catalog: Gemini 3 family defaults assumed",
        assumed=True,
    )


def prompts_fitted(model_name: str, provider: ProviderName) -> bool:
    """Whether a run's prompts are fitted to Google's countTokens rather than built exact.

    A Gemini model whose tokenizer the service does not hold (google-genai maps it to
    Gemma 4, or to nothing: ``niah.catalog.tokenizers``); one the catalog lacks too.
    """
    if provider != "gemini":
        return False
    known = find_model(model_name)
    return known is None or known.prompt_lengths == "fitted"


def provider_for_model(model_name: str) -> ProviderName:
    """The provider a model name implies: the local Gemma, Gemini, else OpenAI-style."""
    return provider_of(model_name, find_model(model_name))


def provider_of(model_name: str, known: ModelInfo | None) -> ProviderName:
    """``provider_for_model`` with the catalog's entry already looked up (``find_model``)."""
    if known is not None:
        return known.provider
    # Any "gemini-..." name goes to Gemini, so a misspelt one is refused as a Gemini name
    # (is_gemini_name) rather than sent to an OpenAI-compatible endpoint.
    return "gemini" if base_name(model_name).startswith("gemini-") else "openai_compatible"


def input_limit(provider: ProviderName, model_name: str) -> int | None:
    """The model's input limit in tokens, where known without calling it."""
    if provider == "local":
        # llama.cpp's window holds the BOS token, the prompt and the answer.
        return get_settings().local_model_max_context - 1 - PROVIDER_OUTPUT_TOKENS["local"]
    known = find_model(model_name)
    return known.input_tokens if known else None


def prompt_limit(model_name: str, max_output_tokens: int) -> int | None:
    """The longest prompt a call to ``model_name`` may send (``ModelInfo.prompt_limit``)."""
    known = find_model(model_name)
    return known.prompt_limit(max_output_tokens) if known else None


def output_limit(model_name: str) -> int | None:
    """The most output tokens one call to the model may ask for, where known."""
    known = find_model(model_name)
    return known.output_tokens if known else None


def temperature_for(model_name: str) -> float | None:
    """The temperature the model is called at: 0, Google's advice, or None (ignored)."""
    return temperature_of(find_model(model_name))


def temperature_of(known: ModelInfo | None) -> float | None:
    """The temperature a catalog entry is called at (None: a model the catalog lacks)."""
    return known.temperature if known else TEMPERATURE


# How a run records the temperature of a model that ignores a custom one.
IGNORED_TEMPERATURE = "model default (ignored)"


def temperature_record(known: ModelInfo | None) -> float | str:
    """The temperature as a run states it: the number sent, or ``IGNORED_TEMPERATURE``.

    ``known``: the model's catalog entry (None: one the catalog does not list).
    """
    temperature = temperature_of(known)
    return IGNORED_TEMPERATURE if temperature is None else temperature


def model_notice(model_name: str) -> str | None:
    """A one-line warning for a Gemini model the catalog does not list, or None."""
    return model_notice_of(model_name, find_model(model_name))


def model_notice_of(model_name: str, known: ModelInfo | None) -> str | None:
    """``model_notice`` with the catalog's entry already looked up (``find_model``)."""
    if known is not None and known.assumed:
        return (
            f"{known.name} is not in the model catalog: called as a Gemini 3 model "
            "(thinking by level, temperature 1.0), with its limits and price unknown"
        )
    if known is None and gemini_major(model_name) is not None and is_gemini_name(model_name):
        return f"{base_name(model_name)} is not in the model catalog: limits and price unknown"
    return None
