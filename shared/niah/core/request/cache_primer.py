"""Whether a run's cache primer can pay: the prefix its cells share against the minimum.

Cache-aware dispatch sends the primer (``niah.core.request.grid.primer_cell``) alone and
the rest once it is answered, so their shared prefixes hit Vertex's implicit cache. The
cache serves no prefix shorter than the model's minimum (``niah.catalog.tiers.
cache_min_tokens``: 2,048 tokens, Gemini 4 Argon's 6,144). A primer whose prefix no other
cell can share that far buys nothing and holds the whole grid back for one call, so the
dispatcher sends none to Vertex, and the estimate prices the run as such.

The dispatcher decides before any prompt is built (it loads no tokenizer nor task), so
the shared prefix is bounded from above: the template's head, then the haystack up to
the needle's depth. A bound errs toward sending the primer: a run whose prefixes reach
the minimum is never denied one.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from niah.catalog.tiers import cache_min_tokens
from niah.core.request.grid import Cell
from niah.core.request.spec import RunRequest

# The most bytes a built-in template puts before the context (graphwalks' head, 1,105;
# pinned by tests/unit/test_cache_primer.py against every task's), and the room a
# question or answer lead put there may take. A byte of UTF-8 text is at most one token,
# as the estimate bounds the judge's prompt.
BUILTIN_HEAD_BYTES = 1_200
PLACEHOLDER_BYTES = 1_000
_HEAD_PLACEHOLDER = re.compile(r"\{(?:question|answer_lead)\}")


def head_tokens_at_most(template: str | None) -> int:
    """The most tokens a prompt can carry before its context, under ``template``.

    None: the run's task or provider chooses its own (``BUILTIN_HEAD_BYTES``).
    """
    if template is None:
        return BUILTIN_HEAD_BYTES
    head = template.split("{context}")[0]
    placeholders = len(_HEAD_PLACEHOLDER.findall(head))
    return len(_HEAD_PLACEHOLDER.sub("", head).encode()) + placeholders * PLACEHOLDER_BYTES


def shared_prefix_at_most(cells: Sequence[Cell], primer: Cell, *, head: int, buffer: int) -> int:
    """The most tokens any other cell's prompt shares with the primer's, from the start.

    A prompt is its head, then the haystack's share of ``context_length - buffer`` up to
    its first insertion, at its depth; two prompts share at most the shorter prefix.
    """

    def reach(cell: Cell) -> int:
        length = max(0, cell.context_length - buffer)
        return min(length, head + math.ceil(length * cell.depth_percent / 100))

    longest = max((reach(cell) for cell in cells if cell != primer), default=0)
    return min(longest, reach(primer))


def primer_pays(spec: RunRequest, cells: Sequence[Cell], primer: Cell) -> bool:
    """Whether another cell can share a prefix with ``primer`` the cache would serve.

    The minimum is Vertex's: another provider's cache is not bound by it (the local
    model's llama.cpp reuses whatever prefix its last prompt shares), so its runs keep
    their primer.
    """
    if spec.provider() != "gemini":
        return True
    shared = shared_prefix_at_most(
        cells,
        primer,
        head=head_tokens_at_most(spec.prompt_template),
        buffer=spec.final_context_length_buffer,
    )
    return shared >= cache_min_tokens(spec.model_name)
