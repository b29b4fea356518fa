"""PEP 751 lock files (``pylock.toml``), read by :mod:`envcheck.sources.locks`: a module of its own so that
the kinds table can tell a pylock from a uv.lock by content (each kind's module brings its own ``sniff``)."""

from __future__ import annotations

from envcheck.sources.locks import read
from envcheck.sources.locks import sniff_pylock as sniff

KIND = "pylock"

__all__ = ["KIND", "read", "sniff"]
