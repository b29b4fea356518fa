"""What a fatbin's images mean on a target GPU: whether a binary's code runs there natively, through a
compatible SASS of the same major, only as PTX compiled at load time, or not at all.

A source records what a binary holds, target-free: the image labels of each distinct module
(``Binary.modules``, :func:`binary_modules`); a check judges them against the profile's SM
(:func:`modules_level`). ``Binary.sm121`` keeps the same words for the GB10 (:data:`GB10_SM`), a reading
the JSON interface has always carried."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

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


_LEVELS: dict[tuple[int, int, int, int], str] = {}


def image_level(entry: Entry, target_sm: int) -> str:
    """How one image runs on a GPU of SM ``target_sm`` (see :func:`_image_level`; memoised: a library
    has tens of thousands of images of a handful of kinds)."""
    key = (entry.kind, entry.sm, entry.flags & (FLAG_ARCH_SPECIFIC | FLAG_FAMILY), target_sm)
    level = _LEVELS.get(key)
    if level is None:
        level = _LEVELS[key] = _image_level(entry, target_sm)
    return level


def _image_level(entry: Entry, target_sm: int) -> str:
    """How one image runs on a GPU of SM ``target_sm`` (121 for GB10), per research/fatbin.md §10.1.

    SASS: runs on the same major with an equal or higher minor (``a`` only on exactly its SM). PTX: the
    driver JIT-compiles plain PTX of any older or equal SM; ``f`` PTX within its family; ``a`` PTX only
    on exactly its SM. LTO IR never runs as is.
    """
    major, minor = divmod(target_sm, 10)
    e_major, e_minor = divmod(entry.sm, 10)
    if entry.kind == KIND_ELF:
        if entry.flags & FLAG_ARCH_SPECIFIC:
            ok = entry.sm == target_sm
        else:
            ok = e_major == major and e_minor <= minor
        if not ok:
            return NONE
        return NATIVE if entry.sm == target_sm else COMPATIBLE
    if entry.kind == KIND_PTX:
        if entry.flags & FLAG_ARCH_SPECIFIC:
            ok = entry.sm == target_sm
        elif entry.flags & FLAG_FAMILY:
            ok = e_major == major and e_minor <= minor
        else:
            ok = entry.sm <= target_sm
        return PTX_JIT if ok else NONE
    return NONE


def container_level(entries: Iterable[Entry], target_sm: int) -> str | None:
    """The best level over a module's images (None when it has no SASS or PTX at all)."""
    best: str | None = None
    for e in entries:
        if e.kind not in (KIND_ELF, KIND_PTX):
            continue
        level = image_level(e, target_sm)
        if best is None or _LEVEL[level] > _LEVEL[best]:
            best = level
    return best


def binary_level(containers: list[Container], target_sm: int = GB10_SM) -> str | None:
    """A binary's runnability on ``target_sm``, judged module by module (each container is registered
    as one module), in the terms of the Binary.sm121 field: ``native`` / ``compatible`` when modules
    carry SASS that runs there (the weaker of the two among those modules: torch has 474 modules with
    sm_120 SASS and one with sm_121a SASS, so ``compatible``), ``ptx-jit`` when the only runnable
    images are PTX, ``none`` when no module has an image that runs there.

    Modules with no runnable image, or only PTX, do not pull a SASS level down: libraries dispatch
    kernels by device (cuBLASLt keeps sm_90a-only and sm_100a-only modules it never launches elsewhere,
    cuFFT and cuSPARSELt keep PTX fallbacks next to SASS; with lazy loading an unused module is not even
    loaded), so one such module proves nothing. In ``-rdc`` builds the device-linked cubins of
    ``.nv_fatbin`` and the relocatable PTX of ``__nv_relfatbin`` are one module (the runtime JIT-links
    that PTX, research/fatbin.md §10.3). None: no SASS or PTX at all.
    """
    groups: list[list[Entry]]
    if any(c.section == "__nv_relfatbin" for c in containers):
        rdc = [e for c in containers if c.section in STANDARD_SECTIONS for e in c.entries]
        groups = [rdc, *[c.entries for c in containers if c.section not in STANDARD_SECTIONS]]
    else:
        groups = [c.entries for c in containers]
    # Only which levels occur counts. Single-image modules (cuFFT has 24,000) are judged once per kind of image.
    levels: set[str | None] = set()
    single: dict[tuple[int, int, int], str | None] = {}
    variant = FLAG_ARCH_SPECIFIC | FLAG_FAMILY
    for g in groups:
        if len(g) == 1:
            e = g[0]
            key = (e.kind, e.sm, e.flags & variant)
            if key not in single:
                single[key] = container_level(g, target_sm)
                levels.add(single[key])
        else:
            levels.add(container_level(g, target_sm))
    return combine_levels(levels)


def combine_levels(levels: Iterable[str | None]) -> str | None:
    """Module levels -> one level (see :func:`binary_level`); also used for the members of an archive."""
    known = [lv for lv in levels if lv is not None]
    if not known:
        return None
    sass = [lv for lv in known if lv in (NATIVE, COMPATIBLE)]
    if sass:
        return min(sass, key=lambda lv: _LEVEL[lv])
    return PTX_JIT if PTX_JIT in known else NONE


def distinct(labels: Iterable[str]) -> tuple[str, ...]:
    """Labels in order of first appearance, each once."""
    return tuple(dict.fromkeys(labels))


def _modules(containers: Sequence[Container]) -> list[list[Entry]]:
    """The modules the runtime registers: one per container, except that an ``-rdc`` build's standard
    sections are one module (see :func:`binary_level`)."""
    if any(c.section == "__nv_relfatbin" for c in containers):
        rdc = [e for c in containers if c.section in STANDARD_SECTIONS for e in c.entries]
        return [rdc, *[c.entries for c in containers if c.section not in STANDARD_SECTIONS]]
    return [c.entries for c in containers]


def binary_modules(containers: Sequence[Container]) -> tuple[str, ...]:
    """What the binary's GPU code is, for any target: each distinct module's SASS and PTX image labels
    (``"sm_120 sm_121a compute_120"``), once, in order of first appearance; modules with neither left out."""
    found: dict[str, None] = {}
    single: set[tuple[int, int, int]] = set()  # single-image modules (cuFFT has 24,000): once per kind of image
    variant = FLAG_ARCH_SPECIFIC | FLAG_FAMILY
    for entries in _modules(containers):
        if len(entries) == 1:
            e = entries[0]
            key = (e.kind, e.sm, e.flags & variant)
            if key in single:
                continue
            single.add(key)
        labels = sorted({image_label(e.kind, e.sm, e.flags) for e in entries if e.kind in (KIND_ELF, KIND_PTX)})
        if labels:
            found.setdefault(" ".join(labels))
    return tuple(found)


_LABEL = re.compile(r"(sm|compute)_(\d+)([af]?)")


def modules_level(modules: Iterable[str], target_sm: int) -> str | None:
    """:func:`binary_level` over recorded modules (:func:`binary_modules`): how the binary runs on ``target_sm``."""
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
