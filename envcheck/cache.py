"""A small on-disk cache of what envcheck read from binaries, so an unchanged environment rescans fast.

One JSON file per scanned root (a folder or a wheel), under ``$ENVCHECK_CACHE_DIR`` or the user cache
folder (``$XDG_CACHE_HOME/envcheck``, default ``~/.cache/envcheck``). Entries are keyed by the file's
path and (size, mtime_ns, inode): any change to a file makes its entry miss. Writes go to a temporary
file that is renamed into place, so concurrent runs never see a torn file (the last writer wins, and a
lost write only costs a rescan). An unreadable or corrupt cache is ignored, never an error.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from envcheck.config import env
from envcheck.model import Binary, Location

# Bump when what the readers produce changes, so old entries are not reused.
FORMAT = 6


def cache_dir() -> Path:
    """Where envcheck keeps its cache files."""
    explicit = env("ENVCHECK_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = env("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "envcheck"


class ScanCache:
    """Cached values for the files of one scanned root, keyed by path and a change key."""

    def __init__(self, namespace: str, directory: Path | None = None) -> None:
        self.directory = directory or cache_dir()
        digest = hashlib.sha256(f"{FORMAT}:{namespace}".encode()).hexdigest()[:32]
        self.path = self.directory / f"scan-{digest}.json"
        self._old: dict[str, list[Any]] = {}
        self._new: dict[str, list[Any]] = {}
        self._dirty = False
        try:
            with open(self.path, encoding="utf-8") as fh:
                data = json.load(fh)
            if isinstance(data, dict) and data.get("format") == FORMAT and isinstance(data.get("files"), dict):
                self._old = data["files"]
                touch(self.path)
        except (OSError, ValueError):
            self._old = {}

    def get(self, path: str, key: tuple[int, ...]) -> Any | None:
        """The cached value for ``path`` if its change key matches; None on a miss.

        A cached "nothing here" (a non-ELF file) is returned as ``False``.
        """
        entry = self._old.get(path)
        if entry is None or tuple(entry[0]) != key:
            return None
        self._new[path] = entry
        return False if entry[1] is None else entry[1]

    def put(self, path: str, key: tuple[int, ...], value: Any) -> None:
        """Remember ``value`` (JSON data, or None for "nothing here") for ``path`` at ``key``."""
        self._new[path] = [list(key), value]
        self._dirty = True

    def save(self) -> None:
        """Write the entries used or added in this run (atomically; errors are ignored)."""
        if not self._dirty and len(self._new) == len(self._old):
            return
        try:
            self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)  # private: entries name the user's files
            fd, tmp = tempfile.mkstemp(prefix=".scan-", suffix=".tmp", dir=self.directory)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    json.dump({"format": FORMAT, "files": self._new}, fh, separators=(",", ":"))
                os.replace(tmp, self.path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
        except OSError:
            pass


def binary_from_json(data: dict[str, Any]) -> Binary:
    """A :class:`Binary` from its ``to_json()`` form (what the cache stores)."""
    values = dict(data)
    for name in ("needed", "runpath", "sass", "ptx", "lto", "ptx_isa", "sections"):
        values[name] = tuple(values.get(name, ()))
    loc = values.get("location")
    if isinstance(loc, dict):
        values["location"] = Location(**loc)
    return Binary(**values)


# ------------------------------------------------------------------------------ `envcheck cache`

# What envcheck writes under the cache folder (the folder may be shared: nothing else is touched).
_ENTRIES = {
    "binary scans": ("scan-*.json", ".scan-*.tmp"),
    "registry manifests and configs": ("blobs",),
    "image layer scans": ("deep-v*",),
    "package file facts (--resolve)": ("files-v*",),
    "resolutions (--resolve)": ("resolutions-v*",),
}


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
    """Remove cache entries (all, or those not used for ``older_than_days``); (files, bytes) removed.

    Only envcheck's own entries are removed, and emptied folders of them; symlinks are never followed.
    """
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
                if folder.is_dir() and not folder.is_symlink():
                    for sub in sorted((d for d in folder.rglob("*") if d.is_dir()), key=lambda d: len(d.parts), reverse=True):
                        with contextlib.suppress(OSError):
                            sub.rmdir()
                    with contextlib.suppress(OSError):
                        folder.rmdir()
    return removed, freed
