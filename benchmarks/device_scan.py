"""Device check (issue 3): scan a real CUDA 13 PyTorch stack's whole site-packages and compare every
fatbin-bearing file's architecture lists with cuobjdump.

Run once on the lent GPU machine, from the repository root:

    PYTHONPATH=. python3 benchmarks/device_scan.py            # writes $OUT/device_scan.json

What it does, within a time budget (default 7.5 minutes, ``--budget``):
  1. asks ``python3`` (``--python``) for its site-packages and scans them with envcheck (no cache),
     timing the scan and recording bytes read;
  2. for every ELF file with fatbins in the standard sections, runs ``cuobjdump --list-elf --list-ptx``
     (in parallel, biggest files first) and compares the ordered ELF and PTX label lists with envcheck's
     header walk; files cuobjdump fails on are counted and skipped, files not reached in the budget are
     counted as not compared;
  3. runs envcheck's checks over the inventory (G1, G7, ARCH, ...) and keeps the worst status per
     gotcha plus every FAIL/ERROR message;
  4. writes the summary to ``$OUT/device_scan.json`` (or ``--output``) and a short text summary to
     stdout. The lead keeps that JSON as ``fixtures/device/h200/device_scan.json`` and a line in
     BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.cuobjdump_oracle import cuobjdump_lists, find_cuobjdump, parsed_lists  # noqa: E402
from envcheck.inspect import fatbin  # noqa: E402
from envcheck.inspect.elf import MalformedBinary  # noqa: E402
from envcheck.model import Inventory  # noqa: E402
from envcheck.sources import ReadOptions  # noqa: E402
from envcheck.sources.folder import scan_folder, site_packages_of  # noqa: E402


def judge(inv: Inventory) -> dict[str, object]:
    """envcheck's checks over the scanned inventory: worst status per gotcha and the FAIL/ERROR lines."""
    try:
        from envcheck import engine
        from envcheck.model import Status
        from envcheck.profile import load_profile

        found = engine.evaluate(inv, load_profile("dgx-spark"), "folder")
    except Exception as exc:  # the device may lack an optional dependency of another check
        return {"error": f"{type(exc).__name__}: {exc}"}
    worst: dict[str, str] = {}
    for f in found:
        if f.gotcha not in worst or f.status.rank > Status[worst[f.gotcha]].rank:
            worst[f.gotcha] = f.status.value
    bad = [f"{f.status.value} {f.rule}: {f.message}" for f in found if f.status in (Status.FAIL, Status.ERROR)]
    warn = [f"{f.status.value} {f.rule}: {f.message}" for f in found if f.status is Status.WARN]
    return {"worst": worst, "fail_or_error": bad[:200], "warn": warn[:200]}


def main() -> int:
    parser = argparse.ArgumentParser(description="scan site-packages and compare fatbin archs with cuobjdump")
    parser.add_argument("--python", default="python3", help="interpreter whose site-packages to scan")
    parser.add_argument("--budget", type=float, default=450.0, help="seconds for the whole run (default 450)")
    parser.add_argument("--workers", type=int, default=max(1, min(8, (os.cpu_count() or 2) // 2)))
    parser.add_argument("--output", help="JSON path (default: $OUT/device_scan.json)")
    args = parser.parse_args()
    started = time.perf_counter()
    deadline = started + args.budget
    out_path = Path(args.output) if args.output else Path(os.environ.get("OUT", ".")) / "device_scan.json"
    summary: dict[str, object] = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "python": args.python,
    }
    tool = find_cuobjdump()
    summary["cuobjdump"] = tool
    sites = site_packages_of(args.python)
    summary["site_packages"] = [str(s) for s in sites]
    inv = Inventory(context="installed")
    t0 = time.perf_counter()
    for site in sites:
        inv.extend(scan_folder(site, ReadOptions(use_cache=False)))
    scan_s = time.perf_counter() - t0
    binaries = inv.binaries
    summary["scan"] = {
        "seconds": round(scan_s, 3),
        "elf_files": len(binaries),
        "elf_bytes": sum(b.size for b in binaries),
        "bytes_read": sum(b.bytes_read for b in binaries),
        "problems": [p.message for p in inv.problems][:50],
        "sm121": {level: sum(1 for b in binaries if b.sm121 == level) for level in ("native", "compatible", "ptx-jit", "none")},
        "with_sm121a": sorted(b.path for b in binaries if "sm_121a" in b.sass)[:50],
        "cuda_major": {str(m): sum(1 for b in binaries if b.cuda_major == m) for m in sorted({b.cuda_major for b in binaries if b.cuda_major})},
    }
    try:
        import torch

        summary["torch"] = {"version": torch.__version__, "cuda": torch.version.cuda,
                            "arch_list": torch.cuda.get_arch_list() if torch.cuda.is_available() else [],
                            "capability": list(torch.cuda.get_device_capability()) if torch.cuda.is_available() else None}
    except Exception as exc:  # reported, not fatal
        summary["torch"] = {"error": f"{type(exc).__name__}: {exc}"}
    summary["checks"] = judge(inv)

    # which files have fatbins in the standard sections (what cuobjdump can see)
    candidates: list[tuple[str, int, tuple[list[str], list[str]]]] = []
    parse_errors: list[str] = []
    for b in binaries:
        if not any(s in fatbin.STANDARD_SECTIONS for s in b.sections):
            continue
        try:
            ours = parsed_lists(b.path)
        except (MalformedBinary, OSError) as exc:
            parse_errors.append(f"{b.path}: {exc}")
            continue
        candidates.append((b.path, b.size, ours))
    candidates.sort(key=lambda c: -c[1])
    compare: dict[str, object] = {"fatbin_files": len(candidates), "parse_errors": parse_errors}
    matched: list[str] = []
    mismatched: list[dict[str, object]] = []
    failed: list[dict[str, str]] = []
    not_compared: list[str] = []
    if tool is None:
        compare["skipped"] = "cuobjdump not found"
        not_compared = [c[0] for c in candidates]
    else:
        t1 = time.perf_counter()
        with ThreadPoolExecutor(max_workers=args.workers) as pool:
            futures = {}
            for path, _size, ours in candidates:
                futures[pool.submit(_compare_one, tool, path, deadline)] = (path, ours)
            for fut in as_completed(futures):
                path, ours = futures[fut]
                theirs = fut.result()
                if theirs is None:
                    not_compared.append(path)
                elif isinstance(theirs, str):
                    failed.append({"path": path, "reason": theirs})
                elif list(theirs) == list(ours):
                    matched.append(path)
                else:
                    mismatched.append({"path": path, "envcheck": {"elf": ours[0][:50], "ptx": ours[1][:50], "n": [len(ours[0]), len(ours[1])]},
                                       "cuobjdump": {"elf": theirs[0][:50], "ptx": theirs[1][:50], "n": [len(theirs[0]), len(theirs[1])]}})
        compare["cuobjdump_seconds"] = round(time.perf_counter() - t1, 1)
    entries_compared = 0
    for path, _size, ours in candidates:
        if path in set(matched):
            entries_compared += len(ours[0]) + len(ours[1])
    compare.update({
        "matched": len(matched), "mismatched": len(mismatched), "cuobjdump_failed": len(failed),
        "not_compared_time_budget": len(not_compared), "entries_in_matched_files": entries_compared,
        "mismatches": mismatched[:20], "failures": failed[:50], "not_compared": not_compared[:50],
    })
    summary["compare"] = compare
    summary["total_seconds"] = round(time.perf_counter() - started, 1)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(summary, indent=2))

    scan = summary["scan"]
    assert isinstance(scan, dict)
    print(f"envcheck device scan {summary['date']} on {summary['machine']}")
    print(f"  scanned {scan['elf_files']} ELF files ({scan['elf_bytes'] / 1e9:.2f} GB) in {scan['seconds']} s, "
          f"read {scan['bytes_read'] / 1e6:.1f} MB; sm121 levels {scan['sm121']}")
    print(f"  cuobjdump comparison: {len(matched)} identical, {len(mismatched)} different, {len(failed)} cuobjdump failures, "
          f"{len(not_compared)} not compared (time), of {len(candidates)} files with fatbins")
    checks = summary["checks"]
    if isinstance(checks, dict) and "worst" in checks:
        print(f"  checks: {checks['worst']}")
    print(f"  written {out_path} ({summary['total_seconds']} s)")
    return 0 if not mismatched else 1


def _compare_one(tool: str, path: str, deadline: float) -> tuple[list[str], list[str]] | str | None:
    left = deadline - time.perf_counter()
    if left < 5:
        return None
    return cuobjdump_lists(tool, path, timeout=left)


if __name__ == "__main__":
    sys.exit(main())
