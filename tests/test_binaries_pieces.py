"""A folder scan searches a big data section in pieces, each a worker's job (binaries._FileReads: cuFFT's 265 MiB
``.ldata``): on a real gcc-built library shaped like cuFFT, whose section is cut into many pieces, the reading,
the inventory and ``bytes_read`` are those of the serial scan, also when a worker dies in a piece job."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
from functools import partial
from pathlib import Path

import pytest
from conftest import FIXTURES, require, scan_in_child

from envcheck.inspect import fatbin
from envcheck.inspect.elf import FileSource, parse_header, read_sections
from envcheck.sources import binaries as binaries_source
from envcheck.sources import scan_workers

BIN = FIXTURES / "binaries"
SPLIT = (64 << 10, 40 << 10)  # sections of 64 KiB or more, in pieces of about 40 KiB (cuFFT: 32 MiB, 16 MiB)
SIZES = {"split_bytes": SPLIT[0], "piece_bytes": SPLIT[1]}


def _containers(path: Path, section: str = ".nv_fatbin") -> list[bytes]:
    """The fatbin containers of a fixture's section, as bytes."""
    with path.open("rb") as fh:
        src = FileSource(fh, path.stat().st_size)
        [s] = [s for s in read_sections(src, parse_header(src.read_at(0, 64))) if s.name == section]
        return [src.read_at(c.offset, c.size) for c in fatbin.walk_containers(src, s.offset, s.size, s.name)]


def _library(folder: Path) -> Path:
    """A gcc-built library like cuFFT: its ``.nv_fatbin`` holds only sm_80 SASS (nothing that runs on sm_121,
    so the other data sections are searched too) and its ``.ldata`` (over binaries.INLINE_BYTES: a job of its
    own) the fixtures' containers, hundreds of them, between zero padding, junk and stray magics."""
    require(shutil.which("gcc") is not None, "gcc not on PATH")
    rnd = random.Random(11)
    kinds = [c for p in sorted(BIN.glob("gpu_*.so")) for c in _containers(p)]
    parts: list[bytes] = []
    size = 0
    while size < scan_workers.INLINE_BYTES + (256 << 10):
        what = rnd.random()
        if what < 0.6:
            part = rnd.choice(kinds)
        elif what < 0.8:
            part = bytes(rnd.choice((8, 64, 4096, 20000, 60000)))
        elif what < 0.9:
            part = b"junk" + rnd.randbytes(rnd.randrange(1, 200))
        else:
            part = fatbin.MAGIC_V1 + rnd.randbytes(rnd.choice((8, 100)))  # hits that are no container
        part += bytes((-len(part)) % 8)
        parts.append(part)
        size += len(part)
    (folder / "ldata.bin").write_bytes(b"".join(parts))
    (folder / "sm80.bin").write_bytes(b"".join(_containers(BIN / "gpu_sm80.so")))
    (folder / "lib.c").write_text(
        '__asm__(".section .nv_fatbin, \\"a\\"\\n.balign 8\\n.incbin \\"sm80.bin\\"\\n'
        '.section .ldata, \\"aw\\"\\n.balign 8\\n.incbin \\"ldata.bin\\"\\n.previous\\n");\n'
        "int kernels(void) { return 1; }\n")
    out = folder / "libkernels.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", out.name, "lib.c"], cwd=folder, check=True, capture_output=True)
    return out


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _library(tmp_path_factory.mktemp("pieces"))


@pytest.fixture(scope="module")
def trees(library: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Where the library is read: a tree of 80 folders (workers list it; the library is a big file read
    while they do), and one folder of 30 files (read in workers after the walk)."""
    root = tmp_path_factory.mktemp("trees")
    walk = root / "walk"
    for i in range(80):
        (walk / f"pkg{i:02d}" / "lib").mkdir(parents=True)
        shutil.copy(BIN / "gpu_sm121.so", walk / f"pkg{i:02d}" / "lib" / "libsmall.so")
    shutil.copy(library, walk / "pkg40" / "lib" / library.name)
    flat = root / "flat"
    flat.mkdir()
    for i, path in enumerate(sorted(BIN.iterdir()) * 3):
        shutil.copy(path, flat / f"{i:02d}-{path.name}")
    shutil.copy(library, flat / library.name)
    return {"walk": walk, "flat": flat}


def _read_in_pieces(reads: scan_workers.FileReads, path: Path) -> binaries_source.BinaryReading:
    reads.submit(scan_workers.ReadFile(str(path), path.stat()))
    [(job, reading)] = list(reads.results())
    assert isinstance(job, scan_workers.ReadFile) and job.path == str(path)
    assert isinstance(reading, binaries_source.BinaryReading)
    return reading


@pytest.mark.parametrize("deep", [False, True])
def test_pieces_read_like_the_whole(library: Path, deep: bool) -> None:
    """Every job of a pool of no workers runs here (WorkerPool runs what no worker can): the library is read,
    its .ldata cut into pieces, searched piece by piece and joined: the serial reading, field for field."""
    serial = binaries_source.scan_file(str(library), library.stat(), deep)
    assert serial.binary is not None and ".ldata" in serial.binary.sections and not serial.problems
    reads = scan_workers.FileReads(0, deep, SPLIT)
    try:
        assert _read_in_pieces(reads, library) == serial
    finally:
        reads.close()
    assert reads.rerun > 100  # the read and its pieces (.ldata is 4.2 MiB, the pieces 40 KiB)


@pytest.mark.parametrize("kind", ["walk", "flat"])
@pytest.mark.parametrize("deep", [False, True])
def test_scans_with_pieces_in_workers_are_the_serial_scan(trees: dict[str, Path], kind: str, deep: bool) -> None:
    serial = scan_in_child(trees[kind], use_cache=False, scan_workers=1, deep_fatbin=deep)
    assert scan_in_child(trees[kind], use_cache=False, scan_workers=3, deep_fatbin=deep, **SIZES) == serial


MAIN = os.getpid()


def _die_in_a_piece(deep: bool, split_at: int | None, job: scan_workers.ScanJob) -> object:
    """A scan job; a worker given the piece at index 5 kills itself with SIGKILL (as the OOM killer would)."""
    if isinstance(job, scan_workers.SearchPiece) and job.index == 5 and os.getpid() != MAIN:
        os.kill(os.getpid(), signal.SIGKILL)
    return scan_workers.run_job(deep, split_at, job)


def test_a_piece_whose_worker_died_is_searched_here(library: Path) -> None:
    serial = binaries_source.scan_file(str(library), library.stat(), False)
    reads = scan_workers.FileReads(2, False, SPLIT, work=partial(_die_in_a_piece, False, SPLIT[0]))
    try:
        assert _read_in_pieces(reads, library) == serial
    finally:
        reads.close()
    assert reads.rerun >= 1  # the piece, and every job not done when its worker died
