"""One owner per message format, and entry points a page long.

``niah.service.messages`` writes and reads what a message is (its ``kind``, and the
fields that told kinds apart before it: a batch step's action, a certify step's flag);
every other module gets a parsed message and dispatches on its type. The functions'
``main.py`` files only decode, route to a service function and map errors to statuses.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from niah.core.request.spec import RunRequest
from niah.core.runs import RunRecord
from niah.errors import MalformedMessageError
from niah.service.messages import (
    KIND,
    BatchStep,
    CellTask,
    CertifyStep,
    ReportRequest,
    batch_message,
    certify_step_message,
    parse_message,
    report_message,
)
from tests import REPO

MESSAGES = REPO / "shared" / "niah" / "service" / "messages.py"
SHIPPED_AND_TOOLS = ("shared", "functions", "scripts", "devtools")
MAX_HANDLER_LINES = 60

# Keys only messages.py may name: anywhere else, a string literal of one is a module
# telling message kinds apart by itself.
DISCRIMINATORS = re.compile(r"""["'](batch_action|certify_step)["']""")
# A message's kind read by a module that handles messages (imports the messages or the
# bus, or is an entry point): ``body["kind"]``, ``body.get("kind")``.
KIND_READ = re.compile(r"""(\[\s*|\.get\(\s*)["']kind["']""")
HANDLES_MESSAGES = re.compile(r"niah\.service\.messages|niah\.cloud\.bus|service import messages")


def python_files() -> list[Path]:
    return sorted(
        path
        for top in SHIPPED_AND_TOOLS
        for path in (REPO / top).rglob("*.py")
        if ".venv" not in path.parts and path != MESSAGES
    )


def test_no_module_but_messages_reads_a_message_discriminator() -> None:
    found = []
    for path in python_files():
        text = path.read_text()
        where = path.relative_to(REPO)
        found += [f"{where}: {m.group(0)}" for m in DISCRIMINATORS.finditer(text)]
        if HANDLES_MESSAGES.search(text) or where.parts[0] == "functions":
            found += [f"{where}: reads {m.group(0)}" for m in KIND_READ.finditer(text)]
    assert found == [], "parse the message with niah.service.messages.parse_message instead"


def test_the_scan_sees_what_it_looks_for() -> None:
    """The patterns catch the reads the worker's entry point made before kinds."""
    old_worker = 'return body if isinstance(body, dict) and body.get("batch_action") else None'
    assert DISCRIMINATORS.search(old_worker)
    assert KIND_READ.search('action = body.get("kind")') and KIND_READ.search('body["kind"]')
    assert not KIND_READ.search('{"kind": kind, "reason": reason}')  # an error's, written
    assert len(python_files()) > 100


@pytest.mark.parametrize("function", ["dispatcher", "worker", "report"])
def test_each_function_s_entry_point_is_a_page(function: str) -> None:
    lines = (REPO / "functions" / function / "main.py").read_text().splitlines()
    assert len(lines) <= MAX_HANDLER_LINES, (
        f"functions/{function}/main.py is {len(lines)} lines: move logic to niah.service"
    )


RUN = "run-0123456789abcdef"


def test_every_message_parses_back_to_its_kind() -> None:
    run = RunRecord(RUN, RunRequest(), stamp="s1", batch_round=2)
    cell = CellTask(RUN, "L00001000-D050000", 1000, 50.0, run_stamp="s1")
    assert parse_message(cell.message(), delivery_attempt=3) == cell.__class__(
        **{**cell.__dict__, "delivery_attempt": 3}
    )
    assert parse_message(batch_message(run, "poll")) == BatchStep(RUN, "poll", 2, "s1")
    assert parse_message(certify_step_message(run)) == CertifyStep(RUN, "s1")
    attributes = {"CloudPubSubDeadLetterSourceDeliveryCount": "5"}
    assert parse_message(report_message(RUN), attributes=attributes) == ReportRequest(RUN, 5)
    kinds = [m[KIND] for m in (cell.message(), batch_message(run, "poll"))]
    assert kinds == ["cell", "batch"]


@pytest.mark.parametrize(
    "body",
    [
        {"run_id": RUN},
        {"kind": None, "run_id": RUN},
        {"kind": "cells", "run_id": RUN},
        {"kind": "report", "run_id": "runs/x"},
        {"kind": "report"},
        {"kind": "certify_step", "run_id": 7},
        {"kind": "cell", "run_id": RUN},
        {"kind": "batch", "run_id": RUN, "batch_round": "first"},
    ],
)
def test_a_message_of_no_kind_or_no_use_is_refused_by_name(body: dict[str, object]) -> None:
    with pytest.raises(MalformedMessageError) as refused:
        parse_message(body)
    assert str(refused.value)
