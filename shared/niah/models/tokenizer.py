"""Tokenizers: token counts in the model's own vocabulary, offline.

Gemini 2.x and Gemma 3 share the Gemma 3 SentencePiece vocabulary (it is what
google-genai's ``LocalTokenizer`` loads). That file cannot be downloaded here, so
``niah.models.gemma_assets`` rebuilds it from the vocabulary inside the Gemma 3 GGUF
that a registry package ships; the rebuild gives the same IDs as the reference
``tokenizer.json``.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np
import numpy.typing as npt

from niah.errors import ConfigurationError
from niah.memo import ProcessCache
from niah.models.catalog import GEMMA3_TOKENIZER
from niah.models.gemma_assets import gemma3_model_bytes


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


def get_tokenizer(name: str = GEMMA3_TOKENIZER) -> SentencePieceTokenizer:
    """The tokenizer called ``name``, loaded once per process."""
    if name != GEMMA3_TOKENIZER:
        raise ConfigurationError(f"unknown tokenizer {name!r}; known: {GEMMA3_TOKENIZER!r}")
    return _loaded.get_or_make(name, lambda: SentencePieceTokenizer(name, gemma3_model_bytes()))
