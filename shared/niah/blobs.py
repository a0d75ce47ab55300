"""Cloud Storage, behind the one small interface the service needs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from niah.settings import get_settings


@dataclass(frozen=True)
class BlobInfo:
    """A stored object's name and content fingerprint (from the listing, no download)."""

    name: str
    size: int
    fingerprint: str


class BlobStore(Protocol):
    """Objects under one bucket."""

    bucket: str

    def list(self, prefix: str) -> list[BlobInfo]:
        """Objects whose names start with ``prefix``, sorted by name."""
        ...

    def read(self, name: str) -> bytes:
        """The object's bytes; ``KeyError`` if it does not exist."""
        ...

    def write(self, name: str, data: bytes, *, content_type: str, if_absent: bool = False) -> bool:
        """Store ``data``; with ``if_absent``, only if no object has that name yet.

        Returns False when ``if_absent`` found the object already there.
        """
        ...

    def exists(self, name: str) -> bool:
        """Whether an object has that name."""
        ...


def gs_uri(bucket: str, name: str) -> str:
    """``gs://bucket/name``."""
    return f"gs://{bucket}/{name}"


class GcsBlobStore:
    """A ``BlobStore`` on Cloud Storage (or its emulator, via STORAGE_EMULATOR_HOST)."""

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
        return sorted(infos, key=lambda info: info.name)

    def read(self, name: str) -> bytes:
        """The object's bytes; ``KeyError`` if it does not exist."""
        from google.api_core.exceptions import NotFound

        try:
            return bytes(self._bucket.blob(name).download_as_bytes())
        except NotFound as error:
            raise KeyError(name) from error

    def write(self, name: str, data: bytes, *, content_type: str, if_absent: bool = False) -> bool:
        """Store ``data`` (create-if-absent with ``if_generation_match=0``)."""
        from google.api_core.exceptions import PreconditionFailed

        blob = self._bucket.blob(name)
        try:
            blob.upload_from_string(
                data, content_type=content_type, if_generation_match=0 if if_absent else None
            )
        except PreconditionFailed:
            return False
        return True

    def exists(self, name: str) -> bool:
        """Whether an object has that name."""
        return bool(self._bucket.blob(name).exists())
