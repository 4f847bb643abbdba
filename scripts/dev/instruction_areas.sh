#!/usr/bin/env bash
# Where the instructions go (callgrind; counts do not drift with the machine's speed):
#   a clean fuzz campaign (BM_FuzzCases: 20 cases of pp2.toml), by owner (scripts/dev/fuzz_areas.py),
#   and how much faster it could be with the simulator and its race detector at no cost (splitting
#   it into the case's own run and its two reference runs needs inclusive counts, which a binary
#   linking mimalloc does not give: scripts/dev/instruction_shares.sh);
#   race detection: a whole `ppspec run` of pp2_tp2_k5 (oracles on) with race detection and without,
#   and the detector's own functions in the checked run.
#   scripts/dev/instruction_areas.sh [OUT]   (default docs/evidence/simulator-cost/instruction-areas.txt;
#   a relative OUT is taken from the repository's root)
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-docs/evidence/simulator-cost/instruction-areas.txt}
ppspec=./build/default/tools/ppspec
bench=./build/default/bench/ppspec_bench
[[ -x $ppspec && -x $bench ]] || { echo "scripts/dev/instruction_areas.sh: build the default preset first" >&2; exit 2; }
# shellcheck source=scripts/dev/race_cost_lib.sh
source scripts/dev/race_cost_lib.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
scenario=scenarios/serving/pp2_tp2_k5.toml
without_races "$scenario" > "$work/pp2_tp2_k5.toml"
# Before OUT exists: a tree with any change, untracked files too, is "modified".
modified=$([[ -z $(git status --porcelain) ]] || echo ', modified')
{
  echo "# scripts/dev/instruction_areas.sh (tree $(git rev-parse --short HEAD)$modified)"
  echo "## a clean fuzz campaign's instructions by owner (self cost; scripts/dev/fuzz_areas.py)"
  echo "# callgrind: $bench --benchmark_filter=^BM_FuzzCases\$ --benchmark_min_time=0"
  valgrind --tool=callgrind --callgrind-out-file="$work/fuzz.out" "$bench" --benchmark_filter='^BM_FuzzCases$' \
    --benchmark_min_time=0 > /dev/null 2> "$work/fuzz.log"
  callgrind_annotate --auto=no --threshold=100 "$work/fuzz.out" > "$work/fuzz.txt"
  scripts/dev/fuzz_areas.py "$work/fuzz.txt"
  echo
  echo "## ppspec run $scenario, with race detection"
  scripts/dev/instruction_shares.sh ppspec::sim::RaceDetector::on_access \
    ppspec::sim::RaceDetector::check_rows ppspec::sim::RaceDetector::check_cell \
    ppspec::sim::RaceDetector::start_run ppspec::sim::RaceDetector::put_aside \
    ppspec::sim::RaceDetector::find_allocation ppspec::sim::RaceDetector::end \
    -- "$ppspec" run "$scenario"
  echo
  echo "## the same run without ([runtime] race_detection = false)"
  scripts/dev/instruction_shares.sh -- "$ppspec" run "$work/pp2_tp2_k5.toml"
} | sed "s|$work/|<a temporary folder>/|" > "$out"
python3 - "$out" <<'PYEOF'
import re, sys
text = open(sys.argv[1]).read()
def count(pattern):
    return [int(t.replace(",", "")) for t in re.findall(pattern, text)]
totals = count(r"total: ([\d,]+)")
with open(sys.argv[1], "a") as fh:
    print(file=fh)
    allowed, spent = int(totals[2] * 0.25), totals[1] - totals[2]
    print(f"with / without race detection, in instructions: {totals[1] / totals[2]:.3f} "
          f"(<= 1.25 allows {allowed:,} instructions of detection; it takes {spent:,})", file=fh)
PYEOF
cat "$out"
