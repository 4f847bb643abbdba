# Shell functions shared by scripts/dev/perf_ratios.sh, scripts/dev/race_cost_all.sh and
# scripts/dev/page_faults.sh (sourced, not run): how a serving run with race detection is compared with
# the same run without it.

# The six serving scenarios race detection was tuned against ("in-sample"; perf_ratios.sh times
# them): every other serving scenario is held out. Exported for the scripts' Python reports.
export RACE_IN_SAMPLE="pp2_tp2_k5 pp2_tp1_k5 pp4_prefix_cache pp2_preempt pp3_lookahead_batch pp2_tp2_eagle"

# The median wall times in seconds of two commands (their output discarded), run alternately 7
# times each: this VM's speed drifts by tens of percent over a minute, and a drift then reaches
# both sides alike. Prints "WITH WITHOUT"; the two commands are separated by "--".
median_pair() {
  python3 - "$@" <<'EOF'
import subprocess, sys, time
cut = sys.argv.index("--")
cmds = (sys.argv[1:cut], sys.argv[cut + 1:])
times = ([], [])
for _ in range(7):
    for side in (0, 1):
        t0 = time.monotonic()
        subprocess.run(cmds[side], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times[side].append(time.monotonic() - t0)
print(" ".join(f"{sorted(t)[3]:.3f}" for t in times))
EOF
}

# A serving scenario with race detection off: its [runtime] table gets the key, or a table is added.
without_races() {
  if grep -q '^\[runtime\]' "$1"; then
    sed 's/^\[runtime\]$/[runtime]\nrace_detection = false/' "$1"
  else
    cat "$1"
    printf '\n[runtime]\nrace_detection = false\n'
  fi
}
