#!/usr/bin/env bash
# The three-tool comparison's evidence, from scripts/dev/three_tools_gpu.sh's results folder (fetched
# from the GPU machine):
#   scripts/dev/three_tools_evidence.sh RESULTS DEST     (DEST: docs/evidence/three-tools-h200, say)
# Copies the tables and logs, re-derives the three-tool table from the raw case folders (so the table
# committed is the script's, not a hand edit), and keeps every case's raw files in one archive.
set -euo pipefail
cd "$(dirname "$0")/../.."
RESULTS=$1
DEST=$2
mkdir -p "$DEST"
for f in machine.txt three_tools.log cost.txt fidelity.log gpu_check.log; do
  if [ -f "$RESULTS/$f" ]; then cp "$RESULTS/$f" "$DEST/"; fi
done
if [ -d "$RESULTS/three-tools" ]; then
  python3 scripts/dev/three_tools_table.py "$RESULTS/three-tools" > "$DEST/three_tools.md"
  tar -czf "$DEST/three-tools-cases.tgz" -C "$RESULTS" three-tools
fi
if [ -f "$RESULTS/fidelity/fidelity.md" ]; then cp "$RESULTS/fidelity/fidelity.md" "$DEST/fidelity.md"; fi
if [ -d "$RESULTS/gpu-check" ]; then
  for f in fault_table.md serving_table.md runs.txt fault_runs.txt checks.txt gpu_tests.txt; do
    if [ -f "$RESULTS/gpu-check/$f" ]; then cp "$RESULTS/gpu-check/$f" "$DEST/gpu-check-$f"; fi
  done
fi
ls -la "$DEST"
