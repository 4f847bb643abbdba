#!/usr/bin/env bash
# The Flight Recorder checker's speed (README, "PyTorch Flight Recorder dumps"): BM_FlightRecorderCheck
# on 2 and 8 ranks of 2,000 entries and 8 ranks of 20,000, written to
# docs/evidence/flight-recorder-differential/check_bench.txt.
set -euo pipefail
cd "$(dirname "$0")/../.."
bench=${PPSPEC_BENCH:-./build/default/bench/ppspec_bench}
out=docs/evidence/flight-recorder-differential/check_bench.txt
{ echo "# $(date -u +%F) $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"; "$bench" --benchmark_filter=FlightRecorder --benchmark_repetitions=3 --benchmark_report_aggregates_only=true 2>&1; } > "$out"
cat "$out"
