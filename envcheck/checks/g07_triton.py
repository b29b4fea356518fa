"""G7: a Triton whose bundled ptxas cannot compile for the GPU, so every Triton kernel fails to build there."""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache

from envcheck import kinds
from envcheck.model import PINS_ONLY, Finding, Package, Role, Status
from envcheck.rules import CheckContext, check, rule

TRITON_PTXAS = rule(
    "G7-triton-ptxas", "G7", "Triton's bundled ptxas cannot compile for the GPU", Status.FAIL,
    """Triton compiles every kernel at run time, for sm_121a on a GB10, with the ptxas it bundles
    (triton/backends/nvidia/bin/ptxas, from 3.6 on ptxas-blackwell), unless TRITON_PTXAS_PATH names another.
    Triton 3.5.x (what torch 2.9 pins, on x86_64 only: PyPI's aarch64 torch 2.9 wheels pull no Triton) bundles ptxas 12.8, and sm_121 first came with CUDA 12.9: every Triton
    kernel (torch.compile, vLLM's, Unsloth's) stops with "ptxas fatal : Value 'sm_121a' is not defined for
    option 'gpu-name'" (triton-lang/triton#8539). The ptxas of each release comes from a sourced table
    (envcheck/knowledge/triton_ptxas.toml); pytorch-triton builds count by their base version. INFO where the
    input sets TRITON_PTXAS_PATH, or is an NGC container (an NGC torch), whose images point it at their toolkit;
    a wheel is judged by the Triton its Requires-Dist pins for the target (a pin whose marker leaves out aarch64 installs nothing there);
    silent for a Triton that may come from another index (its build may bundle another ptxas);
    WARN next to a cu13x torch of the PyTorch index, whose own bundled ptxas torch.compile uses (kernels launched
    through Triton directly still fail).""",
    """Use triton 3.6 or newer (torch 2.10 or newer pins one), or export TRITON_PTXAS_PATH=/usr/local/cuda/bin/ptxas
    (the Spark's CUDA 13 toolkit).""",
    (*kinds.DEPENDENCY_FILES, "wheel", *kinds.ENVIRONMENTS))

_NAMES = ("triton", "pytorch-triton")
# pins that install nothing, build-only packages, and conda-forge's triton (it uses the environment's CUDA ptxas)
_NOT_RUN = (*PINS_ONLY, Role.BUILD, Role.CONDA)


@cache
def bundled_ptxas(version: str) -> tuple[str, bool] | None:
    """(the ptxas release Triton ``version`` uses for Blackwell GPUs, whether that is inferred), or None."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import InvalidVersion, Version

    from envcheck.knowledge import load
    try:
        base = Version(Version(version).base_version)  # 3.5.0+git7416ffcb -> 3.5.0
    except InvalidVersion:
        return None
    for row in load("triton_ptxas")["triton"]:
        if base in SpecifierSet(row["versions"]):
            return str(row["ptxas"]), bool(row.get("inferred", False))
    return None


@check(TRITON_PTXAS)
def triton_ptxas(ctx: CheckContext) -> Iterator[Finding]:
    """G7: FAIL for each installed or pinned Triton whose ptxas predates the GPU target, unless TRITON_PTXAS_PATH is set."""
    from envcheck.knowledge.builds import installs_on, ngc_release
    from envcheck.knowledge.nvcc import unknown_to
    target = f"sm_{ctx.profile.sm}a"  # Triton builds the arch-specific target from sm_90 on
    redirected = [f"TRITON_PTXAS_PATH={e.value}" for e in ctx.inventory.env if e.name == "TRITON_PTXAS_PATH" and e.value]
    if not redirected and (ngc := next((p for p in ctx.inventory.packages if p.name == "torch" and ngc_release(p.version)), None)):
        # NGC PyTorch images set TRITON_PTXAS_PATH=/usr/local/cuda/bin/ptxas (docs/research/spark-facts.md §1.4)
        redirected = [f"the NGC container of torch {ngc.version} (its TRITON_PTXAS_PATH=/usr/local/cuda/bin/ptxas)"]
    pinned = dict(_pinned_by_wheel(ctx))  # a wheel's own Requires-Dist pin (torch 2.9.0: triton==3.5.0)
    for pkg in [*ctx.inventory.packages, *pinned]:
        if pkg.name not in _NAMES or not pkg.version or pkg.role in _NOT_RUN or not installs_on(pkg, ctx.profile):
            continue
        found = bundled_ptxas(pkg.version)
        if found is None or _other_build(ctx, pkg) or (not pkg.installed and _no_wheel_here(pkg.version, ctx)):
            continue
        ptxas, inferred = found
        evidence = {"package": pkg.name, "version": pkg.version, "ptxas": ptxas, "target": target, "inferred": inferred}
        if pkg in pinned:
            evidence["pinned_by"] = pinned[pkg]
        missing = unknown_to(ptxas, [target])
        if not missing:
            yield TRITON_PTXAS.passed(f"{pkg.name} {pkg.version} bundles ptxas {ptxas}, which compiles for {target}",
                                      pkg.location, **evidence)
        elif redirected:
            yield TRITON_PTXAS.info(f"{pkg.name} {pkg.version} bundles ptxas {ptxas}, too old for {target}, but "
                                    f"{redirected[-1]} replaces it", pkg.location, **evidence)
        else:
            fails = f"(ptxas fatal : Value '{target}' is not defined for option 'gpu-name')"
            head = (f"{pkg.name} {pkg.version}{f' (which {pinned[pkg]} pins)' if pkg in pinned else ''} bundles ptxas {ptxas}"
                    f"{' (inferred)' if inferred else ''}, which cannot compile for {target} (CUDA {missing[0][1]} is the first that can)")
            own = _torch_ptxas(ctx)
            if own is None:
                yield TRITON_PTXAS.finding(f"{head}: every Triton kernel fails to build on {ctx.profile.name} {fails}",
                                           pkg.location, evidence)
            else:  # inductor hands torch's own ptxas to Triton; kernels launched straight through Triton still fail
                yield TRITON_PTXAS.finding(f"{head}: torch.compile uses the ptxas of {own}, but Triton kernels launched "
                                           f"directly (vLLM's, Unsloth's, Liger's) fail {fails}", pkg.location,
                                           {**evidence, "torch_ptxas": own}, status=Status.WARN)


def _pinned_by_wheel(ctx: CheckContext) -> Iterator[tuple[Package, str]]:
    """The Triton a wheel pins in its own Requires-Dist (a torch wheel's ``triton==3.5.0; platform_system ==
    "Linux"``), at the wheel, as (package, the wheel's name and version): pip installs exactly that one with it."""
    from packaging.requirements import InvalidRequirement, Requirement
    if ctx.kind != "wheel" or any(p.name in _NAMES for p in ctx.inventory.packages):
        return
    for pkg in ctx.inventory.packages:
        for line in pkg.requires or ():
            try:
                req = Requirement(line)
            except InvalidRequirement:
                continue
            pins = [s.version for s in req.specifier if s.operator == "==" or (s.operator == "~=" and s.version.count(".") == 2)]
            if (req.name.lower() in _NAMES and len(pins) == 1
                    and (req.marker is None or req.marker.evaluate({**ctx.profile.marker_env, "extra": ""}))):
                yield Package(req.name.lower(), pins[0], location=pkg.location), f"{pkg.name} {pkg.version}"


_KNOWN_HOSTS = ("pypi.org", "pypi.python.org", "files.pythonhosted.org", "download.pytorch.org")


def _no_wheel_here(version: str, ctx: CheckContext) -> bool:
    """A release with no wheel for the profile's machine (triton before 3.5 on aarch64) is not installed there:
    that is the ARCH rules' finding, and its ptxas never runs."""
    from envcheck.knowledge import wheels
    rels = wheels.every_release_allowed("triton", f"=={version}") if ctx.profile.machine == "aarch64" else None
    return bool(rels) and all(r.aarch64 != "wheel" for r in rels or ())


def _other_build(ctx: CheckContext, pkg: Package) -> bool:
    """Whether ``pkg`` may come from an index other than PyPI's or PyTorch's (Jetson AI Lab's, for one, whose build may bundle
    another ptxas): the table describes only PyPI's and PyTorch's builds."""
    from urllib.parse import urlsplit

    def other(url: str) -> bool:
        return (urlsplit(url).hostname or "").lower() not in _KNOWN_HOSTS
    if pkg.url or pkg.index:
        return other(pkg.url or pkg.index or "")
    return any(other(i.url) for i in ctx.inventory.indexes if not i.explicit and i.url.startswith(("http://", "https://")))


def _torch_ptxas(ctx: CheckContext) -> str | None:
    """The ptxas torch.compile hands to Triton (torch/_inductor sets TRITON_PTXAS_PATH to torch/bin/ptxas): the
    file itself, or a cu13x torch of the PyTorch index, whose wheels bundle one (docs/research/spark-facts.md §3,
    BUILD_BUNDLE_PTXAS; PyPI's torch wheels do not). None: the input shows none."""
    from envcheck.knowledge.builds import build_of_version
    bundled = next((b.path for b in ctx.inventory.binaries if b.path.endswith("torch/bin/ptxas")), None)
    if bundled is not None:
        return bundled
    for pkg in ctx.inventory.packages:
        build = build_of_version(pkg.version) if pkg.name == "torch" else None
        if build is not None and build.flavor == "cuda" and (build.cuda_major or 0) >= 13 and build.detail.startswith("+cu"):
            return f"torch {pkg.version} (torch/bin/ptxas)"
    return None
