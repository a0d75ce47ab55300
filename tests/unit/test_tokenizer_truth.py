"""Issue 52: which tokenizer counts each model, and prompts fitted to Google's count.

google-genai maps only the Gemini 2.x models and the Gemini 3 previews to Gemma 3 (the
vocabulary the service holds); the rest are on Gemma 4 or on nothing it publishes, and
their prompts are fitted to ``countTokens`` within ``fit_tolerance`` (never above).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from niah.catalog.models import CATALOG, find_model
from niah.catalog.tokenizers import SDK_TOKENIZER_FAMILY
from niah.core.prompts.count_fit import (
    FIT_ROUNDS,
    fit_by_count,
    fit_note,
    fit_summary,
    fit_tolerance,
)
from niah.core.prompts.prompt_builder import BuiltPrompt
from niah.models.tokenizer import get_tokenizer
from niah_devtools.standin import StandinState
from niah_devtools.standin_tokens import chunks4_tokens
from tests.unit.test_cli import niah
from tests.unit.test_vertex_standin import (  # noqa: F401 (standin: a fixture)
    configure,
    run_one_gemini_cell,
    standin,
)


def test_the_catalog_maps_tokenizers_as_the_pinned_google_genai_does() -> None:
    """Every map of the installed SDK, as the catalog copies it; and each model's entry."""
    from google.genai import _local_tokenizer_loader as loader

    sdk = {
        **loader._GEMINI_MODELS_TO_TOKENIZER_NAMES,
        **loader._GEMINI_STABLE_MODELS_TO_TOKENIZER_NAMES,
        **loader._GEMINI_MODELS_TO_HUGGINGFACE_TOKENIZER_NAMES,
    }
    assert sdk == SDK_TOKENIZER_FAMILY
    for info in CATALOG.values():
        if info.provider != "gemini":
            continue
        try:
            expected: str | None = loader.get_tokenizer_name(info.name)
        except ValueError:  # "Model ... is not supported": the SDK maps none
            expected = None
        assert info.tokenizer == expected, info.name
        assert info.prompt_lengths == ("exact" if expected == "gemma3" else "fitted"), info.name
    assert CATALOG["gemini-3.5-flash"].tokenizer == "gemma4"
    assert CATALOG["gemma-3-270m-local"].prompt_lengths == "exact"
    assumed = find_model("gemini-9.9-flash")
    assert assumed is not None and assumed.prompt_lengths == "fitted"


def test_niah_models_shows_each_models_tokenizer_and_whether_its_prompts_are_exact() -> None:
    table = niah("models")
    assert table.returncode == 0, table.stderr
    header, *rows = table.stdout.splitlines()
    assert "tokenizer" in header and "prompts" in header
    start, end = header.index("tokenizer"), header.index("$/1M in/out")
    shown = {
        row.split()[0]: row[start:end].rstrip().split(None, 1)
        for row in rows
        if row.startswith("gem")
    }
    fitted = "fitted by countTokens (Google: an estimate)"
    assert shown["gemini-3.5-flash"] == ["gemma4", fitted]
    assert shown["gemini-3.1-pro-preview"] == ["gemma4", fitted]
    assert shown["gemini-3.8-flash"] == ["unmapped", fitted]
    assert shown["gemini-4-neon"] == ["unmapped", fitted]
    assert shown["gemini-3-flash-preview"] == ["gemma3", "exact"]
    assert shown["gemini-2.5-flash"] == ["gemma3", "exact"]
    assert shown["gemma-3-270m-local"] == ["gemma3", "exact"]
    by_name = {row["model"]: row for row in json.loads(niah("models", "--json").stdout)}
    assert (by_name["gemini-3.1-flash-lite"]["tokenizer"], by_name["gemini-3.1-flash-lite"]
            ["prompt_lengths"]) == ("gemma4", "fitted")  # fmt: skip
    assert by_name["gemini-4-argon"]["tokenizer"] is None
    assert by_name["gemini-2.0-flash"]["prompt_lengths"] == "exact"


def test_the_tolerance_is_a_tenth_of_a_percent_and_at_least_8_tokens() -> None:
    assert [fit_tolerance(n) for n in (1000, 8000, 8001, 32_768, 1_048_576)] == [
        8,
        8,
        9,
        33,
        1049,
    ]


def _built(local_tokens: int) -> BuiltPrompt:
    """A stand-in prompt of ``local_tokens`` local tokens: its text says how many."""
    return BuiltPrompt(str(local_tokens), "", local_tokens, local_tokens, ())


def _lumpy_count(prompt: str) -> int:
    """A model count that is no constant times ours: 1.3 a token, lumps, a 40-token head."""
    local = int(prompt)
    return 40 + local + (3 * local) // 10 + (local // 7) % 5


@pytest.mark.parametrize("target", [1000, 1001, 4096, 12_345, 131_072, 1_000_000])
def test_a_prompt_is_refitted_until_the_models_count_is_in_the_window(target: int) -> None:
    # First guess as if the model counted like us: 30 % over, so it is refitted.
    fit = fit_by_count(_built, _lumpy_count, target_tokens=target, first_local_tokens=target)
    assert fit.model_tokens == _lumpy_count(fit.built.prompt)
    assert target - fit_tolerance(target) <= fit.model_tokens <= target
    assert fit.within_tolerance and fit.deviation == fit.model_tokens - target
    assert 2 <= fit.rounds <= FIT_ROUNDS
    fields = fit.fields()
    assert fields["fitted_by"] == "countTokens" and fields["counted_prompt_tokens"] == (
        fit.model_tokens
    )
    assert fields["fit_deviation_tokens"] == fit.deviation <= 0
    assert fields["fit_tolerance_tokens"] == fit_tolerance(target)


def test_a_count_that_jumps_over_the_window_is_kept_below_and_says_it_missed() -> None:
    def coarse(prompt: str) -> int:  # 20 model tokens a local token: 8 tokens of window
        return 20 * int(prompt)

    fit = fit_by_count(_built, coarse, target_tokens=1010, first_local_tokens=1010)
    assert fit.model_tokens == 1000 and fit.deviation == -10  # the closest not above
    assert not fit.within_tolerance and not fit.fields()["fit_within_tolerance"]
    assert fit.rounds == FIT_ROUNDS


def test_chunks4_is_a_tokenization_other_than_ours() -> None:
    """The stand-in's other tokenizer: no constant ratio to ours (so a sample cannot fit)."""
    words, digits = "Programming languages evolve slowly.", "7304912 8811"
    ours = get_tokenizer()
    assert chunks4_tokens(words) == 3 + 3 + 2 + 2 + 1
    assert chunks4_tokens(digits) == 2 + 1
    ratios = {chunks4_tokens(t) / len(ours.encode(t)) for t in (words, digits)}
    assert len(ratios) == 2


def test_a_cell_of_a_gemma4_model_is_fitted_to_countTokens_and_records_it(
    standin: tuple[str, StandinState],  # noqa: F811
    essay_blobs: Any,
) -> None:
    """The worker fits a gemini-3.5-flash cell to a stand-in counting in chunks4."""
    url, state = standin
    configure(url, tokenization="chunks4")
    store, run_id, outcome = run_one_gemini_cell(
        essay_blobs, model_name="gemini-3.5-flash", allow_retired=False
    )
    assert outcome == "answered"
    [cell] = store.list_cells(run_id)
    counts = [r for r in state.requests if r["kind"] == "count"]
    # The run's sample; once per worker, a probe of the kind (no needle, no question);
    # then the cell's own fit, one count a round.
    probe_rounds = len(counts) - 1 - cell["fit_rounds"]
    assert 1 <= probe_rounds <= FIT_ROUNDS
    sent = next(r for r in state.requests if r["kind"] == "generate")["body"]
    prompt = sent["contents"][0]["parts"][0]["text"]
    assert cell["counted_prompt_tokens"] == chunks4_tokens(prompt)
    assert cell["usage"]["prompt_token_count"] == cell["counted_prompt_tokens"]
    assert cell["fitted_by"] == "countTokens" and cell["fit_tolerance_tokens"] == 8
    assert -8 <= cell["fit_deviation_tokens"] <= 0 and cell["fit_within_tolerance"]
    assert cell["fit_deviation_tokens"] == cell["counted_prompt_tokens"] - 2000
    assert cell["planned_prompt_tokens"] == len(get_tokenizer().encode(prompt))


def test_a_cell_of_a_gemma3_model_is_exact_and_not_counted_again(
    standin: tuple[str, StandinState],  # noqa: F811
    essay_blobs: Any,
) -> None:
    """gemini-3-flash-preview is on Gemma 3: built exact, and Google's count equals it."""
    _, state = standin
    store, run_id, outcome = run_one_gemini_cell(essay_blobs, model_name="gemini-3-flash-preview")
    assert outcome == "answered"
    [cell] = store.list_cells(run_id)
    assert len([r for r in state.requests if r["kind"] == "count"]) == 1  # the sample only
    assert cell["planned_prompt_tokens"] == 2000 == cell["usage"]["prompt_token_count"]
    assert cell["prompt_token_deviation"] == 0 and "fitted_by" not in cell


def test_the_run_summarises_its_fitted_cells_and_says_they_are_not_exact() -> None:
    fitted = [
        {"fitted_by": "countTokens", "fit_deviation_tokens": -3, "fit_within_tolerance": True},
        {"fitted_by": "countTokens", "fit_deviation_tokens": -12, "fit_within_tolerance": False},
    ]
    assert fit_summary([{"planned_prompt_tokens": 1000}]) is None  # an exact model's cells
    assert fit_note(None) is None
    summary = fit_summary([*fitted, {"planned_prompt_tokens": 1000}])
    assert summary == {
        "cells": 2,
        "within_tolerance": 1,
        "max_abs_deviation": 12,
        "mean_deviation": -7.5,
    }
    assert fit_note(summary) == (
        "prompt lengths fitted by countTokens (Google: an estimate), not exact: 2 cells, "
        "1 of 2 within [L - max(8, 0.1 % of L), L], largest |deviation| 12 tokens"
    )


@pytest.mark.parametrize(
    ("model", "basis"),
    [
        ("gemini-4-argon", "fitted"),
        ("gemini-3.5-flash", "fitted"),
        ("gemini-3-flash-preview", "exact"),
        ("gemma-3-270m-local", "exact"),
    ],
)
def test_the_estimate_says_exact_only_where_the_prompt_is_built_in_the_models_tokenizer(
    model: str, basis: str
) -> None:
    """Before, every haystack prompt was "exact" in the estimate, fitted ones too."""
    shown = niah(
        "run", "--estimate", "--json", "--allow_retired", "--model_name", model,
        "--context_lengths", "1000", "--document_depth_percents", "50",
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["prompt_tokens_basis"] == {basis: 1}


def test_every_cells_basis_in_the_estimate_agrees_with_how_the_worker_builds_it() -> None:
    """The per-cell list too, and batch and generated prompts are not called fitted."""

    def bases(*args: str) -> tuple[dict[str, int], set[str]]:
        shown = niah("run", "--estimate", "--json", "--context_lengths", "2000", *args)
        assert shown.returncode == 0, shown.stderr
        figures = json.loads(shown.stdout)
        return figures["prompt_tokens_basis"], {c["basis"] for c in figures["per_cell"]}

    argon = ("--model_name", "gemini-4-argon", "--document_depth_percents", "50")
    assert bases(*argon) == ({"fitted": 1}, {"fitted"})
    flash = ("--model_name", "gemini-3.8-flash", "--document_depth_percents", "50")
    assert bases(*flash, "--batch") == ({"ratio": 1}, {"ratio"})
    assert bases(
        "--model_name",
        "gemini-4-argon",
        "--task",
        "common_words",
        "--document_depth_percents",
        "50",
    ) == (
        {"local_count": 1},
        {"local_count"},
    )


def test_fitted_prompts_are_the_same_in_any_order_and_mostly_take_one_count_each(
    essay_blobs: Any,
) -> None:
    """Issue 53: a fitted cell took two countTokens calls; now mostly one.

    Each kind's start is found once, by a probe that depends on the kind alone, so a
    cell's prompt does not depend on which cells the worker built before it.
    """
    import niah.tasks  # noqa: F401  (the registry, before a request is read)
    from niah.core.prompts.texts import HARNESS_TEMPLATE
    from niah.core.request.spec import RunRequest
    from niah.service.cells.prompt import FIT_STARTS, prepare_call
    from niah.tasks import make_sample

    spec = RunRequest(model_name="gemini-3.5-flash", context_lengths=[2000],
                      document_depth_percent_intervals=9)  # fmt: skip
    cells = spec.cells()
    calls: list[str] = []

    def count(prompt: str) -> int:
        calls.append(prompt)
        return chunks4_tokens(prompt)

    def built(order: list[Any]) -> tuple[dict[str, str], dict[str, int]]:
        FIT_STARTS.clear()
        prompts, counted = {}, {}
        for cell in order:
            before = len(calls)
            prepared = prepare_call(spec, cell, make_sample(spec, cell),
                                    default_template=HARNESS_TEMPLATE, tokenizer=get_tokenizer(),
                                    blobs=essay_blobs, count_tokens=count)  # fmt: skip
            assert prepared.fit is not None and prepared.fit.within_tolerance
            prompts[cell.cell_id], counted[cell.cell_id] = (
                prepared.built.prompt,
                len(calls) - before,
            )
        return prompts, counted

    forward, calls_forward = built(cells)
    backward, _ = built(cells[::-1])
    assert forward == backward  # the same prompt for every cell, whichever came first
    later = [calls_forward[c.cell_id] for c in cells[1:]]  # the first also fitted the probe
    assert sum(n == 1 for n in later) >= len(later) - 2, later
    assert sum(later) < 2 * len(later)
