"""The run request: the NIAH harness's options, validated, and the grid they expand to.

The JSON keys are the harness's option names so users can carry their commands over.
Validation errors are the user's error messages, so every constraint names its field.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from niah.catalog.models import LOCAL_MODEL, ProviderName, provider_for_model

HARNESS_DEFAULT_NEEDLE = (
    "\nThe best thing to do in San Francisco is eat a sandwich and sit in Dolores Park "
    "on a sunny day.\n"
)
HARNESS_DEFAULT_QUESTION = "What is the best thing to do in San Francisco?"
# What a right answer to the harness's default needle names: the one fact of the needle
# that the question does not give away and an essay haystack does not hold. The harness
# leaves this needle to its judge; its README still offers `--dynamic_needle=False` on its
# own, so the default needle is scored exact by this, unless a judge is named.
HARNESS_DEFAULT_ANSWER = "Dolores Park"

ScorerName = Literal["exact", "judge", "both"]
ReportedScorer = Literal["exact", "judge", "both", "task"]
IntervalType = Literal["linear", "sigmoid"]
TaskName = Literal[
    "single",
    "multi_needle",
    "multi_key",
    "multi_value",
    "multi_query",
    "absent",
    "nonliteral",
    "mrcr",
    "variable_tracking",
    "common_words",
    "frequent_words",
]
NeedleType = Literal["words", "numbers", "uuids"]

# The run options each task reads beyond the grid; any other task option given is a
# mistake the user hears about (``--num_needles`` means nothing to ``multi_key``).
TASK_OPTIONS: dict[str, tuple[str, ...]] = {
    "single": (),
    "multi_needle": ("num_needles", "needles", "expected_answers"),
    "multi_key": ("num_distractors", "needle_key_type", "needle_value_type"),
    "multi_value": ("num_values", "needle_key_type", "needle_value_type"),
    "multi_query": ("num_queries", "needle_key_type", "needle_value_type"),
    "absent": ("needle_key_type", "needle_value_type"),
    "nonliteral": (),
    "mrcr": ("num_needles", "mrcr_source"),
    # RULER's options, under RULER's names (NVIDIA/RULER scripts/synthetic.yaml and the
    # generators' flags in scripts/data/synthetic/, read 2026-11-26 at c3f5e3b).
    "variable_tracking": ("num_chains", "num_hops"),
    "common_words": ("num_cw", "freq_cw", "freq_ucw"),
    "frequent_words": ("alpha", "vocab_size"),
}
# Below this many tokens RULER's common words extraction lists its words fewer times.
RULER_SHORT_LENGTH = 4096
# Needles per sample when num_needles is left out; MRCR v2 is published for 2, 4 and 8.
DEFAULT_NEEDLES = {"multi_needle": 3, "mrcr": 8}
MRCR_NEEDLES = (2, 4, 8)
ALL_TASK_OPTIONS = frozenset(name for names in TASK_OPTIONS.values() for name in names)
# Run options added after runs were first named by their options' hash.
ADDED_OPTIONS = ("thinking_level", "needles", "expected_answers", "execution")
# At most this many needles (a user's own, or generated).
MAX_NEEDLES = 100

# Google's times for a Gemini batch job (cloud.google.com/vertex-ai/generative-ai/docs/
# multimodal/batch-prediction-gemini, "Quotas and limits", read 2026-11-27): it waits
# in the queue for capacity for up to 72 hours before it expires, and most jobs
# complete within 24 hours of starting to run (queue time excluded); a job unfinished
# after 24 hours is cancelled and only its completed requests are billed.
BATCH_QUEUE_HOURS = 72
BATCH_RUN_HOURS = 24
BATCH_TURNAROUND = (
    f"most jobs complete within {BATCH_RUN_HOURS} h of starting to run, "
    f"after up to {BATCH_QUEUE_HOURS} h queued"
)
# Options of the single task's harness-style needle, meaningless to the others.
SINGLE_NEEDLE_OPTIONS = ("dynamic_needle", "needle", "retrieval_question", "expected_answer")

# What each run option means: the CLI's help (one source; a test checks none is missing).
OPTION_HELP: dict[str, str] = {
    "model_name": "the model under test: a gemini-* ID, gemma-3-270m-local, or another name",
    "model_provider": "local, gemini or openai_compatible (inferred from the model name)",
    "evaluator_model_name": "the LLM judge, for scorer judge or both (a Gemini model)",
    "context_lengths": "explicit lengths in tokens: 1000 2000 or '[1000, 2000]'",
    "context_lengths_min": "shortest length of the harness's linspace of lengths",
    "context_lengths_max": "longest length of the linspace",
    "context_lengths_num_intervals": "how many lengths in the linspace (the harness used 35)",
    "document_depth_percents": "explicit needle depths in percent: 0 50 100",
    "document_depth_percent_min": "shallowest depth of the linspace of depths",
    "document_depth_percent_max": "deepest depth of the linspace",
    "document_depth_percent_intervals": "how many depths (the harness used 35)",
    "document_depth_percent_interval_type": "linear, or sigmoid (dense near the ends)",
    "task": (
        "single, multi_needle, multi_key, multi_value, multi_query, absent, nonliteral, mrcr, "
        "variable_tracking, common_words or frequent_words"
    ),
    "num_needles": "multi_needle: needles (1-100, default 3); mrcr: 2, 4 or 8 (default 8)",
    "needles": (
        "multi_needle: your own needle sentences, as the harness's --needles "
        '\'["first.", "second."]\' (with retrieval_question)'
    ),
    "expected_answers": (
        "multi_needle with needles: what a right answer names for each needle, in order "
        "(scored exact); or a judge (scorer judge)"
    ),
    "num_distractors": "multi_key: needles of the same form with other keys",
    "num_values": "multi_value: values of the one key",
    "num_queries": "multi_query: keys asked in one question",
    "needle_key_type": "RULER-style tasks: words, numbers or uuids as keys",
    "needle_value_type": "RULER-style tasks: words, numbers (7 digits) or uuids as values",
    "num_chains": "variable_tracking: chains of assignments (RULER: 1)",
    "num_hops": "variable_tracking: assignments after each chain's value (RULER: 4)",
    "num_cw": "common_words: the common words asked for (RULER: 10)",
    "freq_cw": "common_words: times each common word is listed (RULER: 30, or 6 below 4096 tokens)",
    "freq_ucw": "common_words: times each other word is listed (RULER: 3, or 1 below 4096 tokens)",
    "alpha": "frequent_words: the Zipf (zeta) exponent of word frequencies (RULER: 2.0)",
    "vocab_size": "frequent_words: coded words drawn from (RULER: (length - 50) // 50)",
    "mrcr_source": "mrcr: MRCR v2's published CSV files under the bucket's mrcr_v2/ (a prefix)",
    "samples_per_cell": "independent samples per grid point, each stored on its own",
    "dynamic_needle": "a seeded city/number needle per cell; --no-dynamic_needle for your own",
    "needle": "a static needle (with --no-dynamic_needle)",
    "retrieval_question": "the static needle's question (or your own needles')",
    "expected_answer": "what a right answer to the static needle contains (scored exact)",
    "seed": "seeds every generated needle, key and sample",
    "haystack_dir": (
        "a haystack in the bucket (paul_graham_essays, shakespeare, noise), a prefix or gs:// URI"
    ),
    "results_version": "a new version is a new run of the same grid",
    "final_context_length_buffer": "tokens left free below each length (the harness used 200)",
    "num_concurrent_requests": "recorded; parallelism is the worker's max instances x concurrency",
    "save_contexts": "store each cell's prompt in the bucket",
    "scorer": "exact, judge or both (single task)",
    "count_tokens_check": "also store the countTokens API's count of each prompt",
    "max_output_tokens": "output budget (default: the answer's room + the model's thinking room)",
    "thinking_budget": "Gemini 2.5 thinking tokens: 0 off (Flash), -1 dynamic, N a cap",
    "thinking_level": "Gemini 3/4 thinking: minimal, low, medium, high, xhigh (as the model takes)",
    "prompt_template": "a template with {context} and {question} once each (and {answer_lead})",
    "label": 'a name for the run in comparisons and status (default "model · task"); not in its ID',
    "execution": "online (each cell called as it comes) or batch (Vertex batch, half price)",
    "allow_retired": (
        "call a model Vertex AI has retired anyway (a project that still has access, e.g. "
        "a private endpoint); recorded on the run"
    ),
}

# The prompt template's placeholders, each filled once by one pass (prompts.render).
PLACEHOLDERS = ("{context}", "{question}", "{answer_lead}")

# Hard limits that no configuration lifts: beyond them a request is a mistake.
MAX_CONTEXT_LENGTH = 10_000_000
MAX_INTERVALS = 1_000
DEPTH_DECIMALS = 3


def plain_text(value: str) -> str:
    """Refuse characters a reader cannot see in free text.

    Controls (newline and tab aside), format characters (bidi overrides, zero-width
    joiners), surrogates and private use: they would reach the prompt, the stored cell
    and every page unseen, and a bidi override shows a reviewer other text than the
    model reads.
    """
    if any(
        unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co") and ch not in "\n\t" for ch in value
    ):
        raise ValueError("must not contain control, format or private-use characters")
    return value


# A model ID: ASCII only. Unicode's \w (pydantic's patterns are Rust regexes) takes the
# zero-width joiners, so a name could hide one.
MODEL_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.@:/-]*$"

# Every free-text option is of this type (a test checks every text field refuses a bidi
# override), so a new one cannot skip the check.
FreeText = Annotated[str, AfterValidator(plain_text)]


class RunRequest(BaseModel):
    """A needle-in-a-haystack run, in the harness's vocabulary.

    Either ``context_lengths`` or the min/max/num_intervals triple sets the lengths;
    either ``document_depth_percents`` or the min/max/intervals triple sets the depths.
    """

    # Strict: JSON true is not a length of 1, "1000" is not a number. Names are
    # stripped where they are validated; needles and templates keep their whitespace.
    model_config = ConfigDict(extra="forbid", strict=True)

    model_name: str = Field(
        default=LOCAL_MODEL, min_length=1, max_length=200, pattern=MODEL_ID_PATTERN
    )
    model_provider: ProviderName | None = None
    evaluator_model_name: str | None = Field(default=None, max_length=200, pattern=MODEL_ID_PATTERN)

    context_lengths: list[int] | None = None
    # 15 x 15 by default (inspect's niah default), so the default grid fits the 500-cell
    # cap; the harness's 35 x 35 is 1,225 cells.
    context_lengths_min: int = Field(default=1000, ge=1, le=MAX_CONTEXT_LENGTH)
    context_lengths_max: int = Field(default=16000, ge=1, le=MAX_CONTEXT_LENGTH)
    context_lengths_num_intervals: int = Field(default=15, ge=1, le=MAX_INTERVALS)

    document_depth_percents: list[float] | None = None
    document_depth_percent_min: float = Field(default=0, ge=0, le=100)
    document_depth_percent_max: float = Field(default=100, ge=0, le=100)
    document_depth_percent_intervals: int = Field(default=15, ge=1, le=MAX_INTERVALS)
    document_depth_percent_interval_type: IntervalType = "linear"

    # The test kind (see niah.tasks); "single" is the harness's one needle.
    task: TaskName = "single"
    num_needles: int | None = Field(default=None, ge=1, le=MAX_NEEDLES)
    # The harness's multi-needle list: the user's own sentences, asked for by
    # retrieval_question, scored by expected_answers (one per needle) or the judge.
    needles: list[FreeText] | None = Field(default=None, max_length=MAX_NEEDLES)
    expected_answers: list[FreeText] | None = Field(default=None, max_length=MAX_NEEDLES)
    num_distractors: int = Field(default=3, ge=0, le=100)
    num_values: int = Field(default=4, ge=1, le=100)
    num_queries: int = Field(default=4, ge=1, le=100)
    needle_key_type: NeedleType = "words"
    needle_value_type: NeedleType = "numbers"
    # MRCR v2's published CSV files in the service's bucket (a gs:// URI or a prefix);
    # unset, the mrcr task generates its samples.
    mrcr_source: str | None = Field(default=None, max_length=500)
    # RULER's variable tracking, common and frequent words (niah.tasks): None where
    # RULER's default depends on the length (freq_cw, freq_ucw, vocab_size).
    num_chains: int = Field(default=1, ge=1, le=20)
    num_hops: int = Field(default=4, ge=1, le=50)
    num_cw: int = Field(default=10, ge=1, le=100)
    freq_cw: int | None = Field(default=None, ge=2, le=1000)
    freq_ucw: int | None = Field(default=None, ge=1, le=1000)
    alpha: float = Field(default=2.0, gt=1.0, le=10.0)
    vocab_size: int | None = Field(default=None, ge=5, le=1_000_000)
    # Independent samples per grid point (other needles and keys), each stored apart.
    samples_per_cell: int = Field(default=1, ge=1, le=100)

    dynamic_needle: bool = True
    needle: FreeText = Field(default=HARNESS_DEFAULT_NEEDLE, min_length=1, max_length=2000)
    retrieval_question: FreeText = Field(
        default=HARNESS_DEFAULT_QUESTION, min_length=1, max_length=2000
    )
    expected_answer: FreeText | None = Field(default=None, max_length=2000)
    seed: int = Field(default=0, ge=0, le=2**63 - 1)

    haystack_dir: str | None = Field(default=None, max_length=500)
    results_version: int = Field(default=1, ge=1, le=1_000_000_000)
    final_context_length_buffer: int = Field(default=0, ge=0, le=100_000)
    num_concurrent_requests: int = Field(default=1, ge=1, le=1000)
    save_contexts: bool = False

    scorer: ScorerName | None = None
    count_tokens_check: bool = False
    max_output_tokens: int | None = Field(default=None, ge=1, le=65_536)
    # Gemini 2.5 thinks before answering, and thinking counts against max_output_tokens:
    # 0 turns it off (Flash), -1 lets the model choose, N caps it. None: model default.
    thinking_budget: int | None = Field(default=None, ge=-1, le=32_768)
    # Gemini 3 and 4 set thinking by level instead (it cannot be turned off); which levels
    # a model takes is in the catalog. None: the model's default level.
    thinking_level: Literal["minimal", "low", "medium", "high", "xhigh"] | None = None
    prompt_template: FreeText | None = Field(default=None, max_length=20_000)
    # A name for people (compare, status): it measures nothing, so it is not part of the
    # run's ID (NOT_RESULT_FIELDS), and the same run asked again with another label is
    # relabelled. None: "model · task" (``niah.core.summary.run_label``).
    label: FreeText | None = Field(default=None, min_length=1, max_length=120)
    # How the model is called: online, each cell as its message comes (the default), or
    # batch, the whole grid as Vertex AI batch jobs at half the online price. Part of
    # the run's identity (a batch run is a run of its own); "online" is the default
    # spelt out, so it names the same run as leaving it out.
    execution: Literal["online", "batch"] | None = None
    # Vertex AI answers a retired model with 404, so one is refused; a project that
    # still has access (a private endpoint, an extension) says so here. It measures
    # nothing, so it is not in the run's ID; the run's notes record it.
    allow_retired: bool = False

    @field_validator("execution")
    @classmethod
    def _online_is_the_default(cls, value: str | None) -> str | None:
        return None if value == "online" else value

    def is_batch(self) -> bool:
        """Whether the run goes to Vertex AI as batch jobs, not call by call."""
        return self.execution == "batch"

    @field_validator("context_lengths")
    @classmethod
    def _check_lengths(cls, value: list[int] | None) -> list[int] | None:
        if value is None:
            return None
        if not value:
            raise ValueError("give at least one context length, or leave it out")
        if len(value) > MAX_INTERVALS:
            raise ValueError(f"at most {MAX_INTERVALS} context lengths")
        for length in value:
            if not 1 <= length <= MAX_CONTEXT_LENGTH:
                raise ValueError(
                    f"each context length must be between 1 and {MAX_CONTEXT_LENGTH} tokens"
                )
        return sorted(set(value))

    @field_validator("document_depth_percents")
    @classmethod
    def _check_depths(cls, value: list[float] | None) -> list[float] | None:
        if value is None:
            return None
        if not value:
            raise ValueError("give at least one depth, or leave it out")
        if len(value) > MAX_INTERVALS:
            raise ValueError(f"at most {MAX_INTERVALS} depths")
        for depth in value:
            if not (math.isfinite(depth) and 0 <= depth <= 100):
                raise ValueError("each depth must be a percent between 0 and 100")
        return sorted({round(depth, DEPTH_DECIMALS) for depth in value})

    @field_validator("model_name", "evaluator_model_name")
    @classmethod
    def _check_model_name(cls, value: str | None) -> str | None:
        if value is not None and ".." in value:
            raise ValueError("must be a model ID, without '..'")
        return value

    @field_validator("haystack_dir", "mrcr_source")
    @classmethod
    def _check_haystack(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not re.fullmatch(r"(gs://)?[A-Za-z0-9._/-]+", value) or ".." in value.split("/"):
            raise ValueError(
                "must be a haystack name, a prefix or a gs:// URI of plain ASCII letters, "
                "digits, '.', '_', '-' and '/', without '..'"
            )
        return value

    @field_validator("label")
    @classmethod
    def _check_label(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not value.strip() or any(unicodedata.category(ch).startswith("C") for ch in value):
            raise ValueError(
                "must be a line of text: not blank, without control or format characters"
            )
        return value.strip()

    @field_validator("prompt_template")
    @classmethod
    def _check_template(cls, value: str | None) -> str | None:
        if value is None:
            return None
        counts = {name: value.count(name) for name in PLACEHOLDERS}
        if counts["{context}"] != 1 or counts["{question}"] != 1 or counts["{answer_lead}"] > 1:
            raise ValueError(
                "must contain {context} and {question} exactly once each and {answer_lead} at "
                f"most once (each copy is paid for); it has {counts}"
            )
        return value

    @field_validator("needle", "retrieval_question", "expected_answer")
    @classmethod
    def _check_no_placeholder(cls, value: str | None) -> str | None:
        for name in PLACEHOLDERS:
            if value is not None and name in value:
                raise ValueError(
                    f"must not contain the template placeholder {name}; only prompt_template "
                    "has placeholders"
                )
        return value

    @field_validator("needles", "expected_answers")
    @classmethod
    def _check_texts(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return None
        if not value:
            raise ValueError("give at least one, or leave it out")
        for number, text in enumerate(value, 1):
            if not text.strip():
                raise ValueError(f"item {number} is empty; each needs words")
            if len(text) > 2000:
                raise ValueError(f"item {number} has {len(text)} characters; at most 2000")
            cls._check_no_placeholder(text)
        return value

    @model_validator(mode="after")
    def _check_ranges(self) -> RunRequest:
        if self.context_lengths is None and self.context_lengths_min > self.context_lengths_max:
            raise ValueError("context_lengths_min must not exceed context_lengths_max")
        if (
            self.document_depth_percents is None
            and self.document_depth_percent_min > self.document_depth_percent_max
        ):
            raise ValueError(
                "document_depth_percent_min must not exceed document_depth_percent_max"
            )
        self._check_task_options()
        if self.is_batch() and self.provider() != "gemini":
            raise ValueError(
                "execution: batch is Vertex AI's batch prediction, for gemini-* models; "
                f"{self.model_name} is served by the {self.provider()} provider: leave "
                "execution out (online)"
            )
        if (
            not self.dynamic_needle
            and not self.static_expected_answer()
            and not self.evaluator_model_name
        ):
            raise ValueError(
                "expected_answer: a static needle (dynamic_needle false) needs "
                "expected_answer, the text a right answer contains (scored exact), or "
                "evaluator_model_name, a judge"
            )
        if self.scorer_name() in ("judge", "both") and not self.evaluator_model_name:
            raise ValueError(
                "scorer 'judge' needs evaluator_model_name (the judge model), or use scorer 'exact'"
            )
        if (
            not self.dynamic_needle
            and self.scorer in ("exact", "both")
            and not self.static_expected_answer()
        ):
            raise ValueError(
                "a static needle scored 'exact' needs expected_answer (the text the answer "
                "must contain); or set scorer to 'judge'"
            )
        return self

    def _check_task_options(self) -> None:
        """Refuse options the chosen task does not read, naming what does read them.

        Only options away from their defaults count: a stored spec holds every option.
        """
        fields = type(self).model_fields
        given = {
            name for name in self.model_fields_set if getattr(self, name) != fields[name].default
        }
        for name in sorted(given & ALL_TASK_OPTIONS - set(TASK_OPTIONS[self.task])):
            users = [task for task, names in TASK_OPTIONS.items() if name in names]
            raise ValueError(
                f"{name} applies to task {' or '.join(users)}, not {self.task}; "
                f"set task or leave {name} out"
            )
        if self.needles is not None or self.expected_answers is not None:
            self._check_own_needles()
        if self.task != "single":
            own = {"retrieval_question"} if self.needles is not None else set()
            for name in sorted(given & set(SINGLE_NEEDLE_OPTIONS) - own):
                raise ValueError(
                    f"{name} applies to task single; task {self.task} makes its own needles"
                    + ("" if self.task != "multi_needle" else " (unless you give needles)")
                )
            for length in (1, RULER_SHORT_LENGTH) if self.task == "common_words" else ():
                common, uncommon = self.common_word_repeats(length)
                if common <= uncommon:
                    where = "below" if length < RULER_SHORT_LENGTH else "from"
                    raise ValueError(
                        f"freq_cw ({common}) must exceed freq_ucw ({uncommon}) {where} "
                        f"{RULER_SHORT_LENGTH} tokens: the common words must be listed more "
                        "often than the others (set both, or leave both out for RULER's)"
                    )
            if self.task == "mrcr" and self.needle_count() not in MRCR_NEEDLES:
                raise ValueError("num_needles for task mrcr must be 2, 4 or 8, as MRCR v2 has")
            # The user's own needles may be graded by the judge (against the needles).
            own_judged = self.scorer == "judge" and self.needles is not None
            if self.scorer in ("judge", "both") and not own_judged:
                raise ValueError(
                    f"task {self.task} scores its own answers; the judge applies to task "
                    "single (leave scorer out)"
                )

    def _check_own_needles(self) -> None:
        """The harness's needle list: its question, and how its answers are scored."""
        if self.needles is None:
            raise ValueError(
                "expected_answers go with needles (one per needle); give needles, or leave "
                "expected_answers out"
            )
        count = len(self.needles)
        if self.num_needles is not None and self.num_needles != count:
            raise ValueError(
                f"num_needles ({self.num_needles}) differs from the {count} needles given; "
                "leave num_needles out"
            )
        if "retrieval_question" not in self.model_fields_set:
            raise ValueError(
                "retrieval_question: your needles need the question that asks for them "
                "(as the harness's --retrieval_question)"
            )
        if self.expected_answers is not None and len(self.expected_answers) != count:
            raise ValueError(
                f"expected_answers has {len(self.expected_answers)} items for {count} needles; "
                "give one per needle, in order"
            )
        if self.scorer == "both":
            raise ValueError("scorer 'both' applies to task single; use exact or judge")
        if self.expected_answers is None and self.scorer != "judge":
            raise ValueError(
                "expected_answers: say what a right answer names for each needle (one per "
                "needle, scored exact), or grade with a judge (scorer 'judge' and "
                "evaluator_model_name)"
            )
        if self.scorer == "judge" and not self.evaluator_model_name:
            raise ValueError(
                "scorer 'judge' needs evaluator_model_name (the judge model), or give "
                "expected_answers"
            )

    def needle_count(self) -> int:
        """The needles given, ``num_needles``, or the task's default (multi_needle 3, mrcr 8)."""
        if self.needles is not None:
            return len(self.needles)
        return self.num_needles or DEFAULT_NEEDLES.get(self.task, 1)

    def common_word_repeats(self, context_length: int) -> tuple[int, int]:
        """How often common_words lists each common word and each other word.

        RULER's rule when unset: 30 and 3, but 6 and 1 below 4096 tokens (NVIDIA/RULER
        scripts/data/synthetic/common_words_extraction.py, read 2026-11-26 at c3f5e3b).
        """
        short = context_length < RULER_SHORT_LENGTH
        common = self.freq_cw or (6 if short else 30)
        uncommon = self.freq_ucw or (1 if short else 3)
        return common, uncommon

    def static_expected_answer(self) -> str | None:
        """What a right answer to the static needle contains, if anything says.

        The user's ``expected_answer``; else, for the harness's default needle with its
        default question, that needle's known answer; else None (only a judge can score).
        """
        if self.expected_answer:
            return self.expected_answer
        default = (
            self.needle == HARNESS_DEFAULT_NEEDLE
            and self.retrieval_question == HARNESS_DEFAULT_QUESTION
        )
        return HARNESS_DEFAULT_ANSWER if default else None

    def scorer_name(self) -> ReportedScorer:
        """The scorer the run reports (the user's choice, else a default).

        Exact for dynamic needles, as the Gemini 1.5 report does, for a static needle
        with an ``expected_answer``, and for the harness's default needle unless a judge
        is named (its known answer); otherwise the LLM judge. Every other task scores its
        own answers ("task"), but for multi_needle with the user's own needles the judge
        may grade instead.
        """
        if self.task != "single":
            return "judge" if self.needles is not None and self.scorer == "judge" else "task"
        if self.scorer:
            return self.scorer
        if self.dynamic_needle or self.expected_answer:
            return "exact"
        known = self.static_expected_answer() is not None
        return "exact" if known and not self.evaluator_model_name else "judge"

    def provider(self) -> ProviderName:
        """The provider that serves ``model_name`` (explicit, else inferred from the name)."""
        return self.model_provider or provider_for_model(self.model_name)

    def lengths(self) -> list[int]:
        """Context lengths in tokens, as the harness computes them."""
        if self.context_lengths is not None:
            return list(self.context_lengths)
        return linspace_ints(
            self.context_lengths_min, self.context_lengths_max, self.context_lengths_num_intervals
        )

    def depths(self) -> list[float]:
        """Needle depths in percent, linear or sigmoid as in the harness."""
        if self.document_depth_percents is not None:
            return list(self.document_depth_percents)
        low, high = self.document_depth_percent_min, self.document_depth_percent_max
        count = self.document_depth_percent_intervals
        points = (
            [low + (high - low) * i / (count - 1) for i in range(count)] if count > 1 else [low]
        )
        if self.document_depth_percent_interval_type == "sigmoid":
            return sorted({round(logistic(x), DEPTH_DECIMALS) for x in points})
        return sorted({float(round(x)) for x in points})

    def cells(self) -> list[Cell]:
        """Every sample of every (length, depth) point of the grid, in a stable order."""
        return [
            Cell(length, depth, sample)
            for length in self.lengths()
            for depth in self.depths()
            for sample in range(self.samples_per_cell)
        ]

    def canonical_json(self, haystack_fingerprint: str = "") -> str:
        """What determines the run's results, in a stable form.

        The expanded grid rather than how it was written ([1000, 2000] and min/max/2
        are the same run), the haystack's content rather than its name, and none of
        the options that change only bookkeeping.
        """
        fields = self.model_dump(mode="json", exclude=NOT_RESULT_FIELDS | self._unused_options())
        fields |= {
            "lengths": self.lengths(),
            "depths": self.depths(),
            "provider": self.provider(),
            "scorer": self.scorer_name(),
            "haystack": haystack_fingerprint,
        }
        return json.dumps(fields, sort_keys=True, separators=(",", ":"))

    def _unused_options(self) -> set[str]:
        """Options that cannot change this run's results, so they do not name it.

        A single-needle run with one sample is named as before tasks existed.
        """
        unused = set(ALL_TASK_OPTIONS - set(TASK_OPTIONS[self.task]))
        # Options added since runs were first named: unset, they name nothing.
        unused |= {name for name in ADDED_OPTIONS if getattr(self, name) is None}
        if self.task == "single":
            unused.add("task")
        if self.samples_per_cell == 1:
            unused.add("samples_per_cell")
        return unused

    def run_id(self, haystack_fingerprint: str = "") -> str:
        """A deterministic run ID: the same request on the same haystack names the same run.

        That is what makes a retried dispatch and a rerun reuse answered cells.
        """
        canonical = self.canonical_json(haystack_fingerprint)
        return f"run-{hashlib.sha256(canonical.encode()).hexdigest()[:16]}"


# What ``RunRequest.run_id`` names: anything else names no run.
RUN_ID_PATTERN = re.compile(r"run-[0-9a-f]{16}")


# Options that change how a run is carried out or recorded, not what it measures.
NOT_RESULT_FIELDS = {
    "label",
    "allow_retired",
    "context_lengths",
    "context_lengths_min",
    "context_lengths_max",
    "context_lengths_num_intervals",
    "document_depth_percents",
    "document_depth_percent_min",
    "document_depth_percent_max",
    "document_depth_percent_intervals",
    "document_depth_percent_interval_type",
    "model_provider",
    "scorer",
    "num_concurrent_requests",
    "save_contexts",
    "count_tokens_check",
}


@dataclass(frozen=True)
class Cell:
    """One sample of a grid point: a context length in tokens, a depth in percent."""

    context_length: int
    depth_percent: float
    sample: int = 0

    @property
    def cell_id(self) -> str:
        """A sortable, deterministic document ID, e.g. ``L00004000-D050000`` for 4000 / 50 %.

        Depths carry three decimals (the harness's sigmoid precision), so distinct
        grid points never share an ID. Samples after the first add ``-S001``...; the
        first keeps the grid point's ID, as a one-sample run has always stored it.
        """
        point = f"L{self.context_length:08d}-D{round(self.depth_percent * 1000):06d}"
        return f"{point}-S{self.sample:03d}" if self.sample else point


def run_label(run: dict[str, Any]) -> str:
    """What a person calls a stored run: its ``--label``, else "model · task".

    Runs stored before labels existed have none, and read as the default.
    """
    if run.get("label"):
        return str(run["label"])
    task = (run.get("spec") or {}).get("task", "single")
    return f"{run.get('model') or 'model not recorded'} · {task}"


def primer_cell(cells: Sequence[Cell]) -> Cell | None:
    """The cell cache-aware dispatch sends first (the dispatcher's and the estimate's pick).

    The deepest needle at the longest length: every other cell's prefix is a prefix of
    its. None for a one-cell run.
    """
    if len(cells) < 2:
        return None
    return max(
        cells, key=lambda c: (c.context_length * c.depth_percent, c.context_length, -c.sample)
    )


def linspace_ints(low: int, high: int, count: int) -> list[int]:
    """``np.round(np.linspace(low, high, count)).astype(int)``, deduplicated, sorted."""
    if count == 1:
        return [low]
    values = {round(low + (high - low) * i / (count - 1)) for i in range(count)}
    return sorted(int(v) for v in values)


def logistic(x: float, top: float = 100, midpoint: float = 50, steepness: float = 0.1) -> float:
    """The harness's sigmoid spacing of depths: dense near the ends, sparse in the middle."""
    if x in (0, 100):
        return float(x)
    return round(top / (1 + math.exp(-steepness * (x - midpoint))), 3)
