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
import os
import pickle
import select
import struct
from collections.abc import Callable, Iterator
from typing import Any

from envcheck.config import can_fork, env_processes, usable_cores

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
