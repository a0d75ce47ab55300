"""Unit tests dispatch every cell at once unless a test asks for cache-aware order.

The offline Terraform plan of infra/ is made once a session (``planned``), for every
test that reads it.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from niah.settings import get_settings
from niah_devtools.tfoffline.workdir import NotSetUp, OfflineTerraform
from tests.unit.terraform_plan import Planned, copy_infra, edges
from tests.unit.test_deploy_scripts import run


@pytest.fixture(autouse=True)
def naive_dispatch(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("NIAH_DISPATCH_ORDER", "naive")
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


@pytest.fixture
def short_leases(monkeypatch: pytest.MonkeyPatch) -> float:
    """A one-second cell lease, renewed every third of a second.

    ``naive_dispatch`` clears the settings cache again after the test.
    """
    monkeypatch.setenv("NIAH_CELL_LEASE_SECONDS", "1")
    get_settings.cache_clear()
    return 1.0


@pytest.fixture(scope="session")
def offline(tmp_path_factory: pytest.TempPathFactory) -> OfflineTerraform:
    try:
        return OfflineTerraform(tmp_path_factory.mktemp("tfoffline"))
    except NotSetUp as missing:
        pytest.fail(str(missing))


@pytest.fixture(scope="session")
def deploy_vars(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The inputs scripts/deploy.sh writes, its build outputs replaced by small stand-ins."""
    env = {**os.environ, "PROJECT": "my-proj", "BUCKET": "my-proj-niah", "INVOKER": "user:a@b.c"}
    env["BILLING_ACCOUNT"] = "012345-6789AB-CDEF01"  # the budget and kill switch are planned
    result = run("deploy.sh", "--dry-run", env=env)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    inputs = json.loads(out[out.index("{") : out.index("}\n") + 1])
    build = tmp_path_factory.mktemp("build")
    for name in ("dispatcher", "worker", "report"):
        (build / "functions").mkdir(exist_ok=True)
        (build / "functions" / f"{name}.zip").write_bytes(name.encode())
    (build / "gemma3.model").write_bytes(b"model")
    (build / "haystacks" / "paul_graham_essays").mkdir(parents=True)
    (build / "haystacks" / "paul_graham_essays" / "essay.txt").write_text("An essay.")
    assert {"sources_dir", "tokenizer_model", "haystacks_dir"} <= set(inputs)
    inputs |= {
        "sources_dir": str(build / "functions"),
        "tokenizer_model": str(build / "gemma3.model"),
        "haystacks_dir": str(build / "haystacks"),
        # And an OpenAI-compatible endpoint with its key in Secret Manager (docs/deploy.md),
        # so the plan holds every resource infra/ may make.
        "openai_base_url": "https://llm.example.com/v1",
        "openai_api_key_version": "1",
    }
    path = build / "deploy.tfvars.json"
    path.write_text(json.dumps(inputs))
    return path


@pytest.fixture(scope="session")
def planned(
    offline: OfflineTerraform, deploy_vars: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Planned]:
    """The plan (`terraform show -json`) and Terraform's dependency graph of infra/."""
    work = copy_infra(tmp_path_factory.mktemp("clean"))
    try:
        plan, _ = offline.plan(work, deploy_vars)
    except subprocess.CalledProcessError as failed:
        pytest.fail(f"{failed.cmd}: {failed.stdout}{failed.stderr}")
    graph = offline.run(work, "graph")
    assert graph.returncode == 0, graph.stderr
    yield plan, edges(graph.stdout)
