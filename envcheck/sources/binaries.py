"""ELF files and ``ar`` archives (KIND ``elf``), and installed distributions' ``*.dist-info``: read from
headers only. :func:`binary_from_file` and :func:`read_binary` serve the other sources (wheels, images)."""

from __future__ import annotations

import email.parser
import os
import stat
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO

from envcheck.cache import change_key
from envcheck.errors import InputError
from envcheck.inspect import fatbin, fatbin_levels
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
from envcheck.inspect.wheel_tags import canonical
from envcheck.knowledge.sonames import implied_cuda_major
from envcheck.limits import read_regular
from envcheck.model import Binary, Inventory, Location, Package, ReadProblem, Role, from_plain
from envcheck.profile import shipped_sms
from envcheck.redaction import clean_value
from envcheck.sources import ReadOptions
from envcheck.sources.walk import TEXT_SUFFIXES, may_be_binary

KIND = "folder"

# Section names that never hold fatbins and are large: skipped by --deep-fatbin (code and symbols).
_NOT_FATBIN = (".text", ".symtab", ".strtab", ".dynsym", ".dynstr", ".debug", ".rela", ".rel.", ".eh_frame", ".gcc_except_table")


@dataclass
class BinaryReading:
    binary: Binary | None  # None: not an ELF file
    problems: list[ReadProblem] = field(default_factory=list)


@dataclass
class DeepSearch:
    """How :func:`read_elf` searches data sections for fatbins: sections of ``split_at`` bytes or more go to
    ``later`` (the folder scan searches them in pieces and reads the file again with ``pieces``)."""

    split_at: int | None = None
    pieces: Mapping[tuple[str, int, int], list[fatbin.Piece | None]] = field(default_factory=dict)
    later: list[Section] = field(default_factory=list)


def _problem(exc: MalformedBinary, location: Location, prefix: str = "") -> ReadProblem:
    where = Location(location.path, offset=exc.offset, member=exc.member or location.member)
    return ReadProblem(f"{prefix}{location}: {exc.message}", where)


def is_binary_head(head: bytes) -> bool:
    return head.startswith((ELF_MAGIC, AR_MAGIC))


def fatbin_sections(sections: list[Section], deep: bool) -> list[Section]:
    """The standard two fatbin sections, plus every other data section when ``deep``."""
    return [s for s in sections if s.has_bytes and (
        s.name in fatbin.STANDARD_SECTIONS or (deep and not s.name.startswith(_NOT_FATBIN) and s.size >= 80))]


def describe(path: str, machine: str, elf_type: str, dyn_soname: str | None, needed: tuple[str, ...],
             runpath: tuple[str, ...], containers: list[fatbin.Container], has_fatbin_segment: bool,
             size: int, bytes_read: int, location: Location) -> Binary:
    # One representative entry per distinct image kind (cuFFT has 24,000 single-entry modules): the labels
    # are a function of (kind, SM, variant), so first appearances keep their order.
    variant = fatbin.FLAG_ARCH_SPECIFIC | fatbin.FLAG_FAMILY
    images = dict.fromkeys((e.kind, e.sm, e.flags & variant) for c in containers for e in c.entries)
    sass, ptx, lto = (fatbin_levels.distinct(fatbin.image_label(*k) for k in images if k[0] == kind)
                      for kind in (fatbin.KIND_ELF, fatbin.KIND_PTX, fatbin.KIND_LTO))
    ptx_isa = fatbin_levels.distinct(f"{v[0]}.{v[1]}" for v in dict.fromkeys((e.major, e.minor) for c in containers for e in c.entries
                                                                        if e.kind == fatbin.KIND_PTX))
    names = [*needed, *([dyn_soname] if dyn_soname else [])]
    # A linked file that registers fatbins but needs no libcudart carries the runtime itself (nvcc's
    # default -cudart static). Objects and archives are linked later: nothing to say for them.
    static_cudart = elf_type in ("DYN", "EXEC") and has_fatbin_segment and not any(n.startswith("libcudart") for n in needed)
    return Binary(path=path, machine=machine, elf_type=elf_type, soname=dyn_soname, needed=needed,
                  runpath=runpath, cuda_major=implied_cuda_major(names), sass=sass, ptx=ptx, lto=lto,
                  ptx_isa=ptx_isa, sm121=fatbin_levels.binary_level(containers),
                  modules=fatbin_levels.binary_modules(containers),
                  sections=fatbin_levels.distinct(c.section for c in containers), static_cudart=static_cudart,
                  size=size, bytes_read=bytes_read, location=location)


def _runs_on_no_known_gpu(containers: list[fatbin.Container]) -> bool:
    """GPU code, none of it for the GPU of any shipped profile (cuFFT's standard sections: only sm_75)."""
    return all(fatbin_levels.binary_level(containers, sm) == fatbin_levels.NONE for sm in shipped_sms())


def read_elf(src: ByteSource, path: str, deep: bool, location: Location,
             scanned: list[fatbin.Container] | None = None, strings_at_once: bool = False,
             search: DeepSearch | None = None) -> tuple[Binary, list[ReadProblem]]:
    """One ELF file; MalformedBinary for unreadable headers, damage in the dynamic table or a fatbin is
    returned as problems. ``scanned``: containers a stream scanner found; ``strings_at_once``: the string
    table in one read (streams)."""
    problems: list[ReadProblem] = []
    hdr = parse_header(src.read_at(0, min(64, src.size)))
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
        if not deep and _runs_on_no_known_gpu(containers):
            # No image in the standard sections runs on a profile's GPU: libraries such as cuFFT keep their
            # real kernels in other sections and load them themselves, so look there before judging.
            extra = _walk_fatbins(src, sections, True, location, problems, budget, search)
            containers.extend(c for c in extra if c.section not in fatbin.STANDARD_SECTIONS)
    has_segment = any(s.name == ".nvFatBinSegment" for s in sections)
    binary = describe(path, hdr.machine, hdr.elf_type, dyn.soname, dyn.needed, dyn.runpath, containers,
                      has_segment, src.size, src.bytes_read, location)
    if hdr.e_machine == EM_CUDA:
        # A standalone cubin (shipped as a file and loaded with cuModuleLoad): it is one SASS image.
        sm, arch_specific = cubin_target(src, hdr, sections)
        image = fatbin.Entry(fatbin.KIND_ELF, sm, fatbin.FLAG_ARCH_SPECIFIC if arch_specific else 0, 64, 0, 0, 0, 0)
        binary = replace(binary, sass=(image.label,), sm121=fatbin_levels.image_level(image, fatbin_levels.GB10_SM),
                         modules=(image.label,), bytes_read=src.bytes_read)
    return binary, problems


def _walk_fatbins(src: ByteSource, sections: list[Section], deep: bool, location: Location,
                  problems: list[ReadProblem], budget: fatbin.RecordBudget, search: DeepSearch,
                  ) -> list[fatbin.Container]:
    """The standard sections' containers and, with ``deep``, one of each distinct module in the other data
    sections. A searched section counts as read whole in ``bytes_read``, however the search was split."""
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
    """Stream-scanned containers given their section, kept as the file reader would keep them."""
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
    if deep or _runs_on_no_known_gpu(standard):
        return sorted(standard + other, key=lambda c: c.offset)
    return standard


def _read_archive(src: ByteSource, path: str, deep: bool, location: Location) -> tuple[Binary | None, list[ReadProblem]]:
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
        return fatbin_levels.distinct(x for b in parts for x in getattr(b, attr))

    return Binary(
        path=path, machine=parts[0].machine, elf_type="AR", needed=join("needed"),
        cuda_major=implied_cuda_major(join("needed")), sass=join("sass"), ptx=join("ptx"), lto=join("lto"),
        ptx_isa=join("ptx_isa"), sm121=fatbin_levels.combine_levels(b.sm121 for b in parts), modules=join("modules"),
        sections=join("sections"), static_cudart=False, size=size, bytes_read=bytes_read, location=location,
    )


def read_binary(src: ByteSource, path: str, *, deep_fatbin: bool = False, location: Location | None = None,
                search: DeepSearch | None = None) -> BinaryReading:
    """An ELF file or ``ar`` archive; never raises for bad content (None: not ELF/ar, or unreadable)."""
    location = location or Location(path)
    try:
        head = src.read_at(0, min(8, src.size))
        if head.startswith(ELF_MAGIC):
            return BinaryReading(*read_elf(src, path, deep_fatbin, location, search=search))
        if head.startswith(AR_MAGIC):
            return BinaryReading(*_read_archive(src, path, deep_fatbin, location))
        return BinaryReading(None)
    except MalformedBinary as exc:
        return BinaryReading(None, [_problem(exc, location)])
    except (OSError, MemoryError, RecursionError, ValueError, IndexError, OverflowError, struct.error) as exc:
        return BinaryReading(None, [ReadProblem(f"{location}: cannot read: {type(exc).__name__}: {exc}", location)])


class UnreadableBinary(InputError):
    """A damaged ELF file or archive: ``partial`` is what could be read, ``problems`` what went wrong."""

    def __init__(self, reading: BinaryReading, path: str) -> None:
        first = reading.problems[0]
        super().__init__(first.message, path=path, offset=first.location.offset if first.location else None)
        self.partial = reading.binary
        self.problems = reading.problems


def binary_from_file(fileobj: IO[bytes], path: str, size: int, *, deep_fatbin: bool = False) -> Binary | None:
    """:func:`read_binary` of a seekable file that raises :class:`UnreadableBinary` for a damaged one."""
    reading = read_binary(FileSource(fileobj, size), path, deep_fatbin=deep_fatbin)
    if reading.problems:
        raise UnreadableBinary(reading, path)
    return reading.binary


@dataclass
class Distribution:
    package: Package
    files: set[str]  # absolute, normalised paths from RECORD
    record_key: tuple[int, ...] | None = None  # RECORD's cache.change_key when it was read (None: no RECORD)


DistInfoReading = tuple[Distribution | None, list[ReadProblem]]
DIST_INFO_FILE_LIMIT = 256 << 20  # METADATA or RECORD bigger than this is not read (the largest real RECORD: 3 MB)
# A worker reads a dist-info ahead only when its RECORD is at most this big (torch's is 3 MB): it keeps every
# path the walk could take, so a bigger one is left to the main process, which keeps only the paths taken.
AHEAD_RECORD_BYTES = 8 << 20


def _read_bytes(path: str) -> tuple[bytes, tuple[int, ...]]:
    """A dist-info file's bytes and change key, taken before reading (OSError: missing, odd, too big)."""
    data, st = read_regular(path, DIST_INFO_FILE_LIMIT)
    return data, change_key(st)


def _universal_newlines(data: bytes) -> bytes:
    return data.replace(b"\r\n", b"\n").replace(b"\r", b"\n") if b"\r" in data else data


def _record_files(text: str, prefix: str, wanted: set[str] | None, candidates: bool = False) -> set[str]:
    """The paths RECORD names (only those in ``wanted`` when given); with ``candidates``, only those the
    walk could take (most of a RECORD is text files, which a worker would otherwise send)."""
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


def read_dist_info(info_dir: Path | str, base: Path | str, wanted: set[str] | None = None, candidates: bool = False,
                   ) -> DistInfoReading:
    """Package and RECORD files (see :func:`_record_files`) of one ``*.dist-info``; workers may call it."""
    info_dir = Path(info_dir)
    meta_path = str(info_dir / "METADATA")  # as a Path writes it: the name packages and problems carry
    try:
        data = _universal_newlines(_read_bytes(meta_path)[0])
    except OSError as exc:
        return None, [ReadProblem(f"{meta_path}: cannot read METADATA: {exc.strerror or exc}", Location(meta_path))]
    end = data.find(b"\n\n")  # the headers only: a long description can be most of the file
    meta = email.parser.HeaderParser().parsestr((data[: end + 1] if end >= 0 else data).decode("utf-8", errors="replace"))
    name, version = str(meta.get("Name", "")), str(meta.get("Version", ""))
    if not name:
        return None, [ReadProblem(f"{meta_path}: METADATA has no Name field", Location(meta_path))]
    requires = tuple(str(r) for r in meta.get_all("Requires-Dist") or ())
    pkg = Package(name=canonical(name), version=version or None, installed=True, requires=requires,
                  role=Role.INSTALLED, location=Location(meta_path))
    files: set[str] = set()
    record_key = None
    try:
        record, record_key = _read_bytes(str(info_dir / "RECORD"))
        if record.count(b"\r") != record.count(b"\r\n"):  # RECORD's CSV lines end in \r\n: stripped with the path
            record = _universal_newlines(record)
        files = _record_files(record.decode("utf-8", errors="replace"), str(Path(base)) + os.sep, wanted, candidates)
    except OSError:
        pass  # RECORD is optional (conda, system packages)
    return Distribution(pkg, files, record_key), []


def dist_infos(dist_dirs: list[tuple[str, os.stat_result]], wanted: set[str],
               ahead: Mapping[str, DistInfoReading] | None = None,
               ) -> list[tuple[str, Distribution | None, list[ReadProblem]]]:
    """Each ``*.dist-info`` in walk order (or from workers' ``ahead``), its RECORD narrowed to ``wanted``."""
    out: list[tuple[str, Distribution | None, list[ReadProblem]]] = []
    for info_dir, _st in dist_dirs:
        got = ahead.get(info_dir) if ahead else None
        if got is None:
            out.append((info_dir, *read_dist_info(Path(info_dir), Path(info_dir).parent, wanted)))
            continue
        dist, probs = got
        if dist is not None:
            dist = Distribution(dist.package, dist.files & wanted, dist.record_key)
        out.append((info_dir, dist, probs))
    return out


def read_dist_info_ahead(info_dir: str) -> DistInfoReading | None:
    """:func:`read_dist_info` with ``candidates``; None when RECORD is (or grew while read) over the bound."""
    try:
        if os.stat(os.path.join(info_dir, "RECORD")).st_size > AHEAD_RECORD_BYTES:
            return None
    except OSError:
        pass  # no RECORD (conda, system packages): nothing big to keep
    got = read_dist_info(info_dir, Path(info_dir).parent, candidates=True)
    dist = got[0]
    # RECORD grew past the limit while it was read (change_key: inode, device, size, ...)
    if dist is not None and dist.record_key is not None and dist.record_key[2] > AHEAD_RECORD_BYTES:
        return None
    return got


def scan_file(path: str, st: os.stat_result, deep: bool, search: DeepSearch | None = None) -> BinaryReading:
    if st.st_size < 8:
        return BinaryReading(None)
    try:
        with open(path, "rb", buffering=0) as fh:
            src = FileSource(fh, st.st_size)
            if not is_binary_head(src.read_at(0, 8)):
                return BinaryReading(None)
            return read_binary(src, path, deep_fatbin=deep, search=search)
    except OSError as exc:
        return BinaryReading(None, [ReadProblem(f"{path}: cannot read: {exc.strerror or exc}", Location(path))])


def reading_to_cache(reading: BinaryReading) -> dict[str, object] | None:
    """A reading as JSON data for :class:`envcheck.cache.ScanCache` (None: not a binary)."""
    if reading.binary is None and not reading.problems:
        return None
    binary, problems = clean_value((reading.binary, reading.problems), escape=False)  # redacted as printed
    return {"binary": binary.to_json() if binary is not None else None, "problems": [p.to_json() for p in problems]}


def reading_from_cache(value: object) -> BinaryReading:
    """The cache is untrusted: any other shape raises TypeError or KeyError (the file is read again)."""
    if type(value) is not dict or not value.keys() <= {"binary", "problems"} or type(value.get("problems", [])) is not list:
        raise TypeError("reading")
    try:
        probs = [from_plain(ReadProblem, p, "problem") for p in value.get("problems", [])]
        b = value.get("binary")
        return BinaryReading(from_plain(Binary, b, "binary") if b is not None else None, probs)
    except InputError as exc:
        raise TypeError(str(exc)) from None


def read(path: Path, options: ReadOptions) -> Inventory:
    """KIND ``elf``: one file."""
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{path} is a folder: read it as kind folder (leave out --kind elf)", path=str(path))
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
    return is_binary_head(head)


def standard_containers(src: ByteSource) -> list[fatbin.Container]:
    """The containers cuobjdump lists (``.nv_fatbin``, ``__nv_relfatbin``; archives member by member): for
    the oracle tests and benchmarks. Raises MalformedBinary for bad headers."""
    if src.read_at(0, min(8, src.size)).startswith(AR_MAGIC):
        out: list[fatbin.Container] = []
        for m in ar_members(src):
            sub = SubSource(src, m.offset, m.size)
            if m.size >= 4 and sub.read_at(0, 4) == ELF_MAGIC:
                out.extend(standard_containers(sub))
        return out
    hdr = parse_header(src.read_at(0, min(64, src.size)))
    return [c for s in read_sections(src, hdr) if s.has_bytes and s.name in fatbin.STANDARD_SECTIONS
            for c in fatbin.walk_containers(src, s.offset, s.size, s.name)]
