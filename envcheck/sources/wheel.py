"""KIND ``wheel``: a ``.whl`` file's tags, metadata (one declared Package) and every ELF file inside it,
read from the zip without extracting it (members that start like ELF or ``ar`` streamed, several at once)."""

from __future__ import annotations

import email.parser
import os
import stat
import struct
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

from envcheck.cache import ScanCache
from envcheck.errors import InputError
from envcheck.inspect import fatbin, wheelzip
from envcheck.inspect.elf import (
    BytesSource,
    FileSource,
    MalformedBinary,
    Section,
    parse_header,
    read_sections,
)
from envcheck.inspect.wheel_tags import canonical, parse_wheel_name
from envcheck.limits import DEFAULT_MAX_EXPANSION, EXPANSION_FLOOR, expansion_limit
from envcheck.model import Inventory, Location, Package, ReadProblem, Role, Wheel
from envcheck.sources import ReadOptions
from envcheck.sources.binaries import (
    BinaryReading,
    is_binary_head,
    merge_archive,
    read_binary,
    read_elf,
    reading_from_cache,
    reading_to_cache,
)

KIND = "wheel"
IN_MEMORY = 16 << 20  # members up to this size are inflated whole; bigger ones are streamed
MAX_META = 16 << 20  # METADATA / WHEEL / RECORD bigger than this are refused


def _file_type(mode: int) -> str:
    for test, name in ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder")):
        if test(mode):
            return name
    return "not a plain file"


def sniff(path: Path, head: bytes) -> bool:
    return path.name.endswith(".whl") and head.startswith(b"PK")


def _read_text(zf: zipfile.ZipFile, path: str, name: str) -> str:
    info = zf.getinfo(name)
    wheelzip.check_member(info, os.path.getsize(path))
    if info.file_size > MAX_META:
        raise wheelzip.MemberError(f"{name} claims {info.file_size} bytes", info.header_offset, name)
    return b"".join(wheelzip.iter_member(path, info)).decode("utf-8", "replace")


def _peek(path: str, info: zipfile.ZipInfo) -> bytes:
    out = b""
    for piece in wheelzip.iter_member(path, info, stop_at=8, chunk=16 << 10):
        out += piece
        if len(out) >= 8:
            break
    return out[:8]


def read_member(path: str, info: zipfile.ZipInfo, *, deep_fatbin: bool = False, known_binary: bool = False) -> BinaryReading:
    """One member as a binary (None: not ELF/ar), problems as data; ``known_binary``: magic checked."""
    location = Location(path, member=info.filename)
    try:
        if not known_binary and (info.file_size < 8 or not is_binary_head(_peek(path, info))):
            return BinaryReading(None)
        if info.file_size <= IN_MEMORY:
            data = b"".join(wheelzip.iter_member(path, info))
            return read_binary(BytesSource(data), info.filename, deep_fatbin=deep_fatbin, location=location)
        return _read_streamed(path, info, deep_fatbin, location)
    except _READ_ERRORS as exc:
        return _unreadable(path, info.filename, exc)


_READ_ERRORS = (MalformedBinary, OSError, ValueError, IndexError, OverflowError, MemoryError, struct.error)


def _unreadable(path: str, member: str | None, exc: BaseException) -> BinaryReading:
    location = Location(path, member=member)
    if isinstance(exc, MalformedBinary):
        return BinaryReading(None, [ReadProblem(f"{location}: {exc.message}", Location(path, offset=exc.offset, member=member))])
    why = exc.strerror or exc if isinstance(exc, OSError) else f"{type(exc).__name__}: {exc}"
    return BinaryReading(None, [ReadProblem(f"{location}: cannot read: {why}", location)])


def peek_member(path: str, info: zipfile.ZipInfo) -> BinaryReading | bool:
    """Whether a member starts like ELF or ``ar`` (a reading with the problem when it cannot be read)."""
    try:
        return info.file_size >= 8 and is_binary_head(_peek(path, info))
    except _READ_ERRORS as exc:
        return _unreadable(path, info.filename, exc)


Pieces = Callable[[int | None], Iterator[bytes]]  # the member's bytes in order, from the start, up to a stop


def _read_streamed(path: str, info: zipfile.ZipInfo, deep: bool, location: Location) -> BinaryReading:
    return _stream_pieces(lambda stop: wheelzip.iter_member(path, info, stop_at=stop), info, deep, location)


def read_streamed_bytes(data: bytes, name: str, deep: bool = False, chunk: int = 4096) -> BinaryReading:
    """``data`` through the stream reader, as a big wheel member would be (tests, fuzzing)."""
    info = zipfile.ZipInfo(name)
    info.file_size = len(data)
    try:
        return _stream_pieces(lambda stop: _chunks(data, chunk, stop), info, deep, Location(name))
    except _READ_ERRORS as exc:
        return _unreadable(name, None, exc)


def _chunks(data: bytes, size: int, stop: int | None) -> Iterator[bytes]:
    end = len(data) if stop is None else min(stop, len(data))
    for i in range(0, end, size):
        yield data[i : min(i + size, end)]


MAX_PASSES = 4  # inflate passes over one member before it is spilled to a temporary file instead


def _stream_pieces(pieces: Pieces, info: zipfile.ZipInfo, deep: bool, location: Location) -> BinaryReading:
    streamed = wheelzip.StreamedElf(info.file_size)
    pos = 0
    head_seen = False
    for piece in pieces(None):
        if not head_seen:
            head_seen = True
            if not piece.startswith(b"\x7fELF"):
                return _read_streamed_archive(pieces, info, deep, location)
        streamed.feed(piece, pos)
        pos += len(piece)
    return _finish_elf(streamed, pieces, info.filename, deep, location, pos)


def _finish_elf(
    streamed: wheelzip.StreamedElf, pieces: Pieces, name: str, deep: bool, location: Location, inflated: int
) -> BinaryReading:
    """An ELF file from what one pass captured (more passes for headers met late), kept only when it must
    equal the file reader's; otherwise the member is spilled to a temporary file and read as a file."""
    containers = streamed.scanner.finish()
    for _attempt in range(MAX_PASSES):
        try:
            binary, more = read_elf(streamed.source, name, deep, location, scanned=containers, strings_at_once=True)
            sections = read_sections(streamed.source, parse_header(streamed.source.read_at(0, min(64, streamed.size))))
        except wheelzip.NotCaptured as missing:
            if not streamed.want(missing.offset, max(missing.size, 64 << 10)):
                break
            streamed.restart()
            pos = 0
            for piece in pieces(streamed.pending_end()):
                streamed.feed(piece, pos, scan=False)
                pos += len(piece)
            inflated += pos
            continue
        if streamed.scanner.stopped or not _scan_matches_sections(containers, streamed.scanner.broken, sections):
            break  # the file reader decides (and names the limit, if a fatbin section is what used it up)
        return BinaryReading(replace(binary, bytes_read=inflated), more)
    return _spill(pieces, name, streamed.size, deep, location)


def _scan_matches_sections(containers: list[fatbin.Container], broken: list[tuple[int, str]],
                           sections: list[Section]) -> bool:
    """Whether the scanned containers tile each standard fatbin section (gaps < 4 KiB), none broken inside."""
    for s in sections:
        if s.name not in fatbin.STANDARD_SECTIONS or not s.has_bytes:
            continue
        lo, hi = s.offset, s.offset + s.size
        if any(lo <= at < hi for at, _msg in broken):
            return False
        pos = lo
        for c in sorted((c for c in containers if lo <= c.offset < hi), key=lambda c: c.offset):
            gap = c.offset - pos
            if gap < 0 or gap >= 4096 or c.offset + c.size > hi:
                return False
            pos = c.offset + c.size
        if hi - pos >= 4096:
            return False
    return True


def _spill(pieces: Pieces, name: str, size: int, deep: bool, location: Location) -> BinaryReading:
    """The member inflated again into a temporary file (bounded by its checked declared size) and read."""
    with tempfile.TemporaryFile(prefix="envcheck-member-") as fh:
        written = 0
        for piece in pieces(None):
            fh.write(piece)
            written += len(piece)
        fh.flush()
        reading = read_binary(FileSource(fh, written), name, deep_fatbin=deep, location=location)
    if reading.binary is not None:
        reading = BinaryReading(replace(reading.binary, bytes_read=written), reading.problems)
    return reading


def _slice(pieces: Pieces, start: int, length: int) -> Pieces:

    def member(stop: int | None) -> Iterator[bytes]:
        end = start + (length if stop is None else min(stop, length))
        pos = 0
        for piece in pieces(end):
            lo, hi = max(start, pos), min(end, pos + len(piece))
            if lo < hi:
                yield piece[lo - pos : hi - pos]
            pos += len(piece)
            if pos >= end:
                return

    return member


def _read_streamed_archive(pieces: Pieces, info: zipfile.ZipInfo, deep: bool, location: Location) -> BinaryReading:
    """A big ``ar`` archive: members walked in one pass, each ELF member streamed (:func:`_finish_elf`)."""
    stream = wheelzip.ArStream()
    parts = []
    problems: list[ReadProblem] = []
    pos = 0
    for piece in pieces(None):
        stream.feed(piece, pos)
        pos += len(piece)
        for name, streamed, data_at in stream.finished():
            member_name = f"{info.filename}({name})"
            member_loc = Location(location.path, member=member_name)
            try:
                reading = _finish_elf(streamed, _slice(pieces, data_at, streamed.size), member_name, deep, member_loc, 0)
            except MalformedBinary as exc:
                problems.append(ReadProblem(f"{member_loc}: {exc.message}", Location(location.path, offset=exc.offset, member=member_name)))
                continue
            problems.extend(reading.problems)
            if reading.binary is not None:
                parts.append(reading.binary)
    if stream.error:
        problems.append(ReadProblem(f"{location}: {stream.error}", location))
    if not parts:
        return BinaryReading(None, problems)
    return BinaryReading(merge_archive(parts, info.filename, info.file_size, pos, location), problems)


def read(path: Path, options: ReadOptions) -> Inventory:
    spath = str(path)
    try:
        st = os.stat(spath)
        if not stat.S_ISREG(st.st_mode):
            # /dev/zero never ends and a FIFO blocks: a wheel is a file (a symlink to one is fine).
            raise InputError(f"cannot read wheel {path}: not a regular file ({_file_type(st.st_mode)}); "
                             "envcheck reads wheels only from regular files", path=spath)
        with open(spath, "rb") as fh:
            wheelzip.check_directory(fh, st.st_size)  # a huge directory is refused before zipfile builds its entries
        zf = zipfile.ZipFile(spath)
    except (OSError, zipfile.BadZipFile, ValueError, NotImplementedError, EOFError) as exc:
        raise InputError(f"cannot read wheel {path}: {type(exc).__name__}: {exc}", path=spath) from exc
    inv = Inventory(context="declared")
    with zf:
        infos = []
        for info in zf.infolist():
            member = info.filename
            if not member:
                inv.problems.append(ReadProblem(f"{path}: a member has an empty name", Location(spath, offset=max(info.header_offset, 0))))
            elif member.startswith("/") or ".." in member.replace("\\", "/").split("/"):
                # pip refuses such a wheel: installing it would write outside site-packages.
                inv.problems.append(ReadProblem(f"{path}: member name {member!r} escapes the install folder (pip refuses this wheel)",
                                                Location(spath, member=member)))
            elif not member.endswith("/"):
                infos.append(info)
        name = parse_wheel_name(path.name)
        dist_info = next((i.filename.split("/")[0] for i in infos if i.filename.endswith(".dist-info/WHEEL") and i.filename.count("/") == 1), None)
        tags: tuple[str, ...] = ()
        requires: tuple[str, ...] = ()
        meta_name, meta_version = (name.name, name.version) if name else (None, None)
        if dist_info is None:
            inv.problems.append(ReadProblem(f"{path}: no *.dist-info/WHEEL file: not a wheel", Location(spath)))
        else:
            try:
                wheel_text = _read_text(zf, spath, f"{dist_info}/WHEEL")
                tags = tuple(line.split(":", 1)[1].strip() for line in wheel_text.splitlines() if line.lower().startswith("tag:"))
                meta = email.parser.HeaderParser().parsestr(_read_text(zf, spath, f"{dist_info}/METADATA"))
                meta_name = canonical(meta.get("Name") or meta_name or "")
                meta_version = meta.get("Version") or meta_version
                requires = tuple(str(r) for r in meta.get_all("Requires-Dist") or [])
            except (KeyError, MalformedBinary) as exc:
                inv.problems.append(ReadProblem(f"{path}!{dist_info}: cannot read wheel metadata: {exc}", Location(spath, member=dist_info)))
        if not tags and name:
            tags = name.tags
        if meta_name:
            inv.wheels.append(Wheel(path.name, meta_name, str(meta_version or ""), tags, requires, Location(spath)))
            inv.packages.append(Package(
                name=meta_name, version=str(meta_version) if meta_version else None,
                specifier=f"=={meta_version}" if meta_version else "", requires=requires,
                role=Role.REQUIREMENT, location=Location(spath),
            ))
        readings = _read_members(spath, st, infos, options)
    for reading in readings:
        inv.problems.extend(reading.problems)
        if reading.binary is not None:
            inv.binaries.append(replace(reading.binary, distribution=meta_name) if meta_name else reading.binary)
    return inv


def _read_members(path: str, st: os.stat_result, infos: list[zipfile.ZipInfo], options: ReadOptions) -> list[BinaryReading]:
    """Every member as a binary, biggest first over a thread pool; cached by wheel identity. Declared sizes
    (binding) are held to ``--max-expansion`` first, each and all together; one over is a problem."""
    ratio = DEFAULT_MAX_EXPANSION if options.max_expansion is None else float(options.max_expansion)
    cache = ScanCache(f"wheel:{os.path.abspath(path)}:deep={options.deep_fatbin}:x={ratio:g}") if options.use_cache else None
    wheel_key = (st.st_size, st.st_mtime_ns, st.st_ino)
    out: dict[str, BinaryReading] = {}
    todo = []
    for info in infos:
        hit = cache.get(info.filename, (*wheel_key, info.CRC), reading_from_cache) if cache is not None else None
        if hit is not None:
            out[info.filename] = hit or BinaryReading(None)  # False: cached "not a binary"
        else:
            todo.append(info)
    workers = max(1, min(len(todo), os.cpu_count() or 1, 8))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        binaries = []
        for info, peeked in zip(todo, pool.map(lambda i: peek_member(path, i), todo), strict=True):
            if isinstance(peeked, BinaryReading):
                out[info.filename] = peeked
            elif peeked:
                binaries.append(info)
            else:
                out[info.filename] = BinaryReading(None)
        total_limit = expansion_limit(st.st_size, ratio)
        total = 0
        to_read = []
        for info in binaries:
            limit = expansion_limit(info.compress_size, ratio)
            total += info.file_size
            if limit is not None and info.file_size > limit:
                out[info.filename] = _over_limit(path, info, f"{info.file_size} bytes from {info.compress_size} compressed bytes", ratio)
            elif total_limit is not None and total > total_limit:
                out[info.filename] = _over_limit(path, info, f"the wheel's binaries to {total} bytes from a {st.st_size}-byte wheel", ratio)
            else:
                to_read.append(info)
        to_read.sort(key=lambda i: -i.file_size)
        for info, reading in zip(to_read, pool.map(lambda i: read_member(path, i, deep_fatbin=options.deep_fatbin, known_binary=True), to_read), strict=True):
            out[info.filename] = reading
    if cache is not None:
        for info in todo:
            cache.put(info.filename, (*wheel_key, info.CRC), reading_to_cache(out[info.filename]))
        cache.save()
    return [out[i.filename] for i in infos]


def _over_limit(path: str, info: zipfile.ZipInfo, what: str, ratio: float) -> BinaryReading:
    location = Location(path, member=info.filename)
    return BinaryReading(None, [ReadProblem(
        f"{location}: not read: it would expand {what}, more than the expansion limit ({ratio:g} times the compressed "
        f"size, at least {EXPANSION_FLOOR >> 20} MiB); if the wheel is genuine, raise the limit with --max-expansion "
        f"(0: no limit)", location)])
