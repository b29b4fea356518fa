"""G2: flash-attn on aarch64/sm_121 (no wheel: pip builds it for hours, or fails; NGC ships one), and Unsloth
silently preferring it over a requested SDPA."""

from __future__ import annotations

import re
from collections.abc import Iterator

from envcheck import kinds
from envcheck.fixes import dockerfile_fixes
from envcheck.inspect.wheel_tags import parse_wheel_name
from envcheck.knowledge.builds import installs_on
from envcheck.knowledge.wheel_platforms import platform_verdict
from envcheck.model import PINS_ONLY, Finding, Package, Status
from envcheck.rules import CheckContext, check, rule

OVERRIDE = ("To force SDPA under Unsloth, set unsloth.models._utils.HAS_FLASH_ATTENTION = False after "
            "importing unsloth and before from_pretrained (a monkeypatch of Unsloth's flash-attn detection); "
            "attn_implementation='sdpa' alone is ignored.")

FLASH_ATTN_BUILD = rule(
    "G2-flash-attn-build", "G2", "flash-attn would be built from source by pip", Status.FAIL,
    """flash-attn publishes no aarch64 wheels, so pip compiles it from source: two to three hours on a
    Spark, often ending in a failure or an apparent hang. NGC PyTorch containers already ship a working
    build. A wheel whose Requires-Dist names flash-attn makes pip build it too. An install whose failure the
    script ignores (`|| true`, `|| echo ...`) is a WARN: the hours are spent, then the image builds without
    flash-attn. So is a wheel file whose name envcheck cannot read
    (a glob: flash_attn-*.whl): no official aarch64/sm_121 build exists, so it works only if it was built
    for aarch64 with sm_120/sm_121 code (a wheel built for another GPU fails with 'no kernel image').""",
    "Drop flash-attn and use PyTorch SDPA (attn_implementation='sdpa'), or use an NGC PyTorch container, which ships flash-attn built for SM121; if you have a prebuilt aarch64 wheel, install that file explicitly.",
    (*kinds.DEPENDENCY_FILES, "dockerfile", "wheel"),
    autofix=dockerfile_fixes.flash_attn_build)
FLASH_ATTN_PRESENT = rule(
    "G2-flash-attn-present", "G2", "flash-attn is installed", Status.INFO,
    """flash-attn is already installed (a freeze, an environment, an NGC image). That is not a failure,
    but libraries that auto-detect it (Unsloth) will use it even when another attention implementation is
    asked for.""",
    OVERRIDE,
    ("requirements", *kinds.LOCK_FILES, *kinds.ENVIRONMENTS))
UNSLOTH_SDPA = rule(
    "G2-unsloth-prefers-flash-attn", "G2",
    "Unsloth will use flash-attn even when SDPA is asked for", Status.WARN,
    """Unsloth checks HAS_FLASH_ATTENTION (flash_attn importable and compute capability >= 8) and then
    uses flash-attn, discarding attn_implementation='sdpa'. With flash-attn present next to Unsloth, an
    SDPA request is silently ignored.""",
    OVERRIDE,
    ("requirements", *kinds.LOCK_FILES, "dockerfile", *kinds.ENVIRONMENTS))


# flash-attn's upstream wheels name the CUDA major and torch they were built for: 2.8.3+cu12torch2.9cxx11abiTRUE
_UPSTREAM_BUILD = re.compile(r"\+cu(\d{2})torch\d")


def _older_cuda_wheel(pkg: Package, ctx: CheckContext) -> str | None:
    """The filename of an aarch64 flash-attn wheel built for an older CUDA major than the target's (upstream's)."""
    wheel = parse_wheel_name(pkg.url) if pkg.url else None
    m = _UPSTREAM_BUILD.search(wheel.version) if wheel is not None else None
    return wheel.filename if wheel is not None and m and int(m.group(1)) < ctx.profile.cuda_major else None


def _prebuilt_aarch64(pkg: Package, ctx: CheckContext) -> str | None:
    if pkg.url:
        wheel = parse_wheel_name(pkg.url)
        if wheel is not None and platform_verdict(wheel.platforms, ctx.profile)[0] and not _older_cuda_wheel(pkg, ctx):
            return f"installed from the prebuilt wheel {wheel.filename}"
    for wheel_set in ctx.inventory.wheels:
        if wheel_set.name == "flash-attn" and any(t.endswith(ctx.profile.machine) for t in wheel_set.tags):
            return f"the lock file lists an {ctx.profile.machine} wheel for flash-attn"
    return None


_UPGRADE = ("-U", "--upgrade", "--force-reinstall", "--ignore-installed", "-I")


def _already_installed(pkg: Package, installed: list[Package], ctx: CheckContext) -> str | None:
    """Why pip would keep an already installed flash-attn (NGC ships one) instead of building, or None."""
    if not installed:
        return None
    have = installed[0].version
    from packaging.specifiers import InvalidSpecifier, SpecifierSet  # here: a folder scan's checks need none
    from packaging.version import InvalidVersion, Version
    try:
        allowed = not pkg.specifier or (have is not None and Version(have) in SpecifierSet(pkg.specifier, prereleases=True))
    except (InvalidVersion, InvalidSpecifier):
        return None
    command = next((c for c in ctx.inventory.installs if pkg.location is not None and c.location == pkg.location), None)
    upgrading = command is not None and any(opt.split("=", 1)[0] in _UPGRADE for opt in command.options)
    if allowed and not upgrading:
        return f"already installed ({have or 'shipped by the base image'}): pip keeps it and builds nothing"
    return None


def _installed_in_stage(pkg: Package, installed: list[Package], ctx: CheckContext) -> list[Package]:
    """The installed flash-attn that ``pkg``'s install meets: in a build stage, the one its own stage's base
    ships (a stage is judged by what it does, final or not); elsewhere any."""
    stage = pkg.location.stage if pkg.location is not None else None
    if stage is None or not ctx.inventory.images:
        return installed
    from envcheck.knowledge.base_images import safe_describe
    for image in ctx.inventory.images:
        if stage not in (image.stages or (image.stage,)):
            continue
        same = [p for p in installed if p.location is not None and p.location.stage == image.stage]
        if same:
            return same
        facts = safe_describe(image.ref)
        if (facts is not None and facts.ngc_torch and (facts.cuda_major or 0) >= ctx.profile.cuda_major
                and (facts.flash_attn is not None or facts.family == "ngc-pytorch")):
            version = facts.flash_attn if facts.flash_attn and facts.flash_attn[0].isdigit() else None
            return [Package(name="flash-attn", version=version, installed=True, location=image.location)]
        return []
    return installed


@check(FLASH_ATTN_BUILD, FLASH_ATTN_PRESENT, UNSLOTH_SDPA)
def flash_attn(ctx: CheckContext) -> Iterator[Finding]:
    pkgs = [p for p in ctx.inventory.packages if installs_on(p, ctx.profile) and p.role not in PINS_ONLY]
    if ctx.kind == "wheel":  # a wheel that requires flash-attn makes pip build it (its Requires-Dist)
        from envcheck.checks.g01_cuda_abi import wheel_requirements
        pkgs += [p for p in wheel_requirements(ctx) if p.name == "flash-attn" and installs_on(p, ctx.profile)]
    flash = [p for p in pkgs if p.name == "flash-attn"]
    unsloth = [p for p in pkgs if p.name == "unsloth"]
    installed_flash = [p for p in flash if p.installed]
    for pkg in flash:
        if pkg.installed:
            continue
        why = _prebuilt_aarch64(pkg, ctx) or _already_installed(pkg, _installed_in_stage(pkg, installed_flash, ctx), ctx)
        if why:
            yield FLASH_ATTN_BUILD.passed(f"flash-attn is {why}", pkg.location)
        elif pkg.url and pkg.url.endswith(".whl") and parse_wheel_name(pkg.url) is None:  # flash_attn-*.whl
            yield FLASH_ATTN_BUILD.finding(
                f"flash-attn is installed from the wheel file {pkg.url}, whose platform and GPU code envcheck cannot "
                "read: there is no official aarch64/sm_121 build, so it works only if it was built for aarch64 with "
                "sm_120/sm_121 code", pkg.location, {"package": "flash-attn", "url": pkg.url}, status=Status.WARN)
        elif (older := _older_cuda_wheel(pkg, ctx)) is not None:
            yield FLASH_ATTN_BUILD.finding(
                f"{older} is an upstream CUDA 12 build of flash-attn: it loads only beside a CUDA 12 torch, not the "
                "CUDA 13 stack of a Spark (NGC's flash-attn builds are the ones made for sm_121)", pkg.location,
                {"package": "flash-attn", "version": pkg.version, "url": pkg.url})
        elif pkg.location is not None and pkg.location.tolerated:  # `pip install flash-attn || echo ...`
            yield FLASH_ATTN_BUILD.finding(
                "flash-attn has no aarch64/sm_121 wheel: pip compiles it from source (hours, or a hang); the install's "
                "failure is ignored, so the build goes on without flash-attn after that", pkg.location,
                {"package": "flash-attn", "version": pkg.version, "url": pkg.url}, status=Status.WARN)
        else:
            yield FLASH_ATTN_BUILD.finding(
                "flash-attn has no aarch64/sm_121 wheel: pip will compile it from source (hours, or a hang)",
                pkg.location, {"package": "flash-attn", "version": pkg.version, "url": pkg.url})
    for pkg in installed_flash:
        yield FLASH_ATTN_PRESENT.info(f"flash-attn {pkg.version or ''} is installed".replace("  ", " "), pkg.location)
    if unsloth and flash:
        yield UNSLOTH_SDPA.finding(
            "unsloth and flash-attn are both present: Unsloth will use flash-attn even if attn_implementation='sdpa' is requested",
            unsloth[0].location, {"unsloth": unsloth[0].version, "flash_attn": flash[0].version})
    if not flash and pkgs:
        yield FLASH_ATTN_BUILD.passed("no flash-attn source build in this input", None)


FLASH_ATTN_LOADS = rule(
    "G2-live-flash-attn-extension", "G2",
    "flash-attn is installed but its CUDA extension does not load", Status.FAIL,
    """Read live (preflight, container): flash_attn is importable only if its compiled CUDA extension
    (flash_attn_2_cuda) loads. A build for another CUDA major, another Python or another GPU architecture
    imports with an ImportError or crashes; Unsloth then either fails at model load or silently falls
    back.""",
    "Reinstall flash-attn built for this environment (NGC containers ship one built for SM121), or uninstall it and use SDPA.",
    kinds.LIVE_KINDS)


@check(FLASH_ATTN_LOADS)
def flash_attn_live(ctx: CheckContext) -> Iterator[Finding]:
    reading = ctx.inventory.host.flash_attn
    if reading is None or reading.status == "absent":
        return
    status, version = reading.status, reading.version or ""
    if status == "ok" and reading.extension == "ok":
        yield FLASH_ATTN_LOADS.passed(f"flash-attn {version} imports and its CUDA extension loads".replace("  ", " "))
    elif status == "ok" and reading.extension == "error":
        yield FLASH_ATTN_LOADS.finding(
            f"flash-attn {version} imports but its CUDA extension does not load: {reading.extension_error or 'unknown error'}".replace("  ", " "),
            None, {"reading": reading.to_json()})
    elif status in ("import-error", "error", "crashed", "timeout"):
        detail = reading.signal or reading.error or status
        yield FLASH_ATTN_LOADS.finding(f"importing flash_attn failed ({status}: {detail})", None, {"reading": reading.to_json()})
