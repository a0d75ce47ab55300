"""The run request's checks that span options: what no single field's validator can see.

Each error names the options it is about, since it is the user's error message
(a 400 from the dispatcher, a line from the CLI). They read the run's own options and the
task's apart (``RunOptions``, ``TaskOptions``): the request that holds both validates with
them, so they cannot name its type.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from niah.catalog.tiers import offered_tiers, tier_refusal
from niah.core.request.request_options import NOLIMA_BASE_MAX_LENGTH, SINGLE_NEEDLE_OPTIONS
from niah.core.request.task_options import TaskOptions, options_model, task_names
from niah.settings import get_settings

if TYPE_CHECKING:
    from niah.core.request.run_options import RunOptions


def check_options_together(request: RunOptions, options: TaskOptions) -> None:
    """The checks that span options: ranges, the task's options, batch, the scorer."""
    if (
        request.context_lengths is None
        and request.context_lengths_min > request.context_lengths_max
    ):
        raise ValueError("context_lengths_min must not exceed context_lengths_max")
    if (
        request.document_depth_percents is None
        and request.document_depth_percent_min > request.document_depth_percent_max
    ):
        raise ValueError("document_depth_percent_min must not exceed document_depth_percent_max")
    check_task_options(request, options)
    if request.is_batch() and request.provider() != "gemini":
        raise ValueError(
            "execution: batch is Vertex AI's batch prediction, for gemini-* models; "
            f"{request.model_name} is served by the {request.provider()} provider: leave "
            "execution out (online)"
        )
    check_tier(request)
    check_certify(request)
    check_rule(request)
    check_axes(request, options)
    if request.sentinel is not None and request.is_certify():
        raise ValueError(
            "mode: a sentinel tests each run against the one before it sample by sample "
            "(the same length, depth and sample index); certify chooses its samples from "
            "its answers, so two runs share few: give the sentinel a grid (leave mode out)"
        )
    if (request.sentinel is None) != (request.scheduled_at is None):
        raise ValueError(
            "sentinel: a sentinel's run names both the sentinel and its firing's "
            "scheduled_at; start one with `niah sentinel run NAME`"
        )
    if (
        not request.dynamic_needle
        and not request.static_expected_answer()
        and not request.evaluator_model_name
    ):
        raise ValueError(
            "expected_answer: a static needle (dynamic_needle false) needs "
            "expected_answer, the text a right answer contains (scored exact), or "
            "evaluator_model_name, a judge"
        )
    if options.reported_scorer(request) in ("judge", "both") and not request.evaluator_model_name:
        raise ValueError(
            "scorer 'judge' needs evaluator_model_name (the judge model), or use scorer 'exact'"
        )
    if (
        not request.dynamic_needle
        and request.scorer in ("exact", "both")
        and not request.static_expected_answer()
    ):
        raise ValueError(
            "a static needle scored 'exact' needs expected_answer (the text the answer "
            "must contain); or set scorer to 'judge'"
        )


def check_tier(request: RunOptions) -> None:
    """A tier is Vertex's, for online calls of a model Google offers on it (at its endpoint)."""
    if request.tier is None:
        return
    if request.provider() != "gemini":
        raise ValueError(
            f"tier: {request.tier} is a Vertex AI pricing tier, for gemini-* models; "
            f"{request.model_name} is served by the {request.provider()} provider: leave "
            "tier out (standard)"
        )
    if request.is_batch():
        raise ValueError(
            f"tier: {request.tier} applies to online calls; execution batch has its own "
            "rate (half price): leave tier out, or execution out (online)"
        )
    refusal = tier_refusal(request.model_name, request.tier, get_settings().vertex_location)
    if refusal:
        offered = offered_tiers(request.model_name)
        fix = (
            f"use tier {' or '.join(offered)}" if len(offered) > 1 else "leave tier out (standard)"
        )
        raise ValueError(f"tier: {request.tier} refused: {refusal}; {fix}")


def check_task_options(request: RunOptions, options: TaskOptions) -> None:
    """The task's own checks, and the harness's needle options where the task takes none.

    Only options away from their defaults count: a stored spec holds every option.
    """
    fields = type(request).model_fields
    given = {
        name for name in request.model_fields_set if getattr(request, name) != fields[name].default
    }
    options.check(request)
    for name in sorted(given & set(SINGLE_NEEDLE_OPTIONS) - options.needle_options(request)):
        raise ValueError(
            f"{name} applies to task single; task {request.task} makes its own needles"
            + options.needle_options_hint
        )
    if request.scorer in ("judge", "both") and options.reported_scorer(request) == "task":
        raise ValueError(
            f"task {request.task} scores its own answers; the judge applies to task "
            "single (leave scorer out)"
        )


def check_certify(request: RunOptions) -> None:
    """What certify cannot do yet, refused with the fix: batch, repeats of its own.

    A task whose samples certify cannot draw by length refuses it itself (its options'
    ``check``).
    """
    if not request.is_certify():
        return
    if request.is_batch():
        raise ValueError(
            "mode: certify asks round by round, each round's answers choosing the next, "
            "which batch jobs (a day each) cannot serve; leave execution out (online)"
        )
    if request.samples_per_cell != 1:
        raise ValueError(
            "samples_per_cell: certify chooses how many samples each length needs; "
            "leave samples_per_cell out"
        )
    if len(request.lengths()) < 2:
        raise ValueError(
            "context_lengths: certify needs at least two candidate lengths to choose "
            "between; give more (e.g. context_lengths_min/max/num_intervals)"
        )
    # By value, not by whether it was given: a stored spec spells every default out.
    if (
        request.rule() == "nolima"
        and request.certify_threshold != type(request).model_fields["certify_threshold"].default
    ):
        raise ValueError(
            "certify_threshold: effective_length_rule nolima sets the threshold as 85 % of "
            "the base score; leave certify_threshold out (or use effective_length_rule ruler)"
        )


def check_rule(request: RunOptions) -> None:
    """NoLiMa's rule needs its base: a length of 1,000 tokens or less in the grid."""
    shortest = request.lengths()[0]
    if request.rule() == "nolima" and shortest > NOLIMA_BASE_MAX_LENGTH:
        raise ValueError(
            f"effective_length_rule: nolima judges each length against 85 % of the "
            f"model's mean at lengths of {NOLIMA_BASE_MAX_LENGTH:,} tokens or less (its "
            f"base), and the shortest length here is {shortest:,}: add a length of "
            f"{NOLIMA_BASE_MAX_LENGTH:,} or less to context_lengths, or leave "
            "effective_length_rule out (RULER's fixed 85.6 %)"
        )


def check_axes(request: RunOptions, options: TaskOptions) -> None:
    """Distractors and haystack order: refused where a task has nothing to imitate or shuffle.

    A task that imitates its needle only sometimes refuses the rest itself (``check``).
    """
    if request.distractors is not None and not options.takes_distractors:
        takers = [name for name in task_names() if options_model(name).takes_distractors]
        raise ValueError(
            f"distractors imitate a retrieval task's needle ({', '.join(takers)}); "
            f"task {request.task} has none: leave distractors out"
        )
    if request.haystack_order is not None and not options.takes_haystack_order:
        raise ValueError(
            f"haystack_order: task {request.task} makes its own context, not from a "
            "haystack, so it has no order to shuffle; leave haystack_order out"
        )
    axes = [
        name for name in ("distractors", "haystack_order") if len(getattr(request, name) or ()) > 1
    ]
    if axes and request.is_certify():
        raise ValueError(
            f"{axes[0]}: certify finds one effective length; with several values it would "
            f"need one per value: give {axes[0]} one value (a run each), or leave mode out"
        )
