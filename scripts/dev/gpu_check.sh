#!/usr/bin/env bash
# The whole GPU check, on a machine with NVIDIA GPUs, from the repository root:
#   PPSPEC_BIN=<folder with ppspec and ppspec_gpu_tests> OUT=<results folder> scripts/dev/gpu_check.sh
# Binaries come from the `gpu` preset (cmake --preset gpu && cmake --build --preset gpu) built on
# the development machine: static Boost, header-only fmt and toml++, static cudart; NCCL (and, for
# JIT scenarios, NVRTC) are taken from this machine (its Python environment ships both).
# Runs every program scenario that fits this machine's GPUs on the real backend (one child process
# each), every serving scenario that fits on both backends (compared), the pp 2 tp 1 fault
# regressions and twins on both, the GPU tests, the round-trip latency (2 GPUs), and checks every
# recorded trace. scripts/dev/fault_table.py turns $OUT into the fault table of docs/evidence/serving-two-h200/.
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN=${PPSPEC_BIN:-build/gpu/tools}
TESTS=${PPSPEC_TESTS:-${PPSPEC_BIN:-build/gpu/tests}}
OUT=${OUT:-gpu-results}
HANG=${HANG_TIMEOUT:-5}
mkdir -p "$OUT/traces"
source scripts/gpu_env.sh
export PPSPEC_EXE="$PWD/$BIN/ppspec" PPSPEC_SOURCE_DIR="$PWD"

{
  nvidia-smi -L
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
} > "$OUT/machine.txt" 2>&1
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
fits=()
for f in scenarios/programs/*.toml; do
  ranks=$(grep -m1 -E '^ranks *=' "$f" | tr -dc '0-9')
  if [ "$ranks" -le "$gpus" ]; then fits+=("$f"); else echo "skipped (needs $ranks GPUs, have $gpus): $f" >> "$OUT/machine.txt"; fi
done

# One scenario at a time, so that every scenario gets its own line even when one fails.
for f in "${fits[@]}"; do
  name=$(basename "$f" .toml)
  "$BIN/ppspec" run --backend gpu --hang-timeout "$HANG" --json --trace "$OUT/traces/$name.jsonl" "$f" \
    > "$OUT/traces/$name.result.json" 2> "$OUT/traces/$name.stderr"
  echo "$name exit=$?" >> "$OUT/runs.txt"
done
for t in "$OUT"/traces/*.jsonl; do "$BIN/ppspec" check "$t"; done > "$OUT/checks.txt" 2>&1

# Serving scenarios that fit: each on the simulator and on the GPUs, compared request by request and
# operation by operation (the sim = GPU oracle); one that does not fit must be refused with exit 2.
field() { v=$(grep -m1 -E "^$1 *=" "$2" | tr -dc '0-9'); echo "${v:-1}"; }
ranks_of() { echo $(( $(field pp "$1") * $(field tp "$1") )); }
mkdir -p "$OUT/serving" "$OUT/faults"
for f in scenarios/serving/*.toml; do
  name=$(basename "$f" .toml)
  ranks=$(ranks_of "$f")
  if [ "$ranks" -gt "$gpus" ]; then
    "$BIN/ppspec" run --backend gpu "$f" > /dev/null 2> "$OUT/serving/$name.refused"
    echo "$name needs $ranks GPUs: exit=$? $(cat "$OUT/serving/$name.refused")" >> "$OUT/serving_runs.txt"
    continue
  fi
  "$BIN/ppspec" run --backend both --json --hang-timeout 20 --trace "$OUT/traces/serving-$name.jsonl" "$f" \
    > "$OUT/serving/$name.json" 2> "$OUT/serving/$name.stderr"
  echo "$name exit=$?" >> "$OUT/serving_runs.txt"
done
# The seed PR's faults and their twins: the simulator (first seed), the GPUs (online monitors,
# watchdog), the GPU trace checked offline, and each twin against the simulator. FAULTS names their
# folder: pp 2 tp 1 by default (2 GPUs); on 4 GPUs FAULTS=scenarios/regressions, the seed PR's own
# pp 2 tp 2 shape. A regression that needs more GPUs than this machine has is listed as skipped.
FAULTS=${FAULTS:-scenarios/regressions/pp2_tp1}
for f in "$FAULTS"/*.toml; do
  name=$(basename "$f" .toml)
  ranks=$(ranks_of "$f")
  if [ "$ranks" -gt "$gpus" ]; then echo "$name needs $ranks GPUs: skipped" >> "$OUT/fault_runs.txt"; continue; fi
  "$BIN/ppspec" run --json --seeds 1 "$f" > "$OUT/faults/$name.sim.json" 2> "$OUT/faults/$name.sim.stderr"
  "$BIN/ppspec" run --backend gpu --json --hang-timeout "$HANG" --trace "$OUT/traces/fault-$name.jsonl" "$f" \
    > "$OUT/faults/$name.gpu.json" 2> "$OUT/faults/$name.gpu.stderr"
  echo "$name gpu exit=$?" >> "$OUT/fault_runs.txt"
  "$BIN/ppspec" check --json --scenario "$f" "$OUT/traces/fault-$name.jsonl" > "$OUT/faults/$name.check.json" 2>&1
  case "$name" in *_off)
    "$BIN/ppspec" run --backend both --json --hang-timeout "$HANG" "$f" > "$OUT/faults/$name.both.json" 2> "$OUT/faults/$name.both.stderr"
    echo "$name both exit=$?" >> "$OUT/fault_runs.txt";;
  esac
done
# Performance: the same workload with and without CUDA graphs; scripts/dev/gpu_perf.py reads steps per
# second and per-step latency from the traces. PERF names the folder (scenarios/perf: pp 2 tp 1 on 2
# GPUs; scenarios/perf4: pp 2 tp 2 and pp 4 on 4 GPUs); a scenario that does not fit is skipped.
PERF=${PERF:-scenarios/perf}
export PERF
if [ "$gpus" -ge 2 ]; then
  for f in "$PERF"/*.toml; do
    name=$(basename "$f" .toml)
    if [ "$(ranks_of "$f")" -gt "$gpus" ]; then echo "$name: skipped (needs $(ranks_of "$f") GPUs)" >> "$OUT/machine.txt"; continue; fi
    "$BIN/ppspec" run --backend both --json --trace "$OUT/traces/perf-$name.jsonl" "$f" > "$OUT/perf-$name.json" 2>&1
    # Again with CUDA-event timing of every step (it adds host time of its own: a separate run).
    PPSPEC_GPU_PROFILE="$OUT/profile-$name.jsonl" "$BIN/ppspec" run --backend gpu --json \
      --trace "$OUT/traces/profiled-$name.jsonl" "$f" > "$OUT/profiled-$name.json" 2>&1
  done
fi
"$TESTS/ppspec_gpu_tests" > "$OUT/gpu_tests.txt" 2>&1
"$BIN/ppspec" gpu-latency --iterations 2000 > "$OUT/latency.txt" 2>&1
# The watchdog's time to a verdict, for two limits.
for limit in 2 10; do
  start=$(date +%s%N)
  "$BIN/ppspec" run --backend gpu --hang-timeout "$limit" scenarios/programs/persistent_kernel_lazy_deadlock.toml > /dev/null 2>&1
  end=$(date +%s%N)
  echo "hang_timeout=${limit}s: verdict after $(( (end - start) / 1000000 )) ms (whole ppspec process)" >> "$OUT/watchdog.txt"
done
# The evidence tables, from the files above (scripts/*.py: nothing typed by hand).
python3 scripts/dev/serving_table.py "$OUT" > "$OUT/serving_table.md"
python3 scripts/dev/fault_table.py "$OUT" "$FAULTS" > "$OUT/fault_table.md"
python3 scripts/dev/gpu_perf.py "$OUT" > "$OUT/perf.md"
# The performance traces are large and summarised by perf.md: they stay out of the archive.
rm -f "$OUT"/traces/perf-*.jsonl "$OUT"/traces/profiled-*.jsonl
tar -czf "$OUT/traces.tgz" -C "$OUT" traces && rm -rf "$OUT/traces"
tar -czf "$OUT/runs.tgz" -C "$OUT" serving faults && rm -rf "$OUT/serving" "$OUT/faults"
ls -la "$OUT"
