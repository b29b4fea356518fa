"""A folder scan's worker processes (Linux): folders listed and ELF headers read on every core, by forked
workers of a ProcessPoolExecutor. A job that fails in a worker, or is left by a dead one, runs here; workers
ignore Ctrl-C and die with the main process. Worker count, bounds: docs/limits.md."""

from __future__ import annotations

import heapq
import itertools
import os
import signal
import stat
import sys
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Generic, NamedTuple, TypeVar

from envcheck.config import env_processes, usable_cores
from envcheck.inspect import fatbin
from envcheck.inspect.elf import FileSource
from envcheck.sources import ReadOptions
from envcheck.sources.binaries import (
    BinaryReading,
    DeepSearch,
    DistInfoReading,
    read_dist_info_ahead,
    scan_file,
)
from envcheck.sources.walk import FolderFacts, folder_facts

if TYPE_CHECKING:  # loaded when a pool starts: a scan without workers does not pay for them
    from concurrent.futures import Future, ProcessPoolExecutor
    from multiprocessing.process import BaseProcess

MAX_WORKERS = 16  # more did not help on a 16-core machine: the main process merges every result
MIN_CORES = 4  # fewer cores: no workers by default (on 2 cores they made a torch environment's scan no faster)
IN_FLIGHT = 2  # jobs handed to the executor per worker: one running, one ready for when it ends

Job = TypeVar("Job")
Result = TypeVar("Result")


def worker_count(requested: int | None = None) -> int:
    """``requested``, else ``ENVCHECK_SCAN_WORKERS``, else the usable cores (up to 16); 1: no workers."""
    if requested is None:
        requested = env_processes("ENVCHECK_SCAN_WORKERS")
    if requested is not None:
        return max(1, min(requested, 256))
    cores = usable_cores()
    return min(cores, MAX_WORKERS) if cores >= MIN_CORES else 1


def can_fork() -> bool:
    """Linux and no other thread: a fork can copy a lock some thread held, and the child waits forever."""
    import threading  # the executor loads it anyway; a folder answered from its snapshot never asks

    return sys.platform.startswith("linux") and hasattr(os, "fork") and threading.active_count() == 1


def _worker_start(main: int) -> None:
    """Ctrl-C is the main process's to handle, and the worker dies with it (else it would wait forever)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    import ctypes  # Linux only (workers are forked there only): prctl(PR_SET_PDEATHSIG, SIGKILL)

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)
    if os.getppid() != main:  # the main process died before the line above
        raise SystemExit(1)


class WorkerPool(Generic[Job, Result]):
    """``work(job)`` in up to ``count`` forked processes, the lowest priority first and only a few jobs in
    flight per worker; a job that raised there, or was left by a dead worker, runs here (``rerun``)."""

    def __init__(self, count: int, work: Callable[[Job], Result]) -> None:
        self.work = work
        self.rerun = 0
        self._count = count
        self._executor: ProcessPoolExecutor | None = None
        self._workers: list[BaseProcess] = []  # its processes, terminated when the scan is interrupted
        self._others: set[BaseProcess] = set()  # child processes that are not its own
        self._broken = count < 1
        self._queue: list[tuple[float, int, Job]] = []  # (priority, sequence, job)
        self._sequence = itertools.count()
        self._running: dict[Future[Result], Job] = {}
        self._done: deque[tuple[Job, Future[Result]]] = deque()  # finished, not yet given to the caller

    def submit(self, job: Job, priority: float = 0.0) -> None:
        heapq.heappush(self._queue, (priority, next(self._sequence), job))

    def results(self) -> Iterator[tuple[Job, Result]]:
        """``(job, result)`` of every job as it finishes (also those submitted meanwhile); resumable."""
        while True:
            if self._done:
                job, future = self._done.popleft()
                yield job, self._outcome(job, future)
                continue
            self._hand_out()
            if not self._running:
                if not self._queue:
                    return
                job = heapq.heappop(self._queue)[2]  # no worker (any more): run it here
                self.rerun += 1
                yield job, self.work(job)
                continue
            from concurrent.futures import FIRST_COMPLETED, wait

            finished, _ = wait(self._running, return_when=FIRST_COMPLETED)
            self._done.extend((self._running.pop(future), future) for future in finished)

    def _hand_out(self) -> None:
        if self._broken or not self._queue:
            return
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor
        from concurrent.futures.process import BrokenProcessPool

        while self._queue and not self._broken and len(self._running) < self._count * IN_FLIGHT:
            if self._executor is None:
                # forked, not spawned: the workers start with envcheck loaded, and see the tree's state
                self._others = set(multiprocessing.active_children())
                self._executor = ProcessPoolExecutor(self._count, multiprocessing.get_context("fork"), _worker_start,
                                                     (os.getpid(),))
            job = self._queue[0][2]
            try:
                future = self._executor.submit(self.work, job)
            except (BrokenProcessPool, OSError):  # a worker died, or the workers could not all be forked
                self._broken = True
                return
            finally:
                if not self._workers:  # the executor forks all its workers at its first job
                    self._workers = [child for child in multiprocessing.active_children() if child not in self._others]
            heapq.heappop(self._queue)
            self._running[future] = job

    def _outcome(self, job: Job, future: Future[Result]) -> Result:
        from concurrent.futures.process import BrokenProcessPool

        try:
            return future.result()
        except Exception as exc:  # it raised there, or its worker died: run it here
            if isinstance(exc, BrokenProcessPool):
                self._broken = True
            self.rerun += 1
            return self.work(job)

    def close(self, abort: bool = False) -> None:
        """Drop the jobs not started, wait for the running ones; with ``abort`` (or a dead worker), kill."""
        executor, self._executor = self._executor, None
        self._running.clear()
        if executor is None:
            return
        if abort or self._broken:  # the executor then finds its workers gone and ends its thread
            for child in self._workers:
                child.terminate()
        executor.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> WorkerPool[Job, Result]:
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        self.close(abort=kind is not None)


# The main process lists FIRST_FOLDERS folders itself (a small tree starts no worker); each job then lists
# up to JOB_FOLDERS and reads the files below INLINE_BYTES there. A cached scan uses workers from POOL_FILES.
FIRST_FOLDERS = 48
JOB_FOLDERS = 64
INLINE_BYTES = 4 << 20
POOL_FILES = 24
# A data section of SPLIT_BYTES or more to search for fatbins (cuFFT's 265 MiB .ldata, the longest job) is
# searched in pieces of about PIECE_BYTES, each a job (ReadOptions.split_bytes / piece_bytes: tests).
SPLIT_BYTES = 32 << 20
PIECE_BYTES = 16 << 20
# Job order: pieces; files of EARLY_BYTES or more, the biggest first (started during the listing, they end
# with it); listings, the shallowest first (depth times 4,096); every other file, the biggest first.
EARLY_BYTES = 32 << 20
_PIECE_PRIORITY = -float(1 << 66)
_EARLY_PRIORITY = -float(1 << 65)  # minus the file's size
_LIST_PRIORITY = -float(1 << 63)  # plus its depth times 4,096

Start = tuple[str, tuple[int, int]]  # a folder to list: its path and (st_dev, st_ino)


@dataclass(frozen=True, slots=True)
class ListFolders:
    starts: tuple[Start, ...]
    root_real: str


@dataclass(frozen=True, slots=True)
class ReadFile:
    path: str
    stat: os.stat_result


@dataclass(frozen=True, slots=True)
class SearchPiece:
    """Piece ``index`` (bytes ``[start, stop)``, at most ``records``) of ``section`` (name, offset, size)."""

    ticket: int
    path: str
    section: tuple[str, int, int]
    index: int
    start: int
    stop: int
    records: int


ScanJob = ListFolders | ReadFile | SearchPiece


class _Explored(NamedTuple):
    """One listing job's folders (path, (st_dev, st_ino), facts), the folders left for other jobs, its
    readings, the big files left to read, and the ``*.dist-info`` folders it read."""

    folders: list[tuple[str, tuple[int, int], FolderFacts]]
    left: list[Start]
    readings: list[tuple[str, BinaryReading]]
    big: list[tuple[str, os.stat_result]]
    dists: list[tuple[str, DistInfoReading]]


def _explore(starts: list[Start], root_real: str, folders: int, deep: bool, inline: int = INLINE_BYTES,
             dists: bool = True) -> _Explored:
    """Up to ``folders`` folders depth first from ``starts``, the files below ``inline`` bytes read; with
    ``dists``, each ``*.dist-info`` too (RECORD narrowed by name only: the tree is not walked yet)."""
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


class _BigSections(NamedTuple):  # a read left unfinished: sections (name, offset, size) to search in pieces
    sections: tuple[tuple[str, int, int], ...]


def run_job(deep: bool, split_at: int | None, job: ScanJob) -> object:
    """A BinaryReading (or _BigSections), a fatbin.Piece (None: unreadable) or an _Explored, by job type."""
    if isinstance(job, ReadFile):
        search = DeepSearch(split_at=split_at)
        reading = scan_file(job.path, job.stat, deep, search)
        if search.later:
            return _BigSections(tuple((s.name, s.offset, s.size) for s in search.later))
        return reading
    if isinstance(job, SearchPiece):
        name, offset, size = job.section
        try:
            with open(job.path, "rb", buffering=0) as fh:
                source = FileSource(fh, os.fstat(fh.fileno()).st_size)
                return fatbin.scan_piece(source, job.start, job.stop, offset + size, name, job.records)
        except OSError:
            return None
    return _explore(list(job.starts), job.root_real, JOB_FOLDERS, deep)


class FileReads(WorkerPool[ScanJob, object]):
    """A WorkerPool whose reads of big files may come back unfinished: a big data section's search is cut into
    pieces (alone it would be the last job to end), and the file is read again here once they are all back."""

    def __init__(self, workers: int, deep: bool, split: tuple[int, int],
                 work: Callable[[ScanJob], object] | None = None) -> None:
        super().__init__(workers, work or partial(run_job, deep, split[0]))
        self.deep = deep
        self.piece_bytes = split[1]
        self._tickets = itertools.count()
        # by ticket: the read job, the pieces by section (None until back), how many are still out
        self._waiting: dict[int, tuple[ReadFile, dict[tuple[str, int, int], list[fatbin.Piece | None]], list[int]]] = {}

    def results(self) -> Iterator[tuple[ScanJob, object]]:
        for job, result in super().results():
            if isinstance(job, ReadFile) and isinstance(result, _BigSections):
                self._cut(job, result)
            elif isinstance(job, SearchPiece):
                assert result is None or isinstance(result, fatbin.Piece)
                done = self._piece_back(job, result)
                if done is not None:
                    yield done
            else:
                yield job, result

    def _cut(self, job: ReadFile, big: _BigSections) -> None:
        ticket = next(self._tickets)
        pieces: dict[tuple[str, int, int], list[fatbin.Piece | None]] = {}
        for piece in _piece_jobs(ticket, job.path, big.sections, self.piece_bytes):
            pieces.setdefault(piece.section, []).append(None)
            self.submit(piece, _PIECE_PRIORITY)
        self._waiting[ticket] = (job, pieces, [sum(len(v) for v in pieces.values())])

    def _piece_back(self, job: SearchPiece, piece: fatbin.Piece | None) -> tuple[ReadFile, BinaryReading] | None:
        read_job, pieces, out = self._waiting[job.ticket]
        pieces[job.section][job.index] = piece
        out[0] -= 1
        if out[0]:
            return None
        del self._waiting[job.ticket]
        return read_job, scan_file(job.path, read_job.stat, self.deep, DeepSearch(pieces=pieces))


def _piece_jobs(ticket: int, path: str, sections: tuple[tuple[str, int, int], ...], piece_bytes: int,
                ) -> list[SearchPiece]:
    """8-aligned cuts about ``piece_bytes`` apart. Each piece may spend twice its share of the file's record
    limit (all together: at most twice a plain search's work); one that needs more fails (searched whole)."""
    cuts: dict[tuple[str, int, int], list[int]] = {}
    for name, offset, size in sections:
        first, end = offset + (-offset) % 8, offset + size
        count = max(1, -(-(end - first) // piece_bytes))
        step = -(-(end - first) // count)
        step += (-step) % 8
        cuts[(name, offset, size)] = [*range(first, end, step), end]
    records = max(1, 2 * fatbin.MAX_RECORDS // sum(len(bounds) - 1 for bounds in cuts.values()))
    return [SearchPiece(ticket, path, section, index, bounds[index], bounds[index + 1], records)
            for section, bounds in cuts.items() for index in range(len(bounds) - 1)]


def split_sizes(options: ReadOptions) -> tuple[int, int]:
    """(``split_at``, ``piece_bytes``): the defaults or positive whole numbers from ``options``."""
    asked = ((options.split_bytes, SPLIT_BYTES), (options.piece_bytes, PIECE_BYTES))
    split, piece = (value if type(value) is int and value > 0 else default for value, default in asked)
    return max(64, split), max(8, piece)


def read_ahead(root: str, deep: bool, workers: int, dist_infos: dict[str, DistInfoReading] | None = None,
                split: tuple[int, int] = (SPLIT_BYTES, PIECE_BYTES),
                ) -> tuple[dict[str, FolderFacts], dict[str, BinaryReading], FileReads | None, set[str]]:
    """List the tree and read its files ahead of the walk (which still decides what counts), in workers past
    FIRST_FOLDERS folders: the facts and readings by path, the pool (None: none needed) and the files it
    still reads. Returns once every folder is listed; ``dist_infos`` receives what the workers read."""
    listed: dict[str, FolderFacts] = {}
    read: dict[str, BinaryReading] = {}
    try:
        st = os.stat(root)
    except OSError:
        return listed, read, None, set()  # the walk reports it
    root_real = os.path.realpath(root)
    listed_keys: set[tuple[int, int]] = set()
    handed_out = {(st.st_dev, st.st_ino)}  # folders some job started from or will start from

    def take(found: _Explored, starts: tuple[Start, ...]) -> list[Start]:
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

    starts: tuple[Start, ...] = ((root, (st.st_dev, st.st_ino)),)
    first = _explore(list(starts), root_real, FIRST_FOLDERS, deep, inline=0, dists=False)  # files read by workers (or after the walk)
    left = take(first, starts)
    if not left and not any(fst.st_size >= INLINE_BYTES for _path, fst in first.big):
        # a small tree without a big file: no worker; the walk reads its files
        return listed, read, None, set()
    pool = FileReads(workers, deep, split)
    listing = 0  # listing jobs handed to the pool and not yet back
    reading: set[str] = set()
    try:
        def list_folders(starts: list[Start]) -> int:
            # A few folders per job while there are many; the shallowest first (nvidia/cu13/lib is found
            # before the hundreds of folders deep in torch/'s headers).
            per_job = max(1, len(starts) // (workers * 4))
            for i in range(0, len(starts), per_job):
                depth = starts[i][0].count(os.sep)
                pool.submit(ListFolders(tuple(starts[i : i + per_job]), root_real), _LIST_PRIORITY + depth * 4096.0)
            return -(-len(starts) // per_job)

        def read_big(big: list[tuple[str, os.stat_result]]) -> None:
            for path, fst in big:  # the biggest first: a 1 GB library must not start last
                if path not in reading:
                    reading.add(path)
                    early = _EARLY_PRIORITY if fst.st_size >= EARLY_BYTES else 0.0
                    pool.submit(ReadFile(path, fst), early - fst.st_size)

        listing += list_folders(left)
        read_big(first.big)
        if listing:
            for job, result in pool.results():
                if isinstance(job, ReadFile):
                    assert isinstance(result, BinaryReading)
                    read[job.path] = result
                    reading.discard(job.path)
                    continue
                assert isinstance(job, ListFolders) and isinstance(result, _Explored)
                listing -= 1
                listing += list_folders(take(result, job.starts))
                read_big(result.big)
                if not listing:
                    break  # every folder is listed; the big files are still being read
    except BaseException:
        pool.close(abort=True)
        raise
    return listed, read, pool, reading


def read_todo(todo: list[tuple[int, str, os.stat_result]], deep: bool, pool: FileReads | None,
               reading: set[str] | None = None) -> Iterator[tuple[int, BinaryReading]]:
    """``todo`` (index, path, stat) read in ``pool``'s workers, the biggest first, or here; ``reading``:
    already being read."""
    if pool is None:
        for at, path, st in todo:
            yield at, scan_file(path, st, deep)
        return
    where = {path: at for at, path, _st in todo}
    for _at, path, st in todo:
        if reading is None or path not in reading:
            pool.submit(ReadFile(path, st), -st.st_size)
    for job, done in pool.results():
        assert isinstance(job, ReadFile) and isinstance(done, BinaryReading)
        index = where.get(job.path)
        if index is not None:  # else a file the walk did not take (a second hard link)
            yield index, done
