"""Which model answered a run's samples, beside the model the run asked for.

Google routes some model IDs to others (a deprecated ID to its successor, an alias to
what it points at now) and names the model that answered in each reply's
``modelVersion``. A cell keeps it as ``model_version`` (and the reply's ID as
``response_id``); this module says what a run's cells were answered by, and whether
that is the model the run asked for. "The same model" is the catalog's rule
(``niah.catalog.models.same_model``): a pinned version of the asked family is the
asked model, another family is not. Cells stored before these fields, and replies
that carry none (the local model), say nothing either way.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from niah.catalog.models import same_model
from niah.core.interfaces import ModelAnswer
from niah.core.runs import RunRecord

# The cell's fields: the model that answered, as the API named it, and the reply's ID.
MODEL_VERSION, RESPONSE_ID = "model_version", "response_id"


def answer_identity(answer: ModelAnswer) -> dict[str, str]:
    """What a cell keeps of who answered: the fields the reply carried, no empty ones."""
    fields = {MODEL_VERSION: answer.model_version, RESPONSE_ID: answer.response_id}
    return {name: value for name, value in fields.items() if value}


def served_versions(cells: Sequence[dict[str, Any]]) -> dict[str, int]:
    """How many samples each model version answered, the most first, then by name."""
    counted = Counter(str(c[MODEL_VERSION]) for c in cells if c.get(MODEL_VERSION))
    return dict(sorted(counted.items(), key=lambda item: (-item[1], item[0])))


def answered_by_another(asked: str, served: dict[str, int]) -> bool:
    """Whether any sample was answered by a model other than ``asked`` (another family).

    A run that names no model has nothing to differ from.
    """
    return bool(asked) and any(not same_model(asked, version) for version in served)


def versions_text(served: dict[str, int]) -> str:
    """The versions that answered: one by name, several with their samples each."""
    if len(served) == 1:
        return next(iter(served))
    return ", ".join(f"{name} ({n} sample{'s' * (n != 1)})" for name, n in served.items())


def answered_by_text(asked: str, served: dict[str, int]) -> str | None:
    """The sentence "asked X, answered by Y" when another model answered; else None."""
    if not answered_by_another(asked, served):
        return None
    return f"asked {asked}, answered by {versions_text(served)}"


def model_shown(asked: str, served: dict[str, int]) -> str:
    """The run's model as a page shows it: "X", or "X (answered by Y)" when they differ."""
    if not answered_by_another(asked, served):
        return asked
    return f"{asked} (answered by {versions_text(served)})"


def runs_answered_by_others(runs: Sequence[tuple[RunRecord, list[dict[str, Any]]]]) -> str:
    """Of (run, cells) pairs, each run answered by a model it did not ask for; "" if none.

    A comparison names each run by the model it asked for: its scores would be
    credited to a model that did not produce them.
    """
    found = []
    for run, cells in runs:
        text = answered_by_text(run.model, served_versions(cells))
        if text is not None:
            found.append(f"run {run.run_id} {text}")
    return "; ".join(found)
