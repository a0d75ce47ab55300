"""The run options on the command line: RunRequest's fields, in the harness's syntax.

Each field is an option in both spellings (``--context_lengths``, ``--context-lengths``),
and so is each task's own option (read from the tasks' option models, so a new task's
options are flags without a line here); the harness's options that are spelt otherwise
here, or mean nothing to a service, are taken and answered. A request the checks refuse
is told in the CLI's words (option names), the same check the HTTP API answers with the
field's name.
"""

from __future__ import annotations

import argparse
import re
import sys
import types
import typing
from typing import Any

from pydantic.fields import FieldInfo

from niah.cli.output import usage_error
from niah.cli.syntax import BooleanFlag, ListOption, TextListOption
from niah.core.request.request_options import (
    BATCH_TURNAROUND,
    EFFECTIVE_LENGTH_RULE_ALIAS,
    OPTION_HELP,
    EffectiveLengthRule,
)
from niah.core.request.sentinel_request import FIRING_FIELDS
from niah.core.request.spec import RunRequest
from niah.tasks import TASKS

# The harness's options that mean nothing to a service, and what takes their place.
HARNESS_ONLY_OPTIONS = {
    "save_results": "results are always saved (Firestore; `niah export` writes files)",
    "print_ongoing_status": "progress is always shown with --wait (and `niah status`)",
    "seconds_to_sleep_between_completions": (
        "pacing is the worker's parallelism (worker max instances x concurrency)"
    ),
    "gcp_project_id": "the project is the deployment's (NIAH_PROJECT or GOOGLE_CLOUD_PROJECT)",
}
# The harness's options that are spelt differently here: refused, naming the new one.
RENAMED_OPTIONS = {
    "provider": "--model_provider (local, gemini or openai_compatible; inferred from the name)",
    "model_to_test": "--model_name",
    "evaluator": "--scorer judge with --evaluator_model_name",
}
MULTI_NEEDLE_TASK = "multi_needle"


def _word(text: str) -> str:
    """A word of a list of choices (``--haystack_order coherent shuffled``).

    The request checks the choice, naming the option.
    """
    return text


def _option_type(annotation: Any) -> tuple[Any, bool]:
    """The argparse type of a RunRequest field, and whether it takes a list."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType) and len(args) == 1:
        annotation = args[0]
    if hasattr(annotation, "__metadata__"):  # Lengths, Distractors: the type under the checks
        annotation = typing.get_args(annotation)[0]
    if typing.get_origin(annotation) is list:
        item = typing.get_args(annotation)[0]
        if typing.get_origin(item) is typing.Literal:  # list[HaystackOrder]: words
            return _word, True
        # list[FreeText]: the item's type without its validators.
        return (typing.get_args(item)[0] if hasattr(item, "__metadata__") else item), True
    if typing.get_origin(annotation) is typing.Literal:
        return str, False
    return annotation, False


def task_option_fields() -> dict[str, tuple[FieldInfo, str]]:
    """Each task's option by name: its field (the first task's) and its help for every task.

    Tasks that share an option (RULER's needle kinds) say so once; where they differ,
    each says its own ("multi_needle: ...; mrcr: ...").
    """
    fields: dict[str, tuple[FieldInfo, list[str]]] = {}
    for task in TASKS.values():
        for name, field in task.options.model_fields.items():
            said = fields.setdefault(name, (field, []))[1]
            if field.description and field.description not in said:
                said.append(field.description)
    return {name: (field, "; ".join(said)) for name, (field, said) in fields.items()}


def _run_option_fields() -> dict[str, tuple[FieldInfo, str]]:
    """Every run option a flag: the request's fields, then each task's own options."""
    run = {
        name: (field, OPTION_HELP[name])
        for name, field in RunRequest.model_fields.items()
        if name not in FIRING_FIELDS and name != "task_options"
    }
    return run | task_option_fields()


def add_run_options(parser: argparse.ArgumentParser) -> None:
    """One option per run option (both spellings), and the harness's own ones."""
    for name in (*HARNESS_ONLY_OPTIONS, *RENAMED_OPTIONS):
        parser.add_argument(
            f"--{name}", dest=f"harness_{name}", nargs="?", const=True, help=argparse.SUPPRESS
        )
    # The harness's LLMMultiNeedleHaystackTester: here the multi_needle task.
    parser.add_argument(
        "--multi_needle",
        "--multi-needle",
        dest="harness_multi_needle",
        action=BooleanFlag,
        default=None,
        help=argparse.SUPPRESS,
    )
    parser.add_argument(
        "--batch",
        dest="batch",
        action="store_true",
        help="the same as --execution batch: Vertex AI batch jobs, half the online price, "
        + BATCH_TURNAROUND,
    )
    # The rule's old name, from when only certify had it: scripts that say it keep working.
    parser.add_argument(
        f"--{EFFECTIVE_LENGTH_RULE_ALIAS}",
        f"--{EFFECTIVE_LENGTH_RULE_ALIAS.replace('_', '-')}",
        dest="effective_length_rule",
        choices=list(typing.get_args(EffectiveLengthRule)),
        default=None,
        help="the old name of --effective_length_rule",
    )
    # A sentinel's firing sets its own fields only: `niah sentinel run NAME`.
    for name, (field, said) in _run_option_fields().items():
        flags = [f"--{name}"] + ([f"--{name.replace('_', '-')}"] if "_" in name else [])
        kind, many = _option_type(field.annotation)
        help_text = f"{said} (default: {field.default!r})"
        if name == "task":
            parser.add_argument(*flags, dest=name, choices=list(TASKS), help=help_text)
            continue
        if kind is bool:
            parser.add_argument(*flags, dest=name, action=BooleanFlag, default=None, help=help_text)
        elif many and kind is str:
            parser.add_argument(
                *flags, dest=name, action=TextListOption, default=None, help=help_text
            )
        elif many:
            parser.add_argument(
                *flags, dest=name, type=kind, action=ListOption, default=None, help=help_text
            )
        else:
            choices = (
                typing.get_args(typing.get_args(field.annotation)[0])
                if typing.get_origin(field.annotation) in (typing.Union, types.UnionType)
                else typing.get_args(field.annotation)
            )
            literal = all(isinstance(c, str) for c in choices) and choices
            parser.add_argument(
                *flags,
                dest=name,
                type=kind if kind in (int, float) else str,
                default=None,
                choices=list(choices) if literal else None,
                help=help_text,
            )


def run_payload(args: argparse.Namespace) -> dict[str, Any]:
    """The run request the options ask for, the harness's spellings turned into ours."""
    for name, instead in RENAMED_OPTIONS.items():
        if getattr(args, f"harness_{name}", None) is not None:
            usage_error(f"--{name} is the harness's; here it is {instead}")
    for name, instead in HARNESS_ONLY_OPTIONS.items():
        if getattr(args, f"harness_{name}", None) is not None:
            print(f"niah: --{name} is not needed here: {instead}; ignored", file=sys.stderr)
    payload = {
        name: getattr(args, name)
        for name in _run_option_fields()
        if getattr(args, name) is not None
    }
    if getattr(args, "batch", False):
        if payload.get("execution", "batch") != "batch":
            usage_error(f"--batch and --execution {payload['execution']} say two things; give one")
        payload["execution"] = "batch"
    return _multi_needle(args, payload)


def _multi_needle(args: argparse.Namespace, payload: dict[str, Any]) -> dict[str, Any]:
    """The harness's ``--multi_needle True`` and its needle list: the multi_needle task.

    The harness's needle list (an option only that task takes) is asked for by
    ``--retrieval_question``; the task's own seeded needles are used when only
    ``--multi_needle True`` is given.
    """
    wanted = args.harness_multi_needle
    own = [name for name in payload if _takers(name) == [MULTI_NEEDLE_TASK]]
    if wanted is False:
        if own:
            usage_error(f"--{own[0]} goes with the multi-needle test; --multi_needle is False")
        return payload
    if wanted is None and not own:
        return payload
    task = payload.get("task", MULTI_NEEDLE_TASK)
    if task != MULTI_NEEDLE_TASK:
        given = "--multi_needle True" if wanted else f"--{own[0]}"
        usage_error(f"{given} means --task {MULTI_NEEDLE_TASK}, not --task {task}; give one")
    if wanted and "task" not in payload:
        print(
            f"niah: --multi_needle True: here that is --task {MULTI_NEEDLE_TASK}", file=sys.stderr
        )
    return payload | {"task": MULTI_NEEDLE_TASK}


def _takers(name: str) -> list[str]:
    """The tasks that take the option ``name`` (none: a run option, or none at all)."""
    return [task.name for task in TASKS.values() if name in task.options.model_fields]


# The option names a message may hold: those with an underscore are never plain words
# ("needle" and "task" are, in the checks' sentences).
_ALL_NAMES = [*RunRequest.model_fields, *task_option_fields()]
_OPTION_NAMES = re.compile(
    r"(?<![\w-])("
    + "|".join(sorted((n for n in _ALL_NAMES if "_" in n), key=len, reverse=True))
    + r")\b"
)


# Options named by a plain word ("task", "scorer"), as the checks write them: after
# "set", "leave" or "use", or before a value ("task mrcr", "scorer 'judge'").
_PLAIN_NAMES = "|".join(n for n in _ALL_NAMES if "_" not in n)
_AFTER_VERB = re.compile(rf"\b(set|leave|use) ({_PLAIN_NAMES})\b")
_BEFORE_VALUE = re.compile(rf"(?<![\w-])({_PLAIN_NAMES})(?= '| (?:{'|'.join(TASKS)})\b)")


def in_cli_words(field: str, message: str) -> str:
    """A refused request in the command line's words: options, not body fields.

    ``("document_depth_percent_max", "must be at most 100")`` reads
    ``--document_depth_percent_max must be at most 100``.
    """
    option = field.split(".")[0]
    text = _OPTION_NAMES.sub(r"--\1", message)
    text = _BEFORE_VALUE.sub(r"--\1", _AFTER_VERB.sub(r"\1 --\2", text))
    if option not in _ALL_NAMES:
        return text
    flag = f"--{option}"
    if text.startswith(f"{option} "):
        text = flag + text[len(option) :]
    if text.startswith(flag):
        return text
    if text.startswith(("must ", "is ", "needs ", "applies ")):
        return f"{flag} {text}"
    return f"{flag}: {text}"
