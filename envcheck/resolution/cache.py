"""``--resolve``'s cache: resolutions (for a day) and the facts of files (under verified keys only:
:func:`facts_key`), under envcheck's cache folder only; an unreadable entry is a miss."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable
from pathlib import Path

from envcheck.cache import cache_dir, read_entry, touch, write_atomically
from envcheck.config import env
from envcheck.model import Inventory, Location
from envcheck.resolution.context import SHA256_HEX, Chosen, ResolveContext
from envcheck.resolution.platform import uv_platform
from envcheck.resolution.uv import pip_config_args
from envcheck.sources.remote_wheel import FileFacts

FACTS_FORMAT = 3  # 2: facts read by ranges are keyed by URL and hash, never by a claimed hash alone; 3: Binary.modules
RESOLUTION_TTL_HOURS = 24.0  # a resolution of unpinned requirements changes when new releases appear


def resolution_key(path: Path, declared: Inventory, ctx: ResolveContext, no_deps: bool) -> str:
    import hashlib
    digest = hashlib.sha256()
    with contextlib.suppress(OSError):
        digest.update(path.read_bytes())
    facts = [[p.name, p.specifier, p.marker, p.url, p.role] for p in declared.packages]
    facts += [[i.url, i.option] for i in declared.indexes]
    digest.update(json.dumps([facts, uv_platform(ctx.profile), ctx.python, no_deps, pip_config_args(ctx.settings), ctx.settings.offline,
                              env("UV_INDEX_URL"), env("UV_EXTRA_INDEX_URL")], default=str).encode())
    return digest.hexdigest()


def _resolution_path(key: str) -> Path:
    return cache_dir() / f"resolutions-v{FACTS_FORMAT}" / f"{key}.json"


def remembered(key: str, ctx: ResolveContext,
               resolve: Callable[[], tuple[list[Chosen], str]]) -> tuple[list[Chosen], str]:
    """The cached resolution under ``key``, else what ``resolve()`` gives, stored."""
    hit = _cached_resolution(key) if ctx.settings.use_cache else None
    if hit is None:
        hit = resolve()
        if ctx.settings.use_cache:
            _store_resolution(key, *hit)
    return hit


def _cached_resolution(key: str) -> tuple[list[Chosen], str] | None:
    path = _resolution_path(key)
    try:
        if time.time() - path.stat().st_mtime > _env_hours("ENVCHECK_RESOLVE_TTL_HOURS", RESOLUTION_TTL_HOURS) * 3600:
            return None
        data = json.loads(read_entry(path) or b"")
        chosen = [Chosen(**{**c, "location": Location(**c["location"]) if c.get("location") else None}) for c in data["chosen"]]
        return chosen, str(data.get("conflict") or "")
    except (OSError, ValueError, TypeError, KeyError, AttributeError, RecursionError):
        return None


def _store_resolution(key: str, chosen: list[Chosen], conflict: str) -> None:
    import dataclasses
    rows = [{**dataclasses.asdict(c), "location": c.location.to_json() if c.location else None} for c in chosen]
    write_atomically(_resolution_path(key), json.dumps({"chosen": rows, "conflict": conflict}).encode(), ".resolution-")


def _env_hours(name: str, default: float) -> float:
    try:
        value = float(env(name) or "")
    except ValueError:
        return default
    return value if value >= 0 else default


def _cache_path(key: str) -> Path | None:
    """None for anything but 64 hex digits: a key is never a path of its own."""
    if not SHA256_HEX.fullmatch(key):
        return None
    return cache_dir() / f"files-v{FACTS_FORMAT}" / key[:2] / f"{key}.json"


def facts_key(sha256: str | None, url: str | None, size: int | None, verified: bool) -> str | None:
    """A file's sha256 only when the whole file was read and matched it; else the claimed hash bound to the
    URL and size, so a lock pairing a real wheel's hash with another file's URL can only poison its own
    pairing."""
    if verified and sha256:
        return sha256
    if not url:
        return None
    from hashlib import sha256 as digest
    bare = _without_userinfo(url.split("#", 1)[0])
    return digest(json.dumps(["range", sha256, bare, size]).encode()).hexdigest()


def _without_userinfo(url: str) -> str:
    from urllib.parse import urlsplit, urlunsplit
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    return urlunsplit((parts.scheme, parts.netloc.rsplit("@", 1)[-1], parts.path, parts.query, parts.fragment))


def cached_facts(key: str) -> FileFacts | None:
    path = _cache_path(key)
    if path is None:
        return None
    try:
        data = json.loads(read_entry(path) or b"")
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or data.get("format") != FACTS_FORMAT:
        return None
    touch(path)
    requires = data.get("requires")
    return FileFacts(tuple(requires) if isinstance(requires, list) else None, tuple(data.get("tags") or ()),
                     list(data.get("binaries") or []), list(data.get("problems") or []), ["cache"], 0, True,
                     notes=[str(n) for n in data.get("notes") or []] if isinstance(data.get("notes"), list) else [])


def store_facts(key: str, facts: FileFacts) -> None:
    path = _cache_path(key)
    if path is None:
        return
    data = {"format": FACTS_FORMAT, "requires": list(facts.requires) if facts.requires is not None else None,
            "tags": list(facts.tags), "binaries": facts.binaries, "problems": facts.problems, "notes": facts.notes}
    write_atomically(path, json.dumps(data).encode(), ".facts-")
