"""Every account may publish where its function's code publishes, and every grantee exists.

The emulators have no IAM, so a missing ``roles/pubsub.publisher`` shows only in
production, as a 403 on the first publish. The topics each function publishes to are
read from the code (niah_devtools.publishes: a call graph from the function's entry
point to the Publisher methods it reaches); the grants from the offline plan of infra/
(tests/deploy/conftest.py, ``planned``, made once a session).
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from niah.core.interfaces import AlertPublisher, Publisher
from niah_devtools.publishes import CallGraph, describe, function_topics, publisher_topics
from tests.deploy.terraform_plan import (
    INFRA,
    NAMED_MEMBERS,
    RUNS_ACCOUNT,
    Planned,
    configuration,
    depends_on,
    grantee,
    local_maps,
    references,
)

# A function's source as terraform uploads it (main.tf): functions/<source>-<md5>.zip.
SOURCE_OBJECT = re.compile(r"functions/(\w+)-[0-9a-f]{32}\.zip")


@pytest.fixture(scope="module")
def graph() -> CallGraph:
    return CallGraph()


def test_each_publisher_method_is_read_with_its_topic_from_the_bus() -> None:
    topics = publisher_topics()
    assert topics == {
        "publish_cells": "cells",
        "publish_report": "reports",
        "publish_alert": "alerts",  # a sentinel's check (infra/sentinels.tf)
    }
    # Every way the service's code may publish is one of them.
    declared = {
        name
        for interface in (Publisher, AlertPublisher)
        for name in vars(interface)
        if not name.startswith("_")
    }
    assert declared == set(topics)


def test_the_call_graph_finds_a_publish_however_it_is_reached(graph: CallGraph) -> None:
    """A publish added to a function is found: directly, through imports, through a method."""
    extra = {
        "functions.probe.main": (
            "from niah.service.runs import completion as run_completion\n"
            "from niah.service.runs.missing_cells import publish_missing\n"
            "def quiet(store):\n"
            "    return store.get_run('r')\n"
            "def direct(publisher):\n"
            "    publisher.publish_cells([])\n"
            "def through_a_module(store, publisher):\n"
            "    run_completion.request_report_if_complete('r', store=store, publisher=publisher)\n"
            "def passed_on(store, publisher):\n"
            "    return lambda: publish_missing('r', None, {}, store=store, publisher=publisher)\n"
            "def through_a_method(helper):\n"
            "    helper.probe_hands_on()\n"
        ),
        "niah.probe_helper": (
            "class Helper:\n"
            "    def probe_hands_on(self):\n"
            "        self.publisher.publish_report('r')\n"
        ),
    }
    probe = CallGraph(extra)
    found = {
        entry: function_topics(probe, "probe", entry)
        for entry in ("quiet", "direct", "through_a_module", "passed_on", "through_a_method")
    }
    assert found == {
        "quiet": set(),
        "direct": {"cells"},
        # Run completion asks for the report, or a certify run's next step (cells).
        "through_a_module": {"cells", "reports"},
        "passed_on": {"cells", "reports"},
        "through_a_method": {"reports"},
    }
    # The report renderer imports run completion's lease, not its publish: it publishes a
    # sentinel run's alert, and nothing else.
    assert function_topics(graph, "report", "handle_report") == {"alerts"}


def functions_in(plan: dict[str, Any]) -> dict[str, tuple[str, str, dict[str, str]]]:
    """Each function's account -> its source folder, entry point and environment, as planned.

    The account is the function's key of google_service_account.runs.
    """
    config = configuration(plan)
    found = {}
    for change in plan["resource_changes"]:
        if change["type"] != "google_cloudfunctions2_function":
            continue
        after = change["change"]["after"]
        build, service = after["build_config"][0], after["service_config"][0]
        source = SOURCE_OBJECT.fullmatch(build["source"][0]["storage_source"][0]["object"])
        assert source, build["source"]
        address = re.sub(r"\[.*\]$", "", change["address"])
        refs = config[address]["expressions"]["service_config"][0]["service_account_email"]
        named = [m.group(1) for ref in refs["references"] if (m := RUNS_ACCOUNT.match(ref))]
        account = named[0] if named else change["index"]  # runs[each.key]: the function's key
        assert "google_service_account.runs" in refs["references"], address
        found[account] = (source.group(1), build["entry_point"], service["environment_variables"])
    return found


def publisher_grants(plan: dict[str, Any]) -> dict[str, set[str]]:
    """Account of ours -> the topic names it holds roles/pubsub.publisher on, as planned."""
    config = configuration(plan)
    maps = local_maps()
    granted: dict[str, set[str]] = {}
    for change in plan["resource_changes"]:
        after = change["change"]["after"]
        if change["type"] != "google_pubsub_topic_iam_member":
            continue
        if after["role"] != "roles/pubsub.publisher":
            continue
        account = grantee(change, config, maps)
        if account in NAMED_MEMBERS.values():
            continue  # not a function's account (the Pub/Sub agent forwards dead letters)
        granted.setdefault(account, set()).add(after["topic"])
    return granted


def test_every_function_may_publish_to_the_topics_its_code_publishes_to_and_no_other(
    planned: Planned, graph: CallGraph
) -> None:
    plan, _ = planned
    functions = functions_in(plan)
    assert set(functions) == {"dispatcher", "worker", "dead_letter", "report", "sweep"}
    granted = publisher_grants(plan)
    missing: dict[str, str] = {}
    unused: dict[str, str] = {}
    for account, (source, entry_point, environment) in sorted(functions.items()):
        paths = graph.paths(f"functions.{source}.main", entry_point)
        # The code's topic "cells" is settings.cells_topic, NIAH_CELLS_TOPIC in production.
        needed = {environment[f"NIAH_{topic.upper()}_TOPIC"]: path for topic, path in paths.items()}
        has = granted.get(account, set())
        missing |= {
            f"{account} -> {name}": " > ".join(describe(path))
            for name, path in needed.items()
            if name not in has
        }
        unused |= {f"{account} -> {name}": "no path publishes there" for name in has - set(needed)}
    assert missing == {}, "publishes without roles/pubsub.publisher (a 403 in production)"
    assert unused == {}, "roles/pubsub.publisher that no code path uses (least privilege)"
    # The sweep and the dispatcher ask for reports (run completion) as well as publishing cells.
    topics = {
        c["change"]["after"]["name"]
        for c in plan["resource_changes"]
        if c["type"] == "google_pubsub_topic"
    }
    assert {"niah-cells", "niah-reports"} <= topics
    assert granted["sweep"] == {"niah-cells", "niah-reports"}
    # Sentinels' alerts (infra/sentinels.tf): each report's check, and a refused firing.
    assert granted["dispatcher"] == {"niah-cells", "niah-reports", "niah-alerts"}
    assert granted["report"] == {"niah-alerts"}


# Members that exist before infra/ is applied, or that it creates: a grant to any other
# (a service agent named by hand) may run before Google has made it, and fails.
CREATORS = ("google_service_account", "google_project_service_identity")


def test_every_account_granted_a_role_exists_before_its_grant(planned: Planned) -> None:
    """Users are given; our accounts and service agents are made by resources the grant follows.

    The Pub/Sub agent is the one exception, named by hand in main.tf: Pub/Sub makes it
    on first use, and its grants follow that use
    (test_terraform_offline.py::test_the_pubsub_agent_is_granted_only_after_pubsub_is_enabled_and_used).
    """
    plan, graph = planned
    config = configuration(plan)
    grants = {a: r for a, r in config.items() if r["type"].endswith("_iam_member")}
    assert len(grants) >= 10
    for address, resource in grants.items():
        member = resource["expressions"]["member"]
        refs = set(member.get("references", []))
        made_by = {ref for ref in references(member) if ref.split(".")[0] in CREATORS}
        if made_by:
            assert made_by <= depends_on(graph, address), f"{address} may precede {made_by}"
        elif refs == {"each.value"}:
            walked = resource["for_each_expression"]["references"]
            assert walked == ["var.run_invokers"], address  # the users, who exist already
        else:
            assert refs == {"local.pubsub_agent"}, f"{address} grants to {member}"
    # Vertex AI's agent reads and writes batch runs' files: made first, then granted.
    identities = {
        c["address"]: c["change"]["after"]["service"]
        for c in plan["resource_changes"]
        if c["type"] == "google_project_service_identity"
    }
    assert "aiplatform.googleapis.com" in identities.values()
    (vertex,) = (a for a, service in identities.items() if service == "aiplatform.googleapis.com")
    to_vertex = {a for a, r in grants.items() if vertex in references(r["expressions"]["member"])}
    assert "google_project_iam_member.vertex_agent" in to_vertex
    assert "time_sleep.apis" in depends_on(graph, vertex)  # the API is on before it is asked


def test_no_grant_names_a_service_agent_by_hand_but_pubsub_s() -> None:
    """A hand-written ``gcp-sa-`` address in infra/ is the Pub/Sub agent's local alone."""
    written = {
        path.name: re.findall(r"service-\$\{[^}]+\}@gcp-sa-(\w+)", path.read_text())
        for path in sorted(INFRA.glob("*.tf"))
    }
    assert {name: found for name, found in written.items() if found} == {"main.tf": ["pubsub"]}
