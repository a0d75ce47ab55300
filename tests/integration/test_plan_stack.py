"""Issue 54: ``niah plan`` against the local stack: its pilots, and a certificate it forecasts.

``niah plan --pilot`` reads two runs of the local stack as Firestore holds them: two
small runs through the Vertex stand-in answering right about 70 % of the time (its
known curve, flat: ``KnownCurve`` with a far midpoint), two samples a point, seeds 41
and 42 (other needles, so the pairs are independent draws). The plan must take the
score, the icc and the coupling from them, and price the grid as ``--estimate`` does.
``niah plan --mode certify`` must forecast the certificate a run of a model right on
every sample then gives.
"""

from __future__ import annotations

import json

import pytest
import requests

from niah.cloud.blobs import GcsBlobStore
from niah.cloud.store import FirestoreStore
from niah.core.results.pilot import pilot_figures
from niah_devtools.standin_curve import KnownCurve
from tests.integration.conftest import Stack
from tests.integration.test_certify_stack import LENGTHS, certified
from tests.integration.test_local_stack import wait_complete
from tests.integration.test_tasks_run import submit

pytestmark = pytest.mark.integration

GRID = {
    "model_name": "gemini-3.8-flash",
    "context_lengths": [400, 800],
    "document_depth_percents": [0, 25, 50, 75, 100],
    "samples_per_cell": 2,
}
FLAT = KnownCurve(midpoint_tokens=1e12, width=1.0, top=0.7, seed=54)


def test_a_plan_measures_its_assumptions_on_two_stored_pilots(stack: Stack) -> None:
    configure = f"{stack.env['VERTEX_STANDIN_URL']}/_standin/config"
    requests.post(configure, json={"curve": FLAT.__dict__}, timeout=5).raise_for_status()
    try:
        first, second = submit(stack, GRID | {"seed": 41}), submit(stack, GRID | {"seed": 42})
        for run_id in (first, second):
            wait_complete(run_id, timeout=300)
    finally:
        requests.post(configure, json={}, timeout=5).raise_for_status()

    words = ["--model_name", "gemini-3.8-flash", "--context_lengths", "400", "800", "1600"]
    words += ["--document_depth_percent_intervals", "5", "--samples_per_cell", "4"]
    done = stack.niah("plan", *words, "--detect", "10", "--pilot", first, second, "--json")
    assert done.returncode == 0, done.stderr
    planned = json.loads(done.stdout)
    store = FirestoreStore()
    measured = pilot_figures(store.list_cells(first), store.list_cells(second))
    assert (measured.points, measured.samples, measured.pairs) == (10, 20, 20)
    assumed, asked = planned["assumptions"], planned["question"]
    assert asked["expected_score"] == measured.expected_score
    assert (assumed["icc"], assumed["coupling"]) == (measured.icc, measured.coupling)
    assert assumed["from"] == {
        "expected_score": first, "icc": first, "coupling": f"{first} and {second}"
    }  # fmt: skip
    assert (
        f"pilot {first} and {second}: 20 scored samples in 10 points, 20 pairs"
        in (planned["notes"])
    )
    # The dollars: `niah run --estimate`'s for the same grid, model and samples.
    estimate = stack.niah("run", *words, "--estimate", "--json")
    assert estimate.returncode == 0, estimate.stderr
    figures = json.loads(estimate.stdout)
    assert planned["samples_per_run"] == figures["cells"] == 60
    assert planned["cost"]["cost_usd_at_most"] == figures["cost_usd_at_most"]


# Right on every sample: a logistic whose midpoint is far past any length asked (its
# share at 8,000 tokens is 1 - 8e-9).
ALWAYS_RIGHT = KnownCurve(midpoint_tokens=1e12, width=1.0, top=1.0, seed=54)


def test_an_always_right_model_certifies_exactly_the_length_its_plan_forecasts(
    stack: Stack,
) -> None:
    """``niah plan --mode certify`` before the run, the run's certificate after: the same.

    At $0.10 on gemini-3.8-flash over 500-8,000 tokens the plan forecasts "at least
    2,000" (the budget runs out before 4,000 passes), and names a budget that reaches
    8,000; a model right on every sample answers as the forecast assumes, so a run at
    each budget must certify the length forecast, with the same samples and dollars.
    """
    words = ["--model_name", "gemini-3.8-flash", "--context_lengths", *map(str, LENGTHS)]
    words += ["--document_depth_percents", "0", "50", "100", "--certify_max_usd", "0.1"]
    done = stack.niah("plan", "--mode", "certify", *words, "--json")
    assert done.returncode == 0, done.stderr
    planned = json.loads(done.stdout)
    forecast, needed = planned["forecast"], planned["to_reach"]["needed"]
    assert forecast["length"] == 2000 and forecast["reason"] == "budget"
    # The budget the plan says reaches 8,000 is a run's too.
    assert needed["length"] == 8000
    for budget, expected in ((0.1, forecast), (needed["budget"], needed)):
        _, run = certified(stack, ALWAYS_RIGHT, {"certify_max_usd": budget, "seed": 54})
        summary = json.loads(GcsBlobStore(stack.env["NIAH_BUCKET"]).read(
            run["report"]["summary_uri"].split("/", 3)[3]
        ))  # fmt: skip
        certificate = summary["certificate"]
        assert (certificate["length"], certificate["below"], certificate["reason"]) == (
            expected["length"], expected["below"], expected["reason"]
        )  # fmt: skip
        assert certificate["samples"] == expected["samples"]
        assert certificate["tokens"] == expected["tokens"]
        assert certificate["usd"] == round(expected["cost"], 4)  # the summary keeps 4 digits
        assert len(certificate["looks"]) == expected["rounds"]
