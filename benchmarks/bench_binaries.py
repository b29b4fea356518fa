"""Benchmark: binaries (issue 3). Whole CUDA 13 torch environment and the torch wheel.

    python3 benchmarks/bench_binaries.py --env .work/torch-venv --wheel .work/torch-wheel/torch-2.14.1-*.whl

Measures (warm page cache; each envcheck run is a fresh `python3 -m envcheck` process, interpreter start
included; peak RSS and CPU time from one more run of each series through a wrapper that reads them):
  * envcheck over the environment (no cache, 11 runs with --format json and 11 with the default text
    format: best, median, worst): wall time, CPU time (user + system, of the main
    process and its scan workers), peak RSS (VmHWM of the main process; the biggest worker's peak apart,
    its pages shared with the main process counted), bytes read per ELF file; and the same with
    ENVCHECK_SCAN_WORKERS=1 (no workers, best of 3);
  * `readelf -d` + `cuobjdump --list-elf --list-ptx` over the same ELF files, and whether every DT_NEEDED
    list and every arch list is identical to envcheck's (cuobjdump's own view: standard sections);
  * the cached second scan (11 runs with --format json, 11 with the default text format);
  * the wheel: envcheck vs `unzip -p` of the same ELF members vs `auditwheel show` (auditwheel is pip
    installed into a throwaway venv under .work/).
Prints a JSON summary (and the rows for BENCHMARKS.md). Nothing here is asserted by tests.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.cuobjdump_oracle import cuobjdump_lists, find_cuobjdump, parsed_lists  # noqa: E402
from envcheck.sources import ReadOptions  # noqa: E402
from envcheck.sources.folder import scan_folder  # noqa: E402


def timed_process(cmd: list[str], env: dict[str, str] | None = None, stdout: int | None = subprocess.DEVNULL) -> tuple[float, float, int]:
    """(wall seconds, peak RSS MB, exit code) of a child process (its CPU seconds go to LAST_CPU)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.DEVNULL, env=env)
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    LAST_CPU[cmd[0]] = usage.ru_utime + usage.ru_stime
    return wall, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


LAST_CPU: dict[str, float] = {}


def timed_envcheck(cmd: list[str], env: dict[str, str]) -> tuple[float, float, int, float]:
    """(wall s, peak RSS MiB from VmHWM, exit code, CPU s) of one envcheck process (``cmd`` = its arguments).

    ru_maxrss of a spawned child counts the parent's RSS at exec time on Linux (this script holds a
    scanned inventory), so the child reports its own high-water mark instead."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", RSS_WRAPPER, *cmd], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _out, err = proc.communicate()
    wall = time.perf_counter() - start
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = usage.ru_utime + usage.ru_stime - before.ru_utime - before.ru_stime
    CHILD_CPU[0] = usage.ru_utime + usage.ru_stime
    rss = int(err.decode(errors="replace").split("\nMAXRSS_KB=", 1)[-1].split()[0]) / 1024 if b"\nMAXRSS_KB=" in err else float("nan")
    if b"WORKERS_MAXRSS_KB=" in err:
        WORKERS_RSS.append(int(err.decode(errors="replace").rsplit("WORKERS_MAXRSS_KB=", 1)[-1].split()[0]) / 1024)
    return wall, rss, proc.returncode, cpu


WORKERS_RSS: list[float] = []  # peak RSS of the biggest scan worker of each run (pages shared with the main process counted)


CHILD_CPU = [resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime + resource.getrusage(resource.RUSAGE_CHILDREN).ru_stime]
RSS_WRAPPER = """
import sys
from envcheck.cli import main
code = main(sys.argv[1:])
hwm = next(line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM:"))
import resource
workers = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
sys.stderr.write(f"\\nMAXRSS_KB={hwm}\\nWORKERS_MAXRSS_KB={workers}\\n")
sys.exit(code)
"""


def best(n: int, fn):  # type: ignore[no-untyped-def]
    runs = [fn() for _ in range(n)]
    ALL_WALLS.append(sorted(r[0] for r in runs))
    return min(runs, key=lambda r: r[0])


ALL_WALLS: list[list[float]] = []  # every run's wall time of each best() call, sorted


def spread() -> dict[str, float]:
    """Best, median and worst wall time of the last :func:`best` call's runs."""
    walls = ALL_WALLS[-1]
    return {"best": round(walls[0], 3), "median": round(walls[len(walls) // 2], 3), "worst": round(walls[-1], 3)}


def cuobjdump_tool() -> str:
    tool = find_cuobjdump()
    if tool is None:
        raise SystemExit("cuobjdump not found (pip install nvidia-cuda-cuobjdump)")
    return tool


def readelf_needed(path: str) -> list[str]:
    out = subprocess.run(["readelf", "-d", "-W", path], capture_output=True, text=True).stdout
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)


def bench_env(env: Path, peers: bool) -> dict[str, object]:
    result: dict[str, object] = {}
    cache = tempfile.mkdtemp(prefix="envcheck-bench-cache-")
    base_env = dict(os.environ, ENVCHECK_CACHE_DIR=cache, PYTHONPATH=str(REPO))
    # As installed (pip writes bytecode): without it every run compiles 70 modules first (0.2 s here).
    base_env.pop("PYTHONDONTWRITEBYTECODE", None)
    timed_envcheck(["--version"], base_env)
    cmd = [str(env), "--format", "json", "--no-cache"]

    def command(args: list[str], env: dict[str, str]) -> tuple[float, float, int]:
        # what a user runs (`python3 -m envcheck`: it ends the process once the report is flushed); the
        # peak RSS comes from one more run through RSS_WRAPPER (timed_envcheck), which tears down as main() returns
        return timed_process([sys.executable, "-m", "envcheck", *args], env)

    wall = best(11, lambda: command(cmd, base_env))[0]
    result["envcheck_no_cache_s"] = round(wall, 3)
    result["envcheck_no_cache_runs_s"] = spread()
    best(11, lambda: command([str(env), "--no-cache"], base_env))  # the default (text) format, what a user runs
    result["envcheck_no_cache_text_runs_s"] = spread()
    _wall, rss, _rc, cpu = timed_envcheck(cmd, base_env)
    result["envcheck_no_cache_cpu_s"] = round(cpu, 3)
    result["envcheck_peak_rss_mb"] = round(rss, 1)
    result["envcheck_workers_peak_rss_mb"] = round(max(WORKERS_RSS, default=0.0), 1)
    # the same scan in the main process only (ENVCHECK_SCAN_WORKERS=1), for scale
    serial_env = {**base_env, "ENVCHECK_SCAN_WORKERS": "1"}
    wall1 = best(3, lambda: command(cmd, serial_env))[0]
    _wall, rss1, _rc, cpu1 = timed_envcheck(cmd, serial_env)
    result["envcheck_no_cache_serial_s"] = round(wall1, 3)
    result["envcheck_no_cache_serial_cpu_s"] = round(cpu1, 3)
    result["envcheck_no_cache_serial_peak_rss_mb"] = round(rss1, 1)
    # first run with the cache fills it; then the second scan
    command([str(env), "--format", "json"], base_env)
    wall2 = best(11, lambda: command([str(env), "--format", "json"], base_env))[0]
    result["envcheck_cached_s"] = round(wall2, 3)
    result["envcheck_cached_runs_s"] = spread()
    best(11, lambda: command([str(env)], base_env))  # the default (text) format
    result["envcheck_cached_text_runs_s"] = spread()
    _wall, rss2, _rc, cpu2 = timed_envcheck([str(env), "--format", "json"], base_env)
    result["envcheck_cached_cpu_s"] = round(cpu2, 3)
    result["envcheck_cached_peak_rss_mb"] = round(rss2, 1)
    # the interpreter's own floor on this machine, for scale
    result["python_c_pass_s"] = round(best(5, lambda: timed_process([sys.executable, "-c", "pass"]))[0], 3)
    result["python_c_pass_runs_s"] = spread()
    os.environ["ENVCHECK_CACHE_DIR"] = cache  # the cache the CLI runs above filled
    runs = []
    for _ in range(5):
        start = time.perf_counter()
        scan_folder(env, ReadOptions(use_cache=True))
        runs.append(time.perf_counter() - start)
    result["cached_scan_in_process_s"] = round(min(runs), 3)
    result["load_average"] = os.getloadavg()[0]
    inv = scan_folder(env, ReadOptions(use_cache=False))
    elfs = [b for b in inv.binaries]
    result["elf_files"] = len(elfs)
    result["elf_bytes_total"] = sum(b.size for b in elfs)
    result["bytes_read_total"] = sum(b.bytes_read for b in elfs)
    result["bytes_read_per_file_mean"] = int(sum(b.bytes_read for b in elfs) / max(1, len(elfs)))
    ordered = sorted(elfs, key=lambda b: -b.bytes_read)
    result["bytes_read_largest"] = [(os.path.relpath(b.path, env), b.size, b.bytes_read) for b in ordered[:5]]
    cuda = next((b for b in elfs if b.path.endswith("libtorch_cuda.so")), None)
    if cuda is not None:
        result["libtorch_cuda_bytes_read"] = cuda.bytes_read
    if not peers:
        return result
    tool = cuobjdump_tool()
    start = time.perf_counter()
    cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    peer: dict[str, tuple[list[str], tuple[list[str], list[str]] | str]] = {}
    for b in elfs:
        peer[b.path] = (readelf_needed(b.path), cuobjdump_lists(tool, b.path))
    result["readelf_plus_cuobjdump_s"] = round(time.perf_counter() - start, 2)
    cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    result["readelf_plus_cuobjdump_cpu_s"] = round(cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime, 2)
    CHILD_CPU[0] = cpu1.ru_utime + cpu1.ru_stime
    # peak RSS of cuobjdump on the biggest fatbin
    if cuda is not None:
        _w, crss, _ = timed_process([tool, "--list-elf", "--list-ptx", cuda.path])
        result["cuobjdump_libtorch_cuda_peak_rss_mb"] = round(crss, 1)
    needed_diff = [b.path for b in elfs if b.elf_type != "AR" and list(b.needed) != peer[b.path][0]]
    arch_diff, skipped = [], 0
    for b in elfs:
        theirs = peer[b.path][1]
        if isinstance(theirs, str):  # cuobjdump failed on this file
            skipped += 1
            continue
        if parsed_lists(b.path) != theirs:
            arch_diff.append(b.path)
    result["needed_mismatches"] = needed_diff
    result["arch_mismatches"] = arch_diff
    result["cuobjdump_failed"] = skipped
    result["speedup_vs_peers"] = round(float(result["readelf_plus_cuobjdump_s"]) / float(result["envcheck_no_cache_s"]), 1)  # type: ignore[arg-type]
    cold_median = result["envcheck_no_cache_runs_s"]["median"]  # type: ignore[index]
    result["speedup_vs_peers_median"] = round(float(result["readelf_plus_cuobjdump_s"]) / cold_median, 1)  # type: ignore[arg-type]
    text_median = result["envcheck_no_cache_text_runs_s"]["median"]  # type: ignore[index]
    result["speedup_vs_peers_text_median"] = round(float(result["readelf_plus_cuobjdump_s"]) / text_median, 1)  # type: ignore[arg-type]
    result["speedup_vs_peers_cpu"] = round(float(result["readelf_plus_cuobjdump_cpu_s"]) / float(result["envcheck_no_cache_cpu_s"]), 1)  # type: ignore[arg-type]
    result["load_average_after"] = os.getloadavg()[0]
    return result


def bench_wheel(wheel: Path, peers: bool) -> dict[str, object]:
    result: dict[str, object] = {}
    cache = tempfile.mkdtemp(prefix="envcheck-bench-cache-")
    env = dict(os.environ, ENVCHECK_CACHE_DIR=cache, PYTHONPATH=str(REPO))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    wall, rss, _ = best(3, lambda: timed_process([sys.executable, "-m", "envcheck", str(wheel), "--format", "json", "--no-cache"], env))
    result["envcheck_wheel_s"] = round(wall, 2)
    result["envcheck_wheel_peak_rss_mb"] = round(rss, 1)
    timed_process([sys.executable, "-m", "envcheck", str(wheel), "--format", "json"], env)
    result["envcheck_wheel_cached_s"] = round(best(3, lambda: timed_process([sys.executable, "-m", "envcheck", str(wheel), "--format", "json"], env))[0], 3)
    with zipfile.ZipFile(wheel) as zf:
        members = [i.filename for i in zf.infolist() if i.filename.endswith((".so",)) or ".so." in i.filename]
    result["elf_like_members"] = len(members)
    if not peers:
        return result
    result["unzip_p_s"] = round(best(3, lambda: timed_process(["unzip", "-p", str(wheel), *members]))[0], 2)
    venv = REPO / ".work" / "auditwheel-venv"
    if not (venv / "bin" / "auditwheel").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "auditwheel"], check=True)
    result["auditwheel_show_s"] = round(best(1, lambda: timed_process([str(venv / "bin" / "auditwheel"), "show", str(wheel)]))[0], 2)
    result["ratio_unzip"] = round(float(result["unzip_p_s"]) / float(result["envcheck_wheel_s"]), 2)  # type: ignore[arg-type]
    result["ratio_auditwheel"] = round(float(result["auditwheel_show_s"]) / float(result["envcheck_wheel_s"]), 1)  # type: ignore[arg-type]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--env", type=Path, help="an environment folder (a venv or site-packages)")
    parser.add_argument("--wheel", type=Path, help="a wheel file")
    parser.add_argument("--no-peers", action="store_true", help="skip readelf/cuobjdump/unzip/auditwheel")
    args = parser.parse_args()
    out: dict[str, object] = {
        "date": time.strftime("%Y-%m-%d"), "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
    }
    if args.env:
        out["env"] = bench_env(args.env, not args.no_peers)
    if args.wheel:
        out["wheel"] = bench_wheel(args.wheel, not args.no_peers)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
