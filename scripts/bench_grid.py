"""A run's prompts as the worker builds them, primer first: what the cache benchmarks send.

The default haystack (the essays ``scripts/setup.sh`` unpacks) stands in the bucket; each
prompt comes from the worker's own ``prepare_call``, so a benchmark measures the
prompts a run really sends.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
ESSAYS = REPO / ".local" / "haystacks" / "paul_graham_essays"


def essay_blobs() -> Any:
    """A bucket holding only the default haystack, as the worker finds it."""
    sys.path.insert(0, str(REPO))
    from tests.fakes import MemoryBlobs

    blobs = MemoryBlobs()
    for path in sorted(ESSAYS.glob("*.txt")):
        blobs.objects[f"haystacks/paul_graham_essays/{path.name}"] = path.read_bytes()
    return blobs


def grid_prompts(grid: dict[str, Any], default_template: str) -> list[tuple[str, str]]:
    """Every cell's (ID, prompt) for run request ``grid``; the dispatcher's primer first."""
    from niah.core.request.spec import RunRequest
    from niah.core.runs import RunRecord
    from niah.models.tokenizer import get_tokenizer
    from niah.service.cells.prompt import prepare_call
    from niah.service.messages import primer_message
    from niah.tasks import make_sample

    blobs = essay_blobs()
    spec = RunRequest.model_validate(grid)
    primer = primer_message(RunRecord("bench", spec))
    assert primer is not None, "cache-aware dispatch picks a primer for every grid here"
    cells = sorted(spec.cells(), key=lambda cell: cell.cell_id != primer["cell_id"])
    tokenizer = get_tokenizer()
    return [
        (
            cell.cell_id,
            prepare_call(
                spec,
                cell,
                make_sample(spec, cell),
                default_template=default_template,
                tokenizer=tokenizer,
                blobs=blobs,
            ).built.prompt,
        )
        for cell in cells
    ]
