#!/bin/bash
# Issue 18, cached whole-environment check: before/after side by side (BENCHMARKS.md, "Start-up and shut-down").
# Usage: in a folder holding before/envcheck and after/envcheck (two checkouts' packages):
#   bash /path/to/benchmarks/h200_startup.sh SITE OUTDIR   (REPS=11 rounds by default)
B=$(cd "$(dirname "$0")" && pwd)
SITE=${1:-/opt/torch/.venv/lib/python3.12/site-packages}; OUT=${2:-/tmp/out}; mkdir -p $OUT
unset PYTHONDONTWRITEBYTECODE
H=$PWD
{
nproc; uptime; python3 -c "import sys, packaging; print(sys.version.split()[0], 'packaging', packaging.__version__)"
for t in before after; do
  ( cd $H && export PYTHONPATH=$H/$t ENVCHECK_CACHE_DIR=$OUT/c-$t
    /usr/bin/time -f "$t fill %e s" python3 -m envcheck $SITE -f json > $OUT/$t-fill.json 2>$OUT/$t.err; tail -1 $OUT/$t.err
    python3 -m envcheck $SITE -f json > $OUT/$t.json; echo "$t rc=$?"; python3 -m envcheck $SITE > $OUT/$t.txt )
done
cmp $OUT/before.txt $OUT/after.txt && echo "text output identical"
python3 - $OUT <<'PY'
import json, sys
o = sys.argv[1]
a, b = (json.load(open(f"{o}/{t}.json")) for t in ("before", "after"))
fa, fb = (json.load(open(f"{o}/{t}-fill.json")) for t in ("before", "after"))
print("findings identical (cached):", a["targets"][0]["findings"] == b["targets"][0]["findings"], "(filling):", fa["targets"][0]["findings"] == fb["targets"][0]["findings"], "fill==cached after:", fb == b)
ia, ib = a["targets"][0]["inventory"], b["targets"][0]["inventory"]
for x in (ia, ib):
    for bi in x["binaries"]: bi.pop("bytes_read", None)
print("inventory identical but bytes_read:", ia == ib, len(ib["binaries"]), "binaries", len(ib["packages"]), "packages")
PY
python3 $B/startup_timing.py $SITE $OUT ${REPS:-11}
for f in json text; do for i in 1 2 3 4 5; do PYTHONPATH=$H/after ENVCHECK_CACHE_DIR=$OUT/c-after python3 $B/startup_stages.py $SITE -f $f | tail -12 | tr '\n' '|'; echo; done; done
} > $OUT/results.txt 2>&1
for t in before after; do PYTHONPATH=$H/$t ENVCHECK_CACHE_DIR=$OUT/c-$t python3 -X importtime -m envcheck $SITE -f json 2> $OUT/imp-$t.txt >/dev/null; done
python3 -X importtime -c pass 2> $OUT/imp-pass.txt
rm -rf $OUT/c-before $OUT/c-after $OUT/before-fill.json $OUT/after-fill.json $OUT/before.json $OUT/before.err $OUT/after.err
ls -la $OUT
