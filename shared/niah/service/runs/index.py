"""Keeping the bucket's runs index (``reports/index.html`` and ``index.json``) current.

Each report rebuilds the whole index from the run documents after its own run is
marked complete, and writes each file only if it is still at the generation read
before the rebuild (Cloud Storage's ``ifGenerationMatch``). Two reports finishing
together cannot lose each other: whichever writes last read the run documents after
the other's write, so after both runs were complete; a writer that lost the race
rebuilds and tries again.
"""

from __future__ import annotations

import random
import time

from niah.core.interfaces import BlobStore, ResultStore
from niah.core.pages.run_index import (
    INDEX_FIELDS,
    INDEX_HTML,
    INDEX_JSON,
    build_index,
    index_json,
    render_index_page,
)
from niah.core.runs import listed_runs
from niah.errors import NiahError
from niah.logs import log
from niah.settings import REPORTS_PREFIX

# Rebuilds after a lost race before giving up (the next report, or `niah index`, mends it).
INDEX_ATTEMPTS = 6


def refresh_index(store: ResultStore, blobs: BlobStore, attempts: int = INDEX_ATTEMPTS) -> bool:
    """Rebuild and write the runs index; False if it kept losing races or failed.

    Never raises: a report is done whether or not the index could follow it.
    """
    prefix = REPORTS_PREFIX
    json_name, html_name = prefix + INDEX_JSON, prefix + INDEX_HTML
    try:
        for attempt in range(1, attempts + 1):
            json_generation = blobs.generation(json_name)
            html_generation = blobs.generation(html_name)
            index = build_index(listed_runs(store.index_runs(INDEX_FIELDS)))
            if blobs.write(
                json_name,
                index_json(index),
                content_type="application/json",
                if_generation=json_generation,
            ) and blobs.write(
                html_name,
                render_index_page(index).encode(),
                content_type="text/html; charset=utf-8",
                if_generation=html_generation,
            ):
                log("runs index written", runs=len(index["runs"]), attempt=attempt)
                return True
            # Another report wrote it meanwhile: rebuild from what is stored now.
            time.sleep(random.uniform(0.05, 0.2) * attempt)
    except NiahError as error:
        log("runs index not written", severity="WARNING", error=str(error))
        return False
    log("runs index not written: it kept changing", severity="WARNING", attempts=attempts)
    return False
