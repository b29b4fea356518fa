"""A content-addressed cache: manifests and configs by digest, deep-scan results by layer digest.

Entries are immutable, written atomically (concurrent writers are safe: the last rename wins) and
re-verified on read, so a damaged entry is a cache miss, never a wrong answer.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from envcheck.cache import FORMAT as SCANNER_FORMAT
from envcheck.cache import cache_dir, read_entry, touch, write_atomically
from envcheck.redaction import clean_value
from envcheck.services.registry.layers import LayerScan

MAX_BLOB_BYTES = 64 << 20  # the largest blob cached: an image config (client.MAX_CONFIG_BYTES)
DEEP_FORMAT = 4  # bump when what a layer scan records changes


def _deep_kind() -> str:
    """Also keyed by the binary scanner's format, whose output deep results hold."""
    return f"deep-v{DEEP_FORMAT}-b{SCANNER_FORMAT}"


class BlobCache:
    """Digest-keyed storage; every method is a no-op when the cache is disabled or unwritable."""

    def __init__(self, root: Path | None = None, enabled: bool = True) -> None:
        self.root = root or cache_dir()
        self.enabled = enabled
        self.hits = 0

    def _path(self, kind: str, digest: str) -> Path | None:
        algorithm, _, hexpart = digest.partition(":")
        if not self.enabled or algorithm not in ("sha256", "sha512") or not hexpart.isalnum():
            return None
        return self.root / kind / algorithm / hexpart

    def get_blob(self, digest: str) -> bytes | None:
        path = self._path("blobs", digest)
        if path is None:
            return None
        data = read_entry(path, MAX_BLOB_BYTES)
        algorithm, _, expected = digest.partition(":")
        if data is None or hashlib.new(algorithm, data).hexdigest() != expected:
            return None
        self.hits += 1
        touch(path)
        return data

    def put_blob(self, digest: str, data: bytes) -> None:
        path = self._path("blobs", digest)
        if path is not None:
            write_atomically(path, data)

    def get_deep(self, digest: str) -> dict[str, Any] | None:
        path = self._path(_deep_kind(), digest)
        if path is None:
            return None
        raw = read_entry(path)
        try:
            data = json.loads(raw) if raw is not None else None
        except (ValueError, RecursionError):
            return None
        if not isinstance(data, dict) or data.get("layer") != digest or not all(k in data for k in LayerScan.CACHED):
            return None  # damaged or foreign: a miss, never a wrong answer
        self.hits += 1
        touch(path)
        return data

    @contextlib.contextmanager
    def layer_lock(self, digest: str) -> Iterator[None]:
        """Held while one layer is scanned, so that a layer several tags share is read once (threads and
        processes wait here, then find the scan in the cache)."""
        entry = self._path("locks", digest)
        if entry is None:
            yield
            return
        # One of 256 lock files, by the digest's first byte, left in place: removing a lock file another
        # process holds open lets a third take a new one.
        path = entry.parent / entry.name[:2]
        with _thread_lock(str(path)), _file_lock(path):
            yield

    def put_deep(self, digest: str, result: dict[str, Any]) -> None:
        path = self._path(_deep_kind(), digest)
        if path is not None:
            # What a layer scan could not read may quote a URL with credentials: never on disk.
            result = {**result, "problems": clean_value(result.get("problems", []), escape=False)}
            write_atomically(path, json.dumps({**result, "layer": digest}, sort_keys=True).encode())


_THREAD_LOCKS: dict[str, threading.Lock] = {}
_THREAD_LOCKS_GUARD = threading.Lock()


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """An exclusive ``flock`` on ``path``; none where there can be none (then layers may be read twice)."""
    try:
        import fcntl

        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except (ImportError, OSError):
        yield
        return
    try:
        with contextlib.suppress(OSError):  # a file system without locks: go on unlocked
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def _thread_lock(key: str) -> threading.Lock:
    with _THREAD_LOCKS_GUARD:
        return _THREAD_LOCKS.setdefault(key, threading.Lock())
