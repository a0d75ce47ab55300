"""Which catalog models Vertex AI serves today, and what a run is told of the others.

A retired model is refused in one line naming Google's replacement; a deprecated,
preview or short-term one is warned of with its date. The wording is
``niah.catalog.lifecycle``'s; this module asks the catalog which applies, for the
dispatcher and the estimate alike.
"""

from __future__ import annotations

import datetime as dt

from niah.catalog.lifecycle import lifecycle_warning, retirement_message
from niah.catalog.models import CATALOG, ModelInfo, find_model

# How a run records a retired model it was told to call anyway.
CALLED_ANYWAY = "called anyway (allow_retired)"


def current_gemini_models(today: dt.date | None = None) -> list[str]:
    """The catalog's Gemini models that Vertex AI still serves, newest family first."""
    return [
        info.name
        for info in CATALOG.values()
        if info.provider == "gemini" and not info.lifecycle.retired(today)
    ]


def retired_refusal(model_name: str, today: dt.date | None = None) -> str | None:
    """The line refusing a model Vertex AI has retired, or None for a served one."""
    return refusal_of(find_model(model_name), today)


def refusal_of(known: ModelInfo | None, today: dt.date | None = None) -> str | None:
    """``retired_refusal`` of a catalog entry already looked up (None: not listed)."""
    if known is None or not known.lifecycle.retired(today):
        return None
    named = [find_model(r) for r in known.lifecycle.replacements]
    all_retired = bool(named) and all(r is not None and r.lifecycle.retired(today) for r in named)
    current = current_gemini_models(today) if all_retired else []
    return retirement_message(known.name, known.lifecycle, current)


def lifecycle_notice(model_name: str, today: dt.date | None = None) -> str | None:
    """A warning of a served model's deprecation, short-term status or coming retirement."""
    known = find_model(model_name)
    return lifecycle_warning(known.name, known.lifecycle, today) if known else None


def lifecycle_notes(*model_names: str | None) -> list[str]:
    """What Google says of these models' lifecycle, as a run records it.

    A deprecated, short-term or soon-retired model's warning; a retired one (here only
    when the run says ``allow_retired``: refused otherwise) with ``CALLED_ANYWAY``.
    """
    return notes_of(*(find_model(name) for name in model_names if name))


def notes_of(*entries: ModelInfo | None) -> list[str]:
    """``lifecycle_notes`` of catalog entries already looked up (None: not listed)."""
    notes = []
    for known in filter(None, entries):
        refusal = refusal_of(known)
        notice = (
            f"{refusal}; {CALLED_ANYWAY}"
            if refusal
            else lifecycle_warning(known.name, known.lifecycle)
        )
        if notice:
            notes.append(notice)
    return notes
