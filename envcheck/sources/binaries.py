"""ELF files, ``ar`` archives and whole folders (site-packages, venvs, conda envs, unpacked images).

KIND ``elf`` reads one file; KIND ``folder`` walks a directory, opens the files that can be native code (by name
or executable bit, see docs/inventory.md) and recognises ELF files among them by magic,
reads each one's machine, SONAME, DT_NEEDED, RUNPATH and fatbin architectures from headers only, and
collects the installed distributions from ``*.dist-info`` (METADATA for name, version and Requires-Dist;
RECORD to say which distribution each binary belongs to).

Public API used by other sources (images, containers): :func:`binary_from_file`, :func:`scan_folder`,
:func:`site_packages_of`, and :func:`read_binary` (the same reading, returning problems as data).
"""

from __future__ import annotations

import itertools
import json
import os
import re
import stat
import struct
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

from envcheck.cache import FolderSnapshot, ScanCache, change_key, checked_binary, checked_location
from envcheck.errors import InputError
from envcheck.inspect import fatbin
from envcheck.inspect.elf import (
    AR_MAGIC,
    ELF_MAGIC,
    EM_CUDA,
    ByteSource,
    DynamicInfo,
    FileSource,
    MalformedBinary,
    Section,
    SubSource,
    ar_members,
    cubin_target,
    parse_header,
    read_dynamic,
    read_section_table,
    read_sections,
    section_name_table,
    section_names,
)
from envcheck.inspect.metadata import header_fields
from envcheck.knowledge.sonames import implied_cuda_major
from envcheck.limits import read_regular
from envcheck.model import Binary, Inventory, Location, Package, ReadProblem, Role
from envcheck.records import replaced
from envcheck.sources import ReadOptions
from envcheck.sources.folder import from_snapshot, namespace_of

KIND = "folder"
TARGET_SM = 121  # judged by checks against the profile; the source records the GB10 reading

# Section names that never hold fatbins and are large: skipped by --deep-fatbin (code and symbols).
_NOT_FATBIN = (".text", ".symtab", ".strtab", ".dynsym", ".dynstr", ".debug", ".rela", ".rel.", ".eh_frame", ".gcc_except_table")


@dataclass
class BinaryReading:
    """The result of reading one file: the binary (None when it is not an ELF file) and its problems."""

    binary: Binary | None
    problems: list[ReadProblem] = field(default_factory=list)


@dataclass
class DeepSearch:
    """How :func:`read_elf` searches data sections for fatbins (``--deep-fatbin``, and cuFFT's kernels).

    ``split_at`` (a worker's read of a big file): sections of this many bytes or more are not searched but
    listed in ``later``, and the reading is incomplete (the folder scan cuts them into pieces for other jobs
    and reads the file again with them). ``pieces``: those searches (:func:`fatbin.scan_piece`) by the
    name, offset and size of their section, joined by :func:`fatbin.search` into the answer of a search of the whole.
    """

    split_at: int | None = None
    pieces: Mapping[tuple[str, int, int], list[fatbin.Piece | None]] = field(default_factory=dict)
    later: list[Section] = field(default_factory=list)


def _problem(exc: MalformedBinary, location: Location, prefix: str = "") -> ReadProblem:
    where = Location(location.path, offset=exc.offset, member=exc.member or location.member)
    return ReadProblem(f"{prefix}{location}: {exc.message}", where)


def is_binary_head(head: bytes) -> bool:
    """True when ``head`` starts like an ELF file or an ``ar`` archive."""
    return head.startswith(ELF_MAGIC) or head.startswith(AR_MAGIC)


def fatbin_sections(sections: list[Section], deep: bool) -> list[Section]:
    """Sections to read fatbins from: the standard two, plus every other data section when ``deep``."""
    out = []
    for s in sections:
        if not s.has_bytes:
            continue
        if s.name in fatbin.STANDARD_SECTIONS or (deep and not s.name.startswith(_NOT_FATBIN) and s.size >= 80):
            out.append(s)
    return out


def describe(
    path: str,
    machine: str,
    elf_type: str,
    dyn_soname: str | None,
    needed: tuple[str, ...],
    runpath: tuple[str, ...],
    containers: list[fatbin.Container],
    has_fatbin_segment: bool,
    size: int,
    bytes_read: int,
    location: Location,
) -> Binary:
    """Assemble a :class:`Binary` from what was read (shared by the file, archive and stream readers)."""
    # One representative entry per distinct image kind (cuFFT has 24,000 single-entry modules): the labels
    # are a function of (kind, SM, variant), so first appearances keep their order.
    variant = fatbin.FLAG_ARCH_SPECIFIC | fatbin.FLAG_FAMILY
    images = dict.fromkeys((e.kind, e.sm, e.flags & variant) for c in containers for e in c.entries)
    sass = fatbin.distinct(fatbin.image_label(*k) for k in images if k[0] == fatbin.KIND_ELF)
    ptx = fatbin.distinct(fatbin.image_label(*k) for k in images if k[0] == fatbin.KIND_PTX)
    lto = fatbin.distinct(fatbin.image_label(*k) for k in images if k[0] == fatbin.KIND_LTO)
    ptx_isa = fatbin.distinct(f"{v[0]}.{v[1]}" for v in dict.fromkeys((e.major, e.minor) for c in containers for e in c.entries
                                                                        if e.kind == fatbin.KIND_PTX))
    sections = fatbin.distinct(c.section for c in containers)
    names = [*needed, *([dyn_soname] if dyn_soname else [])]
    # A linked file that registers fatbins but needs no libcudart carries the runtime itself (nvcc's
    # default -cudart static). Objects and archives are linked later: nothing to say for them.
    static_cudart = elf_type in ("DYN", "EXEC") and has_fatbin_segment and not any(n.startswith("libcudart") for n in needed)
    return Binary(
        path=path,
        machine=machine,
        elf_type=elf_type,
        soname=dyn_soname,
        needed=needed,
        runpath=runpath,
        cuda_major=implied_cuda_major(names),
        sass=sass,
        ptx=ptx,
        lto=lto,
        ptx_isa=ptx_isa,
        sm121=fatbin.binary_level(containers, TARGET_SM),
        sections=sections,
        static_cudart=static_cudart,
        size=size,
        bytes_read=bytes_read,
        location=location,
    )


def read_elf(
    src: ByteSource,
    path: str,
    deep: bool,
    location: Location,
    scanned: list[fatbin.Container] | None = None,
    strings_at_once: bool = False,
    search: DeepSearch | None = None,
) -> tuple[Binary, list[ReadProblem]]:
    """Read one ELF file: header, sections, dynamic table, fatbins. Raises MalformedBinary when the
    headers themselves are unreadable; damage in the dynamic table or a fatbin section is returned as
    problems next to what could be read.

    ``scanned``: containers a stream scanner already found (sections are assigned here); otherwise the
    standard sections are walked (and, with ``deep``, every data section searched). ``strings_at_once``
    reads the dynamic string table in one read (streams: one pass instead of many small reads).
    ``search``: how data sections are searched (:class:`DeepSearch`; by default each here, whole).
    """
    problems: list[ReadProblem] = []
    head = src.read_at(0, min(64, src.size))
    hdr = parse_header(head)
    raw = read_section_table(src, hdr)
    names = section_name_table(src, hdr, raw)
    if (scanned is None and not deep and hdr.elf_type == "REL" and hdr.e_machine != EM_CUDA
            and b"nv_fatbin\0" not in names and b"__nv_relfatbin\0" not in names):
        # An object with no fatbin section (most members of static archives, with tens of thousands of
        # sections each): no dynamic table, no GPU code; naming every section would change nothing.
        return describe(path, hdr.machine, hdr.elf_type, None, (), (), [], False, src.size, src.bytes_read, location), problems
    sections = section_names(src, hdr, raw, names)
    try:
        dyn = read_dynamic(src, hdr, sections, strings_at_once=strings_at_once)
    except MalformedBinary as exc:
        problems.append(_problem(exc, location, "dynamic table of "))
        dyn = DynamicInfo()
    if scanned is not None:
        containers = _place(scanned, sections, deep)
    else:
        budget = fatbin.RecordBudget()  # one for the whole file, over all its sections
        search = search or DeepSearch()
        containers = _walk_fatbins(src, sections, deep, location, problems, budget, search)
        if not deep and fatbin.binary_level(containers, TARGET_SM) == fatbin.NONE:
            # No image in the standard sections runs on the target: libraries such as cuFFT keep their
            # real kernels in other sections and load them themselves, so look there before judging.
            extra = [c for c in _walk_fatbins(src, sections, True, location, problems, budget, search)
                     if c.section not in fatbin.STANDARD_SECTIONS]
            containers.extend(extra)
    has_segment = any(s.name == ".nvFatBinSegment" for s in sections)
    binary = describe(
        path, hdr.machine, hdr.elf_type, dyn.soname, dyn.needed, dyn.runpath, containers, has_segment,
        src.size, src.bytes_read, location,
    )
    if hdr.e_machine == EM_CUDA:
        # A standalone cubin (shipped as a file and loaded with cuModuleLoad): it is one SASS image.
        sm, arch_specific = cubin_target(src, hdr, sections)
        image = fatbin.Entry(fatbin.KIND_ELF, sm, fatbin.FLAG_ARCH_SPECIFIC if arch_specific else 0, 64, 0, 0, 0, 0)
        binary = replace(binary, sass=(image.label,), sm121=fatbin.image_level(image, TARGET_SM), bytes_read=src.bytes_read)
    return binary, problems


def _walk_fatbins(
    src: ByteSource, sections: list[Section], deep: bool, location: Location, problems: list[ReadProblem],
    budget: fatbin.RecordBudget, search: DeepSearch,
) -> list[fatbin.Container]:
    """The containers of the standard sections and, with ``deep``, those found in the other data sections
    (:func:`fatbin.search`: one of each distinct module, all that :func:`describe` needs). A searched
    section counts as read whole in ``bytes_read`` (the search skips some payloads, and pieces searched
    elsewhere read a little more around their cuts): the same count however the search was split."""
    containers: list[fatbin.Container] = []
    for s in fatbin_sections(sections, deep):
        if budget.left < 0:
            break  # reported once, for the section that used it up
        try:
            if s.name in fatbin.STANDARD_SECTIONS:
                containers.extend(fatbin.walk_containers(src, s.offset, s.size, s.name, budget))
            elif deep:
                inside = s.offset + s.size <= src.size
                if inside and search.split_at is not None and s.size >= search.split_at:
                    search.later.append(s)
                    continue
                before = src.bytes_read
                try:
                    containers.extend(fatbin.search(src, s.offset, s.size, s.name, budget, search.pieces.get((s.name, s.offset, s.size))))
                finally:
                    if inside:
                        src.bytes_read = before + s.size
        except MalformedBinary as exc:
            problems.append(_problem(exc, location, f"fatbin in section {s.name} of "))
    return containers


def _place(scanned: list[fatbin.Container], sections: list[Section], deep: bool) -> list[fatbin.Container]:
    """Give stream-scanned containers their section. Kept: those in the standard sections; with
    ``deep`` (or when the standard ones have nothing that runs on the target, as for cuFFT) also the
    validated ones in other data sections, as the file reader does."""
    spans = sorted((s.offset, s.offset + s.size, s.name) for s in sections if s.has_bytes)
    standard: list[fatbin.Container] = []
    other: list[fatbin.Container] = []
    for c in scanned:
        span = next(((hi, n) for lo, hi, n in spans if lo <= c.offset < hi and c.offset + c.size <= hi), None)
        if span is None:
            continue
        hi, name = span
        placed = fatbin.Container(name, c.offset, c.size, c.entries)
        if name in fatbin.STANDARD_SECTIONS:
            standard.append(placed)
        elif not name.startswith(_NOT_FATBIN) and fatbin.validate_scanned([placed], hi):
            other.append(placed)
    if deep or fatbin.binary_level(standard, TARGET_SM) == fatbin.NONE:
        return sorted(standard + other, key=lambda c: c.offset)
    return standard


def _read_archive(src: ByteSource, path: str, deep: bool, location: Location) -> tuple[Binary | None, list[ReadProblem]]:
    """An ``ar`` archive as one binary: members' fatbins in order, the first ELF member's machine."""
    problems: list[ReadProblem] = []
    parts: list[Binary] = []
    for m in ar_members(src):
        sub = SubSource(src, m.offset, m.size)
        if m.size < 4 or sub.read_at(0, 4) != ELF_MAGIC:
            continue
        member_loc = Location(location.path, member=m.name)
        try:
            b, probs = read_elf(sub, f"{path}({m.name})", deep, member_loc)
        except MalformedBinary as exc:
            exc.member = exc.member or m.name
            problems.append(_problem(exc, member_loc))
            continue
        parts.append(b)
        problems.extend(probs)
    if not parts:
        return None, problems
    return merge_archive(parts, path, src.size, src.bytes_read, location), problems


def merge_archive(parts: list[Binary], path: str, size: int, bytes_read: int, location: Location) -> Binary:
    """An ``ar`` archive as one binary: its ELF members' facts joined in order."""

    def join(attr: str) -> tuple[str, ...]:
        return fatbin.distinct(x for b in parts for x in getattr(b, attr))

    return Binary(
        path=path, machine=parts[0].machine, elf_type="AR", needed=join("needed"),
        cuda_major=implied_cuda_major(join("needed")), sass=join("sass"), ptx=join("ptx"), lto=join("lto"),
        ptx_isa=join("ptx_isa"), sm121=fatbin.combine_levels(b.sm121 for b in parts), sections=join("sections"),
        static_cudart=False, size=size, bytes_read=bytes_read, location=location,
    )


def read_binary(src: ByteSource, path: str, *, deep_fatbin: bool = False, location: Location | None = None,
                search: DeepSearch | None = None) -> BinaryReading:
    """Read an ELF file or ``ar`` archive from ``src``; never raises for bad content.

    Returns ``binary=None`` for anything that is not ELF/ar. A file whose headers cannot be read at all
    gives ``binary=None`` plus a problem; a file whose fatbin or dynamic table is damaged gives the
    binary (what could be read) plus a problem naming the section and offset. ``search``: see
    :class:`DeepSearch` (ELF files only; an archive's members are searched whole).
    """
    location = location or Location(path)
    try:
        head = src.read_at(0, min(8, src.size))
        if head.startswith(ELF_MAGIC):
            binary, problems = read_elf(src, path, deep_fatbin, location, search=search)
            return BinaryReading(binary, problems)
        if head.startswith(AR_MAGIC):
            maybe, problems = _read_archive(src, path, deep_fatbin, location)
            return BinaryReading(maybe, problems)
        return BinaryReading(None)
    except MalformedBinary as exc:
        return BinaryReading(None, [_problem(exc, location)])
    except (OSError, MemoryError, RecursionError, ValueError, IndexError, OverflowError, struct.error) as exc:
        return BinaryReading(None, [ReadProblem(f"{location}: cannot read: {type(exc).__name__}: {exc}", location)])


class UnreadableBinary(InputError):
    """Raised by :func:`binary_from_file` for an ELF file or archive it could not fully read.

    ``partial`` is what could be read (None when even the headers were bad); ``problems`` are the
    :class:`ReadProblem` records (each names the file and the byte offset) to put in an inventory.
    """

    def __init__(self, reading: BinaryReading, path: str) -> None:
        first = reading.problems[0]
        super().__init__(first.message, path=path, offset=first.location.offset if first.location else None)
        self.partial = reading.binary
        self.problems = reading.problems


def binary_from_file(fileobj: BinaryIO, path: str, size: int, *, deep_fatbin: bool = False) -> Binary | None:
    """What one ELF file or ``ar`` archive says (``fileobj`` must be seekable; read with bounded reads).

    Returns None for anything that is not ELF/ar (junk is not an error). For an ELF file whose headers,
    dynamic table or fatbins are damaged it raises :class:`UnreadableBinary` (an ``InputError``) carrying
    the partial binary and the problems; nothing else escapes. Use :func:`read_binary` to get problems as
    data instead.
    """
    reading = read_binary(FileSource(fileobj, size), path, deep_fatbin=deep_fatbin)
    if reading.problems:
        raise UnreadableBinary(reading, path)
    return reading.binary


# ---- folders -------------------------------------------------------------------------------------------


@dataclass
class _Distribution:
    package: Package
    files: set[str]  # absolute, normalised paths from RECORD
    record_key: tuple[int, ...] | None = None  # RECORD's cache.change_key when it was read (None: no RECORD)


def _canonical(name: str) -> str:
    """PEP 503 normalised distribution name (as packaging.utils.canonicalize_name)."""
    return re.sub(r"[-_.]+", "-", name).lower()


DIST_INFO_FILE_LIMIT = 256 << 20  # METADATA or RECORD bigger than this is not read (the largest real RECORD: 3 MB)
def _read_bytes(path: str) -> tuple[bytes, tuple[int, ...]]:
    """A dist-info file's bytes with its change key, taken before reading (OSError: missing, not a regular
    file, or over the limit)."""
    data, st = read_regular(path, DIST_INFO_FILE_LIMIT)
    return data, change_key(st)


def _universal_newlines(data: bytes) -> bytes:
    """``\\r\\n`` and ``\\r`` as ``\\n`` (what text mode reads; the bytes of UTF-8 text, so no character is split)."""
    return data.replace(b"\r\n", b"\n").replace(b"\r", b"\n") if b"\r" in data else data


def _record_files(text: str, prefix: str, wanted: set[str] | None, candidates: bool = False) -> set[str]:
    """The paths RECORD names (``prefix`` + the first field, white space then quotes stripped, ``..``
    resolved), only those in ``wanted`` when given. With ``candidates``, none whose name the walk never
    takes (a text suffix such as ``.py``, :data:`TEXT_SUFFIXES`, on a name that is no binary's): they cannot
    own a binary, and they are most of a RECORD (a worker process sends the set to the main process).
    (A plain loop: maps of str methods and regular expressions over the whole text were slower on the torch
    environment's 68,000 lines.)"""
    files: set[str] = set()
    lines = text.split("\n")
    if candidates:  # first the lines surely dropped (a first field ending in a text suffix, no ".so."): most of them
        lines = [line for line in lines if ".so." in line or not line.partition(",")[0].endswith(TEXT_SUFFIXES)]
    for line in lines:
        rel = line.split(",", 1)[0].strip().strip('"')
        if not rel:
            continue
        if candidates and rel.endswith(TEXT_SUFFIXES) and not may_be_binary(rel.rpartition("/")[2]):
            continue
        # plain joins are what the folder walk produces; only ../ entries need normalising
        path = os.path.normpath(prefix + rel) if ".." in rel or "./" in rel else prefix + rel
        if wanted is None or path in wanted:
            files.add(path)
    return files


def _read_dist_info(info_dir: Path | str, base: Path | str, wanted: set[str] | None = None, candidates: bool = False,
                    ) -> tuple[_Distribution | None, list[ReadProblem]]:
    """Package and RECORD file set of one ``*.dist-info`` directory (only the files in ``wanted``, when
    given: the binaries the scan found, which is all that RECORD is used for; with ``candidates``, only
    those the walk could take, :func:`_record_files`). A plain function of its arguments (worker processes
    may call it)."""
    info_dir = Path(info_dir)
    meta_path = str(info_dir / "METADATA")  # as a Path writes it: the name packages and problems carry
    try:
        data = _universal_newlines(_read_bytes(meta_path)[0])
    except OSError as exc:
        return None, [ReadProblem(f"{meta_path}: cannot read METADATA: {exc.strerror or exc}", Location(meta_path))]
    end = data.find(b"\n\n")  # the headers only: a long description can be most of the file
    fields = header_fields((data[: end + 1] if end >= 0 else data).decode("utf-8", errors="replace"))
    name, version = fields.get("name", ("",))[0], fields.get("version", ("",))[0]
    if not name:
        return None, [ReadProblem(f"{meta_path}: METADATA has no Name field", Location(meta_path))]
    pkg = Package(
        name=_canonical(name), version=version or None, installed=True,
        requires=tuple(fields.get("requires-dist", ())), role=Role.INSTALLED, location=Location(meta_path),
    )
    files: set[str] = set()
    record_key = None
    try:
        record, record_key = _read_bytes(str(info_dir / "RECORD"))
        if record.count(b"\r") != record.count(b"\r\n"):  # RECORD's CSV lines end in \r\n: stripped with the path
            record = _universal_newlines(record)
        files = _record_files(record.decode("utf-8", errors="replace"), str(Path(base)) + os.sep, wanted, candidates)
    except OSError:
        pass  # RECORD is optional (conda, system packages)
    return _Distribution(pkg, files, record_key), []


# A worker reads a dist-info ahead only when its RECORD is at most this big (torch's is 3 MB): RECORD is kept
# there as a set of every path the walk could take, so a bigger one is left to the main process, which keeps
# only the paths the walk took as it reads.
AHEAD_RECORD_BYTES = 8 << 20


def _read_dist_info_ahead(info_dir: str) -> tuple[_Distribution | None, list[ReadProblem]] | None:
    """:func:`_read_dist_info` of ``info_dir`` with every RECORD path the walk could take, or None when its RECORD is over
    :data:`AHEAD_RECORD_BYTES` (also when it grew past that while it was read)."""
    try:
        if os.stat(os.path.join(info_dir, "RECORD")).st_size > AHEAD_RECORD_BYTES:
            return None
    except OSError:
        pass  # no RECORD (conda, system packages): nothing big to keep
    got = _read_dist_info(info_dir, Path(info_dir).parent, candidates=True)
    dist = got[0]
    # RECORD grew past the limit while it was read (change_key: inode, device, size, ...)
    if dist is not None and dist.record_key is not None and dist.record_key[2] > AHEAD_RECORD_BYTES:
        return None
    return got


def _first(pair: tuple[str, ReadProblem]) -> str:
    return pair[0]


def _inside(real: str, root_real: str) -> bool:
    return real == root_real or real.startswith(root_real if root_real.endswith(os.sep) else root_real + os.sep)


# What a folder scan opens (docs/inventory.md): files whose name says shared library, archive, object or
# cubin, and files with an executable bit. Everything else (Python sources, data, headers: 95% of a torch
# environment) is never opened; an ELF file with none of these names and no executable bit cannot be
# loaded by the dynamic linker or run, so it changes nothing on the target machine.
BINARY_SUFFIXES = (".so", ".a", ".o", ".cubin")
# Worker processes (envcheck/sources/scan_workers.py): the main process lists the first FIRST_FOLDERS
# folders itself (a small tree never starts a worker); then each job lists up to JOB_FOLDERS folders and
# reads the candidate files in them below INLINE_BYTES; bigger files are jobs of their own, the biggest
# first. A cached scan hands its unread files to workers when there are POOL_FILES of them.
FIRST_FOLDERS = 48
JOB_FOLDERS = 64
INLINE_BYTES = 4 << 20
POOL_FILES = 24
# A data section of SPLIT_BYTES or more that a worker's read must search for fatbins (cuFFT's 265 MiB .ldata,
# the longest job of a CUDA environment's scan) is searched in pieces of about PIECE_BYTES, each a job of its
# own, handed out before any file (ReadOptions.split_bytes / piece_bytes change both: tests).
SPLIT_BYTES = 32 << 20
PIECE_BYTES = 16 << 20
# The order jobs are handed out in: the pieces of a section searched in pieces; the files of EARLY_BYTES or
# more, the biggest first (their reads are the longest: started during the listing, they end with it); the
# walk jobs, the shallowest first (a folder's depth times 4,096); every other file, the biggest first.
EARLY_BYTES = 32 << 20
_PIECE_PRIORITY = -float(1 << 66)
_EARLY_PRIORITY = -float(1 << 65)  # minus the file's size
_WALK_PRIORITY = -float(1 << 63)  # plus its depth times 4,096
# Names that are source or text whatever their mode (an executable .py is a script): their mode is not
# even looked at, which saves one stat per file on the 20,000 Python files of a torch environment.
TEXT_SUFFIXES = (".py", ".pyc", ".pyi", ".pyx", ".pxd", ".h", ".hpp", ".hxx", ".cuh", ".inc", ".c", ".cc", ".cpp",
                 ".cu", ".txt", ".md", ".rst", ".json", ".toml", ".yaml", ".yml", ".cfg", ".ini", ".pth", ".typed",
                 ".html", ".js", ".css", ".csv", ".pem", ".sh")
_WALK_PREFIX = "\0walk:"  # walk-cache keys (folders) next to the per-file entries of the same cache


def may_be_binary(name: str, mode: int | None = None) -> bool:
    """Whether a folder scan opens a file of this name (and mode, when the name does not decide)."""
    if name.endswith(BINARY_SUFFIXES) or ".so." in name:
        return True
    return mode is not None and bool(mode & 0o111)


def _list_folder(folder: str, root_real: str, problems: list[ReadProblem]) -> dict[str, list[str]] | None:
    """One folder's entries that matter to the scan, by name: ``d`` subfolders, ``f`` files to read
    (candidates and ``*.dist-info/METADATA``), ``l`` the same reached through links inside the root,
    ``x`` links that lead outside the root. None when the folder cannot be listed (a problem is added).
    Each list is in name order, whatever the order the filesystem lists them in."""
    dist_info = folder.endswith(".dist-info")
    d: list[str] = []
    f: list[str] = []
    linked: list[str] = []
    x: list[str] = []
    failed: list[tuple[str, ReadProblem]] = []
    try:
        with os.scandir(folder) as it:
            for entry in it:  # in the folder's order; each list is sorted by name below
                name = entry.name
                try:
                    if name.endswith(TEXT_SUFFIXES) and ".so." not in name and entry.is_file(follow_symlinks=False):
                        continue  # a regular source or text file: never opened (most entries of an environment)
                    if entry.is_symlink():
                        if not _inside(os.path.realpath(entry.path), root_real):
                            x.append(name)
                            continue
                        try:
                            est = entry.stat()
                        except OSError:
                            continue  # dangling or looping link: nothing to read
                        if stat.S_ISDIR(est.st_mode):
                            d.append(name)
                        elif stat.S_ISREG(est.st_mode) and may_be_binary(name, est.st_mode):
                            linked.append(name)
                    elif entry.is_dir(follow_symlinks=False):
                        d.append(name)
                    elif entry.is_file(follow_symlinks=False) and (
                        may_be_binary(name)
                        or (dist_info and name == "METADATA")
                        or (not name.endswith(TEXT_SUFFIXES) and entry.stat(follow_symlinks=False).st_mode & 0o111)
                    ):
                        f.append(name)
                except OSError as exc:
                    failed.append((name, ReadProblem(f"{entry.path}: cannot stat: {exc.strerror or exc}", Location(entry.path))))
    except OSError as exc:
        problems.append(ReadProblem(f"{folder}: cannot list folder: {exc.strerror or exc}", Location(folder)))
        return None
    if failed:
        problems.extend(problem for _name, problem in sorted(failed, key=_first))
    for names in (d, f, linked, x):
        names.sort()
    return {"d": d, "f": f, "l": linked, "x": x}


# What the walk needs from the filesystem about one folder, as plain tuples (worker processes send one per
# folder: 7,800 on a CUDA torch environment, and tuples are the cheapest to unpickle): the problems met
# listing it, then by :func:`_list_folder`'s kinds the ``x`` names (None when the folder cannot be listed),
# the ``f`` names and their stats (not following links; a string says why not), the ``l`` names, the ``d``
# names and their (st_dev, st_ino) when they are folders (None: not a folder, or no stat).
FolderFacts = tuple[
    tuple[ReadProblem, ...], "tuple[str, ...] | None", tuple[str, ...], "tuple[os.stat_result | str, ...]",
    tuple[str, ...], tuple[str, ...], "tuple[tuple[int, int] | None, ...]",
]


def folder_facts(folder: str, root_real: str) -> FolderFacts:
    """List one folder and stat what :func:`_walk` stats in it (the same calls, made ahead of the walk)."""
    problems: list[ReadProblem] = []
    listing = _list_folder(folder, root_real, problems)
    if listing is None:
        return tuple(problems), None, (), (), (), (), ()
    prefix = folder if folder.endswith(os.sep) else folder + os.sep
    files: list[os.stat_result | str] = []
    for name in listing["f"]:
        try:
            files.append(os.stat(prefix + name, follow_symlinks=False))
        except OSError as exc:
            files.append(str(exc.strerror or exc))
    dirs: list[tuple[int, int] | None] = []
    for name in listing["d"]:
        try:
            sst = os.stat(prefix + name)
        except OSError:
            dirs.append(None)
            continue
        dirs.append((sst.st_dev, sst.st_ino) if stat.S_ISDIR(sst.st_mode) else None)
    return (tuple(problems), tuple(listing["x"]), tuple(listing["f"]), tuple(files), tuple(listing["l"]),
            tuple(listing["d"]), tuple(dirs))


def _takes(name: str, st: os.stat_result, seen_files: set[tuple[int, int]]) -> bool:
    """Whether the walk yields a listed file: a regular file not yielded before (by another path), that is a
    candidate by name or mode, or a METADATA file (listed only in ``*.dist-info``); marks it seen."""
    key = (st.st_dev, st.st_ino)
    if not stat.S_ISREG(st.st_mode) or key in seen_files or not (name == "METADATA" or may_be_binary(name, st.st_mode)):
        return False
    seen_files.add(key)
    return True


def _walk(root: Path | str, problems: list[ReadProblem], outside: list[str],
          cache: ScanCache | None = None, folders: list[tuple[str, os.stat_result]] | None = None,
          listed: Mapping[str, FolderFacts] | None = None,
          ) -> Iterator[tuple[str, os.stat_result]]:
    """The files a folder scan reads under ``root`` (see :func:`may_be_binary`, plus ``*.dist-info/METADATA``),
    with their stat, each real file once.

    Symbolic links are followed only while they stay inside ``root`` (their resolved target is under
    ``root``'s real path); a link that leads outside is listed in ``outside`` and not followed, so a link
    to ``/`` cannot make the scan walk the whole machine. Loops and repeated folders are skipped, and
    devices, FIFOs and sockets are never opened. With ``cache``, a folder whose mtime (and inode) did not
    change since the last scan is not listed again: its entries come from the cache. ``folders``, when
    given, receives every folder the walk lists or tries to list (the root first), with its stat taken
    before the listing (what a :class:`envcheck.cache.FolderSnapshot` compares). With ``listed``
    (worker processes listed the folders, :func:`folder_facts`; no cache), the walk takes each folder's
    entries and stats from there (the folders it lacks are read here): the same files in the same order.
    """
    root = str(root)
    seen_dirs: set[tuple[int, int]] = set()
    seen_files: set[tuple[int, int]] = set()
    linked: list[str] = []
    try:
        st = os.stat(root)
    except OSError as exc:
        raise InputError(f"cannot read folder {root}: {exc.strerror or exc}", path=root) from exc
    root_real = os.path.realpath(root)
    seen_dirs.add((st.st_dev, st.st_ino))
    if listed is not None:
        yield from _replay(root, root_real, listed, problems, outside, seen_dirs, seen_files, linked)
    stack: list[tuple[str, os.stat_result]] = [] if listed is not None else [(root, st)]
    while stack:
        folder, fst = stack.pop()
        prefix = folder if folder.endswith(os.sep) else folder + os.sep
        if folders is not None:
            folders.append((folder, fst))
        key = (fst.st_mtime_ns, fst.st_ino, fst.st_dev, fst.st_ctime_ns)  # ctime: a chmod (made unreadable) too
        listing = cache.get(_WALK_PREFIX + folder, key, _listing) if cache is not None else None
        if not listing:
            listing = _list_folder(folder, root_real, problems)
            if listing is None:
                continue
            if cache is not None:
                cache.put(_WALK_PREFIX + folder, key, listing)
        outside.extend(prefix + name for name in listing["x"])
        for name in listing["f"]:
            path = prefix + name
            try:
                est = os.stat(path, follow_symlinks=False)
            except OSError as exc:
                problems.append(ReadProblem(f"{path}: cannot stat: {exc.strerror or exc}", Location(path)))
                continue
            if _takes(name, est, seen_files):  # the mode again: a cached listing may name a file that lost its x bit
                yield path, est
        linked.extend(prefix + name for name in listing["l"])
        subdirs: list[tuple[str, os.stat_result]] = []
        for name in listing["d"]:
            path = prefix + name
            try:
                sst = os.stat(path)
            except OSError:
                continue
            dkey = (sst.st_dev, sst.st_ino)
            if stat.S_ISDIR(sst.st_mode) and dkey not in seen_dirs:
                seen_dirs.add(dkey)
                subdirs.append((path, sst))
        stack.extend(reversed(subdirs))
    for path in linked:  # after the real files: a file is reported by its own path
        try:
            est = os.stat(path)
        except OSError:
            continue
        fkey = (est.st_dev, est.st_ino)
        if stat.S_ISREG(est.st_mode) and fkey not in seen_files and may_be_binary(os.path.basename(path), est.st_mode):
            seen_files.add(fkey)
            yield path, est


def _replay(root: str, root_real: str, listed: Mapping[str, FolderFacts], problems: list[ReadProblem],
            outside: list[str], seen_dirs: set[tuple[int, int]], seen_files: set[tuple[int, int]], linked: list[str],
            ) -> Iterator[tuple[str, os.stat_result]]:
    """:func:`_walk`'s steps over what worker processes listed and stat'ed (the folders ``listed`` lacks are
    read here): the same files in the same order, the same problems, outside links and linked files. Most
    folders of an environment hold only Python files and subfolders, so empty parts are skipped first
    (7,800 folders on the H200 machine's torch venv)."""
    stack = [root]
    while stack:
        folder = stack.pop()
        probs, x_names, f_names, f_stats, l_names, d_names, d_keys = listed.get(folder) or folder_facts(folder, root_real)
        if probs:
            problems.extend(probs)
        if x_names is None:
            continue
        prefix = folder if folder.endswith(os.sep) else folder + os.sep
        if x_names:
            outside.extend(prefix + name for name in x_names)
        if f_names:
            for name, got in zip(f_names, f_stats, strict=True):
                path = prefix + name
                if isinstance(got, str):
                    problems.append(ReadProblem(f"{path}: cannot stat: {got}", Location(path)))
                elif _takes(name, got, seen_files):
                    yield path, got
        if l_names:
            linked.extend(prefix + name for name in l_names)
        if d_names:
            found = []
            for name, dkey in zip(d_names, d_keys, strict=True):
                if dkey is not None and dkey not in seen_dirs:
                    seen_dirs.add(dkey)
                    found.append(prefix + name)
            found.reverse()
            stack += found


def outside_note(root: Path | str, outside: list[str]) -> ReadProblem:
    """One INFO note for the symbolic links of a folder scan that lead outside it (not followed)."""
    shown = ", ".join(f"{p} -> {os.readlink(p) if os.path.islink(p) else '?'}" for p in outside[:5])
    more = f" and {len(outside) - 5} more" if len(outside) > 5 else ""
    return ReadProblem(
        f"{root}: {len(outside)} symbolic link{'s' if len(outside) != 1 else ''} lead{'' if len(outside) != 1 else 's'} "
        f"outside the folder and {'were' if len(outside) != 1 else 'was'} not followed: {shown}{more}",
        Location(str(root)), note=True,
    )


def _scan_file(path: str, st: os.stat_result, deep: bool, search: DeepSearch | None = None) -> BinaryReading:
    if st.st_size < 8:
        return BinaryReading(None)
    try:
        with open(path, "rb", buffering=0) as fh:
            src = FileSource(fh, st.st_size)
            head = src.read_at(0, 8)
            if not is_binary_head(head):
                return BinaryReading(None)
            return read_binary(src, path, deep_fatbin=deep, search=search)
    except OSError as exc:
        return BinaryReading(None, [ReadProblem(f"{path}: cannot read: {exc.strerror or exc}", Location(path))])


class _Explored(NamedTuple):
    """What one walk job found: folders' facts (path, (st_dev, st_ino), facts), the folders it left for
    other jobs, readings of the small candidate files, the big ones left to read, and the ``*.dist-info``
    folders it read (path, what :func:`_read_dist_info_ahead` returned)."""

    folders: list[tuple[str, tuple[int, int], FolderFacts]]
    left: list[tuple[str, tuple[int, int]]]
    readings: list[tuple[str, BinaryReading]]
    big: list[tuple[str, os.stat_result]]
    dists: list[tuple[str, tuple[_Distribution | None, list[ReadProblem]]]]


def _explore(starts: list[tuple[str, tuple[int, int]]], root_real: str, folders: int, deep: bool,
             inline: int = INLINE_BYTES, dists: bool = True) -> _Explored:
    """List up to ``folders`` folders depth first from ``starts`` (skipping folders already seen here),
    reading the candidate files below ``inline`` bytes on the way; the others are left in ``big``. With
    ``dists``, a ``*.dist-info`` folder with a METADATA file is read too (its RECORD narrowed only by name: which of
    its paths matter is known only once the whole tree is walked)."""
    out = _Explored([], [], [], [], [])
    stack = list(reversed(starts))
    seen = {key for _path, key in starts}
    while stack and len(out.folders) < folders:
        folder, key = stack.pop()
        facts = folder_facts(folder, root_real)
        out.folders.append((folder, key, facts))
        _probs, x_names, f_names, f_stats, _l, d_names, d_keys = facts
        if x_names is None:
            continue
        prefix = folder if folder.endswith(os.sep) else folder + os.sep
        for name, st in zip(f_names, f_stats, strict=True):
            if isinstance(st, str) or not stat.S_ISREG(st.st_mode):
                continue
            if name == "METADATA" and folder.endswith(".dist-info"):
                if dists:
                    ahead = _read_dist_info_ahead(folder)
                    if ahead is not None:
                        out.dists.append((folder, ahead))
                continue
            path = prefix + name
            if st.st_size >= inline:
                out.big.append((path, st))
            else:
                out.readings.append((path, _scan_file(path, st, deep)))
        for name, sub in zip(reversed(d_names), reversed(d_keys), strict=True):
            if sub is not None and sub not in seen:
                seen.add(sub)
                stack.append((prefix + name, sub))
    out.left.extend(reversed(stack))
    return out


class _BigSections(NamedTuple):
    """A worker's read of a file that has data sections to search of :data:`SPLIT_BYTES` or more (see
    :class:`_FileReads`): each as (name, offset, size)."""

    sections: tuple[tuple[str, int, int], ...]


def _scan_job(deep: bool, split_at: int | None, job: tuple[Any, ...]) -> object:
    """A worker's job: ``("read", path, stat)`` (a :class:`BinaryReading`, or :class:`_BigSections` when the
    file has sections of ``split_at`` bytes or more to search), ``("piece", ticket, path, section, offset,
    size, index, start, stop, records)`` (:func:`fatbin.scan_piece`; None when the file cannot be read) or
    ``("walk", starts, root_real)``."""
    if job[0] == "read":
        search = DeepSearch(split_at=split_at)
        reading = _scan_file(job[1], job[2], deep, search)
        if search.later:
            return _BigSections(tuple((s.name, s.offset, s.size) for s in search.later))
        return reading
    if job[0] == "piece":
        _kind, _ticket, path, name, offset, size, _index, start, stop, records = job
        try:
            with open(path, "rb", buffering=0) as fh:
                return fatbin.scan_piece(FileSource(fh, os.fstat(fh.fileno()).st_size), start, stop, offset + size, name,
                                         records)
        except OSError:
            return None
    return _explore(job[1], job[2], JOB_FOLDERS, deep)


class _FileReads:
    """A folder scan's :class:`scan_workers.WorkerPool`, whose reads of big files may come back unfinished:
    the fatbin search of a data section of ``split_at`` bytes or more (cuFFT's 265 MiB ``.ldata``, 24,000
    modules: alone it would be the last job to end) is cut into pieces of about ``piece_bytes``, each a job
    of its own handed out before any file, and the file is read again here, with the pieces' searches, once
    they are all back (:func:`fatbin.search` joins them into the answer of a plain search). The same jobs
    and results otherwise (:meth:`results` yields the read job with its finished reading)."""

    def __init__(self, workers: int, deep: bool, split: tuple[int, int]) -> None:
        from envcheck.sources import scan_workers  # not loaded by a folder answered from its snapshot

        self.pool = scan_workers.WorkerPool(workers, partial(_scan_job, deep, split[0]))
        self.deep = deep
        self.piece_bytes = split[1]
        self._tickets = itertools.count()
        # by ticket, a file being searched in pieces: its read job, the pieces by section (None until back),
        # how many are still out
        self._waiting: dict[int, tuple[tuple[Any, ...], dict[tuple[str, int, int], list[fatbin.Piece | None]], list[int]]] = {}

    @property
    def pids(self) -> list[int]:
        return self.pool.pids

    @property
    def rerun(self) -> int:
        return self.pool.rerun

    def submit(self, job: Any, priority: float = 0.0, short: bool = False) -> None:
        """Queue ``job`` (see :meth:`scan_workers.WorkerPool.submit`)."""
        self.pool.submit(job, priority, short)

    def results(self) -> Iterator[tuple[Any, Any]]:
        """``(job, result)`` for every submitted job as it finishes, a read with its finished reading."""
        for job, result in self.pool.results():
            if job[0] == "read" and isinstance(result, _BigSections):
                self._cut(job, result)
            elif job[0] == "piece":
                done = self._piece_back(job, result)
                if done is not None:
                    yield done
            else:
                yield job, result

    def _cut(self, job: tuple[Any, ...], big: _BigSections) -> None:
        """Hand out the pieces of ``big``'s sections (:func:`_piece_jobs`)."""
        ticket = next(self._tickets)
        pieces: dict[tuple[str, int, int], list[fatbin.Piece | None]] = {}
        for piece in _piece_jobs(ticket, job[1], big.sections, self.piece_bytes):
            pieces.setdefault(piece[3:6], []).append(None)
            self.pool.submit(piece, _PIECE_PRIORITY)
        self._waiting[ticket] = (job, pieces, [sum(len(v) for v in pieces.values())])

    def _piece_back(self, job: tuple[Any, ...], piece: fatbin.Piece | None) -> tuple[tuple[Any, ...], BinaryReading] | None:
        """Keep a piece's search; the finished reading once it was the file's last piece."""
        _kind, ticket, path, name, offset, size, index, _start, _stop, _records = job
        read_job, pieces, out = self._waiting[ticket]
        pieces[(name, offset, size)][index] = piece
        out[0] -= 1
        if out[0]:
            return None
        del self._waiting[ticket]
        return read_job, _scan_file(path, read_job[2], self.deep, DeepSearch(pieces=pieces))

    def close(self) -> None:
        """Stop the workers (:meth:`scan_workers.WorkerPool.close`)."""
        self.pool.close()


def _piece_jobs(ticket: int, path: str, sections: tuple[tuple[str, int, int], ...], piece_bytes: int,
                ) -> list[tuple[Any, ...]]:
    """The piece jobs of ``sections`` (name, offset, size) of ``path``: 8-aligned cuts about ``piece_bytes``
    apart from each section's 8-aligned start. Each piece may spend twice its share of the file's record
    limit (:data:`fatbin.MAX_RECORDS`), so that all of them together do no more than twice the work a
    plain search may do (cuFFT's pieces spend a tenth of their share); a piece that needs more fails, and
    the section is searched whole."""
    cuts: dict[tuple[str, int, int], list[int]] = {}
    for name, offset, size in sections:
        first, end = offset + (-offset) % 8, offset + size
        count = max(1, -(-(end - first) // piece_bytes))
        step = -(-(end - first) // count)
        step += (-step) % 8
        cuts[(name, offset, size)] = [*range(first, end, step), end]
    records = max(1, 2 * fatbin.MAX_RECORDS // sum(len(bounds) - 1 for bounds in cuts.values()))
    return [("piece", ticket, path, name, offset, size, index, bounds[index], bounds[index + 1], records)
            for (name, offset, size), bounds in cuts.items() for index in range(len(bounds) - 1)]


def _split_sizes(options: ReadOptions) -> tuple[int, int]:
    """(``split_at``, ``piece_bytes``) for :class:`_FileReads`: :data:`SPLIT_BYTES`, :data:`PIECE_BYTES`, or
    positive whole numbers from ``options`` (``split_bytes``, ``piece_bytes``: tests use small ones)."""
    sizes = []
    for value, default in ((options.split_bytes, SPLIT_BYTES), (options.piece_bytes, PIECE_BYTES)):
        sizes.append(value if type(value) is int and value > 0 else default)
    return max(64, sizes[0]), max(8, sizes[1])


DistInfoReading = tuple[_Distribution | None, list[ReadProblem]]  # what _read_dist_info returns


def _read_ahead(root: str, deep: bool, workers: int, dist_infos: dict[str, DistInfoReading] | None = None,
                split: tuple[int, int] = (SPLIT_BYTES, PIECE_BYTES),
                ) -> tuple[dict[str, FolderFacts], dict[str, BinaryReading], _FileReads | None, set[str]]:
    """List the tree under ``root`` and read its candidate files ahead of :func:`_walk`, in worker processes
    once the tree has more than :data:`FIRST_FOLDERS` folders. Returns the folders' facts by path, the
    readings by path, the pool (None when no worker was needed) and the files it is still reading: it
    returns as soon as every folder is listed, so that the walk runs while the workers read the big files.
    ``dist_infos``, when given, receives the ``*.dist-info`` folders the workers read (by path; RECORD
    narrowed only by name). Nothing is judged here: :func:`_walk` still decides which files count, in its order."""
    listed: dict[str, FolderFacts] = {}
    read: dict[str, BinaryReading] = {}
    try:
        st = os.stat(root)
    except OSError:
        return listed, read, None, set()  # the walk reports it
    root_real = os.path.realpath(root)
    listed_keys: set[tuple[int, int]] = set()
    handed_out = {(st.st_dev, st.st_ino)}  # folders some job started from or will start from

    def take(found: _Explored, starts: list[tuple[str, tuple[int, int]]]) -> list[tuple[str, tuple[int, int]]]:
        for folder, key, facts in found.folders:
            listed[folder] = facts
            listed_keys.add(key)
        read.update(found.readings)
        if dist_infos is not None:
            dist_infos.update(found.dists)
        given = set(starts)  # a job's own starts that it had no time for come back; other folders once
        left = [(path, key) for path, key in found.left
                if key not in listed_keys and ((path, key) in given or key not in handed_out)]
        handed_out.update(key for _path, key in left)
        return left

    starts = [(root, (st.st_dev, st.st_ino))]
    first = _explore(starts, root_real, FIRST_FOLDERS, deep, inline=0, dists=False)  # files read by workers (or after the walk)
    left = take(first, starts)
    if not left and not any(fst.st_size >= INLINE_BYTES for _path, fst in first.big):
        # a small tree without a big file: no worker; the walk reads its files
        return listed, read, None, set()
    pool = _FileReads(workers, deep, split)
    walking = [0]  # walk jobs handed to the pool and not yet back
    reading: set[str] = set()
    try:
        def walk(starts: list[tuple[str, tuple[int, int]]]) -> None:
            # A few folders per job while there are many (a site-packages root has hundreds). Listing goes
            # before every file under EARLY_BYTES, the shallowest folders first (a library folder such as
            # nvidia/cu13/lib is then found before the hundreds of folders deep in torch/'s headers); the
            # files of EARLY_BYTES or more (cuFFT's read and its pieces, cuBLASLt: the longest jobs) are
            # read as they are found, while the listing goes on.
            per_job = max(1, len(starts) // (workers * 4))
            for i in range(0, len(starts), per_job):
                depth = starts[i][0].count(os.sep)
                pool.submit(("walk", starts[i : i + per_job], root_real), priority=_WALK_PRIORITY + depth * 4096.0, short=True)
                walking[0] += 1

        def read_big(big: list[tuple[str, os.stat_result]]) -> None:
            for path, fst in big:  # the biggest first: a 1 GB library must not start last
                if path not in reading:
                    reading.add(path)
                    early = _EARLY_PRIORITY if fst.st_size >= EARLY_BYTES else 0.0
                    pool.submit(("read", path, fst), priority=early - fst.st_size)

        walk(left)
        read_big(first.big)
        if walking[0]:
            for job, result in pool.results():
                if job[0] == "read":
                    read[job[1]] = result
                    reading.discard(job[1])
                    continue
                walking[0] -= 1
                walk(take(result, job[1]))
                read_big(result.big)
                if not walking[0]:
                    break  # every folder is listed; the big files are still being read
    except BaseException:
        pool.close()
        raise
    return listed, read, pool, reading


def _read_todo(todo: list[tuple[int, str, os.stat_result]], deep: bool, pool: _FileReads | None,
               reading: set[str] | None = None) -> Iterator[tuple[int, BinaryReading]]:
    """Read the files of ``todo`` (index, path, stat): in ``pool``'s workers, the biggest first, else here.
    ``reading``: files the pool is reading already (they are not handed out twice)."""
    if pool is None:
        for at, path, st in todo:
            yield at, _scan_file(path, st, deep)
        return
    where = {path: at for at, path, _st in todo}
    for _at, path, st in todo:
        if reading is None or path not in reading:
            pool.submit(("read", path, st), priority=-st.st_size)
    for job, done in pool.results():
        index = where.get(job[1])
        if index is not None:  # else a file the walk did not take (a second hard link)
            yield index, done


def scan_folder(root: Path, options: ReadOptions, *, snapshot_tried: bool = False) -> Inventory:
    """Every ELF file and installed distribution under ``root`` (context ``installed``).

    Results per file are cached by (path, size, mtime, inode, ctime), and the whole inventory by the stat of
    everything it was built from (:class:`envcheck.cache.FolderSnapshot`), unless ``options.use_cache`` is False.
    ``snapshot_tried``: the caller found the snapshot not answering just now (it is not stat'ed again).
    """
    from envcheck.sources import scan_workers  # not loaded by a folder answered from its snapshot

    root = Path(root)
    if not snapshot_tried:
        cached = from_snapshot(root, options)
        if cached is not None:
            return cached
    inv = Inventory(context="installed")
    problems: list[ReadProblem] = []
    deep = options.deep_fatbin
    namespace = namespace_of(root, deep)
    snapshot = FolderSnapshot(namespace) if options.use_cache else None
    started_ns = time.time_ns()
    folders: list[tuple[str, os.stat_result]] | None = [] if snapshot is not None else None
    walked: list[tuple[str, os.stat_result]] = []
    cache = ScanCache(namespace) if options.use_cache else None
    dist_dirs: list[tuple[str, os.stat_result]] = []
    readings: list[BinaryReading | None] = []
    todo: list[tuple[int, str, os.stat_result]] = []
    outside: list[str] = []
    workers = scan_workers.worker_count(options.scan_workers) if scan_workers.can_fork() else 1
    pool: _FileReads | None = None
    split = _split_sizes(options)
    early: list[tuple[str, _Distribution | None, list[ReadProblem]]] | None = None
    try:
        listed: dict[str, FolderFacts] | None = None
        read_ahead: dict[str, BinaryReading] = {}
        reading: set[str] = set()
        dists_ahead: dict[str, DistInfoReading] = {}
        if cache is None and workers > 1:
            # No cache: worker processes list the folders and read the files while the tree is walked.
            listed, read_ahead, pool, reading = _read_ahead(str(root), deep, workers, dists_ahead, split)
        for path, st in _recorded(_walk(root, problems, outside, cache, folders, listed), walked if snapshot is not None else None):
            if path.endswith(".dist-info/METADATA"):
                dist_dirs.append((os.path.dirname(path), st))
                continue
            hit = cache.get(path, _file_key(st), reading_from_cache) if cache is not None else None
            if hit is not None:
                if hit:  # False: cached "not a binary"
                    readings.append(hit)
                continue
            ahead = read_ahead.get(path)
            if ahead is not None:
                readings.append(ahead)
                continue
            todo.append((len(readings), path, st))
            readings.append(None)
        if reading:
            # The workers still read big files: read the distributions meanwhile, RECORD kept for every
            # file the walk took (a superset of the binaries, so the same owners).
            taken = [path for _at, path, _st in todo] + [r.binary.path for r in readings if r is not None and r.binary is not None]
            early = _dist_infos(dist_dirs, {*taken, *map(os.path.normpath, taken)}, dists_ahead)
        if pool is None and workers > 1 and len(todo) >= POOL_FILES:
            pool = _FileReads(min(workers, len(todo)), deep, split)
        for at, got in _read_todo(todo, deep, pool, reading):
            readings[at] = got
    finally:
        if pool is not None:
            pool.close()
    if cache is not None:
        for at, path, st in todo:
            done = readings[at]
            assert done is not None
            cache.put(path, _file_key(st), reading_to_cache(done))
        cache.save()
    if outside:
        problems.append(outside_note(root, outside))
    owners: dict[str, str] = {}
    found = [r.binary.path for r in readings if r is not None and r.binary is not None]
    wanted = {*found, *map(os.path.normpath, found)}
    records: list[tuple[str, tuple[int, ...]]] = []  # RECORD files read, for the snapshot
    for info_dir, dist, probs in early if early is not None else _dist_infos(dist_dirs, wanted, dists_ahead):
        problems.extend(probs)
        if dist is None:
            continue
        if dist.record_key is not None:
            records.append((info_dir + os.sep + "RECORD", dist.record_key))
        inv.packages.append(dist.package)
        for f in dist.files:
            owners.setdefault(f, dist.package.name)
    for done in readings:
        assert done is not None
        problems.extend(done.problems)
        b = done.binary
        if b is None:
            continue
        owner = owners.get(b.path) or owners.get(os.path.normpath(b.path))
        if owner is not None:
            b = replaced(b, distribution=owner)
        inv.binaries.append(b)
    inv.problems.extend(problems)
    if snapshot is not None and folders is not None and not [p for p in inv.problems if not p.note]:
        # A scan that met no error is kept whole (an error may be passing: it is read again next time).
        files = [(path, change_key(st)) for path, st in walked] + records
        snapshot.save(str(root), started_ns, [(path, change_key(st)) for path, st in folders], files,
                      inv.packages, inv.binaries, inv.problems)
    return inv


def _file_key(st: os.stat_result) -> tuple[int, int, int, int]:
    """A file's key in the per-file cache: size, mtime, inode, and ctime (a rewrite that restores the mtime)."""
    return (st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)


def _dist_infos(dist_dirs: list[tuple[str, os.stat_result]], wanted: set[str],
                ahead: Mapping[str, DistInfoReading] | None = None,
                ) -> list[tuple[str, _Distribution | None, list[ReadProblem]]]:
    """Each ``*.dist-info`` folder read (:func:`_read_dist_info`), in walk order; those in ``ahead`` (read by
    worker processes, RECORD narrowed only by name) are taken from there, their RECORD paths narrowed to ``wanted``."""
    out: list[tuple[str, _Distribution | None, list[ReadProblem]]] = []
    for info_dir, _st in dist_dirs:
        got = ahead.get(info_dir) if ahead else None
        if got is None:
            out.append((info_dir, *_read_dist_info(Path(info_dir), Path(info_dir).parent, wanted)))
            continue
        dist, probs = got
        if dist is not None:
            dist = _Distribution(dist.package, dist.files & wanted, dist.record_key)
        out.append((info_dir, dist, probs))
    return out


def _recorded(files: Iterator[tuple[str, os.stat_result]], into: list[tuple[str, os.stat_result]] | None,
              ) -> Iterator[tuple[str, os.stat_result]]:
    """``files`` as they come, also appended to ``into`` (when given)."""
    if into is None:
        yield from files
        return
    for item in files:
        into.append(item)
        yield item


def reading_to_cache(reading: BinaryReading) -> dict[str, object] | None:
    """A reading as JSON data for :class:`envcheck.cache.ScanCache` (None: not a binary)."""
    if reading.binary is None and not reading.problems:
        return None
    return {
        "binary": reading.binary.to_json() if reading.binary is not None else None,
        "problems": [p.to_json() for p in reading.problems],
    }


def reading_from_cache(value: object) -> BinaryReading:
    """The reading that :func:`reading_to_cache` stored. The cache is untrusted: anything of another shape
    raises TypeError or KeyError (the file is read again), never a wrong reading."""
    if type(value) is not dict or not value.keys() <= {"binary", "problems"} or type(value.get("problems", [])) is not list:
        raise TypeError("reading")
    probs = []
    for p in value.get("problems", []):
        if type(p) is not dict or not p.keys() <= {"message", "location"} or type(p["message"]) is not str:
            raise TypeError("problem")
        loc = p.get("location")
        probs.append(ReadProblem(p["message"], checked_location(loc) if loc is not None else None))
    b = value.get("binary")
    return BinaryReading(checked_binary(b) if b is not None else None, probs)


def _listing(value: object) -> dict[str, list[str]]:
    """A folder's listing as the walk cache stored it (:func:`_list_folder`); TypeError for anything else,
    such as a name with a path separator (it would lead out of the folder)."""
    if type(value) is not dict or value.keys() != {"d", "f", "l", "x"}:
        raise TypeError("listing")
    for names in value.values():
        if type(names) is not list:
            raise TypeError("listing")
        for name in names:
            if type(name) is not str or name in ("", ".", "..") or os.sep in name or "\0" in name:
                raise TypeError("listing")
    return value


def site_packages_of(python: str) -> list[Path]:
    """The site-packages folders of the interpreter ``python`` (it is run once to ask)."""
    code = (
        "import json, site, sysconfig; p = []\n"
        "for k in ('purelib', 'platlib'):\n"
        "    v = sysconfig.get_paths().get(k)\n"
        "    v and v not in p and p.append(v)\n"
        "try:\n"
        "    [p.append(x) for x in site.getsitepackages() if x not in p]\n"
        "except Exception: pass\n"
        "print(json.dumps(p))"
    )
    import subprocess  # here: only `--python` runs a program, and the folder scan's start-up need not load it

    try:
        out = subprocess.run([python, "-I", "-c", code], capture_output=True, text=True, timeout=60, check=True)
        paths = json.loads(out.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError) as exc:
        raise InputError(f"cannot ask {python} for its site-packages: {exc}", path=python) from exc
    return [Path(p) for p in paths if Path(p).is_dir()]


def read_python(python: str, options: ReadOptions) -> Inventory:
    """The installed environment of the interpreter ``python`` (``envcheck --python PY``): its site-packages, scanned."""
    inventory = Inventory(context="installed")
    for site in site_packages_of(python):
        inventory.extend(scan_folder(site, options))
    inventory.context = "installed"
    return inventory


def read(path: Path, options: ReadOptions) -> Inventory:
    """KIND ``elf`` (one file) or ``folder`` (a directory tree)."""
    path = Path(path)
    if path.is_dir():
        return scan_folder(path, options)
    try:
        st = path.stat()
        if not stat.S_ISREG(st.st_mode):
            # a device never ends and a FIFO blocks: binaries are read only from regular files
            raise InputError(f"cannot read {path}: not a regular file; envcheck reads ELF files and archives only "
                             "from regular files", path=str(path))
        with path.open("rb", buffering=0) as fh:
            reading = read_binary(FileSource(fh, st.st_size), str(path), deep_fatbin=options.deep_fatbin)
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}", path=str(path)) from exc
    if reading.binary is None and not reading.problems:
        raise InputError(f"{path} is not an ELF file or ar archive (no ELF magic)", path=str(path), offset=0)
    inv = Inventory(context="installed")
    if reading.binary is not None:
        inv.binaries.append(reading.binary)
    inv.problems.extend(reading.problems)
    return inv


def sniff(path: Path, head: bytes) -> bool:
    """ELF files and ar archives, by magic."""
    return is_binary_head(head)


__all__ = [
    "KIND",
    "BinaryReading",
    "UnreadableBinary",
    "binary_from_file",
    "read",
    "read_binary",
    "read_python",
    "scan_folder",
    "site_packages_of",
]


def standard_containers(src: ByteSource) -> list[fatbin.Container]:
    """The fatbin containers cuobjdump lists: ``.nv_fatbin`` and ``__nv_relfatbin``, in section order
    (archives: member by member). Raises MalformedBinary for bad headers. Used by the oracle tests and
    the benchmarks to compare with ``cuobjdump``."""
    head = src.read_at(0, min(8, src.size))
    if head.startswith(AR_MAGIC):
        out: list[fatbin.Container] = []
        for m in ar_members(src):
            sub = SubSource(src, m.offset, m.size)
            if m.size >= 4 and sub.read_at(0, 4) == ELF_MAGIC:
                out.extend(standard_containers(sub))
        return out
    hdr = parse_header(src.read_at(0, min(64, src.size)))
    found: list[fatbin.Container] = []
    for s in read_sections(src, hdr):
        if s.has_bytes and s.name in fatbin.STANDARD_SECTIONS:
            found.extend(fatbin.walk_containers(src, s.offset, s.size, s.name))
    return found
