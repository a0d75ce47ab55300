"""The run request's vocabulary: its options' names, choices, defaults, limits and help.

Plain data that the request (``niah.core.request.spec``), its checks
(``niah.core.request.request_checks``) and the CLI all read, apart from the model so
that each reads one definition.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Annotated, Literal

from pydantic import AfterValidator

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
# How a run's effective length is judged (niah.core.results.effective): RULER's fixed
# 85.6 % (the default), or NoLiMa's 85 % of the model's own mean at lengths of 1,000
# tokens or less. The run's choice, never inferred from its grid.
EffectiveLengthRule = Literal["ruler", "nolima"]
# The rule's name when only certify had it: still taken from requests and stored runs.
EFFECTIVE_LENGTH_RULE_ALIAS = "certify_rule"
# NoLiMa's base lengths: 1,000 tokens or less (adobe-research/NoLiMa README).
NOLIMA_BASE_MAX_LENGTH = 1_000
# The test kind a request names when it names none: the harness's one needle.
DEFAULT_TASK = "single"
# Run options added after runs were first named by their options' hash (a task's own
# are its options' ``added_options``).
ADDED_OPTIONS = (
    "thinking_level",
    "execution",
    "mode",
    "certify_max_tokens",
    "certify_max_usd",
    "certify_max_seconds",
    "effective_length_rule",
    "sentinel",
    "scheduled_at",
    "distractors",
    "haystack_order",
    "tier",
)
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
    "task": "the test kind: single (the harness's needle) or another task (docs/tasks/)",
    "task_options": "the task's own options as one object (or each under its own name)",
    "distractors": (
        "retrieval tasks: statements like the needle (another key or value) placed apart "
        "from it: 0, 1 or 4 (Context Rot's), or several (0 1 4) as an axis"
    ),
    "haystack_order": (
        "coherent (as written) or shuffled (its sentences in a seeded order), or both as an axis"
    ),
    "samples_per_cell": "samples per grid point (other needles, one haystack), each stored apart",
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
    "effective_length_rule": (
        "how the effective length is judged: ruler (RULER's fixed 85.6 percent; certify: "
        "certify_threshold) or nolima (85 percent of the mean at lengths <= 1,000 tokens, "
        "which the grid must have); --certify_rule is its old name"
    ),
    "sentinel": "the sentinel whose firing this run is; set by the firing only (niah sentinel run)",
    "scheduled_at": "when the sentinel's firing was due, RFC 3339 UTC; set by the firing only",
    "execution": "online (each cell called as it comes) or batch (Vertex batch, half price)",
    "tier": (
        "how Vertex serves the online calls: standard, flex (Flex PayGo, half price, "
        "slower; no Vertex page names a model for it, so refused for now) or priority "
        "(Priority PayGo, dearer), where Google offers it on the model"
    ),
    "allow_retired": (
        "call a model Vertex AI has retired anyway (a project that still has access, e.g. "
        "a private endpoint); recorded on the run"
    ),
    "mode": (
        "grid (every length and depth) or certify (the longest length at or above "
        "certify_threshold with 95 percent confidence, sampled round by round)"
    ),
    "certify_threshold": "the mean score (percent) a length must reach to be certified",
    "certify_max_tokens": "the most prompt tokens a certification may spend",
    "certify_max_seconds": (
        "the most model time (seconds, estimated from the catalog's measured speed) a "
        "certification of the local model may take (default: a quarter of the grid's)"
    ),
    "certify_max_usd": (
        "the most model cost (dollars, the prompts') a certification may spend (default: "
        "a quarter of the grid's with 5 samples a point)"
    ),
}

# The prompt template's placeholders, each filled once by one pass (prompts.render).
PLACEHOLDERS = ("{context}", "{question}", "{answer_lead}")

# Hard limits that no configuration lifts: beyond them a request is a mistake.
MAX_CONTEXT_LENGTH = 10_000_000
MAX_INTERVALS = 1_000


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


def bucket_path(value: str) -> str:
    """Refuse a name, prefix or ``gs://`` URI that could leave the service's bucket layout.

    For ``haystack_dir`` and any task's source of published samples.
    """
    if not re.fullmatch(r"(gs://)?[A-Za-z0-9._/-]+", value) or ".." in value.split("/"):
        raise ValueError(
            "must be a haystack name, a prefix or a gs:// URI of plain ASCII letters, "
            "digits, '.', '_', '-' and '/', without '..'"
        )
    return value


def no_placeholder(value: str) -> str:
    """Refuse a template placeholder in a text that is not the template."""
    for name in PLACEHOLDERS:
        if name in value:
            raise ValueError(
                f"must not contain the template placeholder {name}; only prompt_template "
                "has placeholders"
            )
    return value


# A model ID: ASCII only. Unicode's \w (pydantic's patterns are Rust regexes) takes the
# zero-width joiners, so a name could hide one.
MODEL_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.@:/-]*$"

# Every free-text option is of this type (a test checks every text field refuses a bidi
# override), so a new one cannot skip the check.
FreeText = Annotated[str, AfterValidator(plain_text)]
# A text put into the prompt as it is (a needle, a question): free text, no placeholder.
PromptText = Annotated[FreeText, AfterValidator(no_placeholder)]
# A place in the service's bucket (``bucket_path``).
BucketPath = Annotated[str, AfterValidator(bucket_path)]


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
