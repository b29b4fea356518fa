"""The folder scan's worker pool, old against new: two envcheck trees side by side on a cold scan (``--no-cache``)
of one environment, interleaved round after round, for several worker counts.

Usage: ``python3 benchmarks/bench_pool.py SITE ROUNDS OLD NEW [WORKERS ...]`` where OLD and NEW are folders each
holding an ``envcheck`` package (``git archive REV envcheck | tar -x -C DIR``) and WORKERS are values of
``ENVCHECK_SCAN_WORKERS`` (``default``: unset, the cores up to 16; the default list is ``default 1 4 8``).
Prints, per worker count, each tree's median, best and worst wall time of a whole process
(``python3 -m envcheck --no-cache -f json SITE``), new/old, and whether both trees gave the same JSON
output. Issue 27's bar: the new pool stays unless the old one is more than 10 % faster. Nothing here is
asserted by tests.
"""

from __future__ import annotations

import hashlib
import os
import statistics
import subprocess
import sys
import time


def main() -> None:
    site, rounds, old, new = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    counts = sys.argv[5:] or ["default", "1", "4", "8"]
    trees = {"old": os.path.abspath(old), "new": os.path.abspath(new)}
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ENVCHECK_SCAN_WORKERS")}

    def env(tree: str, count: str) -> dict[str, str]:
        return dict(base, PYTHONPATH=trees[tree], **({} if count == "default" else {"ENVCHECK_SCAN_WORKERS": count}))

    command = [sys.executable, "-m", "envcheck", "--no-cache", "--kind", "folder", "-f", "json", site]
    outputs: dict[tuple[str, str], str] = {}
    for count in counts:  # one untimed run each: the page cache warm, the outputs compared
        for tree in trees:
            done = subprocess.run(command, env=env(tree, count), capture_output=True, check=False)
            outputs[(tree, count)] = hashlib.sha256(done.stdout).hexdigest()
    times: dict[tuple[str, str], list[float]] = {(tree, count): [] for tree in trees for count in counts}
    for _ in range(rounds):
        for count in counts:
            for tree in trees:
                start = time.perf_counter()
                subprocess.run(command, env=env(tree, count), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               check=False)
                times[(tree, count)].append(time.perf_counter() - start)
    print(f"{site}: {rounds} rounds, cores usable {len(os.sched_getaffinity(0))}")
    for count in counts:
        medians = {}
        for tree in trees:
            values = sorted(times[(tree, count)])
            medians[tree] = statistics.median(values)
            print(f"workers {count:>7s} {tree}: median {medians[tree] * 1000:7.1f} ms  best {values[0] * 1000:7.1f}  "
                  f"worst {values[-1] * 1000:7.1f}")
        same = outputs[("old", count)] == outputs[("new", count)]
        print(f"workers {count:>7s} new/old {medians['new'] / medians['old']:5.2f}  same output: {same}")


if __name__ == "__main__":
    main()
