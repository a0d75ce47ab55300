"""The local stack's ID tokens: a key of its own signs them, and the dispatcher verifies them.

Deployed, Google signs the ID tokens callers send and publishes its keys; the
dispatcher takes the caller only from a verified token (``niah.cloud.identity``).
Locally, ``create`` makes an RSA key when the stack comes up, writes its public half
where the dispatcher reads keys (a ``{key id: PEM}`` file, the shape of Google's
``oauth2/v1/certs``) and the signer where the CLI and tests find it
(``NIAH_LOCAL_IDENTITY_KEY``). So a local request carries a real signature, expiry and
audience, checked as a deployment's would be, and a forged or stale token is refused.
``python -m niah_devtools.local_identity token [--email E]`` prints one (curl, demo).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
from pathlib import Path
from urllib.parse import urlsplit

from niah.core.request.callers import LOCAL_CALLER

# The issuer the local stack's tokens name (the dispatcher trusts it, and only locally).
ISSUER = "https://identity.niah.localhost"
# The account the local sentinel scheduler calls as (NIAH_SENTINEL_SCHEDULER locally).
SCHEDULER_ACCOUNT = "scheduler@niah.localhost"
# The account the local budget alerts' pusher would call as (NIAH_BUDGET_ALERT_PUSHER).
PUSHER_ACCOUNT = "pusher@niah.localhost"


def create(state_dir: Path, dispatcher_url: str) -> tuple[dict[str, str], dict[str, str]]:
    """Make the stack's key; the dispatcher's settings and the clients' environment."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    folder = state_dir / "identity"
    folder.mkdir(parents=True, exist_ok=True)
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    key_id = hashlib.sha256(public).hexdigest()[:16]
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    certs = folder / "certs.json"
    certs.write_text(json.dumps({key_id: public.decode()}))
    signer = folder / "signer.json"
    signer.touch(mode=0o600)
    signer.write_text(
        json.dumps({"private_key": private.decode(), "key_id": key_id, "issuer": ISSUER})
    )
    root = _root(dispatcher_url)
    dispatcher = {
        "NIAH_IDENTITY_MODE": "verify",
        "NIAH_IDENTITY_CERTS_URL": certs.resolve().as_uri(),
        "NIAH_IDENTITY_ISSUERS": json.dumps([ISSUER]),
        "NIAH_IDENTITY_AUDIENCES": json.dumps([root, root.replace("127.0.0.1", "localhost")]),
        "NIAH_SENTINEL_SCHEDULER": SCHEDULER_ACCOUNT,
        "NIAH_BUDGET_ALERT_PUSHER": PUSHER_ACCOUNT,
        # The local stack's one user operates it: fires sentinels by hand, lifts the switch.
        "NIAH_OPERATORS": json.dumps([LOCAL_CALLER]),
    }
    return dispatcher, {"NIAH_LOCAL_IDENTITY_KEY": str(signer.resolve())}


def _root(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def token(email: str | None = None, *, url: str | None = None, lifetime: int = 3600) -> str:
    """A token for the stack's dispatcher (``url``, else DISPATCHER_URL), signed by its key."""
    from niah.cli.backend import local_identity_token

    target = url or os.environ["DISPATCHER_URL"]
    key_file = Path(os.environ["NIAH_LOCAL_IDENTITY_KEY"])
    return local_identity_token(_root(target), email, lifetime, key_file)


def headers(email: str | None = None, *, url: str | None = None) -> dict[str, str]:
    """The ``Authorization`` header of a signed token for ``email`` (default: the local user)."""
    return {"Authorization": f"Bearer {token(email, url=url)}"}


def main(argv: list[str] | None = None) -> None:
    """``python -m niah_devtools.local_identity token [--email E] [--url U]``."""
    parser = argparse.ArgumentParser(prog="niah-local-identity", description=__doc__)
    parser.add_argument("action", choices=["token"])
    parser.add_argument("--email", help="whom the token names (default: local@niah.localhost)")
    parser.add_argument("--url", help="the dispatcher (default: DISPATCHER_URL)")
    args = parser.parse_args(argv)
    print(token(args.email, url=args.url))


if __name__ == "__main__":
    main()
