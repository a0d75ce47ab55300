"""Chance floors: what a task's score is for an answer that lacks the skill it measures.

A score means little without the score of guessing beside it: MRCR v2's 27 % at 4 needles
is a model that found the right kind of request and picked one of its replies at random.
One function says the floor of a run's task, and every surface shows it beside the score
(the report's headline and MRCR bins, ``niah status``, the summary JSON).

- **MRCR v2**: Google DeepMind's published noise rates (below), for its own files; the
  samples generated here are composed otherwise, so there the figure is approximate.
- **multi_needle** with the seeded needles: derived from the scorer. Each needle's value
  is a 7-digit number drawn uniformly from the 9,000,000 from 1,000,000 to 9,999,999,
  and a needle counts only when its number appears whole in the answer
  (``niah.core.results.scoring.mentions``). An answer written without the context that
  names g numbers finds a given needle with probability at most g / 9,000,000, so its
  expected share of needles is at most g / 9,000,000: under 0.002 % for 100 numbers.
  The floor is 0 % at any precision a report shows. (The scorer does not penalise extra
  numbers: an answer that copies every 7-digit number of the context, distractors'
  values too, scores 100 %. That takes reading the context, so it is no chance floor.)
  With the user's own needles and answers (or a judge), no floor can be derived: none.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# MRCR v2's noise rates (google-deepmind/eval_hub, eval_hub/mrcr_v2/README.md, "NOISE
# RATES", commit 67b7fd2 of 2026-02-18, read 2026-12-05): a model that reproduces one of
# the *relevant* assistant replies (those to the request asked about) uniformly at random
# scores "around 51%" with 2 needles, "around 27%" with 4 and "around 15%" with 8 under
# MRCR's metric (its analysis_utils.py compute_noise_rate_dataset, "relevant": the mean
# SequenceMatcher ratio of the right reply to each relevant one), "~1/num_relevant_needles
# (typically, a couple percent more)"; one that reproduces *any* assistant reply at random
# scores "~1%". The README gives these figures rounded; they are shown as it gives them.
MRCR_RELEVANT_FLOOR_PERCENT = {2: 51.0, 4: 27.0, 8: 15.0}
MRCR_ANY_REPLY_FLOOR_PERCENT = 1.0
MRCR_FLOOR_SOURCE = (
    "google-deepmind/eval_hub eval_hub/mrcr_v2/README.md, NOISE RATES (commit 67b7fd2, 2026-02-18)"
)
# The seeded needles' values: 7-digit numbers (niah.tasks.base.needle_value).
SEEDED_NUMBERS = 9_000_000
MULTI_NEEDLE_FLOOR_SOURCE = (
    "derived from the scorer: each needle a 7-digit number of 9,000,000, counted only when "
    "named whole (docs/tasks/multi_needle.md)"
)


def mrcr_floor(needles: int, *, published_files: bool) -> dict[str, Any]:
    """MRCR v2's floor at ``needles``: Google's figure, approximate on generated samples."""
    percent = MRCR_RELEVANT_FLOOR_PERCENT.get(needles)
    approximate = (
        ""
        if published_files
        else "; published for Google's files, so approximate for these generated samples"
    )
    text = (
        f"about {percent:g} %: one of the {needles} replies to the request asked about, "
        f"at random (any reply at random: about {MRCR_ANY_REPLY_FLOOR_PERCENT:g} %)"
        f"{approximate}"
        if percent is not None
        else f"not published for {needles} needles"
    )
    return {"percent": percent, "text": text, "source": MRCR_FLOOR_SOURCE}


def seeded_needles_floor(*, own_needles: bool) -> dict[str, Any]:
    """multi_needle's floor: 0 % with the seeded 7-digit needles, none with the user's."""
    if own_needles:
        return {
            "percent": None,
            "text": "none derived: your own needles and answers",
            "source": "",
        }
    return {
        "percent": 0.0,
        "text": (
            f"0 %: a guess of g numbers finds a needle with probability at most "
            f"g / {SEEDED_NUMBERS:,}"
        ),
        "source": MULTI_NEEDLE_FLOOR_SOURCE,
    }


def floor_text(floor: Mapping[str, Any] | None) -> str:
    """The floor and its source, as a page or a terminal shows it ("" when none)."""
    if not floor:
        return ""
    source = f" ({floor['source']})" if floor.get("source") else ""
    return f"{floor['text']}{source}"
