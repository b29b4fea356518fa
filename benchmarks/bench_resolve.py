"""Benchmark of `envcheck --resolve` side by side with `uv pip compile` of the same file, in the same run.

The default input is issue 29's serving project (`torch>=2.11`, `transformers==4.57.1`, `flash-attn==2.8.3`,
`xformers`, `bitsandbytes`, `vllm`); `--project training` takes the 20-line training requirements of issue 15
(torch, transformers, bitsandbytes, flash-attn, ...). Both are resolved for the DGX Spark (linux/aarch64,
glibc 2.39, CPython 3.12) against the public index.

1. `uv pip compile --python-platform aarch64-manylinux_2_39 --python-version 3.12` of the file alone, with an
   empty uv cache (the peer: resolution without judging).
2. `envcheck --resolve`, cold: empty envcheck cache and empty uv cache (its own uv run included); the ratio to 1.
3. `envcheck --resolve`, warm: the same run again.
   For each envcheck run: wall time, CPU time, exit code, the number of findings, the bytes and requests envcheck
   made to the index (its own count), all bytes received by this machine (/proc/net/dev: uv's traffic included;
   other processes on the machine add noise), and where each file's facts came from.
With `--pip`: `pip install --dry-run --report` for the same target, and `pip download --no-deps` of the files the
resolution picked (what a tool that downloads every file to inspect it reads).

Usage: python3 benchmarks/bench_resolve.py [--project serving|training] [--pip]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SERVING = "torch>=2.11\ntransformers==4.57.1\nflash-attn==2.8.3\nxformers\nbitsandbytes\nvllm\n"
TRAINING = """\
torch==2.14.1
torchvision
transformers
accelerate
peft
trl
datasets
bitsandbytes==0.50.2
flash-attn
safetensors
sentencepiece
tokenizers
einops
numpy
scipy
huggingface-hub
pyyaml
tqdm
wandb
evaluate
"""
# pip matches --platform tags exactly: every tag the Spark accepts is listed (uv expands aarch64-manylinux_2_39 itself).
PIP_TARGET = [*(f"--platform=manylinux_2_{m}_aarch64" for m in range(39, 16, -1)), "--platform=manylinux2014_aarch64",
              "--platform=linux_aarch64", "--python-version=3.12", "--implementation=cp", "--only-binary=:all:"]
CLEAN_ENV = {"PIP_INDEX_URL": "", "PIP_EXTRA_INDEX_URL": "", "PIP_FIND_LINKS": "", "UV_NO_CONFIG": "1"}


def _rx_bytes() -> int:
    total = 0
    for line in Path("/proc/net/dev").read_text().splitlines()[2:]:
        name, _, data = line.partition(":")
        if name.strip() != "lo":
            total += int(data.split()[0])
    return total


def _timed(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, int, subprocess.CompletedProcess[str], float]:
    """Wall time, bytes received, the process, and its CPU time (user + system, children included)."""
    rx = _rx_bytes()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=3600)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return time.monotonic() - start, _rx_bytes() - rx, proc, cpu


def _mb(n: float) -> str:
    return f"{n / 1e6:,.1f} MB"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--project", choices=("serving", "training"), default="serving")
    parser.add_argument("--pip", action="store_true", help="also time pip's dry run and pip download of the same files")
    args = parser.parse_args()
    requirements = SERVING if args.project == "serving" else TRAINING
    with tempfile.TemporaryDirectory(prefix="bench-resolve-") as tmp_name:
        tmp = Path(tmp_name)
        req = tmp / "requirements.txt"
        req.write_text(requirements)
        uv = [shutil.which("uv") or "uv", "pip", "compile", str(req), "--python-platform", "aarch64-manylinux_2_39",
              "--python-version", "3.12", "--index-url", "https://pypi.org/simple", "--format", "pylock.toml",
              "-o", str(tmp / "pylock.uv.toml"), "--no-header", "--no-progress"]
        uv_wall, uv_rx, proc, uv_cpu = _timed(uv, {**os.environ, **CLEAN_ENV, "UV_CACHE_DIR": str(tmp / "uv-alone")}, tmp)
        if proc.returncode != 0:
            print(proc.stderr, file=sys.stderr)
            return 1
        env = {**os.environ, **CLEAN_ENV, "ENVCHECK_CACHE_DIR": str(tmp / "envcheck-cache"), "UV_CACHE_DIR": str(tmp / "uv-cache"),
               "PYTHONPATH": str(REPO)}
        cmd = [sys.executable, "-m", "envcheck", "--resolve", "--index-url", "https://pypi.org/simple", "-f", "json", str(req)]
        rows = []
        report = None
        for label in ("cold", "warm"):
            wall, rx, proc, cpu = _timed(cmd, env, REPO)
            if proc.returncode not in (0, 1):
                print(proc.stderr, file=sys.stderr)
            report = json.loads(proc.stdout)
            target = report["targets"][0]
            info = target["inventory"]["host"]["resolve"]
            rows.append((label, wall, cpu, info["bytes_read"], rx, info["requests"], proc.returncode, len(target["findings"])))
        # uv alone again, after envcheck (a fresh cache again): the ratio is taken to the faster of its two runs, so
        # whatever the first run warmed on the way (DNS, the CDN) never flatters envcheck
        uv_wall2, _, _, _ = _timed(uv, {**os.environ, **CLEAN_ENV, "UV_CACHE_DIR": str(tmp / "uv-alone-2")}, tmp)
        uv_first = uv_wall
        uv_wall = min(uv_wall, uv_wall2)
        assert report is not None
        target = report["targets"][0]
        resolved = target["inventory"]["resolved"]
        total = sum(r.get("size") or 0 for r in resolved)
        sources: dict[str, int] = {}
        for r in resolved:
            for s in r["sources"][1:]:
                sources[s] = sources.get(s, 0) + 1
        fails = sorted({f"{f['rule']}" for f in target["findings"] if f["status"] in ("FAIL", "WARN")})
        print(f"{args.project} project: {len(requirements.splitlines())} lines -> {len(resolved)} files, {_mb(total)} in all")
        print(f"fact sources over the files: {sources}")
        print(f"findings (FAIL/WARN rules): {', '.join(fails)}")
        print("| run | wall time | ratio to uv alone | CPU time | exit code, findings | bytes envcheck read | share of the files' size "
              "| bytes received (all, incl. uv) | index requests |")
        print("|---|---|---|---|---|---|---|---|---|")
        print(f"| uv pip compile alone, cold uv cache (before; after envcheck) | {uv_first:.2f} s; {uv_wall2:.2f} s | 1.00 | "
              f"{uv_cpu:.2f} s | 0 | - | - | {_mb(uv_rx)} | - |")
        for label, wall, cpu, read, rx, requests, code, findings in rows:
            print(f"| envcheck --resolve, {label} | {wall:.2f} s | {wall / uv_wall:.2f} | {cpu:.2f} s | {code}, {findings} | {_mb(read)} | "
                  f"{100 * read / max(total, 1):.2f} % | {_mb(rx)} | {requests} |")
        if args.pip:
            _pip_rows(tmp, req, resolved, total)
    return 0


def _pip_rows(tmp: Path, req: Path, resolved: list[dict[str, object]], total: int) -> None:
    pip_target = tmp / "pip-target"
    pip = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--report", str(tmp / "pip-report.json"),
           *PIP_TARGET, "--target", str(pip_target), "--index-url", "https://pypi.org/simple", "--no-cache-dir", "-r", str(req)]
    wall, rx, proc, cpu = _timed(pip, {**os.environ, **CLEAN_ENV}, tmp)
    outcome = "resolved" if proc.returncode == 0 else "failed: " + (proc.stderr.strip().splitlines() or ["?"])[-1][:160]
    print(f"| pip install --dry-run --report | {wall:.2f} s | - | {cpu:.2f} s | {outcome} | - | - | {_mb(rx)} | - |")
    urls = [str(r["url"]) for r in resolved if r.get("url") and r["kind"] == "wheel"]  # pip would build sdists to read them
    (tmp / "urls.txt").write_text("\n".join(urls) + "\n")
    wall, rx, proc, cpu = _timed([sys.executable, "-m", "pip", "download", "--no-deps", "--no-cache-dir", *PIP_TARGET,
                                  "-d", str(tmp / "dl"), "-r", str(tmp / "urls.txt")], {**os.environ, **CLEAN_ENV}, tmp)
    got = sum(f.stat().st_size for f in (tmp / "dl").glob("*")) if (tmp / "dl").is_dir() else 0
    outcome = "ok" if proc.returncode == 0 else "failed: " + (proc.stderr.strip().splitlines() or ["?"])[-1][:160]
    print(f"| pip download --no-deps (the same {len(urls)} wheels) | {wall:.2f} s | - | {cpu:.2f} s | {outcome} | {_mb(got)} | "
          f"{100 * got / max(total, 1):.0f} % | {_mb(rx)} | - |")


if __name__ == "__main__":
    raise SystemExit(main())
