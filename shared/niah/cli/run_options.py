"""The run options on the command line: RunRequest's fields, in the harness's syntax."""

from __future__ import annotations

import argparse
import sys
import types
import typing
from typing import Any

from niah.core.spec import OPTION_HELP, RunRequest


def _option_type(annotation: Any) -> tuple[Any, bool]:
    """The argparse type of a RunRequest field, and whether it takes a list."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType) and len(args) == 1:
        annotation = args[0]
    if typing.get_origin(annotation) is list:
        return typing.get_args(annotation)[0], True
    if typing.get_origin(annotation) is typing.Literal:
        return str, False
    return annotation, False


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


class _ExtendFlat(argparse.Action):
    """Each word parses to a list; the option's value is all of them, in order."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        items = list(getattr(namespace, self.dest, None) or [])
        setattr(namespace, self.dest, items + [item for word in values for item in word])


def _list_of(kind: type, name: str) -> Any:
    """Parse one word of a list option: 1000, "1000," or the harness's "[1000, 2000]"."""

    def parse(word: str) -> list[Any]:
        items = word.translate(str.maketrans("[],", "   ")).split()
        try:
            return [kind(item) for item in items]
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{word!r} is not a list of numbers; write --{name} 1000 2000 or "
                f"--{name} '[1000, 2000]'"
            ) from None

    return parse


def add_run_options(parser: argparse.ArgumentParser) -> None:
    """One option per RunRequest field (both spellings), and the harness's own ones."""
    for name in (*HARNESS_ONLY_OPTIONS, *RENAMED_OPTIONS):
        parser.add_argument(
            f"--{name}", dest=f"harness_{name}", nargs="?", const=True, help=argparse.SUPPRESS
        )
    for name, field in RunRequest.model_fields.items():
        flags = [f"--{name}"] + ([f"--{name.replace('_', '-')}"] if "_" in name else [])
        kind, many = _option_type(field.annotation)
        help_text = f"{OPTION_HELP[name]} (default: {field.default!r})"
        if kind is bool:
            parser.add_argument(
                *flags,
                dest=name,
                action=argparse.BooleanOptionalAction,
                default=None,
                help=help_text,
            )
        elif many:
            parser.add_argument(
                *flags,
                dest=name,
                type=_list_of(kind, name),
                nargs="+",
                default=None,
                action=_ExtendFlat,
                help=help_text,
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


def explain_harness_options(args: argparse.Namespace) -> None:
    """One line per harness option given: renamed ones refused, needless ones ignored."""
    for name, instead in RENAMED_OPTIONS.items():
        if getattr(args, f"harness_{name}", None) is not None:
            sys.exit(f"niah: --{name} is the harness's; here it is {instead}")
    for name, instead in HARNESS_ONLY_OPTIONS.items():
        if getattr(args, f"harness_{name}", None) is not None:
            print(f"niah: --{name} is not needed here: {instead}; ignored", file=sys.stderr)
