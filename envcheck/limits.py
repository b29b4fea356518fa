"""Limits on what envcheck reads from untrusted inputs (docs/limits.md). Compressed inputs may expand at most
``--max-expansion`` times: real wheels and layers expand 2-5x (24x at most), a decompression bomb 1000x."""

from __future__ import annotations

import os
import stat
from typing import BinaryIO

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


def open_input(path: str | os.PathLike[str], streams: bool = True) -> BinaryIO:
    """``path`` opened for reading without blocking in open(): a FIFO with no writer reads as empty instead of
    hanging. A stream (a pipe, ``<(cmd)``, /dev/stdin) is read as the user's own; with ``streams=False``, or
    for a device, anything but a regular file is an OSError (a sniffed head or a scanned folder's file)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(21, "is a folder")
        if not (stat.S_ISREG(mode) or (streams and (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)))):
            raise OSError("not a regular file")
        os.set_blocking(fd, True)  # a writer that is there is read to its end, like cat
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str | os.PathLike[str], limit: int) -> tuple[bytes, os.stat_result]:
    """A regular file's bytes and its stat, taken before reading; OSError for a missing or irregular file
    (opened without blocking: a FIFO never hangs), :class:`OverLimit` over ``limit`` bytes (also growing)."""
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
