#!/usr/bin/env bash
# Instructions executed by one iteration of each benchmark, before and after a change, counted by
# valgrind's callgrind: a count that does not drift with the machine's speed, where timings on this
# shared 2-core machine vary by +-30% between rounds (scripts/dev/bench_interleaved.py says how much).
# The count includes the benchmark program's start and the scenario's loading, the same in both.
#   scripts/dev/bench_instructions.sh BENCH_BEFORE BENCH_AFTER BENCHMARK...    (exact names)
# With --run, the binaries are two `ppspec` and each item a scenario file: a whole `ppspec run` of it
# (scripts/dev/run_instructions.sh).
#   scripts/dev/bench_instructions.sh --run PPSPEC_BEFORE PPSPEC_AFTER SCENARIO...
set -euo pipefail
run=0
[[ ${1:-} == --run ]] && { run=1; shift; }
(($# >= 3)) || { echo "usage: scripts/dev/bench_instructions.sh [--run] BEFORE AFTER ITEM..." >&2; exit 2; }
before=$1 after=$2
shift 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
count() {  # binary item -> instructions
  if ((run)); then
    valgrind --tool=callgrind --callgrind-out-file="$work/out" "$1" run "$2" > /dev/null 2> "$work/log" || true
  else
    valgrind --tool=callgrind --callgrind-out-file="$work/out" "$1" --benchmark_filter="^$2\$" --benchmark_min_time=0 \
      > /dev/null 2> "$work/log"
  fi
  grep -m1 -E '^==[0-9]+== Collected : ' "$work/log" | awk '{print $4}'
}
if ((run)); then label=scenario width=48 number=15 ratio=''; else label=benchmark width=44 number=16 ratio=8; fi
printf "%-${width}s %${number}s %${number}s %${ratio}s\n" "$label" before after after/before
for item in "$@"; do
  x=$(count "$before" "$item")
  y=$(count "$after" "$item")
  [[ -n $x && -n $y ]] || { echo "scripts/dev/bench_instructions.sh: callgrind counted nothing for $item" >&2; exit 1; }
  printf "%-${width}s %${number}s %${number}s %${ratio}.4f\n" "$item" "$x" "$y" "$(python3 -c "print($y / $x)")"
done
