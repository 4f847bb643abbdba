#!/usr/bin/env bash
# Issue 25's fuzzing evidence: a clean campaign over scenarios/spaces/issue25.toml (recurrent layers,
# the adaptive draft budget, the EAGLE drafter, the pinned readback at pp >= 2) must find nothing; with each of the
# issue's faults on, a campaign in the space that reaches its mechanism must find it and shrink it.
#   scripts/dev/issue25_campaign.sh OUT.txt [CLEAN_CASES] [FAULT_CASES] [BINARY]
# SEED picks the case stream (2501: the one the fixes were made against; 2502 is held out).
set -euo pipefail
cd "$(dirname "$0")/../.."
ISSUE=25 CLEAN_SPACE=scenarios/spaces/issue25.toml SEED=${SEED:-2501} FAULT_CASES=${3:-400} \
  FAULTS=${FAULTS:-local_adaptive_budget rollback_last_stage_only pinned_read_without_sync untagged_aux_relay} \
  exec scripts/dev/issue24_campaign.sh "$1" "${2:-20000}" 0 "${4:-build/default/tools/ppspec}"
