"""The offline plan of infra/ and how to read it: shared by the tests of the Terraform.

``tests/unit/conftest.py`` plans once per session (``planned``); the tests of the
deployment's order (test_terraform_offline.py) and of its publisher grants
(test_publishers.py) read the same plan.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

from tests import REPO

INFRA = REPO / "infra"

Planned = tuple[dict[str, Any], dict[str, set[str]]]


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
                found |= {
                    ".".join(ref.split(".")[:2]) for ref in inner if not ref.startswith("local.")
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
