"""The kill switch's budget as the Budget API takes it: any currency, fractions kept.

Google: a budget's ``currency_code`` "is optional. If specified when creating a budget,
it must match the currency of the billing account" (BudgetAmount.specified_amount, Cloud
Billing Budget API v1 reference, read 2026-12-04); an amount is a google.type.Money,
whole ``units`` and ``nanos``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from niah_devtools.tfoffline.workdir import OfflineTerraform
from tests.deploy.terraform_plan import Planned, copy_infra
from tests.deploy.test_sentinels import plan_with


def budget_amount(plan: dict[str, Any]) -> dict[str, Any]:
    (budget,) = (
        c["change"]["after"]
        for c in plan["resource_changes"]
        if c["type"] == "google_billing_budget"
    )
    (amount,) = budget["amount"]
    (specified,) = amount["specified_amount"]
    return dict(specified)


def test_by_default_the_budget_names_no_currency_and_google_takes_the_account_s(
    planned: Planned,
) -> None:
    plan, _ = planned
    # currency_code is left out of the request (Google fills it in on output)
    assert budget_amount(plan) == {"units": "3000", "nanos": 0}


@pytest.fixture(scope="module")
def work(offline: OfflineTerraform, tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = copy_infra(tmp_path_factory.mktemp("budget"))
    assert offline.run(work, "init", "-input=false").returncode == 0
    return work


def test_a_named_currency_and_a_fractional_amount_reach_the_budget_exactly(
    offline: OfflineTerraform, work: Path, deploy_vars: Path
) -> None:
    inputs = json.loads(deploy_vars.read_text()) | {
        "budget_amount": 1234.56,
        "budget_currency_code": "EUR",
    }
    assert budget_amount(plan_with(offline, work, inputs)) == {
        "currency_code": "EUR",
        "units": "1234",
        "nanos": 560000000,
    }


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ({"budget_currency_code": "euro"}, "budget_currency_code is three capital letters"),
        ({"budget_amount": 0}, "budget_amount must be above 0"),
    ],
)
def test_a_currency_or_amount_google_would_refuse_stops_the_plan(
    offline: OfflineTerraform,
    work: Path,
    deploy_vars: Path,
    inputs: dict[str, Any],
    message: str,
) -> None:
    path = work / "refused.tfvars.json"
    path.write_text(json.dumps(json.loads(deploy_vars.read_text()) | inputs))
    done = offline.run(work, "plan", "-input=false", "-refresh=false", f"-var-file={path}")
    assert done.returncode != 0
    assert message in " ".join((done.stdout + done.stderr).split())
