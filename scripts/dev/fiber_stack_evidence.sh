#!/usr/bin/env bash
# Measures what pooling fiber stacks (sim/fiber_stack.h) buys: the simulator's whole-run benchmark
# (default preset) and the R8 hazard property of 200 cases under ASan (the asan preset), both built
# already. Appends one labelled block to OUT. Run once on a build without the pool and once with it.
# Usage: scripts/dev/fiber_stack_evidence.sh LABEL OUT
set -euo pipefail
cd "$(dirname "$0")/../.."
label=$1
out=$2
{
  echo "== $label ($(git rev-parse --short HEAD)$(git diff --quiet -- sim || echo ' + working tree'), $(date -u +%FT%H:%MZ), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs))"
  build/default/bench/ppspec_bench --benchmark_filter='BM_ShortRuns' --benchmark_repetitions=5 \
    --benchmark_report_aggregates_only=true 2>/dev/null | grep -E '_(median|cv) '
  export RC_PARAMS=max_success=200 ASAN_OPTIONS=detect_leaks=1:detect_stack_use_after_return=0
  /usr/bin/time -f 'asan Hazards.ALoaderThreadGivesTheSameHazardsWhicheverThreadWinsTheRace (200 cases): %e s wall, %U s user, %S s system' \
    build/asan/property_tests/ppspec_hazard_property_tests \
    --gtest_filter='Hazards.ALoaderThreadGivesTheSameHazardsWhicheverThreadWinsTheRace' > /dev/null 2>/tmp/fiber_stack_time.$$ \
    || { cat /tmp/fiber_stack_time.$$; exit 1; }
  tail -1 /tmp/fiber_stack_time.$$
  rm -f /tmp/fiber_stack_time.$$
} | tee -a "$out"
