"""Why cells failed or went unscored, and what the user does about each.

``niah status`` groups the cells by reason (``summary.failure_reasons``); each group
gets one fix, in the command line's words. The reasons are the worker's
(``errors.classify_http_error``, ``scoring.truncated_reason``), so the fixes follow
their wording.
"""

from __future__ import annotations

import re
from typing import Any

from niah.cli.run_options import in_cli_words
from niah.settings import get_settings

# The worker's service account (infra/iam.tf: account_id "niah-${each.key}", key "worker").
WORKER_ACCOUNT = "niah-worker@{project}.iam.gserviceaccount.com"


def fix_for(cell: dict[str, Any], run_id: str) -> str:
    """What to do about the reason ``cell`` failed, or was not scored."""
    error = cell.get("error") or {}
    text = f"{error.get('kind', '')} {error.get('message', '')}".lower()
    resume = f"`niah run --resume {run_id}` retries the failed cells, keeping the answered ones"
    if error:
        if re.search(r"\b403\b|permission", text):
            account = WORKER_ACCOUNT.format(project=get_settings().project)
            return (
                f"grant roles/aiplatform.user to {account} (the worker's service account): "
                f"gcloud projects add-iam-policy-binding {get_settings().project} "
                f"--member=serviceAccount:{account} --role=roles/aiplatform.user; then {resume}"
            )
        if re.search(r"\b401\b|unauthenticated", text):
            return (
                "the worker's credentials were refused: check its service account exists and "
                f"is the functions' (infra/iam.tf); then {resume}"
            )
        if "no quota" in text:
            return (
                "the project has no quota for this model: ask for it (Google Cloud console, "
                f"IAM & Admin > Quotas) or pick another --model_name; then {resume}"
            )
        if re.search(r"\b404\b|not found", text):
            return (
                "the model is not served to this project in this location: check --model_name "
                f"and NIAH_VERTEX_LOCATION; then {resume}"
            )
        if "input limit" in text:
            return "give --context_lengths within the model's input limit"
        if "context" in text and ("too short" in text or "cannot hold" in text):
            return "give longer --context_lengths: the prompt and the needle must fit"
        return resume
    reason = str(cell.get("unscored_reason") or "")
    if cell.get("outcome") == "truncated":
        # The reason ends with its fix, in the request's field names.
        fix = reason.rpartition("; ")[2] if "; " in reason else reason
        if "max_output_tokens" not in fix:
            return f"{fix}: a longer budget will not help; another model or --thinking_level may"
        return in_cli_words("", fix)
    if reason.startswith("blocked"):
        return (
            "nothing to fix: the model's safety filters answered, and a blocked answer never "
            "counts as a miss"
        )
    return (
        f"{resume}, or look at the cells with `niah export {run_id} --format csv --out cells.csv`"
    )
