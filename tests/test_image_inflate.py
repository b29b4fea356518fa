"""Layers decompressed in worker threads (envcheck/services/registry/inflate.py): the same inventory whatever
the compression, real CUDA 13 files read as the binary reader reads them from disk, damaged streams and bombs
refused as layer errors with no thread left behind, and the per-layer rate under -v."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import tarfile
import threading
import zipfile
from pathlib import Path
from typing import Any

import pytest
import torch_env
import zstandard
from conftest import REPO, require, run_envcheck
from hypothesis import given, settings
from hypothesis import strategies as st
from registry_fixtures import DIST, deep_image_parts, metadata, session_elves, tar_of, write_oci_layout

from envcheck.errors import ServiceError
from envcheck.services.registry.client import VerifiedStream
from envcheck.services.registry.inflate import CHUNK, open_layer_stream
from envcheck.services.registry.layers import LayerError, LayerScan, expansion_limit, scan_layer
from envcheck.sources.binaries import binary_from_file

NVSHMEM = torch_env.NVSHMEM  # 60 MB wheel: host and device libraries with fatbins, bitcode, headers


def _compressions(tar: bytes) -> dict[str, bytes]:
    half = len(tar) // 2
    return {
        "gzip": gzip.compress(tar, compresslevel=1, mtime=0),
        "gzip in two members": gzip.compress(tar[:half], compresslevel=1, mtime=0) + gzip.compress(tar[half:], compresslevel=1, mtime=0),
        "zstd": zstandard.ZstdCompressor().compress(tar),
        "none": tar,
    }


def _facts(scan: LayerScan) -> dict[str, Any]:
    return {"paths": sorted(scan.paths), "packages": scan.packages, "problems": scan.problems, "members": scan.members,
            "bytes": scan.bytes, "binaries": {b["path"]: {k: v for k, v in b.items() if k != "path"} for b in scan.binaries}}


@pytest.fixture(scope="module")
def nvshmem_wheel() -> Path:
    try:
        return torch_env.real_wheel(NVSHMEM)
    except torch_env.NotPrepared as exc:
        require(False, str(exc))
        raise


@pytest.mark.slow
def test_real_cuda13_layer_reads_the_same_in_every_compression(nvshmem_wheel: Path) -> None:
    plain: dict[str, dict[str, Any]] = {}  # the binary reader on each file, as the folder scan reads it
    out = io.BytesIO()
    with zipfile.ZipFile(nvshmem_wheel) as zf, tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for entry in zf.infolist():
            if entry.is_dir():
                continue
            data = zf.read(entry)
            path = f"{DIST}/{entry.filename}"
            info = tarfile.TarInfo(path)
            info.size, info.mode = len(data), 0o755
            tar.addfile(info, io.BytesIO(data))
            if data[:4] == b"\x7fELF":
                binary = binary_from_file(io.BytesIO(data), path, len(data))  # type: ignore[arg-type]
                assert binary is not None
                plain[path] = {k: v for k, v in binary.to_json().items() if k not in ("location", "path")}
    assert len(plain) >= 3 and any(b.get("sass") or b.get("ptx") for b in plain.values())  # GPU code is compared too
    scans = {name: _facts(scan_layer(io.BytesIO(blob), binary_from_file)) for name, blob in _compressions(out.getvalue()).items()}
    first = scans["none"]
    for name, facts in scans.items():
        assert facts == first, name
    assert first["binaries"] == plain
    assert [(p["name"], p["version"]) for p in first["packages"]] == [("nvidia-nvshmem-cu13", "3.4.5")]


_SPANNING = os.urandom(CHUNK // 2) + bytes(CHUNK) + os.urandom(CHUNK + 77)  # crosses chunk boundaries
_SPANNING_BLOBS = {name: blob for name, blob in _compressions(_SPANNING).items() if name != "gzip in two members"}


@settings(max_examples=40, deadline=None)
@given(compression=st.sampled_from(sorted(_SPANNING_BLOBS)),
       steps=st.lists(st.tuples(st.booleans(), st.sampled_from([0, 1, 511, 512, 4096, CHUNK - 1, CHUNK, CHUNK + 3])), max_size=12))
def test_reads_and_forward_seeks_give_the_bytes_in_order(compression: str, steps: list[tuple[bool, int]]) -> None:
    oracle = io.BytesIO(_SPANNING)
    with open_layer_stream(io.BytesIO(_SPANNING_BLOBS[compression])) as stream:
        for is_seek, size in steps:
            if is_seek:
                target = min(oracle.tell() + size, len(_SPANNING))
                assert stream.seek(oracle.tell() + size) == target
                oracle.seek(target)
            else:
                assert stream.read(size) == oracle.read(size)
            assert stream.tell() == oracle.tell()
        assert stream.finish() == len(_SPANNING) - oracle.tell()


def _layer_with_skipped_data() -> bytes:
    """A tar holding an ELF file, METADATA and incompressible data in a member the scan skips."""
    return tar_of({
        f"{DIST}/pkg/_ext.so": session_elves().ext13,
        f"{DIST}/pkg-1.0.dist-info/METADATA": metadata("pkg", "1.0"),
        f"{DIST}/pkg/weights.bin": os.urandom(256 << 10),
        f"{DIST}/pkg/tail.txt": b"the last member\n" * 64,
    })


def _flip(data: bytes, at: int) -> bytes:
    damaged = bytearray(data)
    damaged[at] ^= 0x55
    return bytes(damaged)


def _damaged() -> dict[str, tuple[bytes, str]]:
    tar = _layer_with_skipped_data()
    gz = gzip.compress(tar, mtime=0)
    zst = zstandard.ZstdCompressor().compress(tar)
    return {
        "gzip cut inside a member": (gz[: len(gz) // 2], "truncated"),
        "gzip cut in its trailer (the tar itself complete)": (gz[:-3], "truncated"),
        "gzip corrupt inside a skipped member": (_flip(gz, len(gz) // 2), "gzip"),
        "zstd cut inside a member": (zst[: len(zst) // 2], "unexpected end of data"),
        "gzip with a bomb after the tar's end": (gzip.compress(tar + bytes(64 << 20), mtime=0), "decompression bomb"),
        "PAX header claiming 1 GiB of data": (gzip.compress(_pax_header(1 << 30) + bytes(4 << 20), mtime=0), "in one piece"),
    }


def _pax_header(size: int) -> bytes:
    """A PAX extended header block whose size field claims ``size`` bytes (tarfile reads them in one read)."""
    header = tarfile.TarInfo("././@PaxHeader")
    header.type, header.size = tarfile.XHDTYPE, size
    return header.tobuf(tarfile.USTAR_FORMAT)


@pytest.mark.parametrize("name", sorted(_damaged()))
def test_damaged_stream_or_bomb_is_a_layer_error_and_no_thread_is_left(name: str) -> None:
    blob, words = _damaged()[name]
    before = threading.active_count()
    with pytest.raises(LayerError, match=words):
        scan_layer(io.BytesIO(blob), binary_from_file, max_bytes=expansion_limit(len(blob), 100))
    assert threading.active_count() == before


def test_a_source_error_passes_as_it_is_and_the_source_is_left_to_the_caller() -> None:
    blob = gzip.compress(_layer_with_skipped_data(), mtime=0)
    wrong = "sha256:" + hashlib.sha256(b"something else").hexdigest()
    stream = VerifiedStream(io.BytesIO(blob), wrong, "layer under test", size=len(blob))
    with pytest.raises(ServiceError, match="does not match its digest"):
        scan_layer(stream, binary_from_file)
    assert stream.bytes_read == len(blob)
    good = VerifiedStream(io.BytesIO(blob), "sha256:" + hashlib.sha256(blob).hexdigest(), "layer under test", size=len(blob))
    scan = scan_layer(good, binary_from_file)
    good.drain()
    assert good.verified and [b["path"] for b in scan.binaries] == [f"{DIST}/pkg/_ext.so"]


def test_verbose_reports_each_layers_rate(tmp_path: Path) -> None:
    config, layers = deep_image_parts(keep_cuda12=False)
    folder = tmp_path / "layout"
    write_oci_layout(folder, config, layers, "clean")
    args = ("image", f"oci-layout:{folder}:clean", "--deep", "--no-cache", "--platform", "linux/amd64", "-f", "json")
    quiet = run_envcheck(*args, env={"ENVCHECK_CACHE_DIR": str(tmp_path / "cache")})
    assert "MB/s" not in quiet.stderr
    done = run_envcheck(*args, "-v", env={"ENVCHECK_CACHE_DIR": str(tmp_path / "cache")})
    lines = re.findall(r"^envcheck: layer sha256:[0-9a-f]{64}: [0-9.,]+ MiB, (.+?), [0-9,]+ files, [0-9.]+ s, [0-9,]+ MB/s$",
                       done.stderr, re.MULTILINE)
    assert sorted(lines) == sorted(f"{layer.compression} (isal)" if layer.compression == "gzip"
                                   else "zstd (zstandard)" if layer.compression == "zstd" else "none" for layer in layers)


def test_without_isal_the_standard_zlib_inflates_the_same(tmp_path: Path) -> None:
    blob = tmp_path / "layer.tar.gz"
    blob.write_bytes(gzip.compress(_layer_with_skipped_data(), mtime=0))
    program = (
        "import sys, json\n"
        "sys.modules['isal'] = None  # as on a platform where isal cannot load\n"
        "from envcheck.services.registry.layers import scan_layer\n"
        "from envcheck.sources.binaries import binary_from_file\n"
        "with open(sys.argv[1], 'rb') as fh:\n"
        "    scan = scan_layer(fh, binary_from_file)\n"
        "print(json.dumps([scan.compression, [b['path'] for b in scan.binaries], scan.bytes]))\n"
    )
    done = subprocess.run([sys.executable, "-c", program, str(blob)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    with blob.open("rb") as fh:
        with_isal = scan_layer(fh, binary_from_file)
    assert with_isal.compression == "gzip (isal)"
    assert json.loads(done.stdout) == ["gzip (zlib)", [b["path"] for b in with_isal.binaries], with_isal.bytes]
