"""Which tokenizer counts a model's prompts, as Google's own SDK maps it (plain data).

Source: ``google/genai/_local_tokenizer_loader.py`` of google-genai 2.34.0, the version
pinned in requirements.txt (read 2026-12-04). Its ``_GEMINI_MODELS_TO_TOKENIZER_NAMES``
and ``_GEMINI_STABLE_MODELS_TO_TOKENIZER_NAMES`` map the 2.0 and 2.5 models (and their
previews) and gemini-3-pro-preview and gemini-3-flash-preview to ``gemma3``;
``_GEMINI_MODELS_TO_HUGGINGFACE_TOKENIZER_NAMES`` maps gemini-3.5-flash,
gemini-3.1-flash-lite and gemini-3.1-pro-preview to ``gemma4`` (loaded at run time from
Hugging Face's ``google/gemma-4-E4B-it`` through ``transformers``). Every other model
(3.6, 3.7 and 3.8 Flash, 3.5 Flash-Lite, the Gemini 4 family, 1.5) is not mapped: the
SDK's ``get_tokenizer_name`` raises "not supported" for it.

The service holds only the Gemma 3 vocabulary (``niah.models.tokenizer``): no package
on the registries this project may use ships Gemma 4's (docs/context-building.md says
what was checked). So a prompt is exact only for a model on ``gemma3``; every other
Gemini model's prompts are fitted to Vertex's ``countTokens``, which Google itself calls
an estimate ("support getting an estimate of the prompt token count", Vertex's "Use the
Count Tokens API" page, cloud.google.com/vertex-ai/docs/generative-ai/multimodal/
get-token-count, read 2026-12-04).
"""

from __future__ import annotations

from typing import Literal

from niah.errors import ConfigurationError

GEMMA3 = "gemma3"
GEMMA4 = "gemma4"
SDK_SOURCE = "google-genai 2.34.0 _local_tokenizer_loader.py, read 2026-12-04"

# The SDK's maps, as it spells them (pinned previews and stable versions included).
SDK_TOKENIZER_FAMILY: dict[str, str] = {
    **dict.fromkeys(
        (
            "gemini-2.5-pro",
            "gemini-2.5-flash",
            "gemini-2.5-flash-lite",
            "gemini-2.0-flash",
            "gemini-2.0-flash-lite",
            "gemini-2.5-pro-preview-06-05",
            "gemini-2.5-pro-preview-05-06",
            "gemini-2.5-pro-exp-03-25",
            "gemini-live-2.5-flash",
            "gemini-2.5-flash-preview-05-20",
            "gemini-2.5-flash-preview-04-17",
            "gemini-2.5-flash-lite-preview-06-17",
            "gemini-2.0-flash-001",
            "gemini-2.0-flash-lite-001",
            "gemini-3-pro-preview",
            "gemini-3-flash-preview",
        ),
        GEMMA3,
    ),
    **dict.fromkeys(
        ("gemini-3.5-flash", "gemini-3.1-flash-lite", "gemini-3.1-pro-preview"), GEMMA4
    ),
}
# Tokenizers the service holds locally (a pinned SentencePiece model in the bucket).
LOCAL_TOKENIZERS = frozenset({GEMMA3})

PromptLength = Literal["exact", "fitted"]


def sdk_tokenizer_family(model_name: str) -> str | None:
    """The tokenizer family google-genai maps ``model_name`` to; None where it maps none."""
    return SDK_TOKENIZER_FAMILY.get(model_name)


def prompt_length_kind(tokenizer_family: str | None) -> PromptLength:
    """``exact`` where the service holds the model's tokenizer, else ``fitted`` (countTokens)."""
    return "exact" if tokenizer_family in LOCAL_TOKENIZERS else "fitted"


def tokenizer_text(tokenizer_family: str | None) -> str:
    """A model's tokenizer in a few words, for tables and reports."""
    return tokenizer_family or "not published (the SDK maps none)"


# The one tokenizer the service holds, and where its file is (``tokenizer_object``).
GEMMA3_TOKENIZER = GEMMA3
# The Gemma 3 SentencePiece model (5.2 MB, no weights), rebuilt from the GGUF's vocabulary
# by ``niah.models.gemma_assets``: deploy (Terraform) and the local stack store it in the
# bucket under a name made from this checksum, and the worker loads it from there and
# checks it. tests/unit/test_tokenizer.py rebuilds it and pins the checksum.
GEMMA3_TOKENIZER_SHA256 = "013b73e7c2fe877ea69fd53c907a3126db6270eab2d488036a748a4e7de02f89"
TOKENIZER_SHA256 = {GEMMA3_TOKENIZER: GEMMA3_TOKENIZER_SHA256}


def tokenizer_object(name: str) -> str:
    """The bucket object holding tokenizer ``name``: content-addressed, never overwritten."""
    if name not in TOKENIZER_SHA256:
        raise ConfigurationError(f"unknown tokenizer {name!r}; known: {sorted(TOKENIZER_SHA256)}")
    return f"tokenizers/{name}-{TOKENIZER_SHA256[name][:16]}.model"
