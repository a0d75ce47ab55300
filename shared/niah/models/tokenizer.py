"""Tokenizers: token counts in the model's own vocabulary, offline.

Gemini 2.x and Gemma 3 share the Gemma 3 SentencePiece vocabulary (it is what
google-genai's ``LocalTokenizer`` loads). That file cannot be downloaded here, so
``niah.models.gemma_assets`` rebuilds it once from the vocabulary inside the Gemma 3
GGUF that a registry package ships (the same IDs as the reference ``tokenizer.json``).
Deployed, the rebuilt model (5.2 MB) is an object in the bucket named by its checksum
(``catalog.tokenizer_object``): the worker reads it from there, checks the checksum and
keeps it in memory and in its cache directory, and never touches model weights. Only a
developer's machine, which has the GGUF package, rebuilds it.
"""

from __future__ import annotations

import hashlib
import threading
from functools import cached_property

import numpy as np
import numpy.typing as npt

from niah.catalog.models import GEMMA3_TOKENIZER, TOKENIZER_SHA256, tokenizer_object
from niah.core.interfaces import BlobStore, gs_uri
from niah.errors import ConfigurationError
from niah.memo import ProcessCache
from niah.settings import get_settings


class SentencePieceTokenizer:
    """A SentencePiece model held in memory."""

    def __init__(self, name: str, serialized_model: bytes) -> None:
        import sentencepiece as spm

        self.name = name
        self._processor = spm.SentencePieceProcessor()
        self._processor.LoadFromSerializedProto(serialized_model)

    def encode(self, text: str) -> list[int]:
        """Token IDs of ``text``, without BOS/EOS."""
        return list(self._processor.EncodeAsIds(text))

    def decode(self, ids: list[int]) -> str:
        """Text of ``ids``."""
        return str(self._processor.DecodeIds(ids))

    @cached_property
    def piece_byte_lengths(self) -> npt.NDArray[np.int64]:
        """UTF-8 byte length of every vocabulary entry (see ``core.interfaces.Tokenizer``)."""
        processor = self._processor
        lengths = np.zeros(processor.GetPieceSize(), dtype=np.int64)
        for token_id in range(len(lengths)):
            if processor.IsByte(token_id):
                lengths[token_id] = 1
            elif processor.IsControl(token_id) or processor.IsUnknown(token_id):
                lengths[token_id] = 0
            else:
                piece = processor.IdToPiece(token_id).replace("\u2581", " ")
                lengths[token_id] = len(piece.encode("utf-8"))
        return lengths


_loaded: ProcessCache[str, SentencePieceTokenizer] = ProcessCache()


def get_tokenizer(
    name: str = GEMMA3_TOKENIZER, *, blobs: BlobStore | None = None
) -> SentencePieceTokenizer:
    """The tokenizer called ``name``, loaded once per process.

    ``blobs``: the deployment's bucket, where the worker finds the tokenizer model.
    Without it (the CLI, tests, benchmarks on a developer's machine) the model is
    rebuilt from the GGUF package, which only the developer set-up installs.
    """
    tokenizer_object(name)  # refuses an unknown name
    return _loaded.get_or_make(
        name, lambda: SentencePieceTokenizer(name, tokenizer_model_bytes(name, blobs=blobs))
    )


def tokenizer_model_bytes(name: str, *, blobs: BlobStore | None = None) -> bytes:
    """The serialized model of tokenizer ``name``, checked against its pinned checksum.

    From this instance's cache directory if an earlier load left it there; else from
    the bucket (``blobs``); else, on a developer's machine, rebuilt from the GGUF.
    """
    object_name = tokenizer_object(name)
    cached = get_settings().cache_dir / object_name
    if cached.exists():
        data = cached.read_bytes()
        if _checksum_matches(name, data):
            return data
    if blobs is not None:
        try:
            data = blobs.read(object_name)
        except KeyError:
            raise ConfigurationError(
                f"the tokenizer model {gs_uri(blobs.bucket, object_name)} is missing; "
                "scripts/deploy.sh (Terraform) uploads it"
            ) from None
        where = gs_uri(blobs.bucket, object_name)
    else:
        data = _rebuilt_on_developer_machine()
        where = "the GGUF's vocabulary"
    if not _checksum_matches(name, data):
        raise ConfigurationError(
            f"the tokenizer model from {where} does not have the pinned SHA-256 "
            f"{TOKENIZER_SHA256[name]} (niah.catalog.models)"
        )
    cached.parent.mkdir(parents=True, exist_ok=True)
    tmp = cached.with_suffix(f".tmp{threading.get_ident()}")
    tmp.write_bytes(data)
    tmp.replace(cached)  # atomic: concurrent loaders never leave a torn file
    return data


def _checksum_matches(name: str, data: bytes) -> bool:
    return hashlib.sha256(data).hexdigest() == TOKENIZER_SHA256[name]


def _rebuilt_on_developer_machine() -> bytes:
    """Gemma 3's model rebuilt from the GGUF package (never installed in a function)."""
    from niah.models.gemma_assets import build_sentencepiece_from_gguf, gguf_path

    try:
        return build_sentencepiece_from_gguf(gguf_path())
    except ImportError as missing:
        raise ConfigurationError(
            "no tokenizer model: pass the deployment's bucket, or install the developer "
            f"set-up (scripts/setup.sh) to rebuild it from the Gemma 3 GGUF ({missing})"
        ) from None
