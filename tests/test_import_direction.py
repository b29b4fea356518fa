"""The data flow's direction, as imports (issue 14): services stand apart from sources, checks and formats.

Every ``import``/``from ... import`` in the package, top-level or inside a function, is read with ``ast``;
a module may not import the layers named for its own layer below. Services are called by sources and
commands only; sources never reach back into the engine or the commands (a target is built by a command).
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
}


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """(line, module) for every absolute import in ``path``."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
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
