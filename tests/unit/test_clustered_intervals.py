"""Issue 54: intervals that say what they assume, and hold their 95 % on clustered samples.

Samples of one grid point share its haystack and the needle's place, so their outcomes
go together. The simulation draws each point's own chance of being right from a beta
distribution (its mean the model's share, its intra-cluster correlation rho: a point
where the needle is easy to find gets all its samples right), then the samples of each
point from it, and asks how often each interval holds the model's share. Seeded, and a
second or so.
"""

from __future__ import annotations

import math
import random

import pytest

from niah.core.results.measures import grid_point, measures
from niah.core.results.uncertainty import (
    cluster_variances,
    effective_samples,
    interval,
    wilson_share_bounds,
)

# (points, samples a point, share, rho, simulated runs).
CLUSTERED = [
    (15, 4, 0.8, 0.3, 3000),  # 3 lengths x 5 depths, 4 samples a point: a sentinel's grid
    (55, 10, 0.5, 0.3, 1000),  # 11 lengths x 5 depths, 10 samples a point
]


def coverage(points: int, per_point: int, share: float, rho: float, runs: int) -> tuple[float, ...]:
    """How often the clustered interval, and the naive one, hold ``share``."""
    rng = random.Random(54)
    a, b = share * (1 / rho - 1), (1 - share) * (1 / rho - 1)
    clusters = [point for point in range(points) for _ in range(per_point)]
    held = naive_held = 0
    for _ in range(runs):
        chances = [rng.betavariate(a, b) for _ in range(points)]
        scores = [float(rng.random() < chances[point]) for point in clusters]
        found = interval(scores, clusters=clusters)
        naive = interval(scores)
        assert found is not None and naive is not None
        assert found.method == "clustered" and naive.method == "wilson"
        held += found.low <= 100 * share <= found.high
        naive_held += naive.low <= 100 * share <= naive.high
    return held / runs, naive_held / runs


@pytest.mark.parametrize(("points", "per_point", "share", "rho", "runs"), CLUSTERED)
def test_the_clustered_interval_holds_95_percent_where_the_naive_one_does_not(
    points: int, per_point: int, share: float, rho: float, runs: int
) -> None:
    clustered, naive = coverage(points, per_point, share, rho, runs)
    assert clustered >= 0.94, (clustered, naive)
    assert naive < 0.94, (clustered, naive)  # the data are clustered enough to matter


def test_the_clustered_variance_is_miller_s_naive_one_plus_the_cross_products() -> None:
    """Miller (2024): SE² = SE_CLT² + (1/n²) Σ_c Σ_i Σ_(j≠i) (s_ic - s̄)(s_jc - s̄); CR1 x G/(G-1)."""
    values = [1.0, 1.0, 0.0, 1.0, 0.0, 0.0, 1.0]
    clusters = ["a", "a", "a", "b", "b", "c", "c"]
    n, mean = len(values), sum(values) / len(values)
    naive = sum((v - mean) ** 2 for v in values) / n**2
    cross = sum(
        (values[i] - mean) * (values[j] - mean)
        for i in range(n)
        for j in range(n)
        if i != j and clusters[i] == clusters[j]
    )
    found_naive, found_clustered, count = cluster_variances(values, clusters)
    assert count == 3 and found_naive == pytest.approx(naive)
    assert found_clustered == pytest.approx(3 / 2 * (naive + cross / n**2))


def test_alike_samples_count_each_point_once_and_one_per_point_is_wilson_as_before() -> None:
    # 20 of 20 right in 5 points: no variance, so 5 points' worth, shrunk for 4 degrees of
    # freedom (t = 2.776): Wilson's lower bound at n = 5 (1.96 / 2.776)² = 2.49.
    alike = interval([1.0] * 20, clusters=[p for p in range(5) for _ in range(4)])
    assert alike is not None and alike.method == "clustered"
    assert (alike.samples, alike.clusters) == (20, 5)
    effective = 5 * (1.959963984540054 / 2.7764451051977987) ** 2
    assert alike.low == pytest.approx(100 * effective / (effective + 1.959963984540054**2))
    # One sample a point: the clusters change nothing, Wilson's interval as before.
    one_each = interval([1.0] * 19 + [0.0], clusters=list(range(20)))
    assert one_each == interval([1.0] * 19 + [0.0])
    assert one_each is not None and (one_each.method, one_each.clusters) == ("wilson", 20)


def test_a_graded_mean_s_effective_samples_match_its_clustered_variance() -> None:
    values = [0.5, 0.25, 0.75, 0.5, 1.0, 0.75]
    clusters = [1, 1, 2, 2, 3, 3]
    naive, clustered, _ = cluster_variances(values, clusters)
    mean = sum(values) / len(values)
    degrees = (1.959963984540054 / 4.302652729911275) ** 2  # t on 2 degrees of freedom
    found = effective_samples(values, clusters)
    assert found == pytest.approx(mean * (1 - mean) / max(naive, clustered) * degrees)
    low, high = wilson_share_bounds(mean, found)
    got = interval(values, clusters=clusters)
    assert got is not None and (got.low, got.high) == (100 * low, 100 * high)
    assert math.isclose(got.low + got.high, 100 * (low + high))


def test_a_run_s_measures_cluster_by_grid_point_and_say_so() -> None:
    cells = [
        {"context_length": n, "depth_percent": d, "sample": s, "task_score": float(s != 0)}
        for n in (1000, 2000)
        for d in (0.0, 50.0, 100.0)
        for s in range(4)
    ]
    found = measures(cells, rule="ruler")
    basis = found["interval_basis"]
    assert basis["mean"] == {"method": "clustered", "samples": 24, "clusters": 6}
    assert basis["by_length"]["1000"] == {"method": "clustered", "samples": 12, "clusters": 3}
    assert basis["by_depth"]["50"] == {"method": "clustered", "samples": 8, "clusters": 2}
    assert basis["clusters"].startswith("clustered by grid point")
    assert found["interval_methods"] == ["clustered"]
    assert grid_point(cells[0] | {"variant": "d4"}) == (1000, 0.0, "d4")
