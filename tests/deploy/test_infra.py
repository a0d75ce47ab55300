"""The Terraform in infra/: parsed, formatted, checkov-clean, private and least-privileged.

python-hcl2 reads it, checkov scans it offline, and niah_devtools.deploy_plan renders
what it creates; test_terraform_offline.py runs the real terraform on it.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from niah.catalog.models import GEMMA3_TOKENIZER, GEMMA3_TOKENIZER_SHA256, tokenizer_object
from niah.settings import Settings
from niah_devtools.deploy_plan import INFRA, first, resources, skips, text
from tests import REPO


def test_every_tf_file_parses_and_versions_are_pinned() -> None:
    import hcl2

    files = sorted(INFRA.glob("*.tf"))
    assert {"main.tf", "variables.tf", "outputs.tf", "versions.tf"} <= {p.name for p in files}
    for path in files:
        with path.open() as handle:
            hcl2.load(handle)
    versions = (INFRA / "versions.tf").read_text()
    assert re.search(r'required_version\s*=\s*">= 1\.5\.0, < 2\.0\.0"', versions)
    assert re.search(r'source\s*=\s*"hashicorp/google"\s*\n\s*version\s*=\s*"~> 7\.0"', versions)
    assert '# backend "gcs" {' in versions  # the shared-state option, ready to uncomment
    example = (INFRA / "terraform.tfvars.example").read_text()
    declared = set(re.findall(r'^variable "(\w+)"', (INFRA / "variables.tf").read_text(), re.M))
    assert set(re.findall(r"^(\w+)\s*=", example, re.M)) <= declared


def fmt_problems(source: str) -> list[str]:
    """Where ``source`` differs from what ``terraform fmt`` writes (its main rules).

    Two-space indentation by nesting; one space around ``=`` except that consecutive
    one-line attributes align their ``=`` (hclwrite's rule: a line whose value opens
    more brackets than it closes ends the alignment run); no trailing spaces or tabs.
    """
    problems: list[str] = []
    depth = 0
    run: list[tuple[int, int, int]] = []  # (line number, width of the name part, "=" column)

    def close_run() -> None:
        widest = max((width for _, width, _ in run), default=0)
        problems.extend(f"line {n}: '=' not aligned" for n, _, col in run if col != widest + 1)
        run.clear()

    for number, line in enumerate(source.splitlines(), 1):
        if line != line.rstrip() or "\t" in line:
            problems.append(f"line {number}: trailing space or tab")
        stripped = line.strip()
        code = re.sub(r'"(?:[^"\\]|\\.)*"', '""', stripped.split(" #")[0])
        opens = sum(code.count(c) for c in "{[(")
        closes = sum(code.count(c) for c in "}])")
        indent = depth - (1 if code[:1] in "}])" and code else 0)
        if (
            stripped
            and not stripped.startswith("#")
            and len(line) - len(line.lstrip()) != 2 * indent
        ):
            problems.append(
                f"line {number}: indented {len(line) - len(line.lstrip())}, not {2 * indent}"
            )
        match = re.match(r"^(\s*[\w\"-]+)(\s*)=(?!=)", line)
        if match and not stripped.startswith("#") and opens == closes:
            run.append((number, len(match.group(1)), len(match.group(1)) + len(match.group(2))))
        else:
            close_run()
            if match and match.group(2) != " ":
                problems.append(f"line {number}: one space before '=' when the value spans lines")
        depth += opens - closes
    close_run()
    return problems


def test_the_terraform_is_formatted_as_terraform_fmt_writes_it() -> None:
    problems = {p.name: fmt_problems(p.read_text()) for p in sorted(INFRA.glob("*.tf"))}
    assert {name: found for name, found in problems.items() if found} == {}
    assert fmt_problems("a = 1\nbb = 2\n") == ["line 1: '=' not aligned"]


@pytest.mark.skipif(shutil.which("terraform") is None, reason="no terraform binary on this machine")
def test_terraform_fmt_check_passes() -> None:
    """The real formatter where a binary is installed (these machines have one).

    `fmt` needs no provider; validate and plan are in test_terraform_offline.py.
    """
    subprocess.run(["terraform", "fmt", "-check", "-diff"], cwd=INFRA, check=True)


def checkov_command() -> list[str] | None:
    local = REPO / ".venv-checkov" / "bin" / "checkov"
    found = str(local) if local.exists() else shutil.which("checkov")
    return [found] if found else None


def test_checkov_passes_offline_and_every_skip_says_why() -> None:
    command = checkov_command()
    if command is None:
        pytest.skip("checkov is not installed: scripts/setup.sh puts it in .venv-checkov")
    result = subprocess.run(
        [*command, "-d", str(INFRA), "--skip-download", "--framework", "terraform", "-o", "json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    report = json.loads(result.stdout)
    summary_counts = report["summary"]
    failed = [(c["check_id"], c["resource"]) for c in report["results"]["failed_checks"]]
    assert failed == [] and summary_counts["failed"] == 0
    assert summary_counts["passed"] > 50
    # Each skip is written beside its resource with a reason of some substance.
    in_source = [skip for body in resources().values() for skip in skips(body)]
    assert summary_counts["skipped"] == len(in_source) >= 1
    for skip in in_source:
        check, _, reason = skip.removeprefix("checkov:skip=").partition(":")
        assert re.fullmatch(r"CKV2?_GCP_\d+", check) and len(reason.split()) >= 12, skip


def test_nothing_is_public_and_the_bucket_is_private_and_versioned() -> None:
    text_of_all = " ".join(p.read_text() for p in INFRA.glob("*.tf"))
    # The public is named once: where variables.tf refuses it as an invoker
    # (tests/deploy/test_bucket_access.py plans with it and sees the refusal).
    variables = (INFRA / "variables.tf").read_text()
    start = variables.index('variable "run_invokers"')
    refusal = variables[start : variables.index("\n}\n", start)]
    assert "allUsers and allAuthenticatedUsers are refused" in refusal
    elsewhere = text_of_all.replace(refusal, "")
    assert "allUsers" not in elsewhere and "allAuthenticatedUsers" not in elsewhere
    for name in ("data", "sources"):
        bucket = resources()[("google_storage_bucket", name)]
        assert text(bucket["public_access_prevention"]) == "enforced"
        assert bucket["uniform_bucket_level_access"] is True
        assert first(bucket["versioning"])["enabled"] is True


def test_the_functions_environment_names_real_settings() -> None:
    main = (INFRA / "main.tf").read_text()
    env_block = main[main.index("common_env = {") : main.index("}", main.index("common_env = {"))]
    names = re.findall(r"^\s*(NIAH_\w+)\s*=", env_block, re.M)
    fields = {f"NIAH_{name.upper()}" for name in Settings.model_fields}
    assert names and set(names) <= fields
    assert {"NIAH_BUCKET", "NIAH_PROJECT", "NIAH_DEFAULT_MODEL_NAME"} <= set(names)


def test_terraform_names_the_tokenizer_object_as_the_worker_reads_it() -> None:
    body = resources()[("google_storage_bucket_object", "tokenizer")]
    expression = text(body["name"])
    digest = GEMMA3_TOKENIZER_SHA256
    rendered = expression.replace("${substr(filesha256(var.tokenizer_model), 0, 16)}", digest[:16])
    assert rendered == tokenizer_object(GEMMA3_TOKENIZER)


def test_every_function_zip_terraform_uploads_is_one_the_packager_builds() -> None:
    uploaded = {
        name
        for (kind, name), body in resources().items()
        if kind == "google_storage_bucket_object" and "${var.sources_dir}" in str(body["source"])
    }
    assert uploaded == {
        path.name for path in (REPO / "functions").iterdir() if (path / "main.py").exists()
    }


def test_every_local_map_a_for_each_walks_has_entries_of_one_shape() -> None:
    """for_each takes a map; an object whose entries differ in shape may not convert to one."""
    import hcl2

    local_values: dict[str, object] = {}
    for path in INFRA.glob("*.tf"):
        with path.open() as handle:
            for block in hcl2.load(handle).get("locals", []):
                local_values.update(block)
    walked = set(
        re.findall(
            r"for_each\s*=\s*local\.(\w+)", " ".join(p.read_text() for p in INFRA.glob("*.tf"))
        )
    )
    assert walked
    for name in walked:
        entries = local_values[name]
        assert isinstance(entries, dict), name
        keys = {tuple(sorted(e)) if isinstance(e, dict) else () for e in entries.values()}
        assert len(keys) == 1, (name, keys)
        for attribute in next(iter(keys)):
            values = [e[attribute] for e in entries.values() if isinstance(e, dict)]
            # null fits any type; a reference (a "${...}" string here) may stand for a number.
            kinds = {
                "reference"
                if isinstance(v, str) and v.startswith("${")
                else f"object{sorted(v)}"
                if isinstance(v, dict)
                else type(v).__name__
                for v in values
                if v is not None
            }
            assert len(kinds - {"reference"}) <= 1, (name, attribute, kinds)


def timeout_of(kind: str, name: str) -> int:
    """A function's timeout, in seconds, as the Terraform gives it."""
    return int(text(first(resources()[(kind, name)]["service_config"])["timeout_seconds"]))


def test_every_lease_and_deadline_outlasts_what_it_waits_for() -> None:
    settings = Settings()
    found = resources()
    # A cell's lease is renewed every third of it while its holder works, so a live
    # worker's lease outlasts any call; a dead one's lapses within a minute.
    assert settings.cell_lease_seconds <= 60
    # The dispatcher outlives its own publish timeout, so that 503 is the one it gives.
    assert settings.publish_timeout_seconds < timeout_of(
        "google_cloudfunctions2_function", "dispatcher"
    )
    # Scheduler waits for the sweep to finish.
    sweep = timeout_of("google_cloudfunctions2_function", "sweep")
    deadline = text(found[("google_cloud_scheduler_job", "sweep")]["attempt_deadline"])
    assert sweep < int(deadline.removesuffix("s"))


def test_the_local_production_sweep_runs_as_often_as_the_deployed_one() -> None:
    """Fault tests on ``production_stack`` measure the recovery a deployment gets."""
    from niah_devtools.localstack import PRODUCTION_SWEEP_EVERY_SECONDS

    schedule = text(resources()[("google_cloud_scheduler_job", "sweep")]["schedule"])
    minute = schedule.split()[0]
    every_minutes = 1 if minute == "*" else int(minute.removeprefix("*/"))
    assert every_minutes * 60 == PRODUCTION_SWEEP_EVERY_SECONDS == 60
    # A dead holder's cell and a quiet run are each found within one lease and a pass.
    settings = Settings()
    assert settings.sweep_quiet_after_seconds <= settings.cell_lease_seconds
    assert settings.cell_lease_seconds + PRODUCTION_SWEEP_EVERY_SECONDS <= 90


def test_a_dead_report_renderer_s_claim_lapses_long_before_its_timeout() -> None:
    """Before: the claim was a 360 s lease, outlasting the function's 300 s timeout.

    Now it is renewed every third of it while the renderer works (a live renderer never
    loses it, tests/unit/test_report_lease.py), so it can be short: a renderer killed
    mid-render costs a lease and a sweep interval, not the function's timeout.
    """
    settings = Settings()
    timeout = timeout_of("google_cloudfunctions2_function", "report")
    assert settings.report_lease_seconds <= 60 < timeout
