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
        return "folder"
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


def discover(folder: Path) -> list[tuple[Path, str]]:
    """Dependency files and recipes directly in ``folder`` (what ``envcheck`` with no PATH checks)."""
    found: list[tuple[Path, str]] = []
    try:
        entries = sorted(folder.iterdir())
    except OSError:
        return found
    for entry in entries:
        if not entry.is_file():
            continue
        lower = entry.name.lower()
        if (lower.startswith(("requirements", "constraints")) and lower.endswith((".txt", ".in"))) or lower in (
            "pyproject.toml", "uv.lock", "pylock.toml", "freeze.txt",
        ) or (lower.startswith("pylock.") and lower.endswith(".toml")) or lower.startswith(("dockerfile", "containerfile")) or lower.endswith((".dockerfile", ".whl")):
            kind = detect(entry)
            if kind:
                found.append((entry, kind))
    return found
