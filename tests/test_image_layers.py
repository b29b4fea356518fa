"""Layer streams read the way a container runtime lays them out (pure reads of real tar streams, real ELF files)."""

from __future__ import annotations

import gzip
import io

import pytest
from registry_fixtures import DIST, Layer, metadata, session_elves, tar_of

from envcheck.services.registry.layers import LayerError, LayerScan, merge_layers, scan_layer
from envcheck.sources.binaries import binary_from_file


def scan(layer: Layer) -> LayerScan:
    return scan_layer(io.BytesIO(layer.blob()), binary_from_file)


def test_upper_file_replaces_lower_and_whiteouts_match_whole_names() -> None:
    elves = session_elves()
    lower = scan(Layer(tar_of({
        f"{DIST}/pkg/_a.so": elves.ext12,
        f"{DIST}/pkg/_ab.so": elves.ext12,
        f"{DIST}/foo/_c.so": elves.ext12,
        f"{DIST}/foobar/_d.so": elves.ext13,
        f"{DIST}/keep-1.0.dist-info/METADATA": metadata("keep", "1.0"),
    }), "gzip"))
    assert len(lower.binaries) == 4 and [p["name"] for p in lower.packages] == ["keep"]
    upper = scan(Layer(tar_of({
        f"{DIST}/pkg/_a.so": b"#!/bin/sh\necho replaced by a script, padded to be long enough to read\n",  # not ELF any more
        f"{DIST}/.wh.foo": b"",  # deletes foo/, not foobar/
        f"{DIST}/keep-1.0.dist-info/METADATA": metadata("keep", "2.0"),
    }), "zstd"))
    final = merge_layers([("lower", lower), ("upper", upper)])
    assert sorted(final.binaries) == [f"{DIST}/foobar/_d.so", f"{DIST}/pkg/_ab.so"]
    assert final.packages[f"{DIST}/keep-1.0.dist-info/METADATA"]["version"] == "2.0"
    assert final.packages[f"{DIST}/keep-1.0.dist-info/METADATA"]["layer"] == "upper"


def test_opaque_directory_hides_only_lower_layers() -> None:
    elves = session_elves()
    lower = scan(Layer(tar_of({f"{DIST}/lib/_old.so": elves.ext12}), "none"))
    upper = scan(Layer(tar_of({f"{DIST}/lib/.wh..wh..opq": b"", f"{DIST}/lib/_new.so": elves.ext13}), "none"))
    final = merge_layers([("lower", lower), ("upper", upper)])
    assert list(final.binaries) == [f"{DIST}/lib/_new.so"]
    assert final.binaries[f"{DIST}/lib/_new.so"]["needed"] == ["libcudart.so.13"]


def test_only_the_places_that_matter_are_read() -> None:
    elves = session_elves()
    layer = scan(Layer(tar_of({
        "usr/bin/tool.so": elves.ext12,  # not site-packages, not a CUDA folder
        "usr/lib/x86_64-linux-gnu/libz.so.1": elves.ext12,  # a distro folder, but not a CUDA library
        "usr/lib/x86_64-linux-gnu/libcublas.so.12": elves.cudart12,
        f"{DIST}/mod/readme.txt": b"x" * 100,
    })))
    assert [b["path"] for b in layer.binaries] == ["usr/lib/x86_64-linux-gnu/libcublas.so.12"]
    assert layer.members == 4


def test_multi_frame_zstd_and_not_a_tar() -> None:
    import zstandard

    elves = session_elves()
    data = tar_of({f"{DIST}/a/_x.so": elves.ext13, f"{DIST}/b-1.dist-info/METADATA": metadata("b", "1")})
    half = len(data) // 2
    frames = zstandard.ZstdCompressor().compress(data[:half]) + zstandard.ZstdCompressor().compress(data[half:])
    result = scan_layer(io.BytesIO(frames), binary_from_file)
    assert [b["path"] for b in result.binaries] == [f"{DIST}/a/_x.so"] and [p["name"] for p in result.packages] == ["b"]
    with pytest.raises(LayerError):
        scan_layer(io.BytesIO(gzip.compress(b"\x01" * 5000)), binary_from_file)
    with pytest.raises(LayerError):
        scan_layer(io.BytesIO(b"BZh91AY&SY" + b"\0" * 100), binary_from_file)


def test_hard_links_share_the_scanned_target() -> None:
    import tarfile

    elves = session_elves()
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        info = tarfile.TarInfo(f"{DIST}/pkg/_real.so")
        info.size = len(elves.ext12)
        tar.addfile(info, io.BytesIO(elves.ext12))
        link = tarfile.TarInfo(f"{DIST}/pkg/_alias.so")
        link.type = tarfile.LNKTYPE
        link.linkname = f"{DIST}/pkg/_real.so"
        tar.addfile(link)
    result = scan_layer(io.BytesIO(out.getvalue()), binary_from_file)
    assert {b["path"]: b["needed"] for b in result.binaries} == {
        f"{DIST}/pkg/_real.so": ["libcudart.so.12"], f"{DIST}/pkg/_alias.so": ["libcudart.so.12"]}
