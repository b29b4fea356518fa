"""Fuzz the lock-file readers: uv.lock (universal markers) and pylock.toml (PEP 751)."""

from __future__ import annotations

import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import main, scratch_dir, write_input

with atheris.instrument_imports(include=["envcheck"]):
    from envcheck.errors import EnvcheckError
    from envcheck.model import Inventory
    from envcheck.sources import ReadOptions, locks

FOLDER = scratch_dir()
SEEDS = ["examples/**/uv.lock", "examples/**/pylock*.toml"]


def target(data: bytes) -> None:
    # The first byte picks the file name: the name decides uv.lock vs pylock.toml style.
    name = "pylock.toml" if data[:1] and data[0] & 1 else "uv.lock"
    path = write_input(FOLDER, name, data[1:])
    inventory = locks.read(path, ReadOptions())
    assert isinstance(inventory, Inventory)
    assert all(p.location is not None for p in inventory.problems)


if __name__ == "__main__":
    seeds = [bytes([i]) + p.read_bytes() for i, p in ((0, q) for q in Path(__file__).resolve().parent.parent.glob("examples/**/uv.lock"))]
    seeds += [b"\x01" + p.read_bytes() for p in Path(__file__).resolve().parent.parent.glob("examples/**/pylock*.toml")]
    main("locks", target, (EnvcheckError,), [], seeds, max_len=1 << 16)
