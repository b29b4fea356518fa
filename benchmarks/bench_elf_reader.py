"""Benchmark: envcheck's bounded ELF reader against pyelftools on the same file (issue 14, dependencies).

Reads the facts envcheck needs from one ELF file (machine, SONAME, DT_NEEDED, RUNPATH, the section table)
with both readers and reports wall time (best of N) and bytes read from the file; then feeds both a
lying header (a section table claiming 0xffff entries of 0xffff bytes) and reports what each does.

    python benchmarks/bench_elf_reader.py [PATH_TO_SO] [--runs 5]

Default file: ``.work/torch-venv/.../torch/lib/libtorch_cuda.so`` (the test suite's CUDA 13 torch venv).
pyelftools is a test dependency (the oracle in tests/test_binaries_read.py), not a runtime one.
"""

from __future__ import annotations

import argparse
import io
import os
import struct
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from elftools.common.exceptions import ELFError  # noqa: E402
from elftools.elf.dynamic import DynamicSection  # noqa: E402
from elftools.elf.elffile import ELFFile  # noqa: E402

from envcheck.inspect import elf  # noqa: E402


class CountingFile(io.RawIOBase):
    """A read-only file that counts the bytes handed out (what pyelftools really read)."""

    def __init__(self, path: Path) -> None:
        self._f = open(path, "rb")  # noqa: SIM115 - closed in close()
        self.bytes_read = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._f.seek(offset, whence)

    def tell(self) -> int:
        return self._f.tell()

    def read(self, size: int = -1) -> bytes:
        data = self._f.read(size)
        self.bytes_read += len(data)
        return data

    def close(self) -> None:
        self._f.close()
        super().close()


def envcheck_facts(path: Path) -> tuple[tuple[Any, ...], int]:
    size = path.stat().st_size
    with open(path, "rb") as f:
        src = elf.FileSource(f, size)
        hdr = elf.parse_header(src.read_at(0, 64))
        sections = elf.read_sections(src, hdr)
        dyn = elf.read_dynamic(src, hdr, sections)
        facts = (hdr.machine, dyn.soname, tuple(dyn.needed), tuple(dyn.runpath), len(sections))
        return facts, src.bytes_read


def pyelftools_facts(path: Path) -> tuple[tuple[Any, ...], int]:
    f = CountingFile(path)
    try:
        ef = ELFFile(f)
        machine = {"EM_X86_64": "x86_64", "EM_AARCH64": "aarch64"}.get(ef["e_machine"], ef["e_machine"])
        soname, needed, runpath = None, [], []
        count = 0
        for section in ef.iter_sections():
            count += 1
            if isinstance(section, DynamicSection):
                for tag in section.iter_tags():
                    if tag.entry.d_tag == "DT_NEEDED":
                        needed.append(tag.needed)
                    elif tag.entry.d_tag == "DT_SONAME":
                        soname = tag.soname
                    elif tag.entry.d_tag in ("DT_RUNPATH", "DT_RPATH"):
                        runpath.extend(p for p in (tag.runpath if tag.entry.d_tag == "DT_RUNPATH" else tag.rpath).split(":") if p)
        return (machine, soname, tuple(needed), tuple(runpath), count), f.bytes_read
    finally:
        f.close()


def best(fn: Any, path: Path, runs: int) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(runs):
        start = time.perf_counter()
        out = fn(path)
        times.append(time.perf_counter() - start)
    return min(times), out


def lying_header(tmp: Path) -> Path:
    """A 4 KiB x86_64 ELF whose header claims a 0xffff x 0xffff section table (4 GiB)."""
    head = bytearray(4096)
    head[:16] = b"\x7fELF\x02\x01\x01" + bytes(9)
    struct.pack_into("<HHIQQQIHHHHHH", head, 16, 3, 62, 1, 0, 64, 64, 0, 64, 56, 0, 0xFFFF, 0xFFFF, 0)
    path = tmp / "lying.so"
    path.write_bytes(bytes(head))
    return path


def outcome(fn: Any, path: Path) -> str:
    start = time.perf_counter()
    try:
        fn(path)
        said = "no error (facts from a lying header)"
    except elf.MalformedBinary as exc:
        said = f"MalformedBinary: {exc}"
    except (ELFError, struct.error, OSError, ValueError, MemoryError) as exc:  # pyelftools' own failures
        said = f"{type(exc).__name__}: {str(exc)[:80]}"
    except Exception as exc:
        said = f"{type(exc).__name__} (unexpected): {str(exc)[:80]}"
    return f"{said} [{time.perf_counter() - start:.3f} s]"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", type=Path)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    path = args.path or next(iter(sorted((REPO / ".work" / "torch-venv").glob("lib/python*/site-packages/torch/lib/libtorch_cuda.so"))), None)
    if path is None or not path.is_file():
        print("no file: pass a path, or make the torch venv (pytest tests/test_binaries_real.py)", file=sys.stderr)
        return 2
    size = path.stat().st_size
    print(f"file: {path} ({size / 1e6:.1f} MB); best of {args.runs}; {os.uname().machine}, load {os.getloadavg()[0]:.2f}")
    t_env, (facts_env, read_env) = best(envcheck_facts, path, args.runs)
    t_pye, (facts_pye, read_pye) = best(pyelftools_facts, path, args.runs)
    same = facts_env[:4] == facts_pye[:4]
    print(f"{'reader':12} {'time':>9} {'bytes read':>12} {'sections':>9}")
    print(f"{'envcheck':12} {t_env * 1000:8.1f}ms {read_env:12,} {facts_env[4]:9}")
    print(f"{'pyelftools':12} {t_pye * 1000:8.1f}ms {read_pye:12,} {facts_pye[4]:9}")
    print(f"same machine/soname/needed/runpath: {same}; pyelftools/envcheck time {t_pye / t_env:.1f}x, bytes {read_pye / max(1, read_env):.1f}x")
    with tempfile.TemporaryDirectory() as tmp:
        bad = lying_header(Path(tmp))
        print(f"lying header, envcheck:   {outcome(envcheck_facts, bad)}")
        print(f"lying header, pyelftools: {outcome(pyelftools_facts, bad)}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
