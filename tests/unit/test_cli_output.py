"""What ``niah status``, ``list`` and ``run`` print for a person: no None, plurals, fixes.

The commands read a store in memory here (the stack's Firestore in
``tests/integration/test_cli_stack.py``); the closed pipe and the missing credentials
are real subprocesses, as a user meets them.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from niah.cli import results, run, show
from niah.cli.main import main
from niah.core.request.spec import RunRequest
from niah.core.results.summary import summarize
from niah.core.runs import RunRecord
from tests import HEAVY, REPO
from tests.fake_store import MemoryStore
from tests.fakes import json_server


def cell(length: int, depth: float, **fields: Any) -> dict[str, Any]:
    """A stored sample, scored right unless ``fields`` say otherwise."""
    return {
        "context_length": length,
        "depth_percent": depth,
        "status": "answered",
        "outcome": "correct",
        "score": 10,
        "exact_score": 10,
        "task_score": 1.0,
        **fields,
    }


def stored(
    cells: list[dict[str, Any]],
    *,
    task: str = "single",
    reported: bool = True,
    rule: str | None = None,
) -> MemoryStore:
    """A store holding run ``run-t`` and its cells, with the report's figures if reported.

    ``rule``: the run's effective_length_rule (RULER's when None).
    """
    store = MemoryStore()
    run_doc: dict[str, Any] = {
        "model": "gemini-2.5-flash",
        "spec": {"task": task} | ({"effective_length_rule": rule} if rule else {}),
        "status": "complete" if reported else "running",
        "total": len(cells),
        "done": sum(c.get("status") == "answered" for c in cells),
        "failed": sum(c.get("status") == "failed" for c in cells),
        "scorer": "exact" if task == "single" else "task",
        "created_at": dt.datetime(2026, 11, 26, tzinfo=dt.UTC),
    }
    store.runs["run-t"] = run_doc
    store.cells["run-t"] = {
        c.get("cell_id") or f"L{c['context_length']:08d}-D{round(c['depth_percent'] * 1000):06d}": c
        for c in cells
    }
    if reported:
        summary = summarize(
            RunRecord.from_document(run_doc | {"run_id": "run-t"}), store.list_cells("run-t")
        )
        run_doc |= {
            key: summary[key]
            for key in ("mean_score", "measures", "outcomes", "retrieved_share",
                        "prompt_token_deviation")
        } | {key: summary[key] for key in ("mrcr", "variants", "variant_differences")
             if key in summary}  # fmt: skip
        run_doc["report"] = {
            "heatmap_uri": "gs://niah-local/reports/run-t/heatmap.png",
            "html_url": "http://127.0.0.1:4443/download/storage/v1/b/niah-local/o/report.html",
        }
    return store


@pytest.fixture
def use_store(monkeypatch: pytest.MonkeyPatch) -> Any:
    def use(store: MemoryStore) -> None:
        for module in (results, show, run):
            monkeypatch.setattr(module, "result_store", lambda: store)

    monkeypatch.setenv("FIRESTORE_EMULATOR_HOST", "127.0.0.1:8471")
    from niah.settings import get_settings

    get_settings.cache_clear()
    yield use
    get_settings.cache_clear()


def status(capsys: pytest.CaptureFixture[str], *words: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exited:
        main(["status", "run-t", *words])
    out, err = capsys.readouterr()
    return int(exited.value.code or 0), out, err


def test_a_run_in_progress_says_what_is_not_determined_yet(
    capsys: pytest.CaptureFixture[str], use_store: Any
) -> None:
    use_store(stored([cell(1000, 50)], reported=False))
    code, out, _ = status(capsys)
    assert "None" not in out
    assert "of 1 cell\n" in out and "1 cell answered" in out
    assert "scores not determined yet (they are computed when the last cell is in)" in out
    assert "report (written when the last cell is in): " in out
    assert "Firestore (emulator): http://127.0.0.1:8471/v1/projects/" in out
    assert code == 0


def test_no_effective_length_is_said_with_why(
    capsys: pytest.CaptureFixture[str], use_store: Any
) -> None:
    missed = {"outcome": "wrong", "score": 1, "exact_score": 1, "task_score": 0.0}
    use_store(stored([cell(4000, 0, **missed), cell(8000, 0, **missed), cell(8000, 50)]))
    _, out, _ = status(capsys)
    assert "None" not in out
    # No mean reaches 85.6 %, but 8,000's one right of two (Wilson 9.45-90.5 %) might.
    assert (
        "effective length not determined: none by the means, but the 95 % intervals allow "
        "none to 8,000 (threshold 85.6 %, rule ruler: fixed, as in RULER; more samples "
        "per point narrow them)"
    ) in out
    assert "1 of 3 retrieved (33.3 %)" in out and "3 cells answered" in out
    # NoLiMa's rule over a base of 0 %: not "no length scored 0 % or more".
    use_store(stored([cell(1000, 0, **missed), cell(2000, 0, **missed)], rule="nolima"))
    _, out, _ = status(capsys)
    assert "effective length not determined (no length scored above 0 %; rule nolima:" in out


def test_a_scored_run_reads_in_full(capsys: pytest.CaptureFixture[str], use_store: Any) -> None:
    use_store(
        stored([cell(1000, 0), cell(1000, 100), cell(2000, 0), cell(2000, 100)], rule="nolima")
    )
    code, out, err = status(capsys)
    assert code == 0 and err == ""
    # A run without a label of its own is called "model · task".
    assert "\nrun run-t (gemini-2.5-flash · single): gemini-2.5-flash, task single" in out
    assert "mean score 10 (1-10), 4 of 4 retrieved (100.0 %)" in out
    # Two right samples a length: Wilson 34.2-100 %, which cannot place 2,000 above
    # NoLiMa's 85 % of the base (100 % at 1,000 tokens).
    assert "mean 100 % (95 %, one sample per grid point: 51-100 %)" in out
    assert (
        "mean per length: 1,000: 100 % (95 %, one sample per grid point: 34.2-100 %), "
        "2,000: 100 % (95 %, one sample per grid point: 34.2-100 %)"
    ) in out
    assert (
        "effective length not determined: 2,000 tokens by the means, but the 95 % intervals "
        "allow none to 2,000 (threshold 85 %, rule nolima: 85 % of the mean at lengths <= "
        "1,000 tokens; more samples per point narrow them)"
    ) in out
    assert "heatmap: gs://niah-local/reports/run-t/heatmap.png" in out
    assert "report: http://127.0.0.1:4443/" in out
    assert "None" not in out


def test_mrcr_has_its_own_measure_and_its_bins_as_a_table_in_bin_order(
    capsys: pytest.CaptureFixture[str], use_store: Any
) -> None:
    lengths = [150_000, 3000, 9000, 5000, 20_000, 6000]
    samples = [cell(n, 0, score=1.0) for n in lengths]
    for sample in samples:
        del sample["exact_score"]  # the single needle's check, not MRCR's
    store = stored(samples, task="mrcr")
    # Firestore hands maps back sorted by key: "128K-256K" before "<=4K".
    mrcr = store.runs["run-t"]["mrcr"]
    mrcr["bins"] = dict(sorted(mrcr["bins"].items()))
    use_store(store)
    _, out, _ = status(capsys)
    assert "retrieved" not in out
    assert "mean similarity 100 % (MRCR v2's score), 6 of 6 reproduced whole" in out
    # Beside it, what choosing one of the 8 requested replies at random scores.
    assert "; chance floor about 15 %: one of the 8 replies to the request asked about" in out
    assert "google-deepmind/eval_hub eval_hub/mrcr_v2/README.md" in out
    assert "{" not in out  # no Python dict
    rows = re.findall(r"^  (\S+)\s+([\d.-]+)\s+(\d+)$", out, flags=re.M)
    assert [name for name, _, _ in rows] == ["<=4K", "4K-8K", "8K-16K", "16K-32K", "128K-256K"]
    assert [int(n) for _, _, n in rows] == [1, 2, 1, 1, 1]
    assert "at 1M: not determined (no sample between 512K and 1M)" in out


@pytest.mark.parametrize(
    ("failure", "fix"),
    [
        (
            {"status": "failed", "outcome": "unscored", "score": None, "task_score": None,
             "error": {"kind": "run", "message": "403 PERMISSION_DENIED: Permission "
                       "'aiplatform.endpoints.predict' denied"}},
            "grant roles/aiplatform.user to niah-worker@niah-local.iam.gserviceaccount.com",
        ),
        (
            {"outcome": "truncated", "score": None, "task_score": None,
             "unscored_reason": "cut off at the output budget of 300 tokens (MAX_TOKENS: 0 "
             "answer tokens after 300 thinking tokens; the answer needs up to 60); raise "
             "max_output_tokens, or lower thinking_budget / thinking_level"},
            "fix: raise --max_output_tokens, or lower --thinking_budget / --thinking_level",
        ),
        (
            {"status": "failed", "outcome": "unscored", "score": None, "task_score": None,
             "error": {"kind": "run", "message": "no quota for this model (429 "
                       "RESOURCE_EXHAUSTED: limit: 0)"}},
            "ask for it (Google Cloud console, IAM & Admin > Quotas)",
        ),
    ],
)  # fmt: skip
def test_each_failure_reason_comes_with_its_fix(
    capsys: pytest.CaptureFixture[str],
    use_store: Any,
    monkeypatch: pytest.MonkeyPatch,
    failure: dict[str, Any],
    fix: str,
) -> None:
    monkeypatch.setenv("NIAH_PROJECT", "niah-local")
    use_store(stored([cell(1000, 0, **failure), cell(1000, 50)]))
    code, _, err = status(capsys)
    assert fix in err
    assert code in (3, 5)


def test_plurals_are_right_in_list_and_estimate(
    capsys: pytest.CaptureFixture[str], use_store: Any
) -> None:
    use_store(stored([cell(1000, 50)]))
    main(["list"])
    out = capsys.readouterr().out
    assert "None" not in out and "run-t" in out
    main(["run", "--context_lengths", "1000", "--document_depth_percents", "50",
          "--samples_per_cell", "2", "--estimate"])  # fmt: skip
    assert "2 cells (1 length x 1 depth x 2 samples)" in capsys.readouterr().out


def test_a_run_this_version_cannot_read_is_listed_as_such_and_its_status_says_why(
    capsys: pytest.CaptureFixture[str], use_store: Any
) -> None:
    """A later version's checks refuse a stored request: list goes on, status says why.

    Nothing stored changes.
    """
    store = stored([cell(1000, 50)])
    store.runs["run-old"] = {
        "model": "gemini-2.5-flash",
        "spec": {"task": "single", "context_lengths": [-5]},
        "status": "complete",
        "total": 4,
        "created_at": dt.datetime(2026, 11, 20, tzinfo=dt.UTC),
    }
    before = json.dumps(store.runs, default=str, sort_keys=True)
    use_store(store)
    main(["list", "--json"])
    runs = {r["run_id"]: r for r in json.loads(capsys.readouterr().out)}
    assert runs["run-t"]["status"] == "complete"
    old = runs["run-old"]
    assert (old["status"], old["task"], old["total"]) == ("unreadable", "single", 4)
    assert old["unreadable"] == (
        "context_lengths: each context length must be between 1 and 10000000 tokens"
    )
    main(["list"])
    lines = [line for line in capsys.readouterr().out.splitlines() if "run-old" in line]
    assert len(lines) == 1 and "unreadable" in lines[0]

    with pytest.raises(SystemExit) as exited:
        main(["status", "run-old"])
    said = str(exited.value.code)  # the one line niah prints on stderr as it exits
    assert len(said.splitlines()) == 1, said
    assert "StoredRunError: run run-old: its stored request" in said
    assert "(context_lengths: each context length" in said and "start the run again" in said
    assert json.dumps(store.runs, default=str, sort_keys=True) == before


# A subprocess's niah, reading a store in memory that holds many runs and a big grid:
# more output than a pipe holds, so the reader's going away is met mid-write.
MANY = """
import datetime as dt, sys
from niah.cli import results, show
from niah.cli.main import main
from niah.core.runs import RunRecord
from tests.fake_store import MemoryStore
from tests.fakes import json_server
store = MemoryStore()
for n in range(3000):
    store.runs[f"run-{n:05d}"] = {"model": "gemini-2.5-flash", "status": "complete",
        "total": 1, "done": 1, "created_at": dt.datetime(2026, 1, 1, tzinfo=dt.UTC)}
store.runs["run-big"] = {"model": "gemini-2.5-flash", "status": "running", "total": 14400}
store.cells["run-big"] = {
    f"L{length:08d}-D{depth:06d}": {"context_length": length, "depth_percent": depth / 1000,
        "status": "answered", "score": 10}
    for length in range(1000, 121000, 1000) for depth in range(0, 120000, 1000)}
for module in (results, show):
    module.result_store = lambda: store
main(sys.argv[1:])
"""


@pytest.mark.parametrize("words", [["list", "--limit", "3000"], ["status", "run-big"]])
def test_a_closed_pipe_ends_quietly_with_exit_0(words: list[str]) -> None:
    piped = subprocess.run(
        ["bash", "-c", '"$0" -c "$1" "${@:2}" | head -1; exit "${PIPESTATUS[0]}"',
         sys.executable, MANY, *words],
        capture_output=True, text=True, timeout=120, cwd=REPO,
        env={**os.environ, "FIRESTORE_EMULATOR_HOST": "127.0.0.1:9"},
    )  # fmt: skip
    assert (piped.returncode, piped.stderr) == (0, "")
    assert len(piped.stdout.splitlines()) == 1


@HEAVY
def test_missing_credentials_are_one_line_with_the_fix(tmp_path: Path) -> None:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.endswith("_EMULATOR_HOST") and key != "GOOGLE_APPLICATION_CREDENTIALS"
    } | {
        "HOME": str(tmp_path),  # no gcloud application-default credentials there
        "CLOUDSDK_CONFIG": str(tmp_path / "gcloud"),
        "GCE_METADATA_HOST": "127.0.0.1:9",  # no metadata server to ask
        "GCE_METADATA_IP": "127.0.0.1:9",
    }
    for words in (["list"], ["status", "run-x"]):
        result = subprocess.run(
            [sys.executable, "-m", "niah.cli", *words],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=REPO,
            env=env,
        )
        assert result.returncode == 1
        assert result.stderr.splitlines() == [
            "niah: no Google Cloud credentials. For the local stack: scripts/local_up.sh, then "
            "`source .local/env` in this shell; for Google Cloud: "
            "`gcloud auth application-default login`"
        ]


def test_a_deployed_run_links_the_firestore_console_and_the_report(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from niah.cli.backend import where_to_look
    from niah.settings import get_settings

    for name in ("FIRESTORE_EMULATOR_HOST", "STORAGE_EMULATOR_HOST"):
        monkeypatch.delenv(name, raising=False)
    get_settings.cache_clear()
    try:
        lines = where_to_look("run-t", None, project="my-proj", bucket="my-proj-niah")
    finally:
        get_settings.cache_clear()
    assert lines == [
        # As scripts/start_run.sh prints it.
        "Firestore: https://console.cloud.google.com/firestore/databases/-default-/data/panel/"
        "runs/run-t?project=my-proj",
        "report (written when the last cell is in): "
        "https://storage.cloud.google.com/my-proj-niah/reports/run-t/report.html",
    ]


def test_niah_run_url_prints_the_console_link_and_where_the_report_will_be(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from niah.settings import get_settings

    for name in ("FIRESTORE_EMULATOR_HOST", "STORAGE_EMULATOR_HOST"):
        monkeypatch.delenv(name, raising=False)
    get_settings.cache_clear()
    # A deployed dispatcher's answer to a run request (functions/dispatcher/main.py).
    answer = {"run_id": "run-abc", "cells": 1, "project": "p1",
              "report_prefix": "gs://p1-niah/reports/run-abc/"}  # fmt: skip
    try:
        with json_server(202, answer) as url:
            main(["run", "--context_lengths", "1000", "--document_depth_percents", "50",
                  "--url", url])  # fmt: skip
    finally:
        get_settings.cache_clear()
    assert capsys.readouterr().out.splitlines() == [
        "run run-abc: 1 cell",
        "Firestore: https://console.cloud.google.com/firestore/databases/-default-/data/panel/"
        "runs/run-abc?project=p1",
        "report (written when the last cell is in): "
        "https://storage.cloud.google.com/p1-niah/reports/run-abc/report.html",
    ]


def test_latest_names_the_most_recent_run_wherever_a_run_id_goes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 24: the README's quickstart says `niah status latest`, pasted as it is."""
    import argparse

    from niah.cli import backend

    class Store:
        def __init__(self, runs: list[dict[str, Any]]) -> None:
            self.runs = runs

        def recent_runs(self, limit: int) -> list[dict[str, Any]]:
            return self.runs[:limit]

    monkeypatch.setattr(backend, "result_store", lambda: Store([{"run_id": "run-new"}]))
    args = argparse.Namespace(run_id="latest", resume=None)
    backend.name_latest(args)
    assert args.run_id == "run-new"
    listed = argparse.Namespace(run_ids=["run-old", "latest"])
    backend.name_latest(listed)
    assert listed.run_ids == ["run-old", "run-new"]
    kept = argparse.Namespace(run_id="run-x")
    monkeypatch.setattr(backend, "result_store", lambda: pytest.fail("no store read"))
    backend.name_latest(kept)
    assert kept.run_id == "run-x"
    monkeypatch.setattr(backend, "result_store", lambda: Store([]))
    with pytest.raises(SystemExit, match="no runs yet"):
        backend.name_latest(argparse.Namespace(run_id="latest"))


def test_the_means_per_length_are_in_length_order_as_firestore_may_not_keep_them() -> None:
    """Seen in the demo: a map read back from Firestore listed 3,000 before 1,000."""
    run = {
        "outcomes": {"correct": 4},
        "measures": {
            "mean": 100.0,
            "by_length": {"3000": 100.0, "1000": 100.0, "4000": 100.0, "2000": 100.0},
            "by_length_interval": {"1000": [34.2, 100.0]},
            "effective_length": {},
        },
    }
    (line,) = [
        line
        for line in results.measures_lines(RunRecord.from_document(run, "run-m"))
        if line.startswith("mean per length")
    ]
    assert line == (
        "mean per length: 1,000: 100 % (95 %, samples taken as independent: 34.2-100 %), "
        "2,000: 100 %, 3,000: 100 %, 4,000: 100 %"
    )


def test_status_calls_a_run_by_its_label_in_text_and_json(
    capsys: pytest.CaptureFixture[str], use_store: Any
) -> None:
    store = stored([cell(1000, 0)])
    store.runs["run-t"]["label"] = "Flash, long prompts"
    use_store(store)
    _, out, _ = status(capsys)
    assert "\nrun run-t (Flash, long prompts): gemini-2.5-flash, task single" in out
    _, out, _ = status(capsys, "--json")
    assert json.loads(out)["label"] == "Flash, long prompts"


def test_resuming_a_relabelled_run_keeps_its_label(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, use_store: Any
) -> None:
    store = stored([cell(1000, 0)])
    # The spec as the service stores it: the request validated and dumped whole.
    spec = RunRequest(context_lengths=[1000], label="first").model_dump(mode="json")
    store.runs["run-t"] |= {"spec": spec}
    store.runs["run-t"]["label"] = "renamed"
    use_store(store)
    posted: list[dict[str, Any]] = []

    def submit(url: str, payload: dict[str, Any]) -> dict[str, Any]:
        posted.append(payload)
        return {"run_id": "run-t", "cells": 1}

    monkeypatch.setattr(run, "submit", submit)
    main(["run", "--resume", "run-t", "--url", "http://127.0.0.1:9/"])
    # The stored spec's label would relabel the run back to "first"; the rest is sent as
    # stored, so the run ID is the same.
    assert posted == [{key: value for key, value in spec.items() if key != "label"}]
    assert RunRequest.model_validate(posted[0]).run_id() == RunRequest.model_validate(spec).run_id()


def test_a_failed_report_is_said_with_why_and_how_to_ask_again(
    capsys: pytest.CaptureFixture[str], use_store: Any
) -> None:
    store = stored([cell(1000, 50)], reported=False)
    store.runs["run-t"] |= {
        "status": "report_failed",
        "report_error": {"kind": "report_render", "reason": "ValueError: bad\ndata"},
    }
    use_store(store)
    code, out, _ = status(capsys)
    assert "run run-t: report_failed, 1 answered" in out
    assert "report failed: report_render: ValueError: bad data. The cells are kept" in out
    assert "niah run --resume run-t" in out
    assert "scores not determined: the report failed" in out and "not determined yet" not in out
    assert code == 0


def test_a_run_with_an_axis_reads_each_value_and_its_difference_never_a_pooled_mean(
    capsys: pytest.CaptureFixture[str], use_store: Any
) -> None:
    missed = {"outcome": "wrong", "score": 1, "exact_score": 1, "task_score": 0.0}
    cells = [
        cell(
            length,
            50,
            variant=variant,
            sample=k,
            cell_id=f"L{length}-S{k}-X{variant}",
            **({} if variant == "d0" else missed),
        )
        for variant in ("d0", "d4")
        for length in (1000, 2000)
        for k in range(3)
    ]
    use_store(stored(cells))
    _, out, _ = status(capsys)
    assert "None" not in out
    assert "2 values of the axis, each scored apart (below)" in out
    assert "\nmean " not in out and "area under the curve" not in out  # nothing pooled
    assert (
        "per value of the axis (effective length rule ruler: fixed, as in RULER; "
        "differences from 0 distractors, paired by length, depth and sample):"
    ) in out
    # Each value's interval clustered by its 2 grid points (t on 1 degree of freedom):
    # wide, and a paired difference over 2 points cannot be significant.
    assert (
        "  0 distractors: mean 100 % (95 %, clustered by grid point, 2 points: 1.22-100 %); "
        "effective length not determined"
    ) in out
    assert (
        "  4 distractors: mean 0 % (95 %, clustered by grid point, 2 points: 0-98.8 %); "
        "effective length none; -100 points"
    ) in out
    assert "6 pairs in 2 grid points: no significant difference" in out
