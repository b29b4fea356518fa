"""G1: a CUDA 12 (or CPU-only) build where the Spark's CUDA 13 is needed. pip does not check the CUDA ABI:
it surfaces as ``ImportError: undefined symbol`` or a segfault at the first ``.cuda()``."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator, Mapping
from pathlib import PurePosixPath as Path

from envcheck import kinds, knowledge
from envcheck.fixes import g01_cuda_abi as fixes
from envcheck.inspect.wheel_tags import canonical, parse_wheel_name
from envcheck.knowledge.builds import (
    CudaBuild,
    build_of_index,
    build_of_version,
    distribution_cuda_major,
    first_cu130_torch,
    first_pypi_cuda_torch,
    installs_on,
    is_pypi,
    pypi_torch_build,
)
from envcheck.model import (
    PINS_ONLY,
    Binary,
    Finding,
    InstallCommand,
    Inventory,
    Location,
    Package,
    PackageIndex,
    Role,
    Status,
    per_inventory,
)
from envcheck.rules import CheckContext, check, rule

# the first NGC release month on CUDA 13 (knowledge/ngc_tags.toml): rule prose quotes the data, never a copy
_FIRST_CUDA13_NGC = knowledge.first_cuda13_ngc_release()
_CU130_TORCH = first_cu130_torch()  # 2.9.0: the first torch on the cu130 index
_CU130_MINOR = ".".join(_CU130_TORCH.split(".")[:2])
_PYPI_CUDA13_TORCH = first_pypi_cuda_torch(13)  # 2.11: the first torch whose PyPI aarch64 wheels are CUDA 13

FIX_CU130 = (
    "Install the CUDA 13 build: pip install torch --index-url https://download.pytorch.org/whl/cu130 "
    f"(torch >= {_CU130_MINOR}), or use an NGC container (nvcr.io/nvidia/pytorch:{_FIRST_CUDA13_NGC}-py3 or newer)."
)

LOCAL_VERSION = rule(
    "G1-cuda12-local-version", "G1", "A +cu11x/+cu12x build is pinned", Status.FAIL,
    """The version's local part (+cu121, +cu128, ...) names a CUDA 11/12 build. Its extensions link
    libcudart.so.12 and friends, which a CUDA 13 Spark does not have: import fails with undefined symbols
    or the first .cuda() segfaults. pip does not check this.""",
    FIX_CU130, (*kinds.DEPENDENCY_FILES, "dockerfile", "wheel"), autofix=fixes.local_version)
CPU_BUILD = rule(
    "G1-cpu-build", "G1", "torch resolves to a CPU-only build", Status.WARN,
    f"""The torch that this input installs has no CUDA at all: a +cpu build, the whl/cpu index, or a PyPI
    torch older than {_PYPI_CUDA13_TORCH}, whose aarch64 wheels are CPU-only (verified: 2.8-2.10 aarch64 wheels carry no
    libtorch_cuda.so). On a Spark torch.cuda.is_available() is then False and the work runs silently on the Grace
    CPU: it still runs, an order of magnitude slower (WARN). A ROCm or XPU build has no linux/aarch64 wheel
    at all and fails to install (FAIL). A CPU build the file asks for on purpose (the whl/cpu index or a +cpu pin
    in a file or stage named for the CPU: requirements-cpu.txt, Dockerfile.cpu, FROM ... AS cpu) is INFO.""",
    f"Use torch >= {_PYPI_CUDA13_TORCH} from PyPI, or the cu130 index (torch >= {_CU130_MINOR}), or an NGC PyTorch container.",
    (*kinds.DEPENDENCY_FILES, "dockerfile", "wheel"))
CUDA12_DIST = rule(
    "G1-cuda12-distribution", "G1", "A CUDA 12 library distribution is installed", Status.FAIL,
    """Distributions such as nvidia-cuda-runtime-cu12, nvidia-cublas-cu12, cupy-cuda12x or conda's
    pytorch-cuda=12.x carry CUDA 12 libraries (libcudart.so.12, ...). Note that library versions do not
    follow the toolkit's major: nvidia-cufft 12.x and nvidia-curand 10.4.x are CUDA 13 releases and pass. A
    wheel is judged with what its Requires-Dist installs on the profile (and an exactly pinned torch by its build).""",
    "Replace it with the CUDA 13 distribution (unsuffixed nvidia-* 13.x, or the -cu13 variant), or drop the pin and let torch's cu130 build pull its own.",
    (*kinds.DEPENDENCY_FILES, "dockerfile", "wheel", *kinds.ENVIRONMENTS), autofix=fixes.cuda12_distribution)
CUDA12_INDEX = rule(
    "G1-cuda12-index", "G1", "A package index serves CUDA 12 builds", Status.FAIL,
    """--index-url/--extra-index-url (or a uv index) names a CUDA 11/12 build as a path segment (.../whl/cu128, a mirror's
    .../sbsa/cu128): it serves CUDA 12 builds even when the version looks right. WARN (latent) where pip keeps what is installed.""",
    f"Point the index at https://download.pytorch.org/whl/cu130 (or cu13x), or remove it and use torch >= {_PYPI_CUDA13_TORCH} from PyPI.",
    (*kinds.DEPENDENCY_FILES, "dockerfile"), autofix=fixes.cuda12_index)
TORCH_BUILD = rule(
    "G1-torch-build", "G1", "Which CUDA build of torch this input gets", Status.WARN,
    """envcheck works out which CUDA build of torch an input installs: from the local version (+cu130),
    an NGC version (.nv25.09), the package index, or what PyPI serves for that version on aarch64. WARN
    means it cannot tell (a direct URL, an unknown index, an unpinned torch in an installed set); envcheck
    says what is unknown rather than guessing.""",
    f"Pin torch with its build (torch=={_CU130_TORCH}+cu130 with the cu130 index, or torch>={_PYPI_CUDA13_TORCH} from PyPI) so the CUDA build is explicit.",
    (*kinds.DEPENDENCY_FILES, "dockerfile", "wheel"))

_TORCH_FAMILY = ("torch", "torchvision", "torchaudio")


def _torch_packages(ctx: CheckContext) -> list[Package]:
    return [p for p in _judged_packages(ctx) if p.name == "torch"]


def _index_builds(ctx: CheckContext, pkg: Package) -> list[tuple[CudaBuild, str]]:
    """Builds served by the indexes ``pkg`` may come from (an explicit uv index serves only its own)."""
    return [(build, i.url) for i in _reaching_candidates(ctx, pkg) if not i.explicit and _index_reaches(ctx, i, pkg)
            and (build := build_of_index(i.url)) is not None]


def _reaching_candidates(ctx: CheckContext, pkg: Package) -> list[PackageIndex]:
    """The indexes :func:`_index_reaches` may accept for ``pkg``, in their order: a command's own index in a
    Dockerfile reaches only its own line (or the files that command reads), so the others are left out here
    (a Dockerfile of thousands of `pip install --index-url` lines is not indexes x packages)."""
    here = pkg.location
    if here is None or here.stage is None or here.line is None:
        return ctx.inventory.indexes
    at, by_stage, other, order, _env = _command_indexes(ctx.inventory)
    picked = [*other, *at.get((here.stage, here.path, here.line), ())]
    picked += [i for path, found in by_stage.get(here.stage, {}).items() if path != here.path for i in found]
    return sorted(picked, key=lambda i: order[id(i)])


_Site = tuple[str, str, int]


@per_inventory
def _command_indexes(inventory: Inventory) -> tuple[dict[_Site, list[PackageIndex]], dict[str, dict[str, list[PackageIndex]]],
                                                    list[PackageIndex], dict[int, int], set[tuple[str | None, int | None]]]:
    """The indexes a command names on its own line, by (stage, path, line) and by stage and path; every other
    index (set by ENV/ARG, or with no line); each index's place; and the (stage, line) of each ENV/ARG."""
    env_lines = {(e.location.stage, e.location.line) for e in inventory.env if e.location is not None}
    at: dict[_Site, list[PackageIndex]] = {}
    by_stage: dict[str, dict[str, list[PackageIndex]]] = {}
    other: list[PackageIndex] = []
    for i in inventory.indexes:
        there = i.location
        if there is None or there.stage is None or there.line is None or (there.stage, there.line) in env_lines:
            other.append(i)
            continue
        at.setdefault((there.stage, there.path, there.line), []).append(i)
        by_stage.setdefault(there.stage, {}).setdefault(there.path, []).append(i)
    return at, by_stage, other, {id(i): n for n, i in enumerate(inventory.indexes)}, env_lines


def _index_reaches(ctx: CheckContext, index: PackageIndex, pkg: Package) -> bool:
    """Does ``index`` serve ``pkg``? In a Dockerfile an index belongs to its stage: the command that names it
    (``pip install --index-url ...``: the same RUN line), or every later RUN of the stage when ENV/ARG set it
    (PIP_INDEX_URL, UV_INDEX). Elsewhere (a requirements file, a pyproject) it serves the whole input."""
    here, there = pkg.location, index.location
    if here is None or there is None or here.stage is None or there.stage is None:
        return True
    set_by_env = (there.stage, there.line) in _command_indexes(ctx.inventory)[4]
    if here.stage != there.stage:
        # ENV/ARG of a stage reach the stages built on it (FROM <stage>); a command's own options do not
        return set_by_env and any(there.stage in i.stages[:1] and here.stage in i.stages
                                  for i in ctx.inventory.images)
    if here.path != there.path or here.line is None or there.line is None:
        # a file the build installs (-r requirements.txt): its own options, read with it; a pip command's own
        # --index-url reaches such a file only when that command reads it
        commands = _by_location(ctx.inventory)[1].get(there, [])
        return not commands or any(re.search(r"(?:^|\s)(?:-r|--requirement)(?:[=\s]|$)", i.text) for i in commands)
    return here.line == there.line or (set_by_env and there.line < here.line)


def torch_build(pkg: Package, ctx: CheckContext) -> tuple[CudaBuild | None, str]:
    """The CUDA build this torch package gets, and how that was worked out (or why it is unknown)."""
    build = build_of_version(pkg.version)
    if build is not None:
        return build, f"its version {pkg.version}"
    if pkg.role == "conda":
        return _conda_torch_build(ctx)
    if pkg.url:
        wheel = parse_wheel_name(pkg.url)
        if wheel is not None and (build := build_of_version(wheel.version)) is not None:
            return build, f"the wheel {wheel.filename}"
        if "download.pytorch.org" in pkg.url and (index_build := build_of_index(pkg.url)):
            return index_build, f"the URL {pkg.url}"
        return None, f"it is installed from {pkg.url}, whose CUDA build envcheck cannot tell"
    if pkg.index and not is_pypi(pkg.index):  # uv sources, lock entries: this package comes from that index only
        if (build := build_of_index(pkg.index)) is not None:
            return build, f"its index {pkg.index}"
        return None, f"it comes from the index {pkg.index}, whose CUDA build envcheck cannot tell"
    indexed = _index_builds(ctx, pkg)
    if indexed and not pkg.installed:
        if len({(b.flavor, b.cuda_major) for b, _ in indexed}) == 1:
            return indexed[0][0], f"the index {indexed[0][1]}"
        return None, "several indexes serve different builds: " + ", ".join(f"{u} ({b.detail})" for b, u in indexed)
    if pkg.version_from and not pkg.version:
        return None, (f"its version is {pkg.version_from}, which this input does not set, and the build PyPI serves "
                      f"depends on it (on linux/aarch64 a CPU-only build before torch {_PYPI_CUDA13_TORCH})")
    found = pypi_torch_build(pkg.specifier, pkg.version, ctx.profile.machine)
    if found is not None:
        build = found[0]
        kind = "a CPU-only" if build.flavor == "cpu" else f"a CUDA {build.cuda_major}"
        served = f"PyPI serves {build.detail.removeprefix('PyPI ')} as {kind} build (knowledge/torch_builds.toml)"
        if not pkg.version:
            # not pinned: pip takes the newest release the specifier allows, as far as envcheck knows them
            from envcheck.knowledge import wheels
            newest = wheels.release("torch")
            dated = f"; releases as recorded on {newest.checked}" if newest else ""
            return build, f"not pinned, so pip takes the newest release allowed, and {served}{dated}"
        return build, served
    return None, "nothing in the input says which CUDA build of torch is installed"


def _distribution_fix(name: str, major: int) -> str | None:
    """The fix naming the CUDA ``major`` distribution that replaces ``name``; None: the rule's fix."""
    replacement = _cuda_replacement(name, major)
    return None if replacement is None else (f"Replace {name} with {replacement}, its CUDA {major} build, or "
                                             f"drop the pin and let torch's cu{major}0 build pull its own.")


def _cuda_replacement(name: str, major: int) -> str | None:
    """cupy-cuda12x -> cupy-cuda13x, nvidia-cudnn-cu12 -> nvidia-cudnn-cu13; toolkit parts drop the suffix,
    and their CUDA 13 releases are not always 13.x (cuFFT 12.x). None: not such a name."""
    from envcheck.knowledge.builds import unsuffixed_distribution
    m = re.fullmatch(r"(.+)-(cu|cuda)1[0-2](x?)", name)
    if m is None:
        return None
    base, prefix, x = m.groups()
    row = unsuffixed_distribution(base) if prefix == "cu" else None
    if row is None:
        return f"{base}-{prefix}{major}{x}"
    spec = row.get(f"cuda{major}")
    return f"{base}{spec}" if isinstance(spec, str) else f"the unsuffixed {base} (its CUDA {major} release)"


# conda packages whose version is the environment's CUDA version (knowledge/nvidia_distributions.toml [[conda]]).
_CONDA_CUDA = ("pytorch-cuda", "cuda-version", "cudatoolkit")
_FIX_CONDA = (
    "conda's pytorch channel has no CUDA 13 build (pytorch-cuda stops at 12.x). Get a CUDA 13 environment: "
    "conda-forge's pytorch with cuda-version>=13 (channels: [conda-forge], no pytorch/nvidia CUDA 12 pins), or "
    "install torch with pip from the cu130 PyTorch index in the pip: list (--extra-index-url "
    "https://download.pytorch.org/whl/cu130), or use an NGC container "
    f"(nvcr.io/nvidia/pytorch:{_FIRST_CUDA13_NGC}-py3 or newer).")
_FIX_CONDA_CHANNEL = (
    "Use the CUDA 13 label of the channel (nvidia/label/cuda-13.0.0 or newer) or conda-forge with cuda-version>=13; "
    "for torch, conda-forge's CUDA 13 pytorch or pip's cu130 PyTorch index in the pip: list.")


def _conda_cuda_major(pkg: Package, major: int) -> int | None:
    """The CUDA major a conda pytorch-cuda / cuda-version / cudatoolkit spec selects: from its exact version
    (``=12.1``), a wildcard (``12.*``) or a range that allows no CUDA ``major`` release (``>=12,<13``)."""
    if pkg.role != "conda" or pkg.name not in _CONDA_CUDA:
        return None
    exact = re.match(r"^(\d+)(?:\.[\d*]+)*\*?$", pkg.version or pkg.specifier.lstrip("="))
    if exact:
        return int(exact.group(1))
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    try:
        spec = SpecifierSet(pkg.specifier)
    except InvalidSpecifier:
        return None
    allowed = sorted({m for m in range(8, major + 3) for minor in range(10) if spec.contains(f"{m}.{minor}", prereleases=True)})
    return allowed[-1] if allowed and major not in allowed and allowed[-1] < major else None


def _conda_torch_build(ctx: CheckContext) -> tuple[CudaBuild | None, str]:
    """conda's pytorch takes its CUDA build from pytorch-cuda / cuda-version / cudatoolkit in the same install."""
    for pkg in ctx.inventory.packages:
        if (found := _conda_cuda_major(pkg, ctx.profile.cuda_major)) is not None:
            spec = f"{pkg.name}={pkg.version}" if pkg.version else f"{pkg.name}{pkg.specifier}"
            return CudaBuild("cuda", found, f"conda {spec}"), f"conda {spec}"
    return None, "conda's pytorch build depends on the channel and on pytorch-cuda/cuda-version, which this install does not name"


@check(LOCAL_VERSION, CPU_BUILD, CUDA12_DIST, CUDA12_INDEX, TORCH_BUILD)
def cuda_builds(ctx: CheckContext) -> Iterator[Finding]:
    """G1 over packages and indexes: local versions, CUDA 12 distributions, indexes, torch's build."""
    findings = [*_package_builds(ctx), *_served_builds(ctx), *_torch_builds(ctx)]
    # One cause, one finding: a torch that is a CUDA 12 (or CPU) build only because an index serves it is that
    # index's finding (whose fix moves the index and the pin with it), not a second FAIL. In a Dockerfile an index
    # belongs to its own command, so only the same line is folded there; in a requirements file it serves the file.
    indexes = [f for f in findings if f.rule in (CUDA12_INDEX.id, CPU_BUILD.id) and "url" in f.evidence
               and f.status is not Status.PASS and f.location]
    keys = _serving_keys(findings)
    folded = {id(index): [f for f in _may_serve(index, findings, keys, ctx.kind) if f.location and _serves(ctx, index, f)]
              for index in indexes}
    served = {id(f) for also in folded.values() for f in also}
    for found in findings:
        if id(found) in served:
            continue
        also = folded.get(id(found), [])
        if also:
            what = "CUDA 12" if found.rule == CUDA12_INDEX.id else "CPU-only"
            here = [f for f in also if f.location == found.location]
            there = [f for f in also if f.location != found.location]
            words = [f"{_named(here[:8])}{', ...' if len(here) > 8 else ''} on this line"] if here else []
            words += [f"{_named([f])} on line {f.location.line}" for f in there[:8] if f.location]
            words += [f"{len(there) - 8} more"] if len(there) > 8 else []
            lines = sorted({f.location.line for f in there if f.location and f.location.line})
            verb = f"is its {what} build" if len(also) == 1 else f"are its {what} builds"
            evidence = {**found.evidence, "packages": [f.evidence.get("package") for f in also]}
            found = dataclasses.replace(found, message=f"{found.message}; {' and '.join(words)} {verb}",
                                        evidence={**evidence, "lines": lines} if lines else evidence)
        yield found
    judged = {LOCAL_VERSION.id, CPU_BUILD.id, CUDA12_DIST.id, CUDA12_INDEX.id}
    if any(f.rule in judged and f.status is not Status.PASS for f in findings) or not _names_a_cuda_build(ctx):
        return
    cuda_pkgs = [p.name for p in ctx.inventory.packages if distribution_cuda_major(p) or p.name in _TORCH_FAMILY]
    if cuda_pkgs and not _torch_packages(ctx):
        yield CUDA12_DIST.passed(f"CUDA libraries are CUDA {ctx.profile.cuda_major} builds ({len(cuda_pkgs)} "
                                 "distributions)", None, packages=sorted(set(cuda_pkgs)))


def _may_serve(index: Finding, findings: list[Finding], keys: dict[tuple[str, str], list[int]], kind: str) -> list[Finding]:
    """The findings :func:`_serves` may accept for ``index``, in their order: those on its line, those that
    name its URL as their index, and +cuNNN pins of its URL's build (not every finding: indexes x pins); the
    last two only in a requirements file, the one kind where :func:`_serves` looks past the index's own line."""
    url = str(index.evidence["url"])
    picked = {*keys.get(("at", str(index.location)), ())}
    if kind == "requirements":
        picked |= {*keys.get(("how", f"the index {url}"), ()), *keys.get(("local", url.rstrip("/").rsplit("/", 1)[-1]), ())}
    return [findings[i] for i in sorted(picked)]


def _serving_keys(findings: list[Finding]) -> dict[tuple[str, str], list[int]]:
    keys: dict[tuple[str, str], list[int]] = {}
    for i, f in enumerate(findings):
        local = re.search(r"\+(cu\d+)$", str(f.evidence.get("version") or ""))
        for key in (("at", str(f.location)), ("how", str(f.evidence.get("how", ""))), ("local", local.group(1) if local else "")):
            keys.setdefault(key, []).append(i)
    return keys


def _serves(ctx: CheckContext, index: Finding, found: Finding) -> bool:
    """Is ``found`` (a torch-family build finding) the build that the index of the finding ``index`` serves?"""
    if not (found.rule == LOCAL_VERSION.id if index.rule == CUDA12_INDEX.id else (found.rule == CPU_BUILD.id and "url" not in found.evidence)):
        return False
    how, url = str(found.evidence.get("how", "")), str(index.evidence["url"])
    if found.location == index.location:
        return how.startswith("the index ") or (ctx.kind == "dockerfile" and found.evidence.get("package") == "torch")
    if ctx.kind != "requirements" or index.location is None or found.location is None or found.location.path != index.location.path:
        return False
    local = re.search(r"\+(cu\d+)$", str(found.evidence.get("version") or ""))  # torch==2.11.0+cu129 needs the cu129 index
    return how == f"the index {url}" or (local is not None and url.rstrip("/").rsplit("/", 1)[-1] == local.group(1)
                                         and found.evidence.get("package") in _TORCH_FAMILY)


def _named(found: list[Finding]) -> str:
    return ", ".join(f"{f.evidence.get('package')}{' ' + str(f.evidence['version']) if f.evidence.get('version') else ''}" for f in found)


def _judged_packages(ctx: CheckContext) -> list[Package]:
    """The packages that install on the profile's platform (constraints and overrides install nothing). Under
    --resolve a requirement and what the resolver picked for it (its line, its name) are one package: the
    requirement, with the resolved version where it names none (what would be installed wins)."""
    packages = [p for p in (*ctx.inventory.packages, *_wheel_requirements(ctx)) if installs_on(p, ctx.profile) and p.role not in PINS_ONLY]
    picked: dict[tuple[str, Location | None], Package] = {
        (p.name, p.location): p for p in packages if p.role == Role.RESOLVED and p.location and p.location.line}
    if not picked:
        return packages
    declared = {(p.name, p.location) for p in packages if p.role != Role.RESOLVED}
    return [dataclasses.replace(p, version=twin.version) if (twin := picked.get((p.name, p.location))) and not p.version and p.role != Role.RESOLVED
            else p for p in packages if p.role != Role.RESOLVED or (p.name, p.location) not in declared]


def _wheel_requirements(ctx: CheckContext) -> list[Package]:
    """What a wheel's Requires-Dist installs, as G1 judges it: CUDA 11/12 library distributions (nvidia-cublas-cu12,
    cupy-cuda12x) and an exactly pinned torch (not for a CUDA 12 distribution's own wheel: its finding already)."""
    out = []
    for pkg in wheel_requirements(ctx):
        dist = distribution_cuda_major(pkg)
        if (dist is not None and dist[0] < ctx.profile.cuda_major) or (pkg.name == "torch" and pkg.version):
            out.append(pkg)
    own = [d for w in ctx.inventory.wheels if (d := distribution_cuda_major(Package(w.name))) and d[0] < ctx.profile.cuda_major]
    return [] if own else out


def wheel_requirements(ctx: CheckContext) -> list[Package]:
    """A wheel target's Requires-Dist as packages at the wheel (their markers kept for installs_on): what pip
    installs with it. Empty for other inputs, whose requirements are their own packages."""
    from packaging.requirements import InvalidRequirement, Requirement
    out = []
    for wheel in ctx.inventory.wheels if ctx.kind == "wheel" else ():
        for line in wheel.requires:
            try:
                req = Requirement(line)
            except InvalidRequirement:
                continue
            pins = [s.version for s in req.specifier if s.operator == "=="]
            version = pins[0] if len(pins) == 1 else None
            if version and "+" not in version and "+" in wheel.version and canonical(req.name) in _TORCH_FAMILY:
                # torchvision 0.24.0+cu130 pins torch==2.9.0: pip takes it from the same index, torch 2.9.0+cu130
                version += "+" + wheel.version.split("+", 1)[1]
            out.append(Package(canonical(req.name), version, str(req.specifier),
                               marker=str(req.marker) if req.marker else None, location=wheel.location))
    return out


def _names_a_cuda_build(ctx: CheckContext) -> bool:
    """Whether the input says anything about CUDA builds: a CUDA distribution, a conda CUDA pin, an index, torch."""
    major = ctx.profile.cuda_major
    return (any(distribution_cuda_major(p) is not None or _conda_cuda_major(p, major) is not None for p in _judged_packages(ctx))
            or any(build_of_index(i.url) is not None for i in ctx.inventory.indexes) or bool(_torch_packages(ctx)))


def _package_builds(ctx: CheckContext) -> Iterator[Finding]:
    """Versions with an older CUDA local tag, distributions that carry older CUDA libraries, conda CUDA pins."""
    major = ctx.profile.cuda_major
    for pkg in _judged_packages(ctx):
        build = build_of_version(pkg.version)
        if build is not None and build.flavor == "cuda" and build.cuda_major is not None and build.cuda_major < major:
            yield LOCAL_VERSION.finding(
                f"{pkg.name} {pkg.version} is a CUDA {build.cuda_major} build ({build.detail}); {ctx.profile.name} has CUDA {major}",
                pkg.location, {"package": pkg.name, "version": pkg.version, "build": build.detail})
            continue
        dist = distribution_cuda_major(pkg)
        own = _own_binaries(ctx, pkg.name) if dist is not None and dist[0] < major else []
        if dist is not None and dist[0] < major and not (own and (pkg.installed or ctx.kind == "wheel")):
            dist_major, why = dist
            # under --resolve the wheel it resolves to was read: its binaries are this finding's evidence
            shown = (f"; the wheel it resolves to has {len(own)} binaries that link or are CUDA {dist_major} libraries, "
                     f"e.g. {own[0].path}") if own else ""
            yield CUDA12_DIST.finding(
                f"{pkg.name}{' ' + pkg.version if pkg.version else ''} carries CUDA {dist_major} libraries: {why}{shown}",
                pkg.location, {"package": pkg.name, "version": pkg.version, "cuda_major": dist_major,
                               **({"count": len(own), "binaries": [b.path for b in own[:20]]} if own else {})},
                fix=_FIX_CONDA if pkg.role == "conda" else _distribution_fix(pkg.name, major))
        conda_major = _conda_cuda_major(pkg, major)
        if conda_major is not None and conda_major < major:
            spec = f"{pkg.name}={pkg.version}" if pkg.version else f"{pkg.name}{pkg.specifier}"
            yield CUDA12_DIST.finding(
                f"conda {spec} selects a CUDA {conda_major} environment",
                pkg.location, {"package": pkg.name, "version": pkg.version, "cuda_major": conda_major}, fix=_FIX_CONDA,
            )


def _own_binaries(ctx: CheckContext, name: str) -> list[Binary]:
    """The binaries of the distribution ``name`` in this input (a wheel, a folder, an image's layers, what
    --resolve read) that need or are CUDA libraries of another major. For an installed distribution or a
    wheel, G1-binary-soname's one finding for the package names them and is this cause's finding (one cause,
    one finding: binaries do not lie, where a name only suggests); for a declared requirement, the line's
    finding is, with them as its evidence."""
    if not ctx.inventory.binaries:
        return []
    from envcheck.knowledge.sonames import cuda_majors, renamed
    major = ctx.profile.cuda_major
    return [b for b in ctx.inventory.binaries if b.distribution == name and any(
        not renamed(n) and (m := cuda_majors(n)) is not None and major not in m for n in (*b.needed, b.soname or ""))]


def _served_builds(ctx: CheckContext) -> Iterator[Finding]:
    """Indexes and channels that serve older CUDA builds, or CPU/ROCm/XPU builds."""
    major = ctx.profile.cuda_major
    for index in ctx.inventory.indexes:
        build = build_of_index(index.url)
        if build is None:
            continue
        if build.flavor == "cuda" and build.cuda_major is not None and build.cuda_major < major:
            message = f"{index.option} {index.url} serves CUDA {build.cuda_major} builds ({build.detail})"
            earlier = _latent_index(ctx, index)
            if earlier:
                # every package of its command is already installed: pip says "Requirement already satisfied"
                message += (f"; latent: what this command installs is already in the stage ({earlier}), so pip keeps it, "
                            "and the next change to this line pulls CUDA 12 builds")
            yield CUDA12_INDEX.finding(message, index.location,
                                       {"url": index.url, "option": index.option, "latent": bool(earlier)},
                                       status=Status.WARN if earlier else None,
                                       fix=_FIX_CONDA_CHANNEL if index.option == "conda-channel" else None)
        elif build.flavor in ("cpu", "rocm", "xpu"):
            yield _cpu_build(f"{index.option} {index.url} serves {build.detail} builds, not CUDA {major}",
                             index.location, {"url": index.url, "option": index.option}, build, explicit=True)


def _torch_builds(ctx: CheckContext) -> Iterator[Finding]:
    """Which CUDA build of torch the input installs, told from its version, index, PyPI or conda pins."""
    major = ctx.profile.cuda_major
    torch_libs = any("torch/lib/libtorch_cuda" in b.path for b in ctx.inventory.binaries)
    for pkg in _torch_packages(ctx):
        if torch_libs and pkg.installed:
            continue  # the binaries themselves are judged by the soname checks: they do not lie
        if installed_before(ctx, pkg) is not None or kept_from_base(ctx, pkg) is not None:
            continue  # `pip install torch` again: pip keeps the torch an earlier line (or the base) installed, judged there
        build, how = torch_build(pkg, ctx)
        evidence: dict[str, object] = {"package": "torch", "version": pkg.version, "specifier": pkg.specifier, "how": how}
        if pkg.bound_at and pkg.location and pkg.location.line and how.startswith("its index"):
            evidence["lines"] = sorted({pkg.location.line, pkg.bound_at})  # the requirement and the source binding it
        if build is None:
            yield TORCH_BUILD.finding(f"cannot tell which CUDA build of torch is installed: {how}", pkg.location, evidence)
        elif build.flavor == "cuda" and build.cuda_major is not None and build.cuda_major < major:
            if build_of_version(pkg.version) is None:  # already reported as a local version otherwise
                yield LOCAL_VERSION.finding(f"torch is a CUDA {build.cuda_major} build, from {how}{_replacing(ctx, pkg)}", pkg.location,
                                            evidence, fix=_FIX_CONDA if pkg.role == "conda" else None)
        elif build.flavor != "cuda":
            explicit = "PyPI serves" not in how  # asked for (+cpu, the cpu index, uv --torch-backend=cpu), not PyPI's default
            # torch==2.9.1+cpu written out in a declared input asks for the CPU build on purpose (a CPU-only venv or tool)
            pinned = build.flavor == "cpu" and not pkg.installed and build_of_version(pkg.version) is not None
            engine = _cuda_only_at(ctx.inventory).get((pkg.location.path, pkg.location.stage)) if pkg.location else None
            yield _cpu_build(f"torch is a {build.flavor.upper() if build.flavor != 'cpu' else 'CPU-only'} build: {how}"
                             f"{_replacing(ctx, pkg)}", pkg.location, evidence, build, explicit, pinned, engine)
        else:
            yield TORCH_BUILD.passed(f"torch is a CUDA {build.cuda_major} build: {how}", pkg.location, **evidence)


# A file or Dockerfile stage whose name declares the CPU variant (requirements-dev-cpu.txt, Dockerfile.cpu, AS cpu)
_CPU_NAMED = re.compile(r"(?i)(?:^|[-_.])cpu(?:$|[-_.])")


# Packages of the same install that run only on CUDA: beside a CPU-only torch they do not start at all
_CUDA_ONLY = frozenset({"vllm", "sglang", "sgl-kernel", "flash-attn", "flashinfer-python"})


@per_inventory
def _cuda_only_at(inventory: Inventory) -> dict[tuple[str, str | None], str]:
    """The first CUDA-only package of each file (and Dockerfile stage) the default install brings."""
    out: dict[tuple[str, str | None], str] = {}
    for p in inventory.packages:
        if p.name in _CUDA_ONLY and p.scope is None and p.location:
            out.setdefault((p.location.path, p.location.stage), p.name)
    return out


def _cpu_build(message: str, location: Location | None, evidence: Mapping[str, object], build: CudaBuild,
               explicit: bool, pinned: bool = False, engine: str | None = None) -> Finding:
    """ROCm/XPU has no linux/aarch64 wheel (FAIL); a CPU-only torch runs on the Grace CPU (WARN), unless
    asked for on purpose: ``explicit`` (whl/cpu index, +cpu) in a file or stage named for the CPU, or
    ``pinned`` (INFO)."""
    if build.flavor != "cpu":
        return CPU_BUILD.finding(message, location, evidence, status=Status.FAIL)
    if pinned:
        return CPU_BUILD.info(f"{message}; the +cpu local version asks for the CPU build on purpose", location,
                              **evidence, deliberate=True)
    named = _cpu_name(location) if explicit else None
    if named is not None:
        return CPU_BUILD.info(f"{message}; {named} is named for the CPU, so a CPU-only torch is what it asks for", location,
                              **evidence, deliberate=True)
    if engine is not None and not explicit:
        return CPU_BUILD.finding(f"{message}; {engine}, installed with it, runs only on CUDA: it does not start on this torch",
                                 location, evidence, status=Status.FAIL)
    return CPU_BUILD.finding(f"{message}; on a Spark it runs on the Grace CPU, not the GPU", location, evidence)


def _cpu_name(location: Location | None) -> str | None:
    """How ``location`` declares a CPU variant: its file's name or its Dockerfile stage's (None: it does not)."""
    if location is None:
        return None
    if _CPU_NAMED.search(name := Path(location.path).name):
        return name
    if location.stage and _CPU_NAMED.search(location.stage.rsplit("/", 1)[-1]):
        return f"stage {location.stage!r}"
    return None


def _replacing(ctx: CheckContext, pkg: Package) -> str:
    """In a Dockerfile: words for a CUDA 13 torch of an earlier line that ``pkg`` (a later pin of another
    version) makes pip replace; empty when there is none."""
    loc = pkg.location
    if ctx.kind != "dockerfile" or loc is None or not pkg.version:
        return ""
    for other in ctx.inventory.packages:  # in install order
        if other is pkg:
            return ""
        build = build_of_version(other.version)
        if (other.name == "torch" and not other.installed and other.version and other.version != pkg.version
                and other.location is not None and other.location.stage == loc.stage and build is not None
                and build.flavor == "cuda" and build.cuda_major == ctx.profile.cuda_major):
            return (f"; this pin makes pip replace the CUDA {build.cuda_major} torch {other.version} installed at "
                    f"{Path(other.location.path).name}:{other.location.line}")
    return ""


def installed_before(ctx: CheckContext, pkg: Package) -> Package | None:
    """In a Dockerfile stage, the earlier install of the same distribution that makes ``pkg`` (unpinned, of a
    command without --upgrade/--force-reinstall) a no-op."""
    loc = pkg.location
    if ctx.kind != "dockerfile" or loc is None or loc.line is None or pkg.version or pkg.url or pkg.role != "requirement":
        return None
    replacing, first, order = _installs_in_order(ctx.inventory)
    if loc in replacing:
        return None
    # the first install of the name in the stage, in the order the Dockerfile installs them (-r files where read)
    other = first.get((pkg.name, loc.stage))
    return other if other is not None and order[id(other)] < order.get(id(pkg), -1) else None


@per_inventory
def _installs_in_order(inventory: Inventory) -> tuple[set[Location], dict[tuple[str, str | None], Package], dict[int, int]]:
    """Where an install replaces what is there (--upgrade), the first requirement of each name in each stage,
    and each package's place in the install order."""
    first: dict[tuple[str, str | None], Package] = {}
    for other in inventory.packages:
        if other.role == "requirement" and not other.installed and other.location is not None:
            first.setdefault((other.name, other.location.stage), other)
    return ({i.location for i in inventory.installs if i.replaces and i.location is not None}, first,
            {id(p): n for n, p in enumerate(inventory.packages)})


@per_inventory
def _by_location(inventory: Inventory) -> tuple[dict[Location, list[Package]], dict[Location, list[InstallCommand]]]:
    """The packages and the install commands at each location (a line of a Dockerfile)."""
    packages: dict[Location, list[Package]] = {}
    installs: dict[Location, list[InstallCommand]] = {}
    for p in inventory.packages:
        if p.location is not None:
            packages.setdefault(p.location, []).append(p)
    for i in inventory.installs:
        if i.location is not None:
            installs.setdefault(i.location, []).append(i)
    return packages, installs


@per_inventory
def _shipped(inventory: Inventory) -> dict[tuple[str, str | None], Package]:
    """The first package of each name each Dockerfile stage's base ships (installed, with a location)."""
    out: dict[tuple[str, str | None], Package] = {}
    for b in inventory.packages:
        if b.installed and b.location:
            out.setdefault((b.name, b.location.stage), b)
    return out


def _latent_index(ctx: CheckContext, index: PackageIndex) -> str:
    """Where the packages of ``index``'s own install command were installed before (empty: not latent)."""
    loc = index.location
    if ctx.kind != "dockerfile" or loc is None or index.option not in ("index-url", "extra-index-url"):
        return ""
    packages_at, installs_at = _by_location(ctx.inventory)
    here = [p for p in packages_at.get(loc, ()) if p.role == "requirement"]
    if not here or any(i.tool not in ("pip", "uv") for i in installs_at.get(loc, ())):
        return ""
    earlier = [installed_before(ctx, p) or kept_from_base(ctx, p) for p in here]
    if any(e is None for e in earlier):
        return ""
    return ", ".join(f"{e.name}{' shipped by the base image' if e.installed else ''} at {Path(e.location.path).name}:"
                     f"{e.location.line}" for e in earlier if e is not None and e.location is not None)


def kept_from_base(ctx: CheckContext, pkg: Package) -> Package | None:
    """What the Dockerfile stage's base ships (NGC's torch) that pip keeps for ``pkg``, or None."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import InvalidVersion, Version
    loc = pkg.location
    if ctx.kind != "dockerfile" or loc is None or pkg.url or pkg.installed or pkg.role != "requirement":
        return None
    replacing, _first, _order = _installs_in_order(ctx.inventory)
    if loc in replacing:
        return None
    spec = pkg.specifier or (f"=={pkg.version}" if pkg.version else "")
    base = _shipped(ctx.inventory).get((pkg.name, loc.stage))
    if base is None or not spec:
        return base
    try:  # an unknown shipped version satisfies only a bare requirement
        kept = base.version is not None and Version(base.version) in SpecifierSet(spec, prereleases=True)
        return base if kept else None
    except (InvalidVersion, InvalidSpecifier):
        return None


def older_cuda_level(cuda: str | None, ctx: CheckContext) -> tuple[Status, str, dict[str, str]]:
    """(status, why, evidence) of an image whose CUDA is older than the profile's, for every rule that judges
    one (one CUDA, one level): FAIL, or WARN where its toolkit compiles for the profile's GPU (12.9 for
    sm_121), as the CUDA 13 driver runs that user space. An unknown minor (``12``) FAILs."""
    from envcheck.knowledge.nvcc import first_nvcc
    target = f"sm_{ctx.profile.sm}"
    first = first_nvcc(target)
    parts = (cuda or "").split(".")
    if (first is None or len(parts) < 2 or not parts[0].isdigit() or not parts[1].isdigit()
            or (int(parts[0]), int(parts[1])) < first[0]):
        return Status.FAIL, "", {}
    toolkit, major = f"{first[0][0]}.{first[0][1]}", ctx.profile.cuda_major
    return (Status.WARN,
            f"CUDA {toolkit} is the first toolkit that compiles for {target}, so its builds can carry code for this GPU and "
            f"the CUDA {major} driver runs them: whether it works depends on what was built for {target} (and CUDA {major} "
            "wheels cannot be mixed in)", {"first_nvcc": toolkit, "nvcc_source": first[1]})


IMAGE_CUDA = rule(
    "G1-image-cuda", "G1", "The image's CUDA is older than the Spark's CUDA 13", Status.FAIL,
    """The image config's CUDA_VERSION (set by every nvidia/cuda and NGC image; the com.nvidia.cuda.version
    label is stale in NGC images and is not used) names a CUDA major older than the profile's. Everything
    built into the image links that major's libraries (libcudart.so.12, ...), which fail at import or at the
    first kernel on a CUDA 13 Spark. Without CUDA_VERSION, an NGC tag is mapped through the dated table
    knowledge/ngc_tags.toml, and the message says when that mapping is inferred. CUDA 12.9 or newer 12.x is a
    WARN, as for a FROM line (G1-cuda12-base): 12.9 is the first toolkit that compiles for sm_121
    (knowledge/nvcc_targets.toml), and the CUDA 13 driver runs a CUDA 12 user space.""",
    f"""Use a CUDA 13 image: nvcr.io/nvidia/pytorch:{_FIRST_CUDA13_NGC}-py3 or newer (25.11-py3 is what NVIDIA's Spark
    playbooks use), nvcr.io/nvidia/vllm:25.09-py3 or newer, or nvidia/cuda:13.0.x-*.""",
    ("image",))


@check(IMAGE_CUDA)
def image_cuda(ctx: CheckContext) -> Iterator[Finding]:
    """G1 over an image: the CUDA major from its config's CUDA_VERSION, else from its NGC tag."""
    facts = ctx.inventory.host.image
    if facts is None or facts.platform_found is False:
        return
    ref = facts.ref or ""
    where = Location(ref, member="config") if ref else None
    value = next((v.value for v in reversed(ctx.inventory.env) if v.name == "CUDA_VERSION" and v.origin == "config"), None)
    major: int | None = None
    cuda: str | None = None
    how = ""
    evidence: dict[str, object] = {"image": ref}
    if value and (head := re.match(r"\s*(\d+)", value)):
        major, cuda, how = int(head.group(1)), value.strip(), f"CUDA_VERSION={value}"
        evidence["CUDA_VERSION"] = value
    if major is None:
        from envcheck.knowledge.base_images import safe_describe
        described = safe_describe(f"{facts.registry or ''}/{facts.repository}:{facts.tag or 'latest'}") if facts.repository else None
        if described is not None and described.cuda_major is not None:
            major, cuda = described.cuda_major, described.cuda
            how = (described.note or f"NGC {described.release}") + (" (inferred)" if described.inferred else "")
            evidence.update({"cuda": described.cuda, "inferred": described.inferred, "source": described.source})
    if major is None:
        return
    if major < ctx.profile.cuda_major:
        status, why, more = older_cuda_level(cuda, ctx)
        yield IMAGE_CUDA.finding(f"{ref} is a CUDA {major} image ({how}); {ctx.profile.name} has CUDA {ctx.profile.cuda_major}"
                                 + (f"; {why}" if why else ""), where, {**evidence, **more}, status=status)
    else:
        yield IMAGE_CUDA.passed(f"{ref} is a CUDA {major} image ({how})", where, **evidence)


DEFAULT_INDEX_PULL = rule(
    "G1-default-index-pull", "G1", "An install pulls CUDA packages through a CUDA 12 default index", Status.WARN,
    """ENV or ARG PIP_INDEX_URL / PIP_EXTRA_INDEX_URL (UV_INDEX_URL, UV_EXTRA_INDEX_URL, UV_DEFAULT_INDEX,
    UV_INDEX, UV_TORCH_BACKEND) make a CUDA 12 index (download.pytorch.org/whl/cu12x) the default for every later pip or uv
    command of the stage. An install that does not name torch itself still pulls torch, torchvision or
    nvidia-* libraries through its dependencies, and they come from that index as CUDA 12 builds. The
    finding points at the install that pulls them; the index itself is reported where it is set.""",
    """Point the variable at https://download.pytorch.org/whl/cu130 (or drop it), or install with --no-deps
    after a torch that is already right.""",
    ("dockerfile",))


@check(DEFAULT_INDEX_PULL)
def default_index_pulls(ctx: CheckContext) -> Iterator[Finding]:
    """G1: Dockerfile installs that resolve dependencies through a CUDA 12 index set in ENV/ARG."""
    from envcheck.inspect.pip_args import INDEX_VARIABLES, index_entries

    defaults = []  # (stage, line, variable, url, build)
    for var in ctx.inventory.env:
        if var.name not in INDEX_VARIABLES or var.origin not in ("env", "arg") or var.location is None or var.location.line is None:
            continue
        for url in index_entries(var.name, var.value):
            build = build_of_index(url)
            if build is not None and build.flavor == "cuda" and build.cuda_major is not None and build.cuda_major < ctx.profile.cuda_major:
                defaults.append((var.location.stage, var.location.line, var.name, url, build))
    if not defaults:
        return
    stack = set(knowledge.load("pins")["stack"]["ml_stack"])
    for install in ctx.inventory.installs:
        loc = install.location
        if install.tool not in ("pip", "uv") or install.no_deps or loc is None or loc.line is None or not install.packages:
            continue
        # torch named here is judged by G1-cuda12-local-version with the same index; without a package that
        # depends on torch or CUDA libraries, nothing is pulled
        if set(install.packages) & set(_TORCH_FAMILY) or not set(install.packages) & stack:
            continue
        own_index = any(o.startswith(("--index-url=", "-i=", "--default-index=")) for o in install.options)
        for stage, line, name, url, build in defaults:
            if stage != loc.stage or line >= loc.line or (own_index and name.endswith(("INDEX_URL", "DEFAULT_INDEX")) and "EXTRA" not in name):
                continue
            yield DEFAULT_INDEX_PULL.finding(
                f"stage {stage!r}: {install.text or 'this install'} resolves dependencies through {url} ({build.detail}, "
                f"set by {name} on line {line}): torch and nvidia-* packages it pulls come as CUDA {build.cuda_major} builds",
                loc, {"stage": stage, "index": url, "variable": name, "set_on_line": line, "packages": list(install.packages)},
            )
            break
