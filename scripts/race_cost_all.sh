#!/usr/bin/env bash
# Race detection's cost on every serving scenario, not only the six that scripts/perf_ratios.sh
# prints (and that the detector was tuned against: "in-sample"): a whole `ppspec run` of each with
# race detection ÷ the same run without ([runtime] race_detection = false), medians of 7 run
# alternately, for one or two binaries side by side.
#
#   scripts/race_cost_all.sh [--before BEFORE_PPSPEC] [--out FILE]
# Writes FILE (default docs/evidence/perf/race-cost-all.txt): one line per scenario, its sample
# (in-sample: the six of perf_ratios.sh; held-out: the rest), then the range and median of each.
set -euo pipefail
cd "$(dirname "$0")/.."
before=""
out=docs/evidence/perf/race-cost-all.txt
while (($#)); do
  case "$1" in
    --before) before=$2; shift ;;
    --out) out=$2; shift ;;
    *) echo "scripts/race_cost_all.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
ppspec=./build/default/tools/ppspec
[[ -x $ppspec ]] || { echo "scripts/race_cost_all.sh: build the default preset first" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$(dirname "$out")"
for f in scenarios/serving/*.toml; do
  s=$(basename "$f" .toml)
  if grep -q '^\[runtime\]' "$f"; then
    sed 's/^\[runtime\]$/[runtime]\nrace_detection = false/' "$f" > "$work/$s-norace.toml"
  else
    { cat "$f"; printf '\n[runtime]\nrace_detection = false\n'; } > "$work/$s-norace.toml"
  fi
done
python3 - "$work" "$ppspec" $before > "$out" <<'EOF'
import glob, os, statistics, subprocess, sys, time
work, binaries = sys.argv[1], sys.argv[2:]
in_sample = {"pp2_tp2_k5", "pp2_tp1_k5", "pp4_prefix_cache", "pp2_preempt", "pp3_lookahead_batch", "pp2_tp2_eagle"}
host = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
cpu = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
print(f"# scripts/race_cost_all.sh: {os.cpu_count()} cores, {cpu}; ppspec {host}")
print("# whole `ppspec run` with race detection / without, medians of 7 run alternately")
def run(cmd):
    t0 = time.monotonic()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.monotonic() - t0
ratios = {b: {"in-sample": [], "held-out": []} for b in binaries}
print(f"{'scenario':<34} {'sample':<9} " + " ".join(f"{b:>30}" for b in binaries))
for f in sorted(glob.glob("scenarios/serving/*.toml")):
    s = os.path.basename(f)[:-5]
    sample = "in-sample" if s in in_sample else "held-out"
    cells = []
    for b in binaries:
        with_, without = [], []
        for _ in range(7):
            with_.append(run([b, "run", f]))
            without.append(run([b, "run", f"{work}/{s}-norace.toml"]))
        r = statistics.median(with_) / statistics.median(without)
        ratios[b][sample].append(r)
        cells.append(f"{statistics.median(with_):.3f}/{statistics.median(without):.3f} s {r:.2f}x")
    print(f"{s:<34} {sample:<9} " + " ".join(f"{c:>30}" for c in cells))
for b in binaries:
    for sample, rs in ratios[b].items():
        print(f"{b} {sample} ({len(rs)} scenarios): {min(rs):.2f}x to {max(rs):.2f}x, median {statistics.median(rs):.2f}x; "
              f"at most 1.25x: {sum(r <= 1.25 for r in rs)} of {len(rs)}")
EOF
cat "$out"
