"""G9: a bare-pip ML stack drifts: versions that contradict each other's pins, unpinned packages, Unsloth
installed with its dependencies, and NGC's pre-release torch replaced by an unrelated install."""

from __future__ import annotations

import re
from collections.abc import Container, Iterator
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from envcheck import kinds, knowledge
from envcheck.checks import g09_release_pins as release_pins
from envcheck.fixes import dockerfile_fixes
from envcheck.inspect.wheel_tags import canonical
from envcheck.knowledge.builds import installs_on, is_pypi, ngc_release, requirement_applies, torch_index
from envcheck.model import (
    PINS_ONLY,
    REPLACING_OPTIONS,
    Finding,
    Inventory,
    Location,
    Package,
    Role,
    Status,
    per_inventory,
)
from envcheck.profile import Profile
from envcheck.rules import CheckContext, check, rule

if TYPE_CHECKING:
    from packaging.markers import Marker
    from packaging.requirements import Requirement
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

PIN_CONFLICT = rule(
    "G9-pin-conflict", "G9", "Versions contradict each other's pins", Status.FAIL,
    """Two packages in this set cannot both be right: one's Requires-Dist (read from its metadata where the
    input carries it, otherwise from envcheck's sourced pin table: torch/triton, torchvision/torchaudio/torch,
    xformers/torch, transformers minimums; for a version range, the recorded pins of every release it allows,
    knowledge/wheels.toml: audiocraft>=1.3.0 needs torch==2.1.0) excludes the other's version, or every served release
    of a range the input asks (torchvision==0.22.1 needs torch 2.7, beside torch>=2.11), or a constraint of the
    same install (a -c file, uv's constraint-dependencies) excludes what a requirement asks. Where one release of
    a range fits, pip picks it and nothing is reported. pip installs them anyway when they
    arrive in separate commands, and the environment breaks at import or at the first compiled kernel. A uv
    override (`[tool.uv] override-dependencies`, kept in uv.lock's `[manifest] overrides`) replaces every
    requirement declared on its package, which is what it is for: those requirements are not compared.""",
    "Pick versions that agree (the evidence names the pin), install them in one pip command so the resolver sees both, or use an NGC container where they are built together.",
    ("requirements", *kinds.LOCK_FILES, "dockerfile", "wheel", *kinds.ENVIRONMENTS))
NGC_TORCH_REPLACED = rule(
    "G9-ngc-torch-replaced", "G9", "A requirement would replace NGC's pre-release torch", Status.FAIL,
    """NGC containers ship torch as a pre-release (2.9.0a0+<hash>.nv25.09). Under PEP 440, 2.9.0a0 < 2.9.0,
    so torch>=2.9 or torch==2.9.0 (directly, or through a package that pins torch) is not satisfied, and pip
    replaces NGC's torch with a PyPI build that lacks NGC's CUDA 13/SM121 tuning. An install with -U or
    --force-reinstall of torch (or of an unpinned torchvision/torchaudio, whose newest release pins the newest
    torch) replaces it outright: a WARN when the torch it brings is a CUDA 13 build (the image runs; NGC's own
    extensions built against the removed torch do not).""",
    "Install with --no-deps, loosen the requirement to accept the pre-release (e.g. torch>=2.9.0a0), or pick versions built against the container's torch.",
    ("requirements", "dockerfile", "image", *kinds.LIVE_KINDS))
UNPINNED = rule(
    "G9-unpinned", "G9", "An ML package is not pinned", Status.WARN,
    """Under bare pip, torch, triton, xformers, transformers and friends drift independently: an unpinned
    one resolves to whatever is newest on the day of the install, so two 'identical' environments differ
    and an unrelated pip install can break one that worked yesterday. Nothing pins them to GB10's SM121.
    In a Dockerfile, installs in a stage built on an NGC PyTorch container whose pip constraints protect its
    torch (NGC 25.01 on) are not bare pip and pass; on other bases G9-bare-pip-base lists the stage's unpinned
    packages in its one finding. Reported once per file (per stage), naming every unpinned package.""",
    "Pin exact versions (==) that are known to work together, or use a lock file, or an NGC/Unsloth container.",
    (*kinds.REQUIREMENT_FILES, "dockerfile"), policy=True)
UNSLOTH_DEPS = rule(
    "G9-unsloth-with-deps", "G9", "Unsloth is installed with its dependencies", Status.WARN,
    """NVIDIA's Spark install order installs unsloth and unsloth_zoo with --no-deps after the rest of the
    stack; installing it with dependencies lets pip replace torch, transformers or trl with versions that
    do not match the container or the rest of the stack. On an NGC base whose pip constraints keep torch
    (25.01 on), Unsloth's own caps are what keep transformers and trl in range: with both pinned exactly in
    the stage (Unsloth's Spark recipe) it passes, and otherwise the advice is to pin them, not --no-deps.""",
    "Install the stack first, then: pip install --no-deps unsloth unsloth_zoo bitsandbytes (NVIDIA's Unsloth playbook order).",
    (*kinds.REQUIREMENT_FILES, "dockerfile"), autofix=dockerfile_fixes.unsloth_no_deps)
TORCH_REPINNED = rule(
    "G9-torch-repinned", "G9", "vLLM is built from source without use_existing_torch.py", Status.WARN,
    """vLLM's own requirement files (requirements/cuda.txt, build.txt) pin torch to the release vLLM was tested
    with. Built from a clone in a stage that already has the torch it wants (a cu130 build picked by hand, or
    NGC's), `pip install .`/`-e .` installs that pinned torch over it unless the versions match, and PyPI's
    aarch64 torch of that release may be CPU-only or lack the container's tuning. vLLM's documented answer for
    an existing torch is `python use_existing_torch.py` in the clone before the build.""",
    "Run `python use_existing_torch.py` in the vLLM clone before installing its requirements and building it "
    "(then build with --no-build-isolation), or pin the same torch vLLM's requirements name.",
    ("dockerfile",))
MARKER_EXCLUDED = rule(
    "G9-marker-excludes-aarch64", "G9", "An ML requirement is skipped on aarch64 by its marker", Status.INFO,
    """The requirement's environment marker is false on linux/aarch64 (for example
    platform_machine == 'x86_64'), so on a Spark it is not installed at all. Older torch wheels gate triton
    this way.""",
    "If the Spark needs it, add a requirement without the x86_64 marker.",
    (*kinds.DEPENDENCY_FILES, "dockerfile"))


@lru_cache(maxsize=1)
def _pins() -> dict[str, Any]:
    return knowledge.load("pins")


def _parsed(version: str | None) -> Version | None:
    from packaging.version import InvalidVersion, Version
    try:
        return Version(version) if version else None
    except InvalidVersion:
        return None


def _allows(version: str | None, specifier: str) -> bool | None:
    """Whether ``version`` meets ``specifier``; None when it is no version."""
    parsed = _parsed(version)
    return None if parsed is None else _satisfies(parsed, _specifier(specifier))


def _satisfies(version: Version, spec: SpecifierSet) -> bool:
    # Pre-releases (NGC's 2.9.0a0) count as what they are: pip does not accept them for torch>=2.9.
    return spec.contains(version, prereleases=True)


@lru_cache(maxsize=16384)
def _requirement(line: str) -> Requirement | None:
    """A Requires-Dist line, parsed once (a lock repeats the same lines over thousands of packages)."""
    from packaging.requirements import InvalidRequirement, Requirement
    try:
        return Requirement(line)
    except InvalidRequirement:
        return None


# The name at the start of a requirement, read as packaging reads it (optional blanks, then its IDENTIFIER).
_NAME = re.compile(r"[ \t]*(\b[a-zA-Z0-9][a-zA-Z0-9._-]*\b)")


@lru_cache(maxsize=16384)
def _read_requires_line(line: str) -> tuple[str, str, Marker | None] | None:
    """(canonical name, specifier, marker) of a Requires-Dist line; None: not PEP 508, or for an extra."""
    semicolon = line.find(";")
    at = line.find("@")
    if semicolon >= 0 and not 0 <= at < semicolon and "extra" in line[semicolon + 1:]:
        # No URL before the first `;`: when the line parses, its marker is everything after it, and a marker
        # written with `extra` prints with it: dropped without parsing (half of torch's lines).
        return None
    req = _requirement(line)
    if req is None or (req.marker is not None and "extra" in str(req.marker)):
        return None
    return canonical(req.name), str(req.specifier), req.marker


@lru_cache(maxsize=4096)
def _specifier(text: str) -> SpecifierSet:
    from packaging.specifiers import SpecifierSet
    return SpecifierSet(text)


_canonical = lru_cache(maxsize=8192)(canonical)  # the same few hundred names, thousands of lines


def _requirements_of(pkg: Package, profile: Profile, wanted: Container[str] | None = None,
                     pypi_only: bool = False) -> list[tuple[str, str, str]]:
    """(required name, specifier text, source) from metadata when present, else from the pin table; lines
    that require a name outside ``wanted`` (the packages present) are not read at all. ``pypi_only``: the input
    reaches no PyTorch index, so a plain version is PyPI's build, whose pins carry the row's ``pypi_marker``."""
    out: list[tuple[str, str, str]] = []
    if pkg.requires is not None:
        for line in pkg.requires:
            if wanted is not None:
                name = _NAME.match(line)
                if name is None or _canonical(name.group(1)) not in wanted:
                    continue  # a valid line names what packaging reads there; an invalid one is dropped anyway
            found = _read_requires_line(line)
            if found is not None and (found[2] is None or requirement_applies(found[2], profile)):
                out.append((found[0], found[1], f"{pkg.name} {pkg.version} Requires-Dist: {line}"))
        return out
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import InvalidVersion, Version
    version = _parsed(pkg.version)
    if version is None or ngc_release(pkg.version) is not None or not _public_index(pkg.index):
        # The pin table describes public releases; NGC builds pair their own (e.g. torch 2.10a0 with triton 3.5),
        # as do builds of another index (Jetson AI Lab's sbsa/cu130 torch 2.10.0 with triton 3.5.0)
        return out
    public = Version(str(version).split("+", 1)[0])
    for row in _pins().get("pin", []):
        try:
            if row["package"] == pkg.name and _satisfies(public, SpecifierSet(row["when"])):
                if "pypi_marker" in row and pypi_only and public == version and not pkg.url \
                        and (pkg.index is None or is_pypi(pkg.index)) and not _marker_applies(row["pypi_marker"], profile):
                    continue  # PyPI's torch 2.10 on aarch64 requires no triton: any triton installs beside it
                out.append((row["requires"], str(SpecifierSet(row["spec"])), f"pin table: {pkg.name} "
                            f"{row['when']} needs {row['requires']}{row['spec']} ({row['source']})"))
        except (InvalidSpecifier, InvalidVersion):
            continue
    out += [(row["requires"], f"=={version.major}.{version.minor}.*", f"{pkg.name} shares torch's version "
             f"({row['source']})") for row in _pins().get("same_version", [])
            if row["package"] == pkg.name and version >= Version(row["since"])]
    return out


def _marker_applies(marker: str, profile: Profile) -> bool:
    from packaging.markers import Marker
    return requirement_applies(Marker(marker), profile)


def _public_index(url: str | None) -> bool:
    """PyPI, or the project's own index (PyTorch's, vLLM's: their builds carry PyPI's Requires-Dist): where the pin
    table's facts hold."""
    host = re.sub(r"^[a-z+]+://", "", (url or "https://pypi.org/simple").lower()).split("/", 1)[0]
    return host in ("pypi.org", "pypi.python.org", "files.pythonhosted.org", "download.pytorch.org", "wheels.vllm.ai")


def _ranged(ctx: CheckContext, pkgs: list[Package], exact: dict[str, Package]) -> dict[str, Package]:
    """Requirements of this input given as a range (torch>=2.11), by name, where no exact pin names them."""
    if ctx.kind == "dockerfile":
        return {}  # stages and RUN lines install one after another: a range there is no joint resolution
    return {p.name: p for p in pkgs if p.name not in exact and p.specifier and not p.version
            and not p.installed and installs_on(p, ctx.profile)}


def _ranged_conflict(ranges: dict[str, Package], name: str, text: str) -> Package | None:
    """The ranged requirement of ``name`` (in ``ranges``, from :func:`_ranged`) that no served release of ``name``
    meeting ``text`` satisfies."""
    from envcheck.knowledge import wheels
    ranged = ranges.get(name)
    listed = wheels.served(name)
    if ranged is None or listed is None:
        return None
    wanted, asked = _specifier(text), _specifier(ranged.specifier)
    if not str(wanted) or not str(asked):
        return None
    fits = [v for v in listed.versions if (parsed := _parsed(v)) is not None and _satisfies(parsed, wanted)]
    return ranged if fits and not any(_satisfies(v, asked) for f in fits if (v := _parsed(f)) is not None) else None


def _exact_versions(ctx: CheckContext) -> dict[str, Package]:
    out: dict[str, Package] = {}
    for pkg in ctx.inventory.packages:
        # installed facts win over declared ones of the same name; in a Dockerfile stage a later pin replaces an
        # earlier one (pip installs it over the first: the image holds the last)
        if not pkg.version or not installs_on(pkg, ctx.profile) or pkg.role in PINS_ONLY:
            continue
        first = out.get(pkg.name)
        if (first is None or (pkg.installed and not first.installed)
                or (ctx.kind == "dockerfile" and not pkg.installed and not first.installed and pkg.location is not None
                    and first.location is not None and pkg.location.stage == first.location.stage)):
            out[pkg.name] = pkg
    return out


def _marker_profile(ctx: CheckContext) -> Profile:
    """The profile, with the Python version of a live environment where one was read (markers use it)."""
    python = ctx.inventory.host.python
    version = python.version if python is not None else None
    if version is None or not version[:1].isdigit():
        return ctx.profile
    short = ".".join(version.split(".")[:2])
    return replace(ctx.profile, marker_env={**ctx.profile.marker_env, "python_version": short,
                                            "python_full_version": version})


@check(TORCH_REPINNED)
def vllm_existing_torch(ctx: CheckContext) -> Iterator[Finding]:
    """G9 over Dockerfiles: a vLLM clone built in a stage that already has its torch, without use_existing_torch.py."""
    if ctx.kind != "dockerfile":
        return
    for pkg in ctx.inventory.packages:
        loc = pkg.location
        if pkg.name != "vllm" or not (pkg.url or "").startswith("git+") or pkg.role != "requirement" or loc is None:
            continue
        torch = None
        for other in ctx.inventory.packages:  # in install order: the torch the stage has when vLLM is built
            if other is pkg:
                break
            if other.name == "torch" and other.version and other.location is not None and other.location.stage == loc.stage:
                torch = other
        if torch is None:
            continue
        if any(i.tool == "python" and "use_existing_torch" in i.options and i.location is not None
               and i.location.stage == loc.stage and (i.location.line or 0) <= (loc.line or 0)
               for i in ctx.inventory.installs):
            yield TORCH_REPINNED.passed(f"vLLM is built with use_existing_torch.py: it keeps torch {torch.version}", loc)
            continue
        yield TORCH_REPINNED.finding(
            f"vLLM is built from its clone without use_existing_torch.py: its requirements pin torch to vLLM's release, which "
            f"pip installs over torch {torch.version} unless the versions match", loc,
            {"torch": torch.version, "vllm": pkg.url})


@check(PIN_CONFLICT, NGC_TORCH_REPLACED, UNPINNED, UNSLOTH_DEPS, MARKER_EXCLUDED)
def pins(ctx: CheckContext) -> Iterator[Finding]:
    """G9: contradictory pins, NGC torch replaced, unpinned ML packages, unsloth with dependencies."""
    pkgs = [p for p in ctx.inventory.packages if p.role not in PINS_ONLY]
    if not pkgs:
        return
    marker_profile = _marker_profile(ctx)
    exact = _exact_versions(ctx)
    # uv replaces every requirement declared on an overridden package by the override, whatever either's marker
    # (https://docs.astral.sh/uv/concepts/resolution/#dependency-overrides): those requirements do not bind
    overridden = {p.name for p in ctx.inventory.packages if p.role == Role.OVERRIDE}
    conflicts = 0
    ranges = _ranged(ctx, pkgs, exact)
    wanted = exact | ranges
    pypi_only = not any(torch_index(i.url) for i in ctx.inventory.indexes)
    for pkg in exact.values():
        for name, text, source in _requirements_of(pkg, marker_profile, wanted, pypi_only):
            other = exact.get(name)
            if other is None and name not in overridden and (ranged := _ranged_conflict(ranges, name, text)) is not None:
                conflicts += 1  # torchvision==0.22.1 (torch==2.7.1) with torch>=2.11: no release meets both
                yield PIN_CONFLICT.finding(
                    f"{pkg.name} {pkg.version} needs {name}{_specifier(text)}, but this input asks {name}{ranged.specifier}: "
                    "no release meets both, so the install fails", pkg.location or ranged.location,
                    {"package": pkg.name, "version": pkg.version, "requires": f"{name}{_specifier(text)}",
                     "found": ranged.specifier, "source": source})
                continue
            if other is None or other is pkg or name in overridden or _allows(other.version, text) is not False:
                continue  # not present, itself, overridden, no version, or allowed
            spec = _specifier(text)  # the clauses as packaging prints them
            if not str(spec):
                continue
            if name == "torch" and ngc_release(other.version):
                continue  # reported below as an NGC replacement, with its own explanation
            conflicts += 1
            shipped = pkg.installed and not other.installed and other.location is not None  # the base has it: the pin breaks it
            yield PIN_CONFLICT.finding(
                f"{pkg.name} {pkg.version}{' (in the base image)' if shipped else ''} needs {name}{spec}, but {name} is {other.version}",
                other.location if shipped else pkg.location or other.location,
                {"package": pkg.name, "version": pkg.version, "requires": f"{name}{spec}",
                 "found": other.version, "source": source})
    # a range whose every release pins torch/torchvision/torchaudio outside what the input asks (wheels.toml)
    for pkg, message, evidence in release_pins.clashes(ctx, pkgs, overridden, lambda p: {
            name for name, _, _ in _requirements_of(p, marker_profile, exact, pypi_only)} if p.version else set()):
        conflicts += 1
        yield PIN_CONFLICT.finding(message, pkg.location, evidence)
    for found in [*_transformers_from_main(ctx, exact), *_constraint_clashes(ctx, pkgs)]:
        conflicts += 1
        yield found
    replaced = list(_ngc_torch(ctx, exact))
    yield from replaced
    yield from _ngc_torch_upgraded(ctx, [f.location for f in replaced])
    # Markers that drop a requirement on aarch64 (the torch->triton x86_64-only gate).
    stack = set(_pins()["stack"]["ml_stack"])
    # One requirement read as several (uv sources by marker) is excluded only when none of them installs.
    done = {(p.name, p.location, p.scope) for p in pkgs if installs_on(p, ctx.profile)}  # or reported
    for pkg in pkgs:
        key = (pkg.name, pkg.location, pkg.scope)
        if key not in done and pkg.name in stack and not installs_on(pkg, ctx.profile) and not pkg.installed:
            done.add(key)
            yield MARKER_EXCLUDED.info(f"{pkg.name} is not installed on {ctx.profile.machine}: its marker is {pkg.marker}", pkg.location)
    if ctx.inventory.context == "declared":
        yield from _unpinned(ctx, pkgs, stack)
        yield from _unsloth(ctx, pkgs)
    if conflicts == 0 and exact:
        yield PIN_CONFLICT.passed(f"no contradicting pins among {len(exact)} pinned packages", None)


def _constraint_clashes(ctx: CheckContext, pkgs: list[Package]) -> Iterator[Finding]:
    """A requirement that its own input's constraint excludes (torch==2.4.0 beside -c pinning torch==2.5.0, or
    uv's constraint-dependencies): pip and uv stop with no version to install. Only where one install reads both."""
    if ctx.kind not in ("requirements", "pyproject"):
        return
    constraints = [c for c in ctx.inventory.packages if c.role == Role.CONSTRAINT and (c.version or c.specifier)]
    for pkg in pkgs:
        if pkg.role != Role.REQUIREMENT or not installs_on(pkg, ctx.profile):
            continue
        for limit in (c for c in constraints if c.name == pkg.name and installs_on(c, ctx.profile)):
            asked = _parsed(pkg.version) if pkg.version else None
            clash = (not _satisfies(asked, _specifier(limit.specifier or f"=={limit.version}")) if asked is not None
                     else limit.version is not None and pkg.specifier is not None
                     and _allows(limit.version, pkg.specifier) is False)
            if clash:
                where = f" ({limit.location.path}:{limit.location.line})" if limit.location is not None else ""
                yield PIN_CONFLICT.finding(
                    f"{pkg.name}{pkg.specifier or '==' + str(pkg.version)} is asked, but the constraint "
                    f"{limit.name}{limit.specifier or '==' + str(limit.version)}{where} excludes it: no version can be installed",
                    pkg.location, {"package": pkg.name, "requires": pkg.specifier or pkg.version,
                                   "constraint": limit.specifier or limit.version})
                break


def _ngc_torch(ctx: CheckContext, exact: dict[str, Package]) -> Iterator[Finding]:
    torch = exact.get("torch")
    if torch is None or ngc_release(torch.version) is None:
        return
    version = _parsed(torch.version)
    if version is None:
        return
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    on_ngc = _ngc_stages(ctx, protected=False)  # a compose file's other services build on other bases
    for pkg in ctx.inventory.packages:
        if pkg.installed or pkg.role in PINS_ONLY or not installs_on(pkg, ctx.profile):
            continue
        if on_ngc and pkg.location is not None and pkg.location.stage is not None and pkg.location.stage not in on_ngc:
            continue
        if pkg.name == "torch" and pkg.specifier:
            try:
                spec = SpecifierSet(pkg.specifier)
            except InvalidSpecifier:
                continue
            if not _satisfies(version, spec) and not pkg.no_deps:
                yield NGC_TORCH_REPLACED.finding(
                    f"torch{spec} is not satisfied by NGC's torch {torch.version} (a pre-release): pip will replace it",
                    pkg.location, {"requirement": f"torch{spec}", "ngc_torch": torch.version})
        elif not pkg.no_deps:
            for name, text, source in _requirements_of(pkg, ctx.profile, ("torch",)):
                spec = _specifier(text)
                if name == "torch" and str(spec) and not _satisfies(version, spec):
                    what = f"{pkg.name} {pkg.version}" if pkg.version else pkg.name
                    yield NGC_TORCH_REPLACED.finding(
                        f"{what} needs torch{spec}, which NGC's torch {torch.version} does not satisfy: "
                        "pip will replace NGC's torch", pkg.location,
                        {"package": pkg.name, "requires": f"torch{spec}", "ngc_torch": torch.version,
                         "source": source})


_TRANSFORMERS_MAIN = re.compile(r"github\.com/huggingface/transformers(?:\.git)?(?:@(?:main|master))?(?:[#?].*)?$")


def _transformers_from_main(ctx: CheckContext, exact: dict[str, Package]) -> Iterator[Finding]:
    """transformers from its main branch (5.x dev) next to a vLLM that caps it below 5: with --no-deps (or
    --force-reinstall) pip never compares the two."""
    from_main = [p for p in ctx.inventory.packages
                 if p.name == "transformers" and p.url and _TRANSFORMERS_MAIN.search(p.url) and p.location is not None]
    if not from_main:
        return
    from envcheck.knowledge.base_images import safe_describe
    caps = [row for row in _pins().get("pin", []) if row["package"] == "vllm" and row["requires"] == "transformers"]
    for pkg in from_main:
        assert pkg.location is not None
        stage = pkg.location.stage
        vllm = exact.get("vllm") or next((p for p in ctx.inventory.packages if p.name == "vllm"
                                          and p.location is not None and p.location.stage == stage), None)
        version = vllm.version if vllm is not None else None
        if vllm is None:
            bases = [safe_describe(i.ref) for i in ctx.inventory.images if stage in (i.stages or (i.stage,))]
            if not any(f is not None and f.family == "ngc-vllm" for f in bases):
                continue
        rows = [r for r in caps if version is None or _allows(version, r["when"])]
        if not rows or _allows("5.0.0.dev0", rows[0]["spec"]) is not False:
            continue
        spec = str(_specifier(rows[0]["spec"]))
        yield PIN_CONFLICT.finding(
            f"transformers from its main branch (a 5.x development version) goes over vLLM{' ' + version if version else ''}, "
            f"which requires transformers{spec}" + ("; --no-deps: pip does not check it" if pkg.no_deps else ""),
            pkg.location, {"package": "transformers", "url": pkg.url, "requires": f"transformers{spec}", "source": rows[0]["source"]},
            status=Status.WARN)


def _ngc_torch_upgraded(ctx: CheckContext, reported: list[Location | None]) -> Iterator[Finding]:
    """``pip install --upgrade torch`` (or --force-reinstall) on an NGC PyTorch base replaces NGC's torch: FAIL,
    WARN when the torch it installs is a CUDA build of the Spark's major (the image runs, NGC's extensions do not)."""
    from envcheck.checks.g01_cuda_abi import torch_build
    ngc = _ngc_stages(ctx, protected=False)
    for install in ctx.inventory.installs:
        loc = install.location
        if (loc is None or loc.stage not in ngc or "torch" not in install.packages or loc in reported
                or not install.replaces):
            continue
        flag = next(o for o in install.options if o.split("=", 1)[0] in REPLACING_OPTIONS)
        named = next(n for n in install.packages if n in ("torch", "torchvision", "torchaudio"))  # torch: implied
        message = (f"{install.tool} install {flag} {named} on an NGC PyTorch base replaces NGC's torch with an index "
                   "build: the container's own extensions (flash-attn, Transformer Engine, apex) were built against "
                   "the torch it removes")
        torch = next((p for p in ctx.inventory.packages if p.name == "torch" and p.location == loc), None)
        build = torch_build(torch, ctx)[0] if torch is not None else None
        if build is not None and build.flavor == "cuda" and build.cuda_major == ctx.profile.cuda_major:
            # the image still runs on the new torch: what breaks is only what uses NGC's own extensions
            yield NGC_TORCH_REPLACED.finding(message + f"; the torch it installs is a CUDA {build.cuda_major} build, so "
                                             "only code that imports those extensions breaks", loc,
                                             {"options": list(install.options), "command": install.text}, status=Status.WARN)
            continue
        yield NGC_TORCH_REPLACED.finding(message, loc, {"options": list(install.options), "command": install.text})


def _pinned_by_constraint(ctx: CheckContext, name: str) -> bool:
    return name in _constraint_pins(ctx.inventory)


@per_inventory
def _constraint_pins(inventory: Inventory) -> frozenset[str]:
    return frozenset(p.name for p in inventory.packages if p.role in PINS_ONLY and p.version)


def _ngc_stages(ctx: CheckContext, protected: bool = True) -> set[str]:
    """Dockerfile stages (also of those a compose file builds) on an NGC PyTorch container; ``protected``:
    only those whose pip refuses to replace NGC's torch (PIP_CONSTRAINT, NGC 25.01 on)."""
    if ctx.kind != "dockerfile" and not kinds.applies(("dockerfile",), ctx.kind):
        return set()
    from envcheck.knowledge.base_images import pip_constraint_protects, safe_describe
    return {stage for image in ctx.inventory.images if (facts := safe_describe(image.ref)) is not None
            and facts.ngc_torch and (not protected or pip_constraint_protects(facts))
            for stage in image.stages or ((image.stage,) if image.stage else ())}


def _is_unpinned(ctx: CheckContext, pkg: Package, stack: set[str]) -> bool:
    """An ML requirement with no exact version, URL or constraint pin, installed on the target (a repeated
    `pip install torch` that pip answers with "Requirement already satisfied" installs nothing)."""
    from envcheck.checks.g01_cuda_abi import installed_before
    return (pkg.role == "requirement" and pkg.name in stack and not pkg.version and not pkg.url and not pkg.version_from
            and installs_on(pkg, ctx.profile) and not _pinned_by_constraint(ctx, pkg.name)
            and installed_before(ctx, pkg) is None)


def _unpinned(ctx: CheckContext, pkgs: list[Package], stack: set[str]) -> Iterator[Finding]:
    """One finding per file (per Dockerfile stage) naming its unpinned ML packages. Only bare pip counts: a
    stage on an NGC PyTorch container is container-first; one G9-bare-pip-base reports lists them there."""
    ngc = _ngc_stages(ctx)
    folded = {s.stage for s in _bare_pip_stages(ctx) if s.unpinned}
    by_file: dict[tuple[str | None, str | None], list[Package]] = {}
    on_ngc = 0
    for pkg in pkgs:
        if not _is_unpinned(ctx, pkg, stack):
            continue
        stage = pkg.location.stage if pkg.location is not None else None
        if stage is not None and stage in ngc:
            on_ngc += 1
        elif stage is None or stage not in folded:
            by_file.setdefault((pkg.location.path if pkg.location else None, stage), []).append(pkg)
    if on_ngc and not by_file:
        yield UNPINNED.passed(f"{on_ngc} unpinned ML requirement(s) install on an NGC PyTorch container, not bare pip", None)
    for group in by_file.values():
        names = list(dict.fromkeys(f"{p.name}{p.specifier or ''}" for p in group))  # `pip install torch torch`: once
        what = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        yield UNPINNED.finding(f"{what} {'is' if len(names) == 1 else 'are'} not pinned to an exact version",
                               group[0].location, {"packages": [p.name for p in group],
                                                   "specifiers": [p.specifier for p in group],
                                                   "lines": sorted({p.location.line for p in group
                                                                    if p.location and p.location.line})})


def _unsloth(ctx: CheckContext, pkgs: list[Package]) -> Iterator[Finding]:
    """On an NGC base whose pip constraints keep torch, Unsloth's own caps keep transformers and trl in range:
    the advice there is to pin both (Unsloth's Spark recipe), as --no-deps would drop those caps."""
    protected = _ngc_stages(ctx)
    for pkg in pkgs:
        if pkg.name != "unsloth" or pkg.role not in ("requirement", "conda"):
            continue
        if pkg.no_deps:
            yield UNSLOTH_DEPS.passed("unsloth is installed with --no-deps", pkg.location)
            continue
        stage = pkg.location.stage if pkg.location is not None else None
        if stage is not None and stage in protected:
            pinned = {p.name for p in pkgs if p.version and p.location is not None and p.location.stage == stage}
            missing = [name for name in ("transformers", "trl") if name not in pinned]
            if not missing:
                yield UNSLOTH_DEPS.passed("unsloth is installed with its dependencies on an NGC base whose pip constraints keep "
                                          "torch, with transformers and trl pinned exactly", pkg.location)
                continue
            yield UNSLOTH_DEPS.finding(
                f"unsloth is installed with its dependencies and {' and '.join(missing)} not pinned: pip picks whatever "
                "unsloth's caps allow on the day of the build (NGC's pip constraints keep torch)", pkg.location,
                {"package": "unsloth", "unpinned": missing},
                fix=f"Pin {' and '.join(missing)} exactly on the same pip command, as Unsloth's Spark recipe does; "
                    "--no-deps here would drop unsloth's own caps on them.")
            continue
        yield UNSLOTH_DEPS.finding(
            "unsloth is installed with its dependencies (no --no-deps): pip may replace torch, transformers or trl",
            pkg.location, {"package": "unsloth"})


LIVE_CONTAINER = rule(
    "G9-bare-pip", "G9", "The environment is bare pip, not a container", Status.INFO,
    """The original preflight's G9 test: /.dockerenv, /run/.containerenv (podman), container cgroups or
    mounts, KUBERNETES_SERVICE_HOST. In a container the stack was built together; under bare pip Triton,
    xformers and transformers drift independently, so the pins of the installed distributions are
    checked (G9-pin-conflict) and this rule reports which case applies.""",
    "Prefer an NGC or Unsloth container; under bare pip follow NVIDIA's install order, including --no-deps for Unsloth.",
    kinds.LIVE_KINDS)


@check(LIVE_CONTAINER)
def live_container(ctx: CheckContext) -> Iterator[Finding]:
    """PASS inside a container (with the evidence); INFO for bare pip."""
    if (container := ctx.inventory.host.container) is None:
        return
    evidence = list(container.evidence)
    if container.kind:
        yield LIVE_CONTAINER.passed(f"inside a {container.kind} container ({'; '.join(evidence[:2])})", evidence=evidence)
    else:
        yield LIVE_CONTAINER.info("bare pip (no container markers found): installed pins are checked", evidence=evidence)


FLOATING_BASE = rule(
    "G9-floating-base-tag", "G9", "The base image tag moves (latest, nightly, or no tag)", Status.WARN,
    """FROM image:latest, a nightly tag, or no tag at all (Docker then uses latest) rebuilds on whatever was
    pushed last: torch, CUDA and every pin under it can change between two builds of the same Dockerfile,
    so an image that worked yesterday breaks today. An image no registry serves (a one-word name that is not
    one of Docker's official images: vllm-node:latest) was built locally, and changes only when it is rebuilt:
    INFO. One image line shared by several services (a YAML anchor) is one finding.""",
    "Pin a release tag (nvcr.io/nvidia/pytorch:25.11-py3) or a digest (image@sha256:...).", ("dockerfile",),
    policy=True)
BARE_PIP_BASE = rule(
    "G9-bare-pip-base", "G9", "The ML stack is pip-installed on a base without NGC's PyTorch", Status.WARN,
    """The final image starts from a base that carries no NVIDIA-built PyTorch (python, ubuntu, nvidia/cuda, or a
    third-party image, whose torch and pins envcheck cannot see) and pip-installs the ML stack on top. Under bare pip, torch, triton, xformers and transformers drift
    independently and nothing pins them to GB10's SM121; the gotchas' advice is container-first. A stage
    that pins every ML package it installs to an exact version (or a lock) follows the advice for bare pip
    and passes; whether those pins are CUDA 13 builds is G1's question.""",
    """Start from nvcr.io/nvidia/pytorch:25.11-py3 (or newer) and add only what it lacks; if bare pip is
    unavoidable, pin every ML package and install Unsloth last with --no-deps (NVIDIA's order).""",
    ("dockerfile",), policy=True)
UNKNOWN_BASE = rule(
    "G9-base-image-unknown", "G9", "envcheck's table does not know this NVIDIA base image tag", Status.INFO,
    f"""The base is an NVIDIA image (nvcr.io/nvidia/..., nvidia/cuda) whose tag is not in envcheck's dated table
    of NGC releases, so its CUDA, torch and shipped flash-attn/triton are not known. envcheck reports what
    the tag lets it infer (a release from {knowledge.first_cuda13_ngc_release()} on is CUDA 13) instead of guessing silently.""",
    "Check the release notes of that tag, or pin a tag envcheck knows (envcheck/knowledge/ngc_tags.toml).",
    ("dockerfile",))


@check(FLOATING_BASE, BARE_PIP_BASE, UNKNOWN_BASE)
def dockerfile_bases(ctx: CheckContext) -> Iterator[Finding]:
    """G9 over Dockerfile bases: moving tags, bare pip without NGC's torch, NVIDIA tags not in the table."""
    if not ctx.inventory.images:
        return
    from envcheck.knowledge.base_images import in_stage, local_build, safe_describe
    floating = 0
    said: set[tuple[str, int | None, str]] = set()  # one finding per written image line (YAML anchors repeat it)
    # an image line shared by services with and without a compose profile is reported for one that starts by default
    for image in sorted(ctx.inventory.images, key=lambda i: bool(i.location and i.location.branch)):
        if (facts := safe_describe(image.ref)) is None:
            continue
        evidence = {"image": image.ref, "stage": image.stage, "final": image.final}
        if facts.floating:
            floating += 1
            line = (image.location.path, image.location.line, image.ref) if image.location else None
            if line in said:
                continue
            if line is not None:
                said.add(line)
            what = "has no tag (Docker uses latest)" if facts.tag is None else f"uses the moving tag {facts.tag!r}"
            if local_build(image.ref):
                yield FLOATING_BASE.info(f"{in_stage(image.stage)}{image.ref} {what}, but no registry serves that name: it is an "
                                         "image built locally, which changes only when it is rebuilt", image.location, **evidence)
                continue
            yield FLOATING_BASE.finding(f"{in_stage(image.stage)}{image.ref} {what}", image.location, evidence)
        if (facts.family.startswith("ngc") or facts.family == "cuda") and not facts.known and not facts.floating:
            yield UNKNOWN_BASE.info(f"{in_stage(image.stage)}{image.ref}: {facts.note or 'tag not in the table'}", image.location,
                                    **evidence, inferred_cuda=facts.cuda)
    if not floating:
        yield FLOATING_BASE.passed(f"{len(ctx.inventory.images)} base image(s) use fixed tags", None)
    for stage in _bare_pip_stages(ctx):
        if stage.container_first:
            yield BARE_PIP_BASE.passed("the final image builds on an NGC PyTorch container (container-first)", None)
            return
        if not stage.unpinned:
            # Every ML package of the stage is pinned exactly: the gotcha's own advice for unavoidable bare pip.
            yield BARE_PIP_BASE.passed(f"{in_stage(stage.stage)}{', '.join(stage.names)}: bare pip, every ML "
                                       "package pinned to an exact version", stage.location)
            continue
        unpinned = list(dict.fromkeys(p.name for p in stage.unpinned))
        lines = sorted({p.location.line for p in stage.unpinned if p.location and p.location.line})
        yield BARE_PIP_BASE.finding(
            f"{in_stage(stage.stage)}{', '.join(stage.names)} installed by pip/uv/conda on {stage.bases}, {stage.why}; "
            f"not pinned to an exact version: {', '.join(unpinned)}", stage.location,
            {"stage": stage.stage, "packages": stage.names, "bases": stage.bases, "unpinned": unpinned,
             "lines": lines})


@dataclass(frozen=True)
class _BarePipStage:
    """A Dockerfile stage that pip-installs the ML stack, and what G9-bare-pip-base makes of it."""
    stage: str | None
    names: list[str]  # the GPU stack packages it installs
    unpinned: list[Package]  # the ML packages it leaves unpinned (G9-unpinned folds them into this finding)
    location: Location | None
    bases: str
    why: str
    container_first: bool = False


def _bare_pip_stages(ctx: CheckContext) -> list[_BarePipStage]:
    """Dockerfile stages that pip-install the ML stack on a base without (protected) NGC PyTorch; one entry
    with ``container_first`` when the final image's NGC base has pip constraints guarding its torch."""
    if not ctx.inventory.images:
        return []
    from envcheck.knowledge.base_images import pip_constraint_protects, safe_describe, third_party
    protects = [pip_constraint_protects(facts) for image in ctx.inventory.images
                if image.final and (facts := safe_describe(image.ref)) is not None and facts.ngc_torch]
    ngc_final, unprotected = any(protects), not all(protects)
    # the GPU stack: torch and what pulls it (transformers alone does not require torch)
    full_stack = set(_pins()["stack"]["ml_stack"])
    stack = full_stack - {"transformers"}
    pip_installed = [p for p in ctx.inventory.packages
                     if p.name in stack and p.role in ("requirement", "lock", "conda") and not p.installed
                     and p.location is not None and p.location.stage is not None]
    if ctx.kind != "dockerfile":  # compose services, pods: several images, each stage judged on its own
        ngc = _ngc_stages(ctx)
        on_ngc = [p for p in pip_installed if p.location is not None and p.location.stage in ngc]
        pip_installed = [p for p in pip_installed if p not in on_ngc]
        ngc_final = bool(on_ngc) and not pip_installed
    if ngc_final:
        return [_BarePipStage(None, [], [], None, "", "", container_first=True)] if pip_installed else []
    finals = [i for i in ctx.inventory.images if i.final]
    default_why = ("an NGC release from before PIP_CONSTRAINT, whose pip does not stop an install from replacing its torch"
                   if unprotected else "which carries no NGC PyTorch")
    out: list[_BarePipStage] = []
    for stage in dict.fromkeys(p.location.stage for p in pip_installed if p.location is not None):
        in_stage_pkgs = [p for p in pip_installed if p.location is not None and p.location.stage == stage]
        unpinned = [p for p in ctx.inventory.packages if p.location is not None and p.location.stage == stage
                    and _is_unpinned(ctx, p, full_stack)]
        own = [i for i in finals if stage in (i.stages or (i.stage,))]  # the stage's own base (a compose service's image)
        bases = ", ".join(sorted({i.ref for i in own or finals})) or "an unknown base"
        if not unprotected and any(third_party(f) for i in own or finals if (f := safe_describe(i.ref)) is not None):
            # a community image (scitrera/*, vllm/vllm-openai) may ship torch and vLLM: envcheck cannot tell, nor what it pins
            why = ("not an NGC PyTorch container; envcheck cannot see whether this base ships torch and the rest of the "
                   "ML stack, or which versions it pins")
        else:
            why = default_why
        # the complaint is the unpinned packages: it sits at their line, not at an exact pin's (torch==2.10.0 from cu130)
        where = next((p.location for p in unpinned if p.location is not None), in_stage_pkgs[0].location)
        out.append(_BarePipStage(stage, sorted({p.name for p in in_stage_pkgs}), unpinned, where, bases, why))
    return out


IMAGE_FLOATING_TAG = rule(
    "G9-image-floating-tag", "G9", "The image is named by a moving tag (latest, nightly)", Status.WARN,
    """The checked image was named by `latest`, a nightly tag or no tag at all. What envcheck judged is what
    the tag points to today; the next pull can bring another torch, CUDA or set of pins. The finding names the
    digest that was checked, so it can be pinned.""",
    "Pin the digest that was checked (image@sha256:...) or a release tag (nvcr.io/nvidia/pytorch:25.11-py3).",
    ("image",), policy=True)
IMAGE_BARE_PIP = rule(
    "G9-image-bare-pip", "G9", "The image pip-installs the ML stack without NGC's PyTorch", Status.WARN,
    """The image's build history installs torch or the packages that pull it (triton, xformers, vllm, ...) with
    pip/uv/conda, and the image is not an NGC PyTorch container (no NVIDIA_PYTORCH_VERSION). Under bare pip
    these drift independently and nothing pins them to GB10's SM121.""",
    """Build on nvcr.io/nvidia/pytorch:25.11-py3 (or newer) and add only what it lacks; otherwise pin every ML
    package and install Unsloth last with --no-deps (NVIDIA's order).""",
    ("image",), policy=True)


@check(IMAGE_FLOATING_TAG, IMAGE_BARE_PIP)
def image_drift(ctx: CheckContext) -> Iterator[Finding]:
    """G9 over an image: a moving tag, and an ML stack pip-installed (per its history) without NGC's torch."""
    if (facts := ctx.inventory.host.image) is None:
        return
    ref, tag = facts.ref or "", facts.tag
    if facts.source == "registry" and "@" not in ref:
        where = Location(ref)
        if tag in ("latest", "nightly") or (tag or "").startswith(("latest-", "nightly-")):
            pin = f"{ref.rsplit(':', 1)[0]}@{facts.digest}" if facts.digest else ""
            yield IMAGE_FLOATING_TAG.finding(f"{ref} is a moving tag" + (f"; what was checked is {pin}" if pin else ""),
                                             where, {"tag": tag, "digest": facts.digest})
        else:
            yield IMAGE_FLOATING_TAG.passed(f"{ref} uses the release tag {tag!r}", where, tag=tag)
    if facts.platform_found is False:
        return
    stack = set(_pins()["stack"]["ml_stack"]) - {"transformers"}
    history = [p for p in ctx.inventory.packages if p.name in stack and not p.installed and p.role != "installed"
               and p.location is not None and (p.location.member or "").startswith("history")]
    if not history:
        return
    ngc = ctx.inventory.env_value("NVIDIA_PYTORCH_VERSION") or (facts.labels or {}).get("com.nvidia.pytorch.version")
    names = sorted({p.name for p in history})
    if ngc:
        yield IMAGE_BARE_PIP.passed(f"{', '.join(names)} installed on an NGC PyTorch container ({ngc})", history[0].location)
    else:
        yield IMAGE_BARE_PIP.finding(f"{ref}: the build history pip-installs {', '.join(names)}, and the image carries no NGC PyTorch",
                                     history[0].location, {"packages": names})


RESOLVE_CONFLICT = rule(
    "G9-resolve-conflict", "G9", "The resolver refuses the set of requirements", Status.FAIL,
    """uv, resolving these requirements for the target (linux/aarch64, the profile's Python), found no set of
    versions that satisfies them all: one requirement's metadata pins another package to a version the file
    excludes (xformers 0.0.32.post2 requires torch==2.8.0 next to torch==2.14.1). pip would stop the same way.""",
    "Change one of the two requirements the message names: usually pick the release of the dependent package "
    "built for your torch (its Requires-Dist on the index says which).",
    (*kinds.REQUIREMENT_FILES, "dockerfile"))


@check(RESOLVE_CONFLICT)
def resolver_conflicts(ctx: CheckContext) -> Iterator[Finding]:
    """G9 over ``--resolve``: the resolver's own refusal, in its words."""
    for r in ctx.inventory.resolved:
        if r.kind == "conflict":
            yield RESOLVE_CONFLICT.finding(f"no version set satisfies these requirements on {ctx.profile.os}/{ctx.profile.machine}: {r.reason}",
                                           r.location, {"resolver": "uv", "reason": r.reason})
