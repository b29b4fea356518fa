"""G7: GPU code that can run on sm_121, and the sm_121a (NVFP4) path."""

from __future__ import annotations

# --- live: the GPU of this host and the kernels torch carries (envcheck preflight) --------------------
# (appended section; owned by the preflight work, issue 7)
import re as _re
from collections.abc import Iterator as _Iterator
from typing import Any

from envcheck.checks.host_facts import gpus as _live_gpus
from envcheck.model import Finding as _Finding
from envcheck.model import Status as _Status
from envcheck.rules import CheckContext as _CheckContext
from envcheck.rules import check as _check
from envcheck.rules import rule as _rule

LIVE_CAPABILITY = _rule(
    "G7-live-capability", "G7", "The GPU is not compute capability 12.1, or torch has no kernels for it", _Status.FAIL,
    """preflight reads the GPU's compute capability (torch.cuda.get_device_capability(), else nvidia-smi's
    compute_cap) and torch.cuda.get_arch_list(). On a GB10 the capability must be (12, 1) and torch needs
    SASS that runs on sm_121 (sm_120, sm_121, a family sm_12xf target) or PTX to JIT; sm_121a kernels are
    what make NVFP4 faster than FP8. Any other GPU is reported as INFO (it is not a Spark; the checks
    of binaries still apply), never as a failure.""",
    """Use a torch built for CUDA 13 with sm_120/sm_121 kernels (cu130 wheels, NGC containers); stay on FP8
    unless the kernels you run target sm_121a.""",
    ("host",),
)

_ARCH = _re.compile(r"^(sm|compute)_(\d+)([af]?)$")


def _runs_on(label: str, sm: int) -> bool:
    """Can code for ``label`` (sm_120, compute_90, sm_120f, sm_121a) run on a GPU of SM number ``sm``?"""
    match = _ARCH.match(label)
    if match is None:
        return False
    kind, number, suffix = match.group(1), int(match.group(2)), match.group(3)
    if suffix == "a":
        return number == sm  # arch-specific: that exact GPU only
    if kind == "compute":
        return number <= sm  # PTX JIT-compiles forward
    return number // 10 == sm // 10 and number <= sm  # SASS: same major, same or lower minor (f: the family)


@_check
def live_capability(ctx: _CheckContext) -> _Iterator[_Finding]:
    """G7 on the live GPU: (12, 1) with usable torch kernels PASS; other GPUs INFO; no GPU SKIP."""
    host = ctx.inventory.host
    if ctx.kind != "host" and "torch" not in host:
        return
    found = host.get("torch")
    torch: dict[str, Any] = found if isinstance(found, dict) else {}
    capability: tuple[int, int] | None = None
    name = None
    source = ""
    if torch.get("status") == "ok" and torch.get("capability"):
        cap = torch["capability"]
        capability, source = (int(cap[0]), int(cap[1])), "torch"
        name = (torch.get("devices") or [{}])[0].get("name")
    else:
        for gpu in _live_gpus(ctx):
            text = gpu.get("compute_cap")
            if text and _re.match(r"^\d+\.\d+$", str(text)):
                major, minor = str(text).split(".")
                capability, source, name = (int(major), int(minor)), "nvidia-smi", gpu.get("name")
                break
    if capability is None:
        why = "torch sees no CUDA device" if torch.get("status") == "ok" else "no torch and no nvidia-smi compute_cap"
        yield LIVE_CAPABILITY.finding(f"{why}: cannot read the compute capability", status=_Status.SKIP)
        return
    want = ctx.profile.compute_capability
    label = f"{name or 'GPU'} has capability {capability} ({source})"
    if capability != want:
        yield LIVE_CAPABILITY.info(f"{label}, not {want}: not a GB10; binary checks still apply", capability=list(capability), name=name)
        return
    arch_list = [str(a) for a in torch.get("arch_list") or []]
    if not arch_list:
        yield LIVE_CAPABILITY.passed(f"{label}", capability=list(capability))
        return
    usable = [a for a in arch_list if _runs_on(a, ctx.profile.sm)]
    if not usable:
        yield LIVE_CAPABILITY.finding(f"{label} but torch carries no kernels for it (arch list {' '.join(arch_list)})",
                                      evidence={"arch_list": arch_list})
        return
    nvfp4 = f"sm_{ctx.profile.sm}a"
    note = "" if nvfp4 in arch_list else f"; no {nvfp4} kernels: stay on FP8 (NVFP4 is slower)"
    yield LIVE_CAPABILITY.passed(f"{label}; torch kernels {' '.join(usable)} run on it{note}", arch_list=arch_list)


# --- static: the GPU code inside ELF files (binaries in wheels, folders, images) ----------------------
# (appended section; owned by the binaries work, issue 3)

from envcheck.inspect.elf import cuda_majors as _cuda_majors  # noqa: E402
from envcheck.model import Binary as _Binary  # noqa: E402

BINARY_NO_SM121 = _rule(
    "G7-binary-no-sm121", "G7", "A binary carries GPU code, but none that runs on sm_121", _Status.FAIL,
    """The ELF file embeds fatbins (SASS cubins and/or PTX), but no module has an image that a compute
    capability 12.1 GPU can load: SASS only for other majors (sm_80, sm_90, sm_100, ...) or for sm_120a
    (arch-specific, 12.0 only), and no PTX the driver could JIT. Its kernels fail with
    cudaErrorNoKernelImageForDevice ("no kernel image is available") on a DGX Spark. Each fatbin module is
    judged on its own, as the runtime registers them one by one.""",
    """Install a build that targets sm_120 or sm_121 (CUDA 12.8+ / 13 builds, TORCH_CUDA_ARCH_LIST
    including 12.0 or 12.1), or one that ships PTX; or rebuild from source with -gencode
    arch=compute_121,code=sm_121.""",
    ("elf", "folder", "wheel", "image", "container", "host"),
)
BINARY_PTX_ONLY = _rule(
    "G7-binary-ptx-only", "G7", "A binary runs on sm_121 only through PTX JIT", _Status.WARN,
    """No SASS in this binary runs on compute capability 12.1, but it ships PTX that the driver can
    JIT-compile at first load. That works, but the first launch is slow (minutes for big libraries; the
    JIT cache helps later), and the driver must support the PTX ISA version it carries (9.0 needs CUDA
    13.0 drivers).""",
    """Prefer a build with sm_120/sm_121 SASS; otherwise make sure the CUDA JIT cache
    (CUDA_CACHE_MAXSIZE, ~/.nv/ComputeCache) is large enough and persists between runs.""",
    ("elf", "folder", "wheel", "image", "container", "host"),
)
BINARY_SM121 = _rule(
    "G7-binary-sm121", "G7", "GPU code in binaries runs on sm_121", _Status.PASS,
    """Every fatbin module of these binaries has SASS built for 12.1 (native: sm_121, sm_121a, sm_121f) or
    SASS that runs on 12.1 by CUDA's binary-compatibility rule (compatible: sm_120, sm_120f: same major,
    lower minor).""",
    "",
    ("elf", "folder", "wheel", "image", "container", "host"),
)
BINARY_SM121A = _rule(
    "G7-binary-sm121a", "G7", "Whether sm_121a (NVFP4) kernels exist", _Status.INFO,
    """Only kernels built for the arch-specific sm_121a target can use the FP4 conversion instructions
    (cvt.e2m1x2) that make NVFP4 pay off on a Spark; without them NVFP4 is about 32% slower than FP8.
    Reported as INFO; with --nvfp4 a WARN when no binary carries sm_121a kernels.""",
    "Stay on FP8 unless the kernels you run are built for sm_121a (e.g. -gencode arch=compute_121a,code=sm_121a).",
    ("elf", "folder", "wheel", "image", "container", "host"),
)


def _owner(b: _Binary) -> str:
    return b.distribution or "(no distribution)"


@_check
def binary_gpu_code(ctx: _CheckContext) -> _Iterator[_Finding]:
    """G7 over binaries: FAIL for code that cannot run on sm_121, WARN for PTX-only, PASS per distribution."""
    with_code = [b for b in ctx.inventory.binaries if b.sm121 is not None]
    if not with_code:
        return
    target = f"sm_{ctx.profile.sm}"
    by_owner: dict[str, list[_Binary]] = {}
    for b in with_code:
        by_owner.setdefault(_owner(b), []).append(b)
    for owner, group in sorted(by_owner.items()):
        good: dict[str, int] = {}
        for b in group:
            where = b.location
            evidence = {"binary": b.path, "distribution": b.distribution, "sass": list(b.sass), "ptx": list(b.ptx),
                        "sections": list(b.sections)}
            if b.sm121 == "none" and b.soname and ctx.profile.cuda_major in (_cuda_majors(b.soname) or ()):
                # NVIDIA's own CUDA 13 toolkit libraries support every GPU CUDA 13 supports (7.5 to 12.x,
                # CUDA 13.0 release notes) and pick kernels by device; a leftover module is not launched.
                yield BINARY_NO_SM121.info(
                    f"{b.path} ({owner}) is the CUDA {ctx.profile.cuda_major} toolkit library {b.soname}; its fatbin "
                    f"modules ({', '.join([*b.sass, *b.ptx])}) have no {target} image, but the library dispatches by device",
                    where, **evidence,
                )
            elif b.sm121 == "none":
                yield BINARY_NO_SM121.finding(
                    f"{b.path} ({owner}) has GPU code for {', '.join([*b.sass, *b.ptx]) or 'nothing loadable'} "
                    f"but none that runs on {target}", where, evidence,
                )
            elif b.sm121 == "ptx-jit":
                isa = f" (PTX ISA {', '.join(b.ptx_isa)})" if b.ptx_isa else ""
                yield BINARY_PTX_ONLY.finding(
                    f"{b.path} ({owner}) has no SASS for {target}; it runs only by JIT-compiling {', '.join(b.ptx)}{isa}",
                    where, evidence,
                )
            else:
                good[str(b.sm121)] = good.get(str(b.sm121), 0) + 1
        if good:
            detail = ", ".join(f"{n} {level}" for level, n in sorted(good.items()))
            yield BINARY_SM121.passed(f"{owner}: GPU code in {sum(good.values())} binaries runs on {target} ({detail})",
                                      None, distribution=owner, levels=good)
    nvfp4 = f"sm_{ctx.profile.sm}a"
    carriers = sorted({b.path for b in with_code if nvfp4 in b.sass})
    if carriers:
        yield BINARY_SM121A.info(f"{len(carriers)} binaries carry {nvfp4} (NVFP4-capable) kernels, e.g. {carriers[0]}",
                                 None, binaries=carriers[:20])
    elif ctx.options.get("nvfp4"):
        yield BINARY_SM121A.finding(f"no binary carries {nvfp4} kernels: NVFP4 will be slower than FP8 here",
                                    status=_Status.WARN)
    else:
        yield BINARY_SM121A.info(f"no binary carries {nvfp4} kernels (NVFP4 would be slower than FP8)")
