#!/usr/bin/env bash
# Fuzzing evidence for the engine mechanisms' faults: a clean campaign over scenarios/spaces/mechanisms.toml (recurrent layers,
# the adaptive draft budget, the EAGLE drafter, the pinned readback at pp >= 2, stop strings, pinned input staging) must find nothing; with each of the
# mechanisms' faults on, a campaign in the space that reaches its mechanism must find it and shrink it.
#   scripts/dev/mechanism_fault_campaign.sh OUT.txt [CLEAN_CASES] [FAULT_CASES] [BINARY]
# SEED picks the case stream (2501: the one the fixes were made against; 2502 is held out).
set -euo pipefail
cd "$(dirname "$0")/../.."
TITLE='engine mechanisms' CLEAN_SPACE=scenarios/spaces/mechanisms.toml SEED=${SEED:-2501} FAULT_CASES=${3:-400} \
  FAULTS=${FAULTS:-local_adaptive_budget rank_local_sampling rollback_last_stage_only pinned_read_without_sync untagged_aux_relay tap_local_layer_index stop_string_keeps_tokens stop_string_first_listed stop_string_tail_window input_prep_without_sync input_prep_sync_after_states} \
  exec scripts/dev/scheduler_fault_campaign.sh "$1" "${2:-20000}" 0 "${4:-build/default/tools/ppspec}"
