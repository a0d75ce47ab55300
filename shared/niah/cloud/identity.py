"""Who is calling: the identity Cloud Run verified, or one this function verifies itself.

``NIAH_IDENTITY_MODE`` says which (``niah.settings``):

- ``cloud_run`` (a deployment, infra/main.tf): Cloud Run's IAM checked the token of
  ``verified_header`` (signature, expiry, audience, the invoker role) and removed its
  signature (``SIGNATURE_REMOVED_BY_GOOGLE``, ``niah.core.request.callers``), so it
  cannot be verified again here: a token so marked is taken at its claims, after its
  issuer and expiry are checked once more. Only IAM in front can make that mark
  trustworthy: a service anyone may invoke must never run in this mode. A token that
  still carries a signature is verified as below.
- ``verify`` (the default, and the local stack): every token is verified here with
  google-auth (``google.oauth2.id_token.verify_token``: signature against the keys at
  ``NIAH_IDENTITY_CERTS_URL``, ``iat``/``exp``, audience), and its issuer against
  ``NIAH_IDENTITY_ISSUERS``. The local stack signs its tokens with a key of its own and
  publishes the public half (``niah_devtools.local_identity``), so its tests exercise
  this very check. An unsigned or marked token is refused.

The keys are kept for ``KEYS_KEPT_SECONDS`` per instance (google-auth fetches them on
every call unless its request caches; Google changes them "on the order of once per
day": googleapis.dev/python/google-auth/latest/reference/google.oauth2.id_token.html,
read 2026-12-04): one fetch every 5 minutes at most, not one a request.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
import urllib.request
from collections.abc import Mapping
from typing import Any

from niah.core.request.callers import (
    SIGNATURE_REMOVED,
    Headers,
    caller_of_claims,
    claims_of,
    verified_header,
)
from niah.errors import ForbiddenError, IdentityUnavailableError
from niah.settings import get_settings

# How far a token's iat/exp may be off this machine's clock.
CLOCK_SKEW_SECONDS = 30
# How long an instance keeps the keys it fetched.
KEYS_KEPT_SECONDS = 300.0

_lock = threading.Lock()
_cache: dict[str, tuple[float, bytes]] = {}


def verified_caller(headers: Headers, *, host: str) -> str:
    """The caller's e-mail (or ``sub:<id>``); ``ForbiddenError`` (403) if unverified.

    ``host``: the Host the request was sent to; its root URL is the audience a token
    must name unless ``NIAH_IDENTITY_AUDIENCES`` lists others.
    """
    settings = get_settings()
    header, token = verified_header(headers)
    if token.rsplit(".", 1)[1] == SIGNATURE_REMOVED:
        if settings.identity_mode != "cloud_run":
            raise ForbiddenError(
                header, "the ID token has no signature; send one this service can verify"
            )
        claims = claims_of(token, header)
        _check_expiry(claims, header)
    else:
        audiences = settings.identity_audiences or [f"https://{host}", f"http://{host}"]
        claims = _verify(token, header, audiences, settings.identity_certs_url)
    if claims.get("iss") not in settings.identity_issuers:
        raise ForbiddenError(header, "the ID token was not issued by an issuer this service trusts")
    return caller_of_claims(claims, header)


def _check_expiry(claims: Mapping[str, Any], header: str) -> None:
    """Refuse a token Cloud Run checked that has expired since (or names no expiry)."""
    expires = claims.get("exp")
    now = dt.datetime.now(dt.UTC).timestamp()
    if not isinstance(expires, int | float) or expires + CLOCK_SKEW_SECONDS < now:
        raise ForbiddenError(header, "the ID token has expired; mint a new one")


def _verify(token: str, header: str, audiences: list[str], certs_url: str) -> dict[str, Any]:
    """The claims of a token verified with google-auth; 403 naming why it is not valid."""
    import google.auth.exceptions
    import google.oauth2.id_token

    try:
        claims = google.oauth2.id_token.verify_token(
            token,
            _CachedKeys(),  # type: ignore[arg-type]  # a google.auth.transport.Request
            audience=audiences,
            certs_url=certs_url,
            clock_skew_in_seconds=CLOCK_SKEW_SECONDS,
        )
    except (ValueError, google.auth.exceptions.GoogleAuthError) as error:
        if isinstance(error, google.auth.exceptions.TransportError):
            # The keys could not be fetched: not the caller's fault.
            raise IdentityUnavailableError(
                header, "the keys that verify ID tokens could not be read now; retry"
            ) from error
        reason = str(error).split(". ")[0][:200]
        raise ForbiddenError(header, f"the ID token is not valid: {reason}") from None
    return dict(claims)


class _Response:
    """The little of ``google.auth.transport.Response`` that ``verify_token`` reads."""

    def __init__(self, status: int, data: bytes) -> None:
        self.status = status
        self.data = data
        self.headers: dict[str, str] = {}


class _CachedKeys:
    """A ``google.auth.transport.Request`` that keeps the keys it fetched (http(s), file)."""

    def __call__(self, url: str, method: str = "GET", **_: Any) -> _Response:
        with _lock:
            fetched = _cache.get(url)
            if fetched is None or time.monotonic() - fetched[0] > KEYS_KEPT_SECONDS:
                fetched = (time.monotonic(), _fetch(url))
                _cache[url] = fetched
            return _Response(200, fetched[1])


def _fetch(url: str) -> bytes:
    """The keys' JSON at ``url``; ``TransportError`` if it cannot be read."""
    import google.auth.exceptions

    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            data: bytes = response.read()
            return data
    except OSError as error:
        raise google.auth.exceptions.TransportError(
            f"the ID token keys at {url} could not be read: {error}"
        ) from error
