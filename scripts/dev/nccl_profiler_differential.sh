#!/usr/bin/env bash
# The NCCL profiler plugin and `ppspec watch` against the simulator (README, "Watching a live NCCL
# job"): every committed scenario (programs, regressions and their twins, serving) through the
# plugin and the watcher, then 2,000 generated programs of each seed: 1 (the seed the agreement
# rules were written against: in-sample) through interface v5; 2026 and 9001 (each held out for its
# first run, seed2026-first-run.md and seed9001-first-run.txt, then read and fixed: in-sample now)
# through v6 and v5; 4099 (held out after every fix, run once) through v6. Tables in
# docs/evidence/nccl-profiler-differential/.
# Exit 1 when a case disagrees.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${PPSPEC:-./build/default/tools/ppspec}
out=docs/evidence/nccl-profiler-differential
mkdir -p "$out"
status=0
tmp=$(mktemp -d)
"$bin" fidelity --backend nccl-profiler --out "$tmp/scenarios" \
  --scenario-files scenarios/programs/*.toml scenarios/regressions/*.toml scenarios/regressions/*/*.toml scenarios/serving/*.toml \
  | tail -n 1 || status=1
cp "$tmp/scenarios/scenarios.md" "$out/scenarios.md"
for run in "1 5" "2026 6" "9001 5" "4099 6"; do
  set -- $run
  "$bin" fidelity --backend nccl-profiler --programs "${PROGRAMS:-2000}" --seed "$1" --interface "$2" --out "$tmp/seed$1" | tail -n 1 || status=1
  cp "$tmp/seed$1/nccl-profiler.md" "$out/seed$1.md"
done
rm -rf "$tmp"
exit "$status"
