"""The house rules of ``src/hermes`` as a test (STYLE.md, DESIGN.md's layers): no file over
1,000 lines, no function over 80, no import cycle between modules — imports under
``TYPE_CHECKING`` and inside functions count too —, ``hermes.tools`` never importing
memory, the agent or the channels (memory plugs into the tool pipeline, not the other way),
storage as a layer (DESIGN.md, "Layers"; STYLE.md §11: only the composition root imports
``hermes.storage``, and no module outside it imports ``sqlite3``), and no file citing an
issue number (a reader cannot open the issues: cite the seed section, "seed 003 §4.2", or the
DESIGN.md heading, 'DESIGN.md, "Scale-out"').

What breaks a rule today is named in the ``KNOWN_*`` lists below, each with its reason; the
lists may only shrink. A name in a list that no longer breaks the rule fails the test too, so a
fixed knot cannot come back unnoticed.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src"
PACKAGE = "hermes"
MAX_FILE_LINES = 1_000
MAX_FUNCTION_LINES = 80
#: Layers ``hermes.tools`` must not import (DESIGN.md: tools/ never imports memory).
TOOLS_MUST_NOT_IMPORT = ("hermes.memory", "hermes.agent", "hermes.channels")
#: "issue 5", "issues 2 and 3", "issue-14": our own issue numbers. An upstream project's
#: "python-sdk issue #3551" names a thread anyone can open, and is allowed.
ISSUE_CITATION = re.compile(r"\bissues?\s+\d+\b|\bissue-\d+", re.IGNORECASE)

#: Functions over the limit, as ``module:qualified.name``, with why they are allowed.
KNOWN_LONG_FUNCTIONS: dict[str, str] = {}
#: Import cycles, each as the sorted tuple of its modules' names (a strongly connected
#: component of the import graph), with why it is allowed for now.
KNOWN_CYCLES: dict[tuple[str, ...], str] = {}
#: ``hermes.tools`` modules importing an upper layer, as (importer, imported).
KNOWN_UPWARD_IMPORTS: dict[tuple[str, str], str] = {}

#: The backends' layer, and the one module outside it that may import it (it chooses backends).
STORAGE = "hermes.storage"
COMPOSITION_ROOT = "hermes.agent.compose"
#: Modules outside ``hermes.storage`` importing it, besides the composition root.
KNOWN_STORAGE_IMPORTERS: dict[str, str] = {}
#: Modules outside ``hermes.storage`` importing ``sqlite3``.
KNOWN_SQLITE3_IMPORTERS: dict[str, str] = {}


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in sorted((SRC / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = _modules()


@cache
def _tree(module: str) -> ast.Module:
    return ast.parse(MODULES[module].read_text(encoding="utf-8"))


def _resolve(module: str, node: ast.ImportFrom) -> str:
    """The absolute module an ``from … import`` names (relative imports resolved)."""
    if not node.level:
        return node.module or ""
    is_package = MODULES[module].name == "__init__.py"
    base = module.split(".")
    base = base[: len(base) - node.level + (1 if is_package else 0)]
    return ".".join([*base, *([node.module] if node.module else [])])


def _imports(module: str) -> set[str]:
    """The project modules ``module`` imports anywhere in its text (top level, functions,
    ``TYPE_CHECKING`` blocks). ``from pkg import name`` counts as importing ``pkg.name`` when
    that is a module, else ``pkg``."""
    targets: set[str] = set()
    for node in ast.walk(_tree(module)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(module, node)
            names = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base
                for alias in node.names
            ]
        else:
            continue
        for named in names:
            name = named
            while name and name not in MODULES:  # `import hermes.x.y` of a name inside y
                name = name.rpartition(".")[0]
            if name and name != module:
                targets.add(name)
    return targets


def _outside_names(tree: ast.Module) -> set[str]:
    """The top-level names of the absolute imports anywhere in ``tree`` (``import
    sqlite3.dbapi2`` → ``sqlite3``; relative imports are the project's own)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.partition(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names.add(node.module.partition(".")[0])
    return names


def _in_layer(module: str, layer: str) -> bool:
    return module == layer or module.startswith(layer + ".")


def _graph() -> dict[str, set[str]]:
    return {module: _imports(module) for module in MODULES}


def _cycles(graph: dict[str, set[str]]) -> list[tuple[str, ...]]:
    """The strongly connected components with more than one module (Tarjan, iterative).

    Written here rather than taken from networkx: ~40 lines against a dependency for one
    test; the stdlib's graphlib names one cycle, not every component."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[tuple[str, ...]] = []
    counter = 0
    for root, edges_of_root in graph.items():
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(edges_of_root)))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            child = next(edges, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(tuple(sorted(component)))
    return sorted(found)


def _long_functions() -> dict[str, int]:
    found: dict[str, int] = {}
    for module in MODULES:

        def visit(node: ast.AST, prefix: str, module: str = module) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    name = f"{prefix}{child.name}"
                    if not isinstance(child, ast.ClassDef):
                        first = min([d.lineno for d in child.decorator_list] + [child.lineno])
                        length = (child.end_lineno or child.lineno) - first + 1
                        if length > MAX_FUNCTION_LINES:
                            found[f"{module}:{name}"] = length
                    visit(child, f"{name}.", module)

        visit(_tree(module), "")
    return found


def test_no_file_is_over_a_thousand_lines():
    long = {
        module: n
        for module, path in MODULES.items()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_FILE_LINES
    }
    assert long == {}, f"split these files by concern (limit {MAX_FILE_LINES} lines): {long}"


def test_no_function_is_over_eighty_lines():
    long = _long_functions()
    new = {name: n for name, n in long.items() if name not in KNOWN_LONG_FUNCTIONS}
    assert new == {}, f"functions over {MAX_FUNCTION_LINES} lines: {new}"
    fixed = sorted(set(KNOWN_LONG_FUNCTIONS) - set(long))
    assert fixed == [], f"no longer over the limit, drop from KNOWN_LONG_FUNCTIONS: {fixed}"


def test_there_is_no_import_cycle():
    cycles = _cycles(_graph())
    new = [c for c in cycles if c not in KNOWN_CYCLES]
    assert new == [], "import cycles (TYPE_CHECKING and function-level imports count):\n" + (
        "\n".join(" <-> ".join(c) for c in new)
    )
    fixed = sorted(set(KNOWN_CYCLES) - set(cycles))
    assert fixed == [], f"no longer cycles, drop from KNOWN_CYCLES: {fixed}"


def test_tools_never_import_memory_the_agent_or_the_channels():
    upward = {
        (module, target)
        for module in MODULES
        if module == "hermes.tools" or module.startswith("hermes.tools.")
        for target in _imports(module)
        if any(target == layer or target.startswith(layer + ".") for layer in TOOLS_MUST_NOT_IMPORT)
    }
    new = sorted(upward - set(KNOWN_UPWARD_IMPORTS))
    assert new == [], f"hermes.tools importing an upper layer: {new}"
    fixed = sorted(set(KNOWN_UPWARD_IMPORTS) - upward)
    assert fixed == [], f"gone, drop from KNOWN_UPWARD_IMPORTS: {fixed}"


def test_only_the_composition_root_imports_storage():
    importers = {
        module
        for module in MODULES
        if not _in_layer(module, STORAGE) and module != COMPOSITION_ROOT
        if any(_in_layer(target, STORAGE) for target in _imports(module))
    }
    new = sorted(importers - set(KNOWN_STORAGE_IMPORTERS))
    assert new == [], (
        f"only {COMPOSITION_ROOT} chooses backends (STYLE.md §11); ask it, not {STORAGE}: {new}"
    )
    fixed = sorted(set(KNOWN_STORAGE_IMPORTERS) - importers)
    assert fixed == [], f"gone, drop from KNOWN_STORAGE_IMPORTERS: {fixed}"


def test_no_module_outside_storage_imports_sqlite3():
    importers = {
        module
        for module in MODULES
        if not _in_layer(module, STORAGE) and "sqlite3" in _outside_names(_tree(module))
    }
    new = sorted(importers - set(KNOWN_SQLITE3_IMPORTERS))
    assert new == [], f"SQL lives in storage/sqlite/ (DESIGN.md, 'Layers'): {new}"
    fixed = sorted(set(KNOWN_SQLITE3_IMPORTERS) - importers)
    assert fixed == [], f"gone, drop from KNOWN_SQLITE3_IMPORTERS: {fixed}"


def _issue_citations(root: Path) -> list[str]:
    """Every issue-number citation in the files under ``root``, as ``path:line: text``
    (across a line break too: "issue\\n5")."""
    found: list[str] = []
    for path in sorted(root.rglob("*")):
        if not path.is_file() or "__pycache__" in path.parts:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for match in ISSUE_CITATION.finditer(text):
            number = text.count("\n", 0, match.start()) + 1
            found.append(f"{path.relative_to(root.parent)}:{number}: {match.group()}")
    return found


def test_no_file_cites_an_issue_number():
    citing = _issue_citations(SRC / PACKAGE)
    assert citing == [], (
        "cite the seed section or the DESIGN.md heading, not an issue:\n" + "\n".join(citing)
    )


# -- the checker itself ------------------------------------------------------------------------


def test_outside_imports_are_found_anywhere_in_a_module():
    tree = ast.parse(
        "import sqlite3.dbapi2\nfrom json import dumps\nfrom . import x\n"
        "def f():\n    import fcntl\n"
    )
    assert _outside_names(tree) == {"sqlite3", "json", "fcntl"}


def test_the_cycle_finder_finds_a_cycle_and_nothing_else():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _cycles(graph) == [("a", "b", "c")]


@pytest.mark.parametrize(
    ("module", "level", "name", "expected"),
    [
        ("hermes.agent.turn", 1, "recovery", "hermes.agent.recovery"),
        ("hermes.agent", 1, "turn", "hermes.agent.turn"),
        ("hermes.agent.turn", 2, "session", "hermes.session"),
    ],
)
def test_relative_imports_are_resolved(module: str, level: int, name: str, expected: str):
    node = ast.ImportFrom(module=name, names=[], level=level)
    assert _resolve(module, node) == expected


@pytest.mark.parametrize(
    ("text", "cites"),
    [
        ("Memory (issue 5): the tiers", True),
        ("(issue 3 §5, seed 004 §4.3)", True),
        ("issues 2 and 3 resolved", True),
        ("branch issue-14a", True),
        ("Issue 4 §1", True),
        ("the cache (issue\n    5 §1)", True),
        ("(seed 004 §4.3)", False),
        ("the SDK's stdin thread (python-sdk issue #3551)", False),
        ("an issue with 3 causes", False),
        ("tissue 5", False),
    ],
)
def test_the_issue_citation_pattern(text: str, cites: bool):
    assert bool(ISSUE_CITATION.search(text)) is cites
