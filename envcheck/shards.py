"""``--shard K/N`` (K from 1): the part of a multi-target run this process judges (a Kubernetes Indexed Job,
an Actions matrix, a SLURM array; then ``envcheck merge``). A target's shard is a hash of its name, never its
position, so N processes cover every target once whatever order a registry lists it in."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from envcheck.errors import UsageError

T = TypeVar("T")
MAX_SHARDS = 100_000


@dataclass(frozen=True)
class Shard:
    """Part ``index`` (1-based) of ``count``; ``source``: where it was read (for messages)."""
    index: int
    count: int
    source: str = "--shard"

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def holds(self, name: str) -> bool:
        return self.count == 1 or shard_of(name, self.count) == self.index


def shard_of(name: str, count: int) -> int:
    """The shard (1..count) of the target called ``name``: a stable hash, the same on every machine."""
    value = int.from_bytes(hashlib.sha256(name.encode("utf-8", "surrogatepass")).digest()[:8], "big")
    return value % count + 1


def parse_shard(text: str, source: str = "--shard") -> Shard:
    """``K/N`` (1 <= K <= N) as a :class:`Shard`; a UsageError that says what was wrong otherwise."""
    index_text, sep, count_text = text.strip().partition("/")
    try:
        index, count = int(index_text), int(count_text)
    except ValueError:
        index = count = 0
    if not sep or count < 1 or not 1 <= index <= count or count > MAX_SHARDS:
        raise UsageError(f"{source}={text[:40]!r}: expected K/N with 1 <= K <= N <= {MAX_SHARDS}, e.g. 2/3 (K counts from 1)")
    return Shard(index, count, source)


def _number(environ: Mapping[str, str], name: str) -> int:
    text = environ.get(name, "")
    try:
        return int(text)
    except ValueError:
        raise UsageError(f"{name}={text[:40]!r}: expected a whole number") from None


def shard_from(option: str | None, environ: Mapping[str, str]) -> Shard | None:
    """The shard ``--shard`` names, else the engine's variables (first found wins), else None (all)."""
    if option:
        return parse_shard(option)
    if environ.get("ENVCHECK_SHARD"):
        return parse_shard(environ["ENVCHECK_SHARD"], "ENVCHECK_SHARD")
    if environ.get("JOB_COMPLETION_INDEX"):
        if not environ.get("JOB_COMPLETIONS"):
            raise UsageError("JOB_COMPLETION_INDEX is set (a Kubernetes Indexed Job) but JOB_COMPLETIONS is not: set it to "
                             "the Job's completions in the manifest (docs/fleet.md), or pass --shard K/N")
        index, count = _number(environ, "JOB_COMPLETION_INDEX"), _number(environ, "JOB_COMPLETIONS")
        return parse_shard(f"{index + 1}/{count}", "JOB_COMPLETION_INDEX/JOB_COMPLETIONS")
    if environ.get("SLURM_ARRAY_TASK_ID") and environ.get("SLURM_ARRAY_TASK_COUNT"):
        first = _number(environ, "SLURM_ARRAY_TASK_MIN") if environ.get("SLURM_ARRAY_TASK_MIN") else 0
        index, count = _number(environ, "SLURM_ARRAY_TASK_ID") - first, _number(environ, "SLURM_ARRAY_TASK_COUNT")
        return parse_shard(f"{index + 1}/{count}", "SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT")
    return None


def engine_variables() -> dict[str, str]:
    """The variables :func:`shard_from` reads that are set in this process's environment."""
    from envcheck.config import env
    values = {"ENVCHECK_SHARD": env("ENVCHECK_SHARD"), "JOB_COMPLETION_INDEX": env("JOB_COMPLETION_INDEX"),
              "JOB_COMPLETIONS": env("JOB_COMPLETIONS"), "SLURM_ARRAY_TASK_ID": env("SLURM_ARRAY_TASK_ID"),
              "SLURM_ARRAY_TASK_COUNT": env("SLURM_ARRAY_TASK_COUNT"), "SLURM_ARRAY_TASK_MIN": env("SLURM_ARRAY_TASK_MIN")}
    return {name: value for name, value in values.items() if value is not None}


def sharded(items: Iterable[T], option: str, name: Callable[[T], str]) -> list[T]:
    """The items of the shard ``--shard`` names (``K/N``, or ``auto``: the engine's variables)."""
    import sys
    items = list(items)
    shard = shard_from(None, engine_variables()) if option == "auto" else parse_shard(option)
    if shard is None:
        return items
    kept = [item for item in items if shard.holds(name(item))]
    print(f"envcheck: shard {shard} (from {shard.source}): {len(kept)} of {len(items)} targets", file=sys.stderr)
    return kept
