"""MRCR v2: the scorer as Google scores it, generated transcripts, turns and bins."""

from __future__ import annotations

from typing import Any

import pytest

from niah.core.prompts.haystack_tokens import HaystackTokens
from niah.core.prompts.prompt_builder import build_prompt
from niah.core.prompts.texts import split_transcript
from niah.core.request.grid import Cell
from niah.core.request.spec import RunRequest
from niah.core.results.summary import mrcr_bins
from niah.core.runs import RunRecord
from niah.errors import RequestError
from niah.models.tokenizer import SentencePieceTokenizer
from niah.service.runs.request_body import parse_request
from niah.tasks import get_task
from niah.tasks.mrcr import mrcr_score
from tests import HEAVY
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


@pytest.mark.parametrize(
    ("length", "needles", "index"),
    [
        (4_096, 2, 0),
        (4_096, 4, 0),
        (4_096, 8, 0),
        (32_768, 2, 0),
        (32_768, 8, 0),
        # 334 turns whose boundaries move between sentences with every budget step: the
        # whole-layout search alone missed it; moving only the end lands it.
        (131_072, 8, 1),
        pytest.param(1_000_000, 8, 0, marks=HEAVY),
    ],
)
def test_a_generated_transcript_is_exact_and_holds_its_needles_in_order(
    essays: HaystackTokens,
    tokenizer: SentencePieceTokenizer,
    length: int,
    needles: int,
    index: int,
) -> None:
    spec = RunRequest(task="mrcr", num_needles=needles, context_lengths=[length])
    sample = get_task("mrcr").sample(spec, Cell(length, 0, index))
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
    assert get_task("mrcr").options_of(RunRequest(task="mrcr")).needle_count() == 8


def test_bins_cumulative_to_128k_and_the_point_at_1m() -> None:
    def cell(length: int, score: float) -> dict[str, Any]:
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


# --- Google's published files ----------------------------------------------------------

COLUMNS = [
    "queries",
    "answer",
    "context_len",
    "answer_token_count",
    "view_ops",
    "num_relevant",
    "answer_context_position",
    "index_positions_of_seeds",
    "relevant_context_positions",
]


def published_csv(rows: list[tuple[str, str, int, int]]) -> bytes:
    """A CSV in MRCR v2's published layout (eval_hub mrcr_v2, commit 67b7fd2)."""
    import csv
    import io

    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(COLUMNS)
    for queries, answer, context_len, needles in rows:
        question = queries.rsplit("User: ", 1)[-1]
        writer.writerow(
            [queries, answer, context_len, 20, question, needles, "(1, 2)", "[3]", "[(4, 5)]"]
        )
    return buffer.getvalue().encode()


def transcript(prefix: str, reply: str, filler: str) -> str:
    return (
        "Here are some examples of conversations succeeded by a follow-up question answered "
        "correctly:\n======== EXAMPLE 1 ========\n...\n\n"
        f"User: Write a poem about ducks in formal style.\n\nAssistant: {reply}\n\n"
        f"User: Write an essay about dreams in humorous style.\n\nAssistant: {filler}\n\n"
        f"User: Prepend {prefix} to the first poem about ducks in a formal style. Do not "
        "include any other text in your response.\n\nAssistant:"
    )


class CountingBlobs(MemoryBlobs):
    """Records how many bytes each open stream handed out."""

    def __init__(self) -> None:
        super().__init__()
        self.bytes_read: list[int] = []

    def open(self, name: str):
        import io

        blobs = self

        class Counting(io.BytesIO):
            def read(self, size: int | None = -1) -> bytes:
                data = super().read(size)
                blobs.bytes_read[-1] += len(data)
                return data

            def read1(self, size: int | None = -1) -> bytes:
                # What a TextIOWrapper reads with (uncounted before, so the test above
                # held whatever the reader did).
                data = super().read1(size)
                blobs.bytes_read[-1] += len(data)
                return data

            def readinto(self, buffer) -> int:
                count = super().readinto(buffer)
                blobs.bytes_read[-1] += count
                return count

        self.bytes_read.append(0)
        return Counting(self.objects[name])


def test_the_reader_parses_the_published_layout() -> None:
    from niah.core.prompts.mrcr_files import csv_files, index_rows, read_row
    from niah.tasks.mrcr import published_sample

    blobs = MemoryBlobs()
    blobs.objects["mrcr/mrcr_v2p1_2needle_in_(4096,8192)_x.csv"] = published_csv(
        [
            (transcript(PREFIX, REPLY, "Some essay."), PREFIX + REPLY, 5000, 2),
            (transcript("Zz9Yy8Xx7Ww6", "Another poem.", "More."), "Zz9Yy8Xx7WwAnother", 7000, 4),
        ]
    )
    blobs.objects["mrcr/readme.txt"] = b"not a csv"
    files = [info.name for info in csv_files(blobs, "mrcr")]
    assert files == ["mrcr/mrcr_v2p1_2needle_in_(4096,8192)_x.csv"]
    refs = index_rows(blobs, files)
    assert [(r.row, r.context_len, r.needles) for r in refs] == [(0, 5000, 2), (1, 7000, 4)]
    sample = published_sample(read_row(blobs, files[0], 0))
    assert sample.expected == (PREFIX + REPLY,)
    assert sample.prompt is not None and sample.prompt.endswith("Assistant:")
    assert sample.prompt_tokens == 5000
    assert get_task("mrcr").score(sample, PREFIX + REPLY).score == 1.0


def test_a_multi_megabyte_file_is_streamed_not_loaded_whole() -> None:
    from niah.core.prompts.mrcr_files import read_row

    blobs = CountingBlobs()
    filler = "All work and no play. " * 60_000  # ~1.3 MB a row
    rows = [
        (transcript(PREFIX, f"Poem {i}.", filler), f"{PREFIX}Poem {i}.", 300_000, 8)
        for i in range(8)
    ]
    blobs.objects["f.csv"] = published_csv(rows)
    size = len(blobs.objects["f.csv"])
    assert size > 10_000_000
    row = read_row(blobs, "f.csv", 1)
    assert row["answer"] == f"{PREFIX}Poem 1."
    # Reading the second row took about two rows, not the file.
    assert blobs.bytes_read[-1] < size / 3


def test_a_row_is_read_at_its_byte_span_not_past_the_rows_before_it() -> None:
    """Before: each cell streamed its file from the start (a run read rows squared bytes).

    The dispatcher's pass keeps each row's span; the worker reads the header's first few
    KB and the row. Every row so read equals the row streamed, quotes, doubled quotes,
    newlines and CRLF line ends in its fields included.
    """
    from niah.core.prompts.mrcr_files import HEADER_CHUNK_BYTES, index_rows, read_row

    blobs = CountingBlobs()
    filler = 'All "work" and no\r\nplay, "" said he.\n' * 30_000  # ~1.1 MB a row
    rows = [
        (transcript(PREFIX, f"Poem {i}.", filler), f"{PREFIX}Poem {i}.", 300_000 + i, 8)
        for i in range(8)
    ]
    blobs.objects["f.csv"] = published_csv(rows).replace(b"\n", b"\r\n")
    size = len(blobs.objects["f.csv"])
    refs = index_rows(blobs, ["f.csv"])
    assert [r.context_len for r in refs] == [300_000 + i for i in range(8)]
    assert refs[0].offset > 0 and refs[-1].offset + refs[-1].length == size
    for ref in refs:
        streamed = read_row(blobs, "f.csv", ref.row)
        at_span = read_row(blobs, "f.csv", ref.row, (ref.offset, ref.length))
        assert at_span == streamed and at_span["answer"] == f"{PREFIX}Poem {ref.row}."
        # The header's first chunk and the row: nothing of the rows before it.
        assert blobs.bytes_read[-1] <= HEADER_CHUNK_BYTES + ref.length
    assert blobs.bytes_read[-2] > size * 0.9  # streaming to the last row read the file


def test_a_span_that_no_longer_holds_its_row_is_refused() -> None:
    from niah.core.prompts.mrcr_files import index_rows, read_row
    from niah.errors import HaystackError

    blobs = MemoryBlobs()
    blobs.objects["f.csv"] = published_csv(
        [(transcript(PREFIX, "A poem.", "Filler."), PREFIX + "A poem.", 5000, 2)]
    )
    (ref,) = index_rows(blobs, ["f.csv"])
    blobs.objects["f.csv"] = blobs.objects["f.csv"][: ref.offset + 10]  # replaced, shorter
    with pytest.raises(HaystackError, match="was the file replaced"):
        read_row(blobs, "f.csv", 0, (ref.offset, ref.length))


def test_a_file_without_the_columns_is_refused_by_name() -> None:
    from niah.core.prompts.mrcr_files import index_rows
    from niah.errors import HaystackError

    blobs = MemoryBlobs()
    blobs.objects["bad.csv"] = b"prompt,answer\nx,y\n"
    with pytest.raises(HaystackError, match=r"bad\.csv is not an MRCR v2 CSV: no column queries"):
        index_rows(blobs, ["bad.csv"])


def test_a_run_over_published_files_has_one_cell_per_row(
    essay_blobs: MemoryBlobs, monkeypatch: pytest.MonkeyPatch
) -> None:
    from niah.service.cells.worker import process_cell
    from niah.service.messages import CellTask
    from niah.service.runs.dispatch import dispatch_run
    from niah.settings import get_settings
    from tests.fake_store import MemoryStore
    from tests.fakes import RecordingPublisher, ScriptedProvider

    # Cache-aware dispatch holds nothing back: published samples share no haystack.
    monkeypatch.setenv("NIAH_DISPATCH_ORDER", "cache_aware")
    get_settings.cache_clear()

    essay_blobs.objects["mrcr_v2/a.csv"] = published_csv(
        [
            (transcript(PREFIX, REPLY, "Essay."), PREFIX + REPLY, 5000, 2),
            (transcript("Qq1Ww2Ee3Rr4", "Ode.", "Essay."), "Qq1Ww2Ee3Rr4Ode.", 9000, 2),
            (transcript("Tt5Yy6Uu7Ii8", "Four.", "Essay."), "Tt5Yy6Uu7Ii8Four.", 9000, 4),
        ]
    )
    store, publisher = MemoryStore(), RecordingPublisher()
    body = {"task": "mrcr", "num_needles": 2, "mrcr_source": "gs://test-bucket/mrcr_v2/"}
    result = dispatch_run(body, store=store, publisher=publisher, blobs=essay_blobs)
    assert result.cells == 2  # the 4-needle row is left out
    assert [(m["context_length"], m["row"]) for m in publisher.cells] == [(5000, 0), (9000, 1)]
    assert not any(m.get("primer") for m in publisher.cells)
    prompts: list[str] = []

    def copy_the_reply(prompt: str) -> str:
        prompts.append(prompt)
        return PREFIX + REPLY if PREFIX in prompt else "no idea"

    provider = ScriptedProvider(copy_the_reply)
    for message in publisher.cells:
        process_cell(
            CellTask.from_message(message),
            store=store,
            blobs=essay_blobs,
            publisher=publisher,
            provider_for=lambda kind, name: provider,
        )
    cells = store.list_cells(result.run_id)
    assert [c["task_score"] for c in cells] == [1.0, 0.0]
    assert cells[0]["planned_prompt_tokens"] == 5000  # Google's count, from the file
    assert prompts[0] == transcript(PREFIX, REPLY, "Essay.")  # sent whole, as eval_hub does


def test_the_summary_and_picture_say_generated_samples_are_not_comparable() -> None:
    from niah.core.results.summary import GENERATED_MRCR_NOTE, summarize
    from niah.service.reports.png import heatmap_notes

    cells = [
        {
            "cell_id": "a",
            "context_length": 8192,
            "depth_percent": 0.0,
            "task_score": 0.5,
            "score": 0.5,
            "outcome": "wrong",
            "status": "answered",
        }
    ]
    run = {"run_id": "r", "model": "m", "scorer": "task", "spec": {"task": "mrcr"}}
    summary = summarize(RunRecord.from_document(run), cells)
    assert summary["mrcr"]["samples"] == GENERATED_MRCR_NOTE
    assert summary["mrcr"]["bins"] == {"4K-8K": 50.0}
    assert "not comparable to model cards" in heatmap_notes(summary, RunRecord.from_document(run))
    published_run = {"spec": {"task": "mrcr", "mrcr_source": "m/"}, "source_files": ["m/a.csv"]}
    published = summarize(RunRecord.from_document(run | published_run), cells)
    assert published["mrcr"]["samples"] == "Google's published MRCR v2 files"
    assert "not comparable" not in heatmap_notes(published, RunRecord.from_document(run))


def test_the_generated_requests_and_questions_use_the_right_article() -> None:
    """Before: "Write a email", "in a informal style" (issue 24)."""
    import re

    from niah.tasks.mrcr import FORMATS, STYLES, TOPICS

    spec = RunRequest(task="mrcr", num_needles=2, context_lengths=[2000])
    texts = []
    for seed in range(60):
        sample = get_task("mrcr").sample(spec.model_copy(update={"seed": seed}), Cell(2000, 0.0, 0))
        texts.append(sample.question)
        texts += [insertion.text for insertion in sample.insertions]
    words = " ".join(texts)
    assert re.findall(r"\ba [aeiouAEIOU]\w*", words) == []
    assert re.findall(r"\ban [^aeiouAEIOU\s]\w*", words) == []
    assert "Write an email about" in words and "Write a poem about" in words
    assert " in an informal style." in words and " in a formal style." in words
    assert {"email", "essay", "tweet"} <= set(FORMATS) and "informal" in STYLES and TOPICS


def dispatched_mrcr(blobs: MemoryBlobs) -> dict[str, Any]:
    """A run over one published file's two 2-needle rows (its 4-needle row left out)."""
    from niah.service.runs.dispatch import dispatch_run
    from tests.fake_store import MemoryStore
    from tests.fakes import RecordingPublisher

    rows = [
        (transcript(PREFIX, REPLY, "Essay."), PREFIX + REPLY, 5000, 2),
        (transcript("Qq1Ww2Ee3Rr4", "Ode.", "Essay."), "Qq1Ww2Ee3Rr4Ode.", 9000, 2),
        (transcript("Tt5Yy6Uu7Ii8", "Four.", "Essay."), "Tt5Yy6Uu7Ii8Four.", 5000, 4),
    ]
    blobs.objects["mrcr_v2/a.csv"] = published_csv(rows)
    blobs.objects["mrcr_v2/other/b.csv"] = published_csv(rows)  # not the run's
    store, publisher = MemoryStore(), RecordingPublisher()
    body = {"task": "mrcr", "num_needles": 2, "mrcr_source": "gs://test-bucket/mrcr_v2/a.csv"}
    result = dispatch_run(body, store=store, publisher=publisher, blobs=blobs)
    return {"store": store, "publisher": publisher, "run_id": result.run_id}


def forge(message: dict[str, Any], how: str) -> dict[str, Any]:
    if how == "a row the run left out":  # the 4-needle row, as long as row 0
        return message | {"row": 2}
    if how == "another file":
        return message | {"source_file": "mrcr_v2/other/b.csv"}
    if how == "a span not recorded":
        return message | {"offset": message["offset"] + 1}
    if how == "no span":
        return {k: v for k, v in message.items() if k not in ("offset", "length")}
    if how == "a cell past the run's total":  # a third sample of a two-row run
        return message | {"sample": 2, "cell_id": Cell(message["context_length"], 0.0, 2).cell_id}
    if how == "another row's length":
        cell = Cell(9000, 0.0, 0)
        return message | {"context_length": 9000, "cell_id": cell.cell_id}
    raise AssertionError(how)


@pytest.mark.parametrize(
    "how",
    [
        "a row the run left out",
        "another file",
        "a span not recorded",
        "no span",
        "a cell past the run's total",
        "another row's length",
    ],
)
def test_a_forged_message_of_published_rows_is_refused_unpaid(
    essay_blobs: MemoryBlobs, how: str
) -> None:
    """Before: any file and row of the bucket was read and paid for, past the run's total."""
    from niah.service.cells.worker import process_cell, record_dead_letter
    from niah.service.messages import CellTask
    from tests.fakes import ScriptedProvider

    world = dispatched_mrcr(essay_blobs)
    first = world["publisher"].cells[0]
    assert (first["source_file"], first["row"]) == ("mrcr_v2/a.csv", 0) and first["length"]
    provider = ScriptedProvider(lambda prompt: PREFIX + REPLY)
    forged = CellTask.from_message(forge(first, how))
    outcome = process_cell(
        forged,
        store=world["store"],
        blobs=essay_blobs,
        publisher=world["publisher"],
        provider_for=lambda kind, name: provider,
    )
    assert outcome == "rejected"
    assert provider.prompts == []
    # Nor is it published again or counted failed from the dead-letter topic.
    published = len(world["publisher"].cells)
    dead = record_dead_letter(
        forged, store=world["store"], publisher=world["publisher"], blobs=essay_blobs
    )
    assert dead == "rejected" and len(world["publisher"].cells) == published
    assert world["store"].list_cells(world["run_id"]) == []
    run = world["store"].get_run(world["run_id"])
    assert (run["done"], run["failed"], run["total"]) == (0, 0, 2)
    # The run's own message is answered.
    genuine = CellTask.from_message(first)
    assert (
        process_cell(
            genuine,
            store=world["store"],
            blobs=essay_blobs,
            publisher=world["publisher"],
            provider_for=lambda kind, name: provider,
        )
        == "answered"
    )
