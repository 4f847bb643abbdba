#!/usr/bin/env bash
# Proof that the ninth stop's tests (issue 28) can fail: each mutation below breaks one change
# (core::round_half_away's half-way case; VectorClock's join falling back to the general merge for
# a thread it lacks), rebuilds the tests and runs the tests that guard it; each line must name
# failing tests. Restores every file; writes OUT (default docs/evidence/perf/ninth-stop-mutations.txt).
#   scripts/dev/ninth_stop_mutations.sh [OUT]
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-docs/evidence/perf/ninth-stop-mutations.txt}
tests=./build/default/tests/ppspec_tests
saved=$(mktemp)
current=""
restore() { [[ -n $current ]] && cp "$saved" "$current"; rm -f "$saved"; }
trap restore EXIT
mutate() {  # file, sed expression, gtest filter, description
  current=$1
  cp "$1" "$saved"
  sed -i "$2" "$1"
  if cmp -s "$1" "$saved"; then echo "$4: the mutation matched nothing (script out of date)"; exit 1; fi
  cmake --build build/default -j2 --target ppspec_tests > /dev/null
  local failing
  failing=$("$tests" --gtest_filter="$3" --gtest_brief=1 2>&1 | grep -E '^\[  FAILED  \] [A-Za-z]+\.[A-Za-z_]+ \(' |
            awk '{print $4}' | tr '\n' ' ' || true)
  cp "$saved" "$1"
  current=""
  echo "$4: failing: ${failing:-NONE}"
}
{
  echo "# scripts/dev/ninth_stop_mutations.sh (tree $(git rev-parse --short HEAD)): each mutation must fail tests"
  mutate core/rounding.h 's/fraction >= 0.5 ? whole + 1/fraction > 0.5 ? whole + 1/' 'Determinism.Rounding*' \
    "round_half_away rounds x.5 toward zero"
  mutate sim/vector_clock.h 's/mine\[at\].thread != e.thread) return merge_new(o);/mine[at].thread != e.thread) continue;/' \
    'VectorClock.*' "a join skips the threads it lacks"
} > "$out"
cmake --build build/default -j2 --target ppspec_tests > /dev/null
cat "$out"
if grep -q 'failing: NONE' "$out"; then exit 1; fi
