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

from niah.core.interfaces import BlobInfo, BlobStore, Tokenizer
from niah.core.prompts.haystack_files import content_fingerprint, haystack_files, read_haystack_file
from niah.errors import HaystackError
from niah.memo import ProcessCache

CACHE_PREFIX = "haystack-cache/"
CACHE_FORMAT = "v1"


@dataclass
class HaystackTokens:
    """A tokenized corpus, repeated on demand to any length.

    ``offsets[k]`` is the byte offset of token ``k`` in ``text``; ``sentence_ends``
    holds the token positions right after a token ending in '.', where a needle can go
    without splitting a sentence; ``safe`` holds the token positions that are safe
    boundaries (see ``niah.core.prompts.prompt_builder``): the tokenization of any text splits
    there, so the corpus's own token count between two of them is exact.
    """

    key: str
    text: bytes
    ids: npt.NDArray[np.uint32]
    piece_bytes: npt.NDArray[np.int64]
    _offsets: npt.NDArray[np.int64] = field(init=False)
    _sentence_ends: npt.NDArray[np.int64] = field(init=False)
    _safe: npt.NDArray[np.int64] = field(init=False)
    _junction: int | None = field(default=None, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def __post_init__(self) -> None:
        self._offsets = np.zeros(1, dtype=np.int64)
        self._sentence_ends = np.zeros(0, dtype=np.int64)
        self._safe = np.zeros(0, dtype=np.int64)
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
            text = np.frombuffer(self.text, dtype=np.uint8)
            ends = self._offsets[1:]
            self._sentence_ends = np.flatnonzero(text[(ends - 1) % len(text)] == ord(".")) + 1
            starts = self._offsets[:-1]
            self._safe = np.flatnonzero(
                _safe_pairs(text[(starts - 1) % len(text)], text[starts % len(text)])
            )
            self._safe = self._safe[self._safe > 0]  # nothing of the corpus precedes token 0

    @property
    def sentence_ends(self) -> npt.NDArray[np.int64]:
        """Token positions right after a token ending in '.', over the corpus as extended."""
        return self._sentence_ends

    @property
    def safe_boundaries(self) -> npt.NDArray[np.int64]:
        """Token positions that are safe boundaries, over the corpus as extended."""
        return self._safe

    def byte_offset(self, token_index: int) -> int:
        """Byte offset of token ``token_index`` in the repeated text."""
        return int(self._offsets[token_index])

    def sentence_start_at_or_before(self, token_index: int) -> int:
        """The last position <= ``token_index`` that follows a sentence end (else 0)."""
        i = int(np.searchsorted(self._sentence_ends, token_index, side="right"))
        return int(self._sentence_ends[i - 1]) if i > 0 else 0

    def safe_span(self, start_token: int, end_token: int) -> tuple[int, int] | None:
        """The first and last safe boundaries strictly inside ``(start, end)``, if any.

        Strictly inside, so both characters around each boundary are the corpus's own.
        """
        first = int(np.searchsorted(self._safe, start_token, side="right"))
        last = int(np.searchsorted(self._safe, end_token, side="left")) - 1
        if first > last:
            return None
        return int(self._safe[first]), int(self._safe[last])

    def tokens_between(self, start_token: int, end_token: int, junction_correction: int) -> int:
        """Exact tokens of the text between two safe boundaries.

        The corpus's own count, corrected where the span crosses the end of one pass
        of the corpus into the next (there the tokenization may differ from the ids).
        """
        n = len(self.ids)
        junctions = (end_token - 1) // n - start_token // n
        return end_token - start_token + junction_correction * junctions

    def junction_correction(self, tokenizer: Tokenizer) -> int:
        """Tokens the join of two passes adds over the ids' own count (usually 0).

        Counted once: the text from the last safe boundary of a pass to the first of the
        next, tokenized, against the ids over the same text.
        """
        if self._junction is None:
            n = len(self.ids)
            inside = self._safe[self._safe < n]
            if len(inside) == 0:
                self._junction = 0  # no safe boundary: every span is tokenized whole
            else:
                first, last = int(inside[0]), int(inside[-1])
                window = self.text[self.byte_offset(last) :] + self.text[: self.byte_offset(first)]
                joined = len(tokenizer.encode(window.decode("utf-8", errors="ignore")))
                self._junction = joined - (n - last + first)
        return self._junction

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


def _safe_pairs(before: npt.NDArray[np.uint8], at: npt.NDArray[np.uint8]) -> npt.NDArray[np.bool_]:
    """Whether the boundary between each pair of bytes is safe (see the prompt builder).

    A space after a character other than a space or '>' (the vocabulary's one piece
    across such a space is ``>▁</``), and either side of a run of newlines.
    """
    space, newline, angle = ord(" "), ord("\n"), ord(">")
    return (
        ((at == space) & (before != space) & (before != angle))
        | ((at == newline) & (before != newline))
        | ((before == newline) & (at != newline))
    )


# Tokenized haystacks by fingerprint, kept for the instance's life.
loaded_haystacks: ProcessCache[str, HaystackTokens] = ProcessCache()


def load_haystack(
    blobs: BlobStore,
    prefix: str,
    tokenizer: Tokenizer,
    files: list[BlobInfo] | None = None,
) -> HaystackTokens:
    """The tokenized haystack under ``prefix``: from memory, else the cache, else built.

    The cache key is a hash of the files' names and content fingerprints and the
    tokenizer's name. ``files``: the listing the run was created with (on the run
    document), so a warm worker makes no bucket call at all; without it the prefix is
    listed. A listed haystack that differs from ``files`` is refused rather than cached
    under the run's key.
    """
    listed = files if files is not None else haystack_files(blobs, prefix)
    fingerprint = content_fingerprint(listed, salt=f"{CACHE_FORMAT}:{tokenizer.name}")

    def make() -> HaystackTokens:
        if files is not None:  # not in memory: check the bucket still holds these files
            now = haystack_files(blobs, prefix)
            if [(f.name, f.fingerprint) for f in now] != [(f.name, f.fingerprint) for f in files]:
                raise HaystackError(
                    f"the haystack under gs://{blobs.bucket}/{prefix} changed after the run "
                    "was created; start a new run (its ID follows the haystack's content)"
                )
        return _from_cache_or_tokenize(blobs, listed, fingerprint, tokenizer)

    return loaded_haystacks.get_or_make(fingerprint, make)


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
        data = read_haystack_file(blobs, name)
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
