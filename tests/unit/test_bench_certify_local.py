"""The certify_local bench part's comparison and its docs table, on a recorded small run.

The part itself runs the local model for many minutes (``scripts/bench.sh --only
certify_local``); what it makes of the two runs is checked here on figures recorded from
a run of it on 250 and 500 tokens (2026-12-05, multi_value, depths 10, 50 and 90 %).
"""

from __future__ import annotations

import sys
from typing import Any

from niah_devtools.docs_figures import block
from tests import REPO

sys.path.insert(0, str(REPO / "scripts"))

LENGTHS = [250, 500]


def cells(spec: list[tuple[int, float | None, float, int]]) -> list[dict[str, Any]]:
    """Cells as ``finished_run`` keeps them: (length, score, model seconds, tokens).

    Each reply is 20 tokens.
    """
    return [
        {"length": n, "score": s, "model_seconds": t, "prompt_tokens": k, "output_tokens": 20}
        for n, s, t, k in spec
    ]


def recorded() -> tuple[dict[str, Any], dict[str, Any]]:
    """A certify run that stopped on unscored samples, and its grid (250 passes by the means)."""
    grid = {
        "run_id": "run-grid",
        "wall_seconds": 298.4,
        "summary": {
            "measures": {
                "by_length": {"250": 93.75, "500": None},
                "effective_length": {"length": 250, "determined": False, "text": "250 by means"},
            }
        },
        "cells": cells([(250, 1.0, 10.0, 250)] * 4 + [(250, None, 10.0, 250)] * 11)
        + cells([(500, None, 20.0, 500)] * 15),
    }
    certify = {
        "run_id": "run-certify",
        "wall_seconds": 168.9,
        "summary": {
            "certificate": {
                "length": None,
                "below": None,
                "determined": False,
                "reason": "failing",
                "looks": [
                    {"length": 250, "samples": 8, "mean": 100.0, "verdict": "OPEN"},
                    {"length": 250, "samples": 12, "mean": 91.7, "verdict": "OPEN"},
                ],
            },
            "measures": {"effective_length": {"text": "not determined: no length passed"}},
        },
        "cells": cells([(250, 1.0, 10.0, 250)] * 10 + [(250, None, 10.0, 250)] * 4),
    }
    return certify, grid


def test_the_comparison_counts_lengths_apart_and_the_costs_from_the_cells() -> None:
    from bench_certify_local import compare

    certify, grid = recorded()
    figures = compare(certify, grid, lengths=LENGTHS, rule="ruler")
    # No length certified is "below the shortest": one length from the grid's 250.
    assert (figures["lengths_apart"], figures["within_one_length"]) == (1, True)
    costs = ("samples", "unscored", "model_seconds", "prompt_tokens")
    assert [figures["grid"][key] for key in costs] == [30, 26, 450.0, 11_250]
    assert figures["certify"]["model_seconds"] == 140.0
    assert figures["model_seconds_share_of_grid"] == round(140 / 450, 4)
    assert figures["tokens_share_of_grid"] == round(3_500 / 11_250, 4)
    # At the catalog's speed (470 prompt, 48 reply tokens a second), what they read and wrote.
    assert figures["grid"]["speed_seconds"] == round(11_250 / 470 + 30 * 20 / 48, 1) == 36.4
    assert figures["certify"]["speed_seconds"] == round(3_500 / 470 + 14 * 20 / 48, 1) == 13.3
    assert figures["speed_seconds_share_of_grid"] == round(13.3 / 36.4, 4)
    # Each length's last look, and the grid's mean where no sample was scored: none.
    assert figures["certify"]["by_length"] == [
        {"length": 250, "samples": 12, "mean": 91.7, "verdict": "OPEN"},
        {"length": 500, "samples": 0, "mean": None, "verdict": "not asked"},
    ]
    assert figures["grid"]["by_length"][1] == {"length": 500, "mean": None, "samples": 15}


def test_the_docs_table_renders_the_recorded_run() -> None:
    from bench_certify_local import REQUEST, compare

    certify, grid = recorded()
    local = compare(certify, grid, lengths=LENGTHS, rule="ruler") | {
        "request": REQUEST | {"context_lengths": LENGTHS},
        "grid_samples_per_point": 5,
    }
    text = block("certify_local", {"certify_local": local})
    assert "| 250 | 93.8 % (15) | 91.7 % (12, OPEN) |" in text
    assert "| 500 | none scored (15) | not asked |" in text
    assert (
        "| certify | none (below the shortest) | 14 (4 unscored) | 140.0 | 13.3 | 3,500 / 280 |"
        in text
    )
    assert "31.1 % of the grid's model seconds as measured, 36.5 % of them at" in text
    assert "(within one: yes)" in text
