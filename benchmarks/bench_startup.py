"""Benchmark: the pre-commit path, whole process: one requirements file and one Dockerfile against
`python -c pass` of the same interpreter (issue 18's target: <= 4x, goal 3x).

The three commands run interleaved, round after round, in one session (so load changes hit all of them
alike); the report gives the median and the best of each and the ratios to `python -c pass`. Also prints
the load average before and after, to be recorded with the figures.

    python benchmarks/bench_startup.py [--rounds 21] [--baseline OTHER_CHECKOUT]

With --baseline, the same envcheck commands also run from another checkout (e.g. the commit before a
change), interleaved with the others, so a before/after comparison shares one session's load.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--baseline", type=Path, help="another checkout to run the same commands from")
    args = parser.parse_args()
    inputs = ("examples/requirements-good.txt", "dockerfiles/cuda13-cu130-index/Dockerfile")
    commands: dict[str, tuple[list[str], Path]] = {"python -c pass": ([sys.executable, "-c", "pass"], REPO)}
    for tree, label in ((REPO, ""), (args.baseline, " [baseline]")):
        if tree is not None:
            for path in inputs:
                commands[f"envcheck {path}{label}"] = ([sys.executable, "-m", "envcheck", str(REPO / path)], tree.resolve())
    # Installed packages run from cached bytecode: let the children write __pycache__ (one warm-up round).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    for cmd, tree in commands.values():
        subprocess.run(cmd, cwd=tree, env=env, capture_output=True, check=False)
    times: dict[str, list[float]] = {name: [] for name in commands}
    cpu: dict[str, list[float]] = {name: [] for name in commands}  # user+sys: less sensitive to other load
    load_before = os.getloadavg()
    for _ in range(args.rounds):
        for name, (cmd, tree) in commands.items():
            # cwd first on sys.path (python -m), so each checkout runs its own code
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            subprocess.run(cmd, cwd=tree, env=env, capture_output=True, check=False)
            times[name].append(time.perf_counter() - start)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu[name].append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    load_after = os.getloadavg()
    floor = statistics.median(times["python -c pass"])
    floor_best = min(times["python -c pass"])
    print(f"machine: {platform.machine()} {os.cpu_count()} CPUs, python {platform.python_version()}, "
          f"{args.rounds} interleaved rounds, load average {load_before[0]:.2f} before, {load_after[0]:.2f} after")
    cpu_floor = statistics.median(cpu["python -c pass"])
    print(f"{'command':63} {'median':>9} {'best':>9} {'ratio (median)':>15} {'ratio (best)':>13} {'CPU median':>11} {'CPU ratio':>10}")
    for name, samples in times.items():
        median, best, cpu_median = statistics.median(samples), min(samples), statistics.median(cpu[name])
        print(f"{name:63} {median * 1000:7.1f}ms {best * 1000:7.1f}ms {median / floor:14.2f}x {best / floor_best:12.2f}x "
              f"{cpu_median * 1000:9.1f}ms {cpu_median / cpu_floor:9.2f}x")


if __name__ == "__main__":
    main()
