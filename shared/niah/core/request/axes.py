"""Run axes beyond length and depth: distractors and the haystack's order (Context Rot).

Chroma's "Context Rot" study (research.trychroma.com/context-rot, read 2026-11-28)
varies two things besides length: distractors near the needle (none, one, four) and the
haystack's order (coherent or shuffled). A run gives each option one value (every cell
has it) or several (an axis: the grid is made once per value). Each cell of an axis
carries its *variant*, a short code of its values (``d4``, ``shuffled``,
``d4.shuffled``), in its ID and its message; the worker asks the task with the run's
options at that variant (``at_variant``), so no task knows about axes.

A request's two axis options are read through ``AxisOptions``: the request's type is
built on this module's, so it cannot name that type back.
"""

from __future__ import annotations

import itertools
from typing import Annotated, Any, Literal, Protocol, TypeVar

from pydantic import AfterValidator, BaseModel, BeforeValidator

HaystackOrder = Literal["coherent", "shuffled"]
HAYSTACK_ORDERS: tuple[HaystackOrder, ...] = ("coherent", "shuffled")
# The options that may be an axis, in the order their codes are joined.
AXIS_OPTIONS = ("distractors", "haystack_order")
# Context Rot placed up to four distractors; ten leaves room without crowding the needle.
MAX_DISTRACTORS = 10
NO_VARIANT = ""


class AxisOptions(Protocol):
    """What the axes read of a run request: the two options that may be an axis."""

    @property
    def distractors(self) -> list[int] | None:
        """Distractors per sample: one count, several (an axis), or None (none)."""

    @property
    def haystack_order(self) -> list[HaystackOrder] | None:
        """The haystack's order: one, both (an axis), or None (coherent)."""


Request = TypeVar("Request", bound=BaseModel)


def axis_values(spec: AxisOptions, option: str) -> list[Any]:
    """The values an axis option takes in this run (its default alone when unset)."""
    given = getattr(spec, option)
    if given:
        return list(given)
    return [0] if option == "distractors" else ["coherent"]


def run_axes(spec: AxisOptions) -> list[tuple[str, list[Any]]]:
    """The options with more than one value, with their values: the run's extra axes."""
    return [
        (option, values) for option in AXIS_OPTIONS if len(values := axis_values(spec, option)) > 1
    ]


def _code(option: str, value: Any) -> str:
    return f"d{value}" if option == "distractors" else str(value)


def variants(spec: AxisOptions) -> list[str]:
    """Every variant of the run, in the axes' order; ``[""]`` for a run without axes."""
    axes = run_axes(spec)
    if not axes:
        return [NO_VARIANT]
    names = [option for option, _ in axes]
    return [
        ".".join(_code(name, value) for name, value in zip(names, combination, strict=True))
        for combination in itertools.product(*(values for _, values in axes))
    ]


def variant_values(variant: str) -> dict[str, Any]:
    """A variant's code read back: ``"d4.shuffled"`` is 4 distractors, shuffled."""
    values: dict[str, Any] = {}
    for part in filter(None, variant.split(".")):
        if part[0] == "d" and part[1:].isdigit():
            values["distractors"] = int(part[1:])
        elif part in HAYSTACK_ORDERS:
            values["haystack_order"] = part
        else:
            raise ValueError(f"{variant!r} is not a variant of distractors or haystack_order")
    return values


def variant_label(variant: str) -> str:
    """A variant for people: "4 distractors · shuffled"."""
    parts = []
    for option, value in variant_values(variant).items():
        if option == "distractors":
            parts.append(f"{value} distractor{'' if value == 1 else 's'}")
        else:
            parts.append(str(value))
    return " · ".join(parts)


def axes_label(spec: dict[str, Any]) -> str:
    """What a stored spec sets of the two options, for its run's name: " · 4 distractors"."""
    parts = []
    if counts := spec.get("distractors"):
        parts.append(
            f"{counts[0]} distractor{'' if counts[0] == 1 else 's'}"
            if len(counts) == 1
            else f"distractors {'/'.join(str(c) for c in counts)}"
        )
    if orders := spec.get("haystack_order"):
        parts.append("/".join(orders))
    return "".join(f" · {part}" for part in parts)


def at_variant(spec: Request, variant: str) -> Request:
    """The run's options as one variant's cells see them: each axis at its one value."""
    if not variant:
        return spec
    values = variant_values(variant)
    return spec.model_copy(update={option: [value] for option, value in values.items()})


def distractor_count(spec: AxisOptions) -> int:
    """Distractors per sample of a run (or of one variant, ``at_variant``'s) without an axis."""
    values = axis_values(spec, "distractors")
    if len(values) > 1:
        raise ValueError("distractors is an axis of this run: ask at_variant(spec, variant)")
    return int(values[0])


def haystack_order(spec: AxisOptions) -> HaystackOrder:
    """The haystack's order of a run (or of one variant) without an axis."""
    values = axis_values(spec, "haystack_order")
    if len(values) > 1:
        raise ValueError("haystack_order is an axis of this run: ask at_variant(spec, variant)")
    order: HaystackOrder = values[0]
    return order


def _one_or_a_list(value: Any) -> Any:
    """One value is a list of one (JSON true is no count of distractors: left to fail)."""
    if value is None or isinstance(value, list | bool):
        return value
    return [value]


def _counts(value: list[int]) -> list[int] | None:
    if not value:
        raise ValueError("give at least one count (0, 1, 4), or leave it out")
    if any(not 0 <= count <= MAX_DISTRACTORS for count in value):
        raise ValueError(f"each count must be between 0 and {MAX_DISTRACTORS}")
    counts = sorted(set(value))
    return None if counts == [0] else counts  # none is the default: the same run


def _orders(value: list[HaystackOrder]) -> list[HaystackOrder] | None:
    if not value:
        raise ValueError("give coherent, shuffled or both, or leave it out")
    orders = [order for order in HAYSTACK_ORDERS if order in value]
    return None if orders == ["coherent"] else orders


# The request's two axis options: one value or a list, sorted, the default alone None
# (so a run that spells the default out is the run that leaves it out).
Distractors = Annotated[list[int], BeforeValidator(_one_or_a_list), AfterValidator(_counts)]
HaystackOrders = Annotated[
    list[HaystackOrder], BeforeValidator(_one_or_a_list), AfterValidator(_orders)
]
