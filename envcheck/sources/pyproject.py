"""pyproject.toml: [project] dependencies and optional-dependencies, [dependency-groups], and uv's
``[tool.uv]`` indexes and sources (which decide which CUDA build of torch is installed)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from envcheck.errors import InputError
from envcheck.inspect.pip_args import parse_requirement_text
from envcheck.model import IndexOption, InstallCommand, Inventory, Location, PackageIndex, ReadProblem, Role
from envcheck.sources import ReadOptions
from envcheck.sources.requirements import read_text_file

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

KIND = "pyproject"


def parse_toml(path: Path) -> tuple[dict[str, Any], str]:
    """The parsed TOML and its text; a syntax error raises InputError with the line."""
    text, problems = read_text_file(path)
    if problems:
        raise InputError(problems[0].message, str(path), line=problems[0].location.line if problems[0].location else None)
    try:
        return tomllib.loads(text), text
    except tomllib.TOMLDecodeError as exc:
        line = getattr(exc, "lineno", None)
        if line is None:
            import re

            m = re.search(r"line (\d+)", str(exc))
            # tomllib says "(at end of document)" for an unterminated value: that is the last line.
            line = int(m.group(1)) if m else (len(text.splitlines()) or 1) if "end of document" in str(exc) else None
        raise InputError(f"{path} is not valid TOML: {exc}", str(path), line=line) from exc
    except RecursionError:  # tomllib recurses once per nested array or inline table
        raise InputError(f"{path}: arrays or inline tables nested too deeply to read", str(path)) from None


def line_of(text: str, needle: str, after: int = 0) -> int | None:
    """1-based line of the first occurrence of ``needle`` (quoted as in TOML), searching from line ``after``."""
    lines = text.split("\n")  # TOML lines end in LF or CRLF only (splitlines would also split at U+2028)
    for quoted in (f'"{needle}"', f"'{needle}'", needle):
        for i in range(after, len(lines)):
            if quoted in lines[i]:
                return i + 1
    return None


def read(path: Path, options: ReadOptions) -> Inventory:
    data, text = parse_toml(path)
    inventory = Inventory()
    project = data.get("project", {}) if isinstance(data.get("project"), dict) else {}
    groups: list[tuple[str, Any]] = [("dependencies", project.get("dependencies", []))]
    for extra, reqs in _table(project, "optional-dependencies", inventory, path, text).items():
        groups.append((f"optional-dependencies.{extra}", reqs))
    for group, reqs in _table(data, "dependency-groups", inventory, path, text).items():
        groups.append((f"dependency-groups.{group}", reqs))
    build_reqs = _table(data, "build-system", inventory, path, text).get("requires", [])
    groups.append(("build-system.requires", build_reqs))
    names: list[str] = []
    for group, reqs in groups:
        if not isinstance(reqs, list):
            inventory.problems.append(ReadProblem(f"{group} must be a list of requirement strings", Location(str(path), line=line_of(text, group.split(".")[-1]))))
            continue
        for req in reqs:
            if isinstance(req, dict):  # {include-group = "x"}
                continue
            if not isinstance(req, str):
                inventory.problems.append(ReadProblem(f"{group}: {req!r} is not a requirement string", Location(str(path))))
                continue
            loc = Location(str(path), line=line_of(text, req))
            pkg = parse_requirement_text(req, loc, role=Role.BUILD if group.startswith("build-system") else Role.REQUIREMENT)
            if isinstance(pkg, ReadProblem):
                inventory.problems.append(pkg)
            elif pkg is not None:
                inventory.packages.append(pkg)
                names.append(pkg.name)
    uv = _table(_table(data, "tool", inventory, path, text), "uv", inventory, path, text)
    uv_indexes = uv.get("index", []) or []
    for index in uv_indexes if isinstance(uv_indexes, list) else [uv_indexes]:
        if isinstance(index, dict) and index.get("url"):
            inventory.indexes.append(PackageIndex(str(index["url"]), IndexOption.UV_INDEX, Location(str(path), line=line_of(text, str(index["url"])))))
    for key, option in (("index-url", IndexOption.INDEX_URL), ("extra-index-url", IndexOption.EXTRA_INDEX_URL), ("find-links", IndexOption.FIND_LINKS)):
        value = uv.get(key)
        for url in ([value] if isinstance(value, str) else value if isinstance(value, list) else []):
            inventory.indexes.append(PackageIndex(str(url), option, Location(str(path), line=line_of(text, str(url)))))
    inventory.installs.append(InstallCommand(tool="requirements", packages=tuple(names), text=f"pip install {path.parent.name or '.'}", location=Location(str(path))))
    return inventory


def _table(parent: dict[str, Any], key: str, inventory: Inventory, path: Path, text: str) -> dict[str, Any]:
    """``parent[key]`` when it is a TOML table; anything else is a problem at its line and reads as empty."""
    value = parent.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        inventory.problems.append(ReadProblem(f"{key} must be a table, not {type(value).__name__}", Location(str(path), line=line_of(text, key))))
        return {}
    return value
