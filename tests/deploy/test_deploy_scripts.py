"""The deploy and gcloud-only scripts, run for real with fakes of gcloud and terraform on PATH.

A fake is a small executable: it records its arguments (or prints a token) so a test
sees what the script would have asked of Google, without calling Google.
"""

from __future__ import annotations

import hashlib
import json
import os
import pty
import re
import shutil
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from niah.catalog.models import GEMMA3_TOKENIZER_SHA256
from tests import REPO
from tests.conftest import ESSAYS

FUNCTIONS = ("niah-dispatcher", "niah-worker", "niah-dead-letter", "niah-report", "niah-sweep")


def fake_tools(tmp_path: Path, gcloud_says: str = "") -> dict[str, str]:
    """An environment whose gcloud and terraform are fakes that log their calls."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for tool in ("gcloud", "terraform"):
        script = bin_dir / tool
        script.write_text(
            f'#!/bin/sh\necho "{tool} $*" >> "{tmp_path}/calls.log"\n'
            + (f"echo {gcloud_says}\n" if tool == "gcloud" and gcloud_says else "exit 99\n")
        )
        script.chmod(0o755)
    return {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "CLOUDSDK_CONFIG": str(tmp_path / "no-gcloud-config"),
        "GOOGLE_APPLICATION_CREDENTIALS": str(tmp_path / "no-credentials.json"),
    }


def calls(tmp_path: Path) -> list[str]:
    log = tmp_path / "calls.log"
    return log.read_text().splitlines() if log.exists() else []


def run(
    script: str, *args: str, env: dict[str, str], checkout: Path = REPO
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(checkout / "scripts" / script), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=checkout,
    )


def test_the_deploy_dry_run_needs_no_credentials_terraform_or_network_and_shows_the_plan(
    tmp_path: Path,
) -> None:
    env = fake_tools(tmp_path) | {
        "PROJECT": "my-proj",
        "BUCKET": "my-proj-niah",
        "INVOKER": "user:me@example.com,group:team@example.com",
        "WORKER_MAX_INSTANCES": "7",
    }
    result = run("deploy.sh", "--dry-run", env=env)
    assert result.returncode == 0, result.stderr
    assert calls(tmp_path) == []  # neither gcloud nor terraform was run
    out = result.stdout
    inputs = json.loads(out[out.index("{") : out.index("}\n") + 1])
    assert inputs["project"] == "my-proj" and inputs["bucket"] == "my-proj-niah"
    assert inputs["run_invokers"] == ["user:me@example.com", "group:team@example.com"]
    assert inputs["worker_max_instances"] == 7 and inputs["local_model"] is False
    commands = out[out.index("# Commands:") : out.index("# What the Terraform")].splitlines()
    assert any(c.startswith("scripts/package_functions.sh ") for c in commands)
    assert "terraform -chdir=infra init -input=false" in commands
    assert any(
        c.startswith("terraform -chdir=infra apply -input=false -var-file=") for c in commands
    )
    # The flags that matter, as the Terraform renders them.
    lines = out[out.index("# What the Terraform") :].splitlines()[1:]
    functions = {line.split()[1]: line for line in lines if line.startswith("function ")}
    assert sorted(functions) == sorted(FUNCTIONS)
    accounts = {re.search(r"service_account=(\w+)", f) for f in functions.values()}
    assert len({a.group(1) for a in accounts if a}) == len(FUNCTIONS)  # one each
    for name, line in functions.items():
        assert " gen2 " in line and "build_account=build" in line, line
        assert "max_instances=unset" not in line, line
        public = name == "niah-dispatcher"  # users call it from outside Google's network
        assert f"ingress={'ALLOW_ALL' if public else 'ALLOW_INTERNAL_ONLY'} " in line, line
        # The pusher invokes the dispatcher too: budget alerts (infra/budget.tf).
        assert f"invokers={'pusher,var.run_invokers' if public else 'pusher'} " in line, line
    subscriptions = [line for line in lines if line.startswith("subscription ")]
    assert {re.search(r"push=(\w+)", s).group(1) for s in subscriptions if "push=" in s} == {
        "worker",
        "dead_letter",
        "report",
        "dispatcher",  # budget alerts, to its /budget-alert route
    }
    for line in subscriptions:  # every event trigger retries with backoff, authenticated
        assert "retry=10s..600s" in line and "oidc=pusher" in line and "expiration=never" in line
    for pushed in ("worker", "report"):  # a poisoned report request is dead-lettered too
        assert "dead_letter=dead_letter max_delivery_attempts=5" in next(
            s for s in subscriptions if f"push={pushed}" in s
        )
    assert "dead_letter=None" in next(s for s in subscriptions if "push=dead_letter" in s)
    assert any(line.startswith("scheduler niah-sweep") and "target=sweep" in line for line in lines)
    assert lines[-1] == "public members: none"


def succeeding_terraform(tmp_path: Path) -> None:
    """A fake terraform that succeeds, says whether it had a terminal, and has an output."""
    terraform = tmp_path / "bin" / "terraform"
    terraform.write_text(
        f'#!/bin/sh\necho "terraform $*" >> "{tmp_path}/calls.log"\n'
        f'[ -t 0 ] && echo "terraform had a terminal" >> "{tmp_path}/calls.log"\n'
        'case "$*" in *output*) echo https://niah-dispatcher.example.run.app ;; esac\n'
    )


def test_deploy_builds_every_input_then_runs_terraform_in_order(tmp_path: Path) -> None:
    """The real path, with gcloud and terraform as fakes that succeed; --yes asks nobody."""
    env = fake_tools(tmp_path, gcloud_says="ok") | {"PROJECT": "my-proj", "BUCKET": "my-proj-niah"}
    succeeding_terraform(tmp_path)
    fetched = REPO / "build" / "haystacks" / "paul_graham_essays"
    if not (fetched / ".complete").exists():  # what scripts/setup.sh fetched: no download here
        shutil.copytree(ESSAYS, fetched, dirs_exist_ok=True)
    result = run("deploy.sh", "--yes", env=env)
    assert result.returncode == 0, result.stderr
    tfvars = REPO / "build" / "deploy.tfvars.json"
    assert [line.split(" -")[0] for line in calls(tmp_path)] == [
        "gcloud services enable serviceusage.googleapis.com cloudresourcemanager.googleapis.com",
        "terraform",
        "terraform",
        "terraform",
    ]
    assert calls(tmp_path)[1:] == [
        "terraform -chdir=infra init -input=false",
        f"terraform -chdir=infra apply -input=false -var-file={tfvars} -auto-approve",
        "terraform -chdir=infra output -raw dispatcher_url",
    ]
    inputs = json.loads(tfvars.read_text())
    for name in ("dispatcher", "worker", "report"):
        assert (Path(inputs["sources_dir"]) / f"{name}.zip").stat().st_size > 10_000
    model = Path(inputs["tokenizer_model"]).read_bytes()
    assert hashlib.sha256(model).hexdigest() == GEMMA3_TOKENIZER_SHA256
    essays = list((Path(inputs["haystacks_dir"]) / "paul_graham_essays").glob("*.txt"))
    assert len(essays) == 49
    assert "DISPATCHER_URL=https://niah-dispatcher.example.run.app" in result.stdout


def test_without_yes_terraform_asks_on_the_terminal_and_without_one_deploy_refuses(
    tmp_path: Path,
) -> None:
    env = fake_tools(tmp_path, gcloud_says="ok") | {"PROJECT": "my-proj", "BUCKET": "my-proj-niah"}
    succeeding_terraform(tmp_path)
    refused = run("deploy.sh", env=env)  # stdin is not a terminal here
    assert refused.returncode == 2 and "pass --yes" in refused.stderr
    assert calls(tmp_path) == []  # refused before building or calling anything
    main, terminal = pty.openpty()
    try:
        asked = subprocess.run(
            ["bash", str(REPO / "scripts" / "deploy.sh")],
            stdin=terminal,
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
            cwd=REPO,
        )
    finally:
        os.close(main)
        os.close(terminal)
    assert asked.returncode == 0, asked.stderr
    tfvars = REPO / "build" / "deploy.tfvars.json"
    apply = f"terraform -chdir=infra apply -input=false -var-file={tfvars}"
    # No -auto-approve, and terraform got the terminal to ask on.
    assert calls(tmp_path)[calls(tmp_path).index(apply) + 1] == "terraform had a terminal"
    dry = run("deploy.sh", "--dry-run", env=env).stdout.splitlines()
    assert f"terraform -chdir=infra apply -input=false -var-file={tfvars}" in dry
    dry_yes = run("deploy.sh", "--dry-run", "--yes", env=env).stdout.splitlines()
    assert f"terraform -chdir=infra apply -input=false -var-file={tfvars} -auto-approve" in dry_yes


def checkout_copy(tmp_path: Path) -> Path:
    """What deploy.sh reads of the checkout, in a folder of its own (with no .venv)."""
    copy = tmp_path / "checkout"
    for folder in ("scripts", "infra", "shared", "devtools", "functions"):
        skip = ["__pycache__", ".terraform*", "*.tfstate*"]
        if folder == "functions":
            skip.append("niah")  # a packaged copy of shared/niah
        shutil.copytree(REPO / folder, copy / folder, ignore=shutil.ignore_patterns(*skip))
    for name in ("requirements-deploy.txt", "requirements.txt"):
        shutil.copy(REPO / name, copy / name)
    return copy


def python_at(venv: Path, works: bool) -> None:
    """A venv's python and pip: the project's real ones, or ones that cannot start."""
    (venv / "bin").mkdir(parents=True)
    for tool in ("python", "pip"):
        real = REPO / ".venv" / "bin" / tool
        script = venv / "bin" / tool
        script.write_text(f'#!/bin/sh\nexec "{real}" "$@"\n' if works else "#!/bin/sh\nexit 127\n")
        script.chmod(0o755)


def test_the_dry_run_passes_with_a_broken_venv_and_falls_back_to_a_current_venv_deploy(
    tmp_path: Path,
) -> None:
    checkout = checkout_copy(tmp_path)
    python_at(checkout / ".venv", works=False)  # e.g. a venv whose Python is gone
    # Issue 23's own command: placeholder names, which a dry run only warns about.
    env = fake_tools(tmp_path) | {"PROJECT": "p", "BUCKET": "b"}
    alone = run("deploy.sh", "--dry-run", env=env, checkout=checkout)
    assert alone.returncode == 0, alone.stderr
    assert [line.split("'")[0] for line in alone.stderr.splitlines()] == [
        "deploy: warning: PROJECT ",
        "deploy: warning: BUCKET ",
    ]
    assert "python3 -m venv --clear .venv-deploy" in alone.stdout
    assert alone.stdout.rstrip().endswith("(rendered once .venv-deploy exists)")
    # A .venv-deploy made from today's requirements-deploy.txt is used in its place ...
    python_at(checkout / ".venv-deploy", works=True)
    stamp = checkout / ".venv-deploy" / ".requirements.sha"
    stamp.write_text(
        subprocess.run(
            ["sha256sum"],
            input=(checkout / "requirements-deploy.txt").read_bytes(),
            capture_output=True,
            check=True,
        ).stdout.decode()
    )
    fallback = run("deploy.sh", "--dry-run", env=env, checkout=checkout)
    assert fallback.returncode == 0, fallback.stderr
    assert f"{checkout}/.venv-deploy/bin/python -m niah_devtools.deploy_plan tokenizer" in (
        fallback.stdout
    )
    assert fallback.stdout.rstrip().endswith("public members: none")  # the plan, rendered
    # ... and one made from other requirements is not.
    stamp.write_text("stale\n")
    stale = run("deploy.sh", "--dry-run", env=env, checkout=checkout)
    assert stale.returncode == 0 and "python3 -m venv --clear .venv-deploy" in stale.stdout
    assert calls(tmp_path) == []


def test_deploy_makes_venv_deploy_afresh_when_no_python_can_deploy(tmp_path: Path) -> None:
    """A broken .venv and a stale .venv-deploy: .venv-deploy is made again, then used."""
    checkout = checkout_copy(tmp_path)
    python_at(checkout / ".venv", works=False)
    python_at(checkout / ".venv-deploy", works=False)
    (checkout / ".venv-deploy" / ".requirements.sha").write_text("stale\n")
    env = fake_tools(tmp_path, gcloud_says="ok") | {"PROJECT": "my-proj", "BUCKET": "my-proj-niah"}
    succeeding_terraform(tmp_path)
    # The essays scripts/setup.sh fetched, so nothing is downloaded here.
    shutil.copytree(ESSAYS, checkout / "build" / "haystacks" / "paul_graham_essays")
    # python3 -m venv and pip are faked (no 500 MB install in a unit test): the fake venv
    # holds the project's Python and a pip that only records.
    fake_python = tmp_path / "bin" / "python3"
    fake_python.write_text(
        "#!/bin/sh\n"
        'if [ "$1 $2" = "-m venv" ]; then\n'
        f'  echo "python3 $*" >> "{tmp_path}/calls.log"\n'
        '  eval venv=\\${$#}; rm -rf "$venv"; mkdir -p "$venv/bin"\n'
        f'  printf \'#!/bin/sh\\nexec "{REPO}/.venv/bin/python" "$@"\\n\' > "$venv/bin/python"\n'
        f'  printf \'#!/bin/sh\\necho "pip $*" >> "{tmp_path}/calls.log"\\n\' > "$venv/bin/pip"\n'
        '  chmod +x "$venv/bin/python" "$venv/bin/pip"; exit 0\n'
        "fi\n"
        f'exec {shutil.which("python3")} "$@"\n'
    )
    fake_python.chmod(0o755)
    result = run("deploy.sh", "--yes", env=env, checkout=checkout)
    assert result.returncode == 0, result.stderr
    assert calls(tmp_path)[:2] == [
        f"python3 -m venv --clear {checkout}/.venv-deploy",
        "pip install --quiet --disable-pip-version-check -r requirements-deploy.txt",
    ]
    stamp = (checkout / ".venv-deploy" / ".requirements.sha").read_text()
    assert (
        stamp.split()[0]
        == hashlib.sha256((checkout / "requirements-deploy.txt").read_bytes()).hexdigest()
    )
    inputs = json.loads((checkout / "build" / "deploy.tfvars.json").read_text())
    model = Path(inputs["tokenizer_model"]).read_bytes()
    assert hashlib.sha256(model).hexdigest() == GEMMA3_TOKENIZER_SHA256
    assert calls(tmp_path)[-2].endswith("-auto-approve")


def test_deploy_refuses_inputs_that_would_fail_halfway_and_a_dry_run_warns_of_them(
    tmp_path: Path,
) -> None:
    env = fake_tools(tmp_path) | {"PROJECT": "my-proj", "BUCKET": "my-proj-niah"}
    bad_member = run("deploy.sh", "--yes", env=env | {"INVOKER": "me@example.com"})
    assert bad_member.returncode == 2 and "user:you@example.com" in bad_member.stderr
    bad_project = run("deploy.sh", "--yes", env=env | {"PROJECT": "My Project"})
    assert bad_project.returncode == 2 and "project ID" in bad_project.stderr
    # A dry run creates nothing: it names the problem and still shows the rest.
    warned = run("deploy.sh", "--dry-run", env=env | {"PROJECT": "My Project"})
    assert warned.returncode == 0, warned.stderr
    assert warned.stderr.startswith("deploy: warning: PROJECT 'My Project' is not a project ID")
    assert "without --dry-run, deploy refuses it" in warned.stderr
    assert '"project": "My Project"' in warned.stdout and "# Commands:" in warned.stdout
    # What would break the Terraform inputs' JSON is refused even there.
    for broken in (
        {"BUCKET": 'my"bucket'},
        {"INVOKER": "user:a\\b"},
        {"WORKER_CONCURRENCY": "four"},
    ):
        refused = run("deploy.sh", "--dry-run", env=env | broken)
        assert refused.returncode == 2, broken
    assert calls(tmp_path) == []


def test_start_run_turns_harness_options_into_the_request(tmp_path: Path) -> None:
    env = fake_tools(tmp_path) | {"DISPATCHER_URL": "https://niah-dispatcher.example.run.app"}
    result = run(
        "start_run.sh",
        *("--context_lengths", "4000", "8000", "--document-depth-percents", "[0, 50, 100]"),
        *("--model_name", "gemini-2.5-flash", "--dynamic_needle", "false", "--seed", "7"),
        *("--needle", "It's 42.", "--dry-run"),
        env=env,
    )
    assert result.returncode == 0, result.stderr
    body = json.loads(result.stdout.splitlines()[0])
    assert body == {
        "context_lengths": [4000, 8000],
        "document_depth_percents": [0, 50, 100],
        "model_name": "gemini-2.5-flash",
        "dynamic_needle": False,
        "seed": 7,
        "needle": "It's 42.",
    }
    assert "gcloud auth print-identity-token" in result.stdout.splitlines()[1]
    assert calls(tmp_path) == []


def test_start_run_batch_asks_for_batch_execution(tmp_path: Path) -> None:
    env = fake_tools(tmp_path) | {"DISPATCHER_URL": "https://niah-dispatcher.example.run.app"}
    result = run("start_run.sh", "--batch", "--context_lengths", "4000", "--dry-run", env=env)
    assert result.returncode == 0, result.stderr
    body = json.loads(result.stdout.splitlines()[0])
    assert body == {"execution": "batch", "context_lengths": [4000]}


def test_start_run_keeps_dashes_in_values_and_refuses_what_json_cannot_carry(
    tmp_path: Path,
) -> None:
    env = fake_tools(tmp_path) | {"DISPATCHER_URL": "https://niah-dispatcher.example.run.app"}
    inline = run(
        "start_run.sh",
        *("--model-name=gemini-2.5-flash", "--retrieval-question=What is well-known?"),
        *("--context_lengths=4000", "--dry-run"),
        env=env,
    )
    assert inline.returncode == 0, inline.stderr
    assert json.loads(inline.stdout.splitlines()[0]) == {
        "model_name": "gemini-2.5-flash",
        "retrieval_question": "What is well-known?",
        "context_lengths": [4000],
    }
    # NaN is no JSON number: it goes as text, and the dispatcher names the field.
    nan = run("start_run.sh", "--context_lengths", "NaN", "--dry-run", env=env)
    assert json.loads(nan.stdout.splitlines()[0]) == {"context_lengths": ["NaN"]}
    for bad in ("[1000,", "[NaN]"):
        refused = run("start_run.sh", "--context_lengths", bad, "--dry-run", env=env)
        assert refused.returncode == 1, bad
        assert refused.stderr.startswith("start_run: --context_lengths"), refused.stderr
        assert "Traceback" not in refused.stderr


class Dispatcher(BaseHTTPRequestHandler):
    """A stand-in dispatcher: records each request, answers as the real one does."""

    seen: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        Dispatcher.seen.append({"auth": self.headers["Authorization"], "body": body})
        answer: dict[str, Any]
        if "context_lengths" not in body:
            status, answer = 400, {"error": {"field": "context_lengths", "message": "needed here"}}
        else:
            status, answer = (
                202,
                {
                    "run_id": "r-0123abcd",
                    "cells": 6,
                    "published": 1,
                    "report_prefix": "gs://my-proj-niah/reports/r-0123abcd/",
                },
            )
        data = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def dispatcher_url() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), Dispatcher)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    Dispatcher.seen.clear()
    yield f"http://127.0.0.1:{server.server_port}/"
    server.shutdown()


def test_start_run_posts_with_the_gcloud_identity_token_and_says_where_to_look(
    tmp_path: Path, dispatcher_url: str
) -> None:
    env = fake_tools(tmp_path, gcloud_says="token-from-gcloud") | {"PROJECT": "my-proj"}
    result = run("start_run.sh", "--url", dispatcher_url, "--context_lengths", "4000", env=env)
    assert result.returncode == 0, result.stderr
    assert Dispatcher.seen == [
        {"auth": "Bearer token-from-gcloud", "body": {"context_lengths": [4000]}}
    ]
    assert "gcloud auth print-identity-token" in calls(tmp_path)
    assert "run ID:    r-0123abcd" in result.stdout
    assert (
        "https://console.cloud.google.com/firestore/databases/-default-/data/panel/runs/"
        "r-0123abcd?project=my-proj"
    ) in result.stdout
    assert "gs://my-proj-niah/reports/r-0123abcd/" in result.stdout
    refused = run("start_run.sh", "--url", dispatcher_url, "--seed", "1", env=env)
    assert refused.returncode != 0 and "400: context_lengths: needed here" in refused.stderr


def test_start_run_keeps_the_identity_token_off_every_command_line(
    tmp_path: Path, dispatcher_url: str
) -> None:
    """Any user of the machine may read a process's arguments (ps, /proc/PID/cmdline).

    curl is wrapped to record the arguments it is started with; the dispatcher still
    gets the token, read by curl from its standard input.
    """
    env = fake_tools(tmp_path, gcloud_says="secret-identity-token") | {"PROJECT": "my-proj"}
    real_curl = shutil.which("curl")
    assert real_curl
    wrapper = tmp_path / "bin" / "curl"
    wrapper.write_text(
        "#!/bin/sh\n"
        f'printf "%s\\n" "$0" "$@" > "{tmp_path}/curl-argv"\n'
        f'cat /proc/$$/cmdline | tr "\\0" " " >> "{tmp_path}/curl-argv"\n'
        f'exec {real_curl} "$@"\n'
    )
    wrapper.chmod(0o755)
    result = run("start_run.sh", "--url", dispatcher_url, "--context_lengths", "4000", env=env)
    assert result.returncode == 0, result.stderr
    assert Dispatcher.seen == [
        {"auth": "Bearer secret-identity-token", "body": {"context_lengths": [4000]}}
    ]
    argv = (tmp_path / "curl-argv").read_text()
    assert "-H\n@-\n" in argv and dispatcher_url in argv  # the wrapper saw the real call
    assert "secret-identity-token" not in argv
    assert "secret-identity-token" not in result.stdout + result.stderr
    # The dry run shows the same way of calling, with no token in it.
    shown = run(
        "start_run.sh", "--url", dispatcher_url, "--context_lengths", "4000", "--dry-run", env=env
    )
    assert "| curl -sS -X POST" in shown.stdout and "-H @-" in shown.stdout
    assert "secret-identity-token" not in shown.stdout


def test_upload_haystack_copies_the_txt_files_and_refuses_a_folder_without_any(
    tmp_path: Path,
) -> None:
    env = fake_tools(tmp_path) | {"BUCKET": "my-proj-niah"}
    texts = tmp_path / "texts"
    texts.mkdir()
    (texts / "b.txt").write_text("Second.")
    (texts / "a.txt").write_text("First.")
    (texts / "notes.md").write_text("not a haystack file")
    planned = run("upload_haystack.sh", str(texts), "mine", "--dry-run", env=env)
    assert planned.returncode == 0, planned.stderr
    assert planned.stdout.split() == [
        *("gcloud", "storage", "cp", str(texts / "a.txt"), str(texts / "b.txt")),
        "gs://my-proj-niah/haystacks/mine/",
    ]
    uploaded = run(
        "upload_haystack.sh", str(texts), "mine", env=fake_tools(tmp_path, "ok") | {"BUCKET": "b"}
    )
    assert uploaded.returncode == 0 and "--haystack_dir mine" in uploaded.stdout
    assert calls(tmp_path)[-1].startswith("gcloud storage cp ")
    empty = tmp_path / "empty"
    empty.mkdir()
    refused = run("upload_haystack.sh", str(empty), "mine", "--dry-run", env=env)
    assert refused.returncode == 2 and "no .txt files" in refused.stderr
