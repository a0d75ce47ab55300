"""Every Gemini model of the catalog, called through the real SDK on the Vertex stand-in.

The stand-in thinks as Google's pages say (``standin_thinking``, its own table); the
catalog is what the service believes. Where the two disagree these tests fail, so a
catalog entry cannot drift from Google's pages unnoticed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import requests
from google import genai
from google.genai import errors, types

from niah.catalog.models import CATALOG, ModelInfo, catalog_entry, prompt_limit
from niah.core.prompts.answer_budget import call_budget
from niah.core.request.grid import Cell
from niah.core.request.spec import RunRequest
from niah.errors import RequestError
from niah.models.providers.gemini import thinking_options
from niah.service.runs.admission_checks import check_lengths
from niah_devtools.standin import serve

PROMPT = "Some essay text. The special magic Lagos number is: 7304912. More text."
# Every level name any Gemini model takes, least thinking first.
EVERY_LEVEL = ("minimal", "low", "medium", "high", "xhigh")
# Room for the most thinking the stand-in does (XHIGH) and the answer.
MAX_OUTPUT_TOKENS = 8_000
GEMINI_MODELS = [info for info in CATALOG.values() if info.provider == "gemini"]


def _by_control(control: str) -> list[Any]:
    return [
        pytest.param(info, id=info.name)
        for info in GEMINI_MODELS
        if info.thinking.control == control
    ]


@pytest.fixture(scope="module")
def standin() -> Iterator[tuple[str, genai.Client]]:
    """One stand-in for the module and an SDK client pointed at it, retries off."""
    import google.oauth2.credentials

    server, _ = serve(0)
    url = f"http://127.0.0.1:{server.server_port}"
    client = genai.Client(
        vertexai=True,
        project="niah-test",
        location="global",
        credentials=google.oauth2.credentials.Credentials(token="test-token"),
        http_options=types.HttpOptions(
            base_url=url, timeout=10_000, retry_options=types.HttpRetryOptions(attempts=1)
        ),
    )
    yield url, client
    server.shutdown()


@pytest.fixture(autouse=True)
def no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


def configure(url: str, **config: Any) -> None:
    requests.post(f"{url}/_standin/config", json=config, timeout=5).raise_for_status()


def thoughts(
    client: genai.Client, model: str, *, level: str | None = None, budget: int | None = None
) -> int:
    """The thought tokens the stand-in reports for one call (0 when it reports none)."""
    # As the provider sets them (XHIGH is newer than the SDK's enum: it goes in the body).
    response = client.models.generate_content(
        model=model,
        contents=PROMPT,
        config=types.GenerateContentConfig(
            max_output_tokens=MAX_OUTPUT_TOKENS, **thinking_options(types, budget, level)
        ),
    )
    assert response.text == "The special magic Lagos number is: 7304912."
    usage = response.usage_metadata
    return (usage.thoughts_token_count or 0) if usage else 0


def refused(client: genai.Client, model: str, **thinking: Any) -> int:
    """The status the stand-in refuses a call with (0 if it answers)."""
    try:
        thoughts(client, model, **thinking)
    except errors.APIError as error:
        return int(error.code or 0)
    return 0


@pytest.mark.parametrize("info", [pytest.param(i, id=i.name) for i in GEMINI_MODELS])
def test_every_catalog_model_is_served_unless_google_retired_it(
    standin: tuple[str, genai.Client], info: ModelInfo
) -> None:
    """Vertex answers a retired model 404: then the catalog must call it retired too."""
    url, client = standin
    configure(url, retired_404=True)
    status = refused(client, info.name)
    configure(url)
    if status == 404:
        assert info.lifecycle.retired(), f"Vertex retired {info.name}; the catalog does not"
        pytest.skip(f"{info.name} is retired: Vertex answers 404")
    assert status == 0


@pytest.mark.parametrize("info", _by_control("level"))
def test_the_catalog_levels_are_the_ones_the_model_takes(
    standin: tuple[str, genai.Client], info: ModelInfo
) -> None:
    _, client = standin
    answers = {level: refused(client, info.name, level=level) for level in EVERY_LEVEL}
    assert answers == {level: 0 if level in info.thinking.levels else 400 for level in EVERY_LEVEL}


@pytest.mark.parametrize("info", _by_control("level"))
def test_a_call_without_a_level_thinks_at_the_catalog_default(
    standin: tuple[str, genai.Client], info: ModelInfo
) -> None:
    _, client = standin
    default = info.thinking.default_level
    assert default is not None, f"{info.name}: the catalog names no default level"
    assert thoughts(client, info.name) == thoughts(client, info.name, level=default)


@pytest.mark.parametrize("info", _by_control("budget"))
def test_budget_models_take_the_catalog_budgets(
    standin: tuple[str, genai.Client], info: ModelInfo
) -> None:
    """Both ends of the range, 0 only where it can be off, dynamic -1, and no level."""
    _, client = standin
    thinking = info.thinking
    assert refused(client, info.name, budget=thinking.budget_min) == 0
    assert refused(client, info.name, budget=thinking.budget_max) == 0
    assert refused(client, info.name, budget=-1) == 0
    assert refused(client, info.name, budget=0) == (0 if thinking.can_disable else 400)
    if thinking.can_disable:
        assert thoughts(client, info.name, budget=0) == 0
    assert (thoughts(client, info.name) > 0) == thinking.thinks_by_default
    assert refused(client, info.name, level="low") == 400


@pytest.mark.parametrize("info", _by_control("none"))
def test_models_the_catalog_says_do_not_think_do_not(
    standin: tuple[str, genai.Client], info: ModelInfo
) -> None:
    _, client = standin
    assert thoughts(client, info.name) == 0


@pytest.mark.parametrize(
    "model", ["gemini-4-carbon-cyber-permissive", "gemini-4-argon-cyber-permissive"]
)
def test_variants_google_lists_think_at_the_default_the_catalog_plans_for(
    standin: tuple[str, genai.Client], model: str
) -> None:
    _, client = standin
    entry = catalog_entry(model)
    assert entry is not None and entry.thinking.default_level is not None
    assert thoughts(client, model) == thoughts(client, model, level=entry.thinking.default_level)


@pytest.mark.parametrize(
    "info", [info for info in GEMINI_MODELS if info.shared_limit], ids=lambda info: info.name
)
def test_the_longest_admitted_prompt_leaves_room_for_the_call_it_makes(
    standin: tuple[str, genai.Client], info: ModelInfo
) -> None:
    """A prompt at the catalog's input limit, with the output the service asks for."""
    url, client = standin
    configure(url, estimate_tokens=True)  # len // 4: a million tokens without tokenizing
    spec = RunRequest(model_name=info.name, context_lengths=[2000])
    longest = prompt_limit(info.name, call_budget(spec).max_output_tokens)
    assert longest is not None and longest < 1_048_576
    # The dispatcher admits exactly that long a grid, and not a token more.
    check_lengths(spec.model_copy(update={"context_lengths": [longest]}), info, [Cell(longest, 50)])
    with pytest.raises(RequestError, match="shared with the output budget"):
        check_lengths(spec, info, [Cell(longest + 1, 50)])
    try:
        status = 0
        client.models.generate_content(
            model=info.name,
            contents="abcd" * longest,
            config=types.GenerateContentConfig(
                max_output_tokens=call_budget(spec).max_output_tokens
            ),
        )
    except errors.APIError as error:
        status = int(error.code or 0)
    finally:
        configure(url)
    assert status == 0
