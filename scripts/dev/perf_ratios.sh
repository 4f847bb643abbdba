#!/usr/bin/env bash
# The simulator's main costs as ratios, each measured side by side in one run, on this machine
# (docs/performance.md):
#   1. scheduler:      BM_RingPairs/2/1 pairs/s ÷ BM_FiberRoundTrips round_trips/s (one benchmark run)
#   2. race detection: a whole `ppspec run` (oracles included) of serving scenarios with race detection
#                      ÷ the same run without ([runtime] race_detection = false), medians of 7
#                      run alternately,
#                      and BM_Serving with and without it (one benchmark run, medians of 5)
#   3. fuzzing:        clean cases/s of `ppspec fuzz` on scenarios/spaces/pp2.toml, seed 1, this binary
#                      ÷ BEFORE's (another build), one process each, alternated, medians of 3
#   and the peak resident set of a serving run, of every serving scenario in one process and of a fuzz
#   campaign (this binary's, and BEFORE's)
#
#   scripts/dev/perf_ratios.sh [--before BEFORE_PPSPEC] [--out FILE] [--cases N] [--space SPACE] [--seed N] [--fuzz-only]
# Without --before the fuzzing ratio is left out. Writes FILE (default docs/evidence/simulator-cost/ratios.txt).
# --space and --seed pick another fuzzing campaign (a held-out one beside the default pp2.toml, seed
# 1, that the work was tuned against); --fuzz-only measures the fuzzing ratio alone.
set -euo pipefail
cd "$(dirname "$0")/../.."
before=""
out=docs/evidence/simulator-cost/ratios.txt
cases=60
space=scenarios/spaces/pp2.toml
seed=1
fuzz_only=0
while (($#)); do
  case "$1" in
    --before) before=$2; shift ;;
    --out) out=$2; shift ;;
    --cases) cases=$2; shift ;;
    --space) space=$2; shift ;;
    --seed) seed=$2; shift ;;
    --fuzz-only) fuzz_only=1 ;;
    *) echo "scripts/dev/perf_ratios.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
ppspec=./build/default/tools/ppspec
bench=./build/default/bench/ppspec_bench
[[ -x $ppspec && -x $bench ]] || { echo "scripts/dev/perf_ratios.sh: build the default preset first" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$(dirname "$out")"

# median_pair, without_races, RACE_IN_SAMPLE
source scripts/dev/race_cost_lib.sh

{
  echo "# scripts/dev/perf_ratios.sh on $(hostname -s): $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  echo "date: $(date -u +%Y-%m-%dT%H:%MZ); ppspec $(git rev-parse --short HEAD)$(git diff --quiet || echo ' (tree modified)')"
  if ((fuzz_only == 0)); then
  echo
  echo "## 1. scheduler"
  "$bench" --benchmark_filter='BM_FiberRoundTrips|BM_RingPairs' --benchmark_repetitions=3 \
    --benchmark_report_aggregates_only=true --benchmark_format=json > "$work/sched.json" 2> /dev/null
  python3 - "$work/sched.json" <<'EOF'
import json, sys
rows = {b["run_name"].replace("/real_time", ""): b for b in json.load(open(sys.argv[1]))["benchmarks"] if b.get("aggregate_name") == "median"}
fiber = rows["BM_FiberRoundTrips"]["round_trips/s"]
print(f"BM_FiberRoundTrips: {fiber/1e6:.2f} M round trips/s (median of 3)")
for name in ("BM_RingPairs/2/1", "BM_RingPairs/8/1", "BM_RingPairs/2/16", "BM_RingPairs/8/16"):
    b = rows[name]
    print(f"{name}: {b['pairs/s']/1e6:.3f} M pairs/s, {b['sched_steps/s']/1e6:.2f} M scheduling steps/s, "
          f"ratio pairs/s / round trips/s = {b['pairs/s']/fiber:.3f}")
EOF
  echo
  echo "## 2. race detection"
  for s in $RACE_IN_SAMPLE; do
    f=scenarios/serving/$s.toml
    without_races "$f" > "$work/$s-norace.toml"
    read -r with wo < <(median_pair "$ppspec" run "$f" -- "$ppspec" run "$work/$s-norace.toml")
    python3 -c "import sys; w, o = float(sys.argv[2]), float(sys.argv[3]); print(f'{sys.argv[1]:<22} with {w:.3f} s, without {o:.3f} s: {w / o:.2f}x')" "$s" "$with" "$wo"
  done
  # Medians of 5 repetitions, interleaved at random with the other benchmarks (the VM's drift again).
  "$bench" --benchmark_filter='BM_Serving' --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true \
    --benchmark_report_aggregates_only=true --benchmark_format=json > "$work/serving.json" 2> /dev/null
  python3 - "$work/serving.json" <<'EOF'
import json, sys
rows = {b["run_name"]: b for b in json.load(open(sys.argv[1]))["benchmarks"] if b.get("aggregate_name") == "median"}
for sc in (0, 1):
    for oracles in (1, 0):
        on = rows[f"BM_Serving/scenario:{sc}/oracles:{oracles}/races:1"]["real_time"]
        off = rows[f"BM_Serving/scenario:{sc}/oracles:{oracles}/races:0"]["real_time"]
        print(f"BM_Serving scenario {sc} oracles {oracles}: races on {on:.1f} ms, off {off:.1f} ms: {on/off:.2f}x")
EOF
  echo
  echo "## memory: peak resident set of one process"
  python3 - "$work" "$ppspec" $before <<'EOF'
import resource, subprocess, sys
work = sys.argv[1]
def peak(cmd):
    # A child of its own per command, so that RUSAGE_CHILDREN's maximum is this command's.
    code = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, "
            "stderr=subprocess.DEVNULL); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    return int(subprocess.run([sys.executable, "-c", code] + cmd, capture_output=True, text=True).stdout) / 1024
for ppspec in sys.argv[2:]:
    print(f"{ppspec}:")
    print(f"  run scenarios/serving/pp2_tp2_k5.toml: {peak([ppspec, 'run', 'scenarios/serving/pp2_tp2_k5.toml']):.1f} MiB")
    print(f"  run scenarios/serving/pp4_prefix_cache.toml: {peak([ppspec, 'run', 'scenarios/serving/pp4_prefix_cache.toml']):.1f} MiB")
    print(f"  run scenarios/serving/*.toml (every serving scenario, one process): "
          f"{peak(['sh', '-c', ppspec + ' run scenarios/serving/*.toml']):.1f} MiB")
    print(f"  fuzz scenarios/spaces/pp2.toml --cases 200: "
          f"{peak([ppspec, 'fuzz', 'scenarios/spaces/pp2.toml', '--cases', '200', '--seed', '1', '--force', '--out', work + '/fuzz-rss']):.1f} MiB")
EOF
  fi
  if [[ -n $before ]]; then
    echo
    echo "## 3. fuzzing: clean cases/s, this binary ÷ BEFORE's"
    python3 - "$before" "$ppspec" "$cases" "$work" "$space" "$seed" <<'EOF'
import re, shutil, subprocess, sys
before, after, cases, work, space, seed = sys.argv[1:7]
print(f"ppspec fuzz {space} --seed {seed} --cases {cases}")
rate = {before: [], after: []}
for round in range(3):
    for b in (before, after):
        shutil.rmtree(work + "/fuzz", ignore_errors=True)
        out = subprocess.run([b, "fuzz", space, "--cases", cases, "--seed", seed, "--out", work + "/fuzz"],
                             capture_output=True, text=True).stdout
        m = re.search(r"(\d+) failures? in (\d+) cases \(([0-9.]+) s, ([0-9.]+) cases/s\)", out)
        if not m or m.group(1) != "0":
            sys.exit(f"{b}: no clean campaign summary in its output:\n{out[-2000:]}")
        rate[b].append(float(m.group(4)))
        print(f"run {round + 1}, {b}: {m.group(2)} cases, {m.group(4)} cases/s")
med = {b: sorted(r)[1] for b, r in rate.items()}
print(f"median cases/s: BEFORE {med[before]:.1f}, this {med[after]:.1f}: ratio {med[after] / med[before]:.2f}")
EOF
  fi
} | tee "$out"
