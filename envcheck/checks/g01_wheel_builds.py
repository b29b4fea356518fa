"""G1 from what the index serves (``knowledge/wheels.toml``, so offline): wheels whose aarch64 build has
the wrong CUDA, or none at all; ``--resolve`` reads the chosen files themselves."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion

from envcheck import kinds, knowledge
from envcheck.knowledge import wheels
from envcheck.knowledge.builds import (
    first_pypi_cuda_torch,
    installs_on,
    is_pypi,
    pypi_torch_build,
    torch_index,
)
from envcheck.model import PINS_ONLY, Finding, Package, Role, Status
from envcheck.rules import CheckContext, check, rule

PYPI_VLLM_CUDA12 = rule(
    "G1-pypi-vllm-cuda12", "G1", "vLLM from PyPI is a CUDA 12 build on linux/aarch64", Status.FAIL,
    """vLLM's PyPI wheels are built against the default CUDA build of the torch release they pin. For the
    releases that pin a torch whose PyPI build is CUDA 12 (knowledge/wheels.toml: vLLM up to the torch
    2.10 era), the linux/aarch64 wheel's kernels link libcudart.so.12: next to the Spark's CUDA 13 torch
    (a cu130 torch, an NGC image) they fail to load with an undefined symbol or a missing library, and pip
    would otherwise replace that torch with the one vLLM pins.""",
    "Use a vLLM release whose PyPI wheels are CUDA 13 builds (see knowledge/wheels.toml), vLLM's cu130 wheels "
    "(https://wheels.vllm.ai), or the NGC vLLM container (nvcr.io/nvidia/vllm).",
    (*kinds.DEPENDENCY_FILES, "dockerfile"))
PYPI_DEPENDENCY_CUDA12 = rule(
    "G1-pypi-dependency-cuda12", "G1", "A pinned PyPI package is, or requires exactly, a CUDA 12 build on linux/aarch64",
    Status.FAIL,
    """The release pinned, or a compiled package it requires at one exact version, is served by PyPI for
    linux/aarch64 as a build whose shared objects link the CUDA 12 runtime (knowledge/wheels.toml, read from
    the wheel; the exact requirement from knowledge/pins.toml: sglang 0.5.8 requires sgl-kernel==0.3.21). On a
    Spark with CUDA 13 only its import fails (`libcudart.so.12: cannot open shared object file`) and what
    loads it does not start (sgl-project/sglang-omni issue 620). vLLM's own wheels are G1-pypi-vllm-cuda12's.""",
    "Pin a release whose aarch64 build is CUDA 13 (see knowledge/wheels.toml), install the CUDA 13 build from "
    "the project's own index, or use a container that ships it (lmsysorg/sglang's Spark tags, NGC's SGLang).",
    (*kinds.DEPENDENCY_FILES, "dockerfile"))
CPU_ONLY_AARCH64 = rule(
    "G1-aarch64-wheel-without-cuda", "G1", "The package's linux/aarch64 wheel has no CUDA code", Status.WARN,
    """The index's linux/aarch64 wheel of this package carries no GPU code while its x86_64 wheel does
    (CTranslate2 builds its aarch64 wheels without CUDA; PyPI's torchvision/torchaudio before torch 2.11
    follow PyPI's CPU-only aarch64 torch): in a GPU project on a Spark it installs cleanly and then runs
    on the CPU, slower by an order of magnitude, or its GPU operators are missing, without an error at
    install time. Where no torch requirement of the input holds pip back, a release that pins such a torch
    exactly (torchvision 0.22.1: torch==2.7.1; audiocraft 1.3.0: torch==2.1.0) also decides torch: pip installs
    that CPU-only torch, over a CUDA one already there.""",
    "Build the package from source with CUDA for aarch64 (CTranslate2: -DWITH_CUDA=ON -DCUDA_ARCH_LIST=12.1), "
    "use a container that ships such a build, or accept CPU inference.",
    (*kinds.DEPENDENCY_FILES, "dockerfile"))

_TORCH_FAMILY = ("torch", "torchvision", "torchaudio", "triton", "pytorch-triton")
_CUDA13_PYPI_TORCH = first_pypi_cuda_torch(13)  # 2.11: the first torch whose PyPI aarch64 wheels are CUDA 13
# Wheels that bundle one library per CUDA release and load the one matching torch's (inferred from bitsandbytes'
# libbitsandbytes_cuda<NNN>.so naming): the CUDA wheels.toml reads from their largest object is not the one used
_RUNTIME_PICKED = ("bitsandbytes",)
_GPU_NAMES = ("torch", "vllm", "sglang", "xformers", "flash-attn", "triton", "onnxruntime-gpu", "tensorrt", "bitsandbytes")


def _from_pypi(pkg: Package, ctx: CheckContext, scoped: bool = False) -> bool:
    """Whether pip takes ``pkg`` from PyPI: no URL, no other index that could serve it, not a bare installed entry.
    ``scoped``: a package of an opt-in extra or group counts too (envcheck.scopes levels what it adds)."""
    if pkg.url or pkg.role in PINS_ONLY or (pkg.scope is not None and not scoped) or not installs_on(pkg, ctx.profile):
        return False
    if "+" in (pkg.version or ""):
        return False  # a local version (+cu130) is never PyPI's: another index serves it
    if pkg.index is not None:
        return is_pypi(pkg.index)
    if pkg.installed:
        return False  # a freeze line or site-packages: where it came from is not told
    # an index of torch builds (download.pytorch.org/whl/cu130) serves torch and its partners, not vLLM; any other might
    torch_family = pkg.name in _TORCH_FAMILY
    return all((torch_index(i.url) and not torch_family) or "pypi.org" in i.url for i in ctx.inventory.indexes)



def _release(pkg: Package, torch: str | None) -> wheels.Release | None:
    """The release pip picks: the exact pin, or the newest recorded final release the specifier allows (and, where
    the input pins torch exactly, whose own torch requirement that torch meets: the resolver backtracks to it)."""
    if pkg.version:
        return wheels.release(pkg.name, pkg.version) or wheels.older_than_window(pkg.name, pkg.version)
    try:
        allowed = SpecifierSet(pkg.specifier or "")
        rels = [r for r in wheels.releases(pkg.name) if _final(r.version) and allowed.contains(r.version)
                and (torch is None or r.torch is None or SpecifierSet(r.torch).contains(torch, prereleases=True))]
        if rels:
            return rels[-1]
        # nothing recorded fits: the newest release the index served that the specifier allows, if older than the table
        listed = wheels.served(pkg.name)
        picks = [v for v in listed.versions if _final(v) and allowed.contains(v)] if listed else []
    except (InvalidSpecifier, InvalidVersion):
        return None
    return wheels.older_than_window(pkg.name, picks[-1]) if picks else None


def _pulled_cpu_torch(ctx: CheckContext, rel: wheels.Release, torches: list[Package]) -> str | None:
    """The torch a release pins exactly when PyPI serves it CPU-only on aarch64 and nothing in the input holds pip
    back: no exact torch, no base image with its own, no torch requirement that excludes it (that is a conflict)."""
    if torches or ctx.inventory.images or not (rel.torch or "").startswith("=="):
        return None
    version = (rel.torch or "")[2:]
    build = pypi_torch_build("", version, ctx.profile.machine)
    if build is None or build[0].flavor != "cpu":
        return None
    try:
        asked = [SpecifierSet(p.specifier or "") for p in ctx.inventory.packages
                 if p.name == "torch" and p.role not in PINS_ONLY and installs_on(p, ctx.profile)]
        return version if all(spec.contains(version, prereleases=True) for spec in asked) else None
    except (InvalidSpecifier, InvalidVersion):
        return None


def _cuda12_build(pkg: Package) -> tuple[str, str, str] | None:
    """(package, version, source) of the CUDA 12 aarch64 build an exact pin installs: the package itself, or a
    compiled package its release requires exactly (knowledge/pins.toml); None where none is known."""
    if not pkg.version or pkg.name in ("vllm", *_RUNTIME_PICKED, *_TORCH_FAMILY):
        return None
    version = pkg.version.split("+", 1)[0]
    if wheels.aarch64_cuda(pkg.name, version) == "12":
        rel = wheels.release(pkg.name, version)
        return pkg.name, version, rel.where if rel else ""
    for row in knowledge.load("pins").get("pin", []):
        if row["package"] != pkg.name or not row["spec"].startswith("==") or not _within(version, row["when"]):
            continue
        needed = row["spec"][2:]
        if wheels.aarch64_cuda(row["requires"], needed) == "12":
            return row["requires"], needed, row["source"]
    return None


def _within(version: str, specifier: str) -> bool:
    try:
        return SpecifierSet(specifier).contains(version, prereleases=True)
    except (InvalidSpecifier, InvalidVersion):
        return False


def _newer(pkg: Package, gpu: bool) -> Finding | None:
    """INFO for an exact pin newer than every recorded release: the table's day; --resolve reads the index."""
    newest = wheels.newer_than_window(pkg.name, pkg.version) if pkg.version else None
    if newest is None:
        return None
    cpu_only = gpu and wheels.cpu_only(newest)
    rule_ = PYPI_VLLM_CUDA12 if pkg.name == "vllm" else CPU_ONLY_AARCH64 if cpu_only else None
    if rule_ is None:
        return None
    return rule_.info(f"{pkg.name} {pkg.version} is newer than every release knowledge/wheels.toml recorded on {newest.checked} "
                      f"(newest {newest.version}): its linux/aarch64 build is not known offline; --resolve reads the index",
                      pkg.location, package=pkg.name, version=pkg.version, newest=newest.version)


def _pinned_torch(torches: list[Package]) -> Callable[[Package], str | None]:
    """For a package, the one torch release pinned exactly in the same resolution: a whole file, but in a
    Dockerfile only the same command (a torch installed by an earlier RUN does not hold pip back). The
    torches are grouped once by where they are (not packages x torches: 10,000 pins took minutes)."""
    def releases(group: Iterable[Package]) -> set[str]:
        return {p.version.split("+", 1)[0] for p in group if p.version}
    unplaced = releases(p for p in torches if p.location is None)
    every, unstaged = releases(torches), unplaced | releases(p for p in torches if p.location and p.location.stage is None)
    by_command: dict[tuple[str | None, str, int | None], set[str]] = {}
    for p in torches:
        if p.location is not None and p.location.stage is not None:
            by_command.setdefault((p.location.stage, p.location.path, p.location.line), set()).update(releases([p]))

    def pinned(pkg: Package) -> str | None:
        at = pkg.location
        found = every if at is None else unstaged if at.stage is None else unplaced | by_command.get((at.stage, at.path, at.line), set())
        return next(iter(found)) if len(found) == 1 else None
    return pinned


def _picked(pkg: Package, torch: str | None) -> str:
    if pkg.version:
        if pkg.role == Role.REQUIREMENT and not pkg.specifier.startswith("=="):  # a pyproject range read with its uv.lock
            return f" ({pkg.specifier or 'not pinned'}: the version the project's uv.lock holds)"
        return ""
    what = f"{pkg.specifier}: pip takes the newest release it allows" if pkg.specifier else "not pinned: pip takes the newest release"
    return f" ({what}" + (f" that accepts torch {torch})" if torch else ")")


def _final(text: str) -> bool:
    v = wheels.parse_version(text)
    return v is not None and not (v.is_prerelease or v.is_devrelease)


@check(PYPI_VLLM_CUDA12, PYPI_DEPENDENCY_CUDA12, CPU_ONLY_AARCH64)
def wheel_builds(ctx: CheckContext) -> Iterator[Finding]:
    if ctx.profile.machine != "aarch64":
        return
    # with --resolve the picked files themselves were read (G1-binary-soname): one finding per cause
    resolved = {r.name for r in ctx.inventory.resolved}
    # an opt-in extra's or group's vLLM is judged for its CUDA 12 build (it breaks whoever opts in); what the CPU-only
    # rule reads (torchaudio pulled beside a cu130 torch) is judged only where the project installs it by default
    pkgs = [p for p in ctx.inventory.packages if p.name not in resolved and p.role != Role.RESOLVED
            and _from_pypi(p, ctx, scoped=p.name == "vllm")]
    # a CUDA torch that does not come from PyPI (a cu130 wheel URL or index, a +cu13x build)
    cuda_torch = any(p.name == "torch" and ("+cu" in (p.version or "") or p.url or (p.index and not is_pypi(p.index)))
                     for p in ctx.inventory.packages)
    gpu = any(p.name in _GPU_NAMES or p.name.startswith(("nvidia-", "cupy-cuda")) for p in ctx.inventory.packages)
    torches = [p for p in ctx.inventory.packages
               if p.name == "torch" and p.version and p.role not in PINS_ONLY and installs_on(p, ctx.profile)]
    pinned_torch = _pinned_torch(torches)
    for pkg in pkgs:
        if (cuda12 := _cuda12_build(pkg)) is not None:
            name, version, where = cuda12
            via = "" if name == pkg.name else f" requires {name}=={version}, and that"
            yield PYPI_DEPENDENCY_CUDA12.finding(
                f"{pkg.name} {pkg.version} from PyPI{via}: the linux/aarch64 wheel of {name} {version} links the CUDA 12 "
                f"runtime (libcudart.so.12), which a CUDA 13 Spark does not have: its import fails ({where})",
                pkg.location, {"package": name, "version": version, "source": where})
            continue
        if not wheels.known(pkg.name):
            continue
        torch = pinned_torch(pkg)
        rel = _release(pkg, torch)
        if rel is None:
            if (info := _newer(pkg, gpu)) is not None:
                yield info
            continue
        if pkg.name == "vllm":
            if rel.aarch64_cuda == "12":
                yield PYPI_VLLM_CUDA12.finding(
                    f"vllm {rel.version}{_picked(pkg, torch)} from PyPI: its linux/aarch64 wheel is a CUDA 12 build (it pins torch{rel.torch or ''}), "
                    f"so its kernels need libcudart.so.12 on a CUDA 13 Spark ({rel.where})",
                    pkg.location, {"package": "vllm", "version": rel.version, "torch": rel.torch, "source": rel.source})
            elif rel.aarch64_cuda == "13":
                yield PYPI_VLLM_CUDA12.passed(f"vllm {rel.version} from PyPI is a CUDA 13 build on linux/aarch64 ({rel.where})",
                                              pkg.location)
        if pkg.name in ("torchvision", "torchaudio") and rel.aarch64_cuda == "none" and cuda_torch:
            # PyPI's aarch64 build follows PyPI's CPU-only aarch64 torch of that release (torch's own build is judged by G1-cpu-build)
            yield CPU_ONLY_AARCH64.finding(
                f"{pkg.name} {rel.version} from PyPI is a CPU-only build on linux/aarch64 (it pins torch{rel.torch or ''}, whose "
                f"aarch64 wheel on PyPI has no CUDA): next to this CUDA torch its GPU operators are missing ({rel.where})",
                pkg.location, {"package": pkg.name, "version": rel.version, "source": rel.source})
            continue
        if pkg.name != "vllm" and (pulled := _pulled_cpu_torch(ctx, rel, torches)) is not None:
            # no exact torch of the input's own holds pip back: the release's pin decides which torch is installed
            yield CPU_ONLY_AARCH64.finding(
                f"{pkg.name} {rel.version} from PyPI pins torch=={pulled}, a CPU-only build on linux/aarch64, and no "
                f"torch requirement of this input overrides it: pip installs that torch (replacing a CUDA torch already "
                f"there) and the work runs on the Grace CPU ({rel.where})",
                pkg.location, {"package": pkg.name, "version": rel.version, "torch": rel.torch, "source": rel.source},
                fix=f"Pin {pkg.name} to a release paired with torch >= {_CUDA13_PYPI_TORCH} (PyPI's aarch64 torch is a CUDA 13 "
                    f"build from there on), or install torch and {pkg.name} from the cu130 index.")
            continue
        newest = wheels.release(pkg.name)
        cpu_only = wheels.cpu_only(rel) or (
            # the newest release was read; an older one with an aarch64 wheel is built the same way (inferred)
            wheels.cpu_only_on_aarch64(pkg.name) if rel.aarch64 == "wheel" and rel.aarch64_cuda is None else None)
        if cpu_only and gpu and pkg.name != "torch":  # torch's own build is G1-cpu-build's
            ends = wheels.window(pkg.name)
            if rel.inferred and rel is cpu_only and ends:  # older than every recorded release: what they all share
                seen = (f" (inferred: every recorded release {ends[0].version}..{ends[1].version} has it; "
                        f"{rel.version} is older than that range)")
            else:
                seen = "" if cpu_only.version == rel.version else f", as read for its newest release {newest.version if newest else ''}"
            yield CPU_ONLY_AARCH64.finding(
                f"{pkg.name} {rel.version}: the linux/aarch64 wheel on PyPI has no CUDA code while the x86_64 one has"
                f"{seen}; in this GPU project it runs on the CPU ({cpu_only.where})",
                pkg.location, {"package": pkg.name, "version": rel.version, "source": cpu_only.source, "inferred": rel.inferred})
