"""A run request's validation error in a person's words, naming the option at fault.

One wording for both doors: the dispatcher answers 400 with the field's name and this
message; the ``niah`` command line prints the same message with the option's name
(``--document_depth_percent_max must be at most 100``). pydantic's own text ("Input
should be less than or equal to 100") is for programmers; its error type and context
carry what a user needs.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from niah.core.request.spec import RunRequest
from niah.core.request.task_options import option_owners

# pydantic error types (pydantic-core's ErrorType) and what they mean for an option.
_TYPE_MESSAGES = {
    "int_type": "must be a whole number",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "finite_number": "must be a finite number",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "string_type": "must be text",
    "list_type": "must be a list",
    "extra_forbidden": "is not a run option; check its spelling against the README's list",
}


def describe_validation_error(error: ValidationError) -> tuple[str, str]:
    """The field the first problem is about (``body`` when none) and what to fix."""
    first = error.errors()[0]
    # A task's option is named as the user gives it: flat, not under task_options.
    loc = [str(part) for part in first["loc"]]
    field = ".".join(loc[1:] if loc[:1] == ["task_options"] and loc[1:] else loc) or "body"
    message = _message(first["type"], first.get("ctx") or {}, str(first["msg"]))
    # A check across options names its field first: "expected_answer: ..." or
    # "context_lengths_min must not exceed ..." (a task's option as well as the request's).
    if field in ("body", "task_options"):
        named, separator, rest = message.partition(": ")
        if _is_option(named) and separator and rest:
            return named, rest
        leading = message.split(" ", 1)[0]
        if _is_option(leading):
            return leading, message
    return field, message


def _is_option(name: str) -> bool:
    """A run option's name: the request's, or a task's."""
    return name in RunRequest.model_fields or name in option_owners()


def _message(kind: str, context: dict[str, Any], text: str) -> str:
    if kind in _TYPE_MESSAGES:
        return _TYPE_MESSAGES[kind]
    if kind == "less_than_equal":
        return f"must be at most {_bound(context['le'])}"
    if kind == "greater_than_equal":
        return f"must be at least {_bound(context['ge'])}"
    if kind == "less_than":
        return f"must be below {_bound(context['lt'])}"
    if kind == "greater_than":
        return f"must be above {_bound(context['gt'])}"
    if kind == "string_too_short":
        least = context["min_length"]
        return "must not be empty" if least == 1 else f"must be at least {least} characters"
    if kind == "string_too_long":
        return f"must be at most {context['max_length']} characters"
    if kind == "string_pattern_mismatch":
        # Only the model names carry a pattern.
        return (
            "must be a model ID: letters, digits, '.', '_', '@', ':', '/' and '-', "
            "starting with a letter or digit"
        )
    # Value errors of our validators are already a person's words; pydantic's own
    # others ("Input should be 'linear' or 'sigmoid'") read well as "must be ...".
    text = text.removeprefix("Value error, ")
    return "must be" + text.removeprefix("Input should be") if text.startswith("Input") else text


def _bound(value: Any) -> str:
    """100 for a float bound of 100.0: the user typed 100."""
    return f"{value:g}" if isinstance(value, float) else str(value)
