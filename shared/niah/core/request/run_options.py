"""The run's own options: the harness's, each validated, and what they say together.

The JSON keys are the harness's option names so users can carry their commands over.
Validation errors are the user's error messages, so every constraint names its field.
The options' vocabulary is in ``niah.core.request.request_options``, the grid of cells in
``niah.core.request.grid``, the distractor and order axes in ``niah.core.request.axes``.

Apart from ``niah.core.request.spec`` (the request whole: these options, the task's own
and the checks across them) because a task's options and those checks read a request: they
take this type, which imports neither, so no module of the request imports another back.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from niah.catalog.models import LOCAL_MODEL, ModelInfo, ProviderName, find_model, provider_of
from niah.catalog.tiers import Tier
from niah.core.request.axes import Distractors, HaystackOrders, variants
from niah.core.request.grid import Cell, Depths, Lengths, linspace_ints, spread_depths
from niah.core.request.request_options import (
    DEFAULT_TASK,
    EFFECTIVE_LENGTH_RULE_ALIAS,
    HARNESS_DEFAULT_ANSWER,
    HARNESS_DEFAULT_NEEDLE,
    HARNESS_DEFAULT_QUESTION,
    MAX_CONTEXT_LENGTH,
    MAX_INTERVALS,
    MODEL_ID_PATTERN,
    PLACEHOLDERS,
    BucketPath,
    EffectiveLengthRule,
    FreeText,
    IntervalType,
    PromptText,
    ScorerName,
)
from niah.core.request.sentinel_request import SENTINEL_NAME, firing_time


class RunOptions(BaseModel):
    """A needle-in-a-haystack run's own options, in the harness's vocabulary.

    Either ``context_lengths`` or the min/max/num_intervals triple sets the lengths;
    either ``document_depth_percents`` or the min/max/intervals triple sets the depths.
    Never built alone: ``RunRequest`` adds the task's options and the checks across
    options. A task's options and those checks read a request through this type.
    """

    # Strict: JSON true is not a length of 1, "1000" is not a number. Names are
    # stripped where they are validated; needles and templates keep their whitespace.
    model_config = ConfigDict(extra="forbid", strict=True)
    # The catalog's entry for ``model_name``, looked up once per request
    # (``catalog_model``). A slot, not a field or private attribute: it takes no part in
    # equality, dumps or copies (a copy for another model looks its own up).
    __slots__ = ("_catalog_entry",)

    model_name: str = Field(
        default=LOCAL_MODEL, min_length=1, max_length=200, pattern=MODEL_ID_PATTERN
    )
    model_provider: ProviderName | None = None
    evaluator_model_name: str | None = Field(default=None, max_length=200, pattern=MODEL_ID_PATTERN)

    context_lengths: Lengths | None = None
    # 15 x 15 by default (inspect's niah default), so the default grid fits the 500-cell
    # cap; the harness's 35 x 35 is 1,225 cells.
    context_lengths_min: int = Field(default=1000, ge=1, le=MAX_CONTEXT_LENGTH)
    context_lengths_max: int = Field(default=16000, ge=1, le=MAX_CONTEXT_LENGTH)
    context_lengths_num_intervals: int = Field(default=15, ge=1, le=MAX_INTERVALS)

    document_depth_percents: Depths | None = None
    document_depth_percent_min: float = Field(default=0, ge=0, le=100)
    document_depth_percent_max: float = Field(default=100, ge=0, le=100)
    document_depth_percent_intervals: int = Field(default=15, ge=1, le=MAX_INTERVALS)
    document_depth_percent_interval_type: IntervalType = "linear"

    # The test kind (see niah.tasks); "single" is the harness's one needle. The task's
    # own options (a needle count, RULER's, ...) are ``RunRequest.task_options``, of its
    # model; the request checks the name against the registry.
    task: str = DEFAULT_TASK
    # Context Rot's axes (niah.core.request.axes): statements like the needle but not it,
    # placed apart from it; and the haystack's sentences in a seeded order. One value
    # (a number or a word) for every cell, or a list: an axis, the grid once per value.
    distractors: Distractors | None = None
    haystack_order: HaystackOrders | None = None
    # Samples per grid point (other needles and keys, in one haystack and place: not
    # independent, so intervals cluster them by point), each stored apart.
    samples_per_cell: int = Field(default=1, ge=1, le=100)

    dynamic_needle: bool = True
    needle: PromptText = Field(default=HARNESS_DEFAULT_NEEDLE, min_length=1, max_length=2000)
    retrieval_question: PromptText = Field(
        default=HARNESS_DEFAULT_QUESTION, min_length=1, max_length=2000
    )
    expected_answer: PromptText | None = Field(default=None, max_length=2000)
    seed: int = Field(default=0, ge=0, le=2**63 - 1)

    haystack_dir: BucketPath | None = Field(default=None, max_length=500)
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
    # relabelled. None: "model · task" (``niah.core.runs.run_label``).
    label: FreeText | None = Field(default=None, min_length=1, max_length=120)
    # How the model is called: online, each cell as its message comes (the default), or
    # batch, the whole grid as Vertex AI batch jobs at half the online price. Part of
    # the run's identity (a batch run is a run of its own); "online" is the default
    # spelt out, so it names the same run as leaving it out.
    execution: Literal["online", "batch"] | None = None
    # --- Pricing tier (niah.catalog.tiers): how Vertex serves the run's online calls of
    # the model under test (the judge stays on standard): Flex PayGo at half price,
    # Priority PayGo dearer. Part of the run's identity, as execution is; "standard" is
    # the default spelt out, so it names the same run as leaving it out. ---
    tier: Literal["standard", "flex", "priority"] | None = None
    # Vertex AI answers a retired model with 404, so one is refused; a project that
    # still has access (a private endpoint, an extension) says so here. It measures
    # nothing, so it is not in the run's ID; the run's notes record it.
    allow_retired: bool = False
    # Certify (niah.core.results.certify): the grid's lengths are candidates; rounds of
    # samples, depths drawn over the grid's depths, find the longest length whose mean
    # score reaches certify_threshold (percent; RULER's 85.6 by default) with 95 %
    # confidence, spending at most certify_max_usd of model cost (default: a quarter of
    # the grid's with 5 samples a point; for the local model, whose cost is its time,
    # certify_max_seconds of model time, a quarter of the grid's by default; for another
    # unpriced model, a quarter of its prompt tokens) and certify_max_tokens prompt
    # tokens. Unset: the whole grid, as always.
    mode: Literal["grid", "certify"] | None = None
    # Below 100: a sequence can never rule out a share of 100 %, so nothing would pass.
    certify_threshold: float = Field(default=85.6, gt=0, lt=100)
    certify_max_tokens: int | None = Field(default=None, ge=1, le=10**12)
    certify_max_usd: float | None = Field(default=None, gt=0, le=1_000_000)
    certify_max_seconds: float | None = Field(default=None, gt=0, le=10**9)
    # How the effective length is judged (niah.core.results.effective), the run's choice:
    # RULER's fixed 85.6 % (the default; a certify run's certify_threshold), or NoLiMa's
    # 85 % of the model's own mean at lengths of 1,000 tokens or less, which the grid
    # must then have. Certify plans its samples by it, so it names the run (unset or
    # "ruler", as before it existed). Requests and stored runs that say ``certify_rule``
    # (its name when only certify had it) mean this.
    effective_length_rule: EffectiveLengthRule | None = None
    # Sentinels (niah.service.sentinel.check): a named request asked again on a schedule.
    # Only the dispatcher's sentinel route sets these (a plain request naming them is
    # refused): the name, and when the firing was due (RFC 3339, UTC), so each firing
    # is a run of its own and a retried firing is the same run.
    sentinel: str | None = Field(default=None, max_length=40)
    scheduled_at: str | None = Field(default=None, max_length=40)

    @field_validator("scheduled_at")
    @classmethod
    def _check_scheduled_at(cls, value: str | None) -> str | None:
        return None if value is None else firing_time(value)

    @field_validator("sentinel")
    @classmethod
    def _check_sentinel(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(SENTINEL_NAME, value):
            raise ValueError(
                "must be a sentinel's name: lower-case letters, digits and '-', starting "
                "with a letter"
            )
        return value

    @field_validator("mode")
    @classmethod
    def _grid_is_the_default(cls, value: str | None) -> str | None:
        return None if value == "grid" else value

    @model_validator(mode="before")
    @classmethod
    def _certify_rule_is_the_old_name(cls, data: Any) -> Any:
        """``certify_rule`` (stored certify runs, the CLI's old flag) is the rule's old name."""
        if not isinstance(data, dict) or EFFECTIVE_LENGTH_RULE_ALIAS not in data:
            return data
        data = dict(data)
        old = data.pop(EFFECTIVE_LENGTH_RULE_ALIAS)
        new = data.setdefault("effective_length_rule", old)
        if new != old:
            raise ValueError(
                f"effective_length_rule: {EFFECTIVE_LENGTH_RULE_ALIAS} is its old name, and "
                f"the two say {old!r} and {new!r}: give effective_length_rule alone"
            )
        return data

    @field_validator("effective_length_rule")
    @classmethod
    def _ruler_is_the_default(cls, value: str | None) -> str | None:
        return None if value == "ruler" else value

    def rule(self) -> EffectiveLengthRule:
        """The rule the run's effective length is judged by (RULER's unless it says)."""
        return self.effective_length_rule or "ruler"

    def is_certify(self) -> bool:
        """Whether the run certifies an effective length instead of filling the grid."""
        return self.mode == "certify"

    @field_validator("execution")
    @classmethod
    def _online_is_the_default(cls, value: str | None) -> str | None:
        return None if value == "online" else value

    @field_validator("tier")
    @classmethod
    def _standard_is_the_default(cls, value: str | None) -> str | None:
        return None if value == "standard" else value

    def call_tier(self) -> Tier:
        """The tier the model's online calls ask for (standard unless the run says)."""
        return self.tier or "standard"

    def is_batch(self) -> bool:
        """Whether the run goes to Vertex AI as batch jobs, not call by call."""
        return self.execution == "batch"

    @field_validator("model_name", "evaluator_model_name")
    @classmethod
    def _check_model_name(cls, value: str | None) -> str | None:
        if value is not None and ".." in value:
            raise ValueError("must be a model ID, without '..'")
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

    def harness_scorer(self) -> ScorerName:
        """The scorer of the harness's needle (the user's choice, else a default).

        Exact for dynamic needles, as the Gemini 1.5 report does, for a static needle
        with an ``expected_answer``, and for the harness's default needle unless a judge
        is named (its known answer); otherwise the LLM judge.
        """
        if self.scorer:
            return self.scorer
        if self.dynamic_needle or self.expected_answer:
            return "exact"
        known = self.static_expected_answer() is not None
        return "exact" if known and not self.evaluator_model_name else "judge"

    def catalog_model(self) -> ModelInfo | None:
        """The catalog's entry for ``model_name`` (None: not listed), looked up once."""
        looked_up: tuple[str, ModelInfo | None] | None = getattr(self, "_catalog_entry", None)
        name, known = looked_up or (None, None)
        if name != self.model_name:
            known = find_model(self.model_name)
            object.__setattr__(self, "_catalog_entry", (self.model_name, known))
        return known

    def provider(self) -> ProviderName:
        """The provider that serves ``model_name`` (explicit, else inferred from the name)."""
        return self.model_provider or provider_of(self.model_name, self.catalog_model())

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
        return spread_depths(
            self.document_depth_percent_min,
            self.document_depth_percent_max,
            self.document_depth_percent_intervals,
            self.document_depth_percent_interval_type,
        )

    def cells(self) -> list[Cell]:
        """Every sample of every (length, depth) point, per variant of the run's axes."""
        return [
            Cell(length, depth, sample, variant)
            for variant in variants(self)
            for length in self.lengths()
            for depth in self.depths()
            for sample in range(self.samples_per_cell)
        ]
