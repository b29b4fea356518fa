"""G2: flash-attn on aarch64/sm_121, and Unsloth silently preferring it over a requested SDPA.

There is no aarch64/sm_121 flash-attn wheel for bare pip: ``pip install flash-attn`` builds from source
(2-3 hours on a Spark) or fails. NGC containers ship a working flash-attn, and Unsloth then uses it even
when ``attn_implementation="sdpa"`` was asked for.
"""

from __future__ import annotations

from collections.abc import Iterator

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from envcheck.inspect.builds import installs_on
from envcheck.inspect.wheel_tags import parse_wheel_name, platform_verdict
from envcheck.model import Finding, Package, Status
from envcheck.rules import CheckContext, check, rule

OVERRIDE = (
    "To force SDPA under Unsloth, set unsloth.models._utils.HAS_FLASH_ATTENTION = False after importing "
    "unsloth and before from_pretrained (a monkeypatch of Unsloth's flash-attn detection); "
    "attn_implementation='sdpa' alone is ignored."
)

FLASH_ATTN_BUILD = rule(
    "G2-flash-attn-build", "G2", "flash-attn would be built from source by pip", Status.FAIL,
    """flash-attn publishes no aarch64 wheels, so pip compiles it from source: two to three hours on a Spark,
    often ending in a failure or an apparent hang. NGC PyTorch containers already ship a working build.""",
    "Drop flash-attn and use PyTorch SDPA (attn_implementation='sdpa'), or use an NGC PyTorch container, which ships flash-attn built for SM121; if you have a prebuilt aarch64 wheel, install that file explicitly.",
    ("requirements", "pyproject", "lock", "dockerfile"),
)
FLASH_ATTN_PRESENT = rule(
    "G2-flash-attn-present", "G2", "flash-attn is installed", Status.INFO,
    """flash-attn is already installed (a freeze, an environment, an NGC image). That is not a failure, but
    libraries that auto-detect it (Unsloth) will use it even when another attention implementation is asked for.""",
    OVERRIDE,
)
UNSLOTH_SDPA = rule(
    "G2-unsloth-prefers-flash-attn", "G2", "Unsloth will use flash-attn even when SDPA is asked for", Status.WARN,
    """Unsloth checks HAS_FLASH_ATTENTION (flash_attn importable and compute capability >= 8) and then
    uses flash-attn, discarding attn_implementation='sdpa'. With flash-attn present next to Unsloth,
    an SDPA request is silently ignored.""",
    OVERRIDE, ("requirements", "freeze", "lock", "dockerfile", "folder", "image", "container", "host"),
)


def _prebuilt_aarch64(pkg: Package, ctx: CheckContext) -> str | None:
    """Why this flash-attn does not need a source build, or None."""
    if pkg.url:
        wheel = parse_wheel_name(pkg.url)
        if wheel is not None and platform_verdict(wheel.platforms, ctx.profile)[0]:
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
    try:
        allowed = not pkg.specifier or (have is not None and Version(have) in SpecifierSet(pkg.specifier, prereleases=True))
    except (InvalidVersion, InvalidSpecifier):
        return None
    command = next((c for c in ctx.inventory.installs if pkg.location is not None and c.location == pkg.location), None)
    upgrading = command is not None and any(opt.split("=", 1)[0] in _UPGRADE for opt in command.options)
    if allowed and not upgrading:
        return f"already installed ({have or 'shipped by the base image'}): pip keeps it and builds nothing"
    return None


@check
def flash_attn(ctx: CheckContext) -> Iterator[Finding]:
    """G2 over packages: pip-built flash-attn, installed flash-attn, and flash-attn next to Unsloth."""
    pkgs = [p for p in ctx.inventory.packages if installs_on(p, ctx.profile) and p.role != "constraint"]
    flash = [p for p in pkgs if p.name == "flash-attn"]
    unsloth = [p for p in pkgs if p.name == "unsloth"]
    installed_flash = [p for p in flash if p.installed]
    for pkg in flash:
        if pkg.installed:
            continue
        why = _prebuilt_aarch64(pkg, ctx) or _already_installed(pkg, installed_flash, ctx)
        if why:
            yield FLASH_ATTN_BUILD.passed(f"flash-attn is {why}", pkg.location)
        else:
            yield FLASH_ATTN_BUILD.finding(
                "flash-attn has no aarch64/sm_121 wheel: pip will compile it from source (hours, or a hang)",
                pkg.location, {"package": "flash-attn", "version": pkg.version, "url": pkg.url},
            )
    for pkg in installed_flash:
        yield FLASH_ATTN_PRESENT.info(f"flash-attn {pkg.version or ''} is installed".replace("  ", " "), pkg.location)
    if unsloth and flash:
        where = unsloth[0].location
        yield UNSLOTH_SDPA.finding(
            "unsloth and flash-attn are both present: Unsloth will use flash-attn even if attn_implementation='sdpa' is requested",
            where, {"unsloth": unsloth[0].version, "flash_attn": flash[0].version},
        )
    if not flash and pkgs:
        yield FLASH_ATTN_BUILD.passed("no flash-attn source build in this input", None)
