"""A certify run's cells and certificate: the planner (``certify``) applied to a run.

A certify run keeps on its document how many samples each candidate length has been
given (``certify.samples``) and the plan it was admitted with (``certify.plan``: its
budgets and each length's price, so a replay after a price change or a settings change
decides as the rounds did); its cells follow from that alone. Sample ``k`` of a length
goes to a depth drawn from the grid's depths by a seeded hash (independent draws, so a
length's samples are independent right/wrong outcomes with its mean over depths as
their chance); its cell is that depth's next sample, named as any grid cell.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Mapping
from typing import Any

from niah.catalog.prices import prices_for
from niah.core.money.pricing import call_cost
from niah.core.prompts.answer_budget import call_budget
from niah.core.request.grid import Cell
from niah.core.request.spec import RunRequest
from niah.core.results.certify import (
    BASE_SAMPLES,
    MAX_SAMPLES,
    NOLIMA,
    NOLIMA_MAX_SAMPLES,
    ZONE,
    CertifyPlan,
    Progress,
    plan_progress,
)
from niah.core.results.certify_plan import DESIGN
from niah.core.results.certify_tests import (
    first_look,
    length_alphas,
    ruler_thresholds,
    samples_to_pass,
)

# The grid a certification is measured against: every length and depth, 5 samples each.
GRID_SAMPLES = 5
# The default budget: this share of that grid's model cost (or prompt tokens).
BUDGET_SHARE = 0.25
# A length whose calls keep failing (blocked, truncated, refused) is left open once at
# least this many of its samples, and more than a quarter of them, are unscored: not
# asked again forever.
UNSCORED_LIMIT = 8
UNSCORED_SHARE = 0.25


def grid_tokens(spec: RunRequest) -> int:
    """The prompt tokens of the run's grid with ``GRID_SAMPLES`` samples a point."""
    return GRID_SAMPLES * len(spec.depths()) * sum(spec.lengths())


def sample_usd(spec: RunRequest) -> dict[int, float] | None:
    """One prompt's model cost at each length; None for a model the catalog does not price.

    The catalog's price today at the run's tier (Flex or Priority PayGo bill at their own
    rates, so the budget counts what the calls are billed), its long-context rate
    included. A free model (the local one) is budgeted otherwise (``sample_seconds``).
    """
    tier = spec.call_tier()
    # Priced from the entry the request resolved: a plan is built by each admission
    # check, and a lookup per length each time made 9 to 25 lookups an admission.
    prices = prices_for(spec.model_name, entry=spec.catalog_model())
    priced = {n: call_cost(prices, n, 0, tier=tier) for n in spec.lengths()}
    if not all(cost.priced and cost.usd > 0 for cost in priced.values()):
        return None
    return {n: cost.usd for n, cost in priced.items()}


def sample_seconds(spec: RunRequest) -> dict[int, float] | None:
    """One sample's estimated model time at each length, for a model that costs its time.

    The local model has no price: what a call costs it is time, most of it the reply's
    where replies are long (a CPU writes a token about ten times slower than it reads
    one). Estimated from the catalog's measured speed (``CallSpeed``) with the call's
    whole output budget (a reply that ends sooner costs less). None where the catalog
    prices the model or knows no speed for it.
    """
    model = spec.catalog_model()
    if model is None or model.speed is None or sample_usd(spec) is not None:
        return None
    output = call_budget(spec, model=model).max_output_tokens
    return {n: model.speed.seconds(n, output) for n in spec.lengths()}


def grid_seconds(spec: RunRequest, seconds: Mapping[Any, float] | None = None) -> float | None:
    """The grid's estimated model time with ``GRID_SAMPLES`` a point (None: not timed)."""
    seconds = seconds if seconds is not None else sample_seconds(spec)
    if seconds is None:
        return None
    return GRID_SAMPLES * len(spec.depths()) * sum(float(s) for s in seconds.values())


def grid_usd(spec: RunRequest, usd: Mapping[Any, float] | None = None) -> float | None:
    """The prompts' model cost of the grid with ``GRID_SAMPLES`` a point (None: unpriced).

    ``usd``: one prompt's cost per length where the caller has it (a run's kept plan).
    """
    usd = usd if usd is not None else sample_usd(spec)
    if usd is None:
        return None
    return GRID_SAMPLES * len(spec.depths()) * sum(float(cost) for cost in usd.values())


def plan_record(spec: RunRequest, max_cells: int | None) -> dict[str, Any]:
    """The plan a certify run is admitted with, as its document keeps it.

    The budget is in dollars of model cost (the prompts') where the catalog prices the
    model: ``certify_max_usd``, else a quarter of the grid's; for the local model in
    model seconds (its cost is its time): ``certify_max_seconds``, else a quarter of the
    grid's estimated time (``sample_seconds``); for another unpriced model in prompt
    tokens, a quarter of the grid's. ``certify_max_tokens`` caps the prompt tokens
    besides. ``design`` and ``zone``: the planner's (``certify_plan``), kept so a run
    replays by the design it was admitted under.
    """
    usd = sample_usd(spec)
    grid = grid_usd(spec, usd)
    seconds = sample_seconds(spec) if usd is None else None
    budget_seconds = None
    tokens = spec.certify_max_tokens
    if grid is not None:
        budget = spec.certify_max_usd or BUDGET_SHARE * grid
    elif seconds is not None:
        budget = None
        budget_seconds = spec.certify_max_seconds or BUDGET_SHARE * (
            grid_seconds(spec, seconds) or 0.0
        )
    else:
        budget = None
        tokens = tokens or int(BUDGET_SHARE * grid_tokens(spec))
    return {
        "budget_usd": budget,
        "budget_seconds": budget_seconds,
        "max_tokens": tokens,
        "max_cells": max_cells,
        "sample_usd": {str(n): cost for n, cost in usd.items()} if usd is not None else None,
        "sample_seconds": {str(n): round(t, 6) for n, t in seconds.items()}
        if seconds is not None
        else None,
        "design": DESIGN,
        "zone": ZONE,
    }


def certify_plan(
    spec: RunRequest, max_cells: int | None = None, record: Mapping[str, Any] | None = None
) -> CertifyPlan:
    """The planner's settings: its lengths, threshold and budgets (``record``'s, if kept)."""
    kept = record if record is not None else plan_record(spec, max_cells)
    return CertifyPlan(
        lengths=tuple(spec.lengths()),
        threshold=spec.certify_threshold,
        rule=spec.rule(),
        # The base may take at most half the run's cells (NIAH_MAX_CELLS_PER_RUN; 500 by
        # default gives 250 samples and a wider band than the bench's 1,024).
        base_samples=min(BASE_SAMPLES, kept["max_cells"] // 2)
        if kept.get("max_cells")
        else BASE_SAMPLES,
        # Dollars where the model is priced, else model seconds where it is timed.
        budget=kept["budget_usd"] if kept["budget_usd"] is not None else kept.get("budget_seconds"),
        max_total_samples=kept["max_cells"],
        max_tokens=kept["max_tokens"],
        # A plan kept before design 2 (2026-12-05) has neither: it replays as it ran.
        design=int(kept.get("design", 1)),
        zone=float(kept.get("zone", 0.0)),
    )


def most_samples(spec: RunRequest, record: Mapping[str, Any]) -> dict[int, int]:
    """The most scored samples the planner gives each length under the plan ``record``.

    Every length at most ``max_samples``; under NoLiMa's rule the shortest (the base)
    ``base_samples``. Unscored samples are replaced beyond these (``certify_progress``).
    """
    plan = certify_plan(spec, record=record)
    most = dict.fromkeys(plan.lengths, plan.max_samples)
    if plan.rule == NOLIMA:
        most[plan.lengths[0]] = max(most[plan.lengths[0]], plan.base_samples)
    return most


def sample_cost(record: Mapping[str, Any]) -> Callable[[int], float]:
    """What the budget counts for one sample at a length: dollars, seconds, or tokens."""
    price = record.get("sample_usd") or record.get("sample_seconds")
    if price is None:
        return float
    return lambda length: float(price[str(length)])


def certify_cells(spec: RunRequest, samples: Mapping[int, int]) -> list[Cell]:
    """The cells of ``samples[length]`` samples at each length, in sample order."""
    return [
        cell for length in sorted(samples) for cell in length_cells(spec, length, samples[length])
    ]


def length_cells(spec: RunRequest, length: int, count: int) -> list[Cell]:
    """A length's first ``count`` samples: each at a depth drawn by a seeded hash."""
    depths = spec.depths()
    seen: dict[float, int] = {}
    cells = []
    for k in range(count):
        depth = depths[_hash(f"depth:{spec.seed}:{length}:{k}") % len(depths)]
        cells.append(Cell(length, depth, seen.get(depth, 0)))
        seen[depth] = seen.get(depth, 0) + 1
    return cells


# The most samples a certify run can ask of one (length, depth) point. Depths are
# drawn, so one point may take every sample of its length: the planner's most samples
# a length, and the unscored ones it replaces (at most a quarter of those asked, so a
# third more), with room to spare; under NoLiMa's rule, its base's samples at the
# shortest length, the most of any.
SAMPLES_PER_POINT = 2 * max(MAX_SAMPLES, NOLIMA_MAX_SAMPLES, BASE_SAMPLES)


def stored_samples(certify: Mapping[str, Any] | None) -> dict[int, int]:
    """The samples per length a certify run says it has asked for (``RunRecord.certify``)."""
    kept = (certify or {}).get("samples") or {}
    return {int(length): int(count) for length, count in kept.items()}


def outcome(spec: RunRequest, cell_id: str, score: float) -> float:
    """A sample's score as right (1) or wrong (0): a graded score by a seeded draw.

    A score of 0 or 1 is itself; a share ``x`` in between is right with chance ``x``
    (a uniform draw seeded by the run and the cell), which keeps the length's mean and
    makes every outcome right/wrong, as the always-valid tests need.
    """
    return 1.0 if _hash(f"round:{spec.seed}:{cell_id}") / 2**64 < score else 0.0


def certify_progress(
    spec: RunRequest,
    certify: Mapping[str, Any] | None,
    cells: list[dict[str, Any]],
    *,
    max_cells: int | None,
) -> tuple[Progress, dict[int, int]]:
    """Where the run's certification stands, and the samples per length it then asks for.

    ``certify``: the run's plan and samples so far (``RunRecord.certify``).

    Each length's outcomes in sample order, its unscored samples (failed, truncated) left
    out: the next round asks for as many more cells as it wants outcomes, so a failed
    call is replaced by a new sample, never counted as right or wrong; a length with
    ``UNSCORED_LIMIT`` unscored samples is asked no more.
    """
    record = kept_plan(spec, certify, max_cells)
    samples = stored_samples(certify)
    by_id = {str(c["cell_id"]): c for c in cells}
    scores: dict[int, list[float]] = {}
    unscored: set[int] = set()
    for length, count in samples.items():
        stored = [by_id.get(cell.cell_id) for cell in length_cells(spec, length, count)]
        scored = [c for c in stored if c and c.get("task_score") is not None]
        scores[length] = [outcome(spec, str(c["cell_id"]), float(c["task_score"])) for c in scored]
        missed = sum(1 for c in stored if c and c.get("task_score") is None)
        if missed >= UNSCORED_LIMIT and missed > UNSCORED_SHARE * count:
            unscored.add(length)
    plan = certify_plan(spec, record=record)
    progress = plan_progress(plan, scores, sample_cost(record), failing=frozenset(unscored))
    if progress.next_round is not None:
        wanted = progress.next_round
        scored_count = len(scores.get(wanted.length, []))
        asked = samples.get(wanted.length, 0) + (wanted.samples - scored_count)
        samples = samples | {wanted.length: asked}
    return progress, samples


def kept_plan(
    spec: RunRequest, certify: Mapping[str, Any] | None, max_cells: int | None
) -> dict[str, Any]:
    """The plan the run was admitted with (``plan_record`` for a run that kept none)."""
    return (certify or {}).get("plan") or plan_record(spec, max_cells)


def first_look_size(spec: RunRequest, record: Mapping[str, Any], length: int) -> int:
    """The samples of a first look at ``length`` under the plan ``record`` (by its price)."""
    plan = certify_plan(spec, record=record)
    cost = sample_cost(record)
    alpha = length_alphas(plan, cost)[plan.lengths.index(length)]
    return first_look(plan, length, cost, alpha, ruler_thresholds(plan))


def first_samples(spec: RunRequest, record: Mapping[str, Any]) -> dict[int, int]:
    """A new certify run's first round under the plan ``record`` (it looks at nothing)."""
    return certify_progress(spec, {"plan": record}, [], max_cells=None)[1]


def _hash(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def unreachable_warning(spec: RunRequest, max_cells: int | None = None) -> str | None:
    """Where the budget cannot pass any length even if every answer is right; else None.

    On a small grid a quarter of its cost can buy fewer samples than an always-valid
    test needs to pass one length (about 30 right in a row at 85.6 %): the certificate
    can then at best end "none, budget spent". Said before anything is paid, with the
    least budget that passes the cheapest length (``niah plan --mode certify`` plans
    further). RULER's rule only (NoLiMa's base is checked at admission).
    """
    if not spec.is_certify() or spec.rule() == NOLIMA:
        return None
    record = plan_record(spec, max_cells)
    plan, cost = certify_plan(spec, record=record), sample_cost(record)
    field, budget, shown, step = _binding(spec, record)
    price = cost if field != "certify_max_tokens" else float
    need = {n: samples_to_pass(plan, cost, n) for n in plan.lengths}
    cheapest = min(plan.lengths, key=lambda n: need[n] * price(n))
    if need[cheapest] * price(cheapest) <= budget + 1e-9:
        return None
    # Rounded up to what the field is written in, so the figure named is enough.
    least = math.ceil(need[cheapest] * price(cheapest) / step - 1e-9) * step
    given = field if getattr(spec, field) is not None else "the default budget"
    return (
        f"{field}: {given} ({shown(budget)}) cannot pass any length: passing the cheapest, "
        f"{cheapest:,} tokens, takes {need[cheapest]} right answers in a row "
        f"({shown(least)}), so the certificate can at best end 'none, budget spent'; set "
        f"{field} to at least {shown(least)} (`niah plan --mode certify` plans further)"
    )


def _binding(
    spec: RunRequest, record: Mapping[str, Any]
) -> tuple[str, float, Callable[[float], str], float]:
    """The budget a certification is held to: its field, amount, how it is written, step."""
    if record["budget_usd"] is not None:
        return "certify_max_usd", float(record["budget_usd"]), lambda v: f"${v:,.4f}", 1e-4
    if record["budget_seconds"] is not None:
        seconds = float(record["budget_seconds"])
        return "certify_max_seconds", seconds, lambda v: f"{v:,.0f} s", 1.0
    tokens = float(record["max_tokens"])
    return "certify_max_tokens", tokens, lambda v: f"{v:,.0f} prompt tokens", 1.0
