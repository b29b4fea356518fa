#!/usr/bin/env bash
# Run every atheris harness (or the ones named) for SECONDS each, one at a time, niced, with a memory
# limit and a 2 s per-input timeout. A harness that stops early (a hang or an out-of-memory input) is
# restarted for the rest of its time; the input is kept under .work/fuzz/<name>/artifacts/.
#
#   fuzz/run.sh [SECONDS] [HARNESS ...]      e.g.  fuzz/run.sh 300   or   fuzz/run.sh 60 requirements elf
#
# Unexpected exceptions are recorded (one per distinct crash site) under .work/fuzz/<name>/findings/
# and the run goes on. Each run appends "date host harness seconds executions stops findings" to
# .work/fuzz/runs.tsv; fuzz/README.md records the totals. Environment: FUZZ_RSS_MB (default 2048);
# FUZZ_RUNS=N stops a harness once it has executed N inputs (SECONDS stays the upper bound), e.g.
#   FUZZ_RUNS=1000000 fuzz/run.sh 3600 fatbin      # a million executions, or an hour, whichever first
set -u
cd "$(dirname "$0")/.."
seconds="${1:-60}"
shift || true
if [ "$#" -gt 0 ]; then names=("$@"); else names=(); for f in fuzz/fuzz_*.py; do n="${f#fuzz/fuzz_}"; names+=("${n%.py}"); done; fi
work=".work/fuzz"
mkdir -p "$work"
rss="${FUZZ_RSS_MB:-2048}"
want="${FUZZ_RUNS:-0}"
host="$(hostname)/$(nproc)cpu"
for name in "${names[@]}"; do
  script="fuzz/fuzz_${name}.py"
  [ -f "$script" ] || { echo "no harness $script" >&2; continue; }
  left="$seconds"; total=0; stops=0
  log="$work/$name/last.$$.log"  # per process: two campaigns of one harness may run at once
  mkdir -p "$work/$name"
  while [ "$left" -gt 0 ]; do
    started=$(date +%s)
    limit=()
    if [ "$want" -gt 0 ]; then
      [ "$total" -ge "$want" ] && break
      limit=(-runs=$((want - total)))
    fi
    ENVCHECK_FUZZ_KEEP_GOING=1 nice -n 19 python3 "$script" -max_total_time="$left" -rss_limit_mb="$rss" \
      -timeout=2 -print_final_stats=1 "${limit[@]}" </dev/null >"$log" 2>&1
    rc=$?
    runs=$(grep -oE 'stat::number_of_executed_units: [0-9]+' "$log" | grep -oE '[0-9]+$' | tail -1)
    [ -n "$runs" ] || runs=$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#')
    total=$((total + ${runs:-0}))
    used=$(( $(date +%s) - started )); [ "$used" -lt 1 ] && used=1
    left=$((left - used))
    if [ "$rc" -ne 0 ]; then
      stops=$((stops + 1))
      echo "[$name] stopped (rc=$rc): $(grep -E 'ERROR: libFuzzer|Uncaught|out-of-memory|timeout' "$log" | head -2 | tr '\n' ' ')" >&2
      [ "$stops" -ge 20 ] && break
    fi
  done
  findings=$(ls "$work/$name/findings/"*.txt 2>/dev/null | wc -l)
  spent=$((seconds - left)); [ "$spent" -gt "$seconds" ] && spent="$seconds"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$host" "$name" "$spent" "$total" "$stops" "$findings" | tee -a "$work/runs.tsv"
done
