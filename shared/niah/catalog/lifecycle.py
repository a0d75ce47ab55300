"""A model's lifecycle as Google publishes it, and what the service says of it.

Vertex AI retires a model on a published date and names the models to use instead
("Model versions and lifecycle"); after that date every call is a 404. The Gemini API
deprecates models on its own dates and may route a deprecated ID to another model. A
"short-term GA" model may be retired at short notice. These facts live on each catalog
entry (``niah.catalog.models``); this module words them once, for the dispatcher, the
estimate and ``niah models`` alike.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Literal

LaunchStage = Literal["GA", "Short-term GA", "Preview", "Deprecated", "Retired", "Local"]
# The stages a served model is warned of, as a sentence words them.
STAGE_WORDS = {"Short-term GA": "short-term GA", "Preview": "preview"}
# How far ahead a coming retirement date is worth a warning before a run is paid for.
RETIREMENT_WARNING_DAYS = 90


@dataclass(frozen=True)
class Lifecycle:
    """Launch stage and published dates (None where none is published).

    ``retires`` is Vertex AI's retirement date; with ``or_later`` it is only the earliest
    one Google promises ("May 19, 2027 or later"), so it retires nothing by itself.
    ``replacements``: what Google names instead, in its order (a Gemini ID, or a family
    such as "Gemma 4"). ``routed_to``: the model Google answers this ID with after a
    deprecation; the answer's ``modelVersion`` says who really answered. ``notice``:
    anything else Google says of the model's availability.
    """

    stage: LaunchStage = "GA"
    released: dt.date | None = None
    retires: dt.date | None = None
    replacements: tuple[str, ...] = ()
    or_later: bool = False
    routed_to: str | None = None
    notice: str | None = None

    def retired(self, today: dt.date | None = None) -> bool:
        """Whether Vertex AI no longer serves the model (its firm date has passed)."""
        if self.stage == "Retired":
            return True
        if self.retires is None or self.or_later:
            return False
        return (today or dt.date.today()) >= self.retires

    def retirement_text(self) -> str:
        """The retirement date as Google words it, or "none announced"."""
        if self.retires is None:
            return "none announced"
        return f"{self.retires} or later" if self.or_later else str(self.retires)

    def instead(self) -> str:
        """Google's named replacements, in its words' order ("a or b")."""
        return " or ".join(self.replacements)


def retirement_message(name: str, lifecycle: Lifecycle, current: list[str]) -> str:
    """The one line that refuses a retired model: its date and Google's replacement.

    ``current``: the catalog's Gemini models that are not retired, named where Google's
    replacement is itself retired (a model retired long ago points at one retired since).
    """
    when = f" on {lifecycle.retires}" if lifecycle.retires else ""
    message = f"{name} was retired on Vertex AI{when}"
    if lifecycle.replacements:
        message += f"; Google names {lifecycle.instead()} instead"
    return message + (f" (all since retired; current: {', '.join(current)})" if current else "")


def lifecycle_warning(name: str, lifecycle: Lifecycle, today: dt.date | None = None) -> str | None:
    """What a user should know of a model Google still serves, or None.

    A deprecated model (and where Google routes it), a short-term or preview model, a
    firm retirement date within ``RETIREMENT_WARNING_DAYS`` and any notice of Google's,
    each with its date.
    """
    today = today or dt.date.today()
    if lifecycle.retired(today):
        return None  # refused, or run only by an explicit opt-out that says so itself
    parts = []
    if lifecycle.stage == "Deprecated":
        routed = f", routed to {lifecycle.routed_to}" if lifecycle.routed_to else ""
        parts.append(f"{name} is deprecated{routed}")
    elif lifecycle.stage in STAGE_WORDS:
        parts.append(f"{name} is a {STAGE_WORDS[lifecycle.stage]} model")
    soon = (
        lifecycle.retires is not None
        and not lifecycle.or_later
        and (lifecycle.retires - today).days <= RETIREMENT_WARNING_DAYS
    )
    if not (parts or soon or lifecycle.notice):
        return None
    if lifecycle.retires is not None:
        parts.append(f"Vertex AI retires it on {lifecycle.retirement_text()}")
    elif parts:  # a deprecated, preview or short-term model: say that no date is set
        parts.append("no retirement date announced")
    if lifecycle.replacements:
        parts.append(f"Google names {lifecycle.instead()} instead")
    if lifecycle.notice:
        parts.append(lifecycle.notice)
    line = "; ".join(parts)
    return line if line.startswith(name) else f"{name}: {line}"
