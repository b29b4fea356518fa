"""Benchmark: `envcheck snapshot` of a full CUDA 13 torch environment (size; time cold and from the cache)
and `envcheck diff` / `diff --twins` of two such snapshots.

Live part: the real command line against ``--python PATH`` (default: the torch 2.14.1 venv the slow tests make
under .work/torch-venv), first with an empty cache folder (cold), then again (the binary-scan cache warm).
Snapshot-file part: the H200 capture in fixtures/device/h200 (torch 2.11.0+cu130, 866 ELF files) written as a
snapshot, and a copy whose nvidia-nccl-cu13 differs; `diff` and `diff --twins` between them (best of N).

    python benchmarks/bench_snapshot.py [--python PATH] [--runs 3]
"""

from __future__ import annotations

import argparse
import copy
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from envcheck.formats.snapshot_format import snapshot_data  # noqa: E402
from envcheck.model import Report, TargetResult  # noqa: E402


def timed(cmd: list[str], env: dict[str, str] | None = None) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, capture_output=True, check=False, cwd=REPO, env=env)
    return time.perf_counter() - start


def h200_snapshots(folder: Path) -> tuple[Path, Path]:
    report = json.loads(gzip.decompress((REPO / "fixtures/device/h200/preflight-binaries.json.gz").read_bytes()))
    other = copy.deepcopy(report)
    for pkg in other["targets"][0]["inventory"]["packages"]:
        if pkg["name"] == "nvidia-nccl-cu13":
            pkg["version"] = "2.27.7"
    paths = []
    for name, data in (("a.json", report), ("b.json", other)):
        parsed = Report(profile=data["profile"], targets=[TargetResult.from_json(t) for t in data["targets"]])
        path = folder / name
        path.write_text(json.dumps(snapshot_data(parsed), separators=(",", ":")))
        paths.append(path)
    return paths[0], paths[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=str(REPO / ".work" / "torch-venv" / "bin" / "python"))
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    envcheck = [sys.executable, "-m", "envcheck"]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if Path(args.python).exists():
            env = dict(os.environ, ENVCHECK_CACHE_DIR=str(folder / "cache"))
            out = folder / "live.json"
            cmd = [*envcheck, "snapshot", "--python", args.python, "-o", str(out), "-q"]
            cold = timed(cmd, env)
            warm = min(timed(cmd, env) for _ in range(args.runs))
            data = json.loads(out.read_text())
            inventory = data["targets"][0]["inventory"]
            print(f"live snapshot of {args.python}: {out.stat().st_size} bytes, {len(inventory.get('packages', []))} "
                  f"distributions, {len(inventory.get('binaries', []))} ELF files; cold {cold:.2f} s, from cache {warm:.2f} s")
            no_bin = min(timed([*cmd, "--no-binaries"], env) for _ in range(args.runs))
            print(f"  --no-binaries (the torch probe alone): {no_bin:.2f} s")
        else:
            print(f"{args.python} not found: live part skipped")
        a, b = h200_snapshots(folder)
        print(f"H200 capture as a snapshot: {a.stat().st_size} bytes (866 ELF files, 198 distributions)")
        for label, extra in (("diff", []), ("diff --twins", ["--twins"])):
            best = min(timed([*envcheck, "diff", *extra, str(a), str(b), "-q"]) for _ in range(args.runs))
            print(f"{label} of two H200 snapshots: {best:.2f} s (best of {args.runs}, whole process)")


if __name__ == "__main__":
    main()
