"""A content-addressed cache: manifests and configs by digest, deep-scan results by layer digest.

Lives under ``$ENVCHECK_CACHE_DIR`` or the user cache folder (``$XDG_CACHE_HOME/envcheck``,
``~/.cache/envcheck``). Entries are immutable (the key is the digest of the content), written
atomically, and re-verified on read, so a damaged entry is a cache miss, never a wrong answer.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from envcheck.cache import cache_dir, touch

DEEP_FORMAT = 3  # bump when what a layer scan records changes (2: path-traversal problems, expansion limit; 3: RECORD files)


def _deep_kind() -> str:
    """The cache folder for deep results: also keyed by the binary scanner's format, whose output they hold."""
    try:
        from envcheck.cache import FORMAT as scanner_format
    except ImportError:
        scanner_format = 0
    return f"deep-v{DEEP_FORMAT}-b{scanner_format}"


class BlobCache:
    """Digest-keyed storage; every method is a no-op when the cache is disabled or unwritable."""

    def __init__(self, root: Path | None = None, enabled: bool = True) -> None:
        self.root = root or cache_dir()
        self.enabled = enabled
        self.hits = 0

    def _path(self, kind: str, digest: str) -> Path | None:
        algorithm, _, hexpart = digest.partition(":")
        if algorithm not in ("sha256", "sha512") or not hexpart.isalnum():
            return None
        return self.root / kind / algorithm / hexpart

    def get_blob(self, digest: str) -> bytes | None:
        """The cached bytes of ``digest``, or None (also when the stored bytes no longer match)."""
        path = self._path("blobs", digest) if self.enabled else None
        if path is None:
            return None
        try:
            data = path.read_bytes()
        except OSError:
            return None
        algorithm, _, expected = digest.partition(":")
        if hashlib.new(algorithm, data).hexdigest() != expected:
            return None
        self.hits += 1
        touch(path)
        return data

    def put_blob(self, digest: str, data: bytes) -> None:
        path = self._path("blobs", digest) if self.enabled else None
        if path is not None:
            _write_atomic(path, data)

    def get_deep(self, digest: str) -> dict[str, Any] | None:
        """Cached deep-scan result of one layer, or None."""
        path = self._path(_deep_kind(), digest) if self.enabled else None
        if path is None:
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        keys = ("paths", "whiteouts", "opaque", "packages", "binaries", "problems", "members", "bytes")
        if not isinstance(data, dict) or data.get("layer") != digest or not all(k in data for k in keys):
            return None  # damaged or foreign: a miss, never a wrong answer
        self.hits += 1
        touch(path)
        return data

    def put_deep(self, digest: str, result: dict[str, Any]) -> None:
        path = self._path(_deep_kind(), digest) if self.enabled else None
        if path is not None:
            from envcheck.redaction import clean_value

            # What a layer scan could not read may quote a URL with credentials: never on disk (envcheck.redaction).
            result = {**result, "problems": clean_value(result.get("problems", []), escape=False)}
            _write_atomic(path, json.dumps({**result, "layer": digest}, sort_keys=True).encode())


def _write_atomic(path: Path, data: bytes) -> None:
    """Write via a temporary file and rename, so readers never see half an entry. Failures are ignored:
    a cache that cannot be written only makes the next run slower."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)  # private: entries describe the user's images
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        pass
