"""Fuzz the ELF and ar reader (headers, section table, dynamic table, string tables) with the fatbin walk,
as the binary scanner calls it: bad content must come back as problems with offsets, never raise."""

from __future__ import annotations

import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import main
from seed_builders import hostile_elf_seeds

with atheris.instrument_imports(include=["envcheck"]):
    from envcheck.inspect.elf import BytesSource
    from envcheck.model import Binary
    from envcheck.sources.binaries import read_binary

SEEDS = ["fixtures/binaries/*"]


def target(data: bytes) -> None:
    deep = bool(data[-1:] == b"\x01")
    reading = read_binary(BytesSource(data), "fuzz.so", deep_fatbin=deep)
    assert reading.binary is None or isinstance(reading.binary, Binary)
    for problem in reading.problems:
        assert problem.location is not None and problem.location.path == "fuzz.so", problem
        off = problem.location.offset
        assert off is None or off >= 0, problem


if __name__ == "__main__":
    main("elf", target, (), SEEDS, hostile_elf_seeds(), max_len=64 << 10)
