"""Zip (wheel) members read as streams: inflated chunk by chunk, never extracted to disk.

Python's ``zipfile`` reads the central directory (names, sizes, offsets); this module streams a member's
data itself so it can (a) stop inflating as soon as it has what it needs, (b) bound every member by its
declared size and by what deflate can physically produce (a member "claiming 100 GB" from a few bytes
is refused before any work), and (c) inflate several members at once on several cores (zlib releases
the GIL while it inflates). ``isal`` (ISA-L) is used as a faster inflater when it is installed.

:class:`StreamedElf` reads an ELF file from such a stream in (usually) one forward pass: it captures
the header, the dynamic table and the section table as they go by, and walks fatbin containers with a
:class:`envcheck.inspect.fatbin.StreamScanner`. What it missed (a string table it learned about too
late) is fetched by a second, shorter pass that stops at the last byte it needs.
"""

from __future__ import annotations

import struct
import zipfile
import zlib
from collections.abc import Iterator
from types import ModuleType
from typing import Any

from envcheck.inspect.elf import MalformedBinary

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


def data_offset(fh: Any, info: zipfile.ZipInfo) -> int:
    """Offset of a member's data, from its local header."""
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
    """Refuse members whose declared sizes are impossible, before reading anything."""
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise MemberError(f"compression method {info.compress_type} is not supported (only stored/deflate)", info.header_offset, info.filename)
    if info.compress_size > archive_size:
        raise MemberError(f"member claims {info.compress_size} compressed bytes in a {archive_size}-byte file", info.header_offset, info.filename)
    limit = info.compress_size if info.compress_type == zipfile.ZIP_STORED else info.compress_size * MAX_DEFLATE_RATIO + 1024
    if info.file_size > limit:
        raise MemberError(
            f"member claims {info.file_size} bytes from {info.compress_size} compressed bytes, which deflate cannot produce",
            info.header_offset, info.filename,
        )


def iter_member(path: str, info: zipfile.ZipInfo, stop_at: int | None = None, chunk: int = CHUNK_IN) -> Iterator[bytes]:
    """The inflated bytes of ``info`` in order, stopping once ``stop_at`` bytes were produced.

    Raises :class:`MemberError` when the member produces more or fewer bytes than it declares.
    """
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
                raise MemberError(
                    f"member data ends after {produced} of its declared {info.file_size} bytes", produced, info.filename
                )
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
                        # Bound what one call may produce, so a compression bomb cannot blow memory up.
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
    """A ByteSource over captured ranges of a stream; a read of anything not captured raises NotCaptured."""

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
    """A read of bytes the stream did not keep: the caller asks for them in another pass."""

    def __init__(self, offset: int, size: int) -> None:
        super().__init__(offset, size)
        self.offset = offset
        self.size = size


class StreamedElf:
    """Captures what an ELF reader needs from a forward-only stream, and scans fatbins on the way."""

    HEAD = 64 << 10
    TAIL = 1 << 20  # before the section table: where .shstrtab usually sits

    def __init__(self, size: int) -> None:
        from envcheck.inspect.fatbin import StreamScanner

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
        """After the head is in: also capture the section table, the bytes before it, and PT_DYNAMIC."""
        from envcheck.inspect.elf import MAX_SECTION_TABLE, PT_DYNAMIC, parse_header, read_segments

        self._planned = True
        try:
            hdr = parse_header(self.source.read_at(0, min(64, self.size)))
        except (MalformedBinary, NotCaptured):
            return
        if hdr.shoff and hdr.shoff < self.size:
            # A table bigger than any real one is refused by the reader: capture only its first entry.
            table = max(hdr.shnum, 1) * max(hdr.shentsize, 1)
            end = min(self.size, hdr.shoff + (table if table <= MAX_SECTION_TABLE else max(hdr.shentsize, 64)))
            self.wanted.append((max(0, hdr.shoff - self.TAIL), end))
        self._hdr = hdr
        try:
            self._segments = read_segments(self.source, hdr)
        except (MalformedBinary, NotCaptured):
            return
        for seg in self._segments:
            if seg.type == PT_DYNAMIC and 0 < seg.filesz < (1 << 20) and seg.offset + seg.filesz <= self.size:
                self.wanted.append((seg.offset, seg.offset + seg.filesz))
                self._dynamic_at = seg.offset

    def _plan_strings(self) -> None:
        """Once the dynamic table is in: capture its string table too if it is still ahead (patchelf'd files)."""
        from envcheck.inspect.elf import (
            DT_NEEDED,
            DT_RPATH,
            DT_RUNPATH,
            DT_SONAME,
            DT_STRSZ,
            DT_STRTAB,
            MAX_STRTAB,
            parse_dynamic,
            vaddr_to_offset,
        )

        assert self._dynamic_at is not None and self._hdr is not None
        pairs = parse_dynamic(self.source.pieces[self._dynamic_at], self._hdr)
        entries = dict(pairs)
        self._dynamic_at = None
        names = [v for t, v in pairs if t in (DT_NEEDED, DT_SONAME, DT_RUNPATH, DT_RPATH)]
        if DT_STRTAB not in entries or not names:
            return
        at = vaddr_to_offset(entries[DT_STRTAB], [], self._segments)
        # only as far as the reader reads (strings_at_once): the furthest name it needs, plus its text
        size = min(entries.get(DT_STRSZ, 0), MAX_STRTAB, max(names) + 4096)
        if at is not None and at >= self.bytes_seen and at + size <= self.size:
            self.wanted.append((at, at + size))

    def _ready_to_plan(self) -> bool:
        """Whether the bytes seen so far hold the ELF header and the program headers."""
        early = self._early
        if len(early) >= self.HEAD or len(early) >= self.size:
            return True
        if len(early) < 64:
            return False
        from envcheck.inspect.elf import parse_header

        try:
            hdr = parse_header(bytes(early[:64]))
        except MalformedBinary:
            return True
        return len(early) >= min(self.HEAD, hdr.phoff + hdr.phnum * hdr.phentsize)

    def feed(self, chunk: bytes, offset: int, scan: bool = True) -> None:
        """Consume the next chunk of the stream (starting at ``offset``)."""
        end = offset + len(chunk)
        self.bytes_seen = end
        if scan:
            self.scanner.feed(chunk, offset)
        if not self._planned and offset == len(self._early):
            self._early += chunk
            if self._ready_to_plan():
                self.source.pieces[0] = bytes(self._early)  # for planning; the head range completes below
                self._plan()
                # ranges that start in bytes already gone by: seed them from what was kept
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
        """Ask for a range in the next pass (clipped to the file); False when that range was already
        asked for and captured, or lies outside the file: another pass would not help."""
        lo, hi = max(0, offset), min(self.size, offset + size)
        if lo >= hi or any(a <= lo and hi <= b for a, b in self._captured):
            return False
        self.wanted.append((lo, hi))
        return True

    def pending_end(self) -> int:
        """The furthest byte still wanted (0 when everything was captured)."""
        ends = [hi for lo, hi in self.wanted if (lo, hi) not in self._captured]
        return max(ends, default=0)

    def restart(self) -> None:
        """Prepare for another pass over the stream (buffers of incomplete ranges are dropped)."""
        self._buffers.clear()


class ArStream:
    """Walks an ``ar`` archive fed as a forward-only stream; each ELF member goes to a StreamedElf.

    ``feed(chunk, offset)`` in order; ``finished()`` hands out (member name, StreamedElf, data offset) for
    the members that ended. ``error`` is set (and the walk stops) on a bad member header.
    """

    def __init__(self) -> None:
        self._head = bytearray()
        self._magic_ok = False
        self._left = 0  # data bytes left in the current member
        self._pad = 0
        self._member: StreamedElf | None = None
        self._member_at = 0
        self._name = ""
        self._longnames: bytearray | None = None
        self._names = b""
        self._done: list[tuple[str, StreamedElf, int]] = []
        self._data_at = 0  # offset of the current member's data in the archive
        self._headers = 0
        self._size = 0
        self._decided = False
        self._pending = bytearray()
        self.error: str | None = None

    def feed(self, chunk: bytes, offset: int) -> None:
        """Consume the next chunk."""
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
        from envcheck.inspect.elf import MAX_AR_MEMBERS

        if head[58:60] != b"`\n":
            self.error = "bad ar member header"
            return
        self._headers += 1
        if self._headers > MAX_AR_MEMBERS:
            self.error = f"ar archive has more than {MAX_AR_MEMBERS} member headers"
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
        """Members completed since the last call: (name, reader, offset of the member's data)."""
        out, self._done = self._done, []
        return out
