"""ARCH: binaries, wheels or images built for the wrong CPU architecture (x86_64 instead of aarch64)."""

from __future__ import annotations

from collections.abc import Iterator

from envcheck.inspect.builds import installs_on
from envcheck.inspect.wheel_tags import parse_wheel_name, platform_verdict
from envcheck.model import Finding, Status
from envcheck.rules import CheckContext, check, rule

WHEEL_PLATFORM = rule(
    "ARCH-wheel-platform", "ARCH", "A wheel cannot install on linux/aarch64", Status.FAIL,
    """A wheel named or locked for this target carries only platform tags of another CPU or OS
    (manylinux_x86_64, win_amd64, macosx). pip on a Spark refuses it, or, for a lock file whose package has
    only an sdist besides, builds it from source.""",
    "Use a release that publishes manylinux aarch64 wheels (or build one for linux/aarch64), or drop the x86_64-only URL.",
    ("requirements", "pyproject", "lock", "dockerfile", "wheel"),
)


@check
def wheel_platforms(ctx: CheckContext) -> Iterator[Finding]:
    """ARCH over wheel URLs in requirements and the wheel sets of lock files."""
    checked = 0
    failed = False
    for pkg in ctx.inventory.packages:
        if not pkg.url or not installs_on(pkg, ctx.profile):
            continue
        wheel = parse_wheel_name(pkg.url)
        if wheel is None:
            continue
        checked += 1
        ok, why = platform_verdict(wheel.platforms, ctx.profile)
        if not ok:
            failed = True
            yield WHEEL_PLATFORM.finding(f"{wheel.filename}: {why}", pkg.location, {"wheel": wheel.filename, "platforms": list(wheel.platforms)})
    for wheel_set in ctx.inventory.wheels:
        platforms = tuple(sorted({t.rsplit("-", 1)[-1] for t in wheel_set.tags if t != "sdist"}))
        if not platforms:
            continue
        checked += 1
        ok, why = platform_verdict(platforms, ctx.profile)
        if ok:
            continue
        failed = True
        if "sdist" in wheel_set.tags:
            yield WHEEL_PLATFORM.finding(
                f"{wheel_set.name} {wheel_set.version}: no {ctx.profile.machine} wheel ({why}); pip will build the sdist from source",
                wheel_set.location, {"package": wheel_set.name, "platforms": list(platforms)}, status=Status.WARN,
            )
        else:
            yield WHEEL_PLATFORM.finding(f"{wheel_set.name} {wheel_set.version}: {why}", wheel_set.location, {"package": wheel_set.name, "platforms": list(platforms)})
    if checked and not failed:
        yield WHEEL_PLATFORM.passed(f"{checked} wheel(s) install on {ctx.profile.docker_platform}", None)
