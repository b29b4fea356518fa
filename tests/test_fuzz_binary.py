"""Property tests for the binary readers: ELF and ar, fatbin containers, wheels (zip), image layers (tar).

Inputs are the real fixture binaries (fixtures/binaries, built by fixtures/build_binaries.sh) and real
wheels/tars built here with zipfile/tarfile, then mutated with size and offset fields set to 0, -1,
huge or just past the end. Bad content must come back as problems with offsets or as the documented
errors; nothing else may escape (crashes already reported: fuzz_strategies.KNOWN_CRASHES).
"""

from __future__ import annotations

import gzip
import io
import zipfile

import pytest
from fuzz_strategies import PROPERTY_SETTINGS, hang_guard, known_crash, mutated, seed_bytes
from hypothesis import given
from hypothesis import strategies as st
from seed_builders import small_wheel, tar_of

from envcheck.errors import EnvcheckError, InputError
from envcheck.inspect import fatbin, fatbin_levels
from envcheck.inspect.elf import BytesSource, MalformedBinary
from envcheck.model import Binary, Inventory
from envcheck.services.registry.layers import LayerScan, scan_layer
from envcheck.sources import ReadOptions
from envcheck.sources import wheel as wheel_source
from envcheck.sources.binaries import UnreadableBinary, binary_from_file, read_binary

BINARIES = seed_bytes("fixtures/binaries/*", limit=1 << 20)
FATBINS = [data[data.find(fatbin.MAGIC):] for data in BINARIES if data.find(fatbin.MAGIC) >= 0]


def test_seeds_are_the_real_fixture_binaries() -> None:
    assert len(BINARIES) >= 8 and all(data.startswith((b"\x7fELF", b"!<arch>\n")) for data in BINARIES)
    assert FATBINS, "the GPU fixtures carry fatbin containers"


@PROPERTY_SETTINGS
@given(data=mutated(BINARIES, max_edits=6), deep=st.booleans())
def test_elf_reader_reports_bad_content_as_problems(data: bytes, deep: bool) -> None:
    with hang_guard():
        reading = read_binary(BytesSource(data), "lib.so", deep_fatbin=deep)
    assert reading.binary is None or isinstance(reading.binary, Binary)
    if reading.binary is not None:
        assert reading.binary.machine and reading.binary.size == len(data)
        assert reading.binary.sm121 in (None, "native", "compatible", "ptx-jit", "none")
    for problem in reading.problems:
        assert problem.location is not None and problem.location.path == "lib.so"
        assert problem.location.offset is None or problem.location.offset >= 0


@PROPERTY_SETTINGS
@given(data=mutated(BINARIES, max_edits=3))
def test_elf_file_reader_raises_only_unreadable_binary(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    path = tmp_path_factory.mktemp("elf") / "lib.so"
    path.write_bytes(data)
    with path.open("rb") as fh:
        try:
            with hang_guard():
                binary = binary_from_file(fh, str(path), len(data))
        except UnreadableBinary as exc:
            assert isinstance(exc, InputError) and exc.problems and exc.path == str(path)
            return
    assert binary is None or isinstance(binary, Binary)


@PROPERTY_SETTINGS
@given(data=mutated(FATBINS, max_edits=6), chunk=st.sampled_from([16, 64, 999, 4 << 20]))
def test_fatbin_walkers_stay_inside_their_bytes(data: bytes, chunk: int) -> None:
    src = BytesSource(data)
    try:
        with hang_guard():
            containers = fatbin.walk_containers(src, 0, len(data), ".nv_fatbin")
        for container in containers:
            assert container.offset >= 0 and container.offset + container.size <= len(data)
    except MalformedBinary as exc:
        assert exc.offset is None or 0 <= exc.offset <= len(data) + 16
    with hang_guard():
        found = fatbin.scan_containers(src, 0, len(data), ".data", chunk=chunk)
    for container in found:
        assert container.offset >= 0 and container.offset + container.size <= len(data)
        assert fatbin_levels.container_level(container.entries, 121) in (None, "native", "compatible", "ptx-jit", "none")
    # How the bytes are chunked must not change what the scanner finds.
    whole = fatbin.scan_containers(src, 0, len(data), ".data", chunk=len(data) + 1 or 1)
    assert [(c.offset, c.size) for c in found] == [(c.offset, c.size) for c in whole]


WHEELS = [small_wheel(zipfile.ZIP_DEFLATED, "libext_cuda12.so"), small_wheel(zipfile.ZIP_STORED, "gpu_sm121.so"),
          small_wheel(zipfile.ZIP_DEFLATED, None)]


@PROPERTY_SETTINGS
@given(data=mutated(WHEELS, max_edits=5))
def test_wheel_reader_answers_every_zip(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    path = tmp_path_factory.mktemp("whl") / "demo_pkg-1.0-cp311-cp311-manylinux_2_28_aarch64.whl"
    path.write_bytes(data)
    try:
        with hang_guard():
            inventory = wheel_source.read(path, ReadOptions())
    except InputError as exc:
        assert exc.path == str(path)
        return
    except Exception as exc:
        if known_crash(exc):
            return  # reported: tests/test_fuzz_regressions.py::test_broken_wheel_reads_as_an_input_error
        raise
    assert isinstance(inventory, Inventory)
    for problem in inventory.problems:
        assert problem.location is not None and problem.location.path == str(path)


def _layer(gz: bool) -> bytes:
    raw = tar_of([
        ("usr/local/lib/python3.12/site-packages/torch-2.9.0.dist-info/METADATA",
         b"Metadata-Version: 2.1\nName: torch\nVersion: 2.9.0+cu130\n"),
        ("usr/local/lib/python3.12/site-packages/torch/lib/libext.so", BINARIES[0][:20000]),
    ], mode=0o755)
    return gzip.compress(raw, mtime=0) if gz else raw


@PROPERTY_SETTINGS
@given(data=mutated([_layer(False), _layer(True)], max_edits=5))
def test_layer_reader_raises_only_layer_errors(data: bytes) -> None:
    try:
        with hang_guard():
            scan = scan_layer(io.BytesIO(data), binary_from_file)
    except EnvcheckError as exc:
        assert exc.message
        return
    assert isinstance(scan, LayerScan) and scan.members >= 0
    assert all(isinstance(path, str) and not path.startswith("/") for path in scan.paths)

