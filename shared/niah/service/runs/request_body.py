"""The run request as the dispatcher reads it: strict JSON, then the ``RunRequest`` model.

Apart from the checks that need the catalog or the bucket (``niah.service.runs.admission_checks``),
so the CLI's estimate and the tests read a request the one way the service does.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from niah.core.request.request_errors import describe_validation_error
from niah.core.request.spec import RunRequest
from niah.errors import RequestError
from niah.settings import get_settings

# No run option takes a whole number this long (the largest bound, seed's, has 19
# digits). Python refuses to read one of over 4,300 digits (its int conversion limit, a
# ValueError, not a JSON error), so a longer literal is refused here, by its key.
MAX_NUMBER_DIGITS = 100


@dataclass(frozen=True)
class _LongNumber:
    """A whole-number literal too long to be any option's value: how many digits."""

    digits: int


def decode_body(data: bytes) -> Any:
    """The request body as JSON, strictly: no repeated keys, no NaN or Infinity.

    Python's parser takes the last of two equal keys and reads NaN; either would run
    something other than what the client's other tools (and the client) read. A whole
    number of more than ``MAX_NUMBER_DIGITS`` digits is refused naming its key.
    """

    def no_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for key, value in pairs:
            if key in seen:
                raise RequestError(key, "is given twice in the JSON body; give it once")
            _no_long_number(key, value)
            seen[key] = value
        return seen

    def no_constants(name: str) -> Any:
        raise RequestError("body", f"{name} is not a JSON number; send a finite number")

    def short_int(literal: str) -> int | _LongNumber:
        digits = len(literal.lstrip("-"))
        return int(literal) if digits <= MAX_NUMBER_DIGITS else _LongNumber(digits)

    try:
        body = json.loads(
            data.decode("utf-8") or "null",
            object_pairs_hook=no_repeats,
            parse_constant=no_constants,
            parse_int=short_int,
        )
        _no_long_number("body", body)
        return body
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as error:
        raise RequestError(
            "body", f"not valid JSON ({error}); send a JSON object of run options"
        ) from error


def _no_long_number(key: str, value: Any) -> None:
    """Refuse a whole number too long for any option, in ``value`` or a list in it."""
    if isinstance(value, _LongNumber):
        raise RequestError(
            key,
            f"is a whole number of {value.digits} digits; no run option takes more than "
            f"{MAX_NUMBER_DIGITS} (see the option's limits in the README)",
        )
    if isinstance(value, list):
        for item in value:
            _no_long_number(key, item)


def parse_request(payload: Any) -> RunRequest:
    """Validate a JSON payload; the first problem becomes a ``RequestError``."""
    if not isinstance(payload, dict):
        raise RequestError("body", "must be a JSON object of run options")
    # A deployment picks the model a request that names none gets (Gemini, deployed).
    payload = {"model_name": get_settings().default_model_name, **payload}
    try:
        return RunRequest.model_validate(payload)
    except ValidationError as error:
        raise RequestError(*describe_validation_error(error)) from error
