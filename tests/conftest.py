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
GROUP = pytest.StashKey[str]()

# Tests that share the offline Terraform plan (tests/deploy/conftest.py): one group, so
# the plan is made once, not once per worker.
TERRAFORM_FIXTURES = {"offline", "planned", "deploy_vars"}
# Groups handed out first, longest first (with ``--no-loadscope-reorder`` xdist hands work
# out in collection order): the stack tests (about 20 minutes one after another), the
# fault tests on the production-settings stack (about 13), the Terraform plan's tests.
FIRST = {"stack": 3, "production-stack": 2, "terraform-plan": 1}


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test with its tier and group the tests that share a costly fixture.

    Under pytest-xdist (``--dist loadgroup``) a group runs on one worker, in order. The
    stack tests are one group and the fault tests on the production-settings stack
    another, so two stacks run at once as before, each on one worker; the unit and
    deploy tests fill the other workers. Two stacks of the same kind on this 2-core
    machine were tried (four default and three production stacks): the local model's
    calls and the emulators then took the CPU from each other, and runs timed out.
    """
    for item in items:
        tier = item.path.parent.name
        if tier in TIERS:
            item.add_marker(getattr(pytest.mark, tier))
        fixtures = set(getattr(item, "fixturenames", ()))
        group = None
        if tier == "integration":
            group = "production-stack" if "production_stack" in fixtures else "stack"
        elif fixtures & TERRAFORM_FIXTURES:
            group = "terraform-plan"
        if group:
            item.add_marker(pytest.mark.xdist_group(group))
            item.stash[GROUP] = group
    items.sort(key=lambda item: -FIRST.get(item.stash.get(GROUP, ""), 0))  # stable sort
