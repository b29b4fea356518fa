"""Fuzz the wheel reader: zip central directory, lying member sizes, deflate streams, WHEEL/METADATA,
and the ELF members it streams."""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import main, scratch_dir, write_input
from seed_builders import small_wheel

with atheris.instrument_imports(include=["envcheck"]):
    from envcheck.errors import EnvcheckError
    from envcheck.model import Inventory
    from envcheck.sources import ReadOptions
    from envcheck.sources import wheel as wheel_source

FOLDER = scratch_dir()
NAME = "demo_pkg-1.0-cp311-cp311-manylinux_2_28_aarch64.whl"


def target(data: bytes) -> None:
    path = write_input(FOLDER, NAME, data)
    inventory = wheel_source.read(path, ReadOptions())
    assert isinstance(inventory, Inventory)
    for problem in inventory.problems:
        assert problem.location is not None and problem.location.path == str(path), problem


if __name__ == "__main__":
    seeds = [small_wheel(zipfile.ZIP_DEFLATED, None), small_wheel(zipfile.ZIP_STORED, None),
             small_wheel(zipfile.ZIP_DEFLATED, "libext_cuda12.so"), small_wheel(zipfile.ZIP_STORED, "gpu_sm121.so")]
    main("wheel", target, (EnvcheckError,), [], seeds, max_len=64 << 10)
