#!/usr/bin/env bash
# The live watch's memory over a long job (docs/watch.md, "Bounded memory"): a synthetic job of two
# ranks, each posting, starting and completing 1,000 all_reduces a second for 6 minutes and for an
# hour of the plugin's clock (360,000 and 3,600,000 operations per rank), each watched through its
# folder as `ppspec watch --dir` reads a job's; the peak RSS of each. The same memory for both is
# the claim. Needs about 2.5 GB of disk for the hour.
#   scripts/dev/watch_memory.sh [PPSPEC]   (default ./build/default/tools/ppspec)
# Writes docs/evidence/watch-memory/result.txt.
set -euo pipefail
cd "$(dirname "$0")/../.."
ppspec=${1:-./build/default/tools/ppspec}
out=docs/evidence/watch-memory/result.txt
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

job() {  # job OPS_PER_RANK DIR: the ranks' plugin traces, one operation a millisecond
  python3 tests/robustness-inputs/make_plugin_flood.py "$1" "$2" 1000000
}

{
  echo "# scripts/dev/watch_memory.sh: ppspec watch --dir over a synthetic 2-rank job, 1,000 all_reduces/s per rank"
  for minutes in 6 60; do
    ops=$((minutes * 60 * 1000))
    job "$ops" "$work/job$minutes"
    /usr/bin/time -f "%M %e" -o "$work/time" "$ppspec" watch --dir "$work/job$minutes" --ranks 2 --out "$work/out$minutes" > "$work/watch$minutes.txt"
    read -r kb seconds < "$work/time"
    echo "$minutes min of the job ($ops operations per rank, $((ops * 2)) in all): peak RSS $((kb / 1024)) MB, $seconds s; $(grep -o '[0-9]* ranks, [0-9]* operations posted, [0-9]* completed, [0-9]* line(s) dropped' "$work/watch$minutes.txt")"
    rm -rf "$work/job$minutes" "$work/out$minutes"
  done
} | tee "$out"
