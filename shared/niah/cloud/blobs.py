"""Cloud Storage, behind the service's ``BlobStore`` interface."""

from __future__ import annotations

from typing import Any, BinaryIO, cast
from urllib.parse import quote

from niah.cloud import metering
from niah.cloud.google_errors import raises_service_errors
from niah.cloud.metering import GCS_CLASS_A, GCS_CLASS_B
from niah.core.interfaces import BlobInfo
from niah.settings import get_settings


def browser_url(bucket: str, name: str) -> str:
    """A link a signed-in reader with access opens; on the emulator, its download link.

    Cloud Storage's authenticated browser download
    (cloud.google.com/storage/docs/access-control/cookie-based-authentication, read
    2026-11-26). No client needed: the CLI links a report before it is written.
    """
    emulator = get_settings().storage_emulator_host
    if emulator:
        return (
            f"{emulator.rstrip('/')}/download/storage/v1/b/{bucket}/o/"
            f"{quote(name, safe='')}?alt=media"
        )
    return f"https://storage.cloud.google.com/{bucket}/{quote(name, safe='/')}"


@metering.waits_on(metering.STORAGE)
@raises_service_errors()
class GcsBlobStore:
    """``niah.core.interfaces.BlobStore`` on Cloud Storage (or its emulator).

    The emulator is reached through STORAGE_EMULATOR_HOST, as the client library does.
    """

    def __init__(self, bucket: str, client: Any = None) -> None:
        import google.cloud.storage as storage

        self.bucket = bucket
        self._client = client or storage.Client(project=get_settings().project)
        self._bucket = self._client.bucket(bucket)

    def list(self, prefix: str) -> list[BlobInfo]:
        """Objects whose names start with ``prefix``, sorted by name."""
        blobs = self._client.list_blobs(self.bucket, prefix=prefix)
        infos = [
            BlobInfo(b.name, int(b.size or 0), str(b.md5_hash or b.crc32c or b.etag)) for b in blobs
        ]
        metering.count(GCS_CLASS_A, max(1, -(-len(infos) // 1000)))  # a page per 1,000
        return sorted(infos, key=lambda info: info.name)

    def read(self, name: str) -> bytes:
        """The object's bytes; ``KeyError`` if it does not exist."""
        from google.api_core.exceptions import NotFound

        metering.count(GCS_CLASS_B)
        try:
            return bytes(self._bucket.blob(name).download_as_bytes())
        except NotFound as error:
            raise KeyError(name) from error

    def open(self, name: str) -> BinaryIO:
        """The object as a stream, fetched in 4 MiB ranges; ``KeyError`` if absent."""
        from google.api_core.exceptions import NotFound

        blob = self._bucket.blob(name)
        metering.count(GCS_CLASS_B)  # the metadata; each 4 MiB range read is one more
        try:
            blob.reload()
        except NotFound as error:
            raise KeyError(name) from error
        return cast(BinaryIO, blob.open("rb", chunk_size=4 * 1024 * 1024))

    def write(
        self,
        name: str,
        data: bytes,
        *,
        content_type: str,
        if_absent: bool = False,
        if_generation: int | None = None,
    ) -> bool:
        """Store ``data`` (create-if-absent is ``if_generation_match=0``)."""
        from google.api_core.exceptions import PreconditionFailed

        blob = self._bucket.blob(name)
        metering.count(GCS_CLASS_A)
        try:
            blob.upload_from_string(
                data,
                content_type=content_type,
                if_generation_match=0 if if_absent else if_generation,
            )
        except PreconditionFailed:
            return False
        return True

    def generation(self, name: str) -> int:
        """The object's generation from its metadata (a class B operation), 0 if absent."""
        metering.count(GCS_CLASS_B)
        blob = self._bucket.get_blob(name)
        return int(blob.generation) if blob is not None and blob.generation else 0

    def browser_url(self, name: str) -> str:
        """A link a signed-in reader with access opens (``browser_url``)."""
        return browser_url(self.bucket, name)
