"""What is known about one picked file: the shipped facts table first, then the cache, then the index."""

from __future__ import annotations

import json
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from envcheck.errors import ServiceError
from envcheck.resolution.cache import cached_facts, facts_key, store_facts
from envcheck.resolution.context import SHA256_HEX, Chosen, ResolveContext
from envcheck.services.package_index import FileProblem
from envcheck.sources.remote_wheel import FileFacts, read_remote_wheel

PARALLEL_READS = 8  # wheels read at once (ENVCHECK_RESOLVE_JOBS): reads wait on the network; each holds one RemoteFile's blocks
MAX_PARALLEL_READS = 32
Outcome = FileFacts | FileProblem | ServiceError  # what reading one file gave: its facts, or why there are none
MAX_TABLE_BYTES = 64 << 20  # a user's facts table bigger than this is not read


@cache
def facts_table() -> dict[str, Any]:
    """Facts of common wheels by sha256: the shipped table, plus the rows of the user's newer table
    (``envcheck cache update-facts``) for files the shipped one lacks; a user's table never changes a shipped
    row."""
    shipped = shipped_table()
    extra = user_table()
    try:
        with open(extra, "rb") as fh:
            data = fh.read(MAX_TABLE_BYTES + 1)
    except OSError:
        return shipped
    if len(data) > MAX_TABLE_BYTES:
        return shipped
    return {**{sha: row for sha, row in _rows(data.decode("utf-8", "replace")).items() if _readable(row)}, **shipped}


@cache
def shipped_table() -> dict[str, Any]:
    try:
        text = resources.files("envcheck.knowledge").joinpath("wheel_facts.json").read_text(encoding="utf-8")
    except OSError:
        text = ""
    return _rows(text)


def user_table() -> Path:
    """``ENVCHECK_WHEEL_FACTS``, else ``wheel_facts.json`` in envcheck's cache folder."""
    from envcheck.cache import cache_dir
    from envcheck.config import env
    named = env("ENVCHECK_WHEEL_FACTS")
    return Path(named).expanduser() if named else cache_dir() / "wheel_facts.json"


def _rows(text: str) -> dict[str, Any]:
    try:
        data = json.loads(text) if text else {}
    except (ValueError, RecursionError):
        return {}
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, dict):
        return {}
    return {sha: row for sha, row in files.items()
            if SHA256_HEX.fullmatch(sha) and isinstance(row, dict) and isinstance(row.get("source"), str)
            and all(isinstance(row.get(key, []), list) for key in ("binaries", "tags", "notes"))
            and isinstance(row.get("requires"), (list, type(None)))
            and all(isinstance(b, dict) for b in row.get("binaries", []))}


def _readable(row: dict[str, Any]) -> bool:
    from envcheck.errors import InputError
    from envcheck.model import Binary, from_plain
    try:
        for data in row.get("binaries", []):
            from_plain(Binary, {k: v for k, v in data.items() if k != "member"}, "binary")
    except (InputError, TypeError, ValueError):
        return False
    return True


def _from_row(row: dict[str, Any]) -> FileFacts:
    requires = row.get("requires")
    notes = row.get("notes")
    return FileFacts(tuple(str(r) for r in requires) if isinstance(requires, list) else None,
                     tuple(str(t) for t in row.get("tags") or ()), list(row.get("binaries") or []), [], ["facts table"], 0, True,
                     notes=[str(n) for n in notes] if isinstance(notes, list) else [])


_READ_THIS_RUN: dict[str, FileFacts] = {}  # a file read twice in one run (a Dockerfile's installs) is read once


def facts_of(chosen: Chosen, ctx: ResolveContext) -> FileFacts:
    """Facts of a chosen wheel: the shipped table, then the cache (under keys only verified facts can claim:
    :func:`facts_key`), then the index (unless offline)."""
    settings = ctx.settings
    sha = chosen.sha256
    url = chosen.url if chosen.url and chosen.url.startswith(("http://", "https://")) else None
    bound = facts_key(sha, url, chosen.size, verified=False)
    if bound and bound in _READ_THIS_RUN:
        return _READ_THIS_RUN[bound]
    if sha and sha in facts_table():
        return _from_row(facts_table()[sha])
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
    if bound:  # a second look in this run reads nothing more
        _READ_THIS_RUN[bound] = replace(facts, sources=[*facts.sources], bytes_read=0)
    return facts


def facts_of_all(items: Sequence[Chosen], ctx: ResolveContext) -> list[Outcome | None]:
    """:func:`facts_of` for every wheel of ``items`` (None for the rest), several at a time, the largest
    first; a file listed twice is read once."""
    todo: dict[tuple[str | None, str | None, int | None], Chosen] = {}
    for item in items:
        if item.kind == "wheel" and not item.problem:
            todo.setdefault((item.url, item.sha256, item.size), item)

    def one(item: Chosen) -> Outcome:
        try:
            return facts_of(item, ctx)
        except (FileProblem, ServiceError) as exc:
            return exc

    ordered = sorted(todo.items(), key=lambda kv: -(kv[1].size or 0))
    jobs = _jobs()
    if len(ordered) <= 1 or jobs == 1:
        done = {key: one(item) for key, item in ordered}
    else:
        with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="envcheck-read") as pool:
            futures = {key: pool.submit(one, item) for key, item in ordered}
            done = {key: future.result() for key, future in futures.items()}
    return [done.get((i.url, i.sha256, i.size)) if i.kind == "wheel" and not i.problem else None for i in items]


def _jobs() -> int:
    from envcheck.config import env
    try:
        value = int(env("ENVCHECK_RESOLVE_JOBS") or PARALLEL_READS)
    except ValueError:
        return PARALLEL_READS
    return min(MAX_PARALLEL_READS, max(1, value))
