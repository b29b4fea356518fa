"""G9 from the recorded release pins (``knowledge/wheels.toml``): a requirement every release of which pins
torch outside what the input asks (``audiocraft>=1.3.0`` next to ``torch>=2.3.0``: 1.3.0 requires
torch==2.1.0). Where only some releases conflict, pip backtracks, so nothing is said. G9-pin-conflict
(``g09_drift``) reports it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from envcheck.knowledge.builds import installs_on
from envcheck.model import Package, Role
from envcheck.rules import CheckContext

if TYPE_CHECKING:
    from envcheck.knowledge.wheels import Release

_FAMILY = ("torch", "torchvision", "torchaudio")


def clashes(ctx: CheckContext, pkgs: list[Package], overridden: set[str],
            compared: Callable[[Package], set[str]]) -> Iterator[tuple[Package, str, dict[str, Any]]]:
    """(package, message, evidence) for each package whose every allowed release pins a torch-family package
    outside what the input asks. ``compared``: names already compared from the pin table, left out here."""
    asked = [p for p in ctx.inventory.packages if p.name in _FAMILY and not p.installed and not p.url
             and p.role in (Role.REQUIREMENT, Role.CONSTRAINT) and (p.version or p.specifier)
             and installs_on(p, ctx.profile) and p.name not in overridden]
    if not asked:
        return
    # one of each requirement (20,000 copies of one torch line are compared once, not 20,000 times each)
    asked = list({(p.name, p.version, p.specifier): p for p in reversed(asked)}.values())[::-1]
    from envcheck.knowledge import wheels  # (packaging: only where a torch-family requirement is asked)
    for pkg in pkgs:
        if (pkg.requires is not None or pkg.installed or pkg.no_deps or pkg.url or pkg.role != Role.REQUIREMENT
                or not installs_on(pkg, ctx.profile)):
            continue
        releases = wheels.every_release_allowed(pkg.name, f"=={pkg.version}" if pkg.version else pkg.specifier)
        if not releases:
            continue
        known = compared(pkg)
        targets = [t for t in asked if t.name not in known and t.name != pkg.name]
        found = _every_release_excluded(releases, targets)
        if found is None:
            continue
        needs = " and ".join(f"{name}{' or '.join(pins)}" for name, (_, pins) in found.items())
        asks = ", ".join(a for a, _ in found.values())
        versions = (", ".join(r.version for r in releases) if len(releases) <= 4
                    else f"{releases[0].version} to {releases[-1].version}, {len(releases)} releases")
        which = f"{pkg.name} {pkg.version}" if pkg.version else f"{pkg.name}{pkg.specifier}: every release it allows ({versions})"
        yield pkg, (
            f"{which} requires {needs}, but this input asks {asks}: one pip command cannot resolve both, and "
            f"a later one replaces what the earlier installed (release pins from {releases[-1].where})"
        ), {"package": pkg.name, "releases": [r.version for r in releases],
            "requires": [f"{n}{p}" for n, (_, ps) in found.items() for p in ps], "found": asks,
            "source": [r.source for r in releases]}


def _every_release_excluded(releases: list[Release], targets: list[Package]) -> dict[str, tuple[str, list[str]]] | None:
    """target name -> (what the input asks, the pins excluding it) when every release has one, else None."""
    from envcheck.knowledge import wheels
    out: dict[str, tuple[str, list[str]]] = {}
    for rel in releases:
        hit = False
        for name, pin in rel.pins:
            for target in (t for t in targets if t.name == name):
                want = f"=={target.version.split('+', 1)[0]}" if target.version else target.specifier
                if pin == "any" or wheels.meets_both(name, want, pin) is not False:
                    continue
                hit = True
                line = target.location.line if target.location else None
                pins = out.setdefault(name, (f"{name}{want}" + (f" (line {line})" if line else ""), []))[1]
                pins += [] if pin in pins else [pin]
        if not hit:
            return None
    return out or None

