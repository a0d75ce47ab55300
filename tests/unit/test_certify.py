"""Issue 37: certifying an effective length adaptively, against a model with a known curve.

The planner (``niah.core.results.certify``) is replayed here over answers drawn from
``KnownCurve`` (the Vertex stand-in's curve), as the service replays it over stored
cells: the certificate must land within one candidate of the truth, never spend past
its budget, and plan the same rounds however often it is asked.
"""

from __future__ import annotations

import json
import math

import pytest

from niah.core.request.spec import RunRequest
from niah.core.results.certificate import certificate_summary, service_interval
from niah.core.results.certify import (
    CertifyPlan,
    Progress,
    plan_progress,
    round_alpha,
    samples_to_pass,
)
from niah.core.results.certify_run import certify_cells, certify_progress, grid_tokens
from niah.core.results.summary import summarize
from niah_devtools.standin_curve import KnownCurve

pytestmark = pytest.mark.unit

LENGTHS = tuple(round(1000 * 1000 ** (i / 10)) for i in range(11))  # 1k-1M, log-spaced
GRID_TOKENS = 55 * sum(LENGTHS)  # 11 depths x 5 samples at every length


def certify(plan: CertifyPlan, curve: KnownCurve) -> tuple[Progress, int]:
    """Run ``plan`` to its certificate, drawing each asked sample from ``curve``."""
    scores: dict[int, list[float]] = {}
    rounds = 0
    while True:
        progress = plan_progress(plan, scores, service_interval)
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


def test_the_rounds_alphas_sum_to_alpha_and_never_more() -> None:
    partial = sum(round_alpha(t) for t in range(1, 100_001))
    assert partial < 0.05
    assert partial == pytest.approx(0.05, abs=1e-6)
    assert round_alpha(1) == pytest.approx(0.05 * 6 / math.pi**2)


def test_all_right_samples_pass_exactly_at_samples_to_pass_and_not_one_before() -> None:
    for t in (1, 3, 7):
        n = samples_to_pass(t, 85.6)
        level = 1 - round_alpha(t)
        at = service_interval([1.0] * n, level)
        before = service_interval([1.0] * (n - 1), level)
        assert at is not None and before is not None
        assert at[0] >= 85.6 > before[0]


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
        asked = plan_progress(plan, scores, service_interval).next_round
        assert asked is not None
        drawn = [
            float(curve.answers_right(f"{asked.length}:{k}", asked.length))
            for k in range(asked.samples)
        ]
        scores[asked.length] = drawn
        again = plan_progress(plan, scores, service_interval)
        # Answers past what a length was asked for change no verdict already reached.
        padded = {n: [*s, 0.0, 0.0] for n, s in scores.items()}
        looks = plan_progress(plan, padded, service_interval).looks
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
    # Bisection down to the shortest, each length failed by its first look of 8.
    assert [look.samples for look in found.looks] == [8] * rounds
    assert [look.length for look in found.looks] == [31623, 3981, 1995, 1000]
    assert found.cost < 0.01 * GRID_TOKENS


def certify_spec(**extra: object) -> RunRequest:
    return RunRequest.model_validate(
        {
            "mode": "certify",
            "context_lengths": [500, 1000, 2000, 4000, 8000],
            "document_depth_percents": [0, 50, 100],
            "certify_max_tokens": 400_000,
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


def test_the_run_replays_to_its_certificate_and_every_surface_says_it() -> None:
    """The service's path: cells as stored, unscored ones replaced by fresh samples."""
    spec = certify_spec()
    curve = KnownCurve(3000, 0.1)  # right 100 % at 1,000, 98.3 % at 2,000, 5.3 % at 4,000
    run = {"run_id": "run-c", "model": "m", "spec": spec.model_dump(mode="json")}
    stored: dict[str, dict] = {}
    while True:
        progress, samples = certify_progress(
            spec, run, list(stored.values()), max_cells=500, interval_of=service_interval
        )
        if progress.next_round is None:
            break
        run["certify"] = {"samples": {str(n): c for n, c in samples.items()}}
        for cell in certify_cells(spec, samples):
            if cell.cell_id in stored:
                continue
            failed = len(stored) % 17 == 3  # now and then a call fails: unscored
            right = curve.answers_right(cell.cell_id, cell.context_length)
            stored[cell.cell_id] = {
                "cell_id": cell.cell_id,
                "context_length": cell.context_length,
                "depth_percent": cell.depth_percent,
                "status": "failed" if failed else "answered",
                "outcome": "unscored" if failed else ("correct" if right else "wrong"),
                "task_score": None if failed else float(right),
            }
    certificate = certificate_summary(run, list(stored.values()), max_cells=500)
    assert certificate is not None
    assert certificate["length"] == curve.effective_length(spec.lengths(), 85.6) == 2000
    assert certificate["determined"] and certificate["below"] == 4000
    assert certificate["tokens"] <= 400_000
    summary = summarize(run, list(stored.values()))
    effective = summary["measures"]["effective_length"]
    assert effective["text"] == (
        "2,000 tokens, 95 % confident (2,000 passes and 4,000 fails; threshold 85.6 %, certified)"
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
    from niah.core.results.certify_run import certify_plan, grid_usd, sample_cost

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
    assert sample_cost(spec)(300_000) == per_sample[300_000]


def test_a_dollar_budget_for_a_model_without_a_price_is_refused_naming_the_fix() -> None:
    from niah.errors import RequestError
    from niah.service.admission_checks import check_certify_budget

    with pytest.raises(RequestError) as refused:
        check_certify_budget(certify_spec(certify_max_usd=5.0), 10**9)
    assert refused.value.field == "certify_max_usd"
    assert "give certify_max_tokens instead" in str(refused.value)  # the local model: free
    with pytest.raises(RequestError) as over:
        check_certify_budget(certify_spec(certify_max_tokens=2_000_000), 1_000_000)
    assert over.value.field == "certify_max_tokens"


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
