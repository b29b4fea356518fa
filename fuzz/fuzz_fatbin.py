"""Fuzz the fatbin container/entry walker and the forward-only stream scanner (used on image layers)."""

from __future__ import annotations

import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import REPO, main

with atheris.instrument_imports(include=["envcheck"]):
    from envcheck.inspect import fatbin, fatbin_levels
    from envcheck.inspect.elf import BytesSource, MalformedBinary


def target(data: bytes) -> None:
    src = BytesSource(data)
    try:
        containers = fatbin.walk_containers(src, 0, len(data), ".nv_fatbin")
        fatbin_levels.binary_level(containers, 121)
    except MalformedBinary as exc:
        assert exc.offset is None or exc.offset >= 0, exc.offset
    found = fatbin.scan_containers(src, 0, len(data), ".data", chunk=64)
    for container in found:
        assert 0 <= container.offset < len(data) and container.offset + container.size <= len(data)
        fatbin_levels.container_level(container.entries, 121)
    scanner = fatbin.StreamScanner()
    step = 16 * (1 + (data[0] if data else 0))  # chunk boundaries anywhere, without quadratic 1-byte feeds
    for pos in range(0, len(data), step):
        scanner.feed(data[pos:pos + step], pos)
    scanner.finish()


def fatbin_seeds() -> list[bytes]:
    """The .nv_fatbin sections of the real fixture binaries (built by fixtures/build_binaries.sh)."""
    out = []
    for path in sorted((REPO / "fixtures" / "binaries").glob("gpu_*.so")):
        data = path.read_bytes()
        at = data.find(fatbin.MAGIC)
        if at >= 0:
            out.append(data[at:at + (16 << 10)])
    return out


if __name__ == "__main__":
    main("fatbin", target, (), [], fatbin_seeds(), max_len=32 << 10)
