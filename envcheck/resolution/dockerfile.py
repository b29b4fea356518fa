"""A Dockerfile's ``pip``/``uv pip`` installs, each resolved on its own, on a base that may already ship
packages (an NGC image's torch stays where pip would keep it)."""

from __future__ import annotations

import contextlib
import tempfile
from dataclasses import replace
from pathlib import Path

from envcheck.errors import ServiceError
from envcheck.inspect.wheel_tags import canonical
from envcheck.model import InstallCommand, Inventory, Package, Role
from envcheck.resolution.cache import remembered, resolution_key
from envcheck.resolution.context import Chosen, ResolveContext
from envcheck.resolution.facts import facts_of
from envcheck.resolution.uv import index_lines, requirement_line, uv_compile
from envcheck.services.package_index import FileProblem


def dockerfile_installs(declared: Inventory) -> list[tuple[InstallCommand, list[str]]]:
    """The ``pip``/``uv pip`` installs of a Dockerfile as requirements lines (index options of the same command first)."""
    out = []
    for install in declared.installs:
        loc = install.location
        if install.tool not in ("pip", "uv") or loc is None or not install.packages:
            continue
        lines = index_lines(declared.indexes, loc)
        lines += [requirement_line(p) for p in declared.packages if p.role in (Role.REQUIREMENT, Role.BUILD)
                  and p.location is not None and (p.location.line, p.location.stage) == (loc.line, loc.stage)]
        if any(not line.startswith("--") for line in lines):
            out.append((install, lines))
    return out


def shipped_packages(declared: Inventory, install: InstallCommand) -> dict[str, Package]:
    stage = install.location.stage if install.location else None
    return {p.name: p for p in declared.packages
            if p.installed and p.version and p.location is not None and p.location.stage == stage}


def keep_shipped(found: list[Chosen], shipped: dict[str, Package], lines: list[str], ctx: ResolveContext) -> list[Chosen]:
    """An install's resolution on a base that ships packages, as pip does it: a shipped version that satisfies
    every requirement on it stays, and what only it would have pulled in goes (else PyPI's torch would replace
    NGC's)."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.version import InvalidVersion, Version

    from envcheck.knowledge.builds import requirement_applies
    by_name = {c.name: c for c in found}

    def requires_of(name: str) -> list[Requirement]:
        item = by_name.get(name)
        if item is None or item.kind != "wheel" or item.problem:
            return []
        try:
            facts = facts_of(item, ctx)
        except (FileProblem, ServiceError):
            return []
        out = []
        for line in facts.requires or ():
            with contextlib.suppress(InvalidRequirement):
                req = Requirement(line)
                if req.marker is None or ("extra" not in str(req.marker) and requirement_applies(req.marker, ctx.profile)):
                    out.append(req)
        return out

    roots = []
    for line in lines:
        if not line.startswith("-"):
            with contextlib.suppress(InvalidRequirement):
                roots.append(Requirement(line))
    replaced: set[str] = set()
    for _round in range(8):
        specs: dict[str, list[Requirement]] = {}
        seen: set[str] = set()
        todo = list(roots)
        while todo:
            req = todo.pop()
            name = canonical(req.name)
            specs.setdefault(name, []).append(req)
            if name in seen or name not in by_name:
                continue
            seen.add(name)
            if name in shipped and name not in replaced:
                continue  # kept from the image (decided below): what it needs is already there
            todo.extend(requires_of(name))
        newly = set()
        for name in seen & set(shipped) - replaced:
            try:
                have = Version(str(shipped[name].version))
            except InvalidVersion:
                continue
            if not all(r.specifier.contains(have, prereleases=True) for r in specs.get(name, [])):
                newly.add(name)
        if not newly:
            return [c for c in found if c.name in seen and (c.name not in shipped or c.name in replaced)]
        replaced |= newly
    return found


def resolve_lines(lines: list[str], install: InstallCommand, ctx: ResolveContext) -> tuple[list[Chosen], str]:
    with tempfile.TemporaryDirectory(prefix="envcheck-run-") as tmp:
        req = Path(tmp) / "requirements.txt"
        req.write_text("\n".join(lines) + "\n", encoding="utf-8")
        found, conflict = remembered(resolution_key(req, Inventory(), ctx, install.no_deps), ctx,
                                     lambda: uv_compile(req, ctx, no_deps=install.no_deps))
    return [replace(c, location=install.location) for c in found], conflict
