"""Gemini as Google serves it today (issue 33).

Retired models refused with Google's named replacement, deprecated and short-term ones
warned of, temperature recorded as sent, a call priced at its own day's rate, and
``niah models``.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest
import time_machine

from niah.catalog.availability import current_gemini_models, lifecycle_notes, retired_refusal
from niah.catalog.lifecycle import Lifecycle, lifecycle_warning
from niah.catalog.models import CATALOG, IGNORED_TEMPERATURE, find_model, temperature_record
from niah.catalog.prices import NO_PRICE_REASONS, next_price_change, prices_for
from niah.core.request.spec import RunRequest
from niah.errors import RequestError
from niah.models.providers.gemini_request import generation_for, request_body
from niah.service.runs.admission_checks import check_budget
from niah.service.runs.dispatch import run_record
from niah.service.runs.model_checks import model_warnings
from tests.fakes import MemoryBlobs, ScriptedProvider
from tests.unit.test_cli import niah
from tests.unit.test_work import dispatch_task, run_cell

TODAY = dt.date(2026, 11, 27)


def test_a_retired_2_5_model_is_refused_naming_its_date_and_googles_replacement() -> None:
    with pytest.raises(RequestError) as caught:
        check_budget(RunRequest(model_name="gemini-2.5-flash", context_lengths=[1000]))
    assert caught.value.field == "model_name"
    assert caught.value.message == (
        "gemini-2.5-flash was retired on Vertex AI on 2026-10-20; Google names "
        "gemini-3.8-flash or gemini-3.5-flash-lite instead; to call it anyway (a project "
        "that still has access), set allow_retired"
    )
    # The judge too, under its own field.
    with pytest.raises(RequestError) as judge:
        check_budget(
            RunRequest(
                model_name="gemini-3.8-flash",
                context_lengths=[1000],
                scorer="judge",
                evaluator_model_name="gemini-2.5-pro",
            )
        )
    assert judge.value.field == "evaluator_model_name"
    assert "Google names gemini-3.8-flash or gemini-3.5-flash instead" in judge.value.message


def test_every_retired_catalog_model_is_refused_and_every_served_one_is_not() -> None:
    for info in CATALOG.values():
        refusal = retired_refusal(info.name, TODAY)
        if info.provider == "gemini" and info.lifecycle.retired(TODAY):
            assert refusal is not None and refusal.startswith(f"{info.name} was retired")
        else:
            assert refusal is None, info.name
    # A pinned version is its family's.
    assert retired_refusal("gemini-2.5-pro-002", TODAY) == retired_refusal("gemini-2.5-pro", TODAY)


def test_a_replacement_itself_retired_names_what_is_served_now() -> None:
    refusal = retired_refusal("gemini-1.5-flash", TODAY)
    assert refusal is not None
    assert refusal.startswith(
        "gemini-1.5-flash was retired on Vertex AI on 2025-09-24; Google names "
        "gemini-2.5-flash instead (all since retired; current: gemini-4-argon,"
    )
    assert "gemini-2.5" not in refusal.split("current:")[1]


def test_an_earliest_retirement_date_or_later_retires_nothing_by_itself() -> None:
    life = Lifecycle("GA", dt.date(2026, 5, 19), dt.date(2027, 5, 19), or_later=True)
    assert not life.retired(dt.date(2027, 6, 1))
    firm = Lifecycle("GA", dt.date(2026, 5, 19), dt.date(2027, 5, 19))
    assert not firm.retired(dt.date(2027, 5, 18)) and firm.retired(dt.date(2027, 5, 19))
    assert "gemini-3.5-flash" in current_gemini_models(dt.date(2027, 6, 1))


def test_allow_retired_runs_it_and_the_run_records_why() -> None:
    spec = RunRequest(model_name="gemini-2.5-flash", context_lengths=[1000], allow_retired=True)
    check_budget(spec)  # accepted
    note = (
        "gemini-2.5-flash was retired on Vertex AI on 2026-10-20; Google names "
        "gemini-3.8-flash or gemini-3.5-flash-lite instead; called anyway (allow_retired)"
    )
    assert lifecycle_notes(spec.model_name, spec.evaluator_model_name) == [note]
    assert note in model_warnings(spec)
    record = run_record("run-x", spec, "gs://b/h/").to_document()
    assert record["model_notes"] == [note]
    assert record["spec"]["allow_retired"] is True
    # It measures nothing: the same run with or without it.
    assert spec.run_id("h") == spec.model_copy(update={"allow_retired": False}).run_id("h")


def test_the_cli_estimate_refuses_a_retired_model_and_the_opt_out_prices_it() -> None:
    refused = niah("run", "--model_name", "gemini-2.5-flash", "--context_lengths", "1000",
                   "--estimate")  # fmt: skip
    assert refused.returncode == 2
    assert refused.stderr.strip() == (
        "niah: --model_name: gemini-2.5-flash was retired on Vertex AI on 2026-10-20; Google "
        "names gemini-3.8-flash or gemini-3.5-flash-lite instead; to call it anyway (a "
        "project that still has access), set --allow_retired"
    )
    allowed = niah("run", "--model_name", "gemini-2.5-flash", "--context_lengths", "1000",
                   "--allow_retired", "--estimate")  # fmt: skip
    assert allowed.returncode == 0, allowed.stderr
    assert "cost at most: $" in allowed.stdout


@pytest.mark.parametrize(
    ("model", "warning"),
    [
        (
            "gemini-4-hydrogen",
            "gemini-4-hydrogen is a short-term GA model; no retirement date announced; Google "
            "retires it on at least 45 days' notice",
        ),
        (
            "gemini-3.7-flash",
            "gemini-3.7-flash is deprecated, routed to gemini-3.8-flash; no retirement date "
            "announced; Google names gemini-3.8-flash instead",
        ),
        (
            "gemini-3.5-flash",
            "gemini-3.5-flash: Vertex AI retires it on 2027-05-19 or later; the Gemini API "
            "routes it to gemini-3.6-flash",
        ),
        (
            "gemini-3.1-pro-preview",
            "gemini-3.1-pro-preview is a preview model; no retirement date announced",
        ),
    ],
)
def test_a_deprecated_short_term_or_preview_model_is_accepted_with_its_warning(
    model: str, warning: str
) -> None:
    spec = RunRequest(model_name=model, context_lengths=[1000])
    check_budget(spec)
    assert model_warnings(spec) == [warning]


def test_a_served_ga_model_has_no_warning_and_a_near_firm_date_has_one() -> None:
    assert model_warnings(RunRequest(model_name="gemini-3.8-flash", context_lengths=[1000])) == []
    life = Lifecycle("GA", dt.date(2026, 1, 1), dt.date(2027, 1, 31), replacements=("x-2",))
    assert lifecycle_warning("x-1", life, TODAY) == (
        "x-1: Vertex AI retires it on 2027-01-31; Google names x-2 instead"
    )
    assert lifecycle_warning("x-1", life, dt.date(2026, 6, 1)) is None


def test_a_model_that_ignores_temperature_is_sent_none_and_recorded_as_the_default() -> None:
    recorded = temperature_record(find_model("gemini-3.6-flash"))
    assert recorded == IGNORED_TEMPERATURE == "model default (ignored)"
    body = request_body("p", None, generation_for("gemini-4-argon", max_output_tokens=100))
    assert "temperature" not in body["generationConfig"]
    kept = request_body("p", None, generation_for("gemini-3.8-flash", max_output_tokens=100))
    assert kept["generationConfig"]["temperature"] == 1.0
    spec = RunRequest(model_name="gemini-4-neon", context_lengths=[1000])
    assert run_record("run-y", spec, "gs://b/h/").to_document()["call_settings"]["temperature"] == (
        "model default (ignored)"
    )


def test_every_served_catalog_model_has_a_price_or_a_stated_reason() -> None:
    for name in current_gemini_models(TODAY):
        priced = prices_for(name, dt.datetime(2026, 11, 27, 12, tzinfo=dt.UTC)) is not None
        assert priced != (name in NO_PRICE_REASONS), name


def test_the_next_price_change_is_the_librarys_dated_rate() -> None:
    change = next_price_change("gemini-4-argon", TODAY)
    assert change is not None
    day, rates = change
    assert (day, rates.input, rates.output) == (dt.date(2026, 12, 1), 4.0, 20.0)
    assert next_price_change("gemini-4-argon", dt.date(2026, 12, 1)) is None
    flash = next_price_change("gemini-3.8-flash", TODAY)
    assert flash is not None and flash[0] == dt.date(2027, 1, 1)


def test_calls_that_straddle_a_price_change_are_each_priced_at_their_days_rate(
    essay_blobs: MemoryBlobs,
) -> None:
    """Argon's introductory rates end on 2026-11-30.

    A call before midnight pays $2/$10, a call after it $4/$20, whatever day the run began.
    """
    with time_machine.travel(dt.datetime(2026, 11, 30, 23, 58, tzinfo=dt.UTC), tick=False):
        world = dispatch_task(
            essay_blobs, model_name="gemini-4-argon", context_lengths=[300, 600],
            document_depth_percents=[50],
        )  # fmt: skip
    provider = ScriptedProvider(lambda prompt: " 42.", model_name="gemini-4-argon")
    when = {
        0: dt.datetime(2026, 11, 30, 23, 59, 30, tzinfo=dt.UTC),
        1: dt.datetime(2026, 12, 1, 0, 0, 30, tzinfo=dt.UTC),
    }
    for index, task in enumerate(world["tasks"]):
        with time_machine.travel(when[index], tick=False):
            assert run_cell(world, task, provider) == "answered"
    cells = {c["cell_id"]: c for c in world["store"].list_cells(world["run_id"])}
    costs = []
    for index, task in enumerate(world["tasks"]):
        cell = cells[task.cell_id]
        usage: dict[str, Any] = cell["usage"]
        prompt, output = usage["prompt_token_count"], usage["candidates_token_count"]
        rate_in, rate_out = (2.0, 10.0) if index == 0 else (4.0, 20.0)
        assert cell["cost_usd"] == round((prompt * rate_in + output * rate_out) / 1e6, 8)
        costs.append(cell["cost_usd"])
    run = world["store"].get_run(world["run_id"])
    assert run["totals"]["cost_usd"] == pytest.approx(sum(costs), abs=1e-8)


def test_niah_models_lists_every_catalog_model_with_its_columns() -> None:
    table = niah("models")
    assert table.returncode == 0, table.stderr
    header, *rows = table.stdout.splitlines()
    for column in (
        "model",
        "stage",
        "input",
        "output",
        "thinking",
        "temperature",
        "$/1M in/out",
        "next price",
        "released",
        "retires",
        "instead",
        "source",
    ):
        assert column in header
    notes = ("unknown price:", "tokenizer:")
    listed = [row.split()[0] for row in rows if not row.startswith(notes)]
    assert listed == list(CATALOG)
    parsed = json.loads(niah("models", "--json").stdout)
    assert [row["model"] for row in parsed] == list(CATALOG)
    by_name = {row["model"]: row for row in parsed}
    flash = by_name["gemini-2.5-flash"]
    assert (flash["stage"], flash["retires"], flash["replacements"]) == (
        "Retired",
        "2026-10-20",
        ["gemini-3.8-flash", "gemini-3.5-flash-lite"],
    )
    assert by_name["gemini-4-carbon"]["prices"] is None
    assert by_name["gemini-4-carbon"]["no_price_reason"] == NO_PRICE_REASONS["gemini-4-carbon"]
    assert by_name["gemini-4-carbon-cyber-permissive"]["thinking"] == (
        "levels low/medium/high (default high)"
    )
    assert by_name["gemini-3.6-flash"]["temperature"] == "model default (ignored)"


def test_the_estimate_warns_of_a_price_change_within_60_days_and_names_the_lifecycle() -> None:
    from niah.cli.estimate import estimate_figures

    grid = {"model_name": "gemini-4-argon", "context_lengths": [1000],
            "document_depth_percents": [50]}  # fmt: skip
    change = (
        "gemini-4-argon's rates change on 2026-12-01 (to $4 input, $20 output per 1M "
        "tokens): calls from that day are priced at them (this estimate is at today's)"
    )
    with time_machine.travel(dt.datetime(2026, 11, 27, 12, tzinfo=dt.UTC), tick=False):
        assert estimate_figures(grid)["warnings"] == [change]
    with time_machine.travel(dt.datetime(2026, 9, 1, 12, tzinfo=dt.UTC), tick=False):
        assert estimate_figures(grid)["warnings"] == []  # 91 days ahead: not yet
    with time_machine.travel(dt.datetime(2026, 11, 27, 12, tzinfo=dt.UTC), tick=False):
        hydrogen = estimate_figures(grid | {"model_name": "gemini-4-hydrogen"})["warnings"]
    assert hydrogen[0] == (
        "gemini-4-hydrogen is a short-term GA model; no retirement date announced; Google "
        "retires it on at least 45 days' notice"
    )
