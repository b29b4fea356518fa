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

from envcheck.errors import UsageError

# kind -> module. Order matters for detection of files by content (first match wins).
SOURCE_MODULES: dict[str, str] = {
    "requirements": "envcheck.sources.requirements",
    "pyproject": "envcheck.sources.pyproject",
    "uv-lock": "envcheck.sources.locks",
    "pylock": "envcheck.sources.locks",
    "dockerfile": "envcheck.sources.dockerfile",
    "wheel": "envcheck.sources.wheel",
    "elf": "envcheck.sources.binaries",
    "folder": "envcheck.sources.binaries",
}


@dataclass(frozen=True)
class ReadOptions:
    """Options that change what a source reads (not how checks judge)."""

    kind: str | None = None  # forced kind (--kind)
    build_args: Mapping[str, str] = field(default_factory=dict)  # Dockerfile --build-arg
    deep_fatbin: bool = False  # scan every section for fatbin containers
    use_cache: bool = True
    extra: Mapping[str, Any] = field(default_factory=dict)


def module_for(kind: str) -> ModuleType:
    """The source module that reads ``kind``."""
    try:
        return importlib.import_module(SOURCE_MODULES[kind])
    except KeyError:
        raise UsageError(f"unknown input kind {kind!r}; known: {', '.join(sorted(SOURCE_MODULES))}") from None


_NAME_PATTERNS: tuple[tuple[str, str], ...] = (
    ("pyproject.toml", "pyproject"),
    ("uv.lock", "uv-lock"),
    ("pylock.toml", "pylock"),
)


def detect(path: Path) -> str | None:
    """The input kind of ``path`` from its name and, where that is ambiguous, its content."""
    if path.is_dir():
        return "folder" if is_environment(path) or not discover(path) else "project"
    name = path.name
    lower = name.lower()
    for pattern, kind in _NAME_PATTERNS:
        if lower == pattern:
            return kind
    if lower.startswith("pylock.") and lower.endswith(".toml"):
        return "pylock"
    if lower.endswith(".whl"):
        return "wheel"
    if lower.startswith(("dockerfile", "containerfile")) or lower.endswith((".dockerfile", ".containerfile")):
        return "dockerfile"
    if lower.endswith((".txt", ".in", ".pip")) and ("requirement" in lower or "constraint" in lower or "freeze" in lower or lower.endswith(".in")):
        return "requirements"
    if not path.is_file():
        return None  # a pipe (<(pip freeze)) or device: sniffing would eat what the reader needs; use --kind
    try:
        with path.open("rb") as fh:
            head = fh.read(4096)
    except OSError:
        return None
    if head.startswith(b"\x7fELF") or head.startswith(b"!<arch>\n"):
        return "elf"
    for kind in ("requirements", "dockerfile"):
        module = module_for(kind)
        sniff = getattr(module, "sniff", None)
        if sniff is not None and sniff(path, head):
            return kind
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
        lower = entry.name.lower()
        if (any(w in lower for w in ("requirements", "constraints", "freeze")) and lower.endswith((".txt", ".in"))) or lower in (
            "pyproject.toml", "uv.lock", "pylock.toml", "freeze.txt",
        ) or (lower.startswith("pylock.") and lower.endswith(".toml")) or lower.startswith(("dockerfile", "containerfile")) or lower.endswith((".dockerfile", ".whl")):
            kind = detect(entry)
            if kind:
                found.append((entry, kind))
    return found
