"""One flat row per stored sample: what the report's table, CSV and JSONL exports show.

A stored cell nests its usage and error; a spreadsheet or a sortable table wants flat
columns with units in their names. One list of columns serves every view, so the
report's table and ``niah export --format csv`` never disagree.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any

# (column, what it holds): the order of the CSV's header and of the report's table.
SAMPLE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("cell_id", "cell ID (length and depth, sample)"),
    ("context_length", "requested context length, tokens"),
    ("depth_percent", "needle depth, percent"),
    ("sample", "sample index at this grid point"),
    ("variant", "its values of the run's axes (distractors, haystack order), if any"),
    ("needle", "the inserted text"),
    ("question", "the question asked"),
    ("expected_answer", "what a correct answer holds"),
    ("model_response", "the model's answer"),
    ("score", "score shown on the heatmap (1-10 for single, else 0-1)"),
    ("task_score", "score in [0, 1]"),
    ("outcome", "correct, wrong or unscored"),
    ("finish_reason", "why the model stopped"),
    ("error_kind", "failure kind, if the sample failed"),
    ("error", "failure or unscored reason"),
    ("prompt_tokens", "prompt tokens billed"),
    ("cached_tokens", "prompt tokens served from cache"),
    ("output_tokens", "answer tokens"),
    ("thinking_tokens", "thinking tokens"),
    ("cost_usd", "cost of the call, USD (empty: unknown)"),
    ("model_seconds", "model call latency, seconds"),
    ("model_version", "the model that answered, as the API names it (modelVersion)"),
    ("test_timestamp_utc", "when the sample was stored"),
)
COLUMN_NAMES = tuple(name for name, _ in SAMPLE_COLUMNS)
NUMERIC_COLUMNS = frozenset(
    {
        "context_length",
        "depth_percent",
        "sample",
        "score",
        "task_score",
        "prompt_tokens",
        "cached_tokens",
        "output_tokens",
        "thinking_tokens",
        "cost_usd",
        "model_seconds",
    }
)
# A spreadsheet runs a cell that starts with one of these as a formula (OWASP's "CSV
# injection"): a model's answer must not. Such text gets a leading apostrophe in CSV.
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def sample_row(cell: dict[str, Any]) -> dict[str, Any]:
    """The cell as one flat row of ``COLUMN_NAMES``; None where a value is not known."""
    usage = cell.get("usage") or {}
    error = cell.get("error") or {}
    return {
        "cell_id": cell.get("cell_id"),
        "context_length": cell.get("context_length"),
        "depth_percent": cell.get("depth_percent"),
        "sample": cell.get("sample", 0),
        "variant": cell.get("variant") or "",
        "needle": cell.get("needle"),
        "question": cell.get("question"),
        "expected_answer": cell.get("expected_answer"),
        "model_response": cell.get("model_response"),
        "score": cell.get("score"),
        "task_score": cell.get("task_score"),
        "outcome": cell.get("outcome") or "unscored",
        "finish_reason": cell.get("finish_reason"),
        "error_kind": error.get("kind"),
        "error": error.get("message") or cell.get("unscored_reason"),
        "prompt_tokens": usage.get("prompt_token_count"),
        "cached_tokens": usage.get("cached_content_token_count"),
        "output_tokens": usage.get("candidates_token_count"),
        "thinking_tokens": usage.get("thoughts_token_count"),
        "cost_usd": cell.get("cost_usd"),
        "model_seconds": cell.get("model_seconds"),
        "model_version": cell.get("model_version"),
        "test_timestamp_utc": cell.get("test_timestamp_utc"),
    }


def rows_csv(cells: list[dict[str, Any]]) -> str:
    """The samples as CSV: a header, then one row per sample in cell-ID order."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=COLUMN_NAMES, lineterminator="\r\n")
    writer.writeheader()
    for cell in sorted(cells, key=lambda c: str(c.get("cell_id"))):
        row = sample_row(cell)
        writer.writerow({name: _csv_value(name, value) for name, value in row.items()})
    return buffer.getvalue()


def cells_jsonl(cells: list[dict[str, Any]]) -> str:
    """Every stored field of every sample, one JSON document per line."""
    ordered = sorted(cells, key=lambda c: str(c.get("cell_id")))
    return "".join(json.dumps(cell, default=str, sort_keys=True) + "\n" for cell in ordered)


def _csv_value(name: str, value: Any) -> Any:
    if value is None:
        return ""
    if name in NUMERIC_COLUMNS:
        return value
    text = str(value)
    return "'" + text if text.startswith(_FORMULA_STARTS) else text
