"""A run with an axis (distractors, haystack order) read as one run per value.

So that comparing pairs cells across the axis: ``niah compare RUN`` on such a run sets
its values side by side, each tested against the first, sample by sample (the same
length, depth and sample index with 0 and with 4 distractors). Runs with axes compared
with each other are not split: their samples pair only with the same variant
(``niah.core.results.paired.pair_key``).
"""

from __future__ import annotations

from typing import Any

from niah.core.request.axes import AXIS_OPTIONS, variant_label, variant_values
from niah.core.request.request_options import EffectiveLengthRule
from niah.core.results.effective import RULE_TEXTS, effective_length_text
from niah.core.results.measures import measures
from niah.core.results.paired import paired_comparison
from niah.core.results.paired_text import effect_text
from niah.core.runs import RunRecord, run_label


def has_axis(cells: list[dict[str, Any]]) -> bool:
    """Whether the stored cells carry variants (the run has an axis)."""
    return any(cell.get("variant") for cell in cells)


def split_by_variant(
    run: RunRecord, cells: list[dict[str, Any]]
) -> list[tuple[RunRecord, list[dict[str, Any]]]]:
    """One (run, cells) per value of the run's axes, in the axis's order.

    Each reads as a run of its own: the ID ``RUN/VARIANT``, the label "LABEL · VALUE",
    and its cells without their variant, so they pair with another value's.
    """
    if not has_axis(cells):
        return [(run, cells)]
    # The run's name without its axes (each part names its value instead), unless it
    # was given a name of its own (``--label``).
    spec = run.spec_fields
    unsplit = {k: v for k, v in spec.items() if k not in AXIS_OPTIONS}
    named = run.label != run_label({"model": run.model, "spec": spec})
    label = run.label if named else run_label({"model": run.model, "spec": unsplit})
    split = []
    for summary in variant_summaries(cells, rule=run.effective_length_rule):
        variant = summary["variant"]
        split.append(
            (
                run.with_fields(
                    run_id=f"{run.run_id}/{variant}",
                    label=f"{label} · {variant_label(variant)}",
                ),
                [
                    # As a run without the axis stores it: no variant, nor in its ID.
                    {key: value for key, value in cell.items() if key != "variant"}
                    | {"cell_id": str(cell["cell_id"]).removesuffix(f"-X{variant}")}
                    for cell in cells
                    if str(cell.get("variant") or "") == variant
                ],
            )
        )
    return split


def task_rates(cells: list[dict[str, Any]]) -> dict[str, Any]:
    """Rates a task's scorer notes: hallucinations (absent), distractor hits.

    And how many wrong answers gave a distractor's value (``distractor_answers``): what
    Context Rot asks of distractors, whether the model took the lookalike.
    """
    scored = [c for c in cells if c.get("task_score") is not None]
    rates: dict[str, Any] = {}
    for flag, name in (
        ("hallucinated", "hallucination_rate"),
        ("distractor_hit", "distractor_hit_rate"),
    ):
        flagged = [c for c in scored if flag in (c.get("task_details") or {})]
        if flagged:
            hits = sum(1 for c in flagged if c["task_details"][flag])
            rates[name] = round(hits / len(flagged), 4)
    if any("distractor_hit" in (c.get("task_details") or {}) for c in scored):
        rates |= _lookalikes(cells)
    return rates


def _lookalikes(cells: list[dict[str, Any]]) -> dict[str, Any]:
    """Wrong answers, how many of them gave a distractor's value, and of which kind.

    ``distractor_answers_by_kind``: wrong answers that took another key's value, and
    those that took a near miss of the wording's (one answer may take both).
    """
    wrong = [c for c in cells if c.get("outcome") == "wrong"]
    noted = [c.get("task_details") or {} for c in wrong]
    return {
        "wrong_answers": len(wrong),
        "distractor_answers": sum(1 for details in noted if details.get("distractor_hit")),
        "distractor_answers_by_kind": {
            kind: sum(1 for d in noted if kind in (d.get("distractor_kinds_returned") or ()))
            for kind in ("key", "wording")
        },
    }


def lookalikes_text(figures: dict[str, Any]) -> str:
    """The wrong answers a distractor took: "3 of 5 (another key 2, a near miss 1)"."""
    kinds = figures.get("distractor_answers_by_kind") or {}
    split = (
        f" (another key {kinds.get('key', 0)}, a near miss {kinds.get('wording', 0)})"
        if figures.get("distractor_answers")
        else ""
    )
    return f"{figures.get('distractor_answers', 0)} of {figures.get('wrong_answers', 0)}{split}"


def variant_summaries(
    cells: list[dict[str, Any]], *, rule: EffectiveLengthRule
) -> list[dict[str, Any]]:
    """Each value of the run's extra axes apart: its samples, measures and distractor answers.

    In the order of the run's variants (``niah.core.request.axes``), so the report's
    small multiples and curves follow the axis; each effective length under the run's
    ``rule``.
    """
    groups: dict[str, list[dict[str, Any]]] = {}
    for cell in cells:
        groups.setdefault(str(cell.get("variant") or ""), []).append(cell)
    return [
        {
            "variant": variant,
            "label": variant_label(variant),
            "samples": len(group),
            "measures": measures(group, rule=rule),
            **task_rates(group),
            **_lookalikes(group),
        }
        for variant, group in sorted(groups.items(), key=lambda item: _variant_order(item[0]))
    ]


def axis_effective_length(
    summaries: list[dict[str, Any]], rule: EffectiveLengthRule
) -> dict[str, Any]:
    """The effective length of a run with an axis: each value's, and no pooled one.

    A length pooled over 0 and 4 distractors answers no one's question; the run's rule
    judges each value apart (under NoLiMa's, against that value's own base).
    """
    found = {
        "length": None,
        "by_variant": [
            {"variant": v["variant"], "label": v["label"]} | v["measures"]["effective_length"]
            for v in summaries
        ],
        "effective_length_rule": rule,
        "rule": RULE_TEXTS[rule],
    }
    return found | {"text": effective_length_text(found)}


def variant_differences(cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each later value of the axis against the first, sample by sample, with its interval.

    The same length, depth and sample index with 0 and with 4 distractors is a pair
    (``niah.core.results.paired``): the test ``niah compare RUN`` runs, kept with the
    run so its report leads with it. In points of percent, the later value minus the first.
    """
    groups: dict[str, list[dict[str, Any]]] = {}
    for cell in cells:
        variant = str(cell.get("variant") or "")
        groups.setdefault(variant, []).append({k: v for k, v in cell.items() if k != "variant"})
    ordered = sorted(groups, key=_variant_order)
    if len(ordered) < 2:
        return []
    first = ordered[0]
    found = []
    for variant in ordered[1:]:
        paired = paired_comparison(
            (first, groups[first]),
            (variant, groups[variant]),
            names=(variant_label(first), variant_label(variant)),
        )
        overall = paired.overall
        found.append(
            {
                "first": first,
                "second": variant,
                "first_label": variant_label(first),
                "second_label": variant_label(variant),
                "unscored_pairs": paired.unscored_pairs,
                "overall": overall.as_dict() if overall else None,
                "text": effect_text(overall) if overall else "no sample scored in both",
            }
        )
    return found


def _variant_order(variant: str) -> tuple[int, str]:
    values = variant_values(variant)
    return int(values.get("distractors", 0)), str(values.get("haystack_order", ""))
