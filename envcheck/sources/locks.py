"""Lock files: uv.lock and pylock.toml (PEP 751). Exact versions, the index each package comes from,
and the wheel files that can be installed (their platform tags tell whether aarch64 is covered)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from envcheck.inspect.wheel_tags import canonical, parse_wheel_name
from envcheck.model import (
    IndexOption,
    InstallCommand,
    Inventory,
    Location,
    Package,
    PackageIndex,
    ReadProblem,
    Role,
    Wheel,
)
from envcheck.sources import ReadOptions
from envcheck.sources.pyproject import line_of, parse_toml

KIND = "uv-lock"


def read(path: Path, options: ReadOptions) -> Inventory:
    data, text = parse_toml(path)
    inventory = Inventory()
    if "packages" in data or path.name.startswith("pylock"):
        entries = data.get("packages", [])
        style = "pylock"
    else:
        entries = data.get("package", [])
        style = "uv"
    if not isinstance(entries, list):
        raise_problem(inventory, path, "the lock file has no package list")
        return inventory
    seen_indexes: set[str] = set()
    names: list[str] = []
    reach = _uv_markers(entries) if style == "uv" else {}
    cursor = 0
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or not entry["name"].strip():
            inventory.problems.append(ReadProblem("lock entry without a name", Location(str(path))))
            continue
        name = canonical(str(entry["name"]))
        line = _entry_line(text, str(entry["name"]), cursor)
        if line:
            cursor = line
        loc = Location(str(path), line=line)
        version = entry.get("version")
        index = _index_of(entry, style)
        if index and index not in seen_indexes:
            seen_indexes.add(index)
            inventory.indexes.append(PackageIndex(index, IndexOption.LOCK_INDEX, loc))
        requires = _dependencies(entry)
        marker = entry.get("marker") if style == "pylock" else reach.get((name, str(version)), None)
        marker = str(marker) if marker is not None else None
        if style == "uv" and isinstance(entry.get("source"), dict) and any(k in entry["source"] for k in ("virtual", "editable")):
            continue  # the project itself
        inventory.packages.append(Package(
            name=name, version=str(version) if version is not None else None,
            specifier=f"=={version}" if version is not None else "", marker=marker,
            url=_direct_url(entry), requires=requires, role=Role.LOCK, location=loc,
        ))
        names.append(name)
        wheels = entry.get("wheels") or []
        if not isinstance(wheels, list):
            inventory.problems.append(ReadProblem(f"{name}: wheels must be a list of tables", loc))
            wheels = []
        tags: list[str] = []
        for wheel in wheels:
            if not isinstance(wheel, dict):
                continue
            ref = str(wheel.get("name") or wheel.get("url") or wheel.get("path") or "")
            parsed = parse_wheel_name(ref)
            if parsed is not None:
                tags.extend(parsed.tags)
        if wheels:
            has_sdist = bool(entry.get("sdist")) or bool(entry.get("source", {}).get("git") if isinstance(entry.get("source"), dict) else False)
            inventory.wheels.append(Wheel(
                filename=f"{name}-{version} ({len(wheels)} wheel files{', sdist' if has_sdist else ''})",
                name=name, version=str(version or ""), tags=tuple(sorted(set(tags))) + (("sdist",) if has_sdist else ()),
                requires=requires or (), location=loc,
            ))
    inventory.installs.append(InstallCommand(tool="requirements", packages=tuple(names), text=f"install from {path.name}", location=Location(str(path))))
    return inventory


_NEVER = "python_version < '0'"  # a marker no environment satisfies: not reachable from the project
_MAX_PATHS = 8


def _uv_markers(entries: list[Any]) -> dict[tuple[str, str], str | None]:
    """For each (name, version) of a universal uv.lock, the marker under which it is installed.

    uv.lock is universal: one lock for every platform. A package is installed where some path of
    dependency edges from the project holds (edges carry markers such as platform_machine == 'x86_64').
    """
    by_name: dict[str, list[dict[str, Any]]] = {}
    for entry in entries:
        if isinstance(entry, dict) and "name" in entry:
            by_name.setdefault(canonical(str(entry["name"])), []).append(entry)
    roots = [e for group in by_name.values() for e in group
             if isinstance(e.get("source"), dict) and any(k in e["source"] for k in ("virtual", "editable"))]
    if not roots:
        return {}
    conditions: dict[tuple[str, str], list[str | None]] = {}
    queue: list[tuple[dict[str, Any], str | None]] = [(r, None) for r in roots]
    while queue:
        entry, cond = queue.pop()
        deps = entry.get("dependencies") or []
        for dep in deps if isinstance(deps, list) else []:
            if not isinstance(dep, dict) or "name" not in dep:
                continue
            edge = dep.get("marker")
            child_cond = _and(cond, str(edge) if edge else None)
            for child in by_name.get(canonical(str(dep["name"])), []):
                if dep.get("version") and str(child.get("version")) != str(dep["version"]):
                    continue
                key = (canonical(str(child["name"])), str(child.get("version")))
                known = conditions.setdefault(key, [])
                if None in known or child_cond in known:
                    continue
                if len(known) >= _MAX_PATHS:
                    known.clear()
                    child_cond = None
                known.append(child_cond)
                queue.append((child, child_cond))
    out: dict[tuple[str, str], str | None] = {}
    for group in by_name.values():
        for e in group:
            key = (canonical(str(e["name"])), str(e.get("version")))
            conds = conditions.get(key)
            if conds is None:
                out[key] = _NEVER
            elif None in conds:
                out[key] = None
            else:
                out[key] = " or ".join(f"({c})" for c in conds)
    return out


def _and(a: str | None, b: str | None) -> str | None:
    if a is None:
        return b
    if b is None:
        return a
    return f"({a}) and ({b})"


def _direct_url(entry: dict[str, Any]) -> str | None:
    source = entry.get("source")
    if isinstance(source, dict):
        for key in ("url", "git", "path"):
            if source.get(key):
                return str(source[key])
    for key in ("url", "path"):
        value = (entry.get("archive") or {}).get(key) if isinstance(entry.get("archive"), dict) else None
        if value:
            return str(value)
    vcs = entry.get("vcs")
    if isinstance(vcs, dict) and vcs.get("url"):
        return f"git+{vcs['url']}"
    return None


def raise_problem(inventory: Inventory, path: Path, message: str) -> None:
    inventory.problems.append(ReadProblem(message, Location(str(path))))


def _entry_line(text: str, name: str, after: int) -> int | None:
    return line_of(text, f'name = "{name}"', after) or line_of(text, name, after)


def _index_of(entry: dict[str, Any], style: str) -> str | None:
    if style == "pylock":
        index = entry.get("index")
        return str(index) if index else None
    source = entry.get("source")
    if isinstance(source, dict):
        for key in ("registry", "url", "git"):
            if source.get(key):
                value = str(source[key])
                return value if key == "registry" else None
    return None


def _dependencies(entry: dict[str, Any]) -> tuple[str, ...] | None:
    deps = entry.get("dependencies")
    if not isinstance(deps, list):
        return None
    out = []
    for dep in deps:
        if isinstance(dep, dict) and dep.get("name"):
            spec = str(dep.get("specifier", "") or "")
            marker = dep.get("marker")
            out.append(f"{dep['name']}{spec}" + (f"; {marker}" if marker else ""))
    return tuple(out)
