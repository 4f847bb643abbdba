#!/usr/bin/env bash
# Why a simulated ring pair costs several bare fiber round trips (BM_RingPairs ÷ BM_FiberRoundTrips), counted: the scheduling steps of BM_RingPairs/2/1 by what ended each (a host
# or a stream blocking, and on what; a yield), per pair, from a build with the counters of
# docs/evidence/simulator-cost/step-anatomy.patch (not kept in the product: a by-hand instrument), and the
# instructions a bare Boost.Fiber switch costs (half of BM_FiberRoundTrips's round trip, callgrind).
# Every step that ends in a block or a yield is a switch, so steps per pair × instructions per
# switch bounds a pair's cost from below, before any work of the pair itself.
#   scripts/dev/step_anatomy.sh [OUT]     (builds HEAD with the patch in a temporary worktree: minutes;
#                                      a relative OUT is taken from the repository's root)
# Writes OUT (default docs/evidence/simulator-cost/step-anatomy.txt).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-docs/evidence/simulator-cost/step-anatomy.txt}
work=$(mktemp -d)
trap 'git worktree remove --force "$work/tree" > /dev/null 2>&1 || true; rm -rf "$work"; git worktree prune' EXIT
git worktree add --detach "$work/tree" HEAD > /dev/null
git -C "$work/tree" apply "$PWD/docs/evidence/simulator-cost/step-anatomy.patch"
cmake --preset default -S "$work/tree" > "$work/configure.log"
cmake --build "$work/tree/build/default" --target ppspec_bench > "$work/build.log"
bench=$work/tree/build/default/bench/ppspec_bench
"$bench" --benchmark_filter='^BM_RingPairs/2/1$' --benchmark_min_time=0 > "$work/ring.txt" 2> "$work/anatomy.txt"
valgrind --tool=callgrind --callgrind-out-file="$work/fiber.out" "$bench" --benchmark_filter='^BM_FiberRoundTrips/real_time$' \
  --benchmark_min_time=0 > /dev/null 2> "$work/fiber.log"
fiber=$(grep -m1 -E '^==[0-9]+== Collected : ' "$work/fiber.log" | awk '{print $4}' || true)
[[ -n $fiber ]] || { echo "scripts/dev/step_anatomy.sh: callgrind counted nothing" >&2; exit 1; }
python3 - "$work/anatomy.txt" "$fiber" "$work/tree/sim/fiber.h" "$(git rev-parse --short HEAD)" > "$out" <<'PYEOF'
import re, sys
anatomy, fiber_instructions, header, tree = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
text = open(header).read()
body = text[text.index("enum class WaitKind"):]
body = body[body.index("{") + 1:body.index("};")]
kinds = [m.group(1) for m in re.finditer(r"^\s*(\w+),", body, re.M)]
pairs, round_trips = 2 * 20000, 500000  # bench/ppspec_bench.cc's ring (2 ranks x 20,000 steps), workload_bench.cc's kRoundTrips
rows = []
for line in open(anatomy):
    m = re.match(r"anatomy (host|stream) (\S+) (\S+) (\d+)", line)
    if not m: continue
    who, what, kind, n = m.group(1), m.group(2), m.group(3), int(m.group(4))
    if what == "block": label = f"{who} blocks ({kinds[int(kind)]})"
    elif what == "yield": label = f"{who} yields"
    else: label = f"{who} sleeps without a switch (nobody else could run first; not counted below)"
    rows.append((label, n, what != "sleep-without-switch"))
if not rows: sys.exit("scripts/dev/step_anatomy.sh: the patched build printed no counts")
per_switch = fiber_instructions / round_trips / 2
switches = sum(n for _, n, s in rows if s)
print(f"# scripts/dev/step_anatomy.sh (tree {tree} + docs/evidence/simulator-cost/step-anatomy.patch): BM_RingPairs/2/1, {pairs:,} pairs")
print("what ended each scheduling step, per pair:")
for label, n, _ in rows:
    print(f"  {n / pairs:5.2f}  {label}")
print(f"switches per pair: {switches / pairs:.2f}")
print(f"a bare switch: {per_switch:,.0f} instructions (BM_FiberRoundTrips, callgrind, program start included: {fiber_instructions:,} / {round_trips:,} round trips / 2)")
print(f"a pair's switches alone: {switches / pairs * per_switch:,.0f} instructions; a ratio of 0.5 to bare round trips allows {4 * per_switch:,.0f} per pair "
      f"(two round trips): at most 4 switches per pair, with no work at all")
PYEOF
cat "$out"
