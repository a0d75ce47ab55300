"""Shared fixtures: the default haystack (prepared by scripts/setup.sh) and fakes."""

from __future__ import annotations

from pathlib import Path

import pytest

from niah.core.prompts.haystack_tokens import HaystackTokens, load_haystack
from niah.models.tokenizer import SentencePieceTokenizer, get_tokenizer
from tests import REPO
from tests.fakes import MemoryBlobs

ESSAYS = REPO / ".local" / "haystacks" / "paul_graham_essays"


@pytest.fixture(scope="session")
def tokenizer() -> SentencePieceTokenizer:
    return get_tokenizer()


@pytest.fixture(scope="session")
def essays_dir() -> Path:
    if not any(ESSAYS.glob("*.txt")):
        pytest.fail("the default haystack is missing: run scripts/setup.sh")
    return ESSAYS


@pytest.fixture
def essay_blobs(essays_dir: Path) -> MemoryBlobs:
    blobs = MemoryBlobs()
    for path in sorted(essays_dir.glob("*.txt")):
        blobs.objects[f"haystacks/paul_graham_essays/{path.name}"] = path.read_bytes()
    return blobs


SHAKESPEARE = REPO / ".local" / "haystacks" / "shakespeare"


@pytest.fixture(scope="session")
def shakespeare_dir() -> Path:
    if not any(SHAKESPEARE.glob("*.txt")):
        pytest.fail("the Shakespeare haystack is missing: run scripts/setup.sh")
    return SHAKESPEARE


@pytest.fixture(scope="session")
def essays(tokenizer: SentencePieceTokenizer, essays_dir: Path) -> HaystackTokens:
    """The default haystack, tokenized once for the whole session."""
    blobs = MemoryBlobs()
    for path in sorted(essays_dir.glob("*.txt")):
        blobs.objects[f"haystacks/paul_graham_essays/{path.name}"] = path.read_bytes()
    return load_haystack(blobs, "haystacks/paul_graham_essays/", tokenizer)


# Tiers, by folder: ``unit`` (in-process, seconds), ``deploy`` (Terraform, checkov and
# the scripts as processes), ``integration`` (a local stack of emulators and functions;
# its fault tests on the production-settings stack are also ``production_stack``),
# ``system`` (real Google Cloud, skipped unless asked for). docs/testing.md has the table.
TIERS = ("unit", "deploy", "integration", "system")

# Seconds each integration file took on a 2-core machine (2026-11-27), so that
# scripts/test.sh's workers take the longest first and end together; a file not listed
# counts as a minute. Only the order of the work depends on these figures.
STACK_SECONDS: dict[str, float] = {}
# The fault tests on the production-settings stack are dealt round into this many groups:
# each group starts one such stack, so this bounds how many run at once (about 2 GB each).
PRODUCTION_STACKS = 3
# Tests that share the offline Terraform plan (tests/deploy/conftest.py): one group, so
# the plan is made once, not once per worker.
TERRAFORM_FIXTURES = {"offline", "planned", "deploy_vars"}


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test with its tier and group the tests that share a costly fixture.

    Under pytest-xdist (``--dist loadgroup``) a group runs on one worker. A worker starts
    a stack the first time one of its tests needs it, so a file of stack tests is one
    group (one stack, and the file's order kept); the fault tests on the
    production-settings stack are dealt into ``PRODUCTION_STACKS`` groups, since they
    spend their time waiting on leases and sweep passes and run well side by side. The collection
    is ordered longest first, which xdist follows with ``--no-loadscope-reorder``.
    """
    weight: dict[str, float] = {}
    faults = 0
    for item in items:
        tier = item.path.parent.name
        if tier in TIERS:
            item.add_marker(getattr(pytest.mark, tier))
        fixtures = set(getattr(item, "fixturenames", ()))
        if tier == "integration":
            if "production_stack" in fixtures:
                group = f"production-stack-{faults % PRODUCTION_STACKS}"
                faults, weight[item.nodeid] = faults + 1, 150.0
            else:
                group = item.path.name
                weight[item.nodeid] = STACK_SECONDS.get(group, 60.0)
            item.add_marker(pytest.mark.xdist_group(group))
        elif fixtures & TERRAFORM_FIXTURES:
            item.add_marker(pytest.mark.xdist_group("terraform-plan"))
            weight[item.nodeid] = 30.0
    items.sort(key=lambda item: -weight.get(item.nodeid, 0.0))  # stable: files stay whole
