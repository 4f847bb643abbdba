#!/usr/bin/env bash
# Rebuilds the checked-in seed corpus libfuzzer/corpus/<target>/ from the repository (libfuzzer/README.md):
#   fuzz_scenario      scenarios/**/*.toml, tests/robustness/*.toml and libfuzzer/seeds/*.toml (programs
#                      written for the fuzzers: captures, threads, groups, flags together)
#   fuzz_scenario_run  the same, less the robustness inputs that still crash a run (libfuzzer/findings)
#   fuzz_trace         traces of the program scenarios and of small serving scenarios recorded with
#                      `ppspec run --trace`, the 2 x H200 GPU traces of docs/evidence, and
#                      tests/robustness/*.jsonl
#   fuzz_flight_recorder  Flight Recorder dumps of one job per seed: the 2 x H200 recordings and
#                      probes of traces/corpus (JSON and pickle), the simulator's export of one
#                      case of each kind of tests/fr_differential/*.toml
# Needs a built ppspec (PPSPEC, default build/default/tools/ppspec). Replaces the four folders;
# what scripts/dev/libfuzzer.sh --merge added to them is lost, so merge again afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
ppspec=${PPSPEC:-build/default/tools/ppspec}
[[ -x $ppspec ]] || { echo "libfuzzer/make_seed_corpus.sh: no $ppspec (build the default preset first)" >&2; exit 2; }
ppspec=$(realpath "$ppspec")

# Robustness inputs that still crash or end in an internal error in a run: seeds of the loader
# target only, until the fixes land (their reproducers are in libfuzzer/findings/fuzz_scenario_run).
crashing_runs="crash_emulate_dtype_mismatch crash_graph_launch_in_capture crash_group_around_capture
exit3_record_during_other_thread_capture exit3_two_threads_capture_same_stream"

rm -rf libfuzzer/corpus
mkdir -p libfuzzer/corpus/fuzz_scenario libfuzzer/corpus/fuzz_scenario_run libfuzzer/corpus/fuzz_trace libfuzzer/corpus/fuzz_flight_recorder
for f in scenarios/*/*.toml; do
  name="$(basename "$(dirname "$f")")_$(basename "$f")"
  cp "$f" libfuzzer/corpus/fuzz_scenario/"$name"
  cp "$f" libfuzzer/corpus/fuzz_scenario_run/"$name"
done
for f in tests/robustness/*.toml; do
  cp "$f" libfuzzer/corpus/fuzz_scenario/robustness_"$(basename "$f")"
  [[ " $(echo $crashing_runs) " == *" $(basename "$f" .toml) "* ]] || cp "$f" libfuzzer/corpus/fuzz_scenario_run/robustness_"$(basename "$f")"
done
for f in libfuzzer/seeds/*.toml; do
  cp "$f" libfuzzer/corpus/fuzz_scenario/seed_"$(basename "$f")"
  cp "$f" libfuzzer/corpus/fuzz_scenario_run/seed_"$(basename "$f")"
done
for f in tests/robustness/*.jsonl; do cp "$f" libfuzzer/corpus/fuzz_trace/robustness_"$(basename "$f")"; done

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# Simulator traces of every program scenario (a few KB each).
for f in scenarios/programs/*.toml; do
  "$ppspec" run "$f" --trace libfuzzer/corpus/fuzz_trace/sim_program_"$(basename "$f" .toml)".jsonl >/dev/null || true
done
# Serving traces, small: the workload shrunk to one or two short requests, and the kernel events
# and the operations' start, completion and pairing events left out (no checker reads them; the
# program and GPU traces have them), the trailer's event count and schedule adjusted to match.
# fuzz_trace configures its monitors from pp2_tp1_k5 for an even header seed and from pp2_tp2_k5
# for an odd one, so the tp 1 shapes are recorded with seed 2 and the tp 2 shapes (the
# regressions) with seed 1.
shrink() {  # SCENARIO OUT REQUESTS
  sed -e "s/^num_requests = .*/num_requests = $3/" -e 's/^output_min = .*/output_min = 4/' \
      -e 's/^output_max = .*/output_max = 6/' -e 's/^prompt_min = .*/prompt_min = 4/' \
      -e 's/^prompt_max = .*/prompt_max = 8/' -e 's/^seeds = .*/seeds = 1/' "$1" >"$2"
}
serving_trace() {  # SCENARIO SEED [REQUESTS]
  local name
  name=$(basename "$1" .toml)
  mkdir -p "$scratch/shrunk"
  shrink "$1" "$scratch/shrunk/$name.toml" "${3:-2}"
  (cd "$scratch" && "$ppspec" run "shrunk/$name.toml" --seed "$2" --trace full.jsonl >/dev/null) || true
  grep -v -E '"ev":"(kernel_launched|kernel_completed|op_started|op_completed|op_paired)"' "$scratch/full.jsonl" >"$scratch/lean.jsonl" || true
  local events=$(($(wc -l <"$scratch/lean.jsonl") - 2))
  sed -e '$s/"events":[0-9]*/"events":'"$events"'/' -e '$s/"decisions":\[[^]]*\]/"decisions":[]/' \
    "$scratch/lean.jsonl" >libfuzzer/corpus/fuzz_trace/sim_serving_"$name".jsonl
}
serving_trace scenarios/serving/pp2_tp1_k5.toml 2
serving_trace scenarios/serving/pp2_k5_single_payload.toml 2
serving_trace scenarios/serving/pp2_stop_and_abort.toml 2
serving_trace scenarios/serving/pp2_tp2_k5.toml 1 1
# Every fault of the one list (engine/faults.h).
for fault in $(grep -o 'FaultSwitch{"[a-z_]*"' engine/faults.h | cut -d'"' -f2); do
  serving_trace scenarios/regressions/"$fault".toml 1 1
done
# GPU traces recorded on 2 x H200 (docs/evidence/sim-vs-h200).
tar -xzf docs/evidence/sim-vs-h200/gpu-traces-2xH200.tgz -C "$scratch"
for f in "$scratch"/traces/*.jsonl; do cp "$f" libfuzzer/corpus/fuzz_trace/gpu_"$(basename "$f")"; done

# Flight Recorder dumps, one job per seed: its ranks' dumps in rank order, joined by the separator
# line of libfuzzer/fuzz_flight_recorder.cc. The 2 x H200 recordings and the probes made from them
# (traces/corpus), JSON and pickle, and the simulator's export of one kept differential case of
# each kind.
fr_seed() {  # OUT DUMP...
  local out=$1 first=1
  shift
  : >"$out"
  for d in "$@"; do
    ((first)) || printf '\n#ppspec-fr-next-rank#\n' >>"$out"
    cat "$d" >>"$out"
    first=0
  done
}
for dir in traces/corpus/flight-recorder/*/ traces/corpus/flight-recorder-probes/*/; do
  for format in json pickle; do
    mapfile -t dumps < <(find "$dir$format" -type f -name '*rank_*' | sort -V)
    ((${#dumps[@]})) && fr_seed libfuzzer/corpus/fuzz_flight_recorder/"$(basename "$dir")_$format" "${dumps[@]}"
  done
done
declare -A kind_seen=()
for f in tests/fr_differential/*.toml; do
  name=$(basename "$f" .toml)
  kind=${name%%-frd-*}  # one case of each kind, so that the corpus stays small
  [[ -z ${kind_seen[$kind]:-} ]] || continue
  kind_seen[$kind]=1
  "$ppspec" run "$f" --trace "$scratch/$name.jsonl" >/dev/null || true
  "$ppspec" export --flight-recorder "$scratch/$name.jsonl" -o "$scratch/fr_$name" >/dev/null || continue
  mapfile -t dumps < <(find "$scratch/fr_$name" -type f -name 'nccl_trace_rank_*' ! -name '*.json' | sort -V)
  ((${#dumps[@]})) && fr_seed libfuzzer/corpus/fuzz_flight_recorder/sim_"$name" "${dumps[@]}"
done

# Seeds stay small: drop any over 64 KB.
find libfuzzer/corpus -type f -size +64k -print -delete | sed 's/^/dropped (over 64 KB): /'
du -sh libfuzzer/corpus/*
