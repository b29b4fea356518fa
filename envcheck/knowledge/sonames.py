"""Sonames and the CUDA major they imply (data: ``cuda_sonames.toml``).

``soname_key`` normalises what an ELF file names (auditwheel hashes, minor versions); ``cuda_majors`` and
``implied_cuda_major`` look the result up in the table.
"""

from __future__ import annotations

import re
from functools import lru_cache

from envcheck.knowledge import load

_HASHED = re.compile(r"^(?P<stem>.+?)[.-][0-9a-f]{8}(?P<rest>\.so(?:\..*)?)$")
_SONAME = re.compile(r"^(?P<stem>.+?\.so)(?:\.(?P<major>\d+))?")


def soname_key(name: str) -> str:
    """A soname as the data table keys it: auditwheel hash and minor versions stripped.

    ``libcudart.faf08d9a.so.13`` -> ``libcudart.so.13``; ``libcudart.so.11.0`` -> ``libcudart.so.11``.
    """
    base = name.rsplit("/", 1)[-1]
    m = _HASHED.match(base)
    if m:
        base = m.group("stem") + m.group("rest")
    m2 = _SONAME.match(base)
    if not m2:
        return base
    return m2.group("stem") + (f".{m2.group('major')}" if m2.group("major") else "")


@lru_cache(maxsize=1)
def _soname_table() -> dict[str, tuple[int, ...]]:
    data = load("cuda_sonames")
    return {str(row["soname"]): tuple(int(x) for x in row["cuda"]) for row in data.get("library", [])}


@lru_cache(maxsize=4096)  # an environment names the same few hundred sonames thousands of times
def cuda_majors(soname: str) -> tuple[int, ...] | None:
    """The CUDA majors that ship this soname (None: it says nothing about the CUDA major)."""
    return _soname_table().get(soname_key(soname))


def implied_cuda_major(sonames: list[str] | tuple[str, ...]) -> int | None:
    """The CUDA major a set of sonames pins down: the lowest one that a single-major soname names."""
    majors = [m[0] for s in sonames if (m := cuda_majors(s)) is not None and len(m) == 1]
    return min(majors) if majors else None
