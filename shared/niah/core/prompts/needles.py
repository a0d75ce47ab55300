"""Needles: the fact hidden in the haystack, and the question that retrieves it.

The dynamic needle is derived from the run's seed and the cell alone (a hash, not a
shared random generator), so a run is reproducible and no two cells share state,
whichever worker builds them and in whatever order.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from niah.core.request.grid import Cell
from niah.core.request.spec import RunRequest

CITIES = (
    "Chicago",
    "Yangon",
    "Antananarivo",
    "Colombo",
    "Almaty",
    "Sydney",
    "Mexico City",
    "Seattle",
    "Lagos",
    "Amsterdam",
    "Belgrade",
    "Cairo",
    "Baghdad",
    "Damascus",
    "Kigali",
    "Dakar",
    "Sofia",
    "Victoria",
    "Tashkent",
    "Mumbai",
    "Barcelona",
    "Kabul",
    "Tehran",
    "Lima",
    "Bangkok",
    "Hanoi",
    "Nairobi",
    "Bogota",
    "Havana",
    "Kingston",
    "Oslo",
    "Lisbon",
    "Vienna",
    "Prague",
    "Warsaw",
    "Helsinki",
    "Dublin",
    "Reykjavik",
    "Montreal",
    "Denver",
    "Santiago",
    "Quito",
    "Caracas",
    "Accra",
    "Addis Ababa",
    "Khartoum",
    "Tunis",
    "Rabat",
    "Riyadh",
    "Doha",
    "Muscat",
    "Karachi",
    "Dhaka",
    "Kathmandu",
    "Ulaanbaatar",
    "Seoul",
    "Osaka",
    "Manila",
    "Jakarta",
    "Perth",
    "Auckland",
    "Suva",
    "Honolulu",
    "Anchorage",
)


@dataclass(frozen=True)
class Needle:
    """What a cell hides, asks and expects.

    ``answer_lead`` is the start of a well-formed answer; completion prompts for base
    models end with it so the model continues with the fact itself.
    """

    text: str
    question: str
    expected_answer: str
    answer_lead: str
    # The seeded needle's city (what its question names); "" for the user's own.
    key: str = ""


def needle_for(spec: RunRequest, cell: Cell) -> Needle:
    """The needle of one cell: seeded and per cell when dynamic, else the user's."""
    if not spec.dynamic_needle:
        return Needle(
            text=spec.needle,
            question=spec.retrieval_question,
            expected_answer=spec.static_expected_answer() or "",
            answer_lead="",
        )
    # Sample 0 keeps the key every single-needle run has used; later samples extend it.
    key = f"{spec.seed}:{cell.context_length}:{cell.depth_percent:.3f}"
    digest = hashlib.sha256((key + (f":{cell.sample}" if cell.sample else "")).encode()).digest()
    city = CITIES[int.from_bytes(digest[:4], "big") % len(CITIES)]
    number = 1_000_000 + int.from_bytes(digest[4:12], "big") % 9_000_000
    lead = f"The special magic {city} number is:"
    return Needle(
        text=f" {lead} {number}.",
        question=f"What is the special magic {city} number?",
        expected_answer=str(number),
        answer_lead=lead,
        key=city,
    )
