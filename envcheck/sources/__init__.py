"""Sources: one module per input kind. Each reads, never judges, and returns an Inventory.

A source module provides::

    KIND: str                                   # the --kind name
    def sniff(path: Path, head: bytes) -> bool  # optional: does this file look like my kind?
    def read(path: Path, options: ReadOptions) -> Inventory

Problems it can survive (one bad line, one unreadable member) go into ``Inventory.problems``; a
target it cannot read at all raises :class:`envcheck.errors.InputError` (or ServiceError).
Modules are imported lazily so that ``envcheck requirements.txt`` stays light as a pre-commit hook.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from envcheck import kinds
from envcheck.errors import UsageError

# kind -> module, read from the table of input kinds (envcheck.kinds), kept for callers that list them.
SOURCE_MODULES: dict[str, str] = {k.name: k.module for k in kinds.KINDS}


@dataclass(frozen=True)
class ReadOptions:
    """Options that change what a source reads (not how checks judge)."""

    kind: str | None = None  # forced kind (--kind)
    build_args: Mapping[str, str] = field(default_factory=dict)  # Dockerfile --build-arg
    deep_fatbin: bool = False  # scan every section for fatbin containers
    use_cache: bool = True
    extra: Mapping[str, Any] = field(default_factory=dict)


def module_for(kind: str) -> ModuleType:
    """The source module that reads ``kind`` (imported now: each kind's code loads only when needed)."""
    row = kinds.get(kind)
    if row is None:
        raise UsageError(f"unknown input kind {kind!r}; known: {', '.join(kinds.path_kinds())}")
    return importlib.import_module(row.module)


def detect(path: Path) -> str | None:
    """The input kind of ``path`` from its name (the table's name rules, as discovery and the pre-commit
    hooks use them) and, where the name says nothing, its content (magic bytes, then each sniffer)."""
    if path.is_dir():
        return "folder" if is_environment(path) or not discover(path) else "project"
    by_name = kinds.by_file_name(path.name)
    if by_name is not None:
        return by_name.name
    if not path.is_file():
        return None  # a pipe (<(pip freeze)) or device: sniffing would eat what the reader needs; use --kind
    try:
        with path.open("rb") as fh:
            head = fh.read(4096)
    except OSError:
        return None
    for row in kinds.KINDS:
        if row.magic and head.startswith(row.magic):
            return row.name
    for row in kinds.KINDS:
        if row.sniff:
            sniff = getattr(module_for(row.name), "sniff", None)
            if sniff is not None and sniff(path, head):
                return row.name
    return None


_SKIP_DIRS = {".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".nox", ".mypy_cache", ".ruff_cache", "site-packages", "dist-packages"}


def is_environment(folder: Path) -> bool:
    """Does ``folder`` hold installed software (a venv, a site-packages, a CUDA tree) rather than a project?"""
    if folder.name in ("site-packages", "dist-packages") or (folder / "pyvenv.cfg").is_file() or (folder / "conda-meta").is_dir():
        return True
    try:
        entries = list(folder.iterdir())
    except OSError:
        return False
    if any(e.name.endswith((".dist-info", ".egg-info")) for e in entries):
        return True
    return (folder / "lib64").is_dir() and (folder / "include").is_dir()  # /usr/local/cuda and friends


def discover(folder: Path, depth: int = 3) -> list[tuple[Path, str]]:
    """Dependency files and recipes in ``folder`` and its subfolders, ``depth`` levels deep (skipping
    VCS folders and virtual environments): what ``envcheck`` checks in a project folder."""
    found: list[tuple[Path, str]] = []
    try:
        entries = sorted(folder.iterdir())
    except OSError:
        return found
    for entry in entries:
        if entry.is_dir() and not entry.is_symlink():
            if depth > 0 and entry.name not in _SKIP_DIRS and not entry.name.startswith(".") and not is_environment(entry):
                found.extend(discover(entry, depth - 1))
            continue
        if not entry.is_file():
            continue
        row = kinds.by_file_name(entry.name)
        if row is not None:
            found.append((entry, row.name))
    return found
