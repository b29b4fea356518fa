"""G9 drift and G10 twins: what changed between two views of an environment, and do nodes match.
Not a per-inventory check: ``envcheck diff`` and ``preflight --baseline/--twin`` call these functions."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from packaging.version import InvalidVersion, Version

from envcheck import knowledge
from envcheck.inspect.fatbin_levels import GB10_SM
from envcheck.knowledge.builds import build_of_version, distribution_cuda_major
from envcheck.model import Binary, Finding, Inventory, Package, Status, TargetResult
from envcheck.rules import rule

_BAD = (Status.WARN, Status.FAIL, Status.ERROR)
# Gotchas about the machine's state at the moment of reading (memory, power, bandwidth, GPU processes, open
# playbook issues, launch plans), not about the environment: their findings are not drift.
MACHINE_STATE_GOTCHAS = ("G3", "G4", "G5", "G6", "G8", "G10")
# Variables that name the CUDA stack of an image or a live environment: a change is worth a WARN.
CUDA_IDENTITY_VARIABLES = ("CUDA_VERSION", "CUDA_DRIVER_VERSION", "NCCL_VERSION", "CUDNN_VERSION", "NVIDIA_PYTORCH_VERSION",
                           "PYTORCH_VERSION", "TORCH_CUDA_ARCH_LIST", "NVIDIA_BUILD_ID", "LD_LIBRARY_PATH")

DRIFT_PACKAGE = rule(
    "G9-drift-package", "G9", "A package was added, removed, upgraded or downgraded since the other side", Status.WARN,
    """`envcheck diff` (or `preflight --baseline`) found a distribution whose version differs between the two
    sides, with the CUDA build each side names (`torch 2.9.0+cu130 → 2.9.0+cu128`). WARN for the ML stack,
    `nvidia-*` distributions and any change of CUDA major (the drift G9 describes: an unrelated install
    replacing torch, triton or a CUDA library); INFO for other packages.""",
    """If the change was not intended, reinstall the version of the good side (`pip install name==version
    --no-deps`), or rebuild the environment from its lock file or NGC container.""")
DRIFT_BINARY = rule(
    "G9-drift-binary", "G9", "An ELF file's CUDA major or sm_121 verdict changed", Status.WARN,
    """A shared library that is on both sides (by its path under site-packages) now needs another CUDA
    major, or its GPU code runs differently on sm_121 (native → none); or a new library brings CUDA code that
    does not fit the profile. Only compared when both sides carry ELF facts (`snapshot` does; `preflight`
    only with `--binaries`).""",
    """Find the distribution that owns the file (the message names it) and reinstall its CUDA 13 / aarch64 build.""",
)
DRIFT_ENV = rule(
    "G9-drift-env", "G9", "An environment variable of the image or the live environment changed", Status.INFO,
    """An image config's `Env` or a live interpreter's variables differ between the sides. WARN for the
    variables that name the CUDA stack (`CUDA_VERSION`, `NCCL_VERSION`, `NVIDIA_PYTORCH_VERSION`,
    `TORCH_CUDA_ARCH_LIST`, `LD_LIBRARY_PATH`, ...), INFO for the rest.""",
    """Check that the new value is intended; an NGC tag change moves CUDA, NCCL and PyTorch together.""")
DRIFT_DRIVER = rule(
    "G9-drift-driver", "G9", "The NVIDIA driver version changed", Status.WARN,
    """nvidia-smi reports another driver version than on the other side. A driver update can change which
    CUDA 13 minor versions run and how the GPU behaves under load.""",
    """If the run broke after a driver update, compare with NVIDIA's DGX OS release notes before changing
    the Python environment.""")
DRIFT_FINDING = rule(
    "G9-drift-finding", "G9", "A finding got worse since the other side", Status.FAIL,
    """A finding of another rule appeared as WARN/FAIL/ERROR, or its status got worse (PASS → FAIL) between
    the two sides; the message names the rule and both statuses. A finding that went away or got better is
    INFO. `envcheck diff` exits 1 on these. Findings about the machine's state at the moment of reading
    (G3 memory, G4 power, G5 bandwidth, G6 GPU processes, G8 playbook issues, G10 launch plans) are not
    compared.""",
    """Read the named rule's own fix (`envcheck rules RULE`); the package and binary changes listed with it
    usually say which install caused it.""")
DRIFT_PIN = rule(
    "G9-drift-pin", "G9", "Installed versions now contradict each other's pins", Status.FAIL,
    """A `G9-pin-conflict` finding appeared: after the change, one distribution's `Requires-Dist` (or
    envcheck's pin table) no longer accepts another's installed version (torch ↔ triton, torchvision ↔ torch).""",
    """Install the pair together at matching versions (`pip install torch==X torchvision==Y`), or return to
    the good side's versions.""")
TWIN_MISMATCH = rule(
    "G10-twin-mismatch", "G10", "Two nodes of a multi-node run differ in something that must match", Status.FAIL,
    """`envcheck diff --twins` (or `preflight --twin`) compares what must be identical on every node of a
    distributed run: the torch version and its CUDA, the NCCL and CUDA runtime versions, the driver,
    flash-attn and every `nvidia-*` distribution. A difference is the first thing to rule out when NCCL hangs
    or a run is slower across two Sparks than on one. Host names, memory readings, temperatures, GPU
    processes and other packages are ignored.""",
    """Install the same versions on every node (the same container image, or the same lock file with
    `--no-deps`), then take the snapshots again.""")
TWIN_MATCH = rule(
    "G10-twin-match", "G10", "The nodes match in everything a multi-node run needs identical", Status.PASS,
    """Every node has the same torch, torch CUDA, NCCL, CUDA runtime, driver, flash-attn and `nvidia-*`
    versions (those that were read on any node).""",
    """Nothing to do.""")


@dataclass(frozen=True)
class Side:
    """One side of a comparison: a name (file, image, interpreter), what was read, what was found."""
    name: str
    inventory: Inventory
    findings: tuple[Finding, ...] = ()
    roots: tuple[str, ...] = ()  # the targets' names: a finding's path under one of them is compared without it


def side_of(name: str, results: Iterable[TargetResult]) -> Side:
    """A side made of checked targets (a snapshot of a project folder has several): inventories merged."""
    merged = Inventory(context="installed")
    findings: list[Finding] = []
    roots: list[str] = []
    for result in results:
        merged.extend(result.inventory)
        findings.extend(result.findings)
        roots.append(result.target)
    return Side(name, merged, tuple(findings), tuple(roots))


def compare(a: Side, b: Side, cuda_major: int, sm: int = GB10_SM) -> list[Finding]:
    """What changed from ``a`` (the good or older side) to ``b``, for the profile's CUDA major and SM."""
    out = list(_package_changes(a, b, cuda_major))
    if a.inventory.binaries and b.inventory.binaries:
        out.extend(_binary_changes(a, b, cuda_major, sm))
    out.extend(_env_changes(a, b))
    driver_a, driver_b = _driver(a.inventory), _driver(b.inventory)
    if driver_a and driver_b and driver_a != driver_b:
        out.append(DRIFT_DRIVER.finding(f"driver {driver_a} → {driver_b}", evidence={"a": driver_a, "b": driver_b}))
    out.extend(_finding_changes(a, b))
    return out


def _versions(inventory: Inventory) -> dict[str, Package]:
    """One package per name: installed ones first (as :meth:`Inventory.package`), then the first declared."""
    chosen: dict[str, Package] = {}
    for pkg in inventory.packages:
        if pkg.name not in chosen or (pkg.installed and not chosen[pkg.name].installed):
            chosen[pkg.name] = pkg
    return chosen


def _shown(pkg: Package) -> str:
    return pkg.version or pkg.specifier or pkg.url or "(any version)"


def _cuda(pkg: Package, inventory: Inventory) -> int | None:
    if (build := build_of_version(pkg.version)) is not None:
        return build.cuda_major
    if found := distribution_cuda_major(pkg):
        return found[0]
    torch = inventory.host.torch
    if pkg.name == "torch" and torch is not None and torch.status == "ok" and torch.cuda is not None:
        # PyPI's torch wheels carry no +cuXXX; the live probe's torch.version.cuda names the build
        major = torch.cuda.split(".")[0]
        return int(major) if major.isdigit() else None
    return None


def _important(name: str) -> bool:
    return name in knowledge.load("pins")["stack"]["ml_stack"] or name.startswith(("nvidia-", "cuda-"))


def _direction(old: str | None, new: str | None) -> str:
    try:
        va, vb = Version(old or ""), Version(new or "")
    except InvalidVersion:
        return "changed"
    if vb > va:
        return "upgraded"
    if vb < va:
        return "downgraded"
    return "rebuilt"  # equal versions that differ as text: another local build (+cu130 vs +cu128)


def _package_changes(a: Side, b: Side, cuda_major: int) -> Iterator[Finding]:
    old, new = _versions(a.inventory), _versions(b.inventory)
    for name in sorted(set(old) | set(new)):
        pa, pb = old.get(name), new.get(name)
        if pa is not None and pb is not None and _shown(pa) == _shown(pb):
            continue
        ca, cb = (_cuda(pa, a.inventory) if pa else None), (_cuda(pb, b.inventory) if pb else None)
        if pa is not None and pb is not None:
            change, text = _direction(pa.version, pb.version), f"{name} {_shown(pa)} → {_shown(pb)}"
            cuda_note = f" (CUDA {ca or '?'} → {cb or '?'})" if ca != cb else ""
        elif pb is not None:
            change, text = "added", f"{name} {_shown(pb)} added"
            cuda_note = f" (CUDA {cb})" if cb is not None else ""
        else:
            assert pa is not None
            change, text = "removed", f"{name} {_shown(pa)} removed"
            cuda_note = f" (CUDA {ca})" if ca is not None else ""
        worth = _important(name) or (ca != cb and cuda_major in (ca, cb)) or (change == "added" and cb not in (None, cuda_major))
        evidence: dict[str, Any] = {"change": change, "package": name, "a": _shown(pa) if pa else None,
                                    "b": _shown(pb) if pb else None, "cuda_a": ca, "cuda_b": cb}
        shown = pb or pa
        location = shown.location if shown is not None else None
        if change == "added":
            fix = f"If it was not meant to be installed, remove it (`pip uninstall {name}`), or rebuild the environment from its lock file or NGC container."
        elif change == "removed" and pa is not None and pa.version:
            fix = f"If it is still needed, install it again (`pip install {name}=={pa.version} --no-deps`), or rebuild the environment from its lock file or NGC container."
        else:
            fix = None  # the rule's: reinstall the version of the good side
        yield DRIFT_PACKAGE.finding(f"{text}{cuda_note}", location, evidence, status=None if worth else Status.INFO, fix=fix)


_SITE = re.compile(r".*/(?:site|dist)-packages/")


def file_key(path: str) -> str:
    """A path as both sides can share it: from site-packages/dist-packages on (venv locations differ)."""
    return _SITE.sub("", path)


def _cuda_facts(binary: Binary) -> bool:
    return binary.cuda_major is not None or binary.sm121 is not None or bool(binary.modules)


def _owner(binary: Binary) -> str:
    return f" ({binary.distribution})" if binary.distribution else ""


def _binary_changes(a: Side, b: Side, cuda_major: int, sm: int) -> Iterator[Finding]:
    from envcheck.checks.g07_gpu_arch import gpu_level
    old = {file_key(x.path): x for x in a.inventory.binaries}
    new = {file_key(x.path): x for x in b.inventory.binaries}
    for key in sorted(set(old) | set(new)):
        ba, bb = old.get(key), new.get(key)
        level_b = gpu_level(bb, sm) if bb is not None else None
        worse = bb is not None and (bb.cuda_major not in (None, cuda_major) or level_b == "none")
        status = None if worse else Status.INFO
        if ba is not None and bb is not None:
            changes = []
            level_a = gpu_level(ba, sm)
            if ba.cuda_major != bb.cuda_major:
                changes.append(f"CUDA {ba.cuda_major or 'none'} → {bb.cuda_major or 'none'}")
            if level_a != level_b:
                changes.append(f"sm_{sm} {level_a or 'no GPU code'} → {level_b or 'no GPU code'}")
            if changes:
                yield DRIFT_BINARY.finding(f"{key}{_owner(bb)}: {', '.join(changes)}", bb.location,
                                           _binary_evidence(key, ba, bb), status=status)
        elif bb is not None and _cuda_facts(bb):
            facts = ", ".join(x for x in (f"CUDA {bb.cuda_major}" if bb.cuda_major else "", f"sm_{sm} {level_b}" if level_b else "") if x)
            yield DRIFT_BINARY.finding(f"{key}{_owner(bb)} added: {facts}", bb.location, _binary_evidence(key, None, bb),
                                       status=status)
        elif ba is not None and bb is None and _cuda_facts(ba):
            yield DRIFT_BINARY.info(f"{key}{_owner(ba)} removed", ba.location, **_binary_evidence(key, ba, None))


def _binary_evidence(key: str, ba: Binary | None, bb: Binary | None) -> dict[str, Any]:
    return {"file": key, "cuda_a": ba.cuda_major if ba else None, "cuda_b": bb.cuda_major if bb else None,
            "sm121_a": ba.sm121 if ba else None, "sm121_b": bb.sm121 if bb else None}


def _env(inventory: Inventory) -> dict[str, str]:
    return {var.name: var.value for var in inventory.env if var.origin in ("config", "live")}


def _env_changes(a: Side, b: Side) -> Iterator[Finding]:
    old, new = _env(a.inventory), _env(b.inventory)
    if not old or not new:
        return  # a side that did not read variables (a folder, a freeze file) says nothing about them
    for name in sorted(set(old) | set(new)):
        va, vb = old.get(name), new.get(name)
        if va == vb:
            continue
        text = f"{name}: {va if va is not None else '(unset)'} → {vb if vb is not None else '(unset)'}"
        yield DRIFT_ENV.finding(text, evidence={"variable": name, "a": va, "b": vb},
                                status=Status.WARN if name in CUDA_IDENTITY_VARIABLES else None)


def _driver(inventory: Inventory) -> str | None:
    smi = inventory.host.nvidia_smi
    if smi is None:
        return None
    versions = sorted({g.driver_version for g in smi.gpus if g.driver_version})
    return ", ".join(versions) or None


def _finding_key(f: Finding, roots: tuple[str, ...]) -> tuple[str, str, str]:
    """(rule, where, member) comparable across sides: without the target's name and the venv's location."""
    if f.location is None:
        return f.rule, "", ""
    path = f.location.path
    for root in roots:
        if path == root:
            path = ""
            break
        if path.startswith(root.rstrip("/") + "/"):
            path = path[len(root.rstrip("/")) + 1:]
            break
    return f.rule, file_key(path), f.location.member or ""


def _binary_rule(rule_id: str) -> bool:
    return "-binary" in rule_id or "-elf-" in rule_id


def _by_key(side: Side, skip_binary: bool) -> dict[tuple[str, str, str], Finding]:
    worst: dict[tuple[str, str, str], Finding] = {}
    for f in side.findings:
        if (f.status in (Status.INFO, Status.SKIP) or f.gotcha in MACHINE_STATE_GOTCHAS
                or f.rule.startswith("G9-drift-") or (skip_binary and _binary_rule(f.rule))):
            continue
        key = _finding_key(f, side.roots)
        if key not in worst or f.status.rank > worst[key].status.rank:
            worst[key] = f
    return worst


def _finding_changes(a: Side, b: Side) -> Iterator[Finding]:
    # ELF-derived findings are compared only when both sides scanned ELF files (preflight without --binaries did not).
    skip_binary = not (a.inventory.binaries and b.inventory.binaries)
    old, new = _by_key(a, skip_binary), _by_key(b, skip_binary)
    for key in sorted(set(old) | set(new)):
        fa, fb = old.get(key), new.get(key)
        sa, sb = fa.status if fa else None, fb.status if fb else None
        evidence = {"rule": key[0], "a": sa.value if sa else None, "b": sb.value if sb else None}
        if fb is not None and sb in _BAD and (sa is None or sb.rank > sa.rank):
            target = DRIFT_PIN if key[0] == "G9-pin-conflict" else DRIFT_FINDING
            before = sa.value if sa else "not reported"
            yield target.finding(f"{key[0]} {before} → {sb.value}: {fb.message}", fb.location,
                                 {**evidence, "message": fb.message}, fix=fb.fix or None)
        elif fa is not None and sa in _BAD and (sb is None or sb.rank < sa.rank):
            after = sb.value if sb else "no longer reported"
            yield DRIFT_FINDING.info(f"{key[0]} {sa.value} → {after}: {fa.message}", fa.location, **evidence)


def twin_facts(side: Side) -> dict[str, str]:
    """What must match on every node (as read): torch and its CUDA, NCCL, the CUDA runtime, the driver,
    flash-attn and every nvidia-* distribution."""
    inventory = side.inventory
    facts = {name: _shown(pkg) for name, pkg in _versions(inventory).items() if _is_package(name)}
    torch = inventory.host.torch
    if torch is not None and torch.status == "ok":
        if torch.version:
            facts.setdefault("torch", torch.version)
        if torch.cuda:
            facts["torch CUDA"] = torch.cuda
    env = _env(inventory)
    shown = ("CUDA_VERSION", "NCCL_VERSION", "CUDNN_VERSION", "NVIDIA_PYTORCH_VERSION")
    facts.update({name: env[name] for name in shown if name in env})
    if driver := _driver(inventory):
        facts["driver"] = driver
    return facts


def twins(sides: Sequence[Side]) -> list[Finding]:
    """G10 for a multi-node run: every node against the first, on :func:`twin_facts` only."""
    first = sides[0]
    reference = twin_facts(first)
    out: list[Finding] = []
    compared: set[str] = set(reference)
    for other in sides[1:]:
        facts = twin_facts(other)
        compared |= set(facts)
        for key in sorted(set(reference) | set(facts)):
            va, vb = reference.get(key), facts.get(key)
            if va == vb:
                continue
            missing = "not installed" if _is_package(key) else "not read"
            shown_a, shown_b = va if va is not None else missing, vb if vb is not None else missing
            unread = (va is None or vb is None) and not _is_package(key)
            out.append(TWIN_MISMATCH.finding(
                f"{key}: {shown_a} on {first.name}, {shown_b} on {other.name}",
                evidence={"what": key, "a": va, "b": vb, "node_a": first.name, "node_b": other.name},
                status=Status.WARN if unread else None,
            ))
    if not compared:
        # nothing that must match was read: that is no mismatch (nodes without torch), only nothing to compare
        out.append(TWIN_MATCH.info(f"nothing to compare: no torch, NCCL, CUDA or driver versions were read on any of the {len(sides)} nodes",
                                   nodes=[s.name for s in sides]))
    elif not out:
        out.append(TWIN_MATCH.passed(f"{len(sides)} nodes match: {', '.join(sorted(compared))}", nodes=[s.name for s in sides]))
    return out


def summary(findings: Sequence[Finding], lead: str, shown: int = 3) -> Finding | None:
    """One finding for ``findings`` (the one-line-per-gotcha preflight format): the worst status, the most
    important changes first in its message, all of them in ``evidence["changes"]``."""
    if not findings:
        return None
    ordered = sorted(findings, key=lambda f: -f.status.rank)
    worst = ordered[0]
    if worst.status is Status.PASS:
        return worst
    notable = [f for f in ordered if f.status.rank >= Status.WARN.rank] or ordered
    text = "; ".join(f.message for f in notable[:shown])
    more = len(findings) - min(shown, len(notable))
    message = f"{lead}: {text}" + (f" (+{more} more changes)" if more > 0 else "")
    evidence = {"changes": [{"rule": f.rule, "status": f.status.value, "message": f.message} for f in ordered]}
    return Finding(rule=worst.rule, gotcha=worst.gotcha, status=worst.status, message=message, location=None,
                   evidence=evidence, fix=worst.fix, policy=worst.policy)


def _is_package(key: str) -> bool:
    return key in ("torch", "flash-attn") or key.startswith("nvidia-")
