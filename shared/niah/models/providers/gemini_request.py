"""The Gemini request as Vertex AI takes it: one definition for online calls and batch lines.

An online call goes through ``google-genai`` (``GeminiProvider``), whose types are built
from ``Generation``; a batch line carries the same request as JSON
(``request_body``). A test sends an online call to the stand-in and compares the body
the SDK sent with the batch line's request, so the two cannot drift apart.

Batch input (Vertex AI "Batch inference from Cloud Storage",
docs.cloud.google.com/vertex-ai/generative-ai/docs/multimodal/batch-prediction-from-cloud-storage,
read 2026-11-27): one JSON Lines file, each line ``{"request": GenerateContentRequest}``
"following the same format for Gemini API"; each output line holds the request it
answers, so the cell's key rides in the request's ``labels`` (a GenerateContentRequest
field on Vertex: lower-case letters, digits, ``_`` and ``-``, up to 63 characters).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from niah.catalog.models import temperature_for
from niah.core.interfaces import Turn

HARM_CATEGORIES = (
    "HARM_CATEGORY_HARASSMENT",
    "HARM_CATEGORY_HATE_SPEECH",
    "HARM_CATEGORY_SEXUALLY_EXPLICIT",
    "HARM_CATEGORY_DANGEROUS_CONTENT",
)
# Safety filters off, as in the harness: a needle test scores retrieval, not safety.
SAFETY_THRESHOLD = "BLOCK_NONE"
# The label that names a batch line's cell (its ID in lower case: labels take no capitals).
CELL_LABEL = "niah_cell"


@dataclass(frozen=True)
class Generation:
    """How the model is asked to generate, online and in batch alike."""

    temperature: float | None  # None: the model ignores a custom one, so none is sent
    max_output_tokens: int
    thinking_budget: int | None = None
    # The API's spelling ("LOW"); the API refuses a budget and a level together.
    thinking_level: str | None = None


def generation_for(
    model_name: str,
    *,
    max_output_tokens: int,
    thinking_budget: int | None = None,
    thinking_level: str | None = None,
) -> Generation:
    """The generation settings of a call to ``model_name`` (temperature from the catalog)."""
    return Generation(
        temperature=temperature_for(model_name),
        max_output_tokens=max_output_tokens,
        thinking_budget=thinking_budget,
        thinking_level=(
            thinking_level.upper() if thinking_level and thinking_budget is None else None
        ),
    )


def request_body(
    prompt: str, turns: tuple[Turn, ...] | None, generation: Generation
) -> dict[str, Any]:
    """The ``generateContent`` body, field for field as google-genai sends it for Vertex.

    ``thinkingConfig``'s fields in snake case, as the SDK (google-genai 2.x) writes them;
    the API takes either spelling.
    """
    pairs = [("user", prompt)] if turns is None else list(turns)
    config: dict[str, Any] = {"maxOutputTokens": generation.max_output_tokens}
    if generation.temperature is not None:
        config = {"temperature": generation.temperature, **config}
    if generation.thinking_budget is not None:
        config["thinkingConfig"] = {"thinking_budget": generation.thinking_budget}
    elif generation.thinking_level is not None:
        config["thinkingConfig"] = {"thinking_level": generation.thinking_level}
    return {
        "contents": [{"parts": [{"text": text}], "role": role} for role, text in pairs],
        "safetySettings": [
            {"category": category, "threshold": SAFETY_THRESHOLD} for category in HARM_CATEGORIES
        ],
        "generationConfig": config,
    }


def batch_line(cell_id: str, body: dict[str, Any]) -> dict[str, Any]:
    """One line of a batch input file: the request, labelled with its cell."""
    return {"request": body | {"labels": {CELL_LABEL: cell_id.lower()}}}


def cell_of_line(line: dict[str, Any]) -> str | None:
    """The cell an output line answers (from its request's label); None if it has none."""
    request = line.get("request")
    labels = request.get("labels") if isinstance(request, dict) else None
    key = labels.get(CELL_LABEL) if isinstance(labels, dict) else None
    return key.upper() if isinstance(key, str) else None
