"""Lock files: uv.lock and pylock.toml (PEP 751). Exact versions, the index each package comes from,
and the wheel files that can be installed (their platform tags tell whether aarch64 is covered)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from envcheck.inspect.wheel_tags import canonical, parse_wheel_name
from envcheck.model import InstallCommand, Inventory, Location, Package, PackageIndex, ReadProblem, Wheel
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
    cursor = 0
    for entry in entries:
        if not isinstance(entry, dict) or "name" not in entry:
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
            inventory.indexes.append(PackageIndex(index, "lock-index", loc))
        requires = _dependencies(entry)
        inventory.packages.append(Package(
            name=name, version=str(version) if version is not None else None,
            specifier=f"=={version}" if version is not None else "", marker=entry.get("marker"),
            url=index, requires=requires, role="lock", location=loc,
        ))
        names.append(name)
        wheels = entry.get("wheels") or []
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
