"""Sentinels in infra/: a scheduler job and a Firestore document each, as the service reads them.

The session's plan deploys two (tests/deploy/conftest.py, ``planned``, with
terraform_plan.SENTINELS); two more plans here, without a budget, show the dispatcher's
invoker grant to niah-pusher following the sentinels alone, and nothing of them when
there are none. What Terraform writes is read back with the service's own code: the
route's path, the Firestore collection and the firing's request
(niah.service.sentinel.firing).
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from niah.cloud.store.paths import SENTINELS as COLLECTION
from niah.service.routes.owners import SENTINEL_PATH
from niah.service.runs.request_body import parse_request
from niah.service.sentinel.firing import sentinel_payload
from niah_devtools.deploy_plan import first, resources, text
from niah_devtools.tfoffline.workdir import OfflineTerraform
from tests.deploy.terraform_plan import (
    INFRA,
    SENTINELS,
    Planned,
    configuration,
    copy_infra,
    depends_on,
    references,
)
from tests.deploy.test_publishers import functions_in, publisher_grants
from tests.fake_store import MemoryStore

# The moment the firings here are judged from (a firing is due now, or lately).
DUE = dt.datetime(2026, 11, 30, 6, 0, 30, tzinfo=dt.UTC)

DISPATCHER_URI = "google_cloudfunctions2_function.dispatcher.service_config[0].uri"


def planned_of(plan: dict[str, Any], kind: str, name: str) -> dict[str, dict[str, Any]]:
    """The planned values of resource ``kind.name``'s instances, by key."""
    return {
        str(change.get("index")): change["change"]["after"]
        for change in plan["resource_changes"]
        if change["type"] == kind and change["name"] == name
    }


def test_each_sentinel_is_a_scheduler_job_that_posts_its_name_to_the_dispatcher(
    planned: Planned,
) -> None:
    plan, graph = planned
    jobs = planned_of(plan, "google_cloud_scheduler_job", "sentinel")
    assert set(jobs) == set(SENTINELS)
    for name, job in jobs.items():
        assert job["name"] == f"niah-sentinel-{name}"
        assert job["schedule"] == SENTINELS[name]["schedule"]
        assert job["time_zone"] == SENTINELS[name].get("time_zone", "Etc/UTC")
        (http,) = job["http_target"]
        assert http["http_method"] == "POST"
        # Scheduler's default is application/octet-stream, which the dispatcher refuses.
        assert http["headers"] == {"Content-Type": "application/json"}
        assert json.loads(base64.b64decode(http["body"])) == {"sentinel": name}
        # Retried firings are the same run (named by the firing's due time), so retry.
        assert job["retry_config"] == [{"retry_count": 3}]
    # The URI and the identity are Google's to know: what they are made of, then.
    config = configuration(plan)["google_cloud_scheduler_job.sentinel"]["expressions"]
    (http_config,) = config["http_target"]
    (oidc,) = http_config["oidc_token"]
    assert references(oidc["service_account_email"]) == {"google_service_account.pusher"}
    written = first(resources()[("google_cloud_scheduler_job", "sentinel")]["http_target"])
    assert text(written["uri"]) == f"${{{DISPATCHER_URI}}}{SENTINEL_PATH}"
    # Cloud Run takes the service's root URL as the audience, not the route's.
    assert text(first(written["oidc_token"])["audience"]) == DISPATCHER_URI
    # Calls only once niah-pusher may invoke the dispatcher, and after the wait for it.
    before = depends_on(graph, "google_cloud_scheduler_job.sentinel")
    assert {
        "google_cloud_run_service_iam_member.pusher_invokes_dispatcher",
        "time_sleep.pusher_invokes",
        "google_firestore_document.sentinel",
    } <= before


def test_a_firing_waits_out_the_dispatcher(planned: Planned) -> None:
    """Scheduler's deadline outlasts the dispatcher's timeout, so it never cuts a call short."""
    plan, _ = planned
    (dispatcher,) = planned_of(plan, "google_cloudfunctions2_function", "dispatcher").values()
    timeout = dispatcher["service_config"][0]["timeout_seconds"]
    for job in planned_of(plan, "google_cloud_scheduler_job", "sentinel").values():
        assert int(job["attempt_deadline"].removesuffix("s")) > timeout


def test_each_sentinel_s_document_holds_the_request_its_firing_runs(planned: Planned) -> None:
    plan, graph = planned
    documents = planned_of(plan, "google_firestore_document", "sentinel")
    assert set(documents) == set(SENTINELS)
    for name, document in documents.items():
        assert (document["database"], document["collection"]) == ("(default)", COLLECTION)
        assert document["document_id"] == name
        fields = json.loads(document["fields"])
        assert fields == {
            "request": {"stringValue": SENTINELS[name]["request"]},
            "schedule": {"stringValue": SENTINELS[name]["schedule"]},
            "time_zone": {"stringValue": SENTINELS[name].get("time_zone", "Etc/UTC")},
            "baseline_run": {"stringValue": SENTINELS[name].get("baseline_run", "")},
        }
        # The document as the Firestore client reads it, through the route's own code.
        store = MemoryStore()
        store.sentinels[name] = {field: value["stringValue"] for field, value in fields.items()}
        firing = sentinel_payload(
            {"sentinel": name}, schedule_time="2026-11-30T06:00:00Z", store=store, now=DUE
        )
        assert firing == json.loads(SENTINELS[name]["request"]) | {
            "sentinel": name,
            "scheduled_at": "2026-11-30T06:00:00Z",
        }
    assert "google_firestore_database.default" in depends_on(
        graph, "google_firestore_document.sentinel"
    )


def test_the_report_function_may_publish_alerts_and_every_function_knows_the_topic(
    planned: Planned,
) -> None:
    plan, _ = planned
    assert publisher_grants(plan)["report"] == {"niah-alerts"}
    for account, (_, _, environment) in functions_in(plan).items():
        assert environment["NIAH_ALERTS_TOPIC"] == "niah-alerts", account
    assert plan["planned_values"]["outputs"]["alerts_topic"]["value"] == "niah-alerts"
    # Users subscribe with a filter on the attributes it names.
    variables = (INFRA / "variables.tf").read_text()
    assert 'attributes.flagged = \\"true\\"' in variables


@pytest.fixture(scope="module")
def without_budget(offline: OfflineTerraform, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """infra/, initialised once for the plans of this module."""
    work = copy_infra(tmp_path_factory.mktemp("sentinels"))
    init = offline.run(work, "init", "-input=false")
    assert init.returncode == 0, init.stderr
    return work


def plan_with(
    offline: OfflineTerraform, work: Path, inputs: dict[str, Any], *more: str
) -> dict[str, Any]:
    """The plan of ``work`` with these inputs, then ``more`` tfvars files' (init done)."""
    path = work / "inputs.tfvars.json"
    path.write_text(json.dumps(inputs))
    files = [f"-var-file={file}" for file in (path, *more)]
    for args in (
        ("plan", "-input=false", "-refresh=false", *files, "-out=inputs.tfplan"),
        ("show", "-json", "inputs.tfplan"),
    ):
        done = offline.run(work, *args)
        if done.returncode != 0:
            pytest.fail(f"terraform {' '.join(args)}: {done.stdout}{done.stderr}")
    return dict(json.loads(done.stdout))


def example_sentinels(work: Path) -> str:
    """terraform.tfvars.example's sentinels, uncommented into a tfvars file of their own."""
    example = (INFRA / "terraform.tfvars.example").read_text()
    start = example.index("# sentinels = {")
    lines = example[start:].splitlines()
    block = lines[: lines.index("# }") + 1]
    path = work / "example.tfvars"
    path.write_text("\n".join(line.removeprefix("#").removeprefix(" ") for line in block) + "\n")
    return str(path)


def test_the_pusher_may_invoke_the_dispatcher_when_there_are_sentinels_without_a_budget(
    offline: OfflineTerraform, without_budget: Path, deploy_vars: Path
) -> None:
    """The grant follows budget alerts or sentinels; with neither, nothing of either is made."""
    inputs = json.loads(deploy_vars.read_text()) | {"billing_account": None, "sentinels": {}}
    none = plan_with(offline, without_budget, inputs)
    made = {change["address"] for change in none["resource_changes"]}
    assert not {a for a in made if "sentinel" in a or "pusher_invokes_dispatcher" in a}, made
    assert "google_cloud_scheduler_job.sweep" in made
    assert "google_pubsub_topic.alerts" in made  # always there, to subscribe to beforehand
    # The example of terraform.tfvars.example, as Terraform reads it, passes the
    # variable's checks, and it alone gives niah-pusher the invoker role on the dispatcher.
    some = plan_with(offline, without_budget, inputs, example_sentinels(without_budget))
    grants = planned_of(some, "google_cloud_run_service_iam_member", "pusher_invokes_dispatcher")
    # [0], the address budget alerts gave it: a deployment that had it keeps it.
    assert {key: (g["service"], g["role"]) for key, g in grants.items()} == {
        "0": ("niah-dispatcher", "roles/run.invoker")
    }
    assert not planned_of(some, "google_pubsub_subscription", "budget_alerts_push")
    documents = planned_of(some, "google_firestore_document", "sentinel")
    jobs = planned_of(some, "google_cloud_scheduler_job", "sentinel")
    assert documents and set(jobs) == set(documents)
    for name, document in documents.items():
        assert jobs[name]["name"] == f"niah-sentinel-{name}"
        request = json.loads(document["fields"])["request"]["stringValue"]
        store = MemoryStore()
        store.sentinels[name] = {"request": request}
        payload = sentinel_payload({"sentinel": name}, schedule_time=None, store=store)
        assert payload == json.loads(request) | {
            "sentinel": name,
            "scheduled_at": payload["scheduled_at"],
        }
        # The example is a request the service takes, as it stands.
        assert parse_request(payload).sentinel == name


GOOD_REQUEST = json.dumps({"context_lengths": [1000]})
# Each check's offenders among them, in the order Terraform lists the map's keys.
REFUSED_SENTINELS = {
    "fine": {"schedule": "0 6 * * *", "request": GOOD_REQUEST},
    "Flash_Daily": {"schedule": "0 6 * * *", "request": GOOD_REQUEST},
    "a" * 41: {"schedule": "0 6 * * *", "request": GOOD_REQUEST},
    "not-json": {"schedule": "0 6 * * *", "request": "model_name: gemini-3.8-flash"},
    "not-an-object": {"schedule": "0 6 * * *", "request": "[1000, 8000]"},
    "names-itself": {"schedule": "0 6 * * *", "request": json.dumps({"sentinel": "x"})},
    "sets-its-time": {
        "schedule": "0 6 * * *",
        "request": json.dumps({"scheduled_at": "2026-11-30T06:00:00Z", "context_lengths": [1]}),
    },
}
REFUSALS = [
    "Each sentinels name (the map's key) must start with a lower-case letter and hold only "
    'lower-case letters, digits and hyphens, 40 characters at most (such as "flash-daily"); '
    f'rename: "Flash_Daily", "{"a" * 41}".',
    "Each sentinel's request must be a JSON object, the body a run is started with",
    "not one: not-an-object, not-json.",
    'A sentinel\'s request may not set "sentinel" or "scheduled_at": the dispatcher sets '
    "them when the sentinel fires. Remove them from: names-itself, sets-its-time.",
]


def test_sentinels_a_firing_would_refuse_stop_the_plan(
    offline: OfflineTerraform, without_budget: Path, deploy_vars: Path
) -> None:
    """variables.tf's three checks refuse them, each naming only the sentinels it refuses.

    One plan for all (each costs seconds): a check that passed everything would be
    missing, and one that refused too much would name "fine" or another's offender.
    """
    inputs = json.loads(deploy_vars.read_text())
    path = without_budget / "refused.tfvars.json"
    path.write_text(json.dumps(inputs | {"sentinels": REFUSED_SENTINELS}))
    plan = offline.run(
        without_budget, "plan", "-input=false", "-refresh=false", f"-var-file={path}"
    )
    said = " ".join(plan.stderr.split())
    assert plan.returncode == 1, plan.stdout
    assert said.count("Invalid value for variable") == 3, said
    for refusal in REFUSALS:
        assert refusal in said, said


def test_the_dispatcher_knows_the_account_the_sentinel_jobs_call_as(planned: Planned) -> None:
    """/sentinel takes only that account (or an operator): niah.service.routes.owners."""
    import re

    plan, _ = planned
    config = configuration(plan)["google_cloud_scheduler_job.sentinel"]["expressions"]
    (http_config,) = config["http_target"]
    (oidc,) = http_config["oidc_token"]
    (account,) = references(oidc["service_account_email"])
    main = (INFRA / "main.tf").read_text()
    named = re.search(r"NIAH_SENTINEL_SCHEDULER\s*=\s*([\w.]+)\.email", main)
    assert named is not None and named.group(1) == account
    # Behind Cloud Run's IAM, which checks each token and removes its signature.
    assert re.search(r'NIAH_IDENTITY_MODE\s*=\s*"cloud_run"', main)
    # Both in the dispatcher's environment, among the limits it reads.
    assert "local.limits_env" in (INFRA / "functions.tf").read_text()
