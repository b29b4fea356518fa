"""ELF files and ``ar`` archives read with bounded, header-only reads through a :class:`ByteSource`.

``struct`` rather than pyelftools: every size a header claims is checked against the file before use, so a
lying header raises :class:`MalformedBinary` with its offset instead of making the reader allocate or loop.
"""

from __future__ import annotations

import errno
import os
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Protocol

from envcheck.errors import ReadingError

ELF_MAGIC = b"\x7fELF"
AR_MAGIC = b"!<arch>\n"

# e_machine values (the ELF gABI registry) as the names uname and wheel tags use.
MACHINES: dict[int, str] = {
    2: "sparc", 3: "x86", 8: "mips", 20: "ppc", 21: "ppc64", 22: "s390x", 40: "arm", 43: "sparcv9",
    50: "ia64", 62: "x86_64", 183: "aarch64", 190: "cuda", 243: "riscv", 258: "loongarch64",
}
ELF_TYPES = {0: "NONE", 1: "REL", 2: "EXEC", 3: "DYN", 4: "CORE"}

SHT_NOBITS = 8
SHT_DYNAMIC = 6
PT_LOAD = 1
PT_DYNAMIC = 2
DT_NULL, DT_NEEDED, DT_STRTAB, DT_STRSZ, DT_SONAME, DT_RPATH, DT_RUNPATH = 0, 1, 5, 10, 14, 15, 29

# Limits on what a header may make the readers read (docs/limits.md). Each is far above what real files
# need and bounds memory and time whatever the file claims, even when the file really is that large.
MAX_SECTIONS = 1 << 17  # real files have < 100k sections; more is a lie
MAX_SECTION_TABLE = 16 << 20  # bytes of section headers (128k sections of the usual 64 bytes is 8 MiB)
MAX_SECTION_NAMES = 16 << 20  # .shstrtab (a few KiB; MiBs only in -ffunction-sections objects)
MAX_STRTAB = 64 << 20  # the dynamic string table (libtriton's .dynstr is 14 MiB)
MAX_DYNAMIC_ENTRIES = 1 << 16
MAX_AR_MEMBERS = 200_000  # member headers of one archive, special members included


class MalformedBinary(ReadingError):
    """An ELF file or archive whose headers contradict themselves or the file size."""

    def __init__(self, message: str, offset: int | None = None, member: str | None = None) -> None:
        super().__init__(message, offset=offset, member=member)


class ByteSource(Protocol):
    """Random access to a file's bytes (MalformedBinary past the end); counts what it read."""

    size: int
    bytes_read: int

    def read_at(self, offset: int, size: int) -> bytes: ...


class FileSource:
    def __init__(self, fileobj: IO[bytes], size: int, base: int = 0) -> None:
        self.fileobj = fileobj
        self.size = size
        self.base = base  # offset of this file inside fileobj (archive members)
        self.bytes_read = 0
        try:
            self._fd: int | None = fileobj.fileno()
        except (AttributeError, OSError, ValueError):
            self._fd = None

    def read_at(self, offset: int, size: int) -> bytes:
        if offset < 0 or size < 0 or offset + size > self.size:
            raise MalformedBinary(f"read of {size} bytes at {offset:#x} runs past the end ({self.size} bytes)", offset)
        if self._fd is not None:
            data = os.pread(self._fd, size, self.base + offset)
        else:
            self.fileobj.seek(self.base + offset)
            data = self.fileobj.read(size)
        self.bytes_read += len(data)
        if len(data) != size:
            raise MalformedBinary(f"file ended early: wanted {size} bytes at {offset:#x}, got {len(data)}", offset)
        return data

    def next_data(self, offset: int) -> int:
        """Where data starts at or after ``offset``, past the holes of a sparse file (only a hint)."""
        if self._fd is None:
            return offset
        try:
            return max(offset, min(self.size, os.lseek(self._fd, self.base + offset, os.SEEK_DATA) - self.base))
        except OSError as exc:  # ENXIO: nothing but a hole from there to the end of the file
            return self.size if exc.errno == errno.ENXIO else offset
        except AttributeError:  # no SEEK_DATA on this platform
            return offset


class BytesSource:
    def __init__(self, data: bytes | memoryview, base: int = 0, size: int | None = None) -> None:
        self.data = data
        self.base = base
        self.size = len(data) - base if size is None else size
        self.bytes_read = 0

    def read_at(self, offset: int, size: int) -> bytes:
        if offset < 0 or size < 0 or offset + size > self.size:
            raise MalformedBinary(f"read of {size} bytes at {offset:#x} runs past the end ({self.size} bytes)", offset)
        self.bytes_read += size
        return bytes(self.data[self.base + offset : self.base + offset + size])


class SubSource:
    """A window ``[base, base+size)`` of another source (an ``ar`` member)."""
    def __init__(self, parent: ByteSource, base: int, size: int) -> None:
        self.parent = parent
        self.base = base
        self.size = size

    @property
    def bytes_read(self) -> int:
        return self.parent.bytes_read

    @bytes_read.setter
    def bytes_read(self, value: int) -> None:  # the parent keeps the count
        self.parent.bytes_read = value

    def read_at(self, offset: int, size: int) -> bytes:
        if offset < 0 or size < 0 or offset + size > self.size:
            raise MalformedBinary(f"read of {size} bytes at {offset:#x} runs past the member end ({self.size} bytes)", offset)
        return self.parent.read_at(self.base + offset, size)


@dataclass(frozen=True)
class ElfHeader:
    bits: int  # 32 | 64
    endian: str  # "<" | ">"
    elf_type: str
    machine: str
    e_machine: int
    phoff: int
    phentsize: int
    phnum: int
    shoff: int
    shentsize: int
    shnum: int
    shstrndx: int
    flags: int = 0  # e_flags (a cubin's SM lives here)
    abi_version: int = 0  # EI_ABIVERSION


@dataclass(frozen=True)
class Section:
    index: int
    name: str
    type: int
    flags: int
    addr: int
    offset: int
    size: int
    link: int

    @property
    def has_bytes(self) -> bool:
        return self.type != SHT_NOBITS and self.size > 0


@dataclass(frozen=True)
class Segment:
    type: int
    offset: int
    vaddr: int
    filesz: int


@dataclass(frozen=True)
class DynamicInfo:
    soname: str | None = None
    needed: tuple[str, ...] = ()
    runpath: tuple[str, ...] = ()


def parse_header(head: bytes) -> ElfHeader:
    if len(head) < 20 or head[:4] != ELF_MAGIC:
        raise MalformedBinary("not an ELF file (bad magic)", 0)
    cls, data = head[4], head[5]
    if cls not in (1, 2):
        raise MalformedBinary(f"unknown ELF class {cls}", 4)
    if data not in (1, 2):
        raise MalformedBinary(f"unknown ELF data encoding {data}", 5)
    endian = "<" if data == 1 else ">"
    bits = 32 if cls == 1 else 64
    need = 52 if bits == 32 else 64
    if len(head) < need:
        raise MalformedBinary(f"ELF header truncated ({len(head)} of {need} bytes)", 0)
    fmt = "HHIQQQIHHHHHH" if bits == 64 else "HHIIIIIHHHHHH"  # entry, phoff and shoff are the class's words
    e_type, machine, _v, _entry, phoff, shoff, flags, _size, phentsize, phnum, shentsize, shnum, shstrndx = (
        struct.unpack_from(endian + fmt, head, 16))
    return ElfHeader(bits, endian, ELF_TYPES.get(e_type, str(e_type)), MACHINES.get(machine, f"em_{machine}"),
                     machine, phoff, phentsize, phnum, shoff, shentsize, shnum, shstrndx, flags, head[8])


def _section_format(hdr: ElfHeader) -> tuple[str, int]:
    return (hdr.endian + "IIQQQQIIQQ", 64) if hdr.bits == 64 else (hdr.endian + "IIIIIIIIII", 40)


def read_section_table(src: ByteSource, hdr: ElfHeader) -> list[tuple[int, ...]]:
    """Raw section header tuples (name_off, type, flags, addr, offset, size, link, ...)."""
    if hdr.shoff == 0:
        return []
    fmt, entsize = _section_format(hdr)
    if hdr.shentsize < entsize:
        raise MalformedBinary(f"section header size {hdr.shentsize} is smaller than {entsize}", 0x3A if hdr.bits == 64 else 0x2E)
    shnum = hdr.shnum
    if shnum == 0:  # extended numbering: the real count is section 0's sh_size
        shnum = struct.unpack_from(fmt, src.read_at(hdr.shoff, entsize))[5]
    if shnum > MAX_SECTIONS or shnum * hdr.shentsize > MAX_SECTION_TABLE:
        raise MalformedBinary(f"section table claims {shnum} x {hdr.shentsize} bytes, more than any real "
                              f"file has (limit {MAX_SECTIONS} sections, {MAX_SECTION_TABLE >> 20} MiB)",
                              hdr.shoff)
    if hdr.shoff + shnum * hdr.shentsize > src.size:
        raise MalformedBinary(f"section table ({shnum} x {hdr.shentsize} bytes at {hdr.shoff:#x}) runs past "
                              "the end of the file", hdr.shoff)
    table = src.read_at(hdr.shoff, shnum * hdr.shentsize)
    if hdr.shentsize == entsize:
        return list(struct.iter_unpack(fmt, table))  # one C loop (objects of static archives: 40k sections)
    return [struct.unpack_from(fmt, table, i * hdr.shentsize) for i in range(shnum)]


def section_name_table(src: ByteSource, hdr: ElfHeader, raw: list[tuple[int, ...]]) -> bytes:
    if not raw:
        return b""
    strndx = raw[0][6] if hdr.shstrndx == 0xFFFF else hdr.shstrndx
    if 0 < strndx < len(raw):
        s = raw[strndx]
        _check_range(src, s[4], s[5], f"section-name table (section {strndx})", hdr.shoff)
        if s[5] > MAX_SECTION_NAMES:
            raise MalformedBinary(f"section-name table claims {s[5]} bytes (limit {MAX_SECTION_NAMES >> 20} MiB)", hdr.shoff)
        return src.read_at(s[4], s[5])
    return b""


def section_names(src: ByteSource, hdr: ElfHeader, raw: list[tuple[int, ...]], names: bytes | None = None) -> list[Section]:
    """Resolve section names through the section-name string table (``names``, when already read)."""
    if not raw:
        return []
    if names is None:
        names = section_name_table(src, hdr, raw)
    return [Section(i, _c_string(names, s[0]) or "", *s[1:7]) for i, s in enumerate(raw)]


def read_sections(src: ByteSource, hdr: ElfHeader) -> list[Section]:
    return section_names(src, hdr, read_section_table(src, hdr))


def read_segments(src: ByteSource, hdr: ElfHeader) -> list[Segment]:
    if hdr.phoff == 0 or hdr.phnum == 0:
        return []
    fmt, entsize = (hdr.endian + "IIQQQQQQ", 56) if hdr.bits == 64 else (hdr.endian + "IIIIIIII", 32)
    if hdr.phentsize < entsize or hdr.phnum > 4096 or hdr.phoff + hdr.phnum * hdr.phentsize > src.size:
        raise MalformedBinary("program header table runs past the end of the file or has a bad entry size", hdr.phoff)
    table = src.read_at(hdr.phoff, hdr.phnum * hdr.phentsize)
    at = (0, 2, 3, 5) if hdr.bits == 64 else (0, 1, 2, 4)  # p_type, p_offset, p_vaddr, p_filesz
    rows = (struct.unpack_from(fmt, table, i * hdr.phentsize) for i in range(hdr.phnum))
    return [Segment(*(f[k] for k in at)) for f in rows]


def _check_range(src: ByteSource, offset: int, size: int, what: str, where: int) -> None:
    if offset < 0 or size < 0 or offset + size > src.size:
        raise MalformedBinary(f"{what} ({size} bytes at {offset:#x}) runs past the end of the file ({src.size} bytes)", where)


def parse_dynamic(table: bytes, hdr: ElfHeader) -> list[tuple[int, int]]:
    fmt, size = (hdr.endian + "qQ", 16) if hdr.bits == 64 else (hdr.endian + "iI", 8)
    out = []
    for i in range(min(len(table) // size, MAX_DYNAMIC_ENTRIES)):
        tag, val = struct.unpack_from(fmt, table, i * size)
        if tag == DT_NULL:
            break
        out.append((tag, val))
    return out


def _c_string(table: bytes, off: int) -> str | None:
    if off >= len(table):
        return None
    end = table.find(b"\0", off)
    return table[off : end if end >= 0 else len(table)].decode("utf-8", "replace")


def dynamic_strings(entries: list[tuple[int, int]], text: Callable[[int], str | None]) -> DynamicInfo:
    """SONAME/NEEDED/RUNPATH/RPATH of the dynamic table, their string offsets resolved by ``text``."""
    soname = None
    needed: list[str] = []
    runpath: list[str] = []
    for tag, val in entries:
        if tag == DT_NEEDED and (name := text(val)):
            needed.append(name)
        elif tag == DT_SONAME:
            soname = text(val)
        elif tag in (DT_RUNPATH, DT_RPATH) and (value := text(val)):
            runpath.extend(p for p in value.split(":") if p)
    return DynamicInfo(soname, tuple(needed), tuple(runpath))


def vaddr_to_offset(vaddr: int, sections: list[Section], segments: list[Segment]) -> int | None:
    for s in sections:
        if s.addr and s.type != SHT_NOBITS and s.addr <= vaddr < s.addr + s.size:
            return s.offset + (vaddr - s.addr)
    for g in segments:
        if g.type == PT_LOAD and g.vaddr <= vaddr < g.vaddr + g.filesz:
            return g.offset + (vaddr - g.vaddr)
    return None


def read_dynamic(src: ByteSource, hdr: ElfHeader, sections: list[Section], *, strings_at_once: bool = False) -> DynamicInfo:
    """SONAME, DT_NEEDED and RUNPATH; strings in small reads, or ``strings_at_once`` in one read up to the
    furthest (a stream, where every extra read can mean inflating the member again)."""
    dyn = next((s for s in sections if s.type == SHT_DYNAMIC and s.size), None)
    segments: list[Segment] = []
    strtab_sec: Section | None = None
    if dyn is not None:
        _check_range(src, dyn.offset, dyn.size, "dynamic section", hdr.shoff)
        table = src.read_at(dyn.offset, min(dyn.size, MAX_DYNAMIC_ENTRIES * 16))
        if 0 < dyn.link < len(sections):
            strtab_sec = sections[dyn.link]
    else:
        segments = read_segments(src, hdr)
        pdyn = next((g for g in segments if g.type == PT_DYNAMIC and g.filesz), None)
        if pdyn is None:
            return DynamicInfo()
        _check_range(src, pdyn.offset, pdyn.filesz, "dynamic segment", hdr.phoff)
        table = src.read_at(pdyn.offset, min(pdyn.filesz, MAX_DYNAMIC_ENTRIES * 16))
    entries = parse_dynamic(table, hdr)
    wanted = [v for t, v in entries if t in (DT_NEEDED, DT_SONAME, DT_RUNPATH, DT_RPATH)]
    if not wanted:
        return DynamicInfo()
    if strtab_sec is not None and strtab_sec.has_bytes:
        str_off, str_size = strtab_sec.offset, strtab_sec.size
    else:
        vals = dict(entries)
        if DT_STRTAB not in vals:
            raise MalformedBinary("dynamic table has names but no string table", dyn.offset if dyn else hdr.phoff)
        if not segments:
            segments = read_segments(src, hdr)
        mapped = vaddr_to_offset(vals[DT_STRTAB], sections, segments)
        if mapped is None:
            raise MalformedBinary(f"dynamic string table address {vals[DT_STRTAB]:#x} is not in the file", hdr.phoff)
        str_off, str_size = mapped, vals.get(DT_STRSZ, 0)
    if str_size > MAX_STRTAB:
        raise MalformedBinary(f"dynamic string table claims {str_size} bytes", str_off)
    _check_range(src, str_off, str_size, "dynamic string table", str_off)
    if strings_at_once:
        strtab = src.read_at(str_off, min(str_size, max(wanted) + 4096))
        return dynamic_strings(entries, lambda off: _c_string(strtab, off))
    texts = {off: _string_at(src, str_off, str_size, off).decode("utf-8", "replace") for off in set(wanted)}
    return dynamic_strings(entries, texts.get)


def _string_at(src: ByteSource, base: int, limit: int, off: int) -> bytes:
    out = b""
    pos = off
    while pos < limit:
        n = min(256, limit - pos)
        piece = src.read_at(base + pos, n)
        end = piece.find(b"\0")
        if end >= 0:
            return out + piece[:end]
        out += piece
        pos += n
        if len(out) > 65536:
            break
    return out


@dataclass(frozen=True)
class ArMember:
    name: str
    offset: int  # of the member's data
    size: int


def ar_members(src: ByteSource, limit: int = 100_000) -> list[ArMember]:
    """The members of an ``ar`` archive (symbol tables and the long-name table left out)."""
    if src.read_at(0, 8) != AR_MAGIC:
        raise MalformedBinary("not an ar archive", 0)
    pos = 8
    longnames = b""
    out: list[ArMember] = []
    headers = 0
    while pos + 60 <= src.size:
        headers += 1
        if headers > MAX_AR_MEMBERS:
            raise MalformedBinary(f"ar archive has more than {MAX_AR_MEMBERS} member headers", pos)
        head = src.read_at(pos, 60)
        if head[58:60] != b"`\n":
            raise MalformedBinary("bad ar member header", pos)
        raw_name = head[0:16].decode("latin-1").rstrip()
        try:
            size = int(head[48:58].decode("ascii").strip() or "0")
        except ValueError:
            raise MalformedBinary("bad ar member size", pos + 48) from None
        data = pos + 60
        next_pos = data + size + (size & 1)
        if size < 0 or data + size > src.size:
            raise MalformedBinary(f"ar member {raw_name!r} claims {size} bytes past the end of the archive", pos + 48)
        if raw_name == "//":
            longnames = src.read_at(data, min(size, MAX_STRTAB))
        elif raw_name in ("/", "/SYM64/", "__.SYMDEF", "__.SYMDEF SORTED"):
            pass
        else:
            name = raw_name
            if raw_name.startswith("/") and raw_name[1:].isdigit():
                i = int(raw_name[1:])
                end = longnames.find(b"/\n", i)
                name = longnames[i : end if end >= 0 else len(longnames)].decode("utf-8", "replace")
            elif raw_name.startswith("#1/") and raw_name[3:].isdigit():  # BSD long name in front of the data
                n = int(raw_name[3:])
                name = src.read_at(data, min(n, size)).rstrip(b"\0").decode("utf-8", "replace")
                data += n
                size -= n
            out.append(ArMember(name.rstrip("/"), data, size))
            if len(out) > limit:
                raise MalformedBinary(f"ar archive has more than {limit} members", pos)
        pos = next_pos
    return out


EM_CUDA = 190
SHT_CUDA_COMPAT = 0x70000086  # .nv.compat
COMPAT_ACCELERATOR_TARGET = 0x09  # EICOMPAT_ATTR_CUDA_ACCELERATOR_TARGET: 1 for "a" targets


def cubin_target(src: ByteSource, hdr: ElfHeader, sections: list[Section]) -> tuple[int, bool]:
    """(SM, arch-specific ``a``) of a standalone cubin (research/fatbin.md §5): the SM is e_flags' low
    byte (ABI 7) or second byte (ABI 8); ``a`` is e_flags 0x800 (ABI 7) or 0x8, or ``.nv.compat`` 0x09."""
    if hdr.abi_version >= 8:
        sm = (hdr.flags >> 8) & 0xFF
        arch_specific = bool(hdr.flags & 0x8)
    else:
        sm = hdr.flags & 0xFF
        arch_specific = bool(hdr.flags & 0x800)
    compat = next((s for s in sections if s.type == SHT_CUDA_COMPAT and s.size), None)
    if compat is not None and compat.size <= 4096:
        data = src.read_at(compat.offset, compat.size)
        i = 0
        while i + 1 < len(data):
            fmt = data[i]
            if fmt == 0:
                i += 1
                continue
            attr = data[i + 1]
            if fmt == 2:
                if attr == COMPAT_ACCELERATOR_TARGET and i + 2 < len(data):
                    arch_specific = arch_specific or data[i + 2] == 1
                i += 3
            elif fmt == 3:
                i += 4
            elif fmt == 4 and i + 4 <= len(data):
                i += 4 + int.from_bytes(data[i + 2 : i + 4], "little" if hdr.endian == "<" else "big")
            else:
                break
    return sm, arch_specific
