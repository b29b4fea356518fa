"""Zip (wheel) members inflated as streams, never extracted: inflation stops once enough is read, and a
member is bounded by its declared size and by what deflate can produce. :class:`StreamedElf` captures what
an ELF reader needs in one forward pass; what it learned about too late is fetched by a shorter second pass.
"""

from __future__ import annotations

import struct
import zipfile
import zlib
from collections.abc import Iterator
from types import ModuleType
from typing import Any

from envcheck.inspect import elf
from envcheck.inspect.elf import MalformedBinary
from envcheck.inspect.fatbin import StreamScanner

_zlib: ModuleType = zlib
try:  # ISA-L inflates 2-3x faster than zlib where it is available
    from isal import isal_zlib  # type: ignore[import-not-found,unused-ignore]

    _zlib = isal_zlib
except ImportError:  # pragma: no cover - depends on the environment
    pass
_INFLATE_ERRORS: tuple[type[BaseException], ...] = (zlib.error, getattr(_zlib, "error", zlib.error))

CHUNK_IN = 1 << 20  # compressed bytes per read
MAX_DEFLATE_RATIO = 1032  # deflate cannot expand more than ~1032:1
_LOCAL_HEADER = struct.Struct("<IHHHHHIIIHH")


class MemberError(MalformedBinary):
    """A zip member that cannot be streamed: bad local header, lying sizes, corrupt data."""


MAX_ENTRIES = 100_000  # central-directory entries of one wheel (torch's has about 15,000)
MAX_DIRECTORY_BYTES = 32 << 20  # the central directory's size
_EOCD = struct.Struct("<4s4H2LH")
_EOCD64_LOCATOR = struct.Struct("<4sLQL")
_EOCD64 = struct.Struct("<4sQ2H2L4Q")
_ENTRY = struct.Struct("<4s4B4HL2L5H2L")


class DirectoryTooLarge(zipfile.BadZipFile):
    """A central directory bigger than any real wheel's (2 million entries would cost zipfile 4 GB)."""


def check_directory(fh: Any, size: int) -> int:
    """The number of entries, counted by walking their headers (the end record may lie); DirectoryTooLarge
    beyond the limits. A zip too broken to find the directory in is left to ``zipfile`` (0)."""
    tail_size = min(size, _EOCD.size + 0xFFFF)
    fh.seek(size - tail_size)
    tail = fh.read(tail_size)
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or at + _EOCD.size > len(tail):
        return 0
    _, _, _, _, count, dir_size, _, _ = _EOCD.unpack_from(tail, at)
    end = size - tail_size + at  # where the directory ends (the end record, or the zip64 record)
    locator = at - _EOCD64_LOCATOR.size
    if locator >= 0 and tail[locator:locator + 4] == b"PK\x06\x07":
        record_at = _EOCD64_LOCATOR.unpack_from(tail, locator)[2]
        if 0 <= record_at <= size - _EOCD64.size:
            fh.seek(record_at)
            raw = fh.read(_EOCD64.size)
            if len(raw) == _EOCD64.size and raw[:4] == b"PK\x06\x06":
                fields = _EOCD64.unpack(raw)
                count, dir_size = fields[7], fields[8]
                end = record_at
    if count > MAX_ENTRIES or dir_size > MAX_DIRECTORY_BYTES:
        raise DirectoryTooLarge(f"its central directory claims {count} entries in {dir_size} bytes, more than the "
                                f"{MAX_ENTRIES} entries or {MAX_DIRECTORY_BYTES >> 20} MiB envcheck reads from one wheel")
    start = end - dir_size
    if start < 0 or dir_size == 0:
        return 0
    fh.seek(start)
    directory = fh.read(dir_size)
    pos = entries = 0
    while pos + _ENTRY.size <= len(directory) and directory[pos:pos + 4] == b"PK\x01\x02":
        fields = _ENTRY.unpack_from(directory, pos)
        pos += _ENTRY.size + fields[12] + fields[13] + fields[14]
        entries += 1
        if entries > MAX_ENTRIES:
            raise DirectoryTooLarge(f"its central directory holds more than {MAX_ENTRIES} entries (it claims {count}), "
                                    f"more than envcheck reads from one wheel")
    return entries


def data_offset(fh: Any, info: zipfile.ZipInfo) -> int:
    if info.header_offset < 0:
        raise MemberError(f"local header offset {info.header_offset} is negative", 0, info.filename)
    fh.seek(info.header_offset)
    raw = fh.read(_LOCAL_HEADER.size)
    if len(raw) != _LOCAL_HEADER.size:
        raise MemberError("local file header is truncated", info.header_offset, info.filename)
    fields = _LOCAL_HEADER.unpack(raw)
    if fields[0] != 0x04034B50:
        raise MemberError("bad local file header signature", info.header_offset, info.filename)
    return int(info.header_offset + _LOCAL_HEADER.size + fields[9] + fields[10])


def check_member(info: zipfile.ZipInfo, archive_size: int) -> None:
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise MemberError(f"compression method {info.compress_type} is not supported (only stored/deflate)", info.header_offset, info.filename)
    if info.compress_size > archive_size:
        raise MemberError(f"member claims {info.compress_size} compressed bytes in a {archive_size}-byte file", info.header_offset, info.filename)
    limit = info.compress_size if info.compress_type == zipfile.ZIP_STORED else info.compress_size * MAX_DEFLATE_RATIO + 1024
    if info.file_size > limit:
        raise MemberError(f"member claims {info.file_size} bytes from {info.compress_size} compressed bytes, "
                          "which deflate cannot produce", info.header_offset, info.filename)


def iter_member(path: str, info: zipfile.ZipInfo, stop_at: int | None = None, chunk: int = CHUNK_IN) -> Iterator[bytes]:
    """The inflated bytes of ``info``, up to ``stop_at``; MemberError if it gives more or less."""
    want = info.file_size if stop_at is None else min(stop_at, info.file_size)
    with open(path, "rb") as fh:
        fh.seek(0, 2)
        check_member(info, fh.tell())
        start = data_offset(fh, info)
        fh.seek(start)
        remaining_in = info.compress_size
        produced = 0
        inflater = _zlib.decompressobj(-15) if info.compress_type == zipfile.ZIP_DEFLATED else None
        while produced < want:
            if remaining_in <= 0:
                if inflater is not None:
                    tail = inflater.flush()
                    if tail:
                        produced += len(tail)
                        if produced > info.file_size:
                            raise MemberError("member inflates past its declared size", produced, info.filename)
                        yield tail
                        continue
                raise MemberError(f"member data ends after {produced} of its declared {info.file_size} bytes",
                                  produced, info.filename)
            raw = fh.read(min(chunk, remaining_in))
            if not raw:
                raise MemberError("zip file ends inside the member's data", start + info.compress_size - remaining_in, info.filename)
            remaining_in -= len(raw)
            data = raw
            while data:
                if inflater is None:
                    out, data = data, b""
                else:
                    try:
                        out = inflater.decompress(data, chunk * 4)
                    except _INFLATE_ERRORS as exc:
                        raise MemberError(f"corrupt deflate data: {exc}", produced, info.filename) from None
                    data = inflater.unconsumed_tail
                produced += len(out)
                if produced > info.file_size:
                    raise MemberError("member inflates past its declared size", produced, info.filename)
                if out:
                    yield out


class _Pieces:
    """A ByteSource over captured ranges of a stream; reading anything else raises NotCaptured."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.bytes_read = 0
        self.pieces: dict[int, bytes] = {}

    def read_at(self, offset: int, size: int) -> bytes:
        if offset < 0 or size < 0 or offset + size > self.size:
            raise MalformedBinary(f"read of {size} bytes at {offset:#x} runs past the end ({self.size} bytes)", offset)
        for start, data in self.pieces.items():
            if start <= offset and offset + size <= start + len(data):
                return data[offset - start : offset - start + size]
        raise NotCaptured(offset, size)


class NotCaptured(Exception):

    def __init__(self, offset: int, size: int) -> None:
        super().__init__(offset, size)
        self.offset = offset
        self.size = size


class StreamedElf:

    HEAD = 64 << 10
    TAIL = 1 << 20  # before the section table: where .shstrtab usually sits

    def __init__(self, size: int) -> None:
        self.size = size
        self.source = _Pieces(size)
        self.scanner = StreamScanner()
        self.wanted: list[tuple[int, int]] = [(0, min(self.HEAD, size))]
        self._buffers: dict[tuple[int, int], bytearray] = {}
        self._captured: set[tuple[int, int]] = set()
        self._planned = False
        self._early = bytearray()  # every byte until the header and program headers are in
        self.bytes_seen = 0
        self._hdr: Any = None
        self._segments: list[Any] = []
        self._dynamic_at: int | None = None

    def _plan(self) -> None:
        """Also capture the section table, the bytes before it, and PT_DYNAMIC."""
        self._planned = True
        try:
            hdr = elf.parse_header(self.source.read_at(0, min(64, self.size)))
        except (MalformedBinary, NotCaptured):
            return
        if hdr.shoff and hdr.shoff < self.size:
            # A table bigger than any real one is refused by the reader: capture only its first entry.
            table = max(hdr.shnum, 1) * max(hdr.shentsize, 1)
            table = table if table <= elf.MAX_SECTION_TABLE else max(hdr.shentsize, 64)
            self.wanted.append((max(0, hdr.shoff - self.TAIL), min(self.size, hdr.shoff + table)))
        self._hdr = hdr
        try:
            self._segments = elf.read_segments(self.source, hdr)
        except (MalformedBinary, NotCaptured):
            return
        for seg in self._segments:
            end = seg.offset + seg.filesz
            if seg.type == elf.PT_DYNAMIC and 0 < seg.filesz < (1 << 20) and end <= self.size:
                self.wanted.append((seg.offset, end))
                self._dynamic_at = seg.offset

    def _plan_strings(self) -> None:
        """Capture the dynamic string table too if it is still ahead (patchelf'd files)."""
        assert self._dynamic_at is not None and self._hdr is not None
        pairs = elf.parse_dynamic(self.source.pieces[self._dynamic_at], self._hdr)
        entries = dict(pairs)
        self._dynamic_at = None
        names = [v for t, v in pairs if t in (elf.DT_NEEDED, elf.DT_SONAME, elf.DT_RUNPATH, elf.DT_RPATH)]
        if elf.DT_STRTAB not in entries or not names:
            return
        at = elf.vaddr_to_offset(entries[elf.DT_STRTAB], [], self._segments)
        size = min(entries.get(elf.DT_STRSZ, 0), elf.MAX_STRTAB, max(names) + 4096)
        if at is not None and at >= self.bytes_seen and at + size <= self.size:
            self.wanted.append((at, at + size))

    def _ready_to_plan(self) -> bool:
        early = self._early
        if len(early) >= self.HEAD or len(early) >= self.size:
            return True
        if len(early) < 64:
            return False
        try:
            hdr = elf.parse_header(bytes(early[:64]))
        except MalformedBinary:
            return True
        return len(early) >= min(self.HEAD, hdr.phoff + hdr.phnum * hdr.phentsize)

    def feed(self, chunk: bytes, offset: int, scan: bool = True) -> None:
        end = offset + len(chunk)
        self.bytes_seen = end
        if scan:
            self.scanner.feed(chunk, offset)
        if not self._planned and offset == len(self._early):
            self._early += chunk
            if self._ready_to_plan():
                self.source.pieces[0] = bytes(self._early)  # for planning; the head range completes below
                self._plan()
                for lo, hi in self.wanted:
                    if lo < offset and (lo, hi) not in self._captured:
                        self._buffers[(lo, hi)] = bytearray(self._early[lo : min(hi, offset)])
                self._early = bytearray()
        for lo, hi in self.wanted:
            if lo < end and hi > offset and (lo, hi) not in self._captured:
                buf = self._buffers.setdefault((lo, hi), bytearray())
                a = lo + len(buf)
                if a < offset or a >= end:
                    continue  # we joined late (a second pass handles it)
                buf += chunk[a - offset : min(hi, end) - offset]
                if lo + len(buf) >= hi:
                    data = bytes(self._buffers.pop((lo, hi)))
                    self._captured.add((lo, hi))
                    if len(data) > len(self.source.pieces.get(lo, b"")):
                        self.source.pieces[lo] = data
        if self._dynamic_at is not None and self._dynamic_at in self.source.pieces:
            self._plan_strings()

    def want(self, offset: int, size: int) -> bool:
        """Ask for a range in the next pass; False when another pass would not help."""
        lo, hi = max(0, offset), min(self.size, offset + size)
        if lo >= hi or any(a <= lo and hi <= b for a, b in self._captured):
            return False
        self.wanted.append((lo, hi))
        return True

    def pending_end(self) -> int:
        return max((hi for lo, hi in self.wanted if (lo, hi) not in self._captured), default=0)

    def restart(self) -> None:
        self._buffers.clear()


class ArStream:
    """Walks an ``ar`` archive fed as a stream, each ELF member into a StreamedElf; ``error`` stops it."""

    def __init__(self) -> None:
        self._head = bytearray()
        self._magic_ok = False
        self._left = 0  # data bytes left in the current member
        self._pad = 0
        self._member: StreamedElf | None = None  # the rest of a member's state is set in _start_member
        self._longnames: bytearray | None = None
        self._names = b""
        self._done: list[tuple[str, StreamedElf, int]] = []
        self._data_at = 0  # offset of the current member's data in the archive
        self._headers = 0
        self.error: str | None = None

    def feed(self, chunk: bytes, offset: int) -> None:
        view = memoryview(chunk)
        while view and self.error is None:
            if not self._magic_ok:
                need = 8 - len(self._head)
                self._head += view[:need]
                view = view[need:]
                if len(self._head) == 8:
                    if bytes(self._head) != b"!<arch>\n":
                        self.error = "not an ar archive"
                        return
                    self._magic_ok = True
                    self._head.clear()
                continue
            if self._pad:
                take = min(self._pad, len(view))
                self._pad -= take
                view = view[take:]
                continue
            if self._left == 0:
                need = 60 - len(self._head)
                self._head += view[:need]
                view = view[need:]
                if len(self._head) == 60:
                    self._data_at = offset + len(chunk) - len(view)
                    self._start_member(bytes(self._head))
                    self._head.clear()
                continue
            take = min(self._left, len(view))
            piece = bytes(view[:take])
            view = view[take:]
            self._member_data(piece)
            self._left -= take
            if self._left == 0:
                self._end_member()

    def _start_member(self, head: bytes) -> None:
        if head[58:60] != b"`\n":
            self.error = "bad ar member header"
            return
        self._headers += 1
        if self._headers > elf.MAX_AR_MEMBERS:
            self.error = f"ar archive has more than {elf.MAX_AR_MEMBERS} member headers"
            return
        raw = head[0:16].decode("latin-1").rstrip()
        try:
            size = int(head[48:58].decode("ascii").strip() or "0")
        except ValueError:
            self.error = "bad ar member size"
            return
        if raw.startswith("/") and raw[1:].isdigit():
            i = int(raw[1:])
            end = self._names.find(b"/\n", i)
            raw = self._names[i : end if end >= 0 else len(self._names)].decode("utf-8", "replace")
        self._name = raw.rstrip("/")
        self._left = size
        self._pad = size & 1
        self._member = None
        self._member_at = 0
        self._size = size
        self._decided = False
        self._pending = bytearray()
        self._longnames = bytearray() if raw == "//" else None
        if size == 0:
            self._end_member()

    def _member_data(self, piece: bytes) -> None:
        if self._longnames is not None:
            if len(self._longnames) < (16 << 20):
                self._longnames += piece
            return
        if self._decided:
            if self._member is not None:
                self._member.feed(piece, self._member_at)
            self._member_at += len(piece)
            return
        self._pending += piece
        if len(self._pending) < 4 and self._left > len(piece):
            return  # the magic is split across chunks: wait for more
        self._decided = True
        data = bytes(self._pending)
        self._pending = bytearray()
        if data[:4] == b"\x7fELF":
            self._member = StreamedElf(self._size)
            self._member.feed(data, 0)
        self._member_at = len(data)

    def _end_member(self) -> None:
        if self._longnames is not None:
            self._names = bytes(self._longnames)
            self._longnames = None
        elif self._member is not None:
            self._done.append((self._name, self._member, self._data_at))
        self._member = None

    def finished(self) -> list[tuple[str, StreamedElf, int]]:
        out, self._done = self._done, []
        return out
