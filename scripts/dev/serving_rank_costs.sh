#!/usr/bin/env bash
# What a serving scenario's rank count costs the simulator (engine::kRanksMax, scenarios/README.md
# [topology]): one request on pp x tp = 16 x 16 and 32 x 16 ranks, a layer per stage, one core, wall
# time and peak RSS.
#   scripts/dev/serving_rank_costs.sh [PPSPEC]   (default ./build/default/tools/ppspec)
# Writes docs/evidence/serving-rank-costs/result.txt.
set -euo pipefail
cd "$(dirname "$0")/../.."
ppspec=${1:-./build/default/tools/ppspec}
out=docs/evidence/serving-rank-costs/result.txt
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
one_core() { if command -v taskset > /dev/null; then taskset -c 0 "$@"; else "$@"; fi; }
{
  echo "# scripts/dev/serving_rank_costs.sh: $("$ppspec" --version), one request, one core"
  for shape in "16 16" "32 16"; do
    read -r pp tp <<< "$shape"
    printf 'kind = "serving"\n[topology]\npp = %s\ntp = %s\n[model]\nlayers = %s\nlanes = 16\n[workload]\nnum_requests = 1\n' \
      "$pp" "$tp" "$pp" > "$work/s.toml"
    one_core /usr/bin/time -f "%e %M" -o "$work/time" "$ppspec" run "$work/s.toml" > "$work/run.txt" || true
    read -r seconds kb < <(tail -1 "$work/time")
    echo "pp $pp x tp $tp = $((pp * tp)) ranks: $seconds s, $((kb / 1024)) MB; $(head -1 "$work/run.txt" | grep -o 'verdict [a-z-]*')"
  done
} | tee "$out"
