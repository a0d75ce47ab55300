"""The Terraform parses, and keeps the service private and retrying."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import hcl2

INFRA = Path(__file__).resolve().parents[2] / "infra"


def resources() -> dict[tuple[str, str], dict[str, Any]]:
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for path in sorted(INFRA.glob("*.tf")):
        with path.open() as handle:
            parsed = hcl2.load(handle)
        for block in parsed.get("resource", []):
            for kind, named in block.items():
                for name, body in named.items():
                    found[(kind.strip('"'), name.strip('"'))] = body
    return found


def test_nothing_is_public() -> None:
    text = " ".join((INFRA / name).read_text() for name in ("main.tf", "variables.tf"))
    assert "allUsers" not in text and "allAuthenticatedUsers" not in text
    bucket = resources()[("google_storage_bucket", "data")]
    assert bucket["public_access_prevention"].strip('"') == "enforced"
    assert bucket["uniform_bucket_level_access"] is True


def test_event_functions_retry_and_each_function_has_its_own_account() -> None:
    found = resources()
    accounts = set()
    for name in ("dispatcher", "worker", "report"):
        function = found[("google_cloudfunctions2_function", name)]
        service = (
            function["service_config"][0]
            if isinstance(function["service_config"], list)
            else function["service_config"]
        )
        accounts.add(service["service_account_email"])
        if name != "dispatcher":
            trigger = function["event_trigger"]
            trigger = trigger[0] if isinstance(trigger, list) else trigger
            assert trigger["retry_policy"].strip('"') == "RETRY_POLICY_RETRY"
    assert len(accounts) == 3
