"""Every Google exception leaves the Cloud adapters as a service error (issue 27)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import google.api_core.exceptions as api
import pytest
import requests
from google.auth.exceptions import TransportError

from niah.cloud.blobs import GcsBlobStore
from niah.cloud.bus import PubSubPublisher
from niah.cloud.google_errors import GOOGLE_ERRORS, classify, raises_service_errors
from niah.cloud.store import FirestoreStore
from niah.errors import (
    CloudAccessError,
    CloudRefusedError,
    CloudUnavailableError,
    NiahError,
    RequestError,
    StoreUnavailableError,
)
from niah.service.messages import report_message

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


class Client:
    """A fake Cloud client: every call chain works until ``error`` is set.

    Then the call named ``at`` raises it (every call, when ``at`` is None): a frozen
    emulator, or one refusal.
    """

    def __init__(self) -> None:
        self.error: Exception | None = None
        self.at: str | None = None

    def fail(self, error: Exception, at: str | None = None) -> Client:
        self.error, self.at = error, at
        return self

    def __getattr__(self, name: str) -> Callable[..., Client]:
        def call(*args: Any, **kwargs: Any) -> Client:
            if self.error is not None and self.at in (None, name):
                raise self.error
            return self

        return call


def public_methods(cls: type) -> set[str]:
    """The class's public methods, its own and its bases' (the store is composed of parts)."""
    return {
        name
        for part in cls.__mro__[:-1]  # not object's
        for name, member in vars(part).items()
        if not name.startswith("_") and callable(member)
    }


STORE_CALLS: dict[str, Callable[[FirestoreStore], object]] = {
    "create_run": lambda s: s.create_run("r", {}),
    "get_run": lambda s: s.get_run("r"),
    "count_cells": lambda s: s.count_cells("r"),
    "shard_count": lambda s: s.shard_count("r", "c", shards=1),
    "update_run": lambda s: s.update_run("r", {}),
    "update_batch_job": lambda s: s.update_batch_job("r", "projects/p/batchPredictionJobs/1", {}),
    "cancel_run": lambda s: s.cancel_run("r"),
    "record_cell": lambda s: s.record_cell("r", "c", {}, failed=False, shards=1),
    "list_cells": lambda s: s.list_cells("r"),
    "cell_ids": lambda s: s.cell_ids("r"),
    "claim_cell": lambda s: s.claim_cell("r", "c", 60),
    "renew_lease": lambda s: s.renew_lease("r", "c", 1, 60),
    "release_cell": lambda s: s.release_cell("r", "c", 1),
    "hand_on_lapsed": lambda s: s.hand_on_lapsed("r"),
    "lease_seconds_left": lambda s: s.lease_seconds_left("r", "c"),
    "has_live_lease": lambda s: s.has_live_lease("r"),
    "taken_over_since": lambda s: s.taken_over_since("r", dt.datetime.now(dt.UTC)),
    "mark_report_requested": lambda s: s.mark_report_requested("r", 60),
    "clear_report_request": lambda s: s.clear_report_request("r"),
    "leased_cells": lambda s: s.leased_cells("r"),
    "open_call": lambda s: s.open_call("r", "c.C001", {}, cell_id="c", claim=1, lease_seconds=60),
    "close_call": lambda s: s.close_call("r", "c.C001", {}),
    "list_calls": lambda s: s.list_calls("r"),
    "note_attempt": lambda s: s.note_attempt("r", "c", "boom"),
    "last_attempt": lambda s: s.last_attempt("r", "c"),
    "attempted_within": lambda s: s.attempted_within("r", 600),
    "claim_report": lambda s: s.claim_report("r", 60, "claim"),
    "renew_report_claim": lambda s: s.renew_report_claim("r", "claim"),
    "finish_report": lambda s: s.finish_report("r", "claim", 1, {}),
    "fail_report": lambda s: s.fail_report("r", {"kind": "k", "reason": "r"}, claim_id="c"),
    "reopen_report": lambda s: s.reopen_report("r"),
    "reset_failed_cells": lambda s: s.reset_failed_cells("r", shards=1),
    "running_runs": lambda s: s.running_runs(),
    "recent_runs": lambda s: s.recent_runs(10),
    "index_runs": lambda s: s.index_runs(["status"]),
    "get_sentinel": lambda s: s.get_sentinel("daily"),
    "list_sentinels": lambda s: s.list_sentinels(),
    "sentinel_runs": lambda s: s.sentinel_runs("daily", ["status"]),
}
PUBLISHER_CALLS: dict[str, Callable[[PubSubPublisher], object]] = {
    "publish_cells": lambda p: p.publish_cells([{"run_id": "r", "cell_id": "c"}]),
    "publish_report": lambda p: p.publish_report(report_message("r")),
    "publish_alert": lambda p: p.publish_alert({"run_id": "r"}, {"run_id": "r"}),
}
BLOBS_CALLS: dict[str, Callable[[GcsBlobStore], object]] = {
    "list": lambda b: b.list("haystacks/"),
    "read": lambda b: b.read("a.txt"),
    "open": lambda b: b.open("a.txt"),
    "write": lambda b: b.write("a.txt", b"a", content_type="text/plain"),
    "generation": lambda b: b.generation("a.txt"),
}
ADAPTER_CALLS: list[tuple[Callable[[Client], Any], dict[str, Callable[[Any], object]]]] = [
    (lambda client: FirestoreStore(client=client), STORE_CALLS),
    (lambda client: PubSubPublisher(client=client), PUBLISHER_CALLS),
    (lambda client: GcsBlobStore("bucket", client=client), BLOBS_CALLS),
]


def test_every_public_method_of_the_adapters_is_called_below() -> None:
    """A new public method needs its call in the tables above, to show it is classified."""
    assert sorted(public_methods(FirestoreStore)) == sorted(STORE_CALLS)
    assert sorted(public_methods(PubSubPublisher)) == sorted(PUBLISHER_CALLS)
    # browser_url builds a link and calls nothing.
    assert sorted(public_methods(GcsBlobStore)) == sorted([*BLOBS_CALLS, "browser_url"])


@pytest.mark.parametrize(
    ("make", "call", "becomes"),
    [
        (make, call, StoreUnavailableError if calls is STORE_CALLS else CloudUnavailableError)
        for make, calls in ADAPTER_CALLS
        for call in calls.values()
    ],
    ids=[method for _, calls in ADAPTER_CALLS for method in calls],
)
def test_a_frozen_service_is_a_service_error_from_every_method(
    make: Callable[[Client], Any], call: Callable[[Any], object], becomes: type[NiahError]
) -> None:
    client = Client()
    adapter = make(client)
    client.fail(api.DeadlineExceeded("frozen"))
    with pytest.raises(becomes) as raised:
        call(adapter)
    assert type(raised.value) is becomes
    assert str(raised.value) == "DeadlineExceeded: 504 frozen"
    assert isinstance(raised.value.__cause__, api.DeadlineExceeded)


def test_the_store_classifies_a_commit_by_the_table() -> None:
    """A cell over Firestore's 1 MiB limit is refused for good, not retried as unavailable."""
    client = Client()
    store = FirestoreStore(client=client)
    client.fail(api.InvalidArgument("Document exceeds the maximum size"), at="commit")
    with pytest.raises(CloudRefusedError):
        store.record_cell("r", "c", {}, failed=False, shards=1)
    client.fail(api.RetryError("Timeout of 60.0s exceeded", None), at="commit")
    with pytest.raises(StoreUnavailableError):
        store.record_cell("r", "c", {}, failed=False, shards=1)


def test_a_transaction_that_never_began_is_unavailable() -> None:
    client = Client()
    store = FirestoreStore(client=client)
    client.fail(ValueError(NO_TRANSACTION_ID), at="transaction")
    with pytest.raises(StoreUnavailableError, match="ValueError: The transaction has no"):
        store.renew_lease("r", "c", 1, 60)


def test_a_publish_that_times_out_is_unavailable() -> None:
    client = Client()
    publisher = PubSubPublisher(client=client)
    client.fail(TimeoutError(), at="result")  # the publish future's result(timeout=)
    with pytest.raises(CloudUnavailableError, match=r"^TimeoutError: $"):
        publisher.publish_cells([{"run_id": "r", "cell_id": "c"}])


def test_the_adapters_own_answers_still_come_first() -> None:
    store_client, blobs_client = Client(), Client()
    store = FirestoreStore(client=store_client)
    blobs = GcsBlobStore("bucket", client=blobs_client)
    store_client.fail(api.AlreadyExists("run exists"), at="create")
    assert store.create_run("r", {}) is False
    store_client.fail(api.AlreadyExists("cell exists"), at="commit")
    assert store.record_cell("r", "c", {}, failed=False, shards=1).stored is False
    blobs_client.fail(api.NotFound("no object"), at="download_as_bytes")
    with pytest.raises(KeyError):
        blobs.read("a.txt")
    blobs_client.fail(api.NotFound("no object"), at="reload")
    with pytest.raises(KeyError):
        blobs.open("a.txt")
    blobs_client.fail(api.PreconditionFailed("exists"), at="upload_from_string")
    assert blobs.write("a.txt", b"a", content_type="text/plain", if_absent=True) is False
