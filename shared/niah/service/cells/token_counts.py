"""A run's token count ratio, measured once and kept on the run (``niah.core.prompts.token_fit``).

Measured by the worker, not the dispatcher: the dispatcher imports no tokenizer (it
cold-starts light), and the worker has the haystack tokenized already. Every cell of
the run needs the same ratio, so the first to need it measures it (one free
``countTokens`` call) and writes it on the run; an instance that read the run before
that measures it once itself (the same sample gives the same counts) and writes the
same values. One write per instance per run, not per cell.
"""

from __future__ import annotations

from typing import Any

from niah.core.interfaces import Provider, ResultStore, Tokenizer
from niah.core.prompts.haystack_tokens import HaystackTokens
from niah.core.prompts.token_fit import TokenCountRatio, measure_ratio
from niah.core.request.spec import RunRequest
from niah.logs import log
from niah.memo import ProcessCache

# By run (ID and creation stamp): what this process measured and wrote on it.
_measured: ProcessCache[tuple[str, str], TokenCountRatio] = ProcessCache()


def run_token_ratio(
    run_id: str,
    spec: RunRequest,
    recorded: dict[str, Any] | None,
    *,
    stamp: str | None,
    haystack: HaystackTokens,
    tokenizer: Tokenizer,
    provider: Provider,
    store: ResultStore,
) -> TokenCountRatio:
    """The run's ratio: as recorded on it, else measured now (once per process) and recorded."""
    if recorded:
        return TokenCountRatio.from_record(recorded)

    def measure() -> TokenCountRatio:
        ratio = measure_ratio(haystack, tokenizer, provider, max(spec.lengths()))
        record = ratio.record(spec.model_name)
        store.update_run(run_id, {"token_count": record})
        log("token count ratio recorded", run_id=run_id, **record)
        return ratio

    return _measured.get_or_make((run_id, stamp or ""), measure)
