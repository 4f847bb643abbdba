#!/usr/bin/env bash
# ctest `perfetto_export_loads`: `ppspec export --perfetto` files opened by a real trace loader, the
# trace engine of Chrome's DevTools (npm @paulirish/trace_engine, pinned in scripts/dev/trace_loader/), on
# a serving trace, a GPU hang dump and a folder of Flight Recorder dumps: every rank a process, its
# threads and streams (or process groups) with their slices, the pairings as bound flow arrows.
# Usage: trace_loader_test.sh PPSPEC BUILD_DIR
set -euo pipefail
ppspec=$1
work=$2/trace_loader
src=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$work"
cp "$src"/scripts/dev/trace_loader/{package.json,package-lock.json,load.mjs} "$work"/
if [ ! -d "$work/node_modules/@paulirish/trace_engine" ]; then
  (cd "$work" && npm ci --no-audit --no-fund --loglevel=error)
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$ppspec" run "$src/scenarios/serving/pp2_tp1_k5.toml" --trace "$tmp/serving.jsonl" >/dev/null
"$ppspec" export --perfetto "$tmp/serving.jsonl" -o "$tmp/serving.json"
node "$work/load.mjs" "$tmp/serving.json" 2 1 rank0.main rank0.side rank1.main rank1.side
"$ppspec" export --perfetto "$src/traces/corpus/gpu/lazy_load_deadlock_hang_dump.jsonl" -o "$tmp/hang.json"
node "$work/load.mjs" "$tmp/hang.json" 2 0 rank0.host rank0.side rank1.host rank1.main
"$ppspec" export --perfetto "$src/traces/corpus/flight-recorder/double_post" -o "$tmp/fr.json"
node "$work/load.mjs" "$tmp/fr.json" 2 1 "pg 1" "pg 0 p2p"
