"""Fuzz the image-layer reader: tar (plain/gzip) streams with whiteouts, METADATA members, hard links and
ELF members, read once forward like a registry download."""

from __future__ import annotations

import gzip
import io
import sys
import tarfile
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import REPO, main

with atheris.instrument_imports(include=["envcheck"]):
    from envcheck.errors import EnvcheckError
    from envcheck.services.registry.layers import LayerScan, merge_layers, scan_layer
    from envcheck.sources.binaries import binary_from_file


def layer_tar(members: list[tuple[str, bytes]], gz: bool) -> bytes:
    """A real layer tar built with tarfile (regular files, a whiteout, a hard link)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o755
            tar.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo("usr/lib/python3/dist-packages/x/_copy.so")
        link.type = tarfile.LNKTYPE
        link.linkname = members[-1][0]
        tar.addfile(link)
        white = tarfile.TarInfo("usr/local/lib/python3.12/site-packages/old/.wh.gone.so")
        tar.addfile(white)
    raw = buf.getvalue()
    return gzip.compress(raw, mtime=0) if gz else raw


def target(data: bytes) -> None:
    scan = scan_layer(io.BytesIO(data), binary_from_file, deep_fatbin=bool(data[-1:] == b"\x01"))
    assert isinstance(scan, LayerScan) and scan.members >= 0 and scan.bytes >= 0
    merge_layers([("sha256:" + "0" * 64, scan)])


if __name__ == "__main__":
    meta = b"Metadata-Version: 2.1\nName: torch\nVersion: 2.9.0+cu130\nRequires-Dist: triton==3.5.0\n"
    elf = (REPO / "fixtures" / "binaries" / "libext_cuda12.so").read_bytes()
    members = [("usr/local/lib/python3.12/site-packages/torch-2.9.0.dist-info/METADATA", meta),
               ("usr/local/lib/python3.12/site-packages/torch/lib/libext.so", elf)]
    seeds = [layer_tar(members, False), layer_tar(members, True), layer_tar(members[:1], True)]
    main("layer", target, (EnvcheckError,), [], seeds, max_len=64 << 10)
