"""Where a haystack is, and which files it holds: the light half of the haystack.

The dispatcher needs this to validate a run and name it; it must not pay for numpy or
the tokenizer on a cold start, so the token cache lives apart in
``niah.core.prompts.haystack_tokens``.

One haystack is generated rather than stored: ``noise``, RULER's repeated filler
sentences, which separate retrieval from reading comprehension (a model cannot be
distracted by content that has none).
"""

from __future__ import annotations

import hashlib

from niah.core.interfaces import BlobInfo, BlobStore
from niah.errors import HaystackError
from niah.settings import get_settings

TEXT_SUFFIXES = (".txt", ".md", ".text")

# RULER's noise haystack, in its words (NVIDIA/RULER scripts/data/synthetic/niah.py,
# read 2026-11-26): one line, repeated.
NOISE_LINE = (
    "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again."
)
NOISE_LINES = 400  # ~10k tokens, repeated by the prompt builder to any length
GENERATED_PREFIX = "generated/"
GENERATED_HAYSTACKS = {"noise": ("\n".join([NOISE_LINE] * NOISE_LINES) + "\n").encode()}


def haystack_prefix(haystack_dir: str | None, bucket: str) -> str:
    """The object prefix a ``haystack_dir`` option names, under the haystacks prefix.

    Accepts a haystack name (``paul_graham_essays``), a prefix in the bucket
    (``haystacks/mine/``) or a ``gs://`` URI in the configured bucket; anything outside
    the haystacks prefix (saved prompts, reports, batch files) is refused.
    """
    settings = get_settings()
    value = haystack_dir or settings.default_haystack
    if value.startswith(("/", "~", "./", "../")):
        raise HaystackError(
            f"{value!r} looks like a local path; haystack_dir names a haystack in the "
            "service's bucket. Upload the folder there (gcloud storage cp -r FOLDER "
            f"gs://{bucket}/{settings.haystacks_prefix}NAME/), or locally put it in "
            ".local/haystacks/NAME/ and restart the stack, then pass NAME"
        )
    if value.strip("/") in GENERATED_HAYSTACKS:
        return f"{GENERATED_PREFIX}{value.strip('/')}/"
    return source_prefix(value, bucket, option="haystack_dir", root=settings.haystacks_prefix)


def source_prefix(value: str, bucket: str, *, option: str, root: str) -> str:
    """The object prefix ``value`` names in ``bucket``, refused unless under ``root``.

    A bare name is a folder under ``root`` (``root`` itself when it is root's name).
    """
    if value.startswith("gs://"):
        bucket_name, _, value = value[len("gs://") :].partition("/")
        if bucket_name != bucket:
            raise HaystackError(
                f"{option} must be in the service's bucket gs://{bucket}/, "
                f"not gs://{bucket_name}/; upload the files there first"
            )
    elif "/" not in value.strip("/") and value.strip("/") + "/" != root:
        value = root + value
    value = value.strip("/")
    if not value or ".." in value.split("/"):
        raise HaystackError(f"{option} must name a folder in the bucket, without '..'")
    prefix = value + "/"
    if not prefix.startswith(root):
        raise HaystackError(
            f"{option} must be under gs://{bucket}/{root}, not gs://{bucket}/{prefix}; "
            f"copy the files to gs://{bucket}/{root}NAME/ and pass NAME"
        )
    return prefix


def check_source_size(files: list[BlobInfo], *, option: str) -> None:
    """Refuse a haystack or source that lists more bytes than ``max_source_bytes``."""
    limit = get_settings().max_source_bytes
    total = sum(info.size for info in files)
    if total > limit:
        raise HaystackError(
            f"{option} lists {total:,} bytes in {len(files)} files, above the limit of "
            f"{limit:,} (NIAH_MAX_SOURCE_BYTES); name a smaller folder or one file"
        )


def haystack_files(blobs: BlobStore, prefix: str) -> list[BlobInfo]:
    """The haystack's text files under ``prefix``, in the sorted order they are read."""
    generated = _generated(prefix)
    if generated is not None:
        name = f"{prefix}{prefix.strip('/').rsplit('/', 1)[-1]}.txt"
        return [BlobInfo(name, len(generated), hashlib.md5(generated).hexdigest())]
    files = [info for info in blobs.list(prefix) if info.name.endswith(TEXT_SUFFIXES)]
    if not files:
        raise HaystackError(
            f"gs://{blobs.bucket}/{prefix} holds no .txt files; upload the haystack's text "
            f"files there, or use one of: {', '.join(available_haystacks(blobs))}"
        )
    return files


def available_haystacks(blobs: BlobStore) -> list[str]:
    """The haystack names the bucket holds, and the generated ones."""
    root = get_settings().haystacks_prefix
    names = {info.name[len(root) :].split("/", 1)[0] for info in blobs.list(root)}
    return sorted(name for name in names if name) + sorted(GENERATED_HAYSTACKS)


def read_haystack_file(blobs: BlobStore, name: str) -> bytes:
    """A haystack file's bytes: generated in memory, or read from the bucket."""
    generated = _generated(name.rsplit("/", 1)[0] + "/")
    return generated if generated is not None else blobs.read(name)


def _generated(prefix: str) -> bytes | None:
    if not prefix.startswith(GENERATED_PREFIX):
        return None
    return GENERATED_HAYSTACKS.get(prefix[len(GENERATED_PREFIX) :].strip("/"))


def content_fingerprint(files: list[BlobInfo], *, salt: str = "") -> str:
    """A hash of the files' names and content fingerprints, from a listing alone."""
    lines = [salt, *(f"{f.name}:{f.fingerprint}" for f in files)]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:32]
