"""Folder scans in worker processes (envcheck/sources/scan_workers.py): the same inventory as the serial
scan on real gcc/nvcc-built binaries in a tree big enough to start workers, forced worker counts on a
small machine, and workers that die."""

from __future__ import annotations

import os
import shutil
import signal
import threading
import time
from pathlib import Path

import pytest
from conftest import FIXTURES, scan_in_child

from envcheck.errors import UsageError
from envcheck.sources import ReadOptions, scan_workers
from envcheck.sources import binaries as binaries_source
from envcheck.sources import walk as walk_source
from envcheck.sources.folder import scan_folder

BIN = FIXTURES / "binaries"
FIXTURE_FILES = sorted(p for p in BIN.iterdir() if p.is_file())


def _tree(root: Path) -> Path:
    """A site-packages-like tree of ~200 folders: every fixture binary in several packages, hard links,
    links inside and outside, a loop, a big library (its own job), malformed files and dist-infos."""
    site = root / "site"
    for p in range(12):
        pkg = site / f"pkg{p:02d}"
        for d in range(15):
            sub = pkg / f"sub{d:02d}" / ("lib" if d % 3 == 0 else "py")
            sub.mkdir(parents=True)
            (sub / "mod.py").write_text("x = 1\n")
            src = FIXTURE_FILES[(p * 15 + d) % len(FIXTURE_FILES)]
            shutil.copy(src, sub / f"{src.name}.{p}.{d}.so")
        info = site / f"pkg{p:02d}-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: pkg{p:02d}\nVersion: 1.0\nRequires-Dist: pkg{(p + 1) % 12:02d}\n")
        (info / "RECORD").write_text("".join(f"{f.relative_to(site)},,\n" for f in sorted(pkg.rglob("*.so"))))
    # dist-infos of every shape (read by workers or by the main process): no Name, no RECORD, CRLF and ../ paths
    (site / "zbroken-1.0.dist-info").mkdir()
    (site / "zbroken-1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nVersion: 1.0\n")
    (site / "zlonely-2.0.dist-info").mkdir()
    (site / "zlonely-2.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: zlonely\nVersion: 2.0\n")
    crlf = site / "zcrlf-3.0.dist-info"
    crlf.mkdir()
    (crlf / "METADATA").write_text("Metadata-Version: 2.1\nName: zcrlf\nVersion: 3.0\n")
    # the big library below is in no other RECORD; a ../ path, quoted, in CRLF lines; an executable ELF file
    # without a suffix (taken by its mode) and one named .py (never taken: a worker drops such RECORD lines)
    (site / "zcrlf").mkdir()
    for name in ("elftool", "script.py"):
        shutil.copy(BIN / "gpu_sm121.so", site / "zcrlf" / name)
        (site / "zcrlf" / name).chmod(0o755)
    (crlf / "RECORD").write_bytes(b'zcrlf/__init__.py,,\r\n"../site/pkg08/libbig.so",sha256=x,1\r\n'
                                  b'zcrlf/elftool,,\r\nzcrlf/script.py,,\r\n')
    os.link(site / "pkg00/sub00/lib" / next((site / "pkg00/sub00/lib").glob("*.so")).name, site / "pkg11/hardlink.so")
    (site / "pkg05/alias").symlink_to("../pkg02")  # a second path to a folder: walked once
    (site / "pkg03/loop").symlink_to("..")
    (site / "pkg04/outside").symlink_to("/usr/lib")
    (site / "pkg06/libinside.so").symlink_to("../pkg07/sub01/py/" + next((site / "pkg07/sub01/py").glob("*.so")).name)
    big = site / "pkg08/libbig.so"
    big.write_bytes((BIN / "gpu_sm120_121a.so").read_bytes() + bytes(scan_workers.INLINE_BYTES))  # a job of its own
    (site / "pkg09/bad.so").write_bytes((BIN / "gpu_sm121.so").read_bytes()[:300])
    (site / "pkg09/tool").write_bytes(b"#!/bin/sh\n")
    (site / "pkg09/tool").chmod(0o755)
    return site


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _tree(tmp_path_factory.mktemp("workers"))


def _json(site: Path, workers: int, **options: object) -> object:
    """The inventory of a scan with ``workers`` (in a fresh process: see conftest.scan_in_child)."""
    return scan_in_child(site, use_cache=False, scan_workers=workers, **options)


def test_tree_is_big_enough_to_start_workers(tree: Path) -> None:
    dists: dict[str, binaries_source.DistInfoReading] = {}
    listed, read, pool, reading = scan_workers.read_ahead(str(tree), False, 3, dists)
    assert pool is not None
    try:
        assert len(listed) > scan_workers.FIRST_FOLDERS + scan_workers.JOB_FOLDERS
        # the dist-infos the workers listed were read there (RECORD narrowed by name only: no .py); the main
        # process's first folders' ones are left to the walk
        assert str(tree / "zcrlf-3.0.dist-info") in dists and str(tree / "pkg00-1.0.dist-info") not in dists
        crlf, problems = dists[str(tree / "zcrlf-3.0.dist-info")]
        assert crlf is not None and not problems
        assert crlf.files == {str(tree / "pkg08/libbig.so"), str(tree / "zcrlf/elftool")}
        big = str(tree / "pkg08/libbig.so")
        assert big in read or big in reading  # a job of its own, maybe still running
        done = dict(pool.results())
        assert big in read or big in {job.path for job in done if isinstance(job, scan_workers.ReadFile)}
        assert pool.rerun == 0  # every job ran in a worker
    finally:
        pool.close()


@pytest.mark.parametrize("workers", [2, 5])
def test_workers_give_the_serial_inventory(tree: Path, workers: int) -> None:
    serial = _json(tree, 1)
    assert _json(tree, workers) == serial
    inventory = scan_folder(tree, ReadOptions(use_cache=False, scan_workers=workers))
    assert len(inventory.binaries) > 150 and len(inventory.packages) == 14
    assert any("has no Name field" in p.message for p in inventory.problems)
    assert [b.path for b in inventory.binaries if b.distribution == "zcrlf"] == [
        str(tree / "pkg08/libbig.so"), str(tree / "zcrlf/elftool")]
    assert not any(b.path.endswith("script.py") for b in inventory.binaries)
    assert any("pkg09/bad.so" in p.message for p in inventory.problems)
    assert any("outside the folder" in p.message for p in inventory.problems)
    assert not any(b.path.endswith("hardlink.so") for b in inventory.binaries)  # its first path counts
    assert sum(b.distribution is not None for b in inventory.binaries) >= 150


def test_deep_fatbin_scan_in_workers(tree: Path) -> None:
    assert _json(tree, 3, deep_fatbin=True) == _json(tree, 1, deep_fatbin=True)


def test_cache_filling_scan_in_workers(tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENVCHECK_CACHE_DIR", str(tmp_path / "cache"))
    serial = _json(tree, 1)
    filled = scan_in_child(tree, scan_workers=4)
    cached = scan_in_child(tree, scan_workers=4)
    assert filled == serial and cached == serial
    assert any((tmp_path / "cache").iterdir())


def test_no_workers_while_another_thread_runs(tree: Path) -> None:
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert not scan_workers.can_fork()
        serial = scan_folder(tree, ReadOptions(use_cache=False, scan_workers=1)).to_json()
        assert scan_folder(tree, ReadOptions(use_cache=False, scan_workers=4)).to_json() == serial
    finally:
        stop.set()
        thread.join()


def test_worker_count_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENVCHECK_SCAN_WORKERS", "3")
    assert scan_workers.worker_count() == 3
    assert scan_workers.worker_count(7) == 7  # an explicit request wins
    monkeypatch.setenv("ENVCHECK_SCAN_WORKERS", "0")
    with pytest.raises(UsageError, match="at least 1"):
        scan_workers.worker_count()
    monkeypatch.setenv("ENVCHECK_SCAN_WORKERS", "many")
    with pytest.raises(UsageError, match="ENVCHECK_SCAN_WORKERS"):
        scan_workers.worker_count()
    monkeypatch.delenv("ENVCHECK_SCAN_WORKERS")
    # by default, the cores this process may run on: none below 4 (2 cores: no faster), at most 16
    for cores, expected in ((1, 1), (2, 1), (3, 1), (4, 4), (12, 12), (16, 16), (64, 16)):
        monkeypatch.setattr(scan_workers, "usable_cores", lambda cores=cores: cores)
        assert scan_workers.worker_count() == expected, cores
    assert scan_workers.worker_count(300) == 256  # a request is capped too


MAIN = os.getpid()


def _read_or_die(job: tuple[str, int]) -> object:
    """Read a fixture like a scan job; a worker given the job named "die" kills itself with SIGKILL."""
    name, index = job
    if name == "die" and os.getpid() != MAIN:
        os.kill(os.getpid(), signal.SIGKILL)
    path = FIXTURE_FILES[index % len(FIXTURE_FILES)]
    reading = binaries_source.scan_file(str(path), path.stat(), False)
    return reading.binary.to_json() if reading.binary else None


def test_jobs_of_a_killed_worker_run_in_the_main_process() -> None:
    jobs = [("read", i) for i in range(30)] + [("die", 3), ("die", 4)]
    with scan_workers.WorkerPool(3, _read_or_die) as pool:
        for job in jobs:
            pool.submit(job)
        results = dict(pool.results())
    assert set(results) == set(jobs)
    assert results[("die", 3)] == results[("read", 3)] and results[("die", 4)] == results[("read", 4)]
    assert pool.rerun >= 2  # each killed worker's job, and every job not done when it died, here


def test_every_worker_killed_the_main_process_finishes() -> None:
    with scan_workers.WorkerPool(2, _read_or_die) as pool:
        for i in range(6):
            pool.submit(("die", i))
        for i in range(6):
            pool.submit(("read", i))
        results = dict(pool.results())
    assert len(results) == 12 and pool.rerun >= 2


def _raise_in_worker(job: int) -> int:
    if job == 2:
        raise ValueError(f"job {job} failed in {'a worker' if os.getpid() != MAIN else 'the main process'}")
    return job


def test_an_exception_in_a_worker_is_raised_here() -> None:
    with scan_workers.WorkerPool(2, _raise_in_worker) as pool:
        for i in range(5):
            pool.submit(i)
        with pytest.raises(ValueError, match="in the main process"):
            dict(pool.results())


def test_results_taken_in_two_rounds_lose_no_job() -> None:
    """The scan stops taking results once every folder is listed and takes the rest later: a job whose
    worker died in between is still run (here) and returned."""
    jobs = [("die", 0), *[("read", i) for i in range(1, 12)]]
    with scan_workers.WorkerPool(2, _read_or_die) as pool:
        for job in jobs:
            pool.submit(job)
        first = []
        for job, result in pool.results():
            first.append((job, result))
            break
        rest = list(pool.results())
    assert sorted(job for job, _r in first + rest) == sorted(jobs)
    assert pool.rerun >= 1


def test_a_big_record_is_left_to_the_main_process(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers keep a RECORD as a set of every path the walk could take: one over AHEAD_RECORD_BYTES is read by
    the main process, which keeps only the walk's files as it reads (memory stays near the file's size)."""
    small = len((tree / "zcrlf-3.0.dist-info" / "RECORD").read_bytes())
    monkeypatch.setattr(binaries_source, "AHEAD_RECORD_BYTES", small)  # forked workers inherit it
    dists: dict[str, binaries_source.DistInfoReading] = {}
    _listed, _read, pool, _reading = scan_workers.read_ahead(str(tree), False, 3, dists)
    assert pool is not None
    pool.close()
    assert str(tree / "zcrlf-3.0.dist-info") in dists  # at the limit
    assert str(tree / "zlonely-2.0.dist-info") in dists  # no RECORD at all
    assert not [d for d in dists if d.startswith(str(tree / "pkg"))]  # their RECORDs are longer


def test_a_small_tree_with_a_big_file_reads_it_in_workers(tmp_path: Path) -> None:
    """A tree of a few folders holding one big library (site-packages/nvidia/cufft alone) still gets the
    workers, so that a big section's fatbin search can be cut into pieces."""
    lib = tmp_path / "cufft" / "lib"
    lib.mkdir(parents=True)
    (lib / "libbig.so").write_bytes((BIN / "gpu_sm120_121a.so").read_bytes() + bytes(scan_workers.INLINE_BYTES))
    shutil.copy(BIN / "gpu_sm121.so", lib / "libsmall.so")
    _listed, _read, pool, reading = scan_workers.read_ahead(str(tmp_path / "cufft"), False, 2)
    assert pool is not None
    try:
        assert str(lib / "libbig.so") in reading
    finally:
        pool.close()
    assert _json(tmp_path / "cufft", 2) == _json(tmp_path / "cufft", 1)


def test_a_folder_listing_is_in_name_order_whatever_the_filesystem_order(tmp_path: Path) -> None:
    """Each kind of entry comes back sorted by name (the walk's order, so the report's), and text files
    are skipped whatever they are named like, unless the name says shared library or they are folders."""
    folder = tmp_path / "pkg"
    folder.mkdir()
    names = [f"{c}{i}" for i in range(40) for c in "zam"]
    for n in reversed(names):
        (folder / f"lib{n}.so").write_bytes(b"")
        (folder / f"{n}.py").write_text("")
        (folder / f"{n}.dir.py").mkdir()  # a folder named like a source file
        (folder / f"lib{n}.so.py").write_text("")  # ".so." in the name: a candidate
        (folder / f"link{n}.so").symlink_to(folder / f"lib{n}.so")
        (folder / f"out{n}").symlink_to("/usr")
    listing = walk_source.list_folder(str(folder), str(tmp_path), [])
    assert listing is not None
    assert listing["d"] == sorted(f"{n}.dir.py" for n in names)
    assert listing["f"] == sorted([f"lib{n}.so" for n in names] + [f"lib{n}.so.py" for n in names])
    assert listing["l"] == sorted(f"link{n}.so" for n in names)
    assert listing["x"] == sorted(f"out{n}" for n in names)


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity on this system")
def test_usable_cores_follow_the_cpu_affinity() -> None:
    """A process limited to one core (taskset, a container's cpuset) counts one core, so no workers."""
    import subprocess
    import sys

    from conftest import REPO

    code = ("import os; os.sched_setaffinity(0, {min(os.sched_getaffinity(0))});"
            "from envcheck.config import usable_cores; from envcheck.sources import scan_workers;"
            "print(usable_cores(), scan_workers.worker_count())")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={k: v for k, v in os.environ.items() if k != "ENVCHECK_SCAN_WORKERS"} | {"PYTHONPATH": str(REPO)})
    assert done.returncode == 0 and done.stdout.split() == ["1", "1"], done.stderr[-2000:]


POOL_CHILD = (
    "import os, sys, time\n"
    "from envcheck.sources.scan_workers import WorkerPool\n"
    "def stay(folder: str) -> None:\n"
    "    open(os.path.join(folder, str(os.getpid())), 'w').close()\n"
    "    time.sleep(120)\n"
    "pool = WorkerPool(2, stay)\n"
    "for _ in range(4):\n"
    "    pool.submit(sys.argv[1])\n"
    "try:\n"
    "    with pool:\n"
    "        list(pool.results())\n"
    "except KeyboardInterrupt:\n"
    "    import threading\n"
    "    print('interrupted, threads left:', threading.active_count())\n"
)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads /proc")
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "killed"])
def test_interrupted_main_process_leaves_no_worker(tmp_path: Path, signum: int) -> None:
    """Ctrl-C during a scan's jobs ends the main process at once, without a traceback from the workers, and
    the workers end with it (they never wait for jobs that will not come); so does a killed main process."""
    import subprocess
    import sys

    from conftest import REPO

    child = subprocess.Popen([sys.executable, "-c", POOL_CHILD, str(tmp_path)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=dict(os.environ, PYTHONPATH=str(REPO)))
    deadline = time.monotonic() + 60
    while len(list(tmp_path.iterdir())) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    workers = [int(p.name) for p in tmp_path.iterdir()]
    try:
        assert len(workers) == 2 and all(map(_alive, workers))
        start = time.monotonic()
        child.send_signal(signum)
        out, err = child.communicate(timeout=30)
        assert time.monotonic() - start < 10  # the jobs would run for two minutes
        while any(map(_alive, workers)) and time.monotonic() < start + 10:
            time.sleep(0.05)
        assert not any(map(_alive, workers))
        if signum == signal.SIGINT:
            assert out == "interrupted, threads left: 1\n" and child.returncode == 0  # the executor's thread ended
            assert "Traceback" not in err, err[-2000:]
    finally:  # what a failed run left behind
        for pid in [child.pid, *workers]:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        child.wait()
