#!/usr/bin/env bash
# Inputs staged through pinned host buffers on a GPU machine, from the repository root:
#   PPSPEC_BIN=<folder with the gpu preset's ppspec> OUT=<results folder> scripts/dev/pinned_inputs_gpu.sh
# Every serving scenario that fits this machine's GPUs, run with `--backend both` (the simulator and
# the GPUs, compared request by request and operation by operation) twice: as written, and with
# `[serving] pin_memory = true` (a copy of the file with the key set), so that the real backend's
# cudaHostAlloc buffers, cudaMemcpyAsync copies and event waits carry the staged inputs. Writes
# $OUT/runs.txt (one line per run: scenario, mode, exit status) and each run's stdout and stderr.
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN=${PPSPEC_BIN:-build/gpu/tools}
OUT=${OUT:-pinned-results}
mkdir -p "$OUT/runs" "$OUT/scenarios"
source scripts/gpu_env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/machine.txt" 2>&1
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
field() { v=$(grep -m1 -E "^$1 *=" "$2" | tr -dc '0-9'); echo "${v:-1}"; }
: > "$OUT/runs.txt"
for f in scenarios/serving/*.toml; do
  name=$(basename "$f" .toml)
  grep -q '^\[disaggregation\]' "$f" && continue  # two instances: more ranks than the topology says
  [ $(( $(field dp "$f") * $(field pp "$f") * $(field tp "$f") )) -gt "$gpus" ] && continue
  pinned="$OUT/scenarios/$name.pinned.toml"
  if grep -q '^pin_memory *= *true' "$f"; then cp "$f" "$pinned"
  elif grep -q '^\[serving\]' "$f"; then sed 's/^\[serving\]$/[serving]\npin_memory = true/' "$f" > "$pinned"
  else printf '%s\n\n[serving]\npin_memory = true\n' "$(cat "$f")" > "$pinned"; fi
  for mode in written pinned; do
    file=$f; [ "$mode" = pinned ] && file=$pinned
    "$BIN/ppspec" run --backend both --hang-timeout 20 "$file" > "$OUT/runs/$name.$mode.txt" 2>&1
    echo "$name $mode exit=$?" >> "$OUT/runs.txt"
  done
done
cat "$OUT/runs.txt"
