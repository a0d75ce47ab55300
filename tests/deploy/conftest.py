"""The deployment's tier: tests that run Terraform, checkov and the scripts as processes.

Terraform's offline validate and plan, checkov, the deploy and packaging scripts are
real tools, so these tests are a tier of their own (``deploy``), apart from the
in-process unit tests.

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

from niah_devtools.tfoffline.workdir import NotSetUp, OfflineTerraform
from tests.deploy.terraform_plan import SENTINELS, Planned, copy_infra, edges
from tests.deploy.test_deploy_scripts import run


@pytest.fixture(scope="session")
def offline(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OfflineTerraform]:
    """One offline terraform for the session: its providers are started once, shared."""
    try:
        with OfflineTerraform(tmp_path_factory.mktemp("tfoffline")) as offline:
            yield offline
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
        # And two sentinels, each a scheduler job and a Firestore document (infra/sentinels.tf).
        "sentinels": SENTINELS,
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
