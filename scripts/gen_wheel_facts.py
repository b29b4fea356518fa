#!/usr/bin/env python3
"""Generate envcheck/knowledge/wheel_facts.json: facts of the largest common wheels, read from the real files.

For each ``name==version`` given (default: the list below), this looks up the project's page on the index
(one request, PEP 691 JSON), picks the wheel pip would install on the profile (linux/aarch64, CPython 3.12),
and reads it the way ``envcheck --resolve`` does (PEP 658 metadata, zip directory and ELF/fatbin headers by
range requests; deflated members are inflated). The rows are keyed by the file's sha256, so a run of
``envcheck --resolve`` that picks one of these files never reads it. Existing rows are kept (facts of a hash
never change); run it again to add versions.

    python3 scripts/gen_wheel_facts.py torch==2.14.1 nvidia-cublas==13.1.0.3
    python3 scripts/gen_wheel_facts.py --index-url https://pypi.org/simple   # the default list
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import envcheck.sources.remote_wheel
from envcheck.profile import load_profile
from envcheck.resolution import best_wheel, read_remote_wheel
from envcheck.services.package_index import IndexClient

OUT = Path(__file__).resolve().parent.parent / "envcheck" / "knowledge" / "wheel_facts.json"
# torch 2.14.1 on linux/aarch64 and everything it pulls that has binaries, plus the other large common ones.
DEFAULT = [
    "torch==2.14.1", "triton==3.8.0", "torchvision==0.29.2", "cuda-bindings==13.5.0", "bitsandbytes==0.50.2",
    "vllm==0.34.0", "cupy-cuda13x==14.2.0",
    "nvidia-cublas==13.1.1.3", "nvidia-cuda-cupti==13.0.85", "nvidia-cuda-nvrtc==13.0.88", "nvidia-cuda-runtime==13.0.96",
    "nvidia-cudnn-cu13==9.24.0.43", "nvidia-cufft==12.0.0.61", "nvidia-cufile==1.15.1.6", "nvidia-curand==10.4.0.35",
    "nvidia-cusolver==12.0.4.66", "nvidia-cusparse==12.6.3.3", "nvidia-cusparselt-cu13==0.8.1", "nvidia-nccl-cu13==2.30.7",
    "nvidia-nvjitlink==13.5.37", "nvidia-nvshmem-cu13==3.4.5", "nvidia-nvtx==13.0.85",
]
# Not in the table because they publish no linux/aarch64 wheel: xformers 0.0.35 and flash-attn (sdists only),
# torchaudio 2.14.1 (no aarch64 wheel on PyPI).


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pins", nargs="*", default=DEFAULT, metavar="NAME==VERSION")
    parser.add_argument("--index-url", default="https://pypi.org/simple")
    parser.add_argument("--python-version", default=None)
    parser.add_argument("--output", type=Path, default=OUT)
    args = parser.parse_args()
    profile = load_profile("dgx-spark")
    python = args.python_version or profile.python_version
    try:
        data = json.loads(args.output.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    files = data.get("files", {}) if isinstance(data, dict) else {}
    client = IndexClient(deadline=1800.0)
    # The table exists for the big ones: read every member, whatever it takes (these are the real files).
    envcheck.sources.remote_wheel.MAX_MEMBER_BYTES = 16 << 30
    envcheck.sources.remote_wheel.MAX_CUBIN_MEMBERS = 1 << 30
    os.environ.setdefault("ENVCHECK_RESOLVE_TIMEOUT", str(7 * 86400))
    for pin in args.pins:
        name, _, version = pin.partition("==")
        listed = [f for f in client.project_files(args.index_url, name) if f.filename.endswith(".whl") and f"-{version}-" in f.filename]
        chosen, why = best_wheel([f.filename for f in listed], profile, python)
        if chosen is None:
            print(f"{pin}: no wheel for {profile.machine} ({why})", file=sys.stderr)
            continue
        item = next(f for f in listed if f.filename == chosen)
        if item.sha256 in files:
            print(f"{pin}: {chosen} already in the table")
            continue
        before = client.traffic.bytes
        facts = read_remote_wheel(client, item.url, item.size, item.sha256, item.metadata_sha256, max_expansion=0)
        files[item.sha256] = {
            "filename": chosen, "url": item.url, "size": item.size, "requires": list(facts.requires or []),
            "tags": list(facts.tags), "binaries": facts.binaries, "problems": facts.problems,
            "source": f"{item.url} scanned by scripts/gen_wheel_facts.py on {datetime.date.today().isoformat()}",
        }
        print(f"{pin}: {chosen}: {len(facts.binaries)} binaries, read {client.traffic.bytes - before} of {item.size} bytes")
    out = {
        "meta": {
            "updated": datetime.date.today().isoformat(),
            "sources": ["the wheel files themselves, read by scripts/gen_wheel_facts.py (each row names its file URL)"],
            "note": "keyed by sha256: facts of a file never change. Regenerate with scripts/gen_wheel_facts.py NAME==VERSION ...",
        },
        "files": dict(sorted(files.items(), key=lambda kv: kv[1]["filename"])),
    }
    args.output.write_text(json.dumps(out, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
