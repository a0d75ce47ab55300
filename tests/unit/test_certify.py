"""Issue 37: certifying an effective length adaptively, against a model with a known curve.

The planner (``niah.core.results.certify``) is replayed here over answers drawn from
``KnownCurve`` (the Vertex stand-in's curve), as the service replays it over stored
cells: the certificate must land within one candidate of the truth, never spend past
its budget, and plan the same rounds however often it is asked.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from niah.catalog.tiers import Tier
from niah.core.request.spec import RunRequest
from niah.core.results.certificate import certificate_summary
from niah.core.results.certify import (
    BASE_SAMPLES,
    NOLIMA,
    CertifyPlan,
    Progress,
    plan_progress,
    samples_to_pass,
)
from niah.core.results.certify_run import (
    certify_cells,
    certify_progress,
    grid_tokens,
    stored_samples,
)
from niah.core.results.confidence_sequence import bounds, shows_above, shows_below
from niah.core.results.summary import summarize
from niah.core.runs import RunRecord
from niah_devtools.standin_curve import KnownCurve
from tests import HEAVY
from tests.fakes import run_records

pytestmark = pytest.mark.unit

LENGTHS = tuple(round(1000 * 1000 ** (i / 10)) for i in range(11))  # 1k-1M, log-spaced
GRID_TOKENS = 55 * sum(LENGTHS)  # 11 depths x 5 samples at every length


def certify(plan: CertifyPlan, curve: KnownCurve) -> tuple[Progress, int]:
    """Run ``plan`` to its certificate, drawing each asked sample from ``curve``."""
    scores: dict[int, list[float]] = {}
    rounds = 0
    while True:
        progress = plan_progress(plan, scores)
        if progress.certificate is not None:
            return progress, rounds
        asked = progress.next_round
        assert asked is not None
        have = scores.setdefault(asked.length, [])
        have += [
            float(curve.answers_right(f"{asked.length}:{k}", asked.length))
            for k in range(len(have), asked.samples)
        ]
        rounds += 1


@HEAVY  # 1.2 million looks at a few thousand distinct (right, n): about 3 s
def test_each_side_errs_at_most_alpha_of_the_time_however_often_looked() -> None:
    """Ville's inequality, checked where it is tightest: the true share on the threshold.

    2,000 runs of 300 samples of a share of 0.9, looked at after every one: "above 0.9"
    and "below 0.9" are each shown in at most 5 % of the runs. A look depends only on
    (right, n), so each pair is asked of the shipped functions once and remembered.
    """
    import random
    from functools import cache

    above_at = cache(lambda right, n: shows_above(right, n, 0.9, 0.05))
    below_at = cache(lambda right, n: shows_below(right, n, 0.9, 0.05))
    draw = random.Random(7)
    above = below = 0
    for _ in range(2000):
        right, seen_above, seen_below = 0, False, False
        for n in range(1, 301):
            right += draw.random() < 0.9
            seen_above = seen_above or above_at(right, n)
            seen_below = seen_below or below_at(right, n)
            if seen_above and seen_below:
                break
        above, below = above + seen_above, below + seen_below
    assert above / 2000 <= 0.05 and below / 2000 <= 0.05


def test_each_bound_is_wider_than_wilsons_at_the_same_one_sided_level() -> None:
    """Wilson's two-sided 90 % interval has one-sided 95 % bounds; the sequence's are wider."""
    from niah.core.results.uncertainty import wilson_bounds

    for right, n in ((8, 8), (30, 32), (5, 40), (100, 120)):
        low, high = bounds(right, n, 0.05)
        wilson = wilson_bounds(right, n, 0.90)
        assert low <= wilson[0] and high >= wilson[1]
        assert low <= right / n <= high


def test_all_right_samples_pass_exactly_at_samples_to_pass_and_not_one_before() -> None:
    """Design 1 (runs admitted before 2026-12-05): 48 in a row, against 85.6 % itself."""
    plan = CertifyPlan(LENGTHS, 85.6, design=1)
    n = samples_to_pass(plan)
    alpha = 0.05 / len(LENGTHS)
    assert shows_above(n, n, 0.856, alpha) and not shows_above(n - 1, n - 1, 0.856, alpha)
    assert n == 48  # what docs/certify.md says it cost over 11 candidate lengths


def test_design_2_passes_an_always_right_1m_length_in_28_against_the_zone() -> None:
    """Issue 54: against 85.6 - 5 %, at 1M's share of alpha (its price's), 28 in a row.

    Dollars on Gemini 3.1 Pro: 28 at 1M are $112, over the bench's $103 budget, so a
    model right on every sample is certified "at least 501,187" (31 in a row there).
    """
    from niah.core.money.pricing import cost_of
    from niah.core.results.certify_tests import length_alphas

    price = {n: cost_of("gemini-3.1-pro-preview", n, 20).usd for n in LENGTHS}
    plan = CertifyPlan(LENGTHS, 85.6, budget=103.0)
    alpha = length_alphas(plan, price.__getitem__)[-1]
    n = samples_to_pass(plan, price.__getitem__)
    assert shows_above(n, n, 0.806, alpha) and not shows_above(n - 1, n - 1, 0.806, alpha)
    assert (n, samples_to_pass(plan, price.__getitem__, 501_187)) == (28, 31)


def test_the_one_sided_mixture_is_the_integral_it_is_defined_by() -> None:
    """M+ and M- against a midpoint sum of the integrals (200,000 steps), to 1e-6."""
    import math

    from niah.core.results.confidence_sequence import log_above, log_below

    def integral(s: int, f: int, low: float, high: float) -> float:
        step = (high - low) / 200_000
        total = 0.0
        for i in range(200_000):
            q = low + (i + 0.5) * step
            total += q**s * (1 - q) ** f
        return total * step

    for s, f, p in ((8, 0, 0.856), (48, 0, 0.856), (29, 4, 0.856), (4, 29, 0.3)):
        above = integral(s, f, p, 1) / ((1 - p) * p**s * (1 - p) ** f)
        below = integral(s, f, 0, p) / (p * p**s * (1 - p) ** f)
        assert math.isclose(log_above(s, s + f, p), math.log(above), abs_tol=1e-6)
        assert math.isclose(log_below(s, s + f, p), math.log(below), abs_tol=1e-6)


@pytest.mark.parametrize(
    ("midpoint", "width"), [(64_000, 0.3), (250_000, 0.3), (16_000, 0.5), (4_000, 0.4)]
)
def test_the_certificate_is_within_one_length_of_the_truth_at_a_quarter_of_the_grid(
    midpoint: int, width: float
) -> None:
    plan = CertifyPlan(LENGTHS, 85.6, budget=0.25 * GRID_TOKENS)
    for seed in range(3):
        curve = KnownCurve(midpoint, width, seed=seed)
        truth = curve.effective_length(LENGTHS, 85.6)
        assert truth is not None
        progress, _ = certify(plan, curve)
        found = progress.certificate
        assert found is not None and found.length is not None
        assert abs(LENGTHS.index(found.length) - LENGTHS.index(truth)) <= 1, (seed, found)
        assert found.cost <= 0.25 * GRID_TOKENS  # never past its budget
        # What it says it spent is what its looks asked for.
        last = {look.length: look.samples for look in found.looks}
        assert found.cost == found.tokens == sum(length * n for length, n in last.items())
        assert found.samples == sum(last.values())


def test_the_replay_plans_the_same_round_whatever_else_is_stored() -> None:
    """A step delivered twice, or after more answers came in, asks for the same round."""
    plan = CertifyPlan(LENGTHS, 85.6, budget=0.25 * GRID_TOKENS)
    curve = KnownCurve(64_000, 0.3)
    scores: dict[int, list[float]] = {}
    for _ in range(4):
        asked = plan_progress(plan, scores).next_round
        assert asked is not None
        drawn = [
            float(curve.answers_right(f"{asked.length}:{k}", asked.length))
            for k in range(asked.samples)
        ]
        scores[asked.length] = drawn
        again = plan_progress(plan, scores)
        # Answers past what a length was asked for change no verdict already reached.
        padded = {n: [*s, 0.0, 0.0] for n, s in scores.items()}
        looks = plan_progress(plan, padded).looks
        assert looks[: len(again.looks)] == again.looks


def test_a_certificate_is_determined_only_when_its_lengths_are_neighbours() -> None:
    plan = CertifyPlan(LENGTHS, 85.6, budget=0.25 * GRID_TOKENS)
    for midpoint in (2_000, 30_000, 120_000, 700_000):
        found = certify(plan, KnownCurve(midpoint, 0.3))[0].certificate
        assert found is not None
        index = {n: i for i, n in enumerate(LENGTHS)}
        low = index[found.length] if found.length is not None else -1
        high = index[found.below] if found.below is not None else len(LENGTHS)
        assert found.determined == (high == low + 1)
        assert found.open_lengths == LENGTHS[low + 1 : high]


def test_a_model_that_misses_everywhere_is_certified_below_the_shortest_cheaply() -> None:
    plan = CertifyPlan(LENGTHS, 85.6, budget=0.25 * GRID_TOKENS)
    progress, rounds = certify(plan, KnownCurve(10, 0.1))  # right on nothing
    found = progress.certificate
    assert found is not None
    assert (found.length, found.below, found.determined) == (None, 1000, True)
    # Bisection down to the shortest, each length failed by its first look of 8 (of two
    # middles, 1,000 and 1,995, the shorter is asked: failing, it settles both).
    assert [look.samples for look in found.looks] == [8] * rounds
    assert [look.length for look in found.looks] == [31623, 3981, 1000]
    assert found.cost < 0.01 * GRID_TOKENS


@pytest.mark.parametrize(("midpoint", "width", "top"), [(16_000, 0.5, 0.9), (64_000, 0.3, 0.9)])
def test_nolimas_rule_certifies_the_length_of_85_percent_of_the_models_own_base(
    midpoint: int, width: float, top: float
) -> None:
    """A model at most about 90 % right: NoLiMa's threshold is another length's.

    85 % of its base (about 77 %) is another length than RULER's 85.6 %, and the
    certificate lands within one of it.
    """
    for seed in range(3):
        curve = KnownCurve(midpoint, width, top=top, seed=seed)
        truth = curve.effective_length(LENGTHS, 85 * curve.right_share(LENGTHS[0]))
        assert truth is not None and truth != curve.effective_length(LENGTHS, 85.6)
        plan = CertifyPlan(LENGTHS, 85.6, budget=0.25 * GRID_TOKENS, rule=NOLIMA)
        progress, _ = certify(plan, curve)
        found = progress.certificate
        assert found is not None and found.length is not None
        assert abs(LENGTHS.index(found.length) - LENGTHS.index(truth)) <= 1, (seed, found)
        # The base first, at the shortest; the band is 85 % of its bounds, around the truth.
        base = found.looks[0]
        assert (base.length, base.samples, base.verdict) == (1000, BASE_SAMPLES, "base")
        assert found.pass_at == pytest.approx(0.85 * base.high)
        assert found.fail_at == pytest.approx(0.85 * base.low)
        assert found.fail_at <= 85 * curve.right_share(1000) <= found.pass_at


def test_nolimas_rule_is_refused_without_a_short_length_or_with_a_threshold() -> None:
    from niah.errors import RequestError
    from niah.service.runs.request_body import parse_request

    for name in ("effective_length_rule", "certify_rule"):  # the rule's name, and its old one
        base = {"mode": "certify", name: "nolima", "document_depth_percents": [50]}
        with pytest.raises(RequestError) as short:
            parse_request(base | {"context_lengths": [2000, 4000]})
        assert short.value.field == "effective_length_rule"
        assert "add a length of 1,000 or less to context_lengths" in short.value.message
        with pytest.raises(RequestError) as threshold:
            parse_request(base | {"context_lengths": [1000, 4000], "certify_threshold": 80})
        assert threshold.value.field == "certify_threshold"
    # Spelt out, RULER's rule names the same run as leaving it out.
    plain = {"mode": "certify", "context_lengths": [1000, 4000]}
    for name in ("effective_length_rule", "certify_rule"):
        assert parse_request(plain | {name: "ruler"}).run_id() == parse_request(plain).run_id()


def test_certify_runs_named_by_certify_rule_keep_their_ids() -> None:
    """The rule's new name names no run anew: IDs computed before the rename (2026-12-05)."""
    nolima = {
        "mode": "certify",
        "context_lengths": [1000, 4000, 16000],
        "document_depth_percents": [50],
    }
    for name in ("effective_length_rule", "certify_rule"):
        spec = RunRequest.model_validate(nolima | {name: "nolima"})
        assert spec.effective_length_rule == "nolima" and spec.rule() == "nolima"
        assert spec.run_id() == "run-9bd9360ad1fe57e1"
        assert spec.run_id("abc") == "run-fe051aa646fe45b9"
    assert RunRequest.model_validate(nolima).run_id() == "run-6449c5ecc5945d90"
    grid = {"context_lengths": [1000, 4000, 16000], "document_depth_percents": [50]}
    assert RunRequest.model_validate(grid).run_id() == "run-21686dbd071d4a3f"
    # A stored certify run's spec says certify_rule: it reads back as the rule.
    stored = RunRequest.model_validate(nolima | {"certify_rule": "nolima"}).model_dump()
    assert stored["effective_length_rule"] == "nolima" and "certify_rule" not in stored
    with pytest.raises(ValueError, match="effective_length_rule alone"):
        RunRequest.model_validate(
            nolima | {"certify_rule": "nolima", "effective_length_rule": "ruler"}
        )


def certify_spec(**extra: object) -> RunRequest:
    return RunRequest.model_validate(
        {
            "mode": "certify",
            "context_lengths": [500, 1000, 2000, 4000, 8000],
            "document_depth_percents": [0, 50, 100],
            "certify_max_tokens": 400_000,
            "certify_max_seconds": 2_000,  # the local model's budget is its time
        }
        | extra
    )


def test_a_certify_runs_cells_cover_the_depths_in_turn_with_grid_style_ids() -> None:
    spec = certify_spec()
    cells = certify_cells(spec, {2000: 7})
    assert [c.context_length for c in cells] == [2000] * 7
    depths = [c.depth_percent for c in cells]
    assert sorted(depths[:6]) == [0, 0, 50, 50, 100, 100]  # each depth once per turn
    assert len({c.cell_id for c in cells}) == 7
    assert all(c.cell_id.startswith("L00002000-D") for c in cells)
    assert grid_tokens(spec) == 5 * 3 * 15_500


def drive(
    spec: RunRequest, run: dict, curve: KnownCurve, fail_every: int | None = None
) -> dict[str, dict]:
    """The service's loop in one process: plan a round, answer its cells, until done.

    ``fail_every``: every so many stored cells, a call that failed (unscored).
    """
    stored: dict[str, dict] = {}
    while True:
        progress, samples = certify_progress(
            spec, run.get("certify"), list(stored.values()), max_cells=500
        )
        if progress.next_round is None:
            return stored
        run["certify"] = {"samples": {str(n): c for n, c in samples.items()}}
        for cell in certify_cells(spec, samples):
            if cell.cell_id in stored:
                continue
            failed = fail_every is not None and len(stored) % fail_every == 3
            right = curve.answers_right(cell.cell_id, cell.context_length)
            stored[cell.cell_id] = {
                "cell_id": cell.cell_id,
                "context_length": cell.context_length,
                "depth_percent": cell.depth_percent,
                "status": "failed" if failed else "answered",
                "outcome": "unscored" if failed else ("correct" if right else "wrong"),
                "task_score": None if failed else float(right),
            }


def test_the_run_replays_to_its_certificate_and_every_surface_says_it() -> None:
    """The service's path: cells as stored, unscored ones replaced by fresh samples."""
    spec = certify_spec()
    curve = KnownCurve(3000, 0.1)  # right 100 % at 1,000, 98.3 % at 2,000, 5.3 % at 4,000
    run = {"run_id": "run-c", "model": "m", "spec": spec.model_dump(mode="json")}
    stored = drive(spec, run, curve, fail_every=17)  # now and then a call fails: unscored
    certificate = certificate_summary(
        RunRecord.from_document(run), list(stored.values()), max_cells=500
    )
    assert certificate is not None
    assert certificate["length"] == curve.effective_length(spec.lengths(), 85.6) == 2000
    assert certificate["determined"] and certificate["below"] == 4000
    assert certificate["tokens"] <= 400_000
    summary = summarize(RunRecord.from_document(run), list(stored.values()))
    effective = summary["measures"]["effective_length"]
    assert effective["text"] == (
        "2,000 tokens, 95 % confident (2,000 passes and 4,000 fails; threshold 85.6 % "
        "give or take 5 points, rule ruler, certified)"
    )
    assert summary["certificate"]["length"] == 2000


def test_certify_refuses_what_it_cannot_do_naming_the_field() -> None:
    from pydantic import ValidationError

    for extra, field in (
        ({"execution": "batch", "model_name": "gemini-2.5-flash"}, "mode"),
        ({"task": "mrcr"}, "mode"),
        ({"samples_per_cell": 3}, "samples_per_cell"),
        ({"context_lengths": [1000]}, "context_lengths"),
    ):
        with pytest.raises(ValidationError) as refused:
            certify_spec(**extra)
        assert f"{field}: " in str(refused.value), refused.value


def test_mode_grid_names_the_same_run_as_no_mode() -> None:
    plain = RunRequest.model_validate({"context_lengths": [1000, 2000]})
    spelt = RunRequest.model_validate({"context_lengths": [1000, 2000], "mode": "grid"})
    assert plain.run_id() == spelt.run_id()
    # Certify options change nothing of a grid run's ID.
    tuned = RunRequest.model_validate({"context_lengths": [1000, 2000], "certify_threshold": 50})
    assert tuned.run_id() == plain.run_id()
    assert certify_spec().run_id() != certify_spec(certify_threshold=90).run_id()


def test_a_priced_model_is_budgeted_in_dollars_at_its_long_context_rate() -> None:
    from niah.core.money.pricing import cost_of
    from niah.core.results.certify_run import certify_plan, grid_usd, plan_record, sample_cost

    spec = RunRequest.model_validate(
        {
            "mode": "certify",
            "model_name": "gemini-3.1-pro-preview",
            "context_lengths": [100_000, 300_000],
            "document_depth_percents": [0, 100],
        }
    )
    per_sample = {n: cost_of("gemini-3.1-pro-preview", n, 0).usd for n in (100_000, 300_000)}
    # Above 200,000 tokens the prompt costs more per token (Google's long-context tier).
    assert per_sample[300_000] > 3 * per_sample[100_000]
    assert grid_usd(spec) == pytest.approx(5 * 2 * sum(per_sample.values()))
    plan = certify_plan(spec)
    assert plan.budget == pytest.approx(0.25 * 5 * 2 * sum(per_sample.values()))
    assert plan.max_tokens is None
    assert sample_cost(plan_record(spec, None))(300_000) == per_sample[300_000]


def test_a_budget_that_cannot_pass_any_length_is_said_before_the_run_with_the_least_that_can() -> (
    None
):
    """A quarter of a small grid can buy fewer samples than passing one length takes."""
    from niah.core.results.certify_run import unreachable_warning
    from niah.service.runs.model_checks import model_warnings
    from tests.cli_inprocess import niah

    fields = {
        "model_name": "gemma-3-270m-local",
        "task": "multi_value",
        "context_lengths": [250, 500, 1000, 2000, 4000],
        "document_depth_percents": [10, 50, 90],
        "certify_max_tokens": None,
        "certify_max_seconds": None,
    }
    starved = unreachable_warning(certify_spec(**fields))
    assert starved is not None
    assert starved.startswith("certify_max_seconds: the default budget (201 s) cannot pass")
    assert "250 tokens, takes 31 right answers in a row (247 s)" in starved
    assert starved in model_warnings(certify_spec(**fields))  # the dispatcher's 202 says it
    words = ["--mode", "certify", "--model_name", "gemma-3-270m-local", "--task", "multi_value",
             "--context_lengths", "250", "500", "1000", "2000", "4000",
             "--document_depth_percents", "10", "50", "90", "--estimate"]  # fmt: skip
    assert f"warning: {starved}" in niah("run", *words).stdout
    # The least it names passes the cheapest length; a second less does not.
    least = float(starved.split("at least ")[1].split(" s")[0])
    assert unreachable_warning(certify_spec(**fields | {"certify_max_seconds": least})) is None
    assert unreachable_warning(certify_spec(**fields | {"certify_max_seconds": least - 1}))
    # A grid run, and a certification whose budget can pass a length, are not warned.
    assert unreachable_warning(certify_spec(**fields | {"mode": "grid"})) is None
    assert unreachable_warning(certify_spec()) is None


@pytest.mark.parametrize("tier", ["flex", "priority"])
def test_a_tier_s_certification_is_budgeted_at_the_tier_s_rates(tier: Tier) -> None:
    """The calls bill at the tier's rate, so the budget counts that rate, not standard's."""
    from niah.core.money.pricing import cost_of
    from niah.core.results.certify_run import grid_usd, plan_record, sample_cost

    model = "gemini-3.8-flash" if tier == "flex" else "gemini-3.1-pro-preview"
    fields = {"mode": "certify", "model_name": model, "context_lengths": [1000, 300_000]}
    standard = RunRequest.model_validate(fields)
    tiered = RunRequest.model_validate(fields | {"tier": tier})
    record = plan_record(tiered, None)
    for n in (1000, 300_000):
        rate = cost_of(model, n, 0, tier=tier).usd
        assert sample_cost(record)(n) == rate != cost_of(model, n, 0).usd
    at_tier, at_standard = grid_usd(tiered), grid_usd(standard)
    assert at_tier is not None and at_standard is not None
    assert record["budget_usd"] == 0.25 * at_tier != 0.25 * at_standard


def test_a_dollar_budget_for_a_model_without_a_price_is_refused_naming_the_fix() -> None:
    from niah.errors import RequestError
    from niah.service.runs.admission_checks import check_certify_budget

    with pytest.raises(RequestError) as refused:
        check_certify_budget(certify_spec(certify_max_usd=5.0), 10**9)
    assert refused.value.field == "certify_max_usd"
    # The local model is free, and its cost is its time.
    assert "give certify_max_seconds (its cost is its time) or certify_max_tokens instead" in str(
        refused.value
    )
    with pytest.raises(RequestError) as over:
        check_certify_budget(certify_spec(certify_max_tokens=2_000_000), 1_000_000)
    assert over.value.field == "certify_max_tokens"


def test_the_local_model_is_budgeted_in_model_seconds_a_quarter_of_the_grid_s() -> None:
    """Its cost is its time, most of it the reply's (issue 54).

    Each sample is priced by the catalog's measured speed: its prompt and its whole
    output budget.
    """
    from niah.catalog.models import find_model
    from niah.core.prompts.answer_budget import call_budget
    from niah.core.results.certify_run import certify_plan, grid_seconds, plan_record, sample_cost
    from niah.errors import RequestError
    from niah.service.runs.admission_checks import check_certify_budget

    spec = certify_spec(certify_max_tokens=None, certify_max_seconds=None, task="multi_value")
    speed = find_model(spec.model_name).speed
    output = call_budget(spec).max_output_tokens
    assert output == 356  # multi_value's four values and the words around them
    record = plan_record(spec, 500)
    assert record["budget_usd"] is None and record["max_tokens"] is None
    cost = sample_cost(record)
    for n in spec.lengths():
        assert cost(n) == round(n / 470 + output / 48, 6) == round(speed.seconds(n, output), 6)
    grid = 5 * 3 * sum(cost(n) for n in spec.lengths())
    assert grid_seconds(spec) == pytest.approx(grid, abs=1e-4)
    assert record["budget_seconds"] == pytest.approx(grid / 4, abs=1e-4)
    assert certify_plan(spec, record=record).budget == record["budget_seconds"]
    # Given, it is the budget; too small for a first look, refused naming the least.
    given = certify_spec(certify_max_tokens=None, certify_max_seconds=99.0, task="multi_value")
    assert plan_record(given, 500)["budget_seconds"] == 99.0
    with pytest.raises(RequestError) as small:
        check_certify_budget(
            certify_spec(certify_max_tokens=None, certify_max_seconds=1.0, task="multi_value"),
            10**9,
        )
    assert small.value.field == "certify_max_seconds"
    least = int(str(small.value).rsplit("at least ", 1)[1])
    check_certify_budget(
        certify_spec(certify_max_tokens=None, certify_max_seconds=least, task="multi_value"),
        10**9,
    )
    # A model the catalog prices or does not time has no budget in seconds.
    for name, instead in (
        ("gemini-3.8-flash", "certify_max_usd"),
        ("my-model", "certify_max_tokens"),
    ):
        with pytest.raises(RequestError) as untimed:
            check_certify_budget(certify_spec(model_name=name), 10**9)
        assert untimed.value.field == "certify_max_seconds"
        assert str(untimed.value).endswith(f"give {instead} instead")


def test_niah_certify_is_a_run_in_certify_mode_and_its_estimate_says_its_ceiling() -> None:
    from tests.cli_inprocess import niah

    words = ("--model_name", "gemini-3.1-pro-preview", "--context_lengths", "1000", "300000")
    estimate = niah("certify", *words, "--estimate", "--json")
    assert estimate.returncode == 0, estimate.stderr
    figures = json.loads(estimate.stdout)["certify"]
    assert figures["budget_usd"] == pytest.approx(0.25 * figures["grid_usd"])
    assert figures["grid_tokens"] == 5 * 15 * 301_000  # 15 depths by default
    text = niah("certify", *words, "--estimate").stdout
    assert f"certify (threshold 85.6 %): at most ${figures['budget_usd']:.4f}" in text
    # The same request as `niah run --mode certify`, and not as a grid run.
    same = niah("run", "--mode", "certify", *words, "--estimate", "--json")
    assert json.loads(same.stdout)["certify"] == figures
    grid = json.loads(niah("run", *words, "--estimate", "--json").stdout)
    assert "certify" not in grid


def test_a_length_whose_calls_keep_failing_is_asked_no_more_and_the_run_ends() -> None:
    """Every call at 4,000 fails: replaced up to UNSCORED_LIMIT, then left open."""
    from niah.core.results.certify_run import UNSCORED_LIMIT

    spec = certify_spec()
    run: dict[str, Any] = {"run_id": "run-f", "model": "m", "spec": spec.model_dump(mode="json")}
    stored: dict[str, dict] = {}
    for _ in range(100):
        progress, samples = certify_progress(
            spec, run.get("certify"), list(stored.values()), max_cells=500
        )
        if progress.next_round is None:
            break
        run["certify"] = {"samples": {str(n): c for n, c in samples.items()}}
        for cell in certify_cells(spec, samples):
            # 8,000 always wrong: passing it would settle 4,000 without asking it (since
            # the zone, design 2, 8,000 all right passes within the budget).
            score = {4000: None, 8000: 0.0}.get(cell.context_length, 1.0)
            stored.setdefault(cell.cell_id, {"cell_id": cell.cell_id, "task_score": score})
    found = progress.certificate
    assert found is not None and found.reason == "failing" and 4000 in found.open_lengths
    # An unscored sample is never counted right or wrong: 4,000 was never looked at.
    assert [look for look in found.looks if look.length == 4000] == []
    asked_at_4000 = stored_samples(run.get("certify")).get(4000, 0)
    # First looks of 3 (design 2: 8 samples at 4,000 are 8 % of the 400,000-token
    # budget), each replaced while it fails: stopped at the first count past the limit.
    assert asked_at_4000 == 9 and asked_at_4000 - 3 < UNSCORED_LIMIT <= asked_at_4000


def test_compare_shows_a_certify_runs_certificate_as_its_own_report_does() -> None:
    from niah.core.results.comparison import compare_runs, render_comparison_page

    spec = certify_spec()
    curve = KnownCurve(3000, 0.1)
    run = {"run_id": "run-c", "model": "m", "spec": spec.model_dump(mode="json")}
    cells = list(drive(spec, run, curve).values())
    said = summarize(RunRecord.from_document(run), cells)["measures"]["effective_length"]["text"]
    assert said.startswith("2,000 tokens, 95 % confident")
    twin = run | {"run_id": "run-d"}
    page = render_comparison_page(compare_runs(run_records([(run, cells), (twin, cells)])))
    assert page.count(said.replace("'", "&#39;")) == 2


def test_a_round_s_cells_are_published_by_length_and_depth_as_a_grid_s_are() -> None:
    """A round is sent in the order that lets the model's prompt cache serve it.

    A length's samples at one depth share their prompt up to the needle. The cells are
    the planner's, whatever the order.
    """
    from niah.service.messages import cell_messages

    spec = certify_spec()
    samples = {1000: 12, 4000: 8}
    run = RunRecord.from_document(
        {"run_id": "run-o", "spec": spec.model_dump(mode="json"), "certify": {"samples": samples}}
    )
    sent = [(m["context_length"], m["depth_percent"], m["sample"]) for m in cell_messages(run)]
    assert sent == sorted(sent)
    planned = certify_cells(spec, samples)
    assert sorted(sent) == sorted((c.context_length, c.depth_percent, c.sample) for c in planned)
    assert [c.depth_percent for c in planned] != sorted(c.depth_percent for c in planned)


def test_a_budget_too_small_for_a_first_look_or_a_threshold_of_100_is_refused() -> None:
    from pydantic import ValidationError

    from niah.errors import RequestError
    from niah.service.runs.admission_checks import check_certify_budget

    # A model with neither a price nor a measured speed is budgeted in prompt tokens.
    untimed = {"model_name": "my-model", "certify_max_seconds": None}
    with pytest.raises(RequestError) as refused:
        check_certify_budget(certify_spec(**untimed, certify_max_tokens=1000), 10**9)
    assert refused.value.field == "certify_max_tokens"
    # 3 samples, not 8: 8 at 2,000 tokens would be more than 4 % of the budget, so the
    # first look is the fewest that, all wrong, fail 2,000 (design 2, issue 54).
    assert "cannot pay for a first look (3 samples at 2,000 tokens: 6,000)" in str(refused.value)
    assert "set certify_max_tokens to at least 6,000" in str(refused.value)
    check_certify_budget(certify_spec(**untimed, certify_max_tokens=6000), 10**9)  # as named
    with pytest.raises(ValidationError, match="certify_threshold"):
        certify_spec(certify_threshold=100)


def test_a_priced_models_budget_too_small_is_refused_naming_certify_max_usd() -> None:
    """A priced model's budget is in dollars: the refusal names that field (issue 51).

    The default budget (a quarter of the grid's) of a one-depth grid cannot pay for
    NoLiMa's base; it was refused naming ``certify_max_tokens``, which the run never set.
    """
    from niah.core.results.certify_run import plan_record
    from niah.errors import RequestError
    from niah.service.runs.admission_checks import check_certify_budget

    priced = {
        "model_name": "gemini-3.8-flash",
        "context_lengths": [1000, 2000],
        "document_depth_percents": [50],
        "certify_rule": "nolima",
        "certify_max_tokens": None,
        "certify_max_seconds": None,
    }
    for extra in ({}, {"certify_max_usd": 0.001}):
        spec = certify_spec(**priced | extra)
        with pytest.raises(RequestError) as refused:
            check_certify_budget(spec, 10**9)
        assert refused.value.field == "certify_max_usd"
        assert "certify_max_tokens" not in str(refused.value)
        # The amount it names is exactly what the base needs: given it, the run is admitted.
        plan = plan_record(spec, 500)
        needs = 250 * float(plan["sample_usd"]["1000"])  # NIAH_MAX_CELLS_PER_RUN 500: 250
        assert f"set certify_max_usd to at least ${needs:,.4f}" in str(refused.value)
        check_certify_budget(certify_spec(**priced | {"certify_max_usd": needs}), 10**9)
    # A token cap that alone refuses is the field named, even for a priced model.
    with pytest.raises(RequestError) as capped:
        check_certify_budget(
            certify_spec(**priced | {"certify_max_usd": 1000.0, "certify_max_tokens": 5000}), 10**9
        )
    assert capped.value.field == "certify_max_tokens"
