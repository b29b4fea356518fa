"""G7: GPU code that can run on sm_121, and the sm_121a (NVFP4) path."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator
from typing import Any

from envcheck import kinds
from envcheck.checks.host_facts import gpus
from envcheck.fixes import dockerfile_fixes
from envcheck.inspect import fatbin_levels
from envcheck.model import Binary, EnvVar, Finding, Location, Package, Status
from envcheck.rules import CheckContext, check, rule

LIVE_CAPABILITY = rule(
    "G7-live-capability", "G7", "The GPU is not compute capability 12.1, or torch has no kernels for it", Status.FAIL,
    """preflight reads the GPU's compute capability (torch.cuda.get_device_capability(), else nvidia-smi's
    compute_cap) and torch.cuda.get_arch_list(). On a GB10 the capability must be (12, 1) and torch needs
    SASS that runs on sm_121 (sm_120, sm_121, a family sm_12xf target) or PTX to JIT; sm_121a kernels are
    what make NVFP4 faster than FP8. Any other GPU is reported as INFO (it is not a Spark; the checks
    of binaries still apply), never as a failure.""",
    """Use a torch built for CUDA 13 with sm_120/sm_121 kernels (cu130 wheels, NGC containers); stay on FP8
    unless the kernels you run target sm_121a.""",
    kinds.LIVE_KINDS)

_ARCH = re.compile(r"^(sm|compute)_(\d+)([af]?)$")


def _runs_on(label: str, sm: int) -> bool:
    """Can code for ``label`` (sm_120, compute_90, sm_120f, sm_121a) run on a GPU of SM number ``sm``?"""
    if (match := _ARCH.match(label)) is None:
        return False
    kind, number, suffix = match.group(1), int(match.group(2)), match.group(3)
    if suffix == "a":
        return number == sm  # arch-specific: that exact GPU only
    if kind == "compute":
        return number <= sm  # PTX JIT-compiles forward
    return number // 10 == sm // 10 and number <= sm  # SASS: same major, same or lower minor (f: the family)


@check(LIVE_CAPABILITY)
def live_capability(ctx: CheckContext) -> Iterator[Finding]:
    """G7 on the live GPU: (12, 1) with usable torch kernels PASS; other GPUs INFO; no GPU SKIP."""
    host = ctx.inventory.host
    if ctx.kind != "host" and host.torch is None:
        return
    torch = host.torch
    capability: tuple[int, int] | None = None
    name, source = None, ""
    ok = torch is not None and torch.status == "ok"
    if torch is not None and ok and torch.capability and len(torch.capability) >= 2:
        capability, source = (torch.capability[0], torch.capability[1]), "torch"
        name = torch.devices[0].name if torch.devices else None
    else:
        for gpu in gpus(ctx):
            if gpu.compute_cap and re.match(r"^\d+\.\d+$", gpu.compute_cap):
                major, minor = gpu.compute_cap.split(".")
                capability, source, name = (int(major), int(minor)), "nvidia-smi", gpu.name
                break
    if capability is None:
        why = "torch sees no CUDA device" if ok else "no torch and no nvidia-smi compute_cap"
        yield LIVE_CAPABILITY.finding(f"{why}: cannot read the compute capability", status=Status.SKIP)
        return
    want = ctx.profile.compute_capability
    label = f"{name or 'GPU'} has capability {capability} ({source})"
    if capability != want:
        yield LIVE_CAPABILITY.info(f"{label}, not {want}: not a GB10; binary checks still apply", capability=list(capability), name=name)
        return
    arch_list = list(torch.arch_list or ()) if torch is not None else []
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


BINARY_NO_SM121 = rule(
    "G7-binary-no-sm121", "G7", "A binary carries GPU code, but none that runs on sm_121", Status.FAIL,
    """The ELF file embeds fatbins (SASS cubins and/or PTX), but no module has an image that a compute
    capability 12.1 GPU can load: SASS only for other majors (sm_80, sm_90, sm_100, ...) or for sm_120a
    (arch-specific, 12.0 only), and no PTX the driver could JIT. Its kernels fail with
    cudaErrorNoKernelImageForDevice ("no kernel image is available") on a DGX Spark. Each fatbin module is
    judged on its own, as the runtime registers them one by one. Binaries whose code is all for other GPU
    generations, arch- or family-specific code among it (sm_90a, sm_100f: vLLM's FlashMLA; FA3's sm_90a with
    a few plain sm_80 kernels), in a package whose other binaries carry SASS that runs here are backends it
    picks by GPU: WARN, as those features are missing.""",
    """Install a build that targets sm_120 or sm_121 (CUDA 12.8+ / 13 builds, TORCH_CUDA_ARCH_LIST
    including 12.0 or 12.1), or one that ships PTX; or rebuild from source with -gencode
    arch=compute_121,code=sm_121.""",
    kinds.BINARY_KINDS)
BINARY_PTX_ONLY = rule(
    "G7-binary-ptx-only", "G7", "A binary runs on sm_121 only through PTX JIT", Status.WARN,
    """No SASS in this binary runs on compute capability 12.1, but it ships PTX that the driver can
    JIT-compile at first load. That works, but the first launch is slow (minutes for big libraries; the
    JIT cache helps later), and the driver must support the PTX ISA version it carries (9.0 needs CUDA
    13.0 drivers).""",
    """Prefer a build with sm_120/sm_121 SASS; otherwise make sure the CUDA JIT cache
    (CUDA_CACHE_MAXSIZE, ~/.nv/ComputeCache) is large enough and persists between runs.""",
    kinds.BINARY_KINDS)
BINARY_SM121A = rule(
    "G7-binary-sm121a", "G7", "Whether sm_121a (NVFP4) kernels exist", Status.INFO,
    """Only kernels built for the arch-specific sm_121a target can use the FP4 conversion instructions
    (cvt.e2m1x2) that make NVFP4 pay off on a Spark; without them NVFP4 is about 32% slower than FP8.
    Reported as INFO; with --nvfp4 a WARN when no binary carries sm_121a kernels.""",
    "Stay on FP8 unless the kernels you run are built for sm_121a (e.g. -gencode arch=compute_121a,code=sm_121a).",
    kinds.BINARY_KINDS)


def _nvidia_cuda13_library(b: Binary, major: int) -> bool:
    """Is ``b`` a library of NVIDIA's own CUDA ``major`` wheels (site-packages/nvidia/cu13/, nvidia-*-cu13)?"""
    dist = b.distribution or ""
    # the path is absolute in a folder, relative to the wheel's root for a wheel member ("nvidia/cu13/lib/...")
    return dist.startswith("nvidia-") and (f"/nvidia/cu{major}/" in f"/{b.path}" or dist.endswith(f"-cu{major}"))


def gpu_level(b: Binary, sm: int) -> str | None:
    """native | compatible | ptx-jit | none (None: no GPU code) on SM ``sm``, from the recorded modules; a
    reading without them (shipped wheel facts, an older snapshot) has the GB10's level, else its images as one
    module."""
    if b.modules:
        return _modules_level(b.modules, sm)
    if sm == fatbin_levels.GB10_SM or b.sm121 is None:
        return b.sm121
    return _modules_level((" ".join((*b.sass, *b.ptx)),), sm)


@functools.cache
def _modules_level(modules: tuple[str, ...], sm: int) -> str | None:
    return fatbin_levels.modules_level(modules, sm)


def _other_generation_only(b: Binary, sm: int) -> bool:
    """Is ``b``'s GPU code built for other GPU generations only, with arch- or family-specific code among it
    (sm_90a, sm_100f; FA3's sm_90a kernels next to a few plain sm_80 ones)? Such builds are per-GPU backends a
    package picks by device (vLLM's FlashMLA, FA3), not its generic path; a specific build for this generation
    (sm_120a) is what it would pick here, and only plain code is generic."""
    found = [_ARCH.match(label) for label in (*b.sass, *b.ptx)]
    return (bool(found) and all(m is not None and int(m.group(2)) // 10 != sm // 10 for m in found)
            and any(m is not None and m.group(3) != "" for m in found))


def _codes(binaries: Iterable[Binary]) -> str:
    """The GPU code of ``binaries`` together, in words (``sm_80, sm_90a, compute_80``)."""
    seen = sorted({code for b in binaries for code in (*b.sass, *b.ptx)})
    return ", ".join(seen[:12]) + (f" and {len(seen) - 12} more" if len(seen) > 12 else "") if seen else "nothing loadable"


def _grouped(owner: str, binaries: list[Binary], shown: int = 50) -> dict[str, Any]:
    """Evidence of one finding about many binaries of one package."""
    return {"distribution": None if owner == "no distribution" else owner, "count": len(binaries),
            "binaries": [str(b.location) if b.location else b.path for b in binaries[:shown]]}


@check(BINARY_NO_SM121, BINARY_PTX_ONLY, BINARY_SM121A)
def binary_gpu_code(ctx: CheckContext) -> Iterator[Finding]:
    """G7 over binaries: FAIL for code that cannot run on sm_121, WARN for PTX-only, PASS per distribution."""
    level = {id(b): gpu_level(b, ctx.profile.sm) for b in ctx.inventory.binaries}
    with_code = [b for b in ctx.inventory.binaries if level[id(b)] is not None]
    if not with_code:
        return
    from envcheck.checks.g01_binaries import variant_key
    from envcheck.knowledge.sonames import cuda_majors  # the soname table: only for targets with binaries
    target = f"sm_{ctx.profile.sm}"
    major = ctx.profile.cuda_major
    # bitsandbytes-style packages ship one library per CUDA version (libbnb_cuda121.so ... _cuda130.so) and
    # load the one matching the CUDA they run under: where the CUDA 13 variant is shipped, the others never load
    loaded_variants = {variant_key(b): b.path for b in ctx.inventory.binaries if b.cuda_major == major}
    by_owner: dict[str, list[Binary]] = {}
    for b in with_code:
        by_owner.setdefault(b.distribution or "no distribution", []).append(b)
    for owner, group in sorted(by_owner.items()):
        good: dict[str, int] = {}
        failing: list[tuple[Binary, dict[str, Any]]] = []  # one finding per package and cause: the files are its evidence
        jit_only: list[tuple[Binary, dict[str, Any]]] = []
        cubins = [b for b in group if b.machine == "cuda"]  # per-kernel cubins a library loads by GPU at run time
        cubins_none = [b for b in cubins if level[id(b)] == "none"]
        for b in group:
            if b.machine == "cuda" and level[id(b)] == "none":
                continue  # judged with the package's other cubins below
            where = b.location
            evidence = {"binary": b.path, "distribution": b.distribution, "sass": list(b.sass), "ptx": list(b.ptx),
                        "sections": list(b.sections)}
            chosen = loaded_variants.get(variant_key(b)) if b.cuda_major != major and level[id(b)] != "native" else None
            if chosen is not None and level[id(b)] in ("none", "ptx-jit"):
                yield BINARY_NO_SM121.info(
                    f"{b.path} ({owner}) is a CUDA {b.cuda_major or 'other'} variant; on CUDA {major} the package loads "
                    f"{chosen} instead, so its GPU code ({', '.join([*b.sass, *b.ptx]) or 'none'}) is not used",
                    where, **evidence, loaded_instead=chosen)
            elif level[id(b)] == "none" and b.soname and ctx.profile.cuda_major in (cuda_majors(b.soname) or ()):
                # NVIDIA's own CUDA 13 toolkit libraries support every GPU CUDA 13 supports (7.5 to 12.x,
                # CUDA 13.0 release notes) and pick kernels by device; a leftover module is not launched.
                yield BINARY_NO_SM121.info(
                    f"{b.path} ({owner}) is the CUDA {ctx.profile.cuda_major} toolkit library {b.soname}; its fatbin "
                    f"modules ({', '.join([*b.sass, *b.ptx])}) have no {target} image, but the library dispatches by device",
                    where, **evidence)
            elif level[id(b)] == "none":
                failing.append((b, evidence))
            elif level[id(b)] == "ptx-jit" and _nvidia_cuda13_library(b, ctx.profile.cuda_major):
                isa = f" (PTX ISA {', '.join(b.ptx_isa)})" if b.ptx_isa else ""
                # NVIDIA ships some CUDA 13 libraries (cuFile) with PTX for newer GPUs; their PTX ISA is
                # older than the CUDA 13 driver's, and the kernels are few: a reading, not a warning.
                yield BINARY_PTX_ONLY.info(
                    f"{b.path} ({owner}) is part of NVIDIA's CUDA {ctx.profile.cuda_major} stack and reaches {target} "
                    f"by JIT-compiling {', '.join(b.ptx)}{isa} at first use", where, **evidence)
            elif level[id(b)] == "ptx-jit":
                jit_only.append((b, evidence))
            else:
                good[str(level[id(b)])] = good.get(str(level[id(b)]), 0) + 1
        # Loose files (no distribution) are each their own cause; a package's files are one.
        single = group[0].distribution is None
        backends = [b for b, _ in failing if _other_generation_only(b, ctx.profile.sm)]
        if not single and failing and len(backends) == len(failing) and good:
            failing = []  # its main path has SASS for this GPU: what it lacks is features built for other GPUs only
            yield BINARY_NO_SM121.finding(
                f"{owner}: {len(backends)} binaries carry kernels only for other GPU generations, specialised ones "
                f"among them ({_codes(backends)}), none for {target}, e.g. {backends[0].path}: backends the package selects by GPU, "
                "so those features are missing here while its other binaries run", backends[0].location,
                _grouped(owner, backends), status=Status.WARN,
                fix=f"Nothing to reinstall: the package uses its other kernels here. A feature that needs these backends "
                    f"(FlashMLA, FA3, ...) needs a build of them for {target}, or another backend.")
        for b, evidence in failing if len(failing) == 1 or single else []:
            yield BINARY_NO_SM121.finding(
                f"{b.path} ({owner}) has GPU code for {', '.join([*b.sass, *b.ptx]) or 'nothing loadable'} "
                f"but none that runs on {target}", b.location, evidence)
        if len(failing) > 1 and not single:
            yield BINARY_NO_SM121.finding(
                f"{owner}: {len(failing)} binaries have GPU code for {_codes(b for b, _ in failing)} but none that runs on "
                f"{target}, e.g. {failing[0][0].path}", failing[0][0].location,
                _grouped(owner, [b for b, _ in failing]))
        for b, evidence in jit_only if len(jit_only) == 1 or single else []:
            isa = f" (PTX ISA {', '.join(b.ptx_isa)})" if b.ptx_isa else ""
            yield BINARY_PTX_ONLY.finding(
                f"{b.path} ({owner}) has no SASS for {target}; it runs only by JIT-compiling {', '.join(b.ptx)}{isa}",
                b.location, evidence)
        if len(jit_only) > 1 and not single:
            yield BINARY_PTX_ONLY.finding(
                f"{owner}: {len(jit_only)} binaries have no SASS for {target}; they run only by JIT-compiling "
                f"{', '.join(sorted({p for b, _ in jit_only for p in b.ptx}))}, e.g. {jit_only[0][0].path}", jit_only[0][0].location,
                _grouped(owner, [b for b, _ in jit_only]))
        if cubins_none:
            # A library with one cubin per kernel and GPU (flashinfer-cubin) loads only the file for its GPU:
            # what matters is whether the package has any for this GPU at all.
            runs = len(cubins) - len(cubins_none)
            if runs:
                yield BINARY_NO_SM121.info(
                    f"{owner}: {len(cubins_none)} per-kernel cubins for other GPUs ({_codes(cubins_none)}) are not loaded "
                    f"on {target}; {runs} of its cubins run on it", cubins_none[0].location, **_grouped(owner, cubins_none))
            else:
                yield BINARY_NO_SM121.finding(
                    f"{owner}: its {len(cubins_none)} per-kernel cubins are for {_codes(cubins_none)}, none for {target}: "
                    f"the library picks cubins by GPU at run time, so the kernels it loads from them are missing on this "
                    f"GPU (it may fall back to other kernels or fail)", cubins_none[0].location,
                    _grouped(owner, cubins_none), status=Status.WARN)
        if good:
            detail = ", ".join(f"{n} {level}" for level, n in sorted(good.items()))
            label = owner if group[0].distribution else "files of no distribution"
            yield BINARY_NO_SM121.passed(f"{label}: GPU code in {sum(good.values())} binaries runs on {target} ({detail})",
                                         None, distribution=group[0].distribution, levels=good)
    nvfp4 = f"sm_{ctx.profile.sm}a"
    carriers = sorted({b.path for b in with_code if nvfp4 in b.sass})
    if carriers:
        yield BINARY_SM121A.info(f"{len(carriers)} binaries carry {nvfp4} (NVFP4-capable) kernels, e.g. {carriers[0]}",
                                 None, binaries=carriers[:20])
    elif ctx.options.nvfp4:
        yield BINARY_SM121A.finding(f"no binary carries {nvfp4} kernels: NVFP4 will be slower than FP8 here",
                                    status=Status.WARN)
    else:
        yield BINARY_SM121A.info(f"no binary carries {nvfp4} kernels (NVFP4 would be slower than FP8)")


JETSON_IMAGE = rule(
    "G7-jetson-image", "G7", "The image is built for a Jetson GPU", Status.FAIL,
    """The image (a Dockerfile's FROM, a compose service, a Kubernetes container) is a Jetson build
    (knowledge/ngc_tags.toml, [[jetson]]): NVIDIA's L4T containers and the jetson-containers /
    NVIDIA-AI-IOT images. Their CUDA code is compiled for the Jetson's integrated GPU, and SASS of another
    major architecture does not run on sm_121. L4T images (JetPack 6 and older: Xavier/Orin, sm_72/sm_87)
    also carry the Tegra CUDA user space, which the Spark's driver does not serve: a FAIL. Thor images
    (JetPack 7) are SBSA CUDA 13 builds for sm_110: they run only where they also carry PTX or sm_12x code,
    a WARN. A Jetson stage the built image does not use (a per-platform menu, FROM base-${PLATFORM}) is
    another machine's alternative, and a Jetson image whose tag names CUDA 12 is G1-cuda12-base's finding
    (one cause, one finding): INFO.""",
    """Use an image built for the Spark: nvcr.io/nvidia/vllm, nvcr.io/nvidia/pytorch (25.09 or newer) or
    another CUDA 13 arm64 build whose arch list includes 12.0/12.1.""",
    ("dockerfile",))


@check(JETSON_IMAGE)
def jetson_images(ctx: CheckContext) -> Iterator[Finding]:
    from envcheck.knowledge.base_images import in_stage, jetson_image, safe_describe
    for image in ctx.inventory.images:
        facts = safe_describe(image.ref)
        row = jetson_image(facts) if facts is not None else None
        if row is None:
            continue
        cuda12 = facts is not None and facts.cuda_major is not None and facts.cuda_major < ctx.profile.cuda_major
        unused = image.location is not None and image.location.outside_image
        yield JETSON_IMAGE.finding(
            f"{in_stage(image.stage)}{image.ref} is built for {row['gpu']}: its GPU code targets that GPU, not "
            f"{ctx.profile.name}'s sm_{ctx.profile.sm}{'; G1-cuda12-base reports its CUDA' if cuda12 else ''}", image.location,
            {"image": image.ref, "stage": image.stage, "gpu": row["gpu"], "source": row["source"],
             "inferred": bool(row.get("inferred", False))},
            status=Status.INFO if unused or cuda12 else Status[row["status"]])


ARCH_LIST = rule(
    "G7-torch-cuda-arch-list", "G7", "TORCH_CUDA_ARCH_LIST does not cover sm_121", Status.WARN,
    """TORCH_CUDA_ARCH_LIST (ENV, ARG, or exported in a RUN) chooses the GPU code that torch extensions
    (xformers, custom ops, apex, ...) are compiled for. A GB10 (compute capability 12.1) runs SASS built for
    12.1, 12.1a or 12.0 (same major, lower minor), and PTX of 12.0/12.1 through the driver's JIT. A list
    without any of these yields extensions that fail with "no kernel image is available"; a list with only
    older PTX (8.0+PTX) JIT-compiles every kernel at first load. Whether the list includes 12.1a (the
    arch-specific target whose FP4 instructions make NVFP4 faster than FP8) is reported as INFO.""",
    "Add 12.1 to the list (TORCH_CUDA_ARCH_LIST=\"12.1\"; \"12.1a\" for NVFP4 kernels; \"12.0+PTX\" keeps other Blackwell GPUs working too).",
    ("dockerfile", "image"), autofix=dockerfile_fixes.arch_list)
ARCH_LIST_NVFP4 = rule(
    "G7-arch-list-sm121a", "G7", "Whether TORCH_CUDA_ARCH_LIST builds sm_121a (NVFP4) kernels", Status.INFO,
    """Only kernels compiled for the arch-specific target 12.1a (sm_121a) can use cvt.e2m1x2, which NVFP4 needs
    to be faster than FP8 on a Spark (about 32% slower without it).""",
    "Add 12.1a to TORCH_CUDA_ARCH_LIST for extensions that run NVFP4 kernels; otherwise stay on FP8.",
    ("dockerfile", "image"))
SOURCE_BUILD_ARCH = rule(
    "G7-source-build-arch", "G7", "A CUDA extension is built from source without sm_121 in TORCH_CUDA_ARCH_LIST", Status.WARN,
    """xformers (or another torch CUDA extension) is compiled from source in the Dockerfile (git clone + pip
    install ., setup.py install, pip install git+...). During docker build no GPU is visible, so the kernels
    are built for TORCH_CUDA_ARCH_LIST; when it is unset on a base that does not set it (NGC images set one
    that includes 12.0+PTX) or lacks 12.x, the extension has no code for sm_121. Triton is not judged here:
    it compiles kernels at run time, not at build time.""",
    "Set TORCH_CUDA_ARCH_LIST=\"12.1\" (or \"12.0;12.1a\") in the same RUN or in an ENV before the build, as Unsloth's Spark recipe does.",
    ("dockerfile",))

CMAKE_ARCH = rule(
    "G7-cmake-cuda-architectures", "G7", "CMAKE_CUDA_ARCHITECTURES / CUDAARCHS does not cover sm_121", Status.WARN,
    """CMake builds of CUDA code (llama.cpp, onnxruntime, llama-cpp-python through CMAKE_ARGS, custom kernels)
    take their GPU targets from CMAKE_CUDA_ARCHITECTURES (ENV, ARG, -DCMAKE_CUDA_ARCHITECTURES= on the cmake
    command line, CMAKE_ARGS) or from CUDAARCHS, the environment variable that initialises it. Entries are
    compute capabilities without the dot: 121 builds SASS and PTX for sm_121, 121-real SASS only, 121-virtual
    PTX only, 121a the arch-specific target NVFP4 needs; 120 (or 120f) SASS also runs on a GB10. `all` and
    `all-major` include sm_120/sm_121 with a CUDA 12.8+ toolkit. `native` builds for the GPUs visible during
    the build, and docker build sees none: the result cannot be told from the Dockerfile. A list with nothing
    for 12.x yields binaries that fail with "no kernel image is available" on a Spark.""",
    "Add 121 to the list (-DCMAKE_CUDA_ARCHITECTURES=121, or \"120;121a\" for NVFP4 kernels); replace native with an explicit list in container builds.",
    ("dockerfile", "image"))
NVCC_TARGET = rule(
    "G7-nvcc-target", "G7", "The stage's CUDA toolkit cannot compile for the GPU target it is asked for", Status.FAIL,
    """A TORCH_CUDA_ARCH_LIST, CMAKE_CUDA_ARCHITECTURES or CUDAARCHS value names a target that the nvcc of the
    stage's base image does not know: sm_120 needs CUDA 12.8 or later, sm_121, sm_121a and the family targets
    (sm_120f) need 12.9 or later (envcheck/knowledge/nvcc_targets.toml). nvcc stops with "Unsupported gpu
    architecture" for such a target, so the build fails, whatever else the list holds. Judged where the base
    image's tag names the CUDA version (nvidia/cuda:12.6.3-devel-..., an NGC release in envcheck's table).""",
    "Build on a CUDA 13 devel image (nvidia/cuda:13.0.1-devel-ubuntu24.04 or an NGC PyTorch 25.08+ container), which also matches the Spark's CUDA 13.",
    ("dockerfile",))
_CMAKE_ENTRY = re.compile(r"^(\d+)([af]?)(?:-(real|virtual))?$")
CMAKE_VARIABLES = ("CMAKE_CUDA_ARCHITECTURES", "CUDAARCHS")


def cmake_arch_coverage(value: str, sm: int) -> tuple[str, list[str], bool]:
    """(native | jit-same-major | jit-older | none | all | undecidable, readable targets, has the sm_XXXa target)
    for a CMake CUDA architectures list (``121``, ``120-real;121a``, ``all-major``, ``native``)."""
    text = value.strip().strip("\"'").strip()
    low = text.lower()
    if low in ("all", "all-major"):
        return "all", [low], False
    if low == "native" or not text:
        return "undecidable", [low or "(empty)"], False
    if low in ("off", "false", "0", "no"):
        return "none", [f"{text} (the compiler's default)"], False
    sass: list[str] = []  # in TORCH_CUDA_ARCH_LIST spelling, judged by arch_list_coverage
    ptx: list[str] = []
    targets: list[str] = []
    for raw in re.split(r"[;,\s]+", text):
        m = _CMAKE_ENTRY.match(raw.lower())
        if not m or len(m.group(1)) < 2:
            continue
        number, suffix, kind = m.group(1), m.group(2), m.group(3)
        dotted = f"{number[:-1]}.{number[-1]}{suffix}"
        labels = []
        if kind != "virtual":
            sass.append(dotted)
            labels.append(f"sm_{number}{suffix}")
        if kind != "real":
            ptx.append(dotted + "+PTX")
            labels.append(f"compute_{number}{suffix}")
        targets.append("+".join(labels))
    level, _, nvfp4 = arch_list_coverage(" ".join(sass), sm)
    if level != "native":  # PTX only counts where no SASS runs (a -virtual entry is never native)
        ptx_level, _, _ = arch_list_coverage(" ".join(ptx), sm)
        ptx_level = "jit-same-major" if ptx_level == "native" else ptx_level
        order = ("none", "jit-older", "jit-same-major")
        level = max(level, ptx_level, key=order.index)
    return level, targets, nvfp4


_ENTRY = re.compile(r"^(\d+)\.(\d+)([af]?)(\+ptx)?$", re.I)
_EXTENSIONS = ("xformers", "flash-attn", "apex", "bitsandbytes", "deepspeed", "vllm", "flashinfer-python", "causal-conv1d", "mamba-ssm")


def arch_list_coverage(value: str, sm: int) -> tuple[str, list[str], bool]:
    """(native | jit-same-major | jit-older | none, readable targets, includes the sm_XXXa target)."""
    major_want, minor_want = divmod(sm, 10)
    level = "none"
    targets: list[str] = []
    nvfp4 = False
    order = {"none": 0, "jit-older": 1, "jit-same-major": 2, "native": 3}
    for raw in re.split(r"[;,\s]+", value.strip().strip("\"'")):
        m = _ENTRY.match(raw)
        if not m:
            continue
        major, minor, suffix, ptx = int(m.group(1)), int(m.group(2)), m.group(3).lower(), bool(m.group(4))
        label = f"sm_{major}{minor}{suffix}"
        targets.append(label + (f"+compute_{major}{minor}{suffix}" if ptx else ""))
        exact_a = major == major_want and (minor, suffix) == (minor_want, "a")
        nvfp4 = nvfp4 or exact_a
        found = "none"
        if exact_a or (major == major_want and minor <= minor_want and suffix in ("", "f")):
            found = "native"
        elif ptx and suffix != "a" and (major, minor) <= (major_want, minor_want):
            found = "jit-same-major" if major == major_want else "jit-older"
        level = max(level, found, key=order.__getitem__)
    return level, targets, nvfp4


ARCH_LIST_RUN_ONLY = rule(
    "G7-arch-list-run-only", "G7", "TORCH_CUDA_ARCH_LIST is exported in a RUN that builds nothing with it", Status.WARN,
    """Each RUN has its own shell: `RUN export TORCH_CUDA_ARCH_LIST=12.1a` (or a bare assignment) on a RUN of its
    own sets the variable for that shell only, and it is gone when the RUN ends. A CUDA extension built from
    source in a later RUN gets the list that ENV/ARG or the base image set (NGC's lists have no sm_121a; with
    none, torch's default for a build machine without a GPU), not the one written here. Exported in the RUN
    that runs the build (`export ... && pip install .`), it is in effect and this rule is silent.""",
    """Set it with ENV (or ARG) before the build, or export it in the RUN that runs the build.""",
    ("dockerfile",))


@check(ARCH_LIST, ARCH_LIST_NVFP4, SOURCE_BUILD_ARCH, NVCC_TARGET, ARCH_LIST_RUN_ONLY)
def dockerfile_arch_list(ctx: CheckContext) -> Iterator[Finding]:
    """G7 over TORCH_CUDA_ARCH_LIST values in a Dockerfile and the extensions it builds from source."""
    settings = [v for v in ctx.inventory.env if v.name == "TORCH_CUDA_ARCH_LIST" and v.origin != "run-only"]
    yield from _arch_list_settings(settings, ctx.profile.sm)
    yield from _cmake_arch_lists(ctx)
    if ctx.kind == "dockerfile":
        yield from _source_build_arch(ctx, settings)
        yield from _nvcc_targets(ctx)
        yield from _run_only_settings(ctx, settings)


def _run_only_settings(ctx: CheckContext, settings: list[EnvVar]) -> Iterator[Finding]:
    """Arch settings exported in a RUN of their own: WARN where a later source build of the stage needed them."""
    from envcheck.knowledge.base_images import in_stage
    for var in ctx.inventory.env:
        vloc = var.location
        if var.origin != "run-only" or vloc is None or vloc.line is None:
            continue
        later = [p for p in _source_builds(ctx) if p.location is not None and p.location.stage == vloc.stage
                 and p.location.line is not None and p.location.line > vloc.line]
        what = f"{in_stage(vloc.stage)}{var.name}={var.value}, set in a RUN that builds nothing with it, lasts only for that RUN's shell"
        evidence = {"variable": var.name, "value": var.value, "stage": vloc.stage}
        if not later:
            yield ARCH_LIST_RUN_ONLY.info(f"{what}: no later build needs it", vloc, **evidence)
            continue
        build = later[0]
        effective = _effective_arch_list(settings, build.location) if build.location is not None else None
        gets = f"{var.name}={effective.value!r} from ENV/ARG" if effective is not None else "the base image's list (or torch's default)"
        yield ARCH_LIST_RUN_ONLY.finding(
            f"{what}: {build.name}, built from source on line {build.location.line if build.location else '?'}, gets {gets}, not "
            f"{var.value!r}; set it with ENV or ARG", vloc, {**evidence, "build": build.name, "effective": effective.value if effective else None})


def _nvcc_targets(ctx: CheckContext) -> Iterator[Finding]:
    """Arch-list values whose targets the nvcc of their stage's base image cannot compile for."""
    from envcheck.knowledge.base_images import in_stage, safe_describe
    from envcheck.knowledge.nvcc import unknown_to
    stage_cuda: dict[str, tuple[str, str]] = {  # stage -> (CUDA version, base image)
        stage: (facts.cuda, image.ref) for image in ctx.inventory.images
        if (facts := safe_describe(image.ref)) is not None and facts.cuda and not facts.inferred
        for stage in image.stages or ((image.stage,) if image.stage else ())}
    for var in ctx.inventory.env:
        if (var.name not in ("TORCH_CUDA_ARCH_LIST", *CMAKE_VARIABLES) or var.origin == "run-only" or var.location is None
                or var.location.stage not in stage_cuda):
            continue
        cuda, base = stage_cuda[var.location.stage]
        coverage = arch_list_coverage if var.name == "TORCH_CUDA_ARCH_LIST" else cmake_arch_coverage
        _, labels, _ = coverage(var.value, ctx.profile.sm)
        targets = list(dict.fromkeys(f"sm_{m}" for label in labels for m in re.findall(r"(?:sm|compute)_(\d+[af]?)", label)))
        refused = unknown_to(cuda, targets)
        evidence = {"variable": var.name, "value": var.value, "cuda": cuda, "base": base}
        if refused:
            names = ", ".join(f"{t} (needs CUDA {first}+)" for t, first, _ in refused)
            yield NVCC_TARGET.finding(
                f"{in_stage(var.location.stage)}{var.name}={var.value!r} asks nvcc for {names}, but {base} carries CUDA {cuda}: "
                "nvcc stops with 'Unsupported gpu architecture'", var.location,
                {**evidence, "targets": [t for t, _, _ in refused], "sources": sorted({s for _, _, s in refused})})
        elif targets:
            yield NVCC_TARGET.passed(f"{in_stage(var.location.stage)}CUDA {cuda} can compile for {', '.join(targets)}", var.location, **evidence)


def _arch_list_settings(settings: list[EnvVar], sm: int) -> Iterator[Finding]:
    """Each TORCH_CUDA_ARCH_LIST value: what it targets on sm_``sm``, and whether it includes sm_``sm``a (NVFP4)."""
    from envcheck.knowledge.base_images import in_stage
    for var in settings:
        stage = var.location.stage if var.location else None
        level, targets, nvfp4 = arch_list_coverage(var.value, sm)
        evidence = {"value": var.value, "targets": targets, "coverage": level, "stage": stage, "origin": var.origin}
        what = f"{in_stage(stage)}TORCH_CUDA_ARCH_LIST={var.value!r} targets {', '.join(targets) or 'nothing envcheck can read'}"
        if level in ("native", "jit-same-major"):
            how = "SASS that runs on" if level == "native" else "PTX that the driver JIT-compiles for"
            yield ARCH_LIST.passed(f"{what}: {how} sm_{sm}", var.location, **evidence)
        elif level == "jit-older":
            yield ARCH_LIST.finding(f"{what}: sm_{sm} only through JIT of older PTX (slow first load, no Blackwell features)",
                                    var.location, evidence)
        else:
            yield ARCH_LIST.finding(f"{what}: nothing that runs on sm_{sm}", var.location, evidence)
        state = "includes" if nvfp4 else "does not include"
        yield ARCH_LIST_NVFP4.info(f"{in_stage(stage)}TORCH_CUDA_ARCH_LIST {state} sm_{sm}a"
                                   + ("" if nvfp4 else ": NVFP4 kernels built here will be slower than FP8"), var.location)


def _effective_arch_list(settings: list[EnvVar], loc: Location) -> EnvVar | None:
    """The TORCH_CUDA_ARCH_LIST in force at ``loc``: the last ENV/ARG before it in its stage, or one set on its RUN line."""
    effective = None
    for var in settings:
        vloc = var.location
        if vloc is None or vloc.path != loc.path or vloc.stage != loc.stage or vloc.line is None or loc.line is None:
            continue
        if (var.origin in ("env", "arg") and vloc.line <= loc.line) or (var.origin == "run" and vloc.line == loc.line):
            effective = var
    return effective


def _source_builds(ctx: CheckContext) -> list[Package]:
    """The CUDA extensions the Dockerfile builds from source (git+, a local folder, an sdist URL), located."""
    out: list[Package] = []
    for pkg in ctx.inventory.packages:
        if pkg.name not in _EXTENSIONS or pkg.installed or pkg.location is None or pkg.location.line is None:
            continue
        url = pkg.url or ""
        if not url.endswith(".whl") and (url.startswith(("git+", "file:", "/", ".")) or "://" in url):  # a wheel is built
            out.append(pkg)
    return out


def _source_build_arch(ctx: CheckContext, settings: list[EnvVar]) -> Iterator[Finding]:
    """CUDA extensions a Dockerfile builds from source: which architectures the arch list in force gives them."""
    from envcheck.knowledge.base_images import in_stage, safe_describe, third_party
    sm = ctx.profile.sm
    ngc_stages = {i.stage for i in ctx.inventory.images if (f := safe_describe(i.ref)) is not None and f.ngc_torch}
    own_base = {i.stage for i in ctx.inventory.images}
    # stages on an image envcheck's tables say nothing about (a local or community build): its ENV may set the list
    unknown_base = {i.stage: i.ref for i in ctx.inventory.images if (f := safe_describe(i.ref)) is not None and third_party(f)}
    for pkg in _source_builds(ctx):
        if pkg.name == "flash-attn" or pkg.location is None:
            continue  # reported by G2-flash-attn-build: the build itself is the problem
        url = pkg.url or ""
        loc = pkg.location
        effective = _effective_arch_list(settings, loc)
        evidence = {"package": pkg.name, "url": url, "stage": loc.stage}
        if effective is None:
            # a stage FROM another stage has no base image of its own: it inherits an NGC base if the file uses one
            if loc.stage in ngc_stages or (loc.stage not in own_base and ngc_stages):
                yield SOURCE_BUILD_ARCH.passed(
                    f"{in_stage(loc.stage)}{pkg.name} is built from source with the NGC image's TORCH_CUDA_ARCH_LIST (includes 12.0+PTX; no sm_{sm}a)",
                    loc, **evidence)
            elif loc.stage in unknown_base:
                evidence["base"] = unknown_base[loc.stage]
                yield SOURCE_BUILD_ARCH.finding(
                    f"{in_stage(loc.stage)}{pkg.name} is built from source and this file sets no TORCH_CUDA_ARCH_LIST; envcheck "
                    f"cannot see whether the base image {unknown_base[loc.stage]} sets one: if it does not, with no GPU visible "
                    f"during docker build the build gets torch's default list, which may lack sm_{sm}", loc, evidence)
            else:
                yield SOURCE_BUILD_ARCH.finding(
                    f"{in_stage(loc.stage)}{pkg.name} is built from source with no TORCH_CUDA_ARCH_LIST: with no GPU visible during "
                    f"docker build it gets torch's default list, which may lack sm_{sm}", loc, evidence)
            continue
        level, targets, _ = arch_list_coverage(effective.value, sm)
        evidence["arch_list"] = effective.value
        if level in ("native", "jit-same-major"):
            yield SOURCE_BUILD_ARCH.passed(f"{in_stage(loc.stage)}{pkg.name} is built for {', '.join(targets)}", loc, **evidence)
        else:
            yield SOURCE_BUILD_ARCH.finding(
                f"{in_stage(loc.stage)}{pkg.name} is built for {', '.join(targets) or effective.value!r}, with no code that runs on sm_{sm}",
                loc, evidence)


def _cmake_arch_lists(ctx: CheckContext) -> Iterator[Finding]:
    """G7 over CMAKE_CUDA_ARCHITECTURES / CUDAARCHS values (ENV, ARG, cmake -D, CMAKE_ARGS)."""
    from envcheck.knowledge.base_images import in_stage
    sm = ctx.profile.sm
    for var in ctx.inventory.env:
        if var.name not in CMAKE_VARIABLES or var.origin == "run-only":
            continue
        stage = var.location.stage if var.location else None
        level, targets, nvfp4 = cmake_arch_coverage(var.value, sm)
        evidence = {"variable": var.name, "value": var.value, "targets": targets, "coverage": level, "stage": stage,
                    "origin": str(var.origin)}
        what = f"{in_stage(stage)}{var.name}={var.value!r}"
        a_note = "" if nvfp4 else f" (no sm_{sm}a: NVFP4 kernels built here will be slower than FP8)"
        if level in ("native", "jit-same-major"):
            how = "SASS that runs on" if level == "native" else "PTX that the driver JIT-compiles for"
            yield CMAKE_ARCH.passed(f"{what} builds {how} sm_{sm}{a_note}", var.location, **evidence)
        elif level == "all":
            yield CMAKE_ARCH.passed(f"{what} builds for every architecture the CUDA toolkit knows (12.8 and newer include "
                                    f"sm_120/sm_{sm}){a_note}", var.location, **evidence)
        elif level == "undecidable":
            where_built = "during docker build no GPU is visible" if ctx.kind == "dockerfile" else "it depends on the GPU of the build machine"
            yield CMAKE_ARCH.finding(f"{what} builds for the GPUs present at build time and {where_built}: whether sm_{sm} "
                                     "is covered cannot be told", var.location, evidence,
                                     status=Status.WARN if ctx.kind == "dockerfile" else Status.INFO)
        elif level == "jit-older":
            yield CMAKE_ARCH.finding(f"{what} targets {', '.join(targets)}: sm_{sm} only through JIT of older PTX "
                                     "(slow first load, no Blackwell features)", var.location, evidence)
        else:
            yield CMAKE_ARCH.finding(f"{what} targets {', '.join(targets) or 'nothing envcheck can read'}: nothing that runs on sm_{sm}",
                                     var.location, evidence)


TORCH_WHEEL_ARCH = rule(
    "G7-cu130-torch-arch", "G7", "Which GPU code PyTorch's cu130 torch carries for a GB10", Status.INFO,
    """PyTorch builds its cu130 linux/aarch64 wheels for a fixed TORCH_CUDA_ARCH_LIST (knowledge/torch_builds.toml):
    SASS up to sm_120 plus compute_120 PTX, no sm_121 SASS. sm_120 SASS runs on GB10 (sm_121, same major, lower
    minor), so torch's start-up warning that capability 12.1 is outside (8.0) - (12.0) is benign and nothing is
    JIT-compiled at first launch. No source tells one cu130 release (2.9.0 included) from another, so this is a
    reading, never a WARN; NVFP4 kernels need sm_121a, which only a build of your own (or NGC) targets.""",
    "Nothing to do for FP8/BF16 work; for NVFP4 kernels use an NGC container or build the extension with TORCH_CUDA_ARCH_LIST=\"12.1a\".",
    ("requirements", "pyproject", "lock", "dockerfile"))


@check(TORCH_WHEEL_ARCH)
def cu130_torch_arch(ctx: CheckContext) -> Iterator[Finding]:
    """INFO naming the arch list of PyTorch's cu130 aarch64 wheels, once, at the first cu130 torch of the input."""
    from envcheck.knowledge.builds import CudaBuild, build_of_index, build_of_version, cu130_aarch64_arch_list
    if ctx.profile.machine != "aarch64":
        return
    input_build: list[CudaBuild | None] = []  # of the input's index options: worked out once, not per torch
    for pkg in ctx.inventory.packages:
        if pkg.name != "torch" or pkg.scope is not None:
            continue
        build = build_of_version(pkg.version) if pkg.version and "+cu" in pkg.version else None
        if build is None and not pkg.url and pkg.index:  # a cu130 index the package comes from
            build = next((b for b in [build_of_index(pkg.index)] if b is not None and b.cuda_major == 13), None)
        elif build is None and not pkg.url:  # or the input's index options
            if not input_build:
                input_build.append(next((b for i in ctx.inventory.indexes
                                         if (b := build_of_index(i.url)) is not None and b.cuda_major == 13), None))
            build = input_build[0]
        if build is None or build.cuda_major != 13 or "nv" in (pkg.version or ""):
            continue
        arch_list, source = cu130_aarch64_arch_list()
        level, targets, _nvfp4 = arch_list_coverage(arch_list, ctx.profile.sm)
        runs = "its sm_120 SASS runs on sm_121" if level == "native" else f"coverage of sm_{ctx.profile.sm}: {level}"
        yield TORCH_WHEEL_ARCH.info(
            f"torch {pkg.version or '(' + build.detail + ')'}: PyTorch's cu130 aarch64 wheels carry {' '.join(targets)} "
            f"(TORCH_CUDA_ARCH_LIST {arch_list}): no sm_121 SASS, but {runs}, so torch's capability-12.1 warning is benign "
            f"({source.split(':', 1)[0]})", pkg.location, arch_list=arch_list, source=source)
        return


PTX_JIT_OFF = rule(
    "G7-ptx-jit-off", "G7", "The environment turns the driver's PTX JIT off (or forces it)", Status.WARN,
    """GPU code reaches a GB10 as SASS built for 12.x or as PTX that the driver JIT-compiles when the kernel
    loads; wheels built before Blackwell often reach sm_121 only through that PTX. CUDA_DISABLE_PTX_JIT=1 stops
    the JIT, so such kernels fail with "no kernel image is available"; CUDA_FORCE_PTX_JIT=1 ignores the SASS and
    JIT-compiles every kernel, so kernels shipped without PTX fail the same way and every first load is slow.
    Set in a Dockerfile ENV, an image's config, a compose or Kubernetes environment, a script's docker run -e or
    a notebook's %env, it reaches every process started there (a RUN's own assignment only lasts for that build
    step).""",
    "Drop the variable (or set it to 0); keep it for a one-off debugging run, not in an image or a service.",
    ("dockerfile", "image", "compose", "kubernetes", "shell", "notebook"))
_PTX_JIT = {"CUDA_DISABLE_PTX_JIT": "the driver will not JIT-compile PTX: a kernel that reaches sm_{sm} only as PTX fails "
                                    "with \"no kernel image is available\"",
            "CUDA_FORCE_PTX_JIT": "the driver ignores SASS and JIT-compiles every kernel from PTX: a kernel shipped "
                                  "without PTX fails with \"no kernel image is available\", and every first load is slow"}


@check(PTX_JIT_OFF)
def ptx_jit_settings(ctx: CheckContext) -> Iterator[Finding]:
    """WARN where the image or a launch sets CUDA_DISABLE_PTX_JIT / CUDA_FORCE_PTX_JIT to a non-zero value."""
    build_only = ("run", "run-only", "arg") if ctx.kind == "dockerfile" else ()
    for var in ctx.inventory.env:
        if var.name in _PTX_JIT and var.value.strip() not in ("", "0") and var.origin not in build_only:
            yield PTX_JIT_OFF.finding(f"{var.name}={var.value}: {_PTX_JIT[var.name].format(sm=ctx.profile.sm)}",
                                      var.location, {"variable": var.name, "value": var.value})
