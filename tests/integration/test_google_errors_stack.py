"""The emulators' own refusals leave the adapters as the service's errors (issue 27)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from niah.cloud.blobs import GcsBlobStore
from niah.cloud.bus import PubSubPublisher
from niah.cloud.store import FirestoreStore
from niah.errors import CloudAccessError, CloudRefusedError
from niah.service.messages import report_message
from niah.settings import get_settings
from tests.integration.conftest import Stack

pytestmark = pytest.mark.integration


@pytest.fixture
def missing_reports_topic(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Settings naming a reports topic the emulator does not have."""
    topic = f"no-such-topic-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("NIAH_REPORTS_TOPIC", topic)
    get_settings.cache_clear()
    yield topic
    get_settings.cache_clear()  # monkeypatch restores the environment after this


def test_publishing_to_a_missing_topic_names_the_fix(
    stack: Stack, missing_reports_topic: str
) -> None:
    with pytest.raises(CloudAccessError) as raised:
        PubSubPublisher().publish_report(report_message("run-1"))
    assert raised.value.kind == "cloud_access"
    assert str(raised.value).startswith("NotFound: 404")
    assert "check infra/ was applied" in str(raised.value)


def test_a_missing_bucket_is_an_access_error_and_a_missing_object_a_key_error(
    stack: Stack,
) -> None:
    missing = GcsBlobStore(f"no-such-bucket-{uuid.uuid4().hex[:8]}")
    with pytest.raises(CloudAccessError, match=r"^NotFound: 404"):
        missing.list("haystacks/")
    with pytest.raises(CloudAccessError, match=r"^NotFound: 404"):
        missing.write("a.txt", b"a", content_type="text/plain")
    with pytest.raises(KeyError):  # the adapter's own answer, unchanged
        GcsBlobStore(get_settings().bucket).read(f"absent-{uuid.uuid4().hex}.txt")


def test_a_cell_over_firestores_size_limit_is_refused_not_retried(stack: Stack) -> None:
    store = FirestoreStore()
    run_id = f"errors-test-{uuid.uuid4().hex[:8]}"
    assert store.create_run(run_id, {"total": 1, "status": "running"})
    oversized = {"status": "answered", "answer": "x" * (1024 * 1024 + 1)}
    try:
        with pytest.raises(CloudRefusedError, match=r"^InvalidArgument: 400"):
            store.record_cell(run_id, "c", oversized, failed=False, shards=1)
    finally:  # a running run left on the shared stack is the sweep's to look at
        store.update_run(run_id, {"status": "complete"})
