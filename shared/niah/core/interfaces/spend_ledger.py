"""What the service needs of its spend ledger: windows of spend, holds, and the kill switch.

``niah.cloud.spend_ledger`` implements it on Firestore; admission
(``niah.service.runs.admission``) reserves a run's worst case in it before dispatching, and
every later paid thing (a certify round, a resume, a retry) its own hold
(``niah.core.money.holds``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

# What a refusal names when the kill switch, not a ceiling, refused the hold.
KILL_SWITCH_WINDOW = "kill_switch"
# ... and when the caller's limit on runs holding spend refused it.
OPEN_RUNS_LIMIT = "max_running_runs_per_caller"


@dataclass(frozen=True)
class Reservation:
    """What a spend reservation found: admitted, or the window that refused it.

    ``spent``: each window's USD before this reservation (reserved by running runs plus
    what finished runs spent); ``refused``: the first window the run would pass, or
    ``KILL_SWITCH_WINDOW`` while the switch is on, ``OPEN_RUNS_LIMIT`` when the caller
    has as many runs holding spend as it may, or None. ``held``: the run already took
    this hold (nothing was added). ``open_runs``: the caller's runs holding spend.
    """

    admitted: bool
    spent: dict[str, float]
    refused: str | None = None
    held: bool = False
    open_runs: int = 0


class SpendLedger(Protocol):
    """Spend per UTC day, month and caller; runs' holds; the kill switch."""

    def reserve(
        self,
        run_id: str,
        usd: float,
        ceilings: dict[str, float | None],
        *,
        caller: str,
        hold: str = "admit",
        max_open_runs: int | None = None,
    ) -> Reservation:
        """Take the run's hold ``hold`` of ``usd`` in every window of ``ceilings``, or refuse.

        One transaction with the windows, the kill switch and the caller's runs holding
        spend: two reservations at once cannot both take the last room (nor the
        caller's last run of ``max_open_runs``), and none is taken while the switch is
        on. A hold the run already took is not taken again (``held``).
        """
        ...

    def settle(self, run_id: str, spent_usd: float) -> float | None:
        """Replace the run's open holds by what it spent (a settled run: add what came since).

        The windows' change, or None if nothing changed.
        """
        ...

    def entry(self, run_id: str) -> dict[str, Any] | None:
        """The run's entry (its holds, reserved and settled USD), or None."""
        ...

    def open_entries(self) -> list[dict[str, Any]]:
        """Every run's entry with a hold open (``run_id`` in each), oldest first."""
        ...

    def window_spend(self, window: str) -> float:
        """A window's USD as it stands (reserved and spent)."""
        ...

    def kill_switch(self) -> dict[str, Any] | None:
        """The kill switch document when it is on, else None."""
        ...

    def set_kill_switch(self, fields: dict[str, Any] | None) -> None:
        """Turn the switch on with ``fields`` (why, by whom), or off with None."""
        ...
