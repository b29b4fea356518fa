"""A layer's uncompressed bytes, decompressed in background threads while the caller walks the tar.

The decompressors release the GIL, so inflating overlaps the tar walk; a short queue bounds the memory in
flight, and each decompressor call is bounded to one chunk, so a bomb never holds more than the queue.
gzip goes through ISA-L where it loads (about twice zlib's speed: ``benchmarks/bench_deep.py``).
"""

from __future__ import annotations

import functools
import io
import queue
import threading
import zlib
from collections.abc import Iterable, Iterator
from types import ModuleType
from typing import Any, Protocol

CHUNK = 1 << 20  # at most this many bytes of output per decompressor call
SOURCE_READ = 256 << 10  # compressed bytes per read: ISA-L's peak memory grows with its input size (80 MB at 1 MiB)
QUEUE_CHUNKS = 8  # uncompressed chunks in flight between the worker and the reader (8 MiB at most)
MAX_READ = 64 << 20  # the most one read may ask for: tarfile reads a PAX/GNU header's data in one read of its claimed size

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


class Readable(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


class DecompressionError(Exception):
    """The compressed stream is damaged, truncated, of a refused kind or inflates past its limit."""


@functools.cache
def gzip_library() -> tuple[ModuleType, str, tuple[type[BaseException], ...]]:
    """(module with zlib's ``decompressobj``, its name, the errors it raises)."""
    try:
        from isal import isal_zlib
    except ImportError:  # isal is a dependency; zlib is the fallback where it cannot load
        return zlib, "zlib", (zlib.error,)
    return isal_zlib, "isal", (zlib.error, getattr(isal_zlib, "error", zlib.error))


class _End:
    """The worker's last item: the end of the stream, or the exception that ended it."""
    def __init__(self, failure: BaseException | None = None) -> None:
        self.failure = failure


class LayerStream:
    """The uncompressed bytes of one layer as a forward-only file; closing joins the workers, freeing the
    source. A worker's error is raised by the read that reaches it."""

    def __init__(self, source: Readable, head: bytes, *, limit: int | None = None) -> None:
        self._source = source
        self._head = head
        self._limit = limit
        if head[:2] == GZIP_MAGIC:
            self.compression, self.library = "gzip", gzip_library()[1]
        elif head[:4] == ZSTD_MAGIC:
            self.compression, self.library = "zstd", "zstandard"
        else:
            self.compression, self.library = "none", ""
        self._queue: queue.Queue[bytes | _End] = queue.Queue(QUEUE_CHUNKS)
        self._read_ahead: queue.Queue[bytes | _End] = queue.Queue(QUEUE_CHUNKS)
        self._stop = threading.Event()
        self._chunk = b""
        self._offset = 0  # read position inside self._chunk
        self._position = 0  # bytes handed out or skipped so far
        self._ended: _End | None = None
        # One worker reads (and so hashes) the source, one decompresses: hashing and inflating overlap too.
        self._workers = [threading.Thread(target=self._read_source, name="envcheck-layer-read", daemon=True),
                         threading.Thread(target=self._produce, name="envcheck-inflate", daemon=True)]
        for worker in self._workers:
            worker.start()

    def _produce(self) -> None:
        produced = 0
        try:
            for chunk in self._inflate():
                produced += len(chunk)
                if self._limit is not None and produced > self._limit:
                    raise DecompressionError(f"the layer inflates past {self._limit:,} bytes, more than its compressed "
                                             "size allows: a decompression bomb. If the layer is genuine, raise the "
                                             "limit with --max-expansion")
                if not self._put(chunk):
                    return
            self._put(_End())
        except BaseException as exc:  # handed to the reader, which raises it in its own thread
            self._put(_End(exc))

    def _put(self, item: bytes | _End, into: queue.Queue[bytes | _End] | None = None) -> bool:
        target = self._queue if into is None else into
        while not self._stop.is_set():
            try:
                target.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def _read_source(self) -> None:
        try:
            while not self._stop.is_set():
                data = self._source.read(SOURCE_READ)
                if not data:
                    break
                if not self._put(data, self._read_ahead):
                    return
            self._put(_End(), self._read_ahead)
        except BaseException as exc:  # the source's own error (a digest mismatch, a deadline): handed on as it is
            self._put(_End(exc), self._read_ahead)

    def _compressed(self) -> Iterator[bytes]:
        if self._head:
            yield self._head
        while not self._stop.is_set():
            try:
                item = self._read_ahead.get(timeout=0.05)
            except queue.Empty:
                continue
            if isinstance(item, _End):
                if item.failure is not None:
                    raise item.failure
                return
            yield item

    def _inflate(self) -> Iterator[bytes]:
        if self.compression == "gzip":
            yield from self._gunzip()
        elif self.compression == "zstd":
            yield from self._unzstd()
        else:
            yield from self._compressed()

    def _gunzip(self) -> Iterator[bytes]:
        module, _, errors = gzip_library()
        fresh_inflater = functools.partial(module.decompressobj, 16 + zlib.MAX_WBITS)
        inflater: Any = fresh_inflater()
        member = 1
        fresh = True  # the current inflater has seen no input yet
        trailing = False  # past the last gzip member: the rest is read (and hashed) but not inflated
        for data in self._compressed():
            while data and not trailing:
                if fresh and member > 1 and data[:1] != GZIP_MAGIC[:1]:
                    trailing = True  # padding after the last member, which gzip itself ignores
                    break
                fresh = False
                try:
                    out = inflater.decompress(data, CHUNK)
                except errors as exc:
                    raise DecompressionError(f"not valid gzip data (member {member}): {exc}") from None
                if out:
                    yield out
                if inflater.eof:  # another member may follow (multi-member gzip, as pigz and `cat` write)
                    data = inflater.unused_data
                    inflater, member, fresh = fresh_inflater(), member + 1, True
                    continue
                data = inflater.unconsumed_tail
                if not data and len(out) == CHUNK:
                    yield from self._held_output(inflater, member, errors)
                    if inflater.eof:
                        inflater, member, fresh = fresh_inflater(), member + 1, True
        if not fresh:
            raise DecompressionError(f"the gzip stream ends inside member {member}: the layer is truncated")

    @staticmethod
    def _held_output(inflater: Any, member: int, errors: tuple[type[BaseException], ...]) -> Iterator[bytes]:
        while True:
            try:
                out: bytes = inflater.decompress(b"", CHUNK)
            except errors as exc:
                raise DecompressionError(f"not valid gzip data (member {member}): {exc}") from None
            if out:
                yield out
            if len(out) < CHUNK or inflater.eof:
                return

    def _unzstd(self) -> Iterator[bytes]:
        import zstandard

        reader = zstandard.ZstdDecompressor().stream_reader(ChunkReader(self._compressed()), read_across_frames=True,  # type: ignore[arg-type]
                                                          read_size=SOURCE_READ, closefd=False)
        while True:
            try:
                out = reader.read(CHUNK)
            except zstandard.ZstdError as exc:
                raise DecompressionError(f"not valid zstd data: {exc}") from None
            if not out:
                return
            yield out

    def _next_chunk(self) -> bool:
        if self._ended is not None:
            return False
        item = self._queue.get()
        if isinstance(item, _End):
            self._ended = item
            if item.failure is not None:
                raise item.failure
            return False
        self._chunk, self._offset = item, 0
        return True

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True  # forward only: what a tar walk needs

    def tell(self) -> int:
        return self._position

    def read(self, size: int = -1) -> bytes:
        if size < 0 or size > MAX_READ:
            raise DecompressionError(f"a tar header asks for {size:,} bytes in one piece (at offset {self._position:,}); "
                                     "extended headers are a few KiB: the layer is damaged or hostile")
        start = self._offset
        if size <= len(self._chunk) - start:  # the common case (tar headers): inside the current chunk
            self._offset += size
            self._position += size
            return self._chunk[start : start + size]
        return b"".join(self._pieces(size))

    def copy_to(self, out: Any, size: int) -> int:
        """Write the next ``size`` bytes to ``out`` as memoryviews (no joined copy); bytes written."""
        done = 0
        for piece in self._pieces(size):
            out.write(piece)
            done += len(piece)
        return done

    def seek(self, position: int, whence: int = 0) -> int:
        target = position if whence == 0 else self._position + position
        if whence not in (0, 1) or target < self._position:
            raise OSError(f"a layer stream only seeks forward (at {self._position}, asked for {target})")
        for _ in self._pieces(target - self._position):
            pass
        return self._position

    def _pieces(self, size: int) -> Iterator[memoryview]:
        left = size
        while left > 0:
            if self._offset >= len(self._chunk) and not self._next_chunk():
                return
            take = min(left, len(self._chunk) - self._offset)
            piece = memoryview(self._chunk)[self._offset : self._offset + take]
            self._offset += take
            self._position += take
            left -= take
            yield piece

    def finish(self) -> int:
        """Inflate the rest unread, so that gzip's CRC and length are checked; the bytes skipped."""
        skipped = len(self._chunk) - self._offset
        self._chunk, self._offset = b"", 0
        while self._next_chunk():
            skipped += len(self._chunk)
            self._chunk, self._offset = b"", 0
        self._position += skipped
        return skipped

    def close(self) -> None:
        self._stop.set()
        for worker in self._workers:
            worker.join()

    def __enter__(self) -> LayerStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ChunkReader(io.RawIOBase):
    """A forward-only file over byte chunks; ``read(n)`` returns at most what is left of one chunk."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        super().__init__()
        self._chunks = iter(chunks)
        self._chunk = b""
        self._offset = 0

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        if size is None or size < 0:
            rest = [self._chunk[self._offset:], *self._chunks]
            self._chunk, self._offset = b"", 0
            return b"".join(rest)
        while self._offset >= len(self._chunk):
            chunk = next(self._chunks, None)
            if chunk is None:
                return b""
            self._chunk, self._offset = chunk, 0
        start, self._offset = self._offset, min(len(self._chunk), self._offset + size)
        return self._chunk[start:self._offset]

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)


def open_layer_stream(source: Readable, *, limit: int | None = None) -> LayerStream:
    """A :class:`LayerStream` over ``source``, its compression read from its first bytes."""
    head = b""
    while len(head) < 4:
        more = source.read(4 - len(head))
        if not more:
            break
        head += more
    if head[:3] == b"BZh" or head == b"\xfd7zX":
        raise DecompressionError("this layer uses bzip2/xz compression, which OCI images do not allow")
    if head == ZSTD_MAGIC:
        try:
            import zstandard  # noqa: F401
        except ImportError:
            raise DecompressionError("this layer is zstd-compressed and the zstandard package is not installed") from None
    return LayerStream(source, head, limit=limit)
