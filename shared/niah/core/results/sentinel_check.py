"""Did the model behind a sentinel change? Its run weighed against the sentinel's baseline.

A sentinel asks the same request again on a schedule (``niah.service.sentinel.check``). Each
run's score is weighed against a fixed baseline by a sequential test whose false alarms
a year are stated and held (``niah.core.results.sentinel_watch``): the state it carries
from run to run (the baseline, the statistic) is kept in each run's check and read by
the next run's. The run is flagged when the test sees a fall (it then says so once: an
unpinned sentinel starts a new baseline there), or when the model that answered is not
the one that answered the run before (each reply's ``modelVersion``,
``niah.core.results.served_models``). "Unchanged" is said only when the run is shown
within ± the margin of the baseline. Runs with the same request key
(``RunRequest.request_key``) answer the same prompts: the check also keeps the paired
test against the run before (``niah.core.results.paired``) for a reader, not as a flag.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from niah.core.results.paired import paired_comparison
from niah.core.results.paired_text import points_text
from niah.core.results.sentinel_watch import (
    BASELINE_RUNS,
    WatchSettings,
    difference,
    watch_step,
)
from niah.core.results.served_models import served_versions, versions_text
from niah.core.results.uncertainty import figure
from niah.core.runs import ListedRun, RunRecord

# The run checked, and an earlier run of its sentinel (as listed): each with its cells.
Run = tuple[RunRecord, Sequence[dict[str, Any]]]
Earlier = tuple[ListedRun, Sequence[dict[str, Any]]]


def run_score(cells: Sequence[dict[str, Any]]) -> tuple[float, int]:
    """A run's score for its sentinel: the sum of task scores, and every sample asked.

    A sample with no score (failed, blocked, cut off) counts 0: calls that start failing
    are a change too.
    """
    return sum(float(c.get("task_score") or 0.0) for c in cells), len(cells)


def sentinel_check(
    sentinel: str,
    current: Run,
    previous: Earlier | None,
    *,
    watch: WatchSettings,
    other_request: ListedRun | None = None,
    pinned: Earlier | None = None,
) -> dict[str, Any]:
    """The check of ``current`` (run, cells); JSON for the run.

    ``previous``: the sentinel's latest complete run of the same request key scheduled
    before this one (its check carries the test's state), or None: then the first run,
    or, when ``other_request`` (the latest earlier run, of another request) is given, a
    new baseline. ``pinned``: the run the user pinned as the baseline (same request).
    """
    run, cells = current
    versions = served_versions(list(cells))
    right, samples = run_score(cells)
    baseline, statistic, why = _baseline(sentinel, run.run_id, previous, other_request, pinned)
    step = watch_step(
        (baseline["right"], baseline["samples"], len(baseline["runs"])),
        statistic,
        (right, samples),
        settings=watch,
        pinned=baseline["pinned"] is not None,
    )
    alarm = bool(step["alarm"])
    weighed = bool(baseline["runs"]) and samples > 0
    state = {
        "right": right,
        "samples": samples,
        "share": round(100 * right / samples, 2) if samples else None,
        "compared_with": _compared(baseline, float(step["floor"])) if weighed else None,
        "difference": difference(
            right, samples, baseline["right"], baseline["samples"], watch.margin_points
        )
        if weighed and baseline["samples"]
        else None,
        "evidence": float(step["evidence"]),
        "alarm": alarm,
        "statistic": float(step["statistic"]),
        "baseline": _next_baseline(baseline, step, run.run_id, alarm),
        **watch.as_dict(),
    }
    check: dict[str, Any] = {
        "sentinel": sentinel,
        "scheduled_at": run.spec.scheduled_at,
        "model_versions": versions,
        "watch": state,
    }
    reasons = [_fall(state, watch)] if alarm else []
    if previous is None:
        return check | {
            "previous_run_id": None,
            "flagged": alarm,
            "reasons": reasons,
            "text": why or "",
        }
    before_run, before_cells = previous
    before_versions = served_versions(list(before_cells))
    paired = paired_comparison((before_run.run_id, list(before_cells)), (run.run_id, list(cells)))
    # A reply that names no version (the local model) says nothing either way.
    if versions and before_versions and set(versions) != set(before_versions):
        reasons.append(
            f"model version changed: {versions_text(before_versions)} before, "
            f"{versions_text(versions)} now"
        )
    same = "; the same model version" if versions and before_versions else ""
    if reasons:
        text = "changed: " + "; ".join(reasons)
    elif state["compared_with"] is None:  # a baseline starts here: nothing to weigh it by
        text = why + same
    else:
        text = (why + "; " if why else "") + _verdict(state, watch) + same
    return check | {
        "previous_run_id": before_run.run_id,
        "previous_scheduled_at": _when(before_run),
        "previous_model_versions": before_versions,
        "paired": paired.overall.as_dict() if paired.overall else None,
        "flagged": bool(reasons),
        "reasons": reasons,
        "text": text,
    }


def _baseline(
    sentinel: str,
    run_id: str,
    previous: Earlier | None,
    other_request: ListedRun | None,
    pinned: Earlier | None,
) -> tuple[dict[str, Any], float, str]:
    """The baseline this run is weighed against, the statistic so far, and why it is new.

    Carried on from the run before's check; a pin (new, or a run of its own) replaces it.
    """
    carried = previous[0].watch if previous else {}
    before = carried.get("baseline") or {}
    empty = {"runs": [], "right": 0.0, "samples": 0, "pinned": None}
    if pinned is not None:
        pin_id = pinned[0].run_id
        if pin_id == run_id:
            return empty | {"pinned": pin_id}, 0.0, "the pinned baseline run"
        if before.get("pinned") == pin_id:
            return before, float(carried.get("statistic") or 0.0), ""
        right, samples = run_score(pinned[1])
        found = {"runs": [pin_id], "right": right, "samples": samples, "pinned": pin_id}
        return found, 0.0, f"weighed against run {pin_id}, the pinned baseline"
    if previous is None:
        if other_request is not None:
            return (
                empty,
                0.0,
                (
                    f"the sentinel's request changed since run {other_request.run_id} "
                    f"({_when(other_request)}): this run starts a new baseline, not compared"
                ),
            )
        return (
            empty,
            0.0,
            (
                f"first run of sentinel {sentinel}: the first of its baseline (its first "
                f"{BASELINE_RUNS} runs), nothing before it to compare with"
            ),
        )
    if not before.get("runs") or before.get("pinned"):
        why = "the pin was lifted" if before.get("pinned") else "no earlier check to go on"
        return empty, 0.0, f"{why}: this run starts a new baseline"
    return before, float(carried.get("statistic") or 0.0), ""


def _next_baseline(
    baseline: dict[str, Any], step: dict[str, Any], run_id: str, alarm: bool
) -> dict[str, Any]:
    """The baseline the next run is weighed against (this run added, or starting one)."""
    runs = int(step["baseline_runs"])
    if runs == 1 and (not baseline["runs"] or (alarm and not baseline["pinned"])):
        ids = [run_id]  # a baseline starts here
    else:
        ids = (baseline["runs"] + [run_id])[:runs]
    return {
        "runs": ids,
        "right": float(step["baseline_right"]),
        "samples": int(step["baseline_samples"]),
        "pinned": baseline["pinned"],
    }


def _compared(baseline: dict[str, Any], floor: float) -> dict[str, Any]:
    """The baseline a run was weighed against: its runs, share and floor (percent)."""
    return {
        "runs": list(baseline["runs"]),
        "share": round(100 * baseline["right"] / baseline["samples"], 2),
        "floor": round(100 * floor, 2),
        "pinned": baseline["pinned"],
    }


def _against(state: dict[str, Any]) -> str:
    """The run's share and the baseline's: "95 % now, the baseline 96.2 % (3 runs)"."""
    base = state["compared_with"]
    count = len(base["runs"])
    runs = f"{count} run{'s' * (count != 1)}"
    over = f"run {base['runs'][0]}, pinned" if base["pinned"] else runs
    return f"{figure(state['share'])} % now, the baseline {figure(base['share'])} % ({over})"


def _interval(state: dict[str, Any]) -> str:
    found = state["difference"]
    low, high = found["interval"]
    bounds = f"{points_text(low)} to {points_text(high)}"
    return f"{points_text(found['effect'])} points (90 %: {bounds})"


def _evidence(state: dict[str, Any], watch: WatchSettings) -> str:
    """The test's statistic and where it flags: "evidence of a fall 0.12, flagged at 365"."""
    rate = watch.false_alarms_per_year
    return (
        f"evidence of a fall {state['evidence']:.3g}, flagged at {watch.threshold:,.0f} "
        f"(at most {rate:g} false alarm{'s' * (rate != 1)} a year)"
    )


def _fall(state: dict[str, Any], watch: WatchSettings) -> str:
    """The reason a fall flags the run."""
    restart = "" if state["compared_with"]["pinned"] else "; a new baseline starts here"
    return f"score fell: {_interval(state)}, {_against(state)}; {_evidence(state, watch)}{restart}"


def _verdict(state: dict[str, Any], watch: WatchSettings) -> str:
    """What a run that raised no alarm says: unchanged within ± margin, or not shown."""
    margin = f"± {watch.margin_points:g} points"
    said = {
        "unchanged": f"unchanged (within {margin} of the baseline)",
        "undecided": f"no fall flagged, nor shown within {margin} of the baseline",
        "rose": f"rose beyond {margin} (a rise is not flagged: a sentinel watches for falls)",
        "fell": f"below the baseline by more than {margin}, not yet flagged",
    }[state["difference"]["verdict"]]
    return f"{said}: {_interval(state)}, {_against(state)}; {_evidence(state, watch)}"


def _when(run: ListedRun) -> str:
    return run.scheduled_at or "time not recorded"


def earlier_runs(
    runs: Sequence[ListedRun], scheduled_at: str, *, complete: str = "complete"
) -> list[ListedRun]:
    """Of a sentinel's runs, the complete ones due before ``scheduled_at``, latest first.

    Times are RFC 3339 in UTC to the second (``firing_time``), so they sort as text.
    """
    before = [
        run for run in runs if run.status == complete and (run.scheduled_at or "") < scheduled_at
    ]
    return sorted(before, key=lambda run: str(run.scheduled_at), reverse=True)


def previous_run(
    runs: Sequence[ListedRun],
    scheduled_at: str,
    key: str | None,
    *,
    complete: str = "complete",
) -> tuple[ListedRun | None, ListedRun | None]:
    """The latest complete earlier run of the same request key; and the latest of any."""
    earlier = earlier_runs(runs, scheduled_at, complete=complete)
    same = next((run for run in earlier if run.sentinel_key == key), None)
    return same, (earlier[0] if earlier else None)


def alert_message(run: RunRecord, check: dict[str, Any]) -> dict[str, Any]:
    """What the alerts topic carries of a sentinel's run: the check, and where to look."""
    measures = run.figures.measures or {}
    watch = check.get("watch") or {}
    return {
        "run_id": run.run_id,
        "sentinel": check["sentinel"],
        "scheduled_at": check.get("scheduled_at"),
        "model": run.model or None,
        "flagged": check["flagged"],
        "reasons": check["reasons"],
        "text": check["text"],
        "mean": measures.get("mean"),
        "mean_interval": measures.get("mean_interval"),
        # The sentinel's own share (every sample asked) and its baseline's.
        "share": watch.get("share"),
        "baseline_share": (watch.get("compared_with") or {}).get("share"),
        "model_versions": check.get("model_versions") or {},
        "previous_run_id": check.get("previous_run_id"),
        "report_url": (run.report or {}).get("html_url"),
    }


def alert_attributes(check: dict[str, Any], run_id: str) -> dict[str, str]:
    """The message's attributes: a subscription filters on them (``flagged = "true"``)."""
    return {
        "sentinel": str(check["sentinel"]),
        "run_id": run_id,
        "flagged": "true" if check["flagged"] else "false",
    }
