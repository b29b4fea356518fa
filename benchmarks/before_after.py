"""Two envcheck trees side by side, interleaved round after round, on the figures a user waits for: one
requirements file and one Dockerfile (against ``python3 -c pass``), a whole environment cold (no cache)
and answered from the cache (json and text).

Usage: ``python3 benchmarks/before_after.py SITE OUTDIR ROUNDS BEFORE AFTER`` where BEFORE and AFTER are
folders each holding an ``envcheck`` package (for example ``git archive REV envcheck | tar -x -C DIR``).
Each tree's cache lives in ``OUTDIR/c-<name>``. Prints medians, best and worst, and after/before ratios;
checks that both trees give the same findings on each input. Nothing here is asserted by tests.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def main() -> None:
    site, out, rounds, before, after = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
    trees = {"before": os.path.abspath(before), "after": os.path.abspath(after)}
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")}
    inputs = {
        "requirements": [str(REPO / "examples" / "requirements-cuda12.txt")],
        "dockerfile": [str(REPO / "dockerfiles" / "cuda12-devel" / "Dockerfile")],
        "folder cold json": ["--no-cache", "-f", "json", site],
        "folder cached json": ["-f", "json", site],
        "folder cached text": [site],
    }
    times: dict[str, list[float]] = {"python -c pass": []}
    outputs: dict[str, dict[str, str]] = {}
    for name in trees:
        for case, args in inputs.items():
            times[f"{case} {name}"] = []
            env = dict(base, PYTHONPATH=trees[name], ENVCHECK_CACHE_DIR=str(out / f"c-{name}"))
            done = subprocess.run([sys.executable, "-m", "envcheck", "-f", "json", *[a for a in args if a not in ("-f", "json")]],
                                  env=env, capture_output=True, text=True, check=False)
            try:
                findings = [sorted((f["rule"], f["status"]) for f in t["findings"]) for t in json.loads(done.stdout)["targets"]]
            except (ValueError, KeyError):
                findings = [["unreadable output", done.stderr[-300:]]]
            outputs.setdefault(case, {})[name] = json.dumps(findings)
    for _ in range(rounds):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], env=base, check=False)
        times["python -c pass"].append(time.perf_counter() - start)
        for case, args in inputs.items():
            for name in trees:
                env = dict(base, PYTHONPATH=trees[name], ENVCHECK_CACHE_DIR=str(out / f"c-{name}"))
                start = time.perf_counter()
                subprocess.run([sys.executable, "-m", "envcheck", *args], env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, check=False)
                times[f"{case} {name}"].append(time.perf_counter() - start)
    medians = {label: statistics.median(values) for label, values in times.items()}
    for label, values in times.items():
        values.sort()
        print(f"{label:28s} median {medians[label] * 1000:8.1f} ms  best {values[0] * 1000:8.1f}  "
              f"worst {values[-1] * 1000:8.1f}  n={len(values)}")
    passing = medians["python -c pass"]
    for case in inputs:
        b, a = medians[f"{case} before"], medians[f"{case} after"]
        same = outputs[case]["before"] == outputs[case]["after"]
        print(f"{case:20s} after/before {a / b:5.2f}  before {b / passing:5.2f}x pass  after {a / passing:5.2f}x pass  "
              f"same findings: {same}")


if __name__ == "__main__":
    main()
