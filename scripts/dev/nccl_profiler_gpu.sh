#!/usr/bin/env bash
# The NCCL profiler plugin and `ppspec watch` on one GPU (README, "Watching a live NCCL job"), from
# the repository root of a GPU machine, with the binaries of the `gpu` preset built elsewhere:
#   PPSPEC_BIN=build/gpu OUT=results scripts/dev/nccl_profiler_gpu.sh
# Writes $OUT/summary.txt and $OUT/results.tar.gz (every case's traces, watcher output, logs);
# scripts/dev/nccl_profiler_evidence.py turns them into docs/evidence/nccl-profiler-h200/.
#
# Several ranks share the one GPU: each process has its own NCCL_HOSTID, so NCCL takes them for
# different hosts and connects them through its socket transport on loopback: a real multi-rank
# NCCL job, with real positional matching, real hangs and real completions, on one GPU.
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN=${PPSPEC_BIN:-build/gpu}
OUT=${OUT:-nccl-profiler-gpu}
WORK=$(mktemp -d)
PLUGIN="$PWD/$BIN/watch/nccl_profiler/libppspec_nccl_profiler.so"
FUTURE="$PWD/$BIN/watch/nccl_profiler/libppspec_nccl_profiler_future.so"
JOB="$PWD/$BIN/watch/nccl_profiler/ppspec_nccl_wire_job"
PPSPEC="$PWD/$BIN/tools/ppspec"
mkdir -p "$OUT"
source scripts/gpu_env.sh
export NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1
SUMMARY="$OUT/summary.txt"
: > "$SUMMARY"
say() { echo "$*" | tee -a "$SUMMARY"; }
BUDGET=${BUDGET_S:-480}  # a device call ends at 600 s: what is not run by then is said, not lost
time_left() { [ $SECONDS -lt "$BUDGET" ] || { say "skipped for time: $*"; return 1; }; }
SECTIONS=${SECTIONS:-"load future backend wire calls torch bench cost"}
section() { [[ " $SECTIONS " == *" $1 "* ]]; }

{
  nvidia-smi -L
  python3 -c "import torch; print('torch', torch.__version__, 'nccl', '.'.join(map(str, torch.cuda.nccl.version())))"
  ls "$(libdir nvidia.nccl)"
} > "$WORK/machine.txt" 2>&1
say "== machine"; cat "$WORK/machine.txt" >> "$SUMMARY"

# The ranks of one job, each its own process and NCCL_HOSTID, in the background; their pids in PIDS.
launch() {  # dir ranks env... -- job args...
  local dir=$1 ranks=$2; shift 2
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  PIDS=()
  for ((r = 0; r < ranks; r++)); do
    env "${envs[@]}" NCCL_HOSTID="ppspec-host$r" PPSPEC_RANK="$r" PPSPEC_TRACE_DIR="$dir/traces" \
      "$JOB" --rank "$r" --ranks "$ranks" --ids "$dir/ids" "$@" > "$dir/rank$r.log" 2>&1 &
    PIDS+=($!)
  done
}

wait_all() {  # seconds: waits for PIDS, kills what is left after that long; exit codes in CODES
  local deadline=$((SECONDS + $1))
  CODES=()
  for p in "${PIDS[@]}"; do
    while kill -0 "$p" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
    kill -9 "$p" 2>/dev/null
    wait "$p"; CODES+=($?)
  done
}

# One case of the wire job with the watcher listening: NAME RANKS FAULT [job args...]
PORT=29610
watched() {
  local name=$1 ranks=$2 fault=$3; shift 3
  time_left "$name" || return 0
  local d="$WORK/$name"; mkdir -p "$d"
  PORT=$((PORT + 1))
  "$PPSPEC" watch --listen "127.0.0.1:$PORT" --stall 5 --abort --ranks "$ranks" --timeout 45 --out "$d/watch" --json \
    > "$d/watch.json" 2> "$d/watch.err" &
  local watcher=$!
  sleep 0.5
  local t0=$(date +%s%N)
  launch "$d" "$ranks" NCCL_PROFILER_PLUGIN="$PLUGIN" PPSPEC_WATCH="127.0.0.1:$PORT" -- --fault "$fault" "$@"
  wait_all 40
  local t1=$(date +%s%N)
  wait "$watcher"; local wcode=$?
  "$PPSPEC" check "$d/traces" > "$d/check.txt" 2>&1; local ccode=$?
  say "case $name ranks=$ranks fault=$fault job_exit=${CODES[*]} job_s=$(( (t1 - t0) / 1000000 ))ms watch_exit=$wcode check_exit=$ccode"
  grep -h "fault .* begins at" "$d"/rank*.log >> "$SUMMARY"
  grep -h '"report"' "$d/watch.json" | head -3 >> "$SUMMARY"
  head -3 "$d/check.txt" >> "$SUMMARY"
}

if section load; then
say "== the plugin loads (NCCL_DEBUG=INFO), one rank"
d="$WORK/load"; mkdir -p "$d"
launch "$d" 1 NCCL_PROFILER_PLUGIN="$PLUGIN" NCCL_DEBUG=INFO -- --steps 2
wait_all 60
grep -i "profiler" "$d/rank0.log" | head -5 >> "$SUMMARY"
say "one-rank job exit=${CODES[*]}; its trace: $(cat "$d"/traces/*.jsonl 2>/dev/null | wc -l) lines"
"$PPSPEC" check "$d/traces" >> "$SUMMARY" 2>&1; say "check exit=$?"
fi

if section future; then
say "== an interface NCCL does not know (ncclProfiler_v99 only): NCCL goes on without it"
for ranks in 1 2; do
  d="$WORK/future$ranks"; mkdir -p "$d"
  launch "$d" "$ranks" NCCL_PROFILER_PLUGIN="$FUTURE" NCCL_DEBUG=INFO -- --steps 4
  wait_all 60
  grep -ih "profiler" "$d/rank0.log" | head -3 >> "$SUMMARY"
  say "future plugin, $ranks rank(s): job exit=${CODES[*]}, trace files: $(ls "$d/traces" 2>/dev/null | wc -l)"
done
fi

if section backend; then
say "== ppspec's real backend, one-rank program scenarios, plugin loaded"
for f in scenarios/programs/single_rank_self_exchange_graph.toml scenarios/programs/single_rank_graph.toml; do
  name=$(basename "$f" .toml); d="$WORK/backend-$name"; mkdir -p "$d"
  NCCL_PROFILER_PLUGIN="$PLUGIN" PPSPEC_TRACE_DIR="$d/traces" PPSPEC_RANK=0 timeout 120 "$PPSPEC" run --backend gpu "$f" > "$d/run.txt" 2>&1
  say "backend $name run exit=$? $(head -1 "$d/run.txt" | cut -c1-160)"
  "$PPSPEC" check "$d/traces" > "$d/check.txt" 2>&1; say "  check exit=$? $(head -1 "$d/check.txt" | cut -c1-200)"
done
fi

if section wire; then
say "== the wire job on 2 and 3 ranks of one GPU, watched live"
watched clean2 2 none --steps 6 --graph --split 4
watched clean3 3 none --steps 6
for fault in extra_broadcast skipped_collective size_mismatch dtype_mismatch inverted_order ungrouped_exchange; do
  watched "$fault" 2 "$fault" --steps 6
done
watched wrong_peer 3 wrong_peer --steps 6
fi
if section calls; then
say "== calls only (PPSPEC_PROFILER_EVENTS=calls): misalignments still, no completions"
export PPSPEC_PROFILER_EVENTS=calls
watched calls_clean2 2 none --steps 6 --graph
watched calls_extra_broadcast 2 extra_broadcast --steps 6
unset PPSPEC_PROFILER_EVENTS
fi

if section torch; then
say "== PyTorch (ProcessGroupNCCL), plugin loaded"
for world in 1 2; do
  d="$WORK/torch$world"; mkdir -p "$d"
  NCCL_PROFILER_PLUGIN="$PLUGIN" PPSPEC_TRACE_DIR="$d/traces" timeout 180 python3 scripts/dev/torch_plugin_job.py --world "$world" \
    --store "$d/store" > "$d/log.txt" 2>&1
  say "torch world=$world exit=$? $(grep -c done "$d/log.txt") ranks done"
  "$PPSPEC" check "$d/traces" > "$d/check.txt" 2>&1; say "  check exit=$? $(head -2 "$d/check.txt" | cut -c1-240)"
done
d="$WORK/torch-fault"; mkdir -p "$d"
"$PPSPEC" watch --listen 127.0.0.1:29700 --stall 5 --abort --ranks 2 --timeout 120 --out "$d/watch" --json > "$d/watch.json" 2> "$d/watch.err" &
watcher=$!
sleep 0.5
NCCL_PROFILER_PLUGIN="$PLUGIN" PPSPEC_TRACE_DIR="$d/traces" PPSPEC_WATCH=127.0.0.1:29700 timeout 150 python3 scripts/dev/torch_plugin_job.py \
  --world 2 --fault extra_broadcast --store "$d/store" > "$d/log.txt" 2>&1
say "torch extra_broadcast exit=$?"
wait "$watcher"; say "  watch exit=$?"
grep -h "fault extra_broadcast" "$d/log.txt" >> "$SUMMARY"
grep -h '"report"' "$d/watch.json" | head -2 >> "$SUMMARY"
fi

if section bench; then
say "== the same small all-reduce loop with and without the plugin, two ranks of one GPU (each operation waits for the GPU's"
say "   time slice between the two processes' contexts: this says what a GPU shared by ranks costs, not what the plugin does)"
for with in no yes; do
  d="$WORK/bench-2-$with"; mkdir -p "$d"
  if [ $with = yes ]; then envs=(NCCL_PROFILER_PLUGIN="$PLUGIN"); else envs=(PPSPEC_NONE=1); fi
  launch "$d" 2 "${envs[@]}" -- --bench 500 --bytes 8
  wait_all 120
  say "bench ranks=2 plugin=$with: $(grep -h 'us per operation' "$d"/rank0.log)"
  d="$WORK/torchbench-$with"; mkdir -p "$d"
  if [ $with = yes ]; then export NCCL_PROFILER_PLUGIN="$PLUGIN" PPSPEC_TRACE_DIR="$d/traces"; fi
  timeout 180 python3 scripts/dev/torch_plugin_job.py --world 2 --bench 500 --store "$d/store" > "$d/log.txt" 2>&1
  unset NCCL_PROFILER_PLUGIN PPSPEC_TRACE_DIR
  say "torchbench ranks=2 plugin=$with: $(grep -h 'bench rank 0' "$d/log.txt")"
done
fi

if section cost; then
say "== cost on one rank: a send to itself and its receive in one group (NCCL instruments them; a one-rank all-reduce it does not)"
say "   without the plugin, with it (all events), with it recording calls only (PPSPEC_PROFILER_EVENTS=calls); seven rounds, alternating"
for i in 1 2 3 4 5 6 7; do
  time_left "cost round $i" || break
  for mode in none all calls; do
    d="$WORK/cost-$mode-$i"; mkdir -p "$d"
    case $mode in
      none) envs=(PPSPEC_NONE=1) ;;
      all) envs=(NCCL_PROFILER_PLUGIN="$PLUGIN") ;;
      calls) envs=(NCCL_PROFILER_PLUGIN="$PLUGIN" PPSPEC_PROFILER_EVENTS=calls) ;;
    esac
    launch "$d" 1 "${envs[@]}" -- --bench 20000 --bytes 8
    wait_all 120
    say "cost mode=$mode run=$i: $(grep -h 'us per operation' "$d"/rank0.log)"
  done
done
fi

tar -czf "$OUT/results.tar.gz" -C "$WORK" .
say "== done: $(du -sh "$OUT/results.tar.gz" | cut -f1) of results"
