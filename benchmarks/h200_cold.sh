#!/bin/bash
# Quick H200 measurement for issue 18 (coldscan): whole-process cold scans with and without scan workers, a job timeline.
# (Old pool against new, side by side: benchmarks/bench_pool.py.)
# Usage (device): cd .work/dev-coldscan && bash benchmarks/h200_cold.sh SITE OUTDIR
SITE=${1:-/opt/torch/.venv/lib/python3.12/site-packages}
OUT=${2:-/tmp/out}
mkdir -p "$OUT"
unset PYTHONDONTWRITEBYTECODE
export ENVCHECK_CACHE_DIR=$OUT/cache
nproc; uptime
T="/usr/bin/time -f %e_s_%U_u_%S_s_%M_KB"
for i in 1 2 3; do $T python3 -c pass; done 2>&1 | tr '\n' ' '; echo " <- python -c pass"
# warm the page cache and compile bytecode once
ENVCHECK_SCAN_WORKERS=1 python3 -m envcheck "$SITE" -f json --no-cache > "$OUT/serial.json" 2>/dev/null
python3 -m envcheck "$SITE" -f json --no-cache > "$OUT/branch.json" 2>/dev/null
for w in "" 8 1; do
  for i in 1 2 3 4; do ENVCHECK_SCAN_WORKERS=$w $T python3 -m envcheck "$SITE" -f json --no-cache >/dev/null; done 2>&1 | tr '\n' ' '; echo " <- branch cold workers=${w:-default}"
done
python3 - "$OUT/serial.json" "$OUT/branch.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for x in (a, b):
    for t in x["targets"]:
        t.pop("seconds", None); t.pop("duration", None)
ia, ib = a["targets"][0]["inventory"], b["targets"][0]["inventory"]
print("binaries", len(ia["binaries"]), len(ib["binaries"]), "same inventory:", ia == ib,
      "same findings:", a["targets"][0]["findings"] == b["targets"][0]["findings"])
if ia != ib:
    for k in ia:
        if ia[k] != ib.get(k): print("differs:", k)
PY
python3 - "$SITE" <<'PY'
import sys, time, cProfile, pstats, resource, os, json, shutil
from pathlib import Path
from envcheck.sources import ReadOptions, scan_workers as w
from envcheck.sources.binaries import scan_file
from envcheck.sources.folder import scan_folder
from envcheck.sources.walk import walk
site = Path(sys.argv[1])
for n in (None, 1, None):
    t = time.perf_counter(); inv = scan_folder(site, ReadOptions(use_cache=False, scan_workers=n)); t = time.perf_counter() - t
    print("scan_folder workers", n, "%.3f s" % t, len(inv.binaries), "children maxrss MB", resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)
orig = w.run_job
shutil.rmtree("/tmp/jobs", ignore_errors=True); os.makedirs("/tmp/jobs")
def timed(deep, split_at, job):
    t = time.perf_counter(); r = orig(deep, split_at, job); e = time.perf_counter()
    if isinstance(job, w.ReadFile):
        kind, what, size = "read", job.path, job.stat.st_size
    elif isinstance(job, w.SearchPiece):
        kind, what, size = "piece", f"{job.path} {job.start:#x}", job.stop - job.start
    else:
        kind, what, size = "walk", len(job.starts), len(r.folders)
    with open(f"/tmp/jobs/{os.getpid()}", "a") as fh:
        fh.write(json.dumps([kind, t, e, what, size]) + "\n")
    return r
w.run_job = timed  # FileReads binds run_job when it is made, and the forked workers unpickle __main__.timed
t0 = time.perf_counter(); listed, read, pool, reading = w.read_ahead(str(site), False, w.worker_count()); t1 = time.perf_counter()
items = list(walk(str(site), [], [], None, None, listed)); t2 = time.perf_counter()
if pool is not None:
    for job, r in pool.results(): pass
t3 = time.perf_counter()
if pool is not None:
    pool.close()
print("after replay: still reading %d, done %.3f" % (len(reading), t3 - t0))
print("read_ahead %.3f replay %.3f folders %d read %d rerun %s" % (t1 - t0, t2 - t1, len(listed), len(read), pool and pool.rerun))
jobs = [json.loads(l) + [int(f)] for f in os.listdir("/tmp/jobs") for l in open(f"/tmp/jobs/{f}")]
print("jobs", len(jobs), "walk", sum(j[0] == "walk" for j in jobs), "work s %.3f" % sum(j[2] - j[1] for j in jobs),
      "first start %.3f last end %.3f" % (min(j[1] for j in jobs) - t0, max(j[2] for j in jobs) - t0))
for j in sorted(jobs, key=lambda j: j[1] - j[2])[:8]:
    print("  %.3f-%.3f %s %s %s" % (j[1] - t0, j[2] - t0, j[0], str(j[3])[-60:], j[4]))
cu = [j for j in jobs if "libcufft.so" in str(j[3])]
if cu:
    pieces = [j for j in cu if j[0] == "piece"]
    print("cufft: read %.3f-%.3f, %d pieces %.3f-%.3f (longest %.3f s)" % (
        min(j[1] for j in cu if j[0] == "read") - t0, max(j[2] for j in cu if j[0] == "read") - t0, len(pieces),
        min((j[1] for j in pieces), default=t0) - t0, max((j[2] for j in pieces), default=t0) - t0,
        max((j[2] - j[1] for j in pieces), default=0)))
by_pid = {}
for j in jobs: by_pid.setdefault(j[5], []).append(j)
print("per worker busy s", sorted(round(sum(x[2] - x[1] for x in v), 3) for v in by_pid.values()))
w.run_job = orig
p = next(iter(site.glob("nvidia/*/lib/libcufft.so*")), None)
if p:
    st = os.stat(p); t = time.perf_counter(); r = scan_file(str(p), st, False); print("cufft serial %.3f s" % (time.perf_counter() - t))
cProfile.run("scan_folder(site, ReadOptions(use_cache=False))", "/tmp/branch.prof")
pstats.Stats("/tmp/branch.prof").sort_stats("tottime").print_stats(18)
PY
