#!/usr/bin/env bash
# Disaggregation fuzzing evidence: a clean campaign over scenarios/spaces/disaggregation.toml (about
# half the cases a prefill instance beside the decode instance) must find nothing; with each fault of
# the KV transfer on, a campaign in the same space must find it and shrink it.
#   scripts/dev/disaggregation_campaign.sh OUT.txt [CLEAN_CASES] [FAULT_CASES] [BINARY]
# SEED picks the case stream (5501: the one looked at while building; 5502 is held out).
set -euo pipefail
cd "$(dirname "$0")/../.."
TITLE='disaggregation' CLEAN_SPACE=scenarios/spaces/disaggregation.toml SEED=${SEED:-5501} FAULT_CASES=${3:-400} \
  FAULTS=${FAULTS:-prefill_exports_lookahead stage_caches_paired_whole prefill_frees_before_read kv_ready_one_stage connect_all_stages abort_frees_loading_blocks} \
  exec scripts/dev/scheduler_fault_campaign.sh "$1" "${2:-20000}" 0 "${4:-build/default/tools/ppspec}"
