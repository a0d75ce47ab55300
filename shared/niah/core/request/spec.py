"""The run request: the run's own options, its task's, checked together, and its name.

The run's own options (the harness's) are ``niah.core.request.run_options``, the checks
across options ``niah.core.request.request_checks``. Each task's own options are its own
(``niah.core.request.task_options``): the request carries the chosen task's, flat on the
wire like every other option. What names a run (its ID, a sentinel's request key) is here,
as it reads all of them.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from pydantic import (
    Field,
    SerializeAsAny,
    SerializerFunctionWrapHandler,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

from niah.core.request.request_checks import check_options_together
from niah.core.request.request_options import (
    ADDED_OPTIONS,
    DEFAULT_TASK,
    EFFECTIVE_LENGTH_RULE_ALIAS,
    NOT_RESULT_FIELDS,
    ReportedScorer,
)
from niah.core.request.run_options import RunOptions
from niah.core.request.task_options import TaskOptions, lift_task_options, options_model


class RunRequest(RunOptions):
    """A needle-in-a-haystack run, in the harness's vocabulary: its options and its task's."""

    task_options: SerializeAsAny[TaskOptions] = Field(
        default_factory=TaskOptions, validate_default=True
    )

    @field_validator("task")
    @classmethod
    def _check_task(cls, value: str) -> str:
        options_model(value)  # a registered task, or the tasks there are
        return value

    @field_validator("task_options", mode="before")
    @classmethod
    def _options_of_the_task(cls, value: Any, info: ValidationInfo) -> Any:
        """The task's own model validates its options (a task refused: nothing to check)."""
        if "task" not in info.data:
            return TaskOptions()
        model = options_model(info.data["task"])
        if isinstance(value, TaskOptions):
            if type(value) is model:
                return value
            value = value.model_dump(exclude_unset=True)
        return model.model_validate(value)

    @model_validator(mode="before")
    @classmethod
    def _task_options_by_name(cls, data: Any) -> Any:
        """The harness's flat names: each task option under its own name, as a field's."""
        return lift_task_options(data, cls.model_fields) if isinstance(data, dict) else data

    @model_serializer(mode="wrap")
    def _flat(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Dumped flat, as it is read: the task's options beside the run's (stored runs too)."""
        fields: dict[str, Any] = handler(self)
        options = fields.pop("task_options", None) or {}
        return fields | options

    @model_validator(mode="after")
    def _check_options_together(self) -> RunRequest:
        check_options_together(self, self.task_options)
        return self

    def scorer_name(self) -> ReportedScorer:
        """The scorer the run reports: the task's own ("task"), or the harness's (its options)."""
        return self.task_options.reported_scorer(self)

    def canonical_json(self, haystack_fingerprint: str = "") -> str:
        """What determines the run's results, in a stable form.

        The expanded grid rather than how it was written ([1000, 2000] and min/max/2
        are the same run), the haystack's content rather than its name, and none of
        the options that change only bookkeeping.
        """
        unused = NOT_RESULT_FIELDS | self._unused_options()
        fields = {k: v for k, v in self.model_dump(mode="json").items() if k not in unused}
        if self.is_certify() and "effective_length_rule" in fields:
            # Certify runs were named by the rule under its old name: their IDs stand.
            fields[EFFECTIVE_LENGTH_RULE_ALIAS] = fields.pop("effective_length_rule")
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
        # Options added since runs were first named: unset, they name nothing.
        unused = {name for name in ADDED_OPTIONS if getattr(self, name) is None}
        options = self.task_options
        unused |= {name for name in options.added_options if getattr(options, name) is None}
        if self.task == DEFAULT_TASK:
            unused.add("task")
        if self.samples_per_cell == 1:
            unused.add("samples_per_cell")
        if not self.is_certify():
            unused |= {
                "certify_threshold",
                "certify_max_tokens",
                "certify_max_usd",
                "certify_max_seconds",
            }
        return unused

    def run_id(self, haystack_fingerprint: str = "") -> str:
        """A deterministic run ID: the same request on the same haystack names the same run.

        That is what makes a retried dispatch and a rerun reuse answered cells.
        """
        canonical = self.canonical_json(haystack_fingerprint)
        return f"run-{hashlib.sha256(canonical.encode()).hexdigest()[:16]}"

    def request_key(self, haystack_fingerprint: str = "") -> str:
        """The run ID this request would have without its firing: what a sentinel asks.

        Two of a sentinel's runs with the same key asked the same prompts (the same
        options and haystack), so their samples pair; an option added to the service
        later, left unset, changes no key (as it changes no run ID).
        """
        unfired = self.model_copy(update={"sentinel": None, "scheduled_at": None})
        return unfired.run_id(haystack_fingerprint)


# What ``RunRequest.run_id`` names: anything else names no run.
RUN_ID_PATTERN = re.compile(r"run-[0-9a-f]{16}")
