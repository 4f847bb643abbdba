#!/usr/bin/env bash
# `ppspec import` proven (README, "From a job's dumps to a scenario"): every recorded job of
# traces/corpus imported and re-run beside `ppspec check` of its dumps (corpus.txt), and the import
# differential on 2,000 generated jobs of seeds 1, 2026, 4099 and 31337 (all run while its rules
# were developed: in-sample) and 77031 (held out: first run once they were final), each table
# written to docs/evidence/import/. Exit 1 when a case disagrees.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${PPSPEC:-./build/default/tools/ppspec}
out=docs/evidence/import
mkdir -p "$out"
status=0
tmp=$(mktemp -d)
{
  echo "# ppspec import of every recorded job in traces/corpus ($(git rev-parse --short HEAD))"
  for dumps in traces/corpus/flight-recorder/*/json traces/corpus/flight-recorder/*/pickle \
               traces/corpus/flight-recorder-probes/*/json; do
    echo
    echo "\$ ppspec import $dumps -o scenario.toml"
    "$bin" import "$dumps" -o "$tmp/scenario.toml" --force | sed -e "s|$tmp/||g" -e '/^  assumed:/d' || true
    echo "\$ ppspec run scenario.toml --seeds 20"
    "$bin" run "$tmp/scenario.toml" --seeds 20 | head -n 1 | sed -e "s|$tmp/||g" || true
  done
} > "$out/corpus.txt"
for seed in 1 2026 4099 31337 77031; do
  rm -rf "$tmp/cases"
  "$bin" fidelity --backend import --programs 2000 --seed "$seed" --out "$tmp/cases" | tail -n 1 || status=1
  cp "$tmp/cases/import.md" "$out/seed$seed.md"
done
rm -rf "$tmp"
exit "$status"
