"""Environment variables are read in one place: envcheck.config.env, and every name it is asked for is listed
with its purpose in config.ENVIRONMENT (issue 14 §5). The probe in envcheck/collect/ runs in other interpreters
and is exempt."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import REPO

from envcheck import config

PACKAGE = REPO / "envcheck"
EXEMPT = {PACKAGE / "config.py"} | set((PACKAGE / "collect").rglob("*.py"))


def environment_reads(path: Path) -> list[str]:
    """'file:line' of each direct read of the process environment (os.environ, os.getenv, os.putenv, environ)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        direct = isinstance(node, ast.Attribute) and node.attr in ("environ", "environb", "getenv", "getenvb", "putenv", "unsetenv")
        imported = isinstance(node, ast.ImportFrom) and node.module == "os" and any(a.name in ("environ", "getenv") for a in node.names)
        if direct or imported:
            found.append(f"{path}:{node.lineno}")
    return found


def names_asked(path: Path) -> list[tuple[str, int]]:
    """(name, line) of every variable named by a literal (or a module constant) in env(...) or an _env_* helper."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    constants = {t.id: n.value.value for n in tree.body if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant)
                 and isinstance(n.value.value, str) for t in n.targets if isinstance(t, ast.Name)}
    out = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and node.args):
            continue
        func = node.func.id if isinstance(node.func, ast.Name) else node.func.attr if isinstance(node.func, ast.Attribute) else ""
        if func != "env" and not func.startswith("_env_"):
            continue
        arg = node.args[0]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            out.append((arg.value, node.lineno))
        elif isinstance(arg, ast.Name) and arg.id in constants:
            out.append((constants[arg.id], node.lineno))
    return out


def test_only_config_reads_the_environment() -> None:
    reads = [r for path in sorted(PACKAGE.rglob("*.py")) if path not in EXEMPT for r in environment_reads(path)]
    assert reads == []


def test_every_variable_read_is_listed_with_its_purpose() -> None:
    asked = {(name, f"{path.relative_to(REPO)}:{line}") for path in sorted(PACKAGE.rglob("*.py")) for name, line in names_asked(path)}
    assert len({name for name, _ in asked}) >= 15
    assert sorted(where + " " + name for name, where in asked if name not in config.ENVIRONMENT) == []
    assert all(purpose for purpose in config.ENVIRONMENT.values())


def test_the_checkers_see_what_they_look_for(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text('import os\nfrom os import getenv\nTOKEN = "X_TOKEN"\n'
                      'a = os.environ.get("A")\nb = env("B")\nc = env(TOKEN)\nd = _env_float("D", 1.0)\n')
    assert sorted(environment_reads(module)) == [f"{module}:2", f"{module}:4"]
    assert names_asked(module) == [("B", 5), ("X_TOKEN", 6), ("D", 7)]
