"""PEP 751 lock files (``pylock.toml``): read by :mod:`envcheck.sources.locks`, which reads both lock formats.

A module of its own so that the kinds table can tell a pylock from a uv.lock by content: each kind's module
brings its own ``sniff``.
"""

from __future__ import annotations

from pathlib import Path

from envcheck.sources.locks import read, sniff_pylock

KIND = "pylock"

__all__ = ["KIND", "read", "sniff"]


def sniff(path: Path, head: bytes) -> bool:
    """``lock-version`` and a ``[[packages]]`` entry: a PEP 751 lock, whatever its name."""
    return sniff_pylock(path, head)
