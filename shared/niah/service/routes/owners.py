"""Who may call each of the dispatcher's machine routes, checked before any body is read.

Every invoker of the dispatcher reaches every path on it (Cloud Run's invoker role is
per service, not per path), so each route a machine calls names its machine here:

- ``/sentinel``: Cloud Scheduler's sentinel jobs, as the account their OIDC token names
  (``NIAH_SENTINEL_SCHEDULER``; infra/sentinels.tf), or an operator (``NIAH_OPERATORS``)
  firing one by hand (``niah sentinel run``). Anyone else: 403.
- ``/budget-alert``: the budget topic's push subscription, as its OIDC account
  (``NIAH_BUDGET_ALERT_PUSHER``; infra/budget.tf), or an operator. Anyone else: 403.

The caller is the identity ``niah.cloud.identity`` verified; a header such as
``X-CloudScheduler`` proves nothing (any invoker may send it). Light: the dispatcher
imports it.
"""

from __future__ import annotations

from typing import Final, Literal

from niah.errors import ForbiddenError
from niah.settings import get_settings

SENTINEL_PATH: Final = "/sentinel"
BUDGET_ALERT_PATH: Final = "/budget-alert"

MachineRoute = Literal["/sentinel", "/budget-alert"]


def _operators() -> set[str]:
    return {name.lower() for name in get_settings().operators}


def is_scheduler(caller: str) -> bool:
    """Whether ``caller`` is the account Cloud Scheduler's sentinel jobs call as."""
    scheduler = get_settings().sentinel_scheduler
    return bool(scheduler) and caller == str(scheduler).lower()


def check_route_owner(route: MachineRoute, caller: str) -> None:
    """Refuse (403) ``caller`` on a machine route that is not its machine's or an operator's."""
    settings = get_settings()
    if route == SENTINEL_PATH:
        machine, setting = settings.sentinel_scheduler, "NIAH_SENTINEL_SCHEDULER"
        what = "fire sentinels: only Cloud Scheduler's sentinel jobs"
    else:
        machine, setting = settings.budget_alert_pusher, "NIAH_BUDGET_ALERT_PUSHER"
        what = "send budget alerts: only the budget topic's push subscription"
    if caller in _operators() or (machine and caller == machine.lower()):
        return
    raise ForbiddenError(
        "Authorization",
        f"{caller} may not {what} ({setting}) or an operator (NIAH_OPERATORS) may",
    )
