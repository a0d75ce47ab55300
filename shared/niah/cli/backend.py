"""Where the CLI's data lives: the dispatcher over HTTP, the result store, the bucket."""

from __future__ import annotations

import argparse
import functools
import json
import sys
from pathlib import Path
from typing import Any

from niah.cli.output import usage_error
from niah.cli.run_options import in_cli_words
from niah.settings import REPORTS_PREFIX, get_settings


def dispatcher_url(args: argparse.Namespace) -> str:
    """``--url``, else the one ``.local/env`` or the deployment sets."""
    url = args.url or get_settings().dispatcher_url
    if not url:
        sys.exit("niah: no dispatcher URL; pass --url or source .local/env (DISPATCHER_URL)")
    return str(url)


def submit(url: str, payload: dict[str, Any]) -> dict[str, Any]:
    """Post a request (a run, a cancel) to the dispatcher; its answer, or exit with its error."""
    from urllib.parse import urlsplit

    import requests

    headers = {"Content-Type": "application/json"}
    # The token's audience is the service's root URL, not a path or query on it
    # (cloud.google.com/run/docs/samples/cloudrun-service-to-service-auth: "targetURL
    # and audience will differ for non-root URLs and GET parameters"; read 2026-11-27).
    parts = urlsplit(url)
    audience = f"{parts.scheme}://{parts.netloc}"
    if url.startswith("https://"):
        headers["Authorization"] = f"Bearer {identity_token(audience)}"
    elif get_settings().local_identity_key:  # the local stack: its own key signs
        headers["Authorization"] = f"Bearer {local_identity_token(audience)}"
    try:
        response = requests.post(url, data=json.dumps(payload), headers=headers, timeout=(5, 120))
    except requests.RequestException as unreachable:
        sys.exit(
            f"niah: cannot reach the dispatcher at {url} ({type(unreachable).__name__}); start the "
            "local stack (scripts/local_up.sh, then source .local/env) or pass --url"
        )
    try:
        body: dict[str, Any] = response.json() if response.content else {}
    except ValueError:
        body = {}
    problem = body.get("error", {}) if isinstance(body, dict) else {}
    if response.status_code == 400 and problem.get("field"):
        # The request itself was refused: a bad command line, told in its words.
        usage_error(in_cli_words(str(problem["field"]), str(problem.get("message", ""))))
    if response.status_code >= 400:
        sys.exit(
            f"niah: {response.status_code}: {problem.get('field', '')}: "
            f"{problem.get('message', response.text)}"
        )
    return body


def identity_token(audience: str) -> str:
    """An ID token for a deployed, IAM-protected dispatcher.

    google-auth mints one only from a service account (a key file or impersonated
    credentials named by GOOGLE_APPLICATION_CREDENTIALS, or the metadata server on
    Google Cloud); with the user credentials of ``gcloud auth application-default
    login`` on a laptop it cannot. Then gcloud's own token serves: Cloud Run takes it
    from an account with the invoker role (cloud.google.com/run/docs/authenticating/
    developers, read 2026-11-26).
    """
    import google.auth.exceptions
    import google.auth.transport.requests
    import google.oauth2.id_token

    request = google.auth.transport.requests.Request()
    try:
        return str(google.oauth2.id_token.fetch_id_token(request, audience))
    except google.auth.exceptions.GoogleAuthError as library_error:
        token, gcloud_problem = _gcloud_identity_token()
        if token:
            return token
        sys.exit(
            f"niah: no identity token for {audience}: google-auth cannot mint one from these "
            f"credentials ({library_error}), and `gcloud auth print-identity-token` failed "
            f"({gcloud_problem}). Fix one of: run `gcloud auth login` (niah then uses "
            "gcloud's token); or point GOOGLE_APPLICATION_CREDENTIALS at a service-account "
            "key, or at the file `gcloud auth application-default login "
            "--impersonate-service-account=SA_EMAIL` writes, for an account that may invoke "
            "the dispatcher"
        )


def local_identity_token(
    audience: str, email: str | None = None, lifetime: int = 3600, key_file: Path | None = None
) -> str:
    """An ID token the local stack's key signs, as a deployment's Google-signed one.

    ``email``: whom it names (else ``NIAH_LOCAL_IDENTITY_EMAIL``, else the local user).
    The dispatcher verifies it as it would any token (``niah.cloud.identity``).
    """
    import time

    import google.auth.crypt
    import google.auth.jwt

    from niah.core.request.callers import LOCAL_CALLER

    settings = get_settings()
    signer_file = json.loads(Path(str(key_file or settings.local_identity_key)).read_text())
    signer = google.auth.crypt.RSASigner.from_string(
        signer_file["private_key"], key_id=signer_file["key_id"]
    )
    now = int(time.time())
    claims = {
        "iss": signer_file["issuer"],
        "aud": audience,
        "email": (email or settings.local_identity_email or LOCAL_CALLER).lower(),
        "email_verified": True,
        "iat": now,
        "exp": now + lifetime,
    }
    claims["sub"] = claims["email"]
    return google.auth.jwt.encode(signer, claims).decode()


def _gcloud_identity_token() -> tuple[str | None, str]:
    """The logged-in gcloud account's ID token, or None and why not."""
    import subprocess

    try:
        done = subprocess.run(
            ["gcloud", "auth", "print-identity-token"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except FileNotFoundError:
        return None, "gcloud is not installed or not on PATH"
    except subprocess.TimeoutExpired:
        return None, "gcloud did not answer within 60 s"
    token = done.stdout.strip()
    if done.returncode != 0 or not token:
        lines = done.stderr.strip().splitlines()
        return None, lines[-1] if lines else f"exit status {done.returncode}"
    return token, ""


@functools.cache  # one client and one emulator check per command
def result_store() -> Any:
    """The result store, once it is known to answer (the emulator hangs a client)."""
    import socket

    from niah.cloud.store import FirestoreStore

    emulator = get_settings().firestore_emulator_host
    if emulator:
        host, _, port = emulator.rpartition(":")
        try:
            socket.create_connection((host or "127.0.0.1", int(port)), timeout=2).close()
        except (OSError, ValueError):
            sys.exit(
                f"niah: the Firestore emulator at {emulator} does not answer; start the local "
                "stack (scripts/local_up.sh, then source .local/env)"
            )
    return FirestoreStore()


@functools.cache
def blob_store() -> Any:
    """The deployment's bucket (heatmaps, MRCR v2 files)."""
    from niah.cloud.blobs import GcsBlobStore

    return GcsBlobStore(get_settings().bucket)


# The Firestore console's page of one document (the link scripts/start_run.sh prints).
FIRESTORE_CONSOLE = (
    "https://console.cloud.google.com/firestore/databases/-default-/data/panel/runs/{run_id}"
    "?project={project}"
)


def where_to_look(
    run_id: str, report: dict[str, Any] | None, *, project: str | None, bucket: str | None
) -> list[str]:
    """Where the run's record and its report are, as links a person opens.

    On the local stack, the emulators' own URLs (the Firestore emulator answers a
    document's REST path with its JSON); deployed, the Google Cloud console's page and
    the report's authenticated browser link. Before the report exists, where it will be.
    ``project`` and ``bucket``: the deployment's (the dispatcher says), else the settings'.
    """
    from niah.cloud.blobs import browser_url
    from niah.core.pages.report_page import REPORT_PAGE_FILE

    settings = get_settings()
    project = project or settings.project
    emulator = settings.firestore_emulator_host
    lines = [
        f"Firestore (emulator): http://{emulator}/v1/projects/{project}/databases/(default)/"
        f"documents/runs/{run_id}"
        if emulator
        else f"Firestore: {FIRESTORE_CONSOLE.format(run_id=run_id, project=project)}"
    ]
    if report:
        lines.append(f"heatmap: {report['heatmap_uri']}")
        if report.get("html_url"):
            lines.append(f"report: {report['html_url']}")
    else:
        page = f"{REPORTS_PREFIX}{run_id}/{REPORT_PAGE_FILE}"
        lines.append(
            f"report (written when the last cell is in): "
            f"{browser_url(bucket or settings.bucket, page)}"
        )
    return lines


LATEST = "latest"


def name_latest(args: argparse.Namespace) -> None:
    """Put the most recent run's ID where the command line says ``latest``.

    So a quickstart runs as pasted: ``niah status latest`` after ``niah run``.
    """
    named = [name for name in ("run_id", "resume") if getattr(args, name, None) == LATEST]
    listed = [
        i for i, run_id in enumerate(getattr(args, "run_ids", None) or []) if run_id == LATEST
    ]
    if not named and not listed:
        return
    recent = result_store().recent_runs(1)
    if not recent:
        sys.exit("niah: no runs yet, so no `latest`; start one with `niah run`")
    from niah.core.runs import ListedRun

    latest = ListedRun.from_document(recent[0]).run_id
    for name in named:
        setattr(args, name, latest)
    for index in listed:
        args.run_ids[index] = latest
