"""Shared fixtures: the default haystack (prepared by scripts/setup.sh) and fakes."""

from __future__ import annotations

from pathlib import Path

import pytest

from niah.core.haystack_tokens import HaystackTokens, load_haystack
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
