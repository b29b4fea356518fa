"""The data flow's direction, as imports (issue 14): services stand apart from sources, checks and formats.

Every ``import``/``from ... import`` in the package, top-level or inside a function, is read with ``ast``;
a module may not import the layers named for its own layer below. Services are called by sources and
commands only; sources never reach back into the engine or the commands (a target is built by a command).
Over every module of the package, top level included, no import circle (imports for type checkers only,
under ``if TYPE_CHECKING:``, are no circle at run time).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from conftest import REPO

PACKAGE = REPO / "envcheck"

# layer (a folder of envcheck/) -> layers it must not import
FORBIDDEN = {
    "services": ("envcheck.sources", "envcheck.engine", "envcheck.commands", "envcheck.checks", "envcheck.rules",
                 "envcheck.formats", "envcheck.cli"),
    "sources": ("envcheck.engine", "envcheck.commands", "envcheck.cli", "envcheck.checks", "envcheck.rules"),
    "checks": ("envcheck.services", "envcheck.sources", "envcheck.commands", "envcheck.cli"),
    # inspect reads syntax; what the facts mean (knowledge files, the target profile) is knowledge/'s job
    "inspect": ("envcheck.services", "envcheck.sources", "envcheck.checks", "envcheck.knowledge", "envcheck.profile",
                "envcheck.engine", "envcheck.commands"),
    "knowledge": ("envcheck.services", "envcheck.sources", "envcheck.checks", "envcheck.engine", "envcheck.commands",
                  "envcheck.formats", "envcheck.cli"),
    "formats": ("envcheck.services", "envcheck.sources", "envcheck.checks", "envcheck.commands", "envcheck.cli"),
    # fixes compute edits from a finding and the file's text: pure like checks (which declare them on their rules)
    "fixes": ("envcheck.services", "envcheck.sources", "envcheck.checks", "envcheck.engine", "envcheck.commands",
              "envcheck.formats", "envcheck.cli"),
    # the collector runs inside the checked container or environment: it reads, it never judges or reports
    "collect": ("envcheck.services", "envcheck.checks", "envcheck.rules", "envcheck.engine", "envcheck.commands",
                "envcheck.formats", "envcheck.cli"),
    "commands": ("envcheck.cli",),
}


def _type_checking_only(tree: ast.AST) -> set[int]:
    """Ids of the import nodes under ``if TYPE_CHECKING:``."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            skipped.update(id(inner) for stmt in node.body for inner in ast.walk(stmt))
    return skipped


def imported_modules(path: Path, run_time: bool = False) -> list[tuple[int, str]]:
    """(line, module) for every absolute import in ``path`` (``run_time``: not those for type checkers only)."""
    found: list[tuple[int, str]] = []
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    skipped = _type_checking_only(tree) if run_time else set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            found.extend((node.lineno, f"{node.module}.{alias.name}") for alias in node.names)
    return found


def offences(layer: str) -> list[str]:
    bad = []
    for path in sorted((PACKAGE / layer).rglob("*.py")):
        for line, module in imported_modules(path):
            if any(module == f or module.startswith(f + ".") for f in FORBIDDEN[layer]):
                bad.append(f"{path.relative_to(REPO)}:{line} imports {module}")
    return bad


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_layer_imports_go_one_way(layer: str) -> None:
    assert offences(layer) == []


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """Each module of the package -> the modules of the package it imports at run time (a name imported
    from a package counts as the package, or the submodule when it is one)."""
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        edges = set()
        for _line, module in imported_modules(path, run_time=True):
            while module and module not in modules:
                module = module.rpartition(".")[0]
            if module and module != name:
                edges.add(module)
        graph[name] = edges
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            nxt = next(edges, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_module_imports_in_a_circle() -> None:
    assert circles(import_graph()) == []


def test_circles_are_found() -> None:
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_the_checker_sees_imports_inside_functions(tmp_path: Path) -> None:
    """The reader finds a lazy import too (the kind that made the old sources -> engine cycle)."""
    module = tmp_path / "m.py"
    module.write_text("def target():\n    from envcheck.engine import Target\n    import envcheck.services.github\n")
    assert imported_modules(module) == [(2, "envcheck.engine"), (2, "envcheck.engine.Target"), (3, "envcheck.services.github")]


def test_test_helpers_are_imported_one_way() -> None:
    """pytest loads tests/conftest.py as ``conftest`` (tests/ is no package): ``tests.conftest`` would load it twice."""
    bad = [f"{path.relative_to(REPO)}:{line} imports {module}" for path in sorted((REPO / "tests").glob("*.py"))
           for line, module in imported_modules(path) if module == "tests" or module.startswith("tests.")]
    assert bad == []
