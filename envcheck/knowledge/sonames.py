"""Sonames and the CUDA major they imply (data: ``cuda_sonames.toml``)."""

from __future__ import annotations

import re
from functools import lru_cache

from envcheck.knowledge import load

_HASHED = re.compile(r"^(?P<stem>.+?)[.-][0-9a-f]{8}(?P<rest>\.so(?:\..*)?)$")
_SONAME = re.compile(r"^(?P<stem>.+?\.so)(?:\.(?P<major>\d+))?")


def soname_key(name: str) -> str:
    """``libcudart.faf08d9a.so.13`` -> ``libcudart.so.13``; ``libcudart.so.11.0`` -> ``libcudart.so.11``."""
    base = name.rsplit("/", 1)[-1]
    if m := _HASHED.match(base):  # an auditwheel hash
        base = m.group("stem") + m.group("rest")
    if not (m2 := _SONAME.match(base)):
        return base
    return m2.group("stem") + (f".{m2.group('major')}" if m2.group("major") else "")


def renamed(name: str) -> bool:
    """Whether auditwheel renamed ``name`` (``libcudart-5961e14e.so.12``): a wheel's private copy."""
    return _HASHED.match(name.rsplit("/", 1)[-1]) is not None


@lru_cache(maxsize=1)
def _soname_table() -> dict[str, tuple[int, ...]]:
    rows = load("cuda_sonames").get("library", [])
    return {str(row["soname"]): tuple(int(x) for x in row["cuda"]) for row in rows}


@lru_cache(maxsize=4096)  # an environment names the same few hundred sonames thousands of times
def cuda_majors(soname: str) -> tuple[int, ...] | None:
    return _soname_table().get(soname_key(soname))


def implied_cuda_major(sonames: list[str] | tuple[str, ...]) -> int | None:
    """The CUDA major a set of sonames pins down: the lowest one that a single-major soname names."""
    majors = [m[0] for s in sonames if (m := cuda_majors(s)) is not None and len(m) == 1]
    return min(majors) if majors else None
