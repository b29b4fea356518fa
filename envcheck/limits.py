"""Limits on what envcheck reads from untrusted inputs, and the defaults a user can raise.

Compressed inputs (wheels, image layers, ``docker save`` archives) are bounded by an expansion ratio:
the uncompressed bytes envcheck will produce from an input are at most ``--max-expansion`` times its
compressed size (never below :data:`EXPANSION_FLOOR`). Real wheels and layers expand 2-5x (24x for the
most compressible member of the torch wheel); a decompression bomb 1000x. docs/limits.md lists every
limit and how to raise it.
"""

from __future__ import annotations

import os
import stat

MAX_TEXT_BYTES = 16 * 1024 * 1024  # one text input or config file (--max-text-size, ENVCHECK_MAX_TEXT_SIZE)
DEFAULT_MAX_EXPANSION = 100.0  # uncompressed / compressed; real layers are 2-5x, a gzip bomb 1000x
EXPANSION_FLOOR = 16 << 20  # small inputs may expand more than the ratio: never limit below this


def expansion_limit(compressed_size: int | None, ratio: float) -> int | None:
    """The most uncompressed bytes an input of ``compressed_size`` may produce (None: no limit)."""
    if compressed_size is None or ratio <= 0:
        return None
    return max(int(compressed_size * ratio), EXPANSION_FLOOR)


class OverLimit(OSError):
    """A file larger than the limit it is read under."""


def read_regular(path: str | os.PathLike[str], limit: int) -> tuple[bytes, os.stat_result]:
    """A regular file's bytes (at most ``limit``) and its stat, taken before reading. Raises OSError for a
    missing file, one that is not regular (opened without blocking, so a FIFO never hangs the read), or one
    over ``limit`` bytes, also when it grows while it is read (:class:`OverLimit`)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError("not a regular file")
        if st.st_size > limit:
            raise OverLimit(f"over the limit of {limit} bytes")
        chunks: list[bytes] = []
        total = 0
        while total <= limit:
            chunk = os.read(fd, max(st.st_size + 1 - total, 1 << 16))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    finally:
        os.close(fd)
    if total > limit:
        raise OverLimit(f"over the limit of {limit} bytes")
    return chunks[0] if len(chunks) == 1 else b"".join(chunks), st
