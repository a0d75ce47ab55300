"""What the report keeps on a run: its summary's figures, as fields of the run document.

The report (``niah.service.reports.render``) writes them when the run is done, so the
index, ``niah list`` and ``niah status`` show a run without reading its cells. Each is
None until the report has written it (and for a run whose report kept none of it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any


@dataclass(frozen=True)
class ReportFigures:
    """The summary's figures kept on the run (``niah.core.results.summary.summarize``).

    mean_score: the mean on the harness's 1-10 scale (the ``single`` task's heatmap).
    measures: the mean, per length and depth, with intervals, and the effective length.
    mrcr: MRCR v2's bins and headline figures (an MRCR run).
    variants, variant_differences: a run with an axis: each value's measures, and the
        later values against the first.
    outcomes: the samples by outcome (correct, wrong, unscored, truncated).
    retrieved_share: the share of answered samples that retrieved the needle exactly.
    prompt_token_deviation: the prompts' token counts against the lengths asked.
    count_fit: how close prompts fitted to countTokens came (a model without our tokenizer).
    spend: every model call the run started and what they cost.
    served_models: each reply's modelVersion, counted.
    """

    mean_score: float | None = None
    measures: dict[str, Any] | None = None
    mrcr: dict[str, Any] | None = None
    variants: list[dict[str, Any]] | None = None
    variant_differences: list[dict[str, Any]] | None = None
    outcomes: dict[str, int] | None = None
    retrieved_share: float | None = None
    prompt_token_deviation: dict[str, Any] | None = None
    count_fit: dict[str, Any] | None = None
    spend: dict[str, Any] | None = None
    served_models: dict[str, int] | None = None

    @classmethod
    def from_document(cls, doc: Mapping[str, Any]) -> ReportFigures:
        """The figures a run document holds (None for each it does not)."""
        return cls(**{name: doc.get(name) for name in REPORT_FIGURES})

    def to_document(self) -> dict[str, Any]:
        """The fields of the run document that hold them (only those set)."""
        kept = {name: getattr(self, name) for name in REPORT_FIGURES}
        return {name: value for name, value in kept.items() if value is not None}


# The run document's fields the report writes (``ReportFigures``'s, by name).
REPORT_FIGURES = tuple(f.name for f in fields(ReportFigures))
