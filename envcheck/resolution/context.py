"""The typed context of a resolution: its settings, the shared context of its steps, the files it picks."""

from __future__ import annotations

import re
from dataclasses import dataclass

from envcheck.limits import DEFAULT_MAX_EXPANSION
from envcheck.model import Location
from envcheck.profile import Profile
from envcheck.services.package_index import IndexClient


@dataclass(frozen=True)
class ResolveSettings:
    python_version: str | None = None  # None: the profile's
    index_url: str | None = None
    extra_index_urls: tuple[str, ...] = ()
    find_links: tuple[str, ...] = ()
    offline: bool = False  # the cache and the facts table only; uv --offline
    use_cache: bool = True
    uv: str | None = None  # the uv executable (default: found on PATH or next to this Python)
    max_expansion: float = DEFAULT_MAX_EXPANSION  # --max-expansion, as for local wheels


@dataclass(frozen=True)
class ResolveContext:
    profile: Profile
    settings: ResolveSettings
    python: str
    client: IndexClient


@dataclass(frozen=True)
class Chosen:
    name: str
    version: str | None
    kind: str  # wheel | sdist | none | conflict
    filename: str | None = None
    url: str | None = None
    sha256: str | None = None
    size: int | None = None
    reason: str = ""
    location: Location | None = None
    source: str = "resolver"
    problem: str = ""  # the input names this file wrongly (a hash that is not a sha256): an input error, nothing read


SHA256_HEX = re.compile(r"[0-9a-f]{64}")  # a sha256 as locks must spell it and cache keys are made of
