#!/usr/bin/env bash
# What a simulated ring pair costs against a bare fiber round trip (BM_RingPairs ÷ BM_FiberRoundTrips), in
# instructions, which do not drift with the machine's speed: callgrind counts one iteration of
# BM_RingPairs/2/1 (2 ranks × 20,000 steps, each a grouped send and recv: 40,000 pairs) and of
# BM_FiberRoundTrips (500,000 round trips of two bare Boost.Fiber fibers), and where the ring's go,
# by the source file that executes them (self cost). At equal instructions per second, the ratio is
# (instructions per round trip) ÷ (instructions per pair).
#   scripts/dev/scheduler_budget.sh [BENCH] [OUT]
# Writes OUT (default docs/evidence/simulator-cost/scheduler-budget.txt).
set -euo pipefail
cd "$(dirname "$0")/../.."
bench=${1:-./build/default/bench/ppspec_bench}
out=${2:-docs/evidence/simulator-cost/scheduler-budget.txt}
[[ -x $bench ]] || { echo "scripts/dev/scheduler_budget.sh: build the default preset first" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for b in BM_RingPairs/2/1 BM_FiberRoundTrips/real_time; do
  valgrind --tool=callgrind --callgrind-out-file="$work/$(echo "$b" | tr '/' '_').out" "$bench" \
    --benchmark_filter="^$b\$" --benchmark_min_time=0 > /dev/null 2> "$work/log"
done
callgrind_annotate --auto=no --threshold=100 "$work/BM_RingPairs_2_1.out" > "$work/ring.txt"
callgrind_annotate --auto=no --threshold=100 "$work/BM_FiberRoundTrips_real_time.out" > "$work/fiber.txt"
python3 - "$work/ring.txt" "$work/fiber.txt" "$bench" "$(git rev-parse --short HEAD)$(git diff --quiet || echo ' (tree modified)')" > "$out" <<'PYEOF'
import collections, re, sys
def load(path):
    total, by_file = 0, collections.Counter()
    for line in open(path):
        m = re.match(r"\s*([\d,]+) .*PROGRAM TOTALS", line)
        if m: total = int(m.group(1).replace(",", ""))
        m = re.match(r"\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(\S+?):", line)
        if m: by_file[m.group(2)] += int(m.group(1).replace(",", ""))
    return total, by_file
ring, ring_files = load(sys.argv[1])
fiber, _ = load(sys.argv[2])
pairs, trips = 2 * 20000, 500000
per_pair, per_trip = ring / pairs, fiber / trips
print(f"# scripts/dev/scheduler_budget.sh {sys.argv[3]} (tree {sys.argv[4]}): callgrind, one iteration each, program start included")
print(f"BM_RingPairs/2/1:   {ring:,} instructions / {pairs:,} pairs = {per_pair:,.0f} per pair")
print(f"BM_FiberRoundTrips: {fiber:,} instructions / {trips:,} round trips = {per_trip:,.0f} per round trip")
print(f"ratio at equal instructions per second: {per_trip / per_pair:.3f} (0.5 would allow at most {2 * per_trip:,.0f} instructions per pair)")
groups = collections.Counter()
def group(path):
    if "boost" in path or path.startswith("???"): return "Boost.Fiber/Context switching (and other code without line info)"
    for prefix, name in (("sim/world", "scheduling: the world (sim/world.*)"), ("sim/scheduler_algorithm", "scheduling: the world (sim/world.*)"),
                         ("sim/comm_", "communication: post, pairing, launch, execute (sim/comm_*)"), ("sim/p2p", "communication: post, pairing, launch, execute (sim/comm_*)"),
                         ("sim/stream", "streams and devices (sim/stream.*, sim/device*)"), ("sim/device", "streams and devices (sim/stream.*, sim/device*)"),
                         ("program/", "the program interpreter (program/)"), ("core/", "core: events, post history (core/)")):
        if prefix in path: return name
    if path.startswith("/usr/include"): return "standard library templates (inlined into the above)"
    if "sim/" in path: return "other simulator code (sim/)"
    return "libc, libm, loader and the rest"
for path, n in ring_files.items(): groups[group(path)] += n
print("\nwhere the ring's instructions go (self cost by source file):")
for name, n in groups.most_common():
    print(f"  {100 * n / ring:5.1f}%  {n / pairs:7,.0f} per pair  {name}")
PYEOF
cat "$out"
