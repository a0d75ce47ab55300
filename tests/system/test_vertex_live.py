"""Against real Vertex AI. Skipped unless NIAH_SYSTEM_PROJECT is set.

    NIAH_SYSTEM_PROJECT=my-project NIAH_SYSTEM_LOCATION=global \
        .venv/bin/python -m pytest tests/system -m system

Uses Application Default Credentials (``gcloud auth application-default login``) and
makes three small calls (cents at most).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from niah.core.results.scoring import exact_score, judge_answer
from niah.models.providers.gemini import GeminiProvider
from niah.settings import get_settings

pytestmark = [
    pytest.mark.system,
    pytest.mark.skipif(
        not os.environ.get("NIAH_SYSTEM_PROJECT"),
        reason="set NIAH_SYSTEM_PROJECT to test against real Vertex AI",
    ),
]
MODEL = os.environ.get("NIAH_SYSTEM_MODEL", "gemini-3.8-flash")
PROMPT = (
    "Paul Graham wrote about startups. The special magic Lagos number is: 7304912. "
    "He also wrote about essays.\n\nWhat is the special magic Lagos number?"
)


@pytest.fixture
def provider(monkeypatch: pytest.MonkeyPatch) -> Iterator[GeminiProvider]:
    monkeypatch.setenv("NIAH_PROJECT", os.environ["NIAH_SYSTEM_PROJECT"])
    monkeypatch.setenv("NIAH_VERTEX_LOCATION", os.environ.get("NIAH_SYSTEM_LOCATION", "global"))
    for name in ("NIAH_VERTEX_BASE_URL", "NIAH_VERTEX_ACCESS_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    get_settings.cache_clear()
    yield GeminiProvider(MODEL)
    get_settings.cache_clear()


def test_real_gemini_retrieves_counts_and_judges(provider: GeminiProvider) -> None:
    answer = provider.generate(PROMPT, max_output_tokens=300)
    assert exact_score(answer.text, "7304912") == 10
    assert answer.prompt_tokens and answer.prompt_tokens == provider.count_tokens(PROMPT)
    verdict = judge_answer(
        provider,
        question="What is the special magic Lagos number?",
        reference="The special magic Lagos number is: 7304912.",
        answer=answer.text,
    )
    assert verdict.score is not None and verdict.score >= 7
