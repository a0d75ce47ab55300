"""RULER's suite: one run per RULER task the service has, and RULER's table of them.

RULER (Hsieh et al., 2024; NVIDIA/RULER ``scripts/synthetic.yaml``, read 2026-11-26 at
c3f5e3b) has 13 tasks. The service runs 9 of them with RULER's settings:

- ``niah_single_1/2/3``: one RULER needle (``multi_key`` with no distractors) with word
  keys and number values in the noise haystack, in essays, and with UUID values in essays;
- ``niah_multikey_1``: the asked needle among 3 of the same form (``multi_key``), essays;
- ``niah_multivalue``, ``niah_multiquery``: 4 values of one key, 4 keys asked, essays;
- ``vt``, ``cwe``, ``fwe``: variable tracking (1 chain, 4 hops, noise), common words and
  frequent words (RULER's defaults).

Left out (``LEFT_OUT`` says why): ``niah_multikey_2`` and ``niah_multikey_3``, whose
haystack is made only of needles (no such haystack here), and ``qa_1`` / ``qa_2``, which
need SQuAD and HotpotQA (datasets the service does not ship or download).

RULER's table (``niah.core.results.ruler_table``): rows tasks, columns lengths, each the
task's mean score (recall, percent); the average over the tasks per length; the effective
length, the longest length up to which every average is above Llama-2-7B's 85.6 (RULER's
README, read 2026-11-26). The average is over the tasks run here, so it is not RULER's
13-task average. The suite is here, with the tasks, because it is made of their options.
"""

from __future__ import annotations

from typing import Any

from niah.core.request.task_options import option_owners
from niah.core.results.ruler_table import RulerTable, suite_run_name, suite_table
from niah.core.runs import RunRecord

ESSAYS = "paul_graham_essays"
NOISE = "noise"

# Each RULER task as run options (RULER's names; synthetic.yaml's settings).
RULER_RUNS: dict[str, dict[str, Any]] = {
    "niah_single_1": {
        "task": "multi_key",
        "num_distractors": 0,
        "haystack_dir": NOISE,
        "needle_key_type": "words",
        "needle_value_type": "numbers",
    },
    "niah_single_2": {
        "task": "multi_key",
        "num_distractors": 0,
        "haystack_dir": ESSAYS,
        "needle_key_type": "words",
        "needle_value_type": "numbers",
    },
    "niah_single_3": {
        "task": "multi_key",
        "num_distractors": 0,
        "haystack_dir": ESSAYS,
        "needle_key_type": "words",
        "needle_value_type": "uuids",
    },
    "niah_multikey_1": {
        "task": "multi_key",
        "num_distractors": 3,
        "haystack_dir": ESSAYS,
        "needle_key_type": "words",
        "needle_value_type": "numbers",
    },
    "niah_multivalue": {
        "task": "multi_value",
        "num_values": 4,
        "haystack_dir": ESSAYS,
        "needle_key_type": "words",
        "needle_value_type": "numbers",
    },
    "niah_multiquery": {
        "task": "multi_query",
        "num_queries": 4,
        "haystack_dir": ESSAYS,
        "needle_key_type": "words",
        "needle_value_type": "numbers",
    },
    "vt": {"task": "variable_tracking", "num_chains": 1, "num_hops": 4, "haystack_dir": NOISE},
    "cwe": {"task": "common_words", "num_cw": 10},
    "fwe": {"task": "frequent_words", "alpha": 2.0},
}
LEFT_OUT: dict[str, str] = {
    "niah_multikey_2": "its haystack is all needles (type_haystack 'needle'); none here",
    "niah_multikey_3": "its haystack is all UUID needles (type_haystack 'needle'); none here",
    "qa_1": "needs SQuAD, a dataset the service neither ships nor downloads",
    "qa_2": "needs HotpotQA, a dataset the service neither ships nor downloads",
}
SUITES: dict[str, dict[str, dict[str, Any]]] = {"ruler": RULER_RUNS}
# Options a suite sets per run, and every task's own: a request for a suite leaves them
# out (its runs are of several tasks).
SUITE_SET = set(option_owners()) | {
    name for runs in SUITES.values() for options in runs.values() for name in options
}


def suite_requests(suite: str, payload: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """One run request per task of ``suite``: the user's options, and the task's own.

    Raises ``ValueError`` naming an option the suite sets itself.
    """
    if suite not in SUITES:
        raise ValueError(f"unknown suite {suite!r}; known: {', '.join(SUITES)}")
    clashing = sorted(set(payload) & SUITE_SET)
    if clashing:
        raise ValueError(
            f"the {suite} suite sets {', '.join(clashing)} for each of its tasks; leave "
            f"{'it' if len(clashing) == 1 else 'them'} out (the lengths, depths, samples, "
            "model and seed are yours)"
        )
    return [(name, payload | options) for name, options in SUITES[suite].items()]


def ruler_task_name(spec: dict[str, Any]) -> str | None:
    """Which of RULER's tasks a run's stored spec is, or None."""
    return suite_run_name(spec, RULER_RUNS)


def ruler_table(runs: list[tuple[RunRecord, list[dict[str, Any]]]]) -> RulerTable | None:
    """RULER's table of the runs that are RULER's tasks; None when fewer than two are."""
    return suite_table(runs, RULER_RUNS)
