"""A run with an axis (distractors, haystack order) read as one run per value.

So that comparing pairs cells across the axis: ``niah compare RUN`` on such a run sets
its values side by side, each tested against the first, sample by sample (the same
length, depth and sample index with 0 and with 4 distractors); runs with axes compared
with each other are compared value by value.
"""

from __future__ import annotations

from typing import Any

from niah.core.request.axes import variant_label
from niah.core.request.spec import run_label
from niah.core.results.summary import variant_summaries


def has_axis(cells: list[dict[str, Any]]) -> bool:
    """Whether the stored cells carry variants (the run has an axis)."""
    return any(cell.get("variant") for cell in cells)


def split_by_variant(
    run: dict[str, Any], cells: list[dict[str, Any]]
) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """One (run, cells) per value of the run's axes, in the axis's order.

    Each reads as a run of its own: the ID ``RUN/VARIANT``, the label "LABEL · VALUE",
    and its cells without their variant, so they pair with another value's.
    """
    if not has_axis(cells):
        return [(run, cells)]
    label = run_label(run)
    split = []
    for summary in variant_summaries(cells):
        variant = summary["variant"]
        split.append(
            (
                run
                | {
                    "run_id": f"{run['run_id']}/{variant}",
                    "label": f"{label} · {variant_label(variant)}",
                },
                [
                    {key: value for key, value in cell.items() if key != "variant"}
                    for cell in cells
                    if str(cell.get("variant") or "") == variant
                ],
            )
        )
    return split
