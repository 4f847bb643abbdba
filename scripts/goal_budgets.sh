#!/usr/bin/env bash
# What goals 2 and 3 of issue 28 are up against, in instructions (callgrind; they do not drift):
#   goal 3: where a clean fuzz campaign's instructions go (BM_FuzzCases: 20 cases of pp2.toml): all
#           of the runs (run_on_sim), the oracles (check_oracles) and in them the two reference
#           runs of the invariance oracles (compare_with: pp = 1, eager); the case's own run is
#           the difference of the first two;
#   goal 2: a whole `ppspec run` of pp2_tp2_k5 (oracles on) with race detection and without, and
#           the detector's own functions (self) in the checked run.
#   scripts/goal_budgets.sh [OUT]   (default docs/evidence/perf/goal-budgets.txt; a relative OUT is
#   taken from the repository's root)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-docs/evidence/perf/goal-budgets.txt}
ppspec=./build/default/tools/ppspec
bench=./build/default/bench/ppspec_bench
[[ -x $ppspec && -x $bench ]] || { echo "scripts/goal_budgets.sh: build the default preset first" >&2; exit 2; }
# shellcheck source=scripts/race_cost_lib.sh
source scripts/race_cost_lib.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
scenario=scenarios/serving/pp2_tp2_k5.toml
without_races "$scenario" > "$work/pp2_tp2_k5.toml"
# Before OUT exists: a tree with any change, untracked files too, is "modified".
modified=$([[ -z $(git status --porcelain) ]] || echo ', modified')
{
  echo "# scripts/goal_budgets.sh (tree $(git rev-parse --short HEAD)$modified)"
  echo "## goal 3: a clean fuzz campaign"
  scripts/instruction_shares.sh ppspec::serving::run_on_sim ppspec::serving::check_oracles \
    "ppspec::serving::(anonymous namespace)::compare_with" ppspec::sim::RaceDetector::on_access \
    ppspec::sim::RaceDetector::check_rows \
    -- "$bench" --benchmark_filter='^BM_FuzzCases$' --benchmark_min_time=0
  echo
  echo "## goal 3: the same campaign's instructions by where their code lives (self cost)"
  valgrind --tool=callgrind --callgrind-out-file="$work/fuzz.out" "$bench" --benchmark_filter='^BM_FuzzCases$' \
    --benchmark_min_time=0 > /dev/null 2> "$work/fuzz.log"
  callgrind_annotate --auto=no --threshold=100 "$work/fuzz.out" > "$work/fuzz.txt"
  python3 - "$work/fuzz.txt" <<'AREAS'
import collections, re, sys
# The simulator's scheduling and switching first, then what would be left of a case if more of
# the machinery cost nothing: the most cases/s could grow by removing each, cumulatively.
areas = [("scheduling and switching: sim/world, sim/scheduler_algorithm, sim/policy, Boost", ("sim/world", "sim/scheduler_algorithm", "sim/policy", "boost")),
         ("race detection: sim/race_detector, sim/vector_clock, sim/item_ring", ("sim/race_detector", "sim/vector_clock", "sim/item_ring")),
         ("the rest of the simulator: streams, devices, communication (sim/)", ("sim/",)),
         ("standard library code inlined anywhere, libc's string functions, the allocator", ("/usr/include", "./string", "./malloc", "mimalloc", "???")),
         ("the model's kernels (kernels/)", ("kernels/",)),
         ("the engine (engine/)", ("engine/",)),
         ("monitors, oracles and findings (verify/)", ("verify/",)),
         ("events and probes (core/)", ("core/",))]
total, share = 0, collections.Counter()
for line in open(sys.argv[1]):
    m = re.match(r"\s*([\d,]+) .*PROGRAM TOTALS", line)
    if m: total = int(m.group(1).replace(",", ""))
    m = re.match(r"\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(\S+?):.*?(\[[^\]]*\])?$", line)
    if not m: continue
    where = m.group(2) + " " + (m.group(3) or "")
    name = next((n for n, keys in areas if any(k in where for k in keys)), "everything else (serving/, program/, libm, the loader, ...)")
    share[name] += int(m.group(1).replace(",", ""))
if total == 0: sys.exit("scripts/goal_budgets.sh: callgrind counted nothing")
gone = 0
for name in [n for n, _ in areas] + ["everything else (serving/, program/, libm, the loader, ...)"]:
    gone += share[name]
    left = total - gone
    bound = f"{total / left:.2f}x" if left > 0 else "-"
    print(f"{100 * share[name] / total:5.1f} %  {name}; with it and all above at no cost: at most {bound} the cases/s")
AREAS
  echo
  echo "## goal 2: ppspec run $scenario, with race detection"
  scripts/instruction_shares.sh ppspec::sim::RaceDetector::on_access \
    ppspec::sim::RaceDetector::check_rows ppspec::sim::RaceDetector::check_cell \
    ppspec::sim::RaceDetector::start_run ppspec::sim::RaceDetector::put_aside \
    ppspec::sim::RaceDetector::find_allocation ppspec::sim::RaceDetector::end \
    -- "$ppspec" run "$scenario"
  echo
  echo "## goal 2: the same run without ([runtime] race_detection = false)"
  scripts/instruction_shares.sh -- "$ppspec" run "$work/pp2_tp2_k5.toml"
} | sed "s|$work/|<a temporary folder>/|" > "$out"
python3 - "$out" <<'PYEOF'
import re, sys
text = open(sys.argv[1]).read()
def count(pattern):
    return [int(t.replace(",", "")) for t in re.findall(pattern, text)]
totals = count(r"total: ([\d,]+)")
runs, oracles = count(r"run_on_sim: inclusive ([\d,]+)"), count(r"check_oracles: inclusive ([\d,]+)")
with open(sys.argv[1], "a") as fh:
    if runs and oracles:
        print(f"\ngoal 3: the case's own run (run_on_sim - check_oracles): {runs[0] - oracles[0]:,} "
              f"({100 * (runs[0] - oracles[0]) / totals[0]:.1f} %)", file=fh)
    else:
        print("\ngoal 3: the case's own run: n/a (inclusive counts need -DPPSPEC_ALLOCATOR=system)", file=fh)
    allowed, spent = int(totals[2] * 0.25), totals[1] - totals[2]
    print(f"goal 2: with / without race detection, in instructions: {totals[1] / totals[2]:.3f} "
          f"(<= 1.25 allows {allowed:,} instructions of detection; it takes {spent:,})", file=fh)
PYEOF
cat "$out"
