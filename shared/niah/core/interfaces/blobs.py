"""What the service needs of blob storage: the haystack, the token cache, the reports.

``niah.cloud.blobs`` implements it on Cloud Storage; unit tests keep blobs in memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import BinaryIO, Protocol


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

    def open(self, name: str) -> BinaryIO:
        """The object as a stream read in chunks (for files too large to hold whole)."""
        ...

    def write(
        self,
        name: str,
        data: bytes,
        *,
        content_type: str,
        if_absent: bool = False,
        if_generation: int | None = None,
    ) -> bool:
        """Store ``data``, unless a precondition finds the object otherwise (False).

        ``if_absent``: only if no object has that name yet; ``if_generation``: only if
        the object is still at that generation (0: absent).
        """
        ...

    def generation(self, name: str) -> int:
        """The object's generation (it changes on every write), 0 if it does not exist."""
        ...

    def browser_url(self, name: str) -> str:
        """A link that opens the object in a browser for a reader with access."""
        ...


def gs_uri(bucket: str, name: str) -> str:
    """``gs://bucket/name``."""
    return f"gs://{bucket}/{name}"
