"""Wheel platform tags judged against the target profile (with a reason, not just yes/no)."""

from __future__ import annotations

import re

from envcheck.profile import Profile

_MACHINE_IN_TAG = re.compile(r"(x86_64|amd64|aarch64|arm64|armv7l|ppc64le|s390x|i686|win32|universal2)$")


def platform_verdict(platforms: tuple[str, ...], profile: Profile) -> tuple[bool, str]:
    if not platforms or "any" in platforms:
        return True, "pure-Python wheel (platform 'any')"
    ok = [p for p in platforms if _platform_fits(p, profile)]
    if ok:
        return True, f"platform tag {ok[0]} installs on {profile.os}/{profile.machine}"
    machines = sorted({m.group(1) for p in platforms if (m := _MACHINE_IN_TAG.search(p))})
    if any(p.startswith(("win", "macosx")) for p in platforms) and not machines:
        machines = ["non-Linux"]
    what = ", ".join(machines) or ", ".join(platforms)
    target = f"{profile.os}/{profile.machine}"
    return False, f"built for {what} only ({', '.join(platforms)}); {profile.name} needs {target}"


def _platform_fits(platform: str, profile: Profile) -> bool:
    if platform in profile.wheel_platforms:
        return True
    # Any manylinux_X_Y / musllinux for the right machine: glibc floors are newer than the target's.
    if profile.os == "linux":
        m = re.fullmatch(r"(manylinux_\d+_\d+|manylinux\d+|musllinux_\d+_\d+|linux)_(\w+)", platform)
        if m and m.group(2) == profile.machine:
            return not m.group(1).startswith("musllinux")
    return False
