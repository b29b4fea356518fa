"""Fuzz a folder scan's installed-distribution metadata: *.dist-info/METADATA and RECORD (CSV with paths
that may point anywhere), next to a real ELF file the RECORD claims."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import REPO, main, scratch_dir

with atheris.instrument_imports(include=["envcheck"]):
    from envcheck.errors import EnvcheckError
    from envcheck.model import Inventory
    from envcheck.sources import ReadOptions, binaries

FOLDER = scratch_dir()
SITE = FOLDER / "venv" / "lib" / "python3.12" / "site-packages"
OPTIONS = ReadOptions(use_cache=False)
ELF = (REPO / "fixtures" / "binaries" / "libext_cuda12.so").read_bytes()


def target(data: bytes) -> None:
    metadata, _, record = data.partition(b"\0RECORD\0")
    shutil.rmtree(FOLDER / "venv", ignore_errors=True)
    info = SITE / "demo-1.0.dist-info"
    info.mkdir(parents=True)
    (FOLDER / "venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (info / "METADATA").write_bytes(metadata)
    (info / "RECORD").write_bytes(record)
    (SITE / "demo").mkdir()
    (SITE / "demo" / "_ext.so").write_bytes(ELF)
    inventory = binaries.read(FOLDER / "venv", OPTIONS)
    assert isinstance(inventory, Inventory)
    for problem in inventory.problems:
        assert problem.location is not None


if __name__ == "__main__":
    seed = (b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\nRequires-Dist: torch>=2.9\n\0RECORD\0"
            b"demo/__init__.py,sha256=abc,0\ndemo/_ext.so,sha256=def,15312\n../../../bin/demo,,\ndemo-1.0.dist-info/RECORD,,\n")
    main("dist_info", target, (EnvcheckError,), [], [seed], max_len=4096)
