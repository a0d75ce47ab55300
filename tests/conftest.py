"""Shared fixtures: the default haystack (prepared by scripts/setup.sh) and fakes."""

from __future__ import annotations

from pathlib import Path

import pytest

import niah.tasks  # noqa: F401  the task registry: every run request names a task
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
# its fault tests on the production-settings stack are also ``production_stack``, and
# the Vertex stand-in's tests ``side_stack``: tests/integration/conftest.py),
# ``system`` (real Google Cloud, skipped unless asked for). docs/testing.md has the table.
TIERS = ("unit", "deploy", "integration", "system")


@pytest.hookimpl(tryfirst=True)  # before -m selects by marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test with its tier, so ``-m`` selects a tier whatever the paths given."""
    for item in items:
        tier = item.path.parent.name
        if tier in TIERS:
            item.add_marker(getattr(pytest.mark, tier))
