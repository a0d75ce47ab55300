"""infra/ through the real terraform, offline: init, validate, plan and its graph.

The providers are schema-only stand-ins (niah_devtools.tfoffline) serving the real
schemas of hashicorp/google and hashicorp/google-beta 7.46.1 and hashicorp/time 0.14.2,
read from their prebuilt CDK Terrain bindings; scripts/setup.sh makes .venv-terraform.
Terraform itself checks the configuration against them; the plan never calls Google.
Each injected mistake below must make `terraform validate` fail, so a check that passes
everything would be caught.
The plan is made once a session (tests/deploy/conftest.py, ``planned``).
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from niah_devtools.tfoffline.workdir import SCHEMAS, OfflineTerraform
from tests.deploy.terraform_plan import (
    INFRA,
    Planned,
    configuration,
    copy_infra,
    depends_on,
    grants_to,
    references,
)


def test_infra_inits_validates_and_plans_offline_against_the_real_schemas(
    planned: tuple[dict[str, Any], dict[str, set[str]]],
) -> None:
    plan, _ = planned
    changes = plan["resource_changes"]
    assert {change["change"]["actions"][0] for change in changes} == {"create"}
    configured = {
        resource["address"] for resource in plan["configuration"]["root_module"]["resources"]
    }
    planned_resources = {re.sub(r"\[.*\]$", "", change["address"]) for change in changes}
    assert planned_resources == {a for a in configured if not a.startswith("data.")}
    # The plan is the stand-in's: what only Google would know is unknown, not invented.
    dispatcher = next(
        c for c in changes if c["address"] == "google_cloudfunctions2_function.dispatcher"
    )
    assert dispatcher["change"]["after_unknown"]["service_config"][0]["uri"] is True
    assert dispatcher["change"]["after"]["service_config"][0]["ingress_settings"] == "ALLOW_ALL"
    assert {c["provider_name"] for c in changes} == {
        "registry.terraform.io/hashicorp/google",
        "registry.terraform.io/hashicorp/google-beta",
        "registry.terraform.io/hashicorp/time",
    }
    # The beta provider makes only what the GA one cannot: a service agent's identity.
    assert {c["type"] for c in changes if c["provider_name"].endswith("/google-beta")} == {
        "google_project_service_identity"
    }


def test_terraform_runs_where_there_is_no_network_but_a_loopback(
    offline: OfflineTerraform,
) -> None:
    """Every terraform call here, and the providers it talks to, are cut off from the world."""
    devices = subprocess.run(
        [*offline.prefix, "cat", "/proc/net/dev"], capture_output=True, text=True, check=True
    ).stdout
    assert [line.split(":")[0].strip() for line in devices.splitlines()[2:]] == ["lo"]
    # The shared providers too (each process's /proc/PID/net is its own namespace's).
    pids = offline.provider_pids()
    assert len(pids) == len(list(SCHEMAS.glob("*.json"))) == 3
    for pid in pids:
        devices = Path(f"/proc/{pid}/net/dev").read_text()
        assert [line.split(":")[0].strip() for line in devices.splitlines()[2:]] == ["lo"]


def test_every_command_but_init_attaches_to_the_shared_providers(
    planned: Planned,
    offline: OfflineTerraform,
    tmp_path: Path,
) -> None:
    """The session's init, validate, plan, show and graph started no provider of their own.

    Each start by terraform writes a line through the launcher (launches.log): a
    terraform that ignored TF_REATTACH_PROVIDERS would start three per command, as one
    whose providers are not shared does (at least three a command).
    """
    assert planned[0]["resource_changes"]  # the session's plan was made, on `offline`
    assert not (offline.home / "launches.log").exists()
    with OfflineTerraform(tmp_path / "home", shared_providers=False) as unshared:
        work = copy_infra(tmp_path)
        assert unshared.run(work, "init", "-input=false").returncode == 0
        assert not (unshared.home / "launches.log").exists()  # init starts none
        assert unshared.run(work, "validate").returncode == 0
        launched = (unshared.home / "launches.log").read_text().split()
    # Terraform starts each at least once a command (validate: twice each, seen here).
    assert sorted(set(launched)) == ["google", "google-beta", "time"]


def test_the_schemas_are_the_providers_versions_tf_allows() -> None:
    """The stand-ins serve the newest releases infra/versions.tf allows (init checks the rest)."""
    served = {
        path.stem: json.loads(path.read_text())["generated_from"] for path in SCHEMAS.glob("*.json")
    }
    assert {kind: source["version"] for kind, source in served.items()} == {
        "google": "7.46.1",
        "google-beta": "7.46.1",
        "time": "0.14.2",
    }
    versions = (INFRA / "versions.tf").read_text()
    assert re.search(r'source\s*=\s*"hashicorp/google"\s*\n\s*version\s*=\s*"~> 7\.0"', versions)
    assert re.search(
        r'source\s*=\s*"hashicorp/google-beta"\s*\n\s*version\s*=\s*"~> 7\.0"', versions
    )
    assert re.search(r'source\s*=\s*"hashicorp/time"\s*\n\s*version\s*=\s*"~> 0\.14"', versions)


def test_init_refuses_a_provider_version_the_schema_is_not_from(
    offline: OfflineTerraform, tmp_path: Path
) -> None:
    work = copy_infra(tmp_path)
    versions = work / "versions.tf"
    versions.write_text(versions.read_text().replace('version = "~> 7.0"', 'version = "~> 8.0"'))
    init = offline.run(work, "init", "-input=false")
    assert init.returncode != 0
    assert "hashicorp/google: no available releases match the given constraints ~> 8.0" in (
        " ".join(init.stderr.split())
    )


MISTAKES = {
    "a misspelt argument": (
        "functions.tf",
        'ingress_settings      = "ALLOW_ALL"',
        'ingres_settings       = "ALLOW_ALL"',
        'An argument named "ingres_settings" is not expected here',
    ),
    "a wrong type": (
        "functions.tf",
        "max_instance_count    = 5",
        'max_instance_count    = "five"',
        'Inappropriate value for attribute "max_instance_count": a number is required',
    ),
    "a missing required argument": (
        "pubsub.tf",
        "  topic                      = google_pubsub_topic.dead_letter.id\n",
        "",
        'The argument "topic" is required, but no definition was found',
    ),
    "an unknown reference": (
        "pubsub.tf",
        'google_cloudfunctions2_function.internal["worker"].service_config[0].uri',
        'google_cloudfunctions2_function.internal["worker"].service_config[0].url',
        'no argument, nested block, or exported attribute named "url"',
    ),
}


@pytest.mark.parametrize("mistake", list(MISTAKES))
def test_validate_fails_on(mistake: str, offline: OfflineTerraform, tmp_path: Path) -> None:
    file, correct, wrong, message = MISTAKES[mistake]
    work = copy_infra(tmp_path)
    source = (work / file).read_text()
    assert source.count(correct) == 1  # the mistake really goes in, in one place
    (work / file).write_text(source.replace(correct, wrong))
    assert offline.run(work, "init", "-input=false").returncode == 0
    validate = offline.run(work, "validate")
    assert validate.returncode == 1
    assert message in " ".join(validate.stderr.split()), validate.stderr


def waits_right_after(
    config: dict[str, dict[str, Any]], graph: dict[str, set[str]], nodes: set[str]
) -> set[str]:
    """The time_sleeps that follow every one of ``nodes`` directly (not only later ones)."""
    return {
        address
        for address, resource in config.items()
        if resource["type"] == "time_sleep" and nodes <= graph.get(address, set())
    }


def test_every_function_is_built_after_its_build_account_s_wait(
    planned: tuple[dict[str, Any], dict[str, set[str]]],
) -> None:
    plan, graph = planned
    config = configuration(plan)
    functions = [a for a, r in config.items() if r["type"] == "google_cloudfunctions2_function"]
    assert len(functions) == 2  # the dispatcher, and the four of internal
    for function in functions:
        (account,) = references(
            config[function]["expressions"]["build_config"][0]["service_account"]
        )
        grants = grants_to(config, "google_project_iam_member", account)
        assert grants, f"{account} is granted no role"
        waits = waits_right_after(config, graph, grants)
        assert waits, f"no wait right after every grant to {account}"
        assert waits & depends_on(graph, function), f"{function} does not wait for {account}"
        for wait in waits:
            # IAM grants typically take 2 minutes to take effect (see iam.tf).
            assert config[wait]["expressions"]["create_duration"]["constant_value"] == "120s"


def test_every_push_and_the_scheduler_call_only_after_the_pusher_may_invoke(
    planned: tuple[dict[str, Any], dict[str, set[str]]],
) -> None:
    plan, graph = planned
    config = configuration(plan)
    callers = {
        address: resource["expressions"]["push_config"][0]["oidc_token"][0]
        for address, resource in config.items()
        if resource["type"] == "google_pubsub_subscription"
        and "push_config" in resource["expressions"]
    } | {
        address: resource["expressions"]["http_target"][0]["oidc_token"][0]
        for address, resource in config.items()
        if resource["type"] == "google_cloud_scheduler_job"
    }
    assert sorted(callers) == [
        "google_cloud_scheduler_job.sentinel",
        "google_cloud_scheduler_job.sweep",
        "google_pubsub_subscription.budget_alerts_push",
        "google_pubsub_subscription.cells_push",
        "google_pubsub_subscription.push",
        "google_pubsub_subscription.reports_push",
    ]
    for caller, oidc in callers.items():
        (account,) = references(oidc["service_account_email"])
        bindings = {
            address
            for address in grants_to(config, "google_cloud_run_service_iam_member", account)
            if config[address]["expressions"]["role"]["constant_value"] == "roles/run.invoker"
        }
        assert bindings, f"{account} may invoke nothing"
        assert bindings <= depends_on(graph, caller), f"{caller} may call before {bindings}"


# The resources that call Cloud Functions, and through it Cloud Build and Cloud Run,
# whose service agents get their roles only a while after the APIs are enabled.
BUILD_AND_RUN_USERS = ("google_cloudfunctions2_function", "google_cloud_run_service_iam_member")


def test_nothing_uses_an_api_the_moment_it_is_enabled(
    planned: tuple[dict[str, Any], dict[str, set[str]]],
) -> None:
    plan, graph = planned
    config = configuration(plan)
    services = {a for a, r in config.items() if r["type"] == "google_project_service"}
    assert services == {"google_project_service.apis"}
    waits = waits_right_after(config, graph, services)
    assert waits, "no wait right after the APIs are enabled"
    # Only the wait follows the services directly: whatever uses an API comes after it.
    right_after = {a for a, targets in graph.items() if services & targets}
    assert right_after == waits
    for wait in waits:
        assert config[wait]["expressions"]["create_duration"]["constant_value"] == "60s"
    users = [a for a, r in config.items() if r["type"] in BUILD_AND_RUN_USERS]
    # Two functions' resources, three Cloud Run invoker grants (the pusher's on the
    # dispatcher is for budget alerts).
    assert len(users) == 5
    for user in users:
        assert waits & depends_on(graph, user), f"{user} may use its API before the wait"


PUBSUB_USERS = ("google_pubsub_topic", "google_pubsub_subscription")


def test_the_pubsub_agent_is_granted_only_after_pubsub_is_enabled_and_used(
    planned: tuple[dict[str, Any], dict[str, set[str]]],
) -> None:
    """The GA provider cannot create the agent (main.tf): its grants wait for Google to."""
    plan, graph = planned
    config = configuration(plan)
    grants = [
        address
        for address, resource in config.items()
        if "local.pubsub_agent"
        in resource.get("expressions", {}).get("member", {}).get("references", [])
    ]
    # Forwards dead letters, acknowledges them (cells and reports), mints push tokens.
    assert len(grants) == 4
    for grant in grants:
        before = depends_on(graph, grant)
        assert "time_sleep.apis" in before, grant
        used = {a for a in before if a.split(".")[0] in PUBSUB_USERS}
        assert used, f"{grant} may come before Pub/Sub is first used"


def test_the_build_account_holds_no_storage_role_on_the_project_or_the_data_bucket(
    planned: tuple[dict[str, Any], dict[str, set[str]]], deploy_vars: Path
) -> None:
    """Its storage role holds only on Cloud Functions' sources bucket, by an IAM condition."""
    plan, _ = planned
    config = configuration(plan)
    account = "google_service_account.build"
    assert not grants_to(config, "google_storage_bucket_iam_member", account)
    grants = grants_to(config, "google_project_iam_member", account)
    planned_grants = [
        change["change"]["after"]
        for change in plan["resource_changes"]
        if re.sub(r"\[.*\]$", "", change["address"]) in grants
    ]
    storage = [grant for grant in planned_grants if grant["role"].startswith("roles/storage.")]
    assert [grant["role"] for grant in storage] == ["roles/storage.objectAdmin"]
    read = {
        r["address"]: r["values"] for r in plan["prior_state"]["values"]["root_module"]["resources"]
    }
    number = read["data.google_project.this"]["number"]  # the stand-in's placeholder
    region = json.loads(deploy_vars.read_text())["region"]
    sources = f"projects/_/buckets/gcf-v2-sources-{number}-{region}"
    for grant in storage:
        (condition,) = grant["condition"]  # never unconditional, so never project-wide
        assert condition["expression"] == (
            f'resource.name == "{sources}" || resource.name.startsWith("{sources}/")'
        )
    # The rest are the build's logs and images, not storage.
    assert sorted(g["role"] for g in planned_grants if g not in storage) == [
        "roles/artifactregistry.writer",
        "roles/logging.logWriter",
    ]


def test_the_schema_reader_keeps_nesting_counts_and_flags() -> None:
    """What the bindings say of a few blocks, as Terraform needs it to judge a configuration."""
    google = json.loads((SCHEMAS / "google.json").read_text())["provider_schemas"]
    resources = google["registry.terraform.io/hashicorp/google"]["resource_schemas"]
    bucket = resources["google_storage_bucket"]["block"]
    rule = bucket["block_types"]["lifecycle_rule"]
    assert (rule["nesting_mode"], rule.get("min_items"), rule.get("max_items")) == (
        "list",
        None,
        None,
    )
    action = rule["block"]["block_types"]["action"]
    assert (action["nesting_mode"], action["min_items"], action["max_items"]) == ("set", 1, 1)
    assert bucket["attributes"]["name"] == {
        "type": "string",
        "description_kind": "plain",
        "required": True,
    }
    assert (
        bucket["attributes"]["self_link"]["computed"]
        and "optional" not in bucket["attributes"]["self_link"]
    )
    assert bucket["attributes"]["labels"]["type"] == ["map", "string"]
    function = resources["google_cloudfunctions2_function"]["block"]
    service = function["block_types"]["service_config"]
    assert (service["nesting_mode"], service["max_items"]) == ("list", 1)
    assert service["block"]["attributes"]["max_instance_count"]["type"] == "number"
    assert function["block_types"]["timeouts"]["nesting_mode"] == "single"
    # google-beta's provider is read too (its type has a hyphen), and the one resource used.
    beta = json.loads((SCHEMAS / "google-beta.json").read_text())["provider_schemas"]
    beta_schemas = beta["registry.terraform.io/hashicorp/google-beta"]
    assert beta_schemas["provider"]["block"]["attributes"]["project"]["optional"] is True
    identity = beta_schemas["resource_schemas"]["google_project_service_identity"]["block"]
    assert identity["attributes"]["service"]["required"] is True
    assert identity["attributes"]["member"]["computed"] is True
    assert "optional" not in identity["attributes"]["member"]
    time = json.loads((SCHEMAS / "time.json").read_text())["provider_schemas"]
    sleep = time["registry.terraform.io/hashicorp/time"]["resource_schemas"]["time_sleep"]["block"]
    assert sorted(sleep["attributes"]) == ["create_duration", "destroy_duration", "id", "triggers"]
