"""Opt-in parts of a project (extras, dependency groups), each judged in its own scope.

Extras are often alternatives never installed together (``cpu``/``gpu``), so the default install decides a
file's verdict and what each scope adds is a WARN naming it. Where a project declares alternatives and one is
for another platform, the other is its GPU build (the Spark user's route): its FAIL stands, and the default
install's CPU-only torch is INFO."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from envcheck.knowledge.builds import CudaBuild, build_of_index
from envcheck.model import Finding, Inventory, Location, Package, Role, Status

# Scopes judged one by one; the rest are judged together (hundreds of extras must not cost hundreds of check
# runs), and fewer for a large inventory: packages judged over all scope runs stay under MAX_SCOPED_PACKAGES.
MAX_SCOPES = 16
MAX_SCOPED_PACKAGES = 60_000


def scopes_of(inventory: Inventory) -> list[str]:
    seen: dict[str, None] = {}
    for scope in [p.scope for p in inventory.packages] + [w.scope for w in inventory.wheels]:
        if scope is not None:
            seen.setdefault(scope, None)
    return list(seen)


def in_scope(inventory: Inventory, scopes: tuple[str, ...] = (), installs: Callable[[Package], bool] = lambda p: True) -> Inventory:
    """The default install plus ``scopes``. An explicit index (uv ``explicit = true``) belongs to it only when
    a package it holds that ``installs`` on the target is sourced from it; others apply to every install."""
    wanted = {None, *scopes}
    packages = [p for p in inventory.packages if p.scope in wanted]
    sourced = {p.index for p in packages if p.index and installs(p)}
    copied = ("installs", "images", "env", "pragmas", "resolved", "alternatives")
    indexes = [i for i in inventory.indexes if not i.explicit or i.url in sourced]
    return Inventory(packages=packages, indexes=indexes,
                     binaries=inventory.binaries, wheels=[w for w in inventory.wheels if w.scope in wanted],
                     host=inventory.host, context=inventory.context, problems=[],
                     **{f: list(getattr(inventory, f)) for f in copied})


def _key(finding: Finding) -> tuple[str, str, str, str]:
    return finding.rule, str(finding.location), finding.message, finding.status.value


def judge_scopes(inventory: Inventory, run_checks: Callable[[Inventory], list[Finding]],
                 installs: Callable[[Package], bool] = lambda p: True, project: bool = False) -> list[Finding]:
    """Findings of the default install, then what each opt-in scope adds (FAIL softened to WARN, scope named):
    once for scopes that add it alike, never what the default has, no location-less PASS/INFO summaries."""
    scopes = scopes_of(inventory)
    if not scopes and not any(i.explicit for i in inventory.indexes):
        return _one_per_line(one_cause(run_checks(inventory)))
    base = unfolded = _one_per_line(one_cause(run_checks(in_scope(inventory, (), installs))))
    if project or (inventory.packages and all(p.role == Role.LOCK for p in inventory.packages if p.location)):
        base = _one_per_lock(base, packages_only=project)  # a default install of a CUDA 12 stack: one cause
    if not scopes:
        return base
    separate = max(1, min(MAX_SCOPES, MAX_SCOPED_PACKAGES // max(1, len(inventory.packages))))
    groups: list[tuple[str, ...]] = [(s,) for s in scopes[:separate]]
    if len(scopes) > separate:
        groups.append(tuple(scopes[separate:]))
    known = {_key(f) for f in unfolded}
    # a line the default install already flags for a rule: a scope that flags it again adds nothing
    flagged_at = {(k, str(f.location)) for f in unfolded if f.location and f.status in (Status.WARN, Status.FAIL)
                  for k in (f.rule, *(["build"] if f.gotcha in _BUILD_GOTCHAS else []))}
    # a package the default install already has a finding of the rule for (an extra that mirrors a default group)
    had = {(f.rule, str(f.evidence.get("package")), str(f.evidence.get("version"))) for f in unfolded
           if f.status in (Status.WARN, Status.FAIL) and f.evidence.get("package")}
    # a finding that names packages (one policy finding for a file's unpinned packages): the default install's
    known_packages: dict[str, set[str]] = {}
    for f in base:
        named = f.evidence.get("packages")
        if isinstance(named, list):
            known_packages.setdefault(f.rule, set()).update(str(n) for n in named)
    # which scopes put a package (or wheel) at a location: names a finding of scopes judged together
    placed: dict[str, set[str]] = {}
    for item_scope, item_location in [(p.scope, p.location) for p in inventory.packages] + [(w.scope, w.location) for w in inventory.wheels]:
        if item_scope is not None:
            placed.setdefault(str(item_location), set()).add(item_scope)
    added: dict[tuple[str, str, str, str], tuple[Finding, list[str]]] = {}
    for group in groups:
        label = " + ".join(group) if len(group) <= 3 else f"{', '.join(group[:3])} and {len(group) - 3} more scopes"
        for finding in run_checks(in_scope(inventory, group, installs)):
            key = _key(finding)
            softened = (*key[:3], Status.WARN.value) if finding.status is Status.FAIL else key
            if key in known or softened in known or (finding.location is None and finding.status in (Status.PASS, Status.INFO, Status.SKIP)):
                continue
            if finding.location and not finding.policy and ((finding.rule, str(finding.location)) in flagged_at or (
                    finding.gotcha in _BUILD_GOTCHAS and ("build", str(finding.location)) in flagged_at)):
                continue
            if finding.evidence.get("package") and (finding.rule, str(finding.evidence.get("package")),
                                                     str(finding.evidence.get("version"))) in had:
                continue  # the same package and version, already judged in the default install
            named = finding.evidence.get("packages")
            if isinstance(named, list) and named and {str(n) for n in named} <= known_packages.get(finding.rule, set()):
                continue  # the scope adds no package to what the default install's finding names
            labels = [label]
            if len(group) > 1:  # judged together: name the scopes that put something where the finding points
                own = [s for s in group if s in placed.get(str(finding.location), ())]
                labels = own or labels
            if key in added:
                added[key][1].extend(x for x in labels if x not in added[key][1])
            else:
                added[key] = (finding, labels)
    routes = gpu_routes(inventory)
    out = [_default_path(f, routes, inventory) for f in base] if routes else list(base)
    out.extend(_grouped(_fold_policy(out, added.values()), inventory, routes))
    return out


def _fold_policy(out: list[Finding], added: Iterable[tuple[Finding, list[str]]]) -> list[tuple[Finding, list[str]]]:
    """A scope's policy finding naming packages joins the default install's one for that file (one per file),
    naming what the scope adds; the rest is returned."""
    rest: list[tuple[Finding, list[str]]] = []
    for finding, labels in added:
        path = finding.location.path if finding.location else None
        at = next((i for i, f in enumerate(out) if finding.policy and f.rule == finding.rule and f.status in (Status.WARN, Status.FAIL)
                   and (f.location.path if f.location else None) == path), None)
        named, specs = finding.evidence.get("packages"), finding.evidence.get("specifiers")
        if at is None or not isinstance(named, list):
            rest.append((finding, labels))
            continue
        kept = out[at]
        have = [str(n) for n in kept.evidence.get("packages") or []]
        new = [(str(n), str(s or "")) for n, s in zip(named, specs if isinstance(specs, list) else [""] * len(named), strict=False)
               if str(n) not in have]
        if not new:
            continue
        evidence = {**kept.evidence, "packages": [*have, *(n for n, _ in new)],
                    "lines": sorted({*kept.evidence.get("lines", []), *finding.evidence.get("lines", [])})}
        if isinstance(kept.evidence.get("specifiers"), list):
            evidence["specifiers"] = [*kept.evidence["specifiers"], *(s for _, s in new)]
        out[at] = replace(kept, message=f"{kept.message}; with {' and '.join(labels)} (opt-in) also "
                                        + ", ".join(n + s for n, s in new), evidence=evidence)
    return rest


# A package's name without the CUDA flavour it names (cuml-cu12, cupy-cuda12x): alternatives of one package.
_FLAVOUR = re.compile(r"[-_](?:cu|cuda)\d+x?$")
# Words that name another machine in an extra's or group's name: such a scope is not what a Spark installs.
_ELSEWHERE = re.compile(r"(?i)(?:^|[-_ '])(?:mac|macos|osx|darwin|apple|mps|mlx|metal|rocm|amd|xpu|intel|windows|win|tpu|cpu)(?:$|[-_ '\d])")


# A lock's scope of a workspace member other than the project the lock is for ("extra 'x' of member").
_MEMBER = re.compile(r"' of [a-z0-9][a-z0-9._-]*$")


def _for_elsewhere(scope: str) -> bool:
    return bool(_ELSEWHERE.search(scope.partition(" ")[2].strip("'")))


# Gotchas of which build a package is: another scope may offer another build of the same packages.
_BUILD_GOTCHAS = frozenset({"G1", "ARCH"})
_CPU_BUILD_RULE = "G1-cpu-build"  # a CPU-only torch (envcheck.checks.g01_cuda_abi)
# a compiled package's own CUDA 12 build (sgl-kernel): a cause of its own, beside whatever torch the stack has
_OWN_BUILD_RULES = frozenset({"G1-pypi-dependency-cuda12"})


# Rules whose finding in a scope is a cause of its own, not one of the scope's index binding: vLLM's PyPI build
# stays CUDA 12 when the extra's torch index is moved to cu130.
_OWN_CAUSE = frozenset({"G1-pypi-vllm-cuda12"})
# Inference engines a project offers as alternative extras (a ``vllm`` extra beside an SGLang ``gpu`` one).
_ENGINES = frozenset({"vllm", "sglang"})


def _family(name: str) -> str:
    family = _FLAVOUR.sub("", name.lower().replace("_", "-"))
    return "llm-engine" if family in _ENGINES else family


def _grouped(added: Iterable[tuple[Finding, list[str]]], inventory: Inventory,
             routes: dict[str, list[str]] | None = None) -> list[Finding]:
    """What the opt-in scopes add, one finding per scope and gotcha, at INFO where another scope offers the
    same packages without it (``cuda12`` beside ``cuda13``); the GPU build (``routes``) keeps its FAIL."""
    routes = routes or {}
    platform, older = _platform_scopes(inventory), _older_cuda(inventory)
    by_labels: dict[tuple[str, ...], list[Finding]] = {}
    for finding, named in added:
        by_labels.setdefault(tuple(named), []).append(finding)
    by_scope: dict[tuple[tuple[str, ...], str, str], list[Finding]] = {}
    for scope_labels, findings in by_labels.items():
        for finding in one_cause(findings):
            cause = finding.rule if finding.rule in _OWN_CAUSE else ""
            by_scope.setdefault((scope_labels, finding.gotcha, cause), []).append(finding)
    at: dict[str, set[str]] = {}  # a location's package families
    scope_families: dict[str, set[str]] = {}
    for package in inventory.packages:
        if package.location is not None:
            at.setdefault(str(package.location), set()).add(_family(package.name))
        if package.scope is not None:
            scope_families.setdefault(package.scope, set()).add(_family(package.name))
    flagged: dict[str, set[str]] = {}  # gotcha -> scopes with a WARN/FAIL finding of it
    for (labels, gotcha, _), found in by_scope.items():
        if any(f.status in (Status.WARN, Status.FAIL) for f in found):
            flagged.setdefault(gotcha, set()).update(labels)
    out: list[Finding] = []
    for (labels, gotcha, _), found in by_scope.items():
        worst = max(f.status.rank for f in found)  # the worst finding, on a package's line, speaks for the scope
        found.sort(key=lambda f: (f.status.rank != worst, not at.get(str(f.location))))
        families = set().union(*(at.get(str(f.location), set()) for f in found))
        route = gotcha in _BUILD_GOTCHAS and all(label in routes for label in labels) and found[0].status in (Status.WARN, Status.FAIL)
        alternatives = sorted(s for s, names in scope_families.items()  # other builds of the same packages
                              if gotcha in _BUILD_GOTCHAS and s not in labels and s not in flagged.get(gotcha, set())
                              and names & families and not (route and any(s in routes[label] for label in labels)))
        kept = route and not alternatives  # the GPU build, with no other one to install: its level stands
        if kept:
            found.insert(0, found.pop(found.index(_route_first(found))))
            first = _gpu_route(found[0], list(labels), routes, inventory)
        else:
            first = opt_in(found[0], list(labels))
        elsewhere = [label for label in labels if label in platform]
        # the same line twice (a lock entry's +cu12x version and the index it names) is named once
        elsewhere_too = [f for f in found[1:] if f.location != found[0].location]
        if len(found) > 1:
            more = "" if not elsewhere_too else f" (and {len(elsewhere_too)} more like it: " + ", ".join(
                f"{f.location}" for f in elsewhere_too[:5]) + (", ..." if len(elsewhere_too) > 5 else "") + ")"
            first = replace(first, message=first.message + more,
                            evidence={**first.evidence, "count": len(found),
                                      "locations": [str(f.location) for f in found]})
        if kept:
            # one finding for the cause, naming every line of it: the binding, and the extra's requirement it serves
            own = first.location.line if first.location else None
            lines = {f.location.line for f in found[1:] if f.location and f.location.line and f.location.line != own}
            lines.update(first.evidence.get("lines", []))
            if lines:
                first = replace(first, evidence={**first.evidence, "lines": sorted(lines)})
        elif first.status is Status.WARN and any(_MEMBER.search(x) for x in labels) and all(
                _MEMBER.search(x) or x in older for x in labels):
            members = [x for x in labels if _MEMBER.search(x)]
            rest = [x for x in labels if not _MEMBER.search(x)]
            first = replace(first, status=Status.INFO, message=first.message + (
                f"; {_names(members)} belong{'s' if len(members) == 1 else ''} to a workspace member, installed only by "
                "that member's own sync (uv sync --package), not by this project's"
                + (f", and {_names(rest)} is an older CUDA build than the project's other extras" if rest else "")))
        elif first.status is Status.WARN and elsewhere and len(elsewhere) == len(labels) and not set(labels) <= older:
            first = replace(first, status=Status.INFO,
                            message=first.message + f"; {' and '.join(elsewhere)} is for another platform, not what a Spark installs")
        elif first.status is Status.WARN and alternatives:
            first = replace(first, status=Status.INFO,
                            message=first.message + f"; the project offers {' and '.join(alternatives)} instead, "
                                                    "without this: install that one on a Spark")
        elif first.status is Status.WARN and set(labels) <= older:
            newer = sorted({o for a in inventory.alternatives if set(labels) & set(a.scopes)
                            for o in a.scopes if o not in older and o not in platform})
            first = replace(first, status=Status.INFO, message=first.message + (
                f"; the project offers {' and '.join(newer)} instead, a newer CUDA build: install that one on a Spark"))
        out.append(first)
    return out


def one_cause(findings: list[Finding]) -> list[Finding]:
    """A CUDA 12 build with no aarch64 wheel either is one cause: its G1 finding says both, no ARCH one."""
    bad = (Status.WARN, Status.FAIL)
    g1 = {(f.location, f.evidence["package"]): i for i, f in reversed(list(enumerate(findings)))
          if f.gotcha == "G1" and f.location and f.status in bad and f.evidence.get("package")}
    out = list(findings)
    folded: set[int] = set()
    for i, arch in enumerate(findings):
        j = (g1.get((arch.location, arch.evidence.get("package")))
             if arch.gotcha == "ARCH" and arch.location and arch.status in bad and arch.evidence.get("package") else None)
        if j is None:
            continue
        g = out[j]
        platforms = sorted({str(p) for p in [*g.evidence.get("platforms", []), *arch.evidence.get("platforms", [])]})
        out[j] = replace(g, status=max(g.status, arch.status, key=lambda s: s.rank),
                         message=f"{g.message}; nor can it install here: {arch.message}", evidence={**g.evidence, "platforms": platforms},
                         folded=(*g.folded, arch))
        folded.add(i)
    return [f for i, f in enumerate(out) if i not in folded]


def _one_per_lock(findings: list[Finding], packages_only: bool = False) -> list[Finding]:
    """A lock's (or a project's) default install that resolves (pins) a CUDA 12 stack (torch, its partners, what
    they pull) is one cause: one G1 finding, led by torch's, standing for every entry's line. ``packages_only``:
    a project's index and source lines keep their own findings (they bind the stack, the pins only follow)."""
    bad = [i for i, f in enumerate(findings) if f.gotcha == "G1" and f.status in (Status.WARN, Status.FAIL)
           and not f.policy and f.location and f.location.line and (not packages_only or f.evidence.get("package"))
           and f.rule not in _OWN_BUILD_RULES]
    if len(bad) < 2:
        return findings
    lead = max(bad, key=lambda i: (findings[i].status.rank, findings[i].evidence.get("package") == "torch"))
    rest = [findings[i] for i in bad if i != lead]
    lines = sorted({f.location.line for f in [findings[lead], *rest] if f.location and f.location.line}
                   | {n for f in [findings[lead], *rest] for n in f.evidence.get("lines", []) if isinstance(n, int)})
    kept = replace(findings[lead], message=f"{findings[lead].message} (and {len(rest)} more entries of this stack: "
                   + ", ".join(str(f.evidence.get("package") or f.rule) for f in rest[:5]) + (", ..." if len(rest) > 5 else "") + ")",
                   evidence={**findings[lead].evidence, "lines": lines}, folded=(*findings[lead].folded, *rest))
    return [kept if i == lead else f for i, f in enumerate(findings) if i == lead or i not in bad]


def _one_per_line(findings: list[Finding]) -> list[Finding]:
    """G1 findings on one line are one cause (a requirement whose extra installs a CUDA 12 stack, a lock entry
    and the index it names, an image's build-history step, its RUN line): the worst speaks for the line and
    names the rest."""
    findings = _built_and_installed(findings)
    at: dict[tuple[str, str], list[int]] = {}
    for i, f in enumerate(findings):
        if (f.gotcha == "G1" and f.location and (f.location.line or (f.location.member or "").startswith("history["))
                and f.status in (Status.WARN, Status.FAIL) and not f.policy):
            at.setdefault((str(f.location), f.gotcha), []).append(i)
    dropped: set[int] = set()
    out = list(findings)
    for same in at.values():
        if len(same) < 2:
            continue
        keep = max(same, key=lambda i: findings[i].status.rank)
        rest = [findings[i] for i in same if i != keep]
        dropped.update(i for i in same if i != keep)
        out[keep] = replace(findings[keep], message=f"{findings[keep].message} (and on this line: "
                            + "; ".join(f.message for f in rest[:3]) + (", ..." if len(rest) > 3 else "") + ")",
                            evidence={**findings[keep].evidence, "also": [f.rule for f in rest]},
                            folded=(*findings[keep].folded, *rest))
    return [f for i, f in enumerate(out) if i not in dropped]


def _built_and_installed(findings: list[Finding]) -> list[Finding]:
    """An image read with --deep: a CUDA 12 build its history's RUN step installs and the same distribution's
    METADATA in the layers are one cause. The step's finding (how it got there, with the fix) stands for both."""
    def key(f: Finding) -> tuple[str, str, str] | None:
        package, version = f.evidence.get("package"), f.evidence.get("version")
        return (f.rule, str(package), str(version)) if package and version and f.gotcha == "G1" else None
    built = {k for f in findings if f.location and (f.location.member or "").startswith("history[") and (k := key(f))}
    if not built:
        return findings
    installed = [f for f in findings if f.location and (f.location.member or "").startswith("/") and key(f) in built]
    if not installed:
        return findings
    out = [f for f in findings if not any(f is i for i in installed)]
    for n, f in enumerate(out):
        if f.location and (f.location.member or "").startswith("history[") and (same := [i for i in installed if key(i) == key(f)]):
            out[n] = replace(f, message=f"{f.message}; installed in the layers ({same[0].location.member if same[0].location else ''})",
                             folded=(*f.folded, *same))
            installed = [i for i in installed if key(i) != key(f)]
    return out


def _route_first(found: list[Finding]) -> Finding:
    """The finding for a GPU build's cause: the index its source binds where that is a line of its own."""
    packages_at = {str(f.location) for f in found if "url" not in f.evidence}
    apart = [f for f in found if "url" in f.evidence and str(f.location) not in packages_at]
    return apart[0] if apart else found[0]


def gpu_routes(inventory: Inventory) -> dict[str, list[str]]:
    """The scopes that are the project's GPU build (the ``gpu`` of declared ``cpu``/``gpu`` alternatives),
    each with its alternatives for another platform."""
    present = set(scopes_of(inventory))
    platform = _platform_scopes(inventory)
    routes: dict[str, list[str]] = {}
    older, cuda = _older_cuda(inventory), _index_builds(inventory, lambda b: b.cuda_major)
    for scopes in dict.fromkeys([a.scopes for a in inventory.alternatives] + _bound_apart(inventory)):
        here = [s for s in scopes if s in present]
        other = [s for s in here if s in platform][:8]  # named in a message: a few are enough, and bounded
        for scope in here:
            # beside older CUDA builds only, the route is the scope that binds a newer one
            if other and scope not in platform and (cuda.get(scope) or not set(other) <= older):
                known = routes.setdefault(scope, [])
                known.extend(o for o in other if o not in known and len(known) < 8)
    return routes


def _bound_apart(inventory: Inventory) -> list[tuple[str, ...]]:
    by_name: dict[str, dict[str, str]] = {}
    for p in inventory.packages:
        if p.scope is not None and p.index:
            by_name.setdefault(p.name, {}).setdefault(p.scope, p.index)
    return [tuple(bound) for bound in by_name.values() if len(set(bound.values())) > 1]


def _platform_scopes(inventory: Inventory) -> set[str]:
    """Scopes for another platform: named so (``cpu``, ``mac``), or taking every build-index package from a
    CPU, ROCm or XPU index."""
    flavors, older = _index_builds(inventory, lambda b: b.flavor), _older_cuda(inventory)  # once, not per scope
    return {s for s in scopes_of(inventory) if _for_elsewhere(s) or (flavors.get(s) and "cuda" not in flavors[s])
            or s in older}


def _index_builds(inventory: Inventory, what: Callable[[CudaBuild], str | int | None]) -> dict[str, set[Any]]:
    out: dict[str, set[Any]] = {}
    for p in inventory.packages:
        if p.scope is not None and p.index and (build := build_of_index(p.index)) is not None and what(build):
            out.setdefault(p.scope, set()).add(what(build))
    return out


def _older_cuda(inventory: Inventory) -> set[str]:
    """Alternatives whose build indexes serve an older CUDA than a sibling's (cu128 beside cu130): builds for
    machines the newer one does not serve."""
    majors = _index_builds(inventory, lambda b: b.cuda_major)
    return {s for a in inventory.alternatives for s in a.scopes if majors.get(s)
            and any(min(majors.get(o) or {0}) > max(majors[s]) for o in a.scopes if o != s)}


def _bindings(scope: str, inventory: Inventory) -> list[Location]:
    out: list[Location] = []
    for alternatives in inventory.alternatives:
        out.extend(w for s, w in zip(alternatives.scopes, alternatives.where, strict=False) if s == scope and w is not None)
    return out


def _gpu_route(finding: Finding, labels: list[str], routes: dict[str, list[str]], inventory: Inventory) -> Finding:
    """``finding`` of the project's GPU build: named, at its own level, with the lines that bind it."""
    named = _names(labels)
    others = list(dict.fromkeys(o for label in labels for o in routes.get(label, [])))
    bound = [w for label in labels for w in _bindings(label, inventory)]
    evidence = dict(finding.evidence)
    evidence["scope"] = labels
    where = f"bound on line {', '.join(str(w.line) for w in bound)}; " if bound else ""
    if bound:
        evidence["lines"] = sorted({w.line for w in bound if w.line is not None})
    return replace(finding, evidence=evidence, message=(
        f"with {named}, the project's GPU build ({where}{' and '.join(others)} {'is' if len(others) == 1 else 'are'} "
        f"its alternative for another platform): {finding.message}"))


def _default_path(finding: Finding, routes: dict[str, list[str]], inventory: Inventory) -> Finding:
    """A CPU-only torch of the default install of a project that declares a GPU build is its CPU path: INFO."""
    if finding.rule != _CPU_BUILD_RULE or finding.status not in (Status.WARN, Status.FAIL) or finding.location is None:
        return finding
    families = {_family(p.name) for p in inventory.packages if p.location == finding.location}
    offered = [r for r in routes if any(p.scope == r and _family(p.name) in families for p in inventory.packages)]
    if not offered:
        return finding
    return replace(finding, status=Status.INFO, message=(
        f"{finding.message}; this is the install without extras: the project declares {' and '.join(offered)} as its GPU "
        "build, the one to install on a Spark"))


def opt_in(finding: Finding, labels: list[str]) -> Finding:
    """``finding`` as seen only when a user opts into ``labels``: named, and a WARN at most."""
    status = Status.WARN if finding.status is Status.FAIL else finding.status
    return replace(finding, status=status, message=f"with {_names(labels)} (opt-in): {finding.message}",
                   evidence={**finding.evidence, "scope": labels})


def _names(labels: list[str]) -> str:
    return labels[0] if len(labels) == 1 else ", ".join(labels[:-1]) + " and " + labels[-1]


def scopes_asked(argv: list[str] | tuple[str, ...]) -> tuple[set[str], bool]:
    """The scopes an install command asks for (``--extra cu130``, ``--group docs``, ``'.[cu130,train]'``), and
    whether it asks for every extra (``--all-extras``)."""
    asked: set[str] = set()
    every_extra = False
    words = list(argv)
    for i, word in enumerate(words):
        option, eq, inline = word.partition("=")
        value = inline if eq else (words[i + 1] if i + 1 < len(words) else "")
        if option == "--extra" and value:
            asked.update(f"extra {e.strip()!r}" for e in value.split(",") if e.strip())
        elif option in ("--group", "--only-group") and value:
            asked.add(f"group {value.strip()!r}")
        elif option == "--all-extras":
            every_extra = True
        elif not word.startswith("-") and "[" in word and word.endswith("]"):
            path, _, extras = word[:-1].partition("[")
            if path in (".", "..") or path.startswith(("./", "../", "/")):
                asked.update(f"extra {e.strip()!r}" for e in extras.split(",") if e.strip())
    return asked, every_extra


def install_scopes(inventory: Inventory, asked: set[str], every_extra: bool = False) -> Inventory:
    """``inventory`` with the scopes an install asked for made part of its default install."""
    def chosen(scope: str | None) -> bool:
        return scope is not None and (scope in asked or (every_extra and scope.startswith("extra ")))

    return replace_scopes(inventory, chosen)


def replace_scopes(inventory: Inventory, chosen: Callable[[str | None], bool]) -> Inventory:
    """A copy of ``inventory`` whose packages and wheels in a ``chosen`` scope are in the default install."""
    return replace(inventory, resolved=[],
                   packages=[replace(p, scope=None) if chosen(p.scope) else p for p in inventory.packages],
                   wheels=[replace(w, scope=None) if chosen(w.scope) else w for w in inventory.wheels])
