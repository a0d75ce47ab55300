"""The ``niah`` command line: every command's options, apart from what the commands do."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from niah.cli.compare import cmd_compare
from niah.cli.limits import cmd_killswitch, cmd_limits
from niah.cli.models import cmd_models
from niah.cli.plan import cmd_plan
from niah.cli.run import TIMEOUT_HELP, cmd_cancel, cmd_run, cmd_wait
from niah.cli.run_options import add_run_options
from niah.cli.sentinel import cmd_sentinel
from niah.cli.show import (
    EXPORT_FORMATS,
    cmd_export,
    cmd_index,
    cmd_list,
    cmd_report,
    cmd_status,
)
from niah.cli.syntax import BooleanFlag, Parser

DESCRIPTION = """\
start runs, follow them, and fetch their results.

``niah run`` takes the NIAH harness's options (``--context_lengths_max 4000`` or
``--context-lengths-max 4000``), posts them to the dispatcher and, with ``--wait``,
follows the run in Firestore until its report is written.
"""


def _at_least_one(word: str) -> int:
    try:
        value = int(word)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{word!r}: give a whole number of runs, 1 or more")
    return value


def _points(low: float, high: float, what: str) -> Any:
    """An argparse type: a number above ``low`` and up to ``high`` (below 100 for a score)."""
    return _number(what, low, high, open_low=True, open_high=high == 100)


def build_parser() -> argparse.ArgumentParser:
    """The ``niah`` command line."""
    parser = Parser(
        prog="niah", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    _add_run_commands(commands)
    _add_show_commands(commands)
    compare = commands.add_parser("compare", help="runs side by side on their shared grid")
    compare.add_argument(
        "run_ids",
        nargs="+",
        metavar="RUN_ID",
        help="runs' IDs (latest: the most recent run); one run with an axis compares its values",
    )
    compare.add_argument(
        "--out", type=Path, required=True, help="the HTML page (a PNG is written beside it)"
    )
    compare.add_argument(
        "--json",
        action=BooleanFlag,
        default=False,
        help="print the paired tests, the difference and the disagreements as JSON",
    )
    compare.add_argument(
        "--allow-different-models",
        action=BooleanFlag,
        default=False,
        help="compare even runs answered by another model than they asked for (a routed ID)",
    )
    compare.set_defaults(handler=cmd_compare)
    _add_plan_command(commands)
    return parser


def _add_plan_command(commands: Any) -> None:
    """``plan``: the run options, then the change to detect and what it assumes."""
    from niah.core.results import power

    plan = commands.add_parser(
        "plan",
        help="samples per point to detect a change between two runs, its power and its cost; "
        "with --mode certify, what a certificate reaches on an assumed curve and what it costs "
        "(docs/planning.md); calls nothing",
    )
    add_run_options(plan)
    plan.add_argument(
        "--detect",
        type=_points(0, 100, "the change to detect in points of percent, between 0 and 100"),
        default=None,
        metavar="POINTS",
        help="the change between the two runs' means to detect, in points of percent "
        "(a comparison's plan: required unless --mode certify)",
    )
    plan.add_argument(
        "--change",
        choices=("drop", "rise"),
        default="drop",
        help="the second run below the first (drop, default) or above it (rise)",
    )
    plan.add_argument(
        "--power",
        type=_points(0, 100, "a power in percent, more than 0 and less than 100"),
        default=power.DEFAULT_POWER,
        metavar="PERCENT",
        help="the chance to call the change significant (default %(default)g %%)",
    )
    plan.add_argument(
        "--expected_score",
        "--expected-score",
        nargs="+",
        type=_number("a score in percent, 0 to 100", 0, 100, open_high=False),
        default=None,
        metavar="PERCENT",
        help="the first run's expected mean (default: the pilot's, else 50 %%, about the worst "
        "case); with --mode certify, the share right at every length, or one per length "
        "(default 100: right on every sample)",
    )
    plan.add_argument(
        "--effective_length",
        "--effective-length",
        type=_number(
            "a length in tokens, more than 0", 0, float("inf"), open_low=True, open_high=True
        ),
        default=None,
        metavar="TOKENS",
        help="with --mode certify: the model's assumed true effective length (right at "
        "--expected_score up to it, never beyond)",
    )
    plan.add_argument(
        "--pilot",
        nargs="+",
        metavar="RUN_ID",
        help="one run (or two over the same grid) to measure the score, icc and coupling on, "
        "where not given",
    )
    plan.add_argument(
        "--icc",
        type=_number(
            "an intra-cluster correlation, at least 0 and less than 1", 0, 1, open_high=True
        ),
        default=None,
        help=f"how alike a grid point's samples are, 0-1 (default: the pilot's, else "
        f"{power.DEFAULT_ICC:g})",
    )
    plan.add_argument(
        "--coupling",
        type=_number("a coupling between 0 and 1", 0, 1, open_high=False),
        default=None,
        help="how often a pair is answered alike where both runs' chances allow, 0-1 "
        f"(default: two pilots', else {power.DEFAULT_COUPLING:g}: independently, the cautious end)",
    )
    plan.add_argument(
        "--changed_points",
        "--changed-points",
        # More than 0: the power model refuses 0 itself, naming the option.
        type=_number("a share of the grid points in percent, 0 to 100", 0, 100, open_high=False),
        default=power.DEFAULT_CHANGED_POINTS,
        metavar="PERCENT",
        help="the share of grid points the change falls on (default %(default)g %%: all)",
    )
    plan.add_argument("--json", action=BooleanFlag, default=False, help="print JSON for scripts")
    plan.set_defaults(handler=cmd_plan)


def _add_expected_score(parser: Any, said: str, default: float | None) -> None:
    """``--expected_score``: the score a margin (``run``) or a plan's first run expects."""
    parser.add_argument(
        "--expected_score",
        "--expected-score",
        type=_points(0, 100, "a score in percent, more than 0 and less than 100"),
        default=default,
        metavar="PERCENT",
        help=said,
    )


def _number(what: str, low: float, high: float, *, open_low: bool = False, open_high: bool) -> Any:
    """An argparse type: a number from ``low`` to ``high``, each end left out if open."""

    def parse(word: str) -> float:
        try:
            value = float(word)
        except ValueError:
            value = float("nan")
        above = low < value if open_low else low <= value
        below = value < high if open_high else value <= high
        if not (above and below):
            raise argparse.ArgumentTypeError(f"{word!r}: give {what}")
        return value

    return parse


def _add_run_commands(commands: Any) -> None:
    """``run`` (the run options, then what the command does with them) and ``wait``."""
    for name, said in (
        ("run", "submit a run"),
        (
            "certify",
            "certify the longest length whose mean reaches a threshold, round by round "
            "(a run with --mode certify; docs/certify.md)",
        ),
    ):
        run = commands.add_parser(name, help=said)
        add_run_options(run)
        _add_run_flags(run)
        if name == "certify":
            run.set_defaults(mode="certify")
    wait = commands.add_parser("wait", help="follow a submitted run to its report")
    wait.add_argument("run_id", help="a run's ID, or latest for the most recent run")
    wait.add_argument("--timeout", type=float, default=None, help=TIMEOUT_HELP)
    wait.set_defaults(handler=cmd_wait)
    cancel = commands.add_parser(
        "cancel", help="stop a run: no further cell is asked (niah run --resume goes on)"
    )
    cancel.add_argument("run_id", help="a run's ID, or latest for the most recent run")
    cancel.add_argument("--url", help="dispatcher URL (default: $DISPATCHER_URL)")
    cancel.add_argument("--json", action=BooleanFlag, default=False, help="print JSON for scripts")
    cancel.set_defaults(handler=cmd_cancel)


def _add_run_flags(run: Any) -> None:
    """What ``run`` and ``certify`` do with their options: send, follow, estimate."""
    # The run command's own flags: where to send the request and what to do after.
    # A flag that picks several requests at once (a suite) belongs here too.
    run.add_argument("--url", help="dispatcher URL (default: $DISPATCHER_URL)")
    run.add_argument(
        "--wait", action=BooleanFlag, default=False, help="follow the run until its report"
    )
    run.add_argument(
        "--resume",
        metavar="RUN_ID",
        help="finish a run: retry its failed and missing cells, keep the answered ones",
    )
    run.add_argument(
        "--estimate",
        action=BooleanFlag,
        default=False,
        help="print the grid's tokens and cost (naive, cache-aware, judge); call nothing",
    )
    run.add_argument(
        "--margin",
        type=_points(0, 50, "a margin in points of percent, more than 0 and at most 50"),
        metavar="POINTS",
        help="with --estimate: the samples per point a 95 %% interval of ± POINTS needs",
    )
    _add_expected_score(
        run, "with --margin: the score you expect (default: the worst case, 50 %%)", None
    )
    run.add_argument("--timeout", type=float, default=None, help=TIMEOUT_HELP)
    run.add_argument(
        "--suite",
        choices=["ruler", "context-rot"],
        help="ruler: one run per RULER task the service has (with --wait: RULER's table); "
        "context-rot: one run of 0, 1 and 4 distractors x coherent and shuffled haystacks "
        "(with --wait: Context Rot's table)",
    )
    run.add_argument(
        "--json",
        action=BooleanFlag,
        default=False,
        help="print JSON for scripts: the submission, or with --wait the final status",
    )
    run.set_defaults(handler=cmd_run)


def _add_show_commands(commands: Any) -> None:
    """``status``, ``report``, ``export``, ``list`` and ``index``: the store's runs."""
    status = commands.add_parser("status", help="a run's progress and scores")
    status.add_argument("run_id", help="a run's ID, or latest for the most recent run")
    status.add_argument("--json", action=BooleanFlag, default=False, help="print JSON for scripts")
    status.set_defaults(handler=cmd_status)
    report = commands.add_parser("report", help="a run's heatmap PNG or HTML report")
    report.add_argument("run_id", help="a run's ID, or latest for the most recent run")
    report.add_argument("--out", type=Path, help="download the heatmap PNG here")
    report.add_argument("--html", type=Path, help="render the HTML report here, from the store")
    report.set_defaults(handler=cmd_report)
    export = commands.add_parser("export", help="a run's samples as JSON, CSV or JSONL")
    export.add_argument("run_id", help="a run's ID, or latest for the most recent run")
    export.add_argument(
        "--format",
        choices=EXPORT_FORMATS,
        default="json",
        help="json: a folder of harness-style files (default); csv, jsonl: one file",
    )
    export.add_argument("--out", type=Path, required=True)
    export.set_defaults(handler=cmd_export)
    listing = commands.add_parser("list", help="recent runs, newest first")
    listing.add_argument("--limit", type=_at_least_one, default=20, help="runs shown (default 20)")
    listing.add_argument("--json", action=BooleanFlag, default=False, help="print JSON for scripts")
    listing.set_defaults(handler=cmd_list)
    index = commands.add_parser("index", help="the page of every run, as the bucket keeps it")
    index.add_argument("--out", type=Path, required=True, help="write the HTML page here")
    index.add_argument("--json", type=Path, help="and the index as JSON here")
    index.set_defaults(handler=cmd_index)
    models = commands.add_parser(
        "models", help="the models the service knows: limits, thinking, prices, dates"
    )
    models.add_argument("--json", action=BooleanFlag, default=False, help="print JSON for scripts")
    models.set_defaults(handler=cmd_models)
    killswitch = commands.add_parser(
        "killswitch", help="see, trip or lift the switch that stops new runs (operators)"
    )
    killswitch.add_argument(
        "action", choices=("status", "trip", "lift"), nargs="?", default="status"
    )
    killswitch.add_argument("--reason", help="why it is tripped (trip)")
    killswitch.add_argument(
        "--json", action=BooleanFlag, default=False, help="print JSON for scripts"
    )
    killswitch.set_defaults(handler=cmd_killswitch)
    limits = commands.add_parser(
        "limits", help="spend windows against their ceilings, and every open hold (operators)"
    )
    limits.add_argument("action", choices=("status", "release"), nargs="?", default="status")
    limits.add_argument("run_id", nargs="?", help="with release: the run whose holds to settle")
    limits.add_argument("--json", action=BooleanFlag, default=False, help="print JSON for scripts")
    limits.set_defaults(handler=cmd_limits)
    sentinel = commands.add_parser(
        "sentinel", help="scheduled runs that watch a model for change: list, run now, show"
    )
    sentinel.add_argument("action", choices=("list", "run", "show"))
    sentinel.add_argument("name", nargs="?", help="the sentinel's name (run, show)")
    sentinel.add_argument("--url", help="dispatcher URL (default: $DISPATCHER_URL)")
    sentinel.add_argument(
        "--wait", action=BooleanFlag, default=False, help="with run: follow it to its report"
    )
    sentinel.add_argument("--timeout", type=float, default=None, help=TIMEOUT_HELP)
    sentinel.add_argument(
        "--json", action=BooleanFlag, default=False, help="print JSON for scripts"
    )
    sentinel.set_defaults(handler=cmd_sentinel)


def parse_command_line(argv: list[str]) -> argparse.Namespace:
    """The parsed words; a mistake exits 2, told by the command it was made in.

    argparse leaves words no command took to the top parser, which knows only the
    command names; the command's own parser knows which of its options was meant.
    """
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        commands.choices[args.command].error(f"unrecognized arguments: {' '.join(extra)}")
    return args
