"""What a model ID says on its face: a Gemini ID or not, its major version, a non-text variant.

Plain string rules, apart from the catalog's entries (``niah.catalog.models``), which
read them to match a name to an entry.
"""

from __future__ import annotations

import re

# A Gemini model ID: "gemini-" and a version digit (gemini-2.5-flash, gemini-3-pro-preview).
GEMINI_NAME = re.compile(r"^gemini-\d[\w.-]*$")
# The major version of a Gemini ID: gemini-3.5-flash is 3, gemini-10-x is 10.
GEMINI_MAJOR = re.compile(r"^gemini-(\d+)")
# The one resource path a Gemini model may be named by: the project and location come
# from the deployment, never from a request.
GOOGLE_PUBLISHER_PATH = "publishers/google/models/"
# Gemini variants that do not answer text with text: image generation ("-image", Nano
# Banana), speech ("-tts", "transcribe", "translate"), the Live API and native audio,
# embeddings, computer use, Omni (video) and Robotics. Their prices are not text prices and
# a NIAH prompt means nothing to them (the variant lists of DEPR and ai.google.dev/
# gemini-api/docs/models, read 2026-11-26).
NOT_TEXT_VARIANT = re.compile(
    r"image|nano-banana|tts|transcribe|translate|live|native-audio|embedding|computer-use|"
    r"omni|robotics"
)


def base_name(model_name: str) -> str:
    """The model ID without a resource path (``publishers/google/models/gemini-2.5-pro``)."""
    return model_name.rsplit("/", 1)[-1]


def not_a_text_model(model_name: str) -> bool:
    """Whether a Gemini ID names an image, speech, live, embedding or other non-text model."""
    name = base_name(model_name)
    return name.startswith("gemini-") and NOT_TEXT_VARIANT.search(name) is not None


def gemini_major(model_name: str) -> int | None:
    """The major version of a Gemini ID (3 for gemini-3.5-flash), or None."""
    match = GEMINI_MAJOR.match(base_name(model_name))
    return int(match.group(1)) if match else None


def is_gemini_name(model_name: str) -> bool:
    """Whether ``model_name`` is a Gemini model ID, bare or as Google's publisher path.

    Checked whole: a ``projects/...`` path would send the call to another project's
    resource, so only ``gemini-...`` and ``publishers/google/models/gemini-...`` pass.
    """
    bare = model_name.removeprefix(GOOGLE_PUBLISHER_PATH)
    return bool(GEMINI_NAME.fullmatch(bare)) and ".." not in bare
