"""Where a haystack is, and which files it holds: the light half of the haystack.

The dispatcher needs this to validate a run and name it; it must not pay for numpy or
the tokenizer on a cold start, so the token cache lives apart in
``niah.core.haystack_tokens``.
"""

from __future__ import annotations

import hashlib

from niah.core.interfaces import BlobInfo, BlobStore
from niah.errors import HaystackError
from niah.settings import get_settings

TEXT_SUFFIXES = (".txt", ".md", ".text")


def haystack_prefix(haystack_dir: str | None, bucket: str) -> str:
    """The object prefix a ``haystack_dir`` option names, inside the configured bucket.

    Accepts a haystack name (``paul_graham_essays``), a prefix in the bucket
    (``haystacks/mine/``) or a ``gs://`` URI in the configured bucket.
    """
    settings = get_settings()
    value = haystack_dir or settings.default_haystack
    if value.startswith("gs://"):
        bucket_name, _, prefix = value[len("gs://") :].partition("/")
        if bucket_name != bucket:
            raise HaystackError(
                f"haystack_dir must be in the service's bucket gs://{bucket}/, "
                f"not gs://{bucket_name}/; upload the files there first"
            )
        value = prefix
    elif "/" not in value.strip("/"):
        value = settings.haystacks_prefix + value
    value = value.strip("/")
    if not value or ".." in value.split("/"):
        raise HaystackError("haystack_dir must name a folder of .txt files")
    return value + "/"


def haystack_files(blobs: BlobStore, prefix: str) -> list[BlobInfo]:
    """The haystack's text files under ``prefix``, in the sorted order they are read."""
    files = [info for info in blobs.list(prefix) if info.name.endswith(TEXT_SUFFIXES)]
    if not files:
        raise HaystackError(
            f"gs://{blobs.bucket}/{prefix} holds no .txt files; upload the haystack's text "
            "files there, or leave haystack_dir out for the default"
        )
    return files


def content_fingerprint(files: list[BlobInfo], *, salt: str = "") -> str:
    """A hash of the files' names and content fingerprints, from a listing alone."""
    lines = [salt, *(f"{f.name}:{f.fingerprint}" for f in files)]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:32]
