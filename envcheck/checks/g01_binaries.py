"""G1 over binaries: an ELF file that needs (or is) a CUDA library of another major than the Spark's."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

from envcheck import kinds
from envcheck.checks.g01_cuda_abi import _TORCH_FAMILY, FIX_CU130, _cuda_replacement, _judged_packages
from envcheck.knowledge.builds import distribution_cuda_major
from envcheck.model import Binary, Finding, Package, Status
from envcheck.rules import CheckContext, check, rule

BINARY_SONAME = rule(
    "G1-binary-soname", "G1", "A binary needs (or is) a CUDA library of another major", Status.FAIL,
    """The ELF file's DT_NEEDED (or its own DT_SONAME) names a CUDA library that only CUDA 12 (or 11)
    ships, e.g. libcudart.so.12, libcublas.so.12, libcufft.so.11. The sonames were mapped to CUDA majors
    from a sourced table (envcheck/knowledge/cuda_sonames.toml): libcufft.so.12, libcusparse.so.12,
    libcusolver.so.12 and libcurand.so.10 are CUDA 13 libraries, libnccl.so.2 and libcudnn.so.9 say
    nothing. On a CUDA 13 Spark such a binary fails at import (cannot open shared object file, undefined
    symbol). Packages that ship one library per CUDA version and pick one at import time are judged by
    whether a CUDA 13 variant exists next to it (INFO then). A CUDA 12 library a wheel ships itself under an
    auditwheel-renamed name (libcudart-5961e14e.so.12), linked by that name, is INFO too: it loads with the
    wheel, and the CUDA 13 driver runs older runtimes. One cause, one finding: a package's binaries (loose
    files: those of one folder) are one finding, naming them, also where they are CUDA 11 and 12 variants with
    no CUDA 13 one; a CUDA 12 distribution (nvidia-cuda-runtime-cu12, cupy-cuda12x) whose own binaries show it is this finding, not G1-cuda12-distribution.""",
    FIX_CU130, kinds.BINARY_KINDS)
BINARY_STATIC_CUDART = rule(
    "G1-binary-static-cudart", "G1", "Binaries with the CUDA runtime linked in statically", Status.INFO,
    """These binaries register fatbins but need no libcudart: nvcc linked the CUDA runtime statically (its
    default). Their CUDA major cannot be read from sonames; the driver API they use is backward
    compatible, so this is a reading, not a failure.""",
    "", kinds.BINARY_KINDS)

_DIGITS = re.compile(r"\d+")


def _foreign(names: tuple[str, ...], major: int) -> list[tuple[str, tuple[int, ...]]]:
    from envcheck.knowledge.sonames import cuda_majors  # the soname table: only for targets with binaries
    return [(name, majors) for name in names
            if (majors := cuda_majors(name)) is not None and major not in majors]


def _private_copies(binaries: list[Binary]) -> dict[str, set[str]]:
    """Per distribution, the auditwheel-renamed libraries (``libcudart-5961e14e.so.12``) it ships itself."""
    from envcheck.knowledge.sonames import renamed
    out: dict[str, set[str]] = {}
    for b in binaries:
        for name in (os.path.basename(b.path), b.soname):
            if b.distribution and name and renamed(name):
                out.setdefault(b.distribution, set()).add(name)
    return out


def variant_key(b: Binary) -> tuple[str, str]:
    """Owner and file name with digit runs blanked: libbnb_cuda121.so matches libbnb_cuda130.so, and
    triton's cupti/libcupti.so.12 matches cupti-blackwell/libcupti.so.13 (same distribution)."""
    folder, name = os.path.split(b.path)
    return b.distribution or folder, _DIGITS.sub("#", name)


def _cuda_dist(distribution: str | None, major: int) -> bool:
    """Is ``distribution`` itself a CUDA library distribution of another major (nvidia-cuda-runtime-cu12)?"""
    found = distribution_cuda_major(Package(distribution)) if distribution else None
    return found is not None and found[0] != major


# Binaries that a torch install brings: the cu130 torch index replaces them all.
_TORCH_INSTALL = frozenset({*_TORCH_FAMILY, "triton", "pytorch-triton"})


def _binary_fix(b: Binary, major: int) -> str:
    """The fix for this binary's own package: torch's is the cu130 index, another distribution's its own CUDA
    ``major`` build (as G1-cuda12-distribution names it), a loose file's a rebuild."""
    dist = b.distribution
    if dist is None:
        return (f"Rebuild {b.path} against CUDA {major} (it must link the CUDA {major} libraries), or get a "
                f"CUDA {major} build of the software it belongs to.")
    if dist in _TORCH_INSTALL:
        return FIX_CU130
    replacement = _cuda_replacement(dist, major)  # nvidia-cublas-cu12 -> nvidia-cublas 13.x, cupy-cuda12x -> cupy-cuda13x
    if replacement is not None:
        return f"Replace {dist} with {replacement}, its CUDA {major} build (reinstalling torch does not change {dist})."
    return (f"Install a CUDA {major} build of {dist} (a cu{major}x/cuda{major} variant, wheel index or conda channel), "
            f"or use a container where it is built for CUDA {major}; reinstalling torch does not change {dist}.")


def _grouped_finding(ctx: CheckContext, group: list[tuple[Binary, list[tuple[str, tuple[int, ...]]], bool]],
                     olds: list[int], major: int, shown: int = 20) -> Finding:
    """One G1 finding for a package's (or a loose folder's) binaries that need or are CUDA ``olds`` libraries,
    naming the count and the first ``shown`` binaries (G7 groups a package's binaries the same way)."""
    first = group[0][0]
    names = sorted({n for _, bad, _ in group for n, _ in bad})
    linked = any(needs for _, _, needs in group)
    evidence: dict[str, object] = {"binary": first.path, "distribution": first.distribution, "libraries": names, "cuda_major": olds[-1],
                                   "count": len(group), "binaries": [b.path for b, _, _ in group[:shown]]}
    fix = _binary_fix(first, major)
    if len(group) == 1:
        b, bad, needs = group[0]
        libs = ", ".join(f"{n} (CUDA {'/'.join(map(str, m))})" for n, m in bad)
        owner = b.distribution or "no known distribution"
        what = (f"{b.path} ({owner}) needs {libs}; {ctx.profile.name} has CUDA {major}" if needs
                else f"{b.path} ({owner}) is the CUDA library {libs}, not one of CUDA {major}")
        return BINARY_SONAME.finding(what, b.location, evidence, fix=fix)
    owner = first.distribution or f"{len(group)} files in {os.path.dirname(first.path) or '.'} (no known distribution)"
    verb = ("need or are" if not all(needs for _, _, needs in group) else "need") if linked else "are"
    listed = ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
    return BINARY_SONAME.finding(
        f"{owner}: {len(group)} binaries {verb} CUDA {'/'.join(map(str, olds))} libraries ({listed}); {ctx.profile.name} has CUDA {major}, "
        f"e.g. {first.path}", first.location, evidence, fix=fix)


@check(BINARY_SONAME, BINARY_STATIC_CUDART)
def binary_sonames(ctx: CheckContext) -> Iterator[Finding]:
    """G1 over binaries: FAIL for each binary needing (or being) a CUDA library of another major."""
    binaries = ctx.inventory.binaries
    if not binaries:
        return
    from envcheck.knowledge.sonames import cuda_majors, soname_key  # only for targets with binaries
    major = ctx.profile.cuda_major
    good_variants = {variant_key(b) for b in binaries if b.cuda_major == major}
    needed_anywhere = {name for b in binaries for name in b.needed}
    judged = sum(1 for b in binaries
                 if any(cuda_majors(n) is not None for n in (*b.needed, *((b.soname,) if b.soname else ()))))
    failed = False
    private = _private_copies(binaries)
    vendored: dict[str, set[str]] = {}  # distribution -> the private CUDA libraries its binaries use
    # one finding per cause: a package's binaries (a loose folder's files) are one finding, whatever their CUDA majors
    groups: dict[str, list[tuple[Binary, list[tuple[str, tuple[int, ...]]], bool]]] = {}
    for b in binaries:
        mine = private.get(b.distribution or "", set())
        bad_needed = [(n, m) for n, m in _foreign(b.needed, major) if n not in mine]
        bad_self = _foreign((b.soname,), major) if b.soname and b.soname not in mine else []
        if b.distribution and (own := {n for n, _ in _foreign((*b.needed, b.soname or ""), major) if n in mine}):
            vendored.setdefault(b.distribution, set()).update(own)
        if not bad_needed and not bad_self:
            continue
        owner = b.distribution or "no known distribution"
        bad = [*bad_self, *bad_needed]
        libs = ", ".join(f"{n} (CUDA {'/'.join(map(str, m))})" for n, m in bad)
        evidence = {"binary": b.path, "distribution": b.distribution, "libraries": [n for n, _ in bad],
                    "soname_keys": [soname_key(n) for n, _ in bad]}
        if bad_self and not bad_needed:
            what = f"{b.path} ({owner}) is the CUDA library {libs}, not one of CUDA {major}"
        else:
            what = f"{b.path} ({owner}) needs {libs}; {ctx.profile.name} has CUDA {major}"
        if bad_self and not bad_needed and b.soname not in needed_anywhere and not _cuda_dist(b.distribution, major):
            # A CUDA 12 library bundled inside a non-CUDA distribution (triton ships CUPTI 12 for its
            # profiler) that no scanned binary links: loaded on demand, if at all, so not a G1 failure.
            yield BINARY_SONAME.finding(f"{what}; it is bundled by {owner} and no scanned binary links it (loaded on demand, if at all)",
                                        b.location, evidence, status=Status.INFO)
            continue
        if variant_key(b) in good_variants:
            yield BINARY_SONAME.finding(f"{what}; a CUDA {major} variant of it is shipped alongside and is picked at import",
                                        b.location, evidence, status=Status.INFO)
            continue
        failed = True
        key = b.distribution or f"folder {os.path.dirname(b.path) or '.'}"
        groups.setdefault(key, []).append((b, bad, bool(bad_needed)))
    # a CUDA 12 distribution a file declares (what --resolve read for it): the line's G1-cuda12-distribution
    # names it, its fix and these binaries (one cause, one finding)
    declared = {p.name for p in _judged_packages(ctx) if not p.installed} if ctx.kind != "wheel" else set()
    for owner, group in groups.items():  # bitsandbytes 0.46's CUDA 11 and 12 variants: no CUDA 13 one, one cause
        if not (owner in declared and _cuda_dist(owner, major)):
            yield _grouped_finding(ctx, group, sorted({m for _, bad, _ in group for _, ms in bad for m in ms}), major)
    if judged and not failed:
        yield BINARY_SONAME.passed(f"{judged} binaries link CUDA libraries; none needs a library of a CUDA major other than {major}",
                                   None, binaries=judged)
    for dist, names in sorted(vendored.items()):
        # auditwheel renamed the copy (libcudart-5961e14e.so.12): only the wheel's own binaries load it, and the
        # CUDA 13 driver runs an older runtime; their GPU code is G7's to judge
        yield BINARY_SONAME.info(f"{dist} ships its own copy of {', '.join(sorted(names))} (CUDA "
                                 f"{'/'.join(sorted({str(m) for n in names for m in cuda_majors(n) or ()}))}, renamed by auditwheel) "
                                 f"and its binaries load that copy: it runs under {ctx.profile.name}'s CUDA {major} driver",
                                 None, distribution=dist, libraries=sorted(names))
    static = sorted({b.path for b in binaries if b.static_cudart})
    if static:
        yield BINARY_STATIC_CUDART.info(f"{len(static)} binaries link the CUDA runtime statically, e.g. {static[0]}",
                                        None, binaries=static[:20])
