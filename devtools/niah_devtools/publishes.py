"""Which Pub/Sub topics each function publishes to, read from the source.

Production checks what the emulators do not: a function whose account lacks
``roles/pubsub.publisher`` on a topic gets a 403 the first time it publishes there. So
the grants in infra/iam.tf are checked against the code (tests/deploy/test_publishers.py),
and this module says what the code publishes, without running it:

- the topics: each method of ``niah.cloud.bus.PubSubPublisher`` that names a
  ``self._<topic>_topic`` publishes to ``<topic>`` (``publish_cells`` to cells,
  ``publish_report`` to reports);
- the calls: a call graph over ``functions/*/main.py`` and ``shared/niah``, from a
  function's entry point. A name or ``module.name`` resolves through the imports
  (lazy ones inside functions too); ``thing.method`` on a value whose class is not
  known reaches every method of that name in the code, so a path is never missed for
  want of a type. A function that mentions a publisher method (``publisher.publish_report``,
  called or passed on) publishes to its topic.

It errs on the side of finding a publish: a false one asks for a grant too many (the
test then says which path), a missed one would be a 403 in production.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO / "shared"
FUNCTIONS = REPO / "functions"
BUS = SHARED / "niah" / "cloud" / "bus.py"
PUBLISHER_CLASS = "PubSubPublisher"


def publisher_topics(bus: Path = BUS) -> dict[str, str]:
    """Each publishing method of ``PubSubPublisher`` -> the topic it publishes to."""
    tree = ast.parse(bus.read_text())
    (publisher,) = (
        node
        for node in tree.body
        if isinstance(node, ast.ClassDef) and node.name == PUBLISHER_CLASS
    )
    topics: dict[str, str] = {}
    for method in publisher.body:
        if not isinstance(method, ast.FunctionDef) or method.name == "__init__":
            continue
        named = {
            match.group(1)
            for node in ast.walk(method)
            if isinstance(node, ast.Attribute)
            and (match := re.fullmatch(r"_(\w+)_topic", node.attr))
        }
        if len(named) > 1:
            raise ValueError(f"{PUBLISHER_CLASS}.{method.name} names topics {sorted(named)}")
        if named:
            topics[method.name] = named.pop()
    return topics


@dataclass
class _Module:
    """One source file: its definitions and what its names are bound to."""

    name: str
    functions: dict[str, ast.AST] = field(default_factory=dict)  # "f" or "Class.m"
    classes: dict[str, list[str]] = field(default_factory=dict)  # class -> its methods
    variables: set[str] = field(default_factory=set)  # other module-level names
    imports: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    top_level: list[ast.stmt] = field(default_factory=list)  # what runs on import


def _module_name(path: Path) -> str:
    if path.is_relative_to(SHARED):
        parts = path.relative_to(SHARED).with_suffix("").parts
    else:
        parts = ("functions", *path.relative_to(FUNCTIONS).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _parse(name: str, source: str) -> _Module:
    tree = ast.parse(source)
    module = _Module(name)
    for node in ast.walk(tree):  # every import, at module level or lazy in a function
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    module.imports[alias.asname] = (alias.name, None)
                else:
                    head = alias.name.split(".")[0]
                    module.imports[head] = (head, None)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                module.imports[alias.asname or alias.name] = (node.module, alias.name)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            module.functions[node.name] = node
        elif isinstance(node, ast.ClassDef):
            methods = [
                item.name
                for item in node.body
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
            ]
            module.classes[node.name] = methods
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    module.functions[f"{node.name}.{item.name}"] = item
        else:
            module.top_level.append(node)
            for target in ast.walk(node):
                if isinstance(target, ast.Name) and isinstance(target.ctx, ast.Store):
                    module.variables.add(target.id)
    return module


Node = tuple[str, str]  # (module, "f" | "Class.m" | "<module>")
MODULE_CODE = "<module>"


class CallGraph:
    """What each function of the service's code may reach, and the topics it publishes to."""

    def __init__(self, extra: dict[str, str] | None = None) -> None:
        """The graph of the code in this checkout, and of ``extra`` (module name -> source)."""
        self.topics = publisher_topics()
        paths = [*sorted(SHARED.glob("niah/**/*.py")), *sorted(FUNCTIONS.glob("*/main.py"))]
        sources = {_module_name(path): path.read_text() for path in paths} | (extra or {})
        self.modules = {name: _parse(name, source) for name, source in sources.items()}
        self.methods: dict[str, set[Node]] = {}
        for module in self.modules.values():
            for qualified in module.functions:
                if "." in qualified:
                    self.methods.setdefault(qualified.split(".")[1], set()).add(
                        (module.name, qualified)
                    )

    def _resolve(self, module_name: str, name: str, depth: int = 0) -> set[Node] | str | None:
        """What ``name`` in ``module_name`` stands for: nodes, a module's name, or unknown."""
        module = self.modules.get(module_name)
        if module is None or depth > 10:
            return None
        if name in module.functions:
            return {(module_name, name)}
        if name in module.classes:
            return {(module_name, f"{name}.{m}") for m in module.classes[name]}
        if name in module.imports:
            source, attribute = module.imports[name]
            if attribute is None:
                return source
            if f"{source}.{attribute}" in self.modules:
                return f"{source}.{attribute}"
            return self._resolve(source, attribute, depth + 1)
        if name in module.variables:
            return {(module_name, MODULE_CODE)}
        return None

    def _body(self, node: Node) -> list[ast.AST]:
        module = self.modules[node[0]]
        if node[1] == MODULE_CODE:
            return list(module.top_level)
        return [module.functions[node[1]]]

    def _step(self, node: Node) -> tuple[set[Node], set[str]]:
        """The nodes ``node`` refers to directly, and the publisher methods it mentions."""
        reached: set[Node] = set()
        mentioned: set[str] = set()
        for body in self._body(node):
            for item in ast.walk(body):
                if isinstance(item, ast.Name) and isinstance(item.ctx, ast.Load):
                    found = self._resolve(node[0], item.id)
                    if isinstance(found, set):
                        reached |= found
                elif isinstance(item, ast.Attribute):
                    if item.attr in self.topics:
                        mentioned.add(item.attr)
                        continue
                    base = item.value
                    owner = self._resolve(node[0], base.id) if isinstance(base, ast.Name) else None
                    if isinstance(owner, str):  # module.name
                        found = self._resolve(owner, item.attr)
                        if isinstance(found, set):
                            reached |= found
                    elif owner is None or (
                        isinstance(base, ast.Name) and base.id in ("self", "cls")
                    ):
                        reached |= self.methods.get(item.attr, set())
                    else:  # Class.method
                        reached |= {n for n in owner if n[1].endswith(f".{item.attr}")}
        return reached, mentioned

    def paths(self, module_name: str, entry: str) -> dict[str, list[Node]]:
        """Each topic the entry point publishes to, with one call path that does."""
        start = (module_name, entry)
        if entry not in self.modules[module_name].functions:
            raise KeyError(f"{module_name} defines no {entry}")
        came_from: dict[Node, Node | None] = {start: None}
        found: dict[str, list[Node]] = {}
        todo = [start]
        while todo:
            node = todo.pop(0)
            reached, mentioned = self._step(node)
            for method in mentioned:
                topic = self.topics[method]
                if topic not in found:
                    path: list[Node] = []
                    at: Node | None = node
                    while at is not None:
                        path.append(at)
                        at = came_from[at]
                    found[topic] = path[::-1]
            for target in sorted(reached):
                if target not in came_from:
                    came_from[target] = node
                    todo.append(target)
        return found


def function_topics(graph: CallGraph, source: str, entry_point: str) -> set[str]:
    """The topics the function ``entry_point`` of ``functions/<source>/main.py`` publishes to."""
    return set(graph.paths(f"functions.{source}.main", entry_point))


def describe(path: list[Node]) -> Iterator[str]:
    """A call path, one ``module:function`` a line."""
    for module, function in path:
        yield f"{module}:{function}"
