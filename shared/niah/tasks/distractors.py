"""Distractors: statements like the task's needle that do not answer its question.

Chroma's "Context Rot" study (research.trychroma.com/context-rot, read 2026-11-28) found
that retrieval falls with length faster when the haystack holds distractors, statements
close to the needle but wrong, and that four hurt more than one. Its distractors were
written by hand for one needle; here each retrieval task's needle form makes them, two
kinds taken in turn:

- **another key**: the needle's form with a key the question does not ask for (another
  city, another RULER key, another character at another landmark), with its own value;
- **a near miss of the question's wording**: the asked key, but a word of the needle
  changed ("special lucky" for "special magic", "code" for "number"), with another value.

No near miss holds the needle's own phrase ("special magic Lisbon number"), so no
literal match of the needle's wording finds one. They go at seeded depths at least
``MIN_GAP`` percent from every needle (where the needles' windows leave any room: with
ten needles or more they may cover every depth), after the
task's own insertions (``Sample.distractors`` counts them). Scoring is the task's; the
verdict notes which distractor values the answer gave (``note_distractors``), so the
report counts wrong answers that took a distractor's value.
"""

from __future__ import annotations

import dataclasses
import random
from typing import Literal

from niah.core.prompts.needles import needle_for
from niah.core.prompts.prompt_builder import Insertion
from niah.core.prompts.vocabulary import CHARACTER_NAMES, CITIES
from niah.core.request.grid import Cell
from niah.core.request.spec import RunRequest
from niah.core.results.scoring import mentions
from niah.tasks.base import (
    NeedleType,
    RulerNeedleOptions,
    Sample,
    Verdict,
    needle_value,
    ruler_needle,
    sample_rng,
)

# Percent of depth kept free on either side of each needle.
MIN_GAP = 5.0
# Near misses of the needles' wording: (what the needle says, what the distractor says).
CITY_NEAR_MISSES = (
    ("special magic {city} number", "special lucky {city} number"),
    ("special magic {city} number", "special magic {city} code"),
    ("special magic {city} number", "ordinary magic {city} number"),
    ("special magic {city} number", "special magic {city} ticket number"),
)
RULER_NEAR_MISSES = ("special magic", "special lucky", "ordinary magic", "secret magic")

# Which of the two kinds a distractor is: another key, or a near miss of the wording.
DistractorKind = Literal["key", "wording"]
# (text, value, kind) of a distractor.
Made = tuple[str, str, DistractorKind]


def _city_needles(rng: random.Random, asked: list[str], taken: set[str], count: int) -> list[Made]:
    """The "special magic {city} number" form: other cities, then near misses in turn."""
    others = [city for city in CITIES if city not in asked]
    made: list[Made] = []
    for i in range(count):
        value = _new_value(rng, "numbers", taken)
        if i % 2 == 0:
            city = rng.choice(others)
            made.append((f" The special magic {city} number is: {value}.", value, "key"))
        else:
            _, miss = CITY_NEAR_MISSES[(i // 2) % len(CITY_NEAR_MISSES)]
            phrase = miss.format(city=rng.choice(asked))
            made.append((f" The {phrase} is: {value}.", value, "wording"))
    return made


def _ruler_needles(spec: RunRequest, rng: random.Random, sample: Sample, count: int) -> list[Made]:
    """RULER's form: other keys, then the asked key with a near-miss wording, in turn."""
    asked = sample.details.get("keys") or [sample.details.get("key")]
    taken = set(sample.expected) | set(sample.details.get("distractor_values") or ())
    options = spec.task_options
    if not isinstance(options, RulerNeedleOptions):
        raise TypeError(f"task {spec.task} has no RULER needles to imitate")
    kind = options.needle_value_type
    made: list[Made] = []
    for i in range(count):
        value = _new_value(rng, kind, taken)
        if i % 2 == 0 or sample.details.get("asked_key"):  # absent: other keys only
            key = _new_value(rng, options.needle_key_type, set(asked) | _keys_of(sample))
            made.append((ruler_needle(key, value, kind), value, "key"))
        else:
            near = RULER_NEAR_MISSES[1 + (i // 2) % (len(RULER_NEAR_MISSES) - 1)]
            text = ruler_needle(rng.choice(asked), value, kind).replace("special magic", near)
            made.append((text, value, "wording"))
    return made


def _keys_of(sample: Sample) -> set[str]:
    return {str(sample.details.get(name)) for name in ("asked_key", "present_key", "key")}


def _new_value(rng: random.Random, kind: NeedleType, taken: set[str]) -> str:
    """A value of ``kind`` not yet used in the sample (added to ``taken``)."""
    while (value := needle_value(rng, kind)) in taken:
        pass
    taken.add(value)
    return value


# Places one of whose landmarks would answer another's question (the Louvre is in
# Paris; Iguazu Falls is in Brazil and Argentina): never a distractor of each other.
SHARED_PLACES = (
    {"Paris", "France"},
    {"Rome", "Italy", "Venice"},
    {"London", "England", "Britain"},
    {"Barcelona", "Spain"},
    {"Athens", "Greece"},
    {"Brazil", "Argentina"},
)


def _place(question: str) -> set[str]:
    """The place a non-literal question names, with the places that share its landmarks."""
    place = question.rstrip("?").split()[-1]
    return next((group for group in SHARED_PLACES if place in group), {place})


def _landmarks(rng: random.Random, sample: Sample, count: int) -> list[Made]:
    """Non-literal: other characters at other places' landmarks (the value is the name)."""
    from niah.tasks.nonliteral import TEMPLATES

    asked = _place(sample.question.split(" Answer")[0])
    others = [text for text, question in TEMPLATES if not _place(question) & asked]
    names = [name for name in CHARACTER_NAMES if name not in sample.expected]
    chosen = rng.sample(names, count)
    return [(" " + rng.choice(others).format(name=name), name, "key") for name in chosen]


def _made(
    spec: RunRequest, cell: Cell, sample: Sample, rng: random.Random, count: int
) -> list[Made]:
    if spec.task == "single":
        asked = needle_for(spec, cell).key
        return _city_needles(rng, [asked], set(sample.expected), count)
    if spec.task == "multi_needle":
        return _city_needles(rng, list(sample.details["keys"]), set(sample.expected), count)
    if spec.task == "nonliteral":
        return _landmarks(rng, sample, count)
    return _ruler_needles(spec, rng, sample, count)


def spaced_depths(rng: random.Random, needles: list[float], count: int) -> list[float]:
    """``count`` seeded depths below 100, each at least ``MIN_GAP`` from every needle.

    Drawn from what is left of [0, 100) once each needle's window is taken out, so a
    grid with needles everywhere still places its distractors.
    """
    windows = sorted((max(0.0, d - MIN_GAP), min(100.0, d + MIN_GAP)) for d in needles)
    free: list[tuple[float, float]] = []
    start = 0.0
    for low, high in windows:
        if low > start:
            free.append((start, low))
        start = max(start, high)
    if start < 100.0:
        free.append((start, 100.0))
    total = sum(high - low for low, high in free)
    depths = []
    for _ in range(count):
        if total <= 0:  # needles cover every depth: anywhere but at the end
            depths.append(round(rng.uniform(0, 99.9), 3))
            continue
        point = rng.uniform(0, total)
        for low, high in free:
            if point <= high - low:
                depths.append(round(min(low + point, 99.9), 3))
                break
            point -= high - low
    return depths


def with_distractors(spec: RunRequest, cell: Cell, sample: Sample, count: int) -> Sample:
    """``sample`` with ``count`` distractors after its insertions, and them in its details."""
    rng = sample_rng(spec.seed, cell, f"{spec.task}:distractors")
    made = _made(spec, cell, sample, rng, count)
    depths = spaced_depths(rng, [i.depth_percent for i in sample.insertions], count)
    added = tuple(Insertion(text, depth) for (text, _, _), depth in zip(made, depths, strict=True))
    listed = [
        {"text": text.strip(), "value": value, "kind": kind, "depth_percent": depth}
        for (text, value, kind), depth in zip(made, depths, strict=True)
    ]
    return dataclasses.replace(
        sample,
        insertions=sample.insertions + added,
        distractors=count,
        details=sample.details | {"distractors": listed},
    )


def note_distractors(sample: Sample, answer: str, verdict: Verdict) -> Verdict:
    """The verdict with the distractor values the answer gave (the score is the task's)."""
    listed = sample.details.get("distractors")
    if not listed:
        return verdict
    taken = [item for item in listed if mentions(answer, item["value"])]
    hits = len(taken)
    details = dict(verdict.details)
    details["distractor_hit"] = bool(details.get("distractor_hit")) or hits > 0
    details["distractor_values_returned"] = int(details.get("distractor_values_returned", 0)) + hits
    # Which kinds the answer took ("key", "wording"): some lookalikes mislead more.
    details["distractor_kinds_returned"] = sorted({str(item.get("kind")) for item in taken})
    return dataclasses.replace(verdict, details=details)
