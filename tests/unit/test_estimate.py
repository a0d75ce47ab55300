"""``niah run --estimate``: per-cell prompt counts, the judge, caching, budgets, warnings.

The cache-aware figure is checked against the benchmark's own arithmetic: a small grid's
prompts built as ``scripts/bench_grid.py`` builds them, fed in the benchmark's order
(the primer, then the rest) through the stand-in's implicit-cache model.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from tests import REPO
from tests.unit.test_cli import niah

sys.path.insert(0, str(REPO / "scripts"))

GRID_1M = (
    "--model_name", "gemini-3.1-pro-preview", "--context_lengths_min", "1000",
    "--context_lengths_max", "1000000", "--context_lengths_num_intervals", "11",
    "--document_depth_percent_intervals", "11", "--scorer", "both",
    "--evaluator_model_name", "gemini-3.8-flash",
)  # fmt: skip
SMALL_GRID = {
    "model_name": "gemini-3.1-pro-preview",
    "context_lengths_min": 4000,
    "context_lengths_max": 12000,
    "context_lengths_num_intervals": 3,
    "document_depth_percent_intervals": 3,
    "max_output_tokens": 20,
}


def steady(warnings: list[str]) -> list[str]:
    """The warnings that do not depend on today's date (a price change soon does)."""
    return [w for w in warnings if "rates change on" not in w]


@pytest.fixture
def cache_aware(monkeypatch: pytest.MonkeyPatch) -> None:
    """The dispatcher's cache-aware order, which the benchmark measures."""
    from niah.settings import get_settings

    monkeypatch.setenv("NIAH_DISPATCH_ORDER", "cache_aware")
    get_settings.cache_clear()


@pytest.fixture(scope="module")
def grid_1m() -> tuple[dict[str, Any], str]:
    data, text = niah("run", *GRID_1M, "--estimate", "--json"), niah("run", *GRID_1M, "--estimate")
    assert data.returncode == text.returncode == 0, data.stderr + text.stderr
    return json.loads(data.stdout), text.stdout


def test_the_1m_grid_shows_naive_cache_aware_and_judge_figures_in_json_and_text(
    grid_1m: tuple[dict[str, Any], str],
) -> None:
    figures, text = grid_1m
    assert figures["cells"] == 121 and figures["prompt_tokens_basis"] == {
        "fitted": 121
    }  # 3.1 Pro: Gemma 4, fitted
    naive, aware, judge = figures["naive"], figures["cache_aware"], figures["judge"]
    assert aware["primer_cell_id"] == "L01000000-D100000"
    assert 0 < aware["cost_usd"] < naive["cost_usd"]
    assert aware["saving_usd"] == pytest.approx(naive["cost_usd"] - aware["cost_usd"], abs=1e-5)
    assert judge["model_name"] == "gemini-3.8-flash" and judge["calls"] == 121
    assert figures["total"]["naive_usd"] == pytest.approx(
        naive["cost_usd"] + judge["cost_usd"], abs=1e-5
    )
    assert figures["cost_usd_at_most"] == figures["total"]["naive_usd"]
    call = figures["per_call"]
    assert call["max_output_tokens"] == call["answer_tokens"] + call["thinking_tokens"]
    assert figures["output_tokens_at_most"] == 121 * call["max_output_tokens"]
    # The model's own word (a preview), and nothing else but a dated price change that
    # falls within 60 days of today (3.8 Flash's introductory rates end 2026-12-31).
    assert steady(figures["warnings"]) == [
        "gemini-3.1-pro-preview is a preview model; no retirement date announced"
    ]
    # The text is made of the same figures.
    for shown in (
        f"model calls, naive (nothing cached): ${naive['cost_usd']:.4f}",
        f"{aware['cached_tokens']:,} cached tokens in {aware['cells_with_cache_hits']} cells): "
        f"${aware['cost_usd']:.4f}",
        f"judge gemini-3.8-flash: 121 calls, prompt tokens at most "
        f"{judge['prompt_tokens_at_most']:,}",
        f"cost at most: ${figures['cost_usd_at_most']:.4f} (judge included); "
        f"cache-aware: ${figures['total']['cache_aware_usd']:.4f}",
        f"per call: max_output_tokens {call['max_output_tokens']:,} = answer room "
        f"{call['answer_tokens']:,} + thinking room {call['thinking_tokens']:,}",
        f"output tokens at most: {figures['output_tokens_at_most']:,}",
    ):
        assert shown in text, shown


def test_the_1m_grid_is_priced_cell_by_cell_at_its_own_count_and_tier(
    grid_1m: tuple[dict[str, Any], str],
) -> None:
    from niah.core.money.pricing import cost_of
    from niah.core.prompts.answer_budget import least_thinking_budget
    from niah.core.prompts.texts import JUDGE_MAX_OUTPUT_TOKENS

    figures, _ = grid_1m
    cells = figures["per_cell"]
    naive = sum(cost_of("gemini-3.1-pro-preview", c["prompt_tokens"], c["max_output_tokens"]).usd
                for c in cells)  # fmt: skip
    aware = sum(
        cost_of(
            "gemini-3.1-pro-preview",
            c["prompt_tokens"],
            c["max_output_tokens"],
            cached_tokens=c["cached_tokens"],
        ).usd
        for c in cells
    )
    judge_output = least_thinking_budget("gemini-3.8-flash", JUDGE_MAX_OUTPUT_TOKENS)
    judge = sum(
        cost_of("gemini-3.8-flash", c["judge_prompt_tokens"], judge_output.max_output_tokens).usd
        for c in cells
    )
    assert figures["naive"]["cost_usd"] == pytest.approx(naive, abs=1e-5)
    assert figures["cache_aware"]["cost_usd"] == pytest.approx(aware, abs=1e-5)
    assert figures["judge"]["cost_usd"] == pytest.approx(judge, abs=1e-5)
    # Every generated prompt lands exactly on its length (no buffer asked for).
    assert all(c["prompt_tokens"] == int(c["cell_id"][1:9]) for c in cells)
    long = [c for c in cells if c["long_context"]]
    assert long == [c for c in cells if c["prompt_tokens"] > 200_000] and len(long) == 99
    assert figures["long_context_cells"] == 99
    # The primer and every depth-0 cell (a prefix of the template's head) hit no cache.
    assert all(c["cached_tokens"] == 0 for c in cells if c["cell_id"].endswith("D000000"))
    assert next(c for c in cells if c["cell_id"] == "L01000000-D100000")["cached_tokens"] == 0


def _estimate(grid: dict[str, Any], **kwargs: Any) -> Any:
    from niah.core.money.estimate import estimate_run
    from niah.core.prompts.texts import HARNESS_TEMPLATE
    from niah.core.request.spec import RunRequest
    from niah.tasks import get_task

    spec = RunRequest.model_validate(grid)
    task = get_task(spec.task)
    cells = spec.cells()
    samples = [task.sample(spec, cell) for cell in cells]
    return estimate_run(spec, cells, samples, default_template=HARNESS_TEMPLATE, **kwargs)


@pytest.mark.usefixtures("cache_aware")
def test_a_small_grid_matches_the_benchmarks_built_prompts_and_cache_model() -> None:
    from bench_grid import essay_blobs, grid_prompts

    from niah.core.money.estimate import CallTokens, price_calls
    from niah.core.prompts.haystack_tokens import load_haystack
    from niah.core.prompts.texts import HARNESS_TEMPLATE
    from niah.models.tokenizer import get_tokenizer
    from niah_devtools.standin import StandinState, _cached_prefix_tokens

    tokenizer = get_tokenizer()
    prompts = grid_prompts(SMALL_GRID, HARNESS_TEMPLATE)  # the primer first
    # The benchmark's cache-aware order: the primer answered, then the rest at once.
    state = StandinState()
    state.reset(implicit_cache=True)
    measured = {}
    for number, (cell_id, prompt) in enumerate(prompts):
        measured[cell_id] = (len(tokenizer.encode(prompt)), _cached_prefix_tokens(state, prompt))
        if number == 0:
            state.cache.add(prompt.encode())
    haystack = load_haystack(essay_blobs(), "haystacks/paul_graham_essays/", tokenizer)
    exact = _estimate(
        SMALL_GRID, tokenizer=tokenizer, sentence_start=haystack.sentence_start_at_or_before
    )
    nominal = _estimate(SMALL_GRID, tokenizer=tokenizer)
    assert exact.primer_cell_id == nominal.primer_cell_id == prompts[0][0]
    for cell in exact.cells:
        tokens, cached = measured[cell.cell.cell_id]
        # Our count of the bench's prompt; the model's own is fitted to it (not exact)
        assert (cell.prompt_tokens, cell.basis) == (tokens, "fitted")
        # With the haystack's sentence ends: never above the measured prefix, at most one
        # token below it (the needle's leading space can match the haystack's next one).
        assert 0 <= cached - cell.cached_tokens <= 1, (cell.cell.cell_id, cached, cell)
        assert bool(cell.cached_tokens) == bool(cached)
    # Without them (the CLI does not read the haystack): above by at most the back-up to
    # a sentence end, which the builder makes and the estimate cannot see: at most the
    # longest sentence of the haystack's first 12,000 tokens.
    longest = max(p - haystack.sentence_start_at_or_before(p) for p in range(1, 12_000))
    for cell in nominal.cells:
        _, cached = measured[cell.cell.cell_id]
        assert cell.cached_tokens - cached <= longest, (cell.cell.cell_id, cached, cell)
        assert cell.cached_tokens >= cached - 1
    assert any(c.cached_tokens for c in exact.cells)
    # The benchmark's pricing of its measured calls and the estimate's agree within
    # the tokens above (gemini-3.1-pro-preview input is $2 a million tokens).
    model = "gemini-3.1-pro-preview"
    bench = price_calls(model, [CallTokens(t, c) for t, c in measured.values()])
    estimated = price_calls(
        model, [CallTokens(c.prompt_tokens, c.cached_tokens) for c in exact.cells]
    )
    assert estimated.usd_without_cache == pytest.approx(bench.usd_without_cache, abs=1e-12)
    assert 0 <= estimated.usd - bench.usd <= len(prompts) * 1.25e-6


@pytest.mark.usefixtures("cache_aware")
def test_the_primer_is_the_one_the_dispatcher_picks() -> None:
    """One pick (spec.primer_cell) for both; the dispatcher's message is that cell's."""
    from niah.core.money.estimate import estimate_figures
    from niah.core.request.spec import RunRequest
    from niah.core.runs import RunRecord
    from niah.service.messages import primer_message

    for grid in (SMALL_GRID, {**SMALL_GRID, "samples_per_cell": 2}):
        spec = RunRequest.model_validate(grid)
        message = primer_message(RunRecord("run-x", spec))
        assert message is not None and message["primer"] is True
        estimated = estimate_figures(_estimate(grid))["cache_aware"]
        assert estimated["primer_cell_id"] == message["cell_id"]
        deepest = max(spec.cells(), key=lambda c: (c.context_length * c.depth_percent, -c.sample))
        assert message["cell_id"] == deepest.cell_id  # the deepest needle at the longest


def test_a_buffer_lowers_the_count_and_a_conversation_above_the_tier_is_long() -> None:
    from niah.core.money.estimate import TURN_ALLOWANCE, estimate_figures

    buffered = estimate_figures(
        _estimate({"model_name": "gemini-3.1-pro-preview", "context_lengths": [200_000],
                   "document_depth_percents": [50], "final_context_length_buffer": 200})
    )  # fmt: skip
    [cell] = buffered["per_cell"]
    assert (cell["prompt_tokens"], cell["long_context"]) == (199_800, False)
    mrcr = estimate_figures(
        _estimate({"model_name": "gemini-3.1-pro-preview", "task": "mrcr",
                   "context_lengths": [200_000], "document_depth_percents": [50]})
    )  # fmt: skip
    [cell] = mrcr["per_cell"]
    assert cell["basis"] == "turns_allowance" and cell["long_context"]
    # About one turn pair per 400 tokens of replies, each turn with its allowance.
    assert 200_000 + 2 * TURN_ALLOWANCE * 400 < cell["prompt_tokens"] < 200_000 + 10_000
    assert any("conversational" in note for note in mrcr["notes"])


def test_a_budget_that_cuts_thinking_or_an_unknown_model_warns() -> None:
    from niah.core.money.estimate import estimate_figures

    base = {"model_name": "gemini-3.1-pro-preview", "context_lengths": [4000]}
    short = estimate_figures(_estimate({**base, "max_output_tokens": 200}))
    [warning] = [w for w in steady(short["warnings"]) if "preview model" not in w]
    assert "may think up to 32768" in warning and "MAX_TOKENS" in warning
    assert short["per_call"] == {
        "max_output_tokens": 200,
        "answer_tokens": short["per_call"]["answer_tokens"],
        "thinking_tokens": 200 - short["per_call"]["answer_tokens"],
    }
    assert steady(estimate_figures(_estimate(base))["warnings"]) == [
        "gemini-3.1-pro-preview is a preview model; no retirement date announced"
    ]
    unknown = estimate_figures(
        _estimate({**base, "model_name": "my-model", "model_provider": "openai_compatible"})
    )
    assert any("my-model is not in the catalog" in w for w in unknown["warnings"])
    assert unknown["naive"]["cost_usd"] is None and unknown["cost_usd_at_most"] is None


def test_without_a_tokenizer_the_cached_prefixes_are_never_longer() -> None:
    from niah.models.tokenizer import get_tokenizer

    counted = _estimate(SMALL_GRID, tokenizer=get_tokenizer())
    by_bytes = _estimate(SMALL_GRID)
    assert [c.prompt_tokens for c in by_bytes.cells] == [c.prompt_tokens for c in counted.cells]
    for short, exact in zip(by_bytes.cells, counted.cells, strict=True):
        assert short.cached_tokens <= exact.cached_tokens
    assert any("no tokenizer" in note for note in by_bytes.notes)


def test_a_margin_says_the_samples_it_needs_and_what_this_grid_gives() -> None:
    grid = ("--model_name", "gemini-3.8-flash", "--context_lengths", "1000", "2000",
            "--document_depth_percents", "0", "50", "100", "--samples_per_cell", "4")  # fmt: skip
    text = niah("run", *grid, "--estimate", "--margin", "5", "--expected_score", "90")
    assert text.returncode == 0, text.stderr
    assert (
        "samples per point for a 95 % interval of ± 5 points: 385 samples at the worst case "
        "(a 50 % score); 139 samples at an expected 90 %"
    ) in text.stdout
    # 1.959964 x sqrt(0.9 x 0.1 / n) for n = 4, 12 and 24 samples.
    assert (
        "this grid, at 90 %: ± 29.4 points per point (4 samples), ± 17 per length (12), "
        "± 12 over the run (24)"
    ) in text.stdout
    data = niah("run", *grid, "--estimate", "--margin", "5", "--json")
    margin = json.loads(data.stdout)["margin"]
    assert margin["worst_case"]["samples_per_point"] == 385 and margin["expected"] is None
    assert margin["this_grid"]["margin_per_point"] == 49.0  # 1.959964 x 0.5 / 2
    refused = niah("run", *grid, "--margin", "5")
    assert refused.returncode == 2 and "--margin and --expected_score go with --estimate" in (
        refused.stderr
    )
    zero = niah("run", *grid, "--estimate", "--margin", "0")
    assert zero.returncode == 2 and "argument --margin: '0': give a margin" in zero.stderr
