"""Settings as one table: every ``NIAH_*`` variable defined once, the docs generated from it.

When a test here fails after a setting was added or changed in shared/niah/settings.py:
run ``.venv/bin/python -m niah_devtools.settings_table`` and commit docs/settings.md.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from niah.settings import Settings
from niah_devtools import settings_table
from niah_devtools.developer_variables import DEVELOPER_VARIABLES
from tests import REPO

FIX = f"run {settings_table.COMMAND} (then commit docs/settings.md)"
# Where variables are read: shipped code, scripts, developer tools, infra and the tests.
READERS = ("shared", "functions", "scripts", "devtools", "infra", "tests")
SUFFIXES = {".py", ".sh", ".tf", ".toml"}

# Reads with the default they fall back on, if any: os.environ["X"], os.environ.get("X",
# "d"), os.getenv("X", "d"), and the shell's $X, ${X} and ${X:-d}.
PYTHON_READ = re.compile(
    r"""(?:environ\.get|getenv)\(\s*["'](NIAH_\w+)["']\s*(?:,\s*["']([^"']*)["'])?"""
    r"""|environ\[\s*["'](NIAH_\w+)["']\s*\](?!\s*=[^=])"""
)
SHELL_READ = re.compile(r"\$\{?(NIAH_\w+)(?::-([^}]*))?")
# Any variable named at all: not part of a longer identifier (ALLOWED_NIAH_IMPORTS), nor
# a family (NIAH_GEMINI_RETRY_*).
NAMED = re.compile(r"(?<![A-Za-z0-9_])NIAH_[A-Z0-9_]*[A-Z0-9](?![A-Za-z0-9_])")


def table_variables() -> dict[str, str]:
    """Every variable of the table, with its default as the docs show it."""
    found = {}
    for name, field in Settings.model_fields.items():
        default = settings_table.shown_default(settings_table._default(field))
        for variable in settings_table.variable_names(name, field):
            found[variable] = default
    for developer in DEVELOPER_VARIABLES:
        found[developer.name] = settings_table.shown_default(developer.default)
    return found


def source_files() -> list[Path]:
    """Every file that may read a variable (not functions' vendored copies, not this one)."""
    return sorted(
        path
        for top in READERS
        for path in (REPO / top).rglob("*")
        if path.suffix in SUFFIXES
        and path.is_file()
        and not {".venv", ".terraform", "__pycache__"} & set(path.parts)
        and not (top == "functions" and "niah" in path.relative_to(REPO / top).parts)
        and path != Path(__file__).resolve()
    )


def reads(text: str, suffix: str) -> list[tuple[str, str | None]]:
    """(variable, the default the reader falls back on, if it names one) of every read."""
    if suffix == ".py":
        return [(a or c, b) for a, b, c in PYTHON_READ.findall(text)]
    if suffix == ".sh":
        return [(name, default or None) for name, default in SHELL_READ.findall(text)]
    return []


def test_the_docs_table_is_generated_from_the_settings() -> None:
    page = settings_table.PAGE.read_text()
    assert settings_table.page_with_table(page) == page, f"docs/settings.md is stale: {FIX}"


def test_every_setting_says_its_meaning_and_unit() -> None:
    for name, field in Settings.model_fields.items():
        extra = field.json_schema_extra
        assert field.description, f"{name}: give it a meaning (niah.settings.setting), {FIX}"
        assert isinstance(extra, dict) and "unit" in extra, f"{name}: declare it with setting()"
    for variable in DEVELOPER_VARIABLES:
        assert variable.name.startswith("NIAH_") and variable.meaning, variable


def test_every_variable_read_anywhere_is_in_the_table_with_its_default() -> None:
    table = table_variables()
    missing, disagreeing, read = [], [], set()
    for path in source_files():
        text = path.read_text()
        where = path.relative_to(REPO)
        for name, default in reads(text, path.suffix):
            read.add(name)
            if name not in table:
                missing.append(f"{where}: {name}")
            elif default is not None and default != table[name].strip("()") != "none":
                disagreeing.append(f"{where}: {name} falls back on {default!r}, not {table[name]}")
    assert missing == [], f"add these to niah.settings (a setting or DEVELOPER_VARIABLES): {FIX}"
    assert disagreeing == []
    # The scan finds the reads it is for (the tests', the scripts', the stack's).
    assert {"NIAH_TEST_BASE_PORT", "NIAH_DEMO_BASE_PORT", "NIAH_LOCAL_BASE_PORT"} <= read


def test_every_variable_named_in_code_or_docs_is_one_of_the_table() -> None:
    """A variable named in an error message, a comment or a page exists (none removed)."""
    table = table_variables()
    pages = [*REPO.glob("docs/**/*.md"), REPO / "README.md"]
    unknown = sorted(
        f"{path.relative_to(REPO)}: {name}"
        for path in [*source_files(), *pages]
        for name in set(NAMED.findall(path.read_text()))
        if name not in table
    )
    assert unknown == [], f"no such variable: name one of niah.settings, or add it ({FIX})"


def test_the_scans_see_what_they_look_for() -> None:
    """The patterns catch each way this code base reads a variable, and not its writes."""
    python = 'int(os.environ.get("NIAH_X", "8")) + os.environ["NIAH_Y"]; os.getenv("NIAH_Z")'
    assert reads(python, ".py") == [("NIAH_X", "8"), ("NIAH_Y", ""), ("NIAH_Z", "")]
    assert reads('os.environ["NIAH_W"] = "1"', ".py") == []
    assert reads('base=${NIAH_A:-8570} "$NIAH_B"', ".sh") == [("NIAH_A", "8570"), ("NIAH_B", None)]
    assert NAMED.findall("ALLOWED_NIAH_IMPORTS NIAH_BUCKET. NIAH_GEMINI_RETRY_*") == ["NIAH_BUCKET"]
    assert len(source_files()) > 300


@pytest.mark.parametrize("page", sorted(REPO.glob("docs/**/*.md")), ids=lambda p: p.name)
def test_hand_tables_in_the_docs_agree_with_the_defaults(page: Path) -> None:
    """A hand-made row ``| `NIAH_X` | default | ...`` elsewhere shows the same default."""
    table = table_variables()
    for name, default in re.findall(r"^\| `(NIAH_\w+)` \| ([^|]+) \|", page.read_text(), re.M):
        if page != settings_table.PAGE:
            assert default.strip().split(" ")[0].strip("`") == table[name].strip("`"), name
