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

A table written anywhere else is used by ``envcheck --resolve`` when ``ENVCHECK_WHEEL_FACTS`` names it (its rows
add to the shipped ones; a shipped row always wins).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import envcheck.sources.remote_wheel
from envcheck.errors import ServiceError
from envcheck.inspect.wheel_tags import parse_wheel_name
from envcheck.profile import load_profile
from envcheck.resolution import best_wheel, read_remote_wheel
from envcheck.services.package_index import FileProblem, IndexClient, IndexFile

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
# Not in the table because they publish no linux/aarch64 wheel: flash-attn (sdists only). The rows of pins that
# have none are reported on stderr and skipped.


def _pick(client: IndexClient, index_url: str, pin: str, profile: Any, python: str) -> IndexFile | str:
    """The file of ``pin`` pip would install on the profile, or why there is none."""
    from packaging.version import InvalidVersion, Version

    name, _, version = pin.partition("==")
    wheels = [f for f in client.project_files(index_url, name) if f.filename.endswith(".whl") and not f.yanked]
    if not version:
        versions = set()
        for f in wheels:
            parsed = parse_wheel_name(f.filename)
            if parsed is None:
                continue
            try:
                v = Version(f.filename.split("-")[1])
            except InvalidVersion:
                continue
            if not v.is_prerelease and best_wheel([f.filename], profile, python)[0]:
                versions.add(v)
        if not versions:
            return f"{pin}: no wheel for {profile.machine}"
        version = str(max(versions))
    listed = [f for f in wheels if f"-{version}-" in f.filename]
    chosen, why = best_wheel([f.filename for f in listed], profile, python)
    if chosen is None:
        return f"{pin}: no wheel for {profile.machine} ({why})"
    return next(f for f in listed if f.filename == chosen)


def _row(client: IndexClient, item: IndexFile) -> dict[str, Any]:
    facts = read_remote_wheel(client, item.url, item.size, item.sha256, item.metadata_sha256, max_expansion=0)
    today = datetime.date.today().isoformat()
    return {
        "filename": item.filename, "url": item.url, "size": item.size, "updated": today, "requires": list(facts.requires or []),
        "tags": list(facts.tags), "binaries": facts.binaries, "problems": facts.problems, "notes": facts.notes,
        "source": f"{item.url} scanned by scripts/gen_wheel_facts.py on {today}",
    }


def write_table(path: Path, files: dict[str, dict[str, Any]]) -> None:
    """The table, one row per line, sorted by file name."""
    meta = {
        "updated": datetime.date.today().isoformat(),
        "sources": ["the wheel files themselves, read by scripts/gen_wheel_facts.py (each row names its file URL and day)"],
        "note": "keyed by sha256: facts of a file never change. Regenerate with scripts/gen_wheel_facts.py NAME==VERSION ...",
    }
    rows = sorted(files.items(), key=lambda kv: (kv[1]["filename"], kv[0]))
    body = ",\n".join(f"{json.dumps(sha)}: {json.dumps(row, separators=(',', ':'))}" for sha, row in rows)
    path.write_text(f'{{"meta": {json.dumps(meta)},\n"files": {{\n{body}\n}}}}\n', encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pins", nargs="*", default=DEFAULT, metavar="NAME[==VERSION]")
    parser.add_argument("--index-url", default="https://pypi.org/simple")
    parser.add_argument("--python-version", default=None)
    parser.add_argument("--output", type=Path, default=OUT)
    parser.add_argument("--jobs", type=int, default=4, help="wheels read at once (default 4)")
    args = parser.parse_args()
    profile = load_profile("dgx-spark")
    python = args.python_version or profile.python_version
    try:
        data = json.loads(args.output.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    files: dict[str, dict[str, Any]] = data.get("files", {}) if isinstance(data, dict) else {}
    for row in files.values():  # rows written before rows carried their day: the day their source names
        row.setdefault("updated", row.get("source", "").rsplit(" on ", 1)[-1][:10])
    client = IndexClient(deadline=1800.0)
    # The table exists for the big ones: read every ELF member, whatever its size (these are the real files).
    envcheck.sources.remote_wheel.MAX_MEMBER_BYTES = 16 << 30
    os.environ.setdefault("ENVCHECK_RESOLVE_TIMEOUT", str(7 * 86400))

    def one(pin: str) -> tuple[str, str | None, dict[str, Any] | None]:
        try:
            item = _pick(client, args.index_url, pin, profile, python)
            if isinstance(item, str):
                return item, None, None
            if not item.sha256:
                return f"{pin}: {item.filename}: the index gives no sha256", None, None
            if item.sha256 in files:
                return f"{pin}: {item.filename} already in the table", None, None
            row = _row(client, item)
        except (FileProblem, ServiceError) as exc:
            return f"{pin}: {exc}", None, None
        return f"{pin}: {item.filename}: {len(row['binaries'])} binaries of {item.size} bytes", item.sha256, row

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for said, sha, row in pool.map(one, dict.fromkeys(args.pins)):
            print(said, file=sys.stderr if row is None and "already" not in said else sys.stdout, flush=True)
            if sha and row:
                files[sha] = row
                write_table(args.output, files)  # a long run keeps what it has read
    write_table(args.output, files)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
