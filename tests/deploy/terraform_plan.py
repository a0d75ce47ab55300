"""The offline plan of infra/ and how to read it: shared by the tests of the Terraform.

``tests/deploy/conftest.py`` plans once per session (``planned``); the tests of the
deployment's order (test_terraform_offline.py) and of its publisher grants
(test_publishers.py) read the same plan.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

from niah_devtools.deploy_plan import text
from tests import REPO

INFRA = REPO / "infra"
RUNS_ACCOUNT = re.compile(r'^google_service_account\.runs\["(\w+)"\]$')
# Members that are an account of ours by another name than google_service_account.runs.
NAMED_MEMBERS = {
    "google_project_service_identity.vertex_agent": "vertex_agent",
    "google_service_account.build": "build",
    "google_service_account.pusher": "pusher",
    "local.pubsub_agent": "pubsub_agent",
    "var.run_invokers": "run_invokers",
}

Planned = tuple[dict[str, Any], dict[str, set[str]]]

# The sentinels the session's plan deploys (tests/deploy/conftest.py, ``deploy_vars``):
# one in the default time zone, one in another; test_sentinels.py reads them back.
SENTINELS = {
    "flash-daily": {
        "schedule": "0 6 * * *",
        "request": json.dumps(
            {
                "model_name": "gemini-3.8-flash",
                "context_lengths": [1000, 8000],
                "document_depth_percents": [0, 50, 100],
            }
        ),
    },
    "pro-weekly": {
        "schedule": "30 2 * * 1",
        "time_zone": "Europe/Paris",
        "request": json.dumps({"model_name": "gemini-3.1-pro-preview", "context_lengths": [32000]}),
        # Its baseline pinned to one run (docs/sentinels.md); flash-daily's is its first runs.
        "baseline_run": "run-0123456789abcdef",
    },
}


def copy_infra(into: Path) -> Path:
    """infra/ without any state or init of a developer's own."""
    into.mkdir(parents=True, exist_ok=True)
    return Path(
        shutil.copytree(
            INFRA,
            into / "infra",
            ignore=shutil.ignore_patterns(".terraform*", "*.tfstate*", "*.tfvars"),
        )
    )


def edges(dot: str) -> dict[str, set[str]]:
    """`terraform graph`'s DOT as resource -> the resources it depends on directly."""
    graph: dict[str, set[str]] = {}
    for source, target in re.findall(r'^\s*"([^"]+)" -> "([^"]+)";', dot, re.M):
        graph.setdefault(source, set()).add(target)
    return graph


def depends_on(graph: dict[str, set[str]], node: str) -> set[str]:
    """Everything ``node`` depends on, directly or through others."""
    seen: set[str] = set()
    todo = [node]
    while todo:
        for target in graph.get(todo.pop(), set()):
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def references(value: Any) -> set[str]:
    """The resources an expression of `terraform show -json`'s configuration refers to."""
    found: set[str] = set()
    if isinstance(value, dict):
        for key, inner in value.items():
            if key == "references":
                # A resource, not one instance of it (runs["worker"]): the graph's nodes.
                found |= {
                    re.sub(r"\[.*\]$", "", ".".join(ref.split(".")[:2]))
                    for ref in inner
                    if not ref.startswith("local.")
                }
            else:
                found |= references(inner)
    elif isinstance(value, list):
        for inner in value:
            found |= references(inner)
    return found


def configuration(plan: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The configured resources by address (``google_storage_bucket.data``)."""
    return {r["address"]: r for r in plan["configuration"]["root_module"]["resources"]}


def grants_to(config: dict[str, dict[str, Any]], kind: str, account: str) -> set[str]:
    """The ``kind`` IAM member resources whose member is ``account``."""
    return {
        address
        for address, resource in config.items()
        if resource["type"] == kind and account in references(resource["expressions"]["member"])
    }


def local_maps() -> dict[str, Any]:
    """The ``locals`` of infra/, as python-hcl2 reads them."""
    import hcl2

    values: dict[str, Any] = {}
    for path in sorted(INFRA.glob("*.tf")):
        with path.open() as handle:
            for block in hcl2.load(handle).get("locals", []):
                values.update(block)
    return values


def grantee(change: dict[str, Any], config: dict[str, dict[str, Any]], maps: dict[str, Any]) -> str:
    """Who a planned ``*_iam_member`` grants to.

    A key of google_service_account.runs (``worker``), or a name of NAMED_MEMBERS
    (``vertex_agent``, ``run_invokers``).
    """
    resource = config[re.sub(r"\[.*\]$", "", change["address"])]
    member = resource["expressions"]["member"]
    refs = member.get("references", [])
    if "google_service_account.runs" not in refs:
        named = {NAMED_MEMBERS[ref] for ref in refs if ref in NAMED_MEMBERS}
        if not named and "each.value" in refs:  # toset(var.run_invokers)
            named = {
                NAMED_MEMBERS[ref]
                for ref in resource["for_each_expression"]["references"]
                if ref in NAMED_MEMBERS
            }
        assert len(named) == 1, f"{change['address']} grants to {member}"
        return named.pop()
    indexed = [m.group(1) for ref in refs if (m := RUNS_ACCOUNT.match(ref))]
    if indexed:
        return indexed[0]
    if "each.key" in refs:  # runs[each.key]: the grant's own key
        return str(change["index"])
    # runs[each.value.account] over a local map
    assert "each.value.account" in refs, refs
    (walked,) = resource["for_each_expression"]["references"]
    return text(maps[walked.removeprefix("local.")][change["index"]]["account"])
