"""Fatbin containers (the GPU code nvcc embeds in ELF files), read from headers only (layout:
``research/fatbin.md`` §4). :func:`scan_containers` walks random-access bytes, :class:`StreamScanner`
a forward-only stream (a deflated wheel member); both give the same :class:`Container` lists.
"""

from __future__ import annotations

import struct
from array import array
from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import accumulate
from operator import itemgetter
from typing import NamedTuple

from envcheck.inspect.elf import ByteSource, MalformedBinary

MAGIC = b"\x50\xed\x55\xba"
MAGIC_V1 = b"\x50\xed\x55\xba\x01\x00\x10\x00"  # magic, version 1, header size 16
CONTAINER_HEADER = 16
ENTRY_HEADER = 64
MAX_ENTRY_HEADER = 4096  # seen: 0x40..0x78

KIND_PTX, KIND_ELF, KIND_LTO = 1, 2, 8
KIND_NAMES = {KIND_PTX: "ptx", KIND_ELF: "sass", KIND_LTO: "lto"}

FLAG_ARCH_SPECIFIC = 0x100000  # "a"
FLAG_FAMILY = 0x200000  # "f"

MAX_RECORDS = 200_000  # containers + entries walked in one binary (real: cuFFT has 24,000 modules, 48,000 records)
ZERO_SKIP = 1 << 20  # zero padding between containers is skipped a block at a time, not 8 bytes per step
WINDOW = 1 << 20

# Sections nvcc puts fatbins in; cuobjdump reads these (and only these).
STANDARD_SECTIONS = (".nv_fatbin", "__nv_relfatbin")

_ENTRY = struct.Struct("<HHIQIIHHIIIQ")  # kind, ver, hdr_size, padded, csize, optdesc, minor, major, sm, idoff, idlen, flags
_CONTAINER = struct.Struct("<IHHQ")


class Entry(NamedTuple):
    """One image in a container (a named tuple: cuFFT alone has 24,000)."""

    kind: int
    sm: int
    flags: int
    header_size: int
    payload_size: int
    major: int
    minor: int
    offset: int

    @property
    def label(self) -> str:
        return image_label(self.kind, self.sm, self.flags)

    @property
    def cuobjdump_label(self) -> str:
        """The name ``cuobjdump --list-elf/--list-ptx`` prints (it never shows ``f`` on cubins)."""
        family = self.flags & FLAG_FAMILY and self.kind != KIND_ELF
        return f"sm_{self.sm}" + ("a" if self.flags & FLAG_ARCH_SPECIFIC else "f" if family else "")


_PREFIX = {KIND_ELF: "sm_", KIND_PTX: "compute_", KIND_LTO: "lto_"}


def image_label(kind: int, sm: int, flags: int) -> str:
    """sm_121a for SASS, compute_121f for PTX, lto_121 for LTO IR."""
    variant = "a" if flags & FLAG_ARCH_SPECIFIC else "f" if flags & FLAG_FAMILY else ""
    return f"{_PREFIX.get(kind, f'kind{kind}_')}{sm}{variant}"


@dataclass
class Container:
    section: str
    offset: int  # file offset of the container header
    size: int  # header + entries
    entries: list[Entry] = field(default_factory=list)


def parse_container_header(head: bytes, offset: int) -> int:
    _magic, version, hsize, fat_size = _CONTAINER.unpack_from(head, 0)  # the caller checked the magic
    if version != 1 or hsize != CONTAINER_HEADER:
        raise MalformedBinary(f"fatbin container version {version} / header size {hsize} not understood", offset)
    return int(fat_size)


def parse_entry(head: bytes, offset: int, container_end: int) -> Entry:
    kind, _ver, hsize, padded, _cs, _opt, minor, major, sm, _io, _il, flags = _ENTRY.unpack_from(head, 0)
    if hsize < ENTRY_HEADER or hsize > MAX_ENTRY_HEADER:
        raise MalformedBinary(f"fatbin entry header size {hsize} is impossible", offset + 4)
    if offset + hsize + padded > container_end:
        raise MalformedBinary(f"fatbin entry of {hsize}+{padded} bytes runs past its container "
                              f"(ends at {container_end:#x})", offset + 8)
    return Entry(kind, sm, flags, hsize, padded, major, minor, offset)


class RecordBudget:
    """Containers and entries one binary may still have, shared by its sections' walks."""

    def __init__(self, limit: int = MAX_RECORDS) -> None:
        self.left = limit
        self.limit = limit

    def spend(self, offset: int) -> None:
        self.left -= 1
        if self.left < 0:
            raise MalformedBinary(f"more than {self.limit} fatbin containers and entries; no real library has this many", offset)


def walk_containers(src: ByteSource, start: int, size: int, section: str, budget: RecordBudget | None = None) -> list[Container]:
    """Contiguous containers from ``start`` (a standard fatbin section), skipping zero padding."""
    end = start + size
    if end > src.size:
        raise MalformedBinary(f"section {section} ({size} bytes at {start:#x}) runs past the end of the file", start)
    budget = budget or RecordBudget()
    out: list[Container] = []
    pos = start
    while pos + CONTAINER_HEADER <= end:
        head = src.read_at(pos, CONTAINER_HEADER)
        if head[:4] != MAGIC:
            if head[:8] == b"\0" * 8:
                pos = _skip_zeros(src, pos, end)
                continue
            raise MalformedBinary(f"unexpected bytes in {section} (no fatbin magic)", pos)
        budget.spend(pos)
        fat = parse_container_header(head, pos)
        cend = pos + CONTAINER_HEADER + fat
        if cend > end:
            raise MalformedBinary(f"fatbin container claims {fat} bytes, past the end of {section}", pos + 8)
        out.append(Container(section, pos, CONTAINER_HEADER + fat, _walk_entries(src, pos + CONTAINER_HEADER, cend, budget)))
        pos = cend
    return out


def _skip_zeros(src: ByteSource, pos: int, end: int) -> int:
    """The first 8-aligned step from ``pos`` that is not 8 zero bytes (sparse holes skipped unread)."""
    next_data = getattr(src, "next_data", None)
    while pos + 8 <= end:
        if next_data is not None:
            data_at = next_data(pos)
            if data_at > pos:
                pos = min(end, pos + (data_at - pos) // 8 * 8)
                if pos + 8 > end:
                    break
        block = src.read_at(pos, min(ZERO_SKIP, end - pos))
        zeros = (len(block) - len(block.lstrip(b"\0"))) // 8 * 8
        pos += zeros
        if zeros < len(block) // 8 * 8 or zeros == 0:
            return pos
    return pos


def _walk_entries(src: ByteSource, pos: int, cend: int, budget: RecordBudget) -> list[Entry]:
    entries = []
    while pos + ENTRY_HEADER <= cend:
        budget.spend(pos)
        entry = parse_entry(src.read_at(pos, ENTRY_HEADER), pos, cend)
        entries.append(entry)
        pos += entry.header_size + entry.payload_size
    return entries


def scan_containers(src: ByteSource, start: int, size: int, section: str, chunk: int = WINDOW,
                    budget: RecordBudget | None = None) -> list[Container]:
    """Containers anywhere in a section (``--deep-fatbin``); hits that do not validate are chance magics."""
    if start < 0 or size < 0 or start + size > src.size:
        raise MalformedBinary(f"section {section} ({size} bytes at {start:#x}) runs past the end of the file", start)
    found = _scan_window(src, start, start + size, section, budget or RecordBudget(), max(chunk, 64))
    return validate_scanned(found, start + size)


class _Window:
    """Forward reads through one buffer of about ``size`` bytes; the magic search stops at ``reach``."""

    def __init__(self, src: ByteSource, end: int, size: int = WINDOW, reach: int | None = None) -> None:
        self.src = src
        self.end = end
        self.reach = end if reach is None else min(reach, end)
        self.size = size
        self.data = b""
        self.at = 0

    def load(self, pos: int, n: int) -> None:
        if not (self.at <= pos and pos + n <= self.at + len(self.data)):
            self.data = self.src.read_at(pos, max(n, min(self.size, self.reach - pos)))
            self.at = pos

    def find(self, pos: int) -> int:
        magic = len(MAGIC_V1)
        while pos + magic <= self.reach:
            if not (self.at <= pos and pos + magic <= self.at + len(self.data)):
                self._read(pos)
            i = self.data.find(MAGIC_V1, pos - self.at)
            if i >= 0 and self.at + i + magic <= self.reach:
                return self.at + i
            window_end = self.at + len(self.data)
            if window_end >= self.reach:
                return -1
            pos = window_end - magic + 1  # the next window overlaps: a magic across the boundary is found
            self._read(pos)
        return -1

    def _read(self, pos: int) -> None:
        self.data = self.src.read_at(pos, min(max(self.size, 64), self.reach - pos))
        self.at = pos


def _scan_window(src: ByteSource, start: int, end: int, section: str, budget: RecordBudget, size: int,
                 stop: int | None = None, misses: list[tuple[int, int, int, int]] | None = None) -> list[Container]:
    """:class:`StreamScanner`'s search over a random-access source (after a failed hit it resumes right after
    the magic). Hits from ``stop`` on are not taken; ``misses`` gets (containers before, hit, records spent,
    where the search went on: -1 when the entries run past ``end``) for each hit that is no container."""
    out: list[Container] = []
    stop = end if stop is None else min(stop, end)
    window = _Window(src, end, size, stop + len(MAGIC_V1) - 1)
    pos = start + (-start) % 8
    while True:
        i = window.data.find(MAGIC_V1, pos - window.at) if window.at <= pos < window.at + len(window.data) else -1
        hit = window.at + i if i >= 0 and window.at + i + len(MAGIC_V1) <= end else window.find(pos)
        if hit < 0 or hit + CONTAINER_HEADER > end or hit >= stop:
            return out
        if hit % 8:
            pos = hit + (-hit) % 8
            continue
        mark = budget.left
        budget.spend(hit)
        window.load(hit, CONTAINER_HEADER)
        cend = hit + CONTAINER_HEADER + int.from_bytes(window.data[hit - window.at + 8 : hit - window.at + 16], "little")
        cursor = hit + CONTAINER_HEADER
        entries: list[Entry] = []
        while cursor < cend:
            if cursor + ENTRY_HEADER > end:
                if misses is not None:
                    misses.append((len(out), hit, mark - budget.left, -1))
                return out  # runs past the section: as a stream's last, unfinished container
            budget.spend(cursor)
            window.load(cursor, ENTRY_HEADER)
            kind, _v, hsize, padded, _cs, _o, minor, major, sm, _io, _il, flags = _ENTRY.unpack_from(window.data, cursor - window.at)
            if (hsize < ENTRY_HEADER or hsize > MAX_ENTRY_HEADER or cursor + hsize + padded > cend
                    or (not entries and kind not in KIND_NAMES)):
                entries = []
                break
            entries.append(Entry(kind, sm, flags, hsize, padded, major, minor, cursor))
            cursor += hsize + padded
        else:
            if cend == hit + CONTAINER_HEADER or entries:
                out.append(Container(section, hit, cend - hit, entries))
            pos = cend + (-cend) % 8
            continue
        pos = hit + 8  # not a container after all: search on
        if misses is not None:
            misses.append((len(out), hit, mark - budget.left, pos))


ImageKey = tuple[tuple[int, int, int, int, int], ...]


_IMAGE = itemgetter(0, 1, 2, 5, 6)  # an Entry's kind, sm, flags, major, minor


def images(container: Container) -> ImageKey:
    return tuple(map(_IMAGE, container.entries))


def distinct_modules(containers: Iterable[Container]) -> list[Container]:
    """The first container of each distinct list of :func:`images`: a binary's description is the same."""
    first: dict[tuple[str, ImageKey], Container] = {}
    for c in containers:
        first.setdefault((c.section, images(c)), c)
    return list(first.values())


def _plausible(c: Container, end: int) -> bool:
    return c.offset + c.size <= end and not (c.entries and c.entries[0].kind not in KIND_NAMES) and not (
        c.size > CONTAINER_HEADER and not c.entries)


class Piece(NamedTuple):
    """The search of a piece ``[start, stop)`` of a section, compact for a pipe. Per hit taken: its offset,
    its end (-1: the search ended), records spent so far, and its index in ``modules`` (-1: none)."""

    start: int
    stop: int
    hits: array[int]
    nexts: array[int]
    spent: array[int]
    kinds: array[int]
    modules: tuple[Container, ...]  # the first container of each distinct list of images
    failed: bool


def scan_piece(src: ByteSource, start: int, stop: int, end: int, section: str, limit: int = MAX_RECORDS,
               window: int = WINDOW) -> Piece:
    """The search of :func:`scan_containers` from ``start``, taking the hits before ``stop``."""
    misses: list[tuple[int, int, int, int]] = []
    hits, nexts, spent, kinds = array("q"), array("q"), array("q"), array("q")
    try:
        found = _scan_window(src, start, end, section, RecordBudget(limit), window, stop, misses)
    except MalformedBinary:
        return Piece(start, stop, hits, nexts, spent, kinds, (), True)
    taken: list[tuple[int, int, int, Container | None]] = []  # the hits in order, misses among them
    m = 0
    for i, c in enumerate(found):
        while m < len(misses) and misses[m][0] == i:
            taken.append((*misses[m][1:], None))
            m += 1
        taken.append((c.offset, 1 + len(c.entries), c.offset + c.size, c))
    taken.extend((*miss[1:], None) for miss in misses[m:])
    hits.extend([t[0] for t in taken])
    spent.extend(accumulate([t[1] for t in taken]))
    nexts.extend([t[2] for t in taken])
    containers = [t[3] for t in taken]
    keys = [None if c is None or not _plausible(c, end) else
            _IMAGE(c.entries[0]) if len(c.entries) == 1 else tuple(map(_IMAGE, c.entries)) for c in containers]
    index: dict[object, int] = {}
    kinds.extend([-1 if key is None else index.setdefault(key, len(index)) for key in keys])
    earliest = dict(zip(reversed(keys), reversed(containers), strict=True))
    modules = [module for key in index if (module := earliest[key]) is not None]
    return Piece(start, stop, hits, nexts, spent, kinds, tuple(modules), False)


def search(src: ByteSource, start: int, size: int, section: str, budget: RecordBudget | None = None,
           pieces: list[Piece | None] | None = None, taken: list[int] | None = None) -> list[Container]:
    """:func:`distinct_modules` of :func:`scan_containers`, from ``pieces`` (searched by workers) where they
    give the answer, else searched here whole; ``taken`` receives the containers' offsets (tests)."""
    if start < 0 or size < 0 or start + size > src.size:
        raise MalformedBinary(f"section {section} ({size} bytes at {start:#x}) runs past the end of the file", start)
    budget = budget or RecordBudget()
    end = start + size
    joined = _join(src, pieces, start + (-start) % 8, end, section, budget.left, taken) if pieces is not None else None
    if joined is None or joined[1] > budget.left:
        found = scan_containers(src, start, size, section, budget=budget)
        if taken is not None:
            taken[:] = [c.offset for c in found]
        return distinct_modules(found)
    budget.left -= joined[1]
    return joined[0]


def _join(src: ByteSource, pieces: list[Piece | None], first: int, end: int, section: str, limit: int,
          taken: list[int] | None = None) -> tuple[list[Container], int] | None:
    """The whole section's distinct modules and records spent from its pieces (None: they cannot say).

    Where a piece's own search also passed ``pos``, both take the same hits from there on; else ``pos`` is
    inside a container the previous piece reached into, and the search steps on here until they meet."""
    ready = [p for p in pieces if p is not None and not p.failed]
    if not pieces or len(ready) != len(pieces):
        return None
    starts = [p.start for p in ready]
    stops = [p.stop for p in ready]
    if starts[0] != first or stops[-1] != end or starts[1:] != stops[:-1]:
        return None
    first_seen: dict[ImageKey, Container] = {}
    spent = 0
    pos = first
    for piece in ready:
        if pos >= piece.stop:
            continue  # inside a container the whole search took
        pos = max(pos, piece.start)
        hits, nexts = piece.hits, piece.nexts
        while pos < piece.stop:
            j = bisect_left(hits, pos)
            before = _on(nexts[j - 1]) if j else piece.start
            if 0 <= before <= pos:
                if j < len(hits):
                    spent += piece.spent[-1] - (piece.spent[j - 1] if j else 0)
                    if spent > limit:
                        return None
                    if taken is not None:
                        taken.extend(h for h, k in zip(hits[j:], piece.kinds[j:], strict=True) if k >= 0)
                    for kind in dict.fromkeys(piece.kinds[j:]):
                        if kind >= 0:
                            module = piece.modules[kind]
                            first_seen.setdefault(images(module), module)
                    pos = _on(nexts[-1])
                    if pos < 0:
                        return list(first_seen.values()), spent
                break
            step = _step(src, pos, piece.stop, end, section, limit - spent)
            if step is None:
                return None
            pos, cost, container = step
            spent += cost
            if container is not None:
                first_seen.setdefault(images(container), container)
                if taken is not None:
                    taken.append(container.offset)
            if pos < 0:
                return list(first_seen.values()), spent
    return list(first_seen.values()), spent


def _on(end: int) -> int:
    return end + (-end) % 8 if end >= 0 else end


def _step(src: ByteSource, pos: int, stop: int, end: int, section: str, limit: int,
          ) -> tuple[int, int, Container | None] | None:
    """One hit of the plain search before ``stop``: (where it goes on, records spent, container or None);
    None when it spends more than ``limit``."""
    window = _Window(src, end, 1 << 16, stop + len(MAGIC_V1) - 1)
    hit = window.find(pos)
    while hit >= 0 and hit % 8:
        hit = window.find(hit + (-hit) % 8)
    if hit < 0 or hit >= stop or hit + CONTAINER_HEADER > end:
        return stop, 0, None
    misses: list[tuple[int, int, int, int]] = []
    try:
        found = _scan_window(src, hit, end, section, RecordBudget(max(limit, 0)), 1 << 16, hit + 1, misses)
    except MalformedBinary:
        return None
    if found:
        c = found[0]
        cend = c.offset + c.size
        return cend + (-cend) % 8, 1 + len(c.entries), c if _plausible(c, end) else None
    _before, _hit, cost, on = misses[0]
    return on, cost, None


class StreamScanner:
    """Finds fatbin containers in bytes fed in order; hits that do not validate go to ``broken``
    (the caller reports only those inside a standard fatbin section)."""

    def __init__(self, budget: RecordBudget | None = None) -> None:
        self.budget = budget or RecordBudget()
        self.stopped = False  # the record budget ran out: nothing more is scanned
        self.containers: list[Container] = []
        self.broken: list[tuple[int, str]] = []
        self._carry = b""
        self._carry_at = 0  # absolute offset of _carry[0] (or where the next interesting byte is)
        self._current: Container | None = None
        self._cend = 0
        self._cursor = 0  # next entry header inside the current container

    def feed(self, chunk: bytes | memoryview, offset: int) -> None:
        if self.stopped:
            return
        data, base = (self._carry + bytes(chunk), self._carry_at) if self._carry else (bytes(chunk), offset)
        end = base + len(data)
        self._carry = b""
        while True:
            if self._current is not None:
                if self._cursor >= self._cend:
                    self._close()
                    continue
                if self._cursor + ENTRY_HEADER > end:
                    self._keep(data, base, self._cursor, end)
                    return
                i = self._cursor - base
                first = not self._current.entries
                if not self._spend(self._cursor):
                    return
                try:
                    entry = parse_entry(data[i : i + ENTRY_HEADER], self._cursor, self._cend)
                    if first and entry.kind not in KIND_NAMES:
                        raise MalformedBinary(f"fatbin entry kind {entry.kind} is unknown", self._cursor)
                except MalformedBinary as exc:
                    # Not a container after all (a magic can occur by chance): search on.
                    self.broken.append((self._current.offset, exc.message))
                    self._carry_at = self._current.offset + 8
                    self._current = None
                    continue
                self._current.entries.append(entry)
                self._cursor += entry.header_size + entry.payload_size
                continue
            start = max(self._carry_at, base)
            i = start - base
            i += (-(base + i)) % 8
            hit = data.find(MAGIC_V1, i)
            while hit >= 0 and (base + hit) % 8:
                hit = data.find(MAGIC_V1, hit + 1)
            if hit < 0:
                # keep the tail that could hold the start of a magic split across chunks
                keep_from = max(i, len(data) - len(MAGIC_V1) + 1)
                keep_from += (-(base + keep_from)) % 8
                self._keep(data, base, base + keep_from, end)
                return
            at = base + hit
            if hit + CONTAINER_HEADER > len(data):
                self._keep(data, base, at, end)
                return
            if not self._spend(at):
                return
            fat = int.from_bytes(data[hit + 8 : hit + 16], "little")
            self._current = Container("", at, CONTAINER_HEADER + fat)
            self._cend = at + CONTAINER_HEADER + fat
            self._cursor = at + CONTAINER_HEADER
            self._carry_at = self._cend

    def _spend(self, offset: int) -> bool:
        try:
            self.budget.spend(offset)
        except MalformedBinary as exc:
            self.broken.append((offset, exc.message))
            self.stopped = True
            self._current = None
            self._carry = b""
            return False
        return True

    def _keep(self, data: bytes, base: int, at: int, end: int) -> None:
        self._carry = data[at - base :] if at < end else b""
        self._carry_at = at

    def _close(self) -> None:
        c = self._current
        assert c is not None
        self._current = None
        self._carry_at = self._cend
        if c.size == CONTAINER_HEADER or c.entries:
            self.containers.append(c)

    def finish(self) -> list[Container]:
        if self._current is not None:
            at = self._current.offset
            self.broken.append((at, "fatbin container runs past the end of the file"))
            self._current = None
        return self.containers


def validate_scanned(containers: Iterable[Container], end: int) -> list[Container]:
    return [c for c in containers if _plausible(c, end)]
