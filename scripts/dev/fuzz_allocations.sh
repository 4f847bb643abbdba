#!/usr/bin/env bash
# Heap allocations of a clean fuzz campaign, before and after a change, counted by heaptrack (a
# count that does not drift with the machine's speed): `ppspec fuzz SPACE --seed SEED --cases N`
# under each binary.
#   scripts/dev/fuzz_allocations.sh BINARY_BEFORE BINARY_AFTER [SPACE] [SEED] [CASES]
set -euo pipefail
cd "$(dirname "$0")/../.."
before=$1 after=$2 space=${3:-scenarios/spaces/pp2.toml} seed=${4:-1} cases=${5:-60}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
count() {  # binary -> allocation calls
  rm -rf "$work/out" "$work"/ht*
  heaptrack -o "$work/ht" "$1" fuzz "$space" --seed "$seed" --cases "$cases" --out "$work/out" > /dev/null 2>&1
  heaptrack_print "$work"/ht*.zst 2> /dev/null | grep -m1 -E '^calls to allocation functions:' | awk '{print $5}'
}
x=$(count "$before")
y=$(count "$after")
echo "ppspec fuzz $space --seed $seed --cases $cases: allocation calls before $x, after $y, after/before $(echo "scale=3; $y / $x" | bc -l)"
