"""pyproject.toml: requirements by scope (extras and non-default groups are opt-in ``Package.scope``s) and
uv's index configuration, which decides which CUDA build of torch is installed."""

from __future__ import annotations

import itertools
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion

from envcheck.errors import EnvcheckError
from envcheck.inspect.markers import all_of, negated
from envcheck.inspect.pip_args import parse_requirement_text, shown
from envcheck.inspect.wheel_tags import canonical
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
)
from envcheck.sources import ReadOptions
from envcheck.sources.requirements import MAX_PACKAGES, text_limit, too_many_packages
from envcheck.sources.toml_file import parse_toml

KIND = "pyproject"

# A table header only a pyproject.toml has: [project], [build-system], [dependency-groups], [tool.uv...].
_PYPROJECT_TABLE = re.compile(rb"(?m)^[ \t]*\[(?:(?:project|build-system|dependency-groups)\]|\[?[ \t]*tool\.uv[.\]])")


def sniff(path: Path, head: bytes) -> bool:
    return b"\x00" not in head and _PYPROJECT_TABLE.search(head) is not None


# include-group chains and self-referencing extras (`all = ["proj[cpu,train]"]`) are followed this deep.
_MAX_NESTING = 16
_MAX_MEMBER_MATCHES = 1000  # workspace member files a glob may find before envcheck stops it


class TomlLines:
    """Line numbers of keys and values in a TOML text. The keys of every section are indexed once, and the
    searches for values that are not there read the file at most a few times over: one lookup per key of a
    20,000-key table used to read the whole table (quadratic: minutes)."""

    _HEADER = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(?:#.*)?$")
    _PART = r"""(?:"[^"]*"|'[^']*'|[^\s"'.=]+)"""
    _KEY = re.compile(rf"^\s*({_PART}(?:\s*\.\s*{_PART})*)\s*=")

    def __init__(self, text: str) -> None:
        self.lines = text.split("\n")  # TOML lines end in LF or CRLF only (splitlines would also split at U+2028)
        self.headers: list[tuple[int, str]] = []
        for i, line in enumerate(self.lines):
            if line.lstrip().startswith("[") and (m := self._HEADER.match(line)):
                self.headers.append((i, _plain_key(m.group(1))))
        self.sections: dict[str, list[int]] = {"": [0]}  # table name: its sections (0: the top, n: after headers[n - 1])
        for n, (_, name) in enumerate(self.headers, 1):
            self.sections.setdefault(name, []).append(n)
        self._keys: dict[tuple[int, tuple[str, ...]], int] | None = None
        self.scan_left = 16 * len(self.lines) + (1 << 16)  # lines all searches together may read

    def find(self, needle: str, start: int = 0, end: int | None = None) -> int | None:
        """0-based index of the first line from ``start`` holding ``needle`` quoted (or bare); None also once
        the searches have read the file many times over (values written unlike their parsed text)."""
        stop = len(self.lines) if end is None else min(end, len(self.lines))
        for quoted in (f'"{needle}"', f"'{needle}'", needle):
            if self.scan_left <= 0:
                return None
            for i in range(start, stop):
                if quoted in self.lines[i]:
                    self.scan_left -= i + 1 - start
                    return i
            self.scan_left -= stop - start
        return None

    def key(self, path: tuple[str, ...]) -> int | None:
        """0-based line where the value at ``path`` is set (``c =`` in ``[a.b]``, or ``b.c =`` in ``[a]``)."""
        if self._keys is None:
            self._keys = {}
            section = 0  # 0: the top of the file, n: after the header headers[n - 1]
            starts = {i for i, _ in self.headers}
            for i, line in enumerate(self.lines):
                if i in starts:
                    section += 1
                elif "=" in line and (m := self._KEY.match(line)):
                    self._keys.setdefault((section, tuple(_plain_key(m.group(1)).split("."))), i)
        for split in range(len(path) - 1, -1, -1):
            for section in self.sections.get(".".join(path[:split]), ()):
                if (found := self._keys.get((section, path[split:]))) is not None:
                    return found
        return None


def _plain_key(header: str) -> str:
    return ".".join(part.strip().strip("\"'") for part in header.split("."))


class _Reader:
    def __init__(self, path: Path, data: dict[str, Any], text: str) -> None:
        self.path = path
        self.data = data
        self.lines = TomlLines(text)
        self.inventory = Inventory()
        self.count = 0  # requirement strings read so far, every list together (MAX_PACKAGES)
        self.project = project = self.table(data, "project")
        self.name = canonical(str(project.get("name"))) if isinstance(project.get("name"), str) else None

    def loc(self, index: int | None) -> Location:
        return Location(str(self.path), line=None if index is None else index + 1)

    def problem(self, message: str, index: int | None = None) -> None:
        self.inventory.problems.append(ReadProblem(message, self.loc(index)))

    def table(self, parent: dict[str, Any], key: str) -> dict[str, Any]:
        """``parent[key]`` when it is a TOML table; anything else is a problem at its line and reads as empty."""
        value = parent.get(key, {})
        if not isinstance(value, dict):
            self.problem(f"{key} must be a table, not {type(value).__name__}", self.lines.find(key))
            return {}
        return value

    def requirements(self, path: tuple[str, ...], reqs: Any, scope: str | None, role: Role = Role.REQUIREMENT,
                     groups: dict[str, Any] | None = None, depth: int = 0) -> list[Package]:
        label = ".".join(path)
        start = self.lines.key(path)
        if not isinstance(reqs, list):
            self.problem(f"{label} must be a list of requirement strings", start)
            return []
        out: list[Package] = []
        cursor = start or 0
        left = MAX_PACKAGES - self.count
        if len(reqs) > left:
            self.problem(f"{label}: {too_many_packages()}", start)
            reqs = reqs[:max(left, 0)]
        self.count += len(reqs)
        for req in reqs:
            if isinstance(req, dict) and "include-group" in req and groups is not None:
                included = str(req["include-group"])
                if depth >= _MAX_NESTING or included not in groups:
                    self.problem(f"{label}: include-group {shown(included)} is not a group here (or nested too deep)", start)
                    continue
                out.extend(self.requirements(("dependency-groups", included), groups[included], scope, role, groups, depth + 1))
                continue
            if not isinstance(req, str):
                self.problem(f"{label}: {shown(repr(req))} is not a requirement string", start)
                continue
            found = self.lines.find(req, cursor)
            if found is None:
                found = self.lines.find(req)
            else:
                cursor = found + 1
            pkg = parse_requirement_text(req, self.loc(found if found is not None else start), role=role)
            if isinstance(pkg, ReadProblem):
                self.inventory.problems.append(pkg)
            elif pkg is not None:
                out.append(replace(pkg, scope=scope))
        return out


def read(path: Path, options: ReadOptions, members: bool = True) -> Inventory:
    data, text = parse_toml(path, text_limit(options))
    reader = _Reader(path, data, text)
    inventory = reader.inventory
    project = reader.project
    uv = reader.table(reader.table(data, "tool"), "uv")
    extras = {extra: reader.requirements(("project", "optional-dependencies", extra), reqs, None)
              for extra, reqs in reader.table(project, "optional-dependencies").items()}
    packages = _own_extras(reader, reader.requirements(("project", "dependencies"), project.get("dependencies", []), None), extras, None)
    for extra, listed in extras.items():
        packages.extend(_own_extras(reader, listed, extras, f"extra {extra!r}"))
    groups = reader.table(data, "dependency-groups")
    defaults = _default_groups(uv, groups)
    for group, reqs in groups.items():
        scope = None if group in defaults else f"group {group!r}"
        packages.extend(reader.requirements(("dependency-groups", group), reqs, scope, groups=groups))
    if "dev-dependencies" in uv:  # uv's older spelling of the dev group
        scope = None if "dev" in defaults else "group 'dev'"
        packages.extend(reader.requirements(("tool", "uv", "dev-dependencies"), uv["dev-dependencies"], scope))
    # uv's pins on what others pull in: constraints narrow every requirement on a package, overrides replace them
    packages.extend(reader.requirements(("tool", "uv", "constraint-dependencies"), uv.get("constraint-dependencies", []), None,
                                        role=Role.CONSTRAINT))
    overrides = uv.get("override-dependencies", [])
    if isinstance(overrides, list):  # a table overrides one package's own dependencies (uv's scoped form): not read
        overrides = [o for o in overrides if not (isinstance(o, dict) and "package" in o)]
    packages.extend(reader.requirements(("tool", "uv", "override-dependencies"), overrides, None, role=Role.OVERRIDE))
    packages.extend(reader.requirements(("build-system", "requires"), reader.table(data, "build-system").get("requires", []), None, role=Role.BUILD))
    indexes = _uv_indexes(reader, uv)
    inventory.indexes.extend(indexes.values())
    inventory.packages.extend(_with_sources(reader, packages, reader.table(uv, "sources"), indexes))
    if members:
        inventory.packages.extend(_member_extras(reader, packages, uv, options))
    if options.with_lock:
        inventory.packages[:] = _locked(inventory.packages, path, options, defaults)
    inventory.alternatives.extend(_alternatives(reader, uv))
    names = tuple(dict.fromkeys(p.name for p in inventory.packages if p.scope is None and p.role == Role.REQUIREMENT))
    inventory.installs.append(InstallCommand(tool="requirements", packages=names, text=f"pip install {path.parent.name or '.'}",
                                             location=Location(str(path))))
    return inventory


def _locked(packages: list[Package], path: Path, options: ReadOptions, default_groups: set[str]) -> list[Package]:
    """``packages`` at the versions the uv.lock beside ``path`` holds (``uv sync`` installs the lock, not the
    newest release); a missing, unreadable or out-of-date lock (uv locks again) leaves them as written."""
    lock_path = path.parent / "uv.lock"
    try:
        if not lock_path.is_file():
            return packages
        from envcheck.sources import locks  # here: locks reads pyproject's TOML reader

        lock = locks.read(lock_path, replace(options, with_lock=False))
    except (OSError, EnvcheckError):
        return packages
    entries: dict[tuple[str, str | None], list[Package]] = {}
    for entry in lock.packages:
        if entry.role == Role.LOCK and entry.version and not entry.url:
            entries.setdefault((entry.name, entry.scope), []).append(entry)
    defaults = [None, *(f"group {g!r}" for g in sorted(default_groups))]
    out: list[Package] = []
    for pkg in packages:
        scopes = defaults if pkg.scope is None else [pkg.scope]
        found = ([e for s in scopes for e in entries.get((pkg.name, s), [])]
                 if pkg.role == Role.REQUIREMENT and not pkg.version and not pkg.url else [])
        allowed = [e for e in found if e.version and _allows(pkg.specifier, e.version)]
        if found and not allowed:
            return packages  # out of date
        if not allowed:
            out.append(pkg)
            continue
        out.extend(replace(pkg, version=e.version, marker=all_of(pkg.marker, e.marker), index=e.index or pkg.index)
                   for e in allowed)
    return out


def _member_extras(reader: _Reader, packages: list[Package], uv: dict[str, Any], options: ReadOptions) -> list[Package]:
    """What ``member[extra]`` of a uv workspace member (``{ workspace = true }``) installs: the member's own
    requirements and those extras, as its pyproject.toml binds them, at this file's requirement line."""
    sources = reader.table(uv, "sources")
    listed = reader.table(uv, "workspace").get("members", [])
    wanted = [p for p in packages if p.extras and any(
        isinstance(e, dict) and e.get("workspace") is True for e in _entries(sources, p.name))]
    out: list[Package] = []
    for pattern in listed[:_MAX_NESTING] if isinstance(listed, list) and wanted else ():
        for member in _members(reader.path.parent, pattern):
            asking = [p for p in wanted if _project_name(member) == p.name]
            try:
                inventory = read(member, replace(options, with_lock=False), members=False) if asking else Inventory()
            except (OSError, EnvcheckError):
                continue
            for pkg in asking:
                scopes = {None, *(f"extra {e!r}" for e in pkg.extras)}
                out.extend(replace(i, location=pkg.location, scope=pkg.scope, marker=all_of(pkg.marker, i.marker))
                           for i in inventory.packages if i.role == Role.REQUIREMENT and i.scope in scopes)
    return out


def _members(root: Path, pattern: object) -> list[Path]:
    """The pyproject.toml files of the workspace members ``pattern`` names, at most _MAX_NESTING of the first
    _MAX_MEMBER_MATCHES the glob finds. Never an absolute pattern; ``..`` steps (``../lib``) only ahead of the
    rest, which then has no wildcard but in its last part (no walk of the folders above); never through a link
    leading out of the folder the pattern starts in."""
    if not isinstance(pattern, str) or not pattern or pattern.startswith(("/", "\\")) or "\0" in pattern:
        return []
    parts = [p for p in re.split(r"[/\\]", pattern) if p not in ("", ".")]
    ups = next((n for n, p in enumerate(parts) if p != ".."), len(parts))
    rest = parts[ups:]
    if ".." in rest or (ups and ("**" in rest or any(c in part for part in rest[:-1] for c in "*?["))):
        return []
    try:
        base = root.joinpath(*parts[:ups]).resolve()
        found = [m for m in itertools.islice(base.glob("/".join([*rest, "pyproject.toml"])), _MAX_MEMBER_MATCHES)
                 if m.resolve().is_relative_to(base)]
    except (OSError, RuntimeError, ValueError, NotImplementedError):  # a pattern pathlib refuses ('**a'), a loop
        return []
    return sorted(found)[:_MAX_NESTING]


def _entries(sources: dict[str, Any], name: str) -> list[Any]:
    value: Any = next((v for k, v in sources.items() if canonical(str(k)) == name), [])
    return value if isinstance(value, list) else [value]


def _project_name(path: Path) -> str | None:
    try:
        project = parse_toml(path, 1 << 20)[0].get("project", {})
    except (OSError, EnvcheckError):
        return None
    return canonical(str(project.get("name"))) if isinstance(project, dict) and project.get("name") else None


def _allows(specifier: str, version: str) -> bool:
    try:
        return SpecifierSet(specifier).contains(version, prereleases=True)
    except (InvalidSpecifier, InvalidVersion):
        return False


def _own_extras(reader: _Reader, packages: list[Package], extras: dict[str, list[Package]], scope: str | None) -> list[Package]:
    """``packages`` in ``scope``; ``proj[cpu]`` in proj's own requirements brings those extras into it."""
    out: list[Package] = []
    for pkg in packages:
        if reader.name is None or pkg.name != reader.name or not pkg.extras:
            out.append(replace(pkg, scope=scope))
            continue
        seen: set[str] = set()
        todo = [e for e in pkg.extras if e in extras]
        while todo and len(seen) < _MAX_NESTING:
            extra = todo.pop()
            if extra in seen:
                continue
            seen.add(extra)
            for inner in extras[extra]:
                if inner.name == reader.name:
                    todo.extend(e for e in inner.extras if e in extras)
                else:
                    out.append(replace(inner, scope=scope, marker=all_of(pkg.marker, inner.marker)))
    return out


def _default_groups(uv: dict[str, Any], groups: dict[str, Any]) -> set[str]:
    value = uv.get("default-groups", ["dev"])
    if value == "all":
        return set(groups)
    return {str(g) for g in value} if isinstance(value, list) else {"dev"}


def _uv_indexes(reader: _Reader, uv: dict[str, Any]) -> dict[str, PackageIndex]:
    """uv's indexes by name (unnamed ones by URL)."""
    out: dict[str, PackageIndex] = {}
    raw = uv.get("index", [])
    cursor = reader.lines.key(("tool", "uv", "index")) or 0
    for entry in raw if isinstance(raw, list) else [raw]:
        if not isinstance(entry, dict) or not isinstance(entry.get("url"), str):
            reader.problem("[[tool.uv.index]] needs a url", reader.lines.find("tool.uv.index"))
            continue
        url = entry["url"]
        found = reader.lines.find(url, cursor)
        cursor = found + 1 if found is not None else cursor
        name = str(entry["name"]) if isinstance(entry.get("name"), str) else None
        # `default = true` replaces PyPI as the index every package may come from
        option = IndexOption.INDEX_URL if entry.get("default") is True else IndexOption.UV_INDEX
        out[name or url] = PackageIndex(url, option, reader.loc(found), name=name, explicit=entry.get("explicit") is True)
    for table, where in ((reader.table(uv, "pip"), ("tool", "uv", "pip")), (uv, ("tool", "uv"))):
        for key, option in (("index-url", IndexOption.INDEX_URL), ("default-index", IndexOption.INDEX_URL),
                            ("extra-index-url", IndexOption.EXTRA_INDEX_URL), ("find-links", IndexOption.FIND_LINKS)):
            value = table.get(key)
            for url in [value] if isinstance(value, str) else value if isinstance(value, list) else []:
                start = reader.lines.key((*where, key))
                found = reader.lines.find(str(url), start or 0)
                out.setdefault(str(url), PackageIndex(str(url), option, reader.loc(found if found is not None else start)))
        backend = table.get("torch-backend")
        if isinstance(backend, str):
            out.setdefault(f"uv-torch-backend:{backend}", PackageIndex(f"uv-torch-backend:{backend}", IndexOption.INDEX_URL,
                                                                       reader.loc(reader.lines.key((*where, "torch-backend")))))
    return out


def _with_sources(reader: _Reader, packages: list[Package], sources: dict[str, Any], indexes: dict[str, PackageIndex]) -> list[Package]:
    """Apply ``[tool.uv.sources]`` as uv picks them, per extra, group and marker."""
    by_name: dict[str, list[dict[str, Any]]] = {}
    for name, value in sources.items():
        entries = value if isinstance(value, list) else [value]
        usable = [e for e in entries if isinstance(e, dict)]
        if len(usable) != len(entries):
            reader.problem(f"tool.uv.sources.{name} must be a table or a list of tables", reader.lines.key(("tool", "uv", "sources", name)))
        by_name[canonical(str(name))] = usable
    out: list[Package] = []
    for pkg in packages:
        entries = [e for e in by_name.get(pkg.name, []) if _source_applies(e, pkg.scope)]
        if not entries or pkg.role == Role.BUILD:
            out.append(pkg)
            continue
        unconditional = False
        for entry in entries:
            chosen = _sourced(reader, pkg, entry, indexes)
            if chosen is None:
                continue
            marker = entry.get("marker") if isinstance(entry.get("marker"), str) else None
            unconditional = unconditional or marker is None
            out.append(replace(chosen, marker=all_of(pkg.marker, marker)))
            if marker is None:
                break  # uv takes the first source that applies
        if not unconditional:
            markers = [str(e["marker"]) for e in entries if isinstance(e.get("marker"), str)]
            rest = [negated(m) for m in markers]
            # where no source's marker holds, uv installs from the default indexes
            out.append(replace(pkg, marker=all_of(pkg.marker, *rest)) if None not in rest else pkg)
    return out


def _source_applies(entry: dict[str, Any], scope: str | None) -> bool:
    named = _scope_named(entry)
    return named is None or scope == named


def _sourced(reader: _Reader, pkg: Package, entry: dict[str, Any], indexes: dict[str, PackageIndex]) -> Package | None:
    """``pkg`` as this source entry installs it; None for an entry that names nothing envcheck can read."""
    if isinstance(entry.get("index"), str):
        index = indexes.get(entry["index"])
        if index is None:
            reader.problem(f"tool.uv.sources.{pkg.name} names the index {shown(entry['index'])}, which no [[tool.uv.index]] defines",
                           reader.lines.key(("tool", "uv", "sources", pkg.name)))
            return None
        line = reader.lines.key(("tool", "uv", "sources", pkg.name))
        return replace(pkg, index=index.url, bound_at=None if line is None else line + 1)
    if isinstance(entry.get("git"), str):
        ref = next((str(entry[k]) for k in ("rev", "tag", "branch") if isinstance(entry.get(k), str)), None)
        return replace(pkg, url=f"git+{entry['git']}" + (f"@{ref}" if ref else ""))
    for key in ("url", "path"):
        if isinstance(entry.get(key), str):
            return replace(pkg, url=str(entry[key]))
    if entry.get("workspace") is True:
        return None  # a member of the same workspace: read its own pyproject.toml
    return pkg


def _scope_named(entry: Any) -> str | None:
    """``{ extra = "gpu" }`` -> ``extra 'gpu'``; None for anything else."""
    if not isinstance(entry, dict):
        return None
    for key in ("extra", "group"):
        if isinstance(entry.get(key), str):
            return f"{key} {entry[key]!r}"
    return None


def _alternatives(reader: _Reader, uv: dict[str, Any]) -> list[Alternatives]:
    """Scopes declared as alternatives: ``[tool.uv] conflicts`` sets, and those whose sources take one package
    from different indexes (uv's PyTorch guide: ``cpu`` and ``gpu`` extras)."""
    out: dict[frozenset[str], Alternatives] = {}
    conflicts = uv.get("conflicts")
    for group in conflicts if isinstance(conflicts, list) else []:
        scopes = tuple(dict.fromkeys(s for s in map(_scope_named, group if isinstance(group, list) else []) if s))
        if len(scopes) > 1:
            out.setdefault(frozenset(scopes), Alternatives(scopes))
    sources = uv.get("sources")
    for name, value in sources.items() if isinstance(sources, dict) else ():
        bound = [(scope, str(e["index"])) for e in (value if isinstance(value, list) else [])
                 if (scope := _scope_named(e)) is not None and isinstance(e.get("index"), str)]
        if len({index for _, index in bound}) < 2:
            continue
        cursor = reader.lines.key(("tool", "uv", "sources", str(name))) or 0
        where: list[Location | None] = []
        for scope, _ in bound:  # each entry's line: the first line after the previous one naming its extra or group
            found = reader.lines.find(scope.partition(" ")[2].strip("'"), cursor, cursor + 64)
            where.append(reader.loc(found) if found is not None else None)
            cursor = found + 1 if found is not None else cursor
        scopes = tuple(scope for scope, _ in bound)
        # a source binding says where each scope's build comes from: it replaces a bare conflicts set
        out[frozenset(scopes)] = Alternatives(scopes, tuple(where))
    return list(out.values())
