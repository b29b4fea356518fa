"""Fuzz the live-reading parsers: nvidia-smi CSV query output, /proc/meminfo, and launch configs and
command lines (torchrun / accelerate YAML / DeepSpeed JSON / hostfiles)."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import main

with atheris.instrument_imports(include=["envcheck"]):
    from envcheck.inspect import launch, meminfo, nvidia_smi

SEEDS = ["fixtures/nvidia-smi/*.csv", "fixtures/launch/*"]
EXTRA = [
    b"MemTotal:       128000000 kB\nMemFree:        1000000 kB\nMemAvailable:   90000000 kB\nCached:  3000 kB\nHugePages_Total:       0\n",
    b"torchrun --nnodes=2 --nproc_per_node=1 train.py --tensor_parallel_size 2",
    b"vllm serve m -tp 2 --pipeline-parallel-size 1",
]
FIELDS = ("index", "name", "memory.total", "memory.used", "power.draw", "temperature.gpu", "clocks_throttle_reasons.active")


def target(data: bytes) -> None:
    text = data.decode("utf-8", errors="replace")
    mode = data[0] % 4 if data else 0
    try:
        table = nvidia_smi.parse_csv(text, FIELDS if mode == 1 else None)
        for row in table.rows:
            nvidia_smi.gpu_row(row)
            nvidia_smi.app_row(row)
            for value in row.values():
                nvidia_smi.number(value)
                nvidia_smi.throttle_reasons(value)
    except nvidia_smi.NvidiaSmiFormatError as exc:
        assert exc.line >= 1
    try:
        parsed = meminfo.parse(text)
        assert all(value >= 0 for value in parsed.values.values())
    except meminfo.MeminfoFormatError as exc:
        assert exc.line >= 1
    with contextlib.suppress(launch.LaunchFormatError):
        launch.parse_config(text, "fuzz.yaml")
    with contextlib.suppress(launch.LaunchFormatError):
        launch.parse_command(text)


if __name__ == "__main__":
    main("host_readings", target, (), SEEDS, EXTRA, max_len=4096)
