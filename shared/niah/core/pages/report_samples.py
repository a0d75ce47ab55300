"""The report's samples table: its columns, and every sample as the data its script shows.

A run of 10,000 samples is a page that still opens: the table is one JSON array the
page's script renders a page of rows at a time, with numbers short and long texts cut
to a shared budget (the exports keep them whole).
"""

from __future__ import annotations

from typing import Any

from niah.core.results.sample_rows import COLUMN_NAMES, NUMERIC_COLUMNS, SAMPLE_COLUMNS, sample_row

# Longer texts are cut in the table (the export holds them whole): a page stays light.
TEXT_LIMIT = 600


def samples_table(cells: list[dict[str, Any]]) -> dict[str, Any]:
    """The samples table: its columns, and every row as data the page's script shows.

    At 10,000 samples a table of markup is over 8 MB and slow to open; as one JSON array
    of rows (numbers to 6 significant digits, long texts cut at ``TEXT_LIMIT``) it is a
    few MB, and the script renders ``PAGE_ROWS`` at a time (all of them to print).
    """
    descriptions = dict(SAMPLE_COLUMNS)
    ordered = sorted(cells, key=lambda c: str(c.get("cell_id")))
    limit = text_limit(len(ordered))
    rows = [
        [_data_value(name, row[name], limit) for name in COLUMN_NAMES]
        for row in map(sample_row, ordered)
    ]
    extra = [name for name in COLUMN_NAMES if name not in KEY_COLUMNS]
    data = {
        "columns": COLUMN_NAMES,
        "numeric": sorted(NUMERIC_COLUMNS),
        "extra": extra,
        "rows": rows,
    }
    return {
        "count": len(cells),
        "page_rows": PAGE_ROWS,
        "columns": [
            {
                "name": name,
                "title": descriptions[name],
                "numeric": name in NUMERIC_COLUMNS,
                "extra": name not in KEY_COLUMNS,
            }
            for name in COLUMN_NAMES
        ],
        # Written by the template's ``tojson``: JSON that cannot end its script element.
        "data": data,
    }


# Rows the samples table shows at a time; the rest are a page away (or printed whole).
PAGE_ROWS = 100
# The samples table's columns shown at first, so they fit 1,280 px; the others are a
# click away ("all columns"), printed, and in every export.
KEY_COLUMNS = frozenset(
    {
        "cell_id",
        "context_length",
        "depth_percent",
        "sample",
        "expected_answer",
        "model_response",
        "score",
        "outcome",
        "error",
    }
)


# The page's texts (needle, question, answer, error: the long ones) share this budget, so
# a run of any size stays a page that opens: each text gets TEXT_LIMIT characters, or
# its share of the budget where there are many samples (80 at 10,000), at least 80. A
# cut text ends "… [+N]", N the characters left out; the export has it whole.
TEXT_BUDGET = 2_400_000
LONG_TEXT_COLUMNS = 3


def text_limit(rows: int) -> int:
    """How many characters of each text a page of ``rows`` samples keeps."""
    return max(80, min(TEXT_LIMIT, TEXT_BUDGET // max(1, rows) // LONG_TEXT_COLUMNS))


def _data_value(name: str, value: Any, limit: int = TEXT_LIMIT) -> Any:
    """A table value as the page's data holds it: numbers short, long texts cut."""
    if value is None:
        return None
    if name in NUMERIC_COLUMNS:
        return float(f"{value:.6g}") if isinstance(value, float) else value
    text = str(value)
    if name != "cell_id" and len(text) > limit:
        more = len(text) - limit
        text = f"{text[:limit]} … [+{more:,}]"
    return text
