"""The resolution stage of a target: what it resolves to on the profile, as inventory, next to what it declares."""

from __future__ import annotations

import re
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from envcheck.errors import InputError, ServiceError
from envcheck.inspect.wheel_tags import parse_wheel_name
from envcheck.model import (
    Binary,
    IndexOption,
    Inventory,
    Location,
    Package,
    PackageIndex,
    ReadProblem,
    ResolvedFile,
    Role,
    Wheel,
    from_plain,
)
from envcheck.profile import Profile
from envcheck.resolution.cache import remembered, resolution_key
from envcheck.resolution.context import Chosen, ResolveContext, ResolveSettings
from envcheck.resolution.dockerfile import dockerfile_installs, keep_shipped, resolve_lines, shipped_packages
from envcheck.resolution.facts import Outcome, facts_of, facts_of_all
from envcheck.resolution.locks import lock_choices
from envcheck.resolution.platform import uv_platform
from envcheck.resolution.uv import (
    conflict_line,
    conflict_pair,
    redact_text,
    resolve_pyproject,
    settings_index_urls,
    uv_compile,
    without_absent_projects,
)
from envcheck.services.package_index import FileProblem, IndexClient, redact
from envcheck.sources.remote_wheel import FileFacts


def resolve(path: Path, kind: str, declared: Inventory, profile: Profile,
            settings: ResolveSettings) -> Inventory:
    python = settings.python_version or profile.python_version
    client = IndexClient()
    for index in (*settings_index_urls(settings), *(i.url for i in declared.indexes)):
        client.use_credentials_of(index)
    ctx = ResolveContext(profile, settings, python, client)
    inventory = Inventory(context="declared")
    started = time.monotonic()
    if kind in ("pylock", "uv-lock"):
        chosen = lock_choices(path, profile, python)
        # What the default install puts on the target: entries whose markers exclude linux/aarch64 (another
        # fork of a uv.lock, a pylock marker) or that only an extra or a group installs are not judged here.
        from envcheck.knowledge.builds import installs_on
        locked = [p for p in declared.packages if p.role == Role.LOCK]
        wanted = {(p.name, p.version) for p in locked if p.scope is None and installs_on(p, profile)}
        known = {(p.name, p.version) for p in locked}
        chosen = [c for c in chosen if (c.name, c.version) in wanted or (c.name, c.version) not in known]
    elif kind in ("requirements", "freeze", "pyproject"):
        freeze = kind == "freeze" or declared.context == "installed"
        with tempfile.TemporaryDirectory(prefix="envcheck-local-") as tmp:
            read, absent = (path, []) if kind == "pyproject" else without_absent_projects(path, Path(tmp))
            chosen, conflict = remembered(resolution_key(read, declared, ctx, freeze), ctx, lambda: (
                resolve_pyproject(path, declared, ctx) if kind == "pyproject"
                else uv_compile(read, ctx, no_deps=freeze, cwd=path.resolve().parent, shown=path)))
        inventory.problems += [ReadProblem(
            f"{words}: not resolved: {where} is not here, or holds no pyproject.toml or setup.py (uv and pip stop "
            "there: checked without its project?"
            + (f"; in a file that {path.name} includes, pip and uv read it from the working folder, not this file's" if file != path else "")
            + "); the rest is resolved without it", Location(str(file), line=line), note=True)
            for file, line, words, where in absent]
        if conflict and not chosen:
            inventory.resolved.append(_conflict(path, conflict, conflict_line(path, conflict)))
            return inventory
    elif kind == "dockerfile":
        chosen = []
        for install, requirements in dockerfile_installs(declared):
            where = f"{path}:{install.location.line if install.location else '?'}"
            try:
                found, conflict = resolve_lines(requirements, install, ctx)
            except (ServiceError, InputError) as exc:  # one install's failure never hides the others
                message = re.sub(r"^\S*requirements\.txt", where, exc.message)
                inventory.problems.append(ReadProblem(redact_text(message), install.location, service=isinstance(exc, ServiceError)))
                continue
            shipped = shipped_packages(declared, install)
            if shipped and found:
                found = keep_shipped(found, shipped, requirements, ctx)
            if conflict and not found:
                inventory.resolved.append(_conflict(path, conflict, install.location))
            chosen += found
    else:
        raise InputError(f"{path}: --resolve reads requirements, freeze, pyproject, uv.lock, pylock files and Dockerfiles, not {kind} inputs", str(path))
    for item, outcome in zip(chosen, facts_of_all(chosen, ctx), strict=True):
        add_file(inventory, item, ctx, outcome)
    from envcheck.readings import ResolveReading
    inventory.host = replace(inventory.host, resolve=ResolveReading(
        python_version=python, platform=uv_platform(profile), files=len(chosen), requests=client.traffic.requests,
        bytes_read=client.traffic.bytes, seconds=round(time.monotonic() - started, 3)))
    return inventory


def _conflict(path: Path, words: str, location: Location | None) -> ResolvedFile:
    return ResolvedFile(path.name, None, "conflict", reason=redact_text(conflict_pair(words)),
                        sources=("resolver",), location=location)


def add_file(inventory: Inventory, item: Chosen, ctx: ResolveContext, outcome: Outcome | None = None) -> None:
    url = redact(item.url) if item.url else None
    if item.kind == "sdist" and not item.problem:
        from envcheck.resolution.sdists import sdist_reason
        item = replace(item, reason=sdist_reason(item, ctx))
    record = ResolvedFile(item.name, item.version, item.kind, item.filename, url, item.sha256, item.size,
                          (item.source,), 0, item.reason, item.location)
    requires: tuple[str, ...] | None = None
    if item.problem:
        inventory.problems.append(ReadProblem(item.problem, item.location))
    elif item.kind == "wheel":
        if outcome is None:
            try:
                outcome = facts_of(item, ctx)
            except (FileProblem, ServiceError) as exc:
                outcome = exc
        if isinstance(outcome, FileProblem):
            inventory.problems.append(ReadProblem(outcome.message, item.location))
            facts = FileFacts(sources=["index"])
        elif isinstance(outcome, ServiceError):
            inventory.problems.append(ReadProblem(outcome.message, item.location, service=True))
            facts = FileFacts()
        else:
            facts = outcome
        requires = facts.requires
        record = replace(record, sources=(item.source, *facts.sources), bytes_read=facts.bytes_read)
        for problem in facts.problems:
            inventory.problems.append(ReadProblem(f"{url or item.filename}!{problem}", Location(url or str(item.filename))))
        for note in facts.notes:
            inventory.problems.append(ReadProblem(f"{url or item.filename}: {note}", Location(url or str(item.filename)), note=True))
        where = Location(url or str(item.filename))
        if item.location is not None and item.location.outside_image:  # installed by a stage outside the built image
            where = replace(where, stage=item.location.stage, outside_image=True)
        for data in facts.binaries:
            values = {k: v for k, v in data.items() if k != "member"}
            binary = from_plain(Binary, values, "binary")
            inventory.binaries.append(replace(binary, distribution=item.name, location=replace(where, member=data.get("member"))))
        parsed = parse_wheel_name(item.filename or "")
        inventory.wheels.append(Wheel(item.filename or "", item.name, item.version or "", parsed.tags if parsed else facts.tags,
                                      requires or (), where))
    inventory.resolved.append(record)
    inventory.packages.append(Package(name=item.name, version=item.version, specifier=f"=={item.version}" if item.version else "",
                                      requires=requires, role=Role.RESOLVED, location=item.location))


def index_entries(settings: ResolveSettings) -> list[PackageIndex]:
    out = []
    if settings.index_url:
        out.append(PackageIndex(redact(settings.index_url), IndexOption.INDEX_URL))
    out += [PackageIndex(redact(u), IndexOption.EXTRA_INDEX_URL) for u in settings.extra_index_urls]
    out += [PackageIndex(redact(u), IndexOption.FIND_LINKS) for u in settings.find_links]
    return out


RESOLVABLE = ("requirements", "freeze", "pyproject", "uv-lock", "pylock", "dockerfile")


def resolved_reader(name: str, kind: str, read_declared: Any, settings: ResolveSettings, profile_name: str) -> Any:
    """A target reader that adds, first, what the file resolves to on the profile (what would be installed
    wins over the file's own words); an unreachable index is a service problem next to what was read, never a
    lost target."""
    from envcheck.profile import load_profile

    def read() -> Inventory:
        declared: Inventory = read_declared()
        if kind not in RESOLVABLE:
            return declared
        profile = load_profile(profile_name)
        try:
            inventory = resolve(Path(name), kind, declared, profile, settings)
        except ServiceError as exc:
            inventory = Inventory(problems=[ReadProblem(redact_text(exc.message), Location(name), service=True)])
        except InputError as exc:
            inventory = Inventory(problems=[ReadProblem(redact_text(exc.message), Location(exc.path or name, line=exc.line))])
        inventory.extend(declared)
        inventory.indexes.extend(index_entries(settings))
        inventory.context = declared.context
        return inventory

    return read
