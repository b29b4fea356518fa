"""Per-container overhead of ``envcheck container`` with the engine warm (create to removed).

    python3 benchmarks/bench_container.py [--runs 30]

Measures, on the test images of ``tests/docker_images.py`` (built or reused first, not timed):
- ``baseline``: the SDK's plain ``containers.run(img, python3 -c pass)`` + remove (no hardening, no payload);
- ``probe-overhead``: envcheck's hardened runner with a probe that exits at once: create (AutoRemove),
  put_archive of envcheck + packaging, the wait and the output attach registered, start, the
  exit status, removal with its volume;
- ``collector``: ``read_container`` with the real collector on the CUDA 13 image (engine client, image
  lookup, the run, JSON validation, the inventory), i.e. everything but the checks.
Prints one JSON object with min/median/p90 seconds per case.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from docker_images import build_test_images  # noqa: E402

from envcheck.services.docker_engine import engine_client  # noqa: E402
from envcheck.services.docker_runner import (  # noqa: E402
    ContainerOptions,
    leftover_containers,
    payload_archive,
    payload_folders,
    run_probe,
)
from envcheck.sources.container import read_container  # noqa: E402


def timed(fn: Callable[[], object], runs: int) -> dict[str, float]:
    fn()  # warm: first put_archive and first start are slower
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - started)
    samples.sort()
    return {
        "runs": runs,
        "min_s": round(samples[0], 4),
        "median_s": round(statistics.median(samples), 4),
        "p90_s": round(samples[int(0.9 * (runs - 1))], 4),
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    client = engine_client()
    images = build_test_images(client)
    with tempfile.TemporaryDirectory() as scratch:
        probe = Path(scratch) / "envcheck_noop_probe"
        probe.mkdir()
        (probe / "__init__.py").write_text("")
        (probe / "__main__.py").write_text("print('{}')\n")
        noop = ContainerOptions(probe_module="envcheck_noop_probe", probe_args=("x",),
                                payload=(probe, *payload_folders()))

        def baseline() -> None:
            client.containers.run(images.python, ["python3", "-c", "pass"], network_mode="none", remove=True)

        def overhead() -> None:
            assert run_probe(client, images.python, noop).exit_code == 0

        def collector() -> None:
            inventory = read_container(images.cuda13, ContainerOptions(), client)
            assert not inventory.problems and inventory.packages

        results = {
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "machine": f"{platform.machine()}, {len(__import__('os').sched_getaffinity(0))} cores, "
                       f"Docker engine {client.version()['Version']}, Python {platform.python_version()}",
            "payload_bytes": len(payload_archive(payload_folders())),
            "baseline": timed(baseline, args.runs),
            "probe-overhead": timed(overhead, args.runs),
            "collector": timed(collector, args.runs),
        }
    assert leftover_containers(client) == []
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
