"""The ``NIAH_*`` variables the service never reads: the tests', scripts' and local stack's.

Apart from ``niah.settings`` (what a deployment configures), since nothing shipped reads
them; docs/settings.md lists them after the service's settings
(``niah_devtools.settings_table``), and tests/unit/test_settings_table.py fails on a
``NIAH_*`` read that is in neither.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DeveloperVariable:
    """A ``NIAH_*`` variable the service never reads: the tests', scripts' and stack's."""

    name: str
    default: str
    unit: str
    meaning: str


DEVELOPER_VARIABLES = (
    DeveloperVariable(
        "NIAH_TEST_BASE_PORT", "8570", "port",
        "the first of the test stack's nine ports (scripts/test.sh, tests/integration); on a "
        "shared machine each engineer takes their own",
    ),
    DeveloperVariable(
        "NIAH_LOCAL_BASE_PORT", "8470", "port",
        "the default first port of `niah_devtools.localstack up` (the quickstart test moves it)",
    ),
    DeveloperVariable(
        "NIAH_DEMO_BASE_PORT", "8470", "port", "the first of scripts/demo.sh's stack's nine ports"
    ),
    DeveloperVariable(
        "NIAH_SYSTEM_PROJECT", "", "",
        "a Google Cloud project: with it tests/system call real Vertex AI; unset, they skip",
    ),
    DeveloperVariable(
        "NIAH_SYSTEM_LOCATION", "global", "", "the Vertex AI location the system tests call"
    ),
    DeveloperVariable(
        "NIAH_SYSTEM_MODEL", "gemini-3.8-flash", "", "the model the system tests call"
    ),
    DeveloperVariable(
        "NIAH_TEST_FREEZE_SECONDS", "40", "s",
        "how long tests/integration/test_recovery.py freezes a worker",
    ),
    DeveloperVariable(
        "NIAH_MARKERS_OUT", "", "",
        "set by tests/deploy/test_test_tiers.py for the pytest it starts: where that run "
        "writes its tests' markers (not for hand use)",
    ),
)  # fmt: skip
