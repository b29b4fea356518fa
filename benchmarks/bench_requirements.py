"""Benchmark: checking a 500-line requirements file, and envcheck's start-up as a pre-commit hook.

Measures wall time of the real command line (best of N runs, warm page cache) next to two references
run in the same session: a bare `python3 -c pass` (the floor for any Python hook) and `pip --version`
(pip's own start-up, what a pip-based hook pays before it reads anything).

    python benchmarks/bench_requirements.py [--runs 7]
"""

from __future__ import annotations

import argparse
import platform
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def best_of(cmd: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, capture_output=True, check=False)
        times.append(time.perf_counter() - start)
    return min(times)


def make_requirements(path: Path, lines: int) -> None:
    rng = random.Random(42)
    out = ["--extra-index-url https://download.pytorch.org/whl/cu130", "torch==2.9.0+cu130", "triton==3.5.0", "transformers==4.57.1"]
    for i in range(lines - len(out)):
        out.append(f"package-{i}=={rng.randint(0, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 9)} ; python_version >= '3.10'  # pinned by lock #{i}")
    path.write_text("\n".join(out) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        req = Path(tmp) / "requirements.txt"
        make_requirements(req, 500)
        check = best_of([sys.executable, "-m", "envcheck", "--format", "json", str(req)], args.runs)
        version = best_of([sys.executable, "-m", "envcheck", "--version"], args.runs)
        bare = best_of([sys.executable, "-c", "pass"], args.runs)
        pip = best_of([sys.executable, "-m", "pip", "--version"], args.runs)
    print(f"machine: {platform.machine()} {platform.processor() or ''} python {platform.python_version()}")
    print(f"envcheck on 500-line requirements.txt : {check * 1000:7.1f} ms")
    print(f"envcheck --version (start-up)          : {version * 1000:7.1f} ms")
    print(f"python3 -c pass                        : {bare * 1000:7.1f} ms")
    print(f"pip --version                          : {pip * 1000:7.1f} ms   (ratio envcheck check / pip start-up: {check / pip:.2f})")


if __name__ == "__main__":
    main()
