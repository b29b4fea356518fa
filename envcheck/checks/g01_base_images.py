"""G1: a CUDA 12 (or older) base image under a Dockerfile, compose file or Kubernetes manifest."""

from __future__ import annotations

import re
from collections.abc import Iterator

from envcheck import knowledge
from envcheck.checks.g01_cuda_abi import older_cuda_level, torch_build
from envcheck.fixes import g01_cuda_abi as fixes
from envcheck.knowledge.base_images import BaseFacts
from envcheck.model import BaseImage, Finding, Status
from envcheck.rules import CheckContext, check, rule

_FIRST_CUDA13_NGC = knowledge.first_cuda13_ngc_release()

CUDA12_BASE = rule(
    "G1-cuda12-base", "G1", "The base image is a CUDA 12 (or older) image", Status.FAIL,
    f"""The Dockerfile builds on an image whose CUDA is older than the Spark's CUDA 13: nvidia/cuda:12.*,
    an NGC container of a release month before {_FIRST_CUDA13_NGC} (the first on CUDA 13.0; the month
    fixes the CUDA across families: pytorch, pyg, jax, tensorflow, tritonserver, vllm, nemo, cuda-dl-base,
    ...), or a tag that names cuda12/cu12x. Its torch, extensions and libraries are CUDA 12 builds
    (libcudart.so.12): CUDA 13 wheels (cu130, nvidia-*-cu13) installed on top cannot load next to them,
    CUDA releases before 12.8 carry no code for Blackwell GPUs at all, and the Spark's recipes and
    toolchain are CUDA 13. envcheck maps NGC tags with a dated, sourced table (knowledge/ngc_tags.toml)
    and says when a mapping is inferred rather than quoted. A stage outside the final image whose output
    the final image copies in (COPY --from) is a FAIL too: what it builds links CUDA 12. A stage that is
    not part of the built image at all is a WARN, as every finding there is one level lower
    (docs/dockerfiles.md). A base on CUDA 12.9 or newer 12.x (NGC 25.04-25.06) is a WARN: 12.9 is the
    first toolkit that compiles for sm_121 (knowledge/nvcc_targets.toml), so its builds can carry code for
    the GPU, and the CUDA 13 driver runs a CUDA 12 user space; whether it works depends on what was built
    for the GPU. A compose service or Kubernetes container whose command only queries the device
    (nvidia-smi, ls /dev/nvidia*, echo: a smoke test) is INFO: those come from the host driver, which runs
    CUDA 12 images, and the image's CUDA 12 libraries are never loaded. So is a Dockerfile stage on
    nvidia/cuda's 'base' flavour (only the CUDA runtime, no math libraries, no nvcc: an Ubuntu with the
    NVIDIA runtime settings) that runs no compiler and installs no GPU package: the CUDA 13 driver runs an
    older CUDA runtime, and a wheel brings its own CUDA libraries; a requirements file it installs that
    envcheck cannot read is named (the stage depends on it, judged when it is checked itself). So is a
    stage that replaces the base's torch with a CUDA 13 build (an exact cu130 pin, an install with
    --upgrade that resolves to PyPI's CUDA 13 torch): the base is then only a shell, and only what else
    the stage uses from it (CUDA 12 libraries, nvcc, NGC's own extensions) is at risk: a WARN, and INFO on an
    nvidia/cuda image when the stage compiles nothing and installs no other GPU package (that torch brings its
    own CUDA libraries).""",
    f"""Use a CUDA 13 base: nvcr.io/nvidia/pytorch:{_FIRST_CUDA13_NGC}-py3 or newer (25.11-py3 is what
    NVIDIA's Spark playbooks use), nvcr.io/nvidia/vllm:25.09-py3 or newer, or nvidia/cuda:13.0.x-*.""",
    ("dockerfile",),
    autofix=fixes.cuda12_base)


@check(CUDA12_BASE)
def cuda12_base(ctx: CheckContext) -> Iterator[Finding]:
    from envcheck.knowledge.base_images import in_stage, safe_describe
    for image in ctx.inventory.images:
        facts = safe_describe(image.ref)
        if facts is None or facts.cuda_major is None:
            continue
        how = facts.note or (f"NGC {facts.release}" if facts.release else f"tag {facts.tag}")
        evidence = {"image": image.ref, "stage": image.stage, "cuda": facts.cuda, "inferred": facts.inferred,
                    "source": facts.source, "final": image.final}
        if facts.cuda_major < ctx.profile.cuda_major:
            message = f"{in_stage(image.stage)}{image.ref} is a CUDA {facts.cuda} image ({how}); {ctx.profile.name} has CUDA {ctx.profile.cuda_major}"
            replaced = _torch_replaced_by(ctx, image, facts.ngc_torch)
            if image.runs:
                # nvidia-smi and /dev/nvidia* come from the host driver; the CUDA 13 driver runs CUDA 12 images
                shown = image.runs if len(image.runs) <= 80 else image.runs[:77] + "..."
                yield CUDA12_BASE.finding(message + f"; the container only queries the device ({shown}): nvidia-smi and /dev/nvidia* "
                                          f"come from the host driver, which runs CUDA {facts.cuda_major} images, and the image's CUDA "
                                          f"{facts.cuda_major} libraries are never loaded", image.location,
                                          {**evidence, "runs": image.runs}, status=Status.INFO)
            elif (unused := _runtime_unused(ctx, image, facts, replaced)) is not None:
                yield CUDA12_BASE.finding(message + unused[0], image.location, {**evidence, **unused[1]}, status=Status.INFO)
            elif replaced is not None:
                # the stage's torch is a CUDA 13 build: the base is only a shell, its own CUDA 12 parts may still be used
                yield CUDA12_BASE.finding(message + f"; the stage replaces its torch with a CUDA {ctx.profile.cuda_major} build ({replaced}), "
                                          "so only what else it uses from the base (its CUDA 12 libraries, nvcc, extensions) is at risk",
                                          image.location, evidence, status=Status.WARN)
            elif (level := older_cuda_level(facts.cuda, ctx))[0] is Status.WARN:
                # the CUDA 13 driver runs a CUDA 12.9 user space, whose toolkit builds for this GPU: it depends on the builds
                yield CUDA12_BASE.finding(f"{message}; {level[1]}", image.location, {**evidence, **level[2]}, status=level[0])
            elif image.copied_at is not None and not image.final:
                # what it builds is in the final image: its CUDA 12 objects fail there as the final stage's would
                yield CUDA12_BASE.finding(message + f"; what this stage builds links CUDA {facts.cuda_major}, and the final image "
                                          f"copies it in (COPY --from on line {image.copied_at})", image.location,
                                          {**evidence, "copied_at": image.copied_at})
            else:  # a stage outside the built image is one level lower (the engine's stage rule)
                yield CUDA12_BASE.finding(message, image.location, evidence)
        elif facts.known and image.final:
            yield CUDA12_BASE.passed(f"{in_stage(image.stage)}{image.ref} is a CUDA {facts.cuda} image ({how})", image.location, **evidence)


# A package name that says it is GPU code: cupy-cuda12x, onnxruntime-gpu, nvidia-cublas-cu12, jax-cuda12-plugin, tensorrt
_GPU_NAME = re.compile(r"(?:^|[-_])(?:cuda\d*x?|cu\d{2,3}|gpu|nvidia|cupy|tensorrt|triton)(?:$|[-_])")


def _runtime_unused(ctx: CheckContext, image: BaseImage, facts: BaseFacts,
                    replaced: str | None = None) -> tuple[str, dict[str, object]] | None:
    """Why a Dockerfile stage on nvidia/cuda's 'base' flavour (only the CUDA runtime), or on any nvidia/cuda flavour
    whose torch the stage ``replaced`` with a current-CUDA build, uses none of its CUDA user space, and the evidence;
    None when it may (a compiler run, another GPU package installed, ...)."""
    from envcheck.inspect.device_query import compilers
    from envcheck.knowledge.base_images import cuda_runtime_only
    from envcheck.knowledge.builds import distribution_cuda_major
    # an NGC or other framework image ships its own CUDA 12 extensions, which the stage may use: only nvidia/cuda's
    # images are a shell once the stage brings a current-CUDA torch
    shell = replaced is not None and facts.family == "cuda"
    if image.programs is None or not (cuda_runtime_only(facts) or shell) or compilers(image.programs):
        return None
    stack = set(knowledge.load("pins")["stack"]["ml_stack"]) | {r["name"] for r in knowledge.load("cuda_extensions").get("package", [])}
    unseen = list(image.unread)
    for pkg in ctx.inventory.packages:
        if pkg.location is None or pkg.location.stage not in image.stages or pkg.role == "constraint":
            continue
        if replaced and pkg.name == "torch":
            continue  # the current-CUDA torch brings its own CUDA libraries
        if pkg.name in stack or _GPU_NAME.search(pkg.name) or distribution_cuda_major(pkg) is not None:
            return None
        if pkg.url and not pkg.url.endswith(".whl"):
            unseen.append(pkg.url)  # a source build of something envcheck cannot see into
    runtime = (f"; but nothing in this stage uses that CUDA {facts.cuda_major} user space: " + (
        f"its only CUDA code is the torch it installs, a CUDA {ctx.profile.cuda_major} build ({replaced}) that brings its own "
        "CUDA libraries; the stage compiles nothing and installs no other GPU package" if replaced else
        "the 'base' flavour carries only the CUDA runtime (no math libraries, no nvcc), the stage compiles nothing and "
        "installs no GPU package"))
    driver = f", and the host's CUDA {ctx.profile.cuda_major} driver runs an older CUDA runtime"
    if not unseen:
        return runtime + driver, {"flavor": "base", "unused": True}
    named = ", ".join(unseen[:3]) + (f" and {len(unseen) - 3} more" if len(unseen) > 3 else "")
    return (runtime + f" envcheck can see{driver}; it depends on {named}, which envcheck could not read: a wheel brings "
            f"its own CUDA libraries, so this base's CUDA {facts.cuda_major} runtime stays unused unless something is "
            "compiled against it, and what that file installs is judged when it is checked itself",
            {"flavor": "base", "unused": True, "unread": unseen})


def _torch_replaced_by(ctx: CheckContext, image: BaseImage, ngc_torch: bool) -> str | None:
    """How a stage on ``image`` installs a CUDA ``profile`` torch in place of the base's, or None. On an
    NGC base pip keeps the container's torch unless pinned exactly or installed with --upgrade."""
    stages = set(image.stages or ((image.stage,) if image.stage else ()))
    for pkg in ctx.inventory.packages:
        if (pkg.name != "torch" or pkg.installed or pkg.role != "requirement" or pkg.location is None
                or pkg.location.stage not in stages):
            continue
        if ngc_torch and not pkg.version and not any(i.location == pkg.location and "torch" in i.packages
                                                     and i.replaces for i in ctx.inventory.installs):
            continue
        build, how = torch_build(pkg, ctx)
        if build is not None and build.flavor == "cuda" and build.cuda_major == ctx.profile.cuda_major:
            return f"line {pkg.location.line}: {how}"
    return None
