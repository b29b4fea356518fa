"""Every declared runtime dependency is imported by the package, and test-only readers are not (issue 14)."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO = Path(__file__).resolve().parent.parent
IMPORT_NAMES = {"pyelftools": "elftools", "paramiko": "paramiko", "pyyaml": "yaml"}  # distribution -> top-level module


def _imported_modules() -> set[str]:
    names: set[str] = set()
    for path in (REPO / "envcheck").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module.split(".")[0])
    return names


def _distribution(requirement: str) -> str:
    return re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0].strip().lower()


def test_every_runtime_dependency_is_imported() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    imported = _imported_modules()
    unused = []
    for requirement in project["dependencies"]:
        dist = _distribution(requirement)
        module = IMPORT_NAMES.get(dist, dist.replace("-", "_"))
        if module == "tomli":
            continue  # the Python 3.10 shim for tomllib
        if module not in imported:
            unused.append(dist)
    assert not unused, f"declared but never imported by envcheck: {unused}"


def test_pyelftools_is_an_oracle_only() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert "pyelftools" not in {_distribution(r) for r in project["dependencies"]}
    assert "pyelftools" in {_distribution(r) for r in project["optional-dependencies"]["test"]}
    assert "elftools" not in _imported_modules()
