"""What the service needs of its spend ledger: windows of spend, and the kill switch.

``niah.cloud.spend_ledger`` implements it on Firestore; admission
(``niah.service.admission``) reserves a run's worst case in it before dispatching.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class Reservation:
    """What a spend reservation found: admitted, or the window that refused it.

    ``spent``: each window's USD before this reservation (reserved by running runs plus
    what finished runs spent); ``refused``: the first window the run would pass, or None.
    ``held``: the run already holds an unsettled reservation (nothing was added).
    """

    admitted: bool
    spent: dict[str, float]
    refused: str | None = None
    held: bool = False


class SpendLedger(Protocol):
    """Spend per UTC day, month and caller; the kill switch (``niah.service.admission``)."""

    def reserve(
        self,
        run_id: str,
        usd: float,
        ceilings: dict[str, float | None],
        *,
        caller: str,
    ) -> Reservation:
        """Add ``usd`` to every window of ``ceilings`` if none passes its ceiling (None: none).

        One transaction: two reservations at once cannot both take the last room. A run
        that holds an unsettled reservation is not charged again (``held``).
        """
        ...

    def settle(self, run_id: str, spent_usd: float) -> float | None:
        """Replace the run's reservation by what it spent; the change, or None if none held."""
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
