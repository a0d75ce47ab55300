"""The figure tables in docs/, written from the benchmark's results/bench.json.

Figures copied into the docs by hand drifted from the benchmark that made them (a
13.4 ms median where the benchmark wrote 9.6 ms; two pages giving a sample two
different read counts). Each table now sits between marker comments in its page,

    <!-- figures:scale begin -->
    ...written here...
    <!-- figures:scale end -->

and this module rewrites what is between them from ``results/bench.json``, with the
commit and day its section was measured at (``measured``, stamped by scripts/bench.py).
A section the file lacks is left saying which command measures it. Each table declares
the keys it reads, so the benchmark's smoke test can hold the benchmark to them.

    python -m niah_devtools.docs_figures [--results results/bench.json] [--check]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "results" / "bench.json"
PAGES = (REPO / "README.md", *sorted((REPO / "docs").glob("*.md")))
REGENERATE = "`python -m niah_devtools.docs_figures`"
BLOCK = re.compile(
    r"(<!-- figures:(?P<name>[\w-]+) begin -->\n)(?P<body>.*?)(<!-- figures:(?P=name) end -->)",
    flags=re.S,
)
MARKER = re.compile(r"<!-- figures:([\w-]+) (?:begin|end) -->")
EACH = "*"  # in a key path: every element of a list


@dataclass(frozen=True)
class Figures:
    """One table of the docs: the bench.json section it comes from and what it reads."""

    section: str
    keys: tuple[str, ...]  # dotted paths inside the section; "*" steps into each element
    render: Callable[[dict[str, Any]], list[str]]
    measure: str  # the command that writes the section


def values(data: Any, path: str) -> Iterator[Any]:
    """Every value at ``path`` (``runs.*.samples``); raises KeyError where one is absent."""
    head, _, rest = path.partition(".")
    if head == EACH:
        if not isinstance(data, list) or not data:
            raise KeyError(path)
        items = data
    else:
        if not isinstance(data, dict) or head not in data:
            raise KeyError(path)
        items = [data[head]]
    for item in items:
        yield from values(item, rest) if rest else [item]


def usd(value: float) -> str:
    """Dollars to the cent, as the docs' tables give them."""
    return f"${value:,.2f}"


def percent(share: float) -> str:
    """A share in [0, 1] as a percentage to one decimal."""
    return f"{100 * share:.1f} %"


def maybe(value: float | None, spec: str) -> str:
    """A figure the benchmark may leave out (``null``): "n/a" then."""
    return "n/a" if value is None else format(value, spec)


def table(head: list[str], rows: list[list[str]]) -> list[str]:
    """A Markdown table's lines."""
    return [f"| {' | '.join(cells)} |" for cells in (head, ["---"] * len(head), *rows)]


def _cached(way: dict[str, Any]) -> list[str]:
    """A way of sending the grid: its input cost, share cached and calls with a hit."""
    hits = f"{way['calls_with_cache_hits']:,.0f} of {way['calls']:,.0f}"
    return [usd(way["input_usd"]), percent(way["cached_share"]), hits]


CACHED_HEAD = ["input cost", "prompt tokens cached", "calls with a cache hit"]


def _grid_cost(grid: dict[str, Any]) -> list[str]:
    rows = [
        [label, *_cached(grid[key]), f"{grid[key]['wall_seconds']:.0f} s"]
        for label, key in (("naive", "naive"), ("cache-aware", "cache_aware"))
    ]
    naive = grid["naive"]
    return [
        *table(["dispatch", *CACHED_HEAD, "wall"], rows),
        "",
        f"Cache-aware is {percent(grid['cache_aware_saving'])} cheaper. Naive, the calls all "
        f"arrived within {naive['send_spread_seconds']:.1f} s of a "
        f"{grid['stand_in_latency_seconds']:.0f} s latency, so none found another's prefix.",
    ]


def _grid_cost_batch(grid: dict[str, Any]) -> list[str]:
    naive_usd = grid["naive"]["input_usd"]
    rows = [
        [label, *_cached(grid[key]), f"{grid[key]['input_usd'] / naive_usd:.3f}"]
        for label, key in (
            ("online, naive", "naive"),
            ("online, cache-aware", "cache_aware"),
            ("batch", "batch"),
        )
    ]
    batch = grid["batch"]
    uncached = batch["input_usd_without_cache"]
    nothing_cached = {"input_usd": uncached, "cached_share": 0, "calls_with_cache_hits": 0}
    rows.append(
        [
            "batch, had nothing hit the cache",
            *_cached(batch | nothing_cached),
            f"{uncached / naive_usd:.3f}",
        ]
    )
    return table(["execution", *CACHED_HEAD, "share of naive"], rows)


SCALE_ROWS: tuple[tuple[str, Callable[[dict[str, Any]], str]], ...] = (
    ("dispatch (POST), s", lambda run: f"{run['dispatch_seconds']:.2f}"),
    ("wall, POST to report, s", lambda run: f"{run['wall_seconds']:.1f}"),
    ("samples a second", lambda run: f"{run['samples_per_second']:.1f}"),
    (
        "overhead a sample (worker wall minus model), median ms",
        lambda run: f"{run['overhead_ms_median']:.1f}",
    ),
    ("overhead a sample, p99 ms", lambda run: f"{run['overhead_ms_p99']:.1f}"),
    (
        "the same calls alone, in the same hour (bench_floor), median ms",
        lambda run: f"{run['calls_floor']['median_ms']:.1f}",
    ),
    ("overhead over those calls alone", lambda run: f"{run['overhead_over_floor']:.2f}"),
    (
        "of it in Firestore / countTokens / the rest, median ms; beside it on threads",
        lambda run: (
            " / ".join(
                f"{run['waits_ms'][part]['median']:.1f}"
                for part in ("firestore", "count_tokens", "other")
            )
            + f"; {run['waits_ms']['background']['median']:.1f}"
        ),
    ),
    ("worker CPU a sample, ms", lambda run: f"{1000 * run['worker_cpu_seconds_per_sample']:.1f}"),
    (
        "Firestore reads / writes a sample",
        lambda run: (
            f"{run['operations_per_sample']['firestore_reads']:.2f} / "
            f"{run['operations_per_sample']['firestore_writes']:.2f}"
        ),
    ),
    (
        "Pub/Sub messages a sample",
        lambda run: f"{run['operations_per_sample']['pubsub_messages']:.2f}",
    ),
    (
        "Cloud Storage class A / B a sample",
        lambda run: (
            f"{run['operations_per_sample']['gcs_class_a']:.3f} / "
            f"{run['operations_per_sample']['gcs_class_b']:.3f}"
        ),
    ),
    (
        "report render (with every mean's interval), s",
        lambda run: maybe(run["report_render_seconds"], ".1f"),
    ),
    ("report page, MB", lambda run: f"{run['report_html_bytes'] / 1e6:.2f}"),
    ("report opens in Chromium, s", lambda run: f"{run['report_open_seconds']:.2f}"),
    (
        "report function's peak memory, MiB (of its 1 GiB)",
        lambda run: f"{run['report_peak_rss_mib']:.0f}",
    ),
    (
        "service's own cost per 1,000 samples, $",
        lambda run: f"{run['service_usd_per_1000_samples']:.4f}",
    ),
)
SCALE_KEYS = tuple(
    f"runs.*.{key}"
    for key in (
        "samples",
        "dispatch_seconds",
        "wall_seconds",
        "samples_per_second",
        "overhead_ms_median",
        "overhead_ms_p99",
        "waits_ms.firestore.median",
        "waits_ms.count_tokens.median",
        "waits_ms.other.median",
        "waits_ms.background.median",
        "calls_floor.median_ms",
        "overhead_over_floor",
        "worker_cpu_seconds_per_sample",
        "operations_per_sample.firestore_reads",
        "operations_per_sample.firestore_writes",
        "operations_per_sample.pubsub_messages",
        "operations_per_sample.gcs_class_a",
        "operations_per_sample.gcs_class_b",
        "report_render_seconds",
        "report_html_bytes",
        "report_open_seconds",
        "report_peak_rss_mib",
        "service_usd_per_1000_samples",
    )
)


def _scale(scale: dict[str, Any]) -> list[str]:
    runs = scale["runs"]
    head = ["", *(f"{run['samples']:,.0f} samples" for run in runs)]
    return table(head, [[label, *(cell(run) for run in runs)] for label, cell in SCALE_ROWS])


def _counting(counting: dict[str, Any]) -> list[str]:
    head = [
        f"{counting['samples']:,.0f} cells, {counting['threads']:.0f} threads",
        "cells stored a second",
        "writes to the hottest document",
        "its writes a second at 1,000 samples a minute",
    ]
    rows = [
        [
            label,
            f"{counting[key]['cells_per_second']:.1f}",
            f"{counting[key]['hottest_document_writes']:,.0f}",
            f"{counting[key]['hottest_writes_per_second_at_1000_a_minute']:.2f}",
        ]
        for label, key in (("one counter on the run", "one_counter"), ("sharded", "sharded"))
    ]
    ratio = counting["hot_document_ratio"]
    return [*table(head, rows), "", f"The hottest document takes {ratio}x fewer writes."]


def _batch_ingest(ingest: dict[str, Any]) -> list[str]:
    rows = [
        [
            "lines, output",
            f"{ingest['lines']:,.0f} lines in {ingest['output_files']:,.0f} file(s) of "
            f"{ingest['output_mib']:.1f} MiB",
        ],
        [
            "submit (build the prompts, write the input and manifest)",
            f"{ingest['submit_seconds']:.1f} s",
        ],
        [f"pieces of {ingest['piece_mib']:.0f} MiB", f"{ingest['pieces']:,.0f}"],
        [
            "cells stored, lines read",
            f"{ingest['cells_stored']:,.0f} and {ingest['lines_read']:,.0f}",
        ],
        [
            "the pieces not traced, together",
            f"{ingest['untraced_pieces_seconds']:.1f} s (max {ingest['piece_seconds_max']:.1f} "
            f"s a piece: {ingest['piece_seconds_share_of_timeout']} of the worker's 540 s)",
        ],
        [
            "a piece's peak memory (the first, under `tracemalloc`)",
            f"{ingest['piece_peak_mib_max']:.1f} MiB ({ingest['piece_peak_share_of_memory']} "
            "of the worker's 2 GiB)",
        ],
        [
            "the baseline, one request reading the whole output",
            f"{ingest['whole_output_peak_mib']:.1f} MiB",
        ],
        ["a piece's peak / the baseline's", f"{ingest['piece_peak_share_of_whole']:.2f}"],
    ]
    return table(["measured", "figure"], rows)


def _local_reuse(reuse: dict[str, Any]) -> list[str]:
    with_reuse, without = reuse["with_reuse"], reuse["without_reuse"]
    return [
        f"With reuse llama.cpp evaluated {with_reuse['prompt_tokens_evaluated']:,.0f} of "
        f"{without['prompt_tokens_evaluated']:,.0f} prompt tokens over {reuse['cells']:.0f} "
        f"cells, in {with_reuse['model_seconds']:.1f} model seconds against "
        f"{without['model_seconds']:.1f} without ({reuse['model_seconds_ratio']}x)."
    ]


def _certify(certify: dict[str, Any]) -> list[str]:
    rows = [
        [
            f"{c['midpoint_tokens']:,} (width {c['width']:g}"
            + (f", right at most {percent(c['top'])}" if c.get("top", 1) != 1 else "")
            + ")",
            f"{c['true_length']:,}",
            f"{c['within_one_length']:.0f} of {c['seeds']:.0f}",
            f"{c['exact']:.0f} of {c['seeds']:.0f}",
            f"{c['determined']:.0f} of {c['seeds']:.0f}",
            f"{percent(c['share_of_grid_usd']['mean'])} / {percent(c['share_of_grid_usd']['max'])}",
            f"{c['rounds']['mean']:g} / {c['rounds']['max']:.0f}",
            f"{c['grid_determined']:.0f} of {c['seeds']:.0f}",
        ]
        for c in certify["curves"]
    ]
    head = [
        "curve: half right at (tokens)",
        "true effective length",
        "certified within one length",
        "exactly",
        "determined (no length left open between)",
        "model cost, share of the grid's (mean / max)",
        "rounds (mean / max)",
        "the 11 x 11 x 5 grid determined it",
    ]
    return [
        *table(head, rows),
        "",
        f"Grid: {certify['length_count']:.0f} lengths ({certify['shortest']:,.0f} to "
        f"{certify['longest']:,.0f} tokens, log-spaced) x "
        f"{certify['depths']:.0f} depths x {certify['grid_samples_per_point']:.0f} samples, "
        f"{usd(certify['grid_usd'])} of {certify['model']}'s model cost; certify's budget "
        f"{percent(certify['budget_share'])} of it, "
        + (
            "NoLiMa's rule (85 % of the share at the shortest length)."
            if certify.get("rule") == "nolima"
            else f"threshold {certify['threshold']:g} %."
        ),
    ]


CERTIFY_CURVE_KEYS = (
    "midpoint_tokens",
    "width",
    "true_length",
    "seeds",
    "within_one_length",
    "exact",
    "determined",
    "share_of_grid_usd.mean",
    "share_of_grid_usd.max",
    "rounds.mean",
    "rounds.max",
    "grid_determined",
)
CERTIFY_KEYS = (
    "length_count",
    "shortest",
    "longest",
    "depths",
    "grid_samples_per_point",
    "grid_usd",
    "model",
    "budget_share",
    "threshold",
)


def _certify_random(certify: dict[str, Any]) -> list[str]:
    """The randomized families' table (issue 54): per family, and all curves."""
    drawn = certify["random"]
    rows = [
        [
            str(name),
            f"{t['curves']:.0f}",
            f"{t['reachable']:.0f}",
            f"{t['within_one_length']:.0f} ({percent(t['within_one_length_share'])})",
            f"{t['longer_beyond_zone']:.0f}",
            f"{t['unreachable_budget_spent']:.0f} of {t['curves'] - t['reachable']:.0f}",
            f"{percent(t['share_of_grid_usd']['mean'])} / {percent(t['share_of_grid_usd']['max'])}",
        ]
        for name, t in [(f["family"], f) for f in drawn["families"]] + [("all", drawn["all"])]
    ]
    head = [
        "family",
        "curves",
        "reachable",
        "within one length (of the reachable)",
        "longer than the truth beyond the zone",
        "unreachable ending 'budget spent'",
        "model cost, share of the grid's (mean / max)",
    ]
    return [
        *table(head, rows),
        "",
        f"{drawn['all']['curves']:.0f} curves drawn with seed {drawn['seed']:.0f}; zone "
        f"{drawn['zone']:g} points around {certify['threshold']:g} %; the budget "
        f"{percent(certify['budget_share'])} of the {usd(certify['grid_usd'])} grid.",
    ]


TALLY_KEYS = (
    "curves",
    "reachable",
    "within_one_length",
    "within_one_length_share",
    "longer_beyond_zone",
    "unreachable_budget_spent",
    "share_of_grid_usd.mean",
    "share_of_grid_usd.max",
)
CERTIFY_RANDOM_KEYS = (
    "random.families.*.family",
    *(f"random.{rows}.{key}" for rows in ("families.*", "all") for key in TALLY_KEYS),
    "random.seed",
    "random.zone",
    "threshold",
    "budget_share",
    "grid_usd",
)


def _certify_figures(part: str) -> Figures:
    """A certify table (RULER's rule, or NoLiMa's: the same shape, bench part ``part``)."""
    keys = (*(f"curves.*.{key}" for key in CERTIFY_CURVE_KEYS), *CERTIFY_KEYS)
    return Figures(part, keys, _certify, f"scripts/bench.sh --only {part}")


def _length(n: float | None) -> str:
    """An effective length in tokens, or that none reached the threshold."""
    return "none (below the shortest)" if n is None else f"{n:,.0f}"


def _share(mean: float | None) -> str:
    """A length's mean score, or that none of its samples was scored."""
    return "none scored" if mean is None else f"{mean:.1f} %"


def _certify_local(local: dict[str, Any]) -> list[str]:
    grid, certify = local["grid"], local["certify"]
    looks = {look["length"]: look for look in certify["by_length"]}
    rows = [
        [
            f"{point['length']:,.0f}",
            f"{_share(point['mean'])} ({point['samples']:.0f})",
            (
                f"{_share(look['mean'])} ({look['samples']:.0f}, {look['verdict']})"
                if (look := looks.get(point["length"])) and look["samples"]
                else "not asked"
            ),
        ]
        for point in grid["by_length"]
    ]
    costs = [
        [
            name,
            _length(run["length"]),
            f"{run['samples']:,.0f} ({run['unscored']:,.0f} unscored)",
            f"{run['model_seconds']:,.1f}",
            f"{run['speed_seconds']:,.1f}",
            f"{run['prompt_tokens']:,.0f} / {run['output_tokens']:,.0f}",
        ]
        for name, run in (("the full grid", grid), ("certify", certify))
    ]
    request = local["request"]
    return [
        *table(
            ["length (tokens)", "the grid: mean score (samples)", "certify: its last look"], rows
        ),
        "",
        *table(
            [
                "run",
                "effective length",
                "samples",
                "model seconds (measured)",
                "at the catalog's speed, s",
                "prompt / reply tokens",
            ],
            costs,
        ),
        "",
        f"The grid: {grid['text']}. The certificate: {certify['text']}; "
        f"{certify['rounds']:.0f} rounds, stopped: {certify['reason']}.",
        "",
        f"Certify took {percent(local['model_seconds_share_of_grid'])} of the grid's model "
        f"seconds as measured, {percent(local['speed_seconds_share_of_grid'])} of them at "
        f"the catalog's speed and {percent(local['tokens_share_of_grid'])} of its prompt "
        "tokens; its "
        f"length is {local['lengths_apart']:.0f} candidate lengths from the grid's "
        f"(within one: {'yes' if local['within_one_length'] else 'no'}). Task "
        f"{request['task']}, depths "
        f"{', '.join(f'{d:g}' for d in request['document_depth_percents'])} %, seed "
        f"{request['seed']:.0f}, rule {local['rule']}, the grid at "
        f"{local['grid_samples_per_point']:.0f} samples a point.",
    ]


CERTIFY_LOCAL_KEYS = (
    *(f"grid.by_length.*.{key}" for key in ("length", "mean", "samples")),
    *(f"certify.by_length.*.{key}" for key in ("length", "mean", "samples", "verdict")),
    *(
        f"{run}.{key}"
        for run in ("grid", "certify")
        for key in (
            "length",
            "samples",
            "unscored",
            "model_seconds",
            "speed_seconds",
            "prompt_tokens",
            "output_tokens",
            "text",
        )
    ),
    "certify.rounds",
    "certify.reason",
    "model_seconds_share_of_grid",
    "speed_seconds_share_of_grid",
    "tokens_share_of_grid",
    "lengths_apart",
    "within_one_length",
    "request.task",
    "request.document_depth_percents.*",
    "request.seed",
    "rule",
    "grid_samples_per_point",
)


GRID_WAYS = ("naive", "cache_aware")
WAY_KEYS = ("input_usd", "cached_share", "calls_with_cache_hits", "calls")
FIGURES: dict[str, Figures] = {
    "grid_cost": Figures(
        "grid_cost",
        (
            *(f"{way}.{key}" for way in GRID_WAYS for key in (*WAY_KEYS, "wall_seconds")),
            "naive.send_spread_seconds",
            "stand_in_latency_seconds",
            "cache_aware_saving",
        ),
        _grid_cost,
        "scripts/bench.sh --only grid_cost",
    ),
    "grid_cost_batch": Figures(
        "grid_cost",
        (
            *(f"{way}.{key}" for way in (*GRID_WAYS, "batch") for key in WAY_KEYS),
            "batch.input_usd_without_cache",
        ),
        _grid_cost_batch,
        "scripts/bench.sh --only grid_cost",
    ),
    "scale": Figures("scale", SCALE_KEYS, _scale, "scripts/bench.sh --only scale"),
    "counting": Figures(
        "counting",
        (
            "samples",
            "threads",
            "hot_document_ratio",
            *(
                f"{way}.{key}"
                for way in ("one_counter", "sharded")
                for key in (
                    "cells_per_second",
                    "hottest_document_writes",
                    "hottest_writes_per_second_at_1000_a_minute",
                )
            ),
        ),
        _counting,
        "scripts/bench.sh --only counting",
    ),
    "batch_ingest": Figures(
        "batch_ingest",
        (
            "lines",
            "output_files",
            "output_mib",
            "submit_seconds",
            "piece_mib",
            "pieces",
            "cells_stored",
            "lines_read",
            "untraced_pieces_seconds",
            "piece_seconds_max",
            "piece_seconds_share_of_timeout",
            "piece_peak_mib_max",
            "piece_peak_share_of_memory",
            "whole_output_peak_mib",
            "piece_peak_share_of_whole",
        ),
        _batch_ingest,
        "scripts/bench.sh --only batch_ingest",
    ),
    **{part: _certify_figures(part) for part in ("certify", "certify_nolima")},
    "certify_random": Figures(
        "certify", CERTIFY_RANDOM_KEYS, _certify_random, "scripts/bench.sh --only certify"
    ),
    "certify_local": Figures(
        "certify_local",
        CERTIFY_LOCAL_KEYS,
        _certify_local,
        "scripts/bench.sh --only certify_local",
    ),
    "certify_local_single": Figures(
        "certify_local_single",
        CERTIFY_LOCAL_KEYS,
        _certify_local,
        "scripts/bench.sh --only certify_local_single",
    ),
    "local_reuse": Figures(
        "local_reuse",
        (
            "cells",
            "model_seconds_ratio",
            *(
                f"{way}.{key}"
                for way in ("with_reuse", "without_reuse")
                for key in ("prompt_tokens_evaluated", "model_seconds")
            ),
        ),
        _local_reuse,
        "scripts/bench.sh --only local_reuse",
    ),
}


def missing_keys(bench: dict[str, Any], names: list[str]) -> list[str]:
    """The keys the named tables read that ``bench`` lacks, as ``section.path``."""
    missing = []
    for name in names:
        figures = FIGURES[name]
        for path in figures.keys:
            try:
                list(values(bench.get(figures.section), path))
            except KeyError:
                missing.append(f"{figures.section}.{path}")
    return missing


def cited(pages: tuple[Path, ...] = PAGES) -> list[str]:
    """Every table the docs cite, by the name in its markers."""
    return sorted({name for page in pages for name in MARKER.findall(page.read_text())})


def provenance(bench: dict[str, Any], section: str) -> str:
    """Where a table's figures came from: the commit and day its section was measured."""
    stamp = bench.get("measured", {}).get(section)
    if stamp:
        return f"commit `{stamp['commit']}`, {stamp['date']}"
    # The file's date would say when any section was last written, not this one.
    return "commit and date not recorded"


def block(name: str, bench: dict[str, Any]) -> str:
    """What goes between a table's markers: the table and where it came from."""
    figures = FIGURES[name]
    if missing_keys(bench, [name]):
        return (
            f"*Not measured in this checkout's `results/bench.json`: run `{figures.measure}`, "
            f"then {REGENERATE}.*\n"
        )
    lines = figures.render(bench[figures.section])
    source = provenance(bench, figures.section)
    note = f"*From `results/bench.json` (`{figures.section}`; {source}), by {REGENERATE}.*"
    return "\n".join([*lines, "", note]) + "\n"


def rewrite(text: str, bench: dict[str, Any], results: Path) -> str:
    """``text`` with every marked table written anew; a marker of no known table raises."""
    for name in MARKER.findall(text):
        if name not in FIGURES:
            raise KeyError(f"no figures named {name!r} (known: {', '.join(FIGURES)})")
    return BLOCK.sub(lambda m: m.group(1) + block(m.group("name"), bench) + m.group(4), text)


def main(argv: list[str] | None = None) -> int:
    """Rewrite the docs' tables (or, with ``--check``, say which are out of date)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=RESULTS, help="the benchmark's output")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if stale")
    args = parser.parse_args(argv)
    bench = json.loads(args.results.read_text())
    stale = []
    for page in PAGES:
        text = page.read_text()
        new = rewrite(text, bench, args.results)
        if new != text:
            stale.append(page)
            if not args.check:
                page.write_text(new)
    for page in stale:
        print(f"{page.relative_to(REPO)}: {'stale' if args.check else 'rewritten'}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
