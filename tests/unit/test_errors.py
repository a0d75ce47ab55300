"""Every error class lives in niah.errors, with its kind; one list of retryable statuses."""

from __future__ import annotations

import ast
import inspect

import niah.errors as errors
from niah.errors import RETRYABLE_STATUS_CODES, NiahError, RetryableError, classify_http_error
from tests import REPO


def test_no_module_but_errors_defines_an_exception_class() -> None:
    defined_elsewhere = []
    for path in sorted((REPO / "shared" / "niah").rglob("*.py")):
        if path.name == "errors.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            bases = [ast.unparse(b) for b in getattr(node, "bases", [])]
            if isinstance(node, ast.ClassDef) and any(
                b.endswith(("Error", "Exception")) for b in bases
            ):
                defined_elsewhere.append(f"{path.name}:{node.name}")
    assert defined_elsewhere == []


def test_every_error_class_has_its_kind() -> None:
    classes: list[type[NiahError]] = [
        c for _, c in inspect.getmembers(errors, inspect.isclass) if issubclass(c, NiahError)
    ]
    assert len(classes) == 32  # a new error class belongs here, with its kind
    for cls in classes:
        assert isinstance(cls.kind, str) and cls.kind, cls
    kinds = {cls.__name__: cls.kind for cls in classes}
    assert kinds["ContextTooShortError"] == "cell"
    assert kinds["PromptOverLimitError"] == "cell"  # as Vertex's own 400 over the limit
    assert kinds["UnreadableLineError"] == "unreadable_line"  # one batch line, not its job
    assert kinds["HaystackError"] == "run"
    assert kinds["ConfigurationError"] == "run"
    assert kinds["StoredRunError"] == "run"  # no cell of a run this version cannot read runs
    assert kinds["RequestError"] == "request"
    # Refusals the user fixes too, each with its own HTTP status.
    assert (errors.ForbiddenError.kind, errors.ForbiddenError.status) == ("forbidden", 403)
    assert (errors.UnknownSentinelError.kind, errors.UnknownSentinelError.status) == (
        "unknown_sentinel",
        404,
    )
    assert (errors.SpendRefusedError.kind, errors.SpendRefusedError.status) == (
        "spend_refused",
        429,
    )
    # The dispatcher's other answers (niah.service.routes.dispatcher), by status.
    assert [
        cls.status
        for cls in (
            errors.MethodNotAllowedError,
            errors.RunNotFoundError,
            errors.RunCompleteError,
            errors.ServiceUnavailableError,
        )
    ] == [405, 404, 409, 503]
    assert kinds["DifferentModelsError"] == "comparison"  # refused as compare's others are
    assert kinds["StoreUnavailableError"] == "store_unavailable"
    assert kinds["CloudUnavailableError"] == "cloud_unavailable"
    assert kinds["WorkerDiedError"] == "worker_died"
    assert kinds["CloudRefusedError"] == "cloud_refused"
    assert kinds["CloudAccessError"] == "cloud_access"
    assert kinds["BatchJobError"] == "batch_job"
    assert kinds["UnreadableLineError"] == "unreadable_line"


def test_each_retryable_status_is_classified_retryable() -> None:
    assert set(RETRYABLE_STATUS_CODES) == {408, 429, 500, 502, 503, 504}
    for code in RETRYABLE_STATUS_CODES:
        assert isinstance(classify_http_error(code, "X", "try later"), RetryableError)
