"""A run's spend reservation as named holds: the arithmetic every ledger applies.

A run's ledger entry (``spend_runs/{run_id}`` in Firestore) is the sum of its *holds*:
one per paid thing admitted, each named so that asking again for the same thing
(a redelivered message, a client's retried POST) holds nothing more:

- ``admit``: a new run's worst case (a certify run's: its budget's worst case);
- ``reask-N``: a resume or a retry of failed cells (``N`` counts the run's re-asks);
- ``round-N``: a certify round's worst case beyond what the run already holds (``N``
  its run's cells with the round).

Every hold is taken in one transaction with the windows it counts in, the ceilings and
the kill switch: a hold is refused when the switch is on or a window would pass its
ceiling. A hold ends **settled**: the run ended (report written or failed, cancelled, or found
ended or gone by the sweep), and every open hold is replaced by what the run's calls
cost; a later settle adds only spend that came since.

Pure functions over the entry as stored, so the Firestore ledger and the tests' ledger
in memory apply the same rules.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from niah.core.interfaces.spend_ledger import KILL_SWITCH_WINDOW, OPEN_RUNS_LIMIT, Reservation

# A float sum's rounding must not refuse a run that fits to the cent.
SLACK_USD = 1e-9
ADMIT = "admit"


def reask_hold(reasks: int) -> str:
    """The hold of a run's ``reasks``-th re-ask (a resume, a retry of failed cells)."""
    return f"reask-{reasks}"


def round_hold(cells: int) -> str:
    """The hold of the certify round that takes its run to ``cells`` cells.

    Named by the cells, not the planner's round number: the planner may ask a length's
    round again (its unscored samples replaced) under the same number, and each such
    step publishes cells of its own.
    """
    return f"round-{cells}"


def _is_open(entry: Mapping[str, Any] | None) -> bool:
    """Whether the run holds spend now (a run already holding is not a new one)."""
    return entry is not None and not entry.get("settled", True)


@dataclass(frozen=True)
class Step:
    """What a ledger writes for one reserve or settle (nothing when ``entry`` is None).

    ``change``: the USD to add to each of ``windows``; ``entry``: the run's entry as it
    is to be stored; ``reservation``: what a reserve answers; ``opens``: the run joins
    (True) or leaves (False) its ``caller``'s runs holding spend, or neither (None).
    """

    entry: dict[str, Any] | None
    change: float
    windows: tuple[str, ...]
    reservation: Reservation | None = None
    opens: bool | None = None
    caller: str = ""


def _holds(entry: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {str(k): dict(v) for k, v in (entry.get("holds") or {}).items()}


def reserve_step(
    run_id: str,
    entry: Mapping[str, Any] | None,
    spent: Mapping[str, float],
    switch: Mapping[str, Any] | None,
    *,
    hold: str,
    usd: float,
    ceilings: Mapping[str, float | None],
    caller: str,
    open_runs: Collection[str] = (),
    max_open_runs: int | None = None,
) -> Step:
    """Take hold ``hold`` of ``usd`` in every window of ``ceilings``, or refuse.

    ``entry``: the run's entry as stored (None: none yet); ``spent``: each window's USD
    now; ``switch``: the kill switch when on; ``open_runs``: the caller's runs with a
    hold open, of which ``max_open_runs`` (None: any number) may be while this run is
    not one. A hold already taken (open, or settled since) holds nothing more.
    """
    spent = dict(spent)
    holds = _holds(entry or {})
    if hold in holds:
        return Step(None, 0.0, (), Reservation(True, spent, held=True))
    if switch:
        return Step(None, 0.0, (), Reservation(False, spent, refused=KILL_SWITCH_WINDOW))
    others = set(open_runs) - {run_id}
    if max_open_runs and not _is_open(entry) and len(others) >= max_open_runs:
        refused = Reservation(False, spent, refused=OPEN_RUNS_LIMIT, open_runs=len(others))
        return Step(None, 0.0, (), refused)
    for window, ceiling in ceilings.items():
        # A hold of nothing adds nothing: a window over its ceiling (by a late settle of
        # another run) does not stop it. The kill switch above still does.
        if usd > 0 and ceiling is not None and spent.get(window, 0.0) + usd > ceiling + SLACK_USD:
            return Step(None, 0.0, (), Reservation(False, spent, refused=window))
    old = dict(entry or {})
    # A run's windows are those of its first hold: its spend counts in the day and month
    # it was admitted, whenever its later holds are taken.
    windows = tuple(old.get("windows") or ceilings)
    holds[hold] = {"usd": usd, "open": True}
    fields = old | {
        "holds": holds,
        "reserved": float(old.get("reserved", 0.0)) + usd,  # a settle leaves it 0
        "settled_usd": float(old.get("settled_usd", 0.0)),
        "windows": list(windows),
        "settled": False,
        "caller": old.get("caller") or caller,
    }
    reservation = Reservation(True, spent, open_runs=len(others) + 1)
    return Step(fields, usd, windows, reservation, opens=True, caller=fields["caller"])


def settle_step(entry: Mapping[str, Any] | None, spent_usd: float) -> Step:
    """Replace the run's open holds by what it spent beyond what was settled before.

    Settled already, a settle counts only spend that came since (calls that were under
    way at a cancel): a run's spend only grows, so a settle never lowers the windows,
    and the same settle twice changes nothing.
    """
    if entry is None:
        return Step(None, 0.0, ())
    before = float(entry.get("settled_usd", 0.0))
    if entry.get("settled", True):
        if spent_usd <= before:
            return Step(None, 0.0, ())
        fields = dict(entry) | {"settled_usd": spent_usd}
        return Step(fields, spent_usd - before, tuple(entry.get("windows") or ()))
    spent = max(spent_usd, before)
    change = spent - before - float(entry.get("reserved", 0.0))
    holds = {key: hold | {"open": False} for key, hold in _holds(entry).items()}
    fields = dict(entry) | {
        "holds": holds,
        "reserved": 0.0,
        "settled_usd": spent,
        "settled": True,
    }
    return Step(fields, change, tuple(entry.get("windows") or ()), None, False, _caller(entry))


def _caller(entry: Mapping[str, Any]) -> str:
    return str(entry.get("caller") or "")
