"""Small in-memory fakes of the service's own interfaces, for unit tests.

The result store's fake, the largest, is in ``tests.fake_store``.
"""

from __future__ import annotations

import contextlib
import http.server
import io
import json
import threading
from collections.abc import Iterator
from typing import Any, BinaryIO

from niah.core.interfaces import BlobInfo, ModelAnswer, Reservation
from niah.core.money.holds import ADMIT, Step, reserve_step, settle_step
from niah.core.runs import RunRecord
from niah.errors import CloudUnavailableError


class MemoryBlobs:
    """A ``BlobStore`` in a dict; honours create-if-absent like Cloud Storage."""

    def __init__(self, bucket: str = "test-bucket") -> None:
        self.bucket = bucket
        self.objects: dict[str, bytes] = {}
        self.generations: dict[str, int] = {}
        self.writes: list[str] = []
        self._lock = threading.Lock()

    def list(self, prefix: str) -> list[BlobInfo]:
        return [
            BlobInfo(name, len(data), str(hash(data)))
            for name, data in sorted(self.objects.items())
            if name.startswith(prefix)
        ]

    def read(self, name: str) -> bytes:
        return self.objects[name]

    def open(self, name: str) -> BinaryIO:
        return io.BytesIO(self.objects[name])

    def write(
        self,
        name: str,
        data: bytes,
        *,
        content_type: str,
        if_absent: bool = False,
        if_generation: int | None = None,
    ) -> bool:
        with self._lock:
            wanted = 0 if if_absent else if_generation
            if wanted is not None and self.generation(name) != wanted:
                return False
            self.objects[name] = data
            self.generations[name] = self.generation(name) + 1
            self.writes.append(name)
            return True

    def generation(self, name: str) -> int:
        # An object put into ``objects`` directly is at generation 1.
        return self.generations.get(name, 1 if name in self.objects else 0)

    def browser_url(self, name: str) -> str:
        return f"memory://{self.bucket}/{name}"


class MemorySpendLedger:
    """A ``SpendLedger`` in dicts; a lock stands for Firestore's transaction."""

    def __init__(self) -> None:
        self.windows: dict[str, float] = {}
        self.runs: dict[str, dict[str, Any]] = {}
        self.open_runs: dict[str, set[str]] = {}  # by caller: runs with a hold open
        self.switch: dict[str, Any] | None = None
        self.switch_reads = 0
        self._lock = threading.Lock()

    def reserve(
        self,
        run_id: str,
        usd: float,
        ceilings: dict[str, float | None],
        *,
        caller: str,
        hold: str = ADMIT,
        max_open_runs: int | None = None,
    ) -> Reservation:
        with self._lock:
            spent = {window: self.windows.get(window, 0.0) for window in ceilings}
            step = reserve_step(
                run_id,
                self.runs.get(run_id),
                spent,
                self.switch,
                hold=hold,
                usd=usd,
                ceilings=ceilings,
                caller=caller,
                open_runs=self.open_runs.get(
                    (self.runs.get(run_id) or {}).get("caller") or caller, set()
                ),
                max_open_runs=max_open_runs,
            )
            self._write(run_id, step)
            assert step.reservation is not None
            return step.reservation

    def settle(self, run_id: str, spent_usd: float) -> float | None:
        with self._lock:
            return self._write(run_id, settle_step(self.runs.get(run_id), spent_usd))

    def entry(self, run_id: str) -> dict[str, Any] | None:
        entry = self.runs.get(run_id)
        return None if entry is None else entry | {"run_id": run_id}

    def open_entries(self) -> list[dict[str, Any]]:
        return [e | {"run_id": r} for r, e in self.runs.items() if not e.get("settled")]

    def _write(self, run_id: str, step: Step) -> float | None:
        if step.entry is None:
            return None
        for window in step.windows:
            self.windows[window] = self.windows.get(window, 0.0) + step.change
        self.runs[run_id] = step.entry
        if step.opens is not None:
            runs = self.open_runs.setdefault(step.caller, set())
            (runs.add if step.opens else runs.discard)(run_id)
        return float(step.change)

    def window_spend(self, window: str) -> float:
        return self.windows.get(window, 0.0)

    def kill_switch(self) -> dict[str, Any] | None:
        self.switch_reads += 1
        return self.switch

    def set_kill_switch(self, fields: dict[str, Any] | None) -> None:
        self.switch = None if fields is None else {**fields, "on": True}


class RecordingPublisher:
    """A ``Publisher`` that keeps what it was given."""

    def __init__(self) -> None:
        self.cells: list[dict[str, Any]] = []
        self.reports: list[str] = []
        self.alerts: list[tuple[dict[str, Any], dict[str, str]]] = []

    def publish_cells(self, messages: list[dict[str, Any]]) -> int:
        self.cells.extend(messages)
        return len(messages)

    def publish_report(self, message: dict[str, Any]) -> None:
        self.reports.append(str(message["run_id"]))

    def publish_alert(self, message: dict[str, Any], attributes: dict[str, str]) -> None:
        self.alerts.append((message, attributes))


class RecordingAlerts:
    """An ``AlertPublisher`` that keeps what it was given; ``fail`` publishes raise."""

    def __init__(self) -> None:
        self.alerts: list[tuple[dict[str, Any], dict[str, str]]] = []
        self.fail = False

    def publish_alert(self, message: dict[str, Any], attributes: dict[str, str]) -> None:
        if self.fail:
            raise CloudUnavailableError("the alerts topic is out of reach")
        self.alerts.append((message, attributes))


class ScriptedProvider:
    """A ``Provider`` whose answer is computed from the prompt by a function."""

    tokenizer_name = "gemma3"
    default_template = "{context}\n\nQuestion: {question}\nAnswer:{answer_lead}"

    def __init__(self, answer: Any, model_name: str = "scripted") -> None:
        self.model_name = model_name
        self._answer = answer
        self.prompts: list[str] = []

    def generate(
        self,
        prompt: str,
        *,
        max_output_tokens: int,
        thinking_budget: int | None = None,
        thinking_level: str | None = None,
        turns: tuple[tuple[str, str], ...] | None = None,
        tier: str | None = None,
    ) -> ModelAnswer:
        self.prompts.append(prompt)
        text = self._answer(prompt)
        return ModelAnswer(text, "STOP", len(prompt) // 4, len(text) // 4, 0.0)

    def count_tokens(self, prompt: str) -> int:
        return len(prompt) // 4


@contextlib.contextmanager
def json_server(
    status: int,
    answer: dict[str, Any],
    received: list[tuple[str, dict[str, str], bytes]] | None = None,
) -> Iterator[str]:
    """An HTTP server that answers every POST with ``status`` and ``answer``; its URL.

    ``received``: where each POST is kept, as (path, headers, body).
    """

    class Answering(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            data = self.rfile.read(int(self.headers["Content-Length"]))
            if received is not None:
                received.append((self.path, dict(self.headers), data))
            body = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Answering)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/"
    finally:
        server.shutdown()


def run_records(
    pairs: list[tuple[dict[str, Any], list[dict[str, Any]]]],
) -> list[tuple[RunRecord, list[dict[str, Any]]]]:
    """(run document, cells) pairs as the comparison takes them: each run read as stored."""
    return [(RunRecord.from_document(doc), cells) for doc, cells in pairs]
