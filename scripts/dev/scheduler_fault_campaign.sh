#!/usr/bin/env bash
# Fuzzing evidence for the scheduler's faults: a clean campaign over the whole default space (preemption,
# aborts in flight, stop tokens and length caps included) must find nothing; with each of the scheduler's
# faults (preemption, lookahead slots and batch, finish rules, aborts, pipeline bubbles, prefix caching)
# switched on, a campaign must find it and shrink it to a scenario file.
#   scripts/dev/scheduler_fault_campaign.sh OUT.txt [CLEAN_CASES] [FAULT_SECONDS] [BINARY]
# CLEAN_CASES 0 skips the clean campaign and appends to OUT.txt; FAULT_SECONDS 0 skips the fault
# campaigns; FAULTS="a b" picks the faults;
# FAULT_CASES=N runs each fault's campaign for N cases instead of FAULT_SECONDS (the case stream
# is a function of the seed: a count reproduces on any machine, a time does not).
# preempt_keeps_spec_tokens needs a victim already in the step being built: its campaign draws from
# scenarios/spaces/preemption.toml (long prompts in chunks, few slots, a small KV cache, the priority
# policy: only its victim can be one the step already scheduled); full_prefix_hit
# needs prefix caching, off in the default space: scenarios/spaces/prefix_cache.toml. The engine
# mechanisms' faults (DP, EAGLE, recurrent state, pinned buffers, the adaptive budget) need their
# mechanisms, off in the default space (scripts/dev/mechanism_fault_campaign.sh and
# data_parallel_campaign.sh set TITLE, CLEAN_SPACE, SEED and FAULTS for them; the KV transfer's
# faults need disaggregation: disaggregation_campaign.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=$1
cases=${2:-20000}
seconds=${3:-120}
bin=${4:-build/default/tools/ppspec}
seed=${SEED:-24}  # SEED: the case stream (24: the one the fixes were made against; another is held out)
faults=${FAULTS:-cap_before_stop preempt_keeps_spec_tokens late_output_after_preempt no_draft_lookahead_slots abort_scan_current_batch lookahead_past_ring feedback_for_nonfinal_chunks full_prefix_hit}
[ "$seconds" = 0 ] && [ -z "${FAULT_CASES:-}" ] && faults=""
title=${TITLE:-scheduler faults}
clean_space=${CLEAN_SPACE:-}  # the clean campaign's space (empty: the default space)
work=$(mktemp -d)
space_of() {
  case $1 in
    preempt_keeps_spec_tokens) echo scenarios/spaces/preemption.toml ;;
    full_prefix_hit) echo scenarios/spaces/prefix_cache.toml ;;
    local_adaptive_budget) echo scenarios/spaces/adaptive_budget.toml ;;
    rank_local_sampling) echo scenarios/spaces/mechanisms.toml ;;
    rollback_last_stage_only) echo scenarios/spaces/recurrent.toml ;;
    pinned_read_without_sync) echo scenarios/spaces/pp2.toml ;;
    untagged_aux_relay | tap_local_layer_index) echo scenarios/spaces/eagle.toml ;;
    dummy_run_one_forward | dummy_run_skips_drafter) echo scenarios/spaces/data_parallel.toml ;;
    prefill_exports_lookahead | stage_caches_paired_whole | prefill_frees_before_read | kv_ready_one_stage | \
      connect_all_stages | abort_frees_loading_blocks)
      echo scenarios/spaces/disaggregation.toml ;;
    draft_shares_target_kv_group) echo scenarios/spaces/triton_mla.toml ;;
    stop_string_keeps_tokens | stop_string_first_listed | stop_string_tail_window) echo scenarios/spaces/stop_strings.toml ;;
    input_prep_without_sync | input_prep_sync_after_states) echo scenarios/spaces/pinned_inputs.toml ;;
  esac
}
if [ "$cases" = 0 ]; then exec >> "$out"; else exec > "$out"; fi
{
  echo "# $title fuzzing: $(git rev-parse --short HEAD), $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores"
  if [ "$cases" != 0 ]; then
    echo
    echo "## clean: $bin fuzz $clean_space --cases $cases --seed $seed --jobs 2"
    # `fuzz` exits 1 when it finds something: the report says what, the campaign goes on.
    { "$bin" fuzz $clean_space --cases "$cases" --seed $seed --jobs 2 --out "$work/clean" 2>&1 || true; } | tail -3
  fi
  for fault in $faults; do
    space=$(space_of "$fault")
    echo
    budget=(--time "${seconds}s")
    [ -n "${FAULT_CASES:-}" ] && budget=(--cases "$FAULT_CASES")
    echo "## fault $fault: $bin fuzz $space --faults $fault ${budget[*]} --seed $seed"
    { "$bin" fuzz $space --faults "$fault" "${budget[@]}" --seed $seed --out "$work/$fault" 2>&1 || true; } | tail -4
    for f in "$work/$fault"/found-*.toml; do
      [ -e "$f" ] || continue
      echo "shrunk file: $(grep -c . "$f") lines; it reruns as:"
      { "$bin" run "$f" 2>&1 || true; } | head -1
    done
  done
}
rm -rf "$work"
