"""The "context rot" suite: Context Rot's two haystack axes in one run, and its table.

Chroma's "Context Rot" study (Hong, Troynikov and Huber, 2025; research.trychroma.com/
context-rot, read 2026-11-28) ran 18 models over input lengths with 0, 1 and 4
distractors, and on the haystack as written and with its sentences shuffled, and plots
the score against length per condition. ``niah run --suite context-rot`` asks the same
of a model in one run whose axes are those two options (``niah.core.request.axes``); its
report draws a heatmap and a curve per condition, and this is the table: a row per
condition, a column per length, each the mean score (percent) of its scored samples,
and how many wrong answers gave a distractor's value.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from niah.core.request.axes import variant_label
from niah.core.request.request_options import EffectiveLengthRule
from niah.core.results.effective import RULE_TEXTS, effective_length_short
from niah.core.results.variants import lookalikes_text, variant_summaries

# The study's conditions as run options: every pair of these is one variant of the run.
CONTEXT_ROT_AXES: dict[str, list[Any]] = {
    "distractors": [0, 1, 4],
    "haystack_order": ["coherent", "shuffled"],
}
# The suite's grid when the user gives none: a few lengths and the middle depth, six
# conditions x 5 x 1 = 30 cells (the default 15 x 15 grid would be 1,350, past the cap).
CONTEXT_ROT_LENGTHS = [1000, 2000, 4000, 8000, 16000]
CONTEXT_ROT_DEPTHS = [50]


@dataclass(frozen=True)
class ContextRotRow:
    """One condition: its mean per length and overall (percent), and its distractor answers."""

    condition: str
    by_length: dict[int, float | None]
    mean: float | None
    wrong_answers: int
    distractor_answers: int
    # "1 of 2 (another key 1, a near miss 0)": the wrong answers a distractor took.
    lookalikes: str = ""
    # Under the run's rule, in a few words ("2,000 tokens", "not determined (none to 2,000)").
    effective_length: str = ""


def context_rot_table(
    cells: list[dict[str, Any]], *, rule: EffectiveLengthRule
) -> list[ContextRotRow]:
    """A row per condition of a run with the suite's axes, in the axes' order."""
    rows = []
    lengths = sorted({int(c["context_length"]) for c in cells})
    for variant in variant_summaries(cells, rule=rule):
        means = variant["measures"]["by_length"]
        by_length = {length: means.get(str(length)) for length in lengths}
        rows.append(
            ContextRotRow(
                condition=variant_label(variant["variant"]),
                by_length=by_length,
                mean=variant["measures"]["mean"],
                wrong_answers=int(variant["wrong_answers"]),
                distractor_answers=int(variant["distractor_answers"]),
                lookalikes=lookalikes_text(variant),
                effective_length=effective_length_short(variant["measures"]["effective_length"]),
            )
        )
    return rows


def format_context_rot(rows: list[ContextRotRow], rule: EffectiveLengthRule) -> str:
    """The table as text: conditions down, lengths across, the mean, the effective length.

    Then the wrong answers a distractor took; the last line names the run's ``rule``.
    """
    if not rows:
        return "no scored samples yet"
    lengths = sorted(rows[0].by_length)
    width = max(len(row.condition) for row in [*rows, ContextRotRow("condition", {}, 0, 0, 0)])
    effective = max(len(row.effective_length) for row in [*rows, EFFECTIVE_HEADER])

    def figure(value: float | None) -> str:
        return f"{'-' if value is None else f'{value:.1f}':>10}"

    header = (
        f"{'condition':<{width}}"
        + "".join(f"{length:>10,}" for length in lengths)
        + f"{'mean':>10}  {EFFECTIVE_HEADER.effective_length:<{effective}}"
        + "  wrong answers that gave a distractor's value"
    )
    lines = [header]
    for row in rows:
        lines.append(
            f"{row.condition:<{width}}"
            + "".join(figure(row.by_length[length]) for length in lengths)
            + figure(row.mean)
            + f"  {row.effective_length:<{effective}}"
            + f"  {row.lookalikes or f'{row.distractor_answers} of {row.wrong_answers}'}"
        )
    lines.append(
        "mean score (percent) per input length and condition, as Context Rot plots it; "
        f"effective length per condition, {RULE_TEXTS[rule]}; "
        "the run's report draws each condition's heatmap and curve"
    )
    return "\n".join(lines)


EFFECTIVE_HEADER = ContextRotRow("", {}, 0, 0, 0, effective_length="effective length")
