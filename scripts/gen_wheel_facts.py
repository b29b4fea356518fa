#!/usr/bin/env python3
"""Generate envcheck/knowledge/wheel_facts.json: facts of the wheels Spark projects resolve to, read from the real files.

For each ``name==version`` given (default: the list below; a bare ``name`` means its newest version with a wheel
for the profile), this looks up the project's page on the index (one request, PEP 691 JSON), picks the wheel pip
would install on the profile (linux/aarch64, CPython 3.12), and reads it the way ``envcheck --resolve`` does
(PEP 658 metadata, zip directory and ELF/fatbin headers by range requests; deflated members are inflated), several
files at once. The rows are keyed by the file's sha256, so a run of ``envcheck --resolve`` that picks one of these
files never reads it; each row names its file URL (its source) and the day it was read. Existing rows are kept
(facts of a hash never change); run it again to add versions. The output is one row per line (small diffs).

    python3 scripts/gen_wheel_facts.py torch==2.14.1 nvidia-cublas==13.1.0.3
    python3 scripts/gen_wheel_facts.py --index-url https://pypi.org/simple   # the default list
    python3 scripts/gen_wheel_facts.py --output ~/.cache/envcheck/wheel_facts.json vllm   # a user's own table

The work is done by :mod:`envcheck.resolution.facts_update`, which ``envcheck cache update-facts`` runs too (a
user's newer table in envcheck's cache folder, or where ``ENVCHECK_WHEEL_FACTS`` names: its rows add to the shipped
ones; a shipped row always wins).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from envcheck.profile import load_profile
from envcheck.resolution.facts_update import PYPI, update

OUT = Path(__file__).resolve().parent.parent / "envcheck" / "knowledge" / "wheel_facts.json"
# What Spark projects resolve to on linux/aarch64 (serving and training stacks), and everything with binaries they
# pull: torch and its nvidia-* wheels, vLLM, SGLang, flashinfer, xformers, flash-attn, bitsandbytes, triton, cupy,
# the JAX CUDA plugins, TensorRT, onnxruntime.
DEFAULT = [
    # torch 2.14.1 (training stacks)
    "torch==2.14.1", "triton==3.8.0", "torchvision==0.29.2", "cuda-bindings==13.5.0", "bitsandbytes==0.50.2",
    "vllm==0.34.0", "cupy-cuda13x==14.2.0",
    "nvidia-cublas==13.1.1.3", "nvidia-cuda-cupti==13.0.85", "nvidia-cuda-nvrtc==13.0.88", "nvidia-cuda-runtime==13.0.96",
    "nvidia-cudnn-cu13==9.24.0.43", "nvidia-cufft==12.0.0.61", "nvidia-cufile==1.15.1.6", "nvidia-curand==10.4.0.35",
    "nvidia-cusolver==12.0.4.66", "nvidia-cusparse==12.6.3.3", "nvidia-cusparselt-cu13==0.8.1", "nvidia-nccl-cu13==2.30.7",
    "nvidia-nvjitlink==13.5.37", "nvidia-nvshmem-cu13==3.4.5", "nvidia-nvtx==13.0.85",
    # a vLLM serving stack (torch>=2.11, vllm, xformers, flash-attn, bitsandbytes) as uv resolves it for the Spark
    "torch==2.11.0", "triton==3.6.0", "torchvision==0.26.0", "torchaudio==2.11.0", "vllm==0.23.0", "xformers==0.0.35",
    "flashinfer-python==0.6.12", "flashinfer-cubin==0.6.12", "cuda-bindings==13.4.4", "nvidia-cublas==13.1.0.3",
    "nvidia-cudnn-cu13==9.19.0.56", "nvidia-cusparselt-cu13==0.8.0", "nvidia-nccl-cu13==2.28.9", "nvidia-nvjitlink==13.0.88",
    "nvidia-cuda-nvcc==13.2.86", "nvidia-cuda-crt==13.5.37", "nvidia-nvvm==13.2.86", "nvidia-cuda-tileiras==13.2.86",
    "nvidia-cutlass-dsl-libs-base==4.5.2", "nvidia-cutlass-dsl-libs-cu13==4.5.2", "nvidia-cudnn-frontend==1.28.0",
    "tilelang==0.1.9", "tokenspeed-triton==3.9.10.post20261028", "tokenspeed-mla==0.1.2", "humming-kernels==0.1.4",
    "quack-kernels==0.5.0", "apache-tvm-ffi==0.1.9", "torch-c-dlpack-ext==0.1.5", "xgrammar==0.2.5.post1",
    "llguidance==1.7.6", "outlines-core==0.2.14", "fastsafetensors==0.5.0", "numba==0.65.0", "llvmlite==0.47.0",
    "opencv-python-headless==5.1.0.95", "z3-solver==4.15.4.0", "numpy==2.3.5", "cuda-tile==1.3.0",
    # the other families, newest release with a linux/aarch64 wheel
    "sgl-kernel", "sglang", "jax-cuda13-plugin", "jax-cuda13-pjrt", "jaxlib", "tensorrt-cu13-libs", "tensorrt-cu13-bindings",
    "onnxruntime", "onnxruntime-gpu", "cupy-cuda13x",
]
# Not in the table because they publish no linux/aarch64 wheel: xformers 0.0.35, flash-attn (sdists only),
# tensorrt-cu13-libs. The pins that have none are reported on stderr and skipped.


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pins", nargs="*", default=DEFAULT, metavar="NAME[==VERSION]")
    parser.add_argument("--index-url", default=PYPI)
    parser.add_argument("--python-version", default=None)
    parser.add_argument("--output", type=Path, default=OUT)
    parser.add_argument("--jobs", type=int, default=4, help="wheels read at once (default 4)")
    args = parser.parse_args()
    profile = load_profile("dgx-spark")

    def say(line: str, problem: bool) -> None:
        print(line, file=sys.stderr if problem else sys.stdout, flush=True)

    update(args.output, args.pins, profile, args.python_version or profile.python_version, args.index_url, args.jobs, say)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
