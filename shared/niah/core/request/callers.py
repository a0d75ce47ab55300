"""Who asked: the caller's e-mail from the ID token Google already verified, and who may act.

A deployed dispatcher sits behind Cloud Run's IAM (infra/functions.tf: no
unauthenticated call; only ``run_invokers`` hold ``roles/run.invoker``). Google checks
the ``Authorization: Bearer`` ID token's signature, expiry and audience, and the
invoker role, before the request reaches the function
(cloud.google.com/run/docs/authenticating/developers). So the function only reads the
token's payload for its ``email`` claim: verifying it again would need Google's keys
over the network on every request. Locally (functions-framework, no IAM) nothing is
verified: a request without a token is the fixed ``LOCAL_CALLER``, and a local token is
taken at its word.
"""

from __future__ import annotations

import base64
import binascii
import json

from niah.errors import ForbiddenError

# Who a request with no token is: the local stack's one user.
LOCAL_CALLER = "local@niah.localhost"


def caller_of(authorization: str | None) -> str:
    """The caller's e-mail from an ``Authorization: Bearer <JWT>`` header.

    No header: ``LOCAL_CALLER``. A token without ``email`` is its account's unique ID,
    ``sub:<sub>`` (list it so in ``NIAH_OPERATORS``); one with neither, or unreadable,
    is refused (a 403).
    """
    if not authorization:
        return LOCAL_CALLER
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or token.count(".") != 2:
        raise ForbiddenError("Authorization", "send a Google ID token as 'Bearer <token>'")
    payload = token.split(".")[1]
    try:
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (binascii.Error, UnicodeDecodeError, ValueError) as error:
        raise ForbiddenError("Authorization", "the ID token's payload is not JSON") from error
    claims = claims if isinstance(claims, dict) else {}
    email, subject = claims.get("email"), claims.get("sub")
    if isinstance(email, str) and "@" in email:
        return email.lower()
    # A service account's token minted without its e-mail (the metadata server's
    # "standard" format) still names the account by its unique ID.
    if isinstance(subject, str) and subject:
        return f"sub:{subject}"
    raise ForbiddenError(
        "Authorization",
        "the ID token names no account (no email or sub claim); mint it with "
        "gcloud auth print-identity-token",
    )


def may_change(run: dict[str, object], caller: str, operators: list[str]) -> bool:
    """Whether ``caller`` may cancel, resume or relabel ``run``: its creator or an operator.

    A run recorded before callers were (no ``created_by``) is an operator's to change.
    """
    return caller in {name.lower() for name in operators} or run.get("created_by") == caller


def check_may_change(
    run: dict[str, object], run_id: str, caller: str, operators: list[str], action: str
) -> None:
    """Refuse (403) an ``action`` on another caller's run."""
    if not may_change(run, caller, operators):
        raise ForbiddenError(
            "run_id",
            f"{caller} may not {action} run {run_id}: only the caller who started it, or an "
            "operator (NIAH_OPERATORS), may cancel, resume or relabel a run",
        )
