#!/usr/bin/env bash
# The three-tool comparison and its companions on a GPU machine, from the repository root, with the `gpu` preset's binaries built
# on the development machine (carried in PPSPEC_BIN):
#   PPSPEC_BIN=build/gpu OUT=results SECTIONS="tools cost fidelity regressions" scripts/dev/three_tools_gpu.sh
# tools        scripts/dev/three_tools.py: the PyTorch wire job clean and with each of seven faults,
#              ppspec's plugin + `watch`, NCCL's RAS and the Flight Recorder + fr_trace on each run;
#              scripts/dev/three_tools_table.py writes $OUT/three_tools.md (CASES=a,b runs some only)
# cost         small all_reduces (8 bytes) across 2 ranks in PyTorch, with and without the plugin,
#              ROUNDS rounds alternating (scripts/dev/torch_plugin_job.py --bench): $OUT/cost.txt
# fidelity     `ppspec fidelity --backend both` on FIDELITY_PROGRAMS two-rank programs of a seed never
#              used before (FIDELITY_SEED): $OUT/fidelity/fidelity.md; GPU results kept in
#              $OUT/fidelity/results are reused, so a run cut short by the call's limit resumes
# regressions  scripts/dev/gpu_check.sh (pp 2 tp 1 regressions and twins, programs, serving): $OUT/gpu-check
# On one GPU the ranks share it (each process its own NCCL_HOSTID: NCCL's socket transport), which
# serves `tools` as a dry run; `cost` then measures the GPU's sharing, not the plugin, and says so;
# fidelity and regressions need two GPUs and say so when skipped.
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN=${PPSPEC_BIN:-build/gpu}
OUT=${OUT:-three-tools-results}
SECTIONS=${SECTIONS:-"tools cost fidelity regressions"}
mkdir -p "$OUT"
source scripts/gpu_env.sh
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
if [ "$gpus" -lt 2 ]; then export NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1; fi
section() { [[ " $SECTIONS " == *" $1 "* ]]; }
PLUGIN="$PWD/$BIN/watch/nccl_profiler/libppspec_nccl_profiler.so"
PPSPEC="$PWD/$BIN/tools/ppspec"
{
  date -u
  nvidia-smi -L
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1
  python3 -c "import torch; print('torch', torch.__version__, 'nccl', '.'.join(map(str, torch.cuda.nccl.version())))"
  "$PPSPEC" --version
  echo "gpus=$gpus sections=$SECTIONS"
} > "$OUT/machine.txt" 2>&1

if section tools; then
  python3 scripts/dev/three_tools.py --ppspec "$PPSPEC" --plugin "$PLUGIN" --gpus "$gpus" --out "$OUT/three-tools" \
    --watchdog "${WATCHDOG:-15}" --stall "${STALL:-5}" --grace "${GRACE:-40}" ${CASES:+--cases "$CASES"} > "$OUT/three_tools.log" 2>&1
  python3 scripts/dev/three_tools_table.py "$OUT/three-tools" > "$OUT/three_tools.md" 2>> "$OUT/three_tools.log"
fi

if section cost; then
  [ "$gpus" -ge 2 ] || echo "one GPU: both ranks share it; each all_reduce waits for the other process's time slice," \
    "so this measures the sharing, not the plugin" > "$OUT/cost.txt"
  for ((round = 1; round <= ${ROUNDS:-7}; round++)); do
    for mode in none plugin; do
      d="$OUT/cost/$mode-$round"; mkdir -p "$d"
      if [ $mode = plugin ]; then envs=(NCCL_PROFILER_PLUGIN="$PLUGIN" PPSPEC_TRACE_DIR="$d/traces"); else envs=(PPSPEC_NONE=1); fi
      env "${envs[@]}" timeout 300 python3 scripts/dev/torch_plugin_job.py --world 2 --gpus "$gpus" --bench "${ITERATIONS:-20000}" \
        --store "$d/store" > "$d/log.txt" 2>&1
      echo "round $round plugin=$mode exit=$? $(grep -h 'bench rank 0' "$d/log.txt")" >> "$OUT/cost.txt"
    done
  done
  python3 - "$OUT/cost.txt" >> "$OUT/cost.txt" <<'EOF'
import re, statistics, sys
per = {"none": [], "plugin": []}
for line in open(sys.argv[1]):
    m = re.search(r"plugin=(\w+) exit=0 .*: ([\d.]+) us per operation", line)
    if m: per[m.group(1)].append(float(m.group(2)))
if per["none"] and per["plugin"]:
    a, b = statistics.median(per["none"]), statistics.median(per["plugin"])
    print(f"median over {len(per['none'])} and {len(per['plugin'])} rounds: {a:.3f} us without the plugin, "
          f"{b:.3f} us with it: {b - a:+.3f} us per all_reduce ({(b / a - 1) * 100:+.2f} %)")
else:
    print("no complete round: no figure")
EOF
fi

if section fidelity; then
  if [ "$gpus" -ge 2 ]; then
    timeout "${FIDELITY_LIMIT:-560}" "$PPSPEC" fidelity --programs "${FIDELITY_PROGRAMS:-300}" --seed "${FIDELITY_SEED:-29029}" \
      --max-ranks 2 --gpus 2 --backend both --out "$OUT/fidelity" > "$OUT/fidelity.log" 2>&1
    echo "fidelity exit=$? ($(ls "$OUT/fidelity/results" 2>/dev/null | wc -l) results kept)" >> "$OUT/fidelity.log"
  else
    echo "fidelity: not run: needs 2 GPUs, this machine has $gpus" > "$OUT/fidelity.log"
  fi
fi

if section regressions; then
  if [ "$gpus" -ge 2 ]; then
    PPSPEC_BIN="$BIN/tools" PPSPEC_TESTS="$BIN/tests" OUT="$OUT/gpu-check" scripts/dev/gpu_check.sh > "$OUT/gpu_check.log" 2>&1
  else
    echo "regressions: not run: the pp 2 tp 1 regressions need 2 GPUs, this machine has $gpus" > "$OUT/gpu_check.log"
  fi
fi
ls -la "$OUT"
