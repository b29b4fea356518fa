"""Benchmark of `envcheck --resolve` on a typical Spark project's requirements (results go to BENCHMARKS.md).

The requirements below (20 lines: torch, transformers, bitsandbytes, flash-attn, ...) are resolved for the
DGX Spark (linux/aarch64, glibc 2.39, CPython 3.12) against the public index and judged:

1. cold: empty envcheck cache and empty uv cache; 2. warm: the same run again.
   For each: wall time of the whole `envcheck --resolve` process, the bytes envcheck read from the index (its own
   count), all bytes received by this machine during the run (/proc/net/dev: uv's traffic included; other
   processes on the machine add noise), against the total size of the files the resolution picked.
3. `pip install --dry-run --report` for the same target (`--platform manylinux_2_39_aarch64 --python-version 3.12
   --only-binary=:all:`, as pip needs for a foreign platform): wall time, bytes received, and its outcome.
4. `pip download --no-deps` of the same files (the wheel and sdist URLs the resolution picked): wall time and
   bytes (what a tool that downloads every file to inspect it reads).

Usage: python3 benchmarks/bench_resolve.py [--skip-download]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
REQUIREMENTS = """\
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
    parser.add_argument("--skip-download", action="store_true", help="skip the pip download comparison")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-resolve-") as tmp_name:
        tmp = Path(tmp_name)
        req = tmp / "requirements.txt"
        req.write_text(REQUIREMENTS)
        env = {**os.environ, **CLEAN_ENV, "ENVCHECK_CACHE_DIR": str(tmp / "envcheck-cache"), "UV_CACHE_DIR": str(tmp / "uv-cache"),
               "PYTHONPATH": str(REPO)}
        cmd = [sys.executable, "-m", "envcheck", "--resolve", "--index-url", "https://pypi.org/simple", "-f", "json", "--fail-on", "never", str(req)]
        rows = []
        report = None
        for label in ("cold", "warm"):
            wall, rx, proc, cpu = _timed(cmd, env, REPO)
            if proc.returncode != 0:
                print(proc.stderr, file=sys.stderr)
                return 1
            report = json.loads(proc.stdout)
            target = report["targets"][0]
            info = target["inventory"]["host"]["resolve"]
            rows.append((label, wall, cpu, info["bytes_read"], rx, info["requests"]))
        assert report is not None
        target = report["targets"][0]
        resolved = target["inventory"]["resolved"]
        total = sum(r.get("size") or 0 for r in resolved)
        sources: dict[str, int] = {}
        for r in resolved:
            for s in r["sources"][1:]:
                sources[s] = sources.get(s, 0) + 1
        fails = sorted({f"{f['rule']}" for f in target["findings"] if f["status"] in ("FAIL", "WARN")})
        print(f"requirements: {len(REQUIREMENTS.splitlines())} lines -> {len(resolved)} files, {_mb(total)} in all")
        print(f"fact sources over the files: {sources}")
        print(f"findings (FAIL/WARN rules): {', '.join(fails)}")
        print("| run | wall time | CPU time | bytes envcheck read | share of the files' size | bytes received (all, incl. uv) | outcome |")
        print("|---|---|---|---|---|---|---|")
        for label, wall, cpu, read, rx, requests in rows:
            print(f"| envcheck --resolve, {label} | {wall:.2f} s | {cpu:.2f} s | {_mb(read)} | {100 * read / total:.2f} % | {_mb(rx)} | "
                  f"{requests} index requests |")

        pip_target = tmp / "pip-target"
        pip = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--report", str(tmp / "pip-report.json"),
               *PIP_TARGET, "--target", str(pip_target),
               "--index-url", "https://pypi.org/simple", "--no-cache-dir", "-r", str(req)]
        wall, rx, proc, cpu = _timed(pip, {**os.environ, **CLEAN_ENV}, tmp)
        outcome = "resolved" if proc.returncode == 0 else "failed: " + (proc.stderr.strip().splitlines() or ["?"])[-1][:160]
        print(f"| pip install --dry-run --report | {wall:.2f} s | {cpu:.2f} s | - | - | {_mb(rx)} | {outcome} |")
        if not args.skip_download:
            urls = [r["url"] for r in resolved if r.get("url") and r["kind"] == "wheel"]  # pip would build sdists to read them
            (tmp / "urls.txt").write_text("\n".join(urls) + "\n")
            wall, rx, proc, cpu = _timed([sys.executable, "-m", "pip", "download", "--no-deps", "--no-cache-dir", *PIP_TARGET,
                                          "-d", str(tmp / "dl"), "-r", str(tmp / "urls.txt")], {**os.environ, **CLEAN_ENV}, tmp)
            got = sum(f.stat().st_size for f in (tmp / "dl").glob("*")) if (tmp / "dl").is_dir() else 0
            outcome = "ok" if proc.returncode == 0 else "failed: " + (proc.stderr.strip().splitlines() or ["?"])[-1][:160]
            print(f"| pip download --no-deps (the same {len(urls)} wheels) | {wall:.2f} s | {cpu:.2f} s | {_mb(got)} | "
                  f"{100 * got / total:.0f} % | {_mb(rx)} | {outcome} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
