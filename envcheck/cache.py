"""The on-disk cache of what envcheck read from binaries (one JSON file per scanned root, entries keyed by
path and stat) and of finished folder inventories (:class:`FolderSnapshot`). Writes are atomic renames (the
last writer wins); an unreadable or corrupt cache is a miss, never an error."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import itertools
import json
import operator
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from envcheck.config import env
from envcheck.errors import InputError
from envcheck.limits import read_regular
from envcheck.model import Binary, Package, ReadProblem, from_plain
from envcheck.redaction import clean_value

# Bump when what the readers produce changes, so old entries are not reused.
FORMAT = 7  # 7: Binary.modules (what each fatbin module holds, judged against the profile)
SCAN_CACHE_LIMIT = 512 << 20  # a per-file cache file bigger than this is not read (the torch environment's: 2 MB)


def cache_dir() -> Path:
    if explicit := env("ENVCHECK_CACHE_DIR"):
        return Path(explicit)
    return Path(env("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")) / "envcheck"


class ScanCache:
    """Cached values for the files of one scanned root, keyed by path and a change key."""

    def __init__(self, namespace: str, directory: Path | None = None) -> None:
        self.directory = directory or cache_dir()
        self.path = self.file_of(namespace, self.directory)
        self._old: dict[str, list[Any]] = {}
        self._new: dict[str, list[Any]] = {}
        self._dirty = False
        raw = read_entry(self.path, SCAN_CACHE_LIMIT)
        try:
            data = json.loads(raw) if raw is not None else None
        except (ValueError, RecursionError):
            data = None
        if isinstance(data, dict) and data.get("format") == FORMAT and isinstance(data.get("files"), dict):
            self._old = data["files"]
            touch(self.path)

    @staticmethod
    def file_of(namespace: str, directory: Path | None = None) -> Path:
        digest = hashlib.sha256(f"{FORMAT}:{namespace}".encode()).hexdigest()[:32]
        return (directory or cache_dir()) / f"scan-{digest}.json"

    @classmethod
    def mark_used(cls, namespace: str, directory: Path | None = None) -> None:
        """Mark the entries of ``namespace`` as used now, without reading them."""
        touch(cls.file_of(namespace, directory))

    def get(self, path: str, key: tuple[int, ...], decode: Callable[[Any], Any] | None = None) -> Any | None:
        """The value cached for ``path`` at ``key`` (through ``decode``), ``False`` for "nothing here"; None
        on a miss, also where the untrusted entry has the wrong shape."""
        entry = self._old.get(path)
        try:
            if entry is None or tuple(entry[0]) != key:
                return None
            value = False if entry[1] is None else decode(entry[1]) if decode is not None else entry[1]
        except (TypeError, ValueError, KeyError, IndexError, AttributeError, RecursionError):
            return None
        self._new[path] = entry
        return value

    def put(self, path: str, key: tuple[int, ...], value: Any) -> None:
        """Remember ``value`` (JSON data, or None for "nothing here") for ``path`` at ``key``."""
        self._new[path] = [list(key), value]
        self._dirty = True

    def save(self) -> None:
        """Write the entries used or added in this run."""
        if not self._dirty and len(self._new) == len(self._old):
            return
        data = json.dumps({"format": FORMAT, "files": self._new}, separators=(",", ":"))
        write_atomically(self.path, data.encode(), ".scan-")


def write_atomically(path: Path, data: bytes, prefix: str = ".tmp-") -> bool:
    """Write ``data`` to ``path`` through a temporary file renamed into place; False on an error."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)  # private: entries name the user's files
        import tempfile  # here: a run that writes nothing need not load it
        fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError:
        return False
    return True


SNAPSHOT_FORMAT = 2  # with FORMAT: what the folder readers produce
SNAPSHOT_LIMIT = 512 << 20  # no snapshot file is read past this (the torch environment's: about 1.5 MB)
SNAPSHOT_HEAD_LIMIT = 64 << 20  # its paths and keys, read before anything is stat'ed
# A path changed (its ctime) this close to the scan may change again within one timestamp (1-2 s on some
# file systems) and look unchanged: no snapshot then (git's "racy" entries). The mtime may be set anywhere.
RACY_NS = 2_000_000_000
_CHANGE_KEY = operator.attrgetter("st_ino", "st_dev", "st_size", "st_mtime_ns", "st_ctime_ns")
_KEY_LEN = 5
def change_key(st: os.stat_result) -> tuple[int, ...]:
    """(inode, device, size, mtime_ns, ctime_ns): the ctime changes with every write, entry added or removed,
    rename, chmod and chown, and utime cannot set it back."""
    key: tuple[int, ...] = _CHANGE_KEY(st)
    return key


class FolderSnapshot:
    """The finished inventory of one scanned folder and the change key of every folder it listed and file it
    read, so an unchanged folder is answered by stat-ing them only; any difference or doubt is a miss."""

    def __init__(self, namespace: str, directory: Path | None = None) -> None:
        self.directory = directory or cache_dir()
        digest = hashlib.sha256(f"{FORMAT}.{SNAPSHOT_FORMAT}:{namespace}".encode()).hexdigest()[:32]
        self.path = self.directory / f"folder-{digest}.json"

    def load(self, root: str) -> tuple[list[Package], list[Binary], list[ReadProblem]] | None:
        """The packages, binaries and problems of the last scan of ``root`` if nothing it read changed."""
        data = read_entry(self.path, SNAPSHOT_LIMIT)
        if data is None:
            return None
        try:
            head, names, flat, body = data.split(b"\n", 3)
            if len(head) + len(names) + len(flat) > SNAPSHOT_HEAD_LIMIT:
                return None
            header = json.loads(head)
            if not (isinstance(header, dict) and header.get("format") == FORMAT and header.get("snapshot") == SNAPSHOT_FORMAT
                    and header.get("root") == root):
                return None
            paths, files = json.loads(names), header.get("files")
            if not (type(paths) is list and paths and paths[0] == "" and type(files) is int and 0 <= files <= len(paths)
                    and set(map(type, paths)) <= {str}):
                return None
            # The keys as save() wrote them, compared as numbers (quicker than the current ones as text).
            if flat.count(b",") + 1 != _KEY_LEN * len(paths):
                return None  # refused before parsing: a hostile head would be millions of numbers
            stored = json.loads(flat)
            if type(stored) is not list or len(stored) != _KEY_LEN * len(paths):
                return None
            if not unchanged(root, paths, stored):
                return None
            # What the validated scan can justify: a bounded record per file read, METADATA's own size per package.
            metadata = sum(itertools.compress(stored[2::_KEY_LEN], map(operator.methodcaller("endswith", "/METADATA"), paths)))
            if len(body) > (1 << 20) + (16 << 10) * files + 2 * metadata:
                return None
            found = _inventory_from_json(json.loads(body))
        except (InputError, ValueError, TypeError, KeyError, IndexError, AttributeError, RecursionError, OverflowError, MemoryError):
            return None
        touch(self.path)
        return found

    def save(self, root: str, started_ns: int, folders: list[tuple[str, tuple[int, ...]]],
             files: list[tuple[str, tuple[int, ...]]], packages: list[Package], binaries: list[Binary],
             problems: list[ReadProblem]) -> bool:
        """Keep the inventory of ``root`` with the keys of the ``folders`` it listed (the root first) and the
        ``files`` it read; nothing (and no older snapshot) when a path changed within :data:`RACY_NS` of
        ``started_ns``, is not under ``root``, or the inventory would not read back the same."""
        if not folders or folders[0][0] != root:
            return self._drop()
        prefix = root if root.endswith(os.sep) else root + os.sep
        paths = [""]
        keys: list[int] = []
        recent = started_ns - RACY_NS
        for n, (path, key) in enumerate(itertools.chain(folders, files)):
            if n and not (path.startswith(prefix) and len(path) > len(prefix)):
                return self._drop()
            if len(key) != _KEY_LEN or key[4] >= recent:  # the ctime: any later change sets it to "now"
                return self._drop()
            if n:
                paths.append(path[len(prefix):])
            keys.extend(key)
        # what a cache holds is redacted like what is printed (a Requires-Dist URL with a password in it)
        kept = clean_value((packages, binaries, problems), escape=False)
        inventory = _inventory_to_json(*kept)
        body = json.dumps(inventory, separators=(",", ":"))
        try:
            if _inventory_from_json(json.loads(body)) != kept:
                return self._drop()
        except (InputError, ValueError, TypeError, KeyError):
            return self._drop()
        head = json.dumps({"format": FORMAT, "snapshot": SNAPSHOT_FORMAT, "root": root, "files": len(files)})
        data = "\n".join((head, json.dumps(paths, separators=(",", ":")), json.dumps(keys, separators=(",", ":")), body))
        return write_atomically(self.path, data.encode(), ".folder-")

    def _drop(self) -> bool:
        with contextlib.suppress(OSError):
            self.path.unlink()
        return False


def read_entry(path: Path, limit: int = SCAN_CACHE_LIMIT) -> bytes | None:
    """A cache entry's bytes, or None when it is missing, not regular, or over ``limit`` bytes."""
    try:
        return read_regular(path, limit)[0]
    except OSError:
        return None


def unchanged(root: str, paths: list[str], stored: list[int]) -> bool:
    """Whether the change keys of ``root`` (``paths[0]`` is "") and the paths under it are ``stored``."""
    if len(stored) != _KEY_LEN * len(paths):
        return False
    try:
        fd = os.open(root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    except (OSError, ValueError):
        return False
    try:
        if list(_CHANGE_KEY(os.fstat(fd))) != stored[:_KEY_LEN]:
            return False
        stat_at = functools.partial(os.stat, dir_fd=fd)
        return list(itertools.chain.from_iterable(map(_CHANGE_KEY, map(stat_at, paths[1:])))) == stored[_KEY_LEN:]
    except (OSError, ValueError):
        return False
    finally:
        os.close(fd)


def _inventory_to_json(packages: list[Package], binaries: list[Binary], problems: list[ReadProblem]) -> dict[str, Any]:
    return {"binaries": [b.to_json() for b in binaries], "packages": [p.to_json() for p in packages],
            "problems": [p.to_json() for p in problems]}


def _inventory_from_json(data: Any) -> tuple[list[Package], list[Binary], list[ReadProblem]]:
    return ([from_plain(Package, p, "package") for p in data["packages"]],
            [from_plain(Binary, b, "binary") for b in data["binaries"]],
            [from_plain(ReadProblem, p, "problem") for p in data["problems"]])


# What envcheck writes under the cache folder (the folder may be shared: nothing else is touched).
_ENTRIES = {
    "binary scans": ("scan-*.json", ".scan-*.tmp"),
    "folder inventories": ("folder-*.json", ".folder-*.tmp"),
    "registry manifests and configs": ("blobs",),
    "image layer scans": ("deep-v*",),
    "package file facts (--resolve)": ("files-v*",),
    "resolutions (--resolve)": ("resolutions-v*",),
}
# Empty lock files that let concurrent runs read a shared layer once (services/registry/cache.py): not
# counted, but removed by a full clean.
_LOCKS = "locks"


def touch(path: Path) -> None:
    """Mark a cache entry as used now (``envcheck cache clean --older-than`` keeps what is in use)."""
    with contextlib.suppress(OSError):
        os.utime(path)


def _entry_files(root: Path) -> dict[str, list[Path]]:
    found: dict[str, list[Path]] = {}
    for kind, patterns in _ENTRIES.items():
        files: list[Path] = []
        for pattern in patterns:
            for match in sorted(root.glob(pattern)):
                if match.is_symlink():
                    continue
                if match.is_dir():
                    files += [f for f in match.rglob("*") if f.is_file() and not f.is_symlink()]
                elif match.is_file():
                    files.append(match)
        found[kind] = files
    return found


def usage(root: Path | None = None) -> dict[str, tuple[int, int]]:
    """Files and bytes of each kind of cache entry."""
    result: dict[str, tuple[int, int]] = {}
    for kind, files in _entry_files(root or cache_dir()).items():
        sizes = [f.stat().st_size for f in files if f.exists()]
        result[kind] = (len(sizes), sum(sizes))
    return result


def clean(older_than_days: float | None = None, root: Path | None = None) -> tuple[int, int]:
    """Remove envcheck's own entries (all, or those unused for ``older_than_days``), never through a symlink;
    (files, bytes) removed."""
    root = root or cache_dir()
    cutoff = None if older_than_days is None else time.time() - older_than_days * 86400
    removed = freed = 0
    for files in _entry_files(root).values():
        for path in files:
            try:
                info = path.stat()
                if cutoff is not None and info.st_mtime >= cutoff:
                    continue
                path.unlink()
            except OSError:
                continue
            removed += 1
            freed += info.st_size
    for patterns in _ENTRIES.values():
        for pattern in patterns:
            for folder in root.glob(pattern):
                _remove_empty(folder)
    locks = root / _LOCKS
    if cutoff is None and locks.is_dir() and not locks.is_symlink():
        for lock in locks.rglob("*"):
            if lock.is_file() and not lock.is_symlink():
                with contextlib.suppress(OSError):
                    lock.unlink()
        _remove_empty(locks)
    return removed, freed


def _remove_empty(folder: Path) -> None:
    if not folder.is_dir() or folder.is_symlink():
        return
    for sub in sorted((d for d in folder.rglob("*") if d.is_dir()), key=lambda d: len(d.parts), reverse=True):
        with contextlib.suppress(OSError):
            sub.rmdir()
    with contextlib.suppress(OSError):
        folder.rmdir()
