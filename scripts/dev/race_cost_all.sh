#!/usr/bin/env bash
# Race detection's cost on every serving scenario, not only the six that scripts/dev/perf_ratios.sh
# prints (and that the detector was tuned against: "in-sample"): a whole `ppspec run` of each with
# race detection ÷ the same run without ([runtime] race_detection = false), medians of 7 run
# alternately (scripts/dev/race_cost_lib.sh), for one or two binaries side by side.
#
#   scripts/dev/race_cost_all.sh [--before BEFORE_PPSPEC] [--out FILE]
# Writes FILE (default docs/evidence/race-detector-cost/race-cost-all.txt): one line per scenario, its sample
# (in-sample: the six of perf_ratios.sh; held-out: the rest), then the range and median of each.
set -euo pipefail
cd "$(dirname "$0")/../.."
before=""
out=docs/evidence/race-detector-cost/race-cost-all.txt
while (($#)); do
  case "$1" in
    --before) before=$2; shift ;;
    --out) out=$2; shift ;;
    *) echo "scripts/dev/race_cost_all.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
ppspec=./build/default/tools/ppspec
[[ -x $ppspec ]] || { echo "scripts/dev/race_cost_all.sh: build the default preset first" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$(dirname "$out")"
# median_pair, without_races, RACE_IN_SAMPLE
source scripts/dev/race_cost_lib.sh

binaries=("$ppspec")
[[ -n $before ]] && binaries+=("$before")
# One line per scenario and binary: "SCENARIO BINARY WITH WITHOUT".
for f in scenarios/serving/*.toml; do
  s=$(basename "$f" .toml)
  without_races "$f" > "$work/$s-norace.toml"
  for b in "${binaries[@]}"; do
    read -r with wo < <(median_pair "$b" run "$f" -- "$b" run "$work/$s-norace.toml")
    echo "$s $b $with $wo"
  done
done > "$work/times.txt"

python3 - "$work/times.txt" "$(git rev-parse --short HEAD)" "${binaries[@]}" > "$out" <<'EOF'
import os, statistics, sys
times, head, binaries = sys.argv[1], sys.argv[2], sys.argv[3:]
in_sample = set(os.environ["RACE_IN_SAMPLE"].split())
cpu = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
print(f"# scripts/dev/race_cost_all.sh: {os.cpu_count()} cores, {cpu}; ppspec {head}")
print("# whole `ppspec run` with race detection / without, medians of 7 run alternately")
rows = {}
for line in open(times):
    s, b, with_, without = line.split()
    rows.setdefault(s, {})[b] = (float(with_), float(without))
ratios = {b: {"in-sample": [], "held-out": []} for b in binaries}
print(f"{'scenario':<34} {'sample':<9} " + " ".join(f"{b:>30}" for b in binaries))
for s in sorted(rows):
    sample = "in-sample" if s in in_sample else "held-out"
    cells = []
    for b in binaries:
        with_, without = rows[s][b]
        ratios[b][sample].append(with_ / without)
        cells.append(f"{with_:.3f}/{without:.3f} s {with_ / without:.2f}x")
    print(f"{s:<34} {sample:<9} " + " ".join(f"{c:>30}" for c in cells))
for b in binaries:
    for sample, rs in ratios[b].items():
        print(f"{b} {sample} ({len(rs)} scenarios): {min(rs):.2f}x to {max(rs):.2f}x, median {statistics.median(rs):.2f}x; "
              f"at most 1.25x: {sum(r <= 1.25 for r in rs)} of {len(rs)}")
EOF
cat "$out"
