"""``niah plan --mode certify``'s figures (``niah.cli.plan_certify``) as text."""

from __future__ import annotations

from typing import Any

from niah.cli.estimate import certify_lines
from niah.cli.output import count


def certificate_plan_lines(planned: dict[str, Any]) -> list[str]:
    """The plan's lines: the same figures ``--json`` prints."""
    money = _money(planned["unit"])
    rows, reach = planned["lengths"], planned["to_reach"]
    lengths = [row["length"] for row in rows]
    cells = planned["max_cells"]
    lines = [
        f"certify plan: {planned['model_name']}, tier {planned['tier']}, "
        f"{count(len(lengths), 'length')} ({lengths[0]:,} to {lengths[-1]:,} tokens), "
        f"threshold {planned['threshold']:g} % give or take {planned['zone']:g} points (RULER's "
        "rule)" + (f", at most {cells:,} samples (NIAH_MAX_CELLS_PER_RUN)" if cells else ""),
        *certify_lines(planned["certify"]),
        f"assumed: {_assumed(planned)}; true effective length {_length(reach['length'])}, the "
        f"zone allows {', '.join(_length(n) for n in planned['truth']['allowed'])}",
        "to certify each length as the answer (pass it, fail the next), samples and their cost:",
    ]
    width = max(len(f"{n:,}") for n in lengths)
    lines.append(
        f"  {'length':>{width}}  {'a sample':>10}  {'assumed':>7}  "
        f"{'an oracle (fixed tests)':<28}the service's tests"
    )
    for row, following in zip(rows, [*rows[1:], None], strict=True):
        shares = (row["assumed_score"], following["assumed_score"] if following else None)
        fixed = _tests(row["fixed"], shares, planned, planned["fixed_most"], money)
        service = _tests(row["service"], shares, planned, planned["max_samples"], money)
        lines.append(
            f"  {row['length']:>{width},}  {money(row['sample_cost'], 4):>10}  "
            f"{row['assumed_score']:>5g} %  {fixed:<28}{service}"
        )
    oracle = planned["oracle_usd"]
    lines.append(
        "an oracle that knows the curve decides it for "
        + (money(oracle) if oracle is not None else "no sum (no allowed answer is decidable)")
        + " (fixed exact one-sided tests at 5 %, split over an answer's two)"
    )
    found, budget = planned["forecast"], planned["budget"]
    lines.append(
        f"the service, on answers right at exactly these shares: {_sentence(planned, found)}; "
        f"{count(found['samples'], 'sample')} in {count(found['rounds'], 'round')}, "
        f"{money(found['cost'])} spent of the budget's {money(budget)}"
    )
    unlimited = planned["forecast_without_cell_limit"]
    if (unlimited["length"], unlimited["below"]) != (found["length"], found["below"]):
        lines.append(
            f"the run's cell limit ({planned['max_cells']:,}) binds first: without it the "
            f"forecast is {_sentence(planned, unlimited)}; {money(unlimited['cost'])} spent, "
            f"{count(unlimited['samples'], 'sample')}"
        )
    lines += _target_lines(planned, money)
    lines += [f"note: {note}" for note in planned["notes"]]
    return lines


def _target_lines(planned: dict[str, Any], money: Any) -> list[str]:
    """What the true effective length's tests take, and the budget that reaches it."""
    reach, budget = planned["to_reach"], planned["budget"]
    row = reach["row"]
    lines = []
    if row is not None:
        service, share = row["service"], row["assumed_score"]
        said = f"passing {row['length']:,} takes " + _run_of(service["pass"], share, right=True)
        if "fail_next" in service:
            following = planned["lengths"][planned["lengths"].index(row) + 1]
            said += f", failing {following['length']:,} " + _run_of(
                service["fail_next"], following["assumed_score"], right=False
            )
        cost = service["cost"]
        lines.append(
            said
            + (f", {money(cost)} of the budget's {money(budget)}" if cost is not None else "")
            + " (the service's tests)"
        )
    option = {
        "budget_usd": "--certify_max_usd",
        "budget_seconds": "--certify_max_seconds",
    }.get(reach["budget_key"], "--certify_max_tokens")
    if reach["reached"]:
        lines.append(f"the budget reaches {_length(reach['length'])}")
    elif reach.get("needed") is None:
        limits = [f"the run's {planned['max_cells']:,} cells"] if planned["max_cells"] else []
        if not option.endswith("tokens") and planned["certify"]["budget_tokens"]:
            tokens = planned["certify"]["budget_tokens"]
            limits.append(f"{tokens:,} prompt tokens (--certify_max_tokens)")
        lines.append(
            f"no budget up to {money(reach['search_most'])} (twice the grid's)"
            + (f", within {' and '.join(limits)}," if limits else "")
            + f" reaches {_length(reach['length'])} on these answers"
        )
    else:
        needed = reach["needed"]
        shown = (
            f"{needed['budget']:.{_cents(needed['budget'])}f}"
            if option.endswith("usd")
            else f"{needed['budget']:.0f}"
        )
        lines.append(
            f"to reach {_length(reach['length'])}: {option} {shown} (its forecast: "
            f"{_sentence(planned, needed)}; {money(needed['cost'])} spent, "
            f"{count(needed['samples'], 'sample')}); the forecast is not monotone in the budget, "
            "so this budget reaches it (checked) but is not always the least"
        )
    return lines


def _assumed(planned: dict[str, Any]) -> str:
    """The assumed curve in words."""
    assumed = planned["assumed"]
    scores, top, longest = assumed["scores"], assumed["expected_score"], assumed["effective_length"]
    if top is None:
        return "right " + ", ".join(f"{s:g}" for s in scores) + " % of the time, length by length"
    shown = "right on every sample" if top == 100 else f"right {top:g} % of the time"
    if longest is not None:
        return f"{shown} up to {longest:,.0f} tokens, never beyond"
    return f"{shown} at every length"


def _run_of(samples: int | None, share: float, *, right: bool) -> str:
    """``28 right answers in a row``, ``40 samples right 95 % of the time``, or never."""
    if samples is None:
        return "more samples than a length is given (the service leaves it open)"
    if share == (100 if right else 0):
        return f"{count(samples, 'right answer' if right else 'wrong answer')} in a row"
    return f"{count(samples, 'sample')} right {share:g} % of the time"


def _tests(
    tests: dict[str, Any],
    shares: tuple[float, float | None],
    planned: dict[str, Any],
    most: int,
    money: Any,
) -> str:
    """``14 + 3 = $56.01``: an answer's tests' samples and their price.

    A test that cannot decide says why: ``never`` (the assumed share is on the other
    side of the zone's edge) or ``over N`` (not within ``most`` samples).
    """
    low, high = planned["threshold"] - planned["zone"], planned["threshold"] + planned["zone"]
    both = [(tests["pass"], shares[0] < low)]
    if "fail_next" in tests:
        both.append((tests["fail_next"], shares[1] is not None and shares[1] >= high))
    samples = " + ".join(
        f"{n:,}" if n is not None else "never" if never else f"over {most:,}" for n, never in both
    )
    return samples + (f" = {money(tests['cost'])}" if tests["cost"] is not None else "")


def _sentence(planned: dict[str, Any], found: dict[str, Any]) -> str:
    """The forecast certificate as the run's report would say it."""
    from niah.core.results.effective import effective_length_text

    threshold = f"threshold {planned['threshold']:g} % give or take {planned['zone']:g} points"
    return effective_length_text(
        found | {"certified": True, "threshold_text": f"{threshold}, rule ruler"}
    )


def _length(length: int | None) -> str:
    return "below the shortest" if length is None else f"{length:,}"


def _cents(value: float) -> int:
    """Digits a dollar figure is shown with: cents from $10 up, else four."""
    return 2 if abs(value) >= 10 else 4


def _money(unit: str) -> Any:
    """Dollars (to the cent, or ``digits``), model seconds, or prompt tokens."""
    if unit == "usd":
        return lambda value, digits=None: f"${value:,.{digits or _cents(value)}f}"
    if unit == "seconds":
        # A sample's estimate to the tenth of a second; a budget or a sum to the second.
        return lambda value, digits=0: f"{value:,.{min(digits, 1)}f} s"
    return lambda value, digits=0: f"{value:,.0f} tokens"
