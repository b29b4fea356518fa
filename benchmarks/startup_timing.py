"""Whole-process timings side by side, interleaved round after round: ``python3 -c pass`` and the cached
``python3 -m envcheck SITE`` of two trees (``before/`` and ``after/`` in the current folder, each holding an
``envcheck`` package) in the json and the text format.

Usage: ``python3 startup_timing.py SITE OUTDIR ROUNDS`` (each tree's cache in ``OUTDIR/c-<tree>``).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time


def main() -> None:
    site, out, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    here = os.getcwd()
    base = dict(os.environ)
    base.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed copy runs with its bytecode
    cases: list[tuple[str, str | None, str | None]] = [("pass", None, None)]
    cases += [(f"{tree} {fmt}", tree, fmt) for fmt in ("json", "text") for tree in ("before", "after")]
    times: dict[str, list[float]] = {label: [] for label, _, _ in cases}
    for _ in range(rounds):
        for label, tree, fmt in cases:
            if tree is None:
                cmd, env = [sys.executable, "-c", "pass"], base
            else:
                cmd = [sys.executable, "-m", "envcheck", site, *(["-f", "json"] if fmt == "json" else [])]
                env = dict(base, PYTHONPATH=os.path.join(here, tree), ENVCHECK_CACHE_DIR=os.path.join(out, "c-" + tree))
            start = time.perf_counter()
            subprocess.run(cmd, env=env, cwd=here, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
            times[label].append(time.perf_counter() - start)
    for label, values in times.items():
        values.sort()
        print(f"{label:12s} median {statistics.median(values) * 1000:7.1f} ms  best {values[0] * 1000:7.1f}  "
              f"worst {values[-1] * 1000:7.1f}  n={len(values)}")


if __name__ == "__main__":
    main()
