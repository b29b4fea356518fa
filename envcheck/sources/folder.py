"""KIND ``folder``: a whole installed environment (a venv, site-packages, a conda env, an unpacked image):
its binaries (read in worker processes for a big tree) and distributions. An unchanged folder is answered
from its snapshot (:class:`envcheck.cache.FolderSnapshot`) without loading the readers."""

from __future__ import annotations

import dataclasses
import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from envcheck.cache import FolderSnapshot, ScanCache, change_key
from envcheck.errors import InputError
from envcheck.model import Inventory, ReadProblem
from envcheck.sources import ReadOptions

if TYPE_CHECKING:
    from envcheck.sources.binaries import DistInfoReading, Distribution

KIND = "folder"


def namespace_of(root: Path | str, deep: bool) -> str:
    return f"folder:{os.path.abspath(root)}:deep={deep}"


def from_snapshot(root: Path | str, options: ReadOptions) -> Inventory | None:
    """The inventory of ``root`` from its snapshot when nothing it was built from changed, else None."""
    if not options.use_cache:
        return None
    namespace = namespace_of(root, options.deep_fatbin)
    found = FolderSnapshot(namespace).load(str(root))
    if found is None:
        return None
    ScanCache.mark_used(namespace)  # still the fallback of the next change: `cache clean --older-than` keeps it
    inv = Inventory(context="installed")
    inv.packages, inv.binaries, inv.problems = found
    return inv


def read(path: Path, options: ReadOptions) -> Inventory:
    """A file is read as KIND ``elf``."""
    path = Path(path)
    if path.is_dir():
        return scan_folder(path, options)
    from envcheck.sources import binaries

    return binaries.read(path, options)


def scan_folder(root: Path, options: ReadOptions) -> Inventory:
    """Every ELF file and installed distribution under ``root``; cached per file and as a whole snapshot."""
    root = Path(root)
    cached = from_snapshot(root, options)
    if cached is not None:
        return cached
    # the readers: not loaded by a folder answered from its snapshot
    from envcheck.sources import scan_workers
    from envcheck.sources.binaries import BinaryReading, dist_infos, reading_from_cache, reading_to_cache
    from envcheck.sources.walk import FolderFacts, outside_note, walk

    inv = Inventory(context="installed")
    problems: list[ReadProblem] = []
    deep = options.deep_fatbin
    namespace = namespace_of(root, deep)
    snapshot = FolderSnapshot(namespace) if options.use_cache else None
    started_ns = time.time_ns()
    folders: list[tuple[str, os.stat_result]] | None = [] if snapshot is not None else None
    walked: list[tuple[str, os.stat_result]] = []
    cache = ScanCache(namespace) if options.use_cache else None
    dist_dirs: list[tuple[str, os.stat_result]] = []
    readings: list[BinaryReading | None] = []
    todo: list[tuple[int, str, os.stat_result]] = []
    outside: list[str] = []
    workers = scan_workers.worker_count(options.scan_workers) if scan_workers.can_fork() else 1
    pool: scan_workers.FileReads | None = None
    split = scan_workers.split_sizes(options)
    early: list[tuple[str, Distribution | None, list[ReadProblem]]] | None = None
    try:
        listed: dict[str, FolderFacts] | None = None
        read_ahead: dict[str, BinaryReading] = {}
        reading: set[str] = set()
        dists_ahead: dict[str, DistInfoReading] = {}
        if cache is None and workers > 1:
            # No cache: worker processes list the folders and read the files while the tree is walked.
            listed, read_ahead, pool, reading = scan_workers.read_ahead(str(root), deep, workers, dists_ahead, split)
        for path, st in walk(root, problems, outside, cache, folders, listed):
            if snapshot is not None:
                walked.append((path, st))
            if path.endswith(".dist-info/METADATA"):
                dist_dirs.append((os.path.dirname(path), st))
                continue
            hit = cache.get(path, _file_key(st), reading_from_cache) if cache is not None else None
            if hit is not None:
                if hit:  # False: cached "not a binary"
                    readings.append(hit)
                continue
            ahead = read_ahead.get(path)
            if ahead is not None:
                readings.append(ahead)
                continue
            todo.append((len(readings), path, st))
            readings.append(None)
        if reading:
            # The workers still read big files: read the distributions meanwhile, RECORD kept for every
            # file the walk took (a superset of the binaries, so the same owners).
            taken = [path for _at, path, _st in todo] + [r.binary.path for r in readings if r is not None and r.binary is not None]
            early = dist_infos(dist_dirs, {*taken, *map(os.path.normpath, taken)}, dists_ahead)
        if pool is None and workers > 1 and len(todo) >= scan_workers.POOL_FILES:
            pool = scan_workers.FileReads(min(workers, len(todo)), deep, split)
        for at, got in scan_workers.read_todo(todo, deep, pool, reading):
            readings[at] = got
    except BaseException:  # Ctrl-C, an error: the workers are stopped at once
        if pool is not None:
            pool.close(abort=True)
        raise
    if pool is not None:
        pool.close()
    if cache is not None:
        for at, path, st in todo:
            done = readings[at]
            assert done is not None
            cache.put(path, _file_key(st), reading_to_cache(done))
        cache.save()
    if outside:
        problems.append(outside_note(root, outside))
    owners: dict[str, str] = {}
    found = [r.binary.path for r in readings if r is not None and r.binary is not None]
    wanted = {*found, *map(os.path.normpath, found)}
    records: list[tuple[str, tuple[int, ...]]] = []  # RECORD files read, for the snapshot
    for info_dir, dist, probs in early if early is not None else dist_infos(dist_dirs, wanted, dists_ahead):
        problems.extend(probs)
        if dist is None:
            continue
        if dist.record_key is not None:
            records.append((info_dir + os.sep + "RECORD", dist.record_key))
        inv.packages.append(dist.package)
        for f in dist.files:
            owners.setdefault(f, dist.package.name)
    for done in readings:
        assert done is not None
        problems.extend(done.problems)
        b = done.binary
        if b is None:
            continue
        owner = owners.get(b.path) or owners.get(os.path.normpath(b.path))
        if owner is not None:
            b = dataclasses.replace(b, distribution=owner)
        inv.binaries.append(b)
    inv.problems.extend(problems)
    if snapshot is not None and folders is not None and not [p for p in inv.problems if not p.note]:
        # A scan that met no error is kept whole (an error may be passing: it is read again next time).
        files = [(path, change_key(st)) for path, st in walked] + records
        snapshot.save(str(root), started_ns, [(path, change_key(st)) for path, st in folders], files,
                      inv.packages, inv.binaries, inv.problems)
    return inv


def _file_key(st: os.stat_result) -> tuple[int, int, int, int]:  # ctime: a rewrite that restores the mtime
    return (st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)


def site_packages_of(python: str) -> list[Path]:
    code = (
        "import json, site, sysconfig; p = []\n"
        "for k in ('purelib', 'platlib'):\n"
        "    v = sysconfig.get_paths().get(k)\n"
        "    v and v not in p and p.append(v)\n"
        "try:\n"
        "    [p.append(x) for x in site.getsitepackages() if x not in p]\n"
        "except Exception: pass\n"
        "print(json.dumps(p))"
    )
    import subprocess  # here: only `--python` runs a program, and the folder scan's start-up need not load it

    from envcheck.sources import interpreter
    program = interpreter(python)
    try:
        out = subprocess.run([program, "-I", "-c", code], capture_output=True, text=True, timeout=60, check=True)
        paths = json.loads(out.stdout.strip().splitlines()[-1])
    except subprocess.CalledProcessError as exc:
        said = (exc.stderr or "").strip().splitlines()[-1:] or [f"exit status {exc.returncode}"]
        raise InputError(f"--python {python}: not a Python interpreter, or a broken one ({said[0]})", path=python) from exc
    except (OSError, subprocess.SubprocessError, ValueError, IndexError) as exc:
        raise InputError(f"--python {python}: cannot ask it for its site-packages: {exc}", path=python) from exc
    return [Path(p) for p in paths if Path(p).is_dir()]


def read_python(python: str, options: ReadOptions) -> Inventory:
    """``envcheck --python PY``: its site-packages, scanned."""
    inventory = Inventory(context="installed")
    for site in site_packages_of(python):
        inventory.extend(scan_folder(site, options))
    inventory.context = "installed"
    return inventory


