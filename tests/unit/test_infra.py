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


def first(block: Any) -> dict[str, Any]:
    return block[0] if isinstance(block, list) else block


def test_cells_dead_letter_reports_retry_and_each_function_has_its_own_account() -> None:
    found = resources()
    accounts = {
        first(found[("google_cloudfunctions2_function", name)]["service_config"])[
            "service_account_email"
        ]
        for name in ("dispatcher", "worker", "report")
    }
    assert len(accounts) == 3
    cells = found[("google_pubsub_subscription", "cells_push")]
    assert first(cells["dead_letter_policy"])["max_delivery_attempts"] == 5
    assert first(cells["retry_policy"])["maximum_backoff"].strip('"') == "600s"
    assert "oidc_token" in first(cells["push_config"])
    report = first(found[("google_cloudfunctions2_function", "report")]["event_trigger"])
    assert report["retry_policy"].strip('"') == "RETRY_POLICY_RETRY"
    assert ("google_cloudfunctions2_function", "dead_letter") in found
