"""The local stack for integration tests: real emulators, real functions, real model.

One stack per session, on its own ports (so a running demo stack is left alone), torn
down at the end. A "tap" pull subscription on the cells topic sees every published
cell message, so tests can count what the dispatcher published.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from google.api_core.exceptions import DeadlineExceeded

from niah_devtools import localstack
from tests import cli_inprocess

# NIAH_TEST_BASE_PORT moves the test stack's nine ports (default 8570-8578). Run with
# pytest-xdist (``-n``), each worker (gw0, gw1, ...) starts its own stacks 1,000 ports
# further on, so workers never share an emulator.
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
BASE_PORT = int(os.environ.get("NIAH_TEST_BASE_PORT", "8570")) + 1000 * int(_WORKER[2:] or 0)
# The account the local budget-alert "push" names (in production, niah-pusher).
BUDGET_ALERT_PUSHER = "niah-pusher@niah-local.iam.gserviceaccount.com"


@dataclass
class Stack:
    env: dict[str, str]
    state_dir: Path
    tap: str

    def niah(self, *args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
        """``niah ARGS`` against this stack, in this interpreter (tests/cli_inprocess.py).

        A process would cost each call about 1.5 CPU-seconds of start and imports; what
        only a process shows (a closed pipe, Ctrl-C, the console script) runs as one.
        ``timeout`` bounds it as subprocess.run's did (a hung call fails the test).
        """
        return cli_inprocess.niah(*args, env={**os.environ, **self.env}, timeout=timeout)

    def log_lines(self, function: str) -> list[dict[str, Any]]:
        lines = []
        for line in (self.state_dir / "logs" / f"{function}.log").read_text().splitlines():
            if line.startswith("{"):
                try:
                    lines.append(json.loads(line))
                except json.JSONDecodeError:
                    continue
        return lines


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    import google.cloud.pubsub_v1 as pubsub_v1

    state_dir = tmp_path_factory.mktemp("stack")
    env = localstack.up(
        state_dir,
        base_port=BASE_PORT,
        worker_env={
            # Short SDK backoff: rate-limit storms resolve in seconds, not minutes.
            "NIAH_GEMINI_RETRY_INITIAL_DELAY": "0.2",
            "NIAH_GEMINI_RETRY_MAX_DELAY": "0.5",
            # Give a cell up after 3 failed deliveries: the emulator's redelivery
            # backoff ignores the subscription's maximum and grows to minutes.
            "NIAH_MAX_CELL_FAILURES": "3",
            # Sweep runs that made no progress for 30 s (not less than the ack
            # deadline, so it does not race redelivery), checking every 5 s.
            "NIAH_SWEEP_STALLED_AFTER_SECONDS": "30",
            # A frozen Firestore fails a cell's commit after 10 s (60 s in production),
            # inside the freeze tests' 40 s freeze, so the kept-answer path is taken.
            "NIAH_STORE_TIMEOUT_SECONDS": "10",
            # Budget alerts come with this account's token (test_limits_stack.py), and
            # a lifted kill switch reaches the dispatcher within a second.
            "NIAH_BUDGET_ALERT_PUSHER": BUDGET_ALERT_PUSHER,
            "NIAH_KILL_SWITCH_CACHE_SECONDS": "1",
        },
        # Test cells are small; a push held by a killed worker is due again after 30 s.
        ack_deadline_seconds=30,
        sweep_every_seconds=5,
    )
    subscriber = pubsub_v1.SubscriberClient()
    tap = subscriber.subscription_path(localstack.PROJECT, "niah-cells-tap")
    subscriber.create_subscription(
        name=tap, topic=f"projects/{localstack.PROJECT}/topics/niah-cells"
    )
    try:
        yield Stack(env, state_dir, tap)
    finally:
        localstack.down(state_dir)


# The stack tests whose model is the Vertex stand-in (or none): faults, recovery, batch,
# Gemini's errors and limits, hostile input, each function's own source. They mostly
# wait (on freezes, leases, a slow stand-in, virtualenvs), so scripts/test.sh runs them
# on a default stack of their own beside the tests that keep the local model busy.
SIDE_STACK_MODULES = frozenset(
    {
        "test_bad_input",
        "test_certify_stack",
        "test_context_rot_stack",
        "test_sentinel_stack",
        "test_spend_stack",
        "test_batch_stack",
        "test_batch_jobs_store",
        "test_faults",
        "test_function_sources",
        "test_gemini_run",
        "test_google_errors_stack",
        "test_limits_stack",
        "test_plan_stack",
        "test_recovery",
        "test_standin_tasks_run",
        "test_store",
    }
)


# The longest waiters of the side and production groups, each group's second process
# (``second_process``): scripts/test.sh runs them on stacks of their own beside the rest
# of their group, which then ends in about half the time (the side group's recovery
# tests about 380 s of its 800; the production group's batch and report kills about 360).
SECOND_PROCESS_MODULES = frozenset({"test_recovery", "test_recovery_batch", "test_recovery_report"})


# The tests that start stacks of their own (the README's quickstart; the benchmark's
# smoke run, one stack and emulators of its parts): scripts/test.sh runs them in a
# process of their own from the start, not after the local model's stack tests.
OWN_STACK_MODULES = frozenset({"test_bench_smoke", "test_quickstart"})


@pytest.hookimpl(tryfirst=True)  # before ``-m`` selects by marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the production-settings stack's tests and those of the two module lists.

    ``-m production_stack``, ``-m side_stack`` and ``-m own_stack`` select them; each
    group runs on stacks of its own, so scripts/test.sh runs them beside the rest.
    """
    for item in items:
        if item.path.stem in SECOND_PROCESS_MODULES:
            item.add_marker(pytest.mark.second_process)
        if "production_stack" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.production_stack)
        elif item.path.stem in SIDE_STACK_MODULES:
            item.add_marker(pytest.mark.side_stack)
        elif item.path.stem in OWN_STACK_MODULES:
            item.add_marker(pytest.mark.own_stack)


@pytest.fixture(scope="session")
def production_stack_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """A second stack whose recovery settings are a deployment's, for fault tests.

    The sweep runs as Cloud Scheduler calls it deployed, with the shipped stall window;
    leases, the ack deadline (600 s, infra/pubsub.tf) and retries are the shipped ones
    too, so a recovery measured here is the one production gets. Its own ports
    (``NIAH_TEST_BASE_PORT`` + 10 onwards); started only by the tests that ask for it.
    """
    state_dir = tmp_path_factory.mktemp("production-stack")
    before = dict(os.environ)
    try:
        env = localstack.up(
            state_dir, base_port=BASE_PORT + 10, ack_deadline_seconds=600, production_sweep=True
        )
    finally:
        _restore(before)  # the default stack's tests keep talking to it
    try:
        yield Stack(env, state_dir, "")
    finally:
        localstack.down(state_dir)


@pytest.fixture
def production_stack(production_stack_session: Stack) -> Iterator[Stack]:
    """The production-settings stack, its emulators the clients' for this test."""
    before = dict(os.environ)
    os.environ.update(production_stack_session.env)
    try:
        yield production_stack_session
    finally:
        _restore(before)


def _restore(environ: dict[str, str]) -> None:
    """Put ``os.environ`` back as it was."""
    for key in set(os.environ) - set(environ):
        del os.environ[key]
    os.environ.update(environ)


def drain(subscription: str, *, settle_seconds: float = 2.0) -> list[dict[str, Any]]:
    """Pull and ack everything on a subscription until it stays empty for a moment."""
    import google.cloud.pubsub_v1 as pubsub_v1

    subscriber = pubsub_v1.SubscriberClient()
    messages: list[dict[str, Any]] = []
    quiet_since = time.monotonic()
    while time.monotonic() - quiet_since < settle_seconds:
        try:
            # On an empty subscription the emulator holds a pull until its deadline.
            response = subscriber.pull(
                request={"subscription": subscription, "max_messages": 1000}, timeout=0.5
            )
        except DeadlineExceeded:
            continue
        if response.received_messages:
            quiet_since = time.monotonic()
            messages += [json.loads(m.message.data) for m in response.received_messages]
            subscriber.acknowledge(
                request={
                    "subscription": subscription,
                    "ack_ids": [m.ack_id for m in response.received_messages],
                }
            )
        else:
            time.sleep(0.2)
    return messages


def wait_for(predicate: Callable[[], Any], *, timeout: float, what: str) -> Any:
    """Poll until ``predicate`` returns something truthy."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
