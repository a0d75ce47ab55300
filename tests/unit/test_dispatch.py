import pytest

from niah.errors import RequestError
from niah.service.runs.dispatch import dispatch_run
from tests.fake_store import MemoryStore
from tests.fakes import MemoryBlobs, RecordingPublisher


def test_dispatch_records_the_run_and_publishes_every_cell(essay_blobs: MemoryBlobs) -> None:
    store, publisher = MemoryStore(), RecordingPublisher()
    result = dispatch_run(
        {
            "context_lengths_min": 1000,
            "context_lengths_max": 4000,
            "context_lengths_num_intervals": 4,
            "document_depth_percent_intervals": 5,
        },
        store=store,
        publisher=publisher,
        blobs=essay_blobs,
    )
    assert result.cells == result.published == 20
    run = store.get_run(result.run_id)
    assert run is not None and run["total"] == 20 and run["status"] == "running"
    assert len({m["cell_id"] for m in publisher.cells}) == 20


def test_a_repeated_request_names_the_same_run(essay_blobs: MemoryBlobs) -> None:
    store, publisher = MemoryStore(), RecordingPublisher()
    body = {"context_lengths": [1000], "document_depth_percents": [50]}
    first = dispatch_run(body, store=store, publisher=publisher, blobs=essay_blobs)
    again = dispatch_run(body, store=store, publisher=publisher, blobs=essay_blobs)
    assert first.run_id == again.run_id and first.created and not again.created
    store.update_run(first.run_id, {"status": "complete"})
    done = dispatch_run(body, store=store, publisher=publisher, blobs=essay_blobs)
    assert done.already_complete and done.published == 0
    # A label names the run for people, not what it measures: the same run, relabelled.
    assert store.runs[first.run_id]["label"] == "gemma-3-270m-local · single"
    labelled = dispatch_run(
        body | {"label": "  baseline "}, store=store, publisher=publisher, blobs=essay_blobs
    )
    assert labelled.run_id == first.run_id and labelled.published == 0
    assert store.runs[first.run_id]["label"] == "baseline"
    with pytest.raises(RequestError) as blank:
        dispatch_run(body | {"label": " "}, store=store, publisher=publisher, blobs=essay_blobs)
    assert blank.value.field == "label" and "not blank" in blank.value.message


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"context_lengths": [40_000]}, "context_lengths"),  # above the local model's limit
        (
            {"context_lengths_num_intervals": 100, "document_depth_percent_intervals": 100},
            "context_lengths",
        ),  # 10,000 cells, above the budget
        ({"haystack_dir": "nothing_here", "context_lengths": [1000]}, "haystack_dir"),
        (
            {"haystack_dir": "gs://someone-elses-bucket/texts", "context_lengths": [1000]},
            "haystack_dir",
        ),
    ],
)
def test_refused_requests_publish_and_write_nothing(
    essay_blobs: MemoryBlobs, body: dict[str, object], field: str
) -> None:
    store, publisher = MemoryStore(), RecordingPublisher()
    with pytest.raises(RequestError) as caught:
        dispatch_run(body, store=store, publisher=publisher, blobs=essay_blobs)
    assert caught.value.field == field
    assert publisher.cells == [] and store.runs == {}


def test_a_rerun_keeps_answers_retries_failures_and_publishes_only_the_rest(
    essay_blobs: MemoryBlobs,
) -> None:
    store, publisher = MemoryStore(), RecordingPublisher()
    body = {"context_lengths": [1000, 2000], "document_depth_percents": [0, 100]}
    first = dispatch_run(body, store=store, publisher=publisher, blobs=essay_blobs)
    ids = [m["cell_id"] for m in publisher.cells]
    store.record_cell(
        first.run_id, ids[0], {"status": "answered", "score": 10}, failed=False, shards=1
    )
    store.record_cell(
        first.run_id, ids[1], {"status": "failed", "score": None}, failed=True, shards=1
    )
    publisher.cells.clear()
    store.settle(first.run_id)
    # A client's retry while the run is going: only the missing cells go out again.
    retry = dispatch_run(body, store=store, publisher=publisher, blobs=essay_blobs)
    assert (retry.reused, retry.retried, retry.published) == (2, 0, 2)
    publisher.cells.clear()
    # A resume (or a rerun of a finished run) retries the failed cell too.
    again = dispatch_run(body, store=store, publisher=publisher, blobs=essay_blobs, resume=True)
    assert (again.reused, again.retried, again.published) == (1, 1, 3)
    assert sorted(m["cell_id"] for m in publisher.cells) == sorted(ids[1:])
    run = store.get_run(first.run_id)
    assert run is not None and (run["done"], run["failed"]) == (1, 0)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"context_lengths": [50]}, "context_lengths"),
        ({"model_name": "gpt-4o", "context_lengths": [1000]}, "model_name"),
        ({"model_name": "gemini-pro-ultra-max", "context_lengths": [1000]}, "model_name"),
        ({"model_name": "gemini-3.8-flash", "context_lengths": [2_000_000]}, "context_lengths"),
    ],
)
def test_unknown_models_and_impossible_lengths_are_refused(
    essay_blobs: MemoryBlobs, body: dict[str, object], field: str
) -> None:
    with pytest.raises(RequestError) as caught:
        dispatch_run(body, store=MemoryStore(), publisher=RecordingPublisher(), blobs=essay_blobs)
    assert caught.value.field == field


def test_the_sweep_republishes_only_the_missing_cells_of_stalled_runs(
    essay_blobs: MemoryBlobs,
) -> None:
    import datetime as dt

    from niah.service.runs.sweep import sweep_stalled_runs

    store, publisher = MemoryStore(), RecordingPublisher()
    body = {"context_lengths": [1000, 2000], "document_depth_percents": [0, 100]}
    stalled = dispatch_run(body, store=store, publisher=publisher, blobs=essay_blobs)
    fresh = dispatch_run({**body, "seed": 1}, store=store, publisher=publisher, blobs=essay_blobs)
    ids = [m["cell_id"] for m in publisher.cells[:4]]
    store.record_cell(stalled.run_id, ids[0], {"status": "answered"}, failed=False, shards=1)
    now = dt.datetime.now(dt.UTC)
    store.settle(stalled.run_id, minutes=60)
    store.runs[stalled.run_id]["updated_at"] = now - dt.timedelta(minutes=40)
    store.runs[fresh.run_id]["updated_at"] = now
    publisher.cells.clear()
    # The stall window alone (the quiet rule, tests/unit/test_sweep_quiet.py, held back).
    result = sweep_stalled_runs(
        store=store, publisher=publisher, stalled_after_seconds=1800, quiet_after_seconds=7200
    )
    assert result == {
        "runs_swept": 1,
        "runs_lost": 0,
        "cells_republished": 3,
        "cells_handed_on": 0,
    }
    assert sorted(m["cell_id"] for m in publisher.cells) == sorted(ids[1:])


def test_a_huge_grid_is_refused_before_it_is_expanded(monkeypatch: pytest.MonkeyPatch) -> None:
    from niah.core.request.spec import RunRequest
    from niah.service.runs.admission_checks import check_budget

    def no_expansion(self: RunRequest) -> list:
        raise AssertionError("the grid was expanded before it was counted")

    monkeypatch.setattr(RunRequest, "cells", no_expansion)
    spec = RunRequest(context_lengths_num_intervals=1000, document_depth_percent_intervals=1000)
    with pytest.raises(
        RequestError, match=r"the grid has 101000 cells \(1000 lengths x 101 depths\)"
    ):
        check_budget(spec)


def test_a_deployment_sets_the_default_model_and_refuses_a_local_model_it_lacks(
    essay_blobs: MemoryBlobs, monkeypatch: pytest.MonkeyPatch
) -> None:
    from niah.settings import get_settings

    monkeypatch.setenv("NIAH_DEFAULT_MODEL_NAME", "gemini-3.8-flash")
    monkeypatch.setenv("NIAH_LOCAL_MODEL_AVAILABLE", "false")
    get_settings.cache_clear()
    store = MemoryStore()
    body = {"context_lengths": [1000], "document_depth_percents": [50]}
    result = dispatch_run(body, store=store, publisher=RecordingPublisher(), blobs=essay_blobs)
    run = store.get_run(result.run_id)
    assert run is not None and run["spec"]["model_name"] == "gemini-3.8-flash"
    with pytest.raises(RequestError, match="no local model") as caught:
        dispatch_run(
            {**body, "model_name": "gemma-3-270m-local"},
            store=MemoryStore(),
            publisher=RecordingPublisher(),
            blobs=essay_blobs,
        )
    assert caught.value.field == "model_name"
