#!/usr/bin/env bash
# Time to detect each historical fault (README "Time to detect"): runs every fault's regression
# scenario once per seed of its budget and prints, per fault, the verdict, the simulated time and
# engine step of the first finding, and the wall time of the run that found it (median over the
# seeds). Needs the default build and python3.
set -euo pipefail
cd "$(dirname "$0")/../.."
ppspec=./build/default/tools/ppspec
echo "| fault | verdict | first finding | simulated time to verdict | engine step | wall time (median) |"
echo "|---|---|---|---|---|---|"
for f in scenarios/regressions/*.toml; do
  case "$f" in *_off.toml) continue ;; esac
  "$ppspec" run "$f" --json | python3 -c '
import json, statistics, sys
runs = json.load(sys.stdin)
first = runs[0]["first"]
fault = runs[0]["file"].split("/")[-1][:-5]
sim = statistics.median(r["first"]["time_ns"] for r in runs) / 1e3
wall = statistics.median(r["stats"]["wall_ms"] for r in runs)
step = first.get("engine_step", "-")
verdict, kind = runs[0]["verdict"], first["kind"]
print(f"| `{fault}` | {verdict} | {kind} | {sim:.0f} us | {step} | {wall:.1f} ms |")
'
done
