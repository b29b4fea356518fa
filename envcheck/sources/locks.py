"""Lock files: uv.lock and pylock.toml (PEP 751): exact versions, each package's index, its wheels' tags.

A universal uv.lock is walked as uv does: from the project's entries along the dependency edges (and the
extras they ask for) with their markers. The project's extras and groups are scopes, each judged on its own;
uv's conflict markers (``extra == 'extra-10-proj-cu128'``) are decided per scope and never shown.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envcheck.errors import InputError
from envcheck.inspect.markers import with_extras
from envcheck.inspect.pip_args import long_number, shown
from envcheck.inspect.wheel_tags import canonical, parse_wheel_name
from envcheck.limits import open_input
from envcheck.model import (
    Alternatives,
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
from envcheck.sources.requirements import MAX_PACKAGES, text_limit, too_many_packages
from envcheck.sources.toml_file import parse_toml

KIND = "uv-lock"

# Distinct marker conditions kept per package before it counts as installed everywhere (conservative), and
# the most edge markers one condition joins: a deep chain of markers must not grow without bound.
_MAX_PATHS = 8
_MAX_CONDITION = 16
# The project's extras and groups judged one by one (the engine merges the rest, see envcheck.scopes).
_MAX_ROOT_SCOPES = 64
_DEFAULT_GROUPS = ("dev",)  # uv sync installs the dev group unless told otherwise
_NEVER = "\0never"  # the scope of an extra that conflicts with one the project itself asks for


# A lock told by content: uv.lock's `version = N` and a `[[package]]` with a `source = { ... }` table
# (Cargo.lock has `source = "registry+..."` text); PEP 751's `lock-version` and `[[packages]]`. Long
# `resolution-markers` or `[manifest]` tables come first, so the sniffers read this far, not only 4 KiB.
_SNIFF_BYTES = 64 << 10
_UV_VERSION = re.compile(rb"(?m)^version[ \t]*=[ \t]*\d+[ \t]*(?:#.*)?\r?$")
_UV_ENTRY = re.compile(rb"(?m)^\[\[package\]\][ \t]*\r?\n(?:(?:[^\[\n][^\n]*)?\n)*?source[ \t]*=[ \t]*\{")
_PYLOCK_VERSION = re.compile(rb"(?m)^lock-version[ \t]*=[ \t]*[\"'][0-9.]+[\"']")
_PYLOCK_ENTRY = re.compile(rb"(?m)^\[\[packages\]\][ \t]*\r?$")


def _lock_head(path: Path, head: bytes) -> bytes | None:
    if b"\x00" in head:
        return None
    if len(head) < 4096:
        return head
    try:
        with open_input(path, streams=False) as fh:
            more = fh.read(_SNIFF_BYTES)
    except OSError:
        return head
    return None if b"\x00" in more else more


def sniff(path: Path, head: bytes) -> bool:
    text = _lock_head(path, head)
    return text is not None and _UV_VERSION.search(text) is not None and _UV_ENTRY.search(text) is not None


def sniff_pylock(path: Path, head: bytes) -> bool:
    text = _lock_head(path, head)
    return text is not None and _PYLOCK_VERSION.search(text) is not None and _PYLOCK_ENTRY.search(text) is not None


def _default_groups(path: Path, options: ReadOptions) -> tuple[str, ...] | str:
    """The groups ``uv sync`` installs for this lock: the project's ``[tool.uv] default-groups`` where the
    pyproject.toml beside it says (the lock does not record them), else uv's default, the dev group."""
    project = path.parent / "pyproject.toml"
    if path.name != "uv.lock" or not project.is_file():
        return _DEFAULT_GROUPS
    try:
        data, _ = parse_toml(project, text_limit(options))
    except InputError:
        return _DEFAULT_GROUPS
    uv = data.get("tool", {}).get("uv", {}) if isinstance(data.get("tool"), dict) else {}
    groups = uv.get("default-groups") if isinstance(uv, dict) else None
    if groups == "all":
        return "all"
    if isinstance(groups, list) and all(isinstance(g, str) for g in groups):
        return tuple(canonical(g) for g in groups)
    return _DEFAULT_GROUPS


def read(path: Path, options: ReadOptions) -> Inventory:
    """One package per locked entry, in each scope that installs it."""
    data, text = parse_toml(path, text_limit(options))
    inventory = Inventory()
    style = "pylock" if "packages" in data or path.name.startswith("pylock") else "uv"
    key, kind, readers, remake = (("lock-version", "a PEP 751 lock", "pip and uv refuse", "uv export --format pylock.toml, or pip lock")
                                  if style == "pylock" else ("version", "a uv lock", "uv refuses", "uv lock"))
    if key not in data:  # as uv and pip do: an empty or truncated lock is not a lock with nothing in it
        what = "is empty" if not data else f"has no top-level `{key}`"
        raise InputError(f"{path} {what}: not {kind} file ({readers} it too)", str(path),
                         fix=f"Write the lock again ({remake}) and commit it whole, or remove it.")
    entries = data.get("packages" if style == "pylock" else "package", [])
    if not isinstance(entries, list):
        inventory.problems.append(ReadProblem("the lock file has no package list", Location(str(path))))
        return inventory
    lines = _entry_lines(text, "[[packages]]" if style == "pylock" else "[[package]]")
    graph = _Graph(entries, data.get("conflicts"), _default_groups(path, options)) if style == "uv" else None
    pylock_scopes = _pylock_scopes(data) if style == "pylock" else []
    seen_indexes: set[str] = set()
    names: list[str] = []
    if len(entries) > MAX_PACKAGES:
        line = lines[MAX_PACKAGES][1] if len(lines) > MAX_PACKAGES else None
        inventory.problems.append(ReadProblem(too_many_packages(), Location(str(path), line=line)))
        entries = entries[:MAX_PACKAGES]
    for number, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or not entry["name"].strip():
            inventory.problems.append(ReadProblem("lock entry without a name", Location(str(path))))
            continue
        name = canonical(str(entry["name"]))
        line = lines[number][1] if number < len(lines) and lines[number][0] == entry["name"] else None
        loc = Location(str(path), line=line)
        version = entry.get("version")
        if version is not None and (problem := long_number(str(version))) is not None:
            inventory.problems.append(ReadProblem(f"{name}: version {shown(str(version), 40)}: {problem}", loc))
            continue
        index = _index_of(entry, style)
        if index and index not in seen_indexes:
            seen_indexes.add(index)
            # a lock names the index of each package: it serves those packages only (explicit)
            inventory.indexes.append(PackageIndex(index, IndexOption.LOCK_INDEX, loc, explicit=True))
        if graph is not None and graph.is_root(entry):
            continue  # the project itself
        requires = _dependencies(entry)
        if graph is not None:  # reached in no scope (or not followed): judged as installed
            placements = [p for p in graph.placed.get(number) or [(None, None)] if p[0] != _NEVER]
            if not placements or (number not in graph.placed and graph.conflicts):
                continue  # reached only by extras that conflict with each other or with what the project asks for
        else:
            marker = entry.get("marker")
            placements = _pylock_placements(str(marker), pylock_scopes) if marker is not None else [(None, None)]
        wheels = entry.get("wheels") or []
        if not isinstance(wheels, list):
            inventory.problems.append(ReadProblem(f"{name}: wheels must be a list of tables", loc))
            wheels = []
        tags: list[str] = []
        for wheel in wheels:
            if isinstance(wheel, dict):
                ref = wheel.get("name") or wheel.get("url") or wheel.get("path") or ""
                parsed = parse_wheel_name(str(ref))
                tags.extend(parsed.tags if parsed is not None else ())
        has_sdist = bool(entry.get("sdist")) or bool(entry.get("source", {}).get("git") if isinstance(entry.get("source"), dict) else False)
        for scope, marker in placements:
            inventory.packages.append(Package(
                name=name, version=str(version) if version is not None else None,
                specifier=f"=={version}" if version is not None else "", marker=marker,
                # a lock's edges carry no version specifiers: they are not Requires-Dist metadata, so the pins
                # of a locked package come from envcheck's pin table (requires=None), as for a requirements line
                url=_direct_url(entry), requires=None, role=Role.LOCK, location=loc, scope=scope, index=index,
            ))
            if scope is None:
                names.append(name)
            if wheels:
                inventory.wheels.append(Wheel(
                    filename=f"{name}-{version} ({len(wheels)} wheel files{', sdist' if has_sdist else ''})",
                    name=name, version=str(version or ""), tags=tuple(sorted(set(tags))) + (("sdist",) if has_sdist else ()),
                    requires=requires or (), location=loc, scope=scope,
                ))
    if style == "uv":
        inventory.packages.extend(_overrides(data.get("manifest"), text, path))
    inventory.installs.append(InstallCommand(tool="requirements", packages=tuple(dict.fromkeys(names)),
                                             text=f"install from {path.name}", location=Location(str(path))))
    if graph is not None:
        inventory.alternatives.extend(_alternatives(data, [entries[i] for i in graph.roots], text, path))
        inventory.alternatives.extend(Alternatives(tuple(dict.fromkeys(a))) for a in graph.alternatives.values() if len(set(a)) > 1)
    return inventory


def _overrides(manifest: Any, text: str, path: Path) -> list[Package]:
    """The ``[manifest] overrides`` the lock was resolved with: each replaces every requirement on it."""
    entries = manifest.get("overrides") if isinstance(manifest, dict) else None
    if not isinstance(entries, list):
        return []
    lines = _manifest_lines(text)
    out: list[Package] = []
    for entry in entries[:MAX_PACKAGES]:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or not entry["name"].strip():
            continue
        name = canonical(entry["name"])
        marker = entry.get("marker")
        out.append(Package(name=name, specifier=str(entry.get("specifier") or ""),
                           marker=marker if isinstance(marker, str) and marker else None, role=Role.OVERRIDE,
                           location=Location(str(path), line=lines.get(name, lines.get("")))))
    return out


def _manifest_lines(text: str) -> dict[str, int]:
    """The line of each override (by canonical name) in ``[manifest]``, and of the table itself (key "")."""
    out: dict[str, int] = {}
    inside = False
    key = ""
    for number, line in enumerate(text.split("\n"), start=1):
        stripped = line.strip()
        if line.startswith("[") and not stripped.startswith("[{"):
            if inside:
                break
            inside = stripped == "[manifest]"
            if inside:
                out[""] = number
            continue
        if not inside:
            continue
        if (opened := _MANIFEST_KEY.match(line)) is not None:
            key = opened.group(1)
        if key == "overrides":
            for found in _MANIFEST_NAME.finditer(line):
                out.setdefault(canonical(found.group(1)), number)
    return out


_MANIFEST_KEY = re.compile(r"([A-Za-z0-9_-]+)\s*=")
_MANIFEST_NAME = re.compile(r"""\bname\s*=\s*["']([^"']*)["']""")


@dataclass
class _Reach:
    """Where a node (an entry or one of its extras) is reached in one scope: each condition is the edge
    markers that must all hold."""

    conditions: list[frozenset[str]] = field(default_factory=list)
    everywhere: bool = False


class _Graph:

    def __init__(self, entries: list[Any], conflicts: Any = None, default_groups: tuple[str, ...] | str = _DEFAULT_GROUPS) -> None:
        self.entries = entries
        self.default_groups = default_groups  # the groups uv sync installs: "all", or their names
        # uv's conflict sets as its marker names (extra-10-proj-cu128): extras never installed together
        self.conflicts = [{_marker_name(item) for item in group if isinstance(item, dict)} - {""}
                          for group in (conflicts if isinstance(conflicts, list) else []) if isinstance(group, list)]
        self.alternatives: dict[frozenset[str], list[str]] = {}  # conflict set -> the extras asking its members
        self.by_name: dict[str, list[int]] = {}
        for i, entry in enumerate(entries):
            if isinstance(entry, dict) and isinstance(entry.get("name"), str):
                self.by_name.setdefault(canonical(entry["name"]), []).append(i)
        self.roots = [i for i, e in enumerate(entries) if isinstance(e, dict) and self.is_root(e)]
        # entry index -> [(scope, marker)]; entries reached in no scope stay out of this map
        self.placed: dict[int, list[tuple[str | None, str | None]]] = {}
        if self.roots:
            self._walk_all()

    @staticmethod
    def is_root(entry: dict[str, Any]) -> bool:
        source = entry.get("source")
        return isinstance(source, dict) and any(k in source for k in ("virtual", "editable"))

    def _walk_all(self) -> None:
        default: list[tuple[int, dict[str, Any]]] = []
        scoped: list[tuple[str, frozenset[str], list[tuple[int, dict[str, Any]]]]] = []
        members = {canonical(str(self.entries[r]["name"])) for r in self.roots}
        main = _main_project(self.entries[r] for r in self.roots)
        asked: set[str] = set()  # a workspace member's extra another member's default install asks for
        for root in self.roots:
            entry = self.entries[root]
            project = canonical(str(entry["name"]))
            default.extend((root, dep) for dep in _edges(entry.get("dependencies")))
            asked |= _asks(project, members, entry.get("dependencies"))
            for table, kind, prefix in (("optional-dependencies", "extra", "extra"), ("dev-dependencies", "group", "group")):
                listed = entry.get(table)
                if not isinstance(listed, dict):
                    continue
                for scope_name, deps in listed.items():
                    edges = [(root, dep) for dep in _edges(deps)]
                    if kind == "group" and (self.default_groups == "all" or scope_name in self.default_groups):
                        default.extend(edges)
                        continue
                    # uv's internal name for the selected extra or group in conflict markers, and the member
                    # extras it asks for (a root's cu130 extra asking lib[cu130])
                    own = _asks(project, members, deps)
                    active = frozenset({f"{prefix}-{len(project)}-{project}-{scope_name}", *own})
                    label = f"{kind} {scope_name!r}{_owner(project, main)}"
                    scoped.append((label, active, edges))
                    for group in self.conflicts:  # extras asking conflicting member extras are alternatives too
                        if own & group:
                            self.alternatives.setdefault(frozenset(group), []).append(label)
        # uv writes that request as a conflict marker on the member's edge: installing the project activates it,
        # so a scope is walked with it, and one that conflicts with it is never installed beside the project
        self._walk(None, frozenset(asked), default)
        for scope, active, edges in scoped[:_MAX_ROOT_SCOPES]:
            if any(active & group and asked & group - active for group in self.conflicts):
                self._walk(_NEVER, active, edges)  # what only it reaches is not installed
            elif not active <= asked:
                self._walk(scope, active | asked, edges)
        rest = scoped[_MAX_ROOT_SCOPES:]
        if rest:
            label = f"{len(rest)} more extras and groups"
            self._walk(label, frozenset().union(*(a for _, a, _ in rest)), [e for _, _, edges in rest for e in edges])

    def _walk(self, scope: str | None, active: frozenset[str], start: list[tuple[int, dict[str, Any]]]) -> None:
        reach: dict[tuple[int, str | None], _Reach] = {}
        queue: list[tuple[int, str | None, frozenset[str]]] = []  # (entry, extra or None, condition)

        def arrive(node: tuple[int, str | None], condition: frozenset[str]) -> None:
            state = reach.setdefault(node, _Reach())
            if state.everywhere or condition in state.conditions:
                return
            if not condition or len(condition) > _MAX_CONDITION or len(state.conditions) >= _MAX_PATHS:
                state.everywhere = True
                state.conditions.clear()
                condition = frozenset()
            else:
                state.conditions.append(condition)
            queue.append((node[0], node[1], condition))

        def follow(parent_condition: frozenset[str], dep: dict[str, Any]) -> None:
            edge = dep.get("marker")
            condition = parent_condition
            if isinstance(edge, str) and edge.strip():
                decided = with_extras(edge, active)
                if decided is False:
                    return
                if decided is not True:
                    condition = parent_condition | {decided}
            for child in self._targets(dep):
                arrive((child, None), condition)
                extras = dep.get("extra")
                for extra in extras if isinstance(extras, list) else []:
                    arrive((child, str(extra)), condition)

        for _root, dep in start:
            follow(frozenset(), dep)
        while queue:
            number, extra, condition = queue.pop()
            entry = self.entries[number]
            if extra is None:
                deps = entry.get("dependencies")
            else:
                optional = entry.get("optional-dependencies")
                deps = optional.get(extra) if isinstance(optional, dict) else None
            for dep in _edges(deps):
                follow(condition, dep)
        for (number, extra), state in reach.items():
            if extra is not None or number in self.roots:
                continue
            conditions = [_all_of(c) for c in state.conditions]
            marker = None if state.everywhere or not conditions else conditions[0] if len(conditions) == 1 else " or ".join(f"({c})" for c in conditions)
            placed = self.placed.setdefault(number, [])
            if scope is not None and any(s is None and (m is None or m == marker) for s, m in placed):
                continue  # installed everywhere by default already: nothing for the scope to add
            placed.append((scope, marker))

    def _targets(self, dep: dict[str, Any]) -> list[int]:
        """The entries an edge points at (its version and source pick one where a name has several)."""
        out = []
        for i in self.by_name.get(canonical(str(dep.get("name", ""))), []):
            entry = self.entries[i]
            if dep.get("version") is not None and str(entry.get("version")) != str(dep["version"]):
                continue
            if isinstance(dep.get("source"), dict) and isinstance(entry.get("source"), dict) and dep["source"] != entry["source"]:
                continue
            out.append(i)
        return out


def _asks(project: str, members: set[str], deps: Any) -> set[str]:
    """uv's marker names of the workspace members' extras ``deps`` ask for (``lib[cu130]`` -> extra-3-lib-cu130)."""
    out: set[str] = set()
    for dep in _edges(deps):
        member, extras = canonical(str(dep.get("name", ""))), dep.get("extra")
        if member in members and member != project and isinstance(extras, list):
            out.update(f"extra-{len(member)}-{member}-{x}" for x in extras)
    return out


def _main_project(roots: Iterable[dict[str, Any]]) -> str | None:
    """The project the lock is for (``source = { virtual = "." }`` or editable "."); None: not told."""
    for entry in roots:
        source = entry.get("source")
        if isinstance(source, dict) and "." in (source.get("virtual"), source.get("editable")):
            return canonical(str(entry.get("name")))
    return None


def _owner(project: str, main: str | None) -> str:
    """A workspace member's extra is that member's own install (uv sync --package), named so."""
    return f" of {project}" if main is not None and project != main else ""


def _marker_name(item: dict[str, Any]) -> str:
    """uv's marker name of a conflict item: ``{ package = "proj", extra = "cu128" }`` -> extra-4-proj-cu128."""
    project = canonical(str(item.get("package", "")))
    for kind in ("extra", "group"):
        if isinstance(item.get(kind), str) and project:
            return f"{kind}-{len(project)}-{project}-{item[kind]}"
    return ""


def _pylock_scopes(data: dict[str, Any]) -> list[tuple[str | None, frozenset[str]]]:
    """(scope, what is selected): the default install (default groups), then each extra and other group."""
    def names(key: str) -> list[str]:
        value = data.get(key)
        return [str(v) for v in value if isinstance(v, str)][:_MAX_ROOT_SCOPES] if isinstance(value, list) else []

    defaults = names("default-groups")
    out: list[tuple[str | None, frozenset[str]]] = [(None, frozenset(f"dependency_groups:{g}" for g in defaults))]
    out += [(f"extra {e!r}", frozenset({f"extras:{e}", *(f"dependency_groups:{g}" for g in defaults)})) for e in names("extras")]
    out += [(f"group {g!r}", frozenset({f"dependency_groups:{g}"})) for g in names("dependency-groups") if g not in defaults]
    return out


def _pylock_placements(marker: str, scopes: list[tuple[str | None, frozenset[str]]]) -> list[tuple[str | None, str | None]]:
    """The default install if the marker can hold there, else each scope where it can (platform part kept)."""
    out: list[tuple[str | None, str | None]] = []
    for scope, active in scopes:
        decided = with_extras(marker, active)
        if decided is False:
            continue
        out.append((scope, None if decided is True else decided))
        if scope is None:
            break  # in the default install: every scope has it
    return out or [(None, marker)]  # selected by nothing the lock declares: judged as installed, marker as written


def _all_of(markers: frozenset[str]) -> str:
    parts = sorted(markers)
    return parts[0] if len(parts) == 1 else " and ".join(f"({m})" for m in parts)


def _edges(value: Any) -> list[dict[str, Any]]:
    return [d for d in value if isinstance(d, dict) and isinstance(d.get("name"), str)] if isinstance(value, list) else []


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


# A requirement of the project bound to an index for one extra, as uv writes it under [package.metadata]:
# { name = "torch", marker = "extra == 'gpu'", specifier = ">=2.8.0", index = "https://...", conflict = {...} }
_BOUND_LINE = re.compile(r"""^\s*\{\s*name\s*=\s*"([^"]+)",\s*marker\s*=\s*"extra == '([^']+)'".*\bindex\s*=""")


def _alternatives(data: dict[str, Any], roots: list[dict[str, Any]], text: str, path: Path) -> list[Alternatives]:
    """The project's alternative extras: its ``conflicts`` sets, and extras that bind a requirement to
    different indexes (``[package.metadata] requires-dist`` entries with an ``index``, located there)."""
    projects = {canonical(str(r.get("name"))) for r in roots}
    main = _main_project(roots)
    out: dict[frozenset[str], Alternatives] = {}
    conflicts = data.get("conflicts")
    for group in conflicts if isinstance(conflicts, list) else []:
        scopes = tuple(dict.fromkeys(f"{key} {item[key]!r}{_owner(canonical(str(item.get('package', ''))), main)}"
                                     for item in (group if isinstance(group, list) else [])
                                     if isinstance(item, dict) and canonical(str(item.get("package", ""))) in projects
                                     for key in ("extra", "group") if isinstance(item.get(key), str)))
        if len(scopes) > 1:
            out.setdefault(frozenset(scopes), Alternatives(scopes))
    bound: dict[str, dict[str, str]] = {}  # package -> extra -> index
    for root in roots:
        if main is not None and canonical(str(root.get("name"))) != main:
            continue  # a member's own bindings: its extras are its own install's
        metadata = root.get("metadata")
        requires = metadata.get("requires-dist") if isinstance(metadata, dict) else None
        for req in requires if isinstance(requires, list) else []:
            if not isinstance(req, dict) or not isinstance(req.get("index"), str) or not isinstance(req.get("marker"), str):
                continue
            m = re.fullmatch(r"extra == '([^']+)'", req["marker"].strip())
            if m and isinstance(req.get("name"), str):
                bound.setdefault(canonical(req["name"]), {})[m.group(1)] = req["index"]
    bound = {name: extras for name, extras in bound.items() if len(set(extras.values())) > 1}
    if bound:
        lines: dict[tuple[str, str], int] = {}
        for number, line in enumerate(text.split("\n"), start=1):
            m = _BOUND_LINE.match(line) if "index" in line else None
            if m:
                lines.setdefault((canonical(m.group(1)), m.group(2)), number)
        for name, extras in bound.items():
            scopes = tuple(f"extra {e!r}" for e in extras)
            where = tuple(Location(str(path), line=lines[(name, e)]) if (name, e) in lines else None for e in extras)
            out[frozenset(scopes)] = Alternatives(scopes, where)
    return list(out.values())


_NAME_LINE = re.compile(r"""^\s*name\s*=\s*["']([^"']*)["']""")


def _entry_lines(text: str, header: str) -> list[tuple[str, int]]:
    """(name, line) of each ``header`` block's ``name = ...``, in file order."""
    out: list[tuple[str, int]] = []
    in_header = False
    for number, line in enumerate(text.split("\n"), start=1):
        stripped = line.strip()
        if stripped.startswith("["):
            in_header = stripped == header
            continue
        if in_header:
            m = _NAME_LINE.match(line)
            if m:
                out.append((m.group(1), number))
                in_header = False
    return out


def _index_of(entry: dict[str, Any], style: str) -> str | None:
    if style == "pylock":
        index = entry.get("index")
        return str(index) if index else None
    source = entry.get("source")
    return str(source["registry"]) if isinstance(source, dict) and source.get("registry") else None


def _dependencies(entry: dict[str, Any]) -> tuple[str, ...] | None:
    deps = entry.get("dependencies")
    if not isinstance(deps, list):
        return None
    out = []
    for dep in deps:
        if isinstance(dep, dict) and dep.get("name"):
            spec = str(dep.get("specifier", "") or "")
            marker = dep.get("marker")
            if isinstance(marker, str):
                decided = with_extras(marker, frozenset())
                if decided is False:
                    continue
                marker = None if decided is True else decided
            out.append(f"{dep['name']}{spec}" + (f"; {marker}" if marker else ""))
    return tuple(out)
