"""The OpenAI-compatible endpoint's key goes only over https, or to this machine.

In production the key is a Secret Manager secret the worker's deployment puts in
``NIAH_OPENAI_API_KEY`` (infra/secrets.tf; test_bucket_access.py checks the plan);
locally it is that environment variable itself. Either way the provider sends it as a
bearer header, so a plain-http endpoint on another host would hand it to the network.
"""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from niah.models.providers.openai_compat import OpenAICompatibleProvider
from niah.settings import Settings, get_settings


@pytest.mark.parametrize(
    "url",
    [
        "http://llm.example.com/v1",
        "http://10.0.0.5:8000/v1",
        "http://127.0.0.1.example.com/v1",  # a name that only starts like the loopback
        "http://localhost@llm.example.com/v1",  # user info, then another host
        "ftp://llm.example.com/v1",
        "https:///v1",
    ],
)
def test_an_endpoint_the_key_would_reach_in_the_clear_is_refused_by_name(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NIAH_OPENAI_BASE_URL", url)
    with pytest.raises(ValidationError) as refused:
        Settings()
    message = str(refused.value)
    assert "NIAH_OPENAI_BASE_URL must be an https:// URL" in message
    assert "localhost or 127.0.0.1" in message and repr(url) in message


@pytest.mark.parametrize(
    "url",
    [
        "https://llm.example.com/v1",
        "http://127.0.0.1:8123/v1",  # the local stand-in (niah_devtools.localstack)
        "http://localhost:11434/v1",
        "http://[::1]:8000/v1",
    ],
)
def test_https_and_this_machine_are_accepted(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NIAH_OPENAI_BASE_URL", url)
    assert Settings().openai_base_url == url


def test_the_key_from_the_environment_goes_as_a_bearer_header(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Secret Manager's value arrives as NIAH_OPENAI_API_KEY, as a local key does."""
    monkeypatch.setenv("NIAH_OPENAI_BASE_URL", "https://llm.example.com/v1")
    monkeypatch.setenv("NIAH_OPENAI_API_KEY", "sk-from-secret-manager")
    get_settings.cache_clear()
    try:
        provider = OpenAICompatibleProvider("some-open-model")
    finally:
        get_settings.cache_clear()
    assert provider._url == "https://llm.example.com/v1/chat/completions"
    assert provider._session.headers["Authorization"] == "Bearer sk-from-secret-manager"
