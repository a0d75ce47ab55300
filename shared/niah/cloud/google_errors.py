"""Google Cloud's exceptions as the service's errors: the one table, and the adapters' decorator.

Code above ``niah.cloud`` knows only the service's taxonomy (``niah.errors``), so what
escapes a Cloud adapter is a service error or the adapter's documented result
(``KeyError``, ``False``), never a Google exception. Seen under a frozen Firestore
emulator: ``DeadlineExceeded`` from a plain set, ``RetryError: Timeout of 60.0s``, and
``ValueError: The transaction has no transaction ID`` from a transaction.

The table names classes by their dotted path rather than importing them: it loads none
of the client libraries (the dispatcher's cold start stays light) and keeps
``google.auth`` out of ``niah.cloud`` (the layering rule). A unit test builds every
class it names, so a misspelt path fails there.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import ParamSpec, TypeVar

from niah.cloud.class_wrap import wrapping_public_methods
from niah.errors import (
    RETRYABLE_STATUS_CODES,
    CloudAccessError,
    CloudRefusedError,
    CloudUnavailableError,
    NiahError,
)

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")

API = "google.api_core.exceptions"

INFRA = "check infra/ was applied"
GRANT = f"grant the function's service account the role this call needs; {INFRA}"
SIGN_IN = f"run the function as its service account with valid credentials; {INFRA}"
CREATE = f"create the topic, bucket or database it names; {INFRA}"
NO_TRANSACTION_ID = "The transaction has no transaction ID"


@dataclass(frozen=True)
class Rule:
    """What a Google exception becomes, and what the operator must do about it."""

    becomes: type[NiahError]
    fix: str = ""
    # The rule holds only for an error whose text starts with this (None: any text).
    text: str | None = None


TRANSIENT = Rule(CloudUnavailableError)
REFUSED = Rule(CloudRefusedError)

# Looked up for the exception's class, then each base in MRO order: the most specific
# entry wins (Aborted is transient although its base Conflict is not in the table).
GOOGLE_ERRORS: dict[str, Rule] = {
    # Transient: the same call may succeed later.
    f"{API}.DeadlineExceeded": TRANSIENT,
    f"{API}.ServiceUnavailable": TRANSIENT,
    f"{API}.Aborted": TRANSIENT,  # transaction contention
    f"{API}.TooManyRequests": TRANSIENT,
    f"{API}.ResourceExhausted": TRANSIENT,
    f"{API}.InternalServerError": TRANSIENT,
    f"{API}.BadGateway": TRANSIENT,
    f"{API}.GatewayTimeout": TRANSIENT,
    f"{API}.Unknown": TRANSIENT,
    f"{API}.Cancelled": TRANSIENT,
    f"{API}.RetryError": TRANSIENT,  # the client's own retries ran out of time
    # A transaction whose begin timed out has no ID to commit with (google-cloud-firestore
    # base_transaction._MISSING_ID_TEMPLATE); any other ValueError is a bug, not Cloud's.
    "builtins.ValueError": Rule(CloudUnavailableError, text=NO_TRANSACTION_ID),
    # Cloud Storage rides on requests; google-auth fetches tokens over the network.
    "requests.exceptions.ConnectionError": TRANSIENT,
    "requests.exceptions.Timeout": TRANSIENT,
    "google.auth.exceptions.TransportError": TRANSIENT,
    # A Pub/Sub publish future's result(timeout=) (concurrent.futures.TimeoutError is it).
    "builtins.TimeoutError": TRANSIENT,
    # The request itself is wrong (say, a Firestore document over 1 MiB): never retry.
    f"{API}.BadRequest": REFUSED,
    f"{API}.InvalidArgument": REFUSED,
    # The deployment is wrong: no role, no credentials, no such resource.
    f"{API}.Forbidden": Rule(CloudAccessError, GRANT),
    f"{API}.PermissionDenied": Rule(CloudAccessError, GRANT),
    f"{API}.Unauthorized": Rule(CloudAccessError, SIGN_IN),
    f"{API}.Unauthenticated": Rule(CloudAccessError, SIGN_IN),
    f"{API}.NotFound": Rule(CloudAccessError, CREATE),
}

# Any other API error is classified by its HTTP status.
API_CALL_ERROR = f"{API}.GoogleAPICallError"


def classify(
    error: BaseException, *, unavailable: type[CloudUnavailableError] = CloudUnavailableError
) -> NiahError | None:
    """The service error a Google or transport exception stands for; None for any other.

    ``unavailable`` is the transient class the adapter's callers catch (the store's
    ``StoreUnavailableError``). The message keeps the original class name and text.
    """
    rule = _rule(error)
    if rule is None:
        return None
    becomes = unavailable if rule.becomes is CloudUnavailableError else rule.becomes
    message = f"{type(error).__name__}: {error}"
    return becomes(f"{message} (fix: {rule.fix})" if rule.fix else message)


def _rule(error: BaseException) -> Rule | None:
    names = [f"{cls.__module__}.{cls.__qualname__}" for cls in type(error).__mro__]
    for name in names:
        rule = GOOGLE_ERRORS.get(name)
        if rule is not None and (rule.text is None or str(error).startswith(rule.text)):
            return rule
    if API_CALL_ERROR in names:
        return TRANSIENT if getattr(error, "code", None) in RETRYABLE_STATUS_CODES else REFUSED
    return None


def raises_service_errors(
    *, unavailable: type[CloudUnavailableError] = CloudUnavailableError
) -> Callable[[type[T]], type[T]]:
    """Class decorator: every public method raises the service's errors, never Google's.

    It sees only what escapes a method: a method's own catches (``AlreadyExists`` ->
    False) still decide first. Service errors and unclassified exceptions pass unchanged.
    """
    return wrapping_public_methods(lambda method: _classifying(method, unavailable))


def _classifying(
    method: Callable[P, R], unavailable: type[CloudUnavailableError]
) -> Callable[P, R]:
    @functools.wraps(method)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(*args, **kwargs)
        except Exception as error:
            service_error = classify(error, unavailable=unavailable)
            if service_error is None:
                raise
            raise service_error from error

    return call
