"""``niah``: start runs, follow them, and fetch their results.

``niah run`` takes the NIAH harness's options (``--context_lengths_max 4000`` or
``--context-lengths-max 4000``), posts them to the dispatcher and, with ``--wait``,
follows the run in Firestore until its report is written.
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import json
import sys
import time
import types
import typing
from pathlib import Path
from typing import Any

from niah.core.spec import OPTION_HELP, RunRequest
from niah.core.summary import (
    cost_summary,
    failure_reasons,
    format_cost,
    format_spend,
    format_table,
    score_table,
    spend_summary,
    summarize,
)
from niah.settings import get_settings


def _option_type(annotation: Any) -> tuple[Any, bool]:
    """The argparse type of a RunRequest field, and whether it takes a list."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType) and len(args) == 1:
        annotation = args[0]
    if typing.get_origin(annotation) is list:
        return typing.get_args(annotation)[0], True
    if typing.get_origin(annotation) is typing.Literal:
        return str, False
    return annotation, False


# The harness's options that mean nothing to a service, and what takes their place.
HARNESS_ONLY_OPTIONS = {
    "save_results": "results are always saved (Firestore; `niah export` writes files)",
    "print_ongoing_status": "progress is always shown with --wait (and `niah status`)",
    "seconds_to_sleep_between_completions": (
        "pacing is the worker's parallelism (worker max instances x concurrency)"
    ),
    "gcp_project_id": "the project is the deployment's (NIAH_PROJECT or GOOGLE_CLOUD_PROJECT)",
}
# The harness's options that are spelt differently here: refused, naming the new one.
RENAMED_OPTIONS = {
    "provider": "--model_provider (local, gemini or openai_compatible; inferred from the name)",
    "model_to_test": "--model_name",
    "evaluator": "--scorer judge with --evaluator_model_name",
}


class _Parser(argparse.ArgumentParser):
    """argparse that suggests the option a typo meant, and never guesses one."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> typing.NoReturn:
        """One line, with the closest options for an unknown one."""
        import difflib
        import re

        unknown = re.findall(r"(--[\w-]+)", message) if "unrecognized" in message else []
        options = _all_options(self)
        hints = [
            f"{word}: did you mean {' or '.join(close)}?"
            for word in unknown
            if (close := difflib.get_close_matches(word, options, n=2, cutoff=0.75))
        ]
        self.exit(2, f"niah: {message}{'; ' + '; '.join(hints) if hints else ''}\n")


def _all_options(parser: argparse.ArgumentParser) -> list[str]:
    """Every option string of a parser and of its subcommands' parsers."""
    options = []
    for action in parser._actions:
        options += [o for o in action.option_strings if o.startswith("--")]
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                options += _all_options(sub)
    return options


class _ExtendFlat(argparse.Action):
    """Each word parses to a list; the option's value is all of them, in order."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        items = list(getattr(namespace, self.dest, None) or [])
        setattr(namespace, self.dest, items + [item for word in values for item in word])


def _list_of(kind: type, name: str) -> Any:
    """Parse one word of a list option: 1000, "1000," or the harness's "[1000, 2000]"."""

    def parse(word: str) -> list[Any]:
        items = word.translate(str.maketrans("[],", "   ")).split()
        try:
            return [kind(item) for item in items]
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{word!r} is not a list of numbers; write --{name} 1000 2000 or "
                f"--{name} '[1000, 2000]'"
            ) from None

    return parse


def _add_run_options(parser: argparse.ArgumentParser) -> None:
    for name in (*HARNESS_ONLY_OPTIONS, *RENAMED_OPTIONS):
        parser.add_argument(
            f"--{name}", dest=f"harness_{name}", nargs="?", const=True, help=argparse.SUPPRESS
        )
    for name, field in RunRequest.model_fields.items():
        flags = [f"--{name}"] + ([f"--{name.replace('_', '-')}"] if "_" in name else [])
        kind, many = _option_type(field.annotation)
        help_text = f"{OPTION_HELP[name]} (default: {field.default!r})"
        if kind is bool:
            parser.add_argument(
                *flags,
                dest=name,
                action=argparse.BooleanOptionalAction,
                default=None,
                help=help_text,
            )
        elif many:
            parser.add_argument(
                *flags,
                dest=name,
                type=_list_of(kind, name),
                nargs="+",
                default=None,
                action=_ExtendFlat,
                help=help_text,
            )
        else:
            choices = (
                typing.get_args(typing.get_args(field.annotation)[0])
                if typing.get_origin(field.annotation) in (typing.Union, types.UnionType)
                else typing.get_args(field.annotation)
            )
            literal = all(isinstance(c, str) for c in choices) and choices
            parser.add_argument(
                *flags,
                dest=name,
                type=kind if kind in (int, float) else str,
                default=None,
                choices=list(choices) if literal else None,
                help=help_text,
            )


def _dispatcher_url(args: argparse.Namespace) -> str:
    url = args.url or get_settings().dispatcher_url
    if not url:
        sys.exit("niah: no dispatcher URL; pass --url or source .local/env (DISPATCHER_URL)")
    return str(url)


def _submit(url: str, payload: dict[str, Any]) -> dict[str, Any]:
    import requests

    headers = {"Content-Type": "application/json"}
    if url.startswith("https://"):
        headers["Authorization"] = f"Bearer {_identity_token(url)}"
    try:
        response = requests.post(url, data=json.dumps(payload), headers=headers, timeout=(5, 120))
    except requests.RequestException as unreachable:
        sys.exit(
            f"niah: cannot reach the dispatcher at {url} ({type(unreachable).__name__}); start the "
            "local stack (scripts/local_up.sh, then source .local/env) or pass --url"
        )
    try:
        body: dict[str, Any] = response.json() if response.content else {}
    except ValueError:
        body = {}
    if response.status_code >= 400:
        problem = body.get("error", {})
        sys.exit(
            f"niah: {response.status_code}: {problem.get('field', '')}: "
            f"{problem.get('message', response.text)}"
        )
    return body


def _identity_token(audience: str) -> str:
    """An ID token for a deployed, IAM-protected dispatcher.

    google-auth mints one only from a service account (a key file or impersonated
    credentials named by GOOGLE_APPLICATION_CREDENTIALS, or the metadata server on
    Google Cloud); with the user credentials of ``gcloud auth application-default
    login`` on a laptop it cannot. Then gcloud's own token serves: Cloud Run takes it
    from an account with the invoker role (cloud.google.com/run/docs/authenticating/
    developers, read 2026-11-26).
    """
    import google.auth.exceptions
    import google.auth.transport.requests
    import google.oauth2.id_token

    request = google.auth.transport.requests.Request()
    try:
        return str(google.oauth2.id_token.fetch_id_token(request, audience))
    except google.auth.exceptions.GoogleAuthError as library_error:
        token, gcloud_problem = _gcloud_identity_token()
        if token:
            return token
        sys.exit(
            f"niah: no identity token for {audience}: google-auth cannot mint one from these "
            f"credentials ({library_error}), and `gcloud auth print-identity-token` failed "
            f"({gcloud_problem}). Fix one of: run `gcloud auth login` (niah then uses "
            "gcloud's token); or point GOOGLE_APPLICATION_CREDENTIALS at a service-account "
            "key, or at the file `gcloud auth application-default login "
            "--impersonate-service-account=SA_EMAIL` writes, for an account that may invoke "
            "the dispatcher"
        )


def _gcloud_identity_token() -> tuple[str | None, str]:
    """The logged-in gcloud account's ID token, or None and why not."""
    import subprocess

    try:
        done = subprocess.run(
            ["gcloud", "auth", "print-identity-token"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except FileNotFoundError:
        return None, "gcloud is not installed or not on PATH"
    except subprocess.TimeoutExpired:
        return None, "gcloud did not answer within 60 s"
    token = done.stdout.strip()
    if done.returncode != 0 or not token:
        lines = done.stderr.strip().splitlines()
        return None, lines[-1] if lines else f"exit status {done.returncode}"
    return token, ""


@functools.cache  # one client and one emulator check per command
def _store() -> Any:
    """The result store, once it is known to answer (the emulator hangs a client)."""
    import socket

    from niah.cloud.store import FirestoreStore

    emulator = get_settings().firestore_emulator_host
    if emulator:
        host, _, port = emulator.rpartition(":")
        try:
            socket.create_connection((host or "127.0.0.1", int(port)), timeout=2).close()
        except (OSError, ValueError):
            sys.exit(
                f"niah: the Firestore emulator at {emulator} does not answer; start the local "
                "stack (scripts/local_up.sh, then source .local/env)"
            )
    return FirestoreStore()


@functools.cache
def _blobs() -> Any:
    from niah.cloud.blobs import GcsBlobStore

    return GcsBlobStore(get_settings().bucket)


def _wait(run_id: str, timeout: float) -> dict[str, Any]:
    from tqdm import tqdm

    store = _store()
    deadline = time.monotonic() + timeout
    run = store.get_run(run_id) or {}
    with tqdm(total=int(run.get("total", 0)), unit="cell", desc=run_id) as bar:
        while True:
            run = store.get_run(run_id) or {}
            finished = int(run.get("done", 0)) + int(run.get("failed", 0))
            bar.update(finished - bar.n)
            if run.get("status") == "complete" and run.get("report"):
                return run
            if time.monotonic() > deadline:
                sys.exit(
                    f"niah: run {run_id} not complete after {timeout:.0f} s "
                    f"({finished}/{run.get('total')} cells); check `niah status {run_id}`"
                )
            time.sleep(1)


# Exit codes of `niah run --wait`, `niah wait` and `niah status` (also in the README).
EXIT_ALL_SCORED, EXIT_CELLS_FAILED, EXIT_CELLS_UNSCORED, EXIT_CELLS_TRUNCATED = 0, 3, 4, 5


def _print_results(run_id: str, run: dict[str, Any]) -> int:
    """Print the run's results; the exit code (``_exit_code``)."""
    cells = _store().list_cells(run_id)
    print(
        f"\nrun {run_id}: {run.get('model')}, {run.get('done', 0)} answered, "
        f"{run.get('failed', 0)} failed, mean score {run.get('mean_score')}, "
        f"retrieved {run.get('retrieved_share')}"
    )
    totals = run.get("totals", {})
    if totals:
        cost = cost_summary(totals)
        cached = f" ({cost['cached_share']:.0%} cached)" if cost["cached_share"] else ""
        print(
            f"tokens: {int(totals.get('prompt_tokens', 0)):,} prompt{cached} + "
            f"{int(totals.get('output_tokens', 0)):,} output + "
            f"{int(totals.get('thinking_tokens', 0)):,} thinking; {format_cost(cost)}"
            + (
                f"; judge {int(totals.get('judge_prompt_tokens', 0)):,} tokens"
                if totals.get("judge_prompt_tokens")
                else ""
            )
        )
    calls = _store().list_calls(run_id)
    if calls:
        print(format_spend(spend_summary(calls, str(run.get("model") or ""))))
    if run.get("prompt_token_deviation"):
        deviation = run["prompt_token_deviation"]
        print(
            f"prompt tokens vs requested length: mean {deviation.get('mean')}, "
            f"max |deviation| {deviation.get('max_abs')}"
        )
    if measures := _measures_line(run):
        print(measures)
    task = (run.get("spec") or {}).get("task", "single")
    scale = "" if task == "single" else f", task {task}, fraction of 1"
    print(f"scores ({run.get('scorer', 'exact')}{scale}):")
    print(format_table(score_table(cells)))
    if run.get("report"):
        print(f"heatmap: {run['report']['heatmap_uri']}")
        if run["report"].get("html_url"):
            print(f"report: {run['report']['html_url']}")
    return _report_failures(cells)


def _report_failures(cells: list[dict[str, Any]]) -> int:
    """Failed and unscored cells, grouped by reason with counts; the exit code."""
    reasons = failure_reasons(cells)
    for reason, cell_ids in reasons.items():
        print(f"{len(cell_ids)} x {reason}", file=sys.stderr)
    return _exit_code(cells, reasons)


def _exit_code(cells: list[dict[str, Any]], reasons: dict[str, list[str]]) -> int:
    """Failed cells 3, else truncated answers 5, else other unscored ones 4, else 0."""
    if any(cell.get("error") for cell in cells):
        return EXIT_CELLS_FAILED
    if any(cell.get("outcome") == "truncated" for cell in cells):
        return EXIT_CELLS_TRUNCATED
    return EXIT_CELLS_UNSCORED if reasons else EXIT_ALL_SCORED


def _measures_line(run: dict[str, Any]) -> str:
    """Outcomes and the run's measures, once the report has them."""
    outcomes = run.get("outcomes") or {}
    measures = run.get("measures") or {}
    if not measures:
        return ""
    effective = measures.get("effective_length") or {}
    mrcr = run.get("mrcr")
    mrcr_line = (
        f"\nMRCR v2 ({mrcr.get('samples')}): bins "
        f"{mrcr['bins']}; cumulative to 128K {mrcr['cumulative_128k']}; at 1M {mrcr['at_1m']}"
        if mrcr
        else ""
    )
    return (
        f"outcomes: {outcomes.get('correct', 0)} correct, {outcomes.get('wrong', 0)} wrong, "
        f"{outcomes.get('unscored', 0)} unscored, {outcomes.get('truncated', 0)} truncated; "
        f"mean {measures.get('mean')} %; effective "
        f"length {effective.get('length')} (threshold {effective.get('threshold')}, "
        f"{effective.get('rule')}); area under curve {measures.get('area_under_curve')}" + mrcr_line
    )


def _explain_harness_options(args: argparse.Namespace) -> None:
    """One line per harness option given: renamed ones refused, needless ones ignored."""
    for name, instead in RENAMED_OPTIONS.items():
        if getattr(args, f"harness_{name}", None) is not None:
            sys.exit(f"niah: --{name} is the harness's; here it is {instead}")
    for name, instead in HARNESS_ONLY_OPTIONS.items():
        if getattr(args, f"harness_{name}", None) is not None:
            print(f"niah: --{name} is not needed here: {instead}; ignored", file=sys.stderr)


def cmd_run(args: argparse.Namespace) -> None:
    """Submit a run (and follow it with --wait), or only estimate it (--estimate)."""
    _explain_harness_options(args)
    payload = {
        name: getattr(args, name)
        for name in RunRequest.model_fields
        if getattr(args, name) is not None
    }
    if args.suite:  # one run per task of the suite (niah.suite)
        from niah.suite import run_suite

        sys.exit(
            run_suite(
                args,
                payload,
                submit=lambda body: _submit(_dispatcher_url(args), body),
                wait=_wait,
                store=_store,
            )
        )
    if args.estimate:
        print(_to_json(estimate_figures(payload)) if args.json else estimate(payload))
        return
    if args.resume:
        # The same spec names the same run: answered cells are kept, failed and
        # missing ones are published again.
        previous = _store().get_run(args.resume)
        if previous is None:
            sys.exit(f"niah: no run {args.resume}")
        payload = dict(previous["spec"])
    url = _dispatcher_url(args)
    body = _submit(url + ("?resume=true" if args.resume else ""), payload)
    run_id = body["run_id"]
    for warning in body.get("warnings", []):
        print(f"warning: {warning}", file=sys.stderr)
    if args.json:
        if args.wait:
            _follow(run_id, args.timeout, as_json=True)
        print(_to_json(body))
        return
    print(
        f"run {run_id}: {body['cells']} cells"
        + (" (already complete)" if body.get("already_complete") else "")
        + (f", {body['reused']} already answered" if body.get("reused") else "")
        + (f", {body['retried']} failed cells retried" if body.get("retried") else ""),
        flush=True,  # the run ID is out before any wait (a script or test reads it)
    )
    if args.wait:
        _follow(run_id, args.timeout)


def _follow(run_id: str, timeout: float, *, as_json: bool = False) -> None:
    """Follow a run to its report; Ctrl-C stops following, not the run."""
    try:
        run = _wait(run_id, timeout)
    except KeyboardInterrupt:
        print(
            f"\nniah: stopped following {run_id}; the run goes on. Follow it again with: "
            f"niah wait {run_id}",
            file=sys.stderr,
        )
        sys.exit(130)
    sys.exit(_print_status_json(run_id, run) if as_json else _print_results(run_id, run))


def cmd_wait(args: argparse.Namespace) -> None:
    """Follow a run already submitted, publishing nothing."""
    if _store().get_run(args.run_id) is None:
        sys.exit(f"niah: no run {args.run_id}; `niah run` prints the run ID")
    _follow(args.run_id, args.timeout)


def estimate(payload: dict[str, Any]) -> str:
    """Tokens and cost of a grid, from the price table, without calling any model."""
    return format_estimate(estimate_figures(payload))


def _usd(value: float | None, model_name: str | None) -> str:
    return f"${value:.4f}" if value is not None else f"unknown (no price for {model_name})"


def format_estimate(figures: dict[str, Any]) -> str:
    """The estimate's figures as text: the same figures ``--json`` prints."""
    samples = figures["samples_per_cell"]
    model, call = figures["model_name"], figures["per_call"]
    naive, aware, judge = figures["naive"], figures["cache_aware"], figures["judge"]
    bases = ", ".join(f"{count} {basis}" for basis, count in figures["prompt_tokens_basis"].items())
    lines = [
        f"{model}, task {figures['task']}: {figures['cells']} cells "
        f"({figures['lengths']} lengths x {figures['depths']} depths"
        + (f" x {samples} samples)" if samples > 1 else ")"),
        f"prompt tokens: {figures['prompt_tokens']:,} ({bases}); output tokens at most: "
        f"{figures['output_tokens_at_most']:,}",
        f"per call: max_output_tokens {call['max_output_tokens']:,} = answer room "
        f"{call['answer_tokens']:,} + thinking room {call['thinking_tokens']:,}",
    ]
    if figures["long_context_threshold"] is not None:
        lines.append(
            f"long-context rate (prompt above {figures['long_context_threshold']:,} tokens): "
            f"{figures['long_context_cells']} cells"
        )
    lines.append(f"model calls, naive (nothing cached): {_usd(naive['cost_usd'], model)}")
    saving = (
        f", saving {_usd(aware['saving_usd'], model)} ({aware['saving_share']:.1%})"
        if aware["saving_share"] is not None
        else ""
    )
    lines.append(
        f"model calls, cache-aware (primer {aware['primer_cell_id']} first; "
        f"{aware['cached_tokens']:,} cached tokens in {aware['cells_with_cache_hits']} cells): "
        f"{_usd(aware['cost_usd'], model)}{saving}"
    )
    if judge:
        lines.append(
            f"judge {judge['model_name']}: {judge['calls']} calls, prompt tokens at most "
            f"{judge['prompt_tokens_at_most']:,}, output tokens at most "
            f"{judge['output_tokens_at_most']:,}: {_usd(judge['cost_usd'], judge['model_name'])}"
        )
    total = figures["total"]
    if figures["cost_usd_at_most"] is not None:
        lines.append(
            f"cost at most: ${figures['cost_usd_at_most']:.4f}"
            + (" (judge included)" if judge else "")
            + f"; cache-aware: ${total['cache_aware_usd']:.4f}"
        )
    else:
        lines.append("cost: unknown (set NIAH_PRICE_TABLE)")
    lines += [f"note: {note}" for note in figures["notes"]]
    lines += [f"warning: {warning}" for warning in figures["warnings"]]
    return "\n".join(lines)


def estimate_figures(payload: dict[str, Any]) -> dict[str, Any]:
    """What ``estimate`` says, as figures: ``niah run --estimate --json`` prints them."""
    from niah.core import estimate as estimating
    from niah.core.sample import Sample
    from niah.errors import ConfigurationError, RequestError
    from niah.models.providers import provider_class
    from niah.service.dispatch import (
        check_budget,
        parse_request,
        resolve_mrcr_source,
        source_cells,
    )
    from niah.tasks import get_task

    try:
        spec = parse_request(payload)
        source = resolve_mrcr_source(spec, _blobs()) if spec.mrcr_source else None
        cells = source_cells(source.rows) if source else spec.cells()
        check_budget(spec, cells)
    except RequestError as error:
        sys.exit(f"niah: {error.field}: {error.message}")
    if source:
        # Published rows are sent whole; their text stays in the bucket (megabytes a row).
        samples = [
            Sample((), "", (), answer_tokens=source.reply_tokens, prompt="",
                   prompt_tokens=cell.context_length)
            for cell in cells
        ]  # fmt: skip
    else:
        task = get_task(spec.task)
        samples = [task.sample(spec, cell) for cell in cells]
    try:
        from niah.models.tokenizer import get_tokenizer

        tokenizer = get_tokenizer()
    except (ConfigurationError, ImportError):
        tokenizer = None  # without the developer set-up: bytes bound the template
    run = estimating.estimate_run(
        spec,
        cells,
        samples,
        default_template=provider_class(spec.provider()).default_template,
        tokenizer=tokenizer,
    )
    return estimating.estimate_figures(run)


def cmd_status(args: argparse.Namespace) -> None:
    """Show a run's progress and, when done, its score table."""
    run = _store().get_run(args.run_id)
    if run is None:
        sys.exit(f"niah: no run {args.run_id}")
    if args.json:
        sys.exit(_print_status_json(args.run_id, run))
    print(
        f"run {args.run_id}: {run.get('status')}, {run.get('done', 0)} answered + "
        f"{run.get('failed', 0)} failed of {run.get('total')} cells"
    )
    sys.exit(_print_results(args.run_id, run))


def _print_status_json(run_id: str, run: dict[str, Any]) -> int:
    """The run's state and figures as one JSON document; the same exit code as the text."""
    store = _store()
    cells = store.list_cells(run_id)
    reasons = failure_reasons(cells)
    document = _run_line(run | {"run_id": run_id}) | {
        "scorer": run.get("scorer", "exact"),
        "mean_score": run.get("mean_score"),
        "retrieved_share": run.get("retrieved_share"),
        "outcomes": run.get("outcomes"),
        "measures": run.get("measures"),
        **({"mrcr": run["mrcr"]} if run.get("mrcr") else {}),
        **(cost_summary(run["totals"]) if run.get("totals") else {}),
        "totals": run.get("totals") or {},
        "spend": spend_summary(store.list_calls(run_id), str(run.get("model") or "")),
        "report": run.get("report"),
        "updated_at": run.get("updated_at"),
        "completed_at": run.get("completed_at"),
        "failures": {reason: len(ids) for reason, ids in reasons.items()},
        "exit_code": (code := _exit_code(cells, reasons)),
    }
    print(_to_json(document))
    return code


def cmd_report(args: argparse.Namespace) -> None:
    """Download the run's heatmap PNG (``--out``), or render its HTML report (``--html``)."""
    if not args.out and not args.html:
        sys.exit("niah: report: give --out FILE.png (the heatmap) or --html FILE.html or both")
    for path, option in ((args.out, "--out"), (args.html, "--html")):
        if path:
            _writable_file(path, option)
    store = _store()
    run = store.get_run(args.run_id)
    if run is None:
        sys.exit(f"niah: no run {args.run_id}; `niah list` shows recent runs")
    if args.html:
        from niah.core.report_page import render_run_page

        cells = store.list_cells(args.run_id)
        if not cells:
            sys.exit(f"niah: run {args.run_id} has no stored cells yet")
        run = run | {"run_id": args.run_id}
        summary = summarize(run, cells, store.list_calls(args.run_id))
        page = render_run_page(run, cells, summary)
        _write(args.html, page.encode())
    if args.out:
        if not run.get("report"):
            sys.exit(
                f"niah: run {args.run_id} has no heatmap yet (it is drawn when the last cell "
                f"is in); see `niah status {args.run_id}`, or render --html now"
            )
        name = run["report"]["heatmap_uri"].split("/", 3)[3]
        _write(args.out, _blobs().read(name))


def _writable_file(path: Path, option: str) -> None:
    """Exit naming the option when ``path`` is a folder: these options take a file."""
    if path.is_dir():
        sys.exit(f"niah: {option} takes a file name; {path} is a folder")


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    print(path)


EXPORT_FORMATS = ("json", "csv", "jsonl")


def cmd_export(args: argparse.Namespace) -> None:
    """Write the run's samples and its summary.

    ``json`` (the default): a folder of one JSON file per cell, in the harness's result
    format. ``csv`` and ``jsonl``: one file, one row (or line) per sample. The run's
    summary goes beside the folder or file, as ``<name>.summary.json``.
    """
    from niah.core.sample_rows import cells_jsonl, rows_csv

    out: Path = args.out
    if args.format == "json" and out.exists() and not out.is_dir():
        sys.exit(f"niah: export --format json writes a folder; {out} is a file")
    if args.format != "json":
        _writable_file(out, f"export --format {args.format} --out")
    store = _store()
    run = store.get_run(args.run_id)
    if run is None:
        sys.exit(f"niah: no run {args.run_id}; `niah list` shows recent runs")
    cells = store.list_cells(args.run_id)
    if not cells:
        sys.exit(f"niah: run {args.run_id} has no stored cells yet")
    summary = summarize(run | {"run_id": args.run_id}, cells, store.list_calls(args.run_id))
    if args.format == "json":
        out.mkdir(parents=True, exist_ok=True)
        for cell in cells:
            name = f"{cell['cell_id']}_results.json"
            (out / name).write_text(json.dumps(cell, indent=2, default=str))
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
        text = rows_csv(cells) if args.format == "csv" else cells_jsonl(cells)
        # UTF-8 with a byte-order mark for CSV, so a spreadsheet reads accents right;
        # bytes, so the CSV's own CRLF line ends are kept as they are on every system.
        out.write_bytes(text.encode("utf-8-sig" if args.format == "csv" else "utf-8"))
    # Beside the folder or file, not in it: tools that read every *.json of a results
    # folder as a cell (the harness's notebooks) never meet it.
    summary_path = out.with_name(out.name.removesuffix(out.suffix) + ".summary.json")
    summary_path.write_text(_to_json(summary))
    print(f"{len(cells)} samples written to {out}; summary in {summary_path}")


def cmd_compare(args: argparse.Namespace) -> None:
    """Compare runs on their shared grid: an HTML page, and a PNG beside it."""
    from niah.core.comparison import compare_runs, render_comparison_page
    from niah.errors import ComparisonError
    from niah.service.report import render_comparison_png

    if len(set(args.run_ids)) != len(args.run_ids):
        sys.exit("niah: compare: a run is named twice; name each run once")
    if len(args.run_ids) < 2:
        sys.exit("niah: compare: name two runs or more")
    if args.out.suffix.lower() == ".png":
        sys.exit("niah: compare --out names the HTML page (the PNG goes beside it): use .html")
    _writable_file(args.out, "compare --out")
    store = _store()
    pairs = []
    for run_id in args.run_ids:
        run = store.get_run(run_id)
        if run is None:
            sys.exit(f"niah: no run {run_id}; `niah list` shows recent runs")
        pairs.append((run | {"run_id": run_id}, store.list_cells(run_id)))
    try:
        comparison = compare_runs(pairs)
    except ComparisonError as error:
        sys.exit(f"niah: compare: {error}")
    out: Path = args.out
    _write(out, render_comparison_page(comparison).encode())
    _write(out.with_suffix(".png"), render_comparison_png(comparison))
    print(
        f"{len(comparison.disagreements)} samples disagree between {args.run_ids[0]} and "
        f"{args.run_ids[1]}"
    )


def cmd_list(args: argparse.Namespace) -> None:
    """Recent runs, newest first: ID, model, task, status, progress, mean, cost, created."""
    runs = [_run_line(run) for run in _store().recent_runs(args.limit)]
    if args.json:
        print(_to_json(runs))
        return
    if not runs:
        print("no runs yet; start one with `niah run`")
        return
    header = ("run", "model", "task", "status", "progress", "mean %", "cost", "created (UTC)")
    rows = [
        (
            r["run_id"],
            r["model"],
            r["task"],
            r["status"],
            f"{r['finished']}/{r['total']}",
            "-" if r["mean_percent"] is None else f"{r['mean_percent']:g}",
            "unknown" if r["cost_usd"] is None else f"${r['cost_usd']:.4f}",
            (r["created_at"] or "")[:19].replace("T", " "),
        )
        for r in runs
    ]
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        print("  ".join(str(value).ljust(width) for value, width in zip(row, widths, strict=True)))


def _run_line(run: dict[str, Any]) -> dict[str, Any]:
    """What ``niah list`` and ``niah status --json`` say of a run."""
    totals = run.get("totals") or {}
    created = run.get("created_at")
    return {
        "run_id": run.get("run_id"),
        "model": run.get("model"),
        "task": (run.get("spec") or {}).get("task", "single"),
        "status": run.get("status"),
        "total": int(run.get("total", 0)),
        "done": int(run.get("done", 0)),
        "failed": int(run.get("failed", 0)),
        "finished": int(run.get("done", 0)) + int(run.get("failed", 0)),
        "mean_percent": (run.get("measures") or {}).get("mean"),
        "cost_usd": cost_summary(totals)["cost_usd"] if totals else None,
        "created_at": created.isoformat() if isinstance(created, dt.datetime) else created,
    }


def _to_json(value: Any) -> str:
    """JSON for scripts: timestamps as ISO 8601, anything else unknown as its text."""

    def default(item: Any) -> Any:
        return item.isoformat() if hasattr(item, "isoformat") else str(item)

    return json.dumps(value, indent=2, default=default)


def _at_least_one(word: str) -> int:
    try:
        value = int(word)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{word!r}: give a whole number of runs, 1 or more")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The ``niah`` command line."""
    parser = _Parser(
        prog="niah", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    run = commands.add_parser("run", help="submit a run")
    _add_run_options(run)
    run.add_argument("--url", help="dispatcher URL (default: $DISPATCHER_URL)")
    run.add_argument("--wait", action="store_true", help="follow the run until its report")
    run.add_argument(
        "--resume",
        metavar="RUN_ID",
        help="finish a run: retry its failed and missing cells, keep the answered ones",
    )
    run.add_argument(
        "--estimate",
        action="store_true",
        help="print the grid's tokens and cost (naive, cache-aware, judge); call nothing",
    )
    run.add_argument("--timeout", type=float, default=3600, help="seconds --wait waits")
    run.add_argument(
        "--suite",
        choices=["ruler"],
        help="one run per RULER task the service has (with --wait: RULER's table)",
    )
    run.add_argument(
        "--json",
        action="store_true",
        help="print JSON for scripts: the submission, or with --wait the final status",
    )
    run.set_defaults(handler=cmd_run)
    wait = commands.add_parser("wait", help="follow a submitted run to its report")
    wait.add_argument("run_id")
    wait.add_argument("--timeout", type=float, default=3600, help="seconds to wait")
    wait.set_defaults(handler=cmd_wait)
    status = commands.add_parser("status", help="a run's progress and scores")
    status.add_argument("run_id")
    status.add_argument("--json", action="store_true", help="print JSON for scripts")
    status.set_defaults(handler=cmd_status)
    report = commands.add_parser("report", help="a run's heatmap PNG or HTML report")
    report.add_argument("run_id")
    report.add_argument("--out", type=Path, help="download the heatmap PNG here")
    report.add_argument("--html", type=Path, help="render the HTML report here, from the store")
    report.set_defaults(handler=cmd_report)
    export = commands.add_parser("export", help="a run's samples as JSON, CSV or JSONL")
    export.add_argument("run_id")
    export.add_argument(
        "--format",
        choices=EXPORT_FORMATS,
        default="json",
        help="json: a folder of harness-style files (default); csv, jsonl: one file",
    )
    export.add_argument("--out", type=Path, required=True)
    export.set_defaults(handler=cmd_export)
    compare = commands.add_parser("compare", help="runs side by side on their shared grid")
    compare.add_argument("run_ids", nargs="+", metavar="RUN_ID")
    compare.add_argument(
        "--out", type=Path, required=True, help="the HTML page (a PNG is written beside it)"
    )
    compare.set_defaults(handler=cmd_compare)
    listing = commands.add_parser("list", help="recent runs, newest first")
    listing.add_argument("--limit", type=_at_least_one, default=20, help="runs shown (default 20)")
    listing.add_argument("--json", action="store_true", help="print JSON for scripts")
    listing.set_defaults(handler=cmd_list)
    return parser


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``niah`` command: errors in one line (``--debug`` for more)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    args = build_parser().parse_args([word for word in argv if word != "--debug"])
    try:
        args.handler(args)
    except Exception as error:
        if debug:
            raise
        sys.exit(f"niah: {type(error).__name__}: {error}; rerun with --debug for the traceback")


if __name__ == "__main__":
    main()
