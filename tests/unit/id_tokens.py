"""ID tokens for unit tests: signed by a test key the dispatcher is told to trust.

The same check the local stack and a deployment run (``niah.cloud.identity``: signature,
expiry, audience, issuer), with a key made once per test session and published as a
``{key id: PEM}`` file, the shape of Google's certs.
"""

from __future__ import annotations

import atexit
import base64
import functools
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from niah.settings import get_settings

ISSUER = "https://identity.unit.test"
# The flask test client's Host: the audience the dispatcher takes when none is set.
AUDIENCE = "http://localhost"


@functools.cache
def _key() -> tuple[str, str, Path]:
    """The session's signing key (PEM), its key ID, and the certs file publishing it."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    folder = Path(tempfile.mkdtemp(prefix="niah-unit-keys-"))
    atexit.register(shutil.rmtree, folder, True)  # gone with the test process, as it came
    certs = folder / "certs.json"
    certs.write_text(json.dumps({"unit-key": public.decode()}))
    return private.decode(), "unit-key", certs


def trust_test_keys(monkeypatch: pytest.MonkeyPatch, *, mode: str = "verify") -> None:
    """Point the dispatcher's identity check at the test key (and ``mode``)."""
    monkeypatch.setenv("NIAH_IDENTITY_MODE", mode)
    monkeypatch.setenv("NIAH_IDENTITY_CERTS_URL", _key()[2].as_uri())
    monkeypatch.setenv("NIAH_IDENTITY_ISSUERS", json.dumps([ISSUER]))
    monkeypatch.delenv("NIAH_IDENTITY_AUDIENCES", raising=False)
    get_settings.cache_clear()


def signed(
    email: str,
    *,
    audience: str = AUDIENCE,
    issuer: str = ISSUER,
    lifetime: int = 600,
    **claims: Any,
) -> str:
    """A token for ``email`` the test key signs (a ``Bearer`` header's value)."""
    import google.auth.crypt
    import google.auth.jwt

    private, key_id, _ = _key()
    now = int(time.time())
    payload: dict[str, Any] = {"iss": issuer, "aud": audience, "email": email, "sub": email}
    payload |= {"iat": now, "exp": now + lifetime, **claims}
    signer = google.auth.crypt.RSASigner.from_string(private, key_id=key_id)
    return f"Bearer {google.auth.jwt.encode(signer, payload).decode()}"


def unsigned(claims: dict[str, Any], signature: str = "c2ln") -> str:
    """A token with any claims and a signature nobody made (or Google's removal mark)."""

    def part(data: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")

    return f"Bearer {part({'alg': 'RS256', 'kid': 'unit-key'})}.{part(claims)}.{signature}"
