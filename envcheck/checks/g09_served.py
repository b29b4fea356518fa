"""G9 from the index's release lists (``knowledge/wheels.toml``, yanked ones included: an exact pin still
installs them): an exact pin of a version the index never served cannot install; one newer than the list is
only named."""

from __future__ import annotations

from collections.abc import Iterator

from packaging.version import Version

from envcheck.checks.g01_wheel_builds import _from_pypi
from envcheck.knowledge import wheels
from envcheck.model import Finding, Role, Status
from envcheck.rules import CheckContext, check, rule

NOT_SERVED = rule(
    "G9-version-not-served", "G9", "A pinned version the index never served", Status.FAIL,
    """The input pins an exact version that the package index does not serve at all: a release that never
    existed (a mistyped or invented pre-release such as vllm==0.99.0rc7), or one that was deleted. pip and
    uv stop with "No matching distribution found" on every machine, so the image or environment is never
    built. Judged offline from the release list recorded in knowledge/wheels.toml (its date is in the
    message); a version newer than that list is only named, since it may have been released since. With
    --resolve the index itself answers.""",
    "Pin a version the index serves (pip index versions NAME, or the project's release history on PyPI), or drop "
    "the pin and let the resolver pick one.",
    ("requirements", "pyproject", "dockerfile"))


def _newest_first(versions: tuple[str, ...], want: Version, count: int = 3) -> list[str]:
    """The ``count`` served releases nearest below ``want``, newest first (what the user may have meant)."""
    below = [v for v in versions if (parsed := wheels.parse_version(v)) is not None and parsed < want]
    return list(reversed(below[-count:]))





@check(NOT_SERVED)
def versions_served(ctx: CheckContext) -> Iterator[Finding]:
    if ctx.inventory.resolved:
        return  # --resolve asked the index itself
    checked: list[str] = []
    for pkg in ctx.inventory.packages:
        if not pkg.version or pkg.role in (Role.RESOLVED, Role.CONSTRAINT) or not _from_pypi(pkg, ctx):
            continue
        listed, want = wheels.served(pkg.name), wheels.parse_version(pkg.version)
        if listed is None or want is None:
            continue
        newest = wheels.parse_version(listed.newest)
        where = f"{listed.source.split(' ', 1)[0]}, recorded {listed.checked}"
        evidence = {"package": pkg.name, "version": pkg.version, "newest": listed.newest, "checked": listed.checked}
        if listed.has(pkg.version):
            checked.append(f"{pkg.name}=={pkg.version}")
        elif newest is not None and want > newest:
            yield NOT_SERVED.info(
                f"{pkg.name}=={pkg.version} is newer than every release the index served on {listed.checked} "
                f"(newest {listed.newest}): if it has not been released since, the install fails; --resolve asks the index",
                pkg.location, **evidence)
        else:
            near = ", ".join(_newest_first(listed.versions, want))
            yield NOT_SERVED.finding(
                f"{pkg.name}=={pkg.version}: the index does not serve this version (not among its {len(listed.versions)} "
                f"releases{'; nearest below: ' + near if near else ''}): the install always fails ({where})", pkg.location, evidence)
    if checked:
        yield NOT_SERVED.passed(f"{len(checked)} pinned version(s) are releases the index serves (as recorded): "
                                f"{', '.join(checked[:4])}{' ...' if len(checked) > 4 else ''}")
