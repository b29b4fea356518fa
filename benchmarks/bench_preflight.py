"""Benchmark: `envcheck preflight` wall time against its target, sample-seconds + 1 s (issue 18; issue 7 had + 3 s).

Runs the real command line (best of N) for several --sample-seconds values against an interpreter:
``--python PATH`` (a real environment, e.g. one with torch), or by default a venv made here with
``--distributions`` installed distributions (.dist-info folders with Requires-Dist lines: what the
collector and the pin checks read). Also times the collector alone and, when the target has torch,
``import torch`` alone: the floor, since the collector imports torch in a child process.

    python benchmarks/bench_preflight.py [--python PATH] [--runs 3] [--distributions 400]
"""

from __future__ import annotations

import argparse
import platform
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def best_of(cmd: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, capture_output=True, check=False, cwd=REPO)
        times.append(time.perf_counter() - start)
    return min(times)


def large_env(root: Path, count: int) -> Path:
    """A venv whose site-packages holds ``count`` installed distributions."""
    venv.EnvBuilder(with_pip=False).create(root)
    python = root / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    for i in range(count):
        info = site / f"bench_dist_{i}-1.{i % 10}.0.dist-info"
        info.mkdir()
        requires = "".join(f"Requires-Dist: bench-dist-{(i + k) % count}>=1.0\n" for k in range(1, 6))
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: bench-dist-{i}\nVersion: 1.{i % 10}.0\n{requires}")
        (info / "INSTALLER").write_text("pip\n")
        (info / "RECORD").write_text("")
    return python


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--python", default=None)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--distributions", type=int, default=400)
    parser.add_argument("--samples", default="0,1,3")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        python = args.python or str(large_env(Path(tmp) / "env", args.distributions))
        count = subprocess.run([python, "-c", "import importlib.metadata as m; print(len(list(m.distributions())))"],
                               capture_output=True, text=True).stdout.strip()
        print(f"machine: {platform.machine()} {platform.processor() or ''}, envcheck python {platform.python_version()}")
        print(f"target: {python} ({count} distributions)")
        probe = best_of([python, str(REPO / "envcheck" / "collect" / "probe.py")], args.runs)
        print(f"collector alone                       : {probe:6.2f} s")
        has_torch = subprocess.run([python, "-c", "import importlib.util as u; print(u.find_spec('torch') is not None)"],
                                   capture_output=True, text=True).stdout.strip() == "True"
        if has_torch:
            print(f"python -c 'import torch' (the floor)  : {best_of([python, '-c', 'import torch'], args.runs):6.2f} s")
        for seconds in (float(s) for s in args.samples.split(",")):
            took = best_of([sys.executable, "-m", "envcheck", "preflight", "--python", python, "--sample-seconds", f"{seconds:g}"], args.runs)
            verdict = "within" if took <= seconds + 1 else "OVER"
            print(f"preflight --sample-seconds {seconds:<4g}      : {took:6.2f} s   ({verdict} target {seconds + 1:g} s)")


if __name__ == "__main__":
    main()
