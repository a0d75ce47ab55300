"""MRCR v2: the scorer as Google scores it, generated transcripts, turns and bins."""

from __future__ import annotations

from pathlib import Path

import pytest

from niah.core.haystack_tokens import HaystackTokens, load_haystack
from niah.core.prompt_builder import build_prompt
from niah.core.prompts import split_transcript
from niah.core.spec import Cell, RunRequest
from niah.core.summary import mrcr_bins
from niah.errors import RequestError
from niah.models.tokenizer import SentencePieceTokenizer
from niah.service.dispatch import parse_request
from niah.tasks import get_task
from niah.tasks.mrcr import mrcr_score
from tests.fakes import MemoryBlobs

PREFIX = "aB3dE5gH7jK9"
REPLY = "A poem on ducks: quiet lantern, amber river."


def test_the_score_is_zero_without_the_prefix() -> None:
    assert mrcr_score(PREFIX + REPLY, REPLY) == 0.0
    assert mrcr_score(PREFIX + REPLY, "") == 0.0


def test_the_exact_reply_scores_one() -> None:
    assert mrcr_score(PREFIX + REPLY, PREFIX + REPLY) == 1.0
    assert mrcr_score(PREFIX + REPLY, f"  {PREFIX} {REPLY}\n") == 1.0  # both stripped


def test_a_reply_with_extra_text_scores_the_similarity_ratio() -> None:
    import difflib

    answer = PREFIX + REPLY + " I hope you like it."
    expected = difflib.SequenceMatcher(a=REPLY, b=REPLY + " I hope you like it.").ratio()
    assert mrcr_score(PREFIX + REPLY, answer) == pytest.approx(expected)
    assert 0.5 < expected < 1.0


def test_the_text_after_the_last_occurrence_of_the_prefix_is_scored() -> None:
    answer = f"{PREFIX} wrong reply. Let me retry: {PREFIX}{REPLY}"
    assert mrcr_score(PREFIX + REPLY, answer) == 1.0
    wrong_last = f"{PREFIX}{REPLY} {PREFIX} wrong"
    assert mrcr_score(PREFIX + REPLY, wrong_last) < 0.5


@pytest.fixture(scope="module")
def essays(tokenizer: SentencePieceTokenizer, essays_dir: Path) -> HaystackTokens:
    blobs = MemoryBlobs()
    for path in sorted(essays_dir.glob("*.txt")):
        blobs.objects["h/" + path.name] = path.read_bytes()
    return load_haystack(blobs, "h/", tokenizer)


@pytest.mark.parametrize(
    ("length", "needles"),
    [(4_096, 2), (4_096, 4), (4_096, 8), (32_768, 2), (32_768, 8), (1_000_000, 8)],
)
def test_a_generated_transcript_is_exact_and_holds_its_needles_in_order(
    essays: HaystackTokens, tokenizer: SentencePieceTokenizer, length: int, needles: int
) -> None:
    spec = RunRequest(task="mrcr", num_needles=needles, context_lengths=[length])
    sample = get_task("mrcr").sample(spec, Cell(length, 0))
    built = build_prompt(
        essays,
        tokenizer,
        template=sample.template or "",
        insertions=sample.insertions,
        question=sample.question,
        context_length=length,
    )
    assert len(tokenizer.encode(built.prompt)) == length
    turns = split_transcript(built.prompt)
    assert [role for role, _ in turns] == ["user", "model"] * (len(turns) // 2) + ["user"]
    assert turns[-1][1] == sample.question
    request = sample.details["request"]
    replies = [turns[i + 1][1] for i, (_, text) in enumerate(turns[:-1]) if text == request]
    assert len(replies) == needles
    asked = sample.details["asked"]
    assert sample.expected == (sample.details["prefix"] + replies[asked - 1],)


def test_mrcr_takes_two_four_or_eight_needles() -> None:
    with pytest.raises(RequestError, match="2, 4 or 8"):
        parse_request({"task": "mrcr", "num_needles": 3, "context_lengths": [4096]})
    assert RunRequest(task="mrcr", context_lengths=[4096]).needle_count() == 8


def test_bins_cumulative_to_128k_and_the_point_at_1m() -> None:
    def cell(length: int, score: float) -> dict[str, object]:
        return {"context_length": length, "task_score": score}

    cells = [
        cell(4096, 1.0),
        cell(6000, 0.5),
        cell(8192, 1.0),
        cell(100_000, 0.0),
        cell(131_072, 0.5),
        cell(200_000, 1.0),  # above 128K: not in the cumulative figure
        cell(1_000_000, 0.25),
        {"context_length": 1_000_000, "task_score": None},  # unscored: left out
    ]
    result = mrcr_bins(cells)
    assert result["bins"] == {
        "<=4K": 100.0,
        "4K-8K": 75.0,
        "64K-128K": 25.0,
        "128K-256K": 100.0,
        "512K-1M": 25.0,
    }
    assert result["cumulative_128k"] == 60.0  # (1 + .5 + 1 + 0 + .5) / 5
    assert result["at_1m"] == 25.0
