"""Who asked: the caller's e-mail from the ID token that was verified, and who may act.

A deployed dispatcher sits behind Cloud Run's IAM (infra/functions.tf: no
unauthenticated call; only ``run_invokers`` and the push identity hold
``roles/run.invoker``). Cloud Run checks one ID token: the one in
``X-Serverless-Authorization`` when the request carries that header, and then it passes
``Authorization`` on untouched and unchecked; else the one in ``Authorization``
(cloud.google.com/run/docs/authenticating/service-to-service; the behaviour as
GoogleCloudPlatform/cloud-run-proxy PR 25 states it; read 2026-12-04). So the caller is
only ever the token of ``verified_header``: a second header beside it is ignored, never
read. Cloud Run removes the checked token's signature before the request reaches the
function (the last segment becomes ``SIGNATURE_REMOVED_BY_GOOGLE``:
cloud.google.com/run/docs/troubleshooting#signature-removed, as linked from
einride/iam-go and akkornel's Cloud Functions gist; read 2026-12-04), so the function
cannot verify that token again; ``niah.cloud.identity`` verifies every other token
itself. This module is the pure part: which header, and what its claims name.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any, Protocol

from niah.errors import ForbiddenError

# The local stack's one user (the CLI signs its tokens as this account unless told
# otherwise), and the default caller of the service functions' own tests.
LOCAL_CALLER = "local@niah.localhost"
# The header Cloud Run checks in preference to Authorization.
SERVERLESS_AUTHORIZATION = "X-Serverless-Authorization"
# What Cloud Run puts in place of a checked token's signature.
SIGNATURE_REMOVED = "SIGNATURE_REMOVED_BY_GOOGLE"


class Headers(Protocol):
    """A request's headers as read here: a dict, or Flask's case-insensitive ``Headers``."""

    def get(self, key: str, /) -> str | None:
        """The header's value, or None when the request has none."""
        ...


def verified_header(headers: Headers) -> tuple[str, str]:
    """The header whose token names the caller, and that token (``Bearer`` removed).

    ``X-Serverless-Authorization`` when present (Cloud Run checked it, and left
    ``Authorization`` unchecked), else ``Authorization``. No token: refused (403).
    """
    name = SERVERLESS_AUTHORIZATION if headers.get(SERVERLESS_AUTHORIZATION) else "Authorization"
    value = headers.get(name)
    if not value:
        raise ForbiddenError(
            "Authorization",
            "send an ID token as 'Authorization: Bearer <token>' (the niah CLI does; "
            "deployed: gcloud auth print-identity-token; locally: source .local/env and "
            "python -m niah_devtools.local_identity token)",
        )
    scheme, _, token = value.partition(" ")
    if scheme.lower() != "bearer" or token.count(".") != 2:
        raise ForbiddenError(name, "send a Google ID token as 'Bearer <token>'")
    return name, token.strip()


def claims_of(token: str, header: str) -> dict[str, Any]:
    """A token's payload, read without any check (for a token Cloud Run checked)."""
    payload = token.split(".")[1]
    try:
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (binascii.Error, UnicodeDecodeError, ValueError) as error:
        raise ForbiddenError(header, "the ID token's payload is not JSON") from error
    if not isinstance(claims, dict):
        raise ForbiddenError(header, "the ID token's payload is not a JSON object")
    return claims


def caller_of_claims(claims: Mapping[str, Any], header: str) -> str:
    """The caller a verified token's claims name: its e-mail, else ``sub:<sub>``.

    A token whose e-mail is marked unverified (``email_verified`` false) names its
    account by ``sub`` only. One with neither is refused (403).
    """
    email, subject = claims.get("email"), claims.get("sub")
    if isinstance(email, str) and "@" in email and claims.get("email_verified") is not False:
        return email.lower()
    # A service account's token minted without its e-mail (the metadata server's
    # "standard" format) still names the account by its unique ID.
    if isinstance(subject, str) and subject:
        return f"sub:{subject}"
    raise ForbiddenError(
        header,
        "the ID token names no account (no email or sub claim); mint it with "
        "gcloud auth print-identity-token",
    )


def may_change(created_by: str | None, caller: str, operators: list[str]) -> bool:
    """Whether ``caller`` may cancel, resume or relabel a run: its creator or an operator.

    ``created_by``: who started the run (``RunRecord.created_by``).
    """
    return caller in {name.lower() for name in operators} or created_by == caller


def check_may_change(
    created_by: str | None, run_id: str, caller: str, operators: list[str], action: str
) -> None:
    """Refuse (403) an ``action`` on another caller's run (``created_by`` started it)."""
    if not may_change(created_by, caller, operators):
        raise ForbiddenError(
            "run_id",
            f"{caller} may not {action} run {run_id}: only the caller who started it, or an "
            "operator (NIAH_OPERATORS), may cancel, resume or relabel a run",
        )
