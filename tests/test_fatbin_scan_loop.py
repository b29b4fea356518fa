"""The deep fatbin scan (``fatbin._scan_window``, cuFFT's 24,000 modules) is written for speed; the plain
loop it replaced (kept below as the oracle) must give the same containers, spend the same record budget,
raise the same error and read the same bytes through the same windows: on real fixture containers laid
end to end so that windows of every size cut through headers, and on mutated ones."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import REPO
from fuzz_strategies import PROPERTY_SETTINGS, hang_guard, mutated
from hypothesis import given
from hypothesis import strategies as st
from test_fuzz_binary import FATBINS

from envcheck.inspect import fatbin
from envcheck.inspect.elf import BytesSource, FileSource, MalformedBinary, parse_header, read_sections


def plain_scan(src: BytesSource | FileSource, start: int, end: int, section: str, budget: fatbin.RecordBudget,
               size: int) -> list[fatbin.Container]:
    """The loop of envcheck before issue 18's speed work, unchanged."""
    out: list[fatbin.Container] = []
    window = fatbin._Window(src, end, size)
    pos = start + (-start) % 8
    unpack = fatbin._ENTRY.unpack_from
    while True:
        i = window.data.find(fatbin.MAGIC_V1, pos - window.at) if window.at <= pos < window.at + len(window.data) else -1
        hit = window.at + i if i >= 0 and window.at + i + len(fatbin.MAGIC_V1) <= end else window.find(pos)
        if hit < 0 or hit + fatbin.CONTAINER_HEADER > end:
            return out
        if hit % 8:
            pos = hit + (-hit) % 8
            continue
        budget.spend(hit)
        window.load(hit, fatbin.CONTAINER_HEADER)
        cend = hit + fatbin.CONTAINER_HEADER + int.from_bytes(window.data[hit - window.at + 8 : hit - window.at + 16], "little")
        cursor = hit + fatbin.CONTAINER_HEADER
        entries: list[fatbin.Entry] = []
        while cursor < cend:
            if cursor + fatbin.ENTRY_HEADER > end:
                return out
            budget.spend(cursor)
            window.load(cursor, fatbin.ENTRY_HEADER)
            kind, _v, hsize, padded, _cs, _o, minor, major, sm, _io, _il, flags = unpack(window.data, cursor - window.at)
            if (hsize < fatbin.ENTRY_HEADER or hsize > fatbin.MAX_ENTRY_HEADER or cursor + hsize + padded > cend
                    or (not entries and kind not in fatbin.KIND_NAMES)):
                entries = []
                break
            entries.append(fatbin.Entry(kind, sm, flags, hsize, padded, major, minor, cursor))
            cursor += hsize + padded
        else:
            if cend == hit + fatbin.CONTAINER_HEADER or entries:
                out.append(fatbin.Container(section, hit, cend - hit, entries))
            pos = cend + (-cend) % 8
            continue
        pos = hit + 8


def outcome(scan: object, data: bytes, start: int, window: int, limit: int) -> tuple[object, ...]:
    src = BytesSource(data)
    budget = fatbin.RecordBudget(limit)
    try:
        with hang_guard():
            found = scan(src, start, len(data), ".ldata", budget, window)  # type: ignore[operator]
        error = None
    except MalformedBinary as exc:
        found, error = [], (exc.message, exc.offset)
    return [(c.offset, c.size, c.entries) for c in found], error, budget.left, src.bytes_read


def _end_to_end() -> bytes:
    """Every fixture's containers, one after another with zero padding and junk between (as in cuFFT's
    .ldata), three times: about a hundred containers whose headers windows of any size cut through."""
    parts = []
    for n, data in enumerate(FATBINS * 3):
        for c in fatbin.scan_containers(BytesSource(data), 0, len(data), ".nv_fatbin"):
            parts.append(data[c.offset : c.offset + c.size])
            parts.append(bytes(8 * (n % 3)) + (b"junk\0\0\0\0" if n % 4 == 0 else b""))
    return b"".join(parts)


END_TO_END = _end_to_end()


def test_the_section_has_many_real_containers() -> None:
    assert len(plain_scan(BytesSource(END_TO_END), 0, len(END_TO_END), ".ldata", fatbin.RecordBudget(), 4 << 20)) >= 40


@pytest.mark.parametrize("window", [64, 80, 100, 333, 4096, 4 << 20])
@pytest.mark.parametrize("limit", [fatbin.MAX_RECORDS, 25, 1])
def test_fast_loop_is_the_plain_loop_on_real_containers(window: int, limit: int) -> None:
    for start in (0, 3, 8):
        assert outcome(fatbin._scan_window, END_TO_END, start, window, limit) == outcome(plain_scan, END_TO_END, start, window, limit)


@PROPERTY_SETTINGS
@given(data=mutated([END_TO_END[:6000], *FATBINS], max_edits=8), window=st.sampled_from([64, 72, 200, 4096]),
       limit=st.sampled_from([fatbin.MAX_RECORDS, 7]), start=st.integers(0, 16))
def test_fast_loop_is_the_plain_loop_on_mutated_containers(data: bytes, window: int, limit: int, start: int) -> None:
    start = min(start, len(data))
    assert outcome(fatbin._scan_window, data, start, window, limit) == outcome(plain_scan, data, start, window, limit)


def test_fast_loop_is_the_plain_loop_on_cufft() -> None:
    """cuFFT's .ldata (265 MiB, 24,000 modules) in the torch venv, when it is there: the same containers,
    budget and bytes read (the Binary's bytes_read field)."""
    found = sorted(REPO.glob(".work/torch-venv/lib/python3*/site-packages/nvidia/*/lib/libcufft.so.*"))
    if not found:
        pytest.skip("no torch venv with cuFFT under .work (tests/test_binaries_real.py makes it)")
    path: Path = found[0]
    with path.open("rb", buffering=0) as fh:
        size = os.path.getsize(path)
        head = FileSource(fh, size)
        [ldata] = [s for s in read_sections(head, parse_header(head.read_at(0, 64))) if s.name == ".ldata"]
        results = []
        for scan in (fatbin._scan_window, plain_scan):
            src, budget = FileSource(fh, size), fatbin.RecordBudget()
            found_here = scan(src, ldata.offset, ldata.offset + ldata.size, ".ldata", budget, 4 << 20)
            results.append(([(c.offset, c.size, c.entries) for c in found_here], budget.left, src.bytes_read))
    assert results[0] == results[1] and len(results[0][0]) > 20_000
