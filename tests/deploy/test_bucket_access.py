"""Every account may write only where its function writes, as the offline plan grants it.

The table is niah_devtools.bucket_access (read from the code's prefixes); the grants are
the offline plan's (tests/deploy/conftest.py, ``planned``). A grant that reaches past an
account's prefixes, or holds without a condition, fails here before it is deployed; the
checker is itself tried on plans with one grant widened, so a check that passes
everything would be caught.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any, NamedTuple

from niah.settings import (
    BATCHES_PREFIX,
    CONTEXTS_PREFIX,
    KEPT_ANSWERS_PREFIX,
    REPORTS_PREFIX,
    Settings,
)
from niah_devtools.bucket_access import (
    ACCOUNTS,
    PROJECT_WIDE,
    READERS,
    STORAGE_HOLDING_ROLES,
    WRITES,
)
from niah_devtools.tfoffline.workdir import OfflineTerraform
from tests.deploy.terraform_plan import (
    INFRA,
    Planned,
    configuration,
    copy_infra,
    grantee,
    local_maps,
)

READ_ROLE = "roles/storage.objectViewer"
STARTS_WITH = re.compile(
    r'^resource\.name\.startsWith\("projects/_/buckets/([^/"]+)/objects/([^"]*)"\)$'
)
THE_BUCKET = re.compile(r'^resource\.name == "projects/_/buckets/([^/"]+)"$')


class Grant(NamedTuple):
    """One planned storage grant: to whom, which role, on what, under which condition."""

    address: str
    account: str
    role: str
    on: str  # a bucket's name, or "project"
    condition: str | None


def storage_grants(plan: dict[str, Any]) -> list[Grant]:
    """Every planned grant that may reach a Cloud Storage object, whoever holds it."""
    config, maps = configuration(plan), local_maps()
    custom = {
        change["change"]["after"]["role_id"]: change["change"]["after"]["permissions"]
        for change in plan["resource_changes"]
        if change["type"] == "google_project_iam_custom_role"
    }
    found = []
    for change in plan["resource_changes"]:
        after = change["change"]["after"]
        if change["type"] == "google_storage_bucket_iam_member":
            on = after["bucket"]
        elif change["type"] == "google_project_iam_member":
            permissions = custom.get(after["role"].rpartition("/")[2], [])
            reaches_storage = (
                after["role"].startswith("roles/storage.")
                or after["role"] in STORAGE_HOLDING_ROLES
                or any(permission.startswith("storage.") for permission in permissions)
            )
            if not reaches_storage and after["role"] not in ("roles/owner", "roles/editor"):
                continue
            on = "project"
        else:
            continue
        (condition,) = after.get("condition") or [{"expression": None}]
        found.append(
            Grant(
                change["address"],
                grantee(change, config, maps),
                after["role"],
                on,
                condition["expression"],
            )
        )
    return found


def buckets(plan: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The planned buckets by resource name (``data``, ``sources``)."""
    return {
        change["name"]: change["change"]["after"]
        for change in plan["resource_changes"]
        if change["type"] == "google_storage_bucket"
    }


def violations(plan: dict[str, Any]) -> list[str]:
    """Each way the plan's storage grants differ from WRITES and READERS (none: [])."""
    data = buckets(plan)["data"]["name"]
    problems: list[str] = []
    written: dict[str, set[str]] = {account: set() for account in WRITES}
    for grant in storage_grants(plan):
        if grant.account not in ACCOUNTS:
            continue  # users (read only, test_infra), the build (its own sources bucket)
        where = f"{grant.address}: {grant.role} to {grant.account}"
        if grant.on == "project" and PROJECT_WIDE.get(grant.account) == grant.role:
            if grant.condition is not None:
                problems.append(f"{where} under a condition: Google grants it unconditioned")
            written[grant.account] |= WRITES[grant.account]
            continue
        if grant.on != data:
            problems.append(f"{where} on {grant.on}: no account of ours holds a role there")
            continue
        if grant.condition is None:
            if grant.role != READ_ROLE or grant.account not in READERS:
                problems.append(f"{where} on the whole bucket")
            continue
        for clause in grant.condition.split(" || "):
            prefix, bucket_itself = STARTS_WITH.match(clause), THE_BUCKET.match(clause)
            if bucket_itself and bucket_itself.group(1) == data and grant.role == READ_ROLE:
                continue  # listing: storage.objects.list is checked on the bucket itself
            if not prefix or prefix.group(1) != data:
                problems.append(f"{where} under a condition this check cannot read: {clause}")
            elif prefix.group(2) not in WRITES.get(grant.account, frozenset()):
                problems.append(f"{where} under {prefix.group(2)!r}, not one of its prefixes")
            else:
                written[grant.account].add(prefix.group(2))
    for account, prefixes in WRITES.items():
        if missing := prefixes - written[account]:
            problems.append(f"{account} may not write under {sorted(missing)} (a 403)")
    return problems


def test_every_storage_grant_holds_only_where_its_account_writes(planned: Planned) -> None:
    plan, _ = planned
    assert violations(plan) == []
    grants = storage_grants(plan)
    # The writes are conditioned grants, one per account, naming exactly its prefixes,
    # but for Vertex AI's agent, which writes through the role Google names for it.
    writes = {g.account: g for g in grants if g.role == "roles/storage.objectUser"}
    assert set(writes) == set(WRITES) - set(PROJECT_WIDE)
    on_project = {g.account: g.role for g in grants if g.on == "project" and g.account in ACCOUNTS}
    assert on_project == PROJECT_WIDE
    assert all(g.condition for g in writes.values())
    # Every reader lists and reads the bucket; the sweep holds no storage role at all.
    readers = {g.account for g in grants if g.role == READ_ROLE and g.condition is None}
    assert readers == READERS | {"run_invokers"}  # the users read results too
    assert not [g for g in grants if g.account == "sweep"]


def test_the_buckets_allow_conditions_and_the_sources_are_apart(planned: Planned) -> None:
    """IAM conditions on Cloud Storage need uniform bucket-level access (no object ACLs)."""
    plan, _ = planned
    found = buckets(plan)
    assert set(found) == {"data", "sources"}
    for bucket in found.values():
        assert bucket["uniform_bucket_level_access"] is True
        assert bucket["public_access_prevention"] == "enforced"
    objects = [
        change["change"]["after"]
        for change in plan["resource_changes"]
        if change["type"] == "google_storage_bucket_object"
    ]
    sources = {o["name"] for o in objects if o["bucket"] == found["sources"]["name"]}
    assert sources and all(name.startswith("functions/") for name in sources)
    in_data = {o["name"] for o in objects if o["bucket"] == found["data"]["name"]}
    assert in_data and not [name for name in in_data if name.startswith("functions/")]
    # Every function builds from the sources bucket.
    built_from = {
        change["change"]["after"]["build_config"][0]["source"][0]["storage_source"][0]["bucket"]
        for change in plan["resource_changes"]
        if change["type"] == "google_cloudfunctions2_function"
    }
    assert built_from == {found["sources"]["name"]}


def test_the_prefixes_are_the_deployed_ones() -> None:
    """The service writes under fixed prefixes, no setting's: no NIAH_*_PREFIX moves one."""
    text_of_all = " ".join(p.read_text() for p in INFRA.glob("*.tf"))
    assert not re.search(r"NIAH_\w*PREFIX", text_of_all)
    written = set().union(*WRITES.values())
    # Every prefix an account writes is the code's or the token cache's, each ending "/".
    assert all(prefix.endswith("/") for prefix in written)
    assert {CONTEXTS_PREFIX, KEPT_ANSWERS_PREFIX, BATCHES_PREFIX, REPORTS_PREFIX} <= written
    fields = set(Settings.model_fields)
    assert (
        not {"contexts_prefix", "kept_answers_prefix", "batches_prefix", "reports_prefix"} & fields
    )
    # Haystacks are read, never written, by the service: uploads are the deployer's.
    assert Settings.model_fields["haystacks_prefix"].default not in written


def test_the_worker_s_vertex_role_is_its_calls_and_batch_jobs_only(planned: Planned) -> None:
    plan, _ = planned
    roles = {
        change["change"]["after"]["role_id"]: change["change"]["after"]["permissions"]
        for change in plan["resource_changes"]
        if change["type"] == "google_project_iam_custom_role"
    }
    assert roles == {
        "niahWorkerVertex": [
            "aiplatform.batchPredictionJobs.cancel",
            "aiplatform.batchPredictionJobs.create",
            "aiplatform.batchPredictionJobs.get",
            "aiplatform.batchPredictionJobs.list",
            "aiplatform.endpoints.predict",
        ]
    }
    config, maps = configuration(plan), local_maps()
    project_roles = {
        grantee(change, config, maps): change["change"]["after"]["role"]
        for change in plan["resource_changes"]
        if change["type"] == "google_project_iam_member"
        and change["change"]["after"]["role"].startswith(("roles/aiplatform.", "projects/"))
    }
    assert project_roles == {
        "worker": "projects/my-proj/roles/niahWorkerVertex",
        "vertex_agent": "roles/aiplatform.serviceAgent",
    }


def test_vertex_ai_s_agent_holds_the_role_google_names_for_it(planned: Planned) -> None:
    """An agent made on request gets no role by itself.

    Without this one a batch job is refused with FAILED_PRECONDITION
    (GoogleCloudPlatform/generative-ai issue 1308).
    """
    plan, graph = planned
    (grant,) = (
        c
        for c in plan["resource_changes"]
        if c["type"] == "google_project_iam_member"
        and c["change"]["after"]["role"] == "roles/aiplatform.serviceAgent"
    )
    assert grant["change"]["after"]["project"] == "my-proj"
    assert not grant["change"]["after"].get("condition")
    assert grantee(grant, configuration(plan), local_maps()) == "vertex_agent"
    # granted once the agent exists: the grant depends on the identity resource
    assert "google_project_service_identity.vertex_agent" in graph[grant["address"]]
    # and without it the check says the agent cannot write its predictions
    taken = copy.deepcopy(plan)
    taken["resource_changes"].remove(grant)
    assert "vertex_agent may not write under ['batches/'] (a 403)" in violations(taken)


def widened(plan: dict[str, Any], address: str, **after: Any) -> dict[str, Any]:
    """The plan with one resource's planned values changed."""
    changed = copy.deepcopy(plan)
    (change,) = (c for c in changed["resource_changes"] if c["address"] == address)
    change["change"]["after"] |= after
    return changed


def condition(expression: str) -> list[dict[str, str]]:
    return [{"expression": expression, "title": "t", "description": "d"}]


def test_the_check_fails_when_a_grant_is_widened(planned: Planned) -> None:
    plan, _ = planned
    data = buckets(plan)["data"]["name"]
    objects = f"projects/_/buckets/{data}/objects/"
    worker = 'google_storage_bucket_iam_member.writes["worker"]'
    report = 'google_storage_bucket_iam_member.writes["report"]'
    agent = "google_project_iam_member.vertex_agent"
    cases = {
        # the whole bucket: every object starts with its bucket's objects/
        "all objects": widened(
            plan, worker, condition=condition(f'resource.name.startsWith("{objects}")')
        ),
        "no condition": widened(plan, report, condition=[]),
        "one prefix too many": widened(
            plan,
            report,
            condition=condition(
                f'resource.name.startsWith("{objects}reports/") || '
                f'resource.name.startsWith("{objects}haystacks/")'
            ),
        ),
        "a condition the check cannot read": widened(
            plan, worker, condition=condition(f'resource.name.matches("{objects}.*")')
        ),
        "the agent's role made an admin's": widened(plan, agent, role="roles/storage.admin"),
        "a reader's role made a writer's": widened(
            plan,
            'google_storage_bucket_iam_member.reads["dispatcher"]',
            role="roles/storage.objectAdmin",
        ),
        "a prefix taken away": widened(
            plan, worker, condition=condition(f'resource.name.startsWith("{objects}contexts/")')
        ),
    }
    for case, changed in cases.items():
        assert violations(changed), f"{case}: not caught"
    # On the project, a storage role reaches every bucket, the data bucket's objects too.
    project = copy.deepcopy(plan)
    (vertex,) = (
        c
        for c in project["resource_changes"]
        if c["address"] == "google_project_iam_member.worker_vertex"
    )
    vertex["change"]["after"]["role"] = "roles/storage.objectAdmin"
    assert any("on project" in problem for problem in violations(project))


PUBLIC = "allUsers and allAuthenticatedUsers are refused"
# Each plan is refused on all of its bad inputs at once (Terraform reports every failed
# validation), so two plans try four inputs.
REFUSED_INPUTS = {
    "allUsers, an http endpoint": (
        # A direct `terraform apply` with the public as invokers would open the dispatcher.
        {"run_invokers": ["allUsers"], "openai_base_url": "http://llm.example.com/v1"},
        [PUBLIC, "openai_base_url must start with https://"],
    ),
    "allAuthenticatedUsers among users, a floating key version": (
        {
            "run_invokers": ["user:a@b.c", "allAuthenticatedUsers"],
            "openai_api_key_version": "latest",
        },
        [PUBLIC, "openai_api_key_version is a version number"],
    ),
}


def test_inputs_that_would_open_the_service_stop_the_plan(
    offline: OfflineTerraform, deploy_vars: Path, tmp_path: Path
) -> None:
    """variables.tf's validations refuse them before anything is planned."""
    work = copy_infra(tmp_path)
    assert offline.run(work, "init", "-input=false").returncode == 0
    inputs = json.loads(deploy_vars.read_text())
    assert inputs["run_invokers"] == ["user:a@b.c"]  # the session's plan: named members pass
    for case, (values, messages) in REFUSED_INPUTS.items():
        path = tmp_path / "inputs.tfvars.json"
        path.write_text(json.dumps(inputs | values))
        plan = offline.run(work, "plan", "-input=false", "-refresh=false", f"-var-file={path}")
        said = " ".join(plan.stderr.split())
        assert plan.returncode == 1, f"{case}: {plan.stdout}"
        assert said.count("Invalid value for variable") == len(messages), f"{case}: {said}"
        assert all(message in said for message in messages), f"{case}: {said}"


def test_the_openai_key_reaches_the_worker_alone_from_secret_manager(planned: Planned) -> None:
    """Its secret's name and readers are planned; its value is nowhere in Terraform."""
    plan, _ = planned
    changes = plan["resource_changes"]
    (secret,) = [c for c in changes if c["type"] == "google_secret_manager_secret"]
    assert secret["change"]["after"]["secret_id"] == "niah-openai-api-key"
    assert not [c for c in changes if c["type"] == "google_secret_manager_secret_version"]
    readers = [c for c in changes if c["type"] == "google_secret_manager_secret_iam_member"]
    config, maps = configuration(plan), local_maps()
    assert [(grantee(c, config, maps), c["change"]["after"]["role"]) for c in readers] == [
        ("worker", "roles/secretmanager.secretAccessor")
    ]
    functions = {
        c["change"]["after"]["name"]: c["change"]["after"]["service_config"][0]
        for c in changes
        if c["type"] == "google_cloudfunctions2_function"
    }
    for name, service in functions.items():
        environment = service["environment_variables"]
        assert environment["NIAH_OPENAI_BASE_URL"] == "https://llm.example.com/v1", name
        assert "NIAH_OPENAI_API_KEY" not in environment, name  # never a plain variable
        secrets = service["secret_environment_variables"]
        if name == "niah-worker":
            assert [(s["key"], s["secret"], s["version"]) for s in secrets] == [
                ("NIAH_OPENAI_API_KEY", "niah-openai-api-key", "1")
            ]
        else:
            assert not secrets, name
