"""Real artifacts: a CUDA 13 PyTorch environment (torch 2.14.1 and its nvidia-* wheels), the torch wheel
itself, and a real CUDA 12 wheel from the package index. Slow (a 5 GB venv, big downloads); CI runs them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest
import torch_env
from conftest import REPO, require, run_envcheck, scan_in_child
from test_binaries_oracle import cuobjdump_lists, cuobjdump_path, parsed_lists
from test_binaries_read import facts, pyelftools_facts

from envcheck.inspect import fatbin
from envcheck.inspect.elf import FileSource
from envcheck.sources import ReadOptions, scan_workers
from envcheck.sources import binaries as binaries_source
from envcheck.sources import wheel as wheel_source
from envcheck.sources.binaries import read_binary, standard_containers
from envcheck.sources.folder import scan_folder

pytestmark = pytest.mark.slow

WORK = REPO / ".work"
T = TypeVar("T")


def _pip(*args: str, python: str = sys.executable, timeout: float = 1800) -> subprocess.CompletedProcess[str]:
    return subprocess.run([python, "-m", "pip", *args], capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="session")
def torch_venv() -> Path:
    """The CUDA 13 torch environment's site-packages (made once; reused across sessions)."""
    return _prepared(torch_env.torch_site)


@pytest.fixture(scope="session")
def torch_wheel() -> Path:
    return _prepared(torch_env.torch_wheel)


@pytest.fixture(scope="session")
def cuda12_runtime_wheel() -> Path:
    return _prepared(torch_env.cuda12_runtime_wheel)


def _prepared(make: Callable[[], T]) -> T:
    try:
        return make()
    except torch_env.NotPrepared as exc:
        require(False, str(exc))
        raise


def test_cuda13_torch_env_is_clean_for_g1(torch_venv: Path, tmp_path: Path) -> None:
    proc = run_envcheck(str(torch_venv), "--format", "json", env={"ENVCHECK_CACHE_DIR": str(tmp_path)}, timeout=600)
    report = json.loads(proc.stdout)
    [target] = report["targets"]
    found = target["findings"]
    assert not [f for f in found if f["status"] == "ERROR"], proc.stdout[-2000:]
    g1 = [f for f in found if f["gotcha"] == "G1"]
    assert g1 and not [f for f in g1 if f["status"] in ("FAIL", "WARN")], g1
    assert any(f["rule"] == "G1-binary-soname" and f["status"] == "PASS" for f in g1)
    binaries = target["inventory"]["binaries"]
    cuda = next(b for b in binaries if b["path"].endswith("torch/lib/libtorch_cuda.so"))
    assert cuda["distribution"] == "torch"
    assert "libcudart.so.13" in cuda["needed"] and cuda["cuda_major"] == 13
    assert cuda["sm121"] == "compatible"  # sm_120 SASS in every module (research/fatbin.md §9.1)
    assert "sm_121a" in cuda["sass"] and "ptx" not in cuda
    # cuFFT keeps its kernels outside .nv_fatbin (which has only sm_75): found there, not a false FAIL
    cufft = next(b for b in binaries if b["path"].endswith("nvidia/cu13/lib/libcufft.so.12"))
    assert ".ldata" in cufft["sections"] and "sm_120" in cufft["sass"] and cufft["sm121"] == "compatible"
    # G7: every torch binary with GPU code runs on sm_121
    assert not [f for f in found if f["gotcha"] == "G7" and f["status"] == "FAIL"], [f["message"] for f in found if f["gotcha"] == "G7"]


def test_torch_libraries_match_cuobjdump(torch_venv: Path) -> None:
    tool = cuobjdump_path()
    require(tool is not None, "cuobjdump not installed (pip install nvidia-cuda-cuobjdump)")
    assert tool is not None
    lib = torch_venv / "torch" / "lib"
    # libtorch_cuda.so costs cuobjdump ~10 s and 5.7 GB: only its ELF list; the others fully
    for name, everything in (("libtorch_cuda_linalg.so", True), ("libtorch_nvshmem.so", True), ("libtorch_cuda_linalg.so", False)):
        path = lib / name
        got = parsed_lists(path, everything)
        assert got == cuobjdump_lists(tool, path, everything), name
        assert got[0]
    path = lib / "libtorch_cuda.so"
    out = subprocess.run([tool, "--list-elf", str(path)], capture_output=True, text=True, timeout=600)
    want = [line.rsplit(".", 2)[-2] for line in out.stdout.splitlines() if line.startswith("ELF file")]
    with path.open("rb") as fh:
        entries = [e for c in standard_containers(FileSource(fh, path.stat().st_size)) if c.section == ".nv_fatbin" for e in c.entries]
    assert [e.cuobjdump_label for e in entries if e.kind == fatbin.KIND_ELF] == want
    assert len(want) > 2000


def test_torch_env_dynamic_facts_agree_with_pyelftools(torch_venv: Path) -> None:
    inv = scan_folder(torch_venv, ReadOptions(use_cache=False))
    shared = [b for b in inv.binaries if b.elf_type == "DYN" and "/torch/lib/" in b.path]
    assert len(shared) > 10
    for b in shared:
        assert (b.machine, b.soname, b.needed, b.runpath) == pyelftools_facts(Path(b.path)), b.path


def test_torch_wheel_reads_like_the_installed_files(torch_venv: Path, torch_wheel: Path) -> None:
    inv = wheel_source.read(torch_wheel, ReadOptions(use_cache=False))
    assert inv.problems == []
    by_member = {b.path: b for b in inv.binaries}
    assert "torch/lib/libtorch_cuda.so" in by_member  # streamed (over the in-memory limit)
    for member, b in by_member.items():
        path = torch_venv / member
        if not path.exists():
            continue
        with path.open("rb") as fh:
            installed = read_binary(FileSource(fh, path.stat().st_size), str(path)).binary
        assert installed is not None
        assert facts(b) == facts(installed), member
    [w] = inv.wheels
    assert w.name == "torch" and any("nvidia-cudnn-cu13" in r for r in w.requires)


def test_cuda12_runtime_wheel_fails_g1(cuda12_runtime_wheel: Path, tmp_path: Path) -> None:
    proc = run_envcheck(str(cuda12_runtime_wheel), "--format", "json", env={"ENVCHECK_CACHE_DIR": str(tmp_path / "c")})
    assert proc.returncode == 1, proc.stderr
    found = json.loads(proc.stdout)["targets"][0]["findings"]
    [soname] = [f for f in found if f["rule"] == "G1-binary-soname" and f["status"] == "FAIL"]
    for part in ("libcudart.so.12", "nvidia/cuda_runtime/lib/libcudart.so.12", "nvidia-cuda-runtime-cu12"):
        assert part in soname["message"]
    # installed into a folder: the distribution comes from RECORD
    site = tmp_path / "site"
    proc2 = _pip("install", "-q", "--no-deps", "--no-index", "--target", str(site), str(cuda12_runtime_wheel))
    assert proc2.returncode == 0, proc2.stderr
    inv = scan_folder(site, ReadOptions(use_cache=False))
    [rt] = [b for b in inv.binaries if b.path.endswith("libcudart.so.12")]
    assert rt.distribution == "nvidia-cuda-runtime-cu12" and rt.soname == "libcudart.so.12" and rt.cuda_major == 12
    assert os.path.isabs(rt.path)


@pytest.mark.parametrize(("name", "section"), [("libcufft.so.12", ".ldata"), ("libcublasLt.so.13", ".cask_resource")])
def test_deep_fatbin_finds_kernels_outside_nv_fatbin(torch_venv: Path, name: str, section: str) -> None:
    path = torch_venv / "nvidia" / "cu13" / "lib" / name
    with path.open("rb") as fh:
        deep = read_binary(FileSource(fh, path.stat().st_size), str(path), deep_fatbin=True)
    assert deep.problems == [] and deep.binary is not None
    assert section in deep.binary.sections
    # the stream reader of wheels finds the same (one pass over the bytes)
    streamed = wheel_source.read_streamed_bytes(path.read_bytes(), name, deep=True, chunk=1 << 20)
    assert streamed.binary is not None and facts(streamed.binary) == facts(deep.binary)


@pytest.mark.parametrize("deep", [False, True])
def test_cufft_searched_in_pieces_reads_like_the_whole(torch_venv: Path, deep: bool) -> None:
    """cuFFT's .ldata (265 MiB, 24,000 modules) cut into pieces as a folder scan with workers cuts it, each
    piece searched alone and the searches joined (here every job runs in this process: a pool of no
    workers): the serial reading, field for field, ``bytes_read`` included."""
    [path] = sorted(torch_venv.glob("nvidia/*/lib/libcufft.so.*[0-9]"))
    serial = binaries_source.scan_file(str(path), path.stat(), deep)
    assert serial.binary is not None and ".ldata" in serial.binary.sections
    reads = scan_workers.FileReads(0, deep, (scan_workers.SPLIT_BYTES, scan_workers.PIECE_BYTES))
    reads.submit(scan_workers.ReadFile(str(path), path.stat()))
    [(_job, reading)] = list(reads.results())
    reads.close()
    assert reading == serial and reads.rerun > 10  # the read, then its pieces
    # and the pieces joined without searching the section again whole (no piece failed, no step ran out)
    big = scan_workers.run_job(deep, scan_workers.SPLIT_BYTES, scan_workers.ReadFile(str(path), path.stat()))
    [(name, offset, size)] = big.sections
    jobs = scan_workers._piece_jobs(0, str(path), big.sections, scan_workers.PIECE_BYTES)
    pieces = [scan_workers.run_job(deep, None, job) for job in jobs]
    with path.open("rb") as fh:
        src = FileSource(fh, path.stat().st_size)
        joined = fatbin._join(src, pieces, offset + (-offset) % 8, offset + size, name, fatbin.MAX_RECORDS)
        whole = fatbin.scan_containers(src, offset, size, name)
    assert joined is not None and joined[1] == sum(1 + len(c.entries) for c in whole) > 40_000


# ---- official wheels whose one-pass stream read once gave ERROR (issue 12) ----------------------------------
# Each is fetched once into .work/real-wheels/ (the exact file: platform and Python pinned) and its ELF/ar
# members extracted next to it, as pip would install them.
@pytest.fixture(scope="session", params=sorted(torch_env.REAL_WHEELS), ids=lambda r: r.split("==")[0])
def real_wheel(request: pytest.FixtureRequest) -> tuple[Path, Path]:
    """(the wheel, a folder holding its ELF and ar members at their install paths)."""
    spec: str = request.param
    return _prepared(lambda: torch_env.installed_members(spec))


def test_real_wheel_reads_like_its_installed_files(real_wheel: tuple[Path, Path]) -> None:
    whl, installed = real_wheel
    inv = wheel_source.read(whl, ReadOptions(use_cache=False))
    assert inv.problems == [], [p.message for p in inv.problems]
    on_disk = scan_folder(installed, ReadOptions(use_cache=False))
    assert on_disk.problems == []
    files = {os.path.relpath(b.path, installed): b for b in on_disk.binaries}
    members = {b.path: b for b in inv.binaries}
    assert members.keys() == files.keys() and len(members) > 0
    for member, b in members.items():
        assert facts(b) == facts(files[member]), member
    # the G7 reading of GPU libraries is there, not only the ELF facts
    assert any(b.sass for b in members.values()) or whl.name.startswith("triton")


def test_real_wheel_fatbins_match_cuobjdump_all(real_wheel: tuple[Path, Path]) -> None:
    tool = cuobjdump_path()
    require(tool is not None, "cuobjdump not installed (pip install nvidia-cuda-cuobjdump)")
    assert tool is not None
    _whl, installed = real_wheel
    compared = 0
    for path in sorted(p for p in installed.rglob("*") if p.is_file() and not p.name.startswith(".complete")):
        want = cuobjdump_lists(tool, path, everything=True, timeout=600)  # -all: __nv_relfatbin too
        assert want == parsed_lists(path, everything=True), path
        compared += bool(want[0] or want[1])
    assert compared or "triton" in installed.parent.name  # triton's aarch64 libraries carry no fatbin


def test_real_wheel_gives_no_error_on_the_command_line(real_wheel: tuple[Path, Path], tmp_path: Path) -> None:
    whl, _installed = real_wheel
    proc = run_envcheck(str(whl), "--no-cache", "--format", "json", env={"ENVCHECK_CACHE_DIR": str(tmp_path)}, timeout=600)
    assert proc.returncode in (0, 1), proc.stdout[-2000:] + proc.stderr[-2000:]
    [target] = json.loads(proc.stdout)["targets"]
    assert not [f for f in target["findings"] if f["status"] == "ERROR"]


# ---- the whole-environment scan: fast, and never at the price of a finding (issue 18) -----------------------


def test_the_folder_scan_misses_no_elf_file_of_the_torch_env(torch_venv: Path) -> None:
    """The scan opens only binary names and executables; every file that starts with the ELF or ar magic
    (each file of the environment opened, the slow way) is still in the inventory, with the same facts."""
    inv = scan_folder(torch_venv, ReadOptions(use_cache=False))
    assert [p for p in inv.problems if not p.note] == []
    scanned = {b.path: b for b in inv.binaries}
    by_magic: dict[str, bool] = {}
    for folder, _dirs, names in os.walk(torch_venv):
        for name in names:
            path = os.path.join(folder, name)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            with open(path, "rb") as fh:
                if fh.read(8).startswith((b"\x7fELF", b"!<arch>\n")):
                    by_magic[path] = True
    assert scanned.keys() == by_magic.keys() and len(scanned) > 100
    for path in ("torch/lib/libtorch_cuda.so", "nvidia/cu13/lib/libcufft.so.12"):
        full = str(torch_venv / path)
        with open(full, "rb") as fh:
            whole = read_binary(FileSource(fh, os.path.getsize(full)), full).binary
        assert whole is not None and facts(scanned[full]) == facts(whole)


def test_torch_env_findings_are_the_same_cold_and_from_the_cache(torch_venv: Path, tmp_path: Path) -> None:
    env = {"ENVCHECK_CACHE_DIR": str(tmp_path)}
    runs = [run_envcheck(str(torch_venv), "--format", "json", *extra, env=env, timeout=600)
            for extra in (("--no-cache",), (), ())]  # no cache; filling the cache; from the cache
    reports = [json.loads(r.stdout)["targets"][0] for r in runs]
    assert reports[0]["findings"] == reports[1]["findings"] == reports[2]["findings"]
    binaries = [r["inventory"]["binaries"] for r in reports]  # bytes_read too: a searched section counts whole
    assert binaries[0] == binaries[1] == binaries[2] and reports[0]["inventory"]["packages"] == reports[2]["inventory"]["packages"]


def test_dist_info_reading_is_unchanged_on_the_torch_env(torch_venv: Path) -> None:
    """Every dist-info's package and RECORD files as the line-by-line reading gave them (issue 18 replaced it)."""
    from test_metadata_reader import assert_same_dist_infos

    assert assert_same_dist_infos(torch_venv) >= 20


def test_the_torch_env_from_its_folder_inventory_is_the_cold_scan(torch_venv: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Cache-filling, then from the folder inventory (envcheck.cache.FolderSnapshot): the same packages,
    binaries in the same order with the same fields and owners, and the same notes as a scan without cache."""
    from envcheck.cache import FolderSnapshot

    monkeypatch.setenv("ENVCHECK_CACHE_DIR", str(tmp_path))
    cold = scan_folder(torch_venv, ReadOptions(use_cache=False))
    filling = scan_folder(torch_venv, ReadOptions())
    snapshot = FolderSnapshot(f"folder:{os.path.abspath(torch_venv)}:deep=False")
    assert snapshot.load(str(torch_venv)) is not None  # the environment was installed long before
    cached = scan_folder(torch_venv, ReadOptions())
    for inv in (filling, cached):
        assert (inv.packages, inv.binaries, inv.problems) == (cold.packages, cold.binaries, cold.problems)
    assert len(cold.binaries) > 100 and len(cold.packages) > 20
    assert sum(b.distribution is not None for b in cached.binaries) > 100


def test_torch_env_scans_alike_in_worker_processes(torch_venv: Path) -> None:
    """Worker processes (several counts, on any machine) list and read the real environment: the very
    inventory of the serial scan (binaries in the same order with every field, packages, problems)."""
    serial = scan_in_child(torch_venv, use_cache=False, scan_workers=1)
    for workers in (2, 7):
        assert scan_in_child(torch_venv, use_cache=False, scan_workers=workers) == serial


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    fields = fh.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry))
    return found


def test_torch_env_scan_survives_a_killed_worker(torch_venv: Path) -> None:
    """A worker killed with SIGKILL in the middle of the scan (from outside, as the OOM killer would):
    its files are read again by the main process and the inventory is complete."""
    code = ("import json, sys; from pathlib import Path; from envcheck.sources.folder import scan_folder; "
            "from envcheck.sources import ReadOptions; "
            "print(json.dumps(scan_folder(Path(sys.argv[1]), ReadOptions(use_cache=False, scan_workers=int(sys.argv[2]))).to_json()))")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    serial = subprocess.run([sys.executable, "-c", code, str(torch_venv), "1"], capture_output=True, text=True, env=env,
                            timeout=600, check=True).stdout
    proc = subprocess.Popen([sys.executable, "-c", code, str(torch_venv), "2"], stdout=subprocess.PIPE, text=True, env=env)
    killed = None
    while killed is None and proc.poll() is None:
        workers = _children(proc.pid)
        if workers:
            try:
                os.kill(workers[0], signal.SIGKILL)
                killed = workers[0]
            except ProcessLookupError:
                pass
    out, _err = proc.communicate(timeout=600)
    assert killed is not None and proc.returncode == 0
    assert json.loads(out) == json.loads(serial)
