"""A cell's prompt: its sample, the prompt built token-exact, its turns and output budget.

One sequence for every path that asks a model about a cell (the worker's online call,
a batch run's input line, the benches), so a batch run asks exactly what an online
run asks; and the model's count of the prompt, refused over its input limit before
anything is paid.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass

from niah.catalog.models import input_limit, prompt_limit, prompts_fitted
from niah.core.interfaces import BlobInfo, BlobStore, Provider, Tokenizer, Turn
from niah.core.prompts.answer_budget import CallBudget, call_budget
from niah.core.prompts.count_fit import CountFit, fit_by_count
from niah.core.prompts.generated_context import build_generated_prompt
from niah.core.prompts.haystack_files import haystack_prefix
from niah.core.prompts.haystack_order import shuffled_haystack
from niah.core.prompts.haystack_tokens import HaystackTokens, load_haystack
from niah.core.prompts.mrcr_files import read_row
from niah.core.prompts.prompt_builder import BuiltPrompt, build_prompt
from niah.core.prompts.texts import split_transcript
from niah.core.prompts.token_fit import TokenCountRatio, needs_exact_count, refuse_over_limit
from niah.core.request.axes import at_variant, haystack_order
from niah.core.request.grid import Cell
from niah.core.request.spec import RunRequest
from niah.errors import HaystackError
from niah.memo import ProcessCache
from niah.service.messages import CellTask
from niah.tasks import Sample, make_sample
from niah.tasks.mrcr import published_sample


def cell_sample(task: CellTask, spec: RunRequest, cell: Cell, blobs: BlobStore) -> Sample:
    """The cell's sample: made by its task, or read from a published MRCR v2 row."""
    if task.source_file is not None and task.row is not None:
        row = read_row(blobs, task.source_file, task.row, task.span)
        if int(float(row.get("context_len") or -1)) != task.context_length:
            raise HaystackError(
                f"row {task.row} of {task.source_file} is not the one the run was made with "
                "(its token count differs); was the file replaced? Start a new run"
            )
        return published_sample(row)
    return make_sample(spec, cell)


def reads_haystack(sample: Sample) -> bool:
    """Whether the sample's prompt is built from the run's haystack (not given, not generated)."""
    return sample.prompt is None and sample.context_maker is None


def run_haystack(
    spec: RunRequest, tokenizer: Tokenizer, blobs: BlobStore, haystack_files: list[BlobInfo] | None
) -> HaystackTokens:
    """The run's haystack, tokenized (once per process: ``load_haystack`` keeps it)."""
    prefix = haystack_prefix(spec.haystack_dir, blobs.bucket)
    return load_haystack(blobs, prefix, tokenizer, haystack_files)


# Each kind of fitted prompt's first build, found once per process by fitting a probe
# (``prepare_call``): at most this many kinds kept, the oldest forgotten first.
FIT_STARTS: ProcessCache[Hashable, int] = ProcessCache(max_entries=4096)


def fits_by_count(spec: RunRequest) -> bool:
    """Whether the run's haystack prompts are fitted to the model's ``countTokens``."""
    return prompts_fitted(spec.model_name, spec.provider())


def cell_turns(built: BuiltPrompt, sample: Sample) -> tuple[Turn, ...] | None:
    """A conversational sample's prompt as its turns (MRCR); None for one prompt."""
    return split_transcript(built.prompt) if sample.conversational else None


@dataclass(frozen=True)
class PreparedCall:
    """A cell's prompt ready to send: built, as turns where conversational, its budget."""

    built: BuiltPrompt
    turns: tuple[Turn, ...] | None
    budget: CallBudget
    fit: CountFit | None = None  # how it was fitted to the model's count, where it was


def prepare_call(
    spec: RunRequest,
    cell: Cell,
    sample: Sample,
    *,
    default_template: str,
    tokenizer: Tokenizer,
    blobs: BlobStore,
    haystack_files: list[BlobInfo] | None = None,
    token_ratio: TokenCountRatio | None = None,
    count_tokens: Callable[[str], int] | None = None,
) -> PreparedCall:
    """The cell's prompt, token-exact in ``tokenizer``, with its turns and output budget.

    The one sequence of online calls, batch lines and benches. A sample that comes with
    its prompt (a published MRCR row) is sent as it is. ``haystack_files``: the run's
    listing; without it the haystack's prefix is listed. ``token_ratio``: how the model
    counts the haystack; a haystack prompt is then built to the local length the model
    counts as the cell's (``niah.core.prompts.token_fit``). ``count_tokens``: the model's
    count, where a haystack prompt is fitted to it (``niah.core.prompts.count_fit``),
    starting from the ratio's length.
    """
    spec = at_variant(spec, cell.variant)
    template = sample.template or spec.prompt_template or default_template
    if sample.prompt is not None:
        built = BuiltPrompt(sample.prompt, sample.prompt, sample.prompt_tokens or 0, 0, ())
    elif sample.context_maker is not None:  # the task's own context: no haystack read
        built = build_generated_prompt(
            tokenizer,
            sample.context_maker,
            template=template,
            question=sample.question,
            answer_lead=sample.answer_lead,
            context_length=cell.context_length,
            buffer_tokens=spec.final_context_length_buffer,
        )
    else:
        target = cell.context_length - spec.final_context_length_buffer
        haystack = run_haystack(spec, tokenizer, blobs, haystack_files)
        if haystack_order(spec) == "shuffled":  # its sentences in the run's seeded order
            haystack = shuffled_haystack(haystack, spec.seed)

        def build(local_tokens: int) -> BuiltPrompt:
            return build_prompt(
                haystack,
                tokenizer,
                template=template,
                insertions=sample.insertions,
                question=sample.question,
                answer_lead=sample.answer_lead,
                context_length=local_tokens,
            )

        first = token_ratio.local_length(target) if token_ratio else target
        if count_tokens is not None:
            counter = count_tokens

            def probe() -> CountFit:
                """The kind's prompt without needle or question, fitted as a cell is.

                A run's cells at one length differ in their needles and question, a few
                tokens of thousands: started from the run's ratio, a fitted cell took two
                builds and two countTokens calls, started from where the probe fits
                mostly one. The probe depends on the kind alone, so a cell's prompt is
                the same whichever cells the process built before it (a start learnt
                from the last cell would make it depend on their order). Only a first
                build: each cell's own count still decides.
                """

                def plain(local_tokens: int) -> BuiltPrompt:
                    return build_prompt(haystack, tokenizer, template=template, insertions=(),
                                        question="", context_length=local_tokens)  # fmt: skip

                return fit_by_count(plain, counter, target_tokens=target, first_local_tokens=first)

            # The haystack's key names its files' content, and its order where shuffled.
            kind = (spec.model_name, haystack.key, template, first, target)
            first = FIT_STARTS.get_or_make(kind, lambda: probe().built.planned_prompt_tokens)
            fit = fit_by_count(build, count_tokens, target_tokens=target, first_local_tokens=first)
            budget = call_budget(spec, sample.answer_tokens)
            return PreparedCall(fit.built, cell_turns(fit.built, sample), budget, fit)
        built = build(first)
    return PreparedCall(built, cell_turns(built, sample), call_budget(spec, sample.answer_tokens))


def count_before_call(
    spec: RunRequest,
    cell: Cell,
    built: BuiltPrompt,
    ratio: TokenCountRatio | None,
    provider: Provider,
    budget: CallBudget,
    *,
    fitted_count: int | None = None,
) -> int | None:
    """The model's count of the prompt where it is asked for or needed; refuse it over the limit.

    Gemini only: the local model counts with the tokenizer the prompt was built in, and
    an OpenAI-compatible server has no count endpoint (its replies' usage is kept).
    ``ratio``: the run's, where the prompt was fitted by it. ``fitted_count``: the
    ``countTokens`` the prompt was fitted by (``prepare_call``): not asked again. Raises
    ``PromptOverLimitError`` before anything is paid.
    """
    if spec.provider() != "gemini":
        return provider.count_tokens(built.prompt) if spec.count_tokens_check else None
    limit = prompt_limit(spec.model_name, budget.max_output_tokens)
    expected = (
        ratio.expected_model_tokens(built.planned_prompt_tokens)
        if ratio is not None
        else built.planned_prompt_tokens
    )
    counted = fitted_count
    if counted is None and needs_exact_count(
        fitted=ratio is not None,
        expected_model_tokens=expected,
        limit=limit,
        asked=spec.count_tokens_check,
    ):
        counted = provider.count_tokens(built.prompt)
    known = input_limit("gemini", spec.model_name)  # a Gemini model: asked above
    refuse_over_limit(
        spec.model_name,
        context_length=cell.context_length,
        model_tokens=counted if counted is not None else expected,
        limit=limit,
        counted=counted is not None,
        shared_output=budget.max_output_tokens if known != limit else None,
    )
    return counted
