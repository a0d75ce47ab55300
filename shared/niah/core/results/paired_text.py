"""How a paired test reads: its effect, interval, p-value and pairs, in one line or a table.

The words ``niah compare``, the comparison page and the sentinel's check all use, apart
from the tests themselves (``niah.core.results.paired``).
"""

from __future__ import annotations

from niah.core.results.paired import PairedComparison, PairedTest, round_points


def p_figure(p_value: float) -> str:
    """A p-value as a reader takes it: two significant digits, tiny ones as "< 0.001"."""
    return "< 0.001" if p_value < 0.001 else f"{p_value:.2g}"


def p_text(p_value: float) -> str:
    """The p-value in words: "p = 0.0078", "p < 0.001"."""
    figure = p_figure(p_value)
    return f"p {figure}" if figure.startswith("<") else f"p = {figure}"


def points_text(value: float) -> str:
    """A difference in points with its sign: "+12.5", "-3", "0"."""
    rounded = round_points(value)
    return f"{rounded:+g}" if rounded else "0"


def effect_text(test: PairedTest) -> str:
    """A test in one line: "-50 points (95 %: -75.2 to -12.1), p = 0.0078, 8 pairs: ..."."""
    bounds = (
        ""
        if test.low is None or test.high is None
        else f" (95 %: {points_text(test.low)} to {points_text(test.high)})"
    )
    return (
        f"{points_text(test.effect)} points{bounds}, {p_text(test.p_value)}, "
        f"{pairs_text(test)}: {test.verdict}"
    )


def pairs_text(test: PairedTest) -> str:
    """The pairs a test rests on: "8 pairs", or "40 pairs in 10 grid points" when clustered."""
    pairs = f"{test.pairs:,} pair{'s' * (test.pairs != 1)}"
    return f"{pairs} in {test.clusters:,} grid points" if test.method == "clustered" else pairs


METHOD_NAMES = {
    "mcnemar": "exact McNemar test on right/wrong outcomes, each pair independent",
    "permutation": "paired permutation test on graded scores, each pair independent",
    "clustered": (
        "paired permutation test over grid points, a point's pairs swapped together, "
        "with intervals clustered by grid point and holding the test's own"
    ),
}


def comparison_lines(paired: PairedComparison) -> list[str]:
    """The comparison as text: the method, overall, then each length."""
    first, second = paired.names()
    if paired.overall is None:
        return [
            f"{second} minus {first}: no sample is scored in both runs, so nothing can be tested"
        ]
    lines = [
        f"{second} minus {first} ({METHOD_NAMES[paired.overall.method]}, "
        f"samples paired by length, depth and sample index):",
        f"  overall: {effect_text(paired.overall)}",
    ]
    lines += [f"  {length:,} tokens: {effect_text(t)}" for length, t in paired.by_length.items()]
    if paired.unscored_pairs:
        lines.append(
            f"  {paired.unscored_pairs:,} shared samples are scored in one run only "
            "(failed, unscored or truncated in the other) and are left out"
        )
    return lines
