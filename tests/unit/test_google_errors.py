"""Every Google exception leaves the Cloud adapters as a service error (issue 27)."""

from __future__ import annotations

import google.api_core.exceptions as api
import pytest
import requests
from google.auth.exceptions import TransportError

from niah.cloud.google_errors import GOOGLE_ERRORS, classify, raises_service_errors
from niah.errors import (
    CloudAccessError,
    CloudRefusedError,
    CloudUnavailableError,
    NiahError,
    RequestError,
    StoreUnavailableError,
)

NO_TRANSACTION_ID = "The transaction has no transaction ID, so it cannot be committed."

# Every table entry as a real instance, grouped by the service class it must become.
TRANSIENT: list[BaseException] = [
    api.DeadlineExceeded("commit timed out"),
    api.ServiceUnavailable("down"),
    api.Aborted("contention"),
    api.TooManyRequests("slow down"),
    api.ResourceExhausted("quota"),
    api.InternalServerError("oops"),
    api.BadGateway("proxy"),
    api.GatewayTimeout("proxy timeout"),
    api.Unknown("unknown"),
    api.Cancelled("cancelled"),
    api.RetryError("Timeout of 60.0s exceeded", api.DeadlineExceeded("x")),
    ValueError(NO_TRANSACTION_ID),
    requests.exceptions.ConnectionError("reset"),
    requests.exceptions.Timeout("read timed out"),
    TransportError("token fetch failed"),
    TimeoutError(),
]
REFUSED: list[BaseException] = [api.BadRequest("bad"), api.InvalidArgument("too large")]
NO_ACCESS: list[BaseException] = [
    api.Forbidden("no role"),
    api.PermissionDenied("no role"),
    api.Unauthorized("no token"),
    api.Unauthenticated("no token"),
    api.NotFound("Topic not found"),
]
CASES: list[tuple[BaseException, type[NiahError], str]] = [
    *[(error, CloudUnavailableError, "cloud_unavailable") for error in TRANSIENT],
    *[(error, CloudRefusedError, "cloud_refused") for error in REFUSED],
    *[(error, CloudAccessError, "cloud_access") for error in NO_ACCESS],
]


def dotted(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def test_the_cases_are_the_table() -> None:
    """A table entry without a case here (or a misspelt path) fails."""
    assert sorted(dotted(type(error)) for error, _, _ in CASES) == sorted(GOOGLE_ERRORS)


@pytest.mark.parametrize(
    ("error", "becomes", "kind"), CASES, ids=[type(error).__name__ for error, _, _ in CASES]
)
def test_every_entry_becomes_its_service_error(
    error: BaseException, becomes: type[NiahError], kind: str
) -> None:
    service = classify(error)
    assert type(service) is becomes
    assert service is not None and service.kind == kind
    assert str(service).startswith(f"{type(error).__name__}: {error}")


@pytest.mark.parametrize(
    ("error", "fix"),
    [
        (api.PermissionDenied("403 no role"), "grant the function's service account the role"),
        (api.Unauthenticated("401 no token"), "run the function as its service account"),
        (api.NotFound("404 Topic not found"), "create the topic, bucket or database"),
    ],
)
def test_an_access_error_names_its_fix(error: BaseException, fix: str) -> None:
    message = str(classify(error))
    assert message.startswith(f"{type(error).__name__}: {error} (fix: {fix}")
    assert message.endswith("check infra/ was applied)")


def test_the_message_keeps_the_class_name_and_the_status() -> None:
    assert str(classify(api.DeadlineExceeded("commit timed out"))) == (
        "DeadlineExceeded: 504 commit timed out"
    )


@pytest.mark.parametrize(
    ("error", "becomes"),
    [
        (api.from_http_status(408, "request timeout"), CloudUnavailableError),
        (api.AlreadyExists("exists"), CloudRefusedError),  # 409, not in the table
        (api.PreconditionFailed("generation"), CloudRefusedError),  # 412
        (api.MethodNotImplemented("no"), CloudRefusedError),  # 501 is not retried
        (api.from_http_status(418, "teapot"), CloudRefusedError),
    ],
)
def test_another_api_error_goes_by_its_status(
    error: BaseException, becomes: type[NiahError]
) -> None:
    assert type(classify(error)) is becomes


def test_the_most_specific_class_decides() -> None:
    class FrozenTopic(api.NotFound):
        pass

    # Aborted's base Conflict (409) would be refused by its status; Aborted is transient.
    assert type(classify(api.Aborted("contention"))) is CloudUnavailableError
    assert type(classify(FrozenTopic("gone"))) is CloudAccessError


def test_an_adapter_may_name_its_own_transient_class() -> None:
    timed_out = classify(api.DeadlineExceeded("x"), unavailable=StoreUnavailableError)
    refused = classify(api.InvalidArgument("x"), unavailable=StoreUnavailableError)
    assert type(timed_out) is StoreUnavailableError and timed_out.kind == "store_unavailable"
    assert type(refused) is CloudRefusedError


@pytest.mark.parametrize(
    "error",
    [ValueError("invalid literal for int()"), KeyError("name"), RequestError("field", "bad")],
)
def test_anything_else_passes_unchanged(error: Exception) -> None:
    @raises_service_errors()
    class Adapter:
        def call(self) -> None:
            raise error

    assert classify(error) is None
    with pytest.raises(type(error)) as raised:
        Adapter().call()
    assert raised.value is error


def test_the_decorator_chains_the_original() -> None:
    original = api.DeadlineExceeded("frozen")

    @raises_service_errors()
    class Adapter:
        def call(self) -> None:
            raise original

        def _helper(self) -> None:
            raise original

    with pytest.raises(CloudUnavailableError) as raised:
        Adapter().call()
    assert raised.value.__cause__ is original
    with pytest.raises(api.DeadlineExceeded):  # private helpers are left to their callers
        Adapter()._helper()
