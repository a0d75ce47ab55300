"""Haystacks: text files under a Cloud Storage prefix, tokenized once and cached.

The harness re-reads and re-tokenizes the haystack for every cell. Here the token IDs
of the whole corpus are computed once per (haystack content, tokenizer), stored next
to the haystack as one content-addressed object (written create-if-absent, so
concurrent workers cannot race), and kept in memory by each worker instance. A cell is
then a slice of byte offsets: no tokenizing, no decoding.
"""

from __future__ import annotations

import io
import threading
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from niah.core.haystack_files import content_fingerprint, haystack_files
from niah.core.interfaces import BlobInfo, BlobStore, Tokenizer
from niah.errors import HaystackError
from niah.memo import ProcessCache

CACHE_PREFIX = "haystack-cache/"
CACHE_FORMAT = "v1"


@dataclass
class HaystackTokens:
    """A tokenized corpus, repeated on demand to any length.

    ``offsets[k]`` is the byte offset of token ``k`` in ``text``; ``sentence_ends``
    holds the token positions right after a token ending in '.', where a needle can go
    without splitting a sentence.
    """

    key: str
    text: bytes
    ids: npt.NDArray[np.uint32]
    piece_bytes: npt.NDArray[np.int64]
    _offsets: npt.NDArray[np.int64] = field(init=False)
    _sentence_ends: npt.NDArray[np.int64] = field(init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def __post_init__(self) -> None:
        self._offsets = np.zeros(1, dtype=np.int64)
        self._sentence_ends = np.zeros(0, dtype=np.int64)
        self.ensure(len(self.ids))

    @property
    def corpus_tokens(self) -> int:
        """Tokens in one pass of the corpus."""
        return len(self.ids)

    def ensure(self, n_tokens: int) -> None:
        """Extend the offsets to cover ``n_tokens`` by repeating the corpus in order."""
        with self._lock:
            have = len(self._offsets) - 1
            if have >= n_tokens:
                return
            if len(self.ids) == 0:
                raise HaystackError("the haystack has no tokens")
            repeats = -(-n_tokens // len(self.ids))
            one_pass = np.cumsum(self.piece_bytes[self.ids])
            passes = [one_pass + k * len(self.text) for k in range(repeats)]
            self._offsets = np.concatenate([np.zeros(1, dtype=np.int64), *passes])
            ends = self._offsets[1:]
            last_byte = np.frombuffer(self.text, dtype=np.uint8)[(ends - 1) % len(self.text)]
            self._sentence_ends = np.flatnonzero(last_byte == ord(".")) + 1

    def byte_offset(self, token_index: int) -> int:
        """Byte offset of token ``token_index`` in the repeated text."""
        return int(self._offsets[token_index])

    def sentence_start_at_or_before(self, token_index: int) -> int:
        """The last position <= ``token_index`` that follows a sentence end (else 0)."""
        i = int(np.searchsorted(self._sentence_ends, token_index, side="right"))
        return int(self._sentence_ends[i - 1]) if i > 0 else 0

    def text_between(self, start_token: int, end_token: int) -> bytes:
        """Bytes of tokens ``[start_token, end_token)`` of the repeated text."""
        start, end = self.byte_offset(start_token), self.byte_offset(end_token)
        size = len(self.text)
        if end - start <= 0:
            return b""
        first, last = divmod(start, size), divmod(end, size)
        if first[0] == last[0]:
            return self.text[first[1] : last[1]]
        middle = self.text * (last[0] - first[0] - 1)
        return self.text[first[1] :] + middle + self.text[: last[1]]


# Tokenized haystacks by fingerprint, kept for the instance's life.
loaded_haystacks: ProcessCache[str, HaystackTokens] = ProcessCache()


def load_haystack(blobs: BlobStore, prefix: str, tokenizer: Tokenizer) -> HaystackTokens:
    """The tokenized haystack under ``prefix``: from memory, else the cache, else built.

    The cache key is a hash of the files' names and content fingerprints (from the
    listing, so a warm worker downloads one object) and the tokenizer's name.
    """
    files = haystack_files(blobs, prefix)
    fingerprint = content_fingerprint(files, salt=f"{CACHE_FORMAT}:{tokenizer.name}")
    return loaded_haystacks.get_or_make(
        fingerprint, lambda: _from_cache_or_tokenize(blobs, files, fingerprint, tokenizer)
    )


def _from_cache_or_tokenize(
    blobs: BlobStore, files: list[BlobInfo], fingerprint: str, tokenizer: Tokenizer
) -> HaystackTokens:
    """The cached tokens if another instance stored them, else tokenize and store them."""
    cache_name = f"{CACHE_PREFIX}{tokenizer.name}/{fingerprint}.npz"
    try:
        return _from_cache(blobs.read(cache_name), fingerprint, tokenizer)
    except KeyError:
        pass
    haystack = _tokenize(blobs, [f.name for f in files], fingerprint, tokenizer)
    blobs.write(
        cache_name, _to_cache(haystack), content_type="application/octet-stream", if_absent=True
    )
    return haystack


def _tokenize(blobs: BlobStore, names: list[str], key: str, tokenizer: Tokenizer) -> HaystackTokens:
    parts = []
    for name in names:
        data = blobs.read(name)
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise HaystackError(
                f"haystack file gs://{blobs.bucket}/{name} is not UTF-8 text "
                f"(byte {error.start}); remove it or convert it"
            ) from error
        parts.append(data)
    # SentencePiece writes spaces as U+2581, so a literal U+2581 would not round-trip;
    # it becomes a space (the only change made to a haystack's text).
    text = b"".join(parts).replace("\u2581".encode(), b" ")
    if not text.strip():
        raise HaystackError(f"the haystack files under gs://{blobs.bucket}/ are empty")
    ids = np.asarray(tokenizer.encode(text.decode("utf-8")), dtype=np.uint32)
    if int(tokenizer.piece_byte_lengths[ids].sum()) != len(text):
        raise HaystackError(
            "the haystack's tokens do not add up to its text, so cells cannot be cut by "
            "byte offsets; report this haystack as a bug"
        )
    return HaystackTokens(key, text, ids, tokenizer.piece_byte_lengths)


def _to_cache(haystack: HaystackTokens) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, text=np.frombuffer(haystack.text, dtype=np.uint8), ids=haystack.ids)
    return buffer.getvalue()


def _from_cache(data: bytes, key: str, tokenizer: Tokenizer) -> HaystackTokens:
    with np.load(io.BytesIO(data)) as arrays:
        text = arrays["text"].tobytes()
        ids = arrays["ids"].astype(np.uint32)
    return HaystackTokens(key, text, ids, tokenizer.piece_byte_lengths)
