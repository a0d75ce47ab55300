"""``variable_tracking``: RULER's chains of assignments, traced across the context (VT).

``num_chains`` chains of ``VAR ABCDE = 12345`` then ``num_hops`` lines ``VAR FGHIJ = VAR
ABCDE``, ..., each chain's lines in order at seeded places through the haystack; the
question names the first chain's value and asks for every variable that ends up holding
it: the chain's ``num_hops + 1`` names. Multi-hop tracing (co-reference) over the whole
context, as NVIDIA/RULER ``scripts/data/synthetic/variable_tracking.py`` makes it (read
2026-11-26 at c3f5e3b): five upper-case letters a name, five-digit values, RULER's
template and answer prefix (``scripts/data/synthetic/constants.py``), scored by RULER's
recall (``string_match_all``). RULER's ``vt`` runs on its noise haystack
(``haystack_dir`` ``noise``); any haystack works.

Where this differs from RULER, and why: each line goes after a sentence end, as RULER
places them in its essay haystack (``"VAR ... ."``), because the one prompt builder
places every insertion that way; chains get distinct values, so no question has two
answers; RULER's one-shot example before the prompt is left out (it costs a tenth of a
4K prompt and RULER's instruction names the task already); the answer prefix loses its
trailing space (a base model then starts its answer with its own space token).
"""

from __future__ import annotations

import itertools
import random
import string

from pydantic import Field

from niah.core.prompts.prompt_builder import Insertion
from niah.core.request.grid import Cell
from niah.core.request.run_options import RunOptions
from niah.core.request.spec import RunRequest
from niah.core.request.task_options import TaskOptions
from niah.tasks.base import LISTED_ITEM, Sample, Task, Verdict, recall_verdict, sample_rng

# RULER's template and answer prefix for variable tracking, in its words.
TEMPLATE = (
    "Memorize and track the chain(s) of variable assignment hidden in the following text."
    "\n\n{context}\nQuestion: {question} Answer: {answer_lead}"
)
QUESTION = "Find all variables that are assigned the value {value} in the text above."
ANSWER_LEAD = (
    "According to the chain(s) of variable assignment in the text above, {count} variables "
    "are assigned the value {value}, they are:"
)
NAME_LETTERS = 5
# RULER draws np.random.randint(10000, 99999): five digits, 99999 excluded.
VALUE_RANGE = (10_000, 99_998)
# A variable name in an answer: its five letters.
VARIABLE_BYTES = NAME_LETTERS


def variable_names(rng: random.Random, count: int) -> list[str]:
    """``count`` distinct names of five upper-case letters."""
    names: list[str] = []
    while len(names) < count:
        name = "".join(rng.choices(string.ascii_uppercase, k=NAME_LETTERS))
        if name not in names:
            names.append(name)
    return names


def chain_lines(names: list[str], value: str) -> list[str]:
    """One chain written out: its value assigned to the first name, then name to name."""
    lines = [f"VAR {names[0]} = {value}"]
    lines += [f"VAR {after} = VAR {before}" for before, after in itertools.pairwise(names)]
    return lines


class VariableTrackingOptions(TaskOptions):
    """RULER's VT options, under RULER's names (synthetic.yaml's ``num_chains``, ``num_hops``)."""

    num_chains: int = Field(
        default=1, ge=1, le=20, description="variable_tracking: chains of assignments (RULER: 1)"
    )
    num_hops: int = Field(
        default=4,
        ge=1,
        le=50,
        description="variable_tracking: assignments after each chain's value (RULER: 4)",
    )

    def answer_bytes(self, request: RunOptions) -> int:
        """The asked chain's variables, listed."""
        return (self.num_hops + 1) * (VARIABLE_BYTES + LISTED_ITEM)


class VariableTracking(Task[VariableTrackingOptions]):
    """RULER's VT: ``num_chains`` chains of ``num_hops`` hops; the first chain is asked."""

    name = "variable_tracking"
    options = VariableTrackingOptions

    def sample(self, spec: RunRequest, cell: Cell) -> Sample:
        """Seeded names and values; each chain's lines in order at seeded depths."""
        options = self.options_of(spec)
        rng = sample_rng(spec.seed, cell, self.name)
        per_chain = options.num_hops + 1
        chain_count = options.num_chains
        names = variable_names(rng, per_chain * chain_count)
        values = rng.sample(range(VALUE_RANGE[0], VALUE_RANGE[1] + 1), chain_count)
        chains = [names[i * per_chain : (i + 1) * per_chain] for i in range(chain_count)]
        insertions: list[Insertion] = []
        for chain, value in zip(chains, values, strict=True):
            # Depths below 100 (100 appends at the end), sorted: the chain reads in order.
            depths = sorted(rng.uniform(0, 99.9) for _ in chain)
            lines = chain_lines(chain, str(value))
            insertions += [
                Insertion(f" {line}.", depth) for line, depth in zip(lines, depths, strict=True)
            ]
        asked = str(values[0])
        return Sample(
            insertions=tuple(insertions),
            question=QUESTION.format(value=asked),
            expected=tuple(chains[0]),
            answer_lead=ANSWER_LEAD.format(count=per_chain, value=asked),
            details={"value": asked, "chains": chains},
            template=None if spec.prompt_template else TEMPLATE,
        )

    def score(self, sample: Sample, answer: str) -> Verdict:
        """RULER's recall: the share of the chain's names the answer holds."""
        return recall_verdict(answer, sample.expected)
