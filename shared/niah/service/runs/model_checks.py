"""The model a run request names, checked against the catalog before anything is paid.

Which models (known, served, not retired, a text model), what thinking each takes, and
the warnings a run on it carries. Split from ``niah.service.runs.admission_checks``, whose
``check_request`` runs these with the rest, on the one catalog entry it resolved.
"""

from __future__ import annotations

from niah.catalog.availability import notes_of, refusal_of
from niah.catalog.models import (
    LOCAL_MODEL,
    ModelInfo,
    find_model,
    model_notice_of,
    provider_for_model,
)
from niah.catalog.names import is_gemini_name, not_a_text_model
from niah.core.prompts.answer_budget import budget_warning
from niah.core.request.spec import RunRequest
from niah.core.results.certify_run import unreachable_warning
from niah.errors import RequestError
from niah.settings import get_settings


def check_model(spec: RunRequest, model: ModelInfo | None) -> None:
    """Refuse models no provider of this deployment can serve, and impossible thinking.

    ``model``: the catalog's entry for ``spec.model_name`` (None: one it does not know).
    """
    provider = spec.provider()
    if provider == "local" and spec.model_name != LOCAL_MODEL:
        raise RequestError("model_name", f"the local provider serves only {LOCAL_MODEL}")
    if provider == "local" and not get_settings().local_model_available:
        raise RequestError(
            "model_name",
            f"this deployment has no local model (deploy with LOCAL_MODEL=1 for {LOCAL_MODEL}); "
            "use a gemini-* model",
        )
    for field_name, name in (
        ("model_name", spec.model_name),
        ("evaluator_model_name", spec.evaluator_model_name),
    ):
        if name and not_a_text_model(name):
            raise RequestError(
                field_name,
                f"{name} is not a text model (an image, speech, live, embedding or other "
                "variant): a needle test needs a Gemini text model such as gemini-3.8-flash",
            )
    if provider == "gemini" and not is_gemini_name(spec.model_name):
        raise RequestError(
            "model_name",
            f"{spec.model_name!r} is not a Gemini model ID: give the bare ID (e.g. "
            "gemini-3.8-flash); the project and location are the deployment's",
        )
    if provider == "openai_compatible" and not get_settings().openai_base_url:
        raise RequestError(
            "model_name",
            f"unknown model {spec.model_name!r}: use a gemini-* model, {LOCAL_MODEL}, or "
            "model_provider openai_compatible on a deployment with NIAH_OPENAI_BASE_URL set",
        )
    for name in filter(None, [spec.evaluator_model_name]):
        if name == LOCAL_MODEL:
            raise RequestError(
                "evaluator_model_name",
                f"{LOCAL_MODEL} is a 270M base model: it cannot grade answers (it gives no "
                "score); use a Gemini model as the judge, or scorer exact",
            )
        if provider_for_model(name) == "gemini" and not is_gemini_name(name):
            raise RequestError(
                "evaluator_model_name",
                f"{name!r} is not a Gemini model ID: give the bare ID (e.g. gemini-3.8-flash)",
            )
        if provider_for_model(name) == "openai_compatible" and not get_settings().openai_base_url:
            raise RequestError("evaluator_model_name", f"unknown judge model {name!r}")
    check_thinking(spec, model)
    check_not_retired("model_name", model, allowed=spec.allow_retired)
    if spec.evaluator_model_name:
        judge = find_model(spec.evaluator_model_name)
        check_not_retired("evaluator_model_name", judge, allowed=spec.allow_retired)


def check_not_retired(field_name: str, known: ModelInfo | None, *, allowed: bool) -> None:
    """Refuse a model Vertex AI has retired, naming its date and Google's replacement.

    ``known``: the model's catalog entry (None: not listed, so never retired). Every
    call to it would be a 404. ``allowed`` (the request's ``allow_retired``) lets a
    project that still has access run it; the run's notes then say so.
    """
    refusal = refusal_of(known)
    if refusal and not allowed:
        raise RequestError(
            field_name,
            f"{refusal}; to call it anyway (a project that still has access), set allow_retired",
        )


def check_thinking(spec: RunRequest, known: ModelInfo | None) -> None:
    """Refuse a thinking setting the catalog says the model cannot take.

    Gemini 2.5 takes ``thinking_budget``, Gemini 3 ``thinking_level`` (the API refuses
    both in one request); each within its model's range.
    """
    if spec.thinking_budget is not None and spec.thinking_level is not None:
        raise RequestError(
            "thinking_level", "give thinking_budget (Gemini 2.5) or thinking_level (Gemini 3)"
        )
    if known is None or known.provider != "gemini":
        return
    thinking = known.thinking
    if known.assumed and spec.thinking_budget not in (None, -1):
        raise RequestError(
            "thinking_budget",
            f"{known.name} is taken for a Gemini 3 model, which sets thinking by "
            "thinking_level, not by a budget",
        )
    if known.assumed:
        return  # its levels are not published here: the API says if one is refused
    if spec.thinking_level is not None and spec.thinking_level not in thinking.levels:
        takes = (
            f"takes thinking_level {', '.join(thinking.levels)}"
            if thinking.levels
            else "has no thinking_level"
            + (" (it takes thinking_budget)" if thinking.control == "budget" else "")
        )
        raise RequestError("thinking_level", f"{known.name} {takes}")
    budget = spec.thinking_budget
    if budget is None or budget == -1:
        return
    if thinking.control == "none":
        raise RequestError(
            "thinking_budget", f"{known.name} does not think; leave thinking_budget out"
        )
    if thinking.control == "level":
        raise RequestError(
            "thinking_budget",
            f"{known.name} sets thinking by thinking_level ({', '.join(thinking.levels)}), "
            "not by a budget",
        )
    if budget == 0 and not thinking.can_disable:
        raise RequestError(
            "thinking_budget",
            f"{known.name} cannot turn thinking off; use {thinking.budget_min} to "
            f"{thinking.budget_max}, or -1 for dynamic",
        )
    if budget != 0 and not thinking.budget_min <= budget <= thinking.budget_max:
        raise RequestError(
            "thinking_budget",
            f"{known.name} takes a thinking budget of {thinking.budget_min} to "
            f"{thinking.budget_max} tokens (or -1 for dynamic"
            + (", 0 for off)" if thinking.can_disable else ")"),
        )


def model_warnings(spec: RunRequest, *, model: ModelInfo | None = None) -> list[str]:
    """What a user should know before paying: models unknown or retiring, budgets tight.

    A tight budget is a call's output budget, or a certification's that cannot pass any
    length.

    ``model``: as for ``check_budget``.
    """
    model = model or spec.catalog_model()
    entries = [(spec.model_name, model)]
    if spec.evaluator_model_name:
        entries.append((spec.evaluator_model_name, find_model(spec.evaluator_model_name)))
    unknown = [notice for name, known in entries if (notice := model_notice_of(name, known))]
    notes = notes_of(*(known for _, known in entries))
    tight = budget_warning(spec, model=model)
    starved = unreachable_warning(spec)
    return [*unknown, *notes, *(warning for warning in (tight, starved) if warning)]
