"""``mrcr``: multi-round co-reference resolution, in MRCR v2's form (generated samples).

A conversation of user requests and assistant replies in which one request (a format,
a topic, a style) is asked ``num_needles`` times (2, 4 or 8); the last user turn asks
for the i-th reply to it, prefixed with a random 12-character string. The expected
answer is that string followed by the reply. Written out as MRCR v2's transcripts are
(google-deepmind/eval_hub ``mrcr_v2/mrcr_utils.py`` at 67b7fd2, read 2026-11-26):
"User: {request}", blank line, "Assistant: {reply}", blank line; its final question in its words.

The samples made here are not Google's: the replies to the other requests are slices
of the run's haystack (essays, Shakespeare), and the replies to the repeated request
are composed from word pools. Their scores are not comparable to the model cards'.
The transcript's text is exactly the requested length on our tokenizer, like every
task's prompt; the API's own count of the turns is stored beside it.
"""

from __future__ import annotations

import difflib
import random
import string
from typing import Any

from pydantic import Field

from niah.core.interfaces import BlobStore
from niah.core.prompts.answer_budget import reply_room
from niah.core.prompts.haystack_files import check_source_size, content_fingerprint, source_prefix
from niah.core.prompts.mrcr_files import RunSource, csv_files, index_rows
from niah.core.prompts.prompt_builder import Insertion
from niah.core.prompts.vocabulary import ADJECTIVES, NOUNS
from niah.core.request.grid import Cell
from niah.core.request.request_options import MAX_NEEDLES, BucketPath
from niah.core.request.run_options import RunOptions
from niah.core.request.spec import RunRequest
from niah.core.request.task_options import TaskOptions
from niah.core.results.chance import mrcr_floor
from niah.errors import HaystackError, RequestError
from niah.settings import get_settings
from niah.tasks.base import Sample, Task, Verdict, sample_rng, spread_depths

# MRCR v2's request parts (mrcr_utils.py): formats, needle topics, styles.
FORMATS = ("email", "short story", "blog post", "tweet", "poem", "essay", "riddle")
TOPICS = (
    "space exploration",
    "gardening tips",
    "a fictional product launch",
    "ancient myths",
    "penguins",
    "flamingoes",
    "ducks",
    "black holes",
    "dreams",
    "city parks",
    "old trains",
    "mountain weather",
)
STYLES = ("formal", "informal", "humorous", "technical", "archaic")
ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth")
HASH_LENGTH = 12
# About this many haystack tokens per reply to another request.
FILLER_REPLY_TOKENS = 400

REQUEST = "Write {a_fmt} about {topic} in {style} style."
QUESTION = (
    "Prepend {prefix} to the {ordinal} {fmt} about {topic} in {a_style} style. "
    "Do not include any other text in your response."
)


def with_article(noun: str) -> str:
    """``noun`` after "a" or "an": "an email", "an informal", "a humorous".

    By the first letter: no word of the pools starts with a silent h or a "you" sound.
    """
    return f"{'an' if noun[0].lower() in 'aeiou' else 'a'} {noun}"


def request(fmt: str, topic: str, style: str) -> str:
    """A user's request of the conversation: "Write an email about ducks in formal style."."""
    return REQUEST.format(a_fmt=with_article(fmt), topic=topic, style=style)


TEMPLATE = "User: {first}\n\nAssistant: {{context}}\n\nUser: {{question}}\n\nAssistant:"


def mrcr_score(expected: str, answer: str) -> float:
    """MRCR v2's metric (eval_hub ``mrcr_v2/run_evaluation.py`` at 67b7fd2, verbatim logic).

    0 unless the answer holds the 12-character prefix; otherwise the similarity ratio
    (``difflib.SequenceMatcher``) between the expected reply and the answer's text after
    the prefix's last occurrence, both stripped.
    """
    if not answer:
        return 0.0
    target = expected.strip()
    if len(target) < HASH_LENGTH:
        return 0.0
    prefix, reference = target[:HASH_LENGTH], target[HASH_LENGTH:].strip()
    answer = answer.strip()
    start = answer.rfind(prefix)
    if start == -1:
        return 0.0
    return difflib.SequenceMatcher(a=reference, b=answer[start + HASH_LENGTH :].strip()).ratio()


# MRCR v2 is published for 2, 4 and 8 needles; 8 when num_needles is left out.
MRCR_NEEDLES = (2, 4, 8)
DEFAULT_NEEDLES = 8
# The longest composed reply (``composed_reply``), after its 12-character prefix: "A
# {format} on {topic}: " (formats and topics under 32 bytes each) and up to 12 pairs.
MRCR_REPLY = HASH_LENGTH + 64 + 12 * (max(map(len, ADJECTIVES)) + max(map(len, NOUNS)) + 3)


class MrcrOptions(TaskOptions):
    """How many needles, and Google's published files to read instead of generating."""

    num_needles: int | None = Field(
        default=None,
        ge=1,
        le=MAX_NEEDLES,
        description="mrcr: 2, 4 or 8 (default 8)",
    )
    # MRCR v2's published CSV files in the service's bucket (a gs:// URI or a prefix);
    # unset, the task generates its samples.
    mrcr_source: BucketPath | None = Field(
        default=None,
        max_length=500,
        description="mrcr: MRCR v2's published CSV files under the bucket's mrcr_v2/ (a prefix)",
    )

    # The context is a transcript, whose replies are haystack slices in order.
    takes_haystack_order = False

    def needle_count(self) -> int:
        """``num_needles``, or the default."""
        return self.num_needles or DEFAULT_NEEDLES

    def chance_floor(self) -> dict[str, Any] | None:
        """Google's published noise rate at the run's needles."""
        return mrcr_floor(self.needle_count(), published_files=self.mrcr_source is not None)

    def answer_bytes(self, request: RunOptions) -> int:
        """The longest composed reply (a published row brings its own: ``answer_tokens``)."""
        return MRCR_REPLY

    def check(self, request: RunOptions) -> None:
        """MRCR v2's needle counts; certify cannot draw its samples by length."""
        if self.needle_count() not in MRCR_NEEDLES:
            raise ValueError("num_needles for task mrcr must be 2, 4 or 8, as MRCR v2 has")
        if request.is_certify():
            raise ValueError(
                "mode: certify draws samples by length; MRCR v2's samples come in bins of "
                "their own lengths: run task mrcr as a grid (leave mode out)"
            )

    def published_source(self) -> str | None:
        """``mrcr_source``: Google's files, when given."""
        return self.mrcr_source


def composed_reply(rng: random.Random, fmt: str, topic: str) -> str:
    """A short reply to the repeated request, on one line, unlike every other one."""
    words = [f"{rng.choice(ADJECTIVES)} {rng.choice(NOUNS)}" for _ in range(rng.randint(8, 12))]
    return f"A {fmt} on {topic}: " + ", ".join(words) + "."


def published_sample(row: dict[str, str]) -> Sample:
    """A sample from a row of Google's MRCR v2 CSV files, taken as Google's eval takes it.

    eval_hub's ``run_evaluation.py`` sends ``queries`` whole, as one user message, and
    scores against ``answer``; so does this. ``context_len`` is Google's count of it.
    """
    answer = row["answer"].strip()
    needles = row.get("num_relevant")
    return Sample(
        insertions=(),
        question=row.get("view_ops", ""),
        expected=(answer,),
        details={
            "needles": int(float(needles)) if needles else None,
            "prefix": answer[:HASH_LENGTH],
            "published": True,
        },
        answer_tokens=reply_room(len(answer.encode())),
        prompt=row["queries"],
        prompt_tokens=int(float(row["context_len"])),
    )


class Mrcr(Task[MrcrOptions]):
    """Generated MRCR v2 samples: the needle turns spread from the cell's depth."""

    name = "mrcr"
    options = MrcrOptions

    def published_rows(self, spec: RunRequest, blobs: BlobStore) -> RunSource | None:
        """Google's MRCR v2 rows under ``mrcr_source`` (one streaming pass), or None.

        Rows of another needle count than ``num_needles`` (when given) are left out.
        """
        options = self.options_of(spec)
        if options.mrcr_source is None:
            return None
        try:
            root = get_settings().mrcr_sources_prefix
            prefix = source_prefix(
                options.mrcr_source, blobs.bucket, option="mrcr_source", root=root
            )
            prefix = prefix.rstrip("/")
            listed = csv_files(blobs, prefix)
            check_source_size(listed, option="mrcr_source")
            files = [info.name for info in listed]
            refs = index_rows(blobs, files)
        except (HaystackError, KeyError, ValueError) as error:
            raise RequestError("mrcr_source", str(error)) from error
        wanted = options.num_needles
        kept = [ref for ref in refs if wanted is None or ref.needles in (None, wanted)]
        if not kept:
            raise RequestError("mrcr_source", f"no row of {', '.join(files)} has {wanted} needles")
        fingerprint = content_fingerprint(listed, salt="mrcr_v2")
        return RunSource(
            files,
            [(files.index(r.file), r.row, r.context_len, r.offset, r.length) for r in kept],
            fingerprint,
            reply_room(max(r.answer_bytes for r in kept)),
        )

    def sample(self, spec: RunRequest, cell: Cell) -> Sample:
        """A seeded conversation: requests, composed needle replies, a prefix, the ask."""
        rng = sample_rng(spec.seed, cell, self.name)
        needles = self.options_of(spec).needle_count()
        fmt, topic, style = rng.choice(FORMATS), rng.choice(TOPICS), rng.choice(STYLES)
        needle_request = request(fmt, topic, style)
        others = [
            other
            for f in FORMATS
            for t in TOPICS
            for s in STYLES
            if (other := request(f, t, s)) != needle_request
            and not (f == fmt and t == topic)  # nothing that reads as the same request
        ]
        replies = [composed_reply(rng, fmt, topic) for _ in range(needles)]
        prefix = "".join(rng.choices(string.ascii_letters + string.digits, k=HASH_LENGTH))
        asked = rng.randrange(needles)
        # A turn boundary after each reply to another request (about 400 haystack tokens
        # each); the needle turns go at the boundaries nearest their depths, spread from
        # the cell's depth to the end. Insertions at one depth keep their order, so the
        # needle turns come first there and the i-th reply stays the i-th.
        turns = max(needles + 1, cell.context_length // FILLER_REPLY_TOKENS)
        step = 100 / turns
        needle_turns = [
            Insertion(
                f"\n\nUser: {needle_request}\n\nAssistant: {reply}",
                step * min(turns - 1, max(1, round(depth / step))),
            )
            for reply, depth in zip(
                replies, spread_depths(cell.depth_percent, needles), strict=True
            )
        ]
        other_turns = [
            Insertion(f"\n\nUser: {rng.choice(others)}\n\nAssistant: ", step * boundary)
            for boundary in range(1, turns)
        ]
        insertions = needle_turns + other_turns
        question = QUESTION.format(
            prefix=prefix,
            ordinal=ORDINALS[asked],
            fmt=fmt,
            topic=topic,
            a_style=with_article(style),
        )
        expected = prefix + replies[asked]
        return Sample(
            insertions=tuple(insertions),
            question=question,
            expected=(expected,),
            details={
                "needles": needles,
                "asked": asked + 1,
                "prefix": prefix,
                "request": needle_request,
            },
            template=TEMPLATE.format(first=rng.choice(others)),
            conversational=True,
            answer_tokens=reply_room(len(expected.encode())),
        )

    def score(self, sample: Sample, answer: str) -> Verdict:
        """MRCR v2's similarity score; correct when the reply is reproduced whole."""
        score = mrcr_score(sample.expected[0], answer)
        prefix = sample.details["prefix"]
        return Verdict(
            "correct" if score >= 0.99 else "wrong",
            score,
            {"prefix_found": prefix in answer, "prefix_first": answer.strip().startswith(prefix)},
        )
