"""A wheel on a package index read by HTTP range requests, not downloaded: metadata, tags, binaries
(``--resolve``). A local wheel's bounds apply, plus caps on the members read (a cap reached is a note)."""

from __future__ import annotations

import email.parser
import itertools
import shutil
import tempfile
import zipfile
from dataclasses import dataclass, field, replace
from typing import Any

from envcheck.inspect.wheel_tags import parse_wheel_name
from envcheck.limits import DEFAULT_MAX_EXPANSION, EXPANSION_FLOOR, expansion_limit
from envcheck.model import Binary, Inventory, Location, from_plain
from envcheck.services.package_index import FileProblem, IndexClient, RemoteFile, redact

MAX_MEMBER_BYTES = 1 << 30  # an ELF member bigger than this (inflated) is not read: its facts come from the table
MAX_BINARY_MEMBERS = 5000  # members of one wheel read as possible binaries (per-kernel cubins apart)
MAX_CUBIN_MEMBERS = 200  # standalone cubins of one remote wheel read (flashinfer-cubin ships 15,000; judged by package)
_TEXT_SUFFIXES = (".py", ".pyi", ".pyc", ".txt", ".md", ".json", ".h", ".hpp", ".cuh", ".cu", ".c", ".cc", ".cpp",
                  ".toml", ".cfg", ".typed", ".yaml", ".yml", ".html", ".js", ".css", ".png", ".jpg", ".pem", ".csv",
                  "METADATA", "RECORD", "WHEEL", "LICENSE", ".rst", ".in", ".cmake", ".pxd", ".pyx", ".inc", ".proto")


@dataclass
class FileFacts:  # cached by envcheck.resolution.cache
    requires: tuple[str, ...] | None = None
    tags: tuple[str, ...] = ()
    binaries: list[dict[str, Any]] = field(default_factory=list)  # Binary.to_json() without location, plus "member"
    problems: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    bytes_read: int = 0
    complete: bool = False  # every member that may be a binary was read (cacheable)
    verified: bool = False  # the whole file was read and matched its sha256
    notes: list[str] = field(default_factory=list)  # what was left unread on purpose (a cap): INFO, not an error


def _may_be_binary(info: zipfile.ZipInfo) -> bool:
    name = info.filename
    base = name.rsplit("/", 1)[-1]
    if name.endswith("/") or info.file_size < 64 or base.endswith(_TEXT_SUFFIXES):
        return False
    return ".so" in base or base.endswith((".a", ".cubin", ".node")) or "/bin/" in name or "/scripts/" in name or "." not in base


def read_remote_wheel(client: IndexClient, url: str, size: int | None, sha256: str | None, metadata_sha256: str | None = None,
                      max_expansion: float = DEFAULT_MAX_EXPANSION, max_member_bytes: int = MAX_MEMBER_BYTES) -> FileFacts:
    """The index's PEP 658 metadata is used only when its hash is known and matches, else the wheel's own.
    Binaries are held to ``--max-expansion`` each and together; a huge zip directory is refused unparsed."""
    from envcheck.inspect import wheelzip  # the binary readers load only when a file is really read
    from envcheck.inspect.elf import MalformedBinary

    facts = FileFacts()
    start = client.traffic.bytes
    parsed = parse_wheel_name(url)
    facts.tags = parsed.tags if parsed else ()
    if metadata_sha256:
        meta = client.metadata(url, metadata_sha256)
        if meta is not None:
            facts.requires = _requires_of(meta)
            facts.sources.append("index metadata")
    remote = RemoteFile(client, url.split("#")[0], size)
    try:
        wheelzip.check_directory(remote, remote.size)
        zf = zipfile.ZipFile(remote)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise FileProblem(f"{redact(url)}: not a readable wheel ({type(exc).__name__}: {exc})") from None
    with zf:
        infos = zf.infolist()
        if facts.requires is None:
            dist = next((i for i in infos if i.filename.endswith(".dist-info/METADATA") and i.filename.count("/") == 1), None)
            if dist is not None:
                try:
                    wheelzip.check_member(dist, remote.size)
                    if dist.file_size > MAX_METADATA_BYTES:
                        raise ValueError(f"{dist.file_size} bytes, more than the {MAX_METADATA_BYTES >> 20} MiB envcheck reads")
                    facts.requires = _requires_of(zf.read(dist))
                    facts.sources.append("wheel metadata")
                except (MalformedBinary, zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
                    facts.problems.append(f"{dist.filename}: cannot read it: {getattr(exc, 'message', None) or exc}")
        candidates = [i for i in infos if _may_be_binary(i) and not i.filename.endswith(".cubin")]
        cubins = [i for i in infos if _may_be_binary(i) and i.filename.endswith(".cubin")]
        if len(candidates) > MAX_BINARY_MEMBERS:
            facts.notes.append(f"{len(candidates) - MAX_BINARY_MEMBERS} of its {len(candidates)} members that may be binaries were not "
                               f"read (envcheck reads the first {MAX_BINARY_MEMBERS} of a remote wheel); the findings cover the others")
        if len(cubins) > MAX_CUBIN_MEMBERS:
            facts.notes.append(f"{len(cubins) - MAX_CUBIN_MEMBERS} of its {len(cubins)} per-kernel cubins were not read (envcheck "
                               f"reads {MAX_CUBIN_MEMBERS} of a remote wheel, spread over its folders: they are judged by package)")
            step = len(cubins) / MAX_CUBIN_MEMBERS
            cubins = [cubins[int(n * step)] for n in range(MAX_CUBIN_MEMBERS)]
        budget = _Budget(expansion_limit(remote.size, max_expansion), max_expansion)
        to_read = [*candidates[:MAX_BINARY_MEMBERS], *cubins]
        spans = coalesced_spans(infos, to_read, zf.start_dir)
        for info in to_read:
            try:
                span = spans.get(info.header_offset)
                if span is not None:
                    remote.prefetch(*span)
                wheelzip.check_member(info, remote.size)
                binary, problems = _read_member(zf, remote, info, budget, max_member_bytes)
            except (MalformedBinary, zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
                facts.problems.append(f"{info.filename}: {getattr(exc, 'message', None) or exc}")
                continue
            facts.problems.extend(problems)
            if binary is not None:
                data = binary.to_json()
                data.pop("location", None)
                data["member"] = info.filename
                facts.binaries.append(data)
    facts.sources.append("range read" if remote.ranged else "download")
    downloaded = remote.downloaded_sha256()
    if downloaded is not None and sha256:
        if downloaded != sha256.lower():
            raise FileProblem(f"{redact(url)}: the downloaded file's sha256 does not match {sha256[:16]}...: not judged")
        facts.verified = True
    facts.bytes_read = client.traffic.bytes - start
    facts.complete = not budget.refused
    return facts


MAX_METADATA_BYTES = 4 << 20
COALESCE_MEMBER = 1 << 20  # members up to this many bytes (header and compressed data) are fetched with their neighbours
COALESCE_GAP = 64 << 10  # unread bytes between two such members that still go into the same request


def coalesced_spans(infos: list[zipfile.ZipInfo], to_read: list[zipfile.ZipInfo], directory: int) -> dict[int, tuple[int, int]]:
    """{header offset of a span's first member: (start, end)}: small compressed members next to each other,
    fetched in one range request of at most MAX_READAHEAD bytes (stored members are read in place)."""
    from envcheck.services.package_index import MAX_READAHEAD

    starts = sorted({i.header_offset for i in infos if 0 <= i.header_offset < directory} | {directory})
    following = dict(itertools.pairwise(starts))
    out: dict[int, tuple[int, int]] = {}
    first: int | None = None
    lo = hi = 0
    for offset in sorted({i.header_offset for i in to_read if i.compress_type != zipfile.ZIP_STORED}):
        end = following.get(offset)
        if end is None or end - offset > COALESCE_MEMBER:
            continue
        if first is not None and offset - hi <= COALESCE_GAP and end - lo <= MAX_READAHEAD:
            hi = end
            out[first] = (lo, hi)
            continue
        first, lo, hi = offset, offset, end
        out[first] = (lo, hi)
    return {k: v for k, v in out.items() if v[1] - v[0] > 0}


@dataclass
class _Budget:
    left: int | None  # None: no limit
    ratio: float
    refused: bool = False  # a member was refused: the facts depend on the limit, so they are not cached

    def take(self, info: zipfile.ZipInfo) -> str:
        """Charge ``info``'s declared size: why it may not be inflated, or "" when it may."""
        limit = expansion_limit(info.compress_size, self.ratio)
        if limit is not None and info.file_size > limit:
            what = f"{info.file_size} bytes from {info.compress_size} compressed bytes"
        elif self.left is not None and info.file_size > self.left:
            what = "the wheel's binaries past the limit for the wheel's size"
        else:
            if self.left is not None:
                self.left -= info.file_size
            return ""
        return (f"{info.filename}: not read: it would expand {what}, more than the expansion limit ({self.ratio:g} times the "
                f"compressed size, at least {EXPANSION_FLOOR >> 20} MiB); if the wheel is genuine, raise the limit with "
                f"--max-expansion (0: no limit)")


def _requires_of(meta: bytes) -> tuple[str, ...]:
    parsed = email.parser.HeaderParser().parsestr(meta.decode("utf-8", "replace"))
    return tuple(str(r) for r in parsed.get_all("Requires-Dist") or [])


def _read_member(zf: zipfile.ZipFile, remote: RemoteFile, info: zipfile.ZipInfo, budget: _Budget,
                 max_member_bytes: int) -> tuple[Binary | None, list[str]]:
    from envcheck.inspect import wheelzip
    from envcheck.inspect.elf import ELF_MAGIC, FileSource
    from envcheck.sources.binaries import read_binary

    if info.compress_type == zipfile.ZIP_STORED:
        base = wheelzip.data_offset(remote, info)
        src = _RemoteWindow(remote, base, info.file_size)
        reading = read_binary(src, info.filename, location=Location("", member=info.filename))
        return reading.binary, [p.message for p in reading.problems]
    with zf.open(info) as member:
        head = member.read(8)
        if not head.startswith((ELF_MAGIC, b"!<arch>\n")):
            return None, []
        refused = budget.take(info)
        if refused:
            budget.refused = True
            return None, [refused]
        if info.file_size > max_member_bytes:
            return None, [f"{info.filename}: {info.file_size} bytes inflated, more than envcheck inflates from a remote wheel"]
        with tempfile.TemporaryFile(prefix="envcheck-member-") as spool:
            spool.write(head)
            shutil.copyfileobj(member, spool, 1 << 20)
            spool.flush()
            reading = read_binary(FileSource(spool, info.file_size), info.filename, location=Location("", member=info.filename))
    return reading.binary, [p.message for p in reading.problems]


class _RemoteWindow:  # a ByteSource over a stored member of a remote zip

    def __init__(self, remote: RemoteFile, base: int, size: int) -> None:
        self.remote = remote
        self.base = base
        self.size = size
        self.bytes_read = 0

    def read_at(self, offset: int, size: int) -> bytes:
        from envcheck.inspect.elf import MalformedBinary

        if offset < 0 or size < 0 or offset + size > self.size:
            raise MalformedBinary(f"read of {size} bytes at {offset:#x} runs past the end ({self.size} bytes)", offset)
        data = self.remote.read_at(self.base + offset, size)
        self.bytes_read += len(data)
        if len(data) != size:
            raise MalformedBinary(f"file ended early: wanted {size} bytes at {offset:#x}", offset)
        return data


def read_url(url: str, max_expansion: float | None = None) -> Inventory:
    """KIND ``wheel`` named by its http(s) URL (``envcheck https://.../x.whl``): read by range requests as
    ``--resolve`` reads the files it picks, judged like a local wheel."""
    from envcheck.errors import InputError
    from envcheck.model import Package, ReadProblem, Role, Wheel
    from envcheck.services.package_index import redact

    shown = redact(url)
    parsed = parse_wheel_name(url.split("#")[0].split("?")[0])
    if parsed is None:
        raise InputError(f"{shown}: not the URL of a wheel (envcheck reads a remote file only when it is a .whl)", path=shown)
    try:
        facts = read_remote_wheel(IndexClient(), url, None, None,
                                  max_expansion=DEFAULT_MAX_EXPANSION if max_expansion is None else max_expansion)
    except FileProblem as exc:
        raise InputError(exc.message, path=shown) from None
    where = Location(shown)
    inv = Inventory(context="declared")
    inv.problems += [ReadProblem(f"{shown}!{p}", where) for p in facts.problems]
    inv.problems += [ReadProblem(f"{shown}: {n}", where, note=True) for n in facts.notes]
    requires = facts.requires or ()
    inv.wheels.append(Wheel(parsed.filename, parsed.name, parsed.version, parsed.tags or facts.tags, requires, where))
    inv.packages.append(Package(name=parsed.name, version=parsed.version, specifier=f"=={parsed.version}", requires=requires,
                                role=Role.REQUIREMENT, location=where))
    for data in facts.binaries:
        binary = from_plain(Binary, {k: v for k, v in data.items() if k != "member"}, "binary")
        inv.binaries.append(replace(binary, distribution=parsed.name, location=Location(shown, member=data.get("member"))))
    return inv
