"""`niah run --url https://...` with a laptop's user credentials: gcloud's token, or how to fix.

google-auth cannot mint an ID token from user credentials; these tests give it none it
can use (no service-account file, no metadata server) and put a real executable named
``gcloud`` on PATH in its place, which records its call and answers as gcloud would.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests import REPO


def without_service_account(tmp_path: Path, gcloud_script: str) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    gcloud = bin_dir / "gcloud"
    gcloud.write_text(f'#!/bin/sh\necho "$*" >> "{tmp_path}/gcloud.log"\n{gcloud_script}\n')
    gcloud.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "GOOGLE_APPLICATION_CREDENTIALS"}
    return env | {
        "PATH": f"{bin_dir}:{env['PATH']}",
        # No metadata server to ask (a closed local port answers at once).
        "GCE_METADATA_HOST": "127.0.0.1:9",
        "GCE_METADATA_IP": "127.0.0.1:9",
    }


def python(code: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env, cwd=REPO
    )


TOKEN = "from niah.cli.backend import identity_token; print(identity_token('https://d.example.run.app'))"


def test_gcloud_s_token_is_used_where_the_library_cannot_mint_one(tmp_path: Path) -> None:
    env = without_service_account(tmp_path, "echo gcloud-user-token")
    result = python(TOKEN, env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "gcloud-user-token"
    assert (tmp_path / "gcloud.log").read_text().split() == ["auth", "print-identity-token"]


def test_niah_run_sends_it_to_a_deployed_dispatcher(tmp_path: Path) -> None:
    env = without_service_account(tmp_path, "echo gcloud-user-token")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "niah.cli",
            "run",
            "--url",
            "https://127.0.0.1:9/",
            "--context_lengths",
            "1000",
            "--document_depth_percents",
            "50",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=REPO,
    )
    # The token was fetched before the (unreachable) dispatcher was called.
    assert (tmp_path / "gcloud.log").read_text().split() == ["auth", "print-identity-token"]
    assert "cannot reach the dispatcher at https://127.0.0.1:9/" in result.stderr


def test_without_gcloud_credentials_the_error_says_how_to_fix_them(tmp_path: Path) -> None:
    env = without_service_account(
        tmp_path,
        'echo "ERROR: (gcloud.auth.print-identity-token) You do not currently have an active '
        'account selected." >&2; exit 1',
    )
    result = python(TOKEN, env)
    assert result.returncode == 1
    message = result.stderr.strip()
    assert message.startswith("niah: no identity token for https://d.example.run.app")
    assert "You do not currently have an active account selected." in message
    assert "gcloud auth login" in message and "GOOGLE_APPLICATION_CREDENTIALS" in message
    assert "--impersonate-service-account" in message
    assert "Traceback" not in result.stderr
