"""The README stays short, every link in it and in docs/ resolves, and no command rots.

Every command of every fenced ``sh`` block in README.md and docs/ is accounted for
below: run by a named test (the quickstarts on a stack, the estimates here, the deploy
scripts with fake tools), or listed with why no test can run it here (a Google project,
an hour of benchmarks). A new command that is neither fails this test.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from niah_devtools.docs_figures import EACH, FIGURES, block, cited, missing_keys, rewrite
from niah_devtools.docs_pictures import PICTURES
from tests.cli_inprocess import niah
from tests.docs_commands import PAGES, REPO, every_command, quickstart

README = REPO / "README.md"

# (pattern a command must match whole, what runs it): "test FILE::NAME" names the test
# that runs the command (checked to exist), "here" is this module, "not run: ..." why not.
ACCOUNTED: list[tuple[str, str]] = [
    (r"scripts/test\.sh", "not run: it is the test suite itself"),
    (
        r"scripts/demo\.sh",
        "not run: 5 minutes of the suite's 20; its steps (set-up, the stack, niah run --wait, "
        "report, export) are the quickstart's, run by tests/integration/test_quickstart.py",
    ),
    (r"scripts/local_up\.sh|source \.local/env|scripts/local_down\.sh", "quickstart"),
    (r"niah (wait|status|report|export) latest.*|niah list|curl -s -X POST .*", "quickstart"),
    (
        r"niah run --context_lengths 1000 2000 --document_depth_percents 0 50 100 --wait",
        "quickstart",
    ),
    (r"niah run (?!.*gs://).*--estimate", "here"),
    (
        r"niah plan .*",
        "test tests/unit/test_plan_cli.py::test_the_documented_plan_prints_what_the_page_shows",
    ),
    (
        r"niah killswitch (status|lift)",
        "test tests/integration/test_limits_stack.py::"
        "test_a_budget_alert_stops_new_runs_until_an_operator_lifts_the_switch",
    ),
    (
        r"niah cancel RUN_ID|niah run --resume RUN_ID",
        "test tests/integration/test_cancel_stack.py::"
        "test_cancel_stops_an_online_run_mid_flight_and_resume_finishes_it",
    ),
    (r"niah run --task (?!passphrase )\w+ .*--wait", "here, with --estimate for --wait"),
    (
        r"niah run --task passphrase .*--wait",
        "test tests/unit/test_adding_a_task.py::test_the_page_s_two_steps_make_a_task_that_runs",
    ),
    (
        r"niah run --suite ruler .*--wait",
        "test tests/integration/test_ruler_suite_run.py::"
        "test_the_standin_scores_every_ruler_task_in_full_at_two_lengths",
    ),
    (
        r"niah run --task mrcr --mrcr_source gs://.*",
        "not run: Google's MRCR v2 files in a bucket; published rows run on the stack in "
        "tests/integration/test_operations.py::"
        "test_published_mrcr_rows_are_read_at_their_spans_on_the_stack",
    ),
    (
        r"PROJECT=\S+ BUCKET=\S+ INVOKER=\S+ scripts/deploy\.sh --dry-run",
        "test tests/deploy/test_deploy_scripts.py::"
        "test_the_deploy_dry_run_needs_no_credentials_terraform_or_network_and_shows_the_plan",
    ),
    (
        r"PROJECT=\S+ BUCKET=\S+ INVOKER=\S+ scripts/deploy\.sh",
        "not run: a Google project; deploy.sh with fake gcloud and terraform runs in "
        "tests/deploy/test_deploy_scripts.py::test_deploy_builds_every_input_then_runs_terraform_in_order",
    ),
    (
        r"scripts/start_run\.sh .*",
        "test tests/deploy/test_deploy_scripts.py::"
        "test_start_run_posts_with_the_gcloud_identity_token_and_says_where_to_look",
    ),
    (
        r"scripts/upload_haystack\.sh .*",
        "test tests/deploy/test_deploy_scripts.py::"
        "test_upload_haystack_copies_the_txt_files_and_refuses_a_folder_without_any",
    ),
    (
        r"export .*terraform -chdir=infra output -raw dispatcher_url.*"
        r"|niah run --url \"\$DISPATCHER_URL\" .*"
        r"|NIAH_PROJECT=\$PROJECT NIAH_BUCKET=\$BUCKET niah status RUN_ID",
        "not run: a deployed service",
    ),
    (
        r"gcloud storage rm .*|terraform -chdir=infra destroy .*"
        r"|gcloud firestore databases delete .*|gcloud artifacts repositories delete .*",
        "not run: a deployed service (tear-down)",
    ),
    (
        r"scripts/bench\.sh --smoke .*",
        "test tests/integration/test_bench_smoke.py::"
        "test_every_benchmark_part_completes_and_writes_its_keys",
    ),
    (
        r"scripts/bench\.sh --only stack .*",
        "test tests/integration/test_bench_smoke.py::"
        "test_the_stack_part_runs_at_its_documented_size",
    ),
    (r"scripts/bench\.sh( --baseline-limit .*)?", "not run: benchmarks take an hour"),
    (r"NIAH_SYSTEM_PROJECT=.* pytest tests/system -m system", "not run: real Vertex AI"),
]


def how_run(command: str) -> str:
    """The one ACCOUNTED entry ``command`` matches."""
    matches = [how for pattern, how in ACCOUNTED if re.fullmatch(pattern, command)]
    assert len(matches) == 1, f"{command!r} matches {len(matches)} entries of ACCOUNTED"
    return matches[0]


def test_the_readme_is_short() -> None:
    lines = README.read_text().count("\n")
    assert lines <= 250, f"README.md has {lines} lines; move detail to docs/"


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to dashes."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(REPO)))
def test_every_link_resolves(page: Path) -> None:
    """Relative links name a file that exists, and an anchor a heading it has."""
    text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.S | re.M)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue  # a web address
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        assert linked.exists(), f"{page.name} links to {target}, which does not exist"
        if anchor:
            headings = re.findall(r"^#+ (.+)$", linked.read_text(), flags=re.M)
            assert anchor in {slug(h) for h in headings}, f"{page.name}: no heading #{anchor}"


def test_every_command_is_run_by_a_test_or_says_why_not() -> None:
    commands = every_command()
    assert len(commands) >= 30
    for page, command in commands:
        how = how_run(command)
        if how.startswith("test "):
            file, _, name = how.removeprefix("test ").partition("::")
            assert f"def {name}(" in (REPO / file).read_text(), f"{page}: {how} is gone"
        elif how == "quickstart":
            quickstarts = [quickstart(REPO / "README.md"), quickstart(REPO / "docs/local-stack.md")]
            assert any(command in block for block in quickstarts), f"{page}: {command}"


def test_the_quickstart_is_the_readme_s_and_the_local_stack_page_s() -> None:
    """Both pages have exactly one block that goes up, runs, looks and goes down."""
    readme = quickstart(README)
    page = quickstart(REPO / "docs/local-stack.md")
    # Up, the stack's environment, a run, a look at it by `latest`, down.
    assert readme[1] == page[1] == "source .local/env"
    assert readme[2] == page[2] and readme[2].startswith("niah run ")
    assert any(" latest" in command for command in readme[3:-1])


ESTIMATED = [
    command
    for _, command in every_command()
    if how_run(command) in ("here", "here, with --estimate for --wait")
]


@pytest.mark.parametrize("command", ESTIMATED)
def test_the_docs_run_commands_are_accepted(command: str) -> None:
    """Each documented ``niah run`` is accepted whole: its options, values and grid.

    A ``--wait`` example is estimated instead of run (the tasks' runs are tested on the
    stack); the estimate checks the request as the dispatcher does.
    """
    words = shlex.split(command)  # as the shell reads it: quoted needles are one word
    assert words[:2] == ["niah", "run"]
    args = [word for word in words[2:] if word != "--wait"]
    if "--estimate" not in args:
        args.append("--estimate")
    done = niah("run", *args)
    assert done.returncode == 0, f"{command}: {done.stderr}"
    assert "prompt tokens:" in done.stdout


def holding(paths: list[str]) -> Any:
    """The smallest data with every dotted path (``*``: a one-element list), leaves 1.0."""
    if paths == [""]:
        return 1.0
    heads = {path.partition(".")[0] for path in paths}
    inner = {h: [p.partition(".")[2] for p in paths if p.partition(".")[0] == h] for h in heads}
    if heads == {EACH}:
        return [holding(inner[EACH])]
    return {head: holding(rest) for head, rest in inner.items()}


def synthetic_bench(names: list[str]) -> dict[str, Any]:
    """A bench.json holding exactly the keys the named tables declare."""
    return {FIGURES[name].section: holding(list(FIGURES[name].keys)) for name in names}


def test_every_figure_marker_in_the_docs_names_a_known_table_begun_and_ended() -> None:
    names = cited()
    assert {"scale", "counting", "grid_cost"} <= set(names)
    for page in PAGES:
        text = page.read_text()
        for name in set(re.findall(r"<!-- figures:([\w-]+) begin -->", text)):
            assert name in FIGURES, f"{page.name}: no table named {name}"
            assert text.count(f"<!-- figures:{name} end -->") == 1, f"{page.name}: {name}"


def test_each_table_reads_only_the_keys_it_declares(tmp_path: Path) -> None:
    """What the benchmark's smoke test holds the benchmark to is what the tables read."""
    results = tmp_path / "bench.json"
    results.write_text("{}")
    for name in FIGURES:
        bench = synthetic_bench([name])
        assert missing_keys(bench, [name]) == []
        assert "Not measured" not in block(name, bench), name


def test_a_table_without_its_figures_says_how_to_measure_them(tmp_path: Path) -> None:
    results = tmp_path / "bench.json"
    results.write_text("{}")
    page = "a\n<!-- figures:scale begin -->\nold\n<!-- figures:scale end -->\nb\n"
    rewritten = rewrite(page, {}, results)
    assert "old" not in rewritten and "`scripts/bench.sh --only scale`" in rewritten
    measured = {"measured": {"scale": {"commit": "abc123", "date": "2026-11-27"}}}
    rewritten = rewrite(page, synthetic_bench(["scale"]) | measured, results)
    assert "commit `abc123`, 2026-11-27" in rewritten and rewritten.endswith("end -->\nb\n")
    with pytest.raises(KeyError, match="no figures named"):
        rewrite("<!-- figures:nothing begin -->\n<!-- figures:nothing end -->", {}, results)


def test_the_docs_pictures_are_drawn_by_today_s_code() -> None:
    """docs/images/ holds what the report's renderer draws now, byte for byte."""
    for name, draw in PICTURES.items():
        assert (REPO / "docs" / "images" / name).read_bytes() == draw(), (
            f"docs/images/{name} is stale: run python -m niah_devtools.docs_pictures"
        )
