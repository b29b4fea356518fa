"""The target platform as wheel tags: which wheel of a release pip would pick on the target."""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache

from packaging import tags as ptags

from envcheck.inspect.wheel_tags import parse_wheel_name
from envcheck.profile import Profile


def glibc_of(profile: Profile) -> tuple[int, int]:
    """The newest glibc the profile's wheel platforms name (DGX OS: Ubuntu 24.04, glibc 2.39)."""
    found = (re.match(r"manylinux_(\d+)_(\d+)_", platform) for platform in profile.wheel_platforms)
    return max([(2, 17), *((int(m.group(1)), int(m.group(2))) for m in found if m)])


def uv_platform(profile: Profile) -> str:
    major, minor = glibc_of(profile)
    return f"{profile.machine}-manylinux_{major}_{minor}"


@cache
def _supported_tags(machine: str, glibc: tuple[int, int], python: str) -> dict[str, int]:
    platforms = [f"manylinux_{glibc[0]}_{m}_{machine}" for m in range(glibc[1], 16, -1)]
    platforms += [f"manylinux2014_{machine}", f"linux_{machine}"]
    version = tuple(int(p) for p in python.split(".")[:2])
    found = [*ptags.cpython_tags(version, platforms=platforms), *ptags.compatible_tags(version, platforms=platforms)]
    return {str(t): i for i, t in enumerate(found)}


def best_wheel(filenames: Iterable[str], profile: Profile, python: str) -> tuple[str | None, str]:
    ranks = _supported_tags(profile.machine, glibc_of(profile), python)
    best: tuple[int, str] | None = None
    seen: list[str] = []
    for filename in filenames:
        parsed = parse_wheel_name(filename)
        if parsed is None:
            continue
        seen.extend(parsed.platforms)
        rank = min((ranks[t] for t in parsed.tags if t in ranks), default=None)
        if rank is not None and (best is None or rank < best[0]):
            best = (rank, filename)
    if best is not None:
        return best[1], ""
    machines = sorted(set(seen) - {"any"})  # a py2-none-any wheel fits every machine, only not this Python
    if machines:
        return None, f"wheels only for {', '.join(machines[:6])}"
    return None, "only pure-Python wheels for another Python" if seen else "no wheel files"
