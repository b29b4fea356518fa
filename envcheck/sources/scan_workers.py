"""Worker processes for a folder scan (Linux): listing folders and reading ELF headers on every core.

A folder scan of a CUDA environment is Python work per folder and per file (7,800 folders, 870 ELF files
on the H200 machine's torch venv), so threads do not help; forked processes do. :class:`WorkerPool`
forks its workers once; the main process hands each one job at a time through a pipe (most important
first) and takes the pickled result back through another, so a slow job never holds up the others; only a
short job (a folder listing) may wait in the pipe of a worker running another short job (:data:`QUEUED`).

Rules that keep this safe:

- Workers are only forked while no other thread runs (:func:`can_fork`): forking a process with threads
  can copy a lock some thread held, and the child would wait for it forever.
- A job whose worker dies (killed by a signal, out of memory) or raises is run again in the main process,
  so no file is lost and an exception surfaces exactly as in a serial scan. A worker never returns into
  the caller's code: it leaves with ``os._exit``.
- Results are the readers' own records (``Binary``, ``ReadProblem``, folder listings), whose size the
  readers already bound; they are pickled by our code in the worker, never read from the scanned files.
- Workers leave when their job pipe closes, also when the main process is killed.

The number of workers: ``ENVCHECK_SCAN_WORKERS`` (``1`` scans in the main process only), else the cores
this process may run on (``os.sched_getaffinity``), at most :data:`MAX_WORKERS`, and none on a machine of
fewer than :data:`MIN_CORES` cores (docs/limits.md).
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import os
import pickle
import select
import stat
import struct
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any, NamedTuple

from envcheck.config import can_fork, env_processes, usable_cores
from envcheck.inspect import fatbin
from envcheck.inspect.elf import FileSource
from envcheck.model import ReadProblem
from envcheck.sources import ReadOptions
from envcheck.sources.binaries import (
    BinaryReading,
    DeepSearch,
    DistInfoReading,
    Distribution,
    read_dist_info_ahead,
    scan_file,
)
from envcheck.sources.walk import FolderFacts, folder_facts

__all__ = ["WorkerPool", "can_fork", "worker_count"]  # can_fork: config.can_fork, named here for the scan

MAX_WORKERS = 16  # more did not help on the 16-core H200 machine: the main process merges every result
MIN_CORES = 4  # fewer cores: no workers by default (on 2 cores they made a torch environment's scan no faster)
_FRAME = struct.Struct("<I")
QUEUED = 2  # jobs a worker may hold: the one it runs and, when both are short, one waiting in its pipe
_READ = 1 << 20


def worker_count(requested: int | None = None) -> int:
    """How many worker processes a folder scan may use: ``requested`` (a test, an option), else
    ``ENVCHECK_SCAN_WORKERS``, else the cores this process may run on, at most :data:`MAX_WORKERS` (none
    below :data:`MIN_CORES` cores). 1 means no workers (everything in the main process)."""
    if requested is None:
        requested = env_processes("ENVCHECK_SCAN_WORKERS")
    if requested is not None:
        return max(1, min(requested, 256))
    cores = usable_cores()
    return min(cores, MAX_WORKERS) if cores >= MIN_CORES else 1


class WorkerPool:
    """Up to ``count`` forked processes running ``work(job)`` for the jobs given to :meth:`submit` (each
    forked when a job waits for it).

    ``work`` must be a function of the job alone (it is inherited by the fork, never pickled); jobs and
    results are pickled. Every submitted job yields exactly one ``(job, result)`` from :meth:`results`,
    in the order they finish; jobs of a worker that died or raised are run in this process
    (:attr:`rerun` counts them).
    """

    def __init__(self, count: int, work: Callable[[Any], Any]) -> None:
        self.work = work
        self.rerun = 0
        self.pids: list[int] = []
        self._jobs_fd: dict[int, int] = {}  # worker index -> write end of its job pipe
        self._results_fd: dict[int, int] = {}  # read end of its result pipe -> worker index
        self._busy: dict[int, list[tuple[int, Any, bool]]] = {}  # worker index -> (sequence, job, short) it holds
        self._buffers: dict[int, bytearray] = {}
        self._queue: list[tuple[float, int, Any, bool]] = []  # (priority, sequence, job, short)
        self._lost: list[Any] = []  # jobs of workers that died, run in this process
        self._sequence = 0
        self._poll = select.poll()
        self._count = count  # forked when there is a job for them: the first starts at once

    def _fork(self, index: int) -> None:
        jobs_read, jobs_write = os.pipe()
        results_read, results_write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the worker: never returns into the caller
            code = 1
            try:
                inherited = [*self._jobs_fd.values(), *self._results_fd, jobs_write, results_read]
                for fd in inherited:
                    os.close(fd)
                _serve(jobs_read, results_write, self.work)
                code = 0
            finally:
                os._exit(code)
        os.close(jobs_read)
        os.close(results_write)
        self.pids.append(pid)
        self._jobs_fd[index] = jobs_write
        self._results_fd[results_read] = index
        self._busy[index] = []
        self._buffers[results_read] = bytearray()
        self._poll.register(results_read, select.POLLIN)

    def submit(self, job: Any, priority: float = 0.0, short: bool = False) -> None:
        """Queue ``job``; lower ``priority`` values are handed out first (then in submission order). A
        ``short`` job may also be handed to a worker that is running a short job (it waits in the worker's
        pipe, :data:`QUEUED`), so that the worker goes on without a round trip through this process."""
        self._sequence += 1
        heapq.heappush(self._queue, (priority, self._sequence, job, short))

    def results(self) -> Iterator[tuple[Any, Any]]:
        """``(job, result)`` for every submitted job (also those submitted while iterating), as they finish."""
        while True:
            while self._lost:  # not given to another worker: the file that killed one could kill the next
                job = self._lost.pop()
                self.rerun += 1
                yield job, self.work(job)
            self._hand_out()
            if not any(self._busy.values()):
                if not self._queue:
                    return
                if not self._jobs_fd and len(self.pids) >= self._count:  # every worker is gone: the rest runs here
                    job = heapq.heappop(self._queue)[2]
                    self.rerun += 1
                    yield job, self.work(job)
                    continue
            for fd, _event in self._poll.poll():
                yield from self._receive(fd)

    def _hand_out(self) -> None:
        idle = [index for index, held in self._busy.items() if not held]
        while self._queue and (idle or len(self.pids) < self._count):
            if not idle:
                idle.append(len(self.pids))
                self._fork(len(self.pids))
            entry = heapq.heappop(self._queue)
            self._send(idle.pop(), entry, pickle.dumps(entry[2], pickle.HIGHEST_PROTOCOL))
        # Every worker is busy: the next short jobs wait in the pipes of workers running a short job. Only
        # a frame of at most PIPE_BUF bytes: it fits in the pipe once the worker took its current job out,
        # so this write never waits on a worker that is itself waiting to write its result here.
        for index, held in self._busy.items():
            if not self._queue or not self._queue[0][3]:
                return
            if 0 < len(held) < QUEUED and all(short for _seq, _job, short in held):
                payload = pickle.dumps(self._queue[0][2], pickle.HIGHEST_PROTOCOL)
                if len(payload) + _FRAME.size > select.PIPE_BUF:
                    return
                self._send(index, heapq.heappop(self._queue), payload)

    def _send(self, index: int, entry: tuple[float, int, Any, bool], payload: bytes) -> None:
        _priority, seq, job, short = entry
        self._busy[index].append((seq, job, short))
        with contextlib.suppress(OSError):  # the worker is gone: its end of file gives the job back
            _write_all(self._jobs_fd[index], _FRAME.pack(len(payload)) + payload)

    def _receive(self, fd: int) -> Iterator[tuple[Any, Any]]:
        index = self._results_fd[fd]
        try:
            data = os.read(fd, _READ)
        except OSError:
            data = b""
        buffer = self._buffers[fd]
        if not data:  # the worker exited (or was killed): what it held runs here
            self._drop(fd, index)
            return
        buffer += data
        while len(buffer) >= 4:
            (size,) = _FRAME.unpack_from(buffer, 0)
            if len(buffer) < 4 + size:
                break
            ok, result = pickle.loads(memoryview(buffer)[4 : 4 + size])
            del buffer[: 4 + size]
            held = self._busy[index]
            if not held:
                continue
            job = held.pop(0)[1]  # a worker runs its jobs in the order they were sent
            if not ok:  # it raised there: run it here, where the exception reaches the caller as before
                self.rerun += 1
                result = self.work(job)
            yield job, result

    def _drop(self, fd: int, index: int) -> None:
        held = self._busy.pop(index, [])
        self._poll.unregister(fd)
        os.close(fd)
        del self._results_fd[fd]
        del self._buffers[fd]
        jobs = self._jobs_fd.pop(index)
        os.close(jobs)
        self._lost.extend(job for _seq, job, _short in reversed(held))  # popped from the end: in order

    def close(self) -> None:
        """Stop the workers (their job pipes close) and wait for them."""
        for fd in self._jobs_fd.values():
            os.close(fd)
        for fd in self._results_fd:
            self._poll.unregister(fd)
            os.close(fd)
        self._jobs_fd.clear()
        self._results_fd.clear()
        self._busy.clear()
        for pid in self.pids:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _serve(jobs_fd: int, results_fd: int, work: Callable[[Any], Any]) -> None:
    """A worker's loop: read a job, run it, write ``(ok, result)`` back; until the job pipe closes."""
    while True:
        head = _read_exact(jobs_fd, 4)
        if len(head) < 4:
            return
        (size,) = _FRAME.unpack(head)
        job = pickle.loads(_read_exact(jobs_fd, size))
        try:
            reply = pickle.dumps((True, work(job)), pickle.HIGHEST_PROTOCOL)
        except Exception:
            reply = pickle.dumps((False, None), pickle.HIGHEST_PROTOCOL)
        _write_all(results_fd, _FRAME.pack(len(reply)) + reply)


def _read_exact(fd: int, size: int) -> bytes:
    parts = []
    while size:
        chunk = os.read(fd, size)
        if not chunk:
            break
        parts.append(chunk)
        size -= len(chunk)
    return b"".join(parts)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


# ------------------------------------------------------------------------------ the folder scan's jobs

# Worker processes (envcheck/sources/scan_workers.py): the main process lists the first FIRST_FOLDERS
# folders itself (a small tree never starts a worker); then each job lists up to JOB_FOLDERS folders and
# reads the candidate files in them below INLINE_BYTES; bigger files are jobs of their own, the biggest
# first. A cached scan hands its unread files to workers when there are POOL_FILES of them.
FIRST_FOLDERS = 48
JOB_FOLDERS = 64
INLINE_BYTES = 4 << 20
POOL_FILES = 24
# A data section of SPLIT_BYTES or more that a worker's read must search for fatbins (cuFFT's 265 MiB .ldata,
# the longest job of a CUDA environment's scan) is searched in pieces of about PIECE_BYTES, each a job of its
# own, handed out before any file (ReadOptions.split_bytes / piece_bytes change both: tests).
SPLIT_BYTES = 32 << 20
PIECE_BYTES = 16 << 20
# The order jobs are handed out in: the pieces of a section searched in pieces; the files of EARLY_BYTES or
# more, the biggest first (their reads are the longest: started during the listing, they end with it); the
# walk jobs, the shallowest first (a folder's depth times 4,096); every other file, the biggest first.
EARLY_BYTES = 32 << 20
_PIECE_PRIORITY = -float(1 << 66)
_EARLY_PRIORITY = -float(1 << 65)  # minus the file's size
_WALK_PRIORITY = -float(1 << 63)  # plus its depth times 4,096

class _Explored(NamedTuple):
    """What one walk job found: folders' facts (path, (st_dev, st_ino), facts), the folders it left for
    other jobs, readings of the small candidate files, the big ones left to read, and the ``*.dist-info``
    folders it read (path, what :func:`_read_dist_info_ahead` returned)."""

    folders: list[tuple[str, tuple[int, int], FolderFacts]]
    left: list[tuple[str, tuple[int, int]]]
    readings: list[tuple[str, BinaryReading]]
    big: list[tuple[str, os.stat_result]]
    dists: list[tuple[str, tuple[Distribution | None, list[ReadProblem]]]]


def _explore(starts: list[tuple[str, tuple[int, int]]], root_real: str, folders: int, deep: bool,
             inline: int = INLINE_BYTES, dists: bool = True) -> _Explored:
    """List up to ``folders`` folders depth first from ``starts`` (skipping folders already seen here),
    reading the candidate files below ``inline`` bytes on the way; the others are left in ``big``. With
    ``dists``, a ``*.dist-info`` folder with a METADATA file is read too (its RECORD narrowed only by name: which of
    its paths matter is known only once the whole tree is walked)."""
    out = _Explored([], [], [], [], [])
    stack = list(reversed(starts))
    seen = {key for _path, key in starts}
    while stack and len(out.folders) < folders:
        folder, key = stack.pop()
        facts = folder_facts(folder, root_real)
        out.folders.append((folder, key, facts))
        _probs, x_names, f_names, f_stats, _l, d_names, d_keys = facts
        if x_names is None:
            continue
        prefix = folder if folder.endswith(os.sep) else folder + os.sep
        for name, st in zip(f_names, f_stats, strict=True):
            if isinstance(st, str) or not stat.S_ISREG(st.st_mode):
                continue
            if name == "METADATA" and folder.endswith(".dist-info"):
                if dists:
                    ahead = read_dist_info_ahead(folder)
                    if ahead is not None:
                        out.dists.append((folder, ahead))
                continue
            path = prefix + name
            if st.st_size >= inline:
                out.big.append((path, st))
            else:
                out.readings.append((path, scan_file(path, st, deep)))
        for name, sub in zip(reversed(d_names), reversed(d_keys), strict=True):
            if sub is not None and sub not in seen:
                seen.add(sub)
                stack.append((prefix + name, sub))
    out.left.extend(reversed(stack))
    return out


class _BigSections(NamedTuple):
    """A worker's read of a file that has data sections to search of :data:`SPLIT_BYTES` or more (see
    :class:`FileReads`): each as (name, offset, size)."""

    sections: tuple[tuple[str, int, int], ...]


def _scan_job(deep: bool, split_at: int | None, job: tuple[Any, ...]) -> object:
    """A worker's job: ``("read", path, stat)`` (a :class:`BinaryReading`, or :class:`_BigSections` when the
    file has sections of ``split_at`` bytes or more to search), ``("piece", ticket, path, section, offset,
    size, index, start, stop, records)`` (:func:`fatbin.scan_piece`; None when the file cannot be read) or
    ``("walk", starts, root_real)``."""
    if job[0] == "read":
        search = DeepSearch(split_at=split_at)
        reading = scan_file(job[1], job[2], deep, search)
        if search.later:
            return _BigSections(tuple((s.name, s.offset, s.size) for s in search.later))
        return reading
    if job[0] == "piece":
        _kind, _ticket, path, name, offset, size, _index, start, stop, records = job
        try:
            with open(path, "rb", buffering=0) as fh:
                return fatbin.scan_piece(FileSource(fh, os.fstat(fh.fileno()).st_size), start, stop, offset + size, name,
                                         records)
        except OSError:
            return None
    return _explore(job[1], job[2], JOB_FOLDERS, deep)


class FileReads:
    """A folder scan's :class:`scan_workers.WorkerPool`, whose reads of big files may come back unfinished:
    the fatbin search of a data section of ``split_at`` bytes or more (cuFFT's 265 MiB ``.ldata``, 24,000
    modules: alone it would be the last job to end) is cut into pieces of about ``piece_bytes``, each a job
    of its own handed out before any file, and the file is read again here, with the pieces' searches, once
    they are all back (:func:`fatbin.search` joins them into the answer of a plain search). The same jobs
    and results otherwise (:meth:`results` yields the read job with its finished reading)."""

    def __init__(self, workers: int, deep: bool, split: tuple[int, int]) -> None:
        from envcheck.sources import scan_workers  # not loaded by a folder answered from its snapshot

        self.pool = scan_workers.WorkerPool(workers, partial(_scan_job, deep, split[0]))
        self.deep = deep
        self.piece_bytes = split[1]
        self._tickets = itertools.count()
        # by ticket, a file being searched in pieces: its read job, the pieces by section (None until back),
        # how many are still out
        self._waiting: dict[int, tuple[tuple[Any, ...], dict[tuple[str, int, int], list[fatbin.Piece | None]], list[int]]] = {}

    @property
    def pids(self) -> list[int]:
        return self.pool.pids

    @property
    def rerun(self) -> int:
        return self.pool.rerun

    def submit(self, job: Any, priority: float = 0.0, short: bool = False) -> None:
        """Queue ``job`` (see :meth:`scan_workers.WorkerPool.submit`)."""
        self.pool.submit(job, priority, short)

    def results(self) -> Iterator[tuple[Any, Any]]:
        """``(job, result)`` for every submitted job as it finishes, a read with its finished reading."""
        for job, result in self.pool.results():
            if job[0] == "read" and isinstance(result, _BigSections):
                self._cut(job, result)
            elif job[0] == "piece":
                done = self._piece_back(job, result)
                if done is not None:
                    yield done
            else:
                yield job, result

    def _cut(self, job: tuple[Any, ...], big: _BigSections) -> None:
        """Hand out the pieces of ``big``'s sections (:func:`_piece_jobs`)."""
        ticket = next(self._tickets)
        pieces: dict[tuple[str, int, int], list[fatbin.Piece | None]] = {}
        for piece in _piece_jobs(ticket, job[1], big.sections, self.piece_bytes):
            pieces.setdefault(piece[3:6], []).append(None)
            self.pool.submit(piece, _PIECE_PRIORITY)
        self._waiting[ticket] = (job, pieces, [sum(len(v) for v in pieces.values())])

    def _piece_back(self, job: tuple[Any, ...], piece: fatbin.Piece | None) -> tuple[tuple[Any, ...], BinaryReading] | None:
        """Keep a piece's search; the finished reading once it was the file's last piece."""
        _kind, ticket, path, name, offset, size, index, _start, _stop, _records = job
        read_job, pieces, out = self._waiting[ticket]
        pieces[(name, offset, size)][index] = piece
        out[0] -= 1
        if out[0]:
            return None
        del self._waiting[ticket]
        return read_job, scan_file(path, read_job[2], self.deep, DeepSearch(pieces=pieces))

    def close(self) -> None:
        """Stop the workers (:meth:`scan_workers.WorkerPool.close`)."""
        self.pool.close()


def _piece_jobs(ticket: int, path: str, sections: tuple[tuple[str, int, int], ...], piece_bytes: int,
                ) -> list[tuple[Any, ...]]:
    """The piece jobs of ``sections`` (name, offset, size) of ``path``: 8-aligned cuts about ``piece_bytes``
    apart from each section's 8-aligned start. Each piece may spend twice its share of the file's record
    limit (:data:`fatbin.MAX_RECORDS`), so that all of them together do no more than twice the work a
    plain search may do (cuFFT's pieces spend a tenth of their share); a piece that needs more fails, and
    the section is searched whole."""
    cuts: dict[tuple[str, int, int], list[int]] = {}
    for name, offset, size in sections:
        first, end = offset + (-offset) % 8, offset + size
        count = max(1, -(-(end - first) // piece_bytes))
        step = -(-(end - first) // count)
        step += (-step) % 8
        cuts[(name, offset, size)] = [*range(first, end, step), end]
    records = max(1, 2 * fatbin.MAX_RECORDS // sum(len(bounds) - 1 for bounds in cuts.values()))
    return [("piece", ticket, path, name, offset, size, index, bounds[index], bounds[index + 1], records)
            for (name, offset, size), bounds in cuts.items() for index in range(len(bounds) - 1)]


def split_sizes(options: ReadOptions) -> tuple[int, int]:
    """(``split_at``, ``piece_bytes``) for :class:`FileReads`: :data:`SPLIT_BYTES`, :data:`PIECE_BYTES`, or
    positive whole numbers from ``options`` (``split_bytes``, ``piece_bytes``: tests use small ones)."""
    sizes = []
    for value, default in ((options.split_bytes, SPLIT_BYTES), (options.piece_bytes, PIECE_BYTES)):
        sizes.append(value if type(value) is int and value > 0 else default)
    return max(64, sizes[0]), max(8, sizes[1])


def read_ahead(root: str, deep: bool, workers: int, dist_infos: dict[str, DistInfoReading] | None = None,
                split: tuple[int, int] = (SPLIT_BYTES, PIECE_BYTES),
                ) -> tuple[dict[str, FolderFacts], dict[str, BinaryReading], FileReads | None, set[str]]:
    """List the tree under ``root`` and read its candidate files ahead of :func:`_walk`, in worker processes
    once the tree has more than :data:`FIRST_FOLDERS` folders. Returns the folders' facts by path, the
    readings by path, the pool (None when no worker was needed) and the files it is still reading: it
    returns as soon as every folder is listed, so that the walk runs while the workers read the big files.
    ``dist_infos``, when given, receives the ``*.dist-info`` folders the workers read (by path; RECORD
    narrowed only by name). Nothing is judged here: :func:`_walk` still decides which files count, in its order."""
    listed: dict[str, FolderFacts] = {}
    read: dict[str, BinaryReading] = {}
    try:
        st = os.stat(root)
    except OSError:
        return listed, read, None, set()  # the walk reports it
    root_real = os.path.realpath(root)
    listed_keys: set[tuple[int, int]] = set()
    handed_out = {(st.st_dev, st.st_ino)}  # folders some job started from or will start from

    def take(found: _Explored, starts: list[tuple[str, tuple[int, int]]]) -> list[tuple[str, tuple[int, int]]]:
        for folder, key, facts in found.folders:
            listed[folder] = facts
            listed_keys.add(key)
        read.update(found.readings)
        if dist_infos is not None:
            dist_infos.update(found.dists)
        given = set(starts)  # a job's own starts that it had no time for come back; other folders once
        left = [(path, key) for path, key in found.left
                if key not in listed_keys and ((path, key) in given or key not in handed_out)]
        handed_out.update(key for _path, key in left)
        return left

    starts = [(root, (st.st_dev, st.st_ino))]
    first = _explore(starts, root_real, FIRST_FOLDERS, deep, inline=0, dists=False)  # files read by workers (or after the walk)
    left = take(first, starts)
    if not left and not any(fst.st_size >= INLINE_BYTES for _path, fst in first.big):
        # a small tree without a big file: no worker; the walk reads its files
        return listed, read, None, set()
    pool = FileReads(workers, deep, split)
    walking = [0]  # walk jobs handed to the pool and not yet back
    reading: set[str] = set()
    try:
        def walk(starts: list[tuple[str, tuple[int, int]]]) -> None:
            # A few folders per job while there are many (a site-packages root has hundreds). Listing goes
            # before every file under EARLY_BYTES, the shallowest folders first (a library folder such as
            # nvidia/cu13/lib is then found before the hundreds of folders deep in torch/'s headers); the
            # files of EARLY_BYTES or more (cuFFT's read and its pieces, cuBLASLt: the longest jobs) are
            # read as they are found, while the listing goes on.
            per_job = max(1, len(starts) // (workers * 4))
            for i in range(0, len(starts), per_job):
                depth = starts[i][0].count(os.sep)
                pool.submit(("walk", starts[i : i + per_job], root_real), priority=_WALK_PRIORITY + depth * 4096.0, short=True)
                walking[0] += 1

        def read_big(big: list[tuple[str, os.stat_result]]) -> None:
            for path, fst in big:  # the biggest first: a 1 GB library must not start last
                if path not in reading:
                    reading.add(path)
                    early = _EARLY_PRIORITY if fst.st_size >= EARLY_BYTES else 0.0
                    pool.submit(("read", path, fst), priority=early - fst.st_size)

        walk(left)
        read_big(first.big)
        if walking[0]:
            for job, result in pool.results():
                if job[0] == "read":
                    read[job[1]] = result
                    reading.discard(job[1])
                    continue
                walking[0] -= 1
                walk(take(result, job[1]))
                read_big(result.big)
                if not walking[0]:
                    break  # every folder is listed; the big files are still being read
    except BaseException:
        pool.close()
        raise
    return listed, read, pool, reading


def read_todo(todo: list[tuple[int, str, os.stat_result]], deep: bool, pool: FileReads | None,
               reading: set[str] | None = None) -> Iterator[tuple[int, BinaryReading]]:
    """Read the files of ``todo`` (index, path, stat): in ``pool``'s workers, the biggest first, else here.
    ``reading``: files the pool is reading already (they are not handed out twice)."""
    if pool is None:
        for at, path, st in todo:
            yield at, scan_file(path, st, deep)
        return
    where = {path: at for at, path, _st in todo}
    for _at, path, st in todo:
        if reading is None or path not in reading:
            pool.submit(("read", path, st), priority=-st.st_size)
    for job, done in pool.results():
        index = where.get(job[1])
        if index is not None:  # else a file the walk did not take (a second hard link)
            yield index, done


