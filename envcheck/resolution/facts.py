"""What is known about one picked file: the shipped facts table first, then the cache, then the index."""

from __future__ import annotations

import json
from dataclasses import replace
from functools import cache
from importlib import resources
from typing import Any

from envcheck.resolution.cache import cached_facts, facts_key, store_facts
from envcheck.resolution.context import Chosen, ResolveContext
from envcheck.sources.remote_wheel import FileFacts, read_remote_wheel


@cache
def facts_table() -> dict[str, Any]:
    """The shipped facts of large common wheels, by sha256 (``scripts/gen_wheel_facts.py``)."""
    try:
        text = resources.files("envcheck.knowledge").joinpath("wheel_facts.json").read_text(encoding="utf-8")
        data = json.loads(text)
    except (OSError, ValueError):
        return {}
    files = data.get("files") if isinstance(data, dict) else None
    return files if isinstance(files, dict) else {}


_READ_THIS_RUN: dict[str, FileFacts] = {}  # a file read twice in one run (a Dockerfile's installs) is read once


def facts_of(chosen: Chosen, ctx: ResolveContext) -> FileFacts:
    """Facts of a chosen wheel: the shipped table, then the cache, then the index (unless offline).

    The table wins over a cache entry for the same file. The cache holds facts under the file's sha256 only when
    the whole file was read and matched it; facts read by ranges are keyed by the URL they came from as well
    (:func:`facts_key`), so a lock claiming one file's hash for another file's URL never changes what a later run
    learns about the first file."""
    settings = ctx.settings
    sha = chosen.sha256
    url = chosen.url if chosen.url and chosen.url.startswith(("http://", "https://")) else None
    bound = facts_key(sha, url, chosen.size, verified=False)
    if bound and bound in _READ_THIS_RUN:
        return _READ_THIS_RUN[bound]
    if sha and sha in facts_table():
        row = facts_table()[sha]
        return FileFacts(tuple(row["requires"]) if isinstance(row.get("requires"), list) else None, tuple(row.get("tags") or ()),
                         list(row.get("binaries") or []), [], ["facts table"], 0, True)
    if settings.use_cache:
        for key in (sha, bound):
            hit = cached_facts(key) if key else None
            if hit is not None:
                return hit
    if settings.offline:
        return FileFacts(sources=["not read: --offline and not in the cache or the facts table"])
    if url is None:
        return FileFacts(problems=[f"{chosen.filename}: no http(s) URL to read it from"])
    facts = read_remote_wheel(ctx.client, url, chosen.size, sha, max_expansion=settings.max_expansion)
    key = facts_key(sha, url, chosen.size, verified=facts.verified)
    if facts.complete and key and settings.use_cache:
        store_facts(key, facts)
    if bound:
        # a second look in this run reads nothing more
        _READ_THIS_RUN[bound] = replace(facts, sources=[*facts.sources], bytes_read=0)
    return facts
