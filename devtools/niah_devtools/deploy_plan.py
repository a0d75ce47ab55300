"""What a deployment creates, read from the Terraform in ``infra/``; and its assets.

There is no ``terraform`` binary on a developer's machine, so the one definition of the
infrastructure is read with python-hcl2 and rendered as one line per function, push
subscription, scheduler job and IAM binding, with the settings that matter (2nd gen,
ingress, instance caps, the identity each runs as, who may invoke it, retries and dead
letters). ``scripts/deploy.sh --dry-run`` prints it and the tests check it.

    python -m niah_devtools.deploy_plan summary [INFRA_DIR]
    python -m niah_devtools.deploy_plan tokenizer OUT_FILE
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
INFRA = REPO / "infra"

Resources = dict[tuple[str, str], dict[str, Any]]
# ${google_service_account.worker.email} -> ("google_service_account", "worker", "");
# ${google_service_account.runs["worker"].email} -> (..., "runs", "worker")
REFERENCE = re.compile(r'\$\{(google_[a-z0-9_]+)\.([a-z0-9_]+)(?:\[\\?"(\w+)\\?"\])?')


def resources(infra: Path = INFRA) -> Resources:
    """Every resource of the ``.tf`` files by (type, name); raises on a parse error.

    A resource with ``for_each`` over a map or a literal list (in place, or a local) is
    expanded into one entry per key, named by the key, with ``each.key`` and
    ``each.value`` put in; over another resource, into that resource's keys. A
    ``for_each`` over a variable stays one entry (its keys are the user's).
    """
    import hcl2

    found: Resources = {}
    expanded: dict[tuple[str, str], dict[str, Any]] = {}
    local_values: dict[str, Any] = {}
    blocks = []
    for path in sorted(infra.glob("*.tf")):
        with path.open() as handle:
            parsed = hcl2.load(handle)
        for block in parsed.get("locals", []):
            local_values.update(block)
        blocks.extend(parsed.get("resource", []))
    for block in blocks:
        for kind, named in block.items():
            for name, body in named.items():
                kind, name = kind.strip('"'), name.strip('"')
                instances = _instances(body.get("for_each"), local_values, expanded)
                if instances is None:
                    found[(kind, name)] = body
                    continue
                expanded[(kind, name)] = {}
                for key, value in instances.items():
                    found[(kind, key)] = expanded[(kind, name)][key] = _put_each(body, key, value)
    return found


def _instances(
    for_each: Any, local_values: dict[str, Any], expanded: dict[tuple[str, str], dict[str, Any]]
) -> dict[str, Any] | None:
    """The keys and values ``for_each`` iterates over, where the configuration fixes them."""
    if isinstance(for_each, dict):
        return for_each
    expression = text(for_each) if for_each is not None else ""
    if expression.startswith("local."):
        values = local_values.get(expression.removeprefix("local."))
        return values if isinstance(values, dict) else None
    listed = re.fullmatch(r"toset\((\[.*\])\)", expression)
    if listed:
        return {item: f'"{item}"' for item in json.loads(listed.group(1))}
    other = re.fullmatch(r"(google_\w+)\.(\w+)", expression)
    if other:
        return expanded.get((other.group(1), other.group(2)))
    return None


def _put_each(body: Any, key: str, value: Any) -> Any:
    """``body`` with ``each.key`` and ``each.value[.attribute]`` replaced by this instance's."""
    if isinstance(body, dict):
        return {k: _put_each(v, key, value) for k, v in body.items() if k != "for_each"}
    if isinstance(body, list):
        return [_put_each(item, key, value) for item in body]
    if not isinstance(body, str):
        return body
    if body == "${each.key}":
        return f'"{key}"'
    whole = re.fullmatch(r"\$\{each\.value(?:\.(\w+))?\}", body)
    if whole:
        return value.get(whole.group(1)) if whole.group(1) else value
    body = body.replace("each.key", f'"{key}"')

    def attribute(match: re.Match[str]) -> str:
        found = value.get(match.group(1)) if match.group(1) else value
        return text(found) if isinstance(found, str) and found.startswith("${") else str(found)

    return re.sub(r"each\.value(?:\.(\w+))?", attribute, body)


def first(block: Any) -> dict[str, Any]:
    """A nested block's body (python-hcl2 gives blocks as one-element lists)."""
    return dict(block[0] if isinstance(block, list) else block)


def text(value: Any) -> str:
    """An attribute as written: quotes dropped, ``${var.x}`` as ``var.x``."""
    value = str(value)
    if value.startswith('"') and value.endswith('"'):
        return value[1:-1]
    if value.startswith("${") and value.endswith("}"):
        return value[2:-1]
    return value


def referenced(value: Any, kind: str) -> str | None:
    """The name (or ``for_each`` key) of the ``kind`` resource ``value`` refers to, if any."""
    for found_kind, name, key in REFERENCE.findall(str(value)):
        if found_kind == kind:
            return str(key or name)
    return None


def skips(body: dict[str, Any]) -> list[str]:
    """The ``#checkov:skip=ID:reason`` comments inside a resource."""
    return [
        str(comment["value"])
        for comment in body.get("__comments__", [])
        if str(comment.get("value", "")).startswith("checkov:skip=")
    ]


def invokers(found: Resources) -> dict[str, list[str]]:
    """Function (resource name or key) -> the members given roles/run.invoker on it."""
    functions = {
        text(body["name"]): name
        for (kind, name), body in found.items()
        if kind == "google_cloudfunctions2_function"
    }
    granted: dict[str, list[str]] = {}
    for (kind, _), body in found.items():
        if (
            kind == "google_cloud_run_service_iam_member"
            and text(body["role"]) == "roles/run.invoker"
        ):
            service = body["service"]
            target = referenced(service, "google_cloudfunctions2_function") or functions.get(
                text(service)
            )
            granted.setdefault(str(target), []).append(_member(body))
    return granted


def _member(body: dict[str, Any]) -> str:
    """Who a binding grants to: a service account of ours by name, or as written."""
    member = text(body["member"])
    if member == "each.value":
        return text(body["for_each"]).removeprefix("toset(").removesuffix(")")
    return referenced(body["member"], "google_service_account") or member


def _binding(kind: str, body: dict[str, Any]) -> str:
    """``ROLE to MEMBER on SCOPE`` for one IAM member resource."""
    role = text(body["role"])
    scope = kind.removeprefix("google_").removesuffix("_iam_member")
    target = next((body[key] for key in ("topic", "subscription", "bucket") if key in body), "")
    on = f"{scope} {_named(target) or ''}".rstrip()
    # A condition narrows the grant (niah-build's storage role holds only on the sources
    # bucket): say so rather than show it as project-wide.
    condition = first(body.get("condition") or [{}]).get("title")
    return f"{role} to {_member(body)} on {on}" + (f" if {text(condition)}" if condition else "")


def _named(value: Any) -> str | None:
    """What a reference names: a resource, its ``for_each`` key, or a local map's key."""
    named = REFERENCE.search(str(value))
    keyed = re.search(r'\["(\w+)"\]', str(value))  # local.topic_ids["reports"]
    return (named.group(3) or named.group(2)) if named else keyed.group(1) if keyed else None


def _account(value: Any) -> str | None:
    return referenced(value, "google_service_account")


def _subscription(body: dict[str, Any]) -> tuple[str | None, str]:
    """The function a push subscription calls, and its summary line."""
    push = first(body["push_config"])
    target = referenced(push["push_endpoint"], "google_cloudfunctions2_function")
    retry = first(body.get("retry_policy") or [{}])
    dead = first(body.get("dead_letter_policy") or [{}])
    expiry = first(body.get("expiration_policy") or [{"ttl": "default"}])
    lowest, highest = retry.get("minimum_backoff", "none"), retry.get("maximum_backoff", "none")
    backoff = f"{text(lowest)}..{text(highest)}"
    return target, " ".join(
        [
            f"subscription {text(body['name'])}",
            f"topic={_named(body['topic'])}",
            f"push={target}",
            f"oidc={_account(first(push['oidc_token'])['service_account_email'])}",
            f"retry={backoff}",
            f"dead_letter={_named(dead.get('dead_letter_topic'))}",
            f"max_delivery_attempts={dead.get('max_delivery_attempts')}",
            f"ack_deadline={body.get('ack_deadline_seconds')}",
            f"expiration={text(expiry['ttl']) or 'never'}",
        ]
    )


def _function(name: str, body: dict[str, Any], invoked_by: list[str], pushed_by: str) -> str:
    build, service = first(body["build_config"]), first(body["service_config"])
    storage = first(first(build["source"])["storage_source"])
    source = re.search(r'source\[\\?"(\w+)\\?"\]', str(storage["object"]))
    return " ".join(
        [
            f"function {text(body['name'])} ({name}) gen2",
            f"runtime={text(build['runtime'])}",
            f"entry_point={text(build['entry_point'])}",
            f"source={source.group(1) if source else None}",
            f"build_account={_account(build.get('service_account'))}",
            f"ingress={text(service.get('ingress_settings', 'ALLOW_ALL (default)'))}",
            f"max_instances={text(service.get('max_instance_count', 'unset'))}",
            f"concurrency={text(service.get('max_instance_request_concurrency', 1))}",
            f"memory={text(service.get('available_memory'))}",
            f"timeout={service.get('timeout_seconds')}",
            f"service_account={_account(service.get('service_account_email'))}",
            f"invokers={','.join(sorted(invoked_by)) or 'none'}",
            f"pushed_by={pushed_by}",
            f"event_trigger={'yes' if 'event_trigger' in body else 'no'}",
        ]
    )


def summary(found: Resources) -> list[str]:
    """One line per push subscription, scheduler job, function and IAM binding."""
    lines = []
    pushed_by: dict[str, str] = {}
    for (kind, _), body in found.items():
        if kind == "google_pubsub_subscription" and "push_config" in body:
            target, line = _subscription(body)
            pushed_by[str(target)] = text(body["name"])
            lines.append(line)
    for (kind, _), body in found.items():
        if kind == "google_cloud_scheduler_job":
            http = first(body["http_target"])
            lines.append(
                f"scheduler {text(body['name'])} schedule={text(body['schedule'])!r} "
                f"target={referenced(http['uri'], 'google_cloudfunctions2_function')} "
                f"oidc={_account(first(http['oidc_token'])['service_account_email'])}"
            )
    callers = invokers(found)
    for (kind, name), body in sorted(found.items()):
        if kind == "google_cloudfunctions2_function":
            lines.append(_function(name, body, callers.get(name, []), pushed_by.get(name, "none")))
    for (kind, name), body in sorted(found.items()):
        if kind.endswith("_iam_member") and kind != "google_cloud_run_service_iam_member":
            lines.append(f"binding {name}: {_binding(kind, body)}")
    everything = " ".join(str(body) for body in found.values())
    public = sorted(set(re.findall(r"allUsers|allAuthenticatedUsers", everything)))
    lines.append(f"public members: {', '.join(public) or 'none'}")
    return lines


def write_tokenizer(out: Path) -> None:
    """The Gemma 3 tokenizer model deploy uploads (rebuilt from the GGUF, checksum-pinned)."""
    from niah.catalog.models import GEMMA3_TOKENIZER
    from niah.models.tokenizer import tokenizer_model_bytes

    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(tokenizer_model_bytes(GEMMA3_TOKENIZER))


def main(argv: list[str] | None = None) -> int:
    """Command line: ``summary [INFRA_DIR]`` or ``tokenizer OUT_FILE``."""
    parser = argparse.ArgumentParser(prog="python -m niah_devtools.deploy_plan")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("summary").add_argument("infra", nargs="?", type=Path, default=INFRA)
    commands.add_parser("tokenizer").add_argument("out", type=Path)
    args = parser.parse_args(argv)
    if args.command == "summary":
        print("\n".join(summary(resources(args.infra))))
    else:
        write_tokenizer(args.out)
        print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
