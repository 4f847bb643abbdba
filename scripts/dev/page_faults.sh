#!/usr/bin/env bash
# Page faults of a whole `ppspec run` of every serving scenario with race detection and without
# ([runtime] race_detection = false), for two binaries side by side: memory first touched is a cost
# callgrind's instruction counts do not see (a fault is kernel time), and for a short run it was
# most of what race detection added beyond its instructions. Minor faults as /usr/bin/time reports
# them, the median of 3 runs of each (they vary by a few with the address layout).
#   scripts/dev/page_faults.sh BEFORE_PPSPEC AFTER_PPSPEC [OUT]
# Writes OUT (default: standard output): per scenario, before and after, with and
# without race detection, then the medians over the in-sample six (scripts/dev/perf_ratios.sh's) and the
# held-out rest.
set -euo pipefail
cd "$(dirname "$0")/../.."
(($# >= 2)) || { echo "usage: scripts/dev/page_faults.sh BEFORE_PPSPEC AFTER_PPSPEC [OUT]" >&2; exit 2; }
before=$1 after=$2
out=${3:-/dev/stdout}
[[ -x /usr/bin/time ]] || { echo "scripts/dev/page_faults.sh: needs /usr/bin/time (Debian package time)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# without_races, RACE_IN_SAMPLE
source scripts/dev/race_cost_lib.sh
faults() {  # binary scenario -> median minor faults of 3 runs
  for _ in 1 2 3; do
    /usr/bin/time -f %R -o "$work/t" "$1" run "$2" > /dev/null 2>&1 || true
    tail -n1 "$work/t"
  done | sort -n | sed -n 2p
}
for f in scenarios/serving/*.toml; do
  s=$(basename "$f" .toml)
  without_races "$f" > "$work/$s-norace.toml"
  echo "$s $(faults "$before" "$f") $(faults "$before" "$work/$s-norace.toml") $(faults "$after" "$f") $(faults "$after" "$work/$s-norace.toml")"
done > "$work/faults.txt"
python3 - "$work/faults.txt" "$before" "$after" "$(git rev-parse --short HEAD)$(git diff --quiet || echo ' (tree modified)')" > "$out" <<'PYEOF'
import os, statistics, sys
in_sample = set(os.environ["RACE_IN_SAMPLE"].split())
rows = [l.split() for l in open(sys.argv[1])]
print(f"# scripts/dev/page_faults.sh: minor page faults of a whole `ppspec run`, median of 3; tree {sys.argv[4]}")
print(f"# before = {sys.argv[2]}, after = {sys.argv[3]}; 'races' = with race detection, 'off' = without")
print(f"{'scenario':34} {'sample':10} {'before races/off':>18} {'after races/off':>18}")
for s, bw, bo, aw, ao in rows:
    print(f"{s:34} {'in-sample' if s in in_sample else 'held-out':10} {bw:>9}/{bo:<8} {aw:>9}/{ao:<8}")
for name, pick in (("in-sample", lambda s: s in in_sample), ("held-out", lambda s: s not in in_sample)):
    sel = [r for r in rows if pick(r[0])]
    extra_b = statistics.median(int(r[1]) - int(r[2]) for r in sel)
    extra_a = statistics.median(int(r[3]) - int(r[4]) for r in sel)
    print(f"{name} ({len(sel)} scenarios): faults race detection adds, median: before {extra_b:.0f}, after {extra_a:.0f}")
PYEOF
cat "$out"
