"""``envcheck --resolve``: which files pip or uv would install on the target, and what is inside them.

Locks (pylock.toml, uv.lock) name their files; other inputs go through uv, run for the target platform
(:mod:`~envcheck.resolution.stage` is the entry point). Each picked file's facts come from the shipped facts
table, then the cache, then HTTP range reads of the wheel; checks judge the resulting inventory as any other.
"""

from __future__ import annotations

from envcheck.resolution.context import ResolveSettings
from envcheck.resolution.facts import facts_table
from envcheck.resolution.platform import best_wheel
from envcheck.resolution.stage import resolved_reader
from envcheck.sources.remote_wheel import read_remote_wheel

__all__ = ["ResolveSettings", "best_wheel", "facts_table", "read_remote_wheel", "resolved_reader"]
