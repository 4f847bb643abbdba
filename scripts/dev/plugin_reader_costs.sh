#!/usr/bin/env bash
# What reading NCCL profiler plugin traces costs (docs/tests.md, "Bounded resources"; docs/watch.md):
# `ppspec check` of 100,000 sends whose lines all wait for a peer NCCL never named, and `ppspec watch
# --dir` / `ppspec check` of a clean 2-rank job of 800,000 all_reduces per rank, each on one core,
# wall time and peak RSS. Given two binaries, both are measured on the same inputs, in turn.
#   scripts/dev/plugin_reader_costs.sh [PPSPEC...]   (default ./build/default/tools/ppspec)
# Writes docs/evidence/plugin-reader-costs/result.txt.
set -euo pipefail
cd "$(dirname "$0")/../.."
binaries=("$@")
[ ${#binaries[@]} -gt 0 ] || binaries=(./build/default/tools/ppspec)
out=docs/evidence/plugin-reader-costs/result.txt
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 tests/robustness-inputs/make_plugin_held.py 100000 "$work/held"
python3 tests/robustness-inputs/make_plugin_flood.py 800000 "$work/flood"
one_core() { if command -v taskset > /dev/null; then taskset -c 0 "$@"; else "$@"; fi; }
measure() {  # measure LABEL COMMAND...: "LABEL: S s, M MB"
  local label=$1
  shift
  one_core /usr/bin/time -f "%e %M" -o "$work/time" "$@" > /dev/null 2>&1 || true
  read -r seconds kb < <(tail -1 "$work/time")
  echo "  $label: $seconds s, $((kb / 1024)) MB"
}
{
  echo "# scripts/dev/plugin_reader_costs.sh, one core each"
  for b in "${binaries[@]}"; do
    echo "$("$b" --version)"
    measure "check, 100,000 held lines" "$b" check "$work/held"
    rm -rf "$work/w"
    measure "watch --dir, 2 x 800,000 operations" "$b" watch --dir "$work/flood" --ranks 2 --out "$work/w"
    measure "check, 2 x 800,000 operations" "$b" check "$work/flood"
  done
} | tee "$out"
