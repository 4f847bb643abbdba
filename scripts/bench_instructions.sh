#!/usr/bin/env bash
# Instructions executed by one iteration of each benchmark, before and after a change, counted by
# valgrind's callgrind: a count that does not drift with the machine's speed, where timings on this
# shared 2-core machine vary by +-30% between rounds (scripts/bench_interleaved.py says how much).
# The count includes the benchmark program's start and the scenario's loading, the same in both.
#   scripts/bench_instructions.sh BENCH_BEFORE BENCH_AFTER BENCHMARK...    (exact names)
set -euo pipefail
(($# >= 3)) || { echo "usage: scripts/bench_instructions.sh BENCH_BEFORE BENCH_AFTER BENCHMARK..." >&2; exit 2; }
before=$1 after=$2
shift 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
count() {  # binary benchmark -> instructions
  valgrind --tool=callgrind --callgrind-out-file="$work/out" "$1" --benchmark_filter="^$2\$" --benchmark_min_time=0 \
    > /dev/null 2> "$work/log"
  grep -m1 -E '^==[0-9]+== Collected : ' "$work/log" | awk '{print $4}'
}
printf '%-44s %16s %16s %8s\n' benchmark before after after/before
for b in "$@"; do
  x=$(count "$before" "$b")
  y=$(count "$after" "$b")
  printf '%-44s %16s %16s %8.4f\n' "$b" "$x" "$y" "$(echo "$y / $x" | bc -l)"
done
