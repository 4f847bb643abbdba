#!/usr/bin/env bash
# The Flight Recorder differential (docs/flight-recorder.md, "Proven against the simulator"): `ppspec
# check` against the simulator on 2,000 generated programs of every family of dumps (async, sync,
# coalesced, batched, all_to_all, wrapped, gloo, snapshot), for seeds 1 and 20261206 (whose
# disagreements the rules were developed against: in-sample) and 8128 (held out: first run once the
# rules were final). The summary and each family's table go to
# docs/evidence/flight-recorder-differential/seedN/. Exit 1 when a case disagrees.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${PPSPEC:-./build/default/tools/ppspec}
out=docs/evidence/flight-recorder-differential
status=0
for seed in 1 20261206 8128; do
  tmp=$(mktemp -d)
  "$bin" fidelity --backend flight-recorder --shape all --programs 2000 --seed "$seed" --max-ranks 8 --out "$tmp" | tail -n 1 || status=1
  rm -rf "${out:?}/seed$seed"
  mkdir -p "$out/seed$seed"
  cp "$tmp/flight-recorder.md" "$out/seed$seed/flight-recorder.md"
  for family in "$tmp"/*/; do
    name=$(basename "$family")
    [ -f "$family/flight-recorder.md" ] && cp "$family/flight-recorder.md" "$out/seed$seed/$name.md"
  done
  rm -rf "$tmp"
done
exit "$status"
