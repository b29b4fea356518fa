"""ARCH: binaries, wheels or images built for the wrong CPU architecture (x86_64 instead of aarch64)."""

from __future__ import annotations

from collections.abc import Iterator

from envcheck import kinds
from envcheck.fixes import dockerfile_fixes
from envcheck.inspect.wheel_tags import parse_wheel_name
from envcheck.knowledge import wheels
from envcheck.knowledge.builds import installs_on, is_pypi, torch_index, wheels_only_index
from envcheck.knowledge.wheel_platforms import platform_verdict
from envcheck.model import Binary, Finding, Location, Package, Status
from envcheck.rules import CheckContext, check, rule

WHEEL_PLATFORM = rule(
    "ARCH-wheel-platform", "ARCH", "A wheel cannot install on linux/aarch64", Status.FAIL,
    """A wheel named or locked for this target carries only platform tags of another CPU or OS
    (manylinux_x86_64, win_amd64, macosx). pip on a Spark refuses it, or, for a lock file whose package has
    only an sdist besides, builds it from source. A package installed by name from PyPI (pinned, a range or a bare
    name) fails the same way when no release its specifier allows publishes a linux/aarch64 file at all, no wheel
    and no sdist (knowledge/wheels.toml: onnxruntime-gpu up to 1.28.0, decord): pip skips releases without one and
    takes the newest that has one, so a bare name whose older releases ship aarch64 wheels installs. It fails too
    when the release pip takes has only a source archive whose build is documented to fail on aarch64
    (knowledge/cuda_extensions.toml, fails_on_aarch64: pillow-simd compiles x86 SSE4/AVX2 code).""",
    "Use a release that publishes manylinux aarch64 wheels (or build one for linux/aarch64), or drop the x86_64-only URL.",
    (*kinds.DEPENDENCY_FILES, "dockerfile", "wheel", *kinds.ENVIRONMENTS))
# The fix for a package installed by name (no URL to drop), and for one with no linux/aarch64 file in any release.
_FIX_BY_NAME = "Use a release that publishes manylinux aarch64 wheels, or build one for linux/aarch64 and install that file."
_FIX_NEVER = ("No recorded release of {name} publishes a linux/aarch64 file: build a wheel for linux/aarch64 from its "
              "source repository and install that file, or replace the package.")


@check(WHEEL_PLATFORM)
def wheel_platforms(ctx: CheckContext) -> Iterator[Finding]:
    """ARCH over wheel URLs in requirements and the wheel sets of lock files."""
    checked = 0
    failed = False
    for pkg in ctx.inventory.packages:
        if not pkg.url or not installs_on(pkg, ctx.profile) or (wheel := parse_wheel_name(pkg.url)) is None:
            continue
        checked += 1
        ok, why = platform_verdict(wheel.platforms, ctx.profile)
        if not ok:
            failed = True
            yield WHEEL_PLATFORM.finding(f"{wheel.filename}: {why}", pkg.location,
                                         {"wheel": wheel.filename, "platforms": list(wheel.platforms)})
    resolved = {r.name for r in ctx.inventory.resolved}
    for pkg in ctx.inventory.packages:  # by name from PyPI: what pip picks has no aarch64 file, or one that cannot build
        if (not _only_pypi(pkg, ctx) or pkg.url or pkg.installed or pkg.role != "requirement"
                or not wheels.known(pkg.name) or pkg.name in resolved or not installs_on(pkg, ctx.profile)):
            continue
        if (found := _by_name(pkg.name, pkg.specifier or "", ctx)) is not None:
            checked += 1
            failed = failed or pkg.scope is None
            # an opt-in extra or group is not what the project installs (a project may split such a package off
            # for ARM): told, at INFO
            yield WHEEL_PLATFORM.finding(found[0], pkg.location, {"package": pkg.name, "specifier": pkg.specifier, "source": found[1]},
                                         fix=found[2], status=Status.INFO if pkg.scope else None)
    locked_fail: list[Finding] = []
    skipped = {(p.name, p.version) for p in ctx.inventory.packages if p.role == "lock" and not installs_on(p, ctx.profile)}
    for wheel_set in ctx.inventory.wheels:
        if (wheel_set.name, wheel_set.version) in skipped:
            continue  # a universal lock's x86_64-only branch: not installed on this platform
        platforms = tuple(sorted({t.rsplit("-", 1)[-1] for t in wheel_set.tags if t != "sdist"}))
        if not platforms:
            continue
        checked += 1
        ok, why = platform_verdict(platforms, ctx.profile)
        if ok:
            continue
        failed = True
        evidence = {"package": wheel_set.name, "version": wheel_set.version, "platforms": list(platforms)}
        if "sdist" in wheel_set.tags:
            yield WHEEL_PLATFORM.finding(
                f"{wheel_set.name} {wheel_set.version}: no {ctx.profile.machine} wheel ({why}); pip will build the sdist from source",
                wheel_set.location, evidence, status=Status.WARN)
        else:
            locked_fail.append(WHEEL_PLATFORM.finding(f"{wheel_set.name} {wheel_set.version}: {why}", wheel_set.location, evidence))
    if len(locked_fail) > 5:
        # A lock resolved on another machine: one finding that says so, not dozens of identical ones.
        names = [str(f.evidence["package"]) for f in locked_fail]
        first = locked_fail[0].location
        yield WHEEL_PLATFORM.finding(
            f"{len(names)} locked packages have no {ctx.profile.machine} wheel (the lock was resolved for "
            f"another platform): {', '.join(names[:8])}{' ...' if len(names) > 8 else ''}",
            first, {"packages": names, "lines": sorted({f.location.line for f in locked_fail if f.location and f.location.line})})
    else:
        yield from locked_fail
    if checked and not failed:
        yield WHEEL_PLATFORM.passed(f"{checked} wheel(s) install on {ctx.profile.docker_platform}", None)


# What PyTorch's wheel indexes (download.pytorch.org/whl/cu130) serve besides torch: its partners; for any other
# package such an index beside PyPI changes nothing (inferred from the index pages; builds.torch_index).
_TORCH_PARTNERS = ("torch", "torchvision", "torchaudio", "torchcodec", "torchao", "triton", "pytorch-triton", "xformers",
                   "fbgemm-gpu", "torchrec", "torchtext", "torchdata")


def _only_pypi(pkg: Package, ctx: CheckContext) -> bool:
    """Whether ``pkg`` can come only from PyPI: no index of its own but PyPI, and every index of the input PyPI's or
    a PyTorch wheel index that does not serve it (another index or find-links page may hold an aarch64 wheel)."""
    if pkg.index:
        return is_pypi(pkg.index)
    return all(is_pypi(i.url) or (torch_index(i.url) and pkg.name not in _TORCH_PARTNERS) for i in ctx.inventory.indexes)


def _by_name(name: str, specifier: str, ctx: CheckContext) -> tuple[str, str, str] | None:
    """(message, source, fix) when what pip picks on the target for ``name`` + ``specifier`` installs nothing: no
    release it allows has a file for the target, or the one it picks has only a source archive whose build fails there
    (knowledge/cuda_extensions.toml ``fails_on_aarch64``)."""
    from envcheck.knowledge import load
    pick = wheels.linux_aarch64_pick(name, specifier)
    if pick is None:
        return None
    rel, skipped = pick
    target, asked = f"{ctx.profile.os}/{ctx.profile.machine}", f"{name}{specifier}" if specifier else f"{name} (not pinned)"
    if rel is None:
        newest, ends = skipped[0], wheels.window(name)
        inferred = f"; releases before {ends[0].version} inferred from the recorded ones" if ends and skipped[-1].inferred else ""
        fix = _FIX_BY_NAME if any(r.aarch64 != "none" for r in wheels.releases(name)) else _FIX_NEVER.format(name=name)
        return (f"{asked}: no release this allows publishes a {target} file (no wheel, no sdist; {newest.version} has "
                f"{'x86_64 wheels' if newest.x86_64 else 'none either'}{inferred}): pip cannot install it on a Spark",
                newest.where, fix)
    fails = ({row["name"]: row for row in load("cuda_extensions").get("fails_on_aarch64", [])}.get(name)
             if ctx.profile.machine == "aarch64" else None)
    if rel.aarch64 == "sdist" and fails is not None:
        return (f"{asked}: pip takes {rel.version}, which has no {target} wheel, and builds its source archive, whose build "
                f"{fails['reason']}: the install fails on a Spark", f"{rel.where}; {fails['source']}", fails["fix"])
    return None


ELF_MACHINE = rule(
    "ARCH-elf-machine", "ARCH", "A binary is built for another CPU architecture", Status.FAIL,
    """The ELF header's e_machine of this file is not the target's CPU (aarch64 on a DGX Spark): an
    x86_64 extension or library cannot be loaded there ("wrong ELF class" / "cannot open shared object
    file"), usually because a wheel, venv or image was built on an x86_64 machine and copied over. A pure-Python
    wheel (platform 'any') that bundles helpers for several machines (debugpy) loads only its own machine's one.""",
    "Install the linux/aarch64 (manylinux_*_aarch64) build of the package, or build the image for linux/arm64.",
    kinds.BINARY_KINDS)


@check(ELF_MACHINE)
def binary_machines(ctx: CheckContext) -> Iterator[Finding]:
    """ARCH over binaries: one FAIL per distribution (or loose file) with binaries for another CPU."""
    binaries = [b for b in ctx.inventory.binaries if b.machine != "cuda"]  # standalone cubins are GPU code
    if not binaries:
        return
    want = ctx.profile.machine
    # A pure-Python wheel (platform 'any') that bundles helpers for several machines (debugpy's attach helpers)
    # loads the one for the machine it runs on: the others are no fault.
    pure = {w.name for w in ctx.inventory.wheels if w.tags and all(t.endswith("-any") for t in w.tags)}
    wrong: dict[str, list[Binary]] = {}
    for b in binaries:
        helper = b.distribution in pure and (_helper_for_other_machines(b) or
                                             any(x.machine == want for x in binaries if x.distribution == b.distribution))
        if b.machine != want and not helper:
            wrong.setdefault(b.distribution or b.path, []).append(b)
    for owner, group in sorted(wrong.items()):
        machines = sorted({b.machine for b in group})
        first = group[0]
        count = f"{len(group)} binaries" if len(group) > 1 else "binary"
        where = f"{owner}: {count}" if first.distribution else owner
        # Name a file where the owner is a distribution; a loose file is already named.
        example = f" (e.g. {first.path})" if len(group) > 1 else f" ({first.path})" if first.distribution else ""
        yield ELF_MACHINE.finding(
            f"{where} built for {', '.join(machines)}, not {want}{example}", first.location,
            {"distribution": first.distribution, "machines": machines, "binaries": [b.path for b in group][:20]},
        )
    if not wrong:
        yield ELF_MACHINE.passed(f"{len(binaries)} binaries are built for {want}", None)


def _helper_for_other_machines(b: Binary) -> bool:
    """A bundled helper whose name says which machine it is for (attach_linux_amd64.so, inject_dll_x86.exe)."""
    name = b.path.rsplit("/", 1)[-1].lower()
    return any(word in name for word in ("amd64", "x86_64", "x86", "i386", "i686", "win32", "arm64", "aarch64"))


BASE_PLATFORM = rule(
    "ARCH-base-platform", "ARCH", "A build stage runs on another CPU architecture", Status.FAIL,
    """FROM --platform=linux/amd64 (or another non-arm64 platform), or a base image that is published for
    linux/amd64 only (pytorch/pytorch on Docker Hub), makes the stage an x86_64 image. On a Spark it runs
    under emulation at best, and every wheel and binary it installs is x86_64. A stage whose output the
    final image copies in is a FAIL too (what it builds is x86_64); a stage that is not part of the built
    image at all is a WARN, as every finding there is one level lower (docs/dockerfiles.md).""",
    """Drop --platform (or use --platform=$BUILDPLATFORM / linux/arm64) and start from a multi-arch base such as
    nvcr.io/nvidia/pytorch:25.11-py3 or nvidia/cuda:13.0.x.""",
    ("dockerfile",), autofix=dockerfile_fixes.base_platform)


# Where a non-Dockerfile input asks for another platform, in its own words.
_PLATFORM_FROM = {"compose": "the service's platform:", "kubernetes": "the pod is scheduled on kubernetes.io/arch amd64 nodes only",
                  "shell": "docker run --platform", "notebook": "docker run --platform"}


@check(BASE_PLATFORM)
def base_platforms(ctx: CheckContext) -> Iterator[Finding]:
    """ARCH over Dockerfile FROM lines: a non-arm64 --platform or an amd64-only base image."""
    from envcheck.knowledge.base_images import in_stage, is_arm64, safe_describe
    want = ctx.profile.docker_platform
    pods: set[str] = set()  # Kubernetes: one pod's amd64 scheduling is one cause, however many containers it has
    for image in ctx.inventory.images:
        facts = safe_describe(image.ref)
        evidence = {"image": image.ref, "stage": image.stage, "platform": image.platform, "final": image.final}
        tail = "" if image.copied_at is None else f" (the final image copies what it builds: COPY --from on line {image.copied_at})"
        if is_arm64(image.platform) is False and ctx.kind != "dockerfile":  # compose `platform:`, Kubernetes amd64 scheduling
            pod = (image.stage or "").rpartition("/")[0] if ctx.kind == "kubernetes" else ""
            if pod and pod in pods:
                continue
            pods.add(pod)
            yield BASE_PLATFORM.finding(f"{image.ref} is asked for as {image.platform} ({_PLATFORM_FROM.get(ctx.kind, 'platform')}), "
                                        f"not {want}", image.location, evidence)
        elif is_arm64(image.platform) is False:
            yield BASE_PLATFORM.finding(f"{in_stage(image.stage)}FROM --platform={image.platform} builds a {image.platform} stage, "
                                        f"not {want}{tail}", image.location, evidence)
        elif facts is not None and facts.amd64_only:
            what = (f"{facts.repository}:{facts.tag} is a linux/amd64 image: {facts.platform_note}" if facts.platform_note
                    else f"{facts.repository} publishes linux/amd64 images only")
            yield BASE_PLATFORM.finding(f"{in_stage(image.stage)}{what}{tail}", image.location,
                                        {**evidence, "source": facts.source})
        elif image.final and (is_arm64(image.platform) or (facts is not None and facts.arm64)):
            yield BASE_PLATFORM.passed(f"{in_stage(image.stage)}{image.ref} has a {want} image", image.location, **evidence)


IMAGE_NO_PLATFORM = rule(
    "ARCH-image-no-arm64", "ARCH", "The image has no linux/arm64 variant", Status.FAIL,
    """The image's index (manifest list) offers no child for the profile's platform (linux/arm64 on a
    Spark). docker pull on a Spark fails with "no matching manifest for linux/arm64/v8", or, with
    --platform linux/amd64, runs x86_64 code under emulation, where CUDA does not work at all. The message
    lists the platforms the image does offer.""",
    """Use a tag that publishes linux/arm64 (NGC's pytorch, vllm and cuda images do), or build the image for
    linux/arm64 yourself (docker buildx build --platform linux/arm64).""",
    ("image",))
IMAGE_CONFIG_ARCH = rule(
    "ARCH-image-config", "ARCH", "The image config is for another CPU architecture", Status.FAIL,
    """The image config (what docker inspect shows as Architecture) says the image holds binaries for another
    CPU (amd64, ppc64le, ...) than the Spark's arm64. A single-platform image built on an x86_64 machine is
    the usual cause; the index, if any, may even label it arm64 while the config says otherwise.""",
    """Rebuild the image for linux/arm64 (docker buildx build --platform linux/arm64) or pick an arm64 tag.""",
    ("image",))


@check(IMAGE_CONFIG_ARCH, IMAGE_NO_PLATFORM)
def image_platform(ctx: CheckContext) -> Iterator[Finding]:
    """ARCH over an image: the index has a linux/arm64 child, and the selected config says arm64."""
    if (facts := ctx.inventory.host.image) is None:
        return
    want = facts.platform or ctx.profile.docker_platform
    ref = facts.ref or ""
    platforms = list(facts.platforms or ())
    if facts.platform_found is False:
        offers = ", ".join(platforms) or "no platforms at all"
        yield IMAGE_NO_PLATFORM.finding(f"{ref} has no {want} image; it offers {offers}",
                                        Location(ref) if ref else None,
                                        {"platforms": platforms, "wanted": want, "digest": facts.digest})
        return
    if (arch := facts.architecture) is None:
        return
    want_os, _, want_arch = want.partition("/")
    found = f"{facts.os}/{arch}" + (f"/{facts.variant}" if facts.variant else "")
    location = Location(ref, member="config") if ref else None
    if arch != want_arch.split("/")[0] or facts.os not in (None, want_os):
        yield IMAGE_CONFIG_ARCH.finding(f"{ref}: the image config is {found}, not {want}", location,
                                        {"config_platform": found, "wanted": want, "platforms": platforms})
    else:
        yield IMAGE_CONFIG_ARCH.passed(f"{ref} has a {found} image config", location, platforms=platforms)


RESOLVE_NO_FILE = rule(
    "ARCH-resolve-no-file", "ARCH", "A resolved package has no file that installs on linux/aarch64", Status.FAIL,
    """The version the resolver picked (or the lock pins) publishes no wheel for linux/aarch64 and no source
    archive: pip on a Spark stops with "no matching distribution" (and a docker build fails). Seen with
    lock files written on x86_64 CI and with releases that ship only x86_64 and Windows wheels.""",
    "Pick a version that publishes a manylinux aarch64 wheel (check the project's files on the index), or re-lock for the target: "
    "uv pip compile --python-platform aarch64-manylinux_2_39.", (*kinds.DEPENDENCY_FILES, "dockerfile"))
RESOLVE_SOURCE_BUILD = rule(
    "ARCH-resolve-source-build", "ARCH", "A resolved package is built from source on the Spark", Status.FAIL,
    """Only a source archive (sdist) fits linux/aarch64 for the version the resolver picked, so pip builds it on
    the Spark. For packages with CUDA extensions (xformers, flash-attn, apex ...) that is an nvcc build of hours
    that needs a matching torch and CUDA toolkit, and it often fails; the finding is FAIL for them and WARN for
    other packages with compiled code (wheels for other machines, none for this one: a build toolchain is needed,
    and the build may still fail). A project that publishes no wheel for any machine (pure Python: langdetect,
    openai-whisper) or a git/path source builds the same anywhere: INFO.""",
    "Pin a version that publishes a manylinux aarch64 wheel, take the package from an NGC container, or build the wheel "
    "once for linux/aarch64 and install that file.", (*kinds.DEPENDENCY_FILES, "dockerfile"))


@check(RESOLVE_NO_FILE, RESOLVE_SOURCE_BUILD)
def resolved_files(ctx: CheckContext) -> Iterator[Finding]:
    """ARCH over ``--resolve`` results: no file for the target, or only an sdist (a source build)."""
    from envcheck.knowledge import load
    cuda_ext = {row["name"]: row for row in load("cuda_extensions").get("package", [])}
    if ctx.profile.machine == "aarch64":  # a source build that fails on aarch64 whatever else it needs (pillow-simd)
        cuda_ext |= {row["name"]: row for row in load("cuda_extensions").get("fails_on_aarch64", [])}
    files = [r for r in ctx.inventory.resolved if r.kind in ("wheel", "sdist", "none")]
    if not files:
        return
    bad = 0
    target = f"{ctx.profile.os}/{ctx.profile.machine}"
    for r in files:
        evidence = {"package": r.name, "version": r.version, "file": r.filename, "url": r.url, "sha256": r.sha256}
        if r.kind == "none":
            bad += 1
            yield RESOLVE_NO_FILE.finding(f"{r.name} {r.version}: no file installs on {target} ({r.reason})",
                                          r.location, evidence)
        elif r.kind == "sdist":
            row = cuda_ext.get(r.name)
            if row is not None:
                bad += 1
                yield RESOLVE_SOURCE_BUILD.finding(
                    f"{r.name} {r.version}: only the source archive {r.filename} fits {target}, so pip "
                    f"builds it on the Spark, and it {row['reason']}", r.location,
                    {**evidence, "cuda_extension": row["source"]})
            elif r.reason.startswith(("no wheel for any machine", "built from a source tree")):
                # pure Python or a source tree: building it needs no machine-specific toolchain
                yield RESOLVE_SOURCE_BUILD.info(
                    f"{r.name} {r.version or ''}: installed from source ({r.reason}); that builds the same "
                    f"on {target}",
                    r.location, **evidence)
            else:
                bad += 1
                yield RESOLVE_SOURCE_BUILD.finding(
                    f"{r.name} {r.version}: only the source archive {r.filename} fits {target}: pip builds "
                    "it on the Spark", r.location, evidence, status=Status.WARN)
    if not bad:
        yield RESOLVE_NO_FILE.passed(f"all {len(files)} resolved packages have a wheel for {target}", None)


NO_AARCH64_WHEEL = rule(
    "ARCH-no-aarch64-wheel", "ARCH", "A CUDA extension package publishes no linux/aarch64 wheel", Status.WARN,
    """The package is installed by name from the index, and envcheck's knowledge says the releases asked for ship no
    linux/aarch64 wheel (knowledge/cuda_extensions.toml, the rows with aarch64_wheels = false; or
    knowledge/wheels.toml says the release pip takes for the pin, range or bare name has only a source archive for
    aarch64, beside CUDA wheels for x86_64 as vLLM before 0.10.2, or for a package of cuda_extensions.toml as natten,
    mmcv or torch-scatter; flash-attn is G2-flash-attn-build's): on a Spark pip downloads the source archive and compiles its CUDA kernels with nvcc against the installed torch. That
    needs a CUDA toolkit and a matching torch in the build environment and takes long; without
    TORCH_CUDA_ARCH_LIST it may build no code for sm_121. A FAIL when the package may come only from PyTorch's
    wheel index (a uv source binding it there), which holds no source archives: there is nothing to build, the
    install fails. Judged without the network; `--resolve` reads the index itself (ARCH-resolve-source-build)
    and then takes over.""",
    "Install a wheel built for linux/aarch64 (a file you built once, or a container that ships it), set "
    "TORCH_CUDA_ARCH_LIST=12.1 for the build, or drop the package.",
    (*kinds.REQUIREMENT_FILES, "dockerfile"))
# The rule's fix for a pin of x86_64-only releases, and what can replace a package where something does.
_FIX_NEWER = ("Pin a release that ships a linux/aarch64 CUDA {major} wheel ({first} is the first), or "
              + NO_AARCH64_WHEEL.fix[0].lower() + NO_AARCH64_WHEEL.fix[1:])
_INSTEAD = {"xformers": "PyTorch SDPA covers most xformers uses"}
_OWN_RULE = {"flash-attn": "G2-flash-attn-build"}  # source builds another rule judges (one finding per cause)


@check(NO_AARCH64_WHEEL)
def no_aarch64_wheel(ctx: CheckContext) -> Iterator[Finding]:
    """ARCH offline: packages known to publish no linux/aarch64 wheel, installed by name (a source build on the Spark)."""
    from envcheck.knowledge import load
    extensions = {row["name"]: row for row in load("cuda_extensions").get("package", [])}
    rows = {name: row for name, row in extensions.items() if row.get("aarch64_wheels") is False}
    resolved = {r.name for r in ctx.inventory.resolved}
    for pkg in ctx.inventory.packages:
        if pkg.installed or pkg.url or pkg.role != "requirement" or pkg.name in resolved or not installs_on(pkg, ctx.profile):
            continue
        platform = f"{ctx.profile.os}/{ctx.profile.machine}"
        if (row := rows.get(pkg.name)) is not None and pkg.index and (only := wheels_only_index(pkg.index)):
            yield NO_AARCH64_WHEEL.finding(
                f"{pkg.name}{pkg.specifier or ''} comes only from {pkg.index}, which holds wheels and no source "
                f"archives, and no release ships a {platform} wheel: nothing there can be installed on the Spark",
                pkg.location, {"package": pkg.name, "specifier": pkg.specifier, "index": pkg.index,
                               "source": f"{row['source']}; {only}"}, status=Status.FAIL, fix=_fix_for(pkg.name, _UNBIND))
        elif row is not None:
            yield NO_AARCH64_WHEEL.finding(
                f"{pkg.name}{pkg.specifier or ''}: no release on the index ships a {platform} wheel, so pip builds it "
                f"from source on the Spark, and it {row['reason']}", pkg.location,
                {"package": pkg.name, "specifier": pkg.specifier, "source": row["source"]}, fix=_fix_for(pkg.name))
        elif (rel := _sdist_pick(pkg, ctx)) is not None and rel.x86_64_cuda not in (None, "none"):
            major = ctx.profile.cuda_major
            first = next((r.version for r in wheels.releases(pkg.name) if r.aarch64 == "wheel" and r.aarch64_cuda == str(major)), None)
            yield NO_AARCH64_WHEEL.finding(
                f"{pkg.name}{pkg.specifier}: {_picks(pkg, rel)} ships a CUDA {rel.x86_64_cuda} wheel for x86_64 and "
                f"only a source archive for {platform}, so pip compiles its CUDA kernels on the Spark", pkg.location,
                {"package": pkg.name, "specifier": pkg.specifier, "source": rel.where},
                fix=_FIX_NEWER.format(major=major, first=f"{pkg.name} {first}") if first else _fix_for(pkg.name))
        elif rel is not None and (row := extensions.get(pkg.name)) is not None:
            yield NO_AARCH64_WHEEL.finding(
                f"{pkg.name}{pkg.specifier}: {_picks(pkg, rel)} publishes only a source archive for {platform}"
                f"{'' if rel.x86_64 else ' (and no wheel for linux/x86_64 either)'}, so pip builds it on the Spark, and it "
                f"{row['reason']}", pkg.location,
                {"package": pkg.name, "specifier": pkg.specifier, "source": f"{rel.where}; {row['source']}"}, fix=_fix_for(pkg.name))


def _picks(pkg: Package, rel: wheels.Release) -> str:
    return f"{rel.version}, the release pip takes for it," if pkg.specifier != f"=={rel.version}" else "this release"


_UNBIND = ("Limit the index binding to x86_64 (marker platform_machine == 'x86_64') and give linux/aarch64 a wheel "
           "built for it or the package's source archive from PyPI, or drop the package.")


def _fix_for(name: str, fix: str = "") -> str:
    """The rule's fix (or ``fix``), with what replaces the package where something does (xformers: PyTorch SDPA)."""
    fix, instead = fix or NO_AARCH64_WHEEL.fix, _INSTEAD.get(name)
    return fix if instead is None else f"{fix.removesuffix('.')} ({instead})."


def _sdist_pick(pkg: Package, ctx: CheckContext) -> wheels.Release | None:
    """The release pip picks on the target (knowledge/wheels.toml) when it has only a source archive there and the
    package can come only from PyPI (another index may hold a wheel), unless its build is known to fail
    (ARCH-wheel-platform's)."""
    from envcheck.knowledge import load
    name = pkg.name
    if not _only_pypi(pkg, ctx) or name in _OWN_RULE:
        return None
    if any(row["name"] == name for row in load("cuda_extensions").get("fails_on_aarch64", [])):
        return None
    pick = wheels.linux_aarch64_pick(name, pkg.specifier) if ctx.profile.machine == "aarch64" else None
    return pick[0] if pick is not None and pick[0] is not None and pick[0].aarch64 == "sdist" else None


HOST_MACHINE = rule(
    "ARCH-host-machine", "ARCH", "The machine read is not the target platform", Status.WARN,
    """preflight read a machine whose CPU architecture is not the profile's: an x86_64 workstation or CI runner
    is not a DGX Spark (aarch64, GB10). Its readings describe that machine; the Spark-specific verdicts (GPU,
    unified memory, wheels that fit aarch64) do not carry over. (`envcheck container` judges the image's own
    binaries for the Spark instead: ARCH-elf-machine.)""",
    "Run `envcheck preflight` on the Spark itself (or check files and images, which are judged for the Spark from anywhere).",
    ("host",))


@check(HOST_MACHINE)
def host_machine(ctx: CheckContext) -> Iterator[Finding]:
    """ARCH over a live read: the probed interpreter's machine against the profile's."""
    python = ctx.inventory.host.python
    machine = python.machine if python is not None else None
    if not machine:
        return
    wanted = ctx.profile.machine
    if machine.lower() in ((wanted, "arm64") if wanted == "aarch64" else (wanted,)):
        yield HOST_MACHINE.passed(f"this machine is {machine}, as a {ctx.profile.name} is", None)
        return
    smi = ctx.inventory.host.nvidia_smi
    gpu = "its own GPU" if smi is not None and smi.status == "ok" else "no NVIDIA GPU"
    yield HOST_MACHINE.finding(
        f"this machine is {machine} with {gpu}, not a {ctx.profile.name} ({ctx.profile.os}/{wanted}, GB10): "
        "its readings describe this machine, not a Spark", None, {"machine": machine, "profile_machine": wanted})
