#!/usr/bin/env bash
# What the NCCL profiler plugin costs an NCCL job's threads per operation, on the CPU, and what
# listening for NCCL's profiler cost the simulator (README, "Watching a live NCCL job", Cost):
#   scripts/dev/nccl_profiler_bench.sh [BENCH_BEFORE]
# Writes docs/evidence/nccl-profiler-costs/plugin_bench.txt (BM_PluginCallbacks, BM_PluginFlusher: five
# repetitions, medians) and, given the benchmark binary of the commit before the plugin's
# observer hooks, docs/evidence/nccl-profiler-costs/sim_instructions.txt (callgrind instruction counts of the
# simulator's benchmarks, before and after). The plugin allocates with ppspec_bench's allocator
# (mimalloc unless the build says PPSPEC_ALLOCATOR=system; bench/nccl_profiler_bench.cc): compare
# figures only between builds with the same one.
set -euo pipefail
cd "$(dirname "$0")/../.."
bench=${PPSPEC_BENCH:-./build/default/bench/ppspec_bench}
out=docs/evidence/nccl-profiler-costs
mkdir -p "$out"
{
  echo "# $(date -u +%F) $(uname -m), $(nproc) cores; $bench"
  "$bench" --benchmark_filter='BM_Plugin' --benchmark_repetitions=5 --benchmark_report_aggregates_only=true 2>&1
} > "$out/plugin_bench.txt"
cat "$out/plugin_bench.txt"
if (($# >= 1)); then
  scripts/dev/bench_instructions.sh "$1" "$bench" BM_RingPairs/2/16 BM_RingPairs/8/16 BM_Serving/scenario:0/oracles:0 BM_Serving/scenario:1/oracles:0 | tee "$out/sim_instructions.txt"
fi
