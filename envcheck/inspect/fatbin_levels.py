"""Whether a binary's GPU code runs on a target SM natively, through compatible SASS, only as PTX, or
not at all. Sources record modules target-free (:func:`binary_modules`); checks judge them."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from functools import cache

from envcheck.inspect.fatbin import (
    FLAG_ARCH_SPECIFIC,
    FLAG_FAMILY,
    KIND_ELF,
    KIND_PTX,
    STANDARD_SECTIONS,
    Container,
    Entry,
    image_label,
)

NATIVE, COMPATIBLE, PTX_JIT, NONE = "native", "compatible", "ptx-jit", "none"
GB10_SM = 121  # the DGX Spark's GPU: what Binary.sm121 reads for (verdicts use the profile's SM)
_LEVEL = {NONE: 0, PTX_JIT: 1, COMPATIBLE: 2, NATIVE: 3}
_VARIANT = FLAG_ARCH_SPECIFIC | FLAG_FAMILY


def image_level(entry: Entry, target_sm: int) -> str:
    return _image_level(entry.kind, entry.sm, entry.flags & _VARIANT, target_sm)


@cache  # a library has tens of thousands of images of a handful of kinds
def _image_level(kind: int, sm: int, variant: int, target_sm: int) -> str:
    """Per research/fatbin.md §10.1: SASS runs on the same major, equal or higher minor (``a``: its SM only);
    PTX JITs on any newer SM (``f``: within its family; ``a``: its SM only); LTO IR never runs as is."""
    same_family = sm // 10 == target_sm // 10 and sm % 10 <= target_sm % 10
    if kind == KIND_ELF:
        ok = sm == target_sm if variant & FLAG_ARCH_SPECIFIC else same_family
        return (NATIVE if sm == target_sm else COMPATIBLE) if ok else NONE
    if kind == KIND_PTX:
        if variant & FLAG_ARCH_SPECIFIC:
            ok = sm == target_sm
        elif variant & FLAG_FAMILY:
            ok = same_family
        else:
            ok = sm <= target_sm
        return PTX_JIT if ok else NONE
    return NONE


def container_level(entries: Iterable[Entry], target_sm: int) -> str | None:
    levels = [image_level(e, target_sm) for e in entries if e.kind in (KIND_ELF, KIND_PTX)]
    return max(levels, key=_LEVEL.__getitem__, default=None)


def binary_level(containers: Sequence[Container], target_sm: int = GB10_SM) -> str | None:
    """A binary's runnability on ``target_sm``: the weakest SASS level among modules with runnable SASS, else
    ``ptx-jit`` or ``none``. Modules without runnable SASS do not pull that down: libraries dispatch kernels
    by device (cuBLASLt keeps sm_90a-only modules), so they prove nothing."""
    return combine_levels(container_level(entries, target_sm) for entries in _modules(containers))


def combine_levels(levels: Iterable[str | None]) -> str | None:
    known = [lv for lv in levels if lv is not None]
    if not known:
        return None
    sass = [lv for lv in known if lv in (NATIVE, COMPATIBLE)]
    if sass:
        return min(sass, key=lambda lv: _LEVEL[lv])
    return PTX_JIT if PTX_JIT in known else NONE


def distinct(labels: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(labels))


def _modules(containers: Sequence[Container]) -> Iterator[list[Entry]]:
    """The modules the runtime registers: one per container, but in ``-rdc`` builds the standard sections
    are one module (research/fatbin.md §10.3); single-image modules come once per kind of image."""
    groups: Iterable[list[Entry]] = (c.entries for c in containers)
    if any(c.section == "__nv_relfatbin" for c in containers):
        rdc = [e for c in containers if c.section in STANDARD_SECTIONS for e in c.entries]
        groups = [rdc, *[c.entries for c in containers if c.section not in STANDARD_SECTIONS]]
    single: set[tuple[int, int, int]] = set()
    for entries in groups:
        if len(entries) == 1:
            e = entries[0]
            key = (e.kind, e.sm, e.flags & _VARIANT)
            if key in single:
                continue
            single.add(key)
        yield entries


def binary_modules(containers: Sequence[Container]) -> tuple[str, ...]:
    """Each distinct module's SASS and PTX labels (``"sm_120 sm_121a compute_120"``), target-free."""
    found: dict[str, None] = {}
    for entries in _modules(containers):
        labels = sorted({image_label(e.kind, e.sm, e.flags) for e in entries if e.kind in (KIND_ELF, KIND_PTX)})
        if labels:
            found.setdefault(" ".join(labels))
    return tuple(found)


_LABEL = re.compile(r"(sm|compute)_(\d+)([af]?)")


def modules_level(modules: Iterable[str], target_sm: int) -> str | None:
    """:func:`binary_level` over recorded modules (:func:`binary_modules`)."""
    levels: set[str | None] = set()
    for module in modules:
        entries = []
        for label in module.split():
            m = _LABEL.fullmatch(label)
            if m is None:
                continue
            kind = KIND_ELF if m.group(1) == "sm" else KIND_PTX
            flags = FLAG_ARCH_SPECIFIC if m.group(3) == "a" else FLAG_FAMILY if m.group(3) == "f" else 0
            entries.append(Entry(kind, int(m.group(2)), flags, 0, 0, 0, 0, 0))
        levels.add(container_level(entries, target_sm))
    return combine_levels(levels)
