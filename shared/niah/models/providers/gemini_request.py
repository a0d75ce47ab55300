"""The Gemini request as Vertex AI takes it: one definition for online calls and batch lines.

An online call goes through ``google-genai`` (``GeminiProvider``), whose types are built
from ``Generation``; a batch line carries the same request as JSON
(``request_body``). A test sends an online call to the stand-in and compares the body
the SDK sent with the batch line's request, so the two cannot drift apart.

Batch input (Vertex AI "Batch inference from Cloud Storage",
docs.cloud.google.com/vertex-ai/generative-ai/docs/multimodal/batch-prediction-from-cloud-storage,
read 2026-11-27): one JSON Lines file, each line ``{"request": GenerateContentRequest}``
"following the same format for Gemini API". Google's sample output lines hold the
request each answers, but no page says it comes back verbatim, and labels are billing
metadata whose page advises against a unique value for every call (cloud.google.com/
vertex-ai/generative-ai/docs/multimodal/add-labels-to-api-calls, read 2026-11-27). So a
line carries no cell key: its cell is found by ``request_digest``, a digest of the
prompt's text alone (roles and text parts), which survives a re-serialised, re-ordered
or relabelled echo.
"""

from __future__ import annotations

import hashlib
import json
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
# The label older batch lines carried (one unique value per cell, which Google's labels
# page advises against); read only to ingest a job submitted before request digests.
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


def batch_line(body: dict[str, Any]) -> dict[str, Any]:
    """One line of a batch input file: the request alone (no per-cell label)."""
    return {"request": body}


def request_digest(request: Any) -> str | None:
    """A digest of the prompt a request carries: each content's role and text parts.

    Every other field is ignored (``contents``, ``parts``, ``role`` and ``text`` are
    spelt alike in camel and snake case), so the same prompt gives the same digest
    however the rest of the request is written back: keys reordered, fields added or
    dropped, labels gone. None when the request holds no text (an echo left out).
    """
    if not isinstance(request, dict):
        return None
    contents = request.get("contents")
    if not isinstance(contents, list):
        return None
    turns: list[list[Any]] = []
    for content in contents:
        if not isinstance(content, dict):
            return None
        parts = content.get("parts")
        texts = [
            part["text"]
            for part in (parts if isinstance(parts, list) else [])
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        ]
        turns.append([str(content.get("role") or "user"), texts])
    if not any(texts for _, texts in turns):
        return None
    canonical = json.dumps(turns, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:32]


def cell_of_line(line: dict[str, Any]) -> str | None:
    """The cell an older line names by its label (a job submitted before digests)."""
    request = line.get("request")
    labels = request.get("labels") if isinstance(request, dict) else None
    key = labels.get(CELL_LABEL) if isinstance(labels, dict) else None
    return key.upper() if isinstance(key, str) else None
