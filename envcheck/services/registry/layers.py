"""Streaming reads of image layers: walk the tar as it inflates, never extract, never buffer a layer.

Each layer's :class:`LayerScan` stands alone, so it is cached by digest and layers can be read in any order
(``docker save`` lists them out of order); :class:`FinalFiles` then lays them over each other in order.
"""

from __future__ import annotations

import email.parser
import posixpath
import re
import tarfile
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, Any, Protocol

from envcheck.errors import EnvcheckError

# the bounds of wheels, re-exported for the image source
from envcheck.limits import DEFAULT_MAX_EXPANSION as DEFAULT_MAX_EXPANSION
from envcheck.limits import expansion_limit as expansion_limit
from envcheck.services.registry.inflate import DecompressionError, LayerStream, Readable, open_layer_stream

WHITEOUT_PREFIX = ".wh."
OPAQUE_MARKER = ".wh..wh..opq"
MAX_METADATA_BYTES = 4 << 20
SPOOL_IN_MEMORY = 8 << 20  # an ELF member up to this size stays in memory; larger ones spill to a temp file
MAX_ELF_BYTES = 8 << 30

_SITE = re.compile(r"(?:^|/)(?:site|dist)-packages/")
_METADATA = re.compile(r"(?:^|/)(?:site|dist)-packages/([^/]+)\.(?:dist-info/METADATA|egg-info/PKG-INFO|egg-info)$")
# A wheel's RECORD: which files the distribution installed (read for its shared libraries: who owns a .so)
_RECORD = re.compile(r"^(?P<site>(?:.*/)?(?:site|dist)-packages)/[^/]+\.dist-info/RECORD$")
_SHARED_LIBRARY = re.compile(r"\.so(?:\.[0-9]+)*$")
# CUDA library folders: the toolkit tree and distro library folders that hold CUDA libraries.
_CUDA_DIR = re.compile(r"(?:^|/)(?:usr/local/cuda[^/]*|opt/nvidia|usr/lib/(?:x86_64|aarch64)-linux-gnu|usr/lib64|usr/local/nvidia)/")
_CUDA_LIB = re.compile(r"(?:^|/)lib(?:cuda|cudart|cublas|cublasLt|cudnn[^/]*|nccl|nvrtc|cufft|curand|cusparse|cusolver|nvjitlink|nvJitLink|cupti|nvToolsExt|cufile|nvshmem[^/]*)\.so")
_SHARED_OBJECT = re.compile(r"\.so(?:\.[0-9][^/]*)?$|\.so\.[^/]*$")


class BinaryReader(Protocol):
    def __call__(self, fileobj: IO[bytes], path: str, size: int, *, deep_fatbin: bool = ...) -> Any: ...


@dataclass
class LayerScan:
    paths: list[str] = field(default_factory=list)  # every candidate path in this layer (files and links)
    whiteouts: list[str] = field(default_factory=list)  # paths this layer deletes
    opaque: list[str] = field(default_factory=list)  # directories whose lower contents this layer hides
    packages: list[dict[str, Any]] = field(default_factory=list)  # {path, name, version, requires[, files]}
    binaries: list[dict[str, Any]] = field(default_factory=list)  # Binary.to_json() plus "path"
    problems: list[dict[str, Any]] = field(default_factory=list)  # {message, path}
    members: int = 0
    bytes: int = 0  # uncompressed bytes walked
    compression: str = ""  # how this read found the layer: "gzip (isal)", "zstd (zstandard)", "none" (not cached)
    seconds: float = 0.0  # how long this read took (not cached)

    CACHED = ("paths", "whiteouts", "opaque", "packages", "binaries", "problems", "members", "bytes")

    def to_json(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.CACHED}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LayerScan:
        return cls(**{k: data[k] for k in cls.CACHED})


class LayerError(EnvcheckError):
    """A layer that is not a readable (compressed) tar stream."""


def normalise(name: str) -> str:
    """``./usr/lib/`` -> ``usr/lib``."""
    name = posixpath.normpath("/" + name).lstrip("/")
    return "" if name in (".", "") else name


def is_elf_candidate(path: str, mode: int) -> bool:
    in_site = bool(_SITE.search(path))
    in_cuda = bool(_CUDA_DIR.search(path))
    if not (in_site or in_cuda):
        return False
    if _SHARED_OBJECT.search(path):
        return in_site or bool(_CUDA_LIB.search(path)) or "/cuda" in path
    # Executables: only inside the CUDA toolkit tree or site-packages (console tools rarely matter).
    return bool(mode & 0o111) and (in_site or "usr/local/cuda" in path) and "." not in posixpath.basename(path)


def _open_tar(stream: LayerStream) -> tarfile.TarFile:
    """Mode ``r:``, not ``r|``: skipping a member is then a forward seek, which drops its chunks unread."""
    return tarfile.open(fileobj=stream, mode="r:")  # type: ignore[call-overload,no-any-return]


def read_metadata(data: bytes) -> tuple[str, str, tuple[str, ...]] | None:
    message = email.parser.BytesHeaderParser().parsebytes(data)
    name = message.get("Name")
    if not name:
        return None
    requires = tuple(str(v).strip() for v in message.get_all("Requires-Dist") or [])
    return str(name).strip(), str(message.get("Version", "")).strip(), requires


_TAR_FAILURES = (tarfile.TarError, EOFError, OSError, ValueError, TypeError)


def _next_member(tar: tarfile.TarFile, done: int) -> tarfile.TarInfo | None:
    try:
        return tar.next()
    except DecompressionError as exc:
        raise LayerError(f"{exc} (after {done} members)") from None
    except _TAR_FAILURES as exc:
        raise LayerError(f"not a readable tar stream after {done} members: {exc or type(exc).__name__}") from None


def _member_bytes(handle: IO[bytes] | LayerStream, size: int, done: int) -> bytes:
    try:
        return handle.read(size)
    except DecompressionError as exc:
        raise LayerError(f"{exc} (inside member {done})") from None
    except _TAR_FAILURES as exc:
        raise LayerError(f"the tar stream broke inside member {done}: {exc or type(exc).__name__}") from None


def scan_layer(stream: Readable, read_binary: BinaryReader | None, *, deep_fatbin: bool = False,
               progress: Callable[[int], None] | None = None, max_bytes: int | None = None) -> LayerScan:
    """Walk one layer's tar stream once, reading only the members that matter; ``max_bytes`` bounds the
    uncompressed bytes its member headers may claim (:func:`expansion_limit`)."""
    start = time.perf_counter()
    try:
        layer = open_layer_stream(stream, limit=max_bytes)
    except DecompressionError as exc:
        raise LayerError(str(exc)) from None
    with layer:  # closing stops the decompression threads, whatever happens here
        scan = _walk(layer, read_binary, deep_fatbin, progress, max_bytes)
        try:  # the whole stream is checked (gzip's CRC), not only the part up to the tar's end
            layer.finish()
        except DecompressionError as exc:
            raise LayerError(f"{exc} (after the tar's end)") from None
    scan.compression = layer.compression + (f" ({layer.library})" if layer.library else "")
    scan.seconds = time.perf_counter() - start
    return scan


def _walk(layer: LayerStream, read_binary: BinaryReader | None, deep_fatbin: bool,
          progress: Callable[[int], None] | None, max_bytes: int | None) -> LayerScan:
    scan = LayerScan()
    records: dict[str, list[str]] = {}  # dist-info folder -> the shared libraries its RECORD lists
    seen_bytes = 0
    try:
        tar = _open_tar(layer)
    except DecompressionError as exc:
        raise LayerError(str(exc)) from None
    except _TAR_FAILURES as exc:
        raise LayerError(f"not a readable (gzip/zstd) tar stream: {exc or type(exc).__name__}") from None
    with tar:
        while True:
            member = _next_member(tar, scan.members)
            if member is None:
                break
            # TarFile remembers every member it has read; a layer can hold 100k+ files.
            tar.members.clear()  # type: ignore[attr-defined]
            scan.members += 1
            seen_bytes += member.size
            if max_bytes is not None and seen_bytes > max_bytes:
                raise LayerError(
                    f"member {scan.members} ({member.name[:200]}) takes the layer past {max_bytes:,} uncompressed bytes, "
                    "more than its compressed size allows: a decompression bomb or a lying tar header. If the layer "
                    "is genuine (huge sparse files), raise the limit with --max-expansion")
            if progress is not None:
                progress(seen_bytes)
            relative = posixpath.normpath(member.name.lstrip("/")) if member.name.strip("/") else "."
            if relative == ".." or relative.startswith("../"):
                scan.problems.append({"path": member.name, "message": f"layer member {member.name!r} escapes the image "
                                      "root (path traversal); a runtime that extracted it would write outside the container"})
                continue
            path = normalise(member.name)
            base = posixpath.basename(path)
            parent = posixpath.dirname(path)
            if base == OPAQUE_MARKER:
                scan.opaque.append(parent)
                continue
            if base.startswith(WHITEOUT_PREFIX):
                scan.whiteouts.append(posixpath.join(parent, base[len(WHITEOUT_PREFIX) :]))
                continue
            if member.isdir():
                continue
            record = _RECORD.match(path)
            if record and member.isfile() and member.size <= MAX_METADATA_BYTES:
                _read_record(tar, member, path, record.group("site"), records)
                continue
            metadata = _METADATA.search(path)
            if metadata:
                scan.paths.append(path)
                if member.isfile() and member.size <= MAX_METADATA_BYTES:
                    _read_package(tar, member, path, scan)
                continue
            if not is_elf_candidate(path, member.mode):
                continue
            scan.paths.append(path)
            if member.islnk():
                # A hard link shares its target's content, which this layer already carried.
                target = normalise(member.linkname)
                for found in list(scan.binaries):
                    if found["path"] == target:
                        scan.binaries.append({**found, "path": path})
                continue
            if not member.isfile() or member.size < 64 or member.size > MAX_ELF_BYTES or read_binary is None:
                continue
            _read_binary(tar, layer, member, path, scan, read_binary, deep_fatbin)
    scan.bytes = seen_bytes
    for package in scan.packages:
        files = records.get(posixpath.dirname(package["path"]))
        if files:
            package["files"] = files
    return scan


def _read_record(tar: tarfile.TarFile, member: tarfile.TarInfo, path: str, site: str, records: dict[str, list[str]]) -> None:
    """The shared libraries a RECORD lists, as image paths."""
    handle = tar.extractfile(member)
    if handle is None:
        return
    text = _member_bytes(handle, MAX_METADATA_BYTES, 0).decode("utf-8", "replace")
    files = []
    for line in text.splitlines():
        entry = line.split(",", 1)[0].strip().strip('"')
        if entry and _SHARED_LIBRARY.search(entry) and not entry.startswith("/"):
            files.append(posixpath.normpath(posixpath.join(site, entry)))
    records[posixpath.dirname(path)] = files


def _read_package(tar: tarfile.TarFile, member: tarfile.TarInfo, path: str, scan: LayerScan) -> None:
    handle = tar.extractfile(member)
    if handle is None:
        return
    found = read_metadata(_member_bytes(handle, MAX_METADATA_BYTES, 0))
    if found is None:
        scan.problems.append({"path": path, "message": "METADATA has no Name field"})
        return
    name, version, requires = found
    scan.packages.append({"path": path, "name": name, "version": version, "requires": list(requires)})


def _read_binary(tar: tarfile.TarFile, layer: LayerStream, member: tarfile.TarInfo, path: str, scan: LayerScan,
                 read_binary: BinaryReader, deep_fatbin: bool) -> None:
    handle: IO[bytes] | LayerStream | None
    if member.sparse is None:  # the common case: the member's bytes are the stream's next bytes
        layer.seek(member.offset_data)
        handle = layer
    else:
        handle = tar.extractfile(member)
        if handle is None:
            return
    magic = _member_bytes(handle, 4, 0)
    if magic != b"\x7fELF":
        return
    with tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY) as spool:
        spool.write(magic)
        _copy_member(handle, spool, member.size - len(magic), path)
        spool.seek(0)
        try:
            binary = read_binary(_SeekOnly(spool), path, member.size, deep_fatbin=deep_fatbin)  # type: ignore[arg-type]
        except EnvcheckError as exc:
            offset = getattr(exc, "offset", None)
            scan.problems.append({"path": path, "message": exc.message, **({"offset": offset} if offset is not None else {})})
            return
        except Exception as exc:  # the scanner's MalformedBinary and friends: a problem, not a crash
            if type(exc).__name__ not in ("MalformedBinary", "ELFError"):
                raise
            scan.problems.append({"path": path, "message": f"unreadable ELF file: {exc}"})
            return
    if binary is None:
        return
    data = binary.to_json() if hasattr(binary, "to_json") else dict(binary)
    data.pop("location", None)
    scan.binaries.append({**data, "path": path})


def _copy_member(handle: IO[bytes] | LayerStream, spool: IO[bytes], size: int, path: str) -> None:
    try:
        if isinstance(handle, LayerStream):
            copied = handle.copy_to(spool, size)
        else:
            copied = 0
            while chunk := handle.read(1 << 20):
                spool.write(chunk)
                copied += len(chunk)
    except DecompressionError as exc:
        raise LayerError(f"{exc} (inside {path[:200]})") from None
    except _TAR_FAILURES as exc:
        raise LayerError(f"the tar stream broke inside {path[:200]}: {exc or type(exc).__name__}") from None
    if copied < size:
        raise LayerError(f"the tar stream ends inside {path[:200]}: the layer is truncated")


class _SeekOnly:
    """Hides ``fileno()``: asking a SpooledTemporaryFile for it would move an in-memory spool to disk."""

    def __init__(self, spool: IO[bytes]) -> None:
        self._spool = spool

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._spool.seek(offset, whence)

    def tell(self) -> int:
        return self._spool.tell()

    def read(self, size: int = -1) -> bytes:
        return self._spool.read(size)


def _deleted(path: str, folders: set[str]) -> bool:
    """Whether ``path`` is one of ``folders`` or under one ("" is the root): a set lookup per ancestor."""
    if "" in folders or path in folders:
        return True
    end = path.rfind("/")
    while end > 0:
        if path[:end] in folders:
            return True
        end = path.rfind("/", 0, end)
    return False


@dataclass
class FinalFiles:
    packages: dict[str, dict[str, Any]] = field(default_factory=dict)  # METADATA path -> package facts
    binaries: dict[str, dict[str, Any]] = field(default_factory=dict)  # ELF path -> binary facts
    problems: list[dict[str, Any]] = field(default_factory=list)

    def apply(self, layer: LayerScan, label: str) -> None:
        whiteouts = set(layer.whiteouts)
        removed = whiteouts | set(layer.opaque)
        for table in (self.packages, self.binaries):
            doomed = [p for p in table if _deleted(p, removed)] if removed else []
            for path in set(layer.paths):
                if path in table:
                    doomed.append(path)
            for path in doomed:
                table.pop(path, None)
        if whiteouts:
            self.problems = [p for p in self.problems if not _deleted(p["path"], whiteouts)]
        for package in layer.packages:
            self.packages[package["path"]] = {**package, "layer": label}
        for binary in layer.binaries:
            self.binaries[binary["path"]] = {**binary, "layer": label}
        self.problems.extend({**p, "layer": label} for p in layer.problems)


def merge_layers(layers: list[tuple[str, LayerScan]]) -> FinalFiles:
    final = FinalFiles()
    for label, scan in layers:
        final.apply(scan, label)
    return final
