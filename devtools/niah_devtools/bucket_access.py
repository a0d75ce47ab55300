"""Who may read and who may write where in the data bucket: the table infra/ is held to.

The emulators have no IAM, so an account that can write more than its function writes
shows nowhere but in a security review, and one that can write less shows as a 403 in
production. The prefixes are the code's own: niah.settings' ``*_PREFIX`` constants (no
setting can move them: the IAM conditions name them) and
the token cache's ``CACHE_PREFIX``. Which function writes under which prefix follows the
``blobs.write`` calls of the code each function's entry point reaches:

- worker (``handle_cell``): the haystack's token cache (niah.core.prompts.haystack_tokens), the
  cell's prompt and a whole long answer (``CONTEXTS_PREFIX``), an answer the store
  refused (``KEPT_ANSWERS_PREFIX``), and a batch run's input, manifests, line claims
  and ingest markers (``BATCHES_PREFIX``, niah.service.batch.submit and batch_markers);
- dead-letter handler (``handle_dead_letter``): an answer kept again when the store
  still refuses it (``KEPT_ANSWERS_PREFIX``, through ``store_cell``);
- report (``handle_report``): each run's heatmap, page and summary, and the runs index
  (``REPORTS_PREFIX``, niah.service.reports.render and
  niah.service.runs.index);
- Vertex AI's service agent: a batch job's predictions beside its input
  (``BATCHES_PREFIX``), through the project-wide role Google names for it
  (``PROJECT_WIDE``; infra/iam.tf says why it is not narrowed);
- the dispatcher and the sweep write nothing there.

tests/deploy/test_bucket_access.py checks every planned storage grant against this.
"""

from __future__ import annotations

from niah.core.prompts.haystack_tokens import CACHE_PREFIX
from niah.settings import BATCHES_PREFIX, CONTEXTS_PREFIX, KEPT_ANSWERS_PREFIX, REPORTS_PREFIX

# The account (google_service_account.runs' key, or vertex_agent) -> where it writes.
WRITES: dict[str, frozenset[str]] = {
    "worker": frozenset({CACHE_PREFIX, CONTEXTS_PREFIX, KEPT_ANSWERS_PREFIX, BATCHES_PREFIX}),
    "dead_letter": frozenset({KEPT_ANSWERS_PREFIX}),
    "report": frozenset({REPORTS_PREFIX}),
    "vertex_agent": frozenset({BATCHES_PREFIX}),
}

# The accounts that read (and list) the whole bucket: haystacks, the tokenizer model,
# caches, kept answers, batch output, the runs index's generations.
READERS = frozenset({"dispatcher", "worker", "dead_letter", "report"})

# Predefined roles that hold Cloud Storage object permissions although their name is not
# roles/storage.*: roles/aiplatform.serviceAgent holds storage.objects.create, delete,
# get, list and update (iann0036/iam-dataset, gcp/roles/aiplatform.serviceAgent.json,
# read 2026-12-04).
STORAGE_HOLDING_ROLES = frozenset({"roles/aiplatform.serviceAgent"})

# The one project-wide grant that reaches the bucket, accepted knowingly: Vertex AI's
# service agent holds the role Google grants it (infra/iam.tf: without it a batch job is
# refused). It covers every prefix the agent writes.
PROJECT_WIDE = {"vertex_agent": "roles/aiplatform.serviceAgent"}

# Every account of ours a storage grant may name; the sweep reads and writes no object.
ACCOUNTS = frozenset({*WRITES, *READERS, "sweep"})
